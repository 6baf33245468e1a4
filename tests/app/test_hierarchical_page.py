"""AppTest of pages/80_Hierarchical_models.py: default view, the state-space model, extreme widget values,
a failing method, the batch size's default per model."""

from tests.app.charts import charts
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "80_Hierarchical_models.py")


def _texts(at):
    return " ".join(x.value for x in list(at.caption) + list(at.markdown) + list(at.warning) + list(at.error))


@pytest.mark.slow
def test_default_view():
    at = AppTest.from_file(PAGE, default_timeout=600).run()
    assert not at.exception and not at.error
    assert len(at.dataframe) == 1
    table = at.dataframe[0].value
    assert list(table["method"]) == ["SNNGM", "KLD", "SDb"]
    assert len(charts(at)) == 3  # ELBO, marginals, sparsity
    assert "h = sqrt(d)" in _texts(at) and "R-hat" in _texts(at)
    notes = [i.value for i in at.info if "What to notice" in i.value]
    assert len(notes) == 4  # under the ELBO, the marginals, the table and the sparsity patterns
    assert any("Final ELBO: SNNGM" in n for n in notes)


@pytest.mark.slow
def test_state_space_and_extremes():
    at = AppTest.from_file(PAGE, default_timeout=600).run()
    at.slider(key="iters").set_value(2000)
    at.multiselect(key="m_epi1").set_value(["VOGN", "BaM", "FDr"]).run()
    assert not at.exception and not at.error
    at.radio(key="data").set_value("Stochastic volatility, GBP (n = 945)").run()
    assert not at.exception and not at.error
    assert "Not offered for this model" in _texts(at) and "VOGN" in _texts(at)
    assert at.slider(key="B_sv_gbp").value == 10  # the papers' B for stochastic volatility (5 for the GLMMs)
    at.multiselect(key="m_sv_gbp").set_value(["SNNGM", "SDb"])
    at.slider(key="B_sv_gbp").set_value(2).run()
    at.select_slider(key="a0").set_value(0.1).run()
    at.slider(key="budget").set_value(5).run()
    assert not at.exception and not at.error
    assert list(at.dataframe[0].value["method"]) == ["SNNGM", "SDb"]
    at.multiselect(key="v_sv_gbp").set_value([]).run()
    at.multiselect(key="m_sv_gbp").set_value([]).run()
    assert not at.exception and not at.error
    assert any("at least one method" in x.value for x in at.info)


def test_batch_size_default_follows_the_model():
    """B defaults to the papers' value of each model (5 for the GLMMs, 10 for stochastic volatility),
    also when the model is switched back and forth (no methods chosen: nothing is fitted)."""
    at = AppTest.from_file(PAGE, default_timeout=600)
    at.query_params.update({"m_epi1": "", "m_sv_gbp": ""})
    at.run()
    assert not at.exception and not at.error
    assert at.slider(key="B_epi1").value == 5
    at.slider(key="B_epi1").set_value(7).run()
    at.radio(key="data").set_value("Stochastic volatility, GBP (n = 945)").run()
    assert not at.exception and not at.error
    assert at.slider(key="B_sv_gbp").value == 10
    assert at.multiselect(key="v_sv_gbp").value and len(charts(at)) == 2  # marginals, sparsity
    at.radio(key="data").set_value(at.radio(key="data").options[0]).run()
    assert at.slider(key="B_epi1").value == 7 and at.query_params["B_epi1"] == "7"


def test_a_failing_method_warns_and_the_others_are_drawn(monkeypatch):
    """One guard per method: KLD failing shows its own warning; SNNGM's ELBO curve, marginals, table row,
    the Variables choice and the sparsity figure are all still drawn."""
    import streamlit as st

    import vilab.hierarchical.fit as hfit

    real = hfit.fit

    def fit(model, method, **kw):
        if method == "kld":
            raise ValueError("KLD fails on purpose in this test.")
        return real(model, method, **kw)

    monkeypatch.setattr(hfit, "fit", fit)  # the page imports fit from this module on every run
    st.cache_data.clear()  # no cached KLD result from another test
    st.cache_resource.clear()  # nor a longer KLD run the page would continue or cut (its shared store)
    at = AppTest.from_file(PAGE, default_timeout=600)
    at.query_params.update({"iters": "2000", "m_epi1": ["SNNGM", "KLD"]})
    at.run()
    assert not at.exception and not at.error
    assert "KLD: KLD fails on purpose in this test." in [w.value for w in at.warning]
    assert not any("SNNGM" in w.value for w in at.warning)
    assert list(at.dataframe[0].value["method"]) == ["SNNGM"]
    assert len(charts(at)) == 3  # ELBO, marginals, sparsity
    assert at.multiselect(key="v_epi1").value


def test_the_elbo_figure_is_the_main_figure_beside_the_controls():
    """Controls in the left column, the ELBO figure (the page's main figure) in the right one; the
    accuracy table goes through ui.table; a failing-free short run draws every notice."""
    import json

    at = AppTest.from_file(PAGE, default_timeout=600)
    at.query_params.update({"iters": "2000", "m_epi1": ["SNNGM", "KLD"]})
    at.run()
    assert not at.exception and not at.error
    cols = at.columns
    assert len(cols) >= 2
    assert cols[0].radio(key="data") is not None and cols[0].multiselect(key="m_epi1") is not None
    elbo = charts(cols[1])
    assert len(elbo) == 1 and "Lower bound (ELBO) against time" in elbo[0].spec
    spec = json.loads(elbo[0].spec)
    lines = {t["name"]: (t["line"]["color"], t["line"].get("dash")) for t in spec["data"]}
    assert lines["SNNGM"] != lines["KLD"]  # same blue in the theme: told apart by dash
    assert sum("What to notice" in i.value for i in at.info) == 4


@pytest.mark.parametrize("method, kw", [("kld", {}), ("gva-snngm", {"alpha": 0.03})])
def test_refit_gives_the_numbers_of_a_new_run(method, kw):
    """The page moves the maximum of iterations by continuing or cutting the longest run so far
    (vilab.hierarchical.fit.refit): every derived Trace equals a fresh fit with that maximum, the stopping
    rule's decision included (the rule is checked between windows, never at a run's last iteration)."""
    import jax
    import numpy as np

    from vilab.hierarchical.fit import fit, prefix, refit
    from vilab.hierarchical.models import get_model

    model, key = get_model("epi1"), jax.random.PRNGKey(3)
    opts = dict(key=key, tol=5.0, window=100, max_seconds=600.0, **kw)  # a loose rule: SNNGM stops early

    def same(a, b):
        assert (a.status, a.n_steps) == (b.status, b.n_steps)
        np.testing.assert_array_equal(a.iterations, b.iterations)
        for k in ("elbo", "factor"):
            np.testing.assert_array_equal(np.asarray(a.extra[k]), np.asarray(b.extra[k]))
        np.testing.assert_array_equal(a.mean, b.mean)
        np.testing.assert_array_equal(a.step_sizes, b.step_sizes)
        assert len(b.extra["seconds"]) == b.n_rows and a.settings["n_steps"] == b.settings["n_steps"]

    short, long_ = fit(model, method, n_iter=600, **opts), fit(model, method, n_iter=1500, **opts)
    same(long_, refit(model, method, short, n_iter=1500, **opts))  # continued
    same(short, refit(model, method, long_, n_iter=600, **opts))  # cut
    mid = refit(model, method, long_, n_iter=900, **opts)
    same(fit(model, method, n_iter=900, **opts), mid)
    assert prefix(long_, 950) is None  # no row there: refit runs anew
    same(fit(model, method, n_iter=950, **opts), refit(model, method, long_, n_iter=950, **opts))
    assert refit(model, method, long_, n_iter=2000, **{**opts, "tol": None}).status == "max_steps"  # other rule: new run


# ------------------------------------------------------------------------------- deep GLMs
_QUIET = {"m_epi1": ""}  # no hierarchical fit: the deep-GLM part is what these tests look at


def test_deep_glm_part_is_there_and_trains_nothing_until_asked():
    at = AppTest.from_file(PAGE, default_timeout=600)
    at.query_params.update(_QUIET)
    at.run()
    assert not at.exception and not at.error
    assert at.radio(key="dg_data").value.startswith("Simulated binary")
    assert at.multiselect(key="dg_m").value == ["SNNGM", "Adam"]
    assert any("Train the deep GLMs" in x.value for x in at.info)
    assert len(charts(at)) == 2  # marginals, sparsity: no deep-GLM figure before training
    assert "deep GLMs" in " ".join(x.value for x in at.caption)


def test_deep_glm_trains_every_optimizer_at_extreme_settings():
    """All six optimizers, the largest step sizes and epochs on the smallest data, then the smallest: no
    exception; the two figures and the notice are drawn (a diverging run only warns)."""
    import json

    at = AppTest.from_file(PAGE, default_timeout=600)
    at.query_params.update({**_QUIET, "dg_data": "Simulated real response (depends on x1-x10)",
                            "dg_m": ["Adam", "PGA", "NAdam", "SNNGM", "NAGM", "VOGN"], "dg_n": "2000", "dg_p": "20",
                            "dg_B": "1000", "dg_ep": "200", "dg_a": "10", "dg_budget": "5"})
    at.run()
    assert not at.exception and not at.error
    at.button(key="dg_train").click().run()
    assert not at.exception and not at.error
    drawn = charts(at)
    assert len(drawn) == 4
    specs = [json.loads(c.spec) for c in drawn]
    elbo = next(s for s in specs if "Average lower bound" in json.dumps(s.get("layout", {}).get("title", "")))
    names = {t["name"] for t in elbo["data"]}
    assert names <= {"Adam", "PGA", "NAdam", "SNNGM", "NAGM", "VOGN"} and "SNNGM" in names
    assert any("Relevant inputs whose" in x.value for x in at.info) or any("diverged" in w.value for w in at.warning)
    at.slider(key="dg_ep").set_value(5)
    at.select_slider(key="dg_a").set_value(0.1)
    at.multiselect(key="dg_m").set_value(["SNNGM"]).run()
    assert any("settings have changed" in x.value for x in at.caption)
    at.button(key="dg_train").click().run()
    assert not at.exception and not at.error
    assert len(charts(at)) == 4
    assert any("Relevant inputs whose" in x.value for x in at.info)


def test_deep_glm_hostile_url_values_fall_back_to_defaults():
    at = AppTest.from_file(PAGE, default_timeout=600)
    at.query_params.update({**_QUIET, "dg_data": "<script>alert(1)</script>", "dg_m": ["rm -rf /", "SNNGM"],
                            "dg_ep": "1e400", "dg_a": "nan", "dg_n": "-5", "dg_p": "https://evil.example",
                            "dg_B": "0", "dg_budget": "inf"})
    at.run()
    assert not at.exception and not at.error
    assert at.radio(key="dg_data").value.startswith("Simulated binary")
    assert at.slider(key="dg_ep").value == 60 and at.select_slider(key="dg_a").value == 1.0
    assert at.selectbox(key="dg_n").value == 10000 and at.selectbox(key="dg_B").value == 500
