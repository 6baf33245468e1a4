"""A shared link is whatever its author typed: every page, every URL parameter set to link, image, HTML and
script payloads, must render with no exception and show no link or image the app did not create.

For each page the parameters are those the page itself publishes (its widgets' keys), collected with
every tab open in turn, plus the sidebar's. The payload may appear only where it is shown as plain text:
in a text box's value, or inside a code span of a message (how :func:`vilab_ui.plain` quotes an
address). The browser check of the same rule, on the rendered DOM, is in tests/browser/test_browser.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(p for p in (ROOT / "pages").glob("*.py") if not p.name.startswith("_"))

HOST = "x.example"
PAYLOAD = (f"[click me](http://{HOST}/a) ![pic](http://{HOST}/p.png) <img src=http://{HOST}/h.png> "
           f"<script>alert(1)</script> www.{HOST}/w a@{HOST} <a href='http://{HOST}/b'>b</a> :red[red] $x$")
# elements whose value is plain text by construction (widget values and labels are never Markdown links)
PLAIN_TEXT = {"TextInput", "TextArea", "Selectbox", "Multiselect", "Radio", "SelectSlider", "Slider",
              "NumberInput", "Checkbox", "Toggle", "Button", "DownloadButton"}
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)


def _walk(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def _problems(at) -> list[str]:
    out = []
    for root in (at.main, at.sidebar):
        for el in _walk(root):
            kind = type(el).__name__
            if kind in ("Block", "Column", "Tab", "Expander", "SpecialBlock") or kind in PLAIN_TEXT:
                continue
            proto = getattr(el, "proto", None)
            body = getattr(proto, "body", None) if proto is not None else None
            if isinstance(body, str):  # Markdown, captions, alerts, titles: an address only inside a code span
                if HOST in CODE_SPAN.sub("", body):
                    out.append(f"{kind}: {body[:200]!r}")
                if getattr(proto, "allow_html", False) and HOST in body:
                    out.append(f"{kind} renders HTML holding the payload")
            elif proto is not None and HOST.encode() in proto.SerializeToString():  # figures, tables, anything else
                out.append(f"{kind} carries the payload")
    return out


def _keys_by_tab(page: Path) -> list[tuple[dict, set]]:
    """[(the tab parameters that open one tab, the page's parameters with that tab open), ...]."""
    at = AppTest.from_file(str(page), default_timeout=300).run()
    assert not at.exception, [e.value for e in at.exception]
    base = dict(at.query_params)
    tab_keys = {k: v for k, v in base.items() if isinstance(v, str) and v in {t.label for t in at.tabs}}
    if not tab_keys:
        return [({}, set(base))]
    out = []
    for k in tab_keys:
        for label in dict.fromkeys(t.label for t in at.tabs):
            at2 = AppTest.from_file(str(page), default_timeout=300)
            at2.query_params[k] = label
            at2.run()
            if at2.query_params.get(k) == label:  # this label belongs to this tab bar
                out.append(({k: label}, set(at2.query_params) - {k}))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_link_image_html_and_script_payloads_in_every_parameter(page):
    for tabs, keys in _keys_by_tab(page):
        at = AppTest.from_file(str(page), default_timeout=300)
        for k in sorted(keys | {"seed", "lecture"}):
            at.query_params[k] = PAYLOAD
        at.query_params.update(tabs)
        at.run()
        assert not at.exception, (tabs, [e.value for e in at.exception])
        assert not _problems(at), (tabs, _problems(at))


def test_the_check_finds_a_raw_link():
    """The detector itself: a page that renders the payload raw fails it, the same page quoting it with
    vilab_ui.plain passes."""

    def script(raw: bool):
        import streamlit as st

        import vilab_ui as ui

        text = ui.text("t", "t", "")
        st.warning(text if raw else ui.plain(text))

    for raw, expected in ((True, True), (False, False)):
        at = AppTest.from_function(script, args=(raw,), default_timeout=30)
        at.query_params["t"] = PAYLOAD
        at.run()
        assert not at.exception
        assert bool(_problems(at)) is expected
