import jax
import numpy as np
import pytest

from vilab.gradients.expectations import expected_grad_hess
from vilab.targets import banana, gaussian_2d, logistic_regression


@pytest.fixture(scope="module")
def logreg():
    rng = np.random.default_rng(3)
    X = np.column_stack([np.ones(60), rng.normal(size=(60, 2))])
    y = (rng.random(60) < 1 / (1 + np.exp(-X @ np.array([0.5, -1.0, 2.0])))).astype(float)
    return logistic_regression(X, y, prior_var=10.0)


def test_three_methods_agree_on_logistic_regression(logreg):
    mu = np.array([0.4, -0.8, 1.5])
    S = np.array([[0.2, 0.05, 0.0], [0.05, 0.1, 0.02], [0.0, 0.02, 0.15]])
    g_gh, H_gh = expected_grad_hess(logreg, mu, S, "gauss-hermite", n_points=40)
    g_gh2, H_gh2 = expected_grad_hess(logreg, mu, S, "gauss-hermite", n_points=80)
    np.testing.assert_allclose(g_gh, g_gh2, atol=1e-10)  # quadrature has converged
    np.testing.assert_allclose(H_gh, H_gh2, atol=1e-10)
    n = 400_000
    for method in ("mc-first", "mc-second"):
        g, H = expected_grad_hess(logreg, mu, S, method, key=jax.random.key(7), n_samples=n)
        scale_g = np.abs(g_gh).max()
        scale_H = np.abs(H_gh).max()
        np.testing.assert_allclose(g, g_gh, atol=0.01 * scale_g)
        np.testing.assert_allclose(H, H_gh, atol=0.02 * scale_H)
        np.testing.assert_allclose(H, np.asarray(H).T)


def test_exact_on_gaussian_target_matches_monte_carlo():
    t = gaussian_2d(0.8, 1.0, 2.0, mean=(1.0, 0.0))
    mu, S = np.array([0.2, 0.3]), np.array([[0.5, 0.1], [0.1, 0.3]])
    g, H = expected_grad_hess(t, mu, S)  # auto -> exact
    np.testing.assert_allclose(H, -np.linalg.inv(t.cov))
    g_mc, H_mc = expected_grad_hess(t, mu, S, "mc-first", key=jax.random.key(0), n_samples=200_000)
    np.testing.assert_allclose(g_mc, g, atol=0.03)
    np.testing.assert_allclose(H_mc, H, atol=0.05)


def test_method_errors():
    b = banana()
    with pytest.raises(ValueError, match="quadratic"):
        expected_grad_hess(b, np.zeros(2), np.eye(2), "exact")
    with pytest.raises(ValueError, match="GLM"):
        expected_grad_hess(b, np.zeros(2), np.eye(2), "gauss-hermite")
    with pytest.raises(ValueError, match="PRNG key"):
        expected_grad_hess(b, np.zeros(2), np.eye(2), "mc-first")
    with pytest.raises(ValueError, match="shape"):
        expected_grad_hess(b, np.zeros(3), np.eye(2))
    with pytest.raises(ValueError, match="Unknown"):
        expected_grad_hess(b, np.zeros(2), np.eye(2), "quadrature")
    with pytest.raises(ValueError, match="positive definite"):
        expected_grad_hess(b, np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]]), "mc-first", key=jax.random.key(0))
    with pytest.raises(ValueError, match="non-finite"):
        expected_grad_hess(b, np.array([0.0, np.nan]), np.eye(2), "mc-second", key=jax.random.key(0))


def test_gauss_hermite_is_traceable_and_exact_for_polynomials(logreg):
    """The quadrature runs inside jit (the update-rule loops call it there); the nodes integrate
    polynomials of degree 2n - 1 exactly under N(0, 1)."""
    from vilab.gradients.expectations import gauss_hermite_glm, hermite_nodes

    x, w = hermite_nodes(5)
    assert np.isclose(w @ x**4, 3.0) and np.isclose(w @ x**9, 0.0, atol=1e-12) and np.isclose(w.sum(), 1.0)
    mu, S = np.array([0.4, -0.8, 1.5]), 0.1 * np.eye(3)
    eager = gauss_hermite_glm(logreg, mu, S, 20)
    jitted = jax.jit(lambda m, s: gauss_hermite_glm(logreg, m, s, 20))(mu, S)
    np.testing.assert_allclose(jitted[0], eager[0], rtol=1e-12)
    np.testing.assert_allclose(jitted[1], eager[1], rtol=1e-12)
    with pytest.raises(ValueError, match="Gauss-Hermite nodes n_points must be at least 1"):
        hermite_nodes(0)
