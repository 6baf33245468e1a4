"""vilab_ui.spec.browser_spec: the figure a browser is sent, shaped for cheap redraws (the picture itself is
checked in Plotly.js by tests/browser/test_redraw.py)."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from vilab import plots
from vilab_ui.spec import browser_spec, flatten_template


def _vilab_fig(lecture=False):
    fig = go.Figure([go.Scatter(x=np.arange(5.0), y=np.arange(5.0) ** 2, name="a"),
                     go.Scatter(x=np.arange(3.0), y=np.ones(3), xaxis="x2", yaxis="y2", name="b"),
                     go.Contour(z=np.eye(3))])
    fig.update_layout(xaxis2=dict(domain=[0.6, 1.0], anchor="y2"), yaxis2=dict(anchor="x2"),
                      annotations=[dict(text="note", x=1, y=1, showarrow=False)])
    return plots.lecture_style(fig) if lecture else plots.style(fig, title="t")


@pytest.mark.parametrize("lecture", [False, True])
def test_vilab_template_is_written_into_the_figure_with_plain_arrays(lecture):
    fig = _vilab_fig(lecture)
    tpl = fig.layout.template.to_plotly_json()["layout"]
    spec = browser_spec(fig, width=612.5)
    lay = spec["layout"]
    assert "template" not in lay and "datarevision" not in lay and lay["width"] == 612.5
    assert "bdata" not in json.dumps(spec)  # plain lists: a JSON copy of the spec is not "new data" to Plotly
    assert spec["data"][0]["y"] == [0.0, 1.0, 4.0, 9.0, 16.0]
    # the template's axis entry applies to every x axis, under the figure's own values
    for ax in ("xaxis", "xaxis2"):
        assert lay[ax]["gridcolor"] == tpl["xaxis"]["gridcolor"]
    assert lay["xaxis2"]["domain"] == [0.6, 1.0]
    assert lay["font"]["family"] == tpl["font"]["family"]
    assert lay["annotations"][0]["font"]["color"] == tpl["annotationdefaults"]["font"]["color"]  # annotationdefaults
    assert lay["annotations"][0]["text"] == "note"
    # the figure's own value wins over the template's, the template fills in the rest of the same object
    fig.layout.title.font.size = 31
    title = browser_spec(fig)["layout"]["title"]["font"]
    assert title["size"] == 31 != tpl["title"]["font"]["size"] and title["color"] == tpl["title"]["font"]["color"]


def test_the_figure_itself_is_unchanged():
    """Exports (PNG, SVG, HTML) draw the figure object: it keeps its template, size and binary arrays."""
    fig = _vilab_fig()
    before = fig.to_json()
    browser_spec(fig, width=500)
    assert fig.to_json() == before and fig.layout.width is None


def test_trace_templates_cycle_per_type():
    tpl = go.layout.Template(data={"scatter": [go.Scatter(opacity=0.5), go.Scatter(opacity=0.25)]},
                             layout={"font": {"size": 11}})
    data = [{"type": "scatter", "y": [1]}, {"type": "bar", "y": [1]}, {"type": "scatter", "y": [2]},
            {"type": "scatter", "y": [3], "opacity": 1.0}]
    layout, out = flatten_template({"template": tpl.to_plotly_json()}, data)
    assert [t.get("opacity") for t in out] == [0.5, None, 0.25, 1.0]  # the trace's own value wins
    assert layout == {"font": {"size": 11}}  # no template left, and no axis the template does not style


def test_other_templates_and_3d_figures_keep_their_template():
    """Only vilab's templates are flattened (Plotly reads some options differently when the figure sets them)."""
    fig = go.Figure(go.Scatter(y=[1, 2]), layout=dict(template=pio.templates["plotly"]))
    assert "template" in browser_spec(fig)["layout"]
    fig3 = go.Figure(go.Scatter3d(x=[1], y=[1], z=[1]))
    plots.style(fig3)
    assert "template" in browser_spec(fig3)["layout"]


def test_frames_are_kept():
    fig = go.Figure(go.Scatter(y=np.arange(3.0)), frames=[go.Frame(data=[go.Scatter(y=np.arange(3.0)[::-1])])])
    plots.style(fig)
    spec = browser_spec(fig)
    assert spec["frames"][0]["data"][0]["y"] == [2.0, 1.0, 0.0]
