"""AppTest of pages/40_Divergences.py: default view, every tab through the URL, extreme widget values."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.charts import charts
from vilab import plots

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "40_Divergences.py")
TABS = ["2-D Gaussian", "Weighted Fisher", "3-D collapse", "Univariate targets", "Gradient noise", "Batch methods",
        "Batch step by step", "Objective landscapes", "Logistic regression"]


def _run(**params):
    at = AppTest.from_file(PAGE, default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = str(v)
    return at.run()


def _texts(at):
    return [w.value for w in at.warning] + [e.value for e in at.error]


def _charts(at):
    return [json.loads(c.spec) for c in charts(at)]


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
    assert len(charts(at)) == 2  # the two rescale panels (one figure) + the variance curves
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
    grid = [c for c in charts(at) if "grid points" in c.spec]
    assert len(grid) == 1
    assert grid[0].selectable  # a click on a point is sent to the page
    spec = grid[0].figure
    layer = next(t for t in spec["data"] if t.get("name") == "grid points")
    x = layer["x"]
    n = len(base64.b64decode(x["bdata"])) // 8 if isinstance(x, dict) else len(x)  # plotly's binary arrays
    assert layer["marker"]["opacity"] == 0 and n > 500
    assert "click a point" in " ".join(c.value for c in at.caption).lower()


# ------------------------------------------------------------------ weighted Fisher tab (issue 16)


def _table_with(at, column):
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_weighted_fisher_default_view():
    at = _run(tab="Weighted Fisher")
    assert not at.exception and not _texts(at)
    assert at.query_params["wM"] == "target_cov" and at.query_params["wrho"] == "0.9"
    assert "weighted Fisher, M = Λ⁻¹" in _names(at)
    note = next(i.value for i in at.info if "Weighted Fisher (M = Λ⁻¹)" in i.value)
    # sqrt(0.19) = 0.436 (geometric mean of KL's 0.19 and the truth 1), above KL: Theorem 1 needs a diagonal M
    assert "Σ₁₁ = 0.436" in note and "KL 0.19" in note and "exceed KL's" in note
    table = _table_with(at, "S_M(q‖p), M = Λ⁻¹")
    assert len(table) == 4
    own = {"KL(q‖p)": plots.label("kl"), "Fisher F(q‖p)": plots.label("fisher"),
           "S_M(q‖p), M = Λ⁻¹": "weighted Fisher, M = Λ⁻¹"}
    for col, row in own.items():  # each divergence column is smallest in its own row
        assert table[col].idxmin() == row
    assert table.loc[plots.label("fisher"), "Σ₁₁"] == pytest.approx(0.1412, abs=1e-4)


@pytest.mark.parametrize("weight,shown", [("identity", "M = I"), ("q_cov", "M = Σ"), ("custom", "your M")])
def test_weighted_fisher_each_weight(weight, shown):
    at = _run(tab="Weighted Fisher", wM=weight)
    assert not at.exception and not _texts(at)
    assert f"weighted Fisher, {shown}" in _names(at)
    note = next(i.value for i in at.info if "Weighted Fisher (" in i.value)
    if weight == "identity":
        assert "Σ₁₁ = 0.141" in note and "Theorem 1 applies" in note
    elif weight == "q_cov":
        assert "Σ₁₁ = 0.105" in note and "score-based divergence" in note
    else:  # the default custom M = [[1, 0.5], [0.5, 2]]: Σ₂₂ = 0.194 > KL's 0.19
        assert "Σ₂₂ = 0.194" in note and "Σ₂₂ exceeds KL's" in note


def test_weighted_fisher_non_positive_definite_weight_warns_not_raises():
    at = _run(tab="Weighted Fisher", wM="custom", m11=1, m12=3, m22=2)
    assert not at.exception
    texts = _texts(at)
    assert any("not positive definite" in t and "M₁₂² < M₁₁ M₂₂" in t for t in texts), texts
    assert not at.dataframe  # nothing computed from a bad M
    at.number_input(key="m12").set_value(0.0).run()  # fixing M brings the view back
    assert not at.exception and not _texts(at)
    assert any("Theorem 1 applies" in i.value for i in at.info)


def test_weighted_fisher_extreme_widget_values():
    at = _run(tab="Weighted Fisher", wM="custom")
    for rho in (-0.99, 0.99):
        at.slider(key="wrho").set_value(rho).run()
        at.select_slider(key="wsd1").set_value(0.001).run()
        at.select_slider(key="wsd2").set_value(1000.0).run()
        at.number_input(key="m11").set_value(100.0).run()
        at.number_input(key="m12").set_value(-99.9).run()
        at.number_input(key="m22").set_value(100.0).run()
        assert not at.exception and not _texts(at)
        assert len(at.dataframe) == 1
    at.number_input(key="m22").set_value(-100.0).run()
    assert not at.exception and any("not positive definite" in t for t in _texts(at))


@pytest.mark.parametrize("bad", ["<script>alert(1)</script>", "nan", "1e400", "-inf", ""])
def test_weighted_fisher_hostile_url_values(bad):
    at = _run(tab="Weighted Fisher", wM=bad, wrho=bad, wsd1=bad, wsd2=bad, m11=bad, m12=bad, m22=bad)
    assert not at.exception and not _texts(at)
    assert at.query_params["wM"] == "target_cov"
    at = _run(tab="Weighted Fisher", wM="custom", m11=bad, m12=bad, m22=bad)
    assert not at.exception and not _texts(at)  # unusable numbers fall back to the default (positive-definite) M
    assert [at.number_input(key=k).value for k in ("m11", "m12", "m22")] == [1.0, 0.5, 2.0]
    assert "weighted Fisher, your M" in _names(at)


# ------------------------------------------------------------------ gradient noise tab (issue 16)


def test_gradient_noise_default_view_is_the_papers_german_credit_target():
    at = _run(tab="Gradient noise")
    assert not at.exception and not _texts(at)
    assert at.query_params["gtg"] == "German credit" and at.query_params["gT"] == "10"
    note = next(i.value for i in at.info if "Median standard deviation" in i.value)
    # the paper's Fig. 4: KL least noisy, then score-based, Fisher far above, for mu and for T
    assert note.count("(KL(q‖p) < score-based < Fisher)") == 2
    assert any("German-credit posterior" in c.value and "0.52 to 148.82" in c.value for c in at.caption)


def test_gradient_noise_stand_in_view():
    at = _run(tab="Gradient noise", gtg="stand-in")
    assert not at.exception and not _texts(at)
    assert at.query_params["gT"] == "10" and at.query_params["gn"] == "1000"
    names = _names(at)
    for m in ("kl", "fisher", "score"):
        assert f"{plots.label(m)}, formula" in names and f"{plots.label(m)}, Monte Carlo" in names
    note = next(i.value for i in at.info if "Median standard deviation" in i.value)
    assert "KL 7," in note and "Fisher 291" in note and "score-based 2.91" in note
    assert "19 of 49 coordinates (those with Λᵢᵢ > t²/2 = 50)" in note
    assert "1000 Monte Carlo draws" in note
    table = _table_with(at, "μ: median s.d. (formula)")
    assert table.loc[plots.label("fisher"), "μ: median s.d. (formula)"] == pytest.approx(290.6, rel=1e-3)
    mc = table["μ: median s.d. (Monte Carlo)"] / table["μ: median s.d. (formula)"]
    assert ((mc - 1).abs() < 0.06).all()  # 1000 draws: the markers sit on the lines
    assert any("0.52 to 148.8" in c.value and "45.68" in c.value for c in at.caption)


@pytest.mark.parametrize("params", [dict(gT=0.1, gcor=0.9, gn=4000, gdm=2, gtg="stand-in"),
                                    dict(gT=100, gcor=-0.9, gn=250, gdm=-2, gtg="stand-in"), dict(gT=0.1, gn=250),
                                    dict(gT=100, gn=4000)])
def test_gradient_noise_extremes(params):
    at = _run(tab="Gradient noise", **params)
    assert not at.exception and not _texts(at)
    assert float(at.query_params["gT"]) == params["gT"] and at.query_params["gn"] == str(params["gn"])
    assert any("Median standard deviation" in i.value for i in at.info)


def test_gradient_noise_widgets_move():
    at = _run(tab="Gradient noise", gtg="stand-in")
    at.select_slider(key="gT").set_value(0.1).run()
    at.slider(key="gcor").set_value(0.9).run()
    at.selectbox(key="gn").set_value(250).run()
    at.slider(key="gdm").set_value(-2.0).run()
    assert not at.exception and not _texts(at)
    note = next(i.value for i in at.info if "Median standard deviation" in i.value)
    # a wide q (t = 0.1): the score-based gradients, KL's times 2ΛΣ = 2Λ/t², are now the noisiest
    assert "250 Monte Carlo draws" in note and "(KL(q‖p) < Fisher < score-based)" in note
    assert float(at.query_params["gT"]) == 0.1 and at.query_params["gn"] == "250"


@pytest.mark.parametrize("bad", ["<script>alert(1)</script>", "nan", "1e400", "-5", "7"])
def test_gradient_noise_hostile_url_values(bad):
    at = _run(tab="Gradient noise", gT=bad, gcor=bad, gn=bad, gdm=bad, gtg=bad)
    assert not at.exception and not _texts(at)
    assert at.query_params["gn"] == "1000"
    assert any("Median standard deviation" in i.value for i in at.info)


# ------------------------------------------------------------------ objective landscapes tab (issue 16, digest E4)


def test_landscape_default_view():
    at = _run(tab="Objective landscapes")
    assert not at.exception and not _texts(at)
    assert at.query_params["orho"] == "0.9"
    names = _names(at)
    for m in ("kl", "fisher", "score"):
        assert f"{plots.label(m)}: optimum" in names and f"{plots.label(m)}: grid minimum" in names
    assert "score-based: valley reaches Σ₁₁ = 0" in names  # the score valley runs into collapse inside the view
    note = next(i.value for i in at.info if "Each panel is one objective" in i.value)
    # rho = 0.9, unit variances: min S = 2 rho^2/(1 + rho^2) = 0.895, a collapsed q costs (1 - rho^2)/(1 + rho^2) more
    assert "only 0.105 above its minimum 0.895" in note
    assert "score-based < Fisher < KL(q‖p)" in note
    table = _table_with(at, "optimum Σ₁₁")
    assert table.loc[plots.label("fisher"), "optimum Σ₁₁"] == pytest.approx(0.1412, abs=1e-4)
    assert table.loc[plots.label("score"), "best with Σ₁₁ = 0"] == 1.0
    assert table.loc[plots.label("kl"), "best with Σ₁₁ = 0"] == float("inf")


@pytest.mark.parametrize("params", [dict(orho=-0.99, osd1=0.01, osd2=100, odec=3, oval=0, omc=1),
                                    dict(orho=0.99, osd1=100, osd2=0.01, odec=0.5, omc=1), dict(orho=0)])
def test_landscape_extremes(params):
    at = _run(tab="Objective landscapes", **params)
    assert not at.exception and not _texts(at)
    assert any("Each panel is one objective" in i.value for i in at.info)
    if params.get("omc"):
        mc = _table_with(at, "score-based: Monte Carlo")
        assert len(mc) == 3 and (mc["score-based: ± s.e."] > 0).all()


def test_landscape_widgets_move():
    at = _run(tab="Objective landscapes")
    at.slider(key="orho").set_value(0.3).run()
    at.select_slider(key="osd2").set_value(100.0).run()
    at.toggle(key="oval").set_value(False).run()
    assert not at.exception and not _texts(at)
    assert "score-based: valley reaches Σ₁₁ = 0" not in _names(at)
    assert float(at.query_params["orho"]) == 0.3


@pytest.mark.parametrize("bad", ["<script>alert(1)</script>", "nan", "1e400", "-inf", ""])
def test_landscape_hostile_url_values(bad):
    at = _run(tab="Objective landscapes", orho=bad, osd1=bad, osd2=bad, odec=bad, oval=bad, omc=bad)
    assert not at.exception and not _texts(at)
    assert any("Each panel is one objective" in i.value for i in at.info)


# ------------------------------------------------------------------ Table 6 tab (issue 16)


def test_table6_default_shows_the_papers_numbers_without_running():
    at = _run(tab="Logistic regression")
    assert not at.exception and not _texts(at)
    assert at.checkbox(key="t6").value is False
    table = _table_with(at, "paper, German: M*")
    assert len(table) == 6 and table.loc["score-based, batch (SDb)", "paper, German: M*"] == "8.37 ± 1.28"
    assert "Fisher, stochastic (FDr)" in table.index
    assert any("German credit" in i.value or "paper's numbers" in i.value for i in at.info)


@pytest.mark.parametrize("bad", ["<script>alert(1)</script>", "2", ""])
def test_table6_hostile_url_values(bad):
    at = _run(tab="Logistic regression", t6=bad)
    assert not at.exception and not _texts(at)


def test_table6_run_is_drawn(monkeypatch):
    """The run itself takes about a minute (tests/test_divergence_landscape.py runs a reduced one): here a
    stand-in result checks the page's drawing of it."""
    from vilab.divergences import landscape as dvl

    rows = {k: {"M*": (8.0 - i, 0.5), "mode": (0.07, 0.03), "seconds": 1.0, "iterations": 7000, "status": "converged",
                "sd_ratio": 1.0} for i, k in enumerate(dvl.TABLE6_METHODS)}
    fake = {"rows": rows, "model": "German credit", "d": 49, "n": 1000, "settings": "stand-in settings"}
    monkeypatch.setattr(dvl, "table6", lambda key, *a, **k: fake)
    at = _run(tab="Logistic regression", t6=1, seed=987654)
    assert not at.exception and not _texts(at)
    table = _table_with(at, "ours: M*")
    assert table.loc["KL(q‖p), stochastic (KLD)", "ours: M*"] == "8.00 ± 0.50"
    note = next(i.value for i in at.info if "Higher M*" in i.value)
    assert "KL(q‖p), stochastic scores best (8.00)" in note
