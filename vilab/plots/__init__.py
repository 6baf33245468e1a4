"""Plotly figure builders: pure data in, ``go.Figure`` out (no streamlit here).

Shared helpers live in this module; topic builders in ``vilab.plots.<topic>``.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

__all__ = ["COLORS", "color", "ellipse", "density_contour", "style", "lecture_style"]

# A stable colour per method family, so the same method has the same colour on every page.
COLORS = {
    "euclidean": "#d62728", "natural": "#1f77b4", "kl": "#1f77b4", "fisher": "#ff7f0e",
    "score": "#2ca02c", "forward_kl": "#9467bd", "true": "#111111", "adam": "#d62728",
    "snngm": "#1f77b4", "nadam": "#ff7f0e", "nagm": "#2ca02c", "vogn": "#9467bd", "pga": "#8c564b",
}
_PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
            "#bcbd22", "#17becf"]


def color(name: str, i: int = 0) -> str:
    """Colour of a method: its fixed colour if it has one, else the i-th palette colour."""
    return COLORS.get(name.lower(), _PALETTE[i % len(_PALETTE)])


def ellipse(mean, cov, n_std: float = 2.0, n: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Points (x, y) of the n_std-standard-deviation ellipse of a 2-D Gaussian.

    An indefinite "covariance" (a precision update that lost positive definiteness) has no
    ellipse: its level set is a hyperbola; this returns NaNs then, and callers say why.
    """
    cov = 0.5 * (np.asarray(cov, float) + np.asarray(cov, float).T)
    w, V = np.linalg.eigh(cov)
    if np.any(w <= 0) or not np.all(np.isfinite(w)):
        return np.full(n, np.nan), np.full(n, np.nan)
    t = np.linspace(0, 2 * np.pi, n)
    pts = (V * np.sqrt(w)) @ np.vstack([np.cos(t), np.sin(t)]) * n_std
    return pts[0] + mean[0], pts[1] + mean[1]


def density_contour(log_density_grid: np.ndarray, xs: np.ndarray, ys: np.ndarray, name: str = "target",
                    n_levels: int = 12, showscale: bool = False) -> go.Contour:
    """Contours of exp(log density) on a grid (values normalised to max 1), log-spaced levels.

    ``log_density_grid`` has shape (len(ys), len(xs)).
    """
    z = np.asarray(log_density_grid, float)
    z = np.exp(z - np.nanmax(z))
    return go.Contour(x=xs, y=ys, z=z, name=name, showscale=showscale, colorscale="Greys", opacity=0.55,
                      contours=dict(coloring="lines", start=0.01, end=1.0, size=1.0 / n_levels),
                      line=dict(width=1), hoverinfo="skip")


def style(fig: go.Figure, title: str | None = None, height: int = 450, **layout) -> go.Figure:
    """Common layout: white template, compact margins, legend on top.

    A title sits at the very top of the figure and the legend in its own strip just above the plot
    area (a one-row legend does not overlap the title)."""
    fig.update_layout(template="plotly_white", height=height, margin=dict(l=50, r=20, t=80 if title else 20, b=45),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0), **layout)
    if title:
        fig.update_layout(title=dict(text=title, x=0.0, xanchor="left", y=1.0, yref="container", yanchor="top",
                                     pad=dict(t=8), font=dict(size=15)))
    return fig


def lecture_style(fig: go.Figure) -> go.Figure:
    """Projector styling: larger fonts, taller figures, thicker lines."""
    h = fig.layout.height or 450
    fig.update_layout(font=dict(size=20), height=int(h * 1.35), title_font_size=24)
    if fig.layout.title.text and fig.layout.margin.t is not None:
        fig.update_layout(margin_t=int(fig.layout.margin.t * 1.4))
    fig.update_traces(selector=dict(type="scatter"), line_width=3.5)
    return fig
