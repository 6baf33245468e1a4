"""Tests of vilab.families.GaussianFamily: storage, density, natural gradients, validity, Tan's Thm 2."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import vilab  # noqa: F401  (x64)
from vilab import gaussian, natgrad, optim
from vilab.core import CODES
from vilab.families import GaussianFamily

from .reference import fisher as ref

FAMILIES = [(p, dg) for p in ("chol_cov", "chol_prec", "kappa") for dg in (False, True)]


def _lam(fam: GaussianFamily, seed: int = 0):
    """A random valid lambda of ``fam`` (factor with a well-conditioned diagonal)."""
    rng = np.random.default_rng(seed)
    d = fam.d
    A = np.tril(rng.normal(size=(d, d)) * 0.4)
    A[np.diag_indices(d)] = rng.uniform(0.5, 1.5, size=d) * rng.choice([-1.0, 1.0], size=d)
    if fam.diagonal:
        A = np.diag(np.diag(A))
    F = A @ A.T if fam.param == "kappa" else A
    return fam.pack(jnp.asarray(rng.normal(size=d)), jnp.asarray(F))


def _mean_cov(fam, lam):
    """(mu, Sigma) computed independently of the family's code paths, with numpy."""
    d = fam.d
    mu = np.asarray(lam[:d])
    f = np.asarray(lam[d:])
    if fam.diagonal:
        F = np.diag(f)
    else:
        F = np.zeros((d, d))
        c, r = np.triu_indices(d)
        F[r, c] = f
        if fam.param == "kappa":
            F = F + np.tril(F, -1).T
    if fam.param == "chol_cov":
        return mu, F @ F.T
    if fam.param == "chol_prec":
        return mu, np.linalg.inv(F @ F.T)
    return mu, F


@pytest.mark.parametrize("param, diagonal", FAMILIES)
@pytest.mark.parametrize("d", [1, 3])
def test_distribution_matches_vilab_gaussian(param, diagonal, d):
    fam = GaussianFamily(d, param, diagonal)
    lam = _lam(fam, d)
    mu, S = _mean_cov(fam, lam)
    np.testing.assert_allclose(fam.covariance(lam), S, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(fam.variances(lam), np.diag(S), rtol=1e-12)
    np.testing.assert_allclose(fam.precision(lam), np.linalg.inv(S), rtol=1e-10, atol=1e-12)
    B = np.asarray(fam.sqrt(lam))
    np.testing.assert_allclose(B @ B.T, S, rtol=1e-12, atol=1e-14)
    theta = jnp.asarray(np.random.default_rng(9).normal(size=(5, d)))
    ref = gaussian.logpdf(gaussian.MeanCov(jnp.asarray(mu), jnp.asarray(S)), theta)
    np.testing.assert_allclose(fam.logpdf(lam, theta), ref, rtol=1e-12)
    np.testing.assert_allclose(fam.logpdf(lam, theta[0]), ref[0], rtol=1e-12)
    np.testing.assert_allclose(fam.entropy(lam), gaussian.entropy(gaussian.MeanCov(jnp.asarray(mu), jnp.asarray(S))),
                               rtol=1e-12)
    z = jnp.asarray(np.random.default_rng(1).normal(size=(4, d)))
    np.testing.assert_allclose(fam.whiten(lam, fam.transform(lam, z)), z, rtol=1e-10, atol=1e-12)
    b = jnp.asarray(np.random.default_rng(2).normal(size=d))
    np.testing.assert_allclose(S @ np.asarray(fam.solve(lam, b)), b, rtol=1e-10, atol=1e-12)
    other = gaussian.MeanCov(jnp.zeros(d), jnp.eye(d) * 2.0)
    np.testing.assert_allclose(fam.kl(lam, other),
                               gaussian.kl(gaussian.MeanCov(jnp.asarray(mu), jnp.asarray(S)), other), rtol=1e-10)
    assert abs(float(fam.kl(lam, lam))) < 1e-12
    assert fam.size == lam.shape[0] == (2 * d if diagonal else d + d * (d + 1) // 2)
    mu2, F2 = fam.unpack(lam)
    np.testing.assert_array_equal(fam.pack(mu2, F2), lam)


def test_samples_have_the_family_moments():
    """20,000 draws: sample mean and covariance within 5 standard errors (entries of size ~1, SE ~ 0.01)."""
    fam = GaussianFamily(3, "chol_prec")
    lam = _lam(fam, 4)
    mu, S = _mean_cov(fam, lam)
    x = np.asarray(fam.sample(jax.random.PRNGKey(0), lam, 20000))
    assert x.shape == (20000, 3)
    se = np.sqrt(np.diag(S) / 20000)
    assert np.all(np.abs(x.mean(0) - mu) < 5 * se)
    se_cov = np.sqrt((S**2 + np.outer(np.diag(S), np.diag(S))) / 20000)
    assert np.all(np.abs(np.cov(x.T) - S) < 5 * se_cov)
    with pytest.raises(ValueError, match="number of draws"):
        fam.sample(jax.random.PRNGKey(0), lam, 0)


def _brute_fisher(fam, lam):
    """Fisher information in lambda's coordinates from the reference fisher_matrix (autodiff of log q with an
    exact cubature). A diagonal family's coordinates are a subset of the dense family's, and at a
    diagonal point its Fisher is the principal submatrix of the dense one on those coordinates."""
    d = fam.d
    dense = GaussianFamily(d, fam.param, False)
    mu, F = fam.unpack(lam)
    Fm = jnp.diag(F) if fam.diagonal else F
    kind = {"chol_cov": "chol_cov", "chol_prec": "chol_prec", "kappa": "mean_cov"}[fam.param]
    full = ref.fisher_matrix(kind, mu, Fm)
    np.testing.assert_allclose(ref.flatten_params(kind, mu, Fm), dense.pack(mu, Fm))  # same coordinates
    if not fam.diagonal:
        return full
    idx = np.concatenate([np.arange(d), dense.diag_index()])
    return full[np.ix_(idx, idx)]


@pytest.mark.parametrize("param, diagonal", FAMILIES)
@pytest.mark.parametrize("d", [1, 3])
def test_natural_equals_the_brute_force_fisher_solve(param, diagonal, d):
    fam = GaussianFamily(d, param, diagonal)
    lam = _lam(fam, 10 + d)
    g = jnp.asarray(np.random.default_rng(d).normal(size=fam.size))
    np.testing.assert_allclose(fam.natural(lam, g), np.linalg.solve(_brute_fisher(fam, lam), g), rtol=1e-8,
                               atol=1e-10)


def test_validity_codes_are_the_core_codes():
    assert CODES[2][0].endswith("non-finite values") and "positive definiteness" in CODES[3][0]
    assert "singular" in CODES[5][0]
    for param, diagonal in FAMILIES:
        fam = GaussianFamily(2, param, diagonal)
        lam = _lam(fam, 1)
        assert int(fam.validity(lam)) == 0
        assert int(fam.validity(lam.at[0].set(jnp.nan))) == 2
        assert int(fam.validity(lam.at[-1].set(jnp.inf))) == 2
        broken = lam.at[fam.diag_index()[-1]].set(0.0)
        assert int(fam.validity(broken)) == (3 if param == "kappa" else 5)
    kappa = GaussianFamily(2, "kappa")
    assert int(kappa.validity(kappa.pack(jnp.zeros(2), jnp.array([[1.0, 2.0], [2.0, 1.0]])))) == 3  # indefinite
    one = GaussianFamily(1, "kappa")
    assert int(one.validity(jnp.array([0.3, -0.01]))) == 3  # sigma^2 < 0 (Tan Fig. 3)
    assert int(GaussianFamily(2, "chol_cov").validity(jnp.array([0.0, 0.0, -1.0, 5.0, 2.0]))) == 0  # sign is free


def test_bad_settings_get_a_sentence():
    with pytest.raises(ValueError, match="parameterization"):
        GaussianFamily(2, "cholesky").check()
    with pytest.raises(ValueError, match="dimension"):
        GaussianFamily(0).check()
    with pytest.raises(ValueError, match="order"):
        GaussianFamily(2).thm2_gradient(jnp.ones(5), jnp.zeros(2), jnp.zeros(2), order="third")
    with pytest.raises(ValueError, match="Hessian"):
        GaussianFamily(2).thm2_gradient(jnp.ones(5), jnp.zeros(2), jnp.zeros(2), order="second")


def test_optim_layout_is_the_family():
    assert optim.Layout is GaussianFamily
    lay = optim.Layout(3, "chol_prec", True)
    assert (lay.d, lay.param, lay.diagonal, lay.size) == (3, "chol_prec", True, 6)


# ------------------------------------------------------------------ Tan (2025) Theorem 2

# A non-Gaussian target: log p(theta) = -sum log cosh(a theta_i + b) - theta^T P theta / 2 + c^T theta.
_P = np.array([[1.5, 0.4, 0.0], [0.4, 1.0, -0.3], [0.0, -0.3, 2.0]])
_C = np.array([0.3, -0.5, 0.2])


def _log_p(theta):
    return -jnp.sum(jnp.log(jnp.cosh(1.3 * theta + 0.2))) - 0.5 * theta @ _P @ theta + _C @ theta


def _expected_log_p(mu, S):
    """E_q[log p] by Gauss-Hermite quadrature in each coordinate for the cosh part (it is separable)
    and in closed form for the quadratic part: accurate to ~1e-14 for these variances."""
    x, w = np.polynomial.hermite_e.hermegauss(80)
    w = w / w.sum()
    sd = jnp.sqrt(jnp.diagonal(S))
    vals = jnp.log(jnp.cosh(1.3 * (mu[:, None] + sd[:, None] * x[None, :]) + 0.2)) @ w
    return -jnp.sum(vals) - 0.5 * (jnp.trace(_P @ S) + mu @ _P @ mu) + _C @ mu


@pytest.mark.parametrize("param, diagonal", FAMILIES)
@pytest.mark.parametrize("order", ["first", "second"])
@pytest.mark.parametrize("smooth", [False, True])
def test_thm2_estimators_are_unbiased(param, diagonal, order, smooth):
    """Mean of 20,000 single-draw estimates (fixed key) = the exact gradient of the ELBO (or, smooth,
    of E_q[log p]) within 5 standard errors of the mean per coordinate (+1e-9 for the coordinates whose
    estimate has no variance); the ELBO estimate h(theta) is unbiased too."""
    fam = GaussianFamily(3, param, diagonal)
    lam = _lam(fam, 3) * jnp.concatenate([jnp.ones(3), 0.6 * jnp.ones(fam.size - 3)])
    if param == "kappa":
        lam = _lam(fam, 3)

    def target(l):
        e = _expected_log_p(fam.mean(l), fam.covariance(l))
        return e if smooth else e + fam.entropy(l)

    exact = np.asarray(jax.grad(target)(lam))
    keys = jax.random.split(jax.random.PRNGKey(1), 20000)
    vals, gs = jax.jit(jax.vmap(lambda k: fam.estimate(k, lam, _log_p, order=order, smooth=smooth)))(keys)
    gs = np.asarray(gs)
    mean, se = gs.mean(0), gs.std(0) / math.sqrt(len(keys))
    assert np.all(np.abs(mean - exact) <= 5 * se + 1e-9 * (1 + np.abs(exact))), (mean, exact, se)
    if not smooth:
        L = float(target(lam))
        v = np.asarray(vals)
        assert abs(v.mean() - L) <= 5 * v.std() / math.sqrt(len(v)) + 1e-9


@pytest.mark.parametrize("param", ["chol_cov", "chol_prec"])
def test_thm2_dense_forms_are_natgrad_estimators(param):
    """The dense Cholesky estimators are natgrad's G1 / F1 / G2 / F2 with h = log p - log q
    (natgrad.grad_h / hess_h); the family writes the log q part analytically (no inverse of Sigma)."""
    fam = GaussianFamily(3, param)
    lam = _lam(fam, 5)
    mu, F = fam.unpack(lam)
    P = fam.precision(lam)
    z = jnp.array([0.3, -1.2, 0.7])
    theta = fam.transform(lam, z)
    g, H = jax.grad(_log_p)(theta), jax.hessian(_log_p)(theta)
    gh, hh = natgrad.grad_h(g, theta, mu, P), natgrad.hess_h(H, P)
    if param == "chol_cov":
        first, second = natgrad.estimator_G1(gh, z), natgrad.estimator_F1(hh, F)
    else:
        first, second = natgrad.estimator_G2(theta, mu, F, gh), natgrad.estimator_F2(F, hh)
    for order, G in (("first", first), ("second", second)):
        est = fam.thm2_gradient(lam, z, g, H, order=order)
        np.testing.assert_allclose(est, fam.from_matrices(gh, jnp.tril(G)), rtol=1e-10, atol=1e-12)
