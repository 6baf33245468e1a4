"""The five reproductions of Tan (2025) and Kumar et al. (2025) pass, with the paper's numbers."""

import pytest

from vilab import repro

NAMES = ["tan2025-table2", "tan2025-optimum", "tan2025-pd-cauchy", "kumar2025-fig1", "kumar2025-vn-srvn-order2"]


@pytest.mark.parametrize("name", NAMES)
def test_reproduction_passes(name):
    res = repro.run(name)
    assert res.error is None, res.error
    failed = [c.as_dict() for c in res.checks if not c.ok()]
    assert res.passed and not failed, failed


def test_table2_reports_all_twelve_cells():
    res = repro.run("tan2025-table2")
    cells = [c for c in res.checks if c.quantity.endswith(": iterations")]
    assert len(cells) == 12
    assert sorted(c.paper for c in cells) == sorted([141, 15, 11, 6, 107, 12, 8, 5, 115, 9, 8, 5])
