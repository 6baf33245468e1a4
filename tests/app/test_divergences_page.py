"""AppTest of pages/40_Divergences.py: default view, every tab through the URL, extreme widget values."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from vilab import plots

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "40_Divergences.py")
TABS = ["2-D Gaussian", "3-D collapse", "Univariate targets", "Batch methods", "Batch step by step"]


def _run(**params):
    at = AppTest.from_file(PAGE, default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = str(v)
    return at.run()


def _texts(at):
    return [w.value for w in at.warning] + [e.value for e in at.error]


def _charts(at):
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def _names(at):
    return {t.get("name") for spec in _charts(at) for t in spec["data"]}


def test_default_view():
    at = _run()
    assert not at.exception
    assert not _texts(at)
    assert at.query_params["tab"] == "2-D Gaussian"
    assert len(at.dataframe) >= 1
    assert at.slider(key="rho").value == 0.9
    # readable names in the legend, no codes; the two-panel rescale view is not on by default
    assert {plots.label(k) for k in ("kl", "fisher", "score", "forward_kl", "true")} <= _names(at)
    assert not {"kl", "fisher", "score", "forward_kl"} & _names(at)
    assert any("What to notice" in i.value for i in at.info)


@pytest.mark.parametrize("tab", TABS)
def test_each_tab_opens_from_the_url_and_computes_only_itself(tab):
    at = _run(tab=tab)
    assert not at.exception and not _texts(at)
    assert at.query_params["tab"] == tab  # the link keeps the tab
    names = _names(at)
    assert ("grid points" in names) == (tab == "3-D collapse")  # only the open tab's figure is made
    assert (plots.label("forward_kl") in names) == (tab == "2-D Gaussian")
    assert ("SDb's q_t" in names) == (tab == "Batch methods")
    assert any("What to notice" in i.value for i in at.info)


@pytest.mark.parametrize("bad", ["<script>alert(1)</script>", "", "3-d collapse", "Batch methods ", "1e400", "2"])
def test_hostile_tab_values_fall_back_to_the_first_tab(bad):
    at = _run(tab=bad)
    assert not at.exception and not _texts(at)
    assert at.query_params["tab"] == "2-D Gaussian"
    assert plots.label("forward_kl") in _names(at)


def test_switching_tab_updates_the_url():
    at = _run()
    at.session_state["tab"] = "Batch methods"
    at.run()
    assert not at.exception and not _texts(at)
    assert at.query_params["tab"] == "Batch methods"
    assert "SDb's q_t" in _names(at)


@pytest.mark.parametrize("rho", [-0.99, 0.99])
def test_extreme_correlation_and_scales(rho):
    at = _run()
    at.slider(key="rho").set_value(rho).run()
    at.select_slider(key="sd1").set_value(0.001).run()
    at.select_slider(key="sd2").set_value(1000.0).run()
    assert not at.exception and not _texts(at)
    at.toggle(key="rs").set_value(True).run()
    at.select_slider(key="k").set_value(100.0).run()
    assert not at.exception and not _texts(at)
    assert len(at.get("plotly_chart")) == 2  # the two rescale panels (one figure) + the variance curves
    assert any("Fisher optimum changes shape" in i.value for i in at.info)


def test_non_pd_choice_gives_a_message_not_an_exception():
    at = _run(tab="3-D collapse")
    at.slider(key="a").set_value(0.99).run()
    at.slider(key="b").set_value(0.99).run()
    at.slider(key="c").set_value(-0.95).run()
    assert not at.exception
    assert any("positive-definite" in t or "positive definite" in t for t in _texts(at))


def test_collapse_point_is_reported_and_the_text_names_the_markers():
    at = _run(tab="3-D collapse", a=0.8, b=0.8, c=0.3)
    assert not at.exception
    assert any("Variational collapse at (a, b) = (0.8, 0.8)" in i.value and "coordinate(s) 1 " in i.value
               for i in at.info)
    # the figure's collapse markers are crosses and the text says "×" (not "x" for squares)
    layer = next(t for spec in _charts(at) for t in spec["data"] if t.get("name") == "score-based collapse")
    assert layer["marker"]["symbol"].startswith("x")
    assert any("×" in i.value and "collapse" in i.value for i in at.info)
    table = at.dataframe[0].value
    assert table.loc[plots.label("score"), "i = 1"] == 0.0 and table.loc[plots.label("sdb"), "i = 1"] > 0


@pytest.mark.parametrize("params", [dict(tgt="student_t", nu=2.5), dict(tgt="skew_normal", t=0.5, lam=-5),
                                    dict(tgt="log_inverse_gamma", a1=0.6)], ids=lambda p: p["tgt"])
def test_univariate_targets_at_extreme_parameters(params):
    at = _run(tab="Univariate targets", **params)
    assert not at.exception and not _texts(at)
    table = next(d.value for d in at.dataframe if "accuracy 1 − IAE/2 (%)" in d.value.index)
    assert list(table.columns) == [plots.label(k) for k in ("kl", "fisher", "score")]
    assert ((table.loc["accuracy 1 − IAE/2 (%)"] > 0) & (table.loc["accuracy 1 − IAE/2 (%)"] <= 100)).all()


@pytest.mark.parametrize("params", [dict(it=300, B=50, m0=6), dict(it=6, B=2, m0=-6)])
def test_batch_panel_extremes_and_runs(params):
    at = _run(tab="Batch methods", **params)
    assert not at.exception and not _texts(at)
    at.checkbox(key="run").check().run()
    assert not at.exception and not _texts(at)
    bars = next(spec for spec in _charts(at) if any(t.get("type") == "bar" for t in spec["data"]))
    colors = {t["name"]: t["marker"]["color"] for t in bars["data"]}
    # Fisher and the FDb fixed point in different colours (they were both orange)
    assert colors[plots.label("fisher")] != colors[plots.label("fdb") + ", fixed point"]
    assert colors[plots.label("fdb") + ", Adadelta run"] == colors[plots.label("fdb") + ", fixed point"]


def test_batch_notice_says_why_sdb_moves_slowly():
    at = _run(tab="Batch methods")
    note = next(i.value for i in at.info if "Adadelta" in i.value)
    assert "In 60 iterations the mean of q_t went from −2 to" in note and "0.0045" in note


def test_fixed_points_follow_the_2d_settings_in_the_url():
    at = _run(tab="Batch methods", rho=0.5, sd1=2.0, sd2=1.0)
    assert not at.exception and not _texts(at)
    assert any("ρ = 0.5" in m.value for m in at.markdown)
    at = _run(tab="Batch methods", rho="nan", sd1="-3", sd2="1e999")  # hostile: defaults / clamped
    assert not at.exception and not _texts(at)


def test_fig1_points_are_clickable():
    """Plotly cannot select heatmap cells: the figure carries a selectable grid-point layer and the
    chart is registered with a point-selection callback (a click moves the a, b sliders)."""
    import base64

    at = _run(tab="3-D collapse", c=0.6)
    assert not at.exception
    charts = [c for c in at.get("plotly_chart") if "grid points" in c.proto.spec]
    assert len(charts) == 1
    proto = charts[0].proto
    assert list(proto.selection_mode)  # selection is activated (points)
    spec = json.loads(proto.spec)
    layer = next(t for t in spec["data"] if t.get("name") == "grid points")
    x = layer["x"]
    n = len(base64.b64decode(x["bdata"])) // 8 if isinstance(x, dict) else len(x)  # plotly's binary arrays
    assert layer["marker"]["opacity"] == 0 and n > 500
    assert "click a point" in " ".join(c.value for c in at.caption).lower()
