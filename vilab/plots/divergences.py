"""Figures of the divergences page (Chen, Nott & Tan 2025): pure data in, go.Figure out (the live figure of a Play
also as plain data: ``live_batch(..., plain=True)``, its traces as dicts, no graph objects).

Every method is drawn in its look from :mod:`vilab.plots.theme` (``kl``, ``fisher``, ``score``,
``forward_kl``, ``weighted_fisher``, ``fdb``, ``sdb``, ``bam``; ``true`` for the target): the same
colour, dash and marker as on every other page.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from . import ellipse, label, line, look, marker, style, subplots

__all__ = ["LABELS", "meanfield_ellipses", "rescaled_pair", "variance_curves", "fig1_heatmap", "univariate_densities",
           "sdb_progression", "fixed_point_bars", "live_batch", "gradient_sd", "COUNT_COLORS", "COLLAPSE_SYMBOL",
           "objective_landscapes", "table6_bars"]

#: the readable name of each divergence code of this page (the theme's labels)
LABELS = {k: label(k) for k in ("kl", "fisher", "score", "forward_kl", "weighted_fisher", "true", "fdb", "sdb",
                                 "bam")}

#: Fig. 1 shades: how many coordinates have score-based variance <= Fisher variance (1, 2, 3); a light-to-dark
#: sequence of one hue, readable in grey-scale, and no method colour
COUNT_COLORS = {1: "#deebf7", 2: "#9ecae1", 3: "#3182bd"}
#: the marker of a score-based collapse point in Fig. 1 (the page's text names it "×")
COLLAPSE_SYMBOL = "x-thin"


def _trace_line(name: str, width: float = 2.5) -> dict:
    return line(name, width=width)


def meanfield_ellipses(mean, cov, variances: dict, n_std: float = 2.0, title: str | None = None,
                       height: int = 400, names: dict | None = None) -> go.Figure:
    """The target's n_std ellipse and the axis-aligned ellipses of mean-field optima.

    ``variances`` maps a divergence code to its (2,) optimal variances (a 0 variance, a collapse,
    is drawn as a segment); ``names`` optionally gives a code a longer legend name (it should start
    with the code's label, e.g. "weighted Fisher, M = I", so the trace keeps the method's look).
    """
    mean = np.asarray(mean, float)
    cov = np.asarray(cov, float)
    fig = go.Figure()
    x, y = ellipse(mean, cov, n_std)
    fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=label("true"), line=_trace_line("true", 3),
                             fill="toself", fillcolor="rgba(0,0,0,0.05)"))
    t = np.linspace(0, 2 * np.pi, 100)
    for name, v in variances.items():
        s = np.sqrt(np.maximum(np.asarray(v, float), 0.0)) * n_std
        fig.add_trace(go.Scatter(x=mean[0] + s[0] * np.cos(t), y=mean[1] + s[1] * np.sin(t), mode="lines",
                                 name=(names or {}).get(name, label(name)), legendgroup=name,
                                 line=_trace_line(name)))
    r = n_std * np.sqrt(np.diag(cov)) * 1.15
    fig.update_xaxes(range=[mean[0] - r[0], mean[0] + r[0]], title="θ₁")
    fig.update_yaxes(range=[mean[1] - r[1], mean[1] + r[1]], title="θ₂", scaleanchor="x"
                     if 0.05 < r[1] / r[0] < 20 else None)
    return style(fig, title=title, height=height)


def rescaled_pair(mean, cov, original: dict, mapped_back: dict, k: float, n_std: float = 2.0,
                  height: int = 400) -> go.Figure:
    """Two panels, one legend: the mean-field optima in the original coordinates and the optima found
    after θ₂ → k θ₂, mapped back (an affine-invariant divergence gives the same ellipse in both)."""
    mean = np.asarray(mean, float)
    cov = np.asarray(cov, float)
    fig = subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=["original coordinates", f"after θ₂ → {k:g} θ₂, mapped back"])
    t = np.linspace(0, 2 * np.pi, 100)
    x, y = ellipse(mean, cov, n_std)
    r = n_std * np.sqrt(np.diag(cov)) * 1.15
    for col, variances in ((1, original), (2, mapped_back)):
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=label("true"), line=_trace_line("true", 3), fill="toself",
                                 fillcolor="rgba(0,0,0,0.05)", legendgroup="true", showlegend=col == 1), 1, col)
        for name, v in variances.items():
            sd = np.sqrt(np.maximum(np.asarray(v, float), 0.0)) * n_std
            fig.add_trace(go.Scatter(x=mean[0] + sd[0] * np.cos(t), y=mean[1] + sd[1] * np.sin(t), mode="lines",
                                     name=label(name), line=_trace_line(name), legendgroup=name,
                                     showlegend=col == 1), 1, col)
        fig.update_xaxes(range=[mean[0] - r[0], mean[0] + r[0]], title="θ₁", row=1, col=col)
        fig.update_yaxes(range=[mean[1] - r[1], mean[1] + r[1]], title="θ₂", row=1, col=col,
                         scaleanchor="x" if col == 1 else "x2", scaleratio=1)
    fig = style(fig, height=height)
    fig.update_layout(margin_t=80, legend=dict(orientation="h", yanchor="bottom", y=1.1, x=0))
    return fig


def variance_curves(rhos, curves: dict, title: str | None = None, ylabel: str = "Σ₁₁",
                    height: int = 380, names: dict | None = None, marked: float | None = None) -> go.Figure:
    """Optimal mean-field variance of coordinate 1 against ρ, one line per divergence plus the truth
    (``curves`` maps a code, "true" for the target's variance, to the values; ``names`` optionally
    gives a code a longer legend name; ``marked`` draws a dotted vertical line at that ρ)."""
    fig = go.Figure()
    for name, v in curves.items():
        text = "true variance" if name == "true" else (names or {}).get(name, label(name))
        fig.add_trace(go.Scatter(x=rhos, y=v, mode="lines", name=text, legendgroup=name,
                                 line=_trace_line(name, 3 if name == "true" else 2.5)))
    if marked is not None and np.isfinite(marked):
        fig.add_vline(x=float(marked), line=dict(color="#888888", width=1, dash="dot"))
    fig.update_xaxes(title="correlation ρ")
    fig.update_yaxes(title=ylabel, rangemode="tozero")
    return style(fig, title=title, height=height)


def fig1_heatmap(grid: dict, marked=None, title: str | None = None, click_stride: int = 2,
                 height: int = 410) -> go.Figure:
    """Fig. 1 panel: # coordinates with Σ^S_ii <= Σ^F_ii over (a, b); blank where not PD.

    Shades :data:`COUNT_COLORS` (light: one coordinate, dark: all three); the diagonally dominant
    region is outlined by a dashed black line; score-based collapse points are "×" markers
    (:data:`COLLAPSE_SYMBOL`); ``marked`` = (a, b) adds a star. Plotly cannot select heatmap cells,
    so an invisible scatter layer (every ``click_stride``-th PD grid point, named "grid points")
    carries the hover text and makes a click selectable: ``st.plotly_chart(..., on_select=...)``
    then reports the clicked (a, b).
    """
    a, b = grid["a"], grid["b"]
    c1, c2, c3 = COUNT_COLORS[1], COUNT_COLORS[2], COUNT_COLORS[3]
    cs = [[0.0, c1], [0.333, c1], [0.334, c2], [0.666, c2], [0.667, c3], [1.0, c3]]
    fig = go.Figure(go.Heatmap(
        x=a, y=b, z=grid["count"], zmin=0.5, zmax=3.5, colorscale=cs, hoverinfo="skip", showscale=False))
    for n in (3, 2, 1):  # the shades in the legend (a colour bar's three labels crowd at projector sizes)
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"score ≤ Fisher in {n} of 3",
                                 marker=dict(symbol="square", size=14, color=COUNT_COLORS[n],
                                             line=dict(color="#555555", width=1))))
    fig.add_trace(go.Contour(x=a, y=b, z=grid["dd"].astype(float), showscale=False, hoverinfo="skip",
                             contours=dict(start=0.5, end=0.5, size=1, coloring="none"),
                             line=dict(color="#000000", width=3, dash="dash"), name="diagonally dominant",
                             showlegend=True))
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
                                 marker=dict(symbol=COLLAPSE_SYMBOL, size=7, color=look("score").color,
                                             line=dict(width=1.5, color=look("score").color)),
                                 hoverinfo="skip", unselected=dict(marker=dict(opacity=1.0))))
    if marked is not None:
        fig.add_trace(go.Scatter(x=[marked[0]], y=[marked[1]], mode="markers", name="selected (a, b)",
                                 marker=dict(symbol="star", size=18, color="#F0E442", line=dict(color="black", width=1.5)),
                                 unselected=dict(marker=dict(opacity=1.0)), hoverinfo="skip"))
    fig.update_xaxes(title="a", range=[-1, 1])
    fig.update_yaxes(title="b", range=[-1, 1], scaleanchor="x")
    fig = style(fig, title=title, height=height, hovermode="closest")
    # the legend beside the map, under the colour bar (above the map it would cover the title)
    fig.update_layout(legend=dict(orientation="v", x=1.02, xanchor="left", y=0.0, yanchor="bottom"))
    return fig


def univariate_densities(x, target_pdf, gaussians: dict, title: str | None = None, height: int = 410) -> go.Figure:
    """A univariate target density and its optimal Gaussians; ``gaussians`` maps code -> (mu, var)."""
    fig = go.Figure(go.Scatter(x=x, y=target_pdf, mode="lines", name=label("true"), line=_trace_line("true", 3),
                               fill="tozeroy", fillcolor="rgba(0,0,0,0.06)"))
    for name, (m, v) in gaussians.items():
        y = np.exp(-0.5 * (x - m) ** 2 / v) / np.sqrt(2 * np.pi * v)
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=label(name), line=_trace_line(name)))
    fig.update_xaxes(title="θ")
    fig.update_yaxes(title="density")
    return style(fig, title=title, height=height)


def sdb_progression(means, variances, samples, iterations, target_mean: float, target_var: float,
                    title: str | None = None, height: int = 410) -> go.Figure:
    """Fig. 5: q_t at selected iterations of SDb (1-D) with the B draws of that iteration as stars."""
    n = len(iterations)
    cols = min(n, 3)
    rows = int(np.ceil(n / cols))
    fig = subplots(rows=rows, cols=cols, subplot_titles=[f"iteration {t}" for t in iterations],
                        shared_yaxes=True, vertical_spacing=0.2 if rows > 1 else 0.1)
    sd = np.sqrt(target_var)
    x = np.linspace(min(target_mean - 4 * sd, min(means) - 3 * np.sqrt(max(variances))),
                    max(target_mean + 4 * sd, max(means) + 3 * np.sqrt(max(variances))), 400)
    pt = np.exp(-0.5 * (x - target_mean) ** 2 / target_var) / np.sqrt(2 * np.pi * target_var)
    for k, (m, v, s) in enumerate(zip(means, variances, samples)):
        r, c = k // cols + 1, k % cols + 1
        q = np.exp(-0.5 * (x - m) ** 2 / v) / np.sqrt(2 * np.pi * v)
        first = k == 0
        fig.add_trace(go.Scatter(x=x, y=pt, mode="lines", line=_trace_line("true", 2.5), name=label("true"),
                                 showlegend=first, legendgroup="t"), r, c)
        fig.add_trace(go.Scatter(x=x, y=q, mode="lines", line=_trace_line("sdb", 2.5), name="SDb's q_t",
                                 showlegend=first, legendgroup="q"), r, c)
        s = np.asarray(s, float).ravel()
        fig.add_trace(go.Scatter(x=s, y=np.zeros_like(s), mode="markers", name="the B draws",
                                 showlegend=first, legendgroup="s",
                                 marker=dict(symbol="star", size=12, color="#D55E00", line=dict(width=1, color="#000000"))),
                      r, c)
    fig = style(fig, title=title, height=max(height, 200 * rows))
    # the legend above the subplot titles, under the figure's title
    fig.update_layout(margin_t=105 if title else 70, legend=dict(orientation="h", yanchor="bottom", y=1.1, x=0))
    return fig


def fixed_point_bars(values: dict, runs: dict | None = None, title: str | None = None, height: int = 380) -> go.Figure:
    """Grouped bars of mean-field variances per coordinate.

    ``values`` maps a divergence code (kl, fisher, score: the exact optima; fdb, sdb: the fixed points
    of the batch methods) to its (d,) variances; ``runs`` maps fdb / sdb to the variances an actual
    run ended at (drawn hatched, in the method's colour). Each method in its look: Fisher and FDb
    differ in hue and the batch forms are hatched.
    """
    fig = go.Figure()
    batch = {"fdb", "sdb"}

    def bar(name, v, text, pattern):
        v = np.asarray(v, float)
        fig.add_trace(go.Bar(x=[f"Σ{k + 1}{k + 1}".translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))
                                for k in range(len(v))], y=v, name=text,
                             marker=dict(color=look(name).color, pattern=dict(shape=pattern, fgcolor="#ffffff")
                                         if pattern else None, line=dict(color="#000000", width=0.5)),
                             hovertemplate=f"{text}: %{{y:.4g}}<extra></extra>"))

    for name, v in values.items():
        bar(name, v, label(name) + (", fixed point" if name in batch else ""), "/" if name in batch else "")
    for name, v in (runs or {}).items():
        bar(name, v, label(name) + ", Adadelta run", ".")
    fig.update_layout(barmode="group")
    fig.update_yaxes(title="variance", rangemode="tozero")
    return style(fig, title=title, height=height)


def live_batch(runs: dict, target_mean: float, target_var: float, bends: dict | None = None, symbol: str = "lr",
               title: str | None = None, height: int = 410, plain: bool = False):
    """Batch methods driven step by step on a 1-D Gaussian target (Chen, Nott & Tan Sec. 6.1, Fig. 5 setting).

    Left: the target density and each method's q_t = N(mu_t, sigma_t^2) at the current iteration; right: the
    path (mu_t, sigma_t^2) of each run from its start (the axis titles name the panels), the target's (mean,
    variance) as an open circle.
    runs : {code ("sdb", "fdb", "bam"): (mu (k,), var (k,))}, row t the iterate after t steps.
    bends : {code: [(t, value), ...]}: where the step size changed (a star at iterate t, "symbol=value").

    ``plain=True``: instead of the figure, what of it the runs change, as plain data (dicts and arrays, no graph
    objects: a Play draws one for every frame, vilab_ui.live): ``{"data": [every trace as a dict, in the
    figure's order], "layout": {}}`` (the runs change no layout entry).
    """
    sd = float(np.sqrt(target_var))
    now = {c: (float(np.asarray(m, float)[-1]), float(np.asarray(v, float)[-1])) for c, (m, v) in runs.items()}
    ok = [(m, v) for m, v in now.values() if np.isfinite(m) and np.isfinite(v) and v > 0]
    lo = min([target_mean - 4 * sd] + [m - 4 * np.sqrt(v) for m, v in ok])
    hi = max([target_mean + 4 * sd] + [m + 4 * np.sqrt(v) for m, v in ok])
    x = np.linspace(lo, hi, 300)
    data = [(dict(type="scatter", x=x,
                  y=np.exp(-0.5 * (x - target_mean) ** 2 / target_var) / np.sqrt(2 * np.pi * target_var),
                  mode="lines", name=label("true"), line=_trace_line("true", 3), fill="tozeroy",
                  fillcolor="rgba(0,0,0,0.06)", legendgroup="true"), 1)]  # (trace, column)
    for c, (m, v) in now.items():
        if np.isfinite(m) and np.isfinite(v) and v > 0:
            data.append((dict(type="scatter", x=x, y=np.exp(-0.5 * (x - m) ** 2 / v) / np.sqrt(2 * np.pi * v),
                              mode="lines", name=label(c), legendgroup=c, line=_trace_line(c)), 1))
    for c, (m, v) in runs.items():
        m, v = np.asarray(m, float), np.asarray(v, float)
        data.append((dict(type="scatter", x=m, y=v, mode="lines", name=label(c), legendgroup=c, showlegend=False,
                          line=_trace_line(c), hovertemplate=f"{label(c)}<br>μ %{{x:.3f}}<br>σ² %{{y:.3g}}"
                          "<extra></extra>"), 2))
        data.append((dict(type="scatter", x=m[-1:], y=v[-1:], mode="markers", legendgroup=c, showlegend=False,
                          marker=marker(c, size=11, line=dict(color="white", width=1)), hoverinfo="skip"), 2))
        pts = [(int(t), float(val)) for t, val in (bends or {}).get(c, []) if 0 <= int(t) < m.size]
        if pts:
            ts = [t for t, _ in pts]
            data.append((dict(
                type="scatter", x=m[ts], y=v[ts], mode="markers+text", name=f"{label(c)}: {symbol} changed",
                legendgroup=c, showlegend=False, text=[f"{symbol}={val:.3g}" for _, val in pts],
                textposition="top right", textfont=dict(color=look(c).color), customdata=np.array(pts, float),
                marker=dict(symbol="star", size=15, color=look(c).color, line=dict(width=1, color="white")),
                hovertemplate=f"{label(c)}: {symbol} = %{{customdata[1]:.3g}} after step %{{customdata[0]:.0f}}"
                              "<extra></extra>"), 2))
    data.append((dict(type="scatter", x=[target_mean], y=[target_var], mode="markers", name="target (mean, variance)",
                      showlegend=False, hovertemplate="target<br>μ %{x:.3g}<br>σ² %{y:.3g}<extra></extra>",
                      marker=dict(symbol="circle-open", size=16, color="black", line=dict(width=2.5))), 2))
    if plain:
        return {"data": [t for t, _ in data], "layout": {}}
    # no subplot titles: the axis titles say what each panel shows, and the legend strip above has the room
    fig = subplots(rows=1, cols=2, horizontal_spacing=0.14, column_widths=[0.5, 0.5])
    for t, col in data:
        fig.add_trace(t, row=1, col=col)
    # set on the panels' axes directly: update_xaxes(row=, col=) costs ~1 ms a call
    lay = fig.layout
    lay.xaxis.title.text = "θ"
    lay.yaxis.title.text = "density of q<sub>t</sub> now"
    lay.yaxis.rangemode = "tozero"
    lay.xaxis2.title.text = "mean μ<sub>t</sub>"
    lay.yaxis2.title.text = "variance σ²<sub>t</sub>"
    lay.yaxis2.rangemode = "tozero"
    fig = style(fig, title=title, height=height)
    fig.update_layout(margin_t=95 if title else 60, legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
    return fig


def gradient_sd(lambda_ii, closed: dict, mc: dict, marks: dict | None = None, title: str | None = None,
                height: int = 420, curves: bool = True) -> go.Figure:
    """Fig. 4 of Chen, Nott & Tan as curves: the standard deviation of each single-draw gradient
    against Lambda_ii, one panel for the mean mu_i, one for the diagonal T_ii (log-log axes).

    ``closed`` and ``mc``: {"mu": {code: (d,)}, "T": {code: (d,)}} (codes kl, fisher, score): the
    closed forms drawn as lines in each method's look (sorted by Lambda_ii), the Monte Carlo estimates
    as markers of the same colour. ``marks``: {"mu" or "T": [(x, text), ...]} dotted vertical lines
    (where a method's curve crosses KL's). ``curves=False`` (a dense Lambda, whose s.d.s are no function of
    Lambda_ii alone): the closed forms as large open markers, one per coordinate, instead of a line.
    """
    lam = np.asarray(lambda_ii, float)
    order = np.argsort(lam)
    x = lam[order]
    fig = subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=["gradient of the mean μᵢ", "gradient of the diagonal Tᵢᵢ"])
    for col, part in ((1, "mu"), (2, "T")):
        for code in closed[part]:
            first = col == 1
            y = np.asarray(closed[part][code], float)[order]
            lk = look(code)
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines" if curves else "markers", name=f"{label(code)}, formula",
                                     legendgroup=code, showlegend=first, line=_trace_line(code),
                                     marker=dict(color=lk.color, size=13, symbol=f"{lk.symbol}-open",
                                                 line=dict(width=1.5)),
                                     hovertemplate=f"{label(code)}, formula<br>Λᵢᵢ %{{x:.3g}}<br>s.d. %{{y:.3g}}"
                                                   "<extra></extra>"), 1, col)
            ym = np.asarray(mc[part][code], float)[order]
            fig.add_trace(go.Scatter(x=x, y=ym, mode="markers", name=f"{label(code)}, Monte Carlo",
                                     legendgroup=code, showlegend=first,
                                     marker=marker(code, size=7, opacity=0.85, line=dict(color="white", width=0.5)),
                                     hovertemplate=f"{label(code)}, Monte Carlo<br>Λᵢᵢ %{{x:.3g}}<br>s.d. "
                                                   "%{y:.3g}<extra></extra>"), 1, col)
        ys = np.concatenate([np.asarray(v, float) for src in (closed, mc) for v in src[part].values()])
        ys = ys[np.isfinite(ys) & (ys > 0)]
        for xm, text in (marks or {}).get(part, []):
            if np.isfinite(xm) and x[0] <= xm <= x[-1] and ys.size:
                # a trace, not add_vline: a shape's annotation on a log axis is placed at 10^x
                fig.add_trace(go.Scatter(x=[xm, xm], y=[ys.min(), ys.max()], mode="lines+text",
                                         text=["", text], textposition="bottom left", showlegend=False,
                                         textfont=dict(size=11, color="#555555"), hoverinfo="skip",
                                         line=dict(color="#888888", width=1, dash="dot")), 1, col)
        fig.update_xaxes(title_text="target precision Λᵢᵢ", type="log", dtick=1, row=1, col=col)
        fig.update_yaxes(title_text="s.d. of the one-draw gradient" if col == 1 else None, type="log", dtick=1,
                         row=1, col=col)
    fig = style(fig, title=title, height=height)
    fig.update_layout(margin_t=110 if title else 85, legend=dict(orientation="h", yanchor="bottom", y=1.1, x=0))
    return fig


def objective_landscapes(res: dict, codes=("kl", "fisher", "score"), title: str | None = None, height: int = 430,
                         valleys: bool = True) -> go.Figure:
    """Digest E4: one panel per objective over (Σ₁₁, Σ₂₂) on log axes (Chen, Nott & Tan Sec. 1.3, 2.1).

    ``res`` is :func:`vilab.divergences.landscape.objective_landscape`'s dict. Shade and contours: log10 of the
    objective minus its minimum (one shared scale: dark = close to the minimum). In each panel, in the
    method's look: the closed-form optimum (large marker), the grid's smallest value (small open marker), the
    valley floor (the best Σ₁₁ for each Σ₂₂, dashed where ``valleys``); a black "x" marks the target's
    marginal variances. Where the score-based valley reaches Σ₁₁ = 0 (collapse), an arrow points off the axis.
    """
    s11, s22 = np.asarray(res["s11"], float), np.asarray(res["s22"], float)
    fig = subplots(rows=1, cols=len(codes), horizontal_spacing=0.06, shared_yaxes=True,
                        subplot_titles=[label(c) for c in codes])
    lo, hi = -3.0, None
    zs = {}
    for c in codes:
        v = np.asarray(res["values"][c], float)
        zs[c] = np.log10(np.maximum(v - v.min(), 10**lo))
    hi = max(float(np.nanmax(z)) for z in zs.values())
    hi = max(hi, lo + 1)
    for j, c in enumerate(codes, start=1):
        first = j == 1
        fig.add_trace(go.Contour(
            x=s11, y=s22, z=zs[c], coloraxis="coloraxis", contours=dict(showlines=True, start=lo, end=hi, size=0.5),
            line=dict(width=0.6, color="rgba(255,255,255,0.6)"), name=f"{label(c)}: objective", showlegend=False,
            legendgroup=c, hovertemplate=f"{label(c)}<br>Σ₁₁ %{{x:.3g}}<br>Σ₂₂ %{{y:.3g}}<br>log₁₀(excess) %{{z:.2f}}"
                                         "<extra></extra>"), 1, j)
        lk = look(c)
        if valleys:
            v1 = np.asarray(res["valleys"][c]["v1"], float)
            ok = v1 > 0
            fig.add_trace(go.Scatter(x=v1[ok], y=s22[ok], mode="lines", name=f"{label(c)}: valley (best Σ₁₁ for each Σ₂₂)",
                                     legendgroup=c, showlegend=False,
                                     line=dict(color=lk.color, width=2.5, dash="dash"), hoverinfo="skip"), 1, j)
            if not ok.all() and ok.any():
                fig.add_trace(go.Scatter(x=[s11[0]], y=[float(res["collapse_at"][0])], mode="markers+text",
                                         text=["collapse"], textposition="middle right", legendgroup=c,
                                         name=f"{label(c)}: valley reaches Σ₁₁ = 0", showlegend=False,
                                         textfont=dict(color=lk.color),
                                         marker=dict(symbol="triangle-left", size=14, color=lk.color),
                                         hovertemplate="the valley reaches Σ₁₁ = 0 at Σ₂₂ = %{y:.3g}<extra></extra>"),
                              1, j)
        opt = np.asarray(res["optimum"][c], float)
        if np.all(opt > 0):
            fig.add_trace(go.Scatter(x=[opt[0]], y=[opt[1]], mode="markers", name=f"{label(c)}: optimum",
                                     legendgroup=c, showlegend=True,
                                     marker=marker(c, size=16, line=dict(color="white", width=2)),
                                     hovertemplate=f"{label(c)} optimum<br>Σ₁₁ %{{x:.4g}}<br>Σ₂₂ %{{y:.4g}}"
                                                   "<extra></extra>"), 1, j)
        g = res["grid_min"][c]
        fig.add_trace(go.Scatter(x=[g[0]], y=[g[1]], mode="markers", name=f"{label(c)}: grid minimum",
                                 legendgroup=c, showlegend=False,
                                 marker=dict(symbol="circle-open", size=22, color=lk.color, line=dict(width=2)),
                                 hovertemplate=f"{label(c)}: smallest grid value<br>Σ₁₁ %{{x:.4g}}<br>Σ₂₂ %{{y:.4g}}"
                                               "<extra></extra>"), 1, j)
        t = np.asarray(res["true"], float)
        fig.add_trace(go.Scatter(x=[t[0]], y=[t[1]], mode="markers", name=label("true") + " variances",
                                 legendgroup="true", showlegend=first,
                                 marker=dict(symbol="x", size=13, color=look("true").color,
                                             line=dict(color="white", width=1)),
                                 hovertemplate="target's variances<br>Σ₁₁ %{x:.4g}<br>Σ₂₂ %{y:.4g}<extra></extra>"),
                      1, j)
        # decades only: the 2 and 5 between them would be too small to read from the back of a room
        fig.update_xaxes(type="log", title_text="Σ₁₁", range=[np.log10(s11[0]), np.log10(s11[-1])], dtick=1,
                         row=1, col=j)
        fig.update_yaxes(type="log", range=[np.log10(s22[0]), np.log10(s22[-1])], dtick=1, row=1, col=j,
                         title_text="Σ₂₂" if first else None)
    fig = style(fig, title=title, height=height)
    fig.update_layout(coloraxis=dict(colorscale="Viridis", reversescale=False, cmin=lo, cmax=hi,
                                     colorbar=dict(title=dict(text="log₁₀(objective − min)", side="right"),
                                                   thickness=12, len=0.9)),
                      margin_t=95 if title else 70, legend=dict(orientation="h", yanchor="bottom", y=1.1, x=0))
    return fig


def table6_bars(rows: dict, title: str | None = None, height: int = 380) -> go.Figure:
    """Table 6 as horizontal bars: M* (higher is better) and the normalised mode error (lower is better),
    mean ± s.d., one bar per method in its look, the methods' names read across (one shared axis, so they
    stay legible in lecture mode). ``rows``: {code: {"M*": (mean, sd), "mode": (mean, sd)}}."""
    fig = subplots(rows=1, cols=2, horizontal_spacing=0.06, shared_yaxes=True)
    codes = list(rows)[::-1]  # the table's first method on top
    for col, part in ((1, "M*"), (2, "mode")):
        for code in codes:
            c = "kld" if code == "kl" else code  # the stochastic KL method has its own look
            m, s = rows[code][part]
            fig.add_trace(go.Bar(y=[label(c)], x=[m], orientation="h",
                                 error_x=dict(type="data", array=[s], visible=True),
                                 name=label(c), legendgroup=c, showlegend=False,
                                 marker=dict(color=look(c).color, line=dict(color="#000000", width=0.5)),
                                 hovertemplate=f"{label(c)}: %{{x:.3g}} ± {s:.2g}<extra></extra>"), 1, col)
    fig.update_xaxes(rangemode="tozero")
    fig.update_xaxes(title_text="M*<br>(higher is better)", row=1, col=1)
    fig.update_xaxes(title_text="mode error |μ − μ*| / σ*<br>(lower is better)", row=1, col=2)
    return style(fig, title=title, height=height)
