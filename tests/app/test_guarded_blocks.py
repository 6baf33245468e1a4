"""AppTest of the pages' guarded blocks (issue 41): a block under ``ui.guard`` that fails shows its message, and
the blocks after it that would use what it computed are skipped, not run into a NameError ("something went
wrong (NameError: cannot access free variable 'd' ...)"); the rest of the page still draws.

Online learning's conjugate families fail through the URL alone (chi >= nu for the Bernoulli family); the other
blocks fail here because the library function they call is replaced by one that raises."""

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from tests.app.charts import charts

PAGES = Path(__file__).resolve().parents[2] / "pages"
ONLINE = str(PAGES / "60_Online_learning.py")
DIVERGENCES = str(PAGES / "40_Divergences.py")
BROKEN = "broken on purpose by the test"


def _run(page, **params):
    st.cache_data.clear()  # a result computed by an earlier test would hide the replaced function
    at = AppTest.from_file(page, default_timeout=240)
    at.query_params.update(params)
    at.run()
    assert not at.exception, at.exception
    return at


def _texts(at):
    return " ".join(str(e.value) for e in list(at.markdown) + list(at.caption) + list(at.info) + list(at.warning)
                    + list(at.error) + list(at.latex))


def _broken(*args, **kwargs):
    raise ValueError(BROKEN)


def _no_name_error(at):
    errors = [e.value for e in at.error]
    assert not errors, errors  # the NameError of a skipped block was shown as "something went wrong (...)"
    assert "NameError" not in _texts(at)


def test_conjugate_families_with_chi_at_least_nu_warn_and_keep_the_page():
    at = _run(ONLINE, tab="Conjugate families", cchi="10", cnu="5", how_conjugate_models="1")
    _no_name_error(at)
    warnings = [w.value for w in at.warning]
    assert len(warnings) == 1 and "χ below ν" in warnings[0] and "χ = 10" in warnings[0], warnings
    text = _texts(at)
    assert "Bernoulli: logit θ" in text  # the caption after the table
    assert "Prop. 4.1" in text  # the open explanation after it
    assert not at.table and not at.dataframe  # no numbers of an update that did not happen
    at = _run(ONLINE, tab="Conjugate families", cchi="2", cnu="5")  # chi below nu: the table is back
    _no_name_error(at)
    assert not at.warning
    assert len(at.dataframe) + len(at.table) == 1


def test_a_failed_linear_gaussian_stream_skips_its_notes(monkeypatch):
    from vilab.online import linear_gaussian

    monkeypatch.setattr(linear_gaussian, "linear_demo", _broken)
    at = _run(ONLINE, tab="Linear-Gaussian stream", how_linear_gaussian="1")
    _no_name_error(at)
    assert [w.value for w in at.warning] == [f"linear-Gaussian stream: {BROKEN}"]
    assert "CM-EKF" in _texts(at)  # the explanation after the notes


def test_failed_precomputed_runs_skip_their_notes(monkeypatch):
    from vilab.plots import online as po

    monkeypatch.setattr(po, "short_labels", _broken)
    at = _run(ONLINE, tab="Digits stream")
    _no_name_error(at)
    if any("No precomputed runs yet" in i.value for i in at.info):
        pytest.skip("the precomputed digits runs are not in this checkout")
    assert [w.value for w in at.warning] == [f"precomputed runs: {BROKEN}"]
    assert "scaled-down analogue" in _texts(at) or at.expander  # the page goes on after the notes


@pytest.mark.parametrize("tab, target, later", [
    ("2-D Gaussian", "precision_2d", "variance against ρ"),
    ("3-D collapse", "fig1_grid", "selected point"),
    ("Univariate targets", "univariate_optima", "Student-t accuracies"),
])
def test_divergences_blocks_after_a_failed_one_are_skipped(monkeypatch, tab, target, later):
    from vilab import divergences as dv

    monkeypatch.setattr(dv, target, _broken)
    at = _run(DIVERGENCES, tab=tab)
    _no_name_error(at)
    assert len(at.warning) == 1 and BROKEN in at.warning[0].value, [w.value for w in at.warning]
    if later == "variance against ρ":
        assert charts(at)  # the figure of the next block is drawn
    elif later == "selected point":
        assert len(at.dataframe) + len(at.table) == 1  # the selected point's variances
    else:
        assert later in _texts(at)
