"""Figures of Tan (2025) Thm 2's estimators of the factor gradients (the Positive definiteness page).

Pure data in, ``go.Figure`` out, from :mod:`vilab.theory.estimator_variance`:

* :func:`noise_cloud_figure`: the single-draw estimates of two entries of grad_C L (or grad_T L) at one iterate,
  first order (G1 / G2, from the gradient of log p) against second order (F1 / F2, from its Hessian), with the
  exact gradient;
* :func:`spread_figure`: the spread (trace of the covariance) of both estimators at every iterate of a run, on a
  log axis.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from . import marker, style

__all__ = ["ESTIMATOR_COLORS", "estimator_symbol", "estimator_label", "entry_label", "noise_cloud_figure",
           "spread_figure"]

#: first order (vermilion, the noisy one) and second order (blue); not methods, so not in the method looks
ESTIMATOR_COLORS = {"first": "#D55E00", "second": "#0072B2"}
_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def estimator_symbol(name: str) -> str:
    """The paper's symbol of an estimator: "G1" -> "G₁" (ValueError for a name that is not G1, F1, G2, F2)."""
    name = str(name)
    if len(name) != 2 or name[0] not in "GF" or name[1] not in "12":
        raise ValueError(f"An estimator of Tan's Theorem 2 is G1, F1, G2 or F2; got {name!r}.")
    return name[0] + name[1].translate(_SUB)


def estimator_label(name: str) -> str:
    """How an estimator reads in a legend: "G1" -> "G₁: first order (∇ log p)", "F2" -> "F₂: second order (∇² log p)"."""
    sym = estimator_symbol(name)
    return f"{sym}: first order (∇ log p)" if str(name)[0] == "G" else f"{sym}: second order (∇² log p)"


def entry_label(factor: str, entry) -> str:
    """"∂L/∂C₁₁" for factor "C" and entry (0, 0) (1-based subscripts, as in the paper)."""
    i, j = (int(e) + 1 for e in entry)
    return f"∂L/∂{factor}{str(i).translate(_SUB)}{str(j).translate(_SUB)}"


def _points(a, what):
    a = np.asarray(a, float)
    if a.ndim != 2 or a.shape[1] != 2:
        raise ValueError(f"The {what} estimates must be an (n, 2) array of two entries each; got shape {a.shape}.")
    return a


def noise_cloud_figure(cloud: dict, title: str | None = None, height: int = 440) -> go.Figure:
    """Scatter of the single-draw estimates of :func:`vilab.theory.estimator_variance.noise_cloud`: each dot one
    draw theta ~ q, placed at two entries of the estimated gradient; first order in vermilion, second order in
    blue on top (a second-order estimate that does not depend on the draw is one dot, drawn larger), the exact
    gradient as a black cross under them where it is known."""
    first, second = _points(cloud["first"], "first-order"), _points(cloud["second"], "second-order")
    f1, f2 = cloud["names"]
    factor = cloud.get("factor", "C")
    (ea, eb) = cloud["entries"]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=first[:, 0], y=first[:, 1], mode="markers", name=estimator_label(f1),
                             marker=dict(color=ESTIMATOR_COLORS["first"], size=5, opacity=0.45),
                             hovertemplate="%{x:.4g}, %{y:.4g}<extra>" + f1 + "</extra>"))
    ex = cloud.get("exact")
    if ex is not None:  # under the second-order dots, which gather around it
        fig.add_trace(go.Scatter(x=[float(ex[0])], y=[float(ex[1])], mode="markers", name="exact gradient",
                                 legendrank=1001, marker=marker("exact", size=15, opacity=0.7)))
    spread2 = float(np.max(np.ptp(second, axis=0))) if second.shape[0] else 0.0
    scale = float(np.max(np.abs(first))) if first.size else 1.0
    still = spread2 <= 1e-9 * max(scale, 1.0)
    fig.add_trace(go.Scatter(x=second[:, 0], y=second[:, 1], mode="markers",
                             name=estimator_label(f2) + (": the same at every draw" if still else ""),
                             marker=dict(color=ESTIMATOR_COLORS["second"], size=12 if still else 5,
                                         opacity=1.0 if still else 0.6),
                             hovertemplate="%{x:.4g}, %{y:.4g}<extra>" + f2 + "</extra>"))
    fig.update_xaxes(title=entry_label(factor, ea))
    fig.update_yaxes(title=entry_label(factor, eb))
    return style(fig, title=title, height=height)


def spread_figure(run: dict, factor: str = "C", current: int | None = None, title: str | None = None,
                  height: int = 380) -> go.Figure:
    """The spread V = E|vech X - E vech X|² of the first- and second-order estimators at every iterate of
    :func:`vilab.theory.estimator_variance.along_run` (``run["V"]``), on a log axis, with ±2 standard-error bars;
    ``current`` (an index into the run's rows) is ringed. Spreads at round-off level (a Gaussian target's second
    order) are drawn as they are, far below the other line."""
    if factor not in ("C", "T"):
        raise ValueError(f"The factor must be 'C' or 'T'; got {factor!r}.")
    first, second = ("G1", "F1") if factor == "C" else ("G2", "F2")
    it = np.asarray(run["iterations"], float)
    fig = go.Figure()
    floor = np.finfo(float).tiny
    for key, which in ((first, "first"), (second, "second")):
        v = np.maximum(np.asarray(run["V"][key], float), floor)
        se = np.asarray(run["se"][key], float)
        lo = np.minimum(2.0 * se, 0.999 * v)  # a bar that would reach 0 stops just above it on a log axis
        fig.add_trace(go.Scatter(x=it, y=v, mode="lines+markers", name=estimator_label(key),
                                 line=dict(color=ESTIMATOR_COLORS[which], width=2.5),
                                 marker=dict(color=ESTIMATOR_COLORS[which], size=7),
                                 error_y=dict(type="data", symmetric=False, array=2.0 * se, arrayminus=lo,
                                              color=ESTIMATOR_COLORS[which], thickness=1),
                                 hovertemplate="iteration %{x}: %{y:.3g}<extra>" + key + "</extra>"))
        if current is not None and -len(it) <= int(current) < len(it):
            k = int(current)
            fig.add_trace(go.Scatter(x=[it[k]], y=[v[k]], mode="markers", showlegend=False, hoverinfo="skip",
                                     marker=dict(color="rgba(0,0,0,0)", size=16,
                                                 line=dict(color="black", width=2))))
    fig.update_xaxes(title="iteration of the run")
    fig.update_yaxes(title="spread of one draw's estimate", type="log", exponentformat="power")
    return style(fig, title=title, height=height)
