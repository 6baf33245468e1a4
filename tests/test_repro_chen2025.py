"""The Chen, Nott & Tan (2025) reproductions pass and check what they claim to check."""

import pytest

from tests.repro_check import run_audited
from vilab import repro

NAMES = ["chen2025-2d", "chen2025-table1", "chen2025-table2", "chen2025-table3", "chen2025-collapse",
         "chen2025-theorem1"]


@pytest.mark.parametrize("name", NAMES)
def test_reproduction_passes(name):
    r = run_audited(name)
    assert r.error is None, r.error
    failed = [c for c in r.checks if c.status == "FAIL"]
    assert not failed, failed
    assert len(r.checks) >= 5


def test_entries_registered_with_paper_and_settings():
    names = {e.name: e for e in repro.entries()}
    for n in NAMES:
        assert n in names and names[n].paper.startswith("Chen, Nott & Tan") and names[n].settings


def test_checks_can_fail():
    r = run_audited("chen2025-2d")
    c = r.checks[0]
    wrong = repro.Check(c.quantity, c.paper, c.computed + 1e-3, tol=c.tol)
    assert c.status != "FAIL" and not wrong.ok()
