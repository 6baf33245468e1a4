"""The Kumar et al. reproductions added with the paper / derived kinds: Thm 2's constants, the toys T1-T3, flows."""

import numpy as np
import pytest

from tests.repro_check import passes
from vilab import repro

FAST = ["kumar2025-thm2", "kumar2025-t1", "kumar2025-vn-one-step", "kumar2025-lemma1", "kumar2025-ngflow-rate",
        "kumar2025-srvn-1d-quadratic", "kumar2025-gd-pd", "kumar2025-sign-flip"]
SLOW = ["kumar2025-t3", "kumar2025-t2-steps"]


@pytest.mark.parametrize("name", FAST)
def test_reproductionpasses(name):
    passes(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_slow_reproductionpasses(name):
    assert repro.get(name).slow
    passes(name)


def test_theorem2_formulas_against_a_hand_computation():
    """Eq. 25 and App. C.5 (vilab.theory.guarantees, which the kumar2025-thm2 entry uses) on round numbers, by hand."""
    from vilab.theory.guarantees import theorem2_eta, theorem2_steps

    # lam_min = 0.1, xi_l^2 = 0.5, xi_u^2 = 2 (lam_max = 2), M = 10, delta = 1
    xi_l, xi_u = np.sqrt(0.5), np.sqrt(2.0)
    st = theorem2_steps(10.0, 0.1, xi_l, xi_u)
    assert st["rho1"] == pytest.approx(0.1 / (4 * 10)) and st["rho2"] == pytest.approx(np.sqrt(0.4) * 0.5 / (10 * 4))
    rho = 1e-3
    first = 0.1 * rho - 10 * rho**2 * 4 / 2
    second = np.sqrt(2.5) * rho * 0.5 - 5 * rho**2 * 4 * 10 / 4
    assert theorem2_eta(rho, 1.0, 10.0, 0.1, xi_l, xi_u) == pytest.approx(min(first, second))
    assert theorem2_eta(1.0, 1.0, 10.0, 0.1, xi_l, xi_u) < 0  # a large step: no guarantee


def test_thm2_entry_reports_the_constants_and_a_failing_bound_would_show():
    res = passes("kumar2025-thm2")
    ratio = [c for c in res.checks if c.quantity.startswith("worst observed ratio")][0]
    bound = [c for c in res.checks if c.quantity.startswith("1 - 2 eta delta")][0]
    assert ratio.computed < bound.computed < 1.0
    assert {c.kind for c in res.checks} == {"paper", "derived"}


@pytest.mark.slow
def test_table3_diabetes_entry_passes():
    """Table 3's Diabetes-scale row on the rebuilt LIBSVM file: every printed value inside its range over 50
    splits, and VN, SR-VN, BW-GD tie at Table 2's steps (10-35 s on 2 cores: marked slow)."""
    assert repro.get("kumar2025-table3-diabetes").slow
    res = passes("kumar2025-table3-diabetes")
    assert {c.kind for c in res.checks} == {"paper", "derived", "regression"}  # the medians: same code's values


@pytest.mark.slow
def test_table3_breast_cancer_entry_passes_and_reports_the_dropped_constant():
    """Table 3's breast-cancer row: every printed value inside its range over 50 splits once the ELBO leaves out
    -d/2 (1 + log 2 pi), as on Diabetes-scale; with that constant the printed 52.86 lies OUTSIDE the range, which
    the entry reports (the identification of the constant, not a tuned pass)."""
    assert repro.get("kumar2025-table3-breast-cancer").slow
    res = passes("kumar2025-table3-breast-cancer")
    with_constant = [c for c in res.checks if c.quantity.startswith("train negative ELBO as Sec. 1 defines it")]
    assert len(with_constant) == 1 and with_constant[0].note.startswith("OUTSIDE")
    assert with_constant[0].quantity.endswith("reported only") and with_constant[0].paper == 52.86
    assert with_constant[0].status == "REPORTED"  # shown, never counted as a PASS
