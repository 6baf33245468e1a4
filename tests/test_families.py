"""Tests of vilab.family.dense.GaussianFamily: storage, density, natural gradients, validity, Tan's Thm 2."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import vilab  # noqa: F401  (x64)
from vilab.family import gaussian, natgrad
from vilab.algorithms import optim
from vilab.core import CODES
from vilab.family.dense import GaussianFamily

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


# ------------------------------------------------------------- the other members of the protocol

from scipy import stats  # noqa: E402

from vilab.family import dense  # noqa: E402
from vilab.family.dense import BlockPrecFamily, DLRPrecFamily, GaussianFamilyProtocol, MomentFamily  # noqa: E402
from vilab.family.block import Structure, dense_mask, from_dense, to_dense  # noqa: E402

STRUCTURES = [Structure(3, 2, 2, 0), Structure(5, 1, 2, 1)]


def _block_q(st: Structure, seed: int = 0):
    """A random (mu, T) of the block family, its flat lambda, and the dense T (numpy)."""
    rng = np.random.default_rng(seed)
    fam = BlockPrecFamily(st)
    M = np.where(dense_mask(st), rng.normal(size=(st.d, st.d)) * 0.3, 0.0)
    M[np.diag_indices(st.d)] = rng.uniform(0.7, 1.6, size=st.d) * rng.choice([-1.0, 1.0], size=st.d)
    F = from_dense(jnp.asarray(M), st)
    mu = jnp.asarray(rng.normal(size=st.d))
    return fam, (mu, F), fam.pack(mu, F), to_dense(F, st)


def _dlr_q(d: int, rank: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    mu, ups, W = rng.normal(size=d), rng.uniform(0.5, 2.0, size=d), rng.normal(size=(d, rank)) * 0.7
    return DLRPrecFamily(d, rank), (jnp.asarray(mu), jnp.asarray(ups), jnp.asarray(W)), np.diag(ups) + W @ W.T


def _check_against_dense(fam, q, mu, S, seed: int = 0):
    """Every operation of the protocol against the dense (mu, Sigma), computed with numpy / scipy."""
    assert isinstance(fam, GaussianFamilyProtocol)
    d = fam.d
    rng = np.random.default_rng(seed)
    P = np.linalg.inv(S)
    np.testing.assert_allclose(fam.mean(q), mu, rtol=0, atol=0)
    np.testing.assert_allclose(fam.covariance(q), S, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fam.precision(q), P, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(fam.variances(q), np.diag(S), rtol=1e-10)
    b = rng.normal(size=d)
    Bm = rng.normal(size=(d, 3))
    np.testing.assert_allclose(fam.solve(q, jnp.asarray(b)), P @ b, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(fam.solve(q, jnp.asarray(Bm)), P @ Bm, rtol=1e-9, atol=1e-10)
    if hasattr(fam, "cov_apply"):
        np.testing.assert_allclose(fam.cov_apply(q, jnp.asarray(b)), S @ b, rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(fam.cov_apply(q, jnp.asarray(Bm)), S @ Bm, rtol=1e-9, atol=1e-10)
    theta = rng.normal(size=(6, d))
    ref = stats.multivariate_normal(mu, S).logpdf(theta)
    np.testing.assert_allclose(fam.logpdf(q, jnp.asarray(theta)), ref, rtol=1e-10)
    np.testing.assert_allclose(fam.logpdf(q, jnp.asarray(theta[0])), ref[0], rtol=1e-10)
    np.testing.assert_allclose(fam.half_logdet(q), 0.5 * np.linalg.slogdet(S)[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fam.entropy(q), stats.multivariate_normal(mu, S).entropy(), rtol=1e-10)
    other = gaussian.MeanCov(jnp.zeros(d), 2.0 * jnp.eye(d))
    np.testing.assert_allclose(fam.kl(q, other), gaussian.kl(gaussian.MeanCov(jnp.asarray(mu), jnp.asarray(S)), other),
                               rtol=1e-9)
    assert abs(float(fam.kl(q, q))) < 1e-10
    nat = gaussian.convert(fam.gaussian(q), "natural")
    np.testing.assert_allclose(nat.eta1, P @ mu, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(nat.eta2, -0.5 * P, rtol=1e-9, atol=1e-10)
    # transform: B B^T = Sigma for the linear map z -> theta - mu
    Bz = np.asarray(fam.transform(q, jnp.eye(d))) - np.asarray(mu)  # rows: B e_j
    np.testing.assert_allclose(Bz.T @ Bz, S, rtol=1e-9, atol=1e-10)
    assert int(fam.validity(q)) == 0


def _check_moments(fam, q, mu, S, n: int = 20000):
    """Sample mean and covariance of n draws within 5 standard errors of (mu, Sigma), entrywise:
    SE(mean_i) = sqrt(S_ii / n), SE(cov_ij) = sqrt((S_ij^2 + S_ii S_jj) / n)."""
    x = np.asarray(fam.sample(jax.random.PRNGKey(7), q, n))
    assert x.shape == (n, fam.d)
    assert np.all(np.abs(x.mean(0) - mu) < 5 * np.sqrt(np.diag(S) / n))
    se_cov = np.sqrt((S**2 + np.outer(np.diag(S), np.diag(S))) / n)
    assert np.all(np.abs(np.cov(x.T) - S) < 5 * se_cov)
    with pytest.raises(ValueError, match="number of draws"):
        fam.sample(jax.random.PRNGKey(0), q, 0)


@pytest.mark.parametrize("st", STRUCTURES, ids=["arrow", "banded"])
def test_block_family_against_the_dense_gaussian(st):
    fam, q, lam, T = _block_q(st, 3)
    S = np.linalg.inv(T @ T.T)
    mu = np.asarray(q[0])
    assert fam.size == lam.shape[0] == st.d + int(dense_mask(st).sum())
    _check_against_dense(fam, q, mu, S)
    _check_against_dense(fam, lam, mu, S)  # the flat lambda is the same q
    np.testing.assert_allclose(fam.dense_factor(lam), T, rtol=0, atol=0)
    mu2, F2 = fam.unpack(lam)
    np.testing.assert_array_equal(fam.pack(mu2, F2), lam)
    np.testing.assert_array_equal(np.asarray(lam)[fam.diag_index()], np.diag(T))
    z = jnp.asarray(np.random.default_rng(1).normal(size=(4, st.d)))
    np.testing.assert_allclose(fam.whiten(q, fam.transform(q, z)), z, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fam.log_q_whitened(q, z), fam.logpdf(q, fam.transform(q, z)), rtol=1e-12)
    _check_moments(fam, lam, mu, S)


@pytest.mark.parametrize("st", STRUCTURES, ids=["arrow", "banded"])
def test_block_family_validity_codes(st):
    fam, q, lam, T = _block_q(st, 5)
    assert int(fam.validity(lam)) == dense.OK
    assert int(fam.validity(lam.at[0].set(jnp.nan))) == dense.NONFINITE  # mu
    assert int(fam.validity(lam.at[-1].set(jnp.inf))) == dense.NONFINITE  # T
    for k in (0, -1):  # a local and a global diagonal entry of T
        assert int(fam.validity(lam.at[fam.diag_index()[k]].set(0.0))) == dense.SINGULAR_FACTOR
    off = np.setdiff1d(np.arange(st.d, fam.size), fam.diag_index())[0]
    assert int(fam.validity(lam.at[off].set(0.0))) == dense.OK  # an off-diagonal zero is fine
    with pytest.raises(ValueError, match="scalar states"):
        BlockPrecFamily(Structure(3, 2, 1, 1)).check()


@pytest.mark.parametrize("rank", [1, 3])
def test_dlr_family_against_the_dense_gaussian(rank):
    d = 6
    fam, q, Prec = _dlr_q(d, rank, rank)
    S = np.linalg.inv(Prec)
    mu = np.asarray(q[0])
    _check_against_dense(fam, q, mu, S)
    lam = fam.pack(*q)
    assert fam.size == lam.shape[0] == d * (2 + rank)
    _check_against_dense(fam, lam, mu, S)
    np.testing.assert_array_equal(jnp.concatenate([a.reshape(-1) for a in fam.unpack(lam)]), lam)
    _check_moments(fam, q, mu, S)


def test_dlr_family_validity_codes():
    fam, q, _ = _dlr_q(4, 2, 1)
    mu, ups, W = q
    assert int(fam.validity(q)) == dense.OK
    assert int(fam.validity((mu, ups, W.at[1, 0].set(jnp.nan)))) == dense.NONFINITE
    assert int(fam.validity((mu.at[0].set(jnp.inf), ups, W))) == dense.NONFINITE
    assert int(fam.validity((mu, ups.at[2].set(-0.1), W))) == dense.NOT_PD
    assert int(fam.validity((mu, ups.at[2].set(0.0), W))) == dense.NOT_PD
    with pytest.raises(ValueError, match="rank"):
        DLRPrecFamily(4, 0).check()


@pytest.mark.parametrize("diagonal", [False, True])
def test_moment_family_against_the_dense_gaussian(diagonal):
    d = 4
    rng = np.random.default_rng(2)
    A = rng.normal(size=(d, d))
    S = np.diag(rng.uniform(0.5, 2.0, size=d)) if diagonal else A @ A.T / d + 0.5 * np.eye(d)
    mu = rng.normal(size=d)
    fam = MomentFamily(d, diagonal)
    q = (jnp.asarray(mu), jnp.asarray(np.diag(S) if diagonal else S))
    _check_against_dense(fam, q, mu, S)
    lam = fam.pack(*q)
    _check_against_dense(fam, lam, mu, S)
    kappa = GaussianFamily(d, "kappa", diagonal)  # the same flat storage and density
    theta = jnp.asarray(rng.normal(size=(3, d)))
    np.testing.assert_allclose(fam.logpdf(lam, theta), kappa.logpdf(lam, theta), rtol=1e-12)
    _check_moments(fam, q, mu, S)
    bad = (q[0], q[1].at[0].set(-1.0) if diagonal else q[1].at[0, 0].set(-1.0))
    assert int(fam.validity(bad)) == dense.NOT_PD
    assert int(fam.validity((q[0].at[1].set(jnp.nan), q[1]))) == dense.NONFINITE


def test_moment_family_symmetrises_sigma():
    """An asymmetric (by rounding) Sigma is read as (Sigma + Sigma^T) / 2, as BONG's FC sampler always did."""
    S = np.array([[2.0, 0.5], [0.3, 1.0]])
    fam = MomentFamily(2)
    q = (jnp.zeros(2), jnp.asarray(S))
    Ss = 0.5 * (S + S.T)
    np.testing.assert_allclose(fam.half_logdet(q), 0.5 * np.linalg.slogdet(Ss)[1], rtol=1e-12)
    np.testing.assert_allclose(fam.solve(q, jnp.ones(2)), np.linalg.solve(Ss, np.ones(2)), rtol=1e-12)


def test_codes_are_shared_by_every_member():
    from vilab.family import block, lowrank

    assert (dense.OK, dense.NONFINITE, dense.NOT_PD, dense.SINGULAR_FACTOR) == (0, 2, 3, 5)
    assert (block.OK, block.NONFINITE, block.SINGULAR_FACTOR) == (0, 2, 5)
    assert (lowrank.OK, lowrank.NONFINITE, lowrank.NOT_PD) == (0, 2, 3)
    assert "positive definiteness" in CODES[dense.NOT_PD][0] and "singular" in CODES[dense.SINGULAR_FACTOR][0]


def test_subsystems_use_the_members():
    """vilab.online's beliefs are states of the members; vilab.hierarchical's log q, validity and
    sampling are the block family's (same numbers, same functions)."""
    from vilab.family import block as hfam
    from vilab.hierarchical import fit as hfit
    from vilab.online import families as ofam

    from vilab.family import block, lowrank

    assert hfam.BlockPrecFamily is BlockPrecFamily and hfam.solve_Tt is block.solve_Tt
    assert ofam.dlr_solve is lowrank.dlr_solve and ofam.dlr_noise_map is lowrank.dlr_noise_map
    assert ofam.family_of(ofam.DLR(jnp.zeros(3), jnp.ones(3), jnp.zeros((3, 2)))) == DLRPrecFamily(3, 2)
    assert ofam.family_of(ofam.Diag(jnp.zeros(3), jnp.ones(3))) == MomentFamily(3, True)
    rng = np.random.default_rng(0)
    mu = jnp.asarray(rng.normal(size=4))
    for b in (ofam.FC(mu, jnp.eye(4) * 0.7), ofam.Diag(mu, jnp.full(4, 0.4)),
              ofam.DLR(mu, jnp.full(4, 1.3), jnp.asarray(rng.normal(size=(4, 2))))):
        fam = ofam.family_of(b)
        key = jax.random.PRNGKey(4)
        np.testing.assert_array_equal(ofam.sample(key, b, 5), fam.sample(key, b, 5))
        np.testing.assert_array_equal(ofam.marginal_variances(b), fam.variances(b))
        np.testing.assert_allclose(ofam.dense_cov(b), fam.covariance(b), rtol=0, atol=0)
    with pytest.raises(ValueError, match="belief"):
        ofam.family_of(gaussian.MeanCov(mu, jnp.eye(4)))
    st = STRUCTURES[1]
    fam, (m, F), lam, T = _block_q(st, 8)
    z = jnp.asarray(rng.normal(size=st.d))
    theta = fam.transform(lam, z)
    np.testing.assert_array_equal(hfit.log_q(hfam.log_abs_det(F), z), fam.log_q_whitened(lam, z))
    np.testing.assert_allclose(fam.logpdf(lam, theta), stats.multivariate_normal(np.asarray(m), np.linalg.inv(T @ T.T))
                               .logpdf(np.asarray(theta)), rtol=1e-10)
    assert int(hfit.validity_code(m, F, jnp.float64(1.0))) == 0
    assert int(hfit.validity_code(m, F, jnp.float64(jnp.nan))) == 2
    F0 = F._replace(gg=F.gg.at[0, 0].set(0.0))
    assert int(hfit.validity_code(m, F0, jnp.float64(1.0))) == int(fam.validity((m, F0))) == 5
