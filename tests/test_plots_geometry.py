"""Plot builders of the geometry pages (vilab.plots.fields / trajectories / pd / flows), synthetic data."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from vilab import plots
from vilab.plots import fields as pf
from vilab.plots import flows as pfl
from vilab.plots import pd as ppd
from vilab.plots import trajectories as ptr
from vilab.core.trace import Trace


def _trace(n=30, status="converged", d=2, seed=0):
    rng = np.random.default_rng(seed)
    mean = np.cumsum(rng.normal(size=(n + 1, d)) * 0.1, axis=0)
    cov = np.stack([np.eye(d) * (1 + 0.1 * k) for k in range(n + 1)])
    obj = 10.0 * 0.8 ** np.arange(n + 1)
    return Trace(mean=mean, cov=cov, objective=obj, step_sizes=np.full(n, 0.1), status=status, method="x",
                 objective_name="KL")


# ------------------------------------------------------------------------------------------- fields

def test_arrow_segments_normalised_lengths_and_directions():
    X, Y = np.meshgrid(np.linspace(0, 1, 5), np.linspace(0, 2, 4))
    U = np.ones_like(X) * 3.0
    V = np.ones_like(X) * 1e6  # huge vertical component
    xs, ys, mag = pf.arrow_segments(X, Y, U, V, normalise=True, length=0.1, aspect=2.0)
    assert xs.shape == ys.shape == (9 * X.size,)
    shaft = np.stack([xs.reshape(-1, 9)[:, :2], ys.reshape(-1, 9)[:, :2]], -1)
    d = shaft[:, 1] - shaft[:, 0]
    screen = np.hypot(d[:, 0], d[:, 1] / 2.0)
    np.testing.assert_allclose(screen, 0.1, rtol=1e-12)  # normalised in screen units
    assert np.all(d[:, 1] > 0) and np.all(d[:, 0] > 0)  # points along (U, V)
    np.testing.assert_allclose(mag, np.hypot(3.0, 1e6))


def test_arrow_segments_unnormalised_scales_by_magnitude_and_skips_zero():
    X = np.array([0.0, 1.0, 2.0])
    Y = np.zeros(3)
    U = np.array([1.0, 2.0, 0.0])
    V = np.zeros(3)
    xs, ys, mag = pf.arrow_segments(X, Y, U, V, normalise=False, length=1.0)
    assert len(mag) == 2  # the zero vector has no arrow
    tips = xs.reshape(-1, 9)[:, 1] - xs.reshape(-1, 9)[:, 0]
    np.testing.assert_allclose(tips, [0.5, 1.0])
    with pytest.raises(ValueError):
        pf.arrow_segments(X, Y, U[:2], V, normalise=False)


def test_field_figure_layers_and_click_grid():
    xs, ys = np.linspace(0, 2, 6), np.linspace(0.01, 0.1, 5)
    X, Y = np.meshgrid(xs, ys)
    U, V = -(X - 1), -(Y - 0.05)
    Z = -((X - 1) ** 2 + (Y - 0.05) ** 2)
    fig = pf.field_figure(xs, ys, U, V, objective=Z, optimum=(1, 0.05),
                          paths={"natural": (np.array([0, 1]), np.array([0.1, 0.05])),
                                 "euclidean": (np.array([2, 5.0]), np.array([0.01, 0.5]), "diverged: sigma^2 < 0")},
                          click_grid=(np.linspace(0, 2, 3), np.linspace(0.01, 0.1, 3)))
    assert isinstance(fig, go.Figure)
    names = [t.name for t in fig.data]
    assert "objective" in names and "optimum" in names and pf.CLICK_TRACE_NAME in names
    # paths are named by their readable label (vilab.plots.label), drawn in their method's look
    assert "natural gradient" in names and "Euclidean gradient" in names
    eu = [t for t in fig.data if t.name == "Euclidean gradient"][0]
    assert eu.line.dash == plots.line("euclidean")["dash"] and eu.line.color == plots.color("euclidean")
    # the diverged label is the short word, inside the plot (the last point lies outside), the reason on hover
    ann = [a for a in fig.layout.annotations if a.text == "diverged"]
    assert len(ann) == 1 and "sigma^2 < 0" in ann[0].hovertext
    assert 0 < ann[0].x < 2 and 0.01 < ann[0].y < 0.1 and ann[0].ax < 0 and ann[0].ay > 0  # pointing inwards
    click = [t for t in fig.data if t.name == pf.CLICK_TRACE_NAME][0]
    assert len(click.x) == 9
    with pytest.raises(ValueError):
        pf.field_figure(xs, ys, U[:, :2], V)


def test_field_figure_groups_paths_and_draws_log_gap_contours():
    xs, ys = np.linspace(0, 2, 6), np.linspace(0.01, 0.1, 5)
    X, Y = np.meshgrid(xs, ys)
    Z = -((X - 1) ** 2 + (Y - 0.05) ** 2)
    paths = {f"rule A from {i}": (np.array([i, 1.0]), np.array([0.1, 0.05]), "converged", "gd-mv") for i in range(3)}
    paths["rule B from 0"] = (np.array([0.0, 1.0]), np.array([0.1, 0.05]), "converged", "kappa")
    fig = pf.field_figure(xs, ys, -(X - 1), -(Y - 0.05), objective=Z, objective_max=0.0, paths=paths)
    lines = [t for t in fig.data if getattr(t, "mode", None) == "lines+markers"]
    assert [t.name for t in lines] == [plots.label("gd-mv")] * 3 + [plots.label("kappa")]
    assert [t.showlegend for t in lines] == [True, False, False, True]
    assert len({t.line.color for t in lines[:3]}) == 1 and lines[3].line.color != lines[0].line.color
    assert lines[0].marker.symbol == plots.marker("gd-mv")["symbol"] and lines[0].line.dash != lines[3].line.dash
    contour = [t for t in fig.data if t.name == "objective"][0]
    # -log10(gap to the maximum): larger closer to the optimum, finite everywhere on the grid
    z = np.asarray(contour.z, float)
    np.testing.assert_allclose(z, -np.log10(np.maximum(-Z, 1e-9)))
    assert z[2, 2] == z.max()


def test_field_pair_figure_shares_axes_legend_and_numbers_the_starts():
    """Tan (2025) Fig. 1 side by side: Euclidean left, natural right, one legend entry per rule (under the
    plots, away from the toolbar), the starts numbered with one shape each in both panels, arrows as
    markers turned along the field, a click grid in both panels (or the arrows as click targets)."""
    xs, ys = np.linspace(0, 2, 7), np.linspace(-5, -1, 6)
    X, Y = np.meshgrid(xs, ys)
    E = (-(X - 1), -(Y + 3) * 10)
    N = (-(X - 1), -(Y + 3))
    starts = np.array([[0.2, -1.5], [1.8, -4.5], [1.0, -2.0]])
    paths_l = {f"start {k + 1}": (np.array([s[0], 1.0]), np.array([s[1], -3.0]), "converged", "gd-mv")
               for k, s in enumerate(starts)}
    paths_r = {f"start {k + 1} {c}": (np.array([s[0], 1.0]), np.array([s[1], -3.0]), "converged", c)
               for k, s in enumerate(starts) for c in ("kappa", "lambda")}
    paths_r["start 1 xi"] = (np.array([0.2, 9.0]), np.array([-1.5, 7.0]), "diverged: precision lost positive definiteness",
                             "xi")
    fig = pf.field_pair_figure(xs, ys, [E, N], paths=(paths_l, paths_r), objective=-(X - 1) ** 2 - (Y + 3) ** 2,
                               optimum=(1.0, -3.0), starts=starts, click_grid=(xs, ys), xlabel="mean μ",
                               ylabel="log σ²", height=400)
    assert [a.text for a in fig.layout.annotations][:2] == ["Euclidean gradient", "natural gradient"]
    assert fig.layout.legend.orientation == "h" and fig.layout.legend.yref == "container" and fig.layout.legend.y == 0
    legend = [t.name for t in fig.data if t.type == "scatter" and t.showlegend is not False]
    assert sorted(legend) == sorted([plots.label(c) for c in ("gd-mv", "kappa", "lambda", "xi")] + ["optimum"])
    assert {t.xaxis for t in fig.data if t.name == plots.label("gd-mv")} == {"x"}
    assert {t.xaxis for t in fig.data if t.name == plots.label("kappa")} == {"x2"}
    st = [t for t in fig.data if t.name == "starts"]
    assert len(st) == 2 and list(st[0].text) == ["1", "2", "3"]
    assert list(st[0].marker.symbol) == [pf.start_symbol(k)[0] for k in range(3)] and len(set(st[0].marker.symbol)) == 3
    assert len([t for t in fig.data if t.name == pf.CLICK_TRACE_NAME]) == 2
    arrows = [t for t in fig.data if t.type == "scatter" and t.marker.symbol == "arrow"]
    assert len(arrows) == 2 and len(arrows[0].x) == X.size
    assert all(a.hoverinfo == "skip" for a in arrows)  # with a click grid the arrows are not click targets
    # clickable: the arrows are the click targets (hover text, never dimmed by a selection), no invisible grid
    fc = pf.field_pair_figure(xs, ys, [E, N], paths=(paths_l, paths_r), starts=starts, clickable=True)
    assert not [t for t in fc.data if t.name == pf.CLICK_TRACE_NAME]
    ca = [t for t in fc.data if t.type == "scatter" and t.marker.symbol == "arrow"]
    assert len(ca) == 2 and all("start at" in a.hovertemplate and a.unselected.marker.opacity == 1 for a in ca)
    assert fc.layout.hoverdistance == 40
    # the arrow at the grid's corner (0, -5) points right and up (screen units: the box taken as square)
    a0 = np.asarray(arrows[1].marker.angle)[0]
    np.testing.assert_allclose(a0, np.degrees(np.arctan2(1 / 2, 2 / 4)))
    div = [a for a in fig.layout.annotations if a.text == "diverged"]
    assert len(div) == 1 and div[0].xref == "x2" and 0 <= div[0].x <= 2 and -5 <= div[0].y <= -1
    with pytest.raises(ValueError):
        pf.field_pair_figure(xs, ys, [E], paths=(None, None))


# ------------------------------------------------------------------------------------- trajectories

def test_paths_figure_marks_divergence_and_limits_ellipses():
    traces = {"vn": _trace(), "gd-mv": _trace(status="diverged: covariance lost positive definiteness", n=200)}
    fig = ptr.paths_figure(traces, every=1, max_ellipses=10, truth=(np.zeros(2), np.eye(2)), bounds=((-3, 3), (-3, 3)))
    names = [t.name for t in fig.data]
    assert "VN" in names and any(n and n.startswith("GD in (m, V) (diverged") for n in names)  # readable labels
    ell = [t for t in fig.data if t.name is None and t.mode == "lines" and t.legendgroup == "gd-mv"][0]
    assert np.sum(np.isnan(np.asarray(ell.x, float))) <= 11
    assert ell.line.dash == plots.line("gd-mv")["dash"]  # each method's ellipses in its own dash, no fill
    assert any("diverged" in a.text for a in fig.layout.annotations)
    with pytest.raises(ValueError):
        ptr.paths_figure({"x": _trace(d=3)})
    with pytest.raises(ValueError):
        ptr.paths_figure(traces, every=0)


def test_paths_figure_keeps_coinciding_paths_visible():
    """On a Gaussian target GD in (m, C) and BW-GD move the mean alike: equal mean paths. The first drawn gets
    the wider line and larger markers, each its own colour, dash and marker symbol."""
    a, b = _trace(n=40), _trace(n=40)
    b.cov[1:] *= 0.5  # same means, other covariances
    traces = {"gd-mc": a, "bwgd": b, "vn": _trace(n=40, seed=3)}
    assert ptr.coinciding({k: t.mean for k, t in traces.items()}) == [["gd-mc", "bwgd"]]
    fig = ptr.paths_figure(traces, every=10)
    path = {t.name: t for t in fig.data if t.mode == "lines+markers"}
    gd, bw, vn = path["GD in (m, C)"], path["BW-GD"], path["VN"]
    centres = {t.name: t for t in fig.data if t.mode == "markers" and str(t.name).endswith(": ellipse centres")}
    assert gd.line.width > bw.line.width and bw.line.width == vn.line.width
    assert centres["GD in (m, C): ellipse centres"].marker.size > centres["BW-GD: ellipse centres"].marker.size
    assert (gd.line.color, gd.line.dash, gd.marker.symbol) == (plots.color("gd-mc"), plots.line("gd-mc")["dash"],
                                                                plots.marker("gd-mc")["symbol"])
    assert gd.line.dash != bw.line.dash and gd.marker.symbol != bw.marker.symbol and gd.line.color != bw.line.color
    # markers only at the ellipse centres (every 10 steps and the last), in the method's look; the path's own
    # markers are size 0 and at most one is drawn
    gc = centres["GD in (m, C): ellipse centres"]
    np.testing.assert_array_equal(gc.customdata, [0, 10, 20, 30, 40])
    np.testing.assert_array_equal(gc.x, np.asarray(gd.x)[[0, 10, 20, 30, 40]])
    assert gc.marker.symbol == gd.marker.symbol and gc.legendgroup == gd.legendgroup and gc.showlegend is False
    assert gd.marker.size == 0 and gd.marker.maxdisplayed == 1 and len(gd.x) == 41
    assert fig.layout.legend.itemsizing == "constant"
    assert ptr.coinciding({"a": np.ones(3), "b": np.ones(3) + 1e-3}) == []


def test_objective_figure_log_axis_and_gap():
    fig = ptr.objective_figure({"a": _trace()}, optimum=0.0, log_x=True)
    assert fig.layout.yaxis.type == "log" and fig.layout.xaxis.type == "log"
    assert fig.data[0].x[0] == 1  # iteration 0 drawn at 1 on a log axis
    tr = _trace()
    tr.objective[5:] = tr.objective[-1]
    fig = ptr.objective_figure({"a": tr}, optimum=float(tr.objective[-1]))
    assert len(fig.data[0].x) == 5  # zero gaps are dropped, not plotted as -inf


def test_animation_figure_has_frames_and_play_button():
    fig = ptr.animation_figure({"vn": _trace(n=100), "bwgd": _trace(n=10)}, n_frames=20,
                               contour=go.Contour(z=np.ones((3, 3)), name="target"), truth=(np.zeros(2), np.eye(2)))
    assert 2 <= len(fig.frames) <= 22
    assert fig.layout.updatemenus[0].buttons[0].label == "Play"
    assert len(fig.layout.sliders[0].steps) == len(fig.frames)
    # frames replace only the runs' traces and are redrawn in full: the contours and the target ellipse stay
    n_static = 3
    assert fig.data[0].type == "contour" and all(list(f.traces) == list(range(n_static, len(fig.data))) for f in fig.frames)
    assert fig.layout.updatemenus[0].buttons[0].args[1]["frame"]["redraw"] is True
    assert all(s.args[1]["frame"]["redraw"] is True for s in fig.layout.sliders[0].steps)
    # distinct ellipses: no fill, each in its method's colour and dash
    ells = [d for d in fig.frames[-1].data if d.mode == "lines" and d.showlegend is False]
    assert len(ells) == 2 and all(d.fill in (None, "none") for d in ells)
    assert [(d.line.color, d.line.dash) for d in ells] == [(plots.color(m), plots.line(m)["dash"]) for m in ("vn", "bwgd")]
    # the shorter run stays at its last iterate in late frames
    last = fig.frames[-1]
    b_path = [d for d in last.data if d.legendgroup == "bwgd" and d.mode == "lines" and d.name][0]
    assert len(b_path.x) == 11 and b_path.name == "BW-GD"


def test_frame_indices():
    k = ptr.frame_indices(1001, 50)
    assert k[0] == 0 and k[-1] == 1000 and len(k) <= 52 and np.all(np.diff(k) > 0)
    np.testing.assert_array_equal(ptr.frame_indices(5, 50), np.arange(5))


def test_sweep_figure_markers_and_threshold_lines():
    steps = np.logspace(-3, 0, 4)
    fig = ptr.sweep_figure(steps, {"vn": [100, 20, 5, 1], "bwgd": [900, 90, 0, 0]},
                           {"vn": ["converged"] * 4, "bwgd": ["converged", "converged", "max_steps", "diverged: x"]},
                           thresholds={"bwgd": 0.03, "vn": None}, max_steps=1000)
    assert fig.layout.xaxis.type == "log"
    bw = [t for t in fig.data if t.name == "BW-GD"][0]
    assert np.isnan(bw.y[3]) and bw.y[0] == 900
    assert any(getattr(s, "x0", None) == 0.03 for s in fig.layout.shapes)
    assert any(t.name == "BW-GD: diverged" for t in fig.data)
    assert {a.text for a in fig.layout.annotations} >= {"step limit", "diverged", "BW-GD limit"}
    fig = ptr.sweep_figure(steps, {"gd-mc": [1, 1, 1, 1], "bwgd": [2, 2, 2, 2]},
                           {"gd-mc": ["converged"] * 4, "bwgd": ["converged"] * 4},
                           thresholds={"gd-mc": 0.03, "bwgd": 0.03})
    assert len(fig.layout.shapes) == 1  # shared limits: one line, labelled with both methods
    assert [a.text for a in fig.layout.annotations] == ["GD in (m, C), BW-GD limit"]
    with pytest.raises(ValueError):
        ptr.sweep_figure(steps, {"vn": [1, 2]}, {"vn": ["converged"] * 2})


def test_sweep_figure_shows_every_methods_markers_where_counts_coincide():
    """Three methods with the same counts (as GD in (m, C), BW-GD and FB-GVI on a Gaussian target): each
    keeps its symbol, the earlier-drawn markers are larger so that all show; a fourth, different one is not
    enlarged."""
    steps = np.logspace(-3, 0, 4)
    same = [500, 60, 8, 0]
    sts = ["converged"] * 3 + ["diverged: x"]
    fig = ptr.sweep_figure(steps, {"gd-mc": same, "bwgd": same, "fbgvi": same, "vn": [90, 30, 9, 1]},
                           {"gd-mc": sts, "bwgd": sts, "fbgvi": sts, "vn": ["converged"] * 4}, max_steps=1000)
    main = {t.name: t for t in fig.data if t.mode == "lines+markers"}
    sizes = [np.asarray(main[plots.label(m)].marker.size, float) for m in ("gd-mc", "bwgd", "fbgvi", "vn")]
    assert np.all(sizes[0] > sizes[1]) and np.all(sizes[1] > sizes[2]) and np.all(sizes[2] == sizes[3])
    assert len({main[plots.label(m)].marker.symbol for m in ("gd-mc", "bwgd", "fbgvi", "vn")}) == 4
    div = {t.name: t for t in fig.data if t.name and t.name.endswith(": diverged")}
    assert len(div) == 3 and div["GD in (m, C): diverged"].marker.size[0] > div["FB-GVI: diverged"].marker.size[0]


# ----------------------------------------------------------------------------------------------- pd

def test_quadric_level_set_kinds_and_points_on_the_set():
    rng = np.random.default_rng(1)
    for M, kind in [(np.diag([1.0, 4.0]), "ellipse"), (np.diag([-0.5, 2.0]), "hyperbola"),
                    (np.diag([0.0, 2.0]), "lines"), (np.diag([-1.0, -2.0]), "empty")]:
        Q, _ = np.linalg.qr(rng.normal(size=(2, 2)))
        A = Q @ M @ Q.T
        x, y, k = ppd.quadric_level_set(A, center=(1.0, -1.0), r=2.0)
        assert k == kind
        ok = np.isfinite(x)
        if kind != "empty":
            P = np.stack([x[ok] - 1.0, y[ok] + 1.0])
            np.testing.assert_allclose(np.einsum("in,ij,jn->n", P, A, P), 2.0, rtol=1e-8, atol=1e-8)
        if kind == "hyperbola":
            assert np.sum(~ok) == 1  # two branches
    with pytest.raises(ValueError):
        ppd.quadric_level_set(np.eye(3))


def test_level_set_eigen_and_pd_loss_figures():
    fig = ppd.level_set_figure({"precision update": np.diag([-0.1, 0.2]), "T update": np.diag([0.1, 0.2])},
                               points={"theta": (3, 0)})
    labels = [t.name for t in fig.data]
    assert any("hyperbola" in n for n in labels) and any("ellipse" in n for n in labels)
    rh = np.linspace(0, 1, 11)
    fig = ppd.eigenvalue_figure(rh, {"S": np.stack([rh, -rh], 1)}, current=0.3, markers={"limit 0.294": 0.294})
    assert [t.name for t in fig.data] == ["S", "S (2)", "limit 0.294", "rho = 0.3"]
    assert list(fig.data[2].x) == [0.294, 0.294] and list(fig.data[2].y) == [-1.0, 1.0]  # spans the eigenvalues
    assert len(fig.layout.shapes) == 1  # the zero line
    with pytest.raises(ValueError):
        ppd.eigenvalue_figure(rh, {"S": np.ones((3, 2))})
    fig = ppd.pd_loss_figure({"precision": 0.4, "T": 0.0}, n_runs=100)
    assert list(fig.data[0].y) == [0.4, 0.0]
    with pytest.raises(ValueError):
        ppd.pd_loss_figure({"a": 1.5}, n_runs=10)


# -------------------------------------------------------------------------------------------- flows

def test_log_kl_and_gap_figures():
    t = np.linspace(0, 5, 50)
    fig = pfl.log_kl_figure({"natural": (t, np.exp(-2 * t))}, discrete={"VN": (t[::10], np.exp(-2 * t[::10]))},
                            references={"e^-2t": (t, np.exp(-2 * t)), "bound": (t, np.zeros_like(t))})
    assert fig.layout.yaxis.type == "log"
    assert len(fig.data) == 4
    assert len(fig.data[1].x) == 5 and len(fig.data[2].x) == 50 and len(fig.data[3].x) == 0  # zeros dropped
    fig = pfl.log_kl_figure({}, discrete={"long run": (np.linspace(0, 1, 400), np.exp(-np.linspace(0, 1, 400)))},
                            max_markers=50)
    assert 45 <= len(fig.data[0].x) <= 50 and fig.data[0].x[0] == 0 and fig.data[0].x[-1] == 1
    fig = pfl.log_kl_figure({"natural": (t, np.exp(-2 * t), "#123456")})
    assert fig.data[0].line.color == "#123456"
    rh = np.logspace(-5, -2, 4)
    fig = pfl.order_gap_figure(rh, {"V": 0.026 * rh**2, "m": 0.3 * rh**2})
    assert [d.name for d in fig.data][:2] == ["V", "m"] and len(fig.data) == 3
    fig = pfl.order_gap_figure(rh, 0.026 * rh**2)
    np.testing.assert_allclose(fig.data[1].y, fig.data[0].y, rtol=1e-10)  # an exact O(rho^2) gap lies on the line
    with pytest.raises(ValueError):
        pfl.order_gap_figure(rh, np.zeros(4))


def test_ellipse_outlines_lie_on_each_gaussians_level_set():
    from vilab.plots import ellipse, ellipse_outlines

    rng = np.random.default_rng(0)
    means = rng.normal(size=(5, 2))
    A = rng.normal(size=(5, 2, 2))
    covs = A @ A.transpose(0, 2, 1) + 0.1 * np.eye(2)
    covs[2] = [[1.0, 2.0], [2.0, 1.0]]  # indefinite: no ellipse
    covs[3, 0, 0] = np.nan
    x, y = ellipse_outlines(means, covs, 2.0, 60)
    assert x.shape == y.shape == (5 * 61,) and np.all(np.isnan(x[60::61]))
    for k in (0, 1, 4):  # every point at Mahalanobis distance 2, and the outline goes all the way round
        r = np.stack([x[k * 61:k * 61 + 60], y[k * 61:k * 61 + 60]], axis=1) - means[k]
        np.testing.assert_allclose(np.einsum("ni,ij,nj->n", r, np.linalg.inv(covs[k]), r), 4.0, rtol=1e-10)
        ang = np.unwrap(np.arctan2(r[:, 1], r[:, 0]))
        assert abs(abs(ang[-1] - ang[0]) - 2 * np.pi) < 1e-9
        ex, ey = ellipse(means[k], covs[k], 2.0, 60)  # one outline of the same function
        np.testing.assert_array_equal(ex, x[k * 61:k * 61 + 60])
    for k in (2, 3):
        assert np.all(np.isnan(x[k * 61:(k + 1) * 61])) and np.all(np.isnan(ellipse(means[k], covs[k])[0]))
