"""Figures of the Divergences, Online learning and Hierarchical models pages: each method in its look
(the same colour, dash and marker as elsewhere), overlapping methods told apart, readable names, and
the eigenvalue view that shows a sign change next to values of 1e13."""

import numpy as np
import pytest

from vilab import plots
from vilab.plots import divergences as dplots
from vilab.plots import hierarchical as hplots
from vilab.plots import online as po


def test_fixed_point_bars_use_each_methods_look():
    v = {k: np.array([0.2, 0.3]) for k in ("kl", "fisher", "score", "fdb", "sdb")}
    fig = dplots.fixed_point_bars(v, runs={"fdb": np.array([0.21, 0.3])})
    by = {t.name: t for t in fig.data}
    assert by["Fisher"].marker.color == plots.look("fisher").color
    fdb = by[plots.label("fdb") + ", fixed point"]
    assert fdb.marker.color == plots.look("fdb").color != plots.look("fisher").color
    assert fdb.marker.pattern.shape == "/" and not by["Fisher"].marker.pattern.shape
    assert by[plots.label("fdb") + ", Adadelta run"].marker.color == fdb.marker.color


def test_meanfield_figures_name_methods_readably():
    fig = dplots.meanfield_ellipses([0, 0], np.eye(2), {"kl": [1, 1], "fisher": [0.5, 0.5], "forward_kl": [1, 1]})
    names = [t.name for t in fig.data]
    assert names == [plots.label(k) for k in ("true", "kl", "fisher", "forward_kl")]
    assert fig.data[2].line.color == plots.look("fisher").color and fig.data[3].line.dash == plots.look("forward_kl").dash


def test_fig1_collapse_markers_are_crosses():
    from vilab.divergences import fig1_grid

    fig = dplots.fig1_heatmap(fig1_grid(0.3, n=41), marked=(0.8, 0.8))
    layer = next(t for t in fig.data if t.name == "score-based collapse")
    assert layer.marker.symbol == dplots.COLLAPSE_SYMBOL and dplots.COLLAPSE_SYMBOL.startswith("x")
    assert fig.layout.legend.x > 1  # beside the map, not over its title


@pytest.mark.parametrize("c", [1e-4, 0.01, 1.0])
def test_symlog_is_odd_monotone_and_linear_near_zero(c):
    y = np.array([-1e13, -10.0, -c, -c / 100, 0.0, c / 100, c, 10.0, 1e13])
    s = po.symlog(y, c)
    assert np.all(np.diff(s) > 0) and np.allclose(s, -s[::-1])
    assert np.isclose(s[5], (c / 100) / c / np.log(10), rtol=0.01)  # ~ y / (c ln 10) near 0


def test_symlog_ticks_never_crowd():
    for lo, hi, c in [(-8e13, 1.0, 0.01), (-1e15, 1.0, 1e-4), (0.0, 1.0, 0.07), (-3.0, 1.0, 0.01)]:
        vals, texts = po.symlog_ticks(lo, hi, c)
        span = po.symlog(hi, c) - po.symlog(lo, c)
        gaps = np.diff(np.sort(vals))
        assert "0" in texts and len(vals) <= 9 and np.all(gaps >= span / 12 - 1e-9)
        if hi >= 1:
            assert "1" in texts  # the positive side keeps its top


def test_eigenvalue_view_shows_the_sign_change():
    t = np.arange(11)
    exact = 1.0 / (1 + t)
    mom = np.array([1, 0.58, 0.46, -0.49, -0.98, -1.2, -6.8, -89, -2.7e3, -8.7e6, -8e13])
    fig = po.variance_paths(t, {"bong-lin-hess-fc": exact, "bong-lin-hess-fc_mom": mom})
    tr = next(d for d in fig.data if d.name == plots.label("bong-lin-hess-fc_mom"))
    y = np.asarray(tr.y, float)
    lo, hi = fig.layout.yaxis.range
    assert y[2] > 0.05 * (hi - lo) and y[3] < -0.05 * (hi - lo)
    assert np.allclose(np.asarray(tr.customdata, float), mom)  # the hover gives the real value
    # beyond the floor: drawn at the floor with a downward triangle
    fig = po.variance_paths(t, {"bong-lin-hess-fc_mom": mom}, floor=-1e6)
    tr = fig.data[0]
    assert tr.marker.symbol[-1] == "triangle-down" and tr.marker.symbol[0] != "triangle-down"
    assert np.isclose(tr.y[-1], po.symlog(-1e6, 0.1))


def test_linear_stream_legend_is_readable_and_references_drawn_on_top():
    m, S = np.zeros(2), np.eye(2)
    beliefs = {"bong-lin-hess-fc": (m, S), "kalman": (m, S), "batch": (m, S), "bong-lin-hess-fc_mom": (m, -S)}
    fig = po.linear_stream(beliefs, np.arange(3), {"bong-lin-hess-fc": [1, 0.5, 0.3],
                                                   "bong-lin-hess-fc_mom": [1, -0.5, -3]}, t_now=2)
    names = [d.name for d in fig.data if d.showlegend is not False and d.name]
    assert names[:4] == ["BONG", "BONG, moment form", "Kalman filter", "batch posterior"]
    kal = next(d for d in fig.data if d.name == "Kalman filter")
    assert kal.line.dash == plots.look("kalman").dash and kal.line.color == plots.look("kalman").color
    bong = next(d for d in fig.data if d.name == "BONG")
    assert bong.line.width > kal.line.width  # the exact BONG ellipse lies under Kalman's and stays visible


def test_short_labels():
    short, common = po.short_labels(["bong-lin-hess-dlr-10", "bog-lin-hess-dlr-10"])
    assert short == {"bong-lin-hess-dlr-10": "BONG", "bog-lin-hess-dlr-10": "BOG"}
    assert common == "linearised Hessian, diagonal + low rank (rank 10)"
    short, common = po.short_labels(["bong-lin-hess-fc", "bong-lin-hess-fc_mom"], keep_first=True)
    assert short == {"bong-lin-hess-fc": "BONG", "bong-lin-hess-fc_mom": "BONG, moment form"}
    assert po.short_labels(["bong-lin-hess-fc"]) == ({"bong-lin-hess-fc": plots.label("bong-lin-hess-fc")}, "")


def test_hierarchical_methods_sharing_a_look_are_told_apart():
    st = hplots.method_styles(["SNNGM", "KLD", "SDb"])
    assert (st["SNNGM"][0]["color"], st["SNNGM"][0]["dash"]) != (st["KLD"][0]["color"], st["KLD"][0]["dash"])
    assert st["SDb"][0] == plots.line("sdb", width=2.5)
    # two methods whose looks coincide (SNNGM and VN are both natural-gradient blue) are told apart
    st = hplots.method_styles(["SNNGM", "VN"])
    assert st["SNNGM"][0]["color"] == st["VN"][0]["color"] == plots.look("snngm").color
    assert st["SNNGM"][0]["dash"] != st["VN"][0]["dash"] and st["SNNGM"][1]["symbol"] != st["VN"][1]["symbol"]
    fig = hplots.elbo_vs_time({"SNNGM": ([1, 2], [-10, -5]), "KLD": ([1, 2], [-9, -6])})
    assert fig.data[0].line.dash != fig.data[1].line.dash


def test_sweep_series_that_coincide_stay_visible():
    """BBB with one inner iteration is BOG: the first of two identical series is drawn wider, under the
    other; every x tick is a swept value (no small minor-tick digits on the log axis)."""
    xs, ys, ok = [0.01, 0.1], [2.0, 1.0], ["max_steps", "max_steps"]
    fig = po.sweep_plot({"BBB, I = 1": (xs, ys, ok), "BOG": (xs, ys, ok), "BLR": (xs, [1.5, 0.5], ok)}, "α",
                        codes={"BBB, I = 1": "bbb-lin-hess-diag", "BOG": "bog-lin-hess-diag", "BLR": "blr-lin-hess-diag"})
    by = {t.name: t for t in fig.data}
    assert by["BBB, I = 1"].line.width > by["BOG"].line.width and by["BBB, I = 1"].marker.size > by["BOG"].marker.size
    assert by["BLR"].line.width == by["BOG"].line.width
    assert by["BBB, I = 1"].line.color == plots.look("bbb-lin-hess-diag").color
    assert list(fig.layout.xaxis.tickvals) == xs


def test_sci_writes_powers_of_ten():
    assert po.sci(-8.04250514e13) == "−8.04·10¹³" and po.sci(1.1e-16, 2) == "1.1·10⁻¹⁶"
    assert po.sci(0.5) == "0.5" and po.sci(-3) == "−3" and po.sci(99999) == "1.00·10⁵" and po.sci(0) == "0"
