"""Figures of the hierarchical-models page: ELBO against time, marginal densities, sparsity patterns."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import line, look, marker, style

__all__ = ["elbo_vs_time", "marginal_densities", "sparsity_heatmaps", "elbo_window", "method_styles"]

_SPARE_DASHES = ["dashdot", "longdashdot", "dot", "longdash"]
_SPARE_SYMBOLS = ["square", "diamond", "triangle-down", "cross", "star"]


def method_styles(labels) -> dict:
    """{label: (line dict, marker dict)}: each method in its look (:func:`vilab.plots.look`); two methods
    of one figure that share a colour and dash (SNNGM and KLD are both natural-gradient blue) keep the
    colour and get a different dash and marker, so neither hides the other."""
    out, seen = {}, {}
    for lab in labels:
        ln, mk = line(lab, width=2.5), marker(lab, size=8)
        key = (ln["color"], ln["dash"])
        n = seen.get(key, 0)
        seen[key] = n + 1
        if n:
            ln["dash"] = _SPARE_DASHES[(n - 1) % len(_SPARE_DASHES)]
            mk["symbol"] = _SPARE_SYMBOLS[(n - 1) % len(_SPARE_SYMBOLS)]
        out[lab] = (ln, mk)
    return out


def elbo_window(curves: dict) -> tuple[float, float] | None:
    """A y-range showing where the curves end (the first windows can be 1e4 times lower).

    Bottom: the lowest final value minus twice the spread of the finals (at least 20 nats); top: the
    highest value reached, plus a margin. None when no curve has a finite value.
    """
    finals = [float(np.asarray(el)[np.isfinite(el)][-1]) for _, el in curves.values() if np.any(np.isfinite(el))]
    if not finals:
        return None
    top = max(float(np.nanmax(np.asarray(el)[np.isfinite(el)])) for _, el in curves.values()
              if np.any(np.isfinite(el)))
    spread = max(max(finals) - min(finals), 20.0)
    return min(finals) - 2.0 * spread, top + 0.1 * spread


def elbo_vs_time(curves: dict, title: str | None = None, clip: bool = True, height: int = 420) -> go.Figure:
    """curves: label -> (seconds, window-averaged ELBO). Chen et al. Figs 7, 9; Tan (2025) Fig. 10.

    ``clip`` sets the y-range with :func:`elbo_window` (double-click the plot to see everything).
    """
    fig = go.Figure()
    styles = method_styles(curves)
    for lab, (t, el) in curves.items():
        ln, mk = styles[lab]
        fig.add_trace(go.Scatter(x=np.asarray(t), y=np.asarray(el), mode="lines+markers", name=lab, line=ln, marker=mk,
                                 hovertemplate=f"{lab}: ELBO %{{y:.4g}} at %{{x:.3g}} s<extra></extra>"))
    fig.update_xaxes(title="wall time (s, compilation excluded)")
    fig.update_yaxes(title="ELBO (window average)")
    rng = elbo_window(curves) if clip else None
    if rng is not None:
        fig.update_yaxes(range=list(rng))
    return style(fig, title, height=height)


def kde(draws, x) -> np.ndarray:
    """Gaussian kernel density estimate of 1-D ``draws`` at ``x``, bandwidth by Scott's rule (the kernel's
    s.d. is n^(-1/5) times the draws' s.d.): scipy.stats.gaussian_kde's numbers, in one vectorised pass."""
    d = np.asarray(draws, float).ravel()
    x = np.asarray(x, float)
    h = d.std(ddof=1) * d.size ** -0.2
    z = (x[:, None] - d[None, :]) / h
    return np.exp(-0.5 * z * z).sum(1) / (d.size * h * np.sqrt(2 * np.pi))


def marginal_densities(panels: list, title: str | None = None, cols: int = 3) -> go.Figure:
    """panels: list of (name, mcmc_draws (m,), {label: (mean, sd)}), ``cols`` per row. Chen et al. Figs 8, 10.

    MCMC: Gaussian kernel density estimate (Scott's rule) of the draws; methods: their Gaussian marginals.
    """
    k = max(len(panels), 1)
    ncol = min(cols, k)
    nrow = -(-k // ncol)
    fig = make_subplots(rows=nrow, cols=ncol, subplot_titles=[p[0] for p in panels], vertical_spacing=0.18)
    styles = method_styles([lab for p in panels for lab in p[2]])
    ref = look("mcmc")
    for j, (name, draws, approx) in enumerate(panels):
        row, col = j // ncol + 1, j % ncol + 1
        draws = np.asarray(draws, float)
        lo = min([np.quantile(draws, 0.001)] + [m - 4 * s for m, s in approx.values()])
        hi = max([np.quantile(draws, 0.999)] + [m + 4 * s for m, s in approx.values()])
        x = np.linspace(lo, hi, 200)
        fig.add_trace(go.Scatter(x=x, y=kde(draws, x), name=ref.label, fill="tozeroy",
                                 fillcolor="rgba(0,0,0,0.07)", line=line("mcmc", width=3),
                                 showlegend=j == 0, legendgroup="MCMC"),
                      row=row, col=col)
        for lab, (m, s) in approx.items():
            y = np.exp(-0.5 * ((x - m) / s) ** 2) / (s * np.sqrt(2 * np.pi))
            fig.add_trace(go.Scatter(x=x, y=y, name=lab, line=styles[lab][0], showlegend=j == 0,
                                     legendgroup=lab), row=row, col=col)
    return style(fig, title, height=320 * nrow + 60)


def sparsity_heatmaps(patterns: dict, title: str | None = None) -> go.Figure:
    """patterns: name -> boolean (d, d) matrix (e.g. T, Omega = T T^T, Hessian). Chen et al. Sec. 4 / E10.

    Row 1 at the top (matrix orientation); dark cells are structural non-zeros.
    """
    fig = make_subplots(rows=1, cols=len(patterns), subplot_titles=list(patterns), horizontal_spacing=0.04)
    for j, (name, P) in enumerate(patterns.items()):
        P = np.asarray(P, float)
        fig.add_trace(go.Heatmap(z=P, colorscale=[[0, "#ffffff"], [1, "#1f3b73"]], showscale=False, xgap=1, ygap=1,
                                 hovertemplate="row %{y}, column %{x}<extra></extra>",
                                 x=np.arange(1, P.shape[1] + 1), y=np.arange(1, P.shape[0] + 1)),
                      row=1, col=j + 1)
        fig.update_xaxes(showticklabels=False, constrain="domain", row=1, col=j + 1)
        fig.update_yaxes(showticklabels=False, autorange="reversed", scaleanchor=f"x{j + 1 if j else ''}",
                         constrain="domain", row=1, col=j + 1)
    return style(fig, title, height=380)
