"""Figures of the "Online learning" page (BONG, Jones, Chang & Murphy): pure data -> go.Figure."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from . import color, ellipse, style

__all__ = ["posterior_ellipses", "variance_paths", "conjugate_densities", "metric_curves", "runtime_bars", "sweep_plot"]

_METHOD_COLORS = {"bong-fc (= CM-EKF)": "#1f77b4", "Kalman filter": "#111111", "batch posterior": "#2ca02c",
                  "bong-lin-hess-fc_mom": "#d62728"}


def posterior_ellipses(beliefs: dict, theta_true=None, title: str | None = None) -> go.Figure:
    """2-sigma ellipses of 2-D Gaussians {label: (mean, cov)}; an indefinite cov is listed, not drawn."""
    fig = go.Figure()
    dashes = {"Kalman filter": "dash", "batch posterior": "dot"}
    for i, (lab, (m, S)) in enumerate(beliefs.items()):
        c = _METHOD_COLORS.get(lab, color(lab, i))
        x, y = ellipse(np.asarray(m), np.asarray(S), 2.0)
        ok = np.all(np.isfinite(x))
        fig.add_trace(go.Scatter(x=x if ok else [None], y=y if ok else [None], mode="lines",
                                 name=lab + ("" if ok else " (covariance not PD: no ellipse)"),
                                 line=dict(color=c, dash=dashes.get(lab, "solid"), width=3 if lab.startswith("bong-fc") else 2)))
        fig.add_trace(go.Scatter(x=[m[0]], y=[m[1]], mode="markers", marker=dict(color=c, size=8), showlegend=False))
    if theta_true is not None:
        fig.add_trace(go.Scatter(x=[theta_true[0]], y=[theta_true[1]], mode="markers", name="true θ",
                                 marker=dict(symbol="x", size=12, color="#111111")))
    fig.update_xaxes(title="θ₁")
    fig.update_yaxes(title="θ₂", scaleanchor="x", scaleratio=1)
    return style(fig, title)


def variance_paths(t, var_exact, var_mom, title: str | None = None) -> go.Figure:
    """Smallest eigenvalue of the covariance against t: exact (bong-fc = KF) vs fc_mom."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=t, y=var_exact, mode="lines+markers", name="bong-fc = Kalman", line=dict(color="#1f77b4")))
    fig.add_trace(go.Scatter(x=t, y=var_mom, mode="lines+markers", name="bong-lin-hess-fc_mom", line=dict(color="#d62728")))
    fig.add_hline(y=0.0, line=dict(color="#777", dash="dot"))
    fig.update_xaxes(title="observation t")
    fig.update_yaxes(title="smallest eigenvalue of Σ_t")
    return style(fig, title, height=330)


def conjugate_densities(theta, densities: dict, title: str | None = None) -> go.Figure:
    """Densities q(θ) on a grid: {label: values}."""
    fig = go.Figure()
    dashes = {"Bayes posterior": "dash"}
    for i, (lab, v) in enumerate(densities.items()):
        fig.add_trace(go.Scatter(x=theta, y=v, mode="lines", name=lab,
                                 line=dict(color=color(lab, i), dash=dashes.get(lab, "solid"), width=3 if lab.startswith("BONG") else 2)))
    fig.update_xaxes(title="θ")
    fig.update_yaxes(title="density")
    return style(fig, title, height=360)


def metric_curves(curves: dict, metric: str = "NLPD", title: str | None = None, log_y: bool = False) -> go.Figure:
    """{label: (t, values)} against the number of examples seen."""
    fig = go.Figure()
    for i, (lab, (t, v)) in enumerate(curves.items()):
        v = np.asarray(v, float)
        fig.add_trace(go.Scatter(x=list(t), y=[None if not np.isfinite(a) else a for a in v], mode="lines+markers",
                                 name=lab, line=dict(color=color(lab, i))))
    fig.update_xaxes(title="examples seen t")
    fig.update_yaxes(title=metric, type="log" if log_y else "linear")
    return style(fig, title, height=380)


def runtime_bars(labels, ms_per_step, title: str | None = None) -> go.Figure:
    """Wall time per step (ms), one bar per method (Fig. 3 analogue)."""
    fig = go.Figure(go.Bar(x=list(ms_per_step), y=list(labels), orientation="h",
                           marker_color=[color(lab, i) for i, lab in enumerate(labels)],
                           text=[f"{v:.2f} ms" for v in ms_per_step], textposition="auto"))
    fig.update_xaxes(title="ms per example", type="log")
    return style(fig, title, height=max(220, 45 * len(labels) + 80))


def sweep_plot(series: dict, xlabel: str, baseline: tuple | None = None, title: str | None = None,
               ylabel: str = "final test NLPD (plug-in)", cap: float | None = None) -> go.Figure:
    """Final metric against a swept setting (log x): {label: (x, y, statuses)}.

    Diverged runs (status "diverged: ...") are drawn as red crosses at the top of the panel;
    ``baseline = (label, value)`` is a horizontal line (bong's fixed alpha = 1).
    """
    fig = go.Figure()
    finite = [v for (_, ys, _) in series.values() for v in ys if v is not None and np.isfinite(v)]
    top = cap if cap is not None else (max(finite) * 1.1 if finite else 1.0)
    for i, (lab, (xs, ys, st)) in enumerate(series.items()):
        ok = [(x, y) for x, y, s in zip(xs, ys, st) if y is not None and np.isfinite(y) and not s.startswith("diverged")]
        bad = [x for x, y, s in zip(xs, ys, st) if y is None or not np.isfinite(y) or s.startswith("diverged")]
        fig.add_trace(go.Scatter(x=[p[0] for p in ok], y=[min(p[1], top) for p in ok], mode="lines+markers", name=lab,
                                 line=dict(color=color(lab, i))))
        if bad:
            fig.add_trace(go.Scatter(x=bad, y=[top] * len(bad), mode="markers", name=f"{lab}: diverged",
                                     marker=dict(symbol="x", size=12, color=color(lab, i), line=dict(width=2))))
    if baseline is not None:
        fig.add_hline(y=baseline[1], line=dict(color="#111", dash="dash"), annotation_text=baseline[0])
    fig.update_xaxes(title=xlabel, type="log")
    fig.update_yaxes(title=ylabel)
    return style(fig, title, height=380)
