"""The reproductions of Tan's short 'Explicit natural gradient updates' paper (all derived: it has no experiments)."""

import numpy as np
import pytest

from tests.repro_check import passes

NAMES = ["tanx-lemma1", "tanx-estimators", "tanx-gaussian-2d", "tanx-pd-1d"]


@pytest.mark.parametrize("name", NAMES)
def test_reproduction_passes(name):
    res = passes(name)
    assert res.paper == "Tan (explicit)"


def test_brute_force_fisher_is_the_definition():
    """1-D: the Fisher information of sigma in N(mu, sigma^2) is 2 / sigma^2; of t with sigma^2 = 1/t^2 it is 2 / t^2."""
    from vilab.repro.tan_explicit import brute_force_fisher

    assert brute_force_fisher(np.array([[3.0]]))[0, 0] == pytest.approx(2 / 9, rel=1e-12)
    assert brute_force_fisher(np.array([[0.5]]), "chol_prec")[0, 0] == pytest.approx(2 / 0.25, rel=1e-12)
    C = np.array([[2.0, 0.0], [0.5, 1.0]])
    F = brute_force_fisher(C)
    assert F.shape == (3, 3) and np.allclose(F, F.T) and np.all(np.linalg.eigvalsh(F) > 0)
