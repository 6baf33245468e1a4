"""Step-size limits of the update rules (linear stability on a Gaussian target; Kumar et al. (2025)
digest Secs. 2.4, 2.5, 8.1, 9.12-13; Tan digest A2) and step-size sweeps.

    stability_thresholds(A, C0) -> method -> step-size limit on a Gaussian target with precision A
    local_precision(target, init) -> A (the target's precision, or V*^-1 at the Gaussian fixed point)
    step_size_limits(target, init) -> {"limits": stability_thresholds(A, C0), "lam_min", "lam_max"}
    step_size_sweep(name, target, init, step_sizes, n_steps, **options) -> (iterations, statuses, traces)
"""

from __future__ import annotations

import numpy as np

from . import checks
from .algorithms import run, run_sweep
from .targets import Target

__all__ = ["stability_thresholds", "local_precision", "step_size_limits", "step_size_sweep"]


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
    """:func:`stability_thresholds` on ``target`` from the start ``init`` (any vilab.gaussian
    parameterisation; C0 = its covariance's Cholesky factor), linearised with A =
    :func:`local_precision`. Returns {"limits": method -> step-size limit, "lam_min", "lam_max":
    the extreme eigenvalues of A}."""
    from .gaussian import covariance

    A = local_precision(target, init)
    lam = np.linalg.eigvalsh(A)
    C0 = np.linalg.cholesky(np.asarray(covariance(init), float))
    return {"limits": stability_thresholds(A, C0), "lam_min": float(lam[0]), "lam_max": float(lam[-1])}
