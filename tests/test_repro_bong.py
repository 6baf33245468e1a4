"""The BONG reproductions pass (vilab.repro entries of vilab/repro/bong.py)."""

import pytest

from tests.repro_check import run_audited as run
from vilab.repro import get


@pytest.mark.parametrize("name", ["bong-kalman", "bong-conjugate"])
def test_fast_reproductions(name):
    r = run(name)
    assert r.error is None, r.error
    assert r.passed, [c.as_dict() for c in r.checks if c.status == "FAIL"]


@pytest.mark.slow
def test_blr_equivalence():
    r = run("bong-blr-equivalence")
    assert r.error is None, r.error
    assert r.passed, [c.as_dict() for c in r.checks if c.status == "FAIL"]


@pytest.mark.slow
def test_digits_ordering():
    assert get("bong-digits-ordering").slow
    r = run("bong-digits-ordering")
    assert r.error is None, r.error
    assert r.passed, [c.as_dict() for c in r.checks if c.status == "FAIL"]
