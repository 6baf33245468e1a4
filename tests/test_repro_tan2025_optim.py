"""The reproductions of vilab.repro.tan2025_optim pass (Tan (2025) Fig. 3, Fig. 4, Table 7 ordering)."""

import pytest

from tests.repro_check import run_audited
from vilab import repro
from vilab.repro import tan2025_optim as M


def _assert_passed(res):
    assert res.error is None, res.error
    bad = [c.as_dict() for c in res.checks if c.status == "FAIL"]
    assert res.passed and not bad, bad


def test_registered_names():
    names = {e.name for e in repro.entries()}
    assert {"tan2025-fig3", "tan2025-fig4", "tan2025-loglinear-d50"} <= names


def test_fig3_counts_and_negative_sigma2():
    res = run_audited("tan2025-fig3")
    _assert_passed(res)
    counts = {c.quantity.split()[0]: c.computed for c in res.checks if "iterations from" in c.quantity}
    assert counts["Adam"] == (2197, 1261, 2591)
    assert counts["SNNGM"] == (767, 431, 658)
    div = [c for c in res.checks if c.paper == "diverged: negative sigma^2"]
    assert len(div) == 1 and div[0].computed == "diverged: negative sigma^2"


def test_fig4():
    _assert_passed(run_audited("tan2025-fig4"))


@pytest.mark.slow
def test_loglinear_ordering_smaller_n():
    """Same claims as tan2025-loglinear-d50 with n = 20,000 and minibatch 1,000 (CI budget)."""
    res = M.loglinear_comparison(n=20_000, batch=1000, epochs=60)
    checks = M.loglinear_checks(res)
    assert len(checks) == 8
    bad = [c.as_dict() for c in checks if c.status == "FAIL"]
    assert not bad, bad
