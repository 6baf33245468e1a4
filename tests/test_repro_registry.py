import json
import re
from pathlib import Path

import pytest

from tests.repro_check import audit
from vilab import cli, repro
from vilab.repro import Check, Result

TESTS = Path(__file__).resolve().parent


def test_check_comparisons():
    assert Check("x", 1.0, 1.0 + 1e-9, tol=1e-8).ok()
    assert not Check("x", 1.0, 1.1, tol=1e-3).ok()
    assert Check("x", 100.0, 101.0, tol=0.02, rel=True).ok()
    assert Check("n", 7, 7).ok() and not Check("n", 7, 8).ok()
    assert Check("v", (1.0, 2.0), (1.0, 2.0 + 1e-12), tol=1e-9).ok()
    assert not Check("v", (1.0, 2.0), (1.0,), tol=1e-9).ok()
    assert Check("s", "diverged", "diverged").ok()
    assert not Check("nan", 1.0, float("nan"), tol=1.0).ok()
    assert not Check("q", "A beats B", "B beats A", passed=False).ok()


def test_result_pass_needs_checks_and_no_error():
    assert not Result("a", "p", "w").passed
    assert Result("a", "p", "w", [Check("x", 1, 1)]).passed
    assert not Result("a", "p", "w", [Check("x", 1, 1)], error="boom").passed


def test_a_reported_value_is_never_a_pass_and_does_not_count():
    shown = Check("L (Adam), reported only", -645.2, -700.0, reported=True)
    assert shown.status == "REPORTED" and not shown.ok() and shown.tolerance_text() == "(reported)"
    only_shown = Result("a", "p", "w", [shown])
    assert only_shown.status == "REPORTED" and not only_shown.passed  # nothing compared: no PASS
    mixed = Result("a", "p", "w", [shown, Check("x", 1.0, 1.0, tol=0.1)])
    assert mixed.passed and mixed.counts() == {"PASS": 1, "FAIL": 0, "REPORTED": 1}
    assert repro.verdict_text(mixed) == "PASS (1 compared, 1 reported)"
    assert not Result("a", "p", "w", [shown, Check("x", 1.0, 2.0, tol=0.1)]).passed
    with pytest.raises(ValueError, match="reported"):
        Check("y", 1, 1, reported=True, margin=1.0)
    with pytest.raises(ValueError, match="nothing to mutate"):
        shown.mutated()


def test_a_tie_fails_where_the_claim_is_strict_and_passes_where_it_is_at_most():
    assert not Check("iterations, Corollary 1 fewer", "fewer", "15 vs 15", margin=0.0).ok()
    assert Check("iterations, Corollary 1 fewer", "fewer", "14 vs 15", margin=1.0).ok()
    assert Check("ratio at most 1", "<= 1", 1.0, margin=0.0, ties=True).ok()
    assert not Check("ratio at most 1", "<= 1", 1.1, margin=-0.1, ties=True).ok()
    assert not Check("nan margin", "> 0", "nan", margin=float("nan")).ok()
    assert Check("above a diverged run", "above", 1.0, margin=float("inf")).ok()
    assert not Check("a diverged run", "above", "diverged", margin=float("-inf")).ok()
    with pytest.raises(ValueError, match="either passed or margin"):
        Check("z", 1, 1, passed=True, margin=1.0)


@pytest.mark.parametrize("check", [
    Check("x", 1.0, 1.0 + 1e-9, tol=1e-8), Check("r", 100.0, 101.0, tol=0.02, rel=True), Check("r0", 0.0, 0.0, tol=0.1, rel=True),
    Check("n", 7, 7), Check("v", (1.0, 2.0), (1.0, 2.0), tol=1e-9), Check("s", "diverged", "diverged"),
    Check("b", True, True), Check("m", "> 0", 3.0, margin=3.0), Check("t", "<= 1", 1.0, margin=0.0, ties=True),
    Check("big", 1e20, 1e20, tol=1e5), Check("mixed tuple", ("max_steps",), ("max_steps",)),
])
def test_every_kind_of_check_mutated_past_its_tolerance_fails(check):
    assert check.ok() and check.mutated().status == "FAIL"


def test_a_check_given_as_a_bare_boolean_cannot_be_mutated():
    with pytest.raises(ValueError, match="give its margin"):
        Check("q", "A beats B", "A beats B", passed=True).mutated()


def test_tolerance_sources_come_from_the_vocabulary():
    assert repro.tol_source_error("printed precision: two decimals") is None
    assert repro.tol_source_error("exact") is None
    assert "does not start with" in repro.tol_source_error("tolerance ours")
    assert repro.tol_source_error("") == "it is empty"
    with pytest.raises(ValueError, match="tolerance source"):
        Check("x", 1, 1, tol_source="a guess")
    with pytest.raises(ValueError, match="tolerance source"):
        repro.reproduction("zz-bad-tol", paper="P", what="w", tol_source="because")

    @repro.reproduction("zz-tol-inherit", paper="P", what="w", kind="derived", source="s", tol_source="round-off")
    def _t():
        return [Check("x", 1.0, 1.0, tol=1e-12), Check("y", 2.0, 2.0, tol=0.1, tol_source="Monte Carlo s.e.: 2 s.e."),
                Check("z", 3.0, 4.0, reported=True)]

    try:
        res = repro.run("zz-tol-inherit")
        assert [c.tol_source for c in res.checks] == ["round-off", "Monte Carlo s.e.: 2 s.e.", ""]
        assert repro.without_tol_source(res.checks) == []
        rows = repro.table_rows([res])
        assert [r["status"] for r in rows] == ["PASS", "PASS", "REPORTED"]
        assert rows[1]["tolerance from"] == "Monte Carlo s.e.: 2 s.e." and rows[2]["tolerance from"] == ""
        audit(res)
    finally:
        repro._REGISTRY.pop("zz-tol-inherit", None)


def test_the_audit_catches_a_check_that_cannot_fail_or_names_no_tolerance_source():
    unsourced = Result("zz-a", "p", "w", [Check("x", 1.0, 1.0, tol=0.1)])
    with pytest.raises(AssertionError, match="do not say where their tolerance comes from"):
        audit(unsourced)
    bare = Result("zz-b", "p", "w", [Check("x", "yes", "yes", passed=True, tol_source="exact")])
    with pytest.raises(ValueError, match="give its margin"):
        audit(bare)


def test_every_entry_is_audited_by_some_test():
    """Every registry entry is run by a test through tests/repro_check.py (passes / run_audited), which mutates each
    compared value past its tolerance and checks its tolerance source: no PASS of the registry is left unaudited."""
    texts = [p.read_text() for p in TESTS.rglob("test_*.py")]
    audited = [t for t in texts if re.search(r"\b(passes|run_audited)\b", t)]
    missing = [e.name for e in repro.entries() if not any(f'"{e.name}"' in t for t in audited)]
    assert not missing, f"entries no auditing test runs: {missing}"


def test_register_run_and_cli(capsys):
    @repro.reproduction("test-registry-demo", paper="Nobody (2026)", what="a demo entry")
    def _demo():
        return [Check("one", 1.0, 1.0, tol=0.0), Check("label", "yes", "yes")]

    @repro.reproduction("test-registry-broken", paper="Nobody (2026)", what="raises")
    def _broken():
        raise RuntimeError("deliberately broken")

    try:
        assert repro.run("test-registry-demo").passed
        res = repro.run("test-registry-broken")
        assert not res.passed and "deliberately broken" in res.error

        assert cli.main(["repro", "--list"]) == 0
        assert "test-registry-demo" in capsys.readouterr().out
        assert cli.main(["repro", "test-registry-demo", "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["pass"] is True and data["checks"][0]["paper"] == 1.0 and data["checks"][0]["computed"] == 1.0
        assert cli.main(["repro", "test-registry-demo"]) == 0
        out = capsys.readouterr().out
        assert "PASS (2 compared)" in out and "tolerance from" in out
        assert cli.main(["repro", "test-registry-broken"]) == 1
        assert cli.main(["repro", "no-such-entry"]) == 2
        assert "no reproduction named" in capsys.readouterr().err
    finally:
        repro._REGISTRY.pop("test-registry-demo", None)
        repro._REGISTRY.pop("test-registry-broken", None)


def test_unknown_name_is_a_valueerror():
    with pytest.raises(ValueError, match="Known reproductions"):
        repro.get("definitely-not-registered")


def test_import_vilab_does_not_import_streamlit():
    import subprocess
    import sys

    code = "import sys, vilab, vilab.family.gaussian, vilab.targets, vilab.gradients.expectations, vilab.repro, vilab.plots; " \
           "vilab.repro.entries(); print('streamlit' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_every_reproduction_module_imports():
    assert repro.import_errors() == {}


def test_a_broken_module_is_reported_not_fatal(monkeypatch, capsys):
    real = repro.importlib.import_module

    def fake(name, *args, **kwargs):
        if name == "vilab.repro.chen2025":
            raise SyntaxError("broken on purpose")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(repro.importlib, "import_module", fake)
    monkeypatch.setattr(repro, "_DISCOVERED", False)
    monkeypatch.setattr(repro, "_IMPORT_ERRORS", {})
    assert "broken on purpose" in repro.import_errors()["chen2025"]
    assert repro.entries()  # the other modules' entries are still there
    assert cli.main(["repro", "--list"]) == 1
    assert "chen2025.py could not be imported" in capsys.readouterr().err
