from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from vilab import repro

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "90_Reproductions.py")


def _catalogue(at):
    """The registry table (one row per reproduction)."""
    (df,) = [d.value for d in at.dataframe if "reproduces" in d.value.columns]
    return df


def _results(at):
    """The paper-vs-computed table (one row per checked number)."""
    (df,) = [d.value for d in at.dataframe if "computed" in d.value.columns]
    return df


def test_lists_every_registered_reproduction():
    st.cache_resource.clear()  # no result computed on this server yet
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    names = [e.name for e in repro.entries()]
    if names:
        assert len(at.dataframe) == 1  # before any run, the registry table comes first (and alone)
        listed = _catalogue(at)["name"].tolist()
        assert listed == names
        assert at.selectbox(key="r").options == names


def test_run_button_shows_paper_and_computed_values():
    names = [e.name for e in repro.entries() if not e.slow]
    if not names:
        return  # nothing registered yet: the listing test above covers the empty page
    name = "chen2025-collapse" if "chen2025-collapse" in names else names[0]  # a sub-second entry
    at = AppTest.from_file(PAGE, default_timeout=600)
    at.query_params["r"] = name
    at.run()
    at.button(key="run").click().run()
    assert not at.exception
    table = _results(at)
    assert {"paper", "computed", "tolerance", "status", "tolerance from"} <= set(table.columns)
    assert (table["reproduction"] == name).all() and (table["status"] == "PASS").all()
    assert (table["tolerance from"] != "(not stated)").all()
    assert at.success or at.error  # a verdict is shown


@pytest.fixture
def fake_registry(monkeypatch):
    """Three tiny entries (one failing, one slow) in place of the real registry: fast page tests."""
    reg = {}
    monkeypatch.setattr(repro, "_REGISTRY", reg)
    monkeypatch.setattr(repro, "_DISCOVERED", True)

    @repro.reproduction("zz-pass", paper="Paper A", what="a passing entry", tol_source="round-off")
    def _a():
        return [repro.Check("x", 1.0, 1.0 + 1e-9, tol=1e-6), repro.Check("n", 3, 3, tol_source="exact"),
                repro.Check("shown", 9.0, 7.0, reported=True)]

    @repro.reproduction("zz-fail", paper="Paper B", what="a failing entry")
    def _b():
        return [repro.Check("y", 2.0, 2.5, tol=0.1)]

    @repro.reproduction("zz-slow", paper="Paper C", what="a slow entry", slow=True)
    def _c():
        return [repro.Check("z", 0.5, 0.5, tol=0.0)]

    return reg


def _verdicts(at):
    cat = _catalogue(at)
    return dict(zip(cat["name"], cat["result"]))


def test_run_every_reproduction_lists_paper_computed_tolerance_and_verdict(fake_registry):
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    assert _catalogue(at)["name"].tolist() == ["zz-fail", "zz-pass", "zz-slow"]
    at.button(key="all").click().run()  # run every (fast) reproduction
    assert not at.exception
    table = _results(at)
    assert set(table["reproduction"]) == {"zz-fail", "zz-pass"}  # the slow one needs the checkbox
    row = table[table["quantity"] == "y"].iloc[0]
    assert (row["paper"], row["computed"], row["tolerance"], row["status"]) == ("2", "2.5", "0.1", "FAIL")
    assert row["tolerance from"] == "(not stated)"
    shown = table[table["quantity"] == "shown"].iloc[0]  # a value for context: REPORTED, never PASS
    assert (shown["status"], shown["tolerance"]) == ("REPORTED", "(reported)")
    verdicts = _verdicts(at)
    assert verdicts["zz-pass"].startswith("PASS (2 compared, 1 reported)") and verdicts["zz-fail"].startswith("FAIL")
    assert verdicts["zz-slow"] == "not run yet"
    assert len(at.error) == 1 and len(at.success) == 1
    at.checkbox(key="slow").check().run()
    at.button(key="all").click().run()
    assert not at.exception
    assert set(_results(at)["reproduction"]) == {"zz-fail", "zz-pass", "zz-slow"}
    assert _verdicts(at)["zz-slow"].startswith("PASS")


def test_run_every_stops_at_its_time_budget_and_says_so(fake_registry, monkeypatch):
    monkeypatch.setenv("VILAB_REPRO_BUDGET_S", "0")
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.button(key="all").click().run()
    assert not at.exception
    assert any("at most 0 seconds" in w.value and "1 of 2 were not run" in w.value for w in at.warning)
    assert len(_results(at)["reproduction"].unique()) == 1  # the first one ran, the rest waits for another press


def test_shared_link_runs_the_named_reproduction_on_load(fake_registry):
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update({"r": "zz-pass", "auto": "1"})
    at.run()
    assert not at.exception
    assert at.selectbox(key="r").value == "zz-pass"
    table = _results(at)
    assert set(table["reproduction"]) == {"zz-pass"} and set(table["status"]) == {"PASS", "REPORTED"}
    # the result stays on screen for the selected entry (computed before on this server), above the registry
    at.toggle(key="auto").set_value(False).run()
    assert not at.exception
    assert set(_results(at)["reproduction"]) == {"zz-pass"}
    assert [("computed" in d.value.columns) for d in at.dataframe] == [True, False]


def test_hostile_url_values_fall_back_to_defaults(fake_registry):
    st.cache_resource.clear()  # no result computed on this server yet
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update({"r": "<script>", "auto": "maybe", "slow": "2"})
    at.run()
    assert not at.exception
    assert at.selectbox(key="r").value == "zz-fail" and at.toggle(key="auto").value is False
    assert at.checkbox(key="slow").value is False
    assert len(at.dataframe) == 1  # nothing was run


def test_no_internal_notes_on_screen(fake_registry):
    @repro.reproduction("zz-notes", paper="Paper D (digest Sec. 7)", what="an entry (see the digest, Sec. 2)",
                        settings="x = 1 (digest Table 3)")
    def _d():
        return [repro.Check("w", 1.0, 1.0, tol=0.0)]

    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update({"r": "zz-notes"})
    at.run()
    assert not at.exception
    shown = " ".join([m.value for m in at.markdown] + [c.value for c in at.caption]
                     + _catalogue(at).astype(str).stack().tolist())
    assert "Paper D" in shown and "x = 1" in shown
    assert "digest" not in shown.lower()


def test_reference_kind_column_and_filter():
    """The registry table says for every entry whether its reference values are printed in the paper, derived by
    us, or both; the filter keeps one kind; a result table says it per value."""
    st.cache_resource.clear()
    at = AppTest.from_file(PAGE, default_timeout=300).run()
    assert not at.exception
    cat = _catalogue(at)
    kinds = {"paper", "derived", "regression (same code)", "paper + derived"}
    assert set(cat["reference"]) <= kinds and len(set(cat["reference"])) == 4
    at.radio(key="kind").set_value("regression").run()
    assert not at.exception
    assert (_catalogue(at)["reference"] == "regression (same code)").all()
    at.radio(key="kind").set_value("derived").run()
    assert not at.exception
    cat = _catalogue(at)
    assert (cat["reference"] == "derived").all() and "chen2025-2d" in cat["name"].tolist()
    assert at.selectbox(key="r").options == cat["name"].tolist()
    at.selectbox(key="r").set_value("chen2025-equicorrelated").run()
    at.button(key="run").click().run()
    assert not at.exception
    table = _results(at)
    assert list(table.columns[:3]) == ["quantity", "reference", "paper"] and (table["reference"] == "derived").all()
    assert "source" in table.columns and table["source"].str.contains("computed by us").all()
    assert (table["status"] == "PASS").all() and table["tolerance from"].isin(["round-off", "printed precision: the "
                                                                                "hand values to 6 decimals"]).all()


def test_hostile_kind_filter_falls_back(fake_registry):
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update({"kind": "<img src=x>"})
    at.run()
    assert not at.exception and at.radio(key="kind").value == "all"
    assert _catalogue(at)["name"].tolist() == ["zz-fail", "zz-pass", "zz-slow"]
