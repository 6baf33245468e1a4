"""Discrete iterations against continuous flows (Kumar et al. (2025) Fig. 1b/c, App. B; digest
Secs. 2.8, 5.7, 9.2): long runs recorded every k steps, the O(rho^2) gap between VN and SR-VN, and
the flow time of an iterate.

    thinned_run(name, target, init, rho, n_steps, n_record=400) -> Trace recorded every k steps
    vn_srvn_gap(target, init, rhos) -> one-step gaps ||V_VN - V_SR||_F, ||m_VN - m_SR|| (O(rho^2))
    flow_times(name, rho, k) -> the flow time of iterate k (VN: -k log(1 - rho), exact; others rho k)
"""

from __future__ import annotations

from dataclasses import replace

import jax
import numpy as np

from .. import core
from ..core.checks import integer, positive, real_array
from ..algorithms import algorithm
from ..core import Trace, bucket
from .flows import flow
from ..targets import Target

__all__ = ["thinned_run", "vn_srvn_gap", "flow_times"]


def _check_rho(rho):
    return positive(rho, "The step size rho")


def flow_times(name: str, step_size: float, k) -> np.ndarray:
    """The flow time at which iterate k of method ``name`` with step size rho is drawn against a flow.

    VN (``name="vn"``) follows the natural-gradient flow exactly on Gaussian targets: its iterate k
    IS the flow at t_k = -k log(1 - rho) (Kumar et al. (2025) digest Sec. 9.2; :func:`thinned_run`),
    inf for k >= 1 when rho >= 1 (the posterior is reached in one step). Every other method is drawn
    at t = rho k, its first-order (Euler) time, where it follows its own flow only while rho is small.
    """
    rho = _check_rho(step_size)
    k = real_array(k, "The iteration numbers k", allow_empty=True)
    if name != "vn":
        return rho * k
    if rho >= 1.0:
        return np.where(k > 0, np.inf, 0.0)
    return -k * np.log1p(-rho)


def thinned_run(name: str, target: Target, init, step_size: float, n_steps: int, n_record: int = 400,
                closed_form_vn: bool = True) -> Trace:
    """``n_steps`` steps of method ``name`` with exact gradients on a Gaussian target, recorded every
    k steps and at the last one, k = ceil(n_steps / n_record) rounded up to a power of two (so that a
    page whose n_steps moves with a slider reuses a handful of compiled loops): :func:`vilab.core.run`
    with ``record_every=k`` (Kumar et al. Fig. 1b needs 6e5 steps at rho = 1e-5). Returns a
    :class:`vilab.core.Trace` of the recorded iterates (objective KL(q || p), ``iterations`` the
    iteration number of each row, ``extra["t"]`` = rho k); a run that leaves the Gaussian family
    stops there with status "diverged: <reason> at step <j>" (keeping the last valid iterate), else
    status "max_steps".

    VN (``name="vn"``) with rho <= 1 uses its closed form on Gaussian targets (Kumar digest Sec. 2.8:
    S_k - A = (1 - rho)^k (S_0 - A), S_k m_k - A m* = (1 - rho)^k (S_0 m_0 - A m*)), i.e. the
    natural-gradient flow at t_k = -k log(1 - rho) (:func:`vilab.theory.flows.flow`; rho = 1: the posterior
    from step 1 on), when ``closed_form_vn``; the tests check it against the iteration.
    """
    if not (target.quadratic and target.cov is not None):
        raise ValueError("Long recorded runs are available on Gaussian targets (their KL is known in closed form).")
    rho = _check_rho(step_size)
    n_steps = integer(n_steps, "The number of steps n_steps", minimum=1)
    n_record = integer(n_record, "The number of recorded points n_record", minimum=1)
    k = bucket(-(-n_steps // n_record), least=1)
    settings = {"method": name, "rho": rho, "n_steps": n_steps, "record_every": k}
    if name == "vn" and closed_form_vn and rho <= 1.0:
        ks = np.r_[np.arange(0, n_steps, k), n_steps]
        if rho < 1.0:
            tk = -ks * np.log1p(-rho)
            f = flow("natural-mv", target, init, float(tk[-1]), times=tk)
            means, covs, kl = f.mean, f.cov, f.objective
        else:  # (1 - rho)^k = 0: the posterior itself from the first step on
            f = flow("natural-mv", target, init, 1.0, n_times=2)
            means = np.concatenate([f.mean[:1], np.repeat(np.asarray(target.mean, float)[None], len(ks) - 1, 0)])
            covs = np.concatenate([f.cov[:1], np.repeat(np.asarray(target.cov, float)[None], len(ks) - 1, 0)])
            kl = np.r_[f.objective[0], np.zeros(len(ks) - 1)]
        return Trace(mean=means, cov=covs, objective=np.asarray(kl), step_sizes=np.full(n_steps, rho),
                     status="max_steps", method=name, objective_name="KL(q || p)", iterations=ks,
                     extra={"t": rho * ks, "every": k, "how": "closed form (Kumar digest Sec. 2.8)"},
                     settings=settings)
    alg = algorithm(name, target)
    key = jax.random.PRNGKey(0)
    tr = core.run(alg, key, alg.init(key, init, rho=rho, target=target), n_steps, record_every=k,
                  keep_info=k == 1)
    status = tr.status
    if tr.diverged:
        status = f"{status} at step {tr.n_steps + 1}"
    its = tr.iterations
    return replace(tr, status=status, extra={**tr.extra, "t": rho * its, "every": k},
                   settings={**tr.settings, **settings})


def vn_srvn_gap(target: Target, init, rhos) -> dict:
    """One step of VN and of SR-VN from the same q_0, for every step size in ``rhos`` (Kumar et al.
    (2025) App. B, Eqs. 38-39): they agree to first order in rho, V_VN - V_SR = O(rho^2)
    (digest Sec. 5.7: ||V_VN - V_SR||_F / rho^2 = 0.0260 on T2 from C_0 = 0.2 I).
    Returns {"rho", "gap_V" = ||V_VN - V_SR||_F, "gap_m" = ||m_VN - m_SR||, "ratio_V" = gap_V / rho^2
    (constant for small rho when the gap is O(rho^2))} (exact gradients; VN in its closed form, SR-VN
    iterated, both by :func:`thinned_run`)."""
    rhos = np.atleast_1d(real_array(rhos, "The step sizes rhos", finite=False, allow_empty=True))
    if rhos.ndim != 1 or rhos.size == 0 or np.any(~np.isfinite(rhos)) or np.any(rhos <= 0):
        raise ValueError("Step sizes must be a non-empty list of positive numbers.")
    gV, gm = [], []
    for r in rhos:
        a, b = (thinned_run(n, target, init, float(r), 1) for n in ("vn", "srvn"))
        if len(a.mean) < 2 or len(b.mean) < 2:  # a step that left the Gaussian family has no gap
            gV.append(np.nan), gm.append(np.nan)
            continue
        gV.append(np.linalg.norm(a.cov[1] - b.cov[1])), gm.append(np.linalg.norm(a.mean[1] - b.mean[1]))
    gV = np.array(gV)
    return {"rho": rhos, "gap_V": gV, "gap_m": np.array(gm), "ratio_V": gV / rhos**2}
