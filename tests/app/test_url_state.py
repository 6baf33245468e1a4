"""Every widget, tab and radio of every page round-trips through the URL (issue 14).

For each page: run it with its defaults; move every widget one notch (the next option, one step up, the
other state of a switch); run; read the URL. A fresh session opened on that URL must show the same value
in every widget, and a URL naming another tab must open that tab. A widget that does not write itself
into the URL fails the test (a lecturer could not share that view).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(p for p in (ROOT / "pages").glob("*.py") if not p.name.startswith("_"))
SIGNATURES = "_vilab_widget_signatures"
KINDS = ("slider", "select_slider", "selectbox", "radio", "multiselect", "toggle", "checkbox", "number_input",
         "text_input")


def _widgets(at):
    out = {}
    for kind in KINDS:
        for w in getattr(at, kind):
            if w.key is not None and not str(w.key).startswith("$$"):
                out[w.key] = (kind, w)
    return out


def _nudge(kind, w) -> None:
    """Move a widget to a value next to its current one (the next option, one step, the other switch state)."""
    if kind in ("toggle", "checkbox"):
        w.set_value(not w.value)
    elif kind == "selectbox":
        # options arrive formatted: a page's format_func hides the values, and the test cannot name one
        if len(w.options) > 1 and str(w.value) in w.options:
            w.select_index((w.options.index(str(w.value)) + 1) % len(w.options))
    elif kind in ("radio", "select_slider"):
        opts = list(w.options)
        if len(opts) > 1:
            cur = str(w.format_func(w.value)) if kind == "radio" else None
            if kind == "select_slider":
                cur = next((o for o in opts if _same(o, w.value)), opts[0])
            i = opts.index(cur) if cur in opts else 0
            nxt = opts[(i + 1) % len(opts)]
            if kind == "select_slider" and isinstance(w.value, (int, float)):
                nxt = type(w.value)(float(nxt))
            w.set_value(nxt)
    elif kind == "multiselect":
        opts = list(w.options)
        if opts:
            w.set_value([o for o in opts if o not in [str(v) for v in w.value]][:1] or opts[:1])
    elif kind in ("slider", "number_input"):
        v = w.value
        if isinstance(v, (tuple, list)) or v is None:
            return
        step = w.step or (1 if isinstance(v, int) else 0.01)
        nv = v + step if (w.max is None or v + step <= w.max) else v - step
        if math.isfinite(nv):
            w.set_value(type(v)(nv))


def _same(option: str, value) -> bool:
    try:
        return math.isclose(float(option), float(value), rel_tol=1e-9)
    except (TypeError, ValueError):
        return str(option) == str(value)


def _equal(a, b) -> bool:
    """Equal values; floats to the URL's 12 significant digits."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-11, abs_tol=0.0)
    return a == b


def _tab_keys(at):
    sig = at.session_state[SIGNATURES] if SIGNATURES in at.session_state else {}
    return {k: list(s[1][1]) for k, s in sig.items() if isinstance(s[1], tuple) and s[1] and s[1][0] == "tabs"}


def _state(at, keys):
    return {k: at.session_state[k] for k in keys if k in at.session_state}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_every_widget_and_tab_round_trips_through_the_url(page):
    at = AppTest.from_file(str(page), default_timeout=300).run()
    assert not at.exception, [e.value for e in at.exception]
    widgets = _widgets(at)
    tabs = _tab_keys(at)
    defaults = _state(at, list(widgets))
    for key, (kind, w) in widgets.items():
        _nudge(kind, w)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    widgets = _widgets(at)
    missing = sorted(k for k in widgets if k not in at.query_params)
    assert not missing, f"{page.name}: these widgets are not written into the URL: {missing}"
    url = {k: (list(v) if isinstance(v, list) else v) for k, v in at.query_params.items()}
    before = _state(at, list(widgets) + list(_tab_keys(at)))
    moved = [k for k in defaults if k in before and before[k] != defaults[k]]
    assert len(moved) >= min(len(defaults), 1), f"{page.name}: no widget could be moved"

    fresh = AppTest.from_file(str(page), default_timeout=300)
    for k, v in url.items():
        fresh.query_params[k] = v
    fresh.run()
    assert not fresh.exception, [e.value for e in fresh.exception]
    after = _state(fresh, list(before))
    diff = {k: (before[k], after.get(k)) for k in before if not _equal(before[k], after.get(k))}
    assert not diff, f"{page.name}: a fresh session on the shared URL shows other values: {diff}"
    for key, labels in tabs.items():  # a shared link that names another tab opens on that tab
        other = AppTest.from_file(str(page), default_timeout=300)
        for k, v in {**url, key: labels[-1]}.items():
            other.query_params[k] = v
        other.run()
        assert not other.exception, [e.value for e in other.exception]
        assert other.session_state[key] == labels[-1], f"{page.name}: ?{key}={labels[-1]} did not open that tab"
        assert other.query_params[key] == labels[-1]
