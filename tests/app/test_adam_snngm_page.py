"""AppTest of pages/30_Adam_vs_SNNGM.py: default view, extreme step sizes, every view."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "30_Adam_vs_SNNGM.py")
VIEWS = ["1-D crab toy (Fig. 3)", "2-D logistic regression", "Real data", "Notes on the optimizers"]


def _app():
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.run()
    assert not at.exception, at.exception
    return at


def _text(at):
    return " ".join(str(m.value) for m in list(at.markdown) + list(at.caption) + list(at.warning))


def test_default_view_shows_fig3_with_divergence():
    at = _app()
    df = at.dataframe[0].value
    assert "2197 iterations" in df.to_string() and "767 iterations" in df.to_string()
    assert any("negative sigma^2" in str(w.value) for w in at.warning)


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
    at.button(key="sweep_btn").click().run()
    assert not at.exception, at.exception
    assert len(at.get("plotly_chart")) == n_charts + 1
    at.slider(key="nit").set_value(100).run()
    assert any("settings changed" in str(i.value) for i in at.info)


@pytest.mark.slow
def test_real_data_table8_and_notes():
    at = _app()
    at.radio(key="view").set_value(VIEWS[2]).run()
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

    at.radio(key="view").set_value(VIEWS[3]).run()
    assert len(at.latex) >= 8  # the header's SNNGM rule and each optimizer's update
    assert "not Nesterov" in _text(at)
    at.slider(key="N").set_value(100).run()
    at.slider(key="beta").set_value(0.99).run()
    assert not at.exception, at.exception
    at.slider(key="N").set_value(20000).run()
    at.slider(key="beta").set_value(0.5).run()
    assert not at.exception, at.exception
    assert "43 for N = 10000" in _text(at)
