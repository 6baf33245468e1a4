"""AppTest of the Flows and guarantees page (Kumar et al. 2025): default view, extreme widget values,
Theorem 1 / Lemma 1 messages, VN vs SR-VN counts."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "27_Flows_and_guarantees.py")


def _app(**params):
    at = AppTest.from_file(PAGE, default_timeout=600)
    for k, v in params.items():
        at.query_params[k] = v if isinstance(v, list) else str(v)
    return at.run()


def _errors(at):
    return [e.value for e in at.error] + [str(e.value) for e in at.exception]


def _spec(at, i):
    return at.get("plotly_chart")[i].proto.spec


def test_flows_default_view():
    """T2 from C_0 = 0.2 I: the KL chart has the three flows, three discrete methods, e^{-2t} and both
    Theorem 1 bounds; Lemma 1 holds (lambda_min = 0.029 < 1); at rho = 1 VN takes 1 step, SR-VN 7."""
    at = _app()
    assert not at.exception and not _errors(at)
    assert len(at.get("plotly_chart")) == 4  # KL, two path panels, the O(rho^2) gap
    spec = _spec(at, 0)
    for name in ("natural", "Wasserstein", "Euclidean (m, V)", "vn, rho = 0.0178", "srvn, rho = 0.0178",
                 "bwgd, rho = 0.0178", "e^{-2t}", "printed mu = 0.000509", "corrected mu = 0.0176"):
        assert name in spec, name
    assert any("Lemma 1 bound" in i.value and "true but smaller" in i.value for i in at.info)
    df = at.dataframe[0].value
    at_one = df[df["rho"] == 1.0].set_index("method")["steps to KL < 1e-8"]
    assert at_one.to_dict() == {"vn": "1", "srvn": "7"}
    assert set(df[df["rho"] == 1e-5]["steps run"]) == {600000}
    assert any("0.0259" in c.value or "0.026" in c.value for c in at.caption)


def test_flows_page_says_where_lemma1_fails():
    at = _app(tgt="correlated Gaussian", kappa=1.78, scale=3.16, c0=3.0)
    assert not at.exception and not _errors(at)
    assert any("Lemma 1 is false" in w.value for w in at.warning)


@pytest.mark.parametrize("params", [
    dict(rho=1e-3, dm=["vn", "srvn", "gd-mv", "gd-mc", "bwgd", "fbgvi"], T=20.0, rs=1e-2, rl=0.1),
    dict(rho=1.0, dm=["vn", "srvn", "gd-mv", "gd-mc", "bwgd", "fbgvi"], fl=["natural", "Euclidean (m, C)"], T=1.0),
    dict(c0=5.0, m1=10.0, m2=-10.0, rs=1e-4, rl=0.5),
    dict(c0=0.05, fl=["Wasserstein"], dm=["gd-mv"], rho=1.0),
    dict(tgt="correlated Gaussian", kappa=1000.0, scale=0.1, rho=1e-3, rl=1.0),
    dict(tgt="correlated Gaussian", kappa=1.0, scale=10.0, c0=5.0, fl=[], dm=[]),
])
def test_flows_extremes(params):
    at = _app(**params)
    assert not at.exception and not _errors(at)
    assert len(at.get("plotly_chart")) == 4
