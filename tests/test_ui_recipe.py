"""ui.recipe: a figure for ui.show to build, ``build(*args, **kwargs)``, built when it is shown; what is sent is the
figure built directly, styled for the mode. Nothing is fingerprinted or kept: a builder that reads a page's
globals, a closure, any argument at all gives the figure it builds now (issue 37: the bytecode fingerprints and
the store of sent figures are gone)."""

import sys

import numpy as np
import plotly.graph_objects as go
import pytest

import vilab_ui as ui
from vilab_ui.spec import browser_spec


def _build(x, y, title="t"):
    return ui.chart.plots.style(go.Figure(go.Scatter(x=np.asarray(x), y=np.asarray(y))), title=title)


@pytest.mark.parametrize("lecture", [False, True])
def test_a_recipe_sends_the_figure_built_directly(lecture):
    sent = ui.chart._sent_spec(ui.recipe(_build, np.arange(3.0), [1.0, 2.0, 3.0], title="a"), lecture)
    fig = _build(np.arange(3.0), [1.0, 2.0, 3.0], title="a")
    if lecture:
        ui.chart.plots.lecture_style(fig)
    else:
        ui.chart.plots.use_template(fig, False)
    assert sent == browser_spec(fig)
    assert sent["data"][0]["y"] == [1.0, 2.0, 3.0] and "datarevision" not in sent["layout"]


def test_every_show_builds_the_figure_anew():
    calls = []

    def build(k):
        calls.append(k)
        return go.Figure(go.Scatter(y=[k, k]))

    a = ui.chart._sent_spec(ui.recipe(build, 1.0), False)
    b = ui.chart._sent_spec(ui.recipe(build, 1.0), False)
    assert calls == [1.0, 1.0] and a == b and a is not b


EPOCHS = 3  # a page's module-level setting, read by a builder defined on the page


def _curves(runs):
    return go.Figure(go.Scatter(x=list(range(EPOCHS)), y=runs))


def test_a_builder_reads_the_globals_as_they_are_now(monkeypatch):
    a = ui.chart._sent_spec(ui.recipe(_curves, [1.0, 2.0, 3.0]), False)
    monkeypatch.setattr(sys.modules[__name__], "EPOCHS", 2)
    b = ui.chart._sent_spec(ui.recipe(_curves, [1.0, 2.0, 3.0]), False)
    assert len(a["data"][0]["x"]) == 3 and len(b["data"][0]["x"]) == 2


def test_a_capture_collects_a_recipes_figure_built():
    with ui.chart.capturing() as got:
        ui.show(ui.recipe(_build, [0.0, 1.0], [2.0, 3.0]), key="k", main=True)
    ((key, main, spec),) = got
    assert key == "k" and main and spec["data"][0]["y"] == [2.0, 3.0]


def test_bad_recipes_are_refused_with_a_sentence():
    with pytest.raises(ValueError, match="function that builds the figure"):
        ui.recipe(42)
    with pytest.raises(ValueError, match="must be a Plotly figure"):
        ui.chart._sent_spec(ui.recipe(lambda: "not a figure"), False)
