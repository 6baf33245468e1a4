"""vilab's chart element (vilab_ui.show): what a page sends for a figure, the fallback to st.plotly_chart, and the
plotly.js bundle it draws with (every trace kind vilab draws is in it)."""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import plotly
import plotly.graph_objects as go
from streamlit.testing.v1 import AppTest

from tests.app.charts import charts

ROOT = Path(__file__).resolve().parents[1]
BROWSER = ROOT / "vilab" / "plots" / "browser"
# the trace modules of plotly.js's cartesian bundle (its README: plotly.js-cartesian-dist-min)
CARTESIAN = {"Bar", "Box", "Contour", "Heatmap", "Histogram", "Histogram2d", "Histogram2dContour", "Image", "Pie",
             "Scatter", "Scatterternary", "Violin"}


def _script():
    import plotly.graph_objects as go
    import streamlit as st

    import vilab_ui as ui

    fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2], name="VN"))
    ui.show(fig, main=True)
    ui.show(go.Figure(fig).update_layout(title="again"))
    ui.show(fig, height=333)
    ui.show(fig, width=420)
    ui.show(fig, key="pick", on_select=lambda: st.session_state.__setitem__("picked", True))


def test_a_figure_goes_to_the_chart_element_with_its_settings():
    at = AppTest.from_function(_script, default_timeout=60).run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 0
    drawn = charts(at)
    assert len(drawn) == 5
    sent = [json.loads(el.proto.bytes) for el in at.get("bidi_component") if el.proto.component_name == "vilab.chart"]
    assert [s["fit"] for s in sent] == [True, True, True, False, True]  # full width unless a width is given
    assert sent[3]["figure"]["layout"]["width"] == 420
    assert sent[2]["figure"]["layout"]["height"] == 333
    assert [s["select"] for s in sent] == [False, False, False, False, True]
    assert sent[0]["config"]["displaylogo"] is False
    assert {t["name"] for s in sent for t in s["figure"]["data"]} == {"VN"}
    assert len({c.id for c in drawn}) == 5 and drawn[4].id.endswith("pick")
    assert drawn[0].figure["data"][0]["y"] == [3, 1, 2]


def _played():
    import plotly.graph_objects as go

    import vilab_ui as ui

    fig = go.Figure(go.Scatter(x=[0.0], y=[0.0]), frames=[go.Frame(name=str(i), data=[go.Scatter(x=[0.0, i], y=[0.0, i])],
                                                                  traces=[0]) for i in (1, 2)])
    ui.show(fig, key="live", main=True, play={"token": "a", "fps": 30.0, "playing": True, "report_every_s": 0.25})


def test_a_play_goes_to_the_chart_element_with_its_frames():
    """Contract C1: the message carries the play as given and the frames in order; the figure goes out without a
    width (the element measures its place) and without a datarevision (the element gives each figure its own)."""
    at = AppTest.from_function(_played, default_timeout=60).run()
    assert not at.exception
    (msg,) = [json.loads(el.proto.bytes) for el in at.get("bidi_component") if el.proto.component_name == "vilab.chart"]
    assert msg["play"] == {"token": "a", "fps": 30.0, "playing": True, "report_every_s": 0.25}
    assert [f["name"] for f in msg["figure"]["frames"]] == ["1", "2"] and msg["figure"]["frames"][0]["traces"] == [0]
    assert "width" not in msg["figure"]["layout"] and "datarevision" not in msg["figure"]["layout"]


def test_the_chart_element_reads_no_private_plotly_field():
    """chart.js uses plotly.js's public API only: no ``._name`` field of a plotly.js object (gd._fullLayout and the
    like change between plotly.js versions); its own fields on the graph div are named ``__vilab...``."""
    js = (BROWSER / "chart.js").read_text(encoding="utf-8")
    code = re.sub(r"//[^\n]*", "", js)
    assert re.findall(r"\._(?!_vilab)[A-Za-z]", code) == []
    assert "Plotly.animate" in code and "Plotly.addFrames" in code and "--vilab-chart-height" in code


def _same_figure_twice():
    import plotly.graph_objects as go

    import vilab_ui as ui

    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4]))
    ui.show(fig)
    ui.show(fig)


def test_the_same_figure_twice_gets_two_keys():
    at = AppTest.from_function(_same_figure_twice, default_timeout=60).run()
    assert not at.exception
    a, b = charts(at)
    assert a.id != b.id and a.spec == b.spec


def _click_script():
    import plotly.graph_objects as go
    import streamlit as st

    import vilab_ui as ui

    ev = ui.show(go.Figure(go.Scatter(x=[1, 2], y=[3, 4])), key="pick", on_select=lambda: None)
    st.write(f"picked {ui.selected_point(ev)}")


def test_a_click_comes_back_as_plotly_charts_selection_state():
    """What chart.js sends for a click (setStateValue("selection", {points})) is read as st.plotly_chart's event."""
    import vilab_ui as ui

    sent = {"selection": {"points": [{"x": 2, "y": 4, "curve_number": 0, "point_number": 1, "point_index": 1}]}}
    assert ui.selected_point(sent) == (2.0, 4.0)
    at = AppTest.from_function(_click_script, default_timeout=60).run()
    assert not at.exception and "picked None" in at.markdown[0].value


def test_streamlits_plotly_chart_draws_when_asked(monkeypatch):
    monkeypatch.setenv("VILAB_CHART", "plotly")
    at = AppTest.from_function(_script, default_timeout=60).run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 5 and not at.get("bidi_component")
    drawn = charts(at)
    assert [c.selectable for c in drawn] == [False, False, False, False, True]
    assert drawn[0].figure["data"][0]["name"] == "VN"


def test_without_a_streamlit_server_figures_fall_back_quietly():
    """Outside a server (a script run bare) Streamlit has no component registry to serve the element's files: ui.show
    then uses st.plotly_chart, and raises nothing."""
    code = ("import plotly.graph_objects as go, vilab_ui as ui\n"
            "assert ui.chart._chart_element() is None\n"
            "ui.show(go.Figure(go.Scatter(x=[1, 2], y=[3, 4])), main=True)\nprint('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


def test_the_bundle_is_plotly_js_cartesian_of_the_plotly_packages_major_version():
    head = (BROWSER / "plotly-cartesian.min.js").read_text(encoding="utf-8")[:400]
    got = re.search(r"plotly\.js \(cartesian - minified\) v(\d+)\.(\d+)\.(\d+)", head)
    assert got, head
    full = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    theirs = re.search(r"plotly\.js v(\d+)\.", full.read_text(encoding="utf-8")[:400])
    assert theirs and theirs.group(1) == got.group(1)
    assert "MIT" in (BROWSER / "LICENSE-plotly.js.txt").read_text(encoding="utf-8")
    assert 'name = "chart"' in (ROOT / "pyproject.toml").read_text() and (BROWSER / "chart.js").exists()


def test_the_bundle_and_its_licence_are_the_npm_packages_files_unchanged():
    """vilab/plots/browser/SOURCE.txt records the npm package the bundle comes from, its version and the sha256 of
    each file as shipped: the files here are those (a bundle edited or swapped by hand fails)."""
    import hashlib

    record = {}
    files = {}
    for line in (BROWSER / "SOURCE.txt").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, _, value = line.partition(": ")
        if name == "file":
            fname, _, rest = value.partition(" sha256 ")
            files[fname] = rest.split()[0]
        else:
            record[name] = value
    assert record["package"] == "plotly.js-cartesian-dist-min" and record["license"] == "MIT"
    assert set(files) == {"plotly-cartesian.min.js", "LICENSE-plotly.js.txt"}
    for fname, digest in files.items():
        assert hashlib.sha256((BROWSER / fname).read_bytes()).hexdigest() == digest, fname
    head = (BROWSER / "plotly-cartesian.min.js").read_text(encoding="utf-8")[:400]
    assert f"plotly.js (cartesian - minified) v{record['version']}" in head
    assert record["version"] in record["registry"]


def _trace_classes(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "go"):
            continue
        cls = getattr(go, node.func.attr, None)
        if isinstance(cls, type) and issubclass(cls, plotly.basedatatypes.BaseTraceType):
            out.add(node.func.attr)
    return out


SOURCES = sorted([*(ROOT / "vilab" / "plots").glob("*.py"), *(ROOT / "pages").glob("*.py"), *(ROOT / "vilab_ui").glob("*.py")])


def test_every_trace_vilab_draws_is_in_the_bundle():
    used = {p.name: _trace_classes(p) for p in SOURCES}
    assert {"Scatter", "Heatmap", "Contour", "Bar"} <= set().union(*used.values())  # the scan reads the figures
    assert {name: kinds - CARTESIAN for name, kinds in used.items() if kinds - CARTESIAN} == {}
