"""The update catalogue (vilab.algorithms): exactness, convergence, divergence, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import vilab  # noqa: F401
from vilab.algorithms import METHODS, initial_state, list_methods, run, run_sweep, step
from vilab.family.gaussian import CholCov, CholPrec, MeanCov
from vilab.targets import Target, gaussian_target
from vilab.targets.papers import bivariate_cauchy, horseshoe_crab_toy, kumar_t2, kumar_t3

# 3-D Gaussian target whose precision has the arrow pattern of Tan Eq. 4 (locals 1, 1; global 1)
P_ARROW = np.array([[2.0, 0.0, 0.5], [0.0, 1.5, 0.3], [0.5, 0.3, 2.0]])
ARROW = gaussian_target(np.array([1.0, -0.5, 0.3]), precision=P_ARROW, name="arrow Gaussian")
# block-diagonal covariance (blocks 2, 1)
BLOCK = gaussian_target(np.array([0.5, 0.0, -1.0]), cov=np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 2.0]]),
                        name="block Gaussian")
START = MeanCov(np.zeros(3), 0.5 * np.eye(3))

SAFE = {"kappa": 0.3, "xi": 0.5, "lambda": 0.5, "tan-1E": 0.2, "tan-1N": 0.5, "tan-2E": 0.2, "tan-2N": 0.5,
        "tan-2N-cor1": 0.5, "tan-1S": 0.5, "tan-2S": 0.5, "gd-mv": 0.2, "gd-mc": 0.2, "vn": 0.5, "srvn": 0.5,
        "bwgd": 0.2, "fbgvi": 0.2, "lsk": 0.5, "tan-1N-log": 0.5, "svgd": 0.01}


def test_catalogue_lists_every_method_with_modes():
    names = {m["name"] for m in list_methods()}
    assert names == set(METHODS) == set(SAFE)
    for m in list_methods():
        assert set(m["modes"]) == {"exact", "first", "second"} and m["paper"]


@pytest.mark.parametrize("name", sorted(SAFE))
def test_every_method_converges_to_the_exact_posterior(name):
    target, opts = ARROW, {}
    if name == "tan-1S":
        target, opts = BLOCK, {"blocks": (2, 1)}
    if name == "tan-2S":
        opts = {"local_sizes": (1, 1), "global_size": 1}
    tr = run(name, target, START, 3000, SAFE[name], kl_tol=1e-10, **opts)
    assert tr.status == "converged", (name, tr.status)
    assert np.allclose(tr.mean[-1], target.mean, atol=1e-4)
    assert np.allclose(tr.cov[-1], target.cov, atol=1e-4)
    assert tr.mean.shape == (tr.n_steps + 1, 3) and tr.cov.shape == (tr.n_steps + 1, 3, 3)
    assert tr.step_sizes.shape == (tr.n_steps,) and np.all(np.diff(tr.objective[-5:]) <= 1e-12)


@pytest.mark.parametrize("name", ["vn", "lambda"])
def test_vn_with_rho_one_is_exact_in_one_step(name):
    rng = np.random.default_rng(4)
    for d in (2, 3):
        A = rng.normal(size=(d, d))
        tgt = gaussian_target(rng.normal(size=d), precision=A @ A.T + 0.3 * np.eye(d))
        B = rng.normal(size=(d, d))
        tr = run(name, tgt, MeanCov(rng.normal(size=d), B @ B.T + np.eye(d)), 5, 1.0, kl_tol=1e-12)
        assert tr.status == "converged" and tr.n_steps == 1 and tr.objective[1] < 1e-12


def test_srvn_and_tan1N_are_the_same_update_with_exact_gradients():
    t = kumar_t2()
    init = CholCov(np.array([-2.0, 2.5]), 0.2 * np.eye(2))
    a, b = run("srvn", t, init, 20, 0.5), run("tan-1N", t, init, 20, 0.5)
    assert np.allclose(a.mean, b.mean, atol=1e-12) and np.allclose(a.cov, b.cov, atol=1e-12)


def test_backtracking_cholesky_columns_of_the_toy():
    """Tan digest Sec. 6 E1 [digest's own computation]: C, T (Thm 1(ii)) and T (Cor. 1) columns."""
    t = horseshoe_crab_toy()
    expected = {(0.0, 0.1): [(9, 0.01), (12, 0.01), (8, 0.1)], (0.5, 0.02): [(10, 0.1), (8, 0.1), (6, 0.1)],
                (2.0, 0.01): [(5, 0.1), (7, 0.1), (6, 1.0)]}
    for start, cells in expected.items():
        init = (np.array([start[0]]), np.array([[start[1]]]))
        for name, (n, rho) in zip(["tan-1N", "tan-2N", "tan-2N-cor1"], cells):
            tr = run(name, t, init, 200, 1.0, schedule="backtracking", rel_tol=1e-7)
            assert (tr.n_steps, float(np.min(tr.step_sizes))) == pytest.approx((n, rho)), (start, name)


def test_logistic_t3_methods_reach_the_same_optimum():
    t = kumar_t3()
    for name, rho, c0 in [("vn", 1.0, 1.0), ("srvn", 1.0, 0.3), ("bwgd", 0.05, 1.0)]:
        tr = run(name, t, CholCov(np.zeros(2), c0 * np.eye(2)), 2000, rho, rel_tol=1e-13)
        assert tr.status == "converged"
        assert -tr.extra["elbo"][-1] == pytest.approx(23.259848, abs=2e-6)
        assert np.allclose(tr.mean[-1], [1.45697, -0.24432], atol=2e-5)


def test_diverging_settings_report_a_status_not_nans():
    t = kumar_t2()
    lmax = 34.69549521227265
    cases = [("srvn", CholCov(np.array([-2.0, 2.5]), np.eye(2)), 1.0),   # Kumar digest Sec. 7
             ("gd-mv", CholCov(np.array([-2.0, 2.5]), 0.2 * np.eye(2)), 0.5 / lmax),
             ("kappa", CholCov(np.array([-2.0, 2.5]), np.eye(2)), 5.0),
             ("lambda", CholCov(np.array([-2.0, 2.5]), np.eye(2)), 3.0)]
    for name, init, rho in cases:
        tr = run(name, t, init, 500, rho, kl_tol=1e-8)
        assert tr.status.startswith("diverged: "), (name, tr.status)
        assert np.all(np.isfinite(tr.mean)) and np.all(np.isfinite(tr.cov))
        assert np.all(np.linalg.eigvalsh(tr.cov) > 0)


@pytest.mark.slow
def test_stochastic_gradients():
    """Second-order Tan Thm 2 estimates are exact for Gaussian targets (so the stochastic run
    converges exactly); first-order runs hover around the optimum."""
    tr = run("tan-2N-cor1", ARROW, START, 400, 0.5, key=jax.random.PRNGKey(3), grads="second", kl_tol=1e-10)
    assert tr.status == "converged"
    tr = run("tan-1N", ARROW, START, 400, 0.5, key=jax.random.PRNGKey(3), grads="second", kl_tol=1e-10)
    assert tr.status == "converged"
    t = kumar_t3()
    tr = run("tan-1N", t, CholCov(np.zeros(2), 0.3 * np.eye(2)), 3000, 0.02, key=jax.random.PRNGKey(0),
             grads="first", n_samples=4)
    assert tr.status == "max_steps"
    assert np.allclose(tr.mean[-1000:].mean(axis=0), [1.45697, -0.24432], atol=0.08)
    tr2 = run("vn", t, CholCov(np.zeros(2), 0.3 * np.eye(2)), 3000, 0.02, key=jax.random.PRNGKey(0),
              grads="second", n_samples=4)
    assert np.allclose(tr2.mean[-1000:].mean(axis=0), [1.45697, -0.24432], atol=0.08)


def test_run_sweep_matches_single_runs_and_single_step():
    t = kumar_t2()
    init = CholCov(np.array([-2.0, 2.5]), 0.2 * np.eye(2))
    rhos = [0.1, 0.5, 1.0]
    sweep = run_sweep("srvn", t, init, 300, rhos, kl_tol=1e-8)
    for rho, tr in zip(rhos, sweep):
        single = run("srvn", t, init, 300, rho, kl_tol=1e-8)
        assert tr.n_steps == single.n_steps and np.allclose(tr.mean, single.mean)
    s1 = step("srvn", t, initial_state("srvn", init), 1.0)
    assert np.allclose(s1.mu, sweep[2].mean[1]) and np.allclose(s1.M @ s1.M.T, sweep[2].cov[1])
    assert [tr.n_steps for tr in sweep] == [130, 22, 7]  # Kumar digest Sec. 7 table


def test_cholesky_starts_keep_their_factor():
    st = initial_state("tan-1N", CholCov(np.zeros(2), np.array([[-1.0, 0.0], [0.3, 2.0]])))
    assert float(st.M[0, 0]) == -1.0
    st = initial_state("tan-2N", CholPrec(np.zeros(2), np.array([[2.0, 0.0], [0.3, 1.0]])))
    assert float(st.M[1, 0]) == 0.3


def test_bad_input_raises_value_error():
    t = kumar_t2()
    init = MeanCov(np.zeros(2), np.eye(2))
    for rho in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="step size"):
            run("vn", t, init, 10, rho)
    with pytest.raises(ValueError, match="positive definite"):
        run("vn", t, MeanCov(np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]])), 10, 0.5)
    with pytest.raises(ValueError, match="Unknown method"):
        run("adam", t, init, 10, 0.5)
    with pytest.raises(ValueError, match="n_steps"):
        run("vn", t, init, 0, 0.5)
    with pytest.raises(ValueError, match="Exact gradients"):
        run("vn", bivariate_cauchy(), init, 10, 0.5)
    with pytest.raises(ValueError, match="backtracking"):
        run("vn", t, init, 10, 0.5, grads="first", schedule="backtracking")
    with pytest.raises(ValueError, match="blocks"):
        run("tan-1S", t, init, 10, 0.5)
    with pytest.raises(ValueError, match="Unknown option"):
        run("vn", t, init, 10, 0.5, tolerance=1e-3)
    half = Target("half-line", 1, lambda th: jnp.where(th[0] > 0, -th[0], -jnp.inf))
    with pytest.raises(ValueError, match="not finite"):
        run("vn", half, (np.array([-1.0]), np.eye(1)), 10, 0.5, grads="first", key=jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="grads='first'.*jax.random key"):  # a stochastic run needs a key
        run("vn", t, init, 10, 0.5, grads="first")
    with pytest.raises(ValueError, match="jax.random key"):  # a seed is turned into a key at the edge, not here
        run("vn", t, init, 10, 0.5, grads="second", key=3)
