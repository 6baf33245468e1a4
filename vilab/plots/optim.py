"""Figures and tables of the "Adam vs SNNGM" page (Tan (2025) Fig. 3, Fig. 4, Fig. 6/7-style curves,
Table 8 layout).

Pure data in, ``go.Figure`` (or a pandas DataFrame for Table 8) out.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from vilab import optim
from vilab.plots import color, density_contour, ellipse, style
from vilab.plots.fields import arrow_segments

__all__ = ["field_paths", "mean_paths_2d", "elbo_curves", "alpha_sweep", "tau_weights_figure",
           "ORDER_SUFFIX", "comparison_specs", "comparison_summary", "run_label", "table8"]

_KEYMAP = {"adam": "adam", "adam-natural": "nadam", "snngm": "snngm", "nagm": "nagm", "pga": "pga", "vogn": "vogn"}


def _col(name: str, i: int = 0) -> str:
    return color(_KEYMAP.get(name, name), i)


def _legend_below(fig: go.Figure) -> go.Figure:
    """Legend under the plot (many long labels would otherwise cover the title)."""
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.22, x=0), margin=dict(b=40))
    return fig


def field_paths(panels, mus, s2s, optimum=None, starts=(), title=None):
    """Tan (2025) Fig. 3: one panel per optimizer, normalised gradient field + trajectories.

    panels : list of dicts {title, U, V (len(s2s), len(mus)), paths: [(label, mu_path, s2_path, name)]}.
    The legend entries carry the iteration counts.
    """
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[p["title"] for p in panels],
                        shared_yaxes=True, horizontal_spacing=0.04)
    M, S = np.meshgrid(mus, s2s)
    aspect = (float(np.ptp(s2s)) or 1.0) / (float(np.ptp(mus)) or 1.0)
    for j, p in enumerate(panels, start=1):
        xs, ys, _ = arrow_segments(M, S, np.asarray(p["U"]), np.asarray(p["V"]), normalise=True, aspect=aspect)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color="#b0b0b0", width=1), hoverinfo="skip",
                                 showlegend=False), row=1, col=j)
        for i, (label, mu_path, s2_path, name) in enumerate(p["paths"]):
            fig.add_trace(go.Scatter(x=mu_path, y=s2_path, mode="lines", name=label, legendgroup=f"p{j}",
                                     line=dict(color=_col(name, i), width=2, dash=["solid", "dash", "dot"][i % 3])),
                          row=1, col=j)
        if starts:
            fig.add_trace(go.Scatter(x=[s[0] for s in starts], y=[s[1] for s in starts], mode="markers",
                                     marker=dict(symbol="square", size=9, color="black"), showlegend=False,
                                     hoverinfo="skip"), row=1, col=j)
        if optimum is not None:
            fig.add_trace(go.Scatter(x=[optimum[0]], y=[optimum[1]], mode="markers", showlegend=False,
                                     marker=dict(symbol="circle-open", size=14, color="black", line_width=2)),
                          row=1, col=j)
        fig.update_xaxes(title_text="mu", range=[float(mus[0]), float(mus[-1])], row=1, col=j)
    fig.update_yaxes(title_text="sigma^2", range=[float(s2s[0]), float(s2s[-1])], row=1, col=1)
    style(fig, title, height=460)
    fig.update_layout(legend=dict(orientation="v", y=-0.2, yanchor="top", x=0))
    return fig


def mean_paths_2d(grid, traces, title=None, show_ellipses=True):
    """Mean paths over the exact posterior contours (2-D model).

    grid : (t1, t2, logp) with logp of shape (len(t2), len(t1)).
    traces : {label: (name, mean (k, 2), cov (k, 2, 2), status)}.
    """
    t1, t2, logp = grid
    fig = go.Figure(density_contour(logp, t1, t2, name="posterior"))
    for i, (label, (name, mean, cov, status)) in enumerate(traces.items()):
        c = _col(name, i)
        extra = "" if not status.startswith("diverged") else f" ({status})"
        fig.add_trace(go.Scatter(x=mean[:, 0], y=mean[:, 1], mode="lines", name=label + extra, opacity=0.8,
                                 line=dict(color=c, width=1.5)))
        fig.add_trace(go.Scatter(x=[mean[-1, 0]], y=[mean[-1, 1]], mode="markers", marker=dict(color=c, size=8),
                                 showlegend=False, hoverinfo="skip"))
        if show_ellipses:
            ex, ey = ellipse(mean[-1], cov[-1], 2.0)
            fig.add_trace(go.Scatter(x=ex, y=ey, mode="lines", line=dict(color=c, width=2, dash="dot"),
                                     showlegend=False, hoverinfo="skip"))
    fig.update_xaxes(title_text="theta_1 (intercept)", range=[float(t1[0]), float(t1[-1])])
    fig.update_yaxes(title_text="theta_2 (slope)", range=[float(t2[0]), float(t2[-1])])
    return _legend_below(style(fig, title, height=560))


def _moving_average(y, window):
    if window <= 1 or len(y) < window:
        return y
    c = np.cumsum(np.insert(y, 0, 0.0))
    out = (c[window:] - c[:-window]) / window
    return np.concatenate([y[: window - 1], out])


def elbo_curves(curves, xlabel="iteration", optimum=None, title=None, log_x=False, window=1, clip_quantile=None):
    """ELBO against iteration/epoch; with ``optimum`` the gap L* - L on a log axis.

    curves : {label: (name, x, elbo)} or {label: (name, x, elbo, dash)} (``name`` picks the
    optimizer's colour, ``dash`` a Plotly dash style such as "dot" for first-order runs);
    ``window`` > 1 draws a trailing moving average (single-sample ELBO estimates are noisy).
    ``clip_quantile`` (e.g. 0.1) starts the ELBO axis at that quantile of all plotted values, so
    that the very low values of the first iterations do not squash the rest.
    """
    fig = go.Figure()
    shown = []
    for i, (label, spec) in enumerate(curves.items()):
        name, x, y = spec[:3]
        dash = spec[3] if len(spec) > 3 else "solid"
        y = _moving_average(np.asarray(y, float), int(window))
        if optimum is not None:
            y = np.maximum(optimum - y, 1e-6)
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=label,
                                 line=dict(color=_col(name, i), width=2, dash=dash)))
        shown.append(y[np.isfinite(y)])
    fig.update_xaxes(title_text=xlabel, type="log" if log_x else "linear")
    if optimum is not None:
        fig.update_yaxes(title_text="L* - L (log scale)", type="log")
    else:
        fig.update_yaxes(title_text="ELBO")
        allv = np.concatenate(shown) if shown else np.zeros(0)
        if clip_quantile is not None and allv.size:
            lo, hi = float(np.quantile(allv, clip_quantile)), float(allv.max())
            pad = 0.03 * (hi - lo) if hi > lo else 1.0
            fig.update_yaxes(range=[lo - pad, hi + pad])
    return _legend_below(style(fig, title, height=480))


def alpha_sweep(results, title=None, floor=0.05):
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
                                 line=dict(color=c, width=2), customdata=vals,
                                 hovertemplate=f"{label}<br>alpha %{{x:.3g}}<br>final ELBO %{{customdata:.2f}}"
                                 "<extra></extra>"))
        if bad.any():
            fig.add_trace(go.Scatter(x=alphas[bad], y=np.full(bad.sum(), top), mode="markers", legendgroup=label,
                                     marker=dict(symbol="x", size=11, color=c), name=f"{label}: diverged",
                                     showlegend=False, hovertemplate=f"{label}: diverged at alpha %{{x:.3g}}"
                                     "<extra></extra>"))
    fig.update_xaxes(title_text="alpha (alpha0 for SNNGM)", type="log", exponentformat="power")
    fig.update_yaxes(title_text=f"best final ELBO ({best:.2f}) - final ELBO", type="log", exponentformat="power")
    return _legend_below(style(fig, title, height=480))


def tau_weights_figure(w, threshold=0.99, title=None):
    """Tan (2025) Fig. 4: 1 - beta^{N-j+1} against j, with the threshold line."""
    j = np.arange(1, len(w) + 1)
    fig = go.Figure(go.Scatter(x=j, y=w, mode="lines", name="1 - beta^(N-j+1)", line=dict(color=_col("snngm"))))
    fig.add_hline(y=threshold, line=dict(color="gray", dash="dot"))
    fig.update_xaxes(title_text="j")
    fig.update_yaxes(title_text="weight of j in the law of tau")
    return style(fig, title, height=320)


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
    """The numbers of one :func:`vilab.optim.run` Trace that a Table-8-style comparison shows
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
    return known[optimizer]["label"] + (f" {ORDER_SUFFIX[estimator]}" if ORDER_SUFFIX.get(estimator) else "")


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
