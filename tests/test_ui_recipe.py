"""ui.recipe: a figure is built only when no figure was sent from the same builder and arguments (same mode and
width); the fingerprint tells arguments apart by value and kind, and a figure it cannot read is built every time."""

import dataclasses
import sys

import numpy as np
import plotly.graph_objects as go
import pytest

import vilab_ui as ui
from vilab.plots.spec import browser_spec


@pytest.fixture(autouse=True)
def empty_store(monkeypatch):
    monkeypatch.setattr(ui.chart, "_SPECS", None)
    monkeypatch.setattr(ui.chart, "_MARGINS", None)
    ui.chart.st.session_state.pop(ui.chart._SENT_REVISIONS, None)


CALLS: list = []  # the figures built (counted where ui.show styles them: a builder that wrote to a global it
# reads would change its own fingerprint)


def _build(x, y, title="t"):
    return ui.chart.plots.style(go.Figure(go.Scatter(x=np.asarray(x), y=np.asarray(y))), title=title)


@pytest.fixture(autouse=True)
def count_builds(monkeypatch):
    styled = ui.chart._styled_spec

    def counted(fig, lecture_mode, width):
        CALLS.append(fig)
        return styled(fig, lecture_mode, width)

    monkeypatch.setattr(ui.chart, "_styled_spec", counted)


def _counting():
    CALLS.clear()
    return _build, CALLS


def test_the_same_recipe_is_built_once_and_sent_as_built():
    build, calls = _counting()
    a = ui.chart._sent_spec(ui.recipe(build, np.arange(3.0), [1.0, 2.0, 3.0], title="a"), False, None)
    b = ui.chart._sent_spec(ui.recipe(build, np.arange(3.0), [1.0, 2.0, 3.0], title="a"), False, None)
    assert len(calls) == 1 and a is b
    # what is sent equals the spec of the figure built directly
    fig = build(np.arange(3.0), [1.0, 2.0, 3.0], title="a")
    ui.chart.plots.use_template(fig, False)
    direct = browser_spec(fig, None)
    assert a["layout"].pop("datarevision").startswith("vilab:") and direct["layout"].pop("datarevision") == 1
    assert a == direct


@pytest.mark.parametrize("change", [
    dict(args=(np.arange(3.0) + 1e-12, [1.0, 2.0, 3.0])),   # a value
    dict(args=(np.arange(3), [1.0, 2.0, 3.0])),             # a dtype (ints, not floats)
    dict(args=(np.arange(3.0), [1, 2, 3])),                 # ints where floats were
    dict(args=(np.arange(3.0), (1.0, 2.0, 3.0))),           # a tuple where a list was
    dict(kwargs={"title": "b"}),                            # a keyword
    dict(lecture=True),                                     # the mode
    dict(width=800.0),                                      # the width the browser draws at
])
def test_any_change_of_argument_mode_or_width_builds_again(change):
    build, calls = _counting()
    base = dict(args=(np.arange(3.0), [1.0, 2.0, 3.0]), kwargs={"title": "a"}, lecture=False, width=None)
    ui.chart._sent_spec(ui.recipe(build, *base["args"], **base["kwargs"]), base["lecture"], base["width"])
    new = {**base, **change}
    ui.chart._sent_spec(ui.recipe(build, *new["args"], **new["kwargs"]), new["lecture"], new["width"])
    assert len(calls) == 2


def test_a_closure_is_fingerprinted_with_the_values_it_closes_over():
    def make(k):
        def build():
            return go.Figure(go.Scatter(y=[k, k]))
        return build

    one, two = ui.chart._sent_spec(ui.recipe(make(1.0)), False, None), ui.chart._sent_spec(ui.recipe(make(2.0)), False, None)
    assert one["data"][0]["y"] == [1.0, 1.0] and two["data"][0]["y"] == [2.0, 2.0]


def test_dataclasses_and_nested_containers_are_read_by_value():
    @dataclasses.dataclass
    class Run:
        mean: np.ndarray
        status: str
        extra: dict

    r1 = ui.recipe(len, Run(np.ones((2, 2)), "converged", {"t": np.arange(2.0)}))
    r2 = ui.recipe(len, Run(np.ones((2, 2)), "converged", {"t": np.arange(2.0)}))
    r3 = ui.recipe(len, Run(np.ones((2, 2)), "diverged: x", {"t": np.arange(2.0)}))
    assert r1.digest() == r2.digest() != r3.digest()


def test_plotly_objects_handed_to_a_builder_are_read_by_value():
    def contour(z):
        return go.Contour(z=np.asarray(z), showscale=False)

    one, same, other = (ui.recipe(len, contour(z)).digest() for z in ([[1.0, 2.0]], [[1.0, 2.0]], [[1.0, 3.0]]))
    assert one is not None and one == same != other
    assert ui.recipe(len, go.Figure(contour([[1.0]]))).digest() is not None


def test_an_unreadable_argument_builds_every_time():
    build_calls = []

    class Opaque:
        pass

    def build(obj):
        build_calls.append(obj)
        return go.Figure(go.Scatter(y=[1, 2]))

    o = Opaque()
    assert ui.recipe(build, o).digest() is None
    ui.chart._sent_spec(ui.recipe(build, o), False, None)
    ui.chart._sent_spec(ui.recipe(build, o), False, None)
    assert len(build_calls) == 2


def test_bad_recipes_are_refused_with_a_sentence():
    with pytest.raises(ValueError, match="function that builds the figure"):
        ui.recipe(42)
    with pytest.raises(ValueError, match="must be a Plotly figure"):
        ui.chart._sent_spec(ui.recipe(lambda: "not a figure"), False, None)


def test_the_store_is_bounded(monkeypatch):
    monkeypatch.setattr(ui.chart, "SPEC_STORE_SIZE", 3)
    build, calls = _counting()
    for i in range(5):
        ui.chart._sent_spec(ui.recipe(build, [float(i)], [0.0]), False, None)
    assert len(ui.chart._SPECS) == 3
    ui.chart._sent_spec(ui.recipe(build, [0.0], [0.0]), False, None)  # the oldest went first: built again
    assert len(calls) == 6


def _report(spec, margins, rev=None):
    return {"widths": {"chart": [812.0, rev or spec["layout"]["datarevision"], *margins]}}


def test_reported_margins_are_sent_with_the_same_figure_to_the_next_visitor():
    """The margins a browser drew a recipe's figure with (Plotly's automargin result) go out with that figure, so the
    next browser draws it once; another figure, mode or width is sent as built."""
    build, _ = _counting()
    first = ui.chart._sent_spec(ui.recipe(build, [1.0], [2.0]), False, None)
    own = first["layout"]["margin"]
    grown = (own["l"] + 31.0, own["r"], own["t"] + 5.0, own["b"] + 155.0)
    assert ui.chart._harvest_margins(_report(first, grown)) == 1
    again = ui.chart._sent_spec(ui.recipe(build, [1.0], [2.0]), False, None)
    assert [again["layout"]["margin"][s] for s in "lrtb"] == list(grown)
    assert first["layout"]["margin"] == own  # the stored figure itself is not changed
    lecture = ui.chart._sent_spec(ui.recipe(build, [1.0], [2.0]), True, None)["layout"]["margin"]
    assert [lecture[s] for s in "lrtb"] != list(grown)
    assert ui.chart._sent_spec(ui.recipe(build, [1.0], [2.0]), False, 640.0)["layout"]["margin"] == own


@pytest.mark.parametrize("bad", [
    "unknown revision", "smaller than its own", "far larger", "not a number", "nan", "short list"])
def test_a_report_that_cannot_be_true_is_refused(bad):
    build, _ = _counting()
    spec = ui.chart._sent_spec(ui.recipe(build, [1.0], [2.0]), False, None)
    own = [spec["layout"]["margin"][s] for s in "lrtb"]
    report = {
        "unknown revision": _report(spec, own, rev="vilab:not-sent-here:0:0"),
        "smaller than its own": _report(spec, [own[0] - 20.0, *own[1:]]),
        "far larger": _report(spec, [own[0] + 5000.0, *own[1:]]),
        "not a number": _report(spec, ["<img src=x>", *own[1:]]),
        "nan": _report(spec, [float("nan"), *own[1:]]),
        "short list": {"widths": {"chart": [812.0, spec["layout"]["datarevision"], 1.0]}},
    }[bad]
    assert ui.chart._harvest_margins(report) == 0
    assert ui.chart._sent_spec(ui.recipe(build, [1.0], [2.0]), False, None)["layout"]["margin"] == spec["layout"]["margin"]


def test_a_figure_is_stored_with_the_margins_its_labels_needed():
    """A report may add the margins the chart's labels and legends needed (Plotly's margin pushes): those are kept,
    never below the figure's own margins and never above what it was drawn with."""
    build, _ = _counting()
    first = ui.chart._sent_spec(ui.recipe(build, [1.0], [2.0]), False, None)
    own = [first["layout"]["margin"][s] for s in "lrtb"]
    drawn = (own[0] + 30.0, own[1] + 10.0, own[2], own[3] + 150.0)
    needed = (own[0] + 22.0, 0.0, own[2] + 90.0, own[3] + 150.0)  # r below its own; t above what it was drawn with
    assert ui.chart._harvest_margins(_report(first, (*drawn, *needed))) == 1
    again = ui.chart._sent_spec(ui.recipe(build, [1.0], [2.0]), False, None)
    assert [again["layout"]["margin"][s] for s in "lrtb"] == [own[0] + 22.0, own[1], own[2], own[3] + 150.0]


def test_a_new_figure_on_a_chart_gets_the_margins_the_last_one_needed():
    """A slider moved to a new value: the new figure of the same chart (same mode and width) goes out with the
    margins the browser said the last one needed, so Plotly draws it once when its labels fit; another chart,
    mode or width, or a report of a figure not sent to this session, gives no hint."""
    build, _ = _counting()
    first = ui.chart._sent_spec(ui.recipe(build, [1.0], [2.0]), False, None, "chart")
    own = [first["layout"]["margin"][s] for s in "lrtb"]
    needed = (own[0] + 28.0, own[1], own[2] + 3.0, own[3] + 155.0)
    ui.chart.st.session_state[ui.chart._WIDTHS_KEY] = _report(first, (*needed, *needed))
    try:
        new = ui.chart._sent_spec(ui.recipe(build, [1.0], [3.0]), False, None, "chart")
        slack = ui.chart.MARGIN_HINT_SLACK_PX  # a pushed side gets a little room for labels that move by a pixel
        assert [new["layout"]["margin"][s] for s in "lrtb"] == [needed[0] + slack, own[1], needed[2] + slack,
                                                                 needed[3] + slack]
        for args in ((True, None, "chart"), (False, 640.0, "chart"), (False, None, "other")):
            other = ui.chart._sent_spec(ui.recipe(build, [1.0], [4.0]), *args)
            assert other["layout"]["margin"]["b"] < needed[3]  # its own (lecture mode has other own margins)
        ui.chart.st.session_state[ui.chart._WIDTHS_KEY] = _report(first, (*needed, *needed), rev="vilab:elsewhere:0:0")
        assert [ui.chart._sent_spec(ui.recipe(build, [1.0], [5.0]), False, None, "chart")["layout"]["margin"][s]
                for s in "lrtb"] == own
    finally:
        ui.chart.st.session_state.pop(ui.chart._WIDTHS_KEY, None)


def test_chart_width_reads_both_report_forms(monkeypatch):
    ui.chart.st.session_state[ui.chart._WIDTHS_KEY] = {"widths": {"a": 700.0, "b": [640.0, "vilab:x:0:0", 1, 2, 3, 4]}}
    try:
        assert ui.chart.chart_width("a") == 700.0 and ui.chart.chart_width("b") == 640.0 and ui.chart.chart_width("c") is None
    finally:
        ui.chart.st.session_state.pop(ui.chart._WIDTHS_KEY, None)


EPOCHS = 3  # a page's module-level setting, read by a builder defined on the page


def _curves(runs):
    return go.Figure(go.Scatter(x=list(range(EPOCHS)), y=runs))


class _Dataset:  # an object a builder reads from the page's globals that cannot be fingerprinted
    name = "digits"


DATA = _Dataset()


def _titled(runs):
    return go.Figure(go.Scatter(y=runs), layout=dict(title=DATA.name))


def test_module_level_values_a_builder_reads_are_inputs(monkeypatch):
    """A builder defined on a page reads the page's globals: a changed one is a new figure, and one that cannot be
    read makes the figure unreadable (built every time) rather than stale."""
    a = ui.chart._sent_spec(ui.recipe(_curves, [1.0, 2.0, 3.0]), False, None)
    monkeypatch.setattr(sys.modules[__name__], "EPOCHS", 2)
    b = ui.chart._sent_spec(ui.recipe(_curves, [1.0, 2.0, 3.0]), False, None)
    assert len(a["data"][0]["x"]) == 3 and len(b["data"][0]["x"]) == 2
    assert ui.recipe(_titled, [1.0]).digest() is None


def _registry_builder(name):
    return REGISTRY[name]()


def _registered():
    return go.Figure(go.Scatter(y=[len(REGISTRY)]))


REGISTRY = {"one": _registered}  # a global dict of functions whose code reads the dict again: no endless loop


def test_globals_that_refer_back_to_the_builder_are_read_once():
    d = ui.recipe(_registry_builder, "one").digest()
    assert d is not None and d == ui.recipe(_registry_builder, "one").digest()
