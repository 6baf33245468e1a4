"""The new closed-form reproductions of Chen, Nott & Tan and of BONG pass."""

import pytest

from tests.repro_check import passes, run_audited
from vilab import repro

NAMES = ["chen2025-gradvar", "chen2025-batch-limits", "chen2025-batch-fixed-points", "chen2025-equicorrelated",
         "chen2025-lemma1", "bong-fc-mom", "chen2025-univariate-optima", "chen2025-sd-fd-bound",
         "bong-batch-blr-exact", "bong-batch-blr-vogn", "bong-implicit-rvga", "chen2025-landscape"]


@pytest.mark.parametrize("name", NAMES)
def test_reproduction_passes(name):
    passes(name)


def test_batch_limits_would_catch_a_wrong_limit():
    """The Theorem 2 check is not vacuous: the batch variance at B = 400,000 is far from a wrong limit."""
    res = run_audited("chen2025-batch-limits")
    (c,) = [c for c in res.checks if c.quantity.startswith("B = 400,000: Sigma^S_ii")]
    wrong = repro.Check(c.quantity, tuple(1.1 * v for v in c.paper), c.computed, tol=c.tol, rel=c.rel)
    assert c.status != "FAIL" and not wrong.ok()
