"""Guarantees of Kumar et al. (2025) for the natural-gradient flow: Theorem 1 (a PL inequality and
its exponential rate) and Lemma 1 (a lower bound on the inverse Fisher in (m, C)), with the
corrected constant of the digest (Sec. 6.8).

    theorem1_rates(delta, lam_min) -> {"paper": ..., "corrected": ...}
    theorem1_bound(t, excess0, mu)  = e^{-2 mu t} excess0
    lemma1_check(V) -> (smallest eigenvalue of F_C^-1, paper's bound, corrected bound)
    theorem1_report(target, natural_flow) -> delta, lam_min, both constants and bounds, Lemma 1 along the flow
    natural_kl_asymptote(t, kl) -> the e^{-2t} curve through the natural flow's last point above round-off
    cut_flow(flow, t_end) -> the rows of a solved flow up to t_end
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from . import natgrad as ng
from .checks import finite_result, integer, pd_matrix, positive, real_array, real_scalar
from .core import Trace
from .targets import Target

__all__ = ["theorem1_rates", "theorem1_bound", "lemma1_check", "theorem1_report", "natural_kl_asymptote",
           "cut_flow"]


def theorem1_rates(delta: float, lam_min: float) -> dict:
    """PL constants of Kumar et al. (2025) Thm 1 / Lemma 2: the printed and the corrected one.

    paper (Lemma 1 as printed, Eq. 21):  mu = delta * min{lam_min, lam_min^2 / 2}
    corrected (digest Sec. 6.8):          mu = delta * lam_min / 2
    The printed Lemma 1 lower bound on eig(F_C^-1) is false when lam_min(V) > 1 (d = 1: F_C^-1 = V/2
    < min{V, V^2/2} for V > 1); lam_min(V)/2 <= eig(F_C^-1) always holds. ``delta`` is the strong
    convexity of l-bar (for a Gaussian target: lambda_min of its precision), ``lam_min`` the
    smallest eigenvalue of V_t along the trajectory.
    """
    delta = positive(delta, "Theorem 1's strong-convexity constant delta")
    lam_min = positive(lam_min, "Theorem 1's lambda_min")
    return {"paper": delta * min(lam_min, lam_min**2 / 2.0), "corrected": delta * lam_min / 2.0}


def theorem1_bound(t, excess0: float, mu: float) -> np.ndarray:
    """Kumar et al. (2025) Thm 1: KL_t - KL_* <= e^{-2 mu t} (KL_0 - KL_*)."""
    excess0, mu = real_scalar(excess0, "The initial excess KL_0 - KL_*"), real_scalar(mu, "The PL constant mu")
    with np.errstate(over="ignore"):
        out = excess0 * np.exp(-2.0 * mu * real_array(t, "The times t", allow_empty=True))
    return finite_result(out, "The bound e^{-2 mu t} (KL_0 - KL_*)")


def natural_kl_asymptote(t, kl, floor: float = 1e-10):
    """The e^{-2t} asymptote of the natural-gradient flow's KL on a Gaussian target: c e^{-2t} with c
    fixed by the flow's last point above ``floor`` (below it, round-off), or None if none is above.

    On a Gaussian target KL(q_t || p) e^{2t} tends to a constant whatever the conditioning (Kumar
    et al. (2025) digest Sec. 9.4: natural-parameter errors decay exactly as e^{-t}, the KL as their
    square), so the curve through the last reliable point shows the flow's asymptotic slope.
    """
    t = real_array(t, "The times t", allow_empty=True)
    kl = real_array(kl, "The KL values", finite=False, allow_empty=True)
    floor = real_scalar(floor, "floor")
    if t.shape != kl.shape:
        raise ValueError(f"Times and KL values must have the same length; got {t.shape} and {kl.shape}.")
    alive = np.flatnonzero(np.isfinite(kl) & (kl > floor))
    if alive.size == 0:
        return None
    i = alive[-1]
    return kl[i] * np.exp(-2.0 * (t - t[i]))


def lemma1_check(V) -> dict:
    """Smallest eigenvalue of F^-1 in (m, C) against Kumar et al. Lemma 1's printed lower bound and
    the corrected one (digest Sec. 6.8). F = blockdiag(V^-1, I(C)) (Tan (2025) Lemma 1), C = chol(V).

    Returns {"min_eig": ..., "paper_bound": min(l, l^2/2), "corrected_bound": l/2, "lam_min": l}.
    """
    V = pd_matrix(V, "V")
    lam = np.linalg.eigvalsh(V)
    C = np.linalg.cholesky(V)
    IC = ng.fisher_block_I(C)
    inv_eigs = np.concatenate([lam, 1.0 / np.linalg.eigvalsh(0.5 * (IC + IC.T))])
    l = float(lam[0])
    return {"min_eig": float(inv_eigs.min()), "paper_bound": min(l, l**2 / 2.0), "corrected_bound": l / 2.0,
            "lam_min": l}


def theorem1_report(target: Target, natural_flow, n_checks: int = 41) -> dict:
    """Kumar et al. (2025) Thm 1 on a solved natural-gradient flow (:func:`vilab.flows.flow`, a Trace
    with the times in ``extra["t"]``; :func:`cut_flow` keeps its first part) of a
    Gaussian target (KL_* = 0): delta = lambda_min(A) (strong convexity, A = the target precision),
    lam_min = min_t lambda_min(V_t) along the flow (Assumption 4), the PL constants (printed and
    corrected, :func:`theorem1_rates`), the bounds e^{-2 mu t} KL_0 and whether the flow stays
    below each, and Lemma 1 checked at ``n_checks`` times: the smallest eigenvalue of F^-1 in (m, C)
    against the printed bound min{lam_min, lam_min^2/2} (false when lam_min > 1, digest Sec. 6.8)
    and the corrected lam_min / 2.
    """
    if not (target.quadratic and target.cov is not None):
        raise ValueError("Theorem 1 is illustrated on a Gaussian target (KL_* = 0, delta = lambda_min of its precision).")
    t, V, kl = np.asarray(natural_flow.extra["t"]), np.asarray(natural_flow.cov), np.asarray(natural_flow.objective)
    if len(t) < 2 or len(kl) != len(t):
        raise ValueError("The flow must be solved at two or more times.")
    delta = float(np.linalg.eigvalsh(np.linalg.inv(target.cov))[0])
    lam_t = np.linalg.eigvalsh(0.5 * (V + np.swapaxes(V, 1, 2)))[:, 0]
    i_min = int(np.argmin(lam_t))
    lam_min = float(lam_t[i_min])
    rates = theorem1_rates(delta, lam_min)
    bounds = {k: theorem1_bound(t, kl[0], mu) for k, mu in rates.items()}
    holds = {k: bool(np.all(kl <= b * (1 + 1e-9) + 1e-300)) for k, b in bounds.items()}
    idx = np.unique(np.r_[np.linspace(0, len(t) - 1, min(int(n_checks), len(t))).round().astype(int), i_min])
    min_eig = min(lemma1_check(0.5 * (V[i] + V[i].T))["min_eig"] for i in idx)
    return {"delta": delta, "lam_min": lam_min, "t_of_lam_min": float(t[i_min]), "rates": rates, "bounds": bounds,
            "holds": holds, "fisher_min_eig": float(min_eig), "lemma_paper_bound": min(lam_min, lam_min**2 / 2),
            "lemma_corrected_bound": lam_min / 2, "lemma_fails": bool(min_eig < min(lam_min, lam_min**2 / 2))}


def cut_flow(flow: Trace, t_end: float) -> Trace:
    """The rows of a solved flow (a Trace with ``extra["t"]``) at times t <= t_end."""
    t = np.asarray(flow.extra["t"])
    keep = t <= float(t_end) + 1e-9
    n = int(np.sum(keep))
    return replace(flow, mean=flow.mean[:n], cov=flow.cov[:n], var=None if flow.var is None else flow.var[:n],
                   objective=flow.objective[:n], iterations=flow.iterations[:n],
                   step_sizes=flow.step_sizes[:max(n - 1, 0)], extra={**flow.extra, "t": t[:n]})
