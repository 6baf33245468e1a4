import json

import pytest

from vilab import cli, repro
from vilab.repro import Check, Result


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
        assert "PASS" in capsys.readouterr().out
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

    code = "import sys, vilab, vilab.gaussian, vilab.targets, vilab.expectations, vilab.repro, vilab.plots; " \
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
