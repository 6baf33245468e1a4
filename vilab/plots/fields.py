"""Figures of the vector-field page (Tan 2025 Fig. 1; Kumar et al. 2025 digest Sec. 8.1).

Pure arrays in, ``go.Figure`` out. A gradient field is drawn as arrows (one Scatter trace of
line segments with arrow heads, NaN-separated, so thousands of arrows cost one trace) over the
contours of the objective, with the optimum marked and optional trajectories on top.

Euclidean arrows explode near sigma^2 = 0 (g_s2 ~ 1/(2 sigma^2)), so arrows can be normalised to
a common length (``normalise=True``) so that the direction can be read everywhere.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import plotly.graph_objects as go

from . import color, style

__all__ = ["arrow_segments", "field_figure", "click_grid_trace", "CLICK_TRACE_NAME"]

CLICK_TRACE_NAME = "click to add a start"


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
    Xg, Yg = np.meshgrid(np.asarray(xs, float), np.asarray(ys, float))
    return go.Scatter(x=Xg.ravel(), y=Yg.ravel(), mode="markers", name=CLICK_TRACE_NAME, showlegend=False,
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


def field_figure(xs, ys, U, V, objective=None, optimum=None, paths: Mapping[str, tuple] | None = None,
                 normalise: bool = True, title: str | None = None, xlabel: str = "mu", ylabel: str = "sigma^2",
                 arrow_color: str | None = None, n_levels: int = 20, click_grid: tuple | None = None,
                 objective_xy: tuple | None = None, objective_max: float | None = None,
                 height: int = 480) -> go.Figure:
    """A gradient vector field over objective contours, the optimum and trajectories (Tan (2025) Fig. 1).

    Parameters
    ----------
    xs, ys : 1-D grid coordinates; U, V : arrays of shape (len(ys), len(xs)), the field.
    objective : optional array (len(ys), len(xs)) (e.g. the ELBO) drawn as filled contours of
        -log10(objective_max - objective) beneath, so that levels are spread from far away to the
        optimum (``objective_max`` defaults to the grid's largest value); non-finite entries are blank.
    optimum : optional (x, y), drawn as a circle (Tan Fig. 1).
    paths : name -> (x, y[, status[, group]]) trajectories; the start is a square (Tan Fig. 1), a status
        starting with "diverged" is written at the last point. Paths of one ``group`` (default: the
        name) share a colour and one legend entry.
    normalise : arrows of equal length (direction only) instead of length ~ magnitude.
    click_grid : optional (gx, gy) 1-D arrays: an invisible clickable grid for picking starts.
    objective_xy : optional (ox, oy) 1-D grids of ``objective`` when it is finer than the arrows'.
    """
    xs, ys = np.asarray(xs, float), np.asarray(ys, float)
    U, V = np.asarray(U, float), np.asarray(V, float)
    if U.shape != (len(ys), len(xs)) or V.shape != U.shape:
        raise ValueError(f"The field must have shape (len(ys), len(xs)) = {(len(ys), len(xs))}; got {U.shape}.")
    traces = []
    if objective is not None:
        cx, cy = objective_xy if objective_xy is not None else (xs, ys)
        Z = _log_gap(objective, objective_max)
        if Z.shape != (len(cy), len(cx)):
            raise ValueError(f"The objective must have shape {(len(cy), len(cx))}; got {Z.shape}.")
        if np.isfinite(Z).any():
            traces.append(go.Contour(x=cx, y=cy, z=Z, ncontours=n_levels, showscale=False, colorscale="Blues",
                                     opacity=0.45, contours=dict(coloring="fill"), line=dict(width=0.5),
                                     name="objective", hoverinfo="skip"))
    Xg, Yg = np.meshgrid(xs, ys)
    xr = (xs.max() - xs.min()) or 1.0
    yr = (ys.max() - ys.min()) or 1.0
    ax, ay, _ = arrow_segments(Xg, Yg, U, V, normalise=normalise, aspect=yr / xr)
    traces.append(go.Scatter(x=ax, y=ay, mode="lines", name="gradient" + (" (direction)" if normalise else ""),
                             line=dict(color=arrow_color or "#444444", width=1.2), hoverinfo="skip"))
    annotations = []
    groups: dict = {}
    for name, p in (paths or {}).items():
        px, py = np.asarray(p[0], float), np.asarray(p[1], float)
        status = p[2] if len(p) > 2 else ""
        group = p[3] if len(p) > 3 else name
        first = group not in groups
        c = groups.setdefault(group, color(group, len(groups)))
        traces.append(go.Scatter(x=px, y=py, mode="lines+markers", name=group, legendgroup=group, showlegend=first,
                                 line=dict(color=c, width=2), marker=dict(size=5, color=c),
                                 hovertemplate=f"{name}<br>(%{{x:.4g}}, %{{y:.4g}})<extra></extra>"))
        if px.size:
            traces.append(go.Scatter(x=px[:1], y=py[:1], mode="markers", showlegend=False, legendgroup=group,
                                     marker=dict(symbol="square", size=11, color=c, line=dict(width=1, color="black")),
                                     hovertemplate=f"start of {name}<extra></extra>"))
            if isinstance(status, str) and status.startswith("diverged"):
                annotations.append(dict(x=px[-1], y=py[-1], text=status, showarrow=True, arrowhead=2,
                                        font=dict(color=c, size=11), bgcolor="rgba(255,255,255,0.8)"))
    if optimum is not None:
        traces.append(go.Scatter(x=[optimum[0]], y=[optimum[1]], mode="markers", name="optimum",
                                 marker=dict(symbol="circle-open", size=16, color="black", line=dict(width=3))))
    if click_grid is not None:
        traces.append(click_grid_trace(*click_grid))
    fig = go.Figure(data=traces)
    fig.update_layout(annotations=annotations, xaxis=dict(title=xlabel, range=[xs.min(), xs.max()]),
                      yaxis=dict(title=ylabel, range=[ys.min(), ys.max()]))
    return style(fig, title=title, height=height)
