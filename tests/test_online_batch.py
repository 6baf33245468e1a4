"""Batch BLR (Jones, Chang & Murphy App. E.6), the implicit RVGA (Eq. 77) and the runtime measurement
(App. B.1), against independent computations: VOGN / VON written out in numpy, the closed-form
linear-Gaussian posterior, the fixed-point equation of Eq. 77 with autodiff-free logistic formulas."""

import numpy as np
import jax
import jax.numpy as jnp
import pytest

import vilab  # noqa: F401  (x64)
from vilab import core
from vilab.online import batch as B
from vilab.online import belief_path, categorical, gaussian, make_method
from vilab.online.families import FC, Diag

KEY0 = core.as_key(0)


def _sig(z):
    return 1 / (1 + np.exp(-z))


def _logit_data(seed=0, N=12, P=3, onehot=False):
    rng = np.random.default_rng(seed)
    if onehot:
        X = np.eye(P)[rng.integers(0, P, N)] * 1.5
    else:
        X = rng.normal(size=(N, P))
    y = (rng.uniform(size=N) < _sig(X @ rng.normal(size=P))).astype(int)
    return X, y


def _draw_keys(seed, it):
    """The key chain of batch BLR: iteration ``it`` draws theta from split(fold_in(split(key)[0], it))[0]."""
    k_draw = jax.random.split(jax.random.PRNGKey(seed))[0]
    return jax.random.split(jax.random.fold_in(k_draw, it))[0]


def test_batch_blr_diag_mc_ef_with_one_sample_is_vogn():
    """E.6: blr-mc-ef-diag with M = 1 is VOGN: precision <- (1 - a) precision + a (lambda + sum_n g_n^2),
    mu <- mu + a (sum_n g_n - lambda mu) / precision, g_n the per-example gradients at one draw."""
    X, y = _logit_data()
    lam, a, n_it, P = 2.0, 0.3, 6, X.shape[1]
    tr = B.fit_batch_blr(make_method("blr-mc-ef-diag", alpha=a, n_samples=1), B.logistic_f, categorical(2), X, y, lam,
                         key=jax.random.PRNGKey(3), n_iter=n_it)
    mu, prec = np.zeros(P), np.full(P, lam)
    for it in range(1, n_it + 1):
        eps = np.asarray(jax.random.normal(_draw_keys(3, it), (1, P), jnp.float64))[0]
        th = mu + eps / np.sqrt(prec)
        G = X * (y - _sig(X @ th))[:, None]  # per-example gradients (N, P)
        prec = (1 - a) * prec + a * (lam + np.sum(G**2, axis=0))
        mu = mu + a * (G.sum(0) - lam * mu) / prec
        np.testing.assert_allclose(np.asarray(tr.mean[it]), mu, atol=1e-12)
    np.testing.assert_allclose(1 / np.asarray(tr.state.belief.s2), prec, rtol=1e-12)


def test_batch_blr_mc_hess_with_one_sample_is_von():
    """E.6: blr-mc-hess with M = 1 is VON: full covariance (exact Hessian at one draw), and the diagonal form on
    one-hot features (each per-example Hessian is diagonal, so the grid's probe estimate is exact)."""
    lam, a, n_it = 1.5, 0.4, 5
    X, y = _logit_data(1)
    P = X.shape[1]
    tr = B.fit_batch_blr(make_method("blr-mc-hess-fc", alpha=a, n_samples=1), B.logistic_f, categorical(2), X, y, lam,
                         key=jax.random.PRNGKey(4), n_iter=n_it)
    mu, Prec = np.zeros(P), lam * np.eye(P)
    for it in range(1, n_it + 1):
        eps = np.asarray(jax.random.normal(_draw_keys(4, it), (1, P), jnp.float64))[0]
        S = np.linalg.inv(Prec)
        th = mu + np.linalg.cholesky(0.5 * (S + S.T)) @ eps
        p = _sig(X @ th)
        g, H = X.T @ (y - p), -(X * (p * (1 - p))[:, None]).T @ X
        Prec = (1 - a) * Prec + a * (lam * np.eye(P) - H)
        mu = mu + a * np.linalg.solve(Prec, g - lam * mu)
        np.testing.assert_allclose(np.asarray(tr.mean[it]), mu, atol=1e-10)
    np.testing.assert_allclose(np.linalg.inv(np.asarray(tr.state.belief.Sigma)), Prec, rtol=1e-9)

    X, y = _logit_data(2, onehot=True)
    tr = B.fit_batch_blr(make_method("blr-mc-hess-diag", alpha=a, n_samples=1, n_probes=3), B.logistic_f,
                         categorical(2), X, y, lam, key=jax.random.PRNGKey(5), n_iter=n_it)
    mu, prec = np.zeros(P), np.full(P, lam)
    for it in range(1, n_it + 1):
        eps = np.asarray(jax.random.normal(_draw_keys(5, it), (1, P), jnp.float64))[0]
        th = mu + eps / np.sqrt(prec)
        p = _sig(X @ th)
        g, hdiag = X.T @ (y - p), -((X**2) * (p * (1 - p))[:, None]).sum(0)
        prec = (1 - a) * prec + a * (lam - hdiag)
        mu = mu + a * (g - lam * mu) / prec
    np.testing.assert_allclose(np.asarray(tr.mean[-1]), mu, atol=1e-10)
    np.testing.assert_allclose(1 / np.asarray(tr.state.belief.s2), prec, rtol=1e-10)


S2 = 0.7
LIK = gaussian(S2)  # one likelihood object: the tests share compiled loops


def _linear(seed=0, N=25, P=3, s2=S2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, P))
    return X, X @ rng.normal(size=P) + np.sqrt(s2) * rng.normal(size=N), s2


def test_batch_blr_converges_to_the_exact_linear_gaussian_posterior():
    X, y, s2 = _linear()
    lam = 0.8
    Prec = X.T @ X / s2 + lam * np.eye(3)
    S = np.linalg.inv(Prec)
    m = S @ X.T @ y / s2
    lik = LIK
    tr = B.fit_batch_blr("blr-lin-hess-fc", B.linear_f, lik, X, y, lam, alpha=0.5, key=jax.random.PRNGKey(0), n_iter=80)
    assert tr.status == "max_steps"
    np.testing.assert_allclose(np.asarray(tr.state.belief.mu), m, atol=1e-12)
    np.testing.assert_allclose(np.asarray(tr.state.belief.Sigma), S, atol=1e-12)
    err = np.linalg.norm(np.asarray(tr.mean) - m, axis=1)
    assert err[1] > err[10] > err[40] > err[-1]  # many passes, not one step
    # alpha = 1 with the exact curvature: one Newton step on a quadratic lands on the posterior
    one = B.fit_batch_blr("blr-lin-hess-fc", B.linear_f, lik, X, y, lam, alpha=1.0, key=jax.random.PRNGKey(0), n_iter=1)
    np.testing.assert_allclose(np.asarray(one.state.belief.mu), m, atol=1e-12)
    # diagonal family: the exact mean and the mean-field precision lambda + diag(X^T X) / sigma^2
    d = B.fit_batch_blr("blr-lin-hess-diag", B.linear_f, lik, X, y, lam, alpha=0.5, key=jax.random.PRNGKey(0), n_iter=200)
    np.testing.assert_allclose(np.asarray(d.state.belief.mu), m, atol=1e-9)
    np.testing.assert_allclose(1 / np.asarray(d.state.belief.s2), np.diag(Prec), rtol=1e-12)
    # DLR of full rank reaches the same fixed point
    dl = B.fit_batch_blr("blr-lin-hess-dlr-3", B.linear_f, lik, X, y, lam, alpha=0.5, key=jax.random.PRNGKey(0), n_iter=80)
    np.testing.assert_allclose(np.asarray(dl.state.belief.mu), m, atol=1e-9)


def test_minibatches_and_resume():
    X, y, s2 = _linear(1)
    lik = LIK
    m, _ = B.linear_posterior(X, y, s2, 1.0)
    full = B.fit_batch_blr("blr-lin-hess-fc", B.linear_f, lik, X, y, 1.0, alpha=0.5, key=jax.random.PRNGKey(0), n_iter=30)
    assert np.linalg.norm(np.asarray(full.state.belief.mu) - m) < 1e-8
    mb = B.fit_batch_blr("blr-lin-hess-fc", B.linear_f, lik, X, y, 1.0, alpha=0.05, key=jax.random.PRNGKey(0), n_iter=300,
                         batch_size=6)
    assert mb.status == "max_steps" and np.linalg.norm(np.asarray(mb.state.belief.mu) - m) < 0.1
    # resume: 10 + 20 iterations are the same numbers as 30
    alg = B.batch_blr(make_method("blr-lin-hess-fc", alpha=1.0), B.linear_f, lik, 6)
    st = alg.init(jax.random.PRNGKey(2), None, X, y, 1.0, alpha=0.05)
    whole = core.run(alg, jax.random.PRNGKey(0), st, 30)
    part = core.resume(alg, core.run(alg, jax.random.PRNGKey(0), st, 10), 20)
    np.testing.assert_allclose(np.asarray(part.state.belief.mu), np.asarray(whole.state.belief.mu), atol=1e-14)


def test_implicit_equals_explicit_equals_bayes_in_the_linear_gaussian_model():
    X, y, s2 = _linear(2, N=10, P=2)
    lam = 1.3
    m, S = B.linear_posterior(X, y, s2, lam)
    lik, prior = gaussian(s2), B.lambda_prior("fc", 2, lam)
    imp = B.implicit_stream("bong-lin-hess-fc", B.linear_f, lik, X, y, prior, key=jax.random.PRNGKey(0))
    bong = belief_path(make_method("bong-lin-hess-fc"), B.linear_f, lik, X, y, prior, key=jax.random.PRNGKey(0))
    np.testing.assert_allclose(np.asarray(imp.mean), np.asarray(bong.mu), atol=1e-10)
    np.testing.assert_allclose(np.asarray(imp.state.belief.mu), m, atol=1e-10)
    np.testing.assert_allclose(np.asarray(imp.state.belief.Sigma), S, atol=1e-10)
    assert np.all(np.asarray(imp.info["change"]) <= 1e-12)


def _one_logistic(v, damping=0.5, max_inner=2000):
    x, y = np.array([1.5, -1.0]), 1
    prior = FC(jnp.array([0.2, 0.4]), v * jnp.eye(2))
    m = make_method("bong-lin-hess-fc")
    lik = categorical(2)
    yenc = lik.encode(y)
    imp, n, ch = B.implicit_update(m, B.logistic_f, lik, prior, jnp.asarray(x), yenc, jax.random.PRNGKey(0),
                                   damping, 1e-13, max_inner)
    exp_ = B.update(m, B.logistic_f, lik, prior, jnp.asarray(x), yenc, jax.random.PRNGKey(0))
    return x, y, prior, imp, exp_, int(n), float(ch)


def test_implicit_and_explicit_differ_in_logistic_regression_and_the_gap_shrinks_with_a_tight_prior():
    gaps = []
    for v in (2.0, 0.5, 0.1, 0.02):
        x, y, prior, imp, exp_, n, ch = _one_logistic(v)
        assert ch <= 1e-13 and n < 2000
        # Eq. 77 with the linearised Hessian, written out: G = -x x^T s(1 - s), g = x (y - s) at mu_t
        s = _sig(x @ np.asarray(imp.mu))
        S0 = np.asarray(prior.Sigma)
        np.testing.assert_allclose(np.linalg.inv(np.asarray(imp.Sigma)),
                                   np.linalg.inv(S0) + np.outer(x, x) * s * (1 - s), atol=1e-11)
        np.testing.assert_allclose(np.asarray(imp.mu), np.asarray(prior.mu) + S0 @ x * (y - s), atol=1e-11)
        gaps.append(float(np.max(np.abs(np.asarray(imp.mu) - np.asarray(exp_.mu)))))
    assert gaps[0] > 1e-2
    assert all(a > 2 * b for a, b in zip(gaps[:-1], gaps[1:]))
    # the library's residual agrees
    r = B.implicit_residual(make_method("bong-lin-hess-fc"), B.logistic_f, categorical(2), prior, imp,
                            jnp.asarray(x), categorical(2).encode(y), jax.random.PRNGKey(0))
    assert max(r) < 1e-10


def test_one_undamped_iteration_is_bong_and_monte_carlo_fixed_points_hold():
    x, y, prior, imp, exp_, n, _ = _one_logistic(1.0, damping=1.0, max_inner=1)
    assert n == 1
    np.testing.assert_allclose(np.asarray(imp.mu), np.asarray(exp_.mu), atol=1e-13)
    np.testing.assert_allclose(np.asarray(imp.Sigma), np.asarray(exp_.Sigma), atol=1e-13)
    # mc-ef with fixed draws: a deterministic map, whose fixed point satisfies Eq. 77
    m = make_method("bong-mc-ef-fc", n_samples=20)
    lik = categorical(2)
    post, n, ch = B.implicit_update(m, B.logistic_f, lik, prior, jnp.asarray(x), lik.encode(y), jax.random.PRNGKey(7),
                                    0.5, 1e-13, 2000)
    assert float(ch) <= 1e-13
    assert max(B.implicit_residual(m, B.logistic_f, lik, prior, post, jnp.asarray(x), lik.encode(y),
                                   jax.random.PRNGKey(7))) < 1e-9


def test_demo_shapes_and_messages():
    d = B.batch_vs_online(KEY0, "logistic", T=12, lam=1.0, alpha=0.5, n_passes=25)
    assert d["batch"]["error"].shape == (26,) and d["bong"]["error"].shape == (13,) and d["gap"].shape == (12,)
    assert d["batch"]["error"][-1] < 1e-6 and d["gap_final"] > 1e-4
    np.testing.assert_allclose(d["batch"]["Sigma"], d["ref"][1], atol=1e-6)


@pytest.mark.parametrize("call, words", [
    (lambda: B.fit_batch_blr("blr-lin-hess-fc", B.linear_f, gaussian(1.0), np.ones((3, 2)), np.ones(3), 0.0,
                             alpha=0.5, key=jax.random.PRNGKey(0), n_iter=3), "prior precision lambda must be a positive"),
    (lambda: B.fit_batch_blr("blr-lin-hess-fc", B.linear_f, gaussian(1.0), np.ones((3, 2)), np.ones(3), -1,
                             alpha=0.5, key=jax.random.PRNGKey(0), n_iter=3), "positive"),
    (lambda: B.fit_batch_blr("blr-lin-hess-fc", B.linear_f, gaussian(1.0), np.ones((3, 2)), np.ones(3), 1.0,
                             alpha=0.5, key=jax.random.PRNGKey(0), n_iter=0), "number of iterations must be"),
    (lambda: B.fit_batch_blr("blr-lin-hess-fc", B.linear_f, gaussian(1.0), np.ones((3, 2)), np.ones(3), 1.0,
                             key=jax.random.PRNGKey(0), n_iter=3), "needs a learning rate"),
    (lambda: B.fit_batch_blr("bong-lin-hess-fc", B.linear_f, gaussian(1.0), np.ones((3, 2)), np.ones(3), 1.0,
                             alpha=1.0, key=jax.random.PRNGKey(0), n_iter=3), "uses the BLR update"),
    (lambda: B.batch_blr(make_method("bong-lin-hess-fc"), B.linear_f, gaussian(1.0)), "uses the BLR update"),
    (lambda: B.fit_batch_blr("blr-lin-hess-fc", B.linear_f, gaussian(1.0), np.ones((3, 2)), np.ones(3), 1.0,
                             alpha=0.5, key=jax.random.PRNGKey(0), n_iter=3, batch_size=5), "cannot exceed"),
    (lambda: B.fit_batch_blr("blr-lin-hess-fc", B.linear_f, gaussian(1.0), np.ones((3, 2)), np.ones(4), 1.0,
                             alpha=0.5, key=jax.random.PRNGKey(0), n_iter=3), "same number of examples"),
    (lambda: B.implicit_stream("bong-lin-hess-fc", B.linear_f, gaussian(1.0), np.ones((3, 2)), np.ones(3),
                               B.lambda_prior("fc", 2, 1.0), key=jax.random.PRNGKey(0), damping=1.5), "damping beta must lie"),
    (lambda: B.implicit_stream("bong-lin-hess-fc", B.linear_f, gaussian(1.0), np.ones((3, 2)), np.ones(3),
                               B.lambda_prior("fc", 2, 1.0), key=jax.random.PRNGKey(0), max_inner=0), "fixed-point iterations"),
    (lambda: B.fit_batch_blr("blr-lin-hess-fc", lambda x, th: jnp.atleast_1d(x @ th.reshape(2, 2)[0]), gaussian(1.0),
                             np.ones((3, 2)), np.ones(3), 1.0, alpha=0.5, key=jax.random.PRNGKey(0), n_iter=3),
     "give the start belief"),
    (lambda: B.batch_vs_online(KEY0, "probit"), "Unknown model"),
    (lambda: B.batch_vs_online(0, "logistic"), "batch_vs_online needs a jax.random key"),
    (lambda: B.batch_vs_online(KEY0, "logistic", n_passes=0), "number of passes"),
    (lambda: B.batch_vs_online(KEY0, "logistic", alpha=2.0), "must lie in (0, 1]"),
    (lambda: B.runtime_vs_size([], [2], key=KEY0), "at least one method"),
    (lambda: B.runtime_vs_size(["bong-lin-hess-fc"], [0], key=KEY0), "hidden width"),
])
def test_bad_input_is_a_readable_value_error(call, words):
    with pytest.raises(ValueError, match=None) as e:
        call()
    assert words in str(e.value)


def test_runtime_vs_size_returns_finite_positive_times():
    names = ["bong-lin-hess-diag"]
    r = B.runtime_vs_size(names, [1, 2], key=KEY0, n_repeats=2)
    assert list(r["P"]) == [13, 25] and r["methods"] == names
    for n in names:
        assert r["seconds"][n].shape == (2,) and np.all(np.isfinite(r["seconds"][n])) and np.all(r["seconds"][n] > 0)
    assert r["order"] == {"bong-lin-hess-diag": 1} and B.complexity_order("blr-lin-hess-fc") == 3
    assert B.complexity_order("bong-mc-ef-fc") == 2 and B.complexity_order("bong-mc-ef-dlr-10") == 1
    assert isinstance(r["device"], str) and r["device"]
    assert B.complexity_order("bbb-lin-hess-diag") == 1 and B.complexity_order("bog-lin-hess-fc_mom") == 2
