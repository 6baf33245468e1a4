"""AppTest of the Flows and guarantees page (Kumar et al. 2025): default view, extreme widget values,
Theorem 1 / Lemma 1 messages, VN vs SR-VN counts."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.charts import charts
from vilab import plots

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "27_Flows_and_guarantees.py")


def _app(**params):
    at = AppTest.from_file(PAGE, default_timeout=600)
    for k, v in params.items():
        at.query_params[k] = v if isinstance(v, list) else str(v)
    return at.run()


VN_TAB, THM_TAB, CVX_TAB, LR_TAB = ("VN vs SR-VN", "Theorems 2 and 3", "Convexity in v vs σ",
                                  "Logistic regression (Sec. 6)")
# the charts of each tab below the KL figure (only the open tab is drawn): two path panels and the O(rho^2) gap;
# Theorems 2-3; the convexity pair; the logistic regression tab's ELBO, NLL and cost per step
CHARTS = {VN_TAB: 1 + 3, THM_TAB: 1 + 1, CVX_TAB: 1 + 2}


def _errors(at):
    return [e.value for e in at.error] + [str(e.value) for e in at.exception]


def _spec(at, i):
    return charts(at)[i].spec


def test_flows_default_view():
    """T2 from C_0 = 0.2 I: the KL chart has the three flows, three discrete methods, e^{-2t} and both
    Theorem 1 bounds; Lemma 1 holds (lambda_min = 0.029 < 1); at rho = 1 VN takes 1 step, SR-VN 7."""
    at = _app()
    assert not at.exception and not _errors(at)
    assert len(charts(at)) == CHARTS[VN_TAB]  # the first tab below the KL figure is VN vs SR-VN
    assert at.tabs[0].label == VN_TAB and at.query_params["lt"] in (VN_TAB, [VN_TAB])
    fig = json.loads(_spec(at, 0))
    names = [d["name"] for d in fig["data"]]
    assert names == ["natural flow", "Wasserstein flow", "Euclidean (m, V) flow", "VN", "SR-VN", "BW-GD",
                     "e<sup>-2t</sup>", "Thm 1 bound (printed μ)", "Thm 1 bound (corrected μ)"]
    theorem = next(m.value for m in at.markdown if "Theorem 1 of Kumar" in m.value)
    assert "**0.000509**" in theorem and "**0.0176**" in theorem  # the printed and corrected rates mu
    # one visual language: the natural flow and VN blue, the Wasserstein flow and BW-GD purple dotted
    by = {d["name"]: d for d in fig["data"]}
    assert by["natural flow"]["line"]["color"] == plots.color("vn") == by["VN"]["marker"]["color"]
    assert by["Wasserstein flow"]["line"]["dash"] == "dot"
    assert by["BW-GD"]["marker"]["color"] == plots.color("bwgd")
    assert by["VN"]["marker"]["size"] > by["SR-VN"]["marker"]["size"]  # VN shows as a ring around SR-VN
    assert not any(c in " ".join(names) for c in ("vn,", "srvn", "bwgd", "rho"))  # readable names only
    assert any("Lemma 1 bound" in i.value and "true but smaller" in i.value for i in at.info)
    # what to notice: why the natural flow is slower in flow time on T2 (lambda_min(A) = 1.22 > 1)
    notice = next(i.value for i in at.info if "What to notice" in i.value and "flow time" in i.value)
    assert "λ_min = 1.22" in notice and "slowest" in notice and "1/λ_max = 0.0288" in notice
    df = at.dataframe[0].value
    at_one = df[df["ρ"] == "1"].set_index("method")["steps to KL < 1e-8"]
    assert at_one.to_dict() == {"VN": "1", "SR-VN": "7"}
    assert set(df[df["ρ"] == "1e-05"]["steps run"]) == {600000}
    assert any("0.0259" in i.value or "0.026" in i.value for i in at.info)
    text = " ".join(str(m.value) for m in list(at.markdown) + list(at.caption) + list(at.info))
    assert "digest" not in text and "vilab." not in text


def test_flows_convexity_tab():
    """The convexity tab from the URL: |theta| at m = 0, where d2L/dv2 < 0 from v = 2 pi on."""
    at = _app(lt=CVX_TAB)
    assert not at.exception and not _errors(at)
    assert len(charts(at)) == CHARTS[CVX_TAB]
    notices = [i.value for i in at.info if "What to notice" in i.value]
    assert "v ≥ 6.3" in next(n for n in notices if "bend downward" in n)
    assert any("positive on the whole grid" in n for n in notices)
    assert [d["name"] for d in json.loads(_spec(at, 1))["data"]] == ["L against the scale σ",
                                                                     "L against the variance v = σ²"]


def test_flows_page_says_where_lemma1_fails():
    at = _app(tgt="correlated Gaussian", kappa=1.78, scale=3.16, c0=3.0)
    assert not at.exception and not _errors(at)
    assert any("Lemma 1 is false" in w.value for w in at.warning)
    # a flat target (every curvature below 1): the notice says the natural flow is the fastest here
    assert any("What to notice" in i.value and "the natural flow is the fastest" in i.value for i in at.info)


def test_flows_widgets_round_trip_through_the_url():
    params = dict(T=5.0, rho=0.1, tgt="correlated Gaussian", kappa=100.0, scale=3.16, fl=["natural", "Euclidean (m, C)"],
                  dm=["gd-mc", "fbgvi"], m1=1.5, m2=-3.0, c0=0.5, rs=1e-3, rl=0.5)
    at = _app(**params)
    assert not at.exception and not _errors(at)
    for k, v in params.items():  # the page writes back exactly what the URL asked for
        got = at.query_params[k]
        got = list(got) if isinstance(got, (list, tuple)) else [got]
        if isinstance(v, list):
            assert got == v, k
        elif isinstance(v, str):
            assert got == [v], k
        else:
            assert float(got[0]) == pytest.approx(v), k
    assert at.multiselect(key="dm").value == ["gd-mc", "fbgvi"] and at.slider(key="T").value == 5.0
    # mixed curvatures (lambda from 0.1 to 10): the notice names the flattest direction's rate
    assert any("What to notice" in i.value and "e^(-2 λ_min t)" in i.value for i in at.info)


@pytest.mark.parametrize("params", [dict(T="inf", rho="-1", fl=["nope"], dm=["<script>"], tgt="x", m1="nan",
                                         lt="<img src=x>", cl="[a](javascript:x)", cw="nan", cm="inf"),
                                    dict(T="1e400", c0="0", kappa="1e9", rs="abc", rl="2", lt="Logistic", cl="abs",
                                         cw="-3", cm="1e9", ds="iris", lit="-5", sx="abc", nc="maybe")])
def test_flows_hostile_url_values_fall_back(params):
    at = _app(**params)
    assert not at.exception and not _errors(at)
    assert len(charts(at)) == CHARTS[VN_TAB]  # an unknown tab opens the first


@pytest.mark.parametrize("params", [
    dict(rho=1e-3, dm=["vn", "srvn", "gd-mv", "gd-mc", "bwgd", "fbgvi"], T=20.0, rs=1e-2, rl=0.1),
    dict(rho=1.0, dm=["vn", "srvn", "gd-mv", "gd-mc", "bwgd", "fbgvi"], fl=["natural", "Euclidean (m, C)"], T=1.0),
    dict(c0=5.0, m1=10.0, m2=-10.0, rs=1e-4, rl=0.5, cl="logistic", cw=100.0, cm=-3.0, lt=CVX_TAB),
    dict(c0=0.05, fl=["Wasserstein"], dm=["gd-mv"], rho=1.0, cl="logistic", cw=0.1, cm=3.0, lt=CVX_TAB),
    dict(c0=5.0, m1=10.0, m2=-10.0, t3rho=0.1, bg=1.0, eh=1.0, lt=THM_TAB),
    dict(tgt="correlated Gaussian", kappa=1000.0, scale=0.1, rho=1e-3, rl=1.0),
    dict(tgt="correlated Gaussian", kappa=1.0, scale=10.0, c0=5.0, fl=[], dm=[]),
])
def test_flows_extremes(params):
    at = _app(**params)
    assert not at.exception and not _errors(at)
    assert len(charts(at)) == CHARTS[params.get("lt", VN_TAB)]


def _thm3_notice(at):
    return next(i.value for i in at.info if "What to notice" in i.value and "η =" in i.value)


def _thm3_names(at):
    return [d["name"] for d in json.loads(_spec(at, 1))["data"]]


def test_theorems_2_and_3_default_view():
    """SR-VN on T2 from C_0 = 0.2 I at rho = 1e-3: eta = 1.64e-5 and 1 - 2 eta delta = 0.999960 (Eq. 25, computed
    by us); the exact run stays under Thm 2's line, the biased one (|b| = 0.3) under our Thm 3 bound (the paper's is
    not a bound) and settles at 1/2 b^T A^-1 b (computed here independently); the caption gives the counterexample."""
    import numpy as np

    from vilab.targets.papers import kumar_t2

    at = _app(lt=THM_TAB)
    assert not at.exception and not _errors(at)
    assert _thm3_names(at) == ["SR-VN, exact oracle", "SR-VN, biased oracle", "Thm 2 bound", "Thm 3 bound (ours, valid)",
                               "Thm 3 bound (printed)"]
    notice = _thm3_notice(at)
    assert "η = 1.64e-05" in notice and "1 − 2ηδ = 0.999960" in notice
    assert "stays under the Thm 2 line" in notice and "stays under it." in notice
    tgt = kumar_t2()
    b = 0.3 * np.array([0.6, 0.8])
    settles = 0.5 * b @ np.asarray(tgt.cov) @ b  # A^-1 = the posterior covariance
    assert f"½ bᵀA⁻¹b = {settles:.3g}" in notice
    level = float(notice.split("levels off at KL ≈ ")[1].split(" ")[0])
    assert abs(level - settles) < 0.01 * settles  # the run settles where the closed form says
    assert "1 − ρδλ_min/2 = 0.99" in notice and "the run stays under it." in notice
    caption = " ".join(c.value for c in at.caption)
    assert "not a bound" in caption and "A = diag(1, 20)" in caption and "4.15" in caption and "1.74" in caption


def test_theorems_2_and_3_large_step_and_no_bias():
    at = _app(t3rho="0.1", bg="0", lt=THM_TAB)
    assert not at.exception and not _errors(at)
    assert _thm3_names(at) == ["SR-VN, exact oracle"]  # no bias: one run; eta <= 0: no bound to draw
    assert "say nothing" in _thm3_notice(at) and "η > 0 needs ρ <" in _thm3_notice(at)


@pytest.mark.parametrize("params", [dict(t3rho="abc", bg="-5", eh="1e9"), dict(t3rho="-1", bg="nan", eh="inf"),
                                    dict(t3rho="1e-4", bg="1", eh="1")])
def test_theorems_2_and_3_hostile_and_extreme_values(params):
    at = _app(lt=THM_TAB, **params)
    assert not at.exception and not _errors(at)
    assert _thm3_names(at)[0] == "SR-VN, exact oracle"



@pytest.mark.parametrize("params", [dict(lit=200, nc="1", sx=100.0)])
def test_logistic_tab_extreme_steps_and_the_nonconvex_term(params):
    """The logistic tab from the URL with 100 x Table 2's steps and App. H's term: no exception; a run that
    leaves the Gaussian family is reported, never raised; VN, SR-VN and BW-GD keep their looks."""
    at = _app(lt=LR_TAB, **params)
    assert not at.exception and not _errors(at)
    assert at.query_params["lt"] == [LR_TAB] or at.query_params["lt"] == LR_TAB
    specs = [json.loads(c.spec) for c in charts(at)]
    elbo = next(f for f in specs if "negative ELBO" in json.dumps(f["layout"].get("yaxis", {})))
    lines = {d["name"]: d for d in elbo["data"] if d.get("mode") == "lines"}
    assert set(lines) <= {"VN", "SR-VN", "BW-GD"} and "VN" in lines
    assert lines["VN"]["line"]["color"] == plots.color("vn")
    assert any("Test NLL is a sum" in i.value for i in at.info)
    assert any("diverged" in w.value.lower() or "left" in w.value.lower() for w in at.warning)  # SR-VN at rho = 0.5
    text = " ".join(str(m.value) for m in list(at.markdown) + list(at.caption) + list(at.info))
    assert "vilab." not in text and "srvn" not in text


def _table3_frame(at):
    return next((d.value for d in at.dataframe if "Table 3 prints" in d.value.columns), None)


def test_logistic_tab_libsvm_data_from_the_url_and_table3_band():
    """?ds=breast-cancer-libsvm: the paper's own file; Table 3's printed values beside their range over 50
    splits, the negative ELBO with Sec. 1's constant marked outside (52.86 > every split's value)."""
    at = _app(lt=LR_TAB, ds="breast-cancer-libsvm", lit=200)
    assert not at.exception and not _errors(at)
    assert at.radio(key="ds").value == "breast-cancer-libsvm"
    df = _table3_frame(at)
    assert df is not None and list(df["Table 3 prints"]) == ["52.86", "52.86", "13.62", "0.956"]
    assert list(df["inside the range?"]) == ["NO", "yes", "yes", "yes"]
    assert all(float(a) <= float(b) <= float(c) for a, b, c in zip(df["min"], df["median"], df["max"]))
    notes = " ".join(i.value for i in at.info)
    assert "These are the paper's data" in notes and "Outside the range" in notes and "does not say which" in notes
    text = " ".join(str(m.value) for m in list(at.markdown) + list(at.caption) + list(at.info))
    assert "vilab." not in text and "srvn" not in text and "libsvm" not in text


@pytest.mark.parametrize("ds,exact", [("<img src=x>", True), ("pima", False)])
def test_logistic_tab_data_choice_hostile_and_analogue(ds, exact):
    """A hostile ?ds= falls back to the default (the paper's Diabetes-scale file, every Table 3 value inside its
    range); an analogue shows no Table 3 band and says it is an analogue."""
    at = _app(lt=LR_TAB, ds=ds, lit="abc")
    assert not at.exception and not _errors(at)
    df = _table3_frame(at)
    if exact:
        assert at.radio(key="ds").value == "diabetes-scale"
        assert list(df["Table 3 prints"]) == ["301.18", "301.18", "79.72", "0.74"]
        assert set(df["inside the range?"]) == {"yes"}
    else:
        assert df is None and any("an analogue" in i.value for i in at.info)
