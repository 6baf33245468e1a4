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
from scipy.optimize import brentq

from ..core.checks import integer, real_array, real_scalar
from ..core import memoize
from ..family.gaussian import check_factor
from .gaussian import check_precision
from .stochastic import grad_fdr, grad_kl, grad_sdr

__all__ = ["gradient_variance_mu", "gradient_variance_diagonal", "gradient_variance_T", "gradient_variance_mc",
           "variance_crossings", "FIG4_LAMBDA_RANGE", "FIG4_LAMBDA_MEAN", "fig4_precision", "german_credit_gaussian",
           "fig4_gradient_sd", "FIG4_TARGETS"]

#: the targets of :func:`fig4_gradient_sd`
FIG4_TARGETS = ("German credit", "stand-in")


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


def _checked(precision, nu, mu, T):
    """(Lambda, d, nu, mu, T) checked: a positive-definite precision, a factor T, matching dimensions."""
    L = check_precision(precision)
    d = L.shape[0]
    mu, T = check_factor(mu, T, "T")
    nu, _ = check_factor(nu, np.eye(d), "I")
    if mu.shape[0] != d or nu.shape[0] != d:
        raise ValueError(f"Dimension mismatch: the precision is {d} x {d} but mu has {mu.shape[0]} and nu "
                         f"{nu.shape[0]} entries.")
    return L, d, nu, mu, T


def gradient_variance_mc(key, precision, nu, mu, T, n: int = 100_000) -> dict[str, dict[str, np.ndarray]]:
    """Monte Carlo variances of the KLD / FDr / SDr single-draw estimators at (mu, T).

    Uses the algorithms' own gradient code (Table 4).  Returns {"mu": {method: (d, d) covariance},
    "T_diag": {method: (d,) variances of the T_ii gradients}} (gradients w.r.t. T, not log T_ii).
    """
    L, d, nu, mu, T = _checked(precision, nu, mu, T)
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


def _affine_products_variance(terms) -> np.ndarray:
    """Per-coordinate variance of sum_k (alpha_k + a_k . z)(beta_k + b_k . z), z ~ N(0, I_d).

    ``terms``: list of (alpha (d,), a (d, d), beta (d,), b (d, d)), row i of a / b the vector of
    coordinate i.  The sum is c + l . z + z^T P z with l = sum_k (alpha_k b_k + beta_k a_k) and
    P = sum_k a_k b_k^T, so (Isserlis) Var = l . l + 2 tr(sym(P)^2) = l . l + tr(P^2) + tr(P P^T).
    """
    ell = sum(al[:, None] * b + be[:, None] * a for al, a, be, b in terms)
    out = np.einsum("ij,ij->i", ell, ell)
    for _, ak, _, bk in terms:
        for _, al, _, bl in terms:
            # tr(P^2) = sum_kl (b_k . a_l)(b_l . a_k);  tr(P P^T) = sum_kl (a_k . a_l)(b_k . b_l)
            out = out + np.einsum("ij,ij->i", bk, al) * np.einsum("ij,ij->i", bl, ak)
            out = out + np.einsum("ij,ij->i", ak, al) * np.einsum("ij,ij->i", bk, bl)
    return out


def gradient_variance_T(precision, nu, mu, T) -> dict[str, np.ndarray]:
    """Exact variances of the single-draw T_ii-gradients of KLD, FDr and SDr for any Gaussian target.

    Chen, Nott & Tan Sec. 5.4 / Supplement S2.1 give these for diagonal Lambda and T only
    (:func:`gradient_variance_diagonal`); Fig. 4 has a dense Lambda.  With grad log h = -Lambda
    (theta - nu), Hessian -Lambda, theta = mu + U z (U = T^{-T}, Sigma = U U^T), delta = mu - nu,
    c = -Lambda delta and A = T - Lambda U, Table 4's steps give the score mismatch g = c + A z,
    u = U z and the T-gradients (update-direction sign, which a variance ignores; H = -Lambda)

        KL:  g_T = u (U^T g)^T                        -> [g_T]_ii = (U z)_i (U^T g)_i
        F:   g_T = 2 (g z^T + u (U^T Lambda g)^T)     -> [g_T]_ii = 2 [g_i z_i + (U z)_i (U^T Lambda g)_i]
        S:   g_T = 2 ((Sigma g)(z - U^T g)^T + u (U^T Lambda Sigma g)^T)
             -> [g_T]_ii = 2 [(Sigma g)_i (z - U^T g)_i + (U z)_i (U^T Lambda Sigma g)_i]

    (for a Gaussian target these are the paper's Sec. 5.4 g_T^KL, g_T^F, g_T^S).  Each entry is a sum
    of products of two affine functions of z ~ N(0, I), i.e. const + l^T z + z^T P z, whose variance
    is l^T l + 2 tr(sym(P)^2).  For diagonal Lambda and T this reduces to the paper's
    Var(g_Tii^KL) = T^-4 {Lam^2 delta^2 + 2 (T - Lam/T)^2}, Var(g_Tii^F) = 4 (T^2 + Lam)^2 Var_KL,
    Var(g_Tii^S) = 4 Lam^2 T^-8 {(3 Lam - T^2)^2 delta^2 + 8 (T - Lam/T)^2}.

    Returns {"kl", "fisher", "score"}: (d,) variances of the T_ii gradients (w.r.t. T, not log T_ii),
    the quantities :func:`gradient_variance_mc` estimates under "T_diag".
    """
    L, d, nu, mu, T = _checked(precision, nu, mu, T)
    U = np.linalg.inv(T).T
    Sig = U @ U.T
    c = -L @ (mu - nu)
    A = T - L @ U
    E = np.eye(d)
    zero = np.zeros(d)
    # (alpha + a . z) pieces, row i for coordinate i
    Uz = (zero, U)                                 # (U z)_i
    g = (c, A)                                     # g_i
    Utg = (U.T @ c, U.T @ A)                       # (U^T g)_i
    ULg = (U.T @ L @ c, U.T @ L @ A)               # (U^T Lambda g)_i
    Sg = (Sig @ c, Sig @ A)                        # (Sigma g)_i
    z_m_Utg = (-U.T @ c, E - U.T @ A)              # (z - U^T g)_i
    ULSg = (U.T @ L @ Sig @ c, U.T @ L @ Sig @ A)  # (U^T Lambda Sigma g)_i
    z = (zero, E)
    kl = _affine_products_variance([Uz + Utg])
    fisher = 4.0 * _affine_products_variance([g + z, Uz + ULg])
    score = 4.0 * _affine_products_variance([Sg + z_m_Utg, Uz + ULSg])
    return {"kl": kl, "fisher": fisher, "score": score}


def variance_crossings(T_ii: float, dmu: float = 0.0) -> dict[str, dict[str, float]]:
    """The Lambda_ii at which Fisher's and the score's gradient variance equals KL's (diagonal Lambda, T).

    Chen, Nott & Tan Sec. 5.4: mu-gradients: Fisher larger iff Lambda_ii > 1/2, score iff
    Lambda_ii / T_ii^2 > 1/2; T-gradients: Fisher iff T_ii^2 + Lambda_ii > 1/2, score (at mu_i = nu_i)
    iff Lambda_ii / T_ii^2 > 1/4.  Returns {"mu": {"fisher", "score"}, "T": {"fisher", "score"}}: the
    crossing Lambda_ii (Fisher's above KL's / the score's above KL's for larger Lambda_ii); NaN where
    there is none (Fisher's T-gradients when T_ii^2 >= 1/2: always above; the score's T-gradients when
    dmu != 0: the 1/4 rule assumes mu_i = nu_i).
    """
    t = real_scalar(T_ii, "T_ii")
    if not t > 0:
        raise ValueError("T_ii must be positive.")
    dm = real_scalar(dmu, "The offset mu - nu")
    return {"mu": {"fisher": 0.5, "score": 0.5 * t**2},
            "T": {"fisher": 0.5 - t**2 if t**2 < 0.5 else float("nan"),
                  "score": 0.25 * t**2 if dm == 0 else float("nan")}}


# ---------------------------------------------------------------------------------------------
# Fig. 4 of Chen, Nott & Tan

#: Fig. 4's German-credit precision (d = 49): its diagonal runs over this range with this mean
#: (Sec. 5.1, as quoted in the reference digest); the matrix itself (from MCMC) is not available here.
FIG4_LAMBDA_RANGE = (0.52, 148.82)
FIG4_LAMBDA_MEAN = 45.68


def fig4_precision(correlation: float = 0.0, d: int = 49) -> np.ndarray:
    """A stand-in for Fig. 4's target precision: d = 49 with the printed range and mean of diag(Lambda).

    Lambda_ii = lo + (hi - lo) u_i^p, u_i = i / (d - 1) (i = 0..d-1), with p chosen so that the mean of
    the diagonal is FIG4_LAMBDA_MEAN (lo, hi = FIG4_LAMBDA_RANGE): the smallest, largest and mean
    Lambda_ii are the paper's, the spacing in between is ours.  Off the diagonal
    Lambda_ij = correlation^|i-j| sqrt(Lambda_ii Lambda_jj) (an AR(1) pattern, positive definite for
    |correlation| < 1); correlation = 0 gives the diagonal target of the paper's Sec. 5.4 formulas.
    """
    r = real_scalar(correlation, "The correlation")
    if not -1.0 < r < 1.0:
        raise ValueError(f"The correlation must lie strictly between -1 and 1; got {r:g}.")
    d = integer(d, "The dimension d", minimum=2, maximum=2000)
    lo, hi = FIG4_LAMBDA_RANGE
    u = np.arange(d) / (d - 1)
    p = brentq(lambda p: np.mean(lo + (hi - lo) * u**p) - FIG4_LAMBDA_MEAN, 0.01, 100.0)
    lam = lo + (hi - lo) * u**p
    i = np.arange(d)
    R = r ** np.abs(i[:, None] - i[None, :])
    s = np.sqrt(lam)
    return R * np.outer(s, s)


def german_credit_gaussian() -> tuple[np.ndarray, np.ndarray]:
    """(Lambda, nu) of Fig. 4 (Chen, Nott & Tan Sec. 5.4): the German-credit posterior's precision and mean from
    MCMC draws, as in the paper: Lambda the inverse of the covariance of 20,000 NUTS draws, nu their mean
    (assets/hierarchical/german.npz, made by scripts/german_reference.py; d = 49, prior N(0, 100 I)). Its
    diagonal lies in [0.53, 150.98] with mean 50.43, against the paper's printed [0.52, 148.82] and 45.68."""
    L, nu = _german_credit_gaussian()
    return L.copy(), nu.copy()


@memoize("german-credit-gaussian", maxsize=1)
def _german_credit_gaussian():
    from ..targets.reference import ASSET_DIR

    path = ASSET_DIR / "german.npz"
    if not path.exists():
        raise ValueError("No cached MCMC reference for the German credit data: run `python "
                         "scripts/german_reference.py`.")
    z = np.load(path)
    L = np.linalg.inv(z["cov"])
    return 0.5 * (L + L.T), np.asarray(z["mean"], float)


def fig4_gradient_sd(key, t_scale: float = 10.0, dmu: float = 0.0, correlation: float = 0.0, n: int = 1000,
                     d: int = 49, target: str = "stand-in") -> dict:
    """Fig. 4 of Chen, Nott & Tan: standard deviations of the single-draw gradients at T = t_scale I.

    The paper's setting: d = 49, mu = 0 and T = 10 I ("uninformative initialisation"), 1000 draws of
    z.  ``target="German credit"``: the paper's data, Lambda and nu from MCMC as the paper
    (:func:`german_credit_gaussian`; ``correlation``, ``d`` and ``dmu`` are not used).  ``target="stand-in"``: :func:`fig4_precision` (the printed range and mean of Lambda_ii,
    an AR(1) ``correlation``), mu - nu = ``dmu`` in every coordinate (the mu-gradients do not depend on it).  Closed forms:
    :func:`gradient_variance_mu` (diagonal) and :func:`gradient_variance_T`; Monte Carlo:
    :func:`gradient_variance_mc` with ``key`` and ``n`` draws.

    Returns {"lambda_ii": (d,), "nu": (d,), "closed": {"mu": {m: sd}, "T": {m: sd}}, "mc": same}, m in kl,
    fisher, score.
    """
    t = real_scalar(t_scale, "The scale t of T = t I")
    if not (t > 0 and np.isfinite(t)):
        raise ValueError(f"The scale t of T = t I must be positive and finite; got {t:g}.")
    dm = real_scalar(dmu, "The offset mu - nu")
    if target not in FIG4_TARGETS:
        raise ValueError(f"Unknown target {target!r}; choose one of {', '.join(FIG4_TARGETS)}.")
    if target == "German credit":  # the paper's own setting: mu = 0, nu the posterior mean
        L, nu = german_credit_gaussian()
        d = L.shape[0]
        mu = np.zeros(d)
    else:
        L = fig4_precision(correlation, d)
        d = L.shape[0]
        mu = np.zeros(d)
        nu = mu - dm
    T = t * np.eye(d)
    vmu = gradient_variance_mu(L, T)
    vT = gradient_variance_T(L, nu, mu, T)
    mc = gradient_variance_mc(key, L, nu, mu, T, n=n)
    names = ("kl", "fisher", "score")
    closed = {"mu": {m: np.sqrt(np.diag(vmu[m])) for m in names}, "T": {m: np.sqrt(vT[m]) for m in names}}
    est = {"mu": {m: np.sqrt(np.diag(mc["mu"][m])) for m in names}, "T": {m: np.sqrt(mc["T_diag"][m]) for m in names}}
    return {"lambda_ii": np.diag(L).copy(), "nu": nu, "closed": closed, "mc": est}
