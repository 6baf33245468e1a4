"""Kumar et al. (2025) Sec. 6, App. H, App. F.1 and Sec. 3.6 (vilab.models.kumar_logistic): independent checks of the
non-convex mean term (autodiff), the convexity closed forms (Monte Carlo, autodiff), the fixed point shared by
VN, SR-VN and BW-GD (Eq. 22), the flop counts, and readable errors."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy.stats import norm

from vilab.core import as_key
from vilab.models import kumar_logistic as kl
from vilab.algorithms import oracle


def test_mean_regulariser_gradient_matches_autodiff():
    m = jnp.array([-2.0, -0.3, 0.0, 0.7, 3.0])
    assert float(kl.mean_regulariser(m)) == pytest.approx(float(np.sum(np.asarray(m) ** 2 / (1 + np.asarray(m) ** 2))))
    np.testing.assert_allclose(kl.mean_regulariser_grad(m), jax.grad(kl.mean_regulariser)(m), rtol=1e-13, atol=1e-15)
    # non-convex: negative curvature for |m_i| > 1/sqrt(3)
    h = jax.hessian(kl.mean_regulariser)(m)
    assert float(h[4, 4]) < 0 < float(h[2, 2])


@pytest.fixture(scope="module")
def pima():
    return kl.load("pima")


@pytest.fixture(scope="module")
def small(pima):
    """The first 60 training points of the Pima split (the same code path, faster runs)."""
    return dataclasses.replace(pima, X_train=pima.X_train[:60], y_train=pima.y_train[:60])


def test_split_and_labels(pima):
    assert pima.d == 8 and len(pima.y_train) == 426 and len(pima.y_test) == 106
    assert set(np.unique(pima.y_train)) == {-1.0, 1.0}
    assert pima.beta == 1e-2 and pima.steps == {"vn": 5e-3, "srvn": 5e-3, "bwgd": 9e-4}  # Table 2, Diabetes-scale
    np.testing.assert_allclose(pima.X_train[:, 0], 1.0)


def test_nonconvex_target_gradients_are_the_autodiff_of_its_elbo(small):
    """grad_mu and grad_Sigma the oracle reads equal autodiff of the ELBO the oracle reads (ELBO - r(m)), and
    the ELBO equals the convex one minus r(m). (60 nodes: the Gauss-Hermite ELBO and the Gauss-Hermite E[hess]
    agree through Price's theorem only up to the quadrature error.)"""
    base, nc = kl.target(small, False, 60), kl.target(small, True, 60)
    rng = np.random.default_rng(3)
    mu = jnp.asarray(rng.normal(size=8) * 0.5)
    B = rng.normal(size=(8, 8)) * 0.1
    Sigma = jnp.asarray(B @ B.T + 0.05 * np.eye(8))
    elbo = lambda m, S: oracle.elbo_exact(nc, m, S, jnp.linalg.slogdet(S)[1], 60)  # noqa: E731
    elbo0 = lambda m, S: oracle.elbo_exact(base, m, S, jnp.linalg.slogdet(S)[1], 60)  # noqa: E731
    assert float(elbo(mu, Sigma)) == pytest.approx(float(elbo0(mu, Sigma) - kl.mean_regulariser(mu)), abs=1e-10)
    g_mu, g_S = oracle.exact_elbo_grads(nc, mu, Sigma, 60)
    a_mu = jax.grad(elbo, argnums=0)(mu, Sigma)
    a_S = jax.grad(elbo, argnums=1)(mu, Sigma)
    np.testing.assert_allclose(g_mu, a_mu, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(g_S, 0.5 * (a_S + a_S.T), rtol=1e-6, atol=1e-6)
    g0_mu, g0_S = oracle.exact_elbo_grads(base, mu, Sigma, 60)
    np.testing.assert_allclose(g0_mu - g_mu, kl.mean_regulariser_grad(mu), atol=1e-12)
    np.testing.assert_allclose(g0_S, g_S, atol=1e-12)


def test_three_methods_reach_one_fixed_point(small, pima):
    """VN, SR-VN, BW-GD with the non-convex mean term (App. H) from one random start: the same negative ELBO,
    mean and covariance, where Eq. 22 holds (the mean gradient includes grad r(m)); the test NLL is a sum over
    the 106 test points. (Larger steps than Table 2's and 60 training points: a fast run of the same code.)"""
    runs = kl.fig2_runs(small, 1000, nonconvex=True, n_starts=1, record_every=250, c0=0.3,
                        steps={"vn": 0.2, "srvn": 0.2, "bwgd": 1e-2}, key=as_key(0))
    finals = np.concatenate([r["neg_elbo"][:, -1] for r in runs.values()])
    assert np.ptp(finals) < 1e-6, finals
    means = np.concatenate([r["final_mean"] for r in runs.values()])
    covs = np.concatenate([r["final_cov"] for r in runs.values()])
    assert np.max(np.abs(means - means[0])) < 1e-4 and np.max(np.abs(covs - covs[0])) < 1e-4
    tgt = kl.target(small, True)
    for name in kl.METHODS:
        res = kl.fixed_point_residuals(tgt, runs[name]["final_mean"][0], runs[name]["final_cov"][0])
        assert res["grad"] < 1e-5 and res["prec"] < 1e-5, (name, res)
    assert not np.allclose(means[0], 0.0)  # the regulariser is active (its gradient is not zero there)
    nll = runs["vn"]["test_nll"][0, -1]
    assert nll == pytest.approx(kl.test_nll(pima.X_test, pima.y_test, runs["vn"]["final_mean"][0]))
    assert 30 < nll < 100  # a sum over 106 points (a mean would be below 1)
    assert all(s == "max_steps" for r in runs.values() for s in r["status"])


def test_breast_cancer_analogue_and_its_settings():
    bc = kl.load("breast-cancer")
    assert bc.d == 31 and len(bc.y_train) == 455 and len(bc.y_test) == 114
    assert bc.beta == 0.1 and bc.steps == {"vn": 9e-3, "srvn": 6e-3, "bwgd": 6.3e-3}  # Table 2, breast-cancer


def test_excess_curves_subtract_the_best_over_everything():
    runs = {"vn": {"iterations": np.array([0, 1]), "neg_elbo": np.array([[3.0, 1.0], [4.0, 2.0]])},
            "bwgd": {"iterations": np.array([0, 1]), "neg_elbo": np.array([[5.0, np.nan], [6.0, 1.5]])}}
    curves, best = kl.excess_curves(runs)
    assert best == 1.0
    it, mean, lo, hi = curves["vn"]
    np.testing.assert_allclose(mean, [2.5, 0.5]) and np.testing.assert_allclose(lo, [2.0, 0.0])
    np.testing.assert_allclose(curves["bwgd"][1], [4.5, 0.5])  # a NaN (diverged) row is left out


def test_flop_counts():
    f = kl.flops([1, 10])
    np.testing.assert_allclose(f["vn"], [5, 1400])
    np.testing.assert_allclose(f["srvn"], [8, 3455])
    np.testing.assert_allclose(f["bwgd"], [8, 3500])


def test_time_per_step_returns_positive_numbers():  # no timed assertion: only that it measures something
    t = kl.time_per_step([4], seconds_each=0.01, key=as_key(0))
    assert list(t["d"]) == [4] and all(np.all(t[m] > 0) for m in kl.METHODS)


def test_abs_loss_closed_form_against_monte_carlo():
    z = np.random.default_rng(0).standard_normal(400_000)
    for m, s in ((0.0, 1.0), (0.7, 0.5), (-1.5, 2.0)):
        mc = np.abs(m + s * z).mean()
        assert kl.abs_loss(m, s) == pytest.approx(mc, abs=5 * s * np.abs(z).std() / np.sqrt(z.size))
    v = np.array([0.5, 2.0, 9.0])
    np.testing.assert_allclose(kl.abs_loss(0.0, np.sqrt(v)), np.sqrt(2 * v / np.pi), rtol=1e-14)


def _abs_L_jax(m, s, w):
    t = m / s
    return w * (2 * s * norm.pdf(t) + m * (1 - 2 * norm.cdf(-t))) - jnp.log(s)


@pytest.mark.parametrize("m,s,w", [(0.0, 1.0, 1.0), (0.4, 3.0, 1.0), (-1.2, 0.7, 5.0), (2.0, 2.5, 0.3)])
def test_abs_curvatures_against_autodiff(m, s, w):
    got = kl.abs_loss_curvatures(m, s, w)
    d2s = jax.grad(jax.grad(_abs_L_jax, argnums=1), argnums=1)(m, s, w)
    Lv = lambda m, v, w: _abs_L_jax(m, jnp.sqrt(v), w)  # noqa: E731
    d2v = jax.grad(jax.grad(Lv, argnums=1), argnums=1)(m, s**2, w)
    assert got["d2_s"] == pytest.approx(float(d2s), rel=1e-10)
    assert got["d2_v"] == pytest.approx(float(d2v), rel=1e-9, abs=1e-12)
    assert got["d2_s"] > 0


def test_concave_in_v_at_zero_mean():
    """At m = 0, w = 1: d2L/dv2 = -(1/4) sqrt(2/pi) v^-3/2 + 1/(2 v^2) < 0 exactly for v > 2 pi."""
    v = np.array([1.0, 2 * np.pi * 0.99, 2 * np.pi * 1.01, 20.0])
    c = kl.abs_loss_curvatures(0.0, np.sqrt(v))
    np.testing.assert_allclose(c["d2_v"], -0.25 * np.sqrt(2 / np.pi) * v**-1.5 + 0.5 / v**2, rtol=1e-12)
    assert list(c["d2_v"] < 0) == [False, False, True, True]


def test_logistic_curvatures_against_monte_carlo_and_differences():
    """E softplus(-theta) by quadrature against Monte Carlo; d2L/ds2 and d2L/dv2 against central differences
    of the quadrature values in s and in v."""
    z = np.random.default_rng(1).standard_normal(400_000)
    for m, s in ((0.0, 1.0), (1.0, 3.0)):
        c = kl.logistic_loss_curvatures(m, s)
        mc = np.logaddexp(0.0, -(m + s * z)).mean() - np.log(s)
        assert c["L"] == pytest.approx(mc, abs=0.01)
        h = 1e-3
        Ls = [kl.logistic_loss_curvatures(m, s + k * h)["L"] for k in (-1, 0, 1)]
        assert c["d2_s"] == pytest.approx((Ls[0] - 2 * Ls[1] + Ls[2]) / h**2, rel=1e-4)
        v = s**2
        Lv = [kl.logistic_loss_curvatures(m, np.sqrt(v + k * h))["L"] for k in (-1, 0, 1)]
        assert c["d2_v"] == pytest.approx((Lv[0] - 2 * Lv[1] + Lv[2]) / h**2, rel=1e-3, abs=1e-7)
    g = kl.convexity_grid("logistic", np.linspace(-3, 3, 13), np.linspace(0.1, 8.0, 30), weight=5.0)
    assert np.all(g["d2_s"] > 0) and np.any(g["d2_v"] < 0)


@pytest.mark.parametrize("call,match", [
    (lambda: kl.load("iris"), "Unknown data set"),
    (lambda: kl.load("pima", train_fraction=1.5), "strictly between 0 and 1"),
    (lambda: kl.load("pima", seed=-1), "seed"),
    (lambda: kl.fig2_runs(kl.load("pima"), 0), "number of iterations"),
    (lambda: kl.fig2_runs(kl.load("pima"), 10, step_scale=-1.0), "step-size multiplier"),
    (lambda: kl.fig2_runs(kl.load("pima"), 10, steps={"vn": 1e-3}), "No step size"),
    (lambda: kl.fig2_runs(kl.load("pima"), 10), "fig2_runs .* needs a jax.random key"),
    (lambda: kl.fig2_runs(kl.load("pima"), 10, key=0), "needs a jax.random key"),
    (lambda: kl.target("pima"), "needs the data"),
    (lambda: kl.flops([0, 3]), "at least 1"),
    (lambda: kl.convexity_grid("square"), "loss must be one of"),
    (lambda: kl.convexity_grid("abs", ss=[-1.0, 1.0]), "positive"),
    (lambda: kl.abs_loss_curvatures(0.0, 1.0, weight=0.0), "weight"),
    (lambda: kl.load("diabetes"), "Unknown data set"),
    (lambda: kl.libsvm_data("pima"), "Unknown LIBSVM data set"),
    (lambda: kl.libsvm_data(None), "Unknown LIBSVM data set"),
    (lambda: kl.table3_splits("breast-cancer"), "Unknown LIBSVM data set"),
    (lambda: kl.table3_comparison("pima"), "LIBSVM data sets only"),
    (lambda: kl.table3_splits("diabetes-scale", [-1]), "seed"),
    (lambda: kl.table3_splits("diabetes-scale", []), "at least one seed"),
    (lambda: kl.table3_splits("diabetes-scale", [0], n_points=1), "Gauss-Hermite"),
    (lambda: kl.svm_scale(np.ones(3)), "X"),
    (lambda: kl.table3_splits("diabetes-scale", [0], splitter="numpy"), "splitter"),
    (lambda: kl.band([np.nan]), "No finite values"),
    (lambda: kl.test_nll(np.ones((3, 2)), np.ones(3), np.ones(5)), "must be"),
])
def test_readable_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_registry_entry_of_the_flop_counts_passes():
    from tests.repro_check import passes

    res = passes("kumar2025-fig5-flops")
    assert {c.kind for c in res.checks} == {"paper", "derived"}


def test_registry_entry_of_the_convexity_panel_passes():
    from tests.repro_check import passes

    passes("kumar2025-convexity")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["kumar2025-fig2-pima", "kumar2025-fig2-breast-cancer", "kumar2025-fig11-nonconvex"])
def test_slow_registry_entries_pass(name):
    from tests.repro_check import passes
    from vilab import repro

    assert repro.get(name).slow
    passes(name)


# ----------------------------------------------------------------- the LIBSVM files of Table 2 (exact data)


@pytest.mark.parametrize("name,n,d,n_pos", [("diabetes-scale", 768, 8, 268), ("breast-cancer-libsvm", 683, 10, 239)])
def test_libsvm_data_as_libsvm_builds_it(name, n, d, n_pos):
    """Table 2's N and d; every feature in [-1, 1] with min -1 and max 1 (svm-scale over the whole file); labels
    +-1; no intercept (no constant column)."""
    X, y, source = kl.libsvm_data(name)
    assert X.shape == (n, d) and y.shape == (n,)
    np.testing.assert_array_equal(X.min(0), -1.0)
    np.testing.assert_array_equal(X.max(0), 1.0)
    assert set(np.unique(y)) == {-1.0, 1.0} and int((y > 0).sum()) == n_pos
    assert "no intercept" in source
    paper = kl.DATASETS[name][0]
    assert (kl.TABLE2[paper]["N"], kl.TABLE2[paper]["d"]) == (n, d)
    data = kl.load(name)
    assert data.d == d and len(data.y_train) == kl.TABLE2[paper]["N_train"]
    assert len(data.y_test) == n - len(data.y_train)


def test_libsvm_scaling_by_hand():
    """svm-scale's rule on the raw columns: x -> -1 + 2 (x - min) / (max - min), printed with %g (6 digits)."""
    raw, _, _ = kl.libsvm_data("breast-cancer-libsvm", scaled=False)
    X, _, _ = kl.libsvm_data("breast-cancer-libsvm")
    assert raw[0, 0] == 1000025 and raw[:, 0].min() == 63375 and raw[:, 0].max() == 13454352  # the sample Id
    assert X[0, 0] == pytest.approx(-1 + 2 * (1000025 - 63375) / (13454352 - 63375), abs=5e-7)
    assert X[0, 0] == -0.860107  # rounded like the file
    # the first line of LIBSVM's breast-cancer_scale as quoted in public code ("2 1:-0.860107 2:-0.111111 3:-1 4:-1
    # 5:-1 6:-0.777778 7:-1 8:-0.555556 9:-1 10:-1"; label 2 = benign, -1 here): every printed digit agrees
    np.testing.assert_array_equal(X[0], [-0.860107, -0.111111, -1, -1, -1, -0.777778, -1, -0.555556, -1, -1])
    assert kl.libsvm_data("breast-cancer-libsvm")[1][0] == -1.0
    np.testing.assert_array_equal(X[:, 1:], np.vectorize(lambda v: float(f"{v:g}"))(-1 + 2 * (raw[:, 1:] - 1) / 9))
    pima, _, _ = kl.libsvm_data("diabetes-scale", scaled=False)
    assert pima[0, 0] == 6 and kl.libsvm_data("diabetes-scale")[0][0, 0] == -0.294118  # 6 pregnancies of 0..17
    got = kl.svm_scale(np.array([[0.0, 5.0, 2.0], [1.0, 5.0, 4.0], [3.0, 5.0, 3.0]]))
    np.testing.assert_array_equal(got, [[-1.0, 0.0, -1.0], [-0.333333, 0.0, 1.0], [1.0, 0.0, 0.0]])


def _neg_elbo_scipy(X, y, beta, n_nodes=60):
    """An independent minimisation of Sec. 1's negative ELBO over (m, L), V = L L^T (log-diagonal), with
    Gauss-Hermite nodes from numpy and scipy's L-BFGS-B."""
    from scipy.optimize import minimize

    n, d = X.shape
    Z = jnp.asarray(X * y[:, None])
    xg, wg = np.polynomial.hermite_e.hermegauss(n_nodes)
    xg, wg = jnp.asarray(xg), jnp.asarray(wg / np.sqrt(2 * np.pi))
    il = np.tril_indices(d, -1)

    def unpack(p):
        m, ld, off = p[:d], p[d:2 * d], p[2 * d:]
        L = jnp.zeros((d, d)).at[il].set(off) + jnp.diag(jnp.exp(ld))
        return m, L, ld

    def f(p):
        m, L, ld = unpack(p)
        mean, sd = Z @ m, jnp.linalg.norm(Z @ L, axis=1)
        e = jnp.logaddexp(0.0, -(mean[:, None] + sd[:, None] * xg)) @ wg
        return (jnp.sum(e) + 0.5 * beta * (m @ m + jnp.sum(L**2)) - jnp.sum(ld)
                - 0.5 * d * (1 + np.log(2 * np.pi)))

    fg = jax.jit(jax.value_and_grad(f))
    p0 = np.concatenate([np.zeros(d), np.full(d, -2.0), np.zeros(len(il[0]))])
    res = minimize(lambda p: [np.asarray(v, float) for v in fg(jnp.asarray(p))], p0, jac=True, method="L-BFGS-B",
                   options={"maxiter": 5000, "gtol": 1e-9, "ftol": 1e-15})
    m, L, _ = unpack(jnp.asarray(res.x))
    return float(res.fun), np.asarray(m), np.asarray(L @ L.T)


def test_table3_optimum_is_the_fixed_point_and_the_scipy_minimum():
    """The VN rho = 1 optimum of one split: Eq. 22 through the catalogue's oracle (another code path), the
    negative ELBO the catalogue computes, and an independent scipy minimisation of the negative ELBO."""
    name = "diabetes-scale"
    sp = kl.table3_splits(name, [3], n_points=60)
    data = kl.load(name, seed=3)
    m, V = sp["mean"][0], sp["cov"][0]
    res = kl.fixed_point_residuals(kl.target(data, False, 60), m, V, 60)
    assert res["grad"] < 1e-8 and res["prec"] < 1e-8, res
    tgt = kl.target(data, False, 60)
    ours = float(sp["neg_elbo"]["paper"][0])
    assert ours == pytest.approx(-float(oracle.elbo_exact(tgt, jnp.asarray(m), jnp.asarray(V),
                                                          jnp.linalg.slogdet(V)[1], 60)), abs=1e-8)
    val, m_s, V_s = _neg_elbo_scipy(data.X_train, data.y_train, data.beta)
    assert ours == pytest.approx(val, abs=1e-6)
    np.testing.assert_allclose(m, m_s, atol=2e-4)
    np.testing.assert_allclose(V, V_s, atol=2e-4)
    # Table 3's metrics at the optimum, by the module's own functions
    assert sp["test_nll"][0] == pytest.approx(kl.test_nll(data.X_test, data.y_test, m), rel=1e-12)
    assert sp["accuracy"][0] == pytest.approx(kl.test_accuracy(data.X_test, data.y_test, m))
    # the three definitions of the 'ELBO' differ by their constants only
    d, beta = 8, data.beta
    assert sp["neg_elbo"]["none"][0] - ours == pytest.approx(0.5 * d * (1 + np.log(2 * np.pi)), abs=1e-10)
    assert sp["neg_elbo"]["true"][0] - ours == pytest.approx(0.5 * d * (np.log(2 * np.pi) - np.log(beta)), abs=1e-10)


def test_table3_comparison_rows_and_bands():
    c = kl.table3_comparison("breast-cancer-libsvm", range(4))
    keys = [r["key"] for r in c["rows"]]
    assert keys == ["paper", "true", "none", "test_nll", "test_nll_predictive", "accuracy"]
    digits = kl.TABLE3_DIGITS["breast-cancer"]
    for r in c["rows"]:
        assert r["min"] <= r["median"] <= r["max"]
        half = 0.5 * digits["accuracy" if r["key"] == "accuracy" else "neg_elbo"]
        assert r["inside"] == (r["min"] - half <= r["paper"] <= r["max"] + half)
    assert c["splits"]["n_train"] == 546 and c["splits"]["n_test"] == 137 and c["splits"]["d"] == 10
    assert np.all(c["splits"]["res_grad"] < 1e-8)
    assert kl.in_band(52.865, {"min": 40.0, "max": 52.86}, 0.01) and not kl.in_band(52.87, {"min": 40.0, "max": 52.86})


def test_sklearn_splitter_and_the_sequential_split():
    """splitter="sklearn" is train_test_split(test_size=0.2, random_state=seed) (the sizes of Table 2);
    sequential=True appends the split 'first N_train rows'."""
    from sklearn.model_selection import train_test_split

    r = kl.table3_splits("breast-cancer-libsvm", [42], splitter="sklearn", sequential=True)
    assert list(r["seeds"]) == [42, -1] and r["n_train"] == 546
    X, y, _ = kl.libsvm_data("breast-cancer-libsvm")
    tr, te = train_test_split(np.arange(683), test_size=0.2, random_state=42)
    assert len(tr) == 546
    assert r["accuracy"][0] == pytest.approx(kl.test_accuracy(X[te], y[te], r["mean"][0]))
    assert r["test_nll"][1] == pytest.approx(kl.test_nll(X[546:], y[546:], r["mean"][1]), rel=1e-12)
