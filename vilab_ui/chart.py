"""Drawing a figure on a page: :func:`show` (vilab's chart element, or st.plotly_chart), figure recipes, click
selection.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
from contextlib import contextmanager, nullcontext
from typing import Any, Callable

import plotly.graph_objects as go
import streamlit as st
from vilab import plots
from vilab_ui.spec import browser_spec
from vilab_ui.widgets import lecture

MAIN_FIGURE = "main_figure"  # the container key of a page's main figure (tests find it by this key)
_CHART_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"],
                 "toImageButtonOptions": {"format": "png", "scale": 2}}


_CAPTURE = threading.local()  # .open: this thread's open captures (innermost last), see capturing


@contextmanager
def capturing():
    """Collect the figures :func:`show` is given inside the block instead of drawing them: yields a list that
    fills with ``(key, main, spec)``, each spec as the browser would be sent it (:func:`_sent_spec`). For code
    that needs a page's figures without drawing them: the frames of a Play (vilab_ui.live). Only this thread's
    calls are collected (other visitors' pages run in other threads); captures nest, the innermost collects."""
    got: list = []
    open_ = _CAPTURE.__dict__.setdefault("open", [])
    open_.append(got)
    try:
        yield got
    finally:
        open_.remove(got)


def show(fig, key: str | None = None, main: bool = False, download: bool | None = None, play: dict | None = None,
         **kw):
    """Draw a Plotly figure full width in vilab's template, styled for lecture mode when it is on.

    ``fig`` is a figure, or a :func:`recipe` for one (built here), or a dict already in the form the browser is
    sent (a spec from :func:`capturing`; vilab_ui.live's play of frames). The chart element draws it at the width of
    its place on the page (and, on lecture mode's stage, at the height the page's CSS gives it).

    ``main=True`` marks the page's main figure (one per page), the one that must be on the first screen.
    The main figure and every animated figure (Plotly frames) get a "Download figure" menu under them
    (PNG, SVG, HTML; GIF for animations; vilab_ui/export.py); ``download`` forces it on or off.

    ``play`` (vilab's chart element only): the figure's frames are a stretch of a live run for the element to
    play at the screen's rate (see vilab_ui.live); it is sent to the element as the message's ``play``."""
    if getattr(_CAPTURE, "open", None):
        spec = _sent_spec(fig, lecture())
        _CAPTURE.open[-1].append((key, main, spec))
        return None
    chart = _chart_element()
    element_key = key or (MAIN_CHART if main and chart is not None else None)
    spec = _sent_spec(fig, lecture())
    kw.setdefault("config", _CHART_CONFIG)
    kw.setdefault("theme", None)  # vilab's template, not Streamlit's (which would override its fonts)
    animated = bool(spec.get("frames")) and play is None
    if download is None:
        download = main or animated
    with st.container(key=MAIN_FIGURE) if main else nullcontext():
        if chart is None:
            out = st.plotly_chart(_Sent(spec), key=key, **kw)
        else:
            out = _draw_chart(chart, spec, element_key, play=play, **kw)
        if download:  # a play's frames are a stretch of a live run, not an animation to export
            _export_menu(spec if play is None else {k: v for k, v in spec.items() if k != "frames"}, key, animated)
    return out


CHART_COMPONENT = "vilab.chart"  # vilab/plots/browser/chart.js, declared in pyproject.toml
MAIN_CHART = "vilab_chart_main"  # the element key of a page's main figure drawn without a key of its own
_CHART: Any = None  # the chart element's mount function; False when Streamlit has no assets for it


def _chart_element():
    """The chart element that draws with plotly.js's cartesian bundle (a third of Streamlit's full Plotly bundle,
    which a first visit spends 0.7 s loading), or None where Streamlit cannot serve its files: no Streamlit
    server running (a script run bare; asked again next time), or an install without vilab's pyproject.toml
    (the server's component registry, filled when it starts, has no entry for it). st.plotly_chart then draws."""
    global _CHART
    if os.environ.get("VILAB_CHART") == "plotly":  # Streamlit's own Plotly chart (for comparisons)
        return None
    if _CHART is None:
        try:
            from streamlit.runtime import Runtime

            if not Runtime.exists():
                return None
            ok = Runtime.instance().bidi_component_registry.get_component_asset_root(CHART_COMPONENT) is not None
            _CHART = st.components.v2.component(CHART_COMPONENT, js="chart.js", isolate_styles=False) if ok else False
        except Exception:  # noqa: BLE001 - a Streamlit without components v2
            _CHART = False
    return _CHART or None


def _draw_chart(chart, spec: dict, key: str | None, *, on_select=None, selection_mode=None, height=None,
                config=None, theme=None, width="stretch", play: dict | None = None):
    """Mount vilab's chart element with ``spec``; the arguments are st.plotly_chart's that vilab uses.

    The figure goes as JSON bytes (``{"figure", "config", "select", "fit"}``): ``fit`` draws it at the width of its
    place on the page, and follows that width; ``select`` sends a click on a point back as the chart's state
    ``{"selection": {"points": [{"x", "y", ...}]}}``, as st.plotly_chart's ``on_select`` does, calling ``on_select``
    when it is a function. A chart without a key is keyed by its figure (one more figure the same on the page gets
    the next free key)."""
    import orjson

    layout = spec["layout"]
    fit = not (isinstance(width, (int, float)) and not isinstance(width, bool))
    if height is not None or not fit:
        layout = {**layout, **({} if height is None else {"height": height}), **({} if fit else {"width": width})}
    msg = {"figure": {**spec, "layout": layout}, "config": config or {}, "select": on_select is not None, "fit": fit}
    if play is not None:
        msg["play"] = play
    payload = orjson.dumps(msg, option=orjson.OPT_SERIALIZE_NUMPY)
    callbacks = {}
    if on_select is not None:
        callbacks["on_selection_change"] = on_select if callable(on_select) else (lambda: None)
    if play is not None:  # the element's reports of a play's position: the chart's state "play" (contract C1)
        callbacks["on_play_change"] = lambda: None
    if key is not None:
        return chart(key=key, data=payload, **callbacks)
    from streamlit.errors import StreamlitDuplicateElementKey

    base = "vilab_chart_" + hashlib.blake2b(payload, digest_size=8).hexdigest()
    for n in range(1, 1000):
        try:
            return chart(key=base if n == 1 else f"{base}_{n}", data=payload, **callbacks)
        except StreamlitDuplicateElementKey:
            continue
    raise ValueError("A page drew the same figure a thousand times.")


class Recipe:
    """How to build a figure: ``build(*args, **kwargs)`` (see :func:`recipe`)."""

    __slots__ = ("build", "args", "kwargs")

    def __init__(self, build: Callable[..., go.Figure], args: tuple, kwargs: dict):  # noqa: D107
        self.build, self.args, self.kwargs = build, args, kwargs

    def figure(self) -> go.Figure:
        return self.build(*self.args, **self.kwargs)


def recipe(build: Callable[..., go.Figure], *args, **kwargs) -> Recipe:
    """A figure for :func:`show` to build with ``build(*args, **kwargs)``:
    ``ui.show(ui.recipe(flplots.order_gap_figure, rho, gaps), key="gap")``. The figure is built when it is shown
    (a capture, :func:`capturing`, builds it too). What a figure needs that takes long to compute belongs in the
    page's cached computations, not in its builder."""
    if not callable(build):
        raise ValueError(f"A figure recipe needs a function that builds the figure; got {type(build).__name__}.")
    return Recipe(build, args, kwargs)


def _sent_spec(fig, lecture_mode: bool) -> dict:
    """The figure as the browser is sent it: styled for the mode, :func:`browser_spec`; a :class:`Recipe` built; a
    dict (already sent once: a captured spec) as it is."""
    if isinstance(fig, dict):
        return fig
    return _styled_spec(fig.figure() if isinstance(fig, Recipe) else fig, lecture_mode)


def _styled_spec(fig, lecture_mode: bool) -> dict:
    if not isinstance(fig, go.Figure):
        raise ValueError(f"A figure to show must be a Plotly figure; got {type(fig).__name__}.")
    if lecture_mode:
        plots.lecture_style(fig)
    else:
        plots.use_template(fig, False)
    return browser_spec(fig)


class _Sent(go.Figure):
    """A figure already in the form the browser is sent: Streamlit takes its ``to_dict()`` as it is."""

    def __init__(self, spec: dict):  # noqa: D107 - no Plotly validation: the spec is final
        object.__setattr__(self, "_sent", spec)

    def to_dict(self) -> dict:
        return self._sent


def _export_menu(fig, key, animated) -> None:
    from vilab_ui import export  # imported here: it imports vilab.plots.export (kaleido only when drawing)

    export.menu(fig, key, animation=animated)


def selected_point(event) -> tuple[float, float] | None:
    """(x, y) of the first selected point of a ``st.plotly_chart(..., on_select=...)`` event, or None.

    ``event`` is the chart's state (``st.session_state[key]`` or the return value of ui.show):
    a dict-like ``{"selection": {"points": [{"x": ..., "y": ..., ...}, ...], ...}}``.
    """
    try:
        points = (event or {}).get("selection", {}).get("points") or []
    except AttributeError:
        return None
    for p in points:
        try:
            x, y = float(p["x"]), float(p["y"])
        except (KeyError, TypeError, ValueError):
            continue
        if math.isfinite(x) and math.isfinite(y):
            return x, y
    return None


def click_setter(chart_key: str, x_key: str, y_key: str, lo: float, hi: float, decimals: int = 2):
    """A callback for ``ui.show(fig, key=chart_key, on_select=...)``: a click on the chart moves the
    widgets ``x_key`` and ``y_key`` (sliders on [lo, hi]) to the clicked point, so the URL, the
    marker and everything computed from those widgets follow the click."""

    def _on_select():
        xy = selected_point(st.session_state.get(chart_key))
        if xy is not None:
            x, y = (min(max(round(v, decimals), lo), hi) for v in xy)
            st.session_state[x_key], st.session_state[y_key] = x, y

    return _on_select


