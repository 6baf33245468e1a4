"""Variance of the single-draw gradient estimators (Chen, Nott & Tan Sec. 5.1 / 5.4, Supplement S2.1).

Gaussian target N(nu, Lambda^{-1}): grad log h = -Lambda (theta - nu), Hessian -Lambda.  In the
update-direction convention of Table 4,

    g_mu^KL = A z - Lambda (mu - nu),  A = T - Lambda T^{-T},
    g_mu^F = 2 Lambda g_mu^KL,  g_mu^S = 2 Lambda Sigma g_mu^KL,

so Var(g_mu^KL) = A A^T = Sigma^{-1} - 2 Lambda + Lambda Sigma Lambda, Var(g_mu^F) =
4 Lambda Var(g_mu^KL) Lambda, Var(g_mu^S) = 4 Lambda Sigma Var(g_mu^KL) Sigma Lambda.
For diagonal Lambda and T the T_ii-gradients have the per-coordinate variances of
:func:`gradient_variance_diagonal`.  :func:`gradient_variance_mc` estimates the same quantities
from the estimators the algorithms actually use (:mod:`vilab.divergences.stochastic`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import integer, real_array
from ..gaussian import check_factor
from .gaussian import check_precision
from .stochastic import grad_fdr, grad_kl, grad_sdr

__all__ = ["gradient_variance_mu", "gradient_variance_diagonal", "gradient_variance_mc"]


def gradient_variance_mu(precision, T) -> dict[str, np.ndarray]:
    """Covariance matrices of the single-draw mu-gradients (Chen, Nott & Tan Sec. 5.4).

    Var(g_mu^KL) = A A^T with A = T - Lambda T^{-T}; Var(g_mu^F) = 4 Lambda Var(g_mu^KL) Lambda;
    Var(g_mu^S) = 4 Lambda Sigma Var(g_mu^KL) Sigma Lambda.  (Independent of mu - nu.)
    """
    L = check_precision(precision)
    _, T = check_factor(np.zeros(L.shape[0]), T, "T")
    A = T - L @ np.linalg.inv(T).T
    V = A @ A.T
    Ti = np.linalg.inv(T)
    Sig = Ti.T @ Ti
    return {"kl": V, "fisher": 4 * L @ V @ L, "score": 4 * L @ Sig @ V @ Sig @ L}


def gradient_variance_diagonal(Lam_ii, T_ii, dmu=0.0) -> dict[str, dict[str, np.ndarray]]:
    """Per-coordinate gradient variances for diagonal Lambda and T (Chen, Nott & Tan Sec. 5.4).

    mu:  KL  T^2 - 2 Lam + Lam^2 / T^2;   F  4 Lam^2 Var_KL;   S  (4 Lam^2 / T^4) Var_KL.
    T:   KL  T^{-4} {Lam^2 dmu^2 + 2 (T - Lam/T)^2};   F  4 (T^2 + Lam)^2 Var_KL;
         S   4 Lam^2 T^{-8} {(3 Lam - T^2)^2 dmu^2 + 8 (T - Lam/T)^2},
    with dmu = mu_i - nu_i.  Returns {"mu": {...}, "T": {...}} keyed by "kl", "fisher", "score".
    """
    Lam, T, dm = (real_array(a, n, allow_empty=True) for a, n in ((Lam_ii, "Lambda_ii"), (T_ii, "T_ii"), (dmu, "dmu")))
    if np.any(Lam <= 0) or np.any(T <= 0):
        raise ValueError("Lambda_ii and T_ii must be positive.")
    vmu = T**2 - 2 * Lam + Lam**2 / T**2
    vT = T**-4 * (Lam**2 * dm**2 + 2 * (T - Lam / T) ** 2)
    return {
        "mu": {"kl": vmu, "fisher": 4 * Lam**2 * vmu, "score": 4 * Lam**2 / T**4 * vmu},
        "T": {"kl": vT, "fisher": 4 * (T**2 + Lam) ** 2 * vT,
              "score": 4 * Lam**2 * T**-8 * ((3 * Lam - T**2) ** 2 * dm**2 + 8 * (T - Lam / T) ** 2)},
    }


def gradient_variance_mc(key, precision, nu, mu, T, n: int = 100_000) -> dict[str, dict[str, np.ndarray]]:
    """Monte Carlo variances of the KLD / FDr / SDr single-draw estimators at (mu, T).

    Uses the algorithms' own gradient code (Table 4).  Returns {"mu": {method: (d, d) covariance},
    "T_diag": {method: (d,) variances of the T_ii gradients}} (gradients w.r.t. T, not log T_ii).
    """
    L = check_precision(precision)
    d = L.shape[0]
    mu, T = check_factor(mu, T, "T")
    nu, _ = check_factor(nu, np.eye(d), "I")
    if mu.shape[0] != d or nu.shape[0] != d:
        raise ValueError(f"Dimension mismatch: the precision is {d} x {d} but mu has {mu.shape[0]} and nu "
                         f"{nu.shape[0]} entries.")
    L, nu, mu, T = (jnp.asarray(a) for a in (L, nu, mu, T))

    def score(th):
        return -L @ (th - nu)

    def hvp(th, v):
        return -L @ v

    n = integer(n, "The number of Monte Carlo draws n (at least 2 for a variance)", minimum=2, maximum=2**31 - 1)
    z = jax.random.normal(key, (n, d), dtype=jnp.float64)
    fns = {
        "kl": lambda zz: grad_kl(score, mu, T, zz),
        "fisher": lambda zz: grad_fdr(score, hvp, mu, T, zz),
        "score": lambda zz: grad_sdr(score, hvp, mu, T, zz),
    }
    out = {"mu": {}, "T_diag": {}}
    for name, f in fns.items():
        gm, gT = jax.vmap(f)(z)
        gm = np.asarray(gm)
        out["mu"][name] = np.cov(gm, rowvar=False).reshape(d, d)
        out["T_diag"][name] = np.asarray(jnp.diagonal(gT, axis1=1, axis2=2)).var(0, ddof=1)
    return out
