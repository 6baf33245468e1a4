"""AppTest of the geometry pages: default views, extreme widget values, Table 2 on the vector-field page."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.charts import charts

PAGES = Path(__file__).resolve().parents[2] / "pages"


def _app(name, **params):
    at = AppTest.from_file(str(PAGES / name), default_timeout=600)
    for k, v in params.items():
        at.query_params[k] = str(v)
    return at.run()


def _errors(at):
    return [e.value for e in at.error] + [str(e.value) for e in at.exception]


def _notices(at):
    return [i.value for i in at.info if i.value.startswith("**What to notice.**")]


def _other_info(at):
    return [i.value for i in at.info if not i.value.startswith("**What to notice.**")]


# ------------------------------------------------------------------------------------ vector fields

def test_vector_fields_default_table_is_tan_table2():
    at = _app("10_Vector_fields.py")
    assert not at.exception and not _errors(at)
    table = at.dataframe[0].value
    expected = {  # Tan (2025) Table 2: iterations (smallest rho)
        "(0, 0.1)": ["141 (1e-05)", "15 (1e-02)", "11 (1e-02)", "6 (1e+00)"],
        "(0.5, 0.02)": ["107 (1e-06)", "12 (1e-01)", "8 (1e-01)", "5 (1e+00)"],
        "(2, 0.01)": ["115 (1e-06)", "9 (1e-02)", "8 (1e-01)", "5 (1e+00)"],
    }
    cols = ["Euclidean (κ)", "natural (κ)", "natural (ξ)", "natural (λ)"]  # readable names of the four rules
    got = {i: [table.loc[i, c] for c in cols] for i in expected}
    assert got == expected
    assert table["on the plot"].tolist() == ["1 ■", "2 ◆", "3 ▲"]  # each start's numbered shape
    # one figure, both fields side by side, in the main-figure container; a what-to-notice line with the counts
    assert len(charts(at)) == 1
    notice = _notices(at)
    assert len(notice) == 1 and "107 to 141 steps" in notice[0] and "5 to 6" in notice[0]
    # the default chart spreads the small variances: (mu, log sigma^2), with the variances as tick labels
    assert at.selectbox(key="chart").value == "(mu, log sigma^2)"
    spec = charts(at)[0].spec
    assert '"ticktext"' in spec and "Euclidean gradient field" in spec and "natural gradient field" in spec


def test_vector_fields_cholesky_rules_table():
    """The Cholesky rules (C = sigma, T = 1/sigma, Corollary 1) with Table 2's settings (Tan digest Sec. 6, E1)."""
    at = AppTest.from_file(str(PAGES / "10_Vector_fields.py"), default_timeout=600)
    at.query_params["rules"] = ["Cholesky C = sigma (Thm 1(i))", "Cholesky T = 1/sigma (Thm 1(ii))", "T with Corollary 1"]
    at.run()
    assert not at.exception and not _errors(at)
    table = at.dataframe[0].value.drop(columns="on the plot")
    assert list(table.columns) == ["natural (C = σ)", "natural (T = 1/σ)", "natural (T, Cor. 1)"]
    assert table.loc["(0, 0.1)"].tolist() == ["9 (1e-02)", "12 (1e-02)", "8 (1e-01)"]
    assert table.loc["(0.5, 0.02)"].tolist() == ["10 (1e-01)", "8 (1e-01)", "6 (1e-01)"]
    assert table.loc["(2, 0.01)"].tolist() == ["5 (1e-01)", "7 (1e-01)", "6 (1e+00)"]


CHARTS = ["(mu, sigma^2)", "(mu, sigma)", "(mu, log sigma)", "natural (mu/sigma^2, -1/(2 sigma^2))", "(mu, log sigma^2)"]


@pytest.mark.parametrize("params", [
    dict(chart=CHARTS[2], norm=0, rules="Cholesky C = sigma (Thm 1(i))"),
    dict(chart=CHARTS[3], tgt="Gaussian N(m, 1/a)", a=0.04),  # tiny a
    dict(chart=CHARTS[1], tgt="Gaussian N(m, 1/a)", a=400.0, rule="fixed", rho=1e-6),  # huge a, smallest step
    dict(chart=CHARTS[3], rule="fixed", rho=1.0, starts="2,0.01; 0,5; -3,1e-5", na=30),  # largest step
    dict(chart=CHARTS[0], tgt="Gaussian N(m, 1/a)", a=400.0, rule="fixed", rho=1.0, na=8),
    dict(chart=CHARTS[4], rule="fixed", rho=1.0, starts="2,0.01; 0,5; -3,1e-5", na=30, norm=0),  # log variance, largest step
    dict(chart=CHARTS[4], tgt="Gaussian N(m, 1/a)", a=0.04, starts="50,1000; -50,1e-6"),  # the widest window
])
def test_vector_fields_extremes(params):
    at = AppTest.from_file(str(PAGES / "10_Vector_fields.py"), default_timeout=600)
    for k, v in params.items():
        at.query_params[k] = str(v) if k != "rules" else [v]
    at.run()
    assert not at.exception and not _errors(at)
    assert len(charts(at)) == 1
    default = "a;b" if params.get("tgt", "").startswith("Gaussian") else "a;b;c"
    assert len(at.dataframe[0].value) == len(params.get("starts", default).split(";"))


def test_vector_fields_changing_a_and_the_chart_redraws():
    at = _app("10_Vector_fields.py", tgt="Gaussian N(m, 1/a)")
    before = at.dataframe[0].value.copy()
    for a in (0.04, 400.0):
        at.select_slider(key="a").set_value(a).run()
        assert not at.exception and not _errors(at)
    assert at.query_params["a"] in ("400", ["400"]) and not at.dataframe[0].value.equals(before)
    for chart in CHARTS:
        at.selectbox(key="chart").set_value(chart).run()
        assert not at.exception and not _errors(at)


def test_vector_fields_number_inputs_add_a_start_and_reset_restores_the_paper_starts():
    at = _app("10_Vector_fields.py")
    at.number_input(key="nmu").set_value(1.5)
    at.number_input(key="ns2").set_value(0.03)
    at.button(key="add_start").click().run()
    assert not at.exception
    assert at.text_input(key="starts").value == "0,0.1; 0.5,0.02; 2,0.01; 1.5,0.03"
    assert at.query_params["starts"] in ("0,0.1; 0.5,0.02; 2,0.01; 1.5,0.03", ["0,0.1; 0.5,0.02; 2,0.01; 1.5,0.03"])
    assert list(at.dataframe[0].value.index) == ["(0, 0.1)", "(0.5, 0.02)", "(2, 0.01)", "(1.5, 0.03)"]
    at.button(key="reset_starts").click().run()
    assert at.text_input(key="starts").value == "0,0.1; 0.5,0.02; 2,0.01" and len(at.dataframe[0].value) == 3


def test_vector_fields_a_ninth_start_is_refused_and_extra_typed_starts_are_reported():
    """At most 8 starts are drawn: 'add this start' with 8 in the box says so and adds nothing; a typed
    ninth start is reported as not drawn."""
    eight = "; ".join(f"{0.25 * k:g},0.05" for k in range(8))
    at = _app("10_Vector_fields.py", starts=eight, rules="Natural (lambda)")
    assert not at.exception and not _errors(at)
    assert len(at.dataframe[0].value) == 8 and not _other_info(at)
    assert at.dataframe[0].value["on the plot"].tolist() == ["1 ■", "2 ◆", "3 ▲", "4 ★", "5 ⬟", "6 ⬢", "7 ✚", "8 ✖"]
    at.button(key="add_start").click().run()
    assert not at.exception and not _errors(at)
    assert any("At most 8 starting points" in i.value for i in at.info)
    assert at.text_input(key="starts").value == eight
    at.text_input(key="starts").input(eight + "; 2,0.01").run()
    assert not at.exception and not _errors(at)
    assert any("Only the first 8 of the 9 starting points are drawn" in i.value for i in at.info)
    assert len(at.dataframe[0].value) == 8


def test_vector_fields_bad_start_is_a_message():
    at = _app("10_Vector_fields.py", starts="1,-3")
    assert not at.exception
    assert any("positive variance" in w.value for w in at.warning)


def test_vector_fields_url_round_trip_and_hostile_values():
    """The chart, the rules and the target come back from the URL exactly; unknown values fall back to the
    defaults without an error (the old chart names of shared links still work)."""
    at = _app("10_Vector_fields.py", chart="natural (mu/sigma^2, -1/(2 sigma^2))", tgt="Gaussian N(m, 1/a)", a=25)
    assert not at.exception and not _errors(at)
    assert at.selectbox(key="chart").value == "natural (mu/sigma^2, -1/(2 sigma^2))"
    assert at.query_params["chart"] in ("natural (mu/sigma^2, -1/(2 sigma^2))", ["natural (mu/sigma^2, -1/(2 sigma^2))"])
    assert any("straight at the optimum" in n for n in _notices(at))
    at.selectbox(key="chart").set_value("(mu, log sigma^2)").run()
    assert at.query_params["chart"] in ("(mu, log sigma^2)", ["(mu, log sigma^2)"])
    at.multiselect(key="rules").set_value(["Natural (xi)", "T with Corollary 1"]).run()
    assert not at.exception and not _errors(at)
    assert list(at.query_params["rules"]) == ["Natural (xi)", "T with Corollary 1"]
    assert list(at.dataframe[0].value.columns) == ["on the plot", "natural (ξ)", "natural (T, Cor. 1)"]
    at = AppTest.from_file(str(PAGES / "10_Vector_fields.py"), default_timeout=600)
    at.query_params["chart"] = "polar"
    at.query_params["rules"] = ["Natural (kappa)", "<script>", ""]
    at.query_params["tgt"] = "nothing"
    at.query_params["na"] = "1e400"
    at.query_params["rho"] = "-1"
    at.query_params["rule"] = "fixed"
    at.query_params["starts"] = "((((;;; 1e999,1"
    at.run()
    assert not at.exception and not _errors(at)
    assert at.selectbox(key="chart").value == "(mu, log sigma^2)" and at.radio(key="tgt").value.startswith("horseshoe")
    assert at.slider(key="na").value == 17 and at.select_slider(key="rho").value == 0.01
    assert any("could not read" in w.value or "finite" in w.value for w in at.warning)


def test_vector_fields_fixed_step_divergence_is_labelled_inside_the_plot():
    """A fixed step of 1 makes the Euclidean runs leave the Gaussians: a short 'diverged' label, inside the
    plot, with the reason on hover, and the notice says so."""
    at = _app("10_Vector_fields.py", rule="fixed", rho=1.0)
    assert not at.exception and not _errors(at)
    spec = charts(at)[0].spec
    assert '"text":"diverged"' in spec.replace(" ", "") and "hovertext" in spec
    assert any("diverged" in n for n in _notices(at))


# ------------------------------------------------------------------------------------- trajectories

def test_trajectories_default_view():
    """Kumar digest T2 from C_0 = 0.2 I: VN converges in 1 step, SR-VN (rho = 1) in 7 (KL < 1e-8)."""
    at = _app("20_Trajectories.py")
    assert not at.exception and not _errors(at)
    df = at.dataframe[0].value
    its = dict(zip(df["method"], df["iterations"]))
    assert its["VN"] == 1 and its["SR-VN"] == 7 and its["GD in (m, C)"] == its["BW-GD"] == 351
    assert len(charts(at)) == 2
    # the notice says why GD in (m, C) lies under BW-GD, with this view's numbers
    notice = _notices(at)
    assert len(notice) == 1
    assert "GD in (m, C) lies under BW-GD" in notice[0] and "does not involve the covariance" in notice[0]
    assert "1/λ_max = 0.0288" in notice[0] and "VN 1, SR-VN 7" in notice[0]
    # every method's step size is a visible slider (not in an expander), labelled with its readable name
    for m, label in [("vn", "VN"), ("srvn", "SR-VN"), ("gd-mc", "GD in (m, C)"), ("bwgd", "BW-GD")]:
        assert at.select_slider(key=f"s_{m}").label == f"{label}: step size"
    assert all(f"s_{m}" not in {w.key for e in at.expander for w in e.select_slider} for m in ("vn", "bwgd"))


def test_trajectories_view_round_trips_through_the_url_and_hostile_values_fall_back():
    at = _app("20_Trajectories.py", view="step-size sweep", n=100, m="vn")
    assert not at.exception and not _errors(at)
    assert at.radio(key="view").value == "step-size sweep" and len(charts(at)) == 1
    at.radio(key="view").set_value("animation").run()
    assert not at.exception and not _errors(at)
    assert at.query_params["view"] in ("animation", ["animation"])
    assert '"frames"' in charts(at)[0].spec
    at = AppTest.from_file(str(PAGES / "20_Trajectories.py"), default_timeout=600)
    for k, v in {"view": "movie", "tgt": "x", "s_vn": "1e400", "c0": "nan", "k": "-5", "m1": "inf"}.items():
        at.query_params[k] = v
    at.query_params["m"] = ["vn", "not-a-method"]
    at.run()
    assert not at.exception and not _errors(at)
    assert at.radio(key="view").value == "paths" and at.selectbox(key="tgt").value.startswith("Bayesian linear")
    assert at.select_slider(key="s_vn").value == 1.0 and at.slider(key="c0").value == 0.2


@pytest.mark.slow
@pytest.mark.parametrize("params", [
    {"tgt": "correlated Gaussian", "kappa": 1000.0, "s_vn": 1e-4, "s_gd-mc": 1.78, "view": "animation"},
    {"tgt": "Bayesian linear regression (T2)", "m": ["gd-mv", "tan-2E", "fbgvi"], "s_gd-mv": 1.78, "s_tan-2E": 1e-4,
     "s_fbgvi": 1.78, "c0": 0.05, "k": 1},
    {"tgt": "Student-t", "trho": 0.95, "df": 1.0, "m": ["vn", "tan-2N-cor1"], "n": 100, "ns": 1},
    {"tgt": "Student-t", "trho": -0.95, "df": 100.0, "m": ["srvn"], "g_srvn": "second", "ns": 1000, "n": 100},
    {"tgt": "logistic regression (T3)", "m": ["srvn", "fbgvi"], "c0": 5.0, "view": "step-size sweep", "n": 100},
])
def test_trajectories_extremes(params):
    at = AppTest.from_file(str(PAGES / "20_Trajectories.py"), default_timeout=600)
    for k, v in params.items():
        at.query_params[k] = v if isinstance(v, list) else str(v)
    at.run()
    assert not at.exception and not _errors(at)
    assert charts(at)


def test_trajectories_target_sliders_redraw_without_recompiling():
    """Moving the condition number or the Student-t sliders builds a new member of the target's family:
    the figure changes and no loop of vilab.algorithms is traced again (the parameters are run-time data)."""
    from vilab.algorithms import trace_count

    at = _app("20_Trajectories.py", tgt="correlated Gaussian")
    assert not at.exception and not _errors(at)
    specs = [charts(at)[0].spec]
    n_traces = trace_count()
    for kappa in (1000.0, 1.0):
        at.select_slider(key="kappa").set_value(kappa).run()
        assert not at.exception and not _errors(at)
        assert any(f"(condition number {kappa:g})" in n for n in _notices(at))
        specs.append(charts(at)[0].spec)
    assert len(set(specs)) == 3
    assert trace_count() == n_traces

    at.selectbox(key="tgt").set_value("Student-t").run()
    assert not at.exception and not _errors(at)
    specs = [charts(at)[0].spec]
    n_traces = trace_count()
    at.slider(key="trho").set_value(-0.95).run()
    assert not at.exception and not _errors(at)
    specs.append(charts(at)[0].spec)
    for df in (100.0, 1.0):
        at.select_slider(key="df").set_value(df).run()
        assert not at.exception and not _errors(at)
        specs.append(charts(at)[0].spec)
    assert len(set(specs)) == 4
    assert trace_count() == n_traces


@pytest.mark.slow
def test_trajectories_sweep_on_t2_has_the_stability_lines():
    at = _app("20_Trajectories.py", view="step-size sweep", n=300)
    assert not at.exception and not _errors(at)
    assert len(charts(at)) == 1
    spec = charts(at)[0].spec
    for label in ("VN limit", "SR-VN limit", "GD in (m, C), BW-GD limit"):  # Kumar et al. stability limits
        assert label in spec
    notice = _notices(at)
    assert len(notice) == 1 and "GD in (m, C) and BW-GD have the same outcome at 6 of the 8 step sizes" in notice[0]


# ------------------------------------------------------------------- vector fields, step by step

def test_vector_fields_step_by_step_and_a_first_step_size_changed_mid_run():
    """Live view (issue 15): Step / Step ×10 draw the paths up to the iteration; a new ρ₀ mid-run is recorded in
    the URL and the Euclidean paths go on from their iterate with it (a star marks where)."""
    import json

    from vilab.theory.fields import run_1d
    from vilab.targets.papers import horseshoe_crab_toy

    at = _app("10_Vector_fields.py", live=1, starts="0,0.1", rules="Euclidean (kappa)")
    assert not at.exception and not _errors(at)
    assert at.query_params["it"] in ("0", ["0"]) and not at.dataframe  # no table of finished runs here
    at.button(key="vf_step10").click().run()
    at.select_slider(key="rho0").set_value(0.1).run()
    assert not at.exception and at.query_params["lr"] in ("rho0@0:1,10:0.1", ["rho0@0:1,10:0.1"])
    at.button(key="vf_step10").click().run()
    assert not at.exception and not _errors(at)
    spec = json.loads(charts(at)[0].spec)
    stars = [d for d in spec["data"] if "changed" in str(d.get("name"))]
    assert len(stars) == 1  # one path, one change
    tgt = horseshoe_crab_toy()
    first = run_1d("gd-mv", tgt, 0.0, 0.1, 1.0, rel_tol=None, n_steps=10)
    more = run_1d("gd-mv", tgt, float(first.mean[-1, 0]), float(first.cov[-1, 0, 0]), 0.1, rel_tol=None, n_steps=10)
    (path,) = [d for d in spec["data"] if d.get("mode") == "lines+markers" and d.get("name") == "GD in (m, V)"]
    import base64

    import numpy as np

    x = path["x"]
    x = np.frombuffer(base64.b64decode(x["bdata"]), x["dtype"]) if isinstance(x, dict) else np.asarray(x)
    assert len(x) == 21
    np.testing.assert_allclose(x, np.concatenate([first.mean[:, 0], more.mean[1:, 0]]), rtol=1e-12)


@pytest.mark.parametrize("it,lr", [("-1", "rho0@0:5"), ("zz", "rho@0:0.1"), ("2000", "rho0@0:1,3:0.1,2:0.5"),
                                   ("3", "<img src=http://x.example/p.png>"), ("3", "rho0@0:1," * 300)])
def test_vector_fields_step_by_step_hostile_urls(it, lr):
    at = _app("10_Vector_fields.py", live=1, it=it, lr=lr)
    assert not at.exception and not _errors(at)
    assert "lr" not in at.query_params and len(charts(at)) == 1


# -------------------------------------------------------------------------------- positive definite

def test_pd_default_view_reports_indefinite_precision():
    at = _app("25_Positive_definiteness.py")
    assert not at.exception and not _errors(at)
    text = " ".join(m.value for m in at.markdown)
    assert "INDEFINITE" in text and "0.2941" in text


@pytest.mark.parametrize("params", [dict(rho=0.01, th1=-10.0, th2=10.0, s2=0.1), dict(rho=1.5, s2=100.0),
                                    dict(rho=0.59, th1=3.0, th2=0.0, s2=10.0)])
def test_pd_extremes(params):
    at = _app("25_Positive_definiteness.py", **params)
    assert not at.exception and not _errors(at)


@pytest.mark.slow
def test_pd_monte_carlo_mode():
    at = _app("25_Positive_definiteness.py", mode="Monte Carlo", runs=20, steps=5)
    assert not at.exception and not _errors(at)
    at = _app("25_Positive_definiteness.py", mode="Monte Carlo", tgt="two-component mixture", delta=6.0, mrho=1.0,
              runs=10, steps=3)
    assert not at.exception and not _errors(at)
