"""Parameterizations of a Gaussian q = N(mu, Sigma) and the operations on them.

Every parameterization is a NamedTuple of jnp arrays, hence a JAX pytree:

=================  ==============================================  =========================
class              fields                                          relation to (mu, Sigma)
=================  ==============================================  =========================
``MeanCov``        (mu, Sigma)                                     kappa of Tan (2025) Table 1
``CholCov``        (mu, C), C lower triangular                     Sigma = C C^T, Tan Thm 1(i)
``CholPrec``       (mu, T), T lower triangular                     Sigma^-1 = T T^T, Tan Thm 1(ii)
``Natural``        (eta1, eta2)                                    eta1 = Sigma^-1 mu, eta2 = -Sigma^-1/2
``Expectation``    (m1, m2)                                        m1 = mu, m2 = Sigma + mu mu^T
``MeanField``      (mu, sigma), sigma > 0 a vector                 Sigma = diag(sigma^2)
=================  ==============================================  =========================

The natural parameter is kept in matrix form; Tan (2025) Eq. 2 writes its second block as
-1/2 D^T vec(Sigma^-1), which is ``vilab.family.linalg.duplication_matrix(d).T @ vec(eta2)``.

The operations (``sample``, ``logpdf``, ``entropy``, ``kl``) and the conversions accept any
parameterization and are jit-able. Called eagerly (on concrete arrays, not inside ``jax.jit`` /
``jax.vmap``) they first check their input with ``validate``: a non-square, non-finite,
non-positive-definite, non-triangular or mismatched input raises ``ValueError`` with a readable
message instead of silently producing NaNs, and a result that overflows float64 (a variance of
1e-320, a point at 1e300) raises ``ValueError`` saying so. Under a trace the checks are skipped
(nothing is concrete there); ``validate`` / ``check_mean_cov`` can also be called directly. The
checks shared with the rest of the package live in :mod:`vilab.core.checks`.
"""

from __future__ import annotations

from typing import NamedTuple, Union

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import cho_solve, solve_triangular

from ..core.checks import finite_result, integer, pd_matrix, real_array
from .linalg import symmetrize as _sym

__all__ = [
    "MeanCov", "CholCov", "CholPrec", "Natural", "Expectation", "MeanField", "Gaussian", "KINDS",
    "to_mean_cov", "from_mean_cov", "convert", "covariance", "precision", "mean",
    "sample", "logpdf", "entropy", "kl", "kl_whitened", "validate", "check_mean_cov", "check_factor", "fisher_information",
]


class MeanCov(NamedTuple):
    """kappa = (mu, Sigma): mean and covariance (Tan (2025) Table 1, first row)."""

    mu: jax.Array
    Sigma: jax.Array


class CholCov(NamedTuple):
    """(mu, C) with Sigma = C C^T, C lower triangular (Tan (2025) Thm 1(i))."""

    mu: jax.Array
    C: jax.Array


class CholPrec(NamedTuple):
    """(mu, T) with Sigma^-1 = T T^T, T lower triangular (Tan (2025) Thm 1(ii))."""

    mu: jax.Array
    T: jax.Array


class Natural(NamedTuple):
    """Natural parameters (Sigma^-1 mu, -Sigma^-1 / 2) in matrix form (Tan (2025) Eq. 2)."""

    eta1: jax.Array
    eta2: jax.Array


class Expectation(NamedTuple):
    """Expectation parameters (E[theta], E[theta theta^T]) = (mu, Sigma + mu mu^T)."""

    m1: jax.Array
    m2: jax.Array


class MeanField(NamedTuple):
    """Mean-field Gaussian: mean mu and marginal standard deviations sigma (Sigma = diag sigma^2)."""

    mu: jax.Array
    sigma: jax.Array


Gaussian = Union[MeanCov, CholCov, CholPrec, Natural, Expectation, MeanField]

KINDS = {
    "mean_cov": MeanCov,
    "chol_cov": CholCov,
    "chol_prec": CholPrec,
    "natural": Natural,
    "expectation": Expectation,
    "mean_field": MeanField,
}


def _kind_of(p) -> str:
    for name, cls in KINDS.items():
        if isinstance(p, cls):
            return name
    raise ValueError(
        f"Expected a Gaussian parameterization ({', '.join(c.__name__ for c in KINDS.values())}), "
        f"got {type(p).__name__}."
    )


def _is_traced(p) -> bool:
    """True when some leaf of ``p`` is a JAX tracer (inside jit / vmap / grad): no eager checks."""
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(p))


def _checked(p: Gaussian) -> Gaussian:
    """``validate(p)`` on concrete input; ``p`` unchanged under a JAX trace."""
    return p if _is_traced(p) else validate(p)


def _finite(out, what: str, *inputs):
    """``out``, or ValueError explaining an overflow when it is not finite (eager calls only)."""
    if _is_traced((out, inputs)):
        return out
    for leaf in jax.tree_util.tree_leaves(out):
        finite_result(leaf, what)
    return out


def _converted(out: Gaussian, kind: str, mc: MeanCov) -> Gaussian:
    """The result of a conversion, checked eagerly: finite, and itself a valid parameterization. In
    float64 the expectation parameters m2 = Sigma + mu mu^T lose Sigma when it is tiny next to mu mu^T
    (cancellation), so a valid (mu, Sigma) can have no valid expectation parameters."""
    out = _finite(out, f"The {kind} parameterization", mc)
    if _is_traced((out, mc)):
        return out
    try:
        validate(out)
    except ValueError as exc:
        raise ValueError(f"This Gaussian cannot be represented in the {kind} parameterization in float64 "
                         f"arithmetic (the result is invalid: {exc}); rescale the problem, e.g. so that the "
                         "variances are not tiny next to the squared means.") from None
    return out


def _check_kind(kind) -> str:
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"Unknown parameterization {kind!r}; choose one of {sorted(KINDS)}.")
    return kind


def to_mean_cov(p: Gaussian) -> MeanCov:
    """(mu, Sigma) of any parameterization (input validated when concrete)."""
    p = _checked(p)
    return _finite(_to_mean_cov(p), "The mean and covariance", p)


def _to_mean_cov(p: Gaussian) -> MeanCov:
    kind = _kind_of(p)
    if kind == "mean_cov":
        return p
    if kind == "chol_cov":
        return MeanCov(p.mu, p.C @ p.C.T)
    if kind == "chol_prec":
        d = p.T.shape[-1]
        Tinv = solve_triangular(p.T, jnp.eye(d, dtype=p.T.dtype), lower=True)
        return MeanCov(p.mu, Tinv.T @ Tinv)
    if kind == "natural":
        P = -2.0 * p.eta2
        Lp = jnp.linalg.cholesky(_sym(P))
        Sigma = cho_solve((Lp, True), jnp.eye(P.shape[-1], dtype=P.dtype))
        return MeanCov(cho_solve((Lp, True), p.eta1), _sym(Sigma))
    if kind == "expectation":
        return MeanCov(p.m1, _sym(p.m2 - jnp.outer(p.m1, p.m1)))
    return MeanCov(p.mu, jnp.diag(p.sigma**2))


def from_mean_cov(mc: MeanCov, kind: str) -> Gaussian:
    """Express (mu, Sigma) in the parameterization ``kind`` (a key of ``KINDS``).

    ``mc`` may be a :class:`MeanCov` or a pair (mu, Sigma); it is validated when concrete.
    """
    kind = _check_kind(kind)
    mc = _checked(MeanCov(*mc))
    return _converted(_from_mean_cov(mc, kind), kind, mc)


def _from_mean_cov(mc: MeanCov, kind: str) -> Gaussian:
    mu, Sigma = mc
    d = Sigma.shape[-1]
    if kind == "mean_cov":
        return MeanCov(mu, Sigma)
    if kind == "chol_cov":
        return CholCov(mu, jnp.linalg.cholesky(_sym(Sigma)))
    if kind == "chol_prec":
        # T = lower Cholesky factor of Sigma^-1 (T T^T = Sigma^-1), computed without forming Sigma^-1
        # via the reversal trick: if J is the exchange matrix and J Sigma J = U U^T (U lower), then
        # Sigma^-1 = (J U^-T J)(J U^-T J)^T with J U^-T J lower triangular.
        J = jnp.eye(d, dtype=Sigma.dtype)[::-1]
        U = jnp.linalg.cholesky(_sym(J @ Sigma @ J))
        Uinv_T = solve_triangular(U, jnp.eye(d, dtype=Sigma.dtype), lower=True).T
        return CholPrec(mu, J @ Uinv_T @ J)
    if kind == "natural":
        Ls = jnp.linalg.cholesky(_sym(Sigma))
        P = cho_solve((Ls, True), jnp.eye(d, dtype=Sigma.dtype))
        return Natural(cho_solve((Ls, True), mu), -0.5 * _sym(P))
    if kind == "expectation":
        return Expectation(mu, Sigma + jnp.outer(mu, mu))
    if kind == "mean_field":
        return MeanField(mu, jnp.sqrt(jnp.diagonal(Sigma)))
    raise ValueError(f"Unknown parameterization {kind!r}; choose one of {sorted(KINDS)}.")


def convert(p: Gaussian, kind: str) -> Gaussian:
    """Convert between parameterizations (mean-field keeps only the marginal variances)."""
    kind = _check_kind(kind)
    mc = to_mean_cov(p)
    return _converted(_from_mean_cov(mc, kind), kind, mc)


def mean(p: Gaussian) -> jax.Array:
    """mu of any parameterization."""
    return to_mean_cov(p).mu


def covariance(p: Gaussian) -> jax.Array:
    """Sigma of any parameterization."""
    return to_mean_cov(p).Sigma


def precision(p: Gaussian) -> jax.Array:
    """Sigma^-1 (directly from T or eta2 when available)."""
    p = _checked(p)
    return _finite(_precision(p), "The precision matrix", p)


def _precision(p: Gaussian) -> jax.Array:
    kind = _kind_of(p)
    if kind == "chol_prec":
        return p.T @ p.T.T
    if kind == "natural":
        return -2.0 * p.eta2
    if kind == "mean_field":
        return jnp.diag(1.0 / p.sigma**2)
    Sigma = _to_mean_cov(p).Sigma
    Ls = jnp.linalg.cholesky(_sym(Sigma))
    return cho_solve((Ls, True), jnp.eye(Sigma.shape[-1], dtype=Sigma.dtype))


def _chol_cov_factor(p: Gaussian) -> tuple[jax.Array, jax.Array]:
    """(mu, C) with C C^T = Sigma, cheapest route per kind."""
    kind = _kind_of(p)
    if kind == "chol_cov":
        return p.mu, p.C
    if kind == "mean_field":
        return p.mu, jnp.diag(p.sigma)
    mc = _to_mean_cov(p)
    return mc.mu, jnp.linalg.cholesky(_sym(mc.Sigma))


def sample(key: jax.Array, p: Gaussian, n: int) -> jax.Array:
    """n draws theta = mu + C z, z ~ N(0, I); shape (n, d). For CholPrec, theta = mu + T^-T z."""
    p = _checked(p)
    if not isinstance(n, jax.core.Tracer):
        n = integer(n, "The number of draws n", minimum=1, maximum=2**31 - 1)
    if isinstance(p, CholPrec):
        z = jax.random.normal(key, (n, p.mu.shape[-1]), dtype=p.mu.dtype)
        return p.mu + solve_triangular(p.T.T, z.T, lower=False).T
    mu, C = _chol_cov_factor(p)
    z = jax.random.normal(key, (n, mu.shape[-1]), dtype=mu.dtype)
    return mu + z @ C.T


def _log_det_cov(p: Gaussian) -> jax.Array:
    if isinstance(p, CholPrec):
        return -2.0 * jnp.sum(jnp.log(jnp.abs(jnp.diagonal(p.T))))
    _, C = _chol_cov_factor(p)
    return 2.0 * jnp.sum(jnp.log(jnp.abs(jnp.diagonal(C))))


def logpdf(p: Gaussian, x: jax.Array) -> jax.Array:
    """log N(x; mu, Sigma) for x of shape (d,) or (n, d)."""
    p = _checked(p)
    d = p[0].shape[-1]
    if not _is_traced(x):
        x = jnp.asarray(real_array(x, "The point x"))
    if jnp.shape(x)[-1:] != (d,) or jnp.ndim(x) > 2:
        raise ValueError(f"Dimension mismatch: x must have shape ({d},) or (n, {d}); got {jnp.shape(x)}.")
    return _finite(_logpdf(p, x, d), "The log density log N(x; mu, Sigma)", p, x)


def _logpdf(p: Gaussian, x, d: int) -> jax.Array:
    if isinstance(p, CholPrec):
        r = (x - p.mu) @ p.T  # rows: (x - mu)^T T
    else:
        mu, C = _chol_cov_factor(p)
        r = solve_triangular(C, jnp.atleast_2d(x - mu).T, lower=True).T
        r = r.reshape(jnp.shape(x))
    quad = jnp.sum(r**2, axis=-1)
    return -0.5 * (quad + _log_det_cov(p) + d * jnp.log(2.0 * jnp.pi))


def entropy(p: Gaussian) -> jax.Array:
    """Differential entropy d/2 (1 + log 2 pi) + 1/2 log |Sigma|."""
    p = _checked(p)
    d = p[0].shape[-1]
    return _finite(0.5 * d * (1.0 + jnp.log(2.0 * jnp.pi)) + 0.5 * _log_det_cov(p), "The entropy", p)


def kl(p: Gaussian, q: Gaussian) -> jax.Array:
    """KL(p || q) between Gaussians, closed form:
    1/2 [tr(Sq^-1 Sp) + (mq - mp)^T Sq^-1 (mq - mp) - d + log|Sq| - log|Sp|],
    computed by :func:`kl_whitened` from A = Lq^-1 Lp (Lp, Lq the Cholesky factors), hence never negative."""
    mp, Sp = to_mean_cov(p)
    mq, Sq = to_mean_cov(q)
    d = mp.shape[-1]
    if mq.shape[-1] != d:
        raise ValueError(f"Dimension mismatch: KL between a {d}-dimensional and a {mq.shape[-1]}-dimensional Gaussian.")
    Lq = jnp.linalg.cholesky(_sym(Sq))
    Lp = jnp.linalg.cholesky(_sym(Sp))
    A = solve_triangular(Lq, Lp, lower=True)  # Lq^-1 Lp: A A^T has the eigenvalues of Sq^-1 Sp
    r = solve_triangular(Lq, mq - mp, lower=True)
    return _finite(kl_whitened(A, r), "KL(p || q)", mp, mq)


def kl_whitened(A, w) -> jax.Array:
    """The Gaussian KL divergence 1/2 [tr(A A^T) - d - log det(A A^T) + ||w||^2] from a lower-triangular A
    (the whitened covariance ratio: for KL(p || q), A = Lq^-1 Lp and w = Lq^-1 (mq - mp)).

    Written as a sum of terms that are each >= 0, so that rounding can never make a divergence negative
    (the expanded trace - d - log det loses everything to cancellation when the covariances are
    ill-conditioned, e.g. a condition number of 1e16): det A is the product of its diagonal, so

        KL = 1/2 [ sum_i (a_ii^2 - 1 - log a_ii^2) + sum_{i > j} a_ij^2 + ||w||^2 ],

    with x - 1 - log x >= 0 taken as u - log1p(u), u = (a - 1)(a + 1), near x = 1. The one place where
    vilab writes the closed-form Gaussian KL (:func:`kl`, and :mod:`vilab.divergences.gaussian`'s
    KL(q || p) and KL(p || q))."""
    a = jnp.diagonal(A)
    u = (a - 1.0) * (a + 1.0)  # a^2 - 1 without cancellation near a = 1
    near = jnp.abs(u) < 0.5
    us = jnp.where(near, u, 0.0)
    af = jnp.where(near, 1.0, jnp.abs(a))
    diag = jnp.where(near, us - jnp.log1p(us), af * af - 1.0 - 2.0 * jnp.log(af))
    off = jnp.sum(jnp.tril(A, -1) ** 2)
    return 0.5 * (jnp.sum(jnp.maximum(diag, 0.0)) + off + jnp.sum(w**2))


# ----------------------------------------------------------------------------------------------
# Validation (eager, numpy; never inside jit)


def _as_float_array(x, name: str) -> np.ndarray:
    """``x`` as a finite real float64 array (:func:`vilab.core.checks.real_array`)."""
    return real_array(x, name)


def _mean_and_square(mu, M, what: str) -> tuple[np.ndarray, np.ndarray]:
    """mu a finite vector and M a finite square matrix of the same size (``what`` names M in messages)."""
    mu = real_array(mu, "The mean mu", ndim=1)
    M = real_array(M, what)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"{what} must be a square matrix; got shape {M.shape}.")
    if M.shape[0] != mu.shape[0]:
        raise ValueError(f"Dimension mismatch: mu has {mu.shape[0]} entries but {what[0].lower() + what[1:]} is "
                         f"{M.shape[0]} x {M.shape[1]}.")
    return mu, M


def check_mean_cov(mu, Sigma, name: str = "Sigma", matrix_kind: str = "covariance"):
    """Validate a mean vector and a covariance (or precision) matrix; return float64 arrays
    (real, finite, matching sizes, symmetric positive definite: :func:`vilab.core.checks.pd_matrix`)."""
    what = f"The {matrix_kind} {name}"
    mu, S = _mean_and_square(mu, Sigma, what)
    pd_matrix(S, what)
    return mu, S


def check_factor(mu, F, name: str = "C"):
    """Validate a lower-triangular factor with non-zero diagonal (an invertible Cholesky factor)."""
    mu, F = _mean_and_square(mu, F, f"The factor {name}")
    if np.any(np.triu(F, 1) != 0):
        raise ValueError(f"The factor {name} must be lower triangular (zeros above the diagonal).")
    if np.any(np.diag(F) == 0):
        raise ValueError(f"The factor {name} has a zero on its diagonal, so it is singular.")
    return mu, F


def validate(p: Gaussian) -> Gaussian:
    """Check a parameterization eagerly; return it with float64 jnp arrays or raise ValueError."""
    kind = _kind_of(p)
    if kind == "mean_cov":
        mu, S = check_mean_cov(p.mu, p.Sigma)
        return MeanCov(jnp.asarray(mu), jnp.asarray(S))
    if kind == "chol_cov":
        mu, C = check_factor(p.mu, p.C, "C")
        return CholCov(jnp.asarray(mu), jnp.asarray(C))
    if kind == "chol_prec":
        mu, T = check_factor(p.mu, p.T, "T")
        return CholPrec(jnp.asarray(mu), jnp.asarray(T))
    if kind == "natural":
        e1 = _as_float_array(p.eta1, "eta1")
        P = -2.0 * _as_float_array(p.eta2, "eta2")
        _, P = check_mean_cov(e1, P, name="-2 eta2", matrix_kind="precision")
        return Natural(jnp.asarray(e1), jnp.asarray(-0.5 * P))
    if kind == "expectation":
        m1 = _as_float_array(p.m1, "m1")
        m2 = _as_float_array(p.m2, "m2")
        if m1.ndim != 1 or m2.shape != (m1.shape[0], m1.shape[0]):
            raise ValueError(f"m1 must be a vector and m2 a square matrix of matching size; got {m1.shape} and {m2.shape}.")
        check_mean_cov(m1, m2 - np.outer(m1, m1), name="m2 - m1 m1^T")
        return Expectation(jnp.asarray(m1), jnp.asarray(m2))
    mu = _as_float_array(p.mu, "The mean mu")
    s = _as_float_array(p.sigma, "The standard deviations sigma")
    if mu.ndim != 1 or s.shape != mu.shape:
        raise ValueError(f"mu and sigma must be vectors of the same length; got {mu.shape} and {s.shape}.")
    if np.any(s <= 0):
        raise ValueError("Every standard deviation sigma must be positive.")
    return MeanField(jnp.asarray(mu), jnp.asarray(s))


def fisher_information(unpack, lam) -> jax.Array:
    """Fisher information of a Gaussian family by automatic differentiation.

    ``unpack(lam) -> (mu, Sigma)`` maps a flat parameter vector to the mean and covariance.
    Uses the Gaussian Fisher identity
    F_ab = dmu_a^T Sigma^-1 dmu_b + 1/2 tr(Sigma^-1 dSigma_a Sigma^-1 dSigma_b),
    with the Jacobians dmu/dlam and dSigma/dlam from ``jax.jacfwd``: a brute-force reference
    against which the papers' closed-form Fisher matrices and their inverses are checked.
    """
    lam = jnp.asarray(lam, dtype=jnp.float64)
    mu, Sigma = unpack(lam)
    Jm = jax.jacfwd(lambda l: unpack(l)[0])(lam)  # (d, p)
    JS = jax.jacfwd(lambda l: unpack(l)[1])(lam)  # (d, d, p)
    P = jnp.linalg.inv(Sigma)
    A = jnp.einsum("ij,jkp->ikp", P, JS)  # Sigma^-1 dSigma_p
    return Jm.T @ P @ Jm + 0.5 * jnp.einsum("ijp,jiq->pq", A, A)
