"""The shipped horseshoe crab table and Tan (2025) Fig. 2 (Theorem 1(ii) against Corollary 1)."""

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import gammaln

from vilab.theory.definiteness import FIG2_METHODS, backtracking_step_sizes
from vilab.plots.pd import step_size_figure
from vilab.targets.crabs import CRAB_MODELS, crab_table, horseshoe_crabs
from vilab.targets.papers import CRAB_N, CRAB_SUM_LOG_Y_FACT, CRAB_SUM_Y
from vilab.targets.regression import loglinear_optimum


def test_table_matches_the_published_numbers():
    df = crab_table()
    assert len(df) == CRAB_N == 173
    y = df["sat"].to_numpy(float)
    assert y.sum() == CRAB_SUM_Y  # Tan Sec. 4.1's toy uses only these two sums
    assert gammaln(y + 1).sum() == pytest.approx(CRAB_SUM_LOG_Y_FACT, abs=1e-6)
    assert ((df["y"] == 1) == (df["sat"] > 0)).all()
    assert set(df["color"]) == {1, 2, 3, 4} and set(df["spine"]) == {1, 2, 3}
    # Agresti (2018) prints the Poisson ML fit log E(sat) = -3.305 + 0.164 width
    X = np.column_stack([np.ones(len(y)), df["width"]])
    fit = minimize(lambda b: np.exp(X @ b).sum() - y @ (X @ b), np.zeros(2),
                   jac=lambda b: X.T @ (np.exp(X @ b) - y), method="BFGS", options={"gtol": 1e-9})
    assert fit.x == pytest.approx([-3.305, 0.164], abs=6e-4)


def test_models_and_bad_names():
    assert horseshoe_crabs("width").d == 2 and horseshoe_crabs("colour + width").d == 5
    m = horseshoe_crabs("colour + width")
    assert m.feature_names == ("intercept", "colour 2", "colour 3", "colour 4", "width")
    assert m.X[:, 1:4].sum(1).max() == 1  # one dummy at most per crab (colour 1 is the baseline)
    with pytest.raises(ValueError, match="Unknown crab model"):
        horseshoe_crabs("weight")
    assert set(CRAB_MODELS) == {"width", "colour + width"}


@pytest.mark.parametrize("key", ["width", "colour + width"])
def test_fig2_runs(key):
    model = horseshoe_crabs(key)
    runs = backtracking_step_sizes(model)
    assert set(runs) == set(FIG2_METHODS)
    _, _, L_star = loglinear_optimum(model)
    for r in runs.values():
        assert r["status"] == "converged"
        assert r["elbo"].size == r["rho"].size + 1
        assert np.all(np.diff(r["elbo"]) > 0)  # backtracking accepts only steps that raise L
        assert r["elbo"][-1] == pytest.approx(L_star, abs=1e-4)
    # the ELBO with its constants: the exact ELBO at the start q = N(0, I / 173)
    assert runs["T with Corollary 1"]["elbo"][0] == pytest.approx(
        float(model.exact_elbo(np.zeros(model.d), np.eye(model.d) / 173)), abs=1e-9)
    assert np.all(runs["T with Corollary 1"]["rho"] == 1.0)
    assert runs["T by Theorem 1(ii)"]["rho"][0] < 1e-3
    fig = step_size_figure(runs, L_star, title="t")
    assert len(fig.data) == 4 and fig.layout.yaxis.type == "log" and fig.layout.yaxis2.type == "log"
    assert all(np.all(np.asarray(t.y) > 0) for t in fig.data)
