"""Figures and tables of the "Adam vs SNNGM" page (Tan (2025) Fig. 3, Fig. 4, Fig. 6/7-style curves,
Table 8 layout).

Pure data in, ``go.Figure`` (or a pandas DataFrame for Table 8) out; the live figure of a Play also as plain data
(``mean_paths_2d(..., plain=True)``: its traces as dicts, no graph objects).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from vilab.algorithms import optim
from vilab import plots
from vilab.plots import color, ellipse, fast, line, marker, style, subplots
from vilab.plots.fields import arrow_segments

__all__ = ["code", "label", "fig3_view", "thin_index", "field_panel", "field_paths", "posterior_contours", "mean_paths_2d", "elbo_curves", "alpha_sweep", "tau_weights_figure",
           "ORDER_SUFFIX", "comparison_specs", "comparison_summary", "run_label", "table8", "theorem3_figure",
           "TABLE8_ROWS", "TABLE7_ROWS", "table8_sim_figure", "table8_sim_table"]

_KEYMAP = {"adam": "adam", "adam-natural": "nadam", "snngm": "snngm", "nagm": "nagm", "pga": "pga", "vogn": "vogn"}
_START_SYMBOLS = ["square", "diamond", "triangle-up", "pentagon", "star"]


def code(name: str) -> str:
    """The look code (:func:`vilab.plots.look`) of an optimizer of :mod:`vilab.algorithms.optim` ("adam-natural" -> "nadam")."""
    return _KEYMAP.get(name, name)


def label(name: str) -> str:
    """The readable name of an optimizer, the same on every page."""
    return plots.label(code(name))


def _col(name: str, i: int = 0) -> str:
    return color(code(name), i)


def _legend_below(fig: go.Figure, y: float = -0.26) -> go.Figure:
    """A figure with a title keeps its legend under the plot (many long labels would cover the title);
    one without keeps the template's legend strip above the plot, which never meets the axis title."""
    if fig.layout.title.text:
        fig.update_layout(legend=dict(orientation="h", yanchor="top", y=y, x=0), margin=dict(b=40))
    return fig


def fig3_view(paths, optimum=None, starts=(), pad: float = 0.06):
    """The common window (mu range, sigma^2 range) of Tan's Fig. 3 panels, zoomed to the paths.

    paths : iterable of (mu_path, s2_path); starts and the optimum are included. The sigma^2 range is
    for a log axis (a factor ``1.4`` of room below and above); the mu range is padded by ``pad`` of its width.
    """
    mus = [np.asarray(m, float) for m, _ in paths] + [np.asarray([s[0] for s in starts], float)]
    s2s = [np.asarray(v, float) for _, v in paths] + [np.asarray([s[1] for s in starts], float)]
    if optimum is not None:
        mus.append(np.asarray([optimum[0]], float))
        s2s.append(np.asarray([optimum[1]], float))
    mu = np.concatenate(mus) if mus else np.zeros(0)
    s2 = np.concatenate(s2s) if s2s else np.zeros(0)
    mu, s2 = mu[np.isfinite(mu)], s2[np.isfinite(s2) & (s2 > 0)]
    if mu.size == 0 or s2.size == 0:
        raise ValueError("There is no path to draw: every run failed before its first step.")
    lo, hi = float(mu.min()), float(mu.max())
    w = max(hi - lo, 1e-3)
    return (lo - pad * w, hi + pad * w), (float(s2.min()) / 1.4, float(s2.max()) * 1.4)


def thin_index(n: int, max_points: int | None, *series) -> np.ndarray:
    """Indices of about ``max_points`` points of a path of ``n`` points, always the first and the last: a path
    of thousands of iterations drawn with a few hundred looks the same and its figure is several times smaller
    (faster to send and to redraw). With ``series`` (arrays of length n, e.g. the path's coordinates) the path
    is cut into ``max_points // 5`` pieces and each keeps its first point and the lowest and highest point of
    every series, so short excursions (Adam's spikes) are drawn to their full depth. ``None`` keeps every point."""
    if max_points is None or n <= max_points:
        return np.arange(n)
    if not series:
        return np.unique(np.linspace(0, n - 1, max(int(max_points), 2)).round().astype(int))
    edges = np.unique(np.linspace(0, n, max(int(max_points) // (1 + 2 * len(series)), 2) + 1).round().astype(int))
    keep = [edges[:-1], [n - 1]]
    for y in series:
        y = np.asarray(y, float)
        for a, b in zip(edges[:-1], edges[1:]):
            seg = y[a:b]
            keep.append([a + int(np.argmin(seg)), a + int(np.argmax(seg))])
    return np.unique(np.concatenate([np.asarray(k, int).ravel() for k in keep]))


def field_panel(name, U, V, mus, s2s, paths, mu_range, s2_range, optimum=None, title=None, height=400,
                max_points: int | None = 400, marks=()):
    """One panel of Tan (2025) Fig. 3: the normalised gradient field an optimizer is fed and its paths.

    sigma^2 is on a log axis, so the paths near the optimum (sigma^2 ~ 2e-3) are not pressed onto the
    axis. ``U``, ``V`` (shape (len(s2s), len(mus))) are the field's (mu, sigma^2) components on the grid;
    the arrows are drawn in (mu, log sigma^2) coordinates, as the eye reads a log axis.
    paths : [(start, mu_path, s2_path, note)], ``note`` the text at the start (e.g. "2197 it.");
    a path whose note starts with "diverged" ends in a cross. The optimizer ``name`` gives the look.
    Each path is drawn with about ``max_points`` of its iterates (:func:`thin_index`: the first, the last and
    each stretch's extremes).
    marks : [(mu, s2, text)] points where the step size was changed during a live run (small open
    diamonds, ``text`` in the hover).
    """
    M, S = np.meshgrid(np.asarray(mus, float), np.asarray(s2s, float))
    U, V = np.asarray(U, float), np.asarray(V, float)
    logS = np.log10(S)
    Vlog = V / (S * np.log(10.0))  # d log10(s2) = d s2 / (s2 ln 10)
    inside = (M >= mu_range[0]) & (M <= mu_range[1]) & (S >= s2_range[0]) & (S <= s2_range[1])
    lx, ly = np.log10(s2_range[0]), np.log10(s2_range[1])
    aspect = (ly - lx) / (mu_range[1] - mu_range[0])
    nx = max(int(inside.any(axis=0).sum()), 2)
    xs, ys, _ = arrow_segments(M[inside], logS[inside], U[inside], Vlog[inside], normalise=True, aspect=aspect,
                               length=0.8 * (mu_range[1] - mu_range[0]) / nx)
    fig = go.Figure()
    # thin grey arrows, single precision (half the JSON). SVG lines, not WebGL: a browser without a GPU redraws
    # three WebGL panels about a third slower; lecture mode thickens them to 2 px, still under the 3.5 px paths
    fig.add_trace(go.Scatter(x=xs.astype(np.float32), y=np.power(10.0, ys).astype(np.float32), mode="lines",
                               line=dict(color="#b0b0b0", width=1), hoverinfo="skip", showlegend=False,
                               name="gradient field"))
    c = code(name)
    lk = plots.look(c)
    for i, (start, mu_path, s2_path, note) in enumerate(paths):
        mu_path, s2_path = np.asarray(mu_path, float), np.asarray(s2_path, float)
        ok = np.isfinite(mu_path) & np.isfinite(s2_path) & (s2_path > 0)
        mu_path, s2_path = mu_path[ok], s2_path[ok]
        keep = thin_index(mu_path.size, max_points, mu_path, np.log10(s2_path))
        mu_path, s2_path = mu_path[keep], s2_path[keep]
        fig.add_trace(go.Scatter(x=mu_path, y=s2_path, mode="lines", name=f"from {start}: {note}",
                                 line=line(c, width=2.5), showlegend=False,
                                 hovertemplate=f"{lk.label} from {start}<br>μ %{{x:.3f}}<br>σ² %{{y:.3g}}<extra></extra>"))
        right = start[0] > 0.5 * (mu_range[0] + mu_range[1])
        fig.add_trace(go.Scatter(x=[start[0]], y=[start[1]], mode="markers+text", text=[note], showlegend=False,
                                 textposition="bottom left" if right else "bottom right",
                                 textfont=dict(color="#1a1a1a"), hoverinfo="skip",
                                 marker=dict(symbol=_START_SYMBOLS[i % len(_START_SYMBOLS)], size=11, color=lk.color,
                                             line=dict(color="black", width=1))))
        if str(note).startswith("diverged") and mu_path.size:
            fig.add_trace(go.Scatter(x=[mu_path[-1]], y=[s2_path[-1]], mode="markers", showlegend=False,
                                     hoverinfo="skip", marker=dict(symbol="x", size=14, color="black")))
    if optimum is not None:
        fig.add_trace(go.Scatter(x=[optimum[0]], y=[optimum[1]], mode="markers", showlegend=False, name="optimum",
                                 hovertemplate="optimum<br>μ %{x:.3f}<br>σ² %{y:.3g}<extra></extra>",
                                 marker=dict(symbol="circle-open", size=16, color="black", line=dict(width=2.5))))
    if len(marks):
        fig.add_trace(go.Scatter(x=[m[0] for m in marks], y=[m[1] for m in marks], mode="markers",
                                 showlegend=False, name="step size changed", text=[m[2] for m in marks],
                                 hovertemplate="%{text}<extra></extra>",
                                 marker=dict(symbol="diamond-open", size=13, color=lk.color, line=dict(width=2.5))))
    fig.update_xaxes(title_text="μ", range=list(mu_range))
    fig.update_yaxes(title_text="σ² (log scale)", type="log", range=[lx, ly], exponentformat="power", dtick=1)
    fig = style(fig, title, height=height)
    fig.update_layout(margin=dict(l=60, r=16, t=40 if title else 12, b=45), showlegend=False)
    return fig


def field_paths(panels, mus, s2s, optimum=None, starts=(), title=None):
    """Tan (2025) Fig. 3 in one figure: one panel per optimizer, normalised gradient field + trajectories.

    panels : list of dicts {title, U, V (len(s2s), len(mus)), paths: [(label, mu_path, s2_path, name)]}.
    The legend entries carry the iteration counts.
    """
    fig = subplots(rows=1, cols=len(panels), subplot_titles=[p["title"] for p in panels],
                        shared_yaxes=True, horizontal_spacing=0.04)
    M, S = np.meshgrid(mus, s2s)
    aspect = (float(np.ptp(s2s)) or 1.0) / (float(np.ptp(mus)) or 1.0)
    for j, p in enumerate(panels, start=1):
        xs, ys, _ = arrow_segments(M, S, np.asarray(p["U"]), np.asarray(p["V"]), normalise=True, aspect=aspect)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color="#b0b0b0", width=1), hoverinfo="skip",
                                 showlegend=False), row=1, col=j)
        for i, (lab, mu_path, s2_path, name) in enumerate(p["paths"]):
            fig.add_trace(go.Scatter(x=mu_path, y=s2_path, mode="lines+markers", name=lab, legendgroup=f"p{j}",
                                     line=line(code(name), width=2),
                                     marker=dict(symbol=_START_SYMBOLS[i % len(_START_SYMBOLS)], size=10,
                                                 color=_col(name), maxdisplayed=1)), row=1, col=j)
        if starts:
            fig.add_trace(go.Scatter(x=[s[0] for s in starts], y=[s[1] for s in starts], mode="markers",
                                     marker=dict(symbol="square", size=9, color="black"), showlegend=False,
                                     hoverinfo="skip"), row=1, col=j)
        if optimum is not None:
            fig.add_trace(go.Scatter(x=[optimum[0]], y=[optimum[1]], mode="markers", showlegend=False,
                                     marker=dict(symbol="circle-open", size=14, color="black", line=dict(width=2))),
                          row=1, col=j)
        fig.update_xaxes(title_text="μ", range=[float(mus[0]), float(mus[-1])], row=1, col=j)
    fig.update_yaxes(title_text="σ²", range=[float(s2s[0]), float(s2s[-1])], row=1, col=1)
    style(fig, title, height=460)
    fig.update_layout(legend=dict(orientation="v", y=-0.2, yanchor="top", x=0))
    return fig


def posterior_contours(grid, n_levels: int = 8) -> go.Contour:
    """Grey contour lines of the exact posterior density exp(logp) on a grid (normalised to max 1),
    levels at 1/(n_levels+1), ..., n_levels/(n_levels+1) of the mode, darker towards the mode."""
    return go.Contour(_posterior_contours(grid, n_levels))


def _posterior_contours(grid, n_levels: int = 8) -> dict:
    t1, t2, logp = grid
    z = np.asarray(logp, float)
    z = np.exp(z - np.nanmax(z))
    step = 1.0 / (n_levels + 1)
    return dict(type="contour", x=t1, y=t2, z=z, name="exact posterior", showscale=False,
                colorscale=[[0.0, "#c4c4c4"], [1.0, "#404040"]], zmin=0.0, zmax=1.0,
                contours=dict(coloring="lines", start=step, end=1.0 - step / 2, size=step),
                line=dict(width=1.5), hoverinfo="skip", showlegend=True)


def mean_paths_2d(grid, traces, title=None, show_ellipses=True, height=460, zoom=True, bends=None,
                  bend_symbol: str = "α", plain: bool = False):
    """Mean paths over the exact posterior's grey contours (2-D model).

    grid : (t1, t2, logp) with logp of shape (len(t2), len(t1)).
    traces : {label: (name, mean (k, 2), cov (k, 2, 2), status)}; each optimizer in its look, its final
    q's 2-sd ellipse dotted. With ``zoom`` the axes span the posterior's contours, the starts and the final
    q's (a noisy path may leave the window on the way).
    bends : {name: [(t, value), ...]}: where a live run's step size changed, starred as
    vilab.plots.trajectories.add_bends marks them (named by ``bend_symbol``).

    ``plain=True``: instead of the figure, what of it the runs change, as plain data (dicts and arrays, no graph
    objects: a Play draws one for every frame, vilab_ui.live): ``{"data": [every trace as a dict, in the
    figure's order], "layout": {the annotations, and with ``zoom`` the axes' ranges}}``.
    """
    from vilab.plots.trajectories import bend_marks

    t1, t2, logp = grid
    data = [_posterior_contours(grid)]
    xs, ys = [], []
    for i, (lab, (name, mean, cov, status)) in enumerate(traces.items()):
        c = code(name)
        extra = "" if not status.startswith("diverged") else f" ({status})"
        mean = np.asarray(mean, float)
        data.append(dict(type="scatter", x=mean[:, 0], y=mean[:, 1], mode="lines", name=lab + extra, legendgroup=lab,
                         line=line(c, width=2.5)))
        data.append(dict(type="scatter", x=[mean[-1, 0]], y=[mean[-1, 1]], mode="markers", legendgroup=lab,
                         marker=marker(c, size=11, line=dict(color="white", width=1)), showlegend=False,
                         hoverinfo="skip"))
        ok = np.all(np.isfinite(mean), axis=1)
        if ok.any():  # the window holds the start and the end of each path (a noisy path may wander out of it)
            xs.append(mean[ok, 0][[0, -1]])
            ys.append(mean[ok, 1][[0, -1]])
        if show_ellipses:
            ex, ey = ellipse(mean[-1], cov[-1], 2.0)
            data.append(dict(type="scatter", x=ex, y=ey, mode="lines", line=dict(color=_col(name), width=1.5, dash="dot"),
                             showlegend=False, hoverinfo="skip", legendgroup=lab))
            xs.append(ex[np.isfinite(ex)])
            ys.append(ey[np.isfinite(ey)])
    notes = []
    if bends:
        stars, notes = bend_marks({code(name): np.asarray(mean, float) for name, mean, _, _ in traces.values()},
                                  {code(name): bends.get(name, []) for name, _, _, _ in traces.values()}, bend_symbol)
        data += stars
    x_rng, y_rng = [float(t1[0]), float(t1[-1])], [float(t2[0]), float(t2[-1])]
    if zoom:
        z = np.exp(np.asarray(logp, float) - np.nanmax(logp))
        inner = z > 1.0 / 9  # the outermost contour drawn
        px = np.concatenate([np.asarray(t1)[inner.any(axis=0)]] + xs)
        py = np.concatenate([np.asarray(t2)[inner.any(axis=1)]] + ys)
        px, py = px[(px >= x_rng[0]) & (px <= x_rng[1])], py[(py >= y_rng[0]) & (py <= y_rng[1])]
        if px.size and py.size:
            wx, wy = np.ptp(px) or 0.1, np.ptp(py) or 0.1
            x_rng = [max(x_rng[0], px.min() - 0.12 * wx), min(x_rng[1], px.max() + 0.12 * wx)]
            y_rng = [max(y_rng[0], py.min() - 0.12 * wy), min(y_rng[1], py.max() + 0.12 * wy)]
    if plain:
        return {"data": data, "layout": {"annotations": notes, **({"ranges": [x_rng, y_rng]} if zoom else {})}}
    fig = fast(go.Figure())
    for t in data:
        fig.add_trace(t)
    for a in notes:
        fig.add_annotation(**a)
    fig.update_xaxes(title_text="θ₁ (intercept)", range=x_rng)
    fig.update_yaxes(title_text="θ₂ (slope)", range=y_rng)
    return _legend_below(style(fig, title, height=height))


def _moving_average(y, window):
    if window <= 1 or len(y) < window:
        return y
    c = np.cumsum(np.insert(y, 0, 0.0))
    out = (c[window:] - c[:-window]) / window
    return np.concatenate([y[: window - 1], out])


def elbo_curves(curves, xlabel="iteration", optimum=None, title=None, log_x=False, window=1, clip_quantile=None,
                height=480):
    """ELBO against iteration/epoch; with ``optimum`` the gap L* - L on a log axis.

    curves : {label: (name, x, elbo)} or {label: (name, x, elbo, order)}: ``name`` picks the optimizer's
    look (colour and dash); ``order`` "first" marks a first-order run with sparse open markers (the
    second-order runs are plain lines), so the dash keeps meaning the geometry;
    ``window`` > 1 draws a trailing moving average (single-sample ELBO estimates are noisy).
    ``clip_quantile`` (e.g. 0.1) starts the ELBO axis at that quantile of all plotted values, so
    that the very low values of the first iterations do not squash the rest.
    """
    fig = go.Figure()
    shown = []
    for i, (label, spec) in enumerate(curves.items()):
        name, x, y = spec[:3]
        first = len(spec) > 3 and spec[3] in ("first", "dot")
        y = _moving_average(np.asarray(y, float), int(window))
        if optimum is not None:
            y = np.maximum(optimum - y, 1e-6)
        c = code(name)
        mk = None
        if first:  # the optimizer's marker, open (x and cross have no open form)
            sym = plots.look(c).symbol
            mk = marker(c, size=9, maxdisplayed=8, line=dict(width=1.5, color=_col(name)))
            mk["symbol"] = sym if sym in ("x", "cross") or sym.endswith("-open") else sym + "-open"
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines+markers" if first else "lines", name=label,
                                 line=line(c, width=1.8 if first else 2.5), marker=mk))
        shown.append(y[np.isfinite(y)])
    fig.update_xaxes(title_text=xlabel, type="log" if log_x else "linear", **({"dtick": 1} if log_x else {}))
    if optimum is not None:
        fig.update_yaxes(title_text="L* - L (log scale)", type="log")
    else:
        fig.update_yaxes(title_text="ELBO")
        allv = np.concatenate(shown) if shown else np.zeros(0)
        if clip_quantile is not None and allv.size:
            lo, hi = float(np.quantile(allv, clip_quantile)), float(allv.max())
            pad = 0.03 * (hi - lo) if hi > lo else 1.0
            fig.update_yaxes(range=[lo - pad, hi + pad])
    return _legend_below(style(fig, title, height=height))


def alpha_sweep(results, title=None, floor=0.05, height=480):
    """Final ELBO against alpha, one line per optimizer, as the gap to the best run (log axis).

    results : {label: (name, alphas, final_elbos, diverged_mask)}. The y value is
    max(all final ELBOs) - final ELBO (at least ``floor``), so a stable range is the flat bottom
    of a curve whatever the spread of the values; hovering shows the ELBO itself. Diverged runs
    are crosses at the top.
    """
    fig = go.Figure()
    finite = [np.asarray(r[2], float)[~np.asarray(r[3], bool)] for r in results.values()]
    finite = np.concatenate([f[np.isfinite(f)] for f in finite]) if finite else np.zeros(0)
    best = float(np.max(finite)) if finite.size else 0.0
    top = max(10.0 * (best - float(np.min(finite))), 10.0 * floor) if finite.size else 1.0
    for i, (label, (name, alphas, vals, bad)) in enumerate(results.items()):
        alphas, vals, bad = np.asarray(alphas, float), np.asarray(vals, float), np.asarray(bad, bool)
        bad = bad | ~np.isfinite(vals)
        c = _col(name, i)
        gap = np.where(bad, np.nan, np.maximum(best - vals, floor))
        fig.add_trace(go.Scatter(x=alphas, y=gap, mode="lines+markers", name=label, legendgroup=label,
                                 line=line(code(name), width=2.5), marker=marker(code(name), size=9), customdata=vals,
                                 hovertemplate=f"{label}<br>α %{{x:.3g}}<br>final ELBO %{{customdata:.2f}}"
                                 "<extra></extra>"))
        if bad.any():
            fig.add_trace(go.Scatter(x=alphas[bad], y=np.full(bad.sum(), top), mode="markers", legendgroup=label,
                                     marker=dict(symbol="x", size=11, color=c), name=f"{label}: diverged",
                                     showlegend=False, hovertemplate=f"{label}: diverged at α %{{x:.3g}}"
                                     "<extra></extra>"))
    fig.update_xaxes(title_text="step size α (α₀ for SNNGM)", type="log", exponentformat="power", dtick=1)
    fig.update_yaxes(title_text=f"best final ELBO ({best:.2f}) − final ELBO", type="log", exponentformat="power")
    return _legend_below(style(fig, title, height=height))


def tau_weights_figure(w, threshold=0.99, title=None, height=360):
    """Tan (2025) Fig. 4: 1 - beta^{N-j+1} against j, with the threshold line."""
    j = np.arange(1, len(w) + 1)
    fig = go.Figure(go.Scatter(x=j, y=w, mode="lines", name="1 − β^(N−j+1)", line=line("snngm", width=2.5)))
    fig.add_hline(y=threshold, line=dict(color="gray", dash="dot"))
    fig.update_xaxes(title_text="j")
    fig.update_yaxes(title_text="weight of j in the law of τ")
    return style(fig, title, height=height)


# ------------------------------------------------------------------ Tan (2025) Table 8 layout
ORDER_SUFFIX = {"first": "1", "second": "2", "exact": "", None: ""}
_TABLE8_ORDER = ("adam", "pga", "adam-natural", "snngm", "nagm")


def comparison_specs(optimizers, estimators=("first", "second"), covariances=("diagonal", "full")):
    """The runs of a comparison in the layout of Tan (2025) Table 8.

    Returns a list of (optimizer, estimator, diagonal): for each covariance, every optimizer with
    every gradient estimator in Tan's row order (Adam, PGA, NAdam, SNNGM, NAGM; first order,
    then second order), and VOGN once (its Gauss-Newton curvature does not use the first- or
    second-order estimate of Thm 2, so its estimator is None).
    """
    known = optim.OPTIMIZERS
    for o in optimizers:
        if o not in known:
            raise ValueError(f"Unknown optimizer {o!r}; choose one of {', '.join(known)}.")
    for e in estimators:
        if e not in optim.ESTIMATORS:
            raise ValueError(f"The gradient estimator must be one of {', '.join(optim.ESTIMATORS)}; got {e!r}.")
    for c in covariances:
        if c not in ("diagonal", "full"):
            raise ValueError(f"The covariance must be 'diagonal' or 'full'; got {c!r}.")
    if not (optimizers and estimators and covariances):
        raise ValueError("Choose at least one optimizer, one gradient estimate and one covariance.")
    out = []
    for cov in covariances:
        diag = cov == "diagonal"
        for e in estimators:
            out += [(o, e, diag) for o in _TABLE8_ORDER if o in optimizers]
        if "vogn" in optimizers:
            out.append(("vogn", None, diag))
    return out


def comparison_summary(tr) -> dict:
    """The numbers of one :func:`vilab.algorithms.optim.run` Trace that a Table-8-style comparison shows
    (small, picklable)."""
    e = tr.extra
    return dict(final=float(e["final_elbo"]), se=float(e["final_elbo_se"]), time=float(e["wall_time"]),
                compile=float(e["compile_time"]), status=tr.status, iterations=int(e["iterations"]),
                epochs=float(e["epochs"]), elbo_epoch=np.asarray(e["elbo_epoch"]))


def run_label(optimizer: str, estimator: str | None) -> str:
    """Row label of Tan (2025) Table 8: the optimizer and 1 (first-order) or 2 (second-order)."""
    known = optim.OPTIMIZERS
    if optimizer not in known:
        raise ValueError(f"Unknown optimizer {optimizer!r}; choose one of {', '.join(known)}.")
    return label(optimizer) + (f" {ORDER_SUFFIX[estimator]}" if ORDER_SUFFIX.get(estimator) else "")


def table8(results: dict):
    """A pandas DataFrame in the layout of Tan (2025) Table 8.

    results : {(optimizer, estimator, diagonal): :func:`comparison_summary` dict}. Rows: the
    optimizer with its order (e.g. "SNNGM 2"); one column per covariance holding
    "final ELBO (time in s)" like the paper, "diverged" / "stopped" where a run did not finish.
    """
    import pandas as pd

    rows: dict[str, dict] = {}
    for (opt, est, diag), r in results.items():
        label = run_label(opt, est)
        if r["status"].startswith("diverged"):
            cell = "diverged"
        else:
            cell = f"{r['final']:.1f} ({r['time']:.2f})" + (" stopped" if r["status"] == "stopped" else "")
        rows.setdefault(label, {})["diagonal" if diag else "full"] = cell
    cols = [c for c in ("diagonal", "full") if any(c in v for v in rows.values())]
    df = pd.DataFrame.from_dict(rows, orient="index", columns=cols).fillna("")
    df.index.name = "optimizer"
    return df.reset_index()


# ------------------------------------------------------------------ Tan (2025) Theorem 3
def theorem3_figure(sweep: dict, title=None, height=420):
    """Tan (2025) Theorem 3 on a log-log plot against N: SNNGM's tau-weighted mean of ||g_t||^2 along
    a run (its look) and the theorem's bound (black, dash-dot), with a 1/sqrt(N) guide (grey, dotted)
    through the first observed point. ``sweep``: the dict of :func:`vilab.theory.snngm_theory.theorem3_sweep`.
    Runs that left the parameter space (NaN) are left out of the lines and marked by crosses on the N axis.
    """
    N = np.asarray(sweep["N"], float)
    obs, bnd = np.asarray(sweep["observed"], float), np.asarray(sweep["bound"], float)
    ok = np.isfinite(obs) & np.isfinite(bnd)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=N[ok], y=bnd[ok], mode="lines+markers", name="Theorem 3's bound",
                             line=dict(color="#1a1a1a", width=2.5, dash="dashdot"),
                             marker=dict(symbol="diamond", size=9, color="#1a1a1a"),
                             hovertemplate="N %{x:.0f}<br>bound %{y:.3g}<extra></extra>"))
    fig.add_trace(go.Scatter(x=N[ok], y=obs[ok], mode="lines+markers", name="SNNGM: E‖g_τ‖² along the run",
                             line=line("snngm", width=2.5), marker=marker("snngm", size=9),
                             hovertemplate="N %{x:.0f}<br>E‖g_τ‖² %{y:.3g}<extra></extra>"))
    if ok.any():
        i = int(np.argmax(ok))
        fig.add_trace(go.Scatter(x=N[ok], y=obs[i] * np.sqrt(N[i] / N[ok]), mode="lines", name="∝ 1/√N",
                                 line=dict(color="#9a9a9a", width=1.5, dash="dot"), hoverinfo="skip"))
        lo = float(np.nanmin(obs[ok])) / 3
    else:
        lo = 1e-3
    if (~ok).any():
        fig.add_trace(go.Scatter(x=N[~ok], y=np.full((~ok).sum(), lo), mode="markers",
                                 name="run left the parameter space (σ² < 0)",
                                 marker=dict(symbol="x", size=12, color="#1a1a1a")))
    fig.update_xaxes(title_text="N, the number of iterations (α = c/√N)", type="log", exponentformat="power", dtick=1)
    fig.update_yaxes(title_text="‖∇L‖², log scale", type="log", exponentformat="power", dtick=1)
    return _legend_below(style(fig, title, height=height))


# ---------------------------------------------------------- Tan (2025) Table 8, simulation
#: the rows of Tan's Table 8 shown for the simulation (NAdam left out): (optimizer, estimator)
TABLE8_ROWS = (("adam", "first"), ("pga", "first"), ("snngm", "first"), ("nagm", "first"), ("adam", "second"),
               ("pga", "second"), ("snngm", "second"), ("nagm", "second"), ("vogn", None))
#: the rows of Tan's Table 7 (loglinear model, exact gradients)
TABLE7_ROWS = (("adam", None), ("snngm", None), ("nagm", None), ("vogn", None))


def _sim_values(results: dict, ours: bool) -> dict:
    """{(optimizer, estimator, diagonal): final ELBO or -inf (diverged)} of paper numbers or run summaries."""
    out = {}
    for k, r in results.items():
        if ours:
            bad = r["status"].startswith("diverged") or not np.isfinite(r["final"])
            out[k] = -np.inf if bad else float(r["final"])
        else:
            out[k] = float(r)
    return out


def table8_sim_figure(paper: dict, ours: dict | None = None, titles=("Tan (2025), n = 10⁵", "here"), height=460,
                      table_rows=TABLE8_ROWS):
    """Tan (2025) Table 8's simulation columns as orderings: for each row (optimizer and gradient order), how
    far its final ELBO lies below the best run of its column (log axis, +1 nat so the best sits at 1).

    paper : {(optimizer, estimator, diagonal): ELBO} (Tan's values); ours : {(optimizer, estimator,
    diagonal): :func:`comparison_summary`} or None (then only the paper's panel). Filled markers: diagonal
    covariance, open: full; each optimizer in its look; a run that diverged is a cross at the right edge.
    ``table_rows``: the (optimizer, estimator) rows shown (Table 7's: :data:`TABLE7_ROWS`).
    """
    panels = [("paper", _sim_values(paper, False))] + ([("ours", _sim_values(ours, True))] if ours else [])
    fig = subplots(rows=1, cols=len(panels), shared_yaxes=True, horizontal_spacing=0.05,
                        subplot_titles=list(titles[: len(panels)]))
    rows = [run_label(o, e) for o, e in table_rows]
    top = 1.0
    for vals in (v for _, v in panels):
        for diag in (True, False):
            col = [v for k, v in vals.items() if k[2] == diag and np.isfinite(v)]
            if col:
                top = max(top, max(col) - min(col) + 1.0)
    top *= 3.0
    for j, (_, vals) in enumerate(panels, start=1):
        for diag in (True, False):
            col = {k[:2]: v for k, v in vals.items() if k[2] == diag}
            fin = [v for v in col.values() if np.isfinite(v)]
            if not fin:
                continue
            best = max(fin)
            for name in ("adam", "pga", "snngm", "nagm", "vogn"):
                keys = [k for k in table_rows if k[0] == name and k in col]
                if not keys:
                    continue
                x = [best - col[k] + 1.0 if np.isfinite(col[k]) else top for k in keys]
                sym = plots.look(code(name)).symbol.replace("-open", "")
                sym = sym if diag else sym + "-open"
                text = [f"{col[k]:.1f}" if np.isfinite(col[k]) else "diverged" for k in keys]
                mk = marker(code(name), size=13, line=dict(width=2, color=_col(name)))
                mk["symbol"] = [sym if np.isfinite(col[k]) else "x-thin-open" for k in keys]
                fig.add_trace(go.Scatter(
                    x=x, y=[run_label(*k) for k in keys], mode="markers", name=f"{label(name)}, "
                    f"{'diagonal' if diag else 'full'}", legendgroup=label(name), showlegend=False, text=text,
                    marker=mk,
                    hovertemplate="%{y}, " + ("diagonal" if diag else "full") + "<br>final ELBO %{text}<extra></extra>"),
                    row=1, col=j)
        fig.update_xaxes(type="log", exponentformat="power", dtick=1, title_text="best of its column − ELBO + 1", row=1, col=j)
    for diag, sym in ((True, "circle"), (False, "circle-open")):
        fig.add_trace(go.Scatter(x=[None], y=[rows[0]], mode="markers", name="diagonal" if diag else "full covariance",
                                 marker=dict(symbol=sym, size=12, color="#1a1a1a", line=dict(width=2))))
    fig.update_yaxes(categoryorder="array", categoryarray=rows[::-1], row=1, col=1)
    fig = style(fig, None, height=height)
    # the legend (marker fill = covariance) under the plots: above them sit the panels' titles
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.3, x=0), margin=dict(b=70))
    return fig


def table8_sim_table(paper: dict, ours: dict | None = None, table_rows=TABLE8_ROWS):
    """A DataFrame of Table 8's simulation rows (or ``table_rows``): the paper's final ELBO per covariance and,
    where run, ours ("final ELBO (time in s)", "diverged")."""
    import pandas as pd

    out = []
    for o, e in table_rows:
        row = {"optimizer": run_label(o, e)}
        for diag in (True, False):
            cov = "diagonal" if diag else "full"
            if (o, e, diag) in paper:
                v = paper[(o, e, diag)]
                row[f"Tan (2025), {cov}"] = f"{v:.0f}" if abs(v) >= 10_000 else f"{v:.1f}"
            if ours is not None:
                r = ours.get((o, e, diag))
                if r is not None:
                    row[f"here, {cov}"] = ("diverged" if r["status"].startswith("diverged")
                                           else f"{r['final']:.1f} ({r['time']:.1f})")
        if len(row) > 1:  # a row with neither the paper's value nor ours is left out
            out.append(row)
    return pd.DataFrame(out).fillna("")
