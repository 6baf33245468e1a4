"""The hierarchical reproductions (vilab.repro.hierarchical): registered, marked, and Tan's Table 11 passes.

Each reproduction takes one to three minutes on two cores, so each runs in its own module
(test_repro_hierarchical_glmm.py, test_repro_hierarchical_sv.py) to keep modules under ~3 minutes.
"""

import pytest

from tests.repro_check import run_audited as run
from vilab.repro import get


def test_entries_registered_and_marked_qualitative():
    for name in ("tan2025-table11-epilepsy", "chen2025-glmm-ordering", "chen2025-sv-modes"):
        e = get(name)
        assert e.slow and e.settings.startswith("QUALITATIVE")


@pytest.mark.slow
def test_tan2025_table11_epilepsy_passes():
    res = run("tan2025-table11-epilepsy")
    assert res.passed, res.as_dict()
