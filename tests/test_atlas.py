"""The stability atlas (vilab.theory.stability.atlas / atlas_limits, vilab.plots.atlas) and Kumar et al. (2025)
Thm 2's eta (vilab.theory.guarantees.theorem2_*), against direct runs, stability_thresholds and the digest's numbers."""

import numpy as np
import pytest

from vilab.theory import definiteness, guarantees, stability
from vilab.algorithms import run
from vilab.family.gaussian import CholCov
from vilab.plots import atlas as aplots
from vilab.plots import theme
from vilab.targets import rotated_gaussian_2d
from vilab.targets.papers import kumar_t2

KAPPAS = [1.0, 31.6, 1000.0]
STEPS = [0.001, 0.0562, 0.316, 1.78]
START = ((-2.0, 2.5), 0.2)


@pytest.fixture(scope="module")
def atlases():
    return {m: stability.atlas(m, KAPPAS, STEPS, n_steps=300, tol=1e-8, m0=START[0], c0=START[1])
            for m in ("srvn", "gd-mc")}


@pytest.mark.slow
@pytest.mark.parametrize("method", ["srvn", "gd-mc"])
def test_each_cell_is_the_run_trajectories_makes(atlases, method):
    """Every cell's count and status equal vilab.algorithms.run on rotated_gaussian_2d(kappa) from (m0, c0 I)
    with a KL tolerance: the Trajectories page's "correlated Gaussian" run."""
    at = atlases[method]
    assert at.iterations.shape == at.outcome.shape == (3, 4)
    for i, k in enumerate(KAPPAS):
        for j, r in enumerate(STEPS):
            tr = run(method, rotated_gaussian_2d(k), CholCov(np.array(START[0]), START[1] * np.eye(2)), 300, r,
                     kl_tol=1e-8)
            assert at.iterations[i, j] == tr.n_steps, (method, k, r)
            assert at.final_kl[i, j] == pytest.approx(float(tr.objective[-1]), rel=1e-9, abs=1e-300)
            if tr.status.startswith("diverged: objective exploded") and at.status[i, j] == "max_steps":
                # chaotic: the KL jumps over orders of magnitude without converging; the end-of-run check sees
                # the atlas's rows (every n/32 steps), not every step (see vilab.theory.stability.atlas)
                assert np.ptp(np.log10(tr.objective[-40:])) > 2, (method, k, r)
                continue
            assert at.status[i, j] == tr.status, (method, k, r)
            assert at.outcome[i, j] == stability.outcome_of(tr.status)
    # the three outcomes all occur: GD diverges beyond 1/lam_max at kappa = 1000, crawls at rho = 1e-3
    assert {"converged", "max_steps", "diverged"} <= set(atlases["gd-mc"].outcome.ravel())
    assert atlases["srvn"].iterations[0, 3] < 300 and atlases["srvn"].outcome[0, 3] == "converged"


@pytest.mark.slow
def test_a_start_within_the_tolerance_takes_no_step():
    at = stability.atlas("srvn", KAPPAS, STEPS, n_steps=300, tol=1e-8, m0=(1.0, 0.0), c0=1.0)
    assert list(at.iterations[0]) == [0, 0, 0, 0] and set(at.status[0]) == {"converged"}  # kappa = 1: q = p
    assert set(at.iterations[2]) != {0}


@pytest.mark.parametrize("call,words", [
    (lambda: stability.atlas("srvn", [0.5], [0.1]), "at least 1"),
    (lambda: stability.atlas("srvn", [2.0], [-0.1]), "positive"),
    (lambda: stability.atlas("srvn", [2.0], [[0.1]]), "vector"),
    (lambda: stability.atlas("nope", [2.0], [0.1]), "nope"),
    (lambda: stability.atlas("srvn", [2.0], [0.1], n_steps=0), "at least 1"),
    (lambda: stability.atlas("srvn", [2.0], [0.1], m0=(1.0, 2.0, 3.0)), "2 numbers"),
    (lambda: stability.atlas("srvn", [2.0], [0.1], c0=0.0), "positive"),
    (lambda: stability.atlas("srvn", np.linspace(1, 2, 100), np.linspace(0.1, 1, 100)), "at most"),
    (lambda: stability.atlas_limits([np.nan], 0.2), "non-finite"),
])
def test_bad_input_is_a_sentence(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_the_limits_are_those_of_stability_thresholds_and_theorem2():
    ks = np.array([1.0, 7.0, 300.0])
    for c0 in (0.2, 1.5):
        lim = stability.atlas_limits(ks, c0)
        for i, k in enumerate(ks):
            A = np.linalg.inv(rotated_gaussian_2d(k).cov)
            want = stability.stability_thresholds(0.5 * (A + A.T), c0 * np.eye(2))
            for m, v in want.items():
                assert lim["linearised"][m][i] == pytest.approx(v, rel=1e-12)
            assert lim["linearised"]["gd-mc"][i] == pytest.approx(1 / k)  # lam_max = kappa
            c = guarantees.theorem2_constants(A, c0 * np.eye(2))
            assert lim["theorem2"][i] == pytest.approx(c["eta_positive_below"], rel=1e-12)
            assert lim["precision_pd"][i] == definiteness.precision_pd_limit(np.eye(2) / c0**2, -A)
        # the precision update from S0 = I / c0^2 stays PD for rho < 1 / (1 - c0^2 lam_min), lam_min = 1
        want_pd = 1.0 / (1.0 - c0**2) if c0 < 1 else np.inf
        assert np.allclose(lim["precision_pd"], want_pd, rtol=1e-9)
    # SR-VN's start condition: x0^2 = c0^2 kappa
    lim = stability.atlas_limits([1000.0], 0.2)
    assert lim["linearised"]["srvn"][0] == pytest.approx(min(2.0, 2 / 40.0, 4 / 39.0))


# ---------------------------------------------------------------------------------------------
# Kumar et al. (2025) Thm 2 (digest Sec. 5.5 and check 14, on T2)


def _t2_precision():
    A = np.linalg.inv(np.asarray(kumar_t2().cov, float))
    return 0.5 * (A + A.T)


def test_theorem2_constants_give_the_digests_step_sizes_on_t2():
    c = guarantees.theorem2_constants(_t2_precision(), 0.2 * np.eye(2))
    assert c["delta"] == pytest.approx(1.2245, abs=1e-4) and c["M"] == pytest.approx(34.6955, abs=1e-4)
    assert c["rho1"] == pytest.approx(1.16e-3, abs=5e-6) and c["rho2"] == pytest.approx(2.04e-3, abs=5e-6)
    assert c["lam_min"] == pytest.approx(1 / 34.6955, rel=1e-4)  # lambda_min(V*) along the flow from 0.04 I
    assert c["xi_l"] ** 2 == pytest.approx(0.08) and c["xi_u"] ** 2 == pytest.approx(np.trace(kumar_t2().cov))
    eta = guarantees.theorem2_eta(1e-3, c["delta"], c["M"], c["lam_min"], c["xi_l"], c["xi_u"])
    assert 1 - 2 * eta * c["delta"] == pytest.approx(0.999960, abs=5e-7)


def test_theorem2_eta_is_eq25_and_positive_exactly_below_2_min_rho1_rho2():
    d, M, lam, xl, xu = 1.3, 20.0, 0.05, 0.3, 0.9
    rho = np.array([1e-5, 1e-4, 1e-3, 1e-2])
    want = np.minimum(lam * rho - M * rho**2 * xu**4 / 2, np.sqrt(2.5) * rho * xl**2 - 5 * rho**2 * xu**4 * M / 4)
    assert np.allclose(guarantees.theorem2_eta(rho, d, M, lam, xl, xu), want, rtol=1e-14)
    s = guarantees.theorem2_steps(M, lam, xl, xu)
    b = s["eta_positive_below"]
    assert b == pytest.approx(2 * min(s["rho1"], s["rho2"]))
    assert guarantees.theorem2_eta(0.999 * b, d, M, lam, xl, xu) > 0 > guarantees.theorem2_eta(1.001 * b, d, M, lam, xl, xu)
    # rho1, rho2 maximise the two quadratics
    for r, part in ((s["rho1"], lambda r: lam * r - M * r**2 * xu**4 / 2),
                    (s["rho2"], lambda r: np.sqrt(2.5) * r * xl**2 - 5 * r**2 * xu**4 * M / 4)):
        assert part(r) > part(0.99 * r) and part(r) > part(1.01 * r)


def test_theorem2_bound_holds_on_an_srvn_run_of_t2():
    """Digest check 14: SR-VN on T2 from C0 = 0.2 I at rho = 1e-3: worst per-step ratio 0.999655 <= 0.999960."""
    t2 = kumar_t2()
    tr = run("srvn", t2, CholCov(np.array([-2.0, 2.5]), 0.2 * np.eye(2)), 20000, 1e-3, kl_tol=1e-8)
    r = guarantees.theorem2_report(_t2_precision(), tr)
    assert tr.status == "converged"
    assert r["applies"] and r["holds"]
    assert r["worst_ratio"] == pytest.approx(0.999655, abs=2e-6)
    assert r["factor"] == pytest.approx(0.999960, abs=2e-6)
    # at rho = 0.5 the same run converges fast, but eta < 0: the theorem is silent
    fast = run("srvn", t2, CholCov(np.array([-2.0, 2.5]), 0.2 * np.eye(2)), 200, 0.5, kl_tol=1e-8)
    r = guarantees.theorem2_report(_t2_precision(), fast)
    assert fast.status == "converged" and r["eta"] < 0 and not r["applies"]


@pytest.mark.parametrize("call,words", [
    (lambda: guarantees.theorem2_eta(-1.0, 1, 1, 1, 1, 1), "positive"),
    (lambda: guarantees.theorem2_eta(0.1, 1, 1, 1, 2.0, 1.0), "xi_l <= xi_u"),
    (lambda: guarantees.theorem2_eta(0.1, "a", 1, 1, 1, 1), "delta"),
    (lambda: guarantees.theorem2_steps(np.inf, 1, 1, 1), "smoothness"),
    (lambda: guarantees.theorem2_constants([[1.0, 0.0], [0.0, -1.0]], np.eye(2)), "positive definite"),
    (lambda: guarantees.theorem2_constants(np.eye(2), np.eye(3)), "2 x 2"),
])
def test_theorem2_bad_input_is_a_sentence(call, words):
    with pytest.raises(ValueError, match=words):
        call()


# ---------------------------------------------------------------------------------------------
# The figure (a synthetic atlas: no runs)


def _fake(method="gd-mc"):
    ks, rs = np.array([1.0, 10.0, 100.0]), np.array([0.01, 0.1, 1.0])
    out = np.array([["max_steps", "converged", "diverged"], ["converged", "converged", "diverged"],
                    ["converged", "diverged", "diverged"]])
    its = np.array([[1000, 20, 3], [300, 5, 2], [40, 4, 1]])
    return stability.Atlas(method, ks, rs, its, out, out.astype(object), np.zeros((3, 3)), 1000, 1e-8, (-2.0, 2.5), 0.2)


def test_cell_edges_centre_each_cell_in_log_scale():
    e = aplots.cell_edges([0.01, 0.1, 1.0])
    assert np.allclose(np.log10(e), [-2.5, -1.5, -0.5, 0.5])
    assert np.allclose(np.sqrt(e[1:] * e[:-1]), [0.01, 0.1, 1.0])


def test_atlas_figure_cells_outcomes_limits_and_selection():
    at = _fake()
    lim = stability.atlas_limits(np.logspace(0, 2, 21), 0.2)
    fig = aplots.atlas_figure(at, lim, selected=(1, 2))
    by = {d.name: d for d in fig.data}
    heat = [d for d in fig.data if d.type == "heatmap"]
    assert len(heat) == 3 and len(heat[0].x) == 4 and len(heat[0].y) == 4  # edges: one more than cells
    z = np.asarray(heat[0].z, float)
    assert z[1, 1] == pytest.approx(np.log10(5)) and np.isnan(z[0, 0]) and np.isnan(z[0, 2])
    assert {"diverged", "not converged in 1,000 steps"} <= set(by)
    cells = by["cells"]
    assert len(cells.x) == 9 and cells.marker.color == "rgba(0,0,0,0)"
    assert [list(map(int, c)) for c in cells.customdata[:2]] == [[0, 0, 1000], [0, 1, 20]]
    assert "converged in 20 iterations" in cells.text[1]
    own = [d for d in fig.data if d.name == "GD in (m, C) limit (linearised)"]
    assert len(own) == 1 and own[0].line.color == theme.look("gd-mc").color
    assert np.allclose(np.asarray(own[0].y)[np.isfinite(np.asarray(own[0].x, float))] *
                       np.asarray(own[0].x, float)[np.isfinite(np.asarray(own[0].x, float))], 1.0)  # rho = 1/kappa
    assert by["selected run"].x == (1.0,) and by["selected run"].y == (10.0,)
    assert "ρ < 1/λ_max (linearisation)" in own[0].hovertemplate
    assert not any("Thm 2" in (d.name or "") for d in fig.data)  # not GD's
    # SR-VN: its own start condition and the Thm 2 region; VN: the PD threshold; every limit with "all"
    names = {d.name for d in aplots.atlas_figure(_fake("srvn"), lim).data}
    assert {"Thm 2 guarantee: η > 0", "SR-VN limit (linearised)"} <= names
    names = {d.name for d in aplots.atlas_figure(_fake("vn"), lim).data}
    assert "precision stays PD (exact)" in names
    names = {d.name for d in aplots.atlas_figure(_fake("vn"), lim, show_all=True).data}
    assert {"ρ < 1/λ_max", "ρ < min(2/λ_max, 4/λ_max²)", "Thm 2 guarantee: η > 0"} <= names
    # a kappa range keeps the rows inside it; an empty one is a sentence
    fig = aplots.atlas_figure(at, lim, kappa_range=(5.0, 200.0))
    assert len(fig.data[0].y) == 3 and len([d for d in fig.data if d.name == "cells"][0].x) == 6
    with pytest.raises(ValueError, match="widen"):
        aplots.atlas_figure(at, lim, kappa_range=(2.0, 3.0))
    # one visual language: a trace named after a method carries its colour
    for show_all in (False, True):
        for d in aplots.atlas_figure(_fake("srvn"), lim, show_all=show_all).data:
            code = theme.method_of(d.name)
            if code is not None and d.line is not None and d.line.color:
                assert d.line.color == theme.look(code).color, d.name
