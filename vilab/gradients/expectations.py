"""E_q[grad log p(theta)] and E_q[hess log p(theta)] under q = N(mu, Sigma), three ways.

* ``"exact"``: quadratic (Gaussian) targets, where grad log p is linear: E[grad] = grad(mu),
  E[hess] = hess(mu).
* ``"gauss-hermite"``: GLM targets (``target.glm``). Each eta_i = x_i^T theta is
  N(x_i^T mu, x_i^T Sigma x_i), so E[grad] = X^T E[l'(eta)] - P0 (mu - m0) and
  E[hess] = X^T diag(E[l''(eta)]) X - P0, with one-dimensional Gauss-Hermite quadrature.
* Monte Carlo with theta_s = mu + C z_s (C C^T = Sigma):
  ``"mc-first"`` uses first derivatives only (reparameterisation for the mean gradient; for the
  Hessian, Stein's lemma E[hess f] = E[grad f(theta) z^T] C^-1, symmetrised;
  cf. Tan (2025) Thm 2, first-order estimators);
  ``"mc-second"`` averages sampled Hessians (Price's theorem; Tan (2025) Thm 2, second order).

Quadrature (from :mod:`vilab.family.quadrature`, re-exported here): ``hermite_nodes`` (1-D Gauss-Hermite),
``gaussian_cubature5(d)`` (Stroud's fully symmetric degree-5 rule over N(0, I_d), 2 d^2 + 1 points).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular

from ..core.checks import finite_result, integer
from ..family.gaussian import check_mean_cov
from ..family.quadrature import gaussian_cubature5, hermite_nodes
from ..targets import Target

__all__ = ["expected_grad_hess", "METHODS", "gauss_hermite_glm", "hermite_nodes", "monte_carlo", "gaussian_cubature5"]

METHODS = ("exact", "gauss-hermite", "mc-first", "mc-second")


def gauss_hermite_glm(target: Target, mu, Sigma, n_points: int = 32):
    """E_q[grad log p], E_q[hess log p] for a GLM target by Gauss-Hermite quadrature.

    Each eta_i = x_i^T theta is N(x_i^T mu, x_i^T Sigma x_i) under q, so
    E[grad] = X^T E[l'(eta)] - P0 (mu - m0) and E[hess] = X^T diag(E[l''(eta)]) X - P0.
    Traceable (usable inside jit); ``n_points`` must be a Python int.
    """
    mu, Sigma = _checked(target, mu, Sigma)
    glm = target.glm
    if glm is None:
        raise ValueError(f"Gauss-Hermite expectations need a GLM target; {target.name!r} is not one.")
    x, w = hermite_nodes(n_points)
    return _gh_glm(glm.X, glm.y, glm.prior_mean, glm.prior_prec, glm.loglik, mu, Sigma, x, w)


def _gh_glm(X, y, m0, P0, loglik, mu, Sigma, x, w):
    m = X @ mu
    s = jnp.sqrt(jnp.maximum(jnp.einsum("ij,jk,ik->i", X, Sigma, X), 0.0))
    eta = m[:, None] + s[:, None] * x[None, :]  # (n, K)
    d1 = jax.vmap(jax.vmap(jax.grad(loglik)))(eta, jnp.broadcast_to(y[:, None], eta.shape))
    d2 = jax.vmap(jax.vmap(jax.grad(jax.grad(loglik))))(eta, jnp.broadcast_to(y[:, None], eta.shape))
    e1 = d1 @ w
    e2 = d2 @ w
    g = X.T @ e1 - P0 @ (mu - m0)
    H = (X.T * e2) @ X - P0
    return g, H


_gh_glm = jax.jit(_gh_glm, static_argnums=(4,))


def monte_carlo(target: Target, mu, Sigma, key, n_samples: int = 100, order: int = 1):
    """Monte Carlo estimates from n_samples draws theta = mu + C z (see module docstring)."""
    mu, Sigma = _checked(target, mu, Sigma)
    n_samples = integer(n_samples, "The number of Monte Carlo samples", minimum=1, maximum=2**31 - 1)
    if order not in (1, 2):
        raise ValueError(f"order must be 1 (first-order, Stein) or 2 (Hessian draws); got {order!r}.")
    C = jnp.linalg.cholesky(0.5 * (Sigma + Sigma.T))
    z = jax.random.normal(key, (n_samples, mu.shape[-1]), dtype=mu.dtype)
    theta = mu + z @ C.T
    g = target.grad_batch(theta)
    eg = jnp.mean(g, axis=0)
    if order == 2:
        return eg, jnp.mean(target.hess_batch(theta), axis=0)
    G = g.T @ z / z.shape[0]  # E[grad f z^T]
    H = solve_triangular(C, G.T, lower=True, trans=1).T  # G C^-1
    return eg, 0.5 * (H + H.T)


def expected_grad_hess(target: Target, mu, Sigma, method: str = "auto", key=None,
                       n_samples: int = 100, n_points: int = 32):
    """(E_q[grad log p], E_q[hess log p]) for q = N(mu, Sigma).

    ``method="auto"`` picks "exact" for quadratic targets, "gauss-hermite" for GLM targets and
    "mc-second" otherwise. Monte Carlo methods need a PRNG ``key``.
    """
    mu, Sigma = _checked(target, mu, Sigma)
    out = _expected_grad_hess(target, mu, Sigma, method, key, n_samples, n_points)
    if not any(isinstance(a, jax.core.Tracer) for a in out):
        for a in out:
            finite_result(a, "E_q[grad log p] or E_q[hess log p]")
    return out


def _checked(target: Target, mu, Sigma):
    """(mu, Sigma) as jnp arrays; on concrete input first checked: shapes (d,) and (d, d) for the
    target, real, finite, Sigma symmetric positive definite."""
    if not isinstance(target, Target):
        raise ValueError(f"target must be a vilab.targets.Target; got {type(target).__name__}.")
    if isinstance(mu, jax.core.Tracer) or isinstance(Sigma, jax.core.Tracer):
        return mu, Sigma
    if np.shape(mu) != (target.dim,) or np.shape(Sigma) != (target.dim, target.dim):
        raise ValueError(
            f"mu must have shape ({target.dim},) and Sigma ({target.dim}, {target.dim}) for {target!r}; "
            f"got {np.shape(mu)} and {np.shape(Sigma)}."
        )
    mu, Sigma = check_mean_cov(mu, Sigma)
    return jnp.asarray(mu), jnp.asarray(Sigma)


def _expected_grad_hess(target, mu, Sigma, method, key, n_samples, n_points):
    if method == "auto":
        method = "exact" if target.quadratic else ("gauss-hermite" if target.glm is not None else "mc-second")
    if method == "exact":
        if not target.quadratic:
            raise ValueError(
                f"Exact expectations need a quadratic (Gaussian) target; {target.name!r} is not. "
                "Use 'gauss-hermite' (GLMs) or a Monte Carlo method."
            )
        return target.grad(mu), target.hess(mu)
    if method == "gauss-hermite":
        if target.glm is None:
            raise ValueError(f"Gauss-Hermite expectations need a GLM target; {target.name!r} is not one.")
        return gauss_hermite_glm(target, mu, Sigma, n_points)
    if method in ("mc-first", "mc-second"):
        if key is None:
            raise ValueError("Monte Carlo expectations need a PRNG key (jax.random.key(seed)).")
        return monte_carlo(target, mu, Sigma, key, n_samples, order=1 if method == "mc-first" else 2)
    raise ValueError(f"Unknown expectation method {method!r}; choose one of {METHODS} or 'auto'.")
