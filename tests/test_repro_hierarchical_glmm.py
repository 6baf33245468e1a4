"""chen2025-glmm-ordering (Chen, Nott & Tan Table 7, Epi I) passes: about two minutes on two cores."""

import pytest

from tests.repro_check import run_audited as run


@pytest.mark.slow
def test_chen2025_glmm_ordering_passes():
    res = run("chen2025-glmm-ordering")
    assert res.passed, res.as_dict()
