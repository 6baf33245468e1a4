"""Step-size limits of the update rules (linear stability on a Gaussian target; Kumar et al. (2025)
digest Secs. 2.4, 2.5, 8.1, 9.12-13; Tan digest A2) and step-size sweeps.

    stability_thresholds(A, C0) -> method -> step-size limit on a Gaussian target with precision A
    local_precision(target, init) -> A (the target's precision, or V*^-1 at the Gaussian fixed point)
    step_size_limits(target, init) -> {"limits": stability_thresholds(A, C0), "lam_min", "lam_max"}
    step_size_sweep(name, target, init, step_sizes, n_steps, **options) -> (iterations, statuses, traces)
    atlas(name, kappas, step_sizes, n_steps, tol, m0, c0) -> Atlas: iterations to tolerance over step size x
        condition number on rotated_gaussian_2d(kappa), every cell in one vmapped compiled loop
    atlas_limits(kappas, c0) -> the analytic limits over kappa: linearised (stability_thresholds), Kumar et al.
        Thm 2's eta > 0 region (guarantees.theorem2_constants), Tan's PD threshold of the precision update
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..core import checks
from ..algorithms import algorithm, get_method, run, run_sweep
from ..targets import Target

__all__ = ["stability_thresholds", "local_precision", "step_size_limits", "step_size_sweep", "ATLAS_METHODS",
           "Atlas", "atlas", "atlas_limits", "outcome_of"]


def stability_thresholds(A, C0=None) -> dict:
    """Step-size limits on a Gaussian target with precision A (linear stability; descent form).

    With lam_max = lambda_max(A), lam_min = lambda_min(A) and x0^2 = lambda_max(C0^T A C0):
      gd-mc, tan-1E, bwgd : 1 / lam_max  (covariance factor 1 - alpha (lam_i + lam_j); Kumar digest
                            Secs. 2.5, 8.1, 9.12; the mean alone would allow 2 / lam_max)
      fbgvi               : 1 / lam_max  (beyond it FB-GVI stalls at a wrong covariance; Sec. 2.6)
      gd-mv               : min(2 / lam_max, 4 / lam_max^2)  (local factor 1 - rho a^2 / 2; Sec. 8.1)
      vn, lambda          : 1  (S_k - A = (1 - rho)^k (S_0 - A): monotone and PD for rho <= 1; Sec. 2.8)
      srvn, tan-1N        : min(2, 2 / x0^2, 4 / (x0^2 - 1))  (1-D analysis of Sec. 2.4: mean factor
                            1 - rho x^2, scale contracts iff x^2 < 1 + 4/rho, local factor 1 - rho)
      tan-2N, tan-2N-cor1 : 2  (T update t <- t (1 + rho (u - 1)/2), local factor 1 - rho; Tan digest A2)
      tan-2E              : min(2 / lam_max, lam_min)  (Euclidean step on T: curvature 2 / lam at
                            t* = sqrt(lam), and the mean)
    These are 1-D (per eigen-direction) linearisations at the optimum or the start: reference
    lines, not guarantees (e.g. SR-VN from C0 = I on Kumar's T2 diverges below its line).
    """
    A = checks.pd_matrix(A, "The target precision A")
    lam = np.linalg.eigvalsh(A)
    lmin, lmax = float(lam[0]), float(lam[-1])
    C0 = np.eye(len(lam)) if C0 is None else checks.real_array(C0, "The starting factor C0", ndim=2)
    if C0.shape != A.shape:
        raise ValueError(f"The starting factor C0 must be {A.shape[0]} x {A.shape[0]} like A; got shape {C0.shape}.")
    x2 = float(np.linalg.eigvalsh(C0.T @ A @ C0)[-1])
    sr = min(2.0, 2.0 / x2, 4.0 / (x2 - 1.0) if x2 > 1 else np.inf)
    return {"gd-mc": 1 / lmax, "tan-1E": 1 / lmax, "bwgd": 1 / lmax, "fbgvi": 1 / lmax,
            "gd-mv": min(2 / lmax, 4 / lmax**2), "vn": 1.0, "lambda": 1.0, "srvn": sr, "tan-1N": sr,
            "tan-2N": 2.0, "tan-2N-cor1": 2.0, "tan-2E": min(2 / lmax, lmin)}


def step_size_sweep(name: str, target: Target, init, step_sizes, n_steps: int, key=None, **options):
    """Iterations to tolerance for each step size, from one vmapped compiled loop
    (:func:`vilab.algorithms.run_sweep`, i.e. :func:`vilab.core.run_many` over states that differ in
    their step size). Returns (iterations (k,) int array, statuses list,
    traces): iterations = steps taken (for a "converged" run, the iterations to tolerance)."""
    steps = np.asarray(step_sizes, float)
    if steps.ndim != 1 or steps.size == 0 or np.any(~np.isfinite(steps)) or np.any(steps <= 0):
        raise ValueError("Step sizes for a sweep must be a non-empty list of positive numbers.")
    traces = run_sweep(name, target, init, int(n_steps), steps, key=key, **options)
    return np.array([t.n_steps for t in traces], int), [t.status for t in traces], traces


def local_precision(target: Target, init, n_steps: int = 500) -> np.ndarray:
    """The precision matrix A the step-size limits are linearised with: the target's precision for a
    Gaussian target, else V*^-1 = E_q*[-hess log p] at the Gaussian fixed point q* (Kumar et al.
    (2025) Eq. 22), found by VN with rho = 1 (exact expectations needed)."""
    if target.quadratic and target.cov is not None:
        A = np.linalg.inv(np.asarray(target.cov, float))
        return 0.5 * (A + A.T)
    tr = run("vn", target, init, int(n_steps), 1.0, rel_tol=1e-12)
    if tr.status != "converged":
        raise ValueError(f"Could not locate the Gaussian fixed point of {target.name!r} (VN: {tr.status}).")
    A = np.linalg.inv(tr.cov[-1])
    return 0.5 * (A + A.T)


def step_size_limits(target: Target, init) -> dict:
    """:func:`stability_thresholds` on ``target`` from the start ``init`` (any vilab.family.gaussian
    parameterisation; C0 = its covariance's Cholesky factor), linearised with A =
    :func:`local_precision`. Returns {"limits": method -> step-size limit, "lam_min", "lam_max":
    the extreme eigenvalues of A}."""
    from ..family.gaussian import covariance

    A = local_precision(target, init)
    lam = np.linalg.eigvalsh(A)
    C0 = np.linalg.cholesky(np.asarray(covariance(init), float))
    return {"limits": stability_thresholds(A, C0), "lam_min": float(lam[0]), "lam_max": float(lam[-1])}


# ---------------------------------------------------------------------------------------------
# The stability atlas: iterations to tolerance over step size x condition number


ATLAS_METHODS = ("vn", "srvn", "gd-mc", "gd-mv", "bwgd", "fbgvi", "tan-1E", "tan-1N", "tan-2E", "tan-2N",
                 "tan-2N-cor1")
ATLAS_MAX_CELLS = 4096  # kappas x step sizes in one vmapped loop


class Atlas(NamedTuple):
    """Iterations to tolerance of one method on rotated_gaussian_2d(kappa) from (m0, C0 = c0 I), for every
    (kappa, step size): ``iterations[i, j]`` and ``status[i, j]`` are those of
    ``vilab.algorithms.run(method, rotated_gaussian_2d(kappas[i]), CholCov(m0, c0 I), n_steps, step_sizes[j],
    kl_tol=tol)``; ``outcome[i, j]`` is "converged", "max_steps" (step limit reached), "diverged" or "stalled";
    ``final_kl[i, j]`` the KL(q || p) of the last valid iterate."""

    method: str
    kappas: np.ndarray
    step_sizes: np.ndarray
    iterations: np.ndarray
    outcome: np.ndarray
    status: np.ndarray
    final_kl: np.ndarray
    n_steps: int
    tol: float
    m0: tuple
    c0: float


def outcome_of(status: str) -> str:
    """The atlas's outcome of a run's status: "converged", "diverged", "max_steps" or "stalled"."""
    s = str(status)
    if s.startswith("diverged"):
        return "diverged"
    return s if s in ("converged", "stalled") else "max_steps"


def _grid(x, what: str, least: float) -> np.ndarray:
    a = checks.real_array(x, what, ndim=1)
    if np.any(a < least) or np.any(a <= 0):
        raise ValueError(f"{what} must all be at least {least:g}" if least > 0 else f"{what} must all be positive.")
    return a


def atlas(name: str, kappas, step_sizes, n_steps: int = 1000, tol: float = 1e-8, m0=(-2.0, 2.5),
          c0: float = 0.2) -> Atlas:
    """The stability atlas of method ``name`` (exact gradients, constant step size): for each condition number
    kappa of the target :func:`vilab.targets.rotated_gaussian_2d` (precision eigenvalues 1 and kappa, Kumar et al.
    (2025) Fig. 1 style) and each step size rho, the iterations until KL(q || p) < ``tol`` from
    (m0, C0 = c0 I) (Kumar et al. Assumption 1's start), or the step limit, or the divergence.

    Every cell is the run :func:`vilab.algorithms.run` would make (the Trajectories page's "correlated Gaussian"),
    all of them in one vmapped compiled loop (:func:`vilab.core.run_many`: the targets are members of one family,
    whose parameters travel in the state, and the step size is ``hyper["rho"]``), so a new kappa range, start or
    tolerance reuses the compiled program. The iterates, counts and final KL are run()'s exactly; rows are kept
    every n_steps / 32 steps, so the runner's end-of-run blow-up check (an objective that ended far above its
    best, :func:`vilab.core.trace.blowup_code`) sees those rows: in a chaotic cell, whose KL jumps over orders of
    magnitude without converging, the atlas may say "max_steps" where run() says "diverged: objective exploded".
    """
    from .. import core as vcore
    from ..family.gaussian import CholCov
    from ..targets import rotated_gaussian_2d

    if not isinstance(name, str):
        raise ValueError(f"The method must be named by a string, e.g. 'srvn'; got {name!r}.")
    get_method(name)
    ks = _grid(kappas, "The condition numbers kappa", 1.0)
    rhos = _grid(step_sizes, "The step sizes", 0.0)
    if ks.size * rhos.size > ATLAS_MAX_CELLS:
        raise ValueError(f"An atlas holds at most {ATLAS_MAX_CELLS} cells; {ks.size} condition numbers x "
                         f"{rhos.size} step sizes is {ks.size * rhos.size}. Use coarser grids.")
    n_steps = checks.integer(n_steps, "The maximum number of steps", 1, 100_000)
    tol = checks.positive(tol, "The tolerance")
    m0 = tuple(float(v) for v in checks.real_array(m0, "The start mean m0", ndim=1))
    if len(m0) != 2:
        raise ValueError(f"The start mean m0 must have 2 numbers (the target is 2-D); got {len(m0)}.")
    c0 = checks.positive(c0, "The start scale c0")
    key = vcore.no_draws_key()  # exact gradients: nothing is drawn (vilab.core.keys)
    start = CholCov(np.asarray(m0), c0 * np.eye(2))
    algs = [algorithm(name, rotated_gaussian_2d(float(k))) for k in ks]
    per_kappa = [a.init(key, start, rho=1.0) for a in algs]  # host-side checks of the start, once per kappa
    K, R = ks.size, rhos.size
    states = jax.tree_util.tree_map(lambda *xs: jnp.repeat(jnp.stack(xs), R, axis=0), *per_kappa)
    states = vcore.set_hyper(states, rho=jnp.tile(jnp.asarray(rhos), K))
    keys = jax.random.split(key, K * R)
    # rows every n_steps / 32 steps: the runner's end-of-run check of a blow-up (an objective that climbed far
    # above its best over the last quarter of the rows) then judges as run() does, at a fraction of the cost
    traces = vcore.run_many(algs[0], keys, states, n_steps, record_every=max(1, n_steps // 32), below=tol,
                            below_on="kl")
    its = np.array([t.n_steps for t in traces], int).reshape(K, R)
    status = np.array([t.status for t in traces], dtype=object).reshape(K, R)
    final = np.array([float(t.objective[-1]) for t in traces]).reshape(K, R)
    for i, s0 in enumerate(per_kappa):  # a start already within the tolerance: converged in 0 steps (as run())
        if float(s0.kl) < tol:
            its[i], status[i], final[i] = 0, "converged", float(s0.kl)
    outcome = np.vectorize(outcome_of, otypes=[object])(status).astype(str)
    return Atlas(name, ks, rhos, its, outcome, status, final, n_steps, tol, m0, c0)


def atlas_limits(kappas, c0: float = 0.2) -> dict:
    """The analytic step-size limits of the atlas over kappa (target :func:`vilab.targets.rotated_gaussian_2d`,
    precision A with eigenvalues 1 and kappa; start C0 = c0 I), each an array over ``kappas``:

    * ``"linearised"``: method -> :func:`stability_thresholds` (A, C0): 1/lam_max for GD in (m, C), BW-GD,
      FB-GVI and Tan's 1E; min(2/lam_max, 4/lam_max^2) for GD in (m, V); SR-VN's min(2, 2/x0^2, 4/(x0^2 - 1)),
      x0^2 = c0^2 lam_max (Kumar digest Sec. 2.4); 1 for VN; 2 for Tan's 2N; min(2/lam_max, lam_min) for 2E.
      Linearisations (per eigen-direction, at the optimum or the start): reference lines, not guarantees.
    * ``"theorem2"``: Kumar et al. (2025) Thm 2 gives eta > 0 (Eq. 25), hence a guaranteed linear rate for SR-VN,
      exactly for rho below this (2 min(rho1, rho2), :func:`vilab.theory.guarantees.theorem2_constants`: the
      Assumption 4 constants along the natural-gradient flow from C0); ``"rho1"``, ``"rho2"`` too.
    * ``"precision_pd"``: Tan (2025) Sec. 7 (:func:`vilab.theory.definiteness.precision_pd_limit`): the precision update
      S+ = (1 - rho) S + rho A of VN from S0 = I / c0^2 stays positive definite exactly for rho below this
      (1 / (1 - c0^2 lam_min) when c0^2 lam_min < 1, else every rho): exact for the first step.
    """
    from .definiteness import precision_pd_limit
    from .guarantees import theorem2_constants
    from ..targets import rotated_gaussian_2d

    ks = _grid(kappas, "The condition numbers kappa", 1.0)
    c0 = checks.positive(c0, "The start scale c0")
    C0 = c0 * np.eye(2)
    lin: dict = {}
    t2, r1, r2, pd = [], [], [], []
    for k in ks:
        A = np.linalg.inv(np.asarray(rotated_gaussian_2d(float(k)).cov, float))
        A = 0.5 * (A + A.T)
        for m, v in stability_thresholds(A, C0).items():
            lin.setdefault(m, []).append(v)
        c = theorem2_constants(A, C0)
        t2.append(c["eta_positive_below"])
        r1.append(c["rho1"])
        r2.append(c["rho2"])
        pd.append(precision_pd_limit(np.eye(2) / c0**2, -A))
    return {"kappas": ks, "linearised": {m: np.asarray(v) for m, v in lin.items()}, "theorem2": np.asarray(t2),
            "rho1": np.asarray(r1), "rho2": np.asarray(r2), "precision_pd": np.asarray(pd)}
