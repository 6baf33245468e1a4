"""Figures of the flows-and-guarantees page (Kumar et al. 2025 Sec. 3.3, Thm 1, App. B, Fig. 1b/c).

Pure data in, ``go.Figure`` out: log KL against continuous time for the flows, discrete methods
placed at t = rho k, the e^{-2t} reference and the Theorem 1 bounds; and the VN vs SR-VN gap
against rho on log-log axes with a slope-2 reference.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import plotly.graph_objects as go

from . import color, line, marker, style

__all__ = ["log_kl_figure", "order_gap_figure"]


def _pos(t, y):
    t, y = np.asarray(t, float), np.asarray(y, float)
    if t.shape != y.shape:
        raise ValueError(f"Times and values must have the same shape; got {t.shape} and {y.shape}.")
    ok = np.isfinite(t) & np.isfinite(y) & (y > 0)
    return t[ok], y[ok]


def _is_colour(v) -> bool:
    return isinstance(v, str) and (v.startswith("#") or v.startswith("rgb"))


def log_kl_figure(flows: Mapping[str, tuple], discrete: Mapping[str, tuple] | None = None,
                  references: Mapping[str, tuple] | None = None, title: str | None = None,
                  ylabel: str = "KL(q_t ‖ p)", floor: float = 1e-16, max_markers: int = 40,
                  height: int = 460, legend_below: bool = False) -> go.Figure:
    """KL (log axis) against continuous time t (Kumar et al. digest Sec. 8.3).

    flows : name -> (t, kl[, look]), drawn as lines (the continuous-time gradient flows); ``look`` is a
        method code for :func:`vilab.plots.look` (e.g. "natural", "wasserstein", "gd-mv") or a colour "#rrggbb".
    discrete : name -> (t = rho k, kl_k[, look]), drawn as markers (the method's marker) on the same time
        axis; a name containing "diverged" keeps its reason in the legend.
    references : name -> (t, values), drawn dashed/dotted in greys (e^{-2t}, the Theorem 1 bounds).
    Values <= ``floor`` are dropped (they sit at round-off); a discrete run shows at most
    ``max_markers`` evenly spread iterates (its first and last included).
    """
    traces = []
    for i, (name, p) in enumerate(flows.items()):
        t, kl = _pos(p[0], p[1])
        keep = kl > floor
        style_of = p[2] if len(p) > 2 else None
        if _is_colour(style_of):
            ln = dict(color=style_of, width=3)
        elif str(style_of or name).strip():
            ln = line(style_of or name, width=3)
        else:
            ln = dict(color=color("", i), width=3)
        traces.append(go.Scatter(x=t[keep], y=kl[keep], mode="lines", name=name, line=ln))
    symbols = ["circle", "x", "star", "diamond", "square", "triangle-up"]
    for i, (name, p) in enumerate((discrete or {}).items()):
        t, kl = _pos(p[0], p[1])
        t, kl = t[kl > floor], kl[kl > floor]
        keep = np.unique(np.linspace(0, len(t) - 1, min(len(t), max(int(max_markers), 2))).round().astype(int))
        style_of = p[2] if len(p) > 2 else None
        size = max(11 - 2 * i, 6)  # each run smaller than the one before: coinciding runs show as rings
        if style_of is not None and not _is_colour(style_of):
            mk = marker(style_of, size=size)
        else:
            c = style_of or color(name, i + 3)
            mk = dict(size=size, color=c, symbol=symbols[i % len(symbols)])
        mk["line"] = dict(width=1, color=mk["color"])
        traces.append(go.Scatter(x=t[keep], y=kl[keep], mode="markers", name=name, marker=mk))
    dashes = ["dash", "longdash", "dashdot", "dot"]
    greys = ["#111111", "#777777", "#444444", "#999999"]
    for i, (name, (t, v)) in enumerate((references or {}).items()):
        t, v = _pos(t, v)
        keep = v > floor
        traces.append(go.Scatter(x=t[keep], y=v[keep], mode="lines", name=name,
                                 line=dict(color=greys[i % 4], dash=dashes[i % 4], width=2)))
    fig = go.Figure(data=traces)
    ys = np.concatenate([np.asarray(tr.y, float) for tr in traces if tr.y is not None and len(tr.y)] or [np.ones(1)])
    fig.update_layout(yaxis=dict(type="log", title=ylabel, exponentformat="power", dtick=_decades(ys)),
                      xaxis=dict(title="flow time t"))
    fig = style(fig, title=title, height=height)
    if legend_below:  # two columns under the plot
        fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.3, x=0, entrywidth=0.5,
                                      entrywidthmode="fraction"), margin=dict(t=16 if not title else 80))
    return fig


def _decades(values, most: int = 7) -> int:
    """A log axis's tick step in decades (whole decades only: no small 2 and 5 labels), at most ``most`` ticks."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size == 0:
        return 1
    span = np.log10(v.max()) - np.log10(v.min())
    return int(max(1, np.ceil(span / most)))


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
                                 line=dict(color=["#222222", "#8a8a8a", "#555555"][i % 3], width=3),
                                 marker=dict(symbol=["circle", "diamond", "square"][i % 3], size=8)))
        if ref is None:
            ref = go.Scatter(x=r, y=g[0] * (r / r[0]) ** reference_slope, mode="lines",
                             name=f"slope {reference_slope:g}: O(ρ<sup>{reference_slope:g}</sup>)",
                             line=dict(color="black", dash="dot", width=2))
    if ref is None:
        raise ValueError("No positive gap to plot.")
    fig = go.Figure(data=traces + [ref])
    ys = np.concatenate([np.asarray(tr.y, float) for tr in traces + [ref]])
    fig.update_layout(xaxis=dict(type="log", title="step size ρ", exponentformat="power", dtick=_decades(rhos)),
                      yaxis=dict(type="log", title=ylabel, exponentformat="power", dtick=_decades(ys)))
    return style(fig, title=title, height=height)
