"""Registry entries for items first checked only in the tests (issue 16): Kumar et al.'s Thm 3, Tan's sparse
factors (Fig. 5, Sec. 7) and log-diagonal chart, Lin-Schmidt-Khan's step, the weighted Fisher divergence with a
chosen M, Gaussian score matching, and BONG's predict step. Each runs and passes, and says its kind."""

import numpy as np
import pytest

from tests.repro_check import passes
from vilab import repro

NAMES = ["kumar2025-thm3", "tan2025-fig5-masking", "tanx-logdiag", "lsk2020-pd", "chen2025-weighted-m",
         "modi2023-gsm", "bong-predict-kalman"]


@pytest.mark.parametrize("name", NAMES)
def test_entry_passes_and_is_derived(name):
    res = passes(name)
    assert repro.get(name).kind == "derived"
    assert all(c.kind == "derived" for c in res.checks)


def test_the_brute_force_fisher_of_a_masked_factor_is_the_dense_one_restricted_for_a_diagonal_mask():
    """A diagonal mask keeps the diagonal entries: their Fisher block is the dense one's diagonal block
    (2 / C_ii^2 + ... couplings vanish only for a diagonal C)."""
    from vilab.repro.tan_explicit import brute_force_fisher, free_entries

    C = np.diag([0.5, 2.0, 1.5])
    dense = brute_force_fisher(C)
    rows, cols = free_entries(3)
    keep = np.flatnonzero(rows == cols)
    np.testing.assert_allclose(brute_force_fisher(C, mask=np.eye(3)), dense[np.ix_(keep, keep)], rtol=1e-12)
    np.testing.assert_allclose(np.diag(brute_force_fisher(C, mask=np.eye(3))), 2 / np.diag(C) ** 2, rtol=1e-12)
    r, c = free_entries(3, np.tril(np.ones((3, 3))))
    assert list(zip(r, c)) == [(0, 0), (1, 0), (2, 0), (1, 1), (2, 1), (2, 2)]  # vech order


def test_german_credit_from_the_bundled_table_and_its_exact_optimum():
    """d = 49 as both papers print; the reproduction's optimum agrees with Monte Carlo (inside the entry)."""
    from vilab.targets.german import german_credit, logistic_va_optimum

    m = german_credit()
    assert (m.n, m.d) == (1000, 49) and set(np.unique(m.X[:, 8:])) == {0.0, 1.0}
    np.testing.assert_allclose(m.X[:, 1:8].mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(m.X[:, 1:8].std(0), 1, atol=1e-12)
    assert m.y.sum() == 300  # 300 bad risks of 1000
    res = passes("tan2025-german-credit")
    assert {c.kind for c in res.checks} == {"paper", "derived"}
    with pytest.raises(ValueError, match="logistic"):
        from vilab.targets.regression import simulated_loglinear
        logistic_va_optimum(simulated_loglinear(n=50, d=3))


def test_fig4_on_german_credit_and_a_bad_target_name():
    from vilab.core import as_key
    from vilab.divergences import gradvar as gv

    passes("chen2025-fig4-german")
    L, nu = gv.german_credit_gaussian()
    assert L.shape == (49, 49) and nu.shape == (49,) and np.linalg.eigvalsh(L)[0] > 0
    L[0, 0] = -1.0  # a copy: the cached one is untouched
    assert gv.german_credit_gaussian()[0][0, 0] > 0
    with pytest.raises(ValueError, match="Unknown target"):
        gv.fig4_gradient_sd(as_key(0), target="German")


def test_german_mcmc_reference_was_made_by_its_script_and_converged():
    import importlib.util
    import json
    from pathlib import Path

    from vilab.targets.reference import ASSET_DIR, load_reference
    from vilab.targets.german import german_credit

    spec = importlib.util.spec_from_file_location(
        "german_reference", Path(__file__).resolve().parents[1] / "scripts" / "german_reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    js = json.loads((ASSET_DIR / "german.json").read_text())
    assert {k: js[k] for k in mod.SETTINGS} == mod.SETTINGS and js["seed"] == mod.SEED
    m = german_credit()
    assert js["dim"] == m.d and js["names"] == list(m.feature_names)
    assert js["diagnostics"]["rhat_max"] < 1.01 and js["diagnostics"]["ess_bulk_min"] > 1000
    ref = load_reference("german")
    assert ref.draws.shape == (mod.SETTINGS["n_keep"], m.d)
    cov = np.load(ASSET_DIR / "german.npz")["cov"]
    assert cov.shape == (m.d, m.d) and np.linalg.eigvalsh(cov)[0] > 0
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), ref.sd, rtol=1e-6)
    # the posterior mean is near the mode of the exact Gaussian approximation (a check of the data and model)
    from vilab.targets.german import logistic_va_optimum
    _, mu, C = logistic_va_optimum(m)
    assert np.all(np.abs(mu - ref.mean) < 0.2 * ref.sd)
