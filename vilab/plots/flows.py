"""Figures of the flows-and-guarantees page (Kumar et al. 2025 Sec. 3.3, Thm 1, App. B, Fig. 1b/c).

Pure data in, ``go.Figure`` out: log KL against continuous time for the flows, discrete methods
placed at t = rho k, the e^{-2t} reference and the Theorem 1 bounds; and the VN vs SR-VN gap
against rho on log-log axes with a slope-2 reference. For Sec. 6 / App. F.1 / Sec. 3.6: Fig. 2-style
excess curves with min-max bands (:func:`excess_figure`), the flop counts and measured times of Fig. 5
(:func:`cost_figure`), and the convexity panel in v vs sigma (:func:`scale_curve_figure`,
:func:`curvature_sign_figure`).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import plotly.graph_objects as go

from . import color, label, line, look, marker, style

__all__ = ["log_kl_figure", "order_gap_figure", "excess_figure", "cost_figure", "scale_curve_figure",
           "curvature_sign_figure"]


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


def _rgba(hex_colour: str, alpha: float) -> str:
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def excess_figure(curves: Mapping[str, tuple], title: str | None = None, ylabel: str = "value − best",
                  xlabel: str = "iteration", floor: float = 1e-12, height: int = 400) -> go.Figure:
    """Kumar et al. Fig. 2: for each method (a code of :func:`vilab.plots.look`), its mean over the starts
    as a line and the min-max band around it, on a log y axis. ``curves``: code -> (iterations, mean, lo, hi)
    (e.g. :func:`vilab.models.kumar_logistic.excess_curves`); values at or below ``floor`` are clipped to it (they
    sit at round-off)."""
    traces = []
    for code, (it, mean, lo, hi) in curves.items():
        it = np.asarray(it, float)
        mean, lo, hi = (np.clip(np.asarray(a, float), floor, None) for a in (mean, lo, hi))
        ok = np.isfinite(mean) & np.isfinite(lo) & np.isfinite(hi)
        it, mean, lo, hi = it[ok], mean[ok], lo[ok], hi[ok]
        if it.size == 0:
            continue
        c = look(code).color
        traces.append(go.Scatter(x=np.concatenate([it, it[::-1]]), y=np.concatenate([hi, lo[::-1]]), fill="toself",
                                 fillcolor=_rgba(c, 0.18), line=dict(width=0), hoverinfo="skip", showlegend=False,
                                 name=f"{label(code)} (min–max)"))
        traces.append(go.Scatter(x=it, y=mean, mode="lines", name=label(code), line=line(code, width=3)))
    if not traces:
        raise ValueError("No finite values to plot.")
    fig = go.Figure(data=traces)
    ys = np.concatenate([np.asarray(t.y, float) for t in traces])
    fig.update_layout(yaxis=dict(type="log", title=ylabel, exponentformat="power", dtick=_decades(ys)),
                      xaxis=dict(title=xlabel))
    return style(fig, title=title, height=height)


def cost_figure(ds, flop_counts: Mapping[str, np.ndarray], measured: Mapping[str, np.ndarray] | None = None,
                title: str | None = None, height: int = 400) -> go.Figure:
    """Kumar et al. Fig. 5: per-step flop counts against d (lines, left axis) and, when given, the measured
    seconds per step on this machine (markers, right axis), log-log. Keys are method codes."""
    ds = np.asarray(ds, float)
    traces = []
    for code, f in flop_counts.items():
        traces.append(go.Scatter(x=ds, y=np.asarray(f, float), mode="lines", name=f"{label(code)}: flop count",
                                 line=line(code, width=3)))
    measured = dict(measured or {})
    dm = np.asarray(measured.pop("d", ds), float)
    for code, t in measured.items():
        traces.append(go.Scatter(x=dm, y=np.asarray(t, float), mode="markers", name=f"{label(code)}: measured",
                                 marker=marker(code, size=11), yaxis="y2"))
    fig = go.Figure(data=traces)
    fig.update_layout(xaxis=dict(type="log", title="dimension d"),
                      yaxis=dict(type="log", title="flops per step", exponentformat="power"))
    if measured:
        fig.update_layout(yaxis2=dict(type="log", title="seconds per step (this machine)", overlaying="y",
                                      side="right", exponentformat="power", showgrid=False))
    fig = style(fig, title=title, height=height)
    if measured:
        fig.update_layout(margin=dict(r=80))
    return fig


def scale_curve_figure(s, L_s, L_v, title: str | None = None, height: int = 380) -> go.Figure:
    """Sec. 3.6: the same L drawn against the scale s (lower axis) and against the variance v = s^2 (upper
    axis): convex along s, not along v. ``L_s`` and ``L_v`` are the values at s and at v = s^2."""
    s = np.asarray(s, float)
    fig = go.Figure([
        go.Scatter(x=s, y=np.asarray(L_s, float), mode="lines", name="L against the scale σ",
                   line=dict(color="#0072B2", width=3)),
        go.Scatter(x=s**2, y=np.asarray(L_v, float), mode="lines", name="L against the variance v = σ²",
                   line=dict(color="#D55E00", width=3, dash="dash"), xaxis="x2"),
    ])
    fig.update_layout(xaxis=dict(title="scale σ", color="#0072B2"),
                      xaxis2=dict(title="variance v", overlaying="x", side="top", color="#D55E00"),
                      yaxis=dict(title="L(m, ·)"))
    fig = style(fig, title=title, height=height)
    fig.update_layout(margin=dict(t=90), legend=dict(y=-0.25, yanchor="top"))
    return fig


def curvature_sign_figure(ms, ss, d2_s, d2_v, title: str | None = None, height: int = 380) -> go.Figure:
    """Sec. 3.6: where the curvature of L is negative, for d2L/ds2 (left) and d2L/dv2 (right), on the grid
    ms x ss (arrays (len(ss), len(ms))): blue where positive (convex), vermilion where negative."""
    from plotly.subplots import make_subplots

    ms, ss = np.asarray(ms, float), np.asarray(ss, float)
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=("sign of ∂²L/∂σ²", "sign of ∂²L/∂v²"))
    scale = [[0.0, "#D55E00"], [0.5, "#D55E00"], [0.5, "#56B4E9"], [1.0, "#56B4E9"]]
    for j, d2 in enumerate((d2_s, d2_v), start=1):
        sign = np.sign(np.asarray(d2, float))
        fig.add_trace(go.Heatmap(x=ms, y=ss, z=sign, zmin=-1, zmax=1, colorscale=scale, showscale=False,
                                 name="sign", hovertemplate="m %{x:.2f}, σ %{y:.2f}: %{z:+.0f}<extra></extra>"),
                      row=1, col=j)
        fig.update_xaxes(title_text="mean m", row=1, col=j)
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="convex (> 0)",
                             marker=dict(symbol="square", size=14, color="#56B4E9")))
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="negative curvature (< 0)",
                             marker=dict(symbol="square", size=14, color="#D55E00")))
    fig.update_yaxes(title_text="scale σ", row=1, col=1)
    fig = style(fig, title=title, height=height)
    fig.update_layout(margin=dict(t=70))
    return fig
