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


@pytest.mark.parametrize("params", [dict(tgt="student_t", nu=2.5), dict(tgt="skew_normal", t=0.5, lam=-5),
                                    dict(tgt="log_inverse_gamma", a1=0.6)], ids=lambda p: p["tgt"])
def test_univariate_targets_at_extreme_parameters(params):
    at = _run(**params)
    assert not at.exception and not _texts(at)
    table = next(d.value for d in at.dataframe if "accuracy 1 - IAE/2 (%)" in d.value.index)
    assert list(table.columns) == ["KL(q||p)", "Fisher", "score-based"]
    assert ((table.loc["accuracy 1 - IAE/2 (%)"] > 0) & (table.loc["accuracy 1 - IAE/2 (%)"] <= 100)).all()


@pytest.mark.parametrize("params", [dict(it=300, B=50, m0=6), dict(it=6, B=2, m0=-6)])
def test_batch_panel_extremes_and_runs(params):
    at = _run(**params)
    assert not at.exception and not _texts(at)
    at.checkbox(key="run").check().run()
    assert not at.exception and not _texts(at)


def test_fig1_points_are_clickable():
    """Plotly cannot select heatmap cells: the figure carries a selectable grid-point layer and the
    chart is registered with a point-selection callback (a click moves the a, b sliders)."""
    import base64
    import json

    at = _run(c=0.6)
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
    assert "click a point" in " ".join(m.value for m in at.markdown).lower()
