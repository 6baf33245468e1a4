"""Figures of deep GLMs (Tan (2025) Fig. 9): average ELBO per epoch against time, and the shrinkage
parameter gamma_j of every input with the inputs the response depends on marked."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from . import style
from .hierarchical import method_styles

__all__ = ["elbo_vs_time", "gamma_per_input"]


def elbo_vs_time(curves: dict, title: str | None = None, height: int = 400, skip_first: int = 0) -> go.Figure:
    """curves: method label -> (cumulative seconds at each epoch's end, the epoch's average ELBO estimate)
    (Tan (2025) Fig. 9, first row). Each method in its look of the shared theme. ``skip_first`` epochs are
    left off the y-range (the first epochs can be far lower; double-click to see everything)."""
    fig = go.Figure()
    styles = method_styles(curves)
    lows, highs = [], []
    for lab, (t, el) in curves.items():
        t, el = np.asarray(t, float), np.asarray(el, float)
        ln, mk = styles[lab]
        fig.add_trace(go.Scatter(x=t, y=el, mode="lines+markers", name=lab, line=ln, marker=dict(mk, size=5),
                                 hovertemplate=f"{lab}: average ELBO %{{y:.5g}} at %{{x:.3g}} s<extra></extra>"))
        ok = el[skip_first:][np.isfinite(el[skip_first:])]
        if ok.size:
            lows.append(ok.min())
            highs.append(ok.max())
    fig.update_xaxes(title="wall time (s, compilation included)")
    fig.update_yaxes(title="average ELBO of the epoch")
    if lows and skip_first:
        lo, hi = min(lows), max(highs)
        pad = 0.05 * max(hi - lo, 1.0)
        fig.update_yaxes(range=[lo - pad, hi + pad])
    if not curves:
        fig.add_annotation(text="Press <b>Train</b> to fit the network.", xref="paper", yref="paper", x=0.5, y=0.5,
                           showarrow=False)
    return style(fig, title, height=height)


def gamma_per_input(gammas: dict, relevant: int, title: str | None = None, height: int = 380) -> go.Figure:
    """gammas: method label -> (p,) shrinkage parameters gamma_j at the end of the run (Tan (2025) Fig. 9,
    second row), on a log axis against the input number j = 1..p; the first ``relevant`` inputs (those the
    response depends on) are shaded. A large gamma_j shrinks input j's weights towards zero."""
    fig = go.Figure()
    styles = method_styles(gammas)
    p = max((len(np.asarray(g)) for g in gammas.values()), default=relevant)
    if relevant > 0:
        fig.add_vrect(x0=0.5, x1=relevant + 0.5, fillcolor="#999999", opacity=0.18, line_width=0, layer="below")
        fig.add_annotation(x=relevant + 0.5, y=0.02, yref="paper", xanchor="left", yanchor="bottom", showarrow=False,
                           text=f"← shaded: the inputs the response uses (x1-x{relevant})",
                           bgcolor="rgba(255,255,255,0.8)")
    for lab, g in gammas.items():
        g = np.asarray(g, float)
        ln, mk = styles[lab]
        fig.add_trace(go.Scatter(x=np.arange(1, len(g) + 1), y=g, mode="markers+lines", name=lab,
                                 line=dict(ln, width=1), marker=dict(mk, size=6),
                                 hovertemplate=f"{lab}: γ of x%{{x}} = %{{y:.3g}}<extra></extra>"))
    fig.update_xaxes(title="input j", range=[0, p + 1])
    fig.update_yaxes(title="γⱼ (log scale)", type="log", dtick=1, exponentformat="power")
    return style(fig, title, height=height)
