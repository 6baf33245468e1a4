"""Figures of the flows-and-guarantees page (Kumar et al. 2025 Sec. 3.3, Thm 1, App. B, Fig. 1b/c).

Pure data in, ``go.Figure`` out: log KL against continuous time for the flows, discrete methods
placed at t = rho k, the e^{-2t} reference and the Theorem 1 bounds; and the VN vs SR-VN gap
against rho on log-log axes with a slope-2 reference.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import plotly.graph_objects as go

from . import color, style

__all__ = ["log_kl_figure", "order_gap_figure"]


def _pos(t, y):
    t, y = np.asarray(t, float), np.asarray(y, float)
    if t.shape != y.shape:
        raise ValueError(f"Times and values must have the same shape; got {t.shape} and {y.shape}.")
    ok = np.isfinite(t) & np.isfinite(y) & (y > 0)
    return t[ok], y[ok]


def log_kl_figure(flows: Mapping[str, tuple], discrete: Mapping[str, tuple] | None = None,
                  references: Mapping[str, tuple] | None = None, title: str | None = None,
                  ylabel: str = "KL(q_t || p)", floor: float = 1e-16, max_markers: int = 80,
                  height: int = 460) -> go.Figure:
    """KL (log axis) against continuous time t (Kumar et al. digest Sec. 8.3).

    flows : name -> (t, kl[, colour]), drawn as lines (the continuous-time gradient flows).
    discrete : name -> (t = rho k, kl_k[, colour]), drawn as markers on the same time axis; a name
        containing "diverged" keeps its reason in the legend.
    references : name -> (t, values), drawn dashed/dotted in greys (e^{-2t}, the Theorem 1 bounds).
    Values <= ``floor`` are dropped (they sit at round-off); a discrete run shows at most
    ``max_markers`` evenly spread iterates (its first and last included).
    """
    traces = []
    for i, (name, p) in enumerate(flows.items()):
        t, kl = _pos(p[0], p[1])
        keep = kl > floor
        c = p[2] if len(p) > 2 else color(name, i)
        traces.append(go.Scatter(x=t[keep], y=kl[keep], mode="lines", name=name, line=dict(color=c, width=3)))
    symbols = ["circle", "x", "star", "diamond", "square", "triangle-up"]
    for i, (name, p) in enumerate((discrete or {}).items()):
        t, kl = _pos(p[0], p[1])
        t, kl = t[kl > floor], kl[kl > floor]
        keep = np.unique(np.linspace(0, len(t) - 1, min(len(t), max(int(max_markers), 2))).round().astype(int))
        c = p[2] if len(p) > 2 else color(name, i + 3)
        traces.append(go.Scatter(x=t[keep], y=kl[keep], mode="markers", name=name,
                                 marker=dict(size=7, color=c, symbol=symbols[i % len(symbols)],
                                             line=dict(width=1, color=c))))
    dashes = ["dash", "dot", "dashdot", "longdash"]
    greys = ["#111111", "#7f7f7f", "#bcbd22", "#17becf"]
    for i, (name, (t, v)) in enumerate((references or {}).items()):
        t, v = _pos(t, v)
        keep = v > floor
        traces.append(go.Scatter(x=t[keep], y=v[keep], mode="lines", name=name,
                                 line=dict(color=greys[i % 4], dash=dashes[i % 4], width=2)))
    fig = go.Figure(data=traces)
    fig.update_layout(yaxis=dict(type="log", title=ylabel, exponentformat="power"), xaxis=dict(title="time t"))
    return style(fig, title=title, height=height)


def order_gap_figure(rhos, gaps, reference_slope: float = 2.0, title: str | None = None,
                     ylabel: str = "one-step gap", height: int = 400) -> go.Figure:
    """One-step gaps against the step size on log-log axes (Kumar et al. App. B), with a
    slope-``reference_slope`` line through the first series' smallest-rho point (an O(rho^2) gap runs
    parallel to it). ``gaps``: an array, or name -> array for several gaps (e.g. of V and of m)."""
    series = {"gap": gaps} if not isinstance(gaps, Mapping) else dict(gaps)
    traces, ref = [], None
    for i, (name, g) in enumerate(series.items()):
        r, g = _pos(rhos, g)
        if np.any(r <= 0):
            raise ValueError("Step sizes must be positive on a log axis.")
        if r.size == 0:
            continue
        o = np.argsort(r)
        r, g = r[o], g[o]
        traces.append(go.Scatter(x=r, y=g, mode="lines+markers", name=name,
                                 line=dict(color=color("natural" if i == 0 else name, i), width=3)))
        if ref is None:
            ref = go.Scatter(x=r, y=g[0] * (r / r[0]) ** reference_slope, mode="lines",
                             name=f"slope {reference_slope:g} (O(rho^{reference_slope:g}))",
                             line=dict(color="black", dash="dash"))
    if ref is None:
        raise ValueError("No positive gap to plot.")
    fig = go.Figure(data=traces + [ref])
    fig.update_layout(xaxis=dict(type="log", title="step size rho", exponentformat="power"),
                      yaxis=dict(type="log", title=ylabel, exponentformat="power"))
    return style(fig, title=title, height=height)
