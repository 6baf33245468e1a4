"""vilab.divergences.landscape: objective landscapes (digest E4) and the Table 6 analogue.

Every check is an independent computation: the explicit forms of Chen, Nott & Tan Sec. 1.3 written here in
numpy, the 2-D optima of digest Sec. 2.5, a brute-force minimisation, and a numpy Monte Carlo.
"""

import numpy as np
import pytest
from scipy.optimize import minimize

import vilab  # noqa: F401  (float64)
from vilab.divergences import landscape as dvl
from vilab.divergences import precision_2d, precision_3d


def _explicit(L, s11, s22):
    """KL, Fisher, score at q = N(nu, diag(s11, s22)) from Sec. 1.3 (numpy broadcasting)."""
    d = 2
    v = [s11, s22]
    kl = 0.5 * (L[0, 0] * s11 + L[1, 1] * s22 - d - np.log(s11) - np.log(s22) - np.log(np.linalg.det(L)))
    L2 = (L**2).sum(1)
    fis = 1 / s11 + L2[0] * s11 + 1 / s22 + L2[1] * s22 - 2 * np.trace(L)
    sco = d + sum(v[i] * v[j] * L[i, j] ** 2 for i in range(2) for j in range(2)) - 2 * (s11 * L[0, 0] + s22 * L[1, 1])
    return {"kl": kl, "fisher": fis, "score": sco}


def _digest_optima(rho, sd1, sd2):
    """Digest Sec. 2.5: the 2-D mean-field optima in closed form."""
    kl = np.array([sd1**2, sd2**2]) * (1 - rho**2)
    fis = np.array([sd1**2 * (1 - rho**2) / np.sqrt(1 + rho**2 * sd1**2 / sd2**2),
                    sd2**2 * (1 - rho**2) / np.sqrt(1 + rho**2 * sd2**2 / sd1**2)])
    sco = kl / (1 + rho**2)
    return {"kl": kl, "fisher": fis, "score": sco}


@pytest.mark.parametrize("rho,sd1,sd2", [(0.9, 1, 1), (-0.5, 1, 3), (0.99, 0.1, 2), (0.0, 1, 1), (0.7, 5, 0.2)])
def test_grid_equals_explicit_forms_and_its_minimum_is_the_optimum(rho, sd1, sd2):
    L = precision_2d(rho, sd1, sd2)
    res = dvl.objective_landscape(L, n=81)
    A, B = np.meshgrid(res["s11"], res["s22"])
    ex = _explicit(L, A, B)
    opt = _digest_optima(rho, sd1, sd2)
    for k in dvl.LANDSCAPE_CODES:
        np.testing.assert_allclose(res["values"][k], ex[k], rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(res["optimum"][k], opt[k], rtol=1e-8)
        # the grid's lowest point is within a few grid steps of the closed form (the score valley is flat)
        assert np.max(np.abs(np.log10(np.array(res["grid_min"][k]) / opt[k]))) <= 3 * res["log_step"]
        assert res["optimum_value"][k] <= res["grid_min_value"][k] + 1e-12
        assert res["grid_min_value"][k] <= res["optimum_value"][k] + 5e-3 * max(1.0, res["optimum_value"][k])
    np.testing.assert_allclose(res["true"], [sd1**2, sd2**2], rtol=1e-12)


def test_brute_force_minimisation_of_the_explicit_forms():
    L = precision_2d(0.8, 1.0, 2.0)
    res = dvl.objective_landscape(L, n=41)
    for k in dvl.LANDSCAPE_CODES:
        f = lambda x, k=k: _explicit(L, np.exp(x[0]), np.exp(x[1]))[k]  # noqa: E731
        x = minimize(f, np.log([0.5, 0.5]), method="Nelder-Mead", options=dict(xatol=1e-10, fatol=1e-14,
                                                                                 maxiter=4000)).x
        np.testing.assert_allclose(np.exp(x), res["optimum"][k], rtol=1e-4)


def test_valleys_are_conditional_minimisers_and_the_score_valley_reaches_zero():
    L = precision_2d(0.9)
    s = np.logspace(-2, 1, 25)
    val = dvl.valleys(L, s, s)
    for k in dvl.LANDSCAPE_CODES:
        for j in (0, 8, 16):
            grid = np.logspace(-6, 2, 20001)
            best = grid[np.argmin(_explicit(L, grid, s[j])[k])]
            want = val[k]["v1"][j]
            if want == 0:  # collapse: the best is the smallest variance tried
                assert best == grid[0] and k == "score"
            else:
                assert abs(np.log10(best / want)) < 1e-3
    res = dvl.objective_landscape(L)
    assert res["collapse_at"][0] == pytest.approx(L[0, 0] / L[0, 1] ** 2)
    assert np.all(val["score"]["v1"][s > res["collapse_at"][0]] == 0)
    assert np.all(val["kl"]["v1"] == 1 / L[0, 0])


@pytest.mark.parametrize("rho", [0.3, 0.9, 0.99])
def test_collapse_costs_kl_and_fisher_everything_and_the_score_little(rho):
    L = precision_2d(rho)
    c = dvl.collapse_values(L)
    assert np.all(np.isinf(c["kl"])) and np.all(np.isinf(c["fisher"]))
    # S(0, Sigma_22) = 2 + Sigma_22^2 Lambda_22^2 - 2 Sigma_22 Lambda_22, smallest (= 1) at 1 / Lambda_22
    np.testing.assert_allclose(c["score"], [1.0, 1.0], rtol=1e-10)
    res = dvl.objective_landscape(L, n=21)
    assert c["score"][0] - res["optimum_value"]["score"] == pytest.approx((1 - rho**2) / (1 + rho**2), rel=1e-9)


def test_collapse_value_in_3d_is_the_optimum_when_the_optimum_collapses():
    L = precision_3d(0.8, 0.8, 0.3)  # digest C8: the score-based optimum collapses coordinate 1
    from vilab.divergences import meanfield_optimum

    opt = meanfield_optimum(L, "score")
    assert opt.collapsed[0]
    assert dvl.collapse_values(L)["score"][0] == pytest.approx(opt.objective, rel=1e-9)
    ex = dvl.meanfield_objectives(L, opt.variances)
    assert ex["score"] == pytest.approx(opt.objective, rel=1e-9) and np.isinf(ex["kl"])


def test_grid_against_numpy_monte_carlo():
    L = precision_2d(0.9, 1.0, 2.0)
    rng = np.random.default_rng(0)
    for a, b in ((0.19, 0.5), (0.05, 3.0)):
        res = dvl.objective_landscape(L, s11=[a / 2, a, 2 * a], s22=[b / 2, b, 2 * b])
        th = rng.normal(size=(200_000, 2)) * np.sqrt([a, b])
        diff = -th / np.array([a, b]) + th @ L  # grad log q - grad log p
        f = np.sum(diff**2, 1)
        s = np.sum(diff**2 * np.array([a, b]), 1)
        for k, x in (("fisher", f), ("score", s)):
            se = x.std() / np.sqrt(x.size)
            assert abs(x.mean() - res["values"][k][1, 1]) < 4 * se
    mc = dvl.landscape_monte_carlo(__import__("jax").random.PRNGKey(1), L, [(0.19, 0.5)], n=20_000)
    for k in dvl.LANDSCAPE_CODES:
        exact, est, se = mc[0][k]
        assert abs(est - exact) < 4 * se


@pytest.mark.parametrize("bad,match", [
    ([[1.0, 2.0], [2.0, 1.0]], "positive definite|positive-definite"),
    ([[1.0, 0.5], [0.4, 1.0]], "symmetric"),
    (np.eye(3), "must be 2-D"),
    ([[np.nan, 0.0], [0.0, 1.0]], "NaN|finite"),
])
def test_bad_target_gives_a_sentence(bad, match):
    with pytest.raises(ValueError, match=match):
        dvl.objective_landscape(bad)


@pytest.mark.parametrize("s11,match", [
    ([0.1, -0.2, 1.0], "zero or negative"),
    ([0.1, 0.1, 1.0], "increase strictly"),
    ([0.1, np.inf, 1.0], "NaN or infinite"),
    ([0.1, 1.0], "between 3 and"),
    ([[0.1, 0.2, 0.3]], "vector"),
])
def test_bad_grid_gives_a_sentence(s11, match):
    with pytest.raises(ValueError, match=match):
        dvl.objective_landscape(precision_2d(0.5), s11=s11, s22=[0.1, 1.0, 10.0])


def test_bad_axes_settings():
    with pytest.raises(ValueError, match="grid size"):
        dvl.objective_landscape(precision_2d(0.5), n=2)
    with pytest.raises(ValueError, match="decades"):
        dvl.landscape_axes(precision_2d(0.5), decades=10)
    with pytest.raises(ValueError, match="non-negative variances"):
        dvl.meanfield_objectives(precision_2d(0.5), [-1.0, 1.0])


def test_table6_reduced_setting_on_a_model_of_ones_own():
    """A reduced run (one method, 1000 iterations) on Pima with a Laplace-draw reference: the machinery, not
    the numbers (the German credit run itself is the slow registry entry chen2025-table6)."""
    from vilab.core import as_key
    from vilab.targets.regression import pima

    m = pima()
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(500, m.d)) * 0.1
    ref = {"draws": draws, "sd": draws.std(0), "mode": np.zeros(m.d)}
    res = dvl.table6(as_key(0), m, methods=("sdb",), max_iter=1000, n_rep=2, m=300, reference=ref)
    assert set(res["rows"]) == {"sdb"} and res["d"] == 8 and "Pima" in res["settings"]
    r = res["rows"]["sdb"]
    assert np.isfinite(r["M*"][0]) and r["iterations"] <= 1000
    with pytest.raises(ValueError, match="Choose methods among"):
        dvl.table6(as_key(0), m, methods=("adam",), reference=ref)
    with pytest.raises(ValueError, match="reference posterior"):
        dvl.table6(as_key(0), m)
    from vilab.targets.regression import simulated_loglinear
    with pytest.raises(ValueError, match="Bernoulli"):
        dvl.table6(as_key(0), simulated_loglinear(n=50, d=3), reference=ref)


@pytest.mark.slow
def test_table6_on_german_credit_passes():
    """Table 6's German column at the paper's setting (about 2-3 minutes): orderings and mode errors."""
    from tests.repro_check import passes

    passes("chen2025-table6")
