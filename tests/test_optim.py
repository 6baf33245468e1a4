"""Tests of vilab.algorithms.optim (Tan (2025) Table 5, Supp. S5) and vilab.targets.regression."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vilab  # noqa: F401  (x64)
from vilab import core
from vilab.algorithms import optim
from vilab.algorithms.optim import Layout, VOGNInput
from vilab.plots import optim as oplots
from vilab.targets import regression as R

# ------------------------------------------------------------------ SNNGM


def test_snngm_hand_computed_two_steps():
    alpha0 = 0.01
    tx = optim.snngm(alpha0, beta=0.9)
    p = jnp.zeros(2)
    s = tx.init(p)
    u1, s = tx.update(jnp.array([3.0, 4.0]), s, p)  # loss gradient (3, 4): unit (0.6, 0.8)
    alpha = alpha0 * math.sqrt(2)
    np.testing.assert_allclose(u1, -alpha * np.array([0.6, 0.8]), rtol=1e-14)
    u2, s = tx.update(jnp.array([0.0, -2.0]), s, p)
    m2 = 0.9 * 0.1 * np.array([0.6, 0.8]) + 0.1 * np.array([0.0, -1.0])
    np.testing.assert_allclose(u2, -alpha * m2 / (1 - 0.9**2), rtol=1e-14)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False), min_size=5, max_size=5),
        min_size=1,
        max_size=25,
    ),
    st.floats(0.0, 0.99),
    st.floats(1e-4, 10.0),
)
def test_snngm_every_step_at_most_alpha(grads, beta, alpha0):
    tx = optim.snngm(alpha0, beta=beta)
    p = jnp.zeros(5)
    s = tx.init(p)
    alpha = alpha0 * math.sqrt(5)
    for g in grads:
        u, s = tx.update(jnp.asarray(g), s, p)
        assert np.all(np.isfinite(u))
        assert float(jnp.linalg.norm(u)) <= alpha * (1 + 1e-12)


def test_snngm_parallel_gradients_give_exactly_alpha():
    tx = optim.snngm(0.1, beta=0.9)
    p = jnp.zeros(3)
    s = tx.init(p)
    for k in range(5):
        u, s = tx.update(jnp.array([1.0, 2.0, 2.0]) * (k + 1), s, p)
        np.testing.assert_allclose(float(jnp.linalg.norm(u)), 0.1 * math.sqrt(3), rtol=1e-12)


# ------------------------------------------------------------------ NAGM


def test_nagm_hand_computed_step_dense_factor():
    lay = Layout(1, "chol_cov", False)
    tx = optim.nagm(0.2, beta=0.9, layout=lay)
    p = jnp.array([0.5, 2.0])  # mu, c
    s = tx.init(p)
    g = np.array([1.0, 3.0])  # Euclidean ELBO gradient
    u, s = tx.update(-jnp.asarray(g), s, p)
    m = 0.1 * g
    nat = np.array([2.0**2 * m[0], 2.0 * 0.5 * (2.0 * m[1])])  # (Sigma m_mu, C bb(C^T m_C))
    np.testing.assert_allclose(u, [0.2 * nat[0], 0.2 / 100 * nat[1]], rtol=1e-14)


def test_nagm_diagonal_ratio_and_clipping():
    lay = Layout(2, "chol_cov", True)
    tx = optim.nagm(1.0, beta=0.0, clip=1.0, layout=lay)
    p = jnp.array([0.0, 0.0, 1.0, 1.0])
    s = tx.init(p)
    g = np.array([0.0, 0.0, 3.0, 4.0])  # norm 5 -> clipped to 1
    u, _ = tx.update(-jnp.asarray(g), s, p)
    gc = g / 5.0
    np.testing.assert_allclose(u, [0.0, 0.0, 0.1 * 0.5 * gc[2], 0.1 * 0.5 * gc[3]], rtol=1e-14)


# ------------------------------------------------------------------ Adam / NAdam


def test_adam_is_optax_adam_with_tan_defaults_and_first_step():
    tx = optim.adam()
    p = jnp.zeros(3)
    s = tx.init(p)
    g = jnp.array([2.0, -0.5, 1e-3])
    u, _ = tx.update(g, s, p)
    np.testing.assert_allclose(u, -1e-3 * g / (jnp.abs(g) + 1e-8), rtol=1e-12)
    u2, _ = optim.adam_natural().update(g, optim.adam_natural().init(p), p)
    np.testing.assert_allclose(u, u2)


# ------------------------------------------------------------------ PGA


def test_pga_hand_computed_step_C():
    lay = Layout(1, "chol_cov", False)
    a = 0.01
    tx = optim.pga(a, layout=lay)
    p = jnp.array([0.0, 0.5])
    s = tx.init(p)
    gs = np.array([1.0, 2.0])  # gradient of E_q[log p]
    u, _ = tx.update(-jnp.asarray(gs), s, p)
    m = 0.1 * gs
    v = 0.001 * gs**2
    gam = a / (np.sqrt(v) + 1e-8)
    new = np.array([0.0, 0.5]) + gam * m
    c = new[1]
    new[1] = 0.5 * (c + np.sqrt(c**2 + 4 * gam[1]))
    np.testing.assert_allclose(np.asarray(p + u), new, rtol=1e-13)


def test_pga_prox_T_moves_towards_zero_or_keeps():
    lay = Layout(2, "chol_prec", True)
    a = 0.01
    tx = optim.pga(a, layout=lay)
    p = jnp.array([0.0, 0.0, 3.0, 0.05])
    s = tx.init(p)
    gs = np.array([0.0, 0.0, 1.0, 1.0])
    u, _ = tx.update(-jnp.asarray(gs), s, p)
    gam = a / (np.sqrt(0.001) + 1e-8)
    t1 = 3.0 + gam * 0.1
    t2 = 0.05 + gam * 0.1  # t2^2 < 4 gamma: kept
    assert t2**2 <= 4 * gam
    np.testing.assert_allclose(np.asarray(p + u)[2:], [0.5 * (t1 + np.sqrt(t1**2 - 4 * gam)), t2], rtol=1e-13)


def test_pga_prox_minimises_its_objective():
    # prox_C(c') = argmin -log|c| + (c - c')^2 / (2 gamma): check against a grid
    lay = Layout(1, "chol_cov", True)
    for cprime, gam in [(0.3, 0.02), (-0.7, 0.5), (1e-3, 1e-2)]:
        tx = optim.pga(1.0, b1=0.0, b2=0.0, eps=0.0, layout=lay)
        # with b1 = b2 = 0, m = g, v = g^2, gamma = 1/|g|, step = sign(g): choose g so that gamma = gam
        g = 1.0 / gam
        p = jnp.array([0.0, cprime - 1.0])  # c' = p + gamma * m = p + 1
        u, _ = tx.update(-jnp.array([0.0, g]), tx.init(p), p)
        c = float((p + u)[1])
        grid = np.linspace(-3, 3, 600001)
        grid = grid[grid != 0]
        obj = -np.log(np.abs(grid)) + (grid - cprime) ** 2 / (2 * gam)
        assert abs(c - grid[np.argmin(obj)]) < 2e-5


# ------------------------------------------------------------------ VOGN


def test_vogn_hand_computed_step():
    lay = Layout(1, "chol_prec", False)
    tx = optim.vogn(0.1, layout=lay)
    p = jnp.array([0.0, 2.0])
    s = tx.init(p)
    u, s = tx.update(VOGNInput(jnp.array([-1.0]), jnp.array([[10.0]])), s, p)
    S = 0.999 * 4.0 + 0.001 * 10.0
    np.testing.assert_allclose(np.asarray(p + u), [0.1 * 1.0 / S, math.sqrt(S)], rtol=1e-13)


def test_vogn_dense_step_uses_cholesky_of_updated_precision():
    lay = Layout(2, "chol_prec", False)
    tx = optim.vogn(0.5, layout=lay)
    T = jnp.array([[2.0, 0.0], [0.5, 1.0]])
    p = lay.pack(jnp.array([0.1, -0.2]), T)
    s = tx.init(p)
    gn = jnp.array([[3.0, 1.0], [1.0, 2.0]])
    g = jnp.array([0.3, -0.4])  # ascent gradient of log p
    u, s = tx.update(VOGNInput(-g, gn), s, p)
    S = 0.999 * (T @ T.T) + 0.001 * gn
    mu_new = np.array([0.1, -0.2]) + 0.5 * np.linalg.solve(S, np.asarray(g))
    mu, Tn = lay.unpack(p + u)
    np.testing.assert_allclose(mu, mu_new, rtol=1e-12)
    np.testing.assert_allclose(Tn @ Tn.T, S, rtol=1e-12)


# ------------------------------------------------------------------ natural gradients vs brute-force Fisher


def _fisher(layout, lam):
    """Fisher of lambda by autodiff: J_mu^T P J_mu + 1/2 tr(P dSigma_a P dSigma_b)."""
    d = layout.d
    Sig = layout.covariance(lam)
    P = jnp.linalg.inv(Sig)
    Jm = jax.jacfwd(lambda l: l[:d])(lam)
    JS = jax.jacfwd(layout.covariance)(lam)  # (d, d, l)
    A = jnp.einsum("ij,jka->ika", P, JS)
    return Jm.T @ P @ Jm + 0.5 * jnp.einsum("ija,jib->ab", A, A)


@pytest.mark.parametrize("param", ["chol_cov", "chol_prec", "kappa"])
@pytest.mark.parametrize("diagonal", [False, True])
@pytest.mark.parametrize("d", [1, 3])
def test_layout_natural_equals_fisher_solve(param, diagonal, d):
    rng = np.random.default_rng(d + 7 * diagonal)
    lay = Layout(d, param, diagonal)
    A = np.tril(rng.normal(size=(d, d)))
    A[np.diag_indices(d)] = np.abs(A[np.diag_indices(d)]) + 0.5
    if diagonal:
        A = np.diag(np.diag(A))
    F = A @ A.T if param == "kappa" else A
    lam = lay.pack(jnp.asarray(rng.normal(size=d)), jnp.asarray(F))
    g = jnp.asarray(rng.normal(size=lay.size))
    nat = lay.natural(lam, g)
    brute = jnp.linalg.solve(_fisher(lay, lam), g)
    np.testing.assert_allclose(nat, brute, rtol=1e-8, atol=1e-10)


# ------------------------------------------------------------------ estimators


def _small_poisson(n=60, d=3, seed=3):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.uniform(size=(n, d - 1))])
    y = rng.poisson(np.exp(X @ np.linspace(-0.5, 0.5, d))).astype(float)
    from scipy.special import gammaln

    return R.GLMModel("small poisson", X, y, "poisson", 10.0, float(gammaln(y + 1).sum()))


@pytest.mark.parametrize("param", ["chol_cov", "chol_prec", "kappa"])
@pytest.mark.parametrize("diagonal", [False, True])
@pytest.mark.parametrize("order", ["first", "second"])
def test_thm2_estimators_are_unbiased(param, diagonal, order):
    """Mean of the single-sample estimators = exact gradient of the tractable ELBO (Tan Thm 2)."""
    m = _small_poisson()
    d = m.d
    lay = Layout(d, param, diagonal)
    rng = np.random.default_rng(0)
    A = np.tril(rng.normal(size=(d, d)) * 0.1)
    A[np.diag_indices(d)] = [0.3, 0.25, 0.2]
    if diagonal:
        A = np.diag(np.diag(A))
    if param == "chol_prec":
        A = np.linalg.cholesky(np.linalg.inv(A @ A.T)) if not diagonal else np.diag(1 / np.diag(A))
    F = A @ A.T if param == "kappa" else A
    lam = lay.pack(jnp.array([0.1, -0.2, 0.3]), jnp.asarray(F))
    X, y = jnp.asarray(m.X), jnp.asarray(m.y)
    for feed, fn in [
        ("euclidean", lambda l: m.expected_log_joint(l[:d], lay.variance_vector(l)) + lay.entropy(l)),
        ("smooth", lambda l: m.expected_log_joint(l[:d], lay.variance_vector(l))),
    ]:
        if feed == "smooth" and param == "kappa":
            continue
        exact = np.asarray(jax.grad(fn)(lam))
        est = optim._make_estimator(m, lay, order, feed)
        keys = jax.random.split(jax.random.PRNGKey(1), 40000)
        vals, gs = jax.jit(jax.vmap(lambda k: est(lam, X, y, 1.0, k)))(keys)
        gs = -np.asarray(gs)
        mean, se = gs.mean(0), gs.std(0) / math.sqrt(len(keys))
        assert np.all(np.abs(mean - exact) <= 5 * se + 1e-9 * (1 + np.abs(exact))), (feed, mean, exact, se)
        if feed == "euclidean":  # the ELBO estimate h(theta) is unbiased too
            L = float(m.exact_elbo(lam[:d], lay.variance_vector(lam)))
            v = np.asarray(vals)
            assert abs(v.mean() - L) <= 5 * v.std() / math.sqrt(len(v)) + 1e-9


@pytest.mark.parametrize("family", ["bernoulli", "poisson"])
def test_grad_hess_and_per_example_grads_match_autodiff(family):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    y = (rng.uniform(size=40) < 0.5).astype(float) if family == "bernoulli" else rng.poisson(1.0, 40).astype(float)
    m = R.GLMModel("t", X, y, family, 4.0)
    th = jnp.array([0.2, -0.3, 0.1])
    g, H = m.grad_hess(th, scale=1.0)
    np.testing.assert_allclose(g, jax.grad(m.log_joint)(th), rtol=1e-10)
    np.testing.assert_allclose(H, jax.hessian(m.log_joint)(th), rtol=1e-10)
    _, h = m.grad_hess(th, diagonal=True)
    np.testing.assert_allclose(h, np.diag(H), rtol=1e-12)
    J = m.per_example_grads(th)
    per = jax.vmap(lambda xi, yi: jax.grad(lambda t: m.loglik_terms(xi @ t, yi))(th))(jnp.asarray(X), jnp.asarray(y))
    np.testing.assert_allclose(J, per, rtol=1e-10)


def test_exact_elbo_matches_monte_carlo():
    m = _small_poisson()
    mu = jnp.array([0.1, -0.2, 0.3])
    S = jnp.array([[0.05, 0.01, 0.0], [0.01, 0.04, 0.0], [0.0, 0.0, 0.03]])
    lay = Layout(3, "kappa", False)
    v, se = optim._mc_elbo(m, lay, lay.pack(mu, S), jax.random.PRNGKey(0), 200000)
    assert abs(v - float(m.exact_elbo(mu, S))) < 5 * se


def test_crab_exact_optimum():
    """Tan (2025) Sec. 4.1: optimum (1.070256, 0.0019802), L* = -499.4653."""
    m = R.crab_intercept()
    mu, S, L = R.loglinear_optimum(m)
    assert abs(mu[0] - 1.070256) < 1e-6 and abs(S[0, 0] - 0.0019802) < 1e-7
    assert abs(L - (-499.4653)) < 1e-4


# ------------------------------------------------------------------ driver


def test_driver_minibatch_trace_shapes_and_elbo_increases():
    m = R.pima()
    tr = optim.run(m, "snngm", key=jax.random.PRNGKey(1), alpha=0.01, diagonal=True, estimator="first", n_epochs=30,
                   batch_size=133)
    e = tr.extra
    assert tr.status == "max_steps"
    assert e["iters_per_epoch"] == 4 and e["iterations"] == 120 and tr.n_steps == 120
    assert e["elbo_epoch"].shape == (30,)
    assert tr.mean.shape == (121, 8) and tr.iterations.tolist() == list(range(121))  # every iterate (l = 16)
    assert tr.mean.shape[0] == tr.var.shape[0] == tr.objective.shape[0]
    assert tr.cov is None and np.all(tr.var > 0)  # a diagonal family records variances
    assert tr.info["elbo"].shape == tr.info["step_norm"].shape == (120,)
    assert np.all(tr.step_sizes == 0.01)
    assert e["elbo_epoch"][-1] > e["elbo_epoch"][0]
    assert e["wall_time"] > 0 and np.isfinite(e["final_elbo"])


@pytest.mark.parametrize("name", list(optim.OPTIMIZERS))
def test_every_optimizer_improves_pima_elbo(name):
    m = R.pima()
    alpha = {"snngm": 0.01, "nagm": 0.2, "vogn": 0.05, "pga": 0.01, "adam": 0.01, "adam-natural": 0.01}[name]
    tr = optim.run(m, name, key=jax.random.PRNGKey(0), alpha=alpha, estimator="second", n_iter=400)
    start = optim.final_elbo(m, tr.extra["layout"], tr.extra["layout"].pack(jnp.zeros(8), np.eye(8) * (
        math.sqrt(m.n) if tr.extra["layout"].param == "chol_prec" else 1 / math.sqrt(m.n))), jax.random.PRNGKey(0))[0]
    assert not tr.diverged
    assert tr.extra["final_elbo"] > start + 50


def test_fig3_adam_natural_diverges_with_status_not_nan():
    m = R.crab_intercept()
    tr = optim.run(m, "adam-natural", key=jax.random.PRNGKey(0), param="kappa", estimator="exact", n_iter=1000,
                   mu0=[2.0], factor0=[[0.01]], tol=1e-7)
    assert tr.status == "diverged: negative sigma^2"
    assert tr.extra["failed_at"] == 14 and tr.n_steps == 13
    assert np.all(np.isfinite(tr.mean)) and np.all(tr.cov[:, 0, 0] > 0)


def test_stop_and_progress_callbacks():
    m = R.crab_intercept()
    seen = []
    tr = optim.run(m, "adam", key=jax.random.PRNGKey(0), param="kappa", n_iter=5000, mu0=[0.0], factor0=[[0.1]],
                   chunk_iters=100, progress=seen.append, should_stop=lambda: len(seen) >= 3)
    assert tr.status == "stopped" and tr.n_steps == 300
    assert seen[-1] == 1.0


def test_tau_weights_fig4():
    w = optim.tau_weights(10000, 0.9)
    assert int(np.sum(w <= 0.99)) == 43
    assert np.all(np.diff(w) <= 0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(optimizer="bogus", n_iter=5), "Unknown optimizer"),
        (dict(optimizer="snngm", alpha=-1.0, n_iter=5), "positive"),
        (dict(optimizer="snngm", alpha=0.0, n_iter=5), "positive"),
        (dict(optimizer="adam", n_iter=5, n_epochs=5), "exactly one"),
        (dict(optimizer="adam", n_iter=5, batch_size=0), "minibatch"),
        (dict(optimizer="adam", n_iter=5, estimator="exact"), "no closed form"),
        (dict(optimizer="adam", n_iter=5, factor0=np.ones((8, 8))), "lower triangular"),
        (dict(optimizer="pga", n_iter=5, param="kappa"), "Cholesky"),
        (dict(optimizer="adam", n_iter=5, tol=1e-7), "stopping rule"),
    ],
)
def test_bad_input_raises_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        optim.run(R.pima(), key=jax.random.PRNGKey(0), **kwargs)


def test_datasets_load_from_packages():
    bc, pm = R.breast_cancer(), R.pima()
    assert (bc.n, bc.d) == (569, 31) and (pm.n, pm.d) == (532, 8)
    assert set(np.unique(bc.y)) == {0.0, 1.0} and set(np.unique(pm.y)) == {0.0, 1.0}
    np.testing.assert_allclose(bc.X[:, 1:].mean(0), 0, atol=1e-12)
    with pytest.raises(ValueError):
        R.GLMModel("bad", np.ones((3, 2)), np.ones(2), "bernoulli")


# ------------------------------------------------------------------ independent numpy implementation


def _numpy_reference():
    """benchmarks/bench_optim.py's NumpyStep: the same updates written step by step in numpy."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_optim.py"
    spec = importlib.util.spec_from_file_location("bench_optim", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.NumpyStep


@pytest.mark.parametrize("name", list(optim.OPTIMIZERS))
def test_optax_steps_equal_the_numpy_reference(name):
    """Full-batch exact gradients (Poisson, Tan Supp. S2): 6 steps of vilab.algorithms.optim == 6 numpy steps."""
    NumpyStep = _numpy_reference()
    m = _small_poisson(n=200)
    alpha = {"adam": 0.01, "adam-natural": 0.01, "snngm": 0.01, "nagm": 0.2, "pga": 0.01, "vogn": 0.1}[name]
    param = "chol_prec" if name == "vogn" else "chol_cov"
    tr = optim.run(m, name, key=jax.random.PRNGKey(0), alpha=alpha, param=param, estimator="exact", n_iter=6,
                   n_elbo_draws=10)
    ref = NumpyStep(m, name, alpha, param, m.n, exact=True)
    for _ in range(6):
        ref.step()
    lam_np = np.concatenate([ref.mu, ref.F.T[np.triu_indices(m.d)]])
    start = np.concatenate([np.zeros(m.d), (np.eye(m.d) * (math.sqrt(m.n) if param == "chol_prec" else
                                                           1 / math.sqrt(m.n))).T[np.triu_indices(m.d)]])
    assert np.linalg.norm(lam_np - start) > 1e-3  # the runs moved
    np.testing.assert_allclose(tr.extra["lam"], lam_np, rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------ Table-8-style comparison


def test_comparison_specs_follow_table8_rows():
    specs = oplots.comparison_specs(list(optim.OPTIMIZERS), ("first", "second"), ("diagonal", "full"))
    diag = [(o, e) for o, e, d in specs if d]
    assert diag == [("adam", "first"), ("pga", "first"), ("adam-natural", "first"), ("snngm", "first"),
                    ("nagm", "first"), ("adam", "second"), ("pga", "second"), ("adam-natural", "second"),
                    ("snngm", "second"), ("nagm", "second"), ("vogn", None)]
    assert len(specs) == 22
    assert oplots.comparison_specs(["vogn", "snngm"], ["second"], ["full"]) == [("snngm", "second", False),
                                                                              ("vogn", None, False)]
    for bad in [dict(optimizers=["sgd"]), dict(optimizers=["adam"], estimators=["third"]),
                dict(optimizers=["adam"], covariances=["banded"]), dict(optimizers=[])]:
        with pytest.raises(ValueError):
            oplots.comparison_specs(**bad)


def test_table8_layout_from_real_runs():
    m = R.pima()
    res = {}
    for name, est, diag in oplots.comparison_specs(["snngm"], ["first"], ["diagonal", "full"]):
        tr = optim.run(m, name, key=jax.random.PRNGKey(0), alpha=0.01, diagonal=diag, estimator=est, n_epochs=20,
                       batch_size=133, n_elbo_draws=50)
        res[(name, est, diag)] = oplots.comparison_summary(tr)
    res[("vogn", None, True)] = dict(res[("snngm", "first", True)], status="stopped")
    res[("adam", "second", True)] = dict(res[("snngm", "first", True)], status="diverged: non-finite values")
    df = oplots.table8(res)
    assert list(df.columns) == ["optimizer", "diagonal", "full"]
    assert list(df["optimizer"]) == ["SNNGM 1", "VOGN", "Adam 2"]
    s = res[("snngm", "first", False)]
    assert df.loc[0, "full"] == f"{s['final']:.1f} ({s['time']:.2f})"
    assert df.loc[1, "diagonal"].endswith("stopped") and df.loc[1, "full"] == ""
    assert df.loc[2, "diagonal"] == "diverged"
    assert s["elbo_epoch"].shape == (20,) and s["iterations"] == 80 and s["status"] == "max_steps"


# ------------------------------------------------------------------ the Algorithm, the runner, resume


def _python_loop(alg, key, state, n, switch=None):
    """A plain Python loop over alg.step with the runner's key stream (key, sub = split(key))."""
    means = [np.asarray(state.lam)]
    for t in range(n):
        if switch is not None and t == switch[0]:
            state = core.set_hyper(state, alpha=switch[1])
        key, sub = jax.random.split(key)
        state, _ = alg.step(sub, state, None)
        means.append(np.asarray(state.lam))
    return np.asarray(means), state


@pytest.mark.parametrize("name, estimator", [("snngm", "exact"), ("adam", "first"), ("nagm", "second")])
def test_resume_with_a_new_alpha_equals_a_run_that_switched(name, estimator):
    """50 steps, alpha changed through core.resume, 50 more == one loop whose alpha switched at step 50.

    The reference applies the same steps op by op (not in the compiled loop); both are the same
    arithmetic, so they agree to rounding (rtol 1e-9 leaves room for XLA's reordering of sums over
    100 steps; a wrong alpha or a repeated key moves lambda by 1e-3 or more)."""
    m = _small_poisson()
    alg = optim.algorithm(m, name, estimator=estimator)
    key = jax.random.PRNGKey(4)
    a0, a1 = {"snngm": (0.01, 0.002), "adam": (0.01, 0.03), "nagm": (0.2, 0.05)}[name]
    s0 = alg.init(jax.random.PRNGKey(5), alpha=a0)
    first = core.run(alg, key, s0, 50)
    both = core.resume(alg, first, 50, hyper={"alpha": a1})
    ref, _ = _python_loop(alg, key, s0, 100, switch=(50, a1))
    assert both.n_steps == 100 and both.iterations.tolist() == list(range(101))
    np.testing.assert_allclose(np.asarray(both.state.lam), ref[-1], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(both.mean, ref[:, :3], rtol=1e-9, atol=1e-12)
    assert np.all(both.step_sizes[:50] == a0) and np.all(both.step_sizes[50:] == a1)
    unswitched, _ = _python_loop(alg, key, s0, 100)
    assert np.max(np.abs(unswitched[-1] - ref[-1])) > 1e-4  # the switch matters


def test_run_is_the_algorithm_on_the_runner():
    """optim.run = algorithm + core.run: the same iterates; step_sizes is alpha, info has ||dlambda||."""
    m = _small_poisson()
    tr = optim.run(m, "snngm", key=jax.random.PRNGKey(2), alpha=0.01, estimator="second", n_iter=30)
    alg = optim.algorithm(m, "snngm", estimator="second")
    assert alg is optim.algorithm(_small_poisson(), "snngm", estimator="second")  # memoized on the data
    k_init, k_run, _, _ = jax.random.split(jax.random.PRNGKey(2), 4)
    ref, _ = _python_loop(alg, k_run, alg.init(k_init, alpha=0.01), 30)
    np.testing.assert_allclose(tr.mean, ref[:, :3], rtol=1e-9, atol=1e-12)
    assert np.all(tr.step_sizes == 0.01)
    bound = 0.01 * math.sqrt(Layout(3).size)  # Tan Supp. S4.2: every SNNGM step is at most alpha long
    assert np.all(tr.info["step_norm"] <= bound * (1 + 1e-12)) and tr.info["step_norm"][0] == pytest.approx(bound)
    assert tr.extra["alpha_effective"] == pytest.approx(bound)


def test_statuses_use_the_core_vocabulary():
    m = R.crab_intercept()
    common = dict(key=jax.random.PRNGKey(0), param="kappa", estimator="exact", mu0=[0.0], factor0=[[0.1]])
    runs = [optim.run(m, "adam", n_iter=50, **common),
            optim.run(m, "snngm", n_iter=5000, tol=1e-7, **common),
            optim.run(m, "adam", n_iter=500, chunk_iters=100, should_stop=lambda: True, **common),
            optim.run(m, "adam", n_iter=500, chunk_iters=100, max_seconds=0.0, **common),
            optim.run(m, "adam-natural", n_iter=100, **dict(common, mu0=[2.0], factor0=[[0.01]]))]
    assert [t.status for t in runs] == ["max_steps", "converged", "stopped", "max_time", "diverged: negative sigma^2"]
    for t in runs:
        assert t.status in core.STATUSES or t.status.startswith("diverged: ")
        assert t.n_steps == t.extra["iterations"] == len(t.step_sizes)
    assert runs[2].n_steps == runs[3].n_steps == 100


def test_minibatch_rows_every_epoch_and_explicit_batches():
    """Rows every epoch (record="epoch"); the minibatch order can be given (reproductions keep theirs)."""
    m = _small_poisson(n=60)
    key = jax.random.PRNGKey(3)
    idx = optim.minibatch_indices(np.random.default_rng(0), 60, 20, 3 * 5 + 1)
    assert idx.shape == (16, 20) and sorted(idx[:3].ravel().tolist()) == list(range(60))  # one epoch: a permutation
    a = optim.run(m, "adam", key=key, estimator="exact", n_epochs=5, batch_size=20, batches=idx, record="epoch")
    b = optim.run(m, "adam", key=key, estimator="exact", n_epochs=5, batch_size=20, batches=idx, record="iteration")
    assert a.iterations.tolist() == [0, 3, 6, 9, 12, 15]
    np.testing.assert_array_equal(a.mean, b.mean[::3])
    assert a.extra["elbo_epoch"].shape == (5,)
    np.testing.assert_allclose(a.extra["elbo_epoch"], b.info["elbo"].reshape(5, 3).mean(1))
    with pytest.raises(ValueError, match="minibatch indices"):
        optim.run(m, "adam", key=key, estimator="exact", n_epochs=5, batch_size=20, batches=idx[:5])
