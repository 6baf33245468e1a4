"""tan2025-table11-toenail (Tan Table 11, Toenail GVA) passes: about two minutes on two cores."""

import pytest

from tests.repro_check import passes
from vilab.repro import get


def test_entry_registered_slow_and_mixed():
    e = get("tan2025-table11-toenail")
    assert e.slow and e.kind == "mixed"


@pytest.mark.slow
def test_tan2025_table11_toenail_passes():
    res = passes("tan2025-table11-toenail")
    # the one constant added to ours is the prior's normaliser, the constant of the Epilepsy column
    snngm = next(c for c in res.checks if c.quantity.startswith("L (SNNGM)"))
    assert "without the constant -66" in snngm.note
