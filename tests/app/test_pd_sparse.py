"""AppTest of the Positive definiteness page's "sparse factors (Fig. 5)" view (Tan 2025 Fig. 5, Sec. 7)."""

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.charts import charts

PAGES = Path(__file__).resolve().parents[2] / "pages"
VIEW = "sparse factors (Fig. 5)"
ARROW = "arrow-shaped T (factor of the precision)"


def _app(**params):
    at = AppTest.from_file(str(PAGES / "25_Positive_definiteness.py"), default_timeout=600)
    for k, v in params.items():
        at.query_params[k] = str(v)
    return at.run()


def _ok(at):
    assert not at.exception, [str(e.value) for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _notices(at):
    return [i.value for i in at.info if i.value.startswith("**What to notice.**")]


def test_default_view_is_unchanged_and_offers_the_sparse_view():
    at = _app()
    _ok(at)
    assert at.radio(key="mode").value == "single update (Cauchy example)"
    assert VIEW in at.radio(key="mode").options


def test_sparse_view_default_block_diagonal_C():
    at = _app(mode=VIEW)
    _ok(at)
    assert len(charts(at)) == 2
    notes = _notices(at)
    assert any("C has 12 free entries" in n and "0 nonzero entries outside" in n for n in notes)
    assert any("the two agree" in n for n in notes)
    assert at.query_params["mode"] == VIEW


def test_sparse_view_arrow_T_reports_the_masking_error():
    at = _app(mode=VIEW, sfac=ARROW)
    _ok(at)
    notes = " ".join(_notices(at))
    m = re.search(r"the difference has norm ([0-9.e+-]+)", notes)
    assert "They differ" in notes and m and float(m.group(1)) > 0.01


@pytest.mark.parametrize("params", [dict(K=1, blk=1), dict(K=6, blk=4), dict(sfac=ARROW, K=6, blk=4, nglob=3),
                                    dict(sfac=ARROW, K=1, blk=1, nglob=1)])
def test_sparse_view_extremes(params):
    at = _app(mode=VIEW, **params)
    _ok(at)
    assert len(charts(at)) == 2
    d = params["K"] * params["blk"] + (params.get("nglob", 0) if params.get("sfac") == ARROW else 0)
    assert any(f"d = {d}**" in m.value for m in at.markdown)


def test_no_zeros_case_says_so():
    at = _app(mode=VIEW, sfac=ARROW, K=1, blk=1, nglob=1)
    _ok(at)
    assert any("no structural zeros" in n for n in _notices(at))


@pytest.mark.parametrize("params", [dict(K="nan", blk="-3", sfac="junk"), dict(K="1e9", blk="inf", nglob="x"),
                                    dict(sfac=ARROW, nglob="-1", K="<script>")])
def test_sparse_view_hostile_urls(params):
    at = _app(mode=VIEW, **params)
    _ok(at)
    assert at.radio(key="mode").value == VIEW
    assert 1 <= at.slider(key="K").value <= 6 and 1 <= at.slider(key="blk").value <= 4


def test_switching_to_the_arrow_redraws():
    at = _app(mode=VIEW)
    at.radio(key="sfac").set_value(ARROW).run()
    _ok(at)
    assert at.slider(key="nglob").value == 2
    assert any("They differ" in n for n in _notices(at))
