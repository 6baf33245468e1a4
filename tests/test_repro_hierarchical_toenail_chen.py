"""chen2025-table7-toenail (Chen, Nott & Tan Table 7, Toenail) passes: about three minutes on two cores."""

import pytest

from tests.repro_check import passes


@pytest.mark.slow
def test_chen2025_table7_toenail_passes():
    res = passes("chen2025-table7-toenail")
    assert sum(c.quantity.endswith("1 s.d.") for c in res.checks) == 5  # a mode error per method
