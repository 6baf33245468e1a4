"""The math behind the Divergences page's "Gradient noise" and "Weighted Fisher" tabs (issue 16).

Gradient noise (Chen, Nott & Tan Sec. 5.4, Fig. 4): the exact T_ii-gradient variances for a dense Lambda
(gradvar.gradient_variance_T) against the paper's diagonal formulas and against Monte Carlo of the
algorithms' own gradient code; the Fig. 4 stand-in target and its closed-form / Monte Carlo pair.
Weighted Fisher (Sec. 1.2, Lemma 1, eq. 1): the optimum for a chosen M against brute-force numerical
minimisation and Monte Carlo, the named weights, and the positive-definiteness check.
"""

import jax
import numpy as np
import plotly.graph_objects as go
import pytest
from scipy.optimize import minimize

from vilab import divergences as dv
from vilab.divergences import gradvar
from vilab.plots import divergences as dplots
from vilab.plots import look


def _dense_case(d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(d, d))
    L = X @ X.T + 0.5 * np.eye(d)
    T = np.tril(rng.normal(size=(d, d)), -1) * 0.4 + np.diag(rng.uniform(0.6, 2.0, d))
    return L, rng.normal(size=d), rng.normal(size=d), T


# ------------------------------------------------------------------------------------ gradient noise


@pytest.mark.parametrize("lam,t,dm", [(2.0, 1.5, 0.3), (0.3, 0.2, -1.0), (148.82, 10.0, 0.0), (0.52, 10.0, 2.0)])
def test_dense_T_variances_reduce_to_the_papers_diagonal_formulas(lam, t, dm):
    lam3, t3, dm3 = np.array([lam, 1.0, 5.0]), np.array([t, 0.7, 3.0]), np.array([dm, 0.5, 0.0])
    got = gradvar.gradient_variance_T(np.diag(lam3), -dm3, np.zeros(3), np.diag(t3))
    want = gradvar.gradient_variance_diagonal(lam3, t3, dm3)["T"]
    for m in ("kl", "fisher", "score"):
        np.testing.assert_allclose(got[m], want[m], rtol=1e-12, atol=1e-14)


def test_dense_T_variances_give_the_digests_numbers_c15():
    # digest C15 (derived there from the paper's formulas): Var g_T KL / F / S = 0.082085 / 5.930645 / 0.928856
    got = gradvar.gradient_variance_T([[2.0]], [0.0], [0.3], [[1.5]])
    np.testing.assert_allclose([got[m][0] for m in ("kl", "fisher", "score")], [0.082085, 5.930645, 0.928856],
                               atol=5e-7)


@pytest.mark.parametrize("seed", [0, 1])
def test_dense_T_variances_match_monte_carlo_of_the_algorithms(seed):
    L, nu, mu, T = _dense_case(4, seed)
    exact = gradvar.gradient_variance_T(L, nu, mu, T)
    mc = gradvar.gradient_variance_mc(jax.random.PRNGKey(seed), L, nu, mu, T, n=300_000)
    for m in ("kl", "fisher", "score"):
        # the T-gradients are quadratic in z (heavier tails than a Gaussian): 300,000 draws give ~1%
        np.testing.assert_allclose(mc["T_diag"][m], exact[m], rtol=0.04)
    # and the formula is not trivially proportional across methods on a dense target
    assert not np.allclose(exact["fisher"] / exact["kl"], (exact["fisher"] / exact["kl"])[0])


def test_dense_T_variances_vanish_at_the_target_and_check_input():
    L, nu, _, _ = _dense_case(3, 2)
    T = np.linalg.cholesky(L)  # q = p: T T^T = Lambda, mu = nu
    for v in gradvar.gradient_variance_T(L, nu, nu, T).values():
        assert np.max(np.abs(v)) < 1e-18
    with pytest.raises(ValueError, match="lower triangular"):
        gradvar.gradient_variance_T(L, nu, nu, T.T + np.eye(3))
    with pytest.raises(ValueError, match="Dimension mismatch"):
        gradvar.gradient_variance_T(L, nu[:2], nu, T)


def test_fig4_precision_has_the_papers_size_range_and_mean():
    for r in (0.0, 0.9, -0.9):
        L = gradvar.fig4_precision(r)
        dg = np.diag(L)
        assert L.shape == (49, 49)
        assert np.isclose(dg.min(), 0.52) and np.isclose(dg.max(), 148.82) and np.isclose(dg.mean(), 45.68)
        assert np.linalg.eigvalsh(L)[0] > 0
    assert np.count_nonzero(gradvar.fig4_precision(0.0) - np.diag(np.diag(gradvar.fig4_precision(0.0)))) == 0
    with pytest.raises(ValueError, match="between -1 and 1"):
        gradvar.fig4_precision(1.0)


def test_fig4_closed_forms_and_monte_carlo_agree_and_fisher_is_noisiest_at_the_papers_start():
    out = gradvar.fig4_gradient_sd(jax.random.PRNGKey(3), t_scale=10.0, dmu=0.5, correlation=0.4, n=20_000)
    L = gradvar.fig4_precision(0.4)
    vmu = gradvar.gradient_variance_mu(L, 10 * np.eye(49))
    for m in ("kl", "fisher", "score"):
        np.testing.assert_allclose(out["closed"]["mu"][m] ** 2, np.diag(vmu[m]), rtol=1e-12)
        for p in ("mu", "T"):
            ratio = out["mc"][p][m] / out["closed"][p][m]
            assert abs(np.median(ratio) - 1) < 0.02 and np.max(np.abs(ratio - 1)) < 0.12, (p, m)
    # the paper's Fig. 4 message that survives on the stand-in target: Fisher's gradients are by far the noisiest
    for p in ("mu", "T"):
        med = {m: np.median(out["closed"][p][m]) for m in ("kl", "fisher", "score")}
        assert med["fisher"] > 10 * max(med["kl"], med["score"])


def test_variance_crossings_are_where_the_diagonal_formulas_cross_kl():
    t = 3.0
    c = gradvar.variance_crossings(t, 0.0)
    for part, m in (("mu", "fisher"), ("mu", "score"), ("T", "score")):
        x = c[part][m]
        below = gradvar.gradient_variance_diagonal(x * 0.99, t, 0.0)[part]
        above = gradvar.gradient_variance_diagonal(x * 1.01, t, 0.0)[part]
        assert below[m] < below["kl"] and above[m] > above["kl"], (part, m)
    assert np.isnan(c["T"]["fisher"])  # t^2 >= 1/2: Fisher's T-gradient is always the noisier
    small = gradvar.variance_crossings(0.5, 0.0)["T"]["fisher"]  # 1/2 - 1/4
    v = gradvar.gradient_variance_diagonal([small * 0.9, small * 1.1], 0.5, 0.0)["T"]
    assert v["fisher"][0] < v["kl"][0] and v["fisher"][1] > v["kl"][1]
    assert np.isnan(gradvar.variance_crossings(3.0, 0.4)["T"]["score"])


def test_gradient_sd_figure_uses_each_methods_look():
    out = gradvar.fig4_gradient_sd(jax.random.PRNGKey(0), n=300)
    fig = dplots.gradient_sd(out["lambda_ii"], out["closed"], out["mc"], marks={"mu": [(50.0, "score = KL")]})
    assert isinstance(fig, go.Figure)
    for tr in fig.data:
        if tr.legendgroup in ("kl", "fisher", "score"):
            colour = tr.line.color if tr.mode == "lines" else tr.marker.color
            assert colour == look(tr.legendgroup).color
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert any(tr.mode == "lines+text" and tr.text[-1] == "score = KL" for tr in fig.data)


# ------------------------------------------------------------------------------------ weighted Fisher


def _brute_force_meanfield(L, M):
    """Minimise Lemma 1's S_M over diagonal Sigma (mu = nu) numerically, from a poor start."""
    d = L.shape[0]
    nu = np.zeros(d)

    def f(logv):
        return float(dv.weighted_fisher(nu, np.diag(np.exp(logv)), nu, L, M))

    res = minimize(f, np.zeros(d), method="BFGS", options={"gtol": 1e-10})
    return np.exp(res.x), res.fun


@pytest.mark.parametrize("kind", ["identity", "target_cov", "custom"])
@pytest.mark.parametrize("rho,sd1,sd2", [(0.9, 1.0, 1.0), (-0.6, 1.0, 3.0), (0.3, 0.5, 2.0)])
def test_weighted_optimum_matches_numerical_minimisation(kind, rho, sd1, sd2):
    L = dv.precision_2d(rho, sd1, sd2)
    custom = [[1.0, 0.5], [0.5, 2.0]]
    opt = dv.weighted_meanfield(L, kind, custom)
    v, fmin = _brute_force_meanfield(L, dv.weight_matrix(kind, L, custom))
    np.testing.assert_allclose(opt.variances, v, rtol=1e-5)
    assert np.isclose(opt.objective, fmin, rtol=1e-8, atol=1e-10)


def test_weighted_optimum_with_a_dense_3d_weight_matches_numerical_minimisation():
    L = dv.precision_3d(0.7, 0.6, 0.05)
    M = np.array([[2.0, 0.4, -0.3], [0.4, 1.0, 0.2], [-0.3, 0.2, 0.5]])
    opt = dv.weighted_meanfield(L, "custom", M)
    v, fmin = _brute_force_meanfield(L, M)
    np.testing.assert_allclose(opt.variances, v, rtol=1e-5)
    assert np.isclose(opt.objective, fmin, rtol=1e-8)


def test_named_weights_give_fisher_score_and_the_geometric_mean():
    L = dv.precision_2d(0.9)
    res = {k: dv.weighted_fisher_comparison(L, k, [[1.0, 0.5], [0.5, 2.0]]) for k in dv.WEIGHTS}
    # digest C3 (derived there): 2-D unit variances, rho = 0.9
    np.testing.assert_allclose(res["identity"]["variances"]["weighted_fisher"], 0.141226, atol=5e-7)
    np.testing.assert_allclose(res["q_cov"]["variances"]["weighted_fisher"], 0.104972, atol=5e-7)
    assert np.isclose(res["identity"]["objective"], 7.270787, atol=5e-7)
    assert np.isclose(res["q_cov"]["objective"], 0.895028, atol=5e-7)
    assert np.isclose(res["identity"]["values"]["kl"]["kl"], 0.830366, atol=5e-7)
    # M = Lambda^{-1}: sqrt(KL variance x true variance) = sqrt(0.19), above KL (Theorem 1 needs a diagonal M)
    w = res["target_cov"]["variances"]
    np.testing.assert_allclose(w["weighted_fisher"], np.sqrt(w["kl"] * w["true"]), rtol=1e-12)
    assert np.all(w["weighted_fisher"] > w["kl"])
    # the custom non-diagonal M of the page's default puts Sigma_22 above KL's too
    c = res["custom"]["variances"]
    assert c["weighted_fisher"][1] > c["kl"][1]


@pytest.mark.parametrize("kind", list(dv.WEIGHTS))
def test_each_divergence_is_smallest_at_its_own_optimum(kind):
    for rho, sd1, sd2 in [(0.9, 1.0, 1.0), (0.5, 1.0, 10.0), (-0.95, 2.0, 0.3)]:
        vals = dv.weighted_fisher_comparison(dv.precision_2d(rho, sd1, sd2), kind, [[3.0, -1.0], [-1.0, 1.0]])["values"]
        for col, own in (("kl", "kl"), ("fisher", "fisher"), ("weighted_fisher", "weighted_fisher")):
            best = min(vals[row][col] for row in vals)
            assert vals[own][col] <= best * (1 + 1e-10), (kind, rho, col)


def test_weighted_value_at_the_optimum_matches_monte_carlo():
    L = dv.precision_2d(0.8, 1.0, 2.0)
    res = dv.weighted_fisher_comparison(L, "target_cov")
    S = np.diag(res["variances"]["weighted_fisher"])
    est, se = dv.monte_carlo_divergence(jax.random.PRNGKey(7), lambda th: -L @ th, np.zeros(2), S,
                                        "weighted_fisher", weight=res["M"], n=200_000)
    assert abs(est - res["values"]["weighted_fisher"]["weighted_fisher"]) < 4 * se
    assert np.isclose(res["values"]["weighted_fisher"]["weighted_fisher"], res["objective"])


@pytest.mark.parametrize("M,words", [
    ([[1.0, 3.0], [3.0, 2.0]], ("not positive definite", "M₁₂² < M₁₁ M₂₂")),
    ([[1.0, 1.0], [1.0, 1.0]], ("not positive definite", "no distance")),
    ([[-1.0, 0.0], [0.0, 2.0]], ("not positive definite", "smallest eigenvalue is -1")),
    ([[1.0, 0.2], [0.3, 1.0]], ("not symmetric",)),
    ([[1.0, np.nan], [np.nan, 1.0]], ("finite",)),
])
def test_a_weight_that_is_not_positive_definite_is_refused_with_a_sentence(M, words):
    with pytest.raises(ValueError) as err:
        dv.weighted_fisher_comparison(dv.precision_2d(0.5), "custom", M)
    for w in words:
        assert w in str(err.value), str(err.value)
    with pytest.raises(ValueError):
        dv.weighted_variance_curves_2d([0.1, 0.2], 1.0, 1.0, "custom", M)


def test_named_weight_errors():
    with pytest.raises(ValueError, match="Unknown weight"):
        dv.weight_matrix("cov", np.eye(2))
    with pytest.raises(ValueError, match="needs its matrix"):
        dv.weight_matrix("custom", np.eye(2))
    with pytest.raises(ValueError, match="2 x 2"):
        dv.weight_matrix("custom", np.eye(2), np.eye(3))
    assert dv.weight_matrix("q_cov", np.eye(2)) is None


def test_weighted_curves_follow_the_optimum_at_each_rho():
    rhos = np.array([-0.9, 0.0, 0.5])
    for kind in dv.WEIGHTS:
        cur = dv.weighted_variance_curves_2d(rhos, 1.0, 2.0, kind, [[1.0, 0.5], [0.5, 2.0]], coord=1)
        for i, r in enumerate(rhos):
            want = dv.weighted_meanfield(dv.precision_2d(r, 1.0, 2.0), kind, [[1.0, 0.5], [0.5, 2.0]]).variances[1]
            assert np.isclose(cur["weighted_fisher"][i], want)
        # at rho = 0 the target is in the mean-field family and every divergence finds it
        np.testing.assert_allclose([cur[k][1] for k in ("kl", "fisher", "score", "weighted_fisher")], 4.0)


def test_ellipses_and_curves_take_the_weighted_name_and_keep_the_look():
    L = dv.precision_2d(0.9)
    res = dv.weighted_fisher_comparison(L, "target_cov")
    name = "weighted Fisher, M = Λ⁻¹"
    fig = dplots.meanfield_ellipses([0, 0], np.linalg.inv(L), res["variances"], names={"weighted_fisher": name})
    tr = next(t for t in fig.data if t.name == name)
    assert tr.line.color == look("weighted_fisher").color
    fig = dplots.variance_curves(np.array([0.1, 0.2]), {"weighted_fisher": np.array([1.0, 0.9])},
                                 names={"weighted_fisher": name}, marked=0.15)
    assert fig.data[0].name == name and fig.data[0].line.color == look("weighted_fisher").color
