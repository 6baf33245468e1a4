"""Figures of the CNN lab: ELBO and test metrics per epoch, online NLPD against examples seen,
runtime bars, and a gallery of test digits with their predictive probabilities.

Pure data in, ``go.Figure`` out. Runs are passed as plain dicts/arrays so the page can cache them,
or as the :class:`vilab.core.Trace` that ``vilab.cnn.train.vi_train`` / ``online_train`` return.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import color, line, marker, style

__all__ = ["as_run", "learning_curves", "elbo_curves", "metric_curves", "online_curves", "speed_bars", "digit_gallery", "probability_bars"]


def _code(r: dict) -> str:
    """The method code of a run (its 'optimizer' entry, else the first word of its label)."""
    return str(r.get("optimizer") or str(r["label"]).split(" ")[0])


_REPEAT_DASH = ("solid", "dash", "dot", "dashdot", "longdash")


def _looks(runs: Sequence[dict]) -> list[tuple[dict, dict]]:
    """(line, marker) of each run: the method's look (:mod:`vilab.plots.theme`); a second run of the
    same method (other settings) keeps its colour but gets another dash and an open marker."""
    seen: dict[str, int] = {}
    out = []
    for r in runs:
        c = _code(r)
        k = seen[c] = seen.get(c, -1) + 1
        ln, mk = line(c), marker(c, size=7)
        if k:
            ln["dash"] = _REPEAT_DASH[k % len(_REPEAT_DASH)] if ln["dash"] != _REPEAT_DASH[k % len(_REPEAT_DASH)] \
                else _REPEAT_DASH[(k + 1) % len(_REPEAT_DASH)]
            mk["symbol"] = f"{mk['symbol']}-open"
        out.append((ln, mk))
    return out


_ONLINE_NAMES = ("nlpd_plugin", "nlpd_mc", "nlpd_lin", "err_plugin", "err_mc", "err_lin")


def as_run(r) -> dict:
    """A run as the dict these figures read: a dict is returned as it is; a Trace of
    ``vilab.cnn.train.vi_train`` gives label, optimizer, elbo_epoch and the per-epoch test metrics,
    one of ``online_train`` label, checkpoints and metrics."""
    if isinstance(r, dict):
        return r
    s = r.settings
    if "iters_per_epoch" in s:  # a vi_train Trace
        from vilab.cnn.train import per_epoch

        return dict(label=s.get("label", r.method), optimizer=s.get("optimizer", r.method),
                    final_elbo=r.extra.get("final_elbo"), **per_epoch(r))
    return dict(label=s.get("name", r.method), checkpoints=np.asarray(r.iterations),
                metrics={k: np.asarray(r.extra[k]) for k in _ONLINE_NAMES if k in r.extra})


def learning_curves(runs: Sequence[dict], epochs: int | None = None, n_classes: int = 10,
                    title: str = "Learning curves: test error and ELBO per epoch", height: int = 420,
                    message: str | None = None) -> go.Figure:
    """Two panels per epoch: the test error of the Monte Carlo predictive (entry 0 = the start, with
    the chance level 1 - 1/n_classes drawn) and the average ELBO estimate; the CNN lab's main figure.

    runs: dicts as for :func:`elbo_curves` with 'test_err' (or vi_train Traces); none gives the
    empty axes (0..epochs) with ``message`` written where the curves will appear.
    """
    runs = [as_run(r) for r in runs]
    # two panels side by side, laid out by hand (make_subplots costs ~15 ms a redraw)
    fig = go.Figure(layout=dict(xaxis=dict(domain=[0.0, 0.4], anchor="y"), yaxis=dict(anchor="x"),
                                xaxis2=dict(domain=[0.6, 1.0], anchor="y2"), yaxis2=dict(anchor="x2")))
    for r, (ln, mk) in zip(runs, _looks(runs)):
        err = np.asarray(r.get("test_err", []), float)
        fig.add_trace(go.Scatter(x=np.arange(err.size), y=err, mode="lines+markers", name=r["label"],
                                 legendgroup=r["label"], line=ln, marker=mk,
                                 hovertemplate="epoch %{x}: test error %{y:.3f}<extra></extra>", xaxis="x", yaxis="y"))
        el = np.asarray(r.get("elbo_epoch", []), float)
        fig.add_trace(go.Scatter(x=np.arange(1, el.size + 1), y=el, mode="lines+markers", name=r["label"],
                                 legendgroup=r["label"], showlegend=False, line=ln, marker=mk,
                                 hovertemplate="epoch %{x}: ELBO %{y:,.0f}<extra></extra>",
                                 xaxis="x2", yaxis="y2"))
    chance = 1.0 - 1.0 / max(int(n_classes), 2)
    x_hi = max([int(epochs or 1)] + [np.asarray(r.get("test_err", [])).size - 1 for r in runs])
    fig.add_trace(go.Scatter(x=[0, x_hi], y=[chance, chance], mode="lines", name=f"chance level ({chance:.2f})",
                             showlegend=False, line=dict(color="#777777", dash="dot", width=1.5), hoverinfo="skip",
                             xaxis="x", yaxis="y"))
    fig.add_annotation(text=f"chance level {chance:.2f}", x=x_hi, y=chance, xanchor="right", yanchor="top",
                       showarrow=False, font=dict(color="#555555"), xref="x", yref="y")
    fig.update_xaxes(title_text="epoch", range=[-0.5, x_hi + 0.5])
    fig.layout.yaxis.update(title_text="test error (MC predictive)", range=[0, 1.02])
    fig.layout.yaxis2.update(title_text="average ELBO estimate")
    fig.update_layout(showlegend=bool(runs))
    if not runs:
        fig.add_trace(go.Scatter(x=[], y=[], showlegend=False, hoverinfo="skip", xaxis="x2", yaxis="y2"))  # its axes
        fig.layout.yaxis2.update(showticklabels=False, zeroline=False)  # no ELBO values yet
        if message:
            fig.add_annotation(text=message, xref="paper", yref="paper", x=0.5, y=0.45, showarrow=False,
                               align="center", bgcolor="rgba(255,255,255,0.92)", bordercolor="#999999",
                               borderwidth=1, borderpad=8)
    return style(fig, title, height=height)


def elbo_curves(runs: Sequence[dict], title: str = "Average ELBO per epoch (Tan Fig. 8 style)") -> go.Figure:
    """One line per run: epoch -> average of the per-iteration ELBO estimates in that epoch.

    runs: dicts with 'label', 'elbo_epoch' (array), optional 'final_elbo' (shown in the hover), or
    vi_train Traces.
    """
    fig = go.Figure()
    runs = [as_run(r) for r in runs]
    for r, (ln, mk) in zip(runs, _looks(runs)):
        y = np.asarray(r["elbo_epoch"], float)
        if y.size == 0:
            continue
        fig.add_trace(go.Scatter(x=np.arange(1, y.size + 1), y=y, mode="lines+markers", name=r["label"],
                                 line=ln, marker=mk))
    fig.update_xaxes(title="epoch")
    fig.update_yaxes(title="average ELBO estimate")
    return style(fig, title)


def metric_curves(runs: Sequence[dict], key: str = "test_nlpd", title: str | None = None,
                  ylabel: str = "test NLPD (MC predictive)") -> go.Figure:
    """One line per run of a per-epoch test metric (entry 0 = the start); dicts or vi_train Traces."""
    fig = go.Figure()
    runs = [as_run(r) for r in runs]
    for r, (ln, mk) in zip(runs, _looks(runs)):
        y = np.asarray(r[key], float)
        fig.add_trace(go.Scatter(x=np.arange(y.size), y=y, mode="lines+markers", name=r["label"],
                                 line=ln, marker=mk))
    fig.update_xaxes(title="epoch")
    fig.update_yaxes(title=ylabel)
    return style(fig, title)


_ONLINE_METRICS = [("nlpd_plugin", "plug-in NLPD"), ("nlpd_mc", "MC NLPD"), ("nlpd_lin", "linearized NLPD"),
                   ("err_plugin", "plug-in error"), ("err_mc", "MC error"), ("err_lin", "linearized error")]


def online_curves(runs: Sequence[dict],
                  metrics: Sequence[str] = ("nlpd_plugin", "err_plugin", "nlpd_mc", "err_mc", "nlpd_lin", "err_lin"),
                  title: str = "Online training: test metrics against examples seen (Jones, Chang & Murphy Figs 1-2 style)",
                  height: int | None = None) -> go.Figure:
    """Panels of test metrics against t for online runs.

    runs: dicts with 'label', 'checkpoints' (array) and 'metrics' ({name: array}), or online_train
    Traces; a metric a run lacks (e.g. only the plug-in one was evaluated) leaves its panel empty
    for that run.
    """
    runs = [as_run(r) for r in runs]
    names = dict(_ONLINE_METRICS)
    metrics = [m for m in metrics if m in names]
    cols = 2 if len(metrics) > 1 else 1
    rows = -(-len(metrics) // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[names[m] for m in metrics], vertical_spacing=0.14)
    for r, (ln, mk) in zip(runs, _looks(runs)):
        for j, m in enumerate(metrics):
            y = np.asarray(r["metrics"].get(m, []), float)
            fig.add_trace(go.Scatter(x=np.asarray(r["checkpoints"]), y=y, mode="lines+markers", name=r["label"],
                                     legendgroup=r["label"], showlegend=(j == 0), line=ln, marker=mk),
                          row=j // cols + 1, col=j % cols + 1)
    for j in range(len(metrics)):
        fig.update_xaxes(title_text="examples seen t", row=j // cols + 1, col=j % cols + 1)
    return style(fig, title, height=330 * rows if height is None else height)


def speed_bars(labels: Sequence[str], examples_per_second: Sequence[float], title: str = "Training speed",
               codes: Sequence[str] | None = None) -> go.Figure:
    """Horizontal bars of examples per second (compilation excluded), coloured by method ``codes`` when given."""
    v = np.asarray(examples_per_second, float)
    fig = go.Figure(go.Bar(x=v, y=list(labels), orientation="h", text=[f"{x:,.0f}/s" for x in v],
                           textposition="auto", marker_color=[line(c)["color"] for c in codes] if codes else
                           [color("", i) for i in range(len(v))]))
    fig.update_xaxes(title="examples per second")
    return style(fig, title, height=120 + 40 * len(v))


def digit_gallery(images, probs, labels, n_cols: int = 6, title: str = "Test images: predictive probabilities",
                  entropies=None, compact: bool = False) -> go.Figure:
    """A grid of grey images, each titled with the predicted class, its probability, the true label
    and (when given) the predictive entropy in nats. images: (N, H, W[, 1]); probs: (N, K).
    ``compact``: short titles for a narrow row ("7 (0.98)", the true label only when it differs)."""
    imgs = np.asarray(images, float)
    if imgs.ndim == 4:
        imgs = imgs[..., 0] if imgs.shape[-1] == 1 else imgs.mean(-1)
    probs = np.asarray(probs, float)
    labels = np.asarray(labels)
    N = imgs.shape[0]
    n_cols = max(1, min(int(n_cols), N))
    n_rows = -(-N // n_cols)
    titles = []
    for i in range(N):
        k = int(np.argmax(probs[i]))
        if compact:
            t = f"{k} ({probs[i, k]:.2f})" + (f", true {int(labels[i])}" if k != int(labels[i]) else "")
        else:
            t = f"{k} ({probs[i, k]:.2f}) | true {int(labels[i])}"
        if entropies is not None:
            t += f"<br>H = {float(entropies[i]):.2f}"
        titles.append(t)
    fig = make_subplots(rows=n_rows, cols=n_cols, subplot_titles=titles, horizontal_spacing=0.02,
                        vertical_spacing=0.12 if n_rows > 1 else 0.05)
    for i in range(N):
        wrong = int(np.argmax(probs[i])) != int(labels[i])
        fig.add_trace(go.Heatmap(z=imgs[i][::-1], colorscale="Reds" if wrong else "Greys", showscale=False,
                                 hovertemplate=f"image {i}<extra></extra>"), row=i // n_cols + 1, col=i % n_cols + 1)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, scaleanchor="x")
    fig.update_annotations(font_size=14)
    return style(fig, title, height=40 + 165 * n_rows)


def probability_bars(probs, label=None, title: str = "Predictive probabilities") -> go.Figure:
    """Bar chart of one image's predictive probabilities over the classes (true class highlighted)."""
    p = np.asarray(probs, float).reshape(-1)
    cols = ["#d62728" if (label is not None and k == int(label)) else "#1f77b4" for k in range(p.size)]
    fig = go.Figure(go.Bar(x=[str(k) for k in range(p.size)], y=p, marker_color=cols))
    fig.update_xaxes(title="class")
    fig.update_yaxes(title="probability", range=[0, 1])
    return style(fig, title, height=280)
