"""Streamlit helpers shared by the pages: URL-synced widgets, lecture mode, error guard.

Every widget helper reads its initial value from the URL query parameter named ``key``
(falling back to the default when absent or invalid) and writes its current value back, so a
page's URL reproduces the exact view. Keys are the URL parameter names: keep them short and
unique within a page.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import hashlib
import math
import os
import queue
import re
import threading
import time
import types
from collections import OrderedDict
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.basedatatypes import BaseFigure, BasePlotlyType
import streamlit as st

from vilab import plots
from vilab.plots.spec import browser_spec
from vilab_ui import result_cache

__all__ = [
    "page", "slider", "log_slider", "select", "radio", "multiselect", "number", "toggle", "checkbox",
    "text", "seed", "lecture", "show", "log_neighbours", "guard", "more", "report_status", "log_grid", "selected_point",
    "click_setter", "scope", "tabs", "link", "status_text", "columns", "notice", "explain", "table", "apply_mode", "MAIN_FIGURE",
    "plain", "Guarded", "SharedStore", "recipe", "Recipe", "TEXT_MAX_CHARS", "cache_data", "cache_resource", "prefetch",
]


# ---------------------------------------------------------------------------------------------
# URL round trip


def _url_value(key: str, parse: Callable[[str], Any], multi: bool = False):
    """Parsed value of ?key=... or None when absent or unparsable."""
    try:
        if multi:
            if key not in st.query_params:
                return None
            return [parse(v) for v in st.query_params.get_all(key) if v != ""]
        raw = st.query_params.get(key)
        return None if raw is None else parse(raw)
    except (ValueError, TypeError, ArithmeticError):  # ArithmeticError: ?n=inf or ?n=1e400 for an int
        return None


_SIGNATURES = "_vilab_widget_signatures"
_SCOPE = "_vilab_scope"


def scope(name: str) -> None:
    """Name the owner of the widgets made from now on in this run: ``page()`` sets the page's title;
    app.py sets "" before the sidebar's global widgets (seed, lecture mode), which every page shares."""
    st.session_state[_SCOPE] = name


def _prime(key: str, default, parse, valid: Callable[[Any], Any], multi: bool = False, signature=()) -> None:
    """Put the initial value in session state before the widget is made.

    Session state is shared by all pages, and two pages may use the same short key for different
    widgets ("rho", "a", "T"...). Each key's owner and shape (page, widget kind, bounds or options) is
    recorded; a value is kept while they stay the same (or when the page set it before making the
    widget, e.g. from a click). A key new to this page gets the URL's
    value if valid, else the page's default; a widget of this page whose bounds or options changed
    (another widget changed them) gets the page's default, since the URL still holds the old value.
    """
    sig = (st.session_state.get(_SCOPE, ""), signature)
    seen = st.session_state.setdefault(_SIGNATURES, {})
    old = seen.get(key)
    seen[key] = sig
    if key in st.session_state and (old is None or old == sig):  # None: the page itself set the value
        return
    val = None
    if key not in st.session_state or old[0] != sig[0]:
        val = _url_value(key, parse, multi)
        if val is not None:
            try:
                val = valid(val)
            except (ValueError, TypeError, ArithmeticError):
                val = None
    st.session_state[key] = default if val is None else val


def _publish(key: str, value, fmt: Callable[[Any], str] = str, multi: bool = False) -> None:
    if multi:
        st.query_params[key] = [fmt(v) for v in value] or [""]
    else:
        st.query_params[key] = fmt(value)


def _fmt_num(v) -> str:
    return repr(int(v)) if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else f"{float(v):.12g}"


def _parse_bool(s: str) -> bool:
    s = s.strip().lower()
    if s in ("1", "true", "yes", "on"):
        return True
    if s in ("0", "false", "no", "off"):
        return False
    raise ValueError(s)


def _in_options(options: Sequence):
    def valid(v):
        for o in options:
            if str(o) == str(v):
                return o
        raise ValueError(v)

    return valid


# ---------------------------------------------------------------------------------------------
# Widgets


def _numeric(make, label: str, key: str, lo, hi, value, step, help, kw):
    """A numeric widget (``make`` = st.slider or st.number_input) synced with ?key=, clamped to
    [lo, hi]; integer when lo, hi and value are ints."""
    is_int = all(isinstance(v, int) and not isinstance(v, bool) for v in (lo, hi, value))
    conv = int if is_int else float

    def valid(v):
        v = conv(v)
        if not math.isfinite(v):
            raise ValueError(v)
        return min(max(v, lo), hi)

    _prime(key, value, lambda s: conv(float(s)), valid, signature=(make.__name__, lo, hi, step))
    out = make(label, min_value=lo, max_value=hi, step=step, key=key, help=help, **kw)
    _publish(key, out, _fmt_num)
    return out


def slider(label: str, key: str, lo, hi, value, step=None, help: str | None = None, **kw):
    """st.slider synced with ?key=. Integer when lo, hi and value are ints."""
    return _numeric(st.slider, label, key, lo, hi, value, step, help, kw)


def log_grid(lo: float, hi: float, points_per_decade: int = 4) -> list[float]:
    """Log-spaced values from lo to hi (inclusive), rounded to 3 significant digits."""
    if not (0 < lo < hi):
        raise ValueError("A log-scale slider needs 0 < lo < hi.")
    n = int(round(np.log10(hi / lo) * points_per_decade)) + 1
    vals = np.logspace(np.log10(lo), np.log10(hi), n)
    return sorted({float(f"{v:.3g}") for v in vals})


def log_slider(label: str, key: str, lo: float, hi: float, value: float, points_per_decade: int = 4,
               help: str | None = None, **kw) -> float:
    """A log-scale slider (st.select_slider over log-spaced values), synced with ?key=.

    A value given in the URL snaps to the nearest grid point (in log distance). The page's default
    ``value`` is a grid point too (added to the grid when it is not one), so the first view shows it.
    """
    opts = log_grid(lo, hi, points_per_decade)
    v0 = float(f"{float(value):.3g}")
    if lo <= v0 <= hi and min(abs(math.log(o) - math.log(v0)) for o in opts) > 1e-9:
        opts = sorted(opts + [v0])

    def snap(v):
        v = float(v)
        if not (math.isfinite(v) and v > 0):
            raise ValueError(v)
        return min(opts, key=lambda o: abs(math.log(o) - math.log(v)))

    value = snap(value)
    _prime(key, value, float, snap, signature=("log_slider", tuple(opts)))
    out = st.select_slider(label, options=opts, key=key, format_func=lambda v: f"{v:.3g}", help=help, **kw)
    _publish(key, out, _fmt_num)
    return float(out)


def log_neighbours(lo: float, hi: float, value: float, points_per_decade: int = 4) -> list[float]:
    """The values one notch below and above ``value`` on :func:`log_slider`'s grid (for :func:`prefetch`)."""
    opts = log_grid(lo, hi, points_per_decade)
    i = min(range(len(opts)), key=lambda j: abs(math.log(opts[j]) - math.log(float(value))))
    return [opts[j] for j in (i - 1, i + 1) if 0 <= j < len(opts)]


def _choice(make, label: str, key: str, options: Sequence, value, help, kw):
    """A one-of-several widget (``make`` = st.selectbox or st.radio) synced with ?key= (the option's str)."""
    options = list(options)
    value = options[0] if value is None else value
    _prime(key, value, str, _in_options(options), signature=(make.__name__, tuple(map(str, options))))
    out = make(label, options, key=key, help=help, **kw)
    _publish(key, out)
    return out


def select(label: str, key: str, options: Sequence, value=None, help: str | None = None, **kw):
    """st.selectbox synced with ?key= (the option's str)."""
    return _choice(st.selectbox, label, key, options, value, help, kw)


def radio(label: str, key: str, options: Sequence, value=None, help: str | None = None, **kw):
    """st.radio synced with ?key=."""
    return _choice(st.radio, label, key, options, value, help, kw)


def multiselect(label: str, key: str, options: Sequence, value: Sequence = (), help: str | None = None, **kw):
    """st.multiselect synced with ?key=a&key=b (repeated parameter)."""
    options = list(options)
    pick = _in_options(options)
    _prime(key, list(value), str, lambda vs: [pick(v) for v in vs], multi=True,
           signature=("multiselect", tuple(map(str, options))))
    out = st.multiselect(label, options, key=key, help=help, **kw)
    _publish(key, out, str, multi=True)
    return out


def number(label: str, key: str, lo, hi, value, step=None, help: str | None = None, **kw):
    """st.number_input synced with ?key=. Integer when lo, hi and value are ints."""
    return _numeric(st.number_input, label, key, lo, hi, value, step, help, kw)


def _switch(make, label: str, key: str, value: bool, help, kw) -> bool:
    """An on/off widget (``make`` = st.toggle or st.checkbox) synced with ?key=0/1."""
    _prime(key, bool(value), _parse_bool, bool, signature=(make.__name__,))
    out = make(label, key=key, help=help, **kw)
    _publish(key, out, lambda b: "1" if b else "0")
    return bool(out)


def toggle(label: str, key: str, value: bool = False, help: str | None = None, **kw) -> bool:
    """st.toggle synced with ?key=0/1."""
    return _switch(st.toggle, label, key, value, help, kw)


def checkbox(label: str, key: str, value: bool = False, help: str | None = None, **kw) -> bool:
    """st.checkbox synced with ?key=0/1."""
    return _switch(st.checkbox, label, key, value, help, kw)


TEXT_MAX_CHARS = 400  # a text box (and its URL value) holds at most this many characters


def text(label: str, key: str, value: str = "", help: str | None = None, max_chars: int = TEXT_MAX_CHARS,
         **kw) -> str:
    """st.text_input synced with ?key=; a longer URL value is cut to ``max_chars``. Show the value (or a
    message quoting it) only through :func:`plain`: it is whatever a link's author typed."""

    def valid(v: str) -> str:
        return str(v)[:max_chars]

    _prime(key, value, valid, valid, signature=("text", max_chars))
    out = st.text_input(label, key=key, help=help, max_chars=max_chars, **kw)
    _publish(key, out)
    return out


def tabs(labels: Sequence[str], key: str, value: str | None = None):
    """st.tabs whose open tab is synced with ?key= (the tab's label), so a shared link opens on it.

    Only the open tab's content needs computing: each returned tab has ``.open``; pages guard their
    expensive work with ``if tab.open:``."""
    labels = list(labels)
    value = labels[0] if value is None else value
    _prime(key, value, str, _in_options(labels), signature=("tabs", tuple(labels)))
    out = st.tabs(labels, key=key, default=st.session_state[key], on_change="rerun")
    _publish(key, st.session_state.get(key) or value)
    return out


# ---------------------------------------------------------------------------------------------
# Page furniture


def seed() -> int:
    """The global random seed chosen in the sidebar (0 when the page runs on its own)."""
    v = st.session_state.get("seed")
    if v is None:
        v = _url_value("seed", lambda s: int(float(s)))
    return int(v or 0)


def lecture() -> bool:
    """Whether lecture mode (large fonts and figures, fewer controls) is on."""
    v = st.session_state.get("lecture")
    if v is None:
        v = _url_value("lecture", _parse_bool)
    return bool(v)


def _leave_pages_directory_mode() -> None:
    """Make a page URL opened first on a fresh server go through app.py's st.navigation.

    Streamlit treats an app whose script sits beside a ``pages/`` folder as a v1 multipage app
    until some session runs ``st.navigation``: a shared link such as ``/Divergences?rho=0.9``
    opened first after a restart would run the page alone, without app.py's sidebar (seed,
    lecture mode) and with the v1 page list. Clearing that flag and rerunning hands the request
    to app.py, which resolves the same URL path through st.navigation.
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # a future Streamlit without the v1 mode
        return
    if getattr(PagesManager, "uses_pages_directory", False):
        PagesManager.uses_pages_directory = False
        st.rerun()


def page(title: str, intro: str | None = None) -> None:
    """Title and a one-line introduction (call first on every page).

    Keep ``intro`` to one sentence: the page's main figure must start on the first screen. The longer
    story and the equations go under the figure, in :func:`explain`."""
    global _LAST_PAGE_RUN
    _LAST_PAGE_RUN = time.monotonic()  # the computations behind the pages wait for the visitors (_recompute_loop)
    _leave_pages_directory_mode()
    scope(title)
    st.title(title)
    if intro:
        st.markdown(intro)


def link(page_file: str, label: str) -> None:
    """A link to another page of the lab (``page_file`` like "pages/10_Vector_fields.py").

    Inside the app it is Streamlit's page link (same tab, keeps the session); a page run on its own
    (tests, ``streamlit run pages/...``) has no page registry, and gets a plain link instead."""
    from streamlit.errors import StreamlitAPIException

    try:
        st.page_link(page_file, label=label)
    except StreamlitAPIException:
        stem = page_file.rsplit("/", 1)[-1].removesuffix(".py")
        head, _, rest = stem.partition("_")
        st.markdown(f"[{label}](/{rest if head.isdigit() and rest else stem})")


def columns(controls: float = 1.0, figure: float = 3.0):
    """(controls column, figure column): the layout that keeps a page's main figure on the first
    screen with its controls (the step sizes first) beside it."""
    return st.columns([controls, figure], gap="medium")


def notice(text: str) -> None:
    """The "what to notice" line under a figure: what it shows and why, in a student's words."""
    st.info(f"**What to notice.** {text}")


EXPLAIN_PREFIX = "how_"  # ?how_<name>=1 opens the explanation drawn by the function <name> (see explain)


def explain(label: str = "How it works: the idea and the equations", key: str | None = None):
    """A closed expander under the figure for the longer explanation and the equations, drawn only when open.

    Use it as a decorator on the function that writes the explanation; the function runs at once, inside the
    expander, while the expander is open, and not at all while it is closed (a student opening it reruns the
    page; its cached results make that quick)::

        @ui.explain()
        def equations():
            st.markdown("...")
            st.latex("...")

    A closed explanation costs neither the server nor the browser anything: on a first load the browser does not
    lay out its text and formulas (0.07-0.17 s of a 3 s load on four pages here). Its state is in the URL as
    ``?how_<function name>=1`` (``key`` overrides the name), so a shared link can open it; a closed one leaves no
    parameter."""

    def draw(fn: Callable[[], Any]):
        k = key or EXPLAIN_PREFIX + fn.__name__
        _prime(k, False, _parse_bool, bool, signature=("explain", label))
        box = st.expander(label, key=k, on_change="rerun")
        if st.session_state.get(k):
            st.query_params[k] = "1"
            with box:
                fn()
        elif k in st.query_params:
            del st.query_params[k]
        return fn

    return draw


def table(data, **kw):
    """A table: an interactive st.dataframe on screen, a plain st.table (large text) in lecture mode."""
    if lecture():
        kw.pop("hide_index", None)
        kw.pop("use_container_width", None)
        kw.pop("width", None)
        kw.pop("height", None)
        return st.table(data)
    return st.dataframe(data, **kw)


MAIN_FIGURE = "main_figure"  # the container key of a page's main figure (tests find it by this key)
_CHART_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"],
                 "toImageButtonOptions": {"format": "png", "scale": 2}}


def show(fig, key: str | None = None, main: bool = False, download: bool | None = None, **kw):
    """Draw a Plotly figure full width in vilab's template, styled for lecture mode when it is on.

    ``fig`` is a figure, or a :func:`recipe` for one: a recipe's figure is built only when no figure was
    built from the same builder and arguments before (in this mode, at this width, by any visitor), so a
    rerun that changed something else sends the figure it sent before without building it again.

    ``main=True`` marks the page's main figure (one per page), the one that must be on the first screen.
    The main figure and every animated figure (Plotly frames) get a "Download figure" menu under them
    (PNG, SVG, HTML; GIF for animations; vilab_ui/export.py); ``download`` forces it on or off."""
    chart = _chart_element()
    element_key = key or (MAIN_CHART if main and chart is not None else None)
    width_key = element_key or (MAIN_FIGURE if main else None)  # what the width reporter calls this chart
    w = chart_width(width_key) if kw.get("width", "stretch") == "stretch" else None
    spec = _sent_spec(fig, lecture(), w, width_key)
    kw.setdefault("config", _CHART_CONFIG)
    kw.setdefault("theme", None)  # vilab's template, not Streamlit's (which would override its fonts)
    animated = bool(spec.get("frames"))
    if download is None:
        download = main or animated
    with st.container(key=MAIN_FIGURE) if main else nullcontext():
        if chart is None:
            out = st.plotly_chart(_Sent(spec), key=key, **kw)
        else:
            out = _draw_chart(chart, spec, element_key, **kw)
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
                config=None, theme=None, width="stretch"):
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
    payload = orjson.dumps({"figure": {**spec, "layout": layout}, "config": config or {}, "select": on_select is not None,
                            "fit": fit}, option=orjson.OPT_SERIALIZE_NUMPY)
    callbacks = {}
    if on_select is not None:
        callbacks["on_selection_change"] = on_select if callable(on_select) else (lambda: None)
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


def more(label: str = "More settings"):
    """An expander for advanced settings, closed by default (never put the step size in it)."""
    return st.expander(label, expanded=False)


# emphasis, code, links, images, HTML, formulas, tables, entities, and Streamlit's :colour[...] / :icon: directives
_MD_PUNCT = re.compile(r"([\\`*_\[\]$~|&]|<(?=[A-Za-z/!?])|:(?=[A-Za-z]))")  # "<" only where a tag could start
_MD_LINE_START = re.compile(r"^(\s*)([#>+=-]|\d+[.)])", re.MULTILINE)  # headings, quotes, lists at a line's start
_URLISH = re.compile(r"(\S*(?:://|www\.|@)\S*)", re.IGNORECASE)


def _code_span(s: str) -> str:
    fence = "`" * (max((len(m) for m in re.findall(r"`+", s)), default=0) + 1)
    return f"{fence} {s} {fence}"


def plain(text) -> str:
    """``text`` as Markdown that shows exactly these characters: no link, image, emphasis, heading or formula.

    For every message that may quote what a user typed or put in a URL (Streamlit renders st.warning,
    st.info, st.markdown... as Markdown, and turns bare addresses into links): Markdown punctuation is
    escaped with a backslash, and anything that looks like an address (``://``, ``www.``, ``@``) is shown
    as code, which the browser never turns into a link. Plain sentences come out unchanged."""
    parts = _URLISH.split(str(text))
    out = "".join(_code_span(p) if i % 2 else _MD_PUNCT.sub(r"\\\1", p) for i, p in enumerate(parts))
    return _MD_LINE_START.sub(lambda m: m.group(1) + m.group(2)[:-1] + "\\" + m.group(2)[-1], out)


class Guarded:
    """What :func:`guard` yields: ``ok`` is True while its block has not failed. A block that failed was
    cut short, so the names it was to assign may be missing: code after the block that uses them runs
    only ``if g.ok``."""

    __slots__ = ("ok",)

    def __init__(self):
        self.ok = True


@contextmanager
def guard(context: str = ""):
    """Show errors as messages, never as tracebacks.

    ValueError (bad input, explained by the library) becomes st.warning; any other exception
    becomes st.error with its message. Streamlit's own control flow (st.stop, reruns) passes.
    The message is shown as plain text (:func:`plain`): it may quote a value from the URL.

    ``with ui.guard("the fit") as fit:`` binds a :class:`Guarded`: a later block that needs what this one
    computed goes under ``if fit.ok:`` (else it would meet a name the failed block never assigned).
    """
    prefix = f"{context}: " if context else ""
    state = Guarded()
    try:
        yield state
    except ValueError as exc:
        state.ok = False
        st.warning(plain(f"{prefix}{exc}"))
    except Exception as exc:  # noqa: BLE001 - shown to the user instead of a traceback
        state.ok = False
        st.error(plain(f"{prefix}something went wrong ({type(exc).__name__}: {exc})."))


_STATUS_WORDS = {"converged": "converged", "max_steps": "ran all its steps", "max_time": "ran out of time",
                 "stopped": "stopped", "stalled": "stalled (no step size increased the ELBO)"}


def status_text(status: str) -> str:
    """A run's end status (vilab.core's vocabulary) in a student's words; "diverged: why" as it is."""
    return _STATUS_WORDS.get(status, status)


def report_status(trace_or_status, label: str = "") -> bool:
    """Warn when a run diverged; return True if it did."""
    status = getattr(trace_or_status, "status", trace_or_status)
    if isinstance(status, str) and status.startswith("diverged"):
        st.warning(plain(f"{label + ': ' if label else ''}{status}. The path is drawn up to the failure."))
        return True
    return False


CACHE_MAX_ENTRIES = 64  # per cached function
CACHE_TTL_S = 6 * 3600  # an entry unused this long is dropped


def cache_data(*, keep: bool = True, **kw):
    """``st.cache_data`` bounded in size and time (every cache of a page is shared by all its visitors):
    at most ``max_entries`` (64) results, each dropped ``ttl`` (6 h) after it was computed, no spinner
    unless asked. A cached function must not touch widgets (Streamlit cannot replay them on a hit).

    Below the memory cache, a call whose arguments are plain settings is also kept on disk for every later
    server process (:mod:`vilab_ui.result_cache`: a restarted server, the replicas of a lecture hall);
    ``keep=False`` keeps a function's results in memory only. A result served from disk is computed again
    in the background (:func:`_compute_again`), so that the page's next slider change finds its programs traced."""
    kw.setdefault("max_entries", CACHE_MAX_ENTRIES)
    kw.setdefault("ttl", CACHE_TTL_S)
    kw.setdefault("show_spinner", False)
    memory = st.cache_data(**kw)
    return (lambda func: memory(result_cache.keep(func, on_hit=_compute_again))) if keep else memory


def cache_resource(**kw):
    """``st.cache_resource`` bounded as :func:`cache_data` is (for unpicklable or large objects: jitted
    functions, targets, data sets, :class:`SharedStore`)."""
    kw.setdefault("max_entries", CACHE_MAX_ENTRIES)
    kw.setdefault("ttl", CACHE_TTL_S)
    kw.setdefault("show_spinner", False)
    return st.cache_resource(**kw)


_PREFETCH_LOCK = threading.RLock()  # re-entered: _compute_again starts its worker while holding it
_PREFETCH_PENDING: set = set()
_PREFETCH_THREADS: list = []
PREFETCH_MAX_PENDING = 4


_STOPPING = threading.Event()  # set at exit: the background threads take no new call and end
SHUTDOWN_WAIT_S = 600.0  # the longest the exit waits for the call a background thread is in


@atexit.register
def _stop_background(timeout_s: float | None = None) -> None:
    """Stop the background threads (:func:`prefetch`, :func:`_compute_again`) before the interpreter exits:
    each finishes the call it is in and takes no other, and the exit waits for them. A daemon thread still
    inside a compiled JAX call when the interpreter finalizes aborts the process ("terminate called after
    throwing an instance of '' / FATAL: exception not rethrown"). If a call outlasts ``timeout_s``
    (:data:`SHUTDOWN_WAIT_S`), the process leaves at once with status 70 rather than finalize under it."""
    _STOPPING.set()
    deadline = time.monotonic() + (SHUTDOWN_WAIT_S if timeout_s is None else timeout_s)
    with _PREFETCH_LOCK:
        threads = list(_PREFETCH_THREADS)
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    alive = [t.name for t in threads if t.is_alive()]
    if alive:
        import sys

        print(f"vilab: background work ({', '.join(alive)}) still running after {timeout_s or SHUTDOWN_WAIT_S:g} s; "
              "leaving without finalizing the interpreter.", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(70)


def prefetch(fn: Callable, *calls: tuple) -> int:
    """Compute ``fn(*args)`` for each argument tuple in ``calls`` in a background thread, so that a later run
    finds them in ``fn``'s cache (``fn`` is a :func:`cache_data` function): a slider moved one notch by the
    keyboard then redraws from the cache. Best effort and bounded: at most ``PREFETCH_MAX_PENDING`` calls wait
    at once (others are dropped), a call already waiting is not queued twice, and an error is ignored (the
    page's own call reports it). ``fn`` shows no spinner of its own (``show_spinner=False``, :func:`cache_data`'s
    default): a spinner from the background thread would land in the page. Returns the number of calls queued."""
    todo = []
    with _PREFETCH_LOCK:
        for args in calls:
            key = (getattr(fn, "__qualname__", repr(fn)), tuple(args))
            if key in _PREFETCH_PENDING or len(_PREFETCH_PENDING) >= PREFETCH_MAX_PENDING:
                continue
            _PREFETCH_PENDING.add(key)
            todo.append((key, tuple(args)))
    if not todo:
        return 0

    def work():
        for key, args in todo:
            try:
                if not _STOPPING.is_set():  # at exit: no new call
                    fn(*args)
            except Exception:  # noqa: BLE001 - best effort: the page's own call shows the error
                pass
            finally:
                with _PREFETCH_LOCK:
                    _PREFETCH_PENDING.discard(key)

    _start_background(work, "vilab-prefetch", _session())
    return len(todo)


def _session():
    """The Streamlit script run's context of the calling thread (None outside a run): st.cache_data in a
    background thread looks for the session's context."""
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx
    except ImportError:  # pragma: no cover - an older Streamlit
        return None
    return get_script_run_ctx()


def _attach(thread: threading.Thread, ctx) -> None:
    """Hand a script run's context (:func:`_session`) to ``thread``; nothing when there is none."""
    if ctx is not None:
        from streamlit.runtime.scriptrunner import add_script_run_ctx

        add_script_run_ctx(thread, ctx)


def _start_background(target: Callable, name: str, ctx=None) -> threading.Thread | None:
    """Start a daemon thread with ``ctx`` attached, stopped and joined at exit (:func:`_stop_background`);
    None (nothing started) once the exit has begun."""
    t = threading.Thread(target=target, name=name, daemon=True)
    with _PREFETCH_LOCK:
        if _STOPPING.is_set():
            return None
        _PREFETCH_THREADS[:] = [x for x in _PREFETCH_THREADS if x.is_alive()] + [t]
        _attach(t, ctx)
        t.start()
    return t


RECOMPUTE_PER_FUNCTION = 8  # results of one function computed again in the background, per server process
RECOMPUTE_NICE = 10  # the thread's niceness (Linux): a visitor's own runs come first
RECOMPUTE_DELAY_S = 2.5  # each call waits until no page has started for this long: the visitors' browsers draw first
RECOMPUTE_BUSY_SHARE = 0.05  # ... and until the server's event loop used less than this share of a core ...
RECOMPUTE_BUSY_WINDOW_S = 0.3  # ... over this long (it serves a new visitor's page files before the page runs)

_RECOMPUTE_QUEUE: "queue.SimpleQueue" = queue.SimpleQueue()
_RECOMPUTE_COUNTS: dict = {}
_LAST_PAGE_RUN = float("-inf")  # time.monotonic() when a page last started a run (:func:`page`)
_recompute_worker: threading.Thread | None = None  # running while the queue has calls


def _compute_again(func: Callable, args: tuple, kwargs: dict) -> bool:
    """Compute ``func(*args, **kwargs)`` again in a background thread after its result was served from disk
    (:mod:`vilab_ui.result_cache`), and drop the result: a restarted server that serves a page from disk has
    traced none of its JAX programs, and a page's own stores (the longest run of Hierarchical models, which
    a new number of iterations continues) are empty; without this, the first slider change pays for both
    (7 s on Hierarchical models). One thread, one call at a time, at a lower priority than the visitors'
    runs, each call when no page has started a run for ``RECOMPUTE_DELAY_S`` and the event loop is not
    serving a visitor's page files (a visitor's browser is still drawing, and a class that opens the page at
    once comes first); at most ``RECOMPUTE_PER_FUNCTION`` calls
    of one function per process (the default view's methods, not every value a slider visited). Best
    effort: an error is ignored. Returns True if the call was queued."""
    global _recompute_worker
    ident = (func.__code__.co_filename, func.__qualname__)  # a disk hit is always a plain function's
    with _PREFETCH_LOCK:
        if _RECOMPUTE_COUNTS.get(ident, 0) >= RECOMPUTE_PER_FUNCTION:
            return False
        _RECOMPUTE_COUNTS[ident] = _RECOMPUTE_COUNTS.get(ident, 0) + 1
    _RECOMPUTE_QUEUE.put((func, args, kwargs, _session()))
    with _PREFETCH_LOCK:
        if _recompute_worker is None:
            _recompute_worker = _start_background(_recompute_loop, "vilab-recompute")
    return True


def _recompute_loop() -> None:
    """The worker of :func:`_compute_again`: runs the queued calls one by one at niceness
    ``RECOMPUTE_NICE``, each when no page has started a run (:func:`page`) for ``RECOMPUTE_DELAY_S`` and the
    server's event loop is not serving a visitor (:func:`_server_busy`); ends when the queue has stayed empty
    for a second."""
    global _recompute_worker
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), RECOMPUTE_NICE)
    except (AttributeError, OSError):  # not Linux, or not allowed: normal priority
        pass
    while True:
        try:
            func, args, kwargs, ctx = _RECOMPUTE_QUEUE.get(timeout=1.0)
        except queue.Empty:
            with _PREFETCH_LOCK:
                if _RECOMPUTE_QUEUE.empty() or _STOPPING.is_set():
                    _recompute_worker = None
                    return
            continue
        while not _STOPPING.is_set():
            while (wait := _LAST_PAGE_RUN + RECOMPUTE_DELAY_S - time.monotonic()) > 0 and not _STOPPING.wait(wait):
                pass
            if _STOPPING.is_set() or not _server_busy():
                break
        if _STOPPING.is_set():  # at exit: the queued calls are dropped (the results on disk stand)
            with _PREFETCH_LOCK:
                _recompute_worker = None
            return
        _attach(threading.current_thread(), ctx)  # a cached function it calls finds the session
        try:
            func(*args, **kwargs)
        except Exception:  # noqa: BLE001 - best effort: the result on disk stands
            pass


def _main_thread_cpu() -> float | None:
    """CPU seconds the main thread (Streamlit's event loop: page files, websockets) has used; None off Linux."""
    try:
        stat = Path(f"/proc/self/task/{threading.main_thread().native_id}/stat").read_text()
        fields = stat.rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError, AttributeError):
        return None


def _server_busy() -> bool:
    """Whether the server's event loop used more than ``RECOMPUTE_BUSY_SHARE`` of a core over the next
    ``RECOMPUTE_BUSY_WINDOW_S``: a new visitor's browser fetches Streamlit's page files (0.4 s of the loop's
    time on two cores) before its page starts a run. False where it cannot be measured."""
    c0 = _main_thread_cpu()
    time.sleep(RECOMPUTE_BUSY_WINDOW_S)
    c1 = _main_thread_cpu()
    return c0 is not None and c1 is not None and c1 - c0 > RECOMPUTE_BUSY_SHARE * RECOMPUTE_BUSY_WINDOW_S


class SharedStore:
    """A bounded store shared by every session of the server (make one with ``st.cache_resource``):
    at most ``maxsize`` entries, each kept ``ttl_s`` seconds after it was last written; the least
    recently used entry goes first. Thread-safe (each session runs in its own thread).

    For results a page wants every visitor to reuse (finished training runs); a plain dict there
    would grow with every run of every student.

    ``on_disk`` (a name) also keeps every entry whose key is a plain setting in the results store on
    disk (:mod:`vilab_ui.result_cache`, which bounds it), and looks there when memory has nothing: a
    restarted server, or another replica of a lecture hall, continues from the runs of the one before.
    ``source`` is the file that fills the store (a page's ``__file__``): a change in it is a new key, as
    for a cached function."""

    def __init__(self, maxsize: int = 32, ttl_s: float = 3600.0, on_disk: str | None = None,
                 source: str | None = None):
        if int(maxsize) < 1 or not ttl_s > 0:
            raise ValueError("A shared store needs maxsize >= 1 and a positive time to live.")
        self.maxsize, self.ttl_s = int(maxsize), float(ttl_s)
        self.on_disk, self.source = on_disk, source
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        while self._items:
            k, (t, _) = next(iter(self._items.items()))
            if now - t <= self.ttl_s:
                break
            self._items.popitem(last=False)

    def _remember(self, key, value) -> None:
        with self._lock:
            self._items.pop(key, None)
            self._items[key] = (time.monotonic(), value)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)

    def __setitem__(self, key, value) -> None:
        self._remember(key, value)
        if self.on_disk:
            result_cache.save(self.on_disk, key, value, self.source)

    def get(self, key, default=None):
        with self._lock:
            self._expire(time.monotonic())
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key][1]
        if self.on_disk:
            found = result_cache.load(self.on_disk, key, self.source, default=_MISSING)
            if found is not _MISSING:
                self._remember(key, found)
                return found
        return default

    def __getitem__(self, key):
        out = self.get(key, _MISSING)
        if out is _MISSING:
            raise KeyError(key)
        return out

    def __contains__(self, key) -> bool:
        return self.get(key, _MISSING) is not _MISSING

    def pop(self, key, default=None):
        """Remove ``key`` (from disk too) and return its value as memory had it, else ``default``."""
        with self._lock:
            item = self._items.pop(key, None)
        if self.on_disk:
            result_cache.forget(self.on_disk, key, self.source)
        return default if item is None else item[1]

    def __len__(self) -> int:
        with self._lock:
            self._expire(time.monotonic())
            return len(self._items)


_MISSING = object()


# ---------------------------------------------------------------------------------------------
# Normal and lecture mode

_BASE_CSS = """
.block-container { padding-top: 1.75rem; padding-bottom: 2rem; }
[data-testid="stHeader"] { background: transparent; height: 2.5rem; }
[data-testid="stPageLink"] p, [data-testid="stPageLink"] span { white-space: normal !important; overflow: visible !important;
    text-overflow: clip !important; }
[data-testid="stMultiSelectTagsContainer"] { flex-wrap: wrap !important; overflow: visible !important;
    height: auto !important; max-height: none !important; }
[data-testid="stMultiSelect"] div:has(> [data-testid="stMultiSelectTagsContainer"]) { height: auto !important;
    max-height: none !important; }
h1 { padding-top: 0.25rem; padding-bottom: 0.25rem; }
[data-testid="stPlotlyChart"] { margin-bottom: 0; }
.vilab-chart { width: 100%; }
.vilab-chart:fullscreen { background: #fff; }
.st-key-vilab_chart_widths { display: none; }
"""

# Lecture mode: the root font size grows, so every rem-sized text grows with it (titles never shrink);
# the small texts (captions, labels, help, chips, sidebar) are raised to >= 18 px; nothing is clipped.
_LECTURE_CSS = """
html { font-size: 20px; }
.block-container { max-width: 100%; padding-left: 2rem; padding-right: 2rem; }
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p,
[data-testid="stWidgetLabel"] p, [data-testid="stWidgetLabel"] label, [data-testid="stMarkdownContainer"] p,
[data-testid="stMarkdownContainer"] li, [data-testid="stSidebarNav"] span, [data-testid="stExpander"] summary p,
[data-baseweb="tag"] span, [data-baseweb="select"] div, [data-testid="stTickBarMin"], [data-testid="stTickBarMax"],
[data-testid="stSliderThumbValue"], [data-testid="stTable"] td, [data-testid="stTable"] th, button p,
[data-testid="stAlertContentInfo"] p, [data-testid="stTab"] p, [data-testid="stPageLink"] p, input, textarea {
    font-size: 0.95rem !important;
}
button p, [data-baseweb="tag"] span, [data-testid="stSidebarNav"] span, [data-testid="stWidgetLabel"] p {
    white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
}
[data-baseweb="tag"] { max-width: none !important; height: auto !important; }
/* many tabs: whole labels on rows that wrap (a sliding underline cannot follow a wrapped row: the open tab is
   underlined itself) */
[data-testid="stTabs"] [role="tablist"] { flex-wrap: wrap !important; row-gap: 0; overflow: visible !important;
    width: 100% !important; }
[data-testid="stTab"] { height: 2rem !important; }
[data-testid="stTabs"] [data-orientation="horizontal"] > button { display: none !important; }
[data-testid="stTab"] p { white-space: nowrap !important; overflow: visible !important; text-overflow: clip !important; }
[data-testid="stTab"][aria-selected="true"] { box-shadow: inset 0 -3px 0 currentColor; }
"""


def apply_mode() -> None:
    """The page CSS of the current mode (app.py calls it once per run, before the page)."""
    css = _BASE_CSS + (_LECTURE_CSS if lecture() else "")
    st.markdown(f"<style>{css}</style>", unsafe_allow_html=True)
