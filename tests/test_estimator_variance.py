"""Tan (2025) Thm 2's estimators along a run (vilab.theory.estimator_variance), their figures (vilab.plots.estimators)
and the two registry entries of vilab/repro/tan2025_thm2.py."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.repro_check import passes
from vilab.family import natgrad as ng
from vilab.plots import estimators as pe
from vilab.theory import estimator_variance as ev


@pytest.fixture(scope="module")
def logit_run():
    return ev.along_run(ev.demo_target(ev.DEMO_TARGETS[0]), n_draws=1500, seed=0)


@pytest.fixture(scope="module")
def gauss_run():
    return ev.along_run(ev.demo_target(ev.DEMO_TARGETS[1]), n_draws=500, seed=0)


def test_spread_is_the_trace_of_the_covariance_and_its_se_is_a_standard_error():
    rng = np.random.default_rng(0)
    n, d = 20_000, 3
    X = np.tril(rng.normal(size=(n, d, d)) * 2.0)  # 6 free entries of variance 4
    v, se = ev.spread(X)
    assert abs(v - 24.0) < 4 * se and 0 < se < 0.5
    # upper-triangle entries are not part of the spread
    assert ev.spread(X + np.triu(rng.normal(size=(n, d, d)), 1))[0] == pytest.approx(v)


def test_variance_ratio_of_paired_draws():
    rng = np.random.default_rng(1)
    Y = np.tril(rng.normal(size=(4000, 2, 2)))
    r = ev.variance_ratio(3.0 * Y, Y)  # the same draws scaled: ratio 9 exactly, no Monte Carlo error
    assert r["ratio"] == pytest.approx(9.0) and r["se_log_ratio"] < 1e-6
    Z = np.tril(rng.normal(size=(4000, 2, 2)))
    r2 = ev.variance_ratio(2.0 * Y, Z)  # independent draws: log 4 within a few s.e.
    assert abs(r2["log_ratio"] - math.log(4.0)) < 4 * r2["se_log_ratio"]
    const = np.repeat(np.tril(np.ones((1, 2, 2))), 4000, axis=0)
    assert ev.variance_ratio(Y, const)["ratio"] == math.inf
    with pytest.raises(ValueError, match="same draws"):
        ev.variance_ratio(Y, Y[:10])


def test_single_draw_estimates_are_tan_thm2s_at_the_same_draws():
    tgt = ev.demo_target(ev.DEMO_TARGETS[0])
    mu, C = np.array([0.3, -0.8]), np.array([[0.2, 0.0], [0.05, 0.15]])
    est = ev.single_draw_estimates(tgt, mu, C, jax.random.PRNGKey(0), 50)
    T = est["T"]
    np.testing.assert_allclose(T @ T.T, np.linalg.inv(C @ C.T), rtol=1e-10)
    i = 7
    th = est["theta"][i]
    z = np.linalg.solve(C, th - mu)
    P = np.linalg.inv(C @ C.T)
    g = np.asarray(tgt.grad(jnp.asarray(th))) + P @ (th - mu)
    H = np.asarray(tgt.hess(jnp.asarray(th))) + P
    np.testing.assert_allclose(est["G1"][i], np.tril(np.outer(g, z)), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est["F1"][i], np.tril(H @ C), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est["G2"][i], np.tril(np.asarray(ng.estimator_G2(th, mu, T, g))), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est["F2"][i], np.tril(np.asarray(ng.estimator_F2(T, H))), rtol=1e-9, atol=1e-12)
    assert est["exact_C"].shape == (2, 2) and est["exact_T"].shape == (2, 2)


def test_the_logistic_run_second_order_is_less_noisy_at_every_iterate_and_most_so_mid_run(logit_run):
    r = logit_run
    assert r["status"] == "converged" and len(r["iterations"]) >= 5
    for f in ("C", "T"):
        lows = [x["lower_2se"] for x in r["ratio"][f]]
        assert min(lows) > 0, (f, lows)
        ratios = [x["ratio"] for x in r["ratio"][f]]
        # the advantage is largest away from the optimum and falls to a few at the optimum
        assert max(ratios) > 100 * ratios[-1] and 1 < ratios[-1] < 20, ratios
    assert max(float(np.max(v)) for v in r["bias_z"].values()) < 4.5


def test_the_gaussian_run_second_order_is_exact_and_first_order_is_exact_only_at_the_optimum(gauss_run):
    r = gauss_run
    for second, exact in (("F1", "exact_C"), ("F2", "exact_T")):
        for e in r["estimates"]:
            assert np.max(np.abs(e[second] - e[exact][None])) < 1e-12
    v = r["V"]["G1"]
    assert v[0] > 100 and v[-1] < 1e-12 * v[0]


def test_noise_cloud_and_its_figures(logit_run, gauss_run):
    c = ev.noise_cloud(logit_run, 3, "C")
    assert c["first"].shape == c["second"].shape == (1500, 2) and c["names"] == ("G1", "F1")
    fig = pe.noise_cloud_figure(c)
    names = [t.name for t in fig.data]
    assert names[0] == "G₁: first order (∇ log p)" and "exact gradient" in names
    assert fig.layout.xaxis.title.text == "∂L/∂C₁₁" and fig.layout.yaxis.title.text == "∂L/∂C₂₂"
    # a Gaussian target's second-order estimate is one point: the legend says so
    g = pe.noise_cloud_figure(ev.noise_cloud(gauss_run, 0, "T"))
    assert any("the same at every draw" in t.name for t in g.data)
    s = pe.spread_figure(logit_run, "T", current=2)
    assert s.layout.yaxis.type == "log" and [t.name for t in s.data if t.showlegend is not False][:2] == \
        [pe.estimator_label("G2"), pe.estimator_label("F2")]


def test_bad_input_is_a_valueerror_with_a_sentence(logit_run):
    tgt = ev.demo_target(ev.DEMO_TARGETS[0])
    with pytest.raises(ValueError, match="lower triangular"):
        ev.single_draw_estimates(tgt, np.zeros(2), np.ones((2, 2)), jax.random.PRNGKey(0), 10)
    with pytest.raises(ValueError, match="length 2"):
        ev.single_draw_estimates(tgt, np.zeros(3), np.eye(2), jax.random.PRNGKey(0), 10)
    with pytest.raises(ValueError, match="number of draws"):
        ev.single_draw_estimates(tgt, np.zeros(2), np.eye(2), jax.random.PRNGKey(0), 1)
    with pytest.raises(ValueError, match="must be one of"):
        ev.demo_target("banana")
    with pytest.raises(ValueError, match="factor must be"):
        ev.noise_cloud(logit_run, 0, "S")
    with pytest.raises(ValueError, match="lower triangle"):
        ev.noise_cloud(logit_run, 0, "C", entries=((0, 1), (1, 1)))
    with pytest.raises(ValueError, match="G1, F1, G2 or F2"):
        pe.estimator_label("H1")
    from vilab.targets import banana
    with pytest.raises(ValueError, match="exact gradients"):
        ev.along_run(banana())


def test_registry_entry_thm2_variance():
    res = passes("tan2025-thm2-variance")
    assert len(res.compared) >= 6


def test_registry_entry_single_draw_run():
    res = passes("tanx-sec4-single-draw-run")
    assert len(res.compared) == 4
