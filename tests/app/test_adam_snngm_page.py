"""AppTest of pages/30_Adam_vs_SNNGM.py: default view, extreme step sizes, every view, the URL round trip."""

import base64
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.charts import charts
from vilab import plots

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "30_Adam_vs_SNNGM.py")
VIEWS = ["1-D crab toy (Fig. 3)", "2-D logistic regression", "Step by step", "Real data",
         "Does SNNGM converge? (Theorem 3)", "Simulations (Tables 7 and 8)", "Notes on the optimizers"]
NOTES, THM3, TABS = VIEWS[6], VIEWS[4], VIEWS[5]
TAB7 = dict(view=TABS, tbl="Table 7: loglinear model")
TAB8 = dict(view=TABS, tbl="Table 8: logistic regression")


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
    return json.loads(charts(at)[i].spec)


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
    assert len(charts(at)) == 3
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
    at = _app(view=NOTES, N="100", beta="0.99")
    assert at.radio(key="view").value == NOTES and at.query_params["view"] in (NOTES, [NOTES])
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
    n_charts = len(charts(at))
    # the mean paths lie over grey contours of the exact posterior, each optimizer in its look
    fig = _fig(at, 0)
    contour = [d for d in fig["data"] if d["type"] == "contour"]
    assert len(contour) == 1 and contour[0]["contours"]["coloring"] == "lines"
    assert all(c[1].startswith("#") and c[1][1:3] == c[1][3:5] == c[1][5:7] for c in contour[0]["colorscale"])
    snngm = next(d for d in fig["data"] if d.get("name", "").startswith("SNNGM"))
    assert snngm["line"]["color"] == plots.color("snngm") and snngm["line"]["dash"] == "solid"
    at.button(key="sweep_btn").click().run()
    assert not at.exception, at.exception
    assert len(charts(at)) == n_charts + 1
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
    assert len(charts(at)) == 1  # ELBO per epoch, diagonal covariance
    at.slider(key="ep").set_value(100).run()
    assert any("settings changed" in str(i.value) for i in at.info)
    # nothing to run: a warning, not a traceback
    at.multiselect(key="cov").set_value([]).run()
    at.button(key="rd_run").click().run()
    assert not at.exception, at.exception
    assert any("at least one" in str(w.value) for w in at.warning)

    at.radio(key="view").set_value(NOTES).run()
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


def test_theorem3_view_bound_above_observed_and_widgets():
    """Theorem 3: SNNGM's tau-weighted squared gradient norm against the bound over N (log-log), in SNNGM's look."""
    import numpy as np

    at = _app(view=THM3, how_theorem3="1")  # the theorem in words, opened by the URL
    fig = _fig(at, 0)
    assert fig["layout"]["xaxis"]["type"] == "log" and fig["layout"]["yaxis"]["type"] == "log"
    obs = next(d for d in fig["data"] if d["name"].startswith("SNNGM"))
    bnd = next(d for d in fig["data"] if d["name"] == "Theorem 3's bound")
    assert obs["line"]["color"] == plots.color("snngm")
    assert np.all(_values(obs["y"]) < _values(bnd["y"])) and len(_values(obs["y"])) == 7
    text = _text(at)
    assert "stays below" in text and "not globally" in text and len(at.latex) >= 1
    # URL-set widgets, extreme values, the other target
    at = _app(view=THM3, th="crab", tc="0.3", tb="0.98")
    assert at.radio(key="th").value == "crab" and at.select_slider(key="tc").value == 0.3
    assert at.slider(key="tb").value == 0.98
    assert "left the parameter space" in _text(at)
    at.slider(key="tb").set_value(0.0).run()
    at.select_slider(key="tc").set_value(1e-3).run()
    assert not at.exception, at.exception
    at.radio(key="th").set_value("gaussian").run()
    at.select_slider(key="tc").set_value(10.0).run()
    assert not at.exception, at.exception
    # lecture mode: the same view in large type (a plain table instead of the interactive one)
    at = _app(view=THM3, lecture="1")
    assert len(charts(at)) == 1 and len(at.table) == 1
    at = _app(**TAB8, lecture="1")
    assert len(charts(at)) == 1 and len(at.table) == 1
    # hostile URL values fall back to the defaults
    at = _app(view=THM3, th="<img src=x>", tc="inf", tb="nan")
    assert at.radio(key="th").value == "gaussian" and at.select_slider(key="tc").value == 1.0
    assert at.slider(key="tb").value == 0.9
    at = _app(view=THM3, tc="-1", tb="-3")
    assert at.select_slider(key="tc").value == 1.0 and 0.0 <= at.slider(key="tb").value <= 0.98


def test_table8_view_shows_the_paper_at_once_and_runs_on_click(monkeypatch):
    """Table 8: the paper's orderings without waiting; our runs only on click (here a stand-in for the runs)."""
    at = _app(**TAB8)
    assert len(charts(at)) == 1 and "Run the simulation" in _text(at)
    df = at.dataframe[0].value
    assert list(df["optimizer"])[:3] == ["Adam 1", "ProxGenAdam 1", "SNNGM 1"] and "-71165" in df.to_string()
    at = _app(**TAB8, t8c=["<b>x</b>"])
    assert at.multiselect(key="t8c").value == ["diagonal", "full"]
    at.multiselect(key="t8c").set_value([]).run()
    assert not at.exception and any("at least one" in str(i.value) for i in at.info)

    import numpy as np
    import streamlit as st

    from vilab.repro import tan2025_table8 as rep8

    calls = []

    def fake(diagonal, progress=None, **kw):  # the paper's numbers / 10 in the summaries' shape, Adam 1 full diverged
        calls.append(diagonal)
        out = {}
        for (o, e, d), v in rep8.TABLE8_SIM.items():
            if d == diagonal:
                bad = (o, e, d) == ("adam", "first", False)
                out[(o, e, d)] = dict(final=np.nan if bad else v / 10, se=0.1, time=1.0, compile=1.0, iterations=1000,
                                      status="diverged: covariance collapsed" if bad else "max_steps", epochs=50.0,
                                      elbo_epoch=np.zeros(50))
                if progress is not None:
                    progress(0.5, o)
        return out

    monkeypatch.setattr(rep8, "table8_sim", fake)
    try:
        at = _app(**TAB8, t8c=["full"])
        at.button(key="t8_run").click().run()
        assert not at.exception, at.exception
        assert calls == [False]
        fig = _fig(at, 0)
        assert "xaxis2" in fig["layout"] and len(fig["layout"]["annotations"]) >= 2  # the paper's panel and ours
        snngm = [d for d in fig["data"] if (d.get("name") or "").startswith("SNNGM")]
        assert snngm and all(d["marker"]["color"] == plots.color("snngm") for d in snngm)
        df = at.dataframe[0].value
        assert "here, full" in df.columns and "diverged" in df.to_string() and "here, diagonal" not in df.columns
        assert any("Adam 1, full" in str(w.value) for w in at.warning)
    finally:
        st.cache_resource.clear()


def test_table8_german_view_shows_the_papers_german_columns_and_draws_a_run(monkeypatch):
    import numpy as np
    import streamlit as st

    from vilab.repro import tan2025_table8 as rep8

    at = _app(**TAB8, t8d="German credit")
    assert not at.exception
    df = at.dataframe[0].value
    assert "-625.6" in df.to_string() and "VOGN" not in " ".join(df["optimizer"])
    assert at.button(key="t8_run").label == "Run on German credit"
    calls = []

    def fake(diagonal, progress=None, **kw):
        calls.append(diagonal)
        return {(o, e, d): dict(final=v - 4.0, se=0.1, time=1.0, compile=1.0, iterations=3000, status="max_steps",
                                epochs=3000.0, elbo_epoch=np.zeros(10))
                for (o, e, d), v in rep8.TABLE8_GERMAN.items() if d == diagonal}

    monkeypatch.setattr(rep8, "table8_german", fake)
    try:
        at = _app(**TAB8, t8d="German credit", t8c=["diagonal"])
        at.button(key="t8_run").click().run()
        assert not at.exception, at.exception
        assert calls == [True]
        df = at.dataframe[0].value
        assert "here, diagonal" in df.columns and "-645.3" in df.to_string()  # SNNGM 2: -641.3 - 4
        assert any("first-order estimates enough" in str(i.value) for i in at.info)
    finally:
        st.cache_resource.clear()
    at = _app(**TAB8, t8d="<script>")
    assert not at.exception and at.query_params["t8d"] == "simulation"


def test_table7_view_paper_at_once_runs_on_click_and_hostile_urls(monkeypatch):
    """Table 7 (loglinear model): the paper's rows at once, for d = 50 and d = 100; our columns on click."""
    at = _app(**TAB7)
    assert at.radio(key="t7d").value == 50 and len(charts(at)) == 1
    df = at.dataframe[0].value
    assert list(df["optimizer"]) == ["Adam", "SNNGM", "NAGM", "VOGN"] and "-109064" in df.to_string()
    at = _app(**TAB7, t7d="100")
    assert at.radio(key="t7d").value == 100 and "-115687" in at.dataframe[0].value.to_string()
    at = _app(**TAB7, t7d="7", t7c=["<b>x</b>"])
    assert at.radio(key="t7d").value == 50 and at.multiselect(key="t7c").value == ["diagonal", "full"]

    import numpy as np

    from vilab.repro import tan2025_table8 as rep8

    calls = []

    def fake(d, diagonal, progress=None):  # the paper's numbers in the summaries' shape
        calls.append((d, diagonal))
        if progress is not None:
            progress(0.5, "SNNGM")
        return ({k: dict(final=v, se=0.1, time=2.0, compile=1.0, iterations=2000, status="max_steps", epochs=100.0,
                         elbo_epoch=np.zeros(100)) for k, v in rep8.table7_paper(d).items() if k[2] == diagonal},
                -109000.0)

    monkeypatch.setattr(rep8, "table7_column", fake)
    at = _app(**TAB7, t7c=["diagonal"])
    at.button(key="t7_run").click().run()
    assert not at.exception, at.exception
    assert calls == [(50, True)]
    assert "here, diagonal" in at.dataframe[0].value.columns and "L* = -109000.0" in _text(at)


def test_table7_columns_match_the_registry_settings():
    from vilab.repro import tan2025_table8 as rep8

    with pytest.raises(ValueError, match="50 and 100"):
        rep8.table7_column(70, True)
    assert rep8.TABLE7_SETTINGS[100] == rep8.TABLE7_D100_SETTING
    assert set(rep8.table7_paper(100)) == {(k, None, diag) for k in ("adam", "snngm", "nagm", "vogn")
                                            for diag in (True, False)}
