"""chen2025-sv-modes (Chen, Nott & Tan Table 8, GBP stochastic volatility) passes: about two minutes on two cores."""

import pytest

from tests.repro_check import run_audited as run


@pytest.mark.slow
def test_chen2025_sv_modes_passes():
    res = run("chen2025-sv-modes")
    assert res.passed, res.as_dict()
