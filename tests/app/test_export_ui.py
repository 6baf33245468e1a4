"""The "Download figure" menu (vilab_ui/export.py) under a page's main figure and under animations.

AppTest has no server runtime, so the buttons' deferred files are never made here; what a click makes
is tested through ``vilab_ui.export.rendered`` (HTML needs no Chromium) and, with Chromium, in
tests/test_export.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import vilab_ui.export as uix

PAGES = Path(__file__).resolve().parents[2] / "pages"


def _app(name, **params):
    at = AppTest.from_file(str(PAGES / name), default_timeout=600)
    for k, v in params.items():
        at.query_params[k] = str(v)
    return at.run()


def _menu(at, key):
    return {b.key.rsplit("_", 1)[1]: b for b in at.download_button if str(b.key).startswith(f"dl_{key}_")}


@pytest.fixture
def fresh_check():
    """Look for Chromium again in this test (the menu remembers the answer for 5 minutes)."""
    uix._AVAILABLE.clear()
    yield
    uix._AVAILABLE.clear()


def test_vector_fields_main_figure_has_the_download_menu(fresh_check):
    at = _app("10_Vector_fields.py")
    assert not at.exception
    menu = _menu(at, "fields")
    assert sorted(menu) == ["html", "png", "svg"]  # no GIF: the figure is not an animation
    assert [menu[f].label for f in ("png", "svg", "html")] == ["PNG image", "SVG (vector)", "HTML (interactive)"]
    assert not menu["html"].disabled
    assert menu["png"].disabled == (uix.render_available() is not None)


def test_animation_offers_a_gif(fresh_check):
    at = _app("20_Trajectories.py", view="animation")
    assert not at.exception
    menu = _menu(at, "anim")
    assert sorted(menu) == ["gif", "html", "png", "svg"]
    assert menu["gif"].label == "GIF animation"


def test_without_chromium_images_are_off_and_html_still_works(fresh_check, monkeypatch, tmp_path):
    monkeypatch.setenv("VILAB_CHROMIUM", str(tmp_path / "no-such-browser"))
    at = _app("10_Vector_fields.py", lecture="1")
    assert not at.exception
    menu = _menu(at, "fields")
    assert menu["png"].disabled and menu["svg"].disabled and not menu["html"].disabled
    assert "need Chromium" in menu["png"].help
    assert any("HTML export works without it" in c.value for c in at.caption)


def test_a_click_makes_the_file_once_and_shares_it(fresh_check):
    import plotly.graph_objects as go

    fig = go.Figure(go.Scatter(x=[0, 1, 2], y=[2, 0, 1], name="a path"), layout={"title": "A test figure"})
    first = uix.rendered("html", fig)
    assert b"A test figure" in first and b"<title>A test figure</title>" in first
    assert uix.rendered("html", fig) is first  # the store's copy: not made again
    fig.update_layout(title="Another title")
    assert uix.rendered("html", fig) is not first  # a changed figure is a new file
    with pytest.raises(ValueError, match="formats are"):
        uix.rendered("pdf", fig)
