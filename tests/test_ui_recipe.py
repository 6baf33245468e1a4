"""ui.recipe: a figure is built only when no figure was sent from the same builder and arguments (same mode and
width); the fingerprint tells arguments apart by value and kind, and a figure it cannot read is built every time."""

import dataclasses

import numpy as np
import plotly.graph_objects as go
import pytest

import vilab_ui as ui
from vilab.plots.spec import browser_spec


@pytest.fixture(autouse=True)
def empty_store(monkeypatch):
    monkeypatch.setattr(ui, "_SPECS", None)


CALLS: list = []  # module level: a builder that closed over its own list would change its fingerprint


def _build(x, y, title="t"):
    CALLS.append(title)
    return go.Figure(go.Scatter(x=np.asarray(x), y=np.asarray(y)), layout=dict(title=title))


def _counting():
    CALLS.clear()
    return _build, CALLS


def test_the_same_recipe_is_built_once_and_sent_as_built():
    build, calls = _counting()
    a = ui._sent_spec(ui.recipe(build, np.arange(3.0), [1.0, 2.0, 3.0], title="a"), False, None)
    b = ui._sent_spec(ui.recipe(build, np.arange(3.0), [1.0, 2.0, 3.0], title="a"), False, None)
    assert len(calls) == 1 and a is b
    # what is sent equals the spec of the figure built directly
    fig = build(np.arange(3.0), [1.0, 2.0, 3.0], title="a")
    ui.plots.use_template(fig, False)
    assert a == browser_spec(fig, None)


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
    ui._sent_spec(ui.recipe(build, *base["args"], **base["kwargs"]), base["lecture"], base["width"])
    new = {**base, **change}
    ui._sent_spec(ui.recipe(build, *new["args"], **new["kwargs"]), new["lecture"], new["width"])
    assert len(calls) == 2


def test_a_closure_is_fingerprinted_with_the_values_it_closes_over():
    def make(k):
        def build():
            return go.Figure(go.Scatter(y=[k, k]))
        return build

    one, two = ui._sent_spec(ui.recipe(make(1.0)), False, None), ui._sent_spec(ui.recipe(make(2.0)), False, None)
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


def test_an_unreadable_argument_builds_every_time():
    build_calls = []

    class Opaque:
        pass

    def build(obj):
        build_calls.append(obj)
        return go.Figure(go.Scatter(y=[1, 2]))

    o = Opaque()
    assert ui.recipe(build, o).digest() is None
    ui._sent_spec(ui.recipe(build, o), False, None)
    ui._sent_spec(ui.recipe(build, o), False, None)
    assert len(build_calls) == 2


def test_bad_recipes_are_refused_with_a_sentence():
    with pytest.raises(ValueError, match="function that builds the figure"):
        ui.recipe(42)
    with pytest.raises(ValueError, match="must be a Plotly figure"):
        ui._sent_spec(ui.recipe(lambda: "not a figure"), False, None)


def test_the_store_is_bounded(monkeypatch):
    monkeypatch.setattr(ui, "SPEC_STORE_SIZE", 3)
    build, calls = _counting()
    for i in range(5):
        ui._sent_spec(ui.recipe(build, [float(i)], [0.0]), False, None)
    assert len(ui._SPECS) == 3
    ui._sent_spec(ui.recipe(build, [0.0], [0.0]), False, None)  # the oldest went first: built again
    assert len(calls) == 6
