"""AppTest of pages/30_Adam_vs_SNNGM.py: default view, extreme step sizes, every view, the URL round trip."""

import base64
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from vilab import plots

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "30_Adam_vs_SNNGM.py")
VIEWS = ["1-D crab toy (Fig. 3)", "2-D logistic regression", "Step by step", "Real data", "Notes on the optimizers"]


def _app(**params):
    at = AppTest.from_file(PAGE, default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = v if isinstance(v, list) else str(v)
    at.run()
    assert not at.exception, at.exception
    return at


def _text(at):
    return " ".join(str(m.value) for m in list(at.markdown) + list(at.caption) + list(at.warning) + list(at.info))


def _fig(at, i):
    return json.loads(at.get("plotly_chart")[i].proto.spec)


def _values(v):
    """A Plotly data array as floats (plain list, or Plotly's typed array {"dtype", "bdata"})."""
    import numpy as np

    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
    return np.asarray(v, float)


def test_default_view_shows_fig3_with_divergence():
    at = _app()
    df = at.dataframe[0].value
    assert "2197 iterations" in df.to_string() and "767 iterations" in df.to_string()
    assert any("negative sigma^2" in str(w.value) for w in at.warning)
    # three panels (Adam, natural-gradient Adam, SNNGM) on a log sigma^2 axis zoomed to the paths, each
    # optimizer in its look: Adam warm dashed (Euclidean), SNNGM blue solid (natural)
    assert len(at.get("plotly_chart")) == 3
    panels = [_fig(at, i) for i in range(3)]
    for fig in panels:
        assert fig["layout"]["yaxis"]["type"] == "log"
        lo, hi = fig["layout"]["yaxis"]["range"]
        assert -4.5 < lo < -3.5 and -1.5 < hi < -0.5  # sigma^2 from ~1e-4 (Adam's last start) to ~0.1
        assert fig["layout"]["height"] >= 360
    paths = [[d for d in fig["data"] if d.get("mode") == "lines" and d.get("line", {}).get("width") == 2.5]
             for fig in panels]
    assert [len(p) for p in paths] == [3, 3, 3]
    assert {(d["line"]["color"], d["line"]["dash"]) for d in paths[0]} == {(plots.color("adam"), "dash")}
    assert {(d["line"]["color"], d["line"]["dash"]) for d in paths[2]} == {(plots.color("snngm"), "solid")}
    assert {d["line"]["color"] for d in paths[1]} == {plots.color("nadam")}
    notes = [t for fig in panels for d in fig["data"] for t in (d.get("text") or [])]
    assert "2197 it." in notes and "767 it." in notes and "diverged at 14" in notes
    text = _text(at)
    assert "What to notice" in text and "staircases" in text and "1856 iterations in all" in text
    assert "digest" not in text + df.to_string() and "sigma^2 <" not in text


def test_every_view_round_trips_through_the_url_and_hostile_values_fall_back():
    at = _app(view=VIEWS[4], N="100", beta="0.99")
    assert at.radio(key="view").value == VIEWS[4] and at.query_params["view"] in (VIEWS[4], [VIEWS[4]])
    assert at.slider(key="N").value == 100 and at.slider(key="beta").value == 0.99
    at = _app(view="<script>", aa="1e400", an="-1", **{"as": "nan"})
    assert at.radio(key="view").value == VIEWS[0]
    assert [at.select_slider(key=k).value for k in ("aa", "an", "as")] == [1e-3, 1e-3, 1e-3]
    at = _app(aa="0.1", an="1e-4", **{"as": "0.0178"})  # a URL value snaps to the slider's grid
    assert [at.select_slider(key=k).value for k in ("aa", "an", "as")] == [0.1, 1e-4, 0.0178]
    at = _app(view=VIEWS[1], par="chol_prec", est="first", nit="50", opt=["snngm", "adam"], a2snngm="0.1")
    assert not at.exception
    assert at.radio(key="par").value == "chol_prec" and at.radio(key="est").value == "first"
    assert at.multiselect(key="opt").value == ["snngm", "adam"] and at.select_slider(key="a2snngm").value == 0.1
    for k, v in dict(view=VIEWS[1], par="chol_prec", est="first", nit="50", a2snngm="0.1").items():
        assert at.query_params[k] in (v, [v]), k


def test_fig3_extreme_alphas():
    at = _app()
    for key in ("aa", "an", "as"):
        at.select_slider(key=key).set_value(0.1).run()
        assert not at.exception, at.exception
    for key in ("aa", "an", "as"):
        at.select_slider(key=key).set_value(1e-4).run()
        assert not at.exception, at.exception


@pytest.mark.slow
def test_2d_view_extreme_alphas_and_sweep():
    at = _app()
    at.radio(key="view").set_value(VIEWS[1]).run()
    at.multiselect(key="opt").set_value(["snngm", "adam-natural", "nagm", "vogn"]).run()
    assert not at.exception, at.exception
    for key, val in [("a2snngm", 10.0), ("a2adamnatural", 10.0), ("a2nagm", 10.0), ("a2vogn", 1e-4)]:
        at.select_slider(key=key).set_value(val).run()
        assert not at.exception, at.exception
    at.radio(key="par").set_value("chol_prec").run()
    at.radio(key="est").set_value("first").run()
    at.slider(key="nit").set_value(50).run()
    assert not at.exception, at.exception
    n_charts = len(at.get("plotly_chart"))
    # the mean paths lie over grey contours of the exact posterior, each optimizer in its look
    fig = _fig(at, 0)
    contour = [d for d in fig["data"] if d["type"] == "contour"]
    assert len(contour) == 1 and contour[0]["contours"]["coloring"] == "lines"
    assert all(c[1].startswith("#") and c[1][1:3] == c[1][3:5] == c[1][5:7] for c in contour[0]["colorscale"])
    snngm = next(d for d in fig["data"] if d.get("name", "").startswith("SNNGM"))
    assert snngm["line"]["color"] == plots.color("snngm") and snngm["line"]["dash"] == "solid"
    at.button(key="sweep_btn").click().run()
    assert not at.exception, at.exception
    assert len(at.get("plotly_chart")) == n_charts + 1
    at.slider(key="nit").set_value(100).run()
    assert any("settings changed" in str(i.value) for i in at.info)


@pytest.mark.slow
def test_real_data_table8_and_notes():
    at = _app()
    at.radio(key="view").set_value(VIEWS[3]).run()
    at.selectbox(key="ds").set_value("Pima").run()
    at.multiselect(key="opt3").set_value(["snngm", "vogn"]).run()
    at.multiselect(key="cov").set_value(["diagonal"]).run()
    at.selectbox(key="bs").set_value("n/4").run()
    at.slider(key="ep").set_value(50).run()
    at.select_slider(key="a3snngm").set_value(1.0).run()
    at.button(key="rd_run").click().run()
    assert not at.exception, at.exception
    df = at.dataframe[0].value
    assert list(df.columns) == ["optimizer", "diagonal"]
    assert list(df["optimizer"]) == ["SNNGM 1", "SNNGM 2", "VOGN"]
    assert len(at.get("plotly_chart")) == 1  # ELBO per epoch, diagonal covariance
    at.slider(key="ep").set_value(100).run()
    assert any("settings changed" in str(i.value) for i in at.info)
    # nothing to run: a warning, not a traceback
    at.multiselect(key="cov").set_value([]).run()
    at.button(key="rd_run").click().run()
    assert not at.exception, at.exception
    assert any("at least one" in str(w.value) for w in at.warning)

    at.radio(key="view").set_value(VIEWS[4]).run()
    assert len(at.latex) >= 8  # the header's SNNGM rule and each optimizer's update
    assert "not Nesterov" in _text(at)
    at.slider(key="N").set_value(100).run()
    at.slider(key="beta").set_value(0.99).run()
    assert not at.exception, at.exception
    at.slider(key="N").set_value(20000).run()
    at.slider(key="beta").set_value(0.5).run()
    assert not at.exception, at.exception
    assert "43 for N = 10000" in _text(at)


def test_fig3_paths_are_thinned_but_keep_their_ends_and_spikes():
    """The panels draw at most ~400 points per path (a figure a few times smaller, redrawn faster), keeping the
    first and last iterates and the extremes of every stretch (Adam's staircase keeps its full depth)."""
    import numpy as np

    from vilab.plots.optim import thin_index

    y = np.zeros(5000)
    y[3333] = -4.0  # a one-iteration spike
    keep = thin_index(5000, 400, np.linspace(0, 1, 5000), y)
    assert keep[0] == 0 and keep[-1] == 4999 and 3333 in keep and len(keep) <= 401
    assert np.all(np.diff(keep) > 0)
    np.testing.assert_array_equal(thin_index(300, 400, y[:300]), np.arange(300))  # short paths: every point
    at = _app()
    panel = _fig(at, 0)  # Adam: 2197, 1261 and 2591 iterations, drawn with at most ~400 points each
    paths = [d for d in panel["data"] if d.get("mode") == "lines" and d.get("line", {}).get("width") == 2.5]
    sizes = [len(_values(d["y"])) for d in paths]
    assert all(50 < n <= 401 for n in sizes), sizes
    lo = min(min(_values(d["y"])) for d in paths)
    assert lo < 2e-4  # the deepest dip of Adam's path from (2, 0.01) is drawn (the axis starts near 1e-4)
