"""Every page of the app, run with its default widget values, must render without an exception."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

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


def test_sidebar_widgets_read_the_url():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["seed"] = "42"
    at.query_params["lecture"] = "1"
    at.run()
    assert not at.exception
    assert at.number_input(key="seed").value == 42
    assert at.toggle(key="lecture").value is True


def test_invalid_url_values_fall_back_to_defaults():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["seed"] = "not-a-number"
    at.query_params["lecture"] = "maybe"
    at.run()
    assert not at.exception
    assert at.number_input(key="seed").value == 0
    assert at.toggle(key="lecture").value is False


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
