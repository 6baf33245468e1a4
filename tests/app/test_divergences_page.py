"""AppTest of pages/40_Divergences.py: default view and extreme widget values."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "40_Divergences.py")


def _run(**params):
    at = AppTest.from_file(PAGE, default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = str(v)
    return at.run()


def _texts(at):
    return [w.value for w in at.warning] + [e.value for e in at.error]


def test_default_view():
    at = _run()
    assert not at.exception
    assert not _texts(at)
    assert len(at.dataframe) >= 3
    assert at.slider(key="rho").value == 0.9


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


def test_non_pd_choice_gives_a_message_not_an_exception():
    at = _run()
    at.slider(key="a").set_value(0.99).run()
    at.slider(key="b").set_value(0.99).run()
    at.slider(key="c").set_value(-0.95).run()
    assert not at.exception
    assert any("positive-definite" in t or "positive definite" in t for t in _texts(at))


def test_collapse_point_is_reported():
    at = _run(a=0.8, b=0.8, c=0.3)
    assert not at.exception
    assert any("collapse" in i.value for i in at.info)


def test_univariate_targets_and_batch_panel():
    at = _run(tgt="student_t", nu=2.5)
    assert not at.exception and not _texts(at)
    at = _run(tgt="skew_normal", t=0.5, lam=-5)
    assert not at.exception and not _texts(at)
    at = _run(tgt="log_inverse_gamma", a1=0.6, it=300, B=50, m0=6)
    assert not at.exception and not _texts(at)
    at = _run(it=6, B=2, m0=-6)
    at.checkbox(key="run").check().run()
    assert not at.exception and not _texts(at)
