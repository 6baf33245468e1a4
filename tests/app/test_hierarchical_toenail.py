"""AppTest of the Hierarchical models page on the Toenail data (Tan Table 11, Chen et al. Table 7)."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.app.charts import charts

PAGE = Path(__file__).resolve().parents[2] / "pages" / "80_Hierarchical_models.py"
TOENAIL = "Toenail (random intercept, logistic)"


def test_toenail_default_view_runs_against_its_nuts_reference():
    at = AppTest.from_file(str(PAGE), default_timeout=900)
    at.query_params["data"] = TOENAIL
    at.run()
    assert not at.exception, [str(e.value) for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.radio(key="data").value == TOENAIL
    assert len(charts(at)) >= 2  # ELBO traces, marginals against NUTS
    text = " ".join(i.value for i in at.info)
    assert "Final ELBO: SNNGM" in text and "d = 299" in text
    assert any("beta_Trt_t" in c.value for c in at.caption)
