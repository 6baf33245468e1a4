"""Divergences between Gaussians and the mean-field optima of Chen, Nott & Tan (2025), Sec. 1-2.

Notation (Chen, Nott & Tan): target p = N(nu, Lambda^{-1}) with precision ``Lambda``;
variational q = N(mu, Sigma).  ``Sigma_ii`` is a variance.  The weighted Fisher divergence is

    S_M(q||p) = E_q || grad log q - grad log p ||_M^2 ,

with M = I the Fisher divergence F and M = Sigma the score-based divergence S (Cai et al. 2024).

The closed forms are written with ``jax.numpy`` so that they can be differentiated; the
mean-field optima are plain numpy (the score-based one is a non-negative quadratic program).
"""

from __future__ import annotations

from itertools import combinations
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular
from scipy.optimize import nnls

from ..core.checks import finite_result, integer, real_array, real_scalar
from ..core.keys import check_key
from ..family.gaussian import check_mean_cov, kl_whitened

__all__ = [
    "DIVERGENCES",
    "check_precision",
    "kl_qp",
    "kl_pq",
    "weighted_fisher",
    "fisher",
    "score_divergence",
    "divergence",
    "monte_carlo_divergence",
    "MeanFieldOptimum",
    "meanfield_variances",
    "meanfield_optimum",
    "score_nqp",
    "score_nqp_batch",
    "batch_meanfield_fixed_point",
    "precision_2d",
    "precision_3d",
    "fig1_grid",
    "variance_curves_2d",
    "WEIGHTS",
    "check_weight_pd",
    "weight_matrix",
    "weighted_meanfield",
    "weighted_fisher_comparison",
    "weighted_variance_curves_2d",
]

#: the divergences ``meanfield_variances`` knows, with a display label
DIVERGENCES = {
    "kl": "KL(q||p)",
    "fisher": "Fisher",
    "score": "score-based",
    "weighted_fisher": "weighted Fisher",
    "forward_kl": "KL(p||q)",
}


# ---------------------------------------------------------------------------------------------
# input checks


def check_precision(precision, name: str = "Lambda") -> np.ndarray:
    """Return ``precision`` as a float64 symmetric positive-definite matrix, else ValueError
    (the checks of :func:`vilab.family.gaussian.check_mean_cov`: square, finite, symmetric, PD)."""
    L = real_array(precision, f"The precision {name}")
    if L.ndim == 0:
        L = L.reshape(1, 1)
    if L.ndim != 2:
        raise ValueError(f"The precision {name} must be a square matrix; got shape {L.shape}.")
    _, L = check_mean_cov(np.zeros(L.shape[0]), L, name=name, matrix_kind="precision")
    return 0.5 * (L + L.T)


def _weight_matrix(weight, d: int) -> np.ndarray:
    if weight is None:
        raise ValueError("The weighted Fisher divergence needs a weight: a positive vector or a PSD matrix M.")
    M = real_array(weight, "The weight M")
    if M.ndim == 1:
        if M.shape[0] != d:
            raise ValueError(f"The weight vector has length {M.shape[0]}, but the target has dimension {d}.")
        if np.any(M <= 0) or not np.all(np.isfinite(M)):
            raise ValueError("The diagonal weights M_ii must be finite and positive.")
        return np.diag(M)
    if M.shape != (d, d):
        raise ValueError(f"The weight matrix M must be {d} x {d}; got shape {M.shape}.")
    if not np.allclose(M, M.T) or np.linalg.eigvalsh(0.5 * (M + M.T))[0] < -1e-12:
        raise ValueError("The weight matrix M must be symmetric positive semi-definite.")
    if np.any(np.diag(M) <= 0):
        raise ValueError("The weight matrix M needs a positive diagonal (M_ii > 0).")
    return 0.5 * (M + M.T)


def _is_traced(*arrays) -> bool:
    return any(isinstance(a, jax.core.Tracer) for a in jax.tree_util.tree_leaves(arrays))


def _checked_qp(mu, Sigma, nu, Lambda):
    """float64 jnp arrays of (mu, Sigma, nu, Lambda); on concrete input first ValueError for a
    non-real, non-finite, non-PD or mismatched input (checks skipped under jit / grad)."""
    if not _is_traced(mu, Sigma, nu, Lambda):
        mu, Sigma = check_mean_cov(mu, Sigma)
        nu = real_array(nu, "The target mean nu", ndim=1)
        Lambda = check_precision(Lambda)
        if not (len(mu) == len(nu) == Lambda.shape[0]):
            raise ValueError(f"Dimension mismatch: q has dimension {len(mu)}, the target mean {len(nu)} and "
                             f"the precision is {Lambda.shape[0]} x {Lambda.shape[0]}.")
    return tuple(jnp.asarray(a, dtype=jnp.float64) for a in (mu, Sigma, nu, Lambda))


def _finite(value, what: str):
    """``value``, or (eagerly) ValueError explaining an overflow when it is not finite."""
    return value if _is_traced(value) else finite_result(value, what)


# ---------------------------------------------------------------------------------------------
# closed forms for Gaussian q and Gaussian p


def _factors(Sigma, Lambda):
    """(C, F): Sigma = C C^T with C lower triangular, Lambda = F F^T with F UPPER triangular (the Cholesky
    factor of the reversed Lambda, reversed back), so that F^T C and C^-1 F^-T are lower triangular."""
    C = jnp.linalg.cholesky(Sigma)
    F = jnp.flip(jnp.linalg.cholesky(jnp.flip(Lambda, (0, 1))), (0, 1))
    return C, F


def kl_qp(mu, Sigma, nu, Lambda):
    """KL(q||p) for q = N(mu, Sigma), p = N(nu, Lambda^{-1}).

    Chen, Nott & Tan Sec. 1.1 (standard closed form):
    ``1/2 [tr(Lambda Sigma) + (mu-nu)^T Lambda (mu-nu) - d - log det(Lambda Sigma)]``, computed by
    :func:`vilab.family.gaussian.kl_whitened` from A = F^T C (Sigma = C C^T, Lambda = F F^T): a sum of
    non-negative terms, so that it stays >= 0 for ill-conditioned input (no explicit inverse).
    """
    mu, Sigma, nu, Lambda = _checked_qp(mu, Sigma, nu, Lambda)
    C, F = _factors(Sigma, Lambda)
    return _finite(kl_whitened(F.T @ C, F.T @ (mu - nu)), "KL(q||p)")


def kl_pq(mu, Sigma, nu, Lambda):
    """Forward KL(p||q) for q = N(mu, Sigma), p = N(nu, Lambda^{-1}) (a reference, not in the paper).

    ``1/2 [tr(Sigma^{-1} Lambda^{-1}) + (mu-nu)^T Sigma^{-1} (mu-nu) - d + log det Sigma + log det Lambda]``,
    computed by :func:`vilab.family.gaussian.kl_whitened` from A = C^-1 F^-T (triangular solves, no inverse), >= 0.
    """
    mu, Sigma, nu, Lambda = _checked_qp(mu, Sigma, nu, Lambda)
    C, F = _factors(Sigma, Lambda)
    Fit = solve_triangular(F.T, jnp.eye(F.shape[0], dtype=F.dtype), lower=True)  # F^-T
    A = solve_triangular(C, Fit, lower=True)
    return _finite(kl_whitened(A, solve_triangular(C, mu - nu, lower=True)), "KL(p||q)")


def weighted_fisher(mu, Sigma, nu, Lambda, M):
    """Weighted Fisher divergence S_M(q||p), Chen, Nott & Tan Lemma 1.

    ``S_M = tr(Sigma^{-1} M) + tr(Lambda M Lambda Sigma) - 2 tr(M Lambda) + (mu-nu)^T Lambda M Lambda (mu-nu)``,
    computed as E_q ||grad log q - grad log p||_M^2 = tr(B^T M B) + (mu-nu)^T Lambda M Lambda (mu-nu) with
    B = Lambda C - C^-T (Sigma = C C^T; the same sum, expanded): quadratic forms of the positive
    semi-definite M, so that rounding cannot drive it below 0 (the expanded traces cancel catastrophically
    for ill-conditioned input; a tiny negative rounding residue is returned as 0).
    """
    mu, Sigma, nu, Lambda = _checked_qp(mu, Sigma, nu, Lambda)
    if not _is_traced(M):
        M = _weight_matrix(M, mu.shape[0])
    M = jnp.asarray(M, dtype=jnp.float64)
    C = jnp.linalg.cholesky(Sigma)
    B = Lambda @ C - solve_triangular(C, jnp.eye(C.shape[0], dtype=C.dtype), lower=True).T
    g = Lambda @ (mu - nu)
    value = jnp.sum(B * (M @ B)) + g @ (M @ g)
    return _finite(jnp.maximum(value, 0.0), "The weighted Fisher divergence")


def fisher(mu, Sigma, nu, Lambda):
    """Fisher divergence F(q||p) = S_I(q||p), Chen, Nott & Tan Lemma 1 with M = I."""
    return weighted_fisher(mu, Sigma, nu, Lambda, jnp.eye(jnp.shape(jnp.asarray(mu))[0]))


def score_divergence(mu, Sigma, nu, Lambda):
    """Score-based divergence S(q||p) = S_Sigma(q||p), Chen, Nott & Tan Lemma 1 with M = Sigma."""
    return weighted_fisher(mu, Sigma, nu, Lambda, Sigma)




def divergence(name: str, mu, Sigma, nu, Lambda, weight=None):
    """Closed-form divergence ``name`` (a key of :data:`DIVERGENCES`) between q = N(mu, Sigma) and p = N(nu, Lambda^{-1}).

    Concrete input is checked first (ValueError for a non-PD Sigma or Lambda, mismatched sizes);
    under jit / grad the check is skipped.
    """
    name = _check_name(name)
    mu, Sigma, nu, Lambda = _checked_qp(mu, Sigma, nu, Lambda)
    if name == "kl":
        return kl_qp(mu, Sigma, nu, Lambda)
    if name == "forward_kl":
        return kl_pq(mu, Sigma, nu, Lambda)
    if name == "fisher":
        return fisher(mu, Sigma, nu, Lambda)
    if name == "score":
        return score_divergence(mu, Sigma, nu, Lambda)
    return weighted_fisher(mu, Sigma, nu, Lambda, weight if _is_traced(weight) else _weight_matrix(weight, np.shape(mu)[0]))


def monte_carlo_divergence(key, score, mu, Sigma, name: str = "fisher", weight=None, n: int = 10_000,
                           log_density=None):
    """Monte Carlo estimate of a divergence between q = N(mu, Sigma) and any target with a score.

    Chen, Nott & Tan Sec. 1.2: ``S_M(q||p) = E_q || grad log q(theta) - grad log p(theta) ||_M^2``,
    estimated from ``n`` draws theta ~ q; ``score(theta) -> grad log p(theta)`` for one theta
    (it is vmapped), or a :class:`vilab.targets.Target` (its autodiff score and log density).
    Names: "fisher" (M = I), "score" (M = Sigma), "weighted_fisher" (M = ``weight``), and "kl":
    ``E_q[log q - log p]`` which needs ``log_density``; for an unnormalised log density it
    equals KL(q||p) - log Z (the negative ELBO).

    Returns ``(estimate, standard_error)``.
    """
    name = _check_name(name)
    check_key(key, "The Monte Carlo divergence")
    if hasattr(score, "log_density"):  # a Target
        log_density = score.log_density if log_density is None else log_density
        score = jax.grad(score.log_density)
    if not callable(score):
        raise ValueError("The score must be a function theta -> grad log p(theta) (or a vilab.targets.Target).")
    mu, Sigma = check_mean_cov(mu, Sigma)
    if name == "forward_kl":
        raise ValueError("KL(p||q) needs draws from the target; Monte Carlo here draws from q. Use the closed form.")
    n = integer(n, "The number of Monte Carlo draws n (at least 2 for a standard error)", minimum=2, maximum=2**31 - 1)
    mu = jnp.asarray(mu, dtype=jnp.float64)
    Sigma = jnp.asarray(Sigma, dtype=jnp.float64)
    d = mu.shape[0]
    C = jnp.linalg.cholesky(Sigma)
    z = jax.random.normal(key, (n, d), dtype=jnp.float64)
    theta = mu + z @ C.T
    if name == "kl":
        if log_density is None:
            raise ValueError("The Monte Carlo KL needs the target's log density (log_density=...).")
        logq = -0.5 * jnp.sum(z**2, 1) - jnp.sum(jnp.log(jnp.diag(C))) - 0.5 * d * jnp.log(2 * jnp.pi)
        vals = logq - jax.vmap(log_density)(theta)
    else:
        grad_q = -jax.scipy.linalg.cho_solve((C, True), (theta - mu).T).T
        diff = grad_q - jax.vmap(score)(theta)
        if name == "fisher":
            M = jnp.eye(d)
        elif name == "score":
            M = Sigma
        else:
            M = jnp.asarray(_weight_matrix(weight, d))
        vals = jnp.einsum("ni,ij,nj->n", diff, M, diff)
    vals = np.asarray(vals)
    out = float(vals.mean()), float(vals.std(ddof=1) / np.sqrt(n))
    finite_result(np.asarray(out), f"The Monte Carlo estimate of {DIVERGENCES[name]}")
    return out


def _check_name(name: str) -> str:
    if not isinstance(name, str) or name not in DIVERGENCES:
        raise ValueError(f"Unknown divergence {name!r}; choose one of {', '.join(DIVERGENCES)}.")
    return name


# ---------------------------------------------------------------------------------------------
# mean-field optima for a Gaussian target (Sec. 2)


class MeanFieldOptimum(NamedTuple):
    """A mean-field optimum (the mean is always nu, Chen, Nott & Tan Lemma 1).

    variances : (d,) optimal Sigma_ii (0 where the score-based optimum collapses)
    objective : the divergence at the optimum
    collapsed : (d,) bool, Sigma_ii = 0 (variational collapse, KKT case (a) of eq. 3)
    s : (d,) the NQP solution s_i = Sigma_ii Lambda_ii (score-based only; else Sigma_ii Lambda_ii too)
    """

    variances: np.ndarray
    objective: float
    collapsed: np.ndarray
    s: np.ndarray


def meanfield_variances(precision, divergence: str, weight=None) -> np.ndarray:
    """Optimal mean-field variances Sigma_ii for the Gaussian target N(nu, precision^{-1}).

    Chen, Nott & Tan Sec. 2.1:
      "kl"              Sigma_ii = 1 / Lambda_ii                          (Margossian et al. 2024)
      "weighted_fisher" Sigma_ii = sqrt(M_ii / (Lambda M Lambda)_ii)      (eq. 1; any PSD M, diagonal
                        given as a vector)
      "fisher"          Sigma_ii = 1 / ||row i of Lambda||_2              (eq. 2)
      "score"           Sigma_ii = s_i / Lambda_ii with s the NQP solution (eq. 3); 0 = collapse
      "forward_kl"      Sigma_ii = (Lambda^{-1})_ii  (moment matching; a reference, not in the paper)
    """
    return meanfield_optimum(precision, divergence, weight).variances


def meanfield_optimum(precision, divergence: str, weight=None) -> MeanFieldOptimum:
    """Mean-field optimum and its objective value (Chen, Nott & Tan Sec. 2.1, eqs. 1-4).

    Objective values at mu = nu (Sec. 1.3): KL = 1/2 sum log Lambda_ii - 1/2 log det Lambda;
    F and S_M from Lemma 1 with diagonal Sigma; S = d + 2 F(s) with F(s) = 1/2 s^T H s - 1^T s.
    """
    name = _check_name(divergence)
    L = check_precision(precision)
    d = L.shape[0]
    dg = np.diag(L)
    collapsed = np.zeros(d, dtype=bool)
    if name in ("kl", "forward_kl"):
        logdet = 2.0 * np.sum(np.log(np.diag(np.linalg.cholesky(L))))
    if name == "kl":
        var = 1.0 / dg
        obj = 0.5 * np.sum(np.log(dg)) - 0.5 * logdet
    elif name == "forward_kl":
        var = np.diag(np.linalg.inv(L)).copy()
        obj = 0.5 * np.sum(np.log(var)) + 0.5 * logdet
    elif name in ("fisher", "weighted_fisher"):
        M = np.eye(d) if name == "fisher" else _weight_matrix(weight, d)
        LML = L @ M @ L
        var = np.sqrt(np.diag(M) / np.diag(LML))
        obj = float(np.sum(np.diag(M) / var + np.diag(LML) * var) - 2.0 * np.trace(M @ L))
    else:
        s, collapsed = score_nqp(L)
        var = s / dg
        H = L**2 / np.outer(dg, dg)
        obj = d + 2.0 * (0.5 * s @ H @ s - s.sum())
    return MeanFieldOptimum(np.asarray(var, float), float(obj), collapsed, np.asarray(var * dg, float))


#: s_i below this is a collapsed coordinate (round-off of an exact zero of the NQP)
_COLLAPSE_TOL = 1e-12


def _score_H(L: np.ndarray) -> np.ndarray:
    dg = np.diag(L)
    return L**2 / np.outer(dg, dg)


def score_nqp(precision) -> tuple[np.ndarray, np.ndarray]:
    """Solve the NQP of Chen, Nott & Tan eq. (3): min_{s >= 0} 1/2 s^T H s - 1^T s.

    H_ij = Lambda_ij^2 / (Lambda_ii Lambda_jj) is PD (Schur product theorem), so with H = R^T R
    the problem is the non-negative least squares ``min_{s>=0} ||R s - R^{-T} 1||`` (the paper used
    SCS/CVXPY; the solution is the same).  Returns ``(s, collapsed)`` with ``collapsed_i``
    true when KKT case (a) holds: s_i = 0 and (H s)_i > 1.
    """
    L = check_precision(precision)
    H = _score_H(L)
    R = np.linalg.cholesky(H).T
    s, _ = nnls(R, np.linalg.solve(R.T, np.ones(L.shape[0])), maxiter=50 * L.shape[0] + 100)
    collapsed = s <= _COLLAPSE_TOL
    s = np.where(collapsed, 0.0, s)
    return s, collapsed


def score_nqp_batch(precisions) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised exact NQP (eq. 3) for a batch of small precisions (..., d, d), d <= 8.

    Enumerates the 2^d - 1 supports: on a support A solve H_AA s_A = 1 and accept the unique one
    with s_A >= 0 and (H s)_i >= 1 off A (the KKT conditions (a)-(b); H is PD so exactly one
    support passes).  Used for the Fig. 1 heatmaps; cross-checked against :func:`score_nqp`.
    Returns ``(s, collapsed)`` of shape (..., d).
    """
    P = real_array(precisions, "The precisions")
    if P.ndim < 2 or P.shape[-1] != P.shape[-2]:
        raise ValueError(f"The precisions must be square matrices (..., d, d); got shape {P.shape}.")
    d = P.shape[-1]
    if d > 8:
        raise ValueError("The enumerating NQP solver is for d <= 8; use score_nqp for larger matrices.")
    if not np.allclose(P, np.swapaxes(P, -1, -2)) or np.any(np.linalg.eigvalsh(0.5 * (P + np.swapaxes(P, -1, -2)))[..., 0] <= 0):
        raise ValueError("Every precision must be a symmetric positive definite matrix.")
    dg = np.diagonal(P, axis1=-2, axis2=-1)
    H = P**2 / (dg[..., :, None] * dg[..., None, :])
    batch = H.shape[:-2]
    best = np.full(batch + (d,), np.nan)
    found = np.zeros(batch, dtype=bool)
    tol = 1e-12
    for k in range(d, 0, -1):
        for A in combinations(range(d), k):
            A = list(A)
            s = np.zeros(batch + (d,))
            HAA = H[..., A, :][..., :, A]
            with np.errstate(all="ignore"):
                sA = np.linalg.solve(HAA, np.ones(batch + (k,))[..., None])[..., 0]
            s[..., A] = sA
            Hs = np.einsum("...ij,...j->...i", H, s)
            off = [i for i in range(d) if i not in A]
            ok = np.all(sA >= -tol, axis=-1) & np.all(np.isfinite(sA), axis=-1)
            if off:
                ok &= np.all(Hs[..., off] >= 1 - 1e-10, axis=-1)
            take = ok & ~found
            best[take] = np.maximum(s[take], 0.0)
            found |= take
    collapsed = best <= _COLLAPSE_TOL
    best = np.where(collapsed, 0.0, best)
    return best, collapsed


def batch_meanfield_fixed_point(precision, method: str, iters: int = 10_000, tol: float = 1e-13) -> np.ndarray:
    """Stationary mean-field variances of the batch algorithms for B -> infinity.

    Chen, Nott & Tan Sec. 6.2, Theorem 2 with q_hat = q (the digest's derived fixed points):
      "fdb": Sigma_ii = 1/Lambda_ii (the KL solution);
      "sdb": Sigma_ii (Lambda Sigma Lambda)_ii = 1, found by iterating
             Sigma_ii <- sqrt(Sigma_ii / sum_j Sigma_jj Lambda_ij^2) (Theorem 2's one-step map).
    """
    L = check_precision(precision)
    iters = integer(iters, "The number of iterations iters", minimum=1)
    tol = real_scalar(tol, "The tolerance tol")
    if method == "fdb":
        return 1.0 / np.diag(L)
    if method != "sdb":
        raise ValueError("method must be 'fdb' or 'sdb'.")
    L2 = L**2
    S = 1.0 / np.diag(L)
    for _ in range(iters):
        new = np.sqrt(S / (L2 @ S))
        if np.max(np.abs(new - S) / new) < tol:
            return new
        S = new
    return S


# ---------------------------------------------------------------------------------------------
# the paper's examples


def precision_2d(rho: float, sd1: float = 1.0, sd2: float = 1.0) -> np.ndarray:
    """Precision of the 2-D Gaussian with s.d. (sd1, sd2) and correlation rho (Chen, Nott & Tan Sec. 2.5)."""
    rho = real_array(rho, "The correlation rho", ndim=0, finite=False, allow_empty=True).item()
    sd1 = real_array(sd1, "The standard deviation sd1", ndim=0, finite=False, allow_empty=True).item()
    sd2 = real_array(sd2, "The standard deviation sd2", ndim=0, finite=False, allow_empty=True).item()
    if not (-1.0 < rho < 1.0):
        raise ValueError("The correlation rho must lie strictly between -1 and 1.")
    if not (sd1 > 0 and sd2 > 0 and np.isfinite(sd1) and np.isfinite(sd2)):
        raise ValueError("The standard deviations sd1 and sd2 must be positive and finite.")
    c = 1.0 / (1.0 - rho**2)
    return c * np.array([[1 / sd1**2, -rho / (sd1 * sd2)], [-rho / (sd1 * sd2), 1 / sd2**2]])


def precision_3d(a: float, b: float, c: float) -> np.ndarray:
    """Unit-diagonal 3-D precision [[1,a,b],[a,1,c],[b,c,1]] of Fig. 1 (ValueError if not PD)."""
    a, b, c = (real_scalar(v, f"The entry {n}") for v, n in ((a, "a"), (b, "b"), (c, "c")))
    L = np.array([[1.0, a, b], [a, 1.0, c], [b, c, 1.0]])
    det = 1 - a**2 - b**2 - c**2 + 2 * a * b * c
    if det <= 0 or abs(a) >= 1 or abs(b) >= 1 or abs(c) >= 1:
        raise ValueError(
            f"(a, b, c) = ({a:g}, {b:g}, {c:g}) does not give a positive-definite precision "
            f"(determinant {det:.3g}); move towards smaller |a|, |b|, |c|."
        )
    return L


def fig1_grid(c: float, n: int = 99, lim: float = 0.98) -> dict:
    """The Fig. 1 panel for one c (Chen, Nott & Tan Sec. 2.4), vectorised over an n x n (a, b) grid.

    Returns a dict with the grid ``a`` (n,), ``b`` (n,) and, indexed [i_b, i_a]:
    ``pd`` (bool), ``count`` (# of i with Sigma^S_ii <= Sigma^F_ii; NaN off the PD region),
    ``collapse`` (some Sigma^S_ii = 0), ``dd`` (diagonally dominant), and the variances
    ``fisher``, ``score``, ``kl``, ``true`` of shape (n, n, 3) (NaN off the PD region).
    """
    c = real_array(c, "The entry c", ndim=0, finite=False, allow_empty=True).item()
    if not (-1 < c < 1):
        raise ValueError("c must lie strictly between -1 and 1.")
    n = integer(n, "The grid size n", minimum=2, maximum=2000)
    lim = real_array(lim, "The grid half-width lim", ndim=0, finite=False, allow_empty=True).item()
    if not (0 < lim < 1):
        raise ValueError(f"The grid half-width lim must lie strictly between 0 and 1; got {lim!r}.")
    a = np.linspace(-lim, lim, n)
    b = np.linspace(-lim, lim, n)
    A, Bm = np.meshgrid(a, b)  # [i_b, i_a]
    P = np.zeros(A.shape + (3, 3))
    P[..., 0, 0] = P[..., 1, 1] = P[..., 2, 2] = 1.0
    P[..., 0, 1] = P[..., 1, 0] = A
    P[..., 0, 2] = P[..., 2, 0] = Bm
    P[..., 1, 2] = P[..., 2, 1] = c
    pd = np.linalg.eigvalsh(P)[..., 0] > 1e-12
    Pp = np.where(pd[..., None, None], P, np.eye(3))
    fis = 1.0 / np.sqrt((Pp**2).sum(-1))
    s, col = score_nqp_batch(Pp)
    sco = s  # Lambda_ii = 1
    count = np.sum(sco <= fis * (1 + 1e-10), axis=-1).astype(float)
    dd = (np.abs(A) + np.abs(Bm) <= 1) & (np.abs(A) + abs(c) <= 1) & (np.abs(Bm) + abs(c) <= 1)
    true = np.diagonal(np.linalg.inv(Pp), axis1=-2, axis2=-1)
    nanmask = ~pd
    out = {
        "a": a,
        "b": b,
        "c": c,
        "pd": pd,
        "count": np.where(nanmask, np.nan, count),
        "collapse": pd & np.any(col, axis=-1),
        "dd": dd & pd,
        "fisher": np.where(nanmask[..., None], np.nan, fis),
        "score": np.where(nanmask[..., None], np.nan, sco),
        "kl": np.where(nanmask[..., None], np.nan, 1.0 / np.diagonal(Pp, axis1=-2, axis2=-1)),
        "true": np.where(nanmask[..., None], np.nan, true),
    }
    return out


def variance_curves_2d(rhos, sd1: float = 1.0, sd2: float = 1.0, coord: int = 0) -> dict[str, np.ndarray]:
    """Mean-field Sigma_{coord,coord} against rho for KL, Fisher, score-based and the truth (Sec. 2.5).

    Uses :func:`meanfield_variances` at every rho (the NQP is solved even though in 2-D it never
    collapses); the truth is the target's marginal variance (= the forward-KL optimum).
    """
    rhos = real_array(rhos, "The correlations rhos", finite=False, allow_empty=True)
    if rhos.ndim != 1:
        raise ValueError(f"The correlations rhos must be a list of numbers; got an array of shape {rhos.shape}.")
    coord = integer(coord, "The coordinate coord", minimum=0, maximum=1)
    out = {k: np.empty(rhos.shape) for k in ("kl", "fisher", "score", "true")}
    for i, r in enumerate(rhos):
        P = precision_2d(float(r), sd1, sd2)
        out["kl"][i] = meanfield_variances(P, "kl")[coord]
        out["fisher"][i] = meanfield_variances(P, "fisher")[coord]
        out["score"][i] = meanfield_variances(P, "score")[coord]
        out["true"][i] = (sd1, sd2)[coord] ** 2
    return out


# ---------------------------------------------------------------------------------------------
# the weighted Fisher divergence with a chosen weight M (Sec. 1.2, Lemma 1, eq. 1)

#: the named weights of :func:`weight_matrix`, with a readable name
WEIGHTS = {
    "identity": "identity I (the Fisher divergence)",
    "target_cov": "target covariance Λ⁻¹",
    "q_cov": "variational covariance Σ (the score-based divergence)",
    "custom": "your own 2 × 2 matrix",
}


def _fmt_matrix(M: np.ndarray) -> str:
    return "[" + ", ".join("[" + ", ".join(f"{x:.4g}" for x in row) + "]" for row in M) + "]"


def check_weight_pd(M, name: str = "The weight M") -> np.ndarray:
    """``M`` as a float64 symmetric positive-definite matrix, else ValueError saying why it matters.

    Chen, Nott & Tan Sec. 1.2 allow M >= 0; a user-typed weight must be positive definite here,
    so that S_M(q||p) = 0 only when the scores of q and p agree everywhere (a singular M ignores
    score mismatches along its null space; an indefinite M can make S_M negative).
    """
    M = real_array(M, name)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"{name} must be a square matrix; got shape {M.shape}.")
    if not np.allclose(M, M.T, rtol=1e-10, atol=1e-12):
        raise ValueError(f"{name} = {_fmt_matrix(M)} is not symmetric: only the symmetric part of M enters "
                         "||z||²_M = zᵀ M z, so enter the same value above and below the diagonal.")
    M = 0.5 * (M + M.T)
    lo = float(np.linalg.eigvalsh(M)[0])
    if lo <= 1e-12 * max(1.0, float(np.abs(M).max())):
        hint = (" For a 2 × 2 matrix that means M₁₁ > 0, M₂₂ > 0 and M₁₂² < M₁₁ M₂₂." if M.shape == (2, 2) else "")
        raise ValueError(
            f"{name} = {_fmt_matrix(M)} is not positive definite (its smallest eigenvalue is {lo:.3g}). "
            "With a zero or negative eigenvalue some mismatches between the scores of q and p would count "
            "as no distance or a negative one, so S_M would no longer measure how far q is from p. "
            "Choose a positive-definite M." + hint)
    return M


def weight_matrix(kind: str, precision, custom=None) -> np.ndarray | None:
    """The weight M of a named choice (:data:`WEIGHTS`) for the target N(nu, precision^{-1}).

    "identity": M = I (Fisher divergence); "target_cov": M = Lambda^{-1}; "custom": ``custom``
    (checked by :func:`check_weight_pd`); "q_cov": None, since M = Sigma depends on q itself
    (the score-based divergence of Cai et al. 2024, Chen, Nott & Tan Sec. 1.2).
    """
    if not isinstance(kind, str) or kind not in WEIGHTS:
        raise ValueError(f"Unknown weight {kind!r}; choose one of {', '.join(WEIGHTS)}.")
    L = check_precision(precision)
    d = L.shape[0]
    if kind == "identity":
        return np.eye(d)
    if kind == "target_cov":
        return np.linalg.inv(L)
    if kind == "q_cov":
        return None
    if custom is None:
        raise ValueError("The custom weight needs its matrix M.")
    M = check_weight_pd(custom)
    if M.shape != (d, d):
        raise ValueError(f"The weight M must be {d} x {d} like the target; got {M.shape[0]} x {M.shape[1]}.")
    return M


def weighted_meanfield(precision, kind: str, custom=None) -> MeanFieldOptimum:
    """Mean-field optimum of S_M for a named weight (Chen, Nott & Tan Sec. 2.1).

    M independent of Sigma (identity, target covariance, custom): ``Sigma_ii = sqrt(M_ii / (Lambda M
    Lambda)_ii)`` (from dS_M / dSigma_ii = (Lambda M Lambda)_ii - M_ii / Sigma_ii^2 = 0; eq. 1 for a
    diagonal M); M = Sigma: the score-based NQP (eq. 3).  Theorem 1 (Sigma_ii <= 1/Lambda_ii) needs a
    diagonal M: with M = Lambda^{-1}, Lambda M Lambda = Lambda and Sigma_ii = sqrt((Lambda^{-1})_ii /
    Lambda_ii), the geometric mean of the KL variance and the true marginal variance (ours, derived).
    """
    M = weight_matrix(kind, precision, custom)
    if M is None:
        return meanfield_optimum(precision, "score")
    return meanfield_optimum(precision, "weighted_fisher", weight=M)


def weighted_fisher_comparison(precision, kind: str, custom=None) -> dict:
    """The mean-field optima of KL, Fisher, score-based and S_M (weight ``kind``), and every divergence
    evaluated at every optimum (Chen, Nott & Tan Lemma 1 and Sec. 1.1 closed forms, mu = nu).

    Returns {"variances": {code: (d,)} for kl, fisher, score, weighted_fisher and true (the target's
    marginal variances), "values": {optimum code: {"kl": KL(q||p), "fisher": F(q||p),
    "weighted_fisher": S_M(q||p)}} (each column smallest at its own optimum; NaN where an optimum has
    a zero variance), "objective": S_M at its own optimum, "M": the weight (None for M = Sigma)}.
    """
    L = check_precision(precision)
    d = L.shape[0]
    M = weight_matrix(kind, L, custom)
    own = weighted_meanfield(L, kind, custom)
    var = {"kl": meanfield_variances(L, "kl"), "fisher": meanfield_variances(L, "fisher"),
           "score": meanfield_variances(L, "score"), "weighted_fisher": own.variances,
           "true": np.diag(np.linalg.inv(L)).copy()}
    nu = np.zeros(d)
    values = {}
    for code in ("kl", "fisher", "score", "weighted_fisher"):
        v = var[code]
        if np.any(v <= 0):
            values[code] = {"kl": np.nan, "fisher": np.nan, "weighted_fisher": np.nan}
            continue
        S = np.diag(v)
        values[code] = {"kl": float(kl_qp(nu, S, nu, L)), "fisher": float(fisher(nu, S, nu, L)),
                        "weighted_fisher": float(weighted_fisher(nu, S, nu, L, S if M is None else M))}
    return {"variances": var, "values": values, "objective": own.objective, "M": M}


def weighted_variance_curves_2d(rhos, sd1: float, sd2: float, kind: str, custom=None,
                                coord: int = 0) -> dict[str, np.ndarray]:
    """Mean-field Sigma_{coord,coord} against rho for KL, Fisher, score-based, S_M and the truth (Sec. 2.5).

    The weight follows the target where it is defined by it (M = Lambda(rho)^{-1}, or M = Sigma);
    a custom M stays fixed while rho moves.
    """
    if kind == "custom":
        check_weight_pd(custom)
    rhos = real_array(rhos, "The correlations rhos", finite=False, allow_empty=True)
    out = variance_curves_2d(rhos, sd1, sd2, coord)
    out["weighted_fisher"] = np.array([weighted_meanfield(precision_2d(float(r), sd1, sd2), kind, custom)
                                       .variances[coord] for r in rhos])
    return {k: out[k] for k in ("kl", "fisher", "score", "weighted_fisher", "true")}
