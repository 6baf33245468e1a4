"""Plot builders of the geometry pages (vilab.plots.fields / trajectories / pd / flows), synthetic data."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

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
                                 "euclidean": (np.array([2, 1.5]), np.array([0.01, 0.02]), "diverged: sigma^2 < 0")},
                          click_grid=(np.linspace(0, 2, 3), np.linspace(0.01, 0.1, 3)))
    assert isinstance(fig, go.Figure)
    names = [t.name for t in fig.data]
    assert "objective" in names and "optimum" in names and pf.CLICK_TRACE_NAME in names
    assert "natural" in names and "euclidean" in names
    assert any("diverged" in a.text for a in fig.layout.annotations)
    click = [t for t in fig.data if t.name == pf.CLICK_TRACE_NAME][0]
    assert len(click.x) == 9
    with pytest.raises(ValueError):
        pf.field_figure(xs, ys, U[:, :2], V)


def test_field_figure_groups_paths_and_draws_log_gap_contours():
    xs, ys = np.linspace(0, 2, 6), np.linspace(0.01, 0.1, 5)
    X, Y = np.meshgrid(xs, ys)
    Z = -((X - 1) ** 2 + (Y - 0.05) ** 2)
    paths = {f"rule A from {i}": (np.array([i, 1.0]), np.array([0.1, 0.05]), "converged", "rule A") for i in range(3)}
    paths["rule B from 0"] = (np.array([0.0, 1.0]), np.array([0.1, 0.05]), "converged", "rule B")
    fig = pf.field_figure(xs, ys, -(X - 1), -(Y - 0.05), objective=Z, objective_max=0.0, paths=paths)
    lines = [t for t in fig.data if getattr(t, "mode", None) == "lines+markers"]
    assert [t.name for t in lines] == ["rule A"] * 3 + ["rule B"]
    assert [t.showlegend for t in lines] == [True, False, False, True]
    assert len({t.line.color for t in lines[:3]}) == 1 and lines[3].line.color != lines[0].line.color
    contour = [t for t in fig.data if t.name == "objective"][0]
    # -log10(gap to the maximum): larger closer to the optimum, finite everywhere on the grid
    z = np.asarray(contour.z, float)
    np.testing.assert_allclose(z, -np.log10(np.maximum(-Z, 1e-9)))
    assert z[2, 2] == z.max()


# ------------------------------------------------------------------------------------- trajectories

def test_paths_figure_marks_divergence_and_limits_ellipses():
    traces = {"vn": _trace(), "gd-mv": _trace(status="diverged: covariance lost positive definiteness", n=200)}
    fig = ptr.paths_figure(traces, every=1, max_ellipses=10, truth=(np.zeros(2), np.eye(2)), bounds=((-3, 3), (-3, 3)))
    names = [t.name for t in fig.data]
    assert "vn" in names and any(n and n.startswith("gd-mv (diverged") for n in names)
    ell = [t for t in fig.data if t.name is None and t.mode == "lines" and t.legendgroup == "gd-mv"][0]
    assert np.sum(np.isnan(np.asarray(ell.x, float))) <= 11
    assert any("diverged" in a.text for a in fig.layout.annotations)
    with pytest.raises(ValueError):
        ptr.paths_figure({"x": _trace(d=3)})
    with pytest.raises(ValueError):
        ptr.paths_figure(traces, every=0)


def test_objective_figure_log_axis_and_gap():
    fig = ptr.objective_figure({"a": _trace()}, optimum=0.0, log_x=True)
    assert fig.layout.yaxis.type == "log" and fig.layout.xaxis.type == "log"
    assert fig.data[0].x[0] == 1  # iteration 0 drawn at 1 on a log axis
    tr = _trace()
    tr.objective[5:] = tr.objective[-1]
    fig = ptr.objective_figure({"a": tr}, optimum=float(tr.objective[-1]))
    assert len(fig.data[0].x) == 5  # zero gaps are dropped, not plotted as -inf


def test_animation_figure_has_frames_and_play_button():
    fig = ptr.animation_figure({"a": _trace(n=100), "b": _trace(n=10)}, n_frames=20)
    assert 2 <= len(fig.frames) <= 22
    assert fig.layout.updatemenus[0].buttons[0].label == "Play"
    assert len(fig.layout.sliders[0].steps) == len(fig.frames)
    # the shorter run stays at its last iterate in late frames
    last = fig.frames[-1]
    b_path = [d for d in last.data if d.legendgroup == "b" and d.mode == "lines" and d.name][0]
    assert len(b_path.x) == 11


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
    bw = [t for t in fig.data if t.name == "bwgd"][0]
    assert np.isnan(bw.y[3]) and bw.y[0] == 900
    assert any(getattr(s, "x0", None) == 0.03 for s in fig.layout.shapes)
    assert any(t.name == "bwgd: diverged" for t in fig.data)
    fig = ptr.sweep_figure(steps, {"a": [1, 1, 1, 1], "b": [2, 2, 2, 2]}, {"a": ["converged"] * 4, "b": ["converged"] * 4},
                           thresholds={"a": 0.03, "b": 0.03})
    assert len(fig.layout.shapes) == 1 and fig.layout.annotations[0].text == "a, b limit"  # shared limits: one line
    with pytest.raises(ValueError):
        ptr.sweep_figure(steps, {"vn": [1, 2]}, {"vn": ["converged"] * 2})


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
