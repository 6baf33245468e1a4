"""Gradient oracles of the update catalogue: exact expectations, ELBO, and Tan's Thm 2 estimators.

Everything here is a pure jax function of (mu, Sigma) (or of the chart's factor), traceable
inside ``jax.lax`` loops. Modes:

* ``"exact"``: E_q[log p], E_q[grad log p], E_q[hess log p] exactly: quadratic (Gaussian)
  targets in closed form, GLM targets by Gauss-Hermite quadrature along each x_i^T theta
  (vilab.gradients.expectations.gauss_hermite_glm; the ELBO term likewise).
* ``"first"`` / ``"second"``: unbiased single-sample (or ``n_samples``-sample) estimates with
  h = log p - log q (Tan (2025) Sec. 5.1, Thm 2): first order uses grad h only (Stein / the
  reparameterisation trick), second order uses hess h (Price).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular

from ..family import natgrad as ng
from ..gradients.expectations import gauss_hermite_glm, hermite_nodes
from ..targets import Target

MODES = ("exact", "first", "second")
_LOG_2PI_E = float(np.log(2.0 * np.pi) + 1.0)


def has_exact(target: Target) -> bool:
    """True when E_q[log p] and its derivatives are available exactly (quadratic or GLM target,
    or closed forms supplied in ``target.info["exact_elbo"]`` / ``["exact_elbo_grads"]``)."""
    return bool(target.quadratic) or target.glm is not None or "exact_elbo_grads" in target.info


def exact_elbo_grads(target: Target, mu, Sigma, n_points: int = 40):
    """(grad_mu L, grad_Sigma L) exactly: the target's closed form when it supplies one
    (``target.info["exact_elbo_grads"]``), else from exact E[grad log p], E[hess log p]."""
    if "exact_elbo_grads" in target.info:
        return target.info["exact_elbo_grads"](mu, Sigma)
    Eg, EH = expected_grad_hess_exact(target, mu, Sigma, n_points)
    return ng.elbo_grads_from_expectations(Sigma, Eg, EH)


def expected_log_density(target: Target, mu, Sigma, n_points: int = 40):
    """E_q[log p(theta)] exactly: quadratic targets log p(mu) + tr(H Sigma)/2; GLM targets by
    Gauss-Hermite on each eta_i = x_i^T theta plus the Gaussian prior in closed form."""
    if target.quadratic:
        return target.value(mu) + 0.5 * jnp.sum(target.hess(mu) * Sigma)
    glm = target.glm
    x, w = hermite_nodes(n_points)
    m = glm.X @ mu
    s = jnp.sqrt(jnp.maximum(jnp.einsum("ij,jk,ik->i", glm.X, Sigma, glm.X), 0.0))
    eta = m[:, None] + s[:, None] * x[None, :]
    ll = jax.vmap(jax.vmap(glm.loglik))(eta, jnp.broadcast_to(glm.y[:, None], eta.shape))
    r = mu - glm.prior_mean
    return jnp.sum(ll @ w) - 0.5 * (r @ (glm.prior_prec @ r) + jnp.sum(glm.prior_prec * Sigma))


def expected_grad_hess_exact(target: Target, mu, Sigma, n_points: int = 40):
    """(E_q[grad log p], E_q[hess log p]) exactly (quadratic or GLM target)."""
    if target.quadratic:
        return target.grad(mu), target.hess(mu)
    return gauss_hermite_glm(target, mu, Sigma, n_points)


def elbo_exact(target: Target, mu, Sigma, logdet_Sigma, n_points: int = 40):
    """L = E_q[log p] + 1/2 log det(2 pi e Sigma) (Tan (2025) Sec. 2; Kumar Eq. 2 with gamma = 1).
    A target may supply its closed form as ``target.info["exact_elbo"](mu, Sigma)``."""
    if "exact_elbo" in target.info:
        return target.info["exact_elbo"](mu, Sigma)
    d = mu.shape[-1]
    return expected_log_density(target, mu, Sigma, n_points) + 0.5 * (logdet_Sigma + d * _LOG_2PI_E)


def elbo_mc(target: Target, mu, B, logdet_Sigma, z0):
    """ELBO with fixed standard-normal draws z0 (common random numbers), theta = mu + B z0 for a
    square root B B^T = Sigma (e.g. C, or T^-T): deterministic in (mu, Sigma)."""
    d = mu.shape[-1]
    vals = target.value_batch(mu + z0 @ B.T)
    return jnp.mean(vals) + 0.5 * (logdet_Sigma + d * _LOG_2PI_E)


def kl_to_gaussian(mu, Sigma, logdet_Sigma, m, P, logdet_P):
    """KL(q || N(m, P^-1)) = 1/2 [tr(P Sigma) - d - log det(P Sigma) + (mu - m)^T P (mu - m)]
    (Kumar digest Sec. 2.8)."""
    r = mu - m
    d = mu.shape[-1]
    return 0.5 * (jnp.sum(P * Sigma) - d - logdet_P - logdet_Sigma + r @ (P @ r))


# ---------------------------------------------------------------------------------------------
# stochastic estimates (one batch of n_samples draws z)


def sigma_grads_stochastic(target: Target, mu, Sigma, P, theta, order: int):
    """(grad_mu L, grad_Sigma L) estimates from draws theta (n, d) of q (Tan (2025) Sec. 5.1):
    grad_mu ~ mean grad h(theta); grad_Sigma ~ 1/2 mean hess h (second order, Price) or
    1/2 sym(mean Sigma^-1 (theta - mu) grad h^T) (first order, Stein / Lemma 2)."""
    gl = target.grad_batch(theta)
    gh = gl + (theta - mu) @ P
    g_mu = jnp.mean(gh, axis=0)
    if order == 2:
        Hh = jnp.mean(target.hess_batch(theta), axis=0) + P
    else:
        Hh = P @ ((theta - mu).T @ gh) / theta.shape[0]
    return g_mu, 0.5 * ng.sym(Hh)


def chol_cov_grads_stochastic(target: Target, mu, C, z, order: int):
    """Tan (2025) Thm 2 for (mu, C): theta = mu + C z; grad_mu ~ grad h, grad_C ~ tril(G1) with
    G1 = grad h z^T (first order) or tril(F1), F1 = hess h C (second order); averaged over z."""
    theta = mu + z @ C.T
    gl = target.grad_batch(theta)
    Cinv_T_z = solve_triangular(C.T, z.T, lower=False).T  # Sigma^-1 (theta - mu) = C^-T z
    gh = gl + Cinv_T_z
    g_mu = jnp.mean(gh, axis=0)
    if order == 2:
        Ci = solve_triangular(C, jnp.eye(C.shape[0], dtype=C.dtype), lower=True)
        P = Ci.T @ Ci
        Hh = jnp.mean(target.hess_batch(theta), axis=0) + P
        G = ng.estimator_F1(Hh, C)
    else:
        G = gh.T @ z / z.shape[0]  # mean of G1 = grad h z^T
    return g_mu, jnp.tril(G)


def chol_prec_grads_stochastic(target: Target, mu, T, z, order: int):
    """Tan (2025) Thm 2 for (mu, T): theta = mu + T^-T z; grad_T ~ tril(G2), G2 = -(theta - mu) v^T,
    v = T^-1 grad h (first order) or tril(F2), F2 = -Sigma hess h T^-T (second order).
    Also returns v-bar = mean v (needed by Alg. 2N/2S's mean step)."""
    dtheta = solve_triangular(T.T, z.T, lower=False).T
    theta = mu + dtheta
    gl = target.grad_batch(theta)
    gh = gl + z @ T.T  # Sigma^-1 (theta - mu) = T T^T T^-T z = T z
    g_mu = jnp.mean(gh, axis=0)
    if order == 2:
        Hh = jnp.mean(target.hess_batch(theta), axis=0) + T @ T.T
        G = ng.estimator_F2(T, Hh)
    else:
        v = solve_triangular(T, gh.T, lower=True).T
        G = -(dtheta.T @ v) / z.shape[0]
    return g_mu, jnp.tril(G)
