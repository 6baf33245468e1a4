from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from vilab import repro

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "90_Reproductions.py")


def test_lists_every_registered_reproduction():
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    names = [e.name for e in repro.entries()]
    if names:
        listed = at.dataframe[0].value["name"].tolist()
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
    at.button[0].click().run()
    assert not at.exception
    table = at.dataframe[1].value
    assert {"paper", "computed", "tolerance", "pass"} <= set(table.columns)
    assert (table["reproduction"] == name).all() and table["pass"].all()
    assert at.success or at.error  # a verdict is shown


@pytest.fixture
def fake_registry(monkeypatch):
    """Three tiny entries (one failing, one slow) in place of the real registry: fast page tests."""
    reg = {}
    monkeypatch.setattr(repro, "_REGISTRY", reg)
    monkeypatch.setattr(repro, "_DISCOVERED", True)

    @repro.reproduction("zz-pass", paper="Paper A", what="a passing entry")
    def _a():
        return [repro.Check("x", 1.0, 1.0 + 1e-9, tol=1e-6), repro.Check("n", 3, 3)]

    @repro.reproduction("zz-fail", paper="Paper B", what="a failing entry")
    def _b():
        return [repro.Check("y", 2.0, 2.5, tol=0.1)]

    @repro.reproduction("zz-slow", paper="Paper C", what="a slow entry", slow=True)
    def _c():
        return [repro.Check("z", 0.5, 0.5, tol=0.0)]

    return reg


def _verdicts(at):
    cat = at.dataframe[0].value
    return dict(zip(cat["name"], cat["result"]))


def test_run_every_reproduction_lists_paper_computed_tolerance_and_verdict(fake_registry):
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    assert at.dataframe[0].value["name"].tolist() == ["zz-fail", "zz-pass", "zz-slow"]
    at.button[1].click().run()  # run every (fast) reproduction
    assert not at.exception
    table = at.dataframe[1].value
    assert set(table["reproduction"]) == {"zz-fail", "zz-pass"}  # the slow one needs the checkbox
    row = table[table["quantity"] == "y"].iloc[0]
    assert (row["paper"], row["computed"], row["tolerance"], bool(row["pass"])) == ("2", "2.5", "0.1", False)
    verdicts = _verdicts(at)
    assert verdicts["zz-pass"].startswith("PASS") and verdicts["zz-fail"].startswith("FAIL")
    assert verdicts["zz-slow"] == "not run yet"
    assert len(at.error) == 1 and len(at.success) == 1
    at.checkbox(key="slow").check().run()
    at.button[1].click().run()
    assert not at.exception
    assert set(at.dataframe[1].value["reproduction"]) == {"zz-fail", "zz-pass", "zz-slow"}
    assert _verdicts(at)["zz-slow"].startswith("PASS")


def test_shared_link_runs_the_named_reproduction_on_load(fake_registry):
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update({"r": "zz-pass", "auto": "1"})
    at.run()
    assert not at.exception
    assert at.selectbox(key="r").value == "zz-pass"
    table = at.dataframe[1].value
    assert set(table["reproduction"]) == {"zz-pass"} and table["pass"].all()
