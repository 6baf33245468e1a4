"""Plotly figure builders: pure data in, ``go.Figure`` out (no streamlit here).

Shared helpers live in this module; topic builders in ``vilab.plots.<topic>``.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from .theme import (FONT_PX, LECTURE_FONT_PX, LOOKS, Look, label, line, look, marker,  # noqa: F401
                    template)

__all__ = ["COLORS", "color", "ellipse", "ellipse_outlines", "density_contour", "style", "lecture_style", "use_template", "look", "label", "line",
           "marker", "Look", "LOOKS", "template", "FONT_PX", "LECTURE_FONT_PX", "figure", "subplots", "fast"]

#: colour of each method with a fixed look (see :mod:`vilab.plots.theme`)
COLORS = {k: lk.color for k, lk in LOOKS.items()}
_PALETTE = ["#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#8C510A", "#7B3294",
            "#1B3F8B", "#B2182B"]


def color(name: str, i: int = 0) -> str:
    """Colour of a method (:func:`look`); an empty name (an unnamed run) takes the i-th palette colour."""
    if not str(name).strip():
        return _PALETTE[i % len(_PALETTE)]
    return look(name).color


def ellipse(mean, cov, n_std: float = 2.0, n: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Points (x, y) of the n_std-standard-deviation ellipse of a 2-D Gaussian.

    An indefinite "covariance" (a precision update that lost positive definiteness) has no
    ellipse: its level set is a hyperbola; this returns NaNs then, and callers say why. (One
    outline of :func:`ellipse_outlines`.)
    """
    x, y = ellipse_outlines([mean], [cov], n_std, n)
    return x[:n], y[:n]


def ellipse_outlines(means, covs, n_std: float = 2.0, n: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """The n_std-standard-deviation ellipse of every (mean, cov) pair, (k, 2) and (k, 2, 2), in one
    pass, as one line with a NaN between outlines (one Plotly trace draws them all): x, y of length
    k (n + 1). An indefinite or non-finite covariance (no Gaussian) gives an outline of NaNs."""
    means = np.asarray(means, float).reshape(-1, 2)
    covs = np.asarray(covs, float).reshape(-1, 2, 2)
    covs = 0.5 * (covs + np.swapaxes(covs, 1, 2))
    good = np.all(np.isfinite(covs), axis=(1, 2))
    w, V = np.linalg.eigh(np.where(good[:, None, None], covs, np.eye(2)))
    good &= np.all(w > 0, axis=1)
    t = np.linspace(0, 2 * np.pi, n)
    circle = np.vstack([np.cos(t), np.sin(t)])  # (2, n)
    pts = (V * np.sqrt(np.maximum(w, 0))[:, None, :]) @ circle * n_std + means[:, :, None]  # (k, 2, n)
    pts[~good] = np.nan
    pts = np.concatenate([pts, np.full((len(means), 2, 1), np.nan)], axis=2)
    return pts[:, 0].ravel(), pts[:, 1].ravel()


def density_contour(log_density_grid: np.ndarray, xs: np.ndarray, ys: np.ndarray, name: str = "target",
                    n_levels: int = 12, showscale: bool = False) -> go.Contour:
    """Contours of exp(log density) on a grid (values normalised to max 1), log-spaced levels.

    ``log_density_grid`` has shape (len(ys), len(xs)).
    """
    z = np.asarray(log_density_grid, float)
    z = np.exp(z - np.nanmax(z))
    return go.Contour(x=xs, y=ys, z=z, name=name, showscale=showscale, colorscale="Greys", opacity=0.55,
                      contours=dict(coloring="lines", start=0.01, end=1.0, size=1.0 / n_levels),
                      line=dict(width=1), hoverinfo="skip")


class _Built:
    """A figure's data validator that takes traces already built as graph objects (go.Scatter(...): validated
    when made) as they are, instead of validating them a second time (half the cost of ``add_trace``; the
    figure's JSON is the same). The traces it makes validate every later change, as Plotly's own do. Dicts, and
    anything else, are validated as by Plotly."""

    __slots__ = ("inner",)

    def __init__(self, inner):  # noqa: D107
        self.inner = inner

    def validate_coerce(self, v, skip_invalid=False, _validate=True):
        from plotly.basedatatypes import BaseTraceType
        from plotly.graph_objs import Histogram2dcontour

        items = v if isinstance(v, (list, tuple)) else [v]
        if v is None or not items or not all(isinstance(t, BaseTraceType) and t._validate
                                             and not isinstance(t, Histogram2dcontour) for t in items):
            return self.inner.validate_coerce(v, skip_invalid=skip_invalid, _validate=_validate)
        got = self.inner.validate_coerce(v, skip_invalid=skip_invalid, _validate=False)
        for t in got if isinstance(got, (list, tuple)) else [got]:
            t._validate = True
        return got

    def __getattr__(self, name):
        return getattr(self.inner, name)


def fast(fig: go.Figure) -> go.Figure:
    """``fig``, taking the traces added to it later without validating them again (see :class:`_Built`): for
    figures built anew for every frame of a Play."""
    if not isinstance(fig._data_validator, _Built):
        fig._data_validator = _Built(fig._data_validator)
    return fig


_SUBPLOTS: dict = {}  # make_subplots' arguments (as a repr) -> (its layout without the template, its grid)


def subplots(**kw) -> go.Figure:
    """``plotly.subplots.make_subplots(**kw)``, the same figure at a tenth of the cost (~1 ms instead of ~11 ms;
    a live figure is built anew for every frame of a Play): the layout make_subplots computes for these
    arguments is kept (without the template, set as a new figure sets it) and a new figure is made from a
    copy of it, with make_subplots' grid (add_trace's ``row``/``col``, update_xaxes' ``row``/``col``)."""
    import copy

    from plotly.subplots import make_subplots

    key = repr(sorted(kw.items()))
    got = _SUBPLOTS.get(key)
    if got is None:
        fig = make_subplots(**kw)
        lay = fig.layout.to_plotly_json()
        lay.pop("template", None)
        got = _SUBPLOTS[key] = (lay, fig._grid_ref, fig._grid_str)
        if len(_SUBPLOTS) > 256:
            _SUBPLOTS.pop(next(iter(_SUBPLOTS)))
    lay, ref, grid = got
    fig = go.Figure(layout=copy.deepcopy(lay))
    fig._grid_ref, fig._grid_str = copy.deepcopy(ref), grid
    fast(fig)
    own = fig._layout  # in make_subplots' order, the template first (the same JSON, key for key)
    order = {k: own[k] for k in ("template", *lay) if k in own}
    order.update(own)
    own.clear()
    own.update(order)
    return fig


def use_template(fig: go.Figure, lecture: bool) -> None:
    """Give ``fig`` vilab's registered template. Set by name, Plotly validates and deep-copies the
    whole template for every figure (about 10 ms, a tenth of a page's redraw); the registered
    template is valid already, so it is set the way Plotly sets its own default template, without
    validation (the figure's JSON is the same)."""
    lay = fig._layout_obj
    lay._validate = False
    try:
        lay.template = pio.templates[template(lecture)]
    finally:
        lay._validate = fig._validate


def style(fig: go.Figure, title: str | None = None, height: int = 450, **layout) -> go.Figure:
    """Common layout: vilab's template, compact margins, legend in a strip above the plot.

    A title sits at the very top of the figure and the legend in its own strip just above the plot
    area (a one-row legend does not overlap the title); the right margin keeps the hover toolbar
    off the plot."""
    use_template(fig, False)
    fig.update_layout(height=height, margin=dict(l=50, r=40, t=80 if title else 24, b=45),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0), **layout)
    if title:
        fig.update_layout(title=dict(text=title, x=0.0, xanchor="left", y=1.0, yref="container", yanchor="top",
                                     pad=dict(t=8)))
    return fig


def _at_least(obj, size: float) -> None:
    """Raise ``obj.font.size`` (or ``obj.size``) to ``size`` when set smaller."""
    cur = getattr(obj, "size", None)
    if cur is not None and cur < size:
        obj.size = size


def lecture_style(fig: go.Figure) -> go.Figure:
    """Projector styling: the lecture template (every text >= 18 px, dark axis text), thicker lines.

    Sizes a figure set explicitly (subplot titles, annotations, tick fonts, slider labels) are raised
    to the lecture minimum; the figure keeps its height so that it stays on the first screen."""
    big = LECTURE_FONT_PX
    small = big - 2  # the floor: 18 px
    use_template(fig, True)
    lay = fig.layout
    for f in (lay.font, lay.title.font, lay.legend.font, lay.hoverlabel.font):
        _at_least(f, small)
    if lay.font.size is None:
        lay.font.size = big
    for ann in lay.annotations or ():
        if ann.font.size is None or ann.font.size < small:
            ann.font.size = small
    def _axis(ax):
        if ax.tickfont.size is not None and ax.tickfont.size < small:
            ax.tickfont.size = small
        if ax.title.font.size is not None and ax.title.font.size < small:
            ax.title.font.size = small

    fig.for_each_xaxis(_axis)
    fig.for_each_yaxis(_axis)
    for sl in lay.sliders or ():
        sl.font.size = max(sl.font.size or 0, small)
        sl.currentvalue.font.size = max(sl.currentvalue.font.size or 0, small)
    for um in lay.updatemenus or ():
        um.font.size = max(um.font.size or 0, small)
    for tr in fig.data:
        tf = getattr(tr, "textfont", None)
        if tf is not None and tf.size is not None and tf.size < small:
            tf.size = small
        cb = getattr(getattr(tr, "marker", None), "colorbar", None) or getattr(tr, "colorbar", None)
        if cb is not None and cb.tickfont.size is not None and cb.tickfont.size < small:
            cb.tickfont.size = small
    if lay.margin.t is not None and lay.title.text:
        fig.update_layout(margin_t=int(lay.margin.t * 1.25))
    for tr in fig.data:  # thicker lines; a trace widened on purpose (drawn under another) keeps its width
        if tr.type == "scatter" and (tr.line.width is None or tr.line.width < 3.5):
            tr.line.width = 3.5 if tr.line.width is None else min(3.5, 1.5 * tr.line.width + 0.5)
    return fig


def figure(spec: dict) -> go.Figure:
    """The figure of ``spec`` = ``fig.to_dict()`` of a figure built by vilab.plots, without validating it again
    (it was valid when built): a page caches a figure's dict (cheap to copy out of st.cache_data) and redraws
    it in a few milliseconds."""
    return go.Figure(spec, _validate=False)
