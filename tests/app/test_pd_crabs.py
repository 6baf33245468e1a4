"""AppTest of the Positive definiteness page's "step sizes on real data (Fig. 2)" view (Tan 2025 Sec. 5)."""

import json

from tests.app.charts import charts
from tests.app.test_atlas_page import _arr
from tests.app.test_pd_sparse import _app, _ok

VIEW = "step sizes on real data (Fig. 2)"


def _figure(at):
    drawn = charts(at)
    assert len(drawn) == 1
    return drawn[0].figure


def test_crab_view_default_model_1():
    at = _app(mode=VIEW)
    _ok(at)
    assert at.radio(key="crm").value.startswith("satellites ~ width")
    fig = _figure(at)
    rho = {t["name"]: _arr(t["y"]) for t in fig["data"] if t.get("showlegend", True) is not False}
    assert rho["T with Corollary 1"] == [1.0] * len(rho["T with Corollary 1"])
    assert rho["T by Theorem 1(ii)"][0] == 1e-4
    notice = " ".join(i.value for i in at.info)
    assert "Corollary 1 takes ρ = 1 at every step" in notice and "-473.2758" in notice


def test_crab_view_model_2_and_hostile_url():
    at = _app(mode=VIEW, crm="satellites ~ colour + width (Model 2, d = 5)")
    _ok(at)
    assert "-481.7599" in " ".join(i.value for i in at.info)
    at = _app(mode=VIEW, crm="<script>alert(1)</script>")
    _ok(at)
    assert at.radio(key="crm").value.startswith("satellites ~ width")  # an unknown value falls back to the default
