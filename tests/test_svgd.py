"""Gaussian SVGD in density form (Kumar et al. (2025) App. G; method "svgd"): the fixed point is the exact
posterior, and the closed-form step equals the particle SVGD step it summarises (Monte Carlo)."""

import jax
import jax.numpy as jnp
import numpy as np

from vilab.algorithms import run
from vilab.algorithms.core import METHODS, State
from vilab.family.gaussian import CholCov
from vilab.targets.papers import kumar_t2


def test_converges_to_the_exact_posterior_more_slowly_than_bw_gd():
    tgt = kumar_t2()
    init = CholCov(np.array([-2.0, 2.5]), 0.2 * np.eye(2))
    sv = run("svgd", tgt, init, 20000, 3e-3, kl_tol=1e-10)
    bw = run("bwgd", tgt, init, 20000, 0.02, kl_tol=1e-10)
    assert sv.status == bw.status == "converged"
    np.testing.assert_allclose(sv.mean[-1], tgt.mean, atol=1e-3)
    np.testing.assert_allclose(sv.cov[-1], tgt.cov, rtol=1e-2, atol=1e-6)
    assert sv.n_steps > 5 * bw.n_steps  # App. G: "SVGD-density shows the slowest convergence"
    assert "diverged" in run("svgd", tgt, init, 2000, 0.01).status  # the uncentred kernel: |m|^2 scales the step


def test_closed_form_step_equals_the_particle_svgd_step():
    """Particles x ~ q moved by x + eps phi(x), phi(x) = mean_j [K(x, y_j) score(y_j) + grad_y K(x, y_j)] over
    fresh draws y_j ~ q: their mean and covariance match the closed-form step to Monte Carlo accuracy."""
    tgt = kumar_t2()
    mu, V, eps = np.array([0.5, -0.3]), np.array([[0.3, 0.05], [0.05, 0.2]]), 0.05
    rng = np.random.default_rng(0)
    L = np.linalg.cholesky(V)
    x = mu + rng.normal(size=(200_000, 2)) @ L.T
    y = jnp.asarray(mu + rng.normal(size=(200_000, 2)) @ L.T)
    score = jax.vmap(jax.grad(tgt.log_density))(y)
    K = lambda a, b: a @ b + 1.0  # noqa: E731
    grad_K = jax.vmap(jax.grad(K, argnums=1), in_axes=(None, 0))
    # phi(x) = mean_j [(x . y_j + 1) s_j + grad_y K(x, y_j)]: linear in x, so evaluate via its two moments
    S_y = np.asarray(score.T @ y) / y.shape[0]
    s_bar = np.asarray(score.mean(axis=0))
    gk = lambda xi: np.asarray(grad_K(jnp.asarray(xi), y).mean(axis=0))  # noqa: E731
    np.testing.assert_allclose(gk(x[0]), x[0], rtol=1e-12)  # grad_y K(x, y) = x for every y
    phi = x @ S_y.T + s_bar + x
    moved = x + eps * phi
    m_pc, V_pc = moved.mean(axis=0), np.cov(moved.T)
    g = np.asarray(jnp.mean(score, axis=0))
    G_S = 0.5 * (np.linalg.inv(V) - np.asarray(-jnp.mean(jax.vmap(jax.hessian(tgt.log_density))(y[:20000]), axis=0)))
    new = METHODS["svgd"].step(State(jnp.asarray(mu), jnp.asarray(V)), (jnp.asarray(g), jnp.asarray(G_S)), eps)
    np.testing.assert_allclose(new.mu, m_pc, atol=5e-3)
    np.testing.assert_allclose(new.M, V_pc, atol=5e-3)
