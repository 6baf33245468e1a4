"""Figures of the vector-field page (Tan 2025 Fig. 1; Kumar et al. 2025 digest Sec. 8.1).

Pure arrays in, ``go.Figure`` out (or, for the live figure of a Play, ``plain=True``: its traces as dicts, no
graph objects). A gradient field is drawn as arrows (one Scatter trace of
line segments with arrow heads, NaN-separated, so thousands of arrows cost one trace) over the
contours of the objective, with the optimum marked and optional trajectories on top.

Euclidean arrows explode near sigma^2 = 0 (g_s2 ~ 1/(2 sigma^2)), so arrows can be normalised to
a common length (``normalise=True``) so that the direction can be read everywhere.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import plotly.graph_objects as go

from . import label, line, marker, style, subplots

__all__ = ["arrow_segments", "field_figure", "field_pair_figure", "add_pair_bends", "click_grid_trace", "CLICK_TRACE_NAME",
           "START_SYMBOLS", "start_symbol"]

CLICK_TRACE_NAME = "click to add a start"
#: one marker shape per starting point (Plotly symbol, the same shape as text for tables)
START_SYMBOLS = [("square", "■"), ("diamond", "◆"), ("triangle-up", "▲"), ("star", "★"), ("pentagon", "⬟"),
                 ("hexagon", "⬢"), ("cross", "✚"), ("x", "✖")]


def start_symbol(i: int) -> tuple[str, str]:
    """(Plotly symbol, text symbol) of the i-th starting point (0-based), cycling after 8."""
    return START_SYMBOLS[i % len(START_SYMBOLS)]


def arrow_segments(X, Y, U, V, normalise: bool = True, length: float | None = None, head: float = 0.3,
                   aspect: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Line segments (x, y) of arrows at (X, Y) pointing along (U, V), NaN-separated.

    The arrows are scaled in *screen* units: ``aspect`` = (y-range / x-range) of the plot, so
    the y component is measured relative to the plot height. ``length`` is the longest arrow
    (default: 0.9 grid cells). With ``normalise`` every arrow has that length. Returns
    (xs, ys, magnitude per arrow); zero or non-finite vectors give no arrow.
    """
    X, Y, U, V = (np.asarray(a, float).ravel() for a in (X, Y, U, V))
    if not (X.shape == Y.shape == U.shape == V.shape):
        raise ValueError("The arrow positions and components must all have the same shape.")
    if aspect <= 0 or not np.isfinite(aspect):
        raise ValueError(f"The plot aspect (y-range / x-range) must be positive; got {aspect}.")
    ok = np.isfinite(U) & np.isfinite(V) & np.isfinite(X) & np.isfinite(Y)
    Us, Vs = U / 1.0, V / aspect  # screen units (x-units)
    mag = np.hypot(Us, Vs)
    ok &= mag > 0
    X, Y, Us, Vs, mag, Uraw, Vraw = X[ok], Y[ok], Us[ok], Vs[ok], mag[ok], U[ok], V[ok]
    if X.size == 0:
        return np.array([]), np.array([]), np.array([])
    if length is None:
        nx = max(len(np.unique(X)), 2)
        length = 0.9 * (X.max() - X.min()) / (nx - 1) if X.max() > X.min() else 1.0
    scale = length / mag if normalise else length / mag.max()
    dx, dy = Us * scale, Vs * scale  # screen-unit arrow
    x1, y1 = X + dx, Y + dy * aspect
    # heads: two short strokes at +-25 degrees from the reversed direction
    c, s = np.cos(np.pi / 7), np.sin(np.pi / 7)
    hx1, hy1 = -(c * dx - s * dy) * head, -(s * dx + c * dy) * head
    hx2, hy2 = -(c * dx + s * dy) * head, -(-s * dx + c * dy) * head
    nan = np.full_like(X, np.nan)
    xs = np.stack([X, x1, nan, x1, x1 + hx1, nan, x1, x1 + hx2, nan], axis=1).ravel()
    ys = np.stack([Y, y1, nan, y1, y1 + hy1 * aspect, nan, y1, y1 + hy2 * aspect, nan], axis=1).ravel()
    return xs, ys, np.hypot(Uraw, Vraw)


def click_grid_trace(xs, ys) -> go.Scatter:
    """An invisible grid of markers: clicking the plot selects one (st.plotly_chart on_select)."""
    return go.Scatter(_click_grid(xs, ys))


def _click_grid(xs, ys) -> dict:
    Xg, Yg = np.meshgrid(np.asarray(xs, float), np.asarray(ys, float))
    return dict(type="scatter", x=Xg.ravel(), y=Yg.ravel(), mode="markers", name=CLICK_TRACE_NAME, showlegend=False,
                marker=dict(size=14, color="rgba(0,0,0,0)"), hovertemplate="start (%{x:.3g}, %{y:.3g})<extra></extra>")


def _log_gap(Z, z_max=None):
    """-log10(z_max - Z): contours of the objective's gap to its maximum, evenly spread from far
    away to the optimum (the ELBO drops by orders of magnitude near sigma^2 = 0)."""
    Z = np.asarray(Z, float)
    fin = np.isfinite(Z)
    if not fin.any():
        return np.full(Z.shape, np.nan)
    top = float(np.max(Z[fin])) if z_max is None else float(z_max)
    eps = 1e-9 * max(1.0, abs(top))
    with np.errstate(invalid="ignore"):
        return np.where(fin, -np.log10(np.maximum(top - Z, eps)), np.nan)


def _check_field(xs, ys, U, V):
    xs, ys = np.asarray(xs, float), np.asarray(ys, float)
    U, V = np.asarray(U, float), np.asarray(V, float)
    if U.shape != (len(ys), len(xs)) or V.shape != U.shape:
        raise ValueError(f"The field must have shape (len(ys), len(xs)) = {(len(ys), len(xs))}; got {U.shape}.")
    return xs, ys, U, V


def _objective_trace(xs, ys, objective, objective_xy, objective_max, n_levels):
    cx, cy = objective_xy if objective_xy is not None else (xs, ys)
    Z = _log_gap(objective, objective_max)
    if Z.shape != (len(cy), len(cx)):
        raise ValueError(f"The objective must have shape {(len(cy), len(cx))}; got {Z.shape}.")
    if not np.isfinite(Z).any():
        return None
    return dict(type="contour", x=cx, y=cy, z=Z, ncontours=n_levels, showscale=False, colorscale="Greys", opacity=0.3,
                contours=dict(coloring="fill"), line=dict(width=0.5, color="#9a9a9a"), name="objective", hoverinfo="skip")


def _arrow_trace(xs, ys, U, V, normalise, arrow_color):
    Xg, Yg = np.meshgrid(xs, ys)
    xr = (xs.max() - xs.min()) or 1.0
    yr = (ys.max() - ys.min()) or 1.0
    ax, ay, _ = arrow_segments(Xg, Yg, U, V, normalise=normalise, aspect=yr / xr)
    return dict(type="scatter", x=ax, y=ay, mode="lines", name="gradient" + (" (direction)" if normalise else ""),
                line=dict(color=arrow_color or "#555555", width=1.2), hoverinfo="skip")


def _arrow_marker_trace(xs, ys, U, V, normalise, size=11.0, clickable=False):
    """The field as arrow-head markers, one per grid point, turned along (U, V) on screen (the plot box
    taken as square, as :func:`arrow_segments`). Markers keep their size whatever the line widths (lecture
    mode thickens lines); without ``normalise`` the size grows with the magnitude (from 35% to 100%).
    ``clickable``: the arrows are the click targets for new starts (a click selects the nearest arrow's
    grid point; a selection leaves them undimmed): no separate invisible grid, whose hundreds of markers
    cost the browser as much drawing time as the arrows."""
    Xg, Yg = np.meshgrid(xs, ys)
    xr = (xs.max() - xs.min()) or 1.0
    yr = (ys.max() - ys.min()) or 1.0
    X, Y, Us, Vs = Xg.ravel(), Yg.ravel(), np.ravel(U) / xr, np.ravel(V) / yr
    mag = np.hypot(Us, Vs)
    ok = np.isfinite(mag) & (mag > 0)
    X, Y, Us, Vs, mag = X[ok], Y[ok], Us[ok], Vs[ok], mag[ok]
    angle = np.degrees(np.arctan2(Us, Vs))  # marker angle: clockwise from "up"
    sizes = np.full(mag.shape, size) if normalise or not mag.size else size * (0.35 + 0.65 * mag / mag.max())
    hover = dict(hovertemplate="click: start at (%{x:.3g}, %{y:.3g})<extra></extra>",
                 unselected=dict(marker=dict(opacity=1.0))) if clickable else dict(hoverinfo="skip")
    return dict(type="scatter", x=X, y=Y, mode="markers", name="gradient" + (" (direction)" if normalise else ""),
                showlegend=False, **hover,
                marker=dict(symbol="arrow", angle=angle, size=sizes, color="#4d4d4d", line=dict(width=0)))


def _inside(v, lo, hi, frac=0.04):
    """v moved inside [lo, hi] by ``frac`` of its width (a label anchored there is not cut off)."""
    pad = frac * (hi - lo)
    return float(min(max(v, lo + pad), hi - pad))


def _path_traces(paths, box, seen: dict, starts_drawn: bool):
    """Scatter traces, as dicts (and 'diverged' annotations) of ``paths`` name -> (x, y[, status[, group]]).

    Each group (a method's code or label) is drawn in its look (colour, dash, marker: vilab.plots.look)
    under its readable label, with one legend entry per group across the whole figure (``seen``).
    Without ``starts_drawn`` the first point of each path is a square, as in Tan (2025) Fig. 1. At most 40
    iterates of a path get a marker (evenly spread; the line has them all): a long Euclidean zigzag would
    otherwise put hundreds of markers on the plot, each one drawing time when a slider moves."""
    (x0, x1), (y0, y1) = box
    traces, annotations = [], []
    for name, p in (paths or {}).items():
        px, py = np.asarray(p[0], float), np.asarray(p[1], float)
        status = p[2] if len(p) > 2 else ""
        group = p[3] if len(p) > 3 else name
        first = group not in seen
        seen.setdefault(group, len(seen))
        lab = label(group)
        traces.append(dict(type="scatter", x=px, y=py, mode="lines+markers", name=lab, legendgroup=lab,
                           showlegend=first, line=line(group, width=2.5),
                           marker=dict(marker(group, size=6), maxdisplayed=40),
                           hovertemplate=f"{name}<br>(%{{x:.4g}}, %{{y:.4g}})<extra>{lab}</extra>"))
        if px.size and not starts_drawn:
            traces.append(dict(type="scatter", x=px[:1], y=py[:1], mode="markers", showlegend=False, legendgroup=lab,
                               marker=dict(symbol="square", size=11, color=line(group)["color"],
                                           line=dict(width=1, color="black")),
                               hovertemplate=f"start of {name}<extra></extra>"))
        if isinstance(status, str) and status.startswith("diverged"):
            ok = np.flatnonzero(np.isfinite(px) & np.isfinite(py))
            if ok.size:
                # the last finite point, moved inside the plot, the short word pointing inwards; the
                # full reason in the label's hover text
                xa, ya = _inside(px[ok[-1]], x0, x1), _inside(py[ok[-1]], y0, y1)
                right, top = xa > 0.5 * (x0 + x1), ya > 0.5 * (y0 + y1)
                annotations.append(dict(x=xa, y=ya, text="diverged", hovertext=f"{lab} from {name}: {status}",
                                        showarrow=True, arrowhead=2, ax=-45 if right else 45, ay=25 if top else -25,
                                        font=dict(color=line(group)["color"]), bgcolor="rgba(255,255,255,0.85)",
                                        bordercolor=line(group)["color"]))
    return traces, annotations


def _start_trace(starts, labels=None):
    """The starting points: one shape per start (START_SYMBOLS), numbered 1, 2, ... on the plot."""
    pts = np.asarray(starts, float).reshape(-1, 2)
    n = len(pts)
    names = list(labels) if labels is not None else [f"start {k + 1}" for k in range(n)]
    return dict(type="scatter", x=pts[:, 0], y=pts[:, 1], mode="markers+text", name="starts", showlegend=False,
                text=[str(k + 1) for k in range(n)], textposition="middle right", cliponaxis=False,
                textfont=dict(color="black", size=14),
                marker=dict(symbol=[start_symbol(k)[0] for k in range(n)], size=14, color="white",
                            line=dict(width=2, color="black")),
                customdata=names, hovertemplate="%{customdata}<extra></extra>")


def _optimum_trace(optimum, showlegend=True):
    return dict(type="scatter", x=[optimum[0]], y=[optimum[1]], mode="markers", name="optimum", legendgroup="optimum",
                showlegend=showlegend, marker=dict(symbol="circle-open", size=16, color="black", line=dict(width=3)),
                hovertemplate="optimum (%{x:.4g}, %{y:.4g})<extra></extra>")


def field_figure(xs, ys, U, V, objective=None, optimum=None, paths: Mapping[str, tuple] | None = None,
                 normalise: bool = True, title: str | None = None, xlabel: str = "mu", ylabel: str = "sigma^2",
                 arrow_color: str | None = None, n_levels: int = 20, click_grid: tuple | None = None,
                 objective_xy: tuple | None = None, objective_max: float | None = None,
                 starts=None, height: int = 480) -> go.Figure:
    """A gradient vector field over objective contours, the optimum and trajectories (Tan (2025) Fig. 1).

    Parameters
    ----------
    xs, ys : 1-D grid coordinates; U, V : arrays of shape (len(ys), len(xs)), the field.
    objective : optional array (len(ys), len(xs)) (e.g. the ELBO) drawn as filled contours of
        -log10(objective_max - objective) beneath, so that levels are spread from far away to the
        optimum (``objective_max`` defaults to the grid's largest value); non-finite entries are blank.
    optimum : optional (x, y), drawn as a circle (Tan Fig. 1).
    paths : name -> (x, y[, status[, group]]) trajectories drawn in the look of their ``group`` (a
        method code or label; default: the name), one legend entry per group under its readable label.
        A status starting with "diverged" puts a "diverged" label (inside the plot) at the last point.
    starts : optional (n, 2) starting points, each its own numbered shape (:data:`START_SYMBOLS`);
        without them the first point of every path is a square.
    normalise : arrows of equal length (direction only) instead of length ~ magnitude.
    click_grid : optional (gx, gy) 1-D arrays: an invisible clickable grid for picking starts.
    objective_xy : optional (ox, oy) 1-D grids of ``objective`` when it is finer than the arrows'.
    """
    xs, ys, U, V = _check_field(xs, ys, U, V)
    traces = []
    if objective is not None:
        c = _objective_trace(xs, ys, objective, objective_xy, objective_max, n_levels)
        if c is not None:
            traces.append(c)
    traces.append(_arrow_trace(xs, ys, U, V, normalise, arrow_color))
    box = ((xs.min(), xs.max()), (ys.min(), ys.max()))
    ptr, annotations = _path_traces(paths, box, {}, starts is not None)
    traces += ptr
    if starts is not None and len(starts):
        traces.append(_start_trace(starts))
    if optimum is not None:
        traces.append(_optimum_trace(optimum))
    if click_grid is not None:
        traces.append(_click_grid(*click_grid))
    fig = go.Figure(data=traces)
    fig.update_layout(annotations=annotations, xaxis=dict(title=xlabel, range=[xs.min(), xs.max()]),
                      yaxis=dict(title=ylabel, range=[ys.min(), ys.max()]))
    return style(fig, title=title, height=height)


def field_pair_figure(xs, ys, fields, titles=("Euclidean gradient", "natural gradient"), paths=(None, None),
                      objective=None, objective_xy: tuple | None = None, objective_max: float | None = None,
                      optimum=None, starts=None, start_labels=None, normalise: bool = True, xlabel: str = "mu",
                      ylabel: str = "sigma^2", n_levels: int = 20, click_grid: tuple | None = None,
                      clickable: bool = False, height: int = 420, bends=(), bend_symbol: str = "ρ",
                      plain: bool = False):
    """Two gradient fields of the same objective side by side, sharing both axes and one legend
    (Tan (2025) Fig. 1: the Euclidean field on the left, the natural field on the right).

    ``fields`` = ((U, V), (U, V)) on the grid xs x ys; ``paths`` = (left paths, right paths), each as
    :func:`field_figure` takes them; ``starts`` (n, 2) are drawn in both panels, numbered, one shape
    each (hover: ``start_labels``). The legend sits under the plots, away from the toolbar;
    ``click_grid`` is drawn in both panels, so a click on either picks a point; ``clickable`` makes the
    arrows themselves the click targets instead (cheaper to draw: a slider redraws the figure faster).
    ``bends``: where a live run's step size changed, marked on every path as :func:`add_pair_bends` marks them
    (named by ``bend_symbol``).

    ``plain=True``: instead of the figure, what of it the paths change, as plain data (dicts and arrays, no
    graph objects: a Play draws one for every frame, vilab_ui.live): ``{"data": [every trace as a dict, in the
    figure's order], "layout": {"annotations": [...]}}``.
    """
    if len(fields) != 2 or len(paths) != 2 or len(titles) != 2:
        raise ValueError("A pair of fields needs two fields, two path sets and two titles.")
    checked = [_check_field(xs, ys, U, V) for U, V in fields]
    xs, ys = checked[0][0], checked[0][1]
    box = ((xs.min(), xs.max()), (ys.min(), ys.max()))
    cont = None if objective is None else _objective_trace(xs, ys, objective, objective_xy, objective_max, n_levels)
    seen: dict = {}
    traces, annotations = [], []  # (trace, column)
    for col, (_, _, U, V) in enumerate(checked, start=1):
        if cont is not None:
            traces.append((cont, col))
        traces.append((_arrow_marker_trace(xs, ys, U, V, normalise, clickable=clickable), col))
        ptr, ann = _path_traces(paths[col - 1], box, seen, starts is not None)
        traces += [(t, col) for t in ptr]
        ref = "" if col == 1 else str(col)
        annotations += [dict(a, xref="x" + ref, yref="y" + ref) for a in ann]
        if starts is not None and len(starts):
            traces.append((_start_trace(starts, start_labels), col))
        if optimum is not None:
            traces.append((_optimum_trace(optimum, showlegend=col == 1), col))
        if click_grid is not None:
            traces.append((_click_grid(*click_grid), col))
    traces += _pair_bends(paths, bends, bend_symbol)
    if plain:
        return {"data": [t for t, _ in traces], "layout": {"annotations": annotations}}
    fig = subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04, subplot_titles=list(titles))
    for t, col in traces:
        fig.add_trace(t, row=1, col=col)
    for a in annotations:
        fig.add_annotation(**a)
    # set on the two panels' axes directly: fig.update_xaxes costs ~4 ms more
    lay = fig.layout
    for ax in (lay.xaxis, lay.xaxis2):
        ax.title.text = xlabel
        ax.range = [xs.min(), xs.max()]
    lay.yaxis.range = [ys.min(), ys.max()]
    lay.yaxis2.range = [ys.min(), ys.max()]
    lay.yaxis.title.text = ylabel
    style(fig, height=height)
    # the legend under the plots: the toolbar (top right) never covers it, and the panel titles stay on top
    fig.update_layout(legend=dict(orientation="h", x=0.0, xanchor="left", yref="container", y=0.0, yanchor="bottom"),
                      margin=dict(t=34, b=40))
    if clickable:  # a click anywhere picks the nearest arrow (they are at most ~half a grid cell away)
        fig.update_layout(hoverdistance=40)
    return fig


def add_pair_bends(fig: go.Figure, paths=(None, None), bends=(), symbol: str = "ρ") -> go.Figure:
    """Mark on :func:`field_pair_figure`'s panels where a live run's step size changed: for every path (the
    same ``paths`` pair, name -> (x, y, status, group)) a star in its method's colour at its iterate ``t`` of
    each change ``(t, value)`` in ``bends`` (the steps after ``t`` use ``value``; vilab.core.live); paths that
    stopped before ``t`` have none. The hover says the new value."""
    for t, col in _pair_bends(paths, bends, symbol):
        fig.add_trace(t, row=1, col=col)
    return fig


def _pair_bends(paths, bends, symbol: str) -> list[tuple[dict, int]]:
    """The stars of :func:`add_pair_bends`, as (trace dict, column)."""
    out = []
    for col, group_paths in enumerate(paths, start=1):
        for name, p in (group_paths or {}).items():
            px, py = np.asarray(p[0], float), np.asarray(p[1], float)
            group = p[3] if len(p) > 3 else name
            pts = [(int(t), float(v)) for t, v in bends if 0 <= int(t) < px.size]
            if not pts:
                continue
            ts = [t for t, _ in pts]
            lab = label(group)
            out.append((dict(
                type="scatter", x=px[ts], y=py[ts], mode="markers", name=f"{lab}: {symbol} changed", legendgroup=lab,
                showlegend=False,
                marker=dict(symbol="star", size=14, color=line(group)["color"], line=dict(width=1, color="black")),
                customdata=np.array(pts),
                hovertemplate=f"{name}<br>{symbol} = %{{customdata[1]:.3g}} after step %{{customdata[0]}}<extra>{lab}</extra>"),
                col))
    return out
