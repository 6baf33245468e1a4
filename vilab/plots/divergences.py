"""Figures of the divergences page (Chen, Nott & Tan 2025): pure data in, go.Figure out."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import color, ellipse, style

__all__ = ["LABELS", "meanfield_ellipses", "variance_curves", "fig1_heatmap", "univariate_densities",
           "sdb_progression", "fixed_point_bars"]

LABELS = {"kl": "KL(q||p)", "fisher": "Fisher", "score": "score-based", "forward_kl": "KL(p||q)",
          "weighted_fisher": "weighted Fisher", "true": "target", "fdb": "FDb", "sdb": "SDb"}


def meanfield_ellipses(mean, cov, variances: dict, n_std: float = 2.0, title: str | None = None) -> go.Figure:
    """The target's n_std ellipse and the axis-aligned ellipses of mean-field optima.

    ``variances`` maps a divergence name to its (2,) optimal variances (a 0 variance, a collapse,
    is drawn as a segment).
    """
    mean = np.asarray(mean, float)
    cov = np.asarray(cov, float)
    fig = go.Figure()
    x, y = ellipse(mean, cov, n_std)
    fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name="target", line=dict(color=color("true"), width=3),
                             fill="toself", fillcolor="rgba(0,0,0,0.05)"))
    t = np.linspace(0, 2 * np.pi, 100)
    for i, (name, v) in enumerate(variances.items()):
        s = np.sqrt(np.maximum(np.asarray(v, float), 0.0)) * n_std
        fig.add_trace(go.Scatter(x=mean[0] + s[0] * np.cos(t), y=mean[1] + s[1] * np.sin(t), mode="lines",
                                 name=LABELS.get(name, name), line=dict(color=color(name, i), width=2.5,
                                                                        dash="dot" if name == "forward_kl" else None)))
    r = n_std * np.sqrt(np.diag(cov)) * 1.15
    fig.update_xaxes(range=[mean[0] - r[0], mean[0] + r[0]], title="theta_1")
    fig.update_yaxes(range=[mean[1] - r[1], mean[1] + r[1]], title="theta_2", scaleanchor="x"
                     if 0.05 < r[1] / r[0] < 20 else None)
    return style(fig, title=title)


def variance_curves(rhos, curves: dict, title: str | None = None, ylabel: str = "Sigma_11") -> go.Figure:
    """Optimal mean-field variance of coordinate 1 against rho, one line per divergence plus the truth."""
    fig = go.Figure()
    for i, (name, v) in enumerate(curves.items()):
        fig.add_trace(go.Scatter(x=rhos, y=v, mode="lines", name=LABELS.get(name, name),
                                 line=dict(color=color(name, i), width=2.5, dash="dash" if name == "true" else None)))
    fig.update_xaxes(title="rho")
    fig.update_yaxes(title=ylabel, rangemode="tozero")
    return style(fig, title=title)


def fig1_heatmap(grid: dict, marked=None, title: str | None = None, click_stride: int = 2) -> go.Figure:
    """Fig. 1 panel: # coordinates with Sigma^S_ii <= Sigma^F_ii over (a, b); blank where not PD.

    The diagonally dominant region is outlined in orange, collapse points are marked with x,
    ``marked`` = (a, b) adds a star.  Plotly cannot select heatmap cells, so an invisible
    scatter layer (every ``click_stride``-th PD grid point, named "grid points") carries the
    hover text and makes a click selectable: ``st.plotly_chart(..., on_select=...)`` then
    reports the clicked (a, b).
    """
    a, b = grid["a"], grid["b"]
    cs = [[0.0, "#2ca02c"], [0.333, "#2ca02c"], [0.334, "#1f77b4"], [0.666, "#1f77b4"], [0.667, "#d62728"],
          [1.0, "#d62728"]]
    fig = go.Figure(go.Heatmap(
        x=a, y=b, z=grid["count"], zmin=0.5, zmax=3.5, colorscale=cs, opacity=0.75, hoverinfo="skip",
        colorbar=dict(title="# i with<br>S <= F", tickvals=[1, 2, 3])))
    fig.add_trace(go.Contour(x=a, y=b, z=grid["dd"].astype(float), showscale=False, hoverinfo="skip",
                             contours=dict(start=0.5, end=0.5, size=1, coloring="none"),
                             line=dict(color="orange", width=3), name="diagonally dominant", showlegend=True))
    k = max(1, int(click_stride))
    B, A = np.nonzero(grid["pd"][::k, ::k])
    B, A = B * k, A * k
    custom = np.column_stack([grid["count"][B, A], grid["score"][B, A], grid["fisher"][B, A]])
    fig.add_trace(go.Scatter(
        x=a[A], y=b[B], mode="markers", name="grid points", showlegend=False, customdata=custom,
        marker=dict(size=7, color="black", opacity=0.0),
        selected=dict(marker=dict(opacity=0.0)), unselected=dict(marker=dict(opacity=0.0)),
        hovertemplate="a=%{x:.2f}, b=%{y:.2f}<br>count %{customdata[0]:.0f}<br>score %{customdata[1]:.3f}, "
                      "%{customdata[2]:.3f}, %{customdata[3]:.3f}<br>Fisher %{customdata[4]:.3f}, "
                      "%{customdata[5]:.3f}, %{customdata[6]:.3f}<br>click to select<extra></extra>"))
    B, A = np.nonzero(grid["collapse"])
    if len(A):
        fig.add_trace(go.Scatter(x=a[A], y=b[B], mode="markers", name="score-based collapse",
                                 marker=dict(symbol="x", size=4, color="black"), hoverinfo="skip",
                                 unselected=dict(marker=dict(opacity=1.0))))
    if marked is not None:
        fig.add_trace(go.Scatter(x=[marked[0]], y=[marked[1]], mode="markers", name="selected (a, b)",
                                 marker=dict(symbol="star", size=16, color="gold", line=dict(color="black", width=1)),
                                 unselected=dict(marker=dict(opacity=1.0)), hoverinfo="skip"))
    fig.update_xaxes(title="a", range=[-1, 1])
    fig.update_yaxes(title="b", range=[-1, 1], scaleanchor="x")
    return style(fig, title=title, height=520, hovermode="closest")


def univariate_densities(x, target_pdf, gaussians: dict, title: str | None = None) -> go.Figure:
    """A univariate target density and its optimal Gaussians; ``gaussians`` maps name -> (mu, var)."""
    fig = go.Figure(go.Scatter(x=x, y=target_pdf, mode="lines", name="target", line=dict(color="black", width=3)))
    for i, (name, (m, v)) in enumerate(gaussians.items()):
        y = np.exp(-0.5 * (x - m) ** 2 / v) / np.sqrt(2 * np.pi * v)
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=LABELS.get(name, name),
                                 line=dict(color=color(name, i), width=2.5)))
    fig.update_xaxes(title="theta")
    fig.update_yaxes(title="density")
    return style(fig, title=title)


def sdb_progression(means, variances, samples, iterations, target_mean: float, target_var: float,
                    title: str | None = None) -> go.Figure:
    """Fig. 5: q_t at selected iterations of SDb (1-D) with the B draws of that iteration as red stars."""
    n = len(iterations)
    cols = min(n, 3)
    rows = int(np.ceil(n / cols))
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[f"iteration {t}" for t in iterations],
                        shared_yaxes=True)
    sd = np.sqrt(target_var)
    x = np.linspace(min(target_mean - 4 * sd, min(means) - 3 * np.sqrt(max(variances))),
                    max(target_mean + 4 * sd, max(means) + 3 * np.sqrt(max(variances))), 400)
    pt = np.exp(-0.5 * (x - target_mean) ** 2 / target_var) / np.sqrt(2 * np.pi * target_var)
    for k, (m, v, s) in enumerate(zip(means, variances, samples)):
        r, c = k // cols + 1, k % cols + 1
        q = np.exp(-0.5 * (x - m) ** 2 / v) / np.sqrt(2 * np.pi * v)
        first = k == 0
        fig.add_trace(go.Scatter(x=x, y=pt, mode="lines", line=dict(color="black", width=2), name="target",
                                 showlegend=first, legendgroup="t"), r, c)
        fig.add_trace(go.Scatter(x=x, y=q, mode="lines", line=dict(color=color("score"), width=2), name="q_t",
                                 showlegend=first, legendgroup="q"), r, c)
        s = np.asarray(s, float).ravel()
        fig.add_trace(go.Scatter(x=s, y=np.zeros_like(s), mode="markers", name="draws", showlegend=first,
                                 legendgroup="s", marker=dict(symbol="star", size=11, color="red")), r, c)
    return style(fig, title=title, height=260 * rows)


def fixed_point_bars(values: dict, title: str | None = None) -> go.Figure:
    """Grouped bars: mean-field variance per coordinate, one group per method ``values[name] = (d,)``."""
    fig = go.Figure()
    for i, (name, v) in enumerate(values.items()):
        v = np.asarray(v, float)
        fig.add_trace(go.Bar(x=[f"Sigma_{k + 1}{k + 1}" for k in range(len(v))], y=v, name=name,
                             marker_color=color(name.split()[0].lower(), i)))
    fig.update_layout(barmode="group")
    fig.update_yaxes(title="variance", rangemode="tozero")
    return style(fig, title=title)
