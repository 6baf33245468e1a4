"""AppTest of the Positive definiteness page's "gradient noise (Thm 2)" view: Tan (2025) Thm 2's first- and
second-order estimates of the factor gradient along a run (vilab.theory.estimator_variance)."""

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.charts import charts
from vilab.theory.estimator_variance import DEMO_TARGETS

PAGES = Path(__file__).resolve().parents[2] / "pages"
VIEW = "gradient noise (Thm 2)"
T_FACTOR = "T (factor of the precision)"


def _app(**params):
    at = AppTest.from_file(str(PAGES / "25_Positive_definiteness.py"), default_timeout=600)
    for k, v in params.items():
        at.query_params[k] = str(v)
    return at.run()


def _ok(at):
    assert not at.exception, [str(e.value) for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert not at.warning, [w.value for w in at.warning]


def _notices(at):
    return [i.value for i in at.info if i.value.startswith("**What to notice.**")]


def test_the_view_is_offered_and_its_default_shows_the_cloud_and_the_spread_along_the_run():
    at = _app(mode=VIEW)
    _ok(at)
    assert VIEW in at.radio(key="mode").options
    assert at.radio(key="etgt").value == DEMO_TARGETS[0] and at.slider(key="eit").value == 2
    assert len(charts(at)) == 2
    notes = " ".join(_notices(at))
    m = re.search(r"([0-9.e+]+) times less noise at this iterate", notes)
    assert m and float(m.group(1)) > 100, notes  # iteration 2 of the logistic run: thousands
    assert "most of all at iteration" in notes
    assert any("iteration 2**" in md.value for md in at.markdown)
    # every widget writes itself into the URL
    for key in ("mode", "etgt", "efac", "eit"):
        assert key in at.query_params, key


def test_the_gaussian_target_has_an_exact_second_order_estimate():
    at = _app(mode=VIEW, etgt=DEMO_TARGETS[1], eit=0)
    _ok(at)
    notes = " ".join(_notices(at))
    assert "is the same at every draw and equals the exact gradient" in notes
    assert "log p − log q is constant" in notes


def test_the_factor_T_and_the_last_iterate():
    at = _app(mode=VIEW, efac=T_FACTOR, eit=99, edraws=250)  # past the run's end: the last iterate
    _ok(at)
    k = at.slider(key="eit").value
    assert 5 <= k < 99 and at.radio(key="efac").value == T_FACTOR
    assert any(f"respect to T, iteration {k}**" in md.value for md in at.markdown)
    assert len(charts(at)) == 2


@pytest.mark.parametrize("params", [dict(etgt="junk", efac="<script>", eit="nan", edraws="-1"),
                                    dict(eit="-5", edraws="1e9", etgt="1"),
                                    dict(efac=T_FACTOR, eit="inf", edraws="abc")])
def test_hostile_urls_fall_back_to_sane_values(params):
    at = _app(mode=VIEW, **params)
    _ok(at)
    assert at.radio(key="mode").value == VIEW
    assert at.radio(key="etgt").value in DEMO_TARGETS
    assert 0 <= at.slider(key="eit").value <= 20
    assert len(charts(at)) == 2


def test_moving_the_iterate_redraws_both_figures():
    at = _app(mode=VIEW)
    at.slider(key="eit").set_value(0).run()
    _ok(at)
    assert at.query_params["eit"] in ("0", ["0"])
    assert any("iteration 0**" in md.value for md in at.markdown)
