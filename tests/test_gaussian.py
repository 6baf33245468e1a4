import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.conftest import random_lower, random_spd
from vilab.family import gaussian as g
from vilab.family.linalg import commutation_matrix, elimination_matrix, unvech, vech, vech_length


@pytest.mark.parametrize("d", [1, 2, 4])
@pytest.mark.parametrize("kind", sorted(set(g.KINDS) - {"mean_field"}))
def test_conversions_are_inverse(d, kind, rng):
    mu, S = rng.normal(size=d), random_spd(rng, d)
    p = g.from_mean_cov(g.MeanCov(jnp.asarray(mu), jnp.asarray(S)), kind)
    back = g.to_mean_cov(p)
    np.testing.assert_allclose(back.mu, mu, atol=1e-12)
    np.testing.assert_allclose(back.Sigma, S, atol=1e-12)
    for other in g.KINDS:
        if other != "mean_field":
            np.testing.assert_allclose(g.covariance(g.convert(g.convert(p, other), kind)), S, atol=1e-11)


def test_factor_kinds_are_lower_triangular_and_correct(rng):
    S = random_spd(rng, 4)
    C = np.asarray(g.from_mean_cov(g.MeanCov(jnp.zeros(4), jnp.asarray(S)), "chol_cov").C)
    T = np.asarray(g.from_mean_cov(g.MeanCov(jnp.zeros(4), jnp.asarray(S)), "chol_prec").T)
    for F in (C, T):
        np.testing.assert_array_equal(np.triu(F, 1), 0)
        assert np.all(np.diag(F) > 0)
    np.testing.assert_allclose(C @ C.T, S, atol=1e-12)
    np.testing.assert_allclose(T @ T.T, np.linalg.inv(S), atol=1e-10)
    np.testing.assert_allclose(g.precision(g.CholPrec(jnp.zeros(4), jnp.asarray(T))), np.linalg.inv(S), atol=1e-10)


def test_mean_field(rng):
    S = random_spd(rng, 3)
    mf = g.convert(g.MeanCov(jnp.zeros(3), jnp.asarray(S)), "mean_field")
    np.testing.assert_allclose(mf.sigma**2, np.diag(S))
    np.testing.assert_allclose(g.covariance(mf), np.diag(np.diag(S)))


@pytest.mark.parametrize("kind", sorted(g.KINDS))
def test_logpdf_entropy_sample_against_scipy(kind, rng):
    from scipy.stats import multivariate_normal as mvn

    d = 3
    mu, S = rng.normal(size=d), random_spd(rng, d)
    if kind == "mean_field":
        S = np.diag(np.diag(S))
    p = g.from_mean_cov(g.MeanCov(jnp.asarray(mu), jnp.asarray(S)), kind)
    x = rng.normal(size=(5, d))
    np.testing.assert_allclose(g.logpdf(p, jnp.asarray(x)), mvn(mu, S).logpdf(x), rtol=1e-10)
    np.testing.assert_allclose(g.logpdf(p, jnp.asarray(x[0])), mvn(mu, S).logpdf(x[0]), rtol=1e-10)
    np.testing.assert_allclose(g.entropy(p), mvn(mu, S).entropy(), rtol=1e-10)
    draws = np.asarray(g.sample(jax.random.key(0), p, 200_000))
    np.testing.assert_allclose(draws.mean(0), mu, atol=0.02 * np.sqrt(np.diag(S)).max())
    np.testing.assert_allclose(np.cov(draws.T), S, atol=0.03 * np.abs(S).max())


def test_kl_closed_form_against_monte_carlo(rng):
    d = 3
    p = g.MeanCov(jnp.asarray(rng.normal(size=d)), jnp.asarray(random_spd(rng, d)))
    q = g.MeanCov(jnp.asarray(rng.normal(size=d)), jnp.asarray(random_spd(rng, d)))
    x = g.sample(jax.random.key(1), p, 400_000)
    mc = np.asarray(g.logpdf(p, x) - g.logpdf(q, x))
    se = mc.std() / np.sqrt(len(mc))
    assert abs(float(g.kl(p, q)) - mc.mean()) < 4 * se
    assert abs(float(g.kl(p, p))) < 1e-12


def test_fisher_of_cholesky_factor_matches_tan_lemma1(rng):
    """Autodiff Fisher of (mu, vech C) = blockdiag(Sigma^-1, I(C)), Tan (2025) Lemma 1 / Thm 1(i)."""
    for d in (2, 3, 4):
        mu, C = rng.normal(size=d), random_lower(rng, d)
        m = vech_length(d)

        def unpack(lam):
            Cl = unvech(lam[d:])
            return lam[:d], Cl @ Cl.T

        F = np.asarray(g.fisher_information(unpack, jnp.concatenate([jnp.asarray(mu), vech(jnp.asarray(C))])))
        K, Lm = commutation_matrix(d), elimination_matrix(d)
        Ci = np.linalg.inv(C)
        I_C = Lm @ (np.kron(Ci, Ci.T) @ K + np.kron(np.eye(d), Ci.T @ Ci)) @ Lm.T
        expected = np.zeros((d + m, d + m))
        expected[:d, :d] = np.linalg.inv(C @ C.T)
        expected[d:, d:] = I_C
        np.testing.assert_allclose(F, expected, atol=1e-10)


@pytest.mark.parametrize(
    "bad, match",
    [
        (g.MeanCov(np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]])), "positive definite"),
        (g.MeanCov(np.zeros(2), np.ones((2, 3))), "square"),
        (g.MeanCov(np.zeros(3), np.eye(2)), "mismatch"),
        (g.MeanCov(np.zeros(2), np.array([[1.0, np.nan], [0.0, 1.0]])), "non-finite"),
        (g.MeanCov(np.zeros(2), np.array([[1.0, 0.5], [0.0, 1.0]])), "symmetric"),
        (g.CholCov(np.zeros(2), np.array([[1.0, 0.5], [0.0, 1.0]])), "lower triangular"),
        (g.CholPrec(np.zeros(2), np.array([[1.0, 0.0], [0.3, 0.0]])), "singular"),
        (g.MeanField(np.zeros(2), np.array([1.0, -1.0])), "positive"),
        (g.Natural(np.zeros(2), np.eye(2)), "positive definite"),
    ],
)
def test_invalid_input_raises_clear_valueerror(bad, match):
    with pytest.raises(ValueError, match=match):
        g.validate(bad)


def test_mean_field_round_trips_for_diagonal_covariances(rng):
    mu, var = rng.normal(size=3), rng.uniform(0.2, 3.0, size=3)
    mf = g.MeanField(jnp.asarray(mu), jnp.asarray(np.sqrt(var)))
    for kind in g.KINDS:
        back = g.convert(g.convert(mf, kind), "mean_field")
        np.testing.assert_allclose(back.mu, mu, atol=1e-12)
        np.testing.assert_allclose(back.sigma, np.sqrt(var), atol=1e-12)


NOT_PD = g.MeanCov(np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]]))
UPPER = g.CholPrec(np.zeros(2), np.array([[1.0, 0.5], [0.0, 1.0]]))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: g.sample(jax.random.key(0), NOT_PD, 5), "positive definite"),
        (lambda: g.logpdf(NOT_PD, np.zeros(2)), "positive definite"),
        (lambda: g.entropy(UPPER), "lower triangular"),
        (lambda: g.sample(jax.random.key(0), UPPER, 5), "lower triangular"),
        (lambda: g.convert(NOT_PD, "chol_cov"), "positive definite"),
        (lambda: g.from_mean_cov((np.zeros(3), np.eye(2)), "natural"), "mismatch"),
        (lambda: g.from_mean_cov(g.MeanCov(np.zeros(2), np.eye(2)), "cholesky"), "Unknown parameterization"),
        (lambda: g.kl(g.MeanCov(np.zeros(2), np.eye(2)), g.MeanCov(np.zeros(3), np.eye(3))), "mismatch"),
        (lambda: g.logpdf(g.MeanCov(np.zeros(2), np.eye(2)), np.zeros(3)), "mismatch"),
        (lambda: g.sample(jax.random.key(0), g.MeanCov(np.zeros(2), np.eye(2)), 0), "at least 1"),
        (lambda: g.precision(g.MeanField(np.zeros(2), np.array([1.0, np.inf]))), "non-finite"),
    ],
)
def test_operations_check_concrete_input(call, match):
    """Called eagerly, the operations refuse invalid input instead of returning NaNs."""
    with pytest.raises(ValueError, match=match):
        call()


def test_operations_still_trace_under_jit_and_grad(rng):
    S = random_spd(rng, 3)
    p = g.from_mean_cov(g.MeanCov(jnp.zeros(3), jnp.asarray(S)), "chol_prec")
    x = jnp.asarray(rng.normal(size=3))
    np.testing.assert_allclose(jax.jit(g.logpdf)(p, x), g.logpdf(p, x), rtol=1e-12)
    np.testing.assert_allclose(jax.jit(lambda q: g.kl(q, q))(p), 0.0, atol=1e-12)
    grad_mu = jax.grad(lambda m: g.logpdf(g.CholPrec(m, p.T), x))(p.mu)
    np.testing.assert_allclose(grad_mu, np.linalg.inv(S) @ np.asarray(x), rtol=1e-8)
