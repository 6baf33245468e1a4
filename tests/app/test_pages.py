"""Every page of the app, run with its default widget values, must render without an exception."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.charts import charts

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(p for p in (ROOT / "pages").glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_page_default_view(page):
    at = AppTest.from_file(str(page), default_timeout=300).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title, f"{page.name} shows no title"


def test_app_entry_point_runs_home():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "vilab" in at.title[0].value


WIDGETS = str(ROOT / "tests" / "app" / "url_widgets_script.py")


@pytest.mark.parametrize("seed, lecture, expected", [("42", "1", (42, True)), ("not-a-number", "maybe", (0, False))],
                         ids=["valid", "invalid-falls-back-to-defaults"])
def test_sidebar_widgets_read_the_url(seed, lecture, expected):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["seed"] = seed
    at.query_params["lecture"] = lecture
    at.run()
    assert not at.exception
    assert (at.number_input(key="seed").value, at.toggle(key="lecture").value) == expected


def test_every_widget_round_trips_through_the_url():
    at = AppTest.from_file(WIDGETS, default_timeout=60).run()
    assert not at.exception
    assert at.warning[0].value == "demo: a clear message for the student"  # ui.guard
    defaults = dict(at.query_params)
    assert defaults["fs"] == "0.5" and defaults["is"] == "3" and defaults["ls"] == "0.01"
    assert defaults["se"] == "b" and defaults["ms"] == "p" and defaults["to"] == "0" and defaults["cb"] == "1"
    at.slider(key="fs").set_value(0.25)
    at.slider(key="is").set_value(7)
    at.select_slider(key="ls").set_value(0.1)
    at.selectbox(key="se").set_value("c")
    at.radio(key="ra").set_value("y")
    at.multiselect(key="ms").set_value(["q", "r"])
    at.number_input(key="nu").set_value(42.5)
    at.toggle(key="to").set_value(True)
    at.checkbox(key="cb").uncheck()
    at.text_input(key="tx").input("bye")
    at.run()
    qp = dict(at.query_params)
    assert qp == {"fs": "0.25", "is": "7", "ls": "0.1", "se": "c", "ra": "y", "ms": ["q", "r"], "nu": "42.5",
                  "to": "1", "cb": "0", "tx": "bye"}
    # a fresh session opened on that URL shows the same widgets
    at2 = AppTest.from_file(WIDGETS, default_timeout=60)
    at2.query_params.update(qp)
    at2.run()
    assert at2.slider(key="fs").value == 0.25 and at2.slider(key="is").value == 7
    assert at2.select_slider(key="ls").value == 0.1 and at2.selectbox(key="se").value == "c"
    assert at2.radio(key="ra").value == "y" and at2.multiselect(key="ms").value == ["q", "r"]
    assert at2.number_input(key="nu").value == 42.5 and at2.toggle(key="to").value is True
    assert at2.checkbox(key="cb").value is False and at2.text_input(key="tx").value == "bye"


def test_out_of_range_url_values_are_clamped_or_snapped():
    at = AppTest.from_file(WIDGETS, default_timeout=60)
    at.query_params.update({"fs": "9", "is": "-3", "ls": "0.0007", "se": "zzz", "ms": ["q", "nope"], "to": "x"})
    at.run()
    assert not at.exception
    assert at.slider(key="fs").value == 1.0 and at.slider(key="is").value == 1
    assert at.select_slider(key="ls").value == 0.000562  # nearest log-grid point to 7e-4
    assert at.selectbox(key="se").value == "b"  # unknown option -> default
    assert at.multiselect(key="ms").value == ["p"]  # any unknown option -> default
    assert at.toggle(key="to").value is False


def _lecture_script():
    import plotly.graph_objects as go
    import streamlit as st

    import vilab_ui as ui

    ui.show(go.Figure(go.Scatter(x=[0, 1], y=[0, 1], mode="lines")).update_layout(height=400))
    with ui.more("advanced"):
        st.write("a rarely needed control")


def _notes_shown(at) -> bool:
    return any("written only while they are open" in m.value for m in at.markdown)


@pytest.mark.parametrize("value, shown", [(None, False), ("1", True), ("0", False), ("maybe", False)],
                         ids=["absent", "open", "closed", "hostile"])
def test_an_explanation_is_written_only_while_open_and_the_url_holds_it(value, shown):
    """ui.explain: a closed explanation writes nothing (the browser lays out no text or formula for it) and leaves
    no URL parameter; ?how_notes=1 opens it on a fresh session; a hostile value leaves it closed."""
    at = AppTest.from_file(WIDGETS, default_timeout=60)
    if value is not None:
        at.query_params["how_notes"] = value
    at.run()
    assert not at.exception
    assert _notes_shown(at) is shown and at.expander[0].label == "Notes"
    assert at.query_params.get("how_notes") == ("1" if shown else None)
    at.session_state["how_notes"] = not shown  # the reader opens (or closes) it: the page reruns
    at.run()
    assert not at.exception and _notes_shown(at) is (not shown)
    assert at.query_params.get("how_notes") == (None if shown else "1")


@pytest.mark.parametrize("lecture", [False, True])
def test_lecture_mode_uses_the_projector_template_and_keeps_the_figure_height(lecture):
    """Lecture mode: the same template at projector sizes (every chart text >= 18 px), the figure keeps its
    height (so it stays on the first screen); settings expanders are closed in both modes."""
    import json

    at = AppTest.from_function(_lecture_script, default_timeout=60)
    at.query_params["lecture"] = "1" if lecture else "0"
    at.run()
    assert not at.exception
    layout = json.loads(charts(at)[0].spec)["layout"]
    assert layout["height"] == 400
    # the template as sent: written into the figure (vilab_ui.spec.browser_spec)
    assert "template" not in layout
    assert layout["font"]["size"] == (20 if lecture else 14)
    assert layout["xaxis"]["tickfont"]["size"] >= (18 if lecture else 12)
    assert at.expander[0].proto.expanded is False


def _click_script():
    import streamlit as st

    import vilab_ui as ui

    # what st.plotly_chart(on_select=...) stores under its key after a click on (0.40493, -1.7)
    st.session_state.setdefault("chart", {"selection": {"points": [{"x": 0.40493, "y": -1.7, "curve_number": 2}]}})
    if st.session_state.get("clicked") is None:
        st.session_state["clicked"] = True
        ui.click_setter("chart", "a", "b", -0.99, 0.99)()
    ui.slider("a", "a", -0.99, 0.99, 0.0, 0.01)
    ui.slider("b", "b", -0.99, 0.99, 0.0, 0.01)


def test_a_click_on_a_chart_moves_the_widgets_and_the_url():
    at = AppTest.from_function(_click_script, default_timeout=60).run()
    assert not at.exception
    assert at.slider(key="a").value == 0.4 and at.slider(key="b").value == -0.99  # rounded, clamped
    assert at.query_params["a"] == "0.4" and at.query_params["b"] == "-0.99"


def test_selected_point_reads_plotly_selection_events():
    import vilab_ui as ui

    assert ui.selected_point({"selection": {"points": [{"x": 1, "y": 2.5}]}}) == (1.0, 2.5)
    assert ui.selected_point({"selection": {"points": [{"x": None, "y": 1}, {"x": 0.1, "y": 0.2}]}}) == (0.1, 0.2)
    assert ui.selected_point({"selection": {"points": []}}) is None
    assert ui.selected_point(None) is None and ui.selected_point({}) is None


SHARED = str(ROOT / "tests" / "app" / "shared_keys_script.py")


def test_pages_sharing_a_key_each_get_their_own_default():
    """Two pages with a widget key in common ("r": sliders with other bounds; "rule": a radio and a
    toggle): each page opens with its own default, not the other page's value or Streamlit's minimum."""
    at = AppTest.from_file(SHARED, default_timeout=60).run()
    assert not at.exception
    assert (at.slider(key="r").value, at.radio(key="rule").value, at.select_slider(key="al").value) == (0.5, "fixed", 0.03)
    at.slider(key="r").set_value(0.9).run()
    assert at.slider(key="r").value == 0.9  # kept while the page stays
    for page, expected in (("B", (3.0, True)), ("A", (0.5, "fixed"))):
        at.session_state["which"] = page
        at.query_params.clear()  # navigating to another page clears the URL's parameters
        at.run()
        assert not at.exception
        got = (at.slider(key="r").value, (at.toggle if page == "B" else at.radio)(key="rule").value)
        assert got == expected, (page, got)


def test_a_widget_whose_bounds_change_takes_the_pages_new_default():
    at = AppTest.from_file(SHARED, default_timeout=60).run()
    at.slider(key="n").set_value(4).run()
    assert at.slider(key="n").value == 4
    at.session_state["big"] = True
    at.run()
    assert not at.exception and at.slider(key="n").value == 100 and at.slider(key="n").max == 100


@pytest.mark.parametrize("param, value", [("seed", "inf"), ("n", "1e400"), ("r", "nan"), ("al", "-inf")])
def test_overflowing_url_values_fall_back_to_defaults(param, value):
    script = str(ROOT / "app.py") if param == "seed" else SHARED
    at = AppTest.from_file(script, default_timeout=120)
    at.query_params[param] = value
    at.run()
    assert not at.exception
    if param == "seed":
        assert at.number_input(key="seed").value == 0
    else:
        assert dict(at.query_params)[param] == {"n": "10", "r": "0.5", "al": "0.03"}[param]


def test_every_cache_of_a_page_is_bounded_in_size_and_time():
    """A page's caches are shared by every visitor: each goes through vilab_ui's bounded decorators."""
    import re

    for page in PAGES:
        src = page.read_text()
        assert not re.search(r"st\.cache_(data|resource)\b", src), f"{page.name} uses an unbounded Streamlit cache"
        assert not re.search(r"@(functools\.)?(lru_cache|cache)\b", src), f"{page.name} caches outside vilab_ui"


def test_the_shared_store_is_bounded_and_forgets_old_entries(monkeypatch):
    import vilab_ui as ui

    clock = [100.0]
    monkeypatch.setattr(ui.caching.time, "monotonic", lambda: clock[0])
    s = ui.SharedStore(maxsize=2, ttl_s=10)
    s["a"], s["b"] = 1, 2
    assert s["a"] == 1  # a is now the most recent
    s["c"] = 3
    assert "b" not in s and "a" in s and "c" in s and len(s) == 2
    clock[0] += 11
    assert "a" not in s and len(s) == 0 and s.get("c", "gone") == "gone"
    with pytest.raises(KeyError):
        s["c"]
    with pytest.raises(ValueError):
        ui.SharedStore(maxsize=0)


# ---------------------------------------------------------------------------------------------- the stage (issue 37)
def _page(name: str, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / name), default_timeout=300)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_stage_title_is_one_line_with_the_introduction_behind_it():
    """Lecture mode: the title alone on top (its introduction in the title's help), none of the intro as text;
    normal mode: the introduction under the title."""
    intro = "Each method moves q = N(m, V) towards a 2-D posterior"
    lecture = _page("20_Trajectories.py", lecture="1")
    assert intro in (lecture.title[0].proto.help or "")
    assert not any(intro in str(m.value) for m in lecture.markdown)
    normal = _page("20_Trajectories.py")
    assert any(intro in str(m.value) for m in normal.markdown)
    assert not normal.title[0].proto.help


def test_stage_shows_one_of_the_three_fig3_panels():
    """Adam vs SNNGM's Fig. 3 on the stage: the panel the URL names (?panel=), large, with all three step sizes in
    the controls; normal mode draws the three panels."""
    at = _page("30_Adam_vs_SNNGM.py", lecture="1", panel="adam")
    keys = [c.id for c in charts(at)]
    assert len(keys) == 1 and keys[0].endswith("fig3_adam"), keys
    assert {"aa", "an", "as"} <= {s.key for s in at.select_slider}
    assert at.radio(key="panel").value == "adam" and at.query_params["panel"] == "adam"
    at.radio(key="panel").set_value("snngm").run()
    assert [c.id[-len("fig3_snngm"):] for c in charts(at)] == ["fig3_snngm"]
    normal = _page("30_Adam_vs_SNNGM.py")
    assert sorted(c.id.rsplit("fig3_", 1)[-1] for c in charts(normal) if "fig3_" in c.id) == \
        ["adam", "adam-natural", "snngm"]


def test_stage_shows_one_of_the_single_update_panels():
    """Positive definiteness' single update on the stage: the panel chosen (?panel=), alone; normal mode: both."""
    at = _page("25_Positive_definiteness.py", lecture="1", panel="eigenvalues")
    ids = [c.id for c in charts(at)]
    assert any(i.endswith("eigs") for i in ids) and not any(i.endswith("levels") for i in ids), ids
    normal = _page("25_Positive_definiteness.py")
    ids = [c.id for c in charts(normal)]
    assert any(i.endswith("eigs") for i in ids) and any(i.endswith("levels") for i in ids), ids
