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


# ------------------------------------------------------------------------------------------ live figures, plain
def _live_figures():
    """(name, builder, args, kwargs) of every live figure a Play page draws (vilab_ui.live.Live.show), with runs
    that diverge, stop and bend, as the pages give them."""
    from types import SimpleNamespace

    from vilab.plots import divergences as dp
    from vilab.plots import fields as fp
    from vilab.plots import optim as op
    from vilab.plots import trajectories as tp

    rng = np.random.default_rng(0)
    xs, ys = np.linspace(-1.0, 2.0, 9), np.linspace(0.01, 1.0, 7)
    U, V = rng.normal(size=(7, 9)), rng.normal(size=(7, 9))
    X, Y = np.meshgrid(np.linspace(-1.0, 2.0, 12), np.linspace(0.01, 1.0, 10))
    path = lambda n: (np.linspace(0.0, 1.0, n), np.linspace(0.5, 0.2, n))  # noqa: E731
    dx, dy = path(30)
    dx[-3:] = np.nan
    paths = ({"start 1": (*path(12), "max_steps", "gd-mv")},
             {"start 1 (natural)": (*path(5), "converged", "kappa"), "start 1 (xi)": (dx, dy, "diverged: NaN", "xi")})
    fields = (fp.field_pair_figure, (xs, ys, [(U, V), (V, U)]),
              dict(paths=paths, objective=-(X - 1) ** 2 - Y, objective_xy=(X[0], Y[:, 0]), optimum=(1.0, 0.3),
                   starts=np.array([[0.0, 0.5]]), start_labels=["start 1"], clickable=True, bends=[(3, 0.1)]))

    def run(n, shift, status="max_steps"):
        m = np.column_stack([np.linspace(-2.0, shift, n), np.linspace(2.5, 0.0, n)])
        return SimpleNamespace(mean=m, cov=np.tile(0.2 * np.eye(2), (n, 1, 1)), status=status)

    runs = {"srvn": run(40, 0.5), "gd-mc": run(40, 0.5), "bw-gd": run(25, 1.0, "diverged: step")}
    contour = plots.density_contour(-(X ** 2) - Y ** 2, X[0], Y[:, 0])
    trajectories = (tp.paths_figure, (runs, contour),
                    dict(every=5, truth=(np.zeros(2), np.eye(2)), bounds=((-3, 3), (-3, 3)), height=400,
                         bends={"srvn": [(10, 0.316)], "gd-mc": [(50, 0.1)]}))
    grid = (np.linspace(-3, 3, 15), np.linspace(-2, 2, 11), -np.add.outer(np.linspace(-2, 2, 11) ** 2,
                                                                          np.linspace(-3, 3, 15) ** 2))
    opt = {"Adam": ("adam", run(30, 0.2).mean, run(30, 0.2).cov, "max_steps"),
           "SNNGM": ("snngm", run(20, 0.4).mean, run(20, 0.4).cov, "diverged: NaN")}
    optim2d = (op.mean_paths_2d, (grid, opt), dict(height=390, bends={"snngm": [(4, 0.1)]}, bend_symbol="α"))
    optim2d_fixed = (op.mean_paths_2d, (grid, opt), dict(height=390, zoom=False))
    mv = np.linspace(-2.0, 1.0, 50), np.linspace(1.0, 1.5, 50)
    batch = (dp.live_batch, ({"sdb": mv, "bam": (mv[0], np.r_[mv[1][:-1], np.nan])}, 2.0, 1.5),
             dict(bends={"sdb": [(7, 10.0)]}, symbol="lr", height=385))
    return {"fields": fields, "trajectories": trajectories, "optim2d": optim2d, "optim2d-fixed": optim2d_fixed,
            "batch": batch}


@pytest.mark.parametrize("name", list(_live_figures()))
def test_a_live_figures_plain_data_is_the_figure_it_builds(name):
    """Each live figure's builder with plain=True gives, without graph objects, every trace the figure is built
    from, in its order, with the same data (x, y, z, text, customdata) to the last entry, and the annotations
    (vilab_ui.live plays frames of it; the traces' other entries it takes from the figure, which validates them:
    a colour scale's name becomes its colours)."""
    from vilab_ui.live import _DATA
    from vilab_ui.spec import as_lists

    build, args, kw = _live_figures()[name]
    fig = build(*args, **kw)
    plain = build(*args, **kw, plain=True)
    assert set(plain) == {"data", "layout"} and not any(isinstance(t, go.Figure) for t in plain["data"])
    assert all(isinstance(t, dict) for t in plain["data"])
    # the figure's own entries, as browser_spec reads them (the template and lecture mode are added there)
    keys = (*_DATA, "type", "name", "legendgroup", "mode")
    built = [{k: t[k] for k in keys if k in t} for t in fig._data]
    got = [{k: t[k] for k in keys if k in t} for t in plain["data"]]
    assert json.dumps(as_lists(got), sort_keys=True) == json.dumps(as_lists(built), sort_keys=True)
    # the figure's annotations end with those the runs make (before them: its own, the panels' titles)
    mine = as_lists(plain["layout"].get("annotations", []))
    notes = as_lists(fig._layout.get("annotations", []))[len(fig._layout.get("annotations", [])) - len(mine):]
    assert json.dumps(mine, sort_keys=True) == json.dumps(notes, sort_keys=True)
    assert name not in ("fields", "trajectories") or mine  # the diverged runs and the bends are annotated
    if name == "optim2d":  # zoomed: the window follows the runs, and is part of what they change
        lay = fig._layout
        assert plain["layout"]["ranges"] == [list(lay["xaxis"]["range"]), list(lay["yaxis"]["range"])]
