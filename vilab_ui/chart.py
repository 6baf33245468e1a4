"""Drawing a figure on a page: :func:`show` (vilab's chart element, or st.plotly_chart), figure recipes, click
selection.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import os
import threading
import types
from collections import OrderedDict
from contextlib import contextmanager, nullcontext
from typing import Any, Callable

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from plotly.basedatatypes import BaseFigure, BasePlotlyType
from vilab import plots
from vilab.plots.spec import browser_spec
from vilab_ui.caching import SharedStore
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

    ``fig`` is a figure, or a :func:`recipe` for one: a recipe's figure is built only when no figure was
    built from the same builder and arguments before (in this mode, at this width, by any visitor), so a
    rerun that changed something else sends the figure it sent before without building it again.

    ``main=True`` marks the page's main figure (one per page), the one that must be on the first screen.
    The main figure and every animated figure (Plotly frames) get a "Download figure" menu under them
    (PNG, SVG, HTML; GIF for animations; vilab_ui/export.py); ``download`` forces it on or off.

    ``play`` (vilab's chart element only): the figure's frames are a stretch of a live run for the element to
    play at the screen's rate (see vilab_ui.live); it is sent to the element as the message's ``play``."""
    if getattr(_CAPTURE, "open", None):
        spec = _sent_spec(fig, lecture(), None, key)
        _CAPTURE.open[-1].append((key, main, spec))
        return None
    chart = _chart_element()
    element_key = key or (MAIN_CHART if main and chart is not None else None)
    width_key = element_key or (MAIN_FIGURE if main else None)  # what the width reporter calls this chart
    w = chart_width(width_key) if kw.get("width", "stretch") == "stretch" else None
    spec = _sent_spec(fig, lecture(), w, width_key)
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
        if download:
            _export_menu(spec, key, animated)
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

    def digest(self) -> str | None:
        """A fingerprint of the builder (its code, the values it closes over and the module-level values it reads)
        and of every argument, or None when one of them is of a kind :func:`_feed` cannot read (the figure is then
        built every time)."""
        h = hashlib.blake2b(digest_size=20)
        try:
            _feed(h, (self.build, self.args, self.kwargs))
        except (_Unreadable, RecursionError):
            return None
        return h.hexdigest()


def recipe(build: Callable[..., go.Figure], *args, **kwargs) -> Recipe:
    """A figure for :func:`show` to build with ``build(*args, **kwargs)`` only when it has not sent the same one:
    the arguments (numbers, strings, arrays, tuples, lists, dicts, dataclasses such as a Trace) are
    fingerprinted, and so are the module-level values ``build`` reads (a page's builder reading its settings); the
    figure as sent is kept in a store every visitor shares. ``build`` must not draw from anything else (session
    state, files): ``ui.show(ui.recipe(flplots.order_gap_figure, rho, gaps), key="gap")``."""
    if not callable(build):
        raise ValueError(f"A figure recipe needs a function that builds the figure; got {type(build).__name__}.")
    return Recipe(build, args, kwargs)


class _Unreadable(Exception):
    """An argument of a recipe that cannot be fingerprinted."""


def _feed(h, v, nested: bool = False) -> None:
    """Feed ``v`` into the hash ``h``, tagged by kind (so 1, 1.0, "1" and (1,) differ). ``nested``: ``v`` was reached
    through a global a builder reads, where a function counts by its code alone (no cycle through globals)."""
    if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
        h.update(f"{type(v).__name__}:{v!r};".encode())
    elif isinstance(v, (np.ndarray, np.generic)) or (hasattr(v, "__array__") and hasattr(v, "dtype") and hasattr(v, "shape")):
        a = np.ascontiguousarray(np.asarray(v))
        if a.dtype == object:
            raise _Unreadable
        h.update(f"array:{a.dtype.str}:{a.shape};".encode())
        h.update(a.tobytes())
    elif isinstance(v, (tuple, list)) and all(type(x) in (int, float) for x in v):  # plain numbers: at once
        h.update(f"{type(v).__qualname__}:{v!r};".encode())
    elif isinstance(v, (tuple, list)):
        h.update(f"{type(v).__qualname__}[{len(v)}:".encode())
        for x in v:
            _feed(h, x, nested)
        h.update(b"]")
    elif isinstance(v, dict):
        h.update(f"dict{{{len(v)}:".encode())
        for k in sorted(v, key=repr):
            _feed(h, k, nested)
            _feed(h, v[k], nested)
        h.update(b"}")
    elif dataclasses.is_dataclass(v) and not isinstance(v, type):
        h.update(f"{type(v).__module__}.{type(v).__qualname__}(".encode())
        for f in dataclasses.fields(v):
            h.update(f.name.encode())
            _feed(h, getattr(v, f.name), nested)
        h.update(b")")
    elif callable(v) and hasattr(v, "__code__"):  # a function: its code, the constants and the values it closes over
        code = v.__code__
        h.update(f"fn:{v.__module__}.{v.__qualname__}:".encode())
        h.update(code.co_code)
        _feed(h, tuple(c for c in code.co_consts if not hasattr(c, "co_code")), nested)
        _feed(h, tuple(c.cell_contents for c in (v.__closure__ or ())), nested)
        _feed(h, v.__defaults__, nested)
        if not nested:
            _feed_globals(h, code, getattr(v, "__globals__", {}))
    elif isinstance(v, BasePlotlyType):  # a trace or layout object handed to a builder (a contour, say)
        h.update(f"plotly:{type(v).__name__};".encode())
        _feed(h, v.to_plotly_json(), nested)
    elif isinstance(v, BaseFigure):
        h.update(b"plotly figure;")
        _feed(h, v.to_dict(), nested)
    elif isinstance(v, types.BuiltinFunctionType):
        h.update(f"builtin:{v.__module__}.{v.__qualname__};".encode())
    elif isinstance(v, functools.partial):
        _feed(h, (v.func, v.args, v.keywords), nested)
    else:
        raise _Unreadable


def _feed_globals(h, code, namespace: dict) -> None:
    """The global names ``code`` (and the code nested in it) reads: a page's module-level values are inputs of a
    builder defined on the page. Modules, classes and functions count by name (a function also by its code); any
    other value by what it holds, and a value that cannot be read makes the figure unreadable (built every time)."""
    names = set()
    stack = [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(x for x in c.co_consts if hasattr(x, "co_code"))
    for name in sorted(names):
        if name not in namespace:
            continue  # an attribute, a builtin
        x = namespace[name]
        h.update(f"global {name}:".encode())
        if isinstance(x, (types.ModuleType, type)):
            h.update(getattr(x, "__name__", "").encode())
        elif callable(x):
            h.update(f"{getattr(x, '__module__', '')}.{getattr(x, '__qualname__', type(x).__name__)};".encode())
            inner = getattr(x, "__code__", None)
            if inner is not None:
                h.update(inner.co_code)
        else:
            _feed(h, x, nested=True)


_SPECS: SharedStore | None = None  # figures as sent, shared by every session: revision (:func:`_revision`) -> spec
SPEC_STORE_SIZE = 256  #: how many sent figures the shared store keeps (least recently used first out)


def _sent_spec(fig, lecture_mode: bool, width: float | None, key: str | None = None) -> dict:
    """The figure as the browser is sent it (styled for the mode, :func:`browser_spec` at ``width``), from the
    shared store when it is a :class:`Recipe` whose figure was sent before; ``key``: the chart's key (whose last
    figure's margins a new figure there is given, :func:`_with_margins`)."""
    global _SPECS
    if not isinstance(fig, Recipe):
        return _styled_spec(fig, lecture_mode, width)
    digest = fig.digest()
    if digest is None:
        return _styled_spec(fig.build(*fig.args, **fig.kwargs), lecture_mode, width)
    if _SPECS is None:
        _SPECS = SharedStore(maxsize=SPEC_STORE_SIZE, ttl_s=3600.0)
    rev = _revision(digest, lecture_mode, width)
    spec = _SPECS.get(rev)
    if spec is None:
        spec = _styled_spec(fig.build(*fig.args, **fig.kwargs), lecture_mode, width)
        spec["layout"]["datarevision"] = rev  # names the figure in the browser's report of its margins
        _SPECS[rev] = spec
    return _with_margins(spec, rev, key)


# ------------------------------------------------------------------------------------------ margins
# Plotly grows a chart's margins to fit its tick labels, axis titles and legends (automargin) by drawing the chart,
# measuring, and drawing it again, often twice: two to three drawings per chart (on Vector fields 190-480 ms against
# 90-130 ms, Adam vs SNNGM's panels 90-170 ms against 45-80 ms, measured in Chromium on this project's 2-core
# machine). Given the margins it would end with, Plotly draws once and the picture is the same. Those margins only
# the browser knows: the width reporter sends, for every chart of a recipe, the margins it was drawn with and the
# chart's revision (the recipe's fingerprint, mode and width, in ``layout.datarevision``); they are kept in a store
# every visitor shares, so the next visitor to get the same figure (a new student on the same view, a return to a
# view) gets it with its margins. A report is taken only for a revision sent to that session, with margins no smaller
# than the figure's own and at most MARGIN_MAX_GROWTH_PX larger (a browser's word cannot spoil another's charts).
# A figure no browser has drawn yet (a slider moved to a new value) is given the margins the last figure of the same
# chart needed (same mode and width): its labels and legend are mostly the same, so Plotly draws it once unless it
# needs more. "Needed" is what the labels and legends ask for (Plotly's margin pushes, read by the reporter), not
# what that figure was drawn with, so margins do not only ever grow as a slider moves; a figure is stored with
# what it needed, at most what it was drawn with.
_MARGINS: SharedStore | None = None  # revision -> (l, r, t, b) that figure needed (at most what it was drawn with)
MARGIN_MAX_GROWTH_PX = 240.0
MARGIN_HINT_SLACK_PX = 4.0  # room given beyond the last figure's need on a side its labels pushed (tick labels and
# legends move by a pixel or two as a slider moves: without it such a change costs a second drawing)
_SENT_REVISIONS = "_vilab_sent_revisions"  # session state: revision -> the figure's own margins (the last 64 sent)
_SIDES = (("l", 80.0), ("r", 80.0), ("t", 100.0), ("b", 80.0))  # Plotly's default margins


def _revision(digest: str, lecture_mode: bool, width: float | None) -> str:
    return f"vilab:{digest}:{int(bool(lecture_mode))}:{0.0 if width is None else float(width):g}"


def _margins_store() -> SharedStore:
    global _MARGINS
    if _MARGINS is None:
        # kept on disk too: a restarted server's first visitors get their charts drawn once
        _MARGINS = SharedStore(maxsize=4 * SPEC_STORE_SIZE, ttl_s=3600.0, on_disk="chart margins")
    return _MARGINS


def _own_margins(spec: dict) -> tuple[float, ...]:
    m = (spec.get("layout") or {}).get("margin") or {}
    return tuple(float(m.get(side, default)) for side, default in _SIDES)


def _reported(value, sent) -> tuple[str, tuple[float, ...], tuple[float, ...] | None] | None:
    """A width report of a recipe's chart, ``[width, revision, l, r, t, b]`` (the margins drawn with) optionally
    followed by the four margins its labels and legends needed: (revision, drawn, needed or None), or None for a
    report of a revision not sent to this session, or that cannot be true (not numbers, smaller than the
    figure's own margins or more than MARGIN_MAX_GROWTH_PX larger)."""
    if not (isinstance(value, list) and len(value) in (6, 10) and isinstance(value[1], str) and value[1] in sent):
        return None
    own = sent[value[1]]
    try:
        m = tuple(float(x) for x in value[2:])
    except (TypeError, ValueError):
        return None
    if not all(math.isfinite(x) for x in m):
        return None
    drawn, needed = m[:4], (m[4:] or None)
    if not all(o - 0.5 <= x <= o + MARGIN_MAX_GROWTH_PX for x, o in zip(drawn, own)):
        return None
    if needed is not None:  # at least the own margins, at most what it was drawn with (Plotly ends there)
        needed = tuple(min(max(n, o), x) for n, o, x in zip(needed, own, drawn))
    return value[1], drawn, needed


def _margins_hint(spec: dict, rev: str, key: str | None) -> tuple[float, ...] | None:
    """The margins the last figure of chart ``key`` needed, for a new figure there (same mode and width), when this
    session's browser reported them: the new figure's own margins where nothing pushed them, else the need plus
    MARGIN_HINT_SLACK_PX, at most MARGIN_MAX_GROWTH_PX more than its own."""
    value = _chart_report(key)
    try:
        got = _reported(value, st.session_state.get(_SENT_REVISIONS) or {})
    except Exception:  # noqa: BLE001 - no session
        return None
    if got is None or got[2] is None or got[0].split(":")[2:] != rev.split(":")[2:]:
        return None
    own = _own_margins(spec)
    hint = tuple(o if n <= o else min(n + MARGIN_HINT_SLACK_PX, o + MARGIN_MAX_GROWTH_PX) for o, n in zip(own, got[2]))
    return None if hint == own else hint


def _with_margins(spec: dict, rev: str, key: str | None = None) -> dict:
    """``spec`` with the margins revision ``rev`` needed when some browser reported them, else with those the last
    figure of chart ``key`` needed (:func:`_margins_hint`); the revision is remembered as sent to this session (with
    the figure's own margins) so its report is taken."""
    try:
        sent = st.session_state.setdefault(_SENT_REVISIONS, OrderedDict())
        sent[rev] = _own_margins(spec)
        sent.move_to_end(rev)
        while len(sent) > 64:
            sent.popitem(last=False)
    except Exception:  # noqa: BLE001 - no session (a figure drawn outside a page): nothing to remember
        pass
    m = _margins_store().get(rev) or _margins_hint(spec, rev, key)
    if m is None:
        return spec
    layout = dict(spec["layout"])
    layout["margin"] = {**(layout.get("margin") or {}), **dict(zip((s for s, _ in _SIDES), m))}
    return {**spec, "layout": layout}


def _harvest_margins(state) -> int:
    """Keep the margins a browser reported (the width reporter's state) for revisions sent to this session;
    returns how many were kept."""
    widths = (state or {}).get("widths") if isinstance(state, dict) else None
    try:
        sent = st.session_state.get(_SENT_REVISIONS) or {}
    except Exception:  # noqa: BLE001
        return 0
    if not isinstance(widths, dict) or not sent:
        return 0
    kept = 0
    for v in widths.values():
        got = _reported(v, sent)
        if got is not None:
            rev, drawn, needed = got
            margins = tuple(round(x, 2) for x in (needed or drawn))
            if _margins_store().get(rev) != margins:  # a browser reports its charts on every run
                _margins_store()[rev] = margins
            kept += 1
    return kept


def _styled_spec(fig, lecture_mode: bool, width: float | None) -> dict:
    if not isinstance(fig, go.Figure):
        raise ValueError(f"A figure to show must be a Plotly figure; got {type(fig).__name__}.")
    if lecture_mode:
        plots.lecture_style(fig)
    else:
        plots.use_template(fig, False)
    return browser_spec(fig, width)


# ------------------------------------------------------------------------------------------ redraws
# Streamlit mounts a Plotly chart afresh whenever its figure changes (the figure is part of the element's
# identity), draws it, then hands Plotly a JSON copy of the figure with the width of its place on the page.
# Sent as Plotly's own JSON (template, binary arrays) and without that width, the copy made Plotly compute and
# draw everything a second time: about 0.1 s of a 0.4 s redraw on Vector fields. Two things make it nearly free:
# the figure goes out as vilab.plots.spec.browser_spec (the same picture, which a copy does not make Plotly
# compute again), at the width the browser last drew that chart at. The width only the browser knows: a small
# component reports it (keyed charts and each page's main figure) and the next run uses it. An out-of-date
# width (a resized window, lecture mode toggled) costs the second drawing once, as before; the next report
# corrects it. Without a browser (AppTest) nothing is reported. tests/browser/test_redraw.py checks both.
_WIDTHS_KEY = "vilab_chart_widths"
_WIDTHS_JS = """
export default function(component) {
  const { setStateValue } = component;
  const w = window.__vilabWidths = window.__vilabWidths || { timer: null, last: null };
  clearInterval(w.timer);
  // The margins a chart's labels and legends need: Plotly's own automargin sum over its margin pushes (each a
  // fraction of the plot area and a size in px) plus the room reserved for legends on the page's edge, without
  // the margins it was given ([] when Plotly has none).
  const needed = fl => {
    const h = fl._pushmargin, W = fl.width, H = fl.height, num = x => typeof x === 'number' && isFinite(x);
    if (!h || !num(W) || !num(H)) return [];
    const es = Object.keys(h).filter(k => k !== 'base').map(k => h[k])
      .concat([{ l: { val: 0, size: 0 }, r: { val: 1, size: 0 }, t: { val: 1, size: 0 }, b: { val: 0, size: 0 } }]);
    let l = 0, r = 0, t = 0, b = 0;
    for (const a of es) {
      const L = a.l || {}, B = a.b || {};
      for (const c of es) {
        if (num(L.size) && c.r && c.r.val > L.val) {
          const nl = (L.size * c.r.val + (c.r.size - W) * L.val) / (c.r.val - L.val);
          const nr = (c.r.size * (1 - L.val) + (L.size - W) * (1 - c.r.val)) / (c.r.val - L.val);
          if (nl + nr > l + r) { l = nl; r = nr; }
        }
        if (num(B.size) && c.t && c.t.val > B.val) {
          const nb = (B.size * c.t.val + (c.t.size - H) * B.val) / (c.t.val - B.val);
          const nt = (c.t.size * (1 - B.val) + (B.size - H) * (1 - c.t.val)) / (c.t.val - B.val);
          if (nb + nt > b + t) { b = nb; t = nt; }
        }
      }
    }
    const res = { l: 0, r: 0, t: 0, b: 0 }, rm = fl._reservedMargin || {};  // legends placed on the page's edge
    for (const id in rm) for (const side in rm[id]) if (side in res && num(rm[id][side])) res[side] = Math.max(res[side], rm[id][side]);
    const out = [Math.round(l) + res.l, Math.round(r) + res.r, Math.round(t) + res.t, Math.round(b) + res.b];
    return out.every(num) ? out : [];
  };
  const keyOf = el => { const c = el && Array.from(el.classList).find(x => x.startsWith('st-key-')); return c && c.slice(7); };
  const report = () => {
    const out = {};
    document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot').forEach(gd => {
      const ec = gd.closest('[data-testid="stElementContainer"]');
      const k = keyOf(ec) || (ec && ec.parentElement && ec.parentElement.classList.contains('st-key-%(main)s') ? '%(main)s' : null);
      const width = gd.layout && gd.layout.width;
      const rev = gd.layout && gd.layout.datarevision, m = gd._fullLayout && gd._fullLayout._size;
      if (k && width > 0) out[k] = (typeof rev === 'string' && rev.startsWith('vilab:') && m)
        ? [width, rev, m.l, m.r, m.t, m.b].concat(needed(gd._fullLayout)) : width;
    });
    const s = JSON.stringify(out);
    if (s !== w.last && Object.keys(out).length) { w.last = s; setStateValue('widths', out); }
  };
  w.timer = setInterval(report, 700);
  return () => clearInterval(w.timer);
}
"""


_WIDTHS = None  # the component, registered on first use


@st.fragment
def report_chart_widths() -> None:
    """Mount the width reporter (app.py, once per run, in the sidebar): a fragment, so a report reruns only it."""
    global _WIDTHS
    if _WIDTHS is None:
        _WIDTHS = st.components.v2.component("vilab_chart_widths", js=_WIDTHS_JS % {"main": MAIN_FIGURE})
    _WIDTHS(key=_WIDTHS_KEY, on_widths_change=lambda: None)
    _harvest_margins(st.session_state.get(_WIDTHS_KEY))


def _chart_report(key: str | None):
    """What the width reporter last said of the chart with this key: its width, or for a recipe's chart
    ``[width, revision, margins...]``; None when nothing was reported (or there is no session)."""
    if not key:
        return None
    try:
        return ((st.session_state.get(_WIDTHS_KEY) or {}).get("widths") or {}).get(key)
    except Exception:  # noqa: BLE001 - no session, or a report that is not a dict
        return None


def chart_width(key: str | None) -> float | None:
    """The width (px) the browser last drew the chart with this key at (a page's main figure: MAIN_FIGURE)."""
    w = _chart_report(key)
    if isinstance(w, list) and w:  # a recipe's chart: [width, revision, margins...]
        w = w[0]
    return float(w) if isinstance(w, (int, float)) and 0 < w < 1e5 else None


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


