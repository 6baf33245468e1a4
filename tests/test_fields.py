"""vilab.theory.fields: the 1-D ELBO landscape, its gradient fields in four charts, and the scalar 1-D runs
(Tan (2025) Table 2 and the digest's Cholesky table; agreement with vilab.algorithms.run)."""

from __future__ import annotations

import numpy as np
import pytest

from vilab.theory import fields as vf
from vilab.algorithms import run
from vilab.family.gaussian import MeanCov
from vilab.targets import gaussian_target
from vilab.targets.papers import horseshoe_crab_toy, kumar_t2
from vilab_ui import starts as starts_ui

STARTS = [(0.0, 0.1), (0.5, 0.02), (2.0, 0.01)]


@pytest.fixture(scope="module")
def crab():
    return horseshoe_crab_toy()


@pytest.fixture(scope="module")
def gauss():
    return gaussian_target(np.array([1.0]), precision=np.array([[4.0]]))  # Kumar digest T1


def test_run_1d_reproduces_tan_table2_and_the_cholesky_table(crab):
    """Tan (2025) Table 2 (all 12 cells) and the digest's Sec. 6 E1 table for C, T and Corollary 1:
    iterations (smallest rho) with backtracking from rho = 1 and |dL| < 1e-7 |L|."""
    expected = {
        "gd-mv": ["141 (1e-05)", "107 (1e-06)", "115 (1e-06)"],
        "kappa": ["15 (1e-02)", "12 (1e-01)", "9 (1e-02)"],
        "xi": ["11 (1e-02)", "8 (1e-01)", "8 (1e-01)"],
        "lambda": ["6 (1e+00)", "5 (1e+00)", "5 (1e+00)"],
        "tan-1N": ["9 (1e-02)", "10 (1e-01)", "5 (1e-01)"],
        "tan-2N": ["12 (1e-02)", "8 (1e-01)", "7 (1e-01)"],
        "tan-2N-cor1": ["8 (1e-01)", "6 (1e-01)", "6 (1e+00)"],
    }
    for rule, cells in expected.items():
        got = []
        for start in STARTS:
            tr = vf.run_1d(rule, crab, *start)
            assert tr.status == "converged"
            got.append(f"{tr.n_steps} ({tr.step_sizes.min():.0e})")
        assert got == cells, rule
    tr = vf.run_1d("lambda", crab, *STARTS[0])
    np.testing.assert_allclose([tr.mean[-1, 0], tr.cov[-1, 0, 0]], crab.info["optimum"], rtol=2e-5)
    assert vf.euclidean_kappa_ieee(crab, *STARTS[1]).n_steps == 107


@pytest.mark.parametrize("rule", list(vf.RULES_1D))
def test_run_1d_equals_the_matrix_updates_of_vilab_algorithms(rule, crab, gauss):
    """The scalar 1-D forms are the d = 1 case of vilab.family.natgrad's matrix updates: same iterates (to
    round-off), same step sizes, same statuses, as vilab.algorithms.run."""
    cases = [(gauss, (-1.5, 2.25), "backtracking", 1.0), (gauss, (2.5, 0.0125), "constant", 0.1),
             (gauss, (-1.5, 2.25), "constant", 0.7)]
    if rule != "gd-mv":  # the Euclidean crab runs are chaotic at one ulp (see run_1d's docstring)
        cases += [(crab, s, "backtracking", 1.0) for s in STARTS]
    for target, (m0, s0), schedule, rho in cases:
        a = vf.run_1d(rule, target, m0, s0, rho, schedule=schedule, rel_tol=1e-9, n_steps=200)
        b = run(rule, target, MeanCov(np.array([m0]), np.array([[s0]])), 200, rho, schedule=schedule, rel_tol=1e-9)
        assert a.status == b.status and a.n_steps == b.n_steps, (target.name, m0, schedule, rho)
        np.testing.assert_array_equal(a.step_sizes, b.step_sizes)
        scale = 1.0 if not a.diverged else np.maximum(1.0, np.abs(b.mean))
        np.testing.assert_allclose(a.mean / scale, b.mean / scale, atol=1e-12)
        np.testing.assert_allclose(a.cov, b.cov, rtol=1e-10, atol=1e-15)
        assert a.objective_name == b.objective_name
        if not a.diverged:
            np.testing.assert_allclose(a.objective, b.objective, rtol=1e-9, atol=1e-12)


def test_run_1d_reports_divergence_and_rejects_bad_input(crab, gauss):
    tr = vf.run_1d("gd-mv", crab, 0.5, 0.02, 0.01, schedule="constant")
    assert tr.status == "diverged: covariance lost positive definiteness" and tr.n_steps == 0
    tr = vf.run_1d("xi", gauss, 0.0, 1.0, 5.0, schedule="constant")  # P - 2 rho G < 0
    assert tr.status == "diverged: precision lost positive definiteness"
    tr = vf.run_1d("tan-1N", gauss, -1.5, 2.25, 0.7, schedule="constant")  # SR-VN with x^2 = 9 > 1 + 4/rho
    assert tr.diverged and tr.n_steps >= 1
    for bad in [dict(rule="adam"), dict(s2_0=-1.0), dict(step_size=0.0), dict(schedule="armijo"), dict(n_steps=0)]:
        kw = dict(rule="kappa", target=gauss, mu0=0.0, s2_0=1.0) | bad
        with pytest.raises(ValueError):
            vf.run_1d(**kw)
    with pytest.raises(ValueError, match="1-D"):
        vf.run_1d("kappa", kumar_t2(), 0.0, 1.0)


def test_elbo_grads_match_finite_differences_and_the_oracle(crab, gauss):
    mu, s2 = np.meshgrid(np.linspace(0.5, 1.5, 5), np.linspace(0.001, 0.05, 4))
    h = 1e-7
    for t in (crab, gauss):
        L, g, gs = vf.elbo_grads_1d(t, mu, s2)
        assert L.shape == g.shape == gs.shape == mu.shape
        np.testing.assert_allclose((vf.elbo_grads_1d(t, mu + h, s2)[0] - vf.elbo_grads_1d(t, mu - h, s2)[0]) / (2 * h),
                                   g, rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose((vf.elbo_grads_1d(t, mu, s2 + h)[0] - vf.elbo_grads_1d(t, mu, s2 - h)[0]) / (2 * h),
                                   gs, rtol=1e-5, atol=1e-4)
    # the Gaussian closed form (no compilation) equals the general jitted path through vilab.algorithms.oracle
    L, g, gs = vf.elbo_grads_1d(gauss, mu, s2)
    Lo, go, gso = (np.asarray(a) for a in vf._jitted_fields(gauss)(mu.ravel(), s2.ravel()))
    np.testing.assert_allclose(np.stack([L.ravel(), g.ravel(), gs.ravel()]), np.stack([Lo, go, gso]), rtol=1e-13)
    # the grid helpers agree with the pointwise one
    np.testing.assert_allclose(vf.elbo_grid_1d(crab, mu[0], s2[:, 0]), vf.elbo_grads_1d(crab, mu, s2)[0], rtol=1e-14)
    with pytest.raises(ValueError):
        vf.elbo_grads_1d(crab, mu, -s2)


def test_charts_round_trip_and_fields_transform_correctly(gauss):
    rng = np.random.default_rng(0)
    mu, s2 = rng.normal(size=20), rng.uniform(0.05, 3.0, size=20)
    _, g, gs = vf.elbo_grads_1d(gauss, mu, s2)
    for chart in vf.CHARTS:
        x, y = vf.to_chart(mu, s2, chart)
        m2, v2 = vf.from_chart(x, y, chart)
        np.testing.assert_allclose(np.c_[m2, v2], np.c_[mu, s2], rtol=1e-12)
        X, Y, Ex, Ey, Nx, Ny = vf.chart_fields(mu, s2, g, gs, chart)
        # the natural field is one tangent vector: its chart components are the pushforward of
        # (s2 g_mu, 2 s2^2 g_s2) (Tan Table 1), checked by a finite-difference Jacobian of the chart
        n_mu, n_s2 = s2 * g, 2 * s2**2 * gs
        e = 1e-6
        xp, yp = vf.to_chart(mu + e * n_mu, s2 + e * n_s2, chart)
        xm, ym = vf.to_chart(mu - e * n_mu, s2 - e * n_s2, chart)
        np.testing.assert_allclose(Nx, (xp - xm) / (2 * e), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(Ny, (yp - ym) / (2 * e), rtol=1e-6, atol=1e-8)
        # the Euclidean field is a covector: <grad_phi L, dphi> = dL, whatever the chart
        np.testing.assert_allclose(Ex * Nx + Ey * Ny, g * n_mu + gs * n_s2, rtol=1e-9)
    # in natural parameters the natural gradient of a Gaussian target points straight at the optimum
    x, y, _, _, Nx, Ny = vf.chart_fields(mu, s2, g, gs, vf.CHARTS[3])
    star = np.array([1.0 * 4.0, -2.0])  # (m a, -a/2)
    np.testing.assert_allclose(Nx * (star[1] - y) - Ny * (star[0] - x), 0.0, atol=1e-9 * np.abs(Nx).max())
    assert np.all(Nx * (star[0] - x) + Ny * (star[1] - y) > 0)
    # gradient_field_1d (the (mu, s2)-plane API) agrees
    U, V = vf.gradient_field_1d(gauss, mu[:3], s2[:4], "natural")
    M, S = np.meshgrid(mu[:3], s2[:4])
    _, gg, gss = vf.elbo_grads_1d(gauss, M, S)
    np.testing.assert_allclose(np.stack([U, V]), np.stack(vf.chart_fields(M, S, gg, gss, vf.CHARTS[0])[4:]))
    with pytest.raises(ValueError):
        vf.from_chart(0.0, 0.5, vf.CHARTS[3])
    with pytest.raises(ValueError):
        vf.to_chart(0.0, 1.0, "polar")


def test_log_variance_chart_matches_finite_differences(crab, gauss):
    """The (mu, log sigma^2) chart: its Euclidean field is the gradient of u -> L(mu, e^u) (finite
    differences of the ELBO itself), its natural field the chart image of Tan's (s2 g_mu, 2 s2^2 g_s2),
    i.e. d(log s2)/dt = 2 s2 g_s2; the window is the rectangle of log variances."""
    chart = "(mu, log sigma^2)"
    assert chart in vf.CHARTS and vf.CHARTS[:4] == ("(mu, sigma^2)", "(mu, sigma)", "(mu, log sigma)",
                                                     "natural (mu/sigma^2, -1/(2 sigma^2))")  # URLs keep working
    assert vf.chart_labels(chart) == ("mu", "log sigma^2")
    mu, s2 = np.meshgrid(np.linspace(-0.5, 2.0, 4), np.array([0.002, 0.01, 0.05, 0.3]))
    x, u = vf.to_chart(mu, s2, chart)
    np.testing.assert_allclose(u, np.log(s2), rtol=1e-15)
    h = 1e-6
    for t in (crab, gauss):
        L, g, gs = vf.elbo_grads_1d(t, mu, s2)
        _, _, Ex, Ey, Nx, Ny = vf.chart_fields(mu, s2, g, gs, chart)

        def L_chart(xx, uu):
            return vf.elbo_grads_1d(t, *vf.from_chart(xx, uu, chart))[0]

        np.testing.assert_allclose(Ex, (L_chart(x + h, u) - L_chart(x - h, u)) / (2 * h), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(Ey, (L_chart(x, u + h) - L_chart(x, u - h)) / (2 * h), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(Nx, s2 * g, rtol=1e-12)
        np.testing.assert_allclose(Ny, 2 * s2 * gs, rtol=1e-12)
    # on the Gaussian target N(1, 1/4) the natural field vanishes at the optimum (1, log 1/4) only
    _, g, gs = vf.elbo_grads_1d(gauss, np.array([1.0, 1.0]), np.array([0.25, 0.5]))
    _, _, _, _, Nx, Ny = vf.chart_fields(np.array([1.0, 1.0]), np.array([0.25, 0.5]), g, gs, chart)
    np.testing.assert_allclose([Nx[0], Ny[0]], 0.0, atol=1e-15)
    assert Ny[1] < 0  # too wide: the variance shrinks
    box = vf.chart_window(chart, ((-0.25, 2.25), (0.0005, 0.11)))
    np.testing.assert_allclose(box, ((-0.25, 2.25), (np.log(0.0005), np.log(0.11))))
    grid = vf.chart_grid(crab, chart, box, 7)
    m_g, s_g = vf.from_chart(*np.meshgrid(grid["xs"], grid["ys"]), chart)
    np.testing.assert_allclose(grid["L"], vf.elbo_grads_1d(crab, m_g, s_g)[0])
    np.testing.assert_allclose(vf.from_chart(0.3, np.log(0.02), chart), (0.3, 0.02), rtol=1e-14)


def test_chart_window_and_grid(crab):
    window = ((-0.25, 2.25), (0.0005, 0.11))
    pts = STARTS + [crab.info["optimum"]]
    box = vf.chart_window(vf.CHARTS[2], window, pts)
    np.testing.assert_allclose(box, ((-0.25, 2.25), (0.5 * np.log(0.0005), 0.5 * np.log(0.11))))
    (x0, x1), (y0, y1) = vf.chart_window(vf.CHARTS[3], window, pts)
    x, y = vf.to_chart(np.array(pts)[:, 0], np.array(pts)[:, 1], vf.CHARTS[3])
    assert x0 < x.min() and x1 > x.max() and y0 < y.min() and y.max() < y1 < 0
    grid = vf.chart_grid(crab, vf.CHARTS[3], ((x0, x1), (y0, y1)), 9)
    assert grid["L"].shape == (9, 9) and grid["xs"].shape == (9,)
    mu, s2 = vf.from_chart(*np.meshgrid(grid["xs"], grid["ys"]), vf.CHARTS[3])
    ok = np.isfinite(grid["L"])
    np.testing.assert_allclose(grid["L"][ok], vf.elbo_grads_1d(crab, mu, s2)[0][ok])
    with pytest.raises(ValueError):
        vf.chart_window(vf.CHARTS[0], ((0, 1), (0.0, 1.0)))


def test_parse_and_append_starts():
    assert starts_ui.parse_starts("(0, 0.1); 0.5,0.02;2 0.01") == STARTS
    assert len(starts_ui.parse_starts("; ".join(["0,1"] * 12))) == 8
    for bad, msg in [("1,-3", "positive variance"), ("1", "could not read"), ("a,b", "could not read"), ("", "at least")]:
        with pytest.raises(ValueError, match=msg):
            starts_ui.parse_starts(bad)
    assert starts_ui.append_start("0,0.1", 1.23456, 0.0123456) == "0,0.1; 1.23,0.0123"
    assert starts_ui.append_start("  ", 1.0, 2.0) == "1,2"
    with pytest.raises(ValueError):
        starts_ui.append_start("0,1", 0.0, 0.0)


def test_starts_beyond_the_maximum_are_refused_or_reported():
    """At most MAX_STARTS starts are drawn: parse_starts(max_starts=None) returns them all (the page says
    which are dropped), and append_start refuses a start beyond the maximum with a sentence."""
    eight = "; ".join(f"{k},0.1" for k in range(starts_ui.MAX_STARTS))
    assert len(starts_ui.parse_starts(eight + "; 9,0.2", max_starts=None)) == starts_ui.MAX_STARTS + 1
    assert starts_ui.parse_starts(eight + "; 9,0.2")[-1] == (starts_ui.MAX_STARTS - 1.0, 0.1)
    with pytest.raises(ValueError, match=f"At most {starts_ui.MAX_STARTS} starting points"):
        starts_ui.append_start(eight, 9.0, 0.2)
    seven = eight.rsplit(";", 1)[0] + ";  ;"  # empty parts are not starts
    assert starts_ui.append_start(seven, 9.0, 0.2).endswith("; 9,0.2")
    assert starts_ui.append_start(eight, 9.0, 0.2, max_starts=None).endswith("; 9,0.2")
