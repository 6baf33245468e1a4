"""URL-synced widgets: every widget reads its initial value from the URL query parameter named ``key``
(falling back to the default when absent or invalid) and writes its current value back, so a page's URL
reproduces the exact view. Keys are the URL parameter names: keep them short and unique within a page.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np
import streamlit as st

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


