"""Runs that blow up end "diverged: <reason>", never "max_steps" or "converged"; a backtracking ladder
that finds no ascent step ends "stalled" (issue 18, item 4); bad run settings raise ValueError.

The reproducers are the tester's (step sizes past the linear-stability limits of
vilab.theory.stability.stability_thresholds); the sweep checks every catalogue method past its limit, and
below it (no false alarms).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import vilab  # noqa: F401  (x64)
import vilab.theory.fields as vf
from vilab import core
from vilab.family import natgrad
from vilab.algorithms import optim
from vilab.algorithms import algorithm, run, run_sweep
from vilab.algorithms.core import valid_code
from vilab.core import CODES, COLLAPSED, COV_EXPLODED, OBJ_EXPLODED, STATUSES, Algorithm, Trace
from vilab.core.trace import blowup_code, check_status, first_failure
from vilab.divergences.stochastic import run_sgd
from vilab.family.dense import GaussianFamily, MomentFamily
from vilab.family.lowrank import DLRPrecFamily
from vilab.family.gaussian import CholCov, MeanCov
from vilab.theory.stability import stability_thresholds
from vilab.targets import regression as R
from vilab.targets.basic import gaussian_target, rotated_gaussian_2d

A2 = np.array([[3.0, 1.0], [1.0, 2.0]])  # condition number 2.6
START2 = MeanCov(np.zeros(2), np.eye(2))
ENDED = ("max_steps", "converged", "stalled")


def _a2_target():
    return gaussian_target(np.zeros(2), precision=A2)


def _exploded(tr) -> bool:
    """The blow-up the tester saw, computed here from the trace alone: over the last quarter of the
    rows the objective is more than 100 max(1, |start|, |best|) above its best, or the final
    covariance has an eigenvalue outside [1e-150, 1e150] or condition number above 1e16."""
    o = np.asarray(tr.objective, float)
    if o.size >= 4 and np.isfinite(o).any():
        best = np.nanmin(o)
        top = np.nanmax(o[-max(1, o.size // 4):])
        if top - best > 100 * max(1.0, abs(o[0]), abs(best)):
            return True
    ev = np.linalg.eigvalsh(tr.cov[-1])
    return bool(ev[0] < 1e-150 or ev[-1] > 1e150 or ev[-1] / ev[0] > 1e16)


# ------------------------------------------------------------------------------------- reproducers


def test_tan2N_on_an_ill_conditioned_target_past_its_limit_diverges():
    """tan-2N, rotated Gaussian with condition number 1e8, rho = 4 (twice its limit 2): the KL went
    from 7.5e7 to 4e24 (Sigma -> 0) and the run said "max_steps"."""
    tr = run("tan-2N", rotated_gaussian_2d(1e8), START2, 200, 4.0)
    assert tr.status == CODES[OBJ_EXPLODED][0], tr.status
    assert tr.objective[-1] > 1e6 * tr.objective[0]  # it did blow up (the trace keeps the iterates)
    assert "final row" in tr.note


def test_tan2N_cor1_just_past_its_limit_diverges():
    """tan-2N-cor1 at 1.01 times its limit (Sigma's smallest eigenvalue went to 1e-268, "max_steps")."""
    rho = 1.01 * stability_thresholds(np.linalg.inv(rotated_gaussian_2d(1e8).cov))["tan-2N-cor1"]
    tr = run("tan-2N-cor1", rotated_gaussian_2d(1e8), START2, 500, rho)
    assert tr.status.startswith("diverged: "), tr.status
    assert np.all(np.isfinite(tr.cov)) and np.all(np.linalg.eigvalsh(tr.cov[-1]) > 0)


@pytest.mark.parametrize("name", ["gd-mc", "tan-1E", "bwgd", "fbgvi", "gd-mv"])
def test_euclidean_and_wasserstein_rules_at_twice_their_limit_diverge(name):
    """gd-mc, tan-1E, bwgd, fbgvi, gd-mv at twice their limits: the KL rose by three to five orders of
    magnitude (0.7 -> 1e3 .. 2e5) and the runs said "max_steps"."""
    rho = 2.0 * stability_thresholds(A2)[name]
    tr = run(name, _a2_target(), START2, 500, rho)
    assert tr.status == CODES[OBJ_EXPLODED][0], (name, tr.status)
    assert np.max(tr.objective[-125:]) > 100 * tr.objective[0]


def test_sdb_with_plain_sgd_at_a_large_rate_diverges_and_a_small_rate_does_not():
    """SDb (Chen, Nott & Tan) with SGD at rate 0.1 collapsed Sigma (KL 1e13) under "max_steps"."""
    t = rotated_gaussian_2d(10.0)
    bad = run_sgd(t, "sdb", key=core.as_key(0), n_iter=2000, step="sgd", learning_rate=0.1, window=100)
    assert bad.status.startswith("diverged: "), bad.status
    assert bad.n_steps < 2000
    good = run_sgd(t, "sdb", key=core.as_key(0), n_iter=2000, step="sgd", learning_rate=0.01, window=100)
    assert good.status == "max_steps" and good.objective[-1] < 1e-6


def test_a_backtracking_ladder_with_no_ascent_step_stalls_it_does_not_converge():
    """A ladder with one rung that overshoots: no step increases the ELBO, 0 steps taken. It used to
    say "converged"; it says "stalled" (run_1d and the catalogue alike)."""
    t = gaussian_target(np.array([1.0]), precision=np.array([[4.0]]))
    a = vf.run_1d("gd-mv", t, -3.0, 1.0, 100.0, schedule="backtracking", max_backtracks=1)
    assert a.status == "stalled" and a.n_steps == 0 and "ladder" in a.note
    b = run("gd-mv", t, MeanCov(np.array([-3.0]), np.array([[1.0]])), 50, 100.0, schedule="backtracking",
            max_backtracks=1)
    assert b.status == "stalled" and b.n_steps == 0 and b.note == a.note
    # with enough rungs the same start converges under Tan's rule
    c = run("gd-mv", t, MeanCov(np.array([-3.0]), np.array([[1.0]])), 500, 1.0, schedule="backtracking",
            rel_tol=1e-7)
    assert c.status == "converged" and c.n_steps > 0
    # "stalled" belongs to the status vocabulary
    assert "stalled" in STATUSES and check_status("stalled") == "stalled"
    Trace(np.zeros((1, 1)), None, np.zeros(1), np.zeros(0), status="stalled")


def test_a_ladder_that_stalls_mid_run_reports_stalled_and_a_tolerance_that_fires_wins():
    """The catalogue reports code 10 ("stalled") when the next ladder is empty; a run whose stopping
    rule fires at that same step is "converged" (the rule is a convergence test)."""
    t = gaussian_target(np.array([1.0]), precision=np.array([[4.0]]))
    start = MeanCov(np.array([-1.5]), np.array([[2.25]]))
    free = run("kappa", t, start, 300, 1.0, schedule="backtracking")
    assert free.status == "stalled" and free.n_steps > 0 and free.objective[-1] < 1e-10
    tol = run("kappa", t, start, 300, 1.0, schedule="backtracking", rel_tol=1e-9)
    assert tol.status == "converged"


# --------------------------------------------------------------------------- the checks themselves


class _S(NamedTuple):
    x: jax.Array
    k: jax.Array


def _toy(var_of, obj_of, cov_of=None):
    """An algorithm whose step reports no code: the runner's own checks must catch the blow-up."""

    def observe(s):
        row = {"mean": jnp.zeros(2), "objective": obj_of(s.k)}
        if cov_of is not None:
            row["cov"] = cov_of(s.k)
        else:
            row["var"] = var_of(s.k)
        return row

    return Algorithm(lambda key, x: _S(jnp.float64(x), jnp.float64(0.0)),
                     lambda key, s, b: (_S(s.x, s.k + 1.0), {}), observe, uses_key=False)


def test_a_variance_below_1e_150_is_caught_in_the_loop_and_the_last_valid_row_kept():
    alg = _toy(lambda k: jnp.array([1.0, 10.0 ** (-20.0 * k)]), lambda k: jnp.float64(0.0))
    key = jax.random.PRNGKey(0)
    for kw in ({}, {"chunk_size": 2}):
        tr = core.run(alg, key, alg.init(key, 0.0), 20, **kw)
        assert tr.status == CODES[COLLAPSED][0], (kw, tr.status)
        assert tr.n_steps == 7 and tr.var[-1, 1] == pytest.approx(1e-140)  # step 8 (1e-160) rejected
    thin = core.run(alg, key, alg.init(key, 0.0), 20, record_every=3)  # found at row 9: no bad row kept
    assert thin.status == CODES[COLLAPSED][0] and np.all(thin.var >= 1e-150) and thin.n_steps <= 7
    many = core.run_many(alg, jnp.stack([key, key]), core.stack([alg.init(key, 0.0)] * 2), 20)
    assert all(t.status == CODES[COLLAPSED][0] and t.n_steps == 7 for t in many)
    big = _toy(lambda k: jnp.array([1.0, 10.0 ** (20.0 * k)]), lambda k: jnp.float64(0.0))
    tr = core.run(big, key, big.init(key, 0.0), 20)
    assert tr.status == CODES[COV_EXPLODED][0] and tr.n_steps == 7


def test_a_numerically_singular_covariance_with_sane_variances_is_caught_on_the_final_row():
    """Variances 1 and 1e-2k stay far above 1e-150 (the in-loop check passes) while the condition
    number passes 1e16; rotated by 45 degrees the diagonal even stays near 1/2."""
    cov = lambda k: jnp.diag(jnp.array([1.0, 10.0 ** (-2.0 * k)]))  # noqa: E731
    alg = _toy(None, lambda k: jnp.float64(0.0), cov_of=cov)
    key = jax.random.PRNGKey(0)
    assert core.run(alg, key, alg.init(key, 0.0), 7).status == "max_steps"  # condition number 1e14
    tr = core.run(alg, key, alg.init(key, 0.0), 10)
    assert tr.status == CODES[COLLAPSED][0] and "final row" in tr.note and tr.n_steps == 10
    R45 = jnp.array([[1.0, -1.0], [1.0, 1.0]]) / jnp.sqrt(2.0)
    rot = _toy(None, lambda k: jnp.float64(0.0), cov_of=lambda k: R45 @ cov(k) @ R45.T)
    assert core.run(rot, key, rot.init(key, 0.0), 7).status == "max_steps"
    tr = core.run(rot, key, rot.init(key, 0.0), 15)  # the small eigenvalue is lost to rounding
    assert tr.status.startswith("diverged: covariance")
    k, why = first_failure(np.asarray(tr.cov))
    assert k is not None and 8 <= k <= 9 and why.startswith("diverged: ")


def test_the_objective_rule_handles_negative_objectives_and_spares_transients():
    key = jax.random.PRNGKey(0)
    # a loss starting at -1000 that climbs by 5e4 (50 times its scale): not an explosion
    mild = _toy(lambda k: jnp.ones(2), lambda k: -1000.0 + 5e4 * jnp.minimum(k, 1.0))
    assert core.run(mild, key, mild.init(key, 0.0), 20).status == "max_steps"
    # ... by 2e5 (200 times): an explosion
    wild = _toy(lambda k: jnp.ones(2), lambda k: -1000.0 + 2e5 * jnp.minimum(k, 1.0))
    tr = core.run(wild, key, wild.init(key, 0.0), 20)
    assert tr.status == CODES[OBJ_EXPLODED][0] and tr.n_steps == 20  # judged at the end, rows kept
    # a spike of 1e17 that decays (Tan's T-update from a poor start): spared
    spike = _toy(lambda k: jnp.ones(2), lambda k: 1e17 * jnp.where(k > 0, 0.5 ** k, 1e-17))
    assert core.run(spike, key, spike.init(key, 0.0), 200).status == "max_steps"
    # unknown (NaN) objectives are never judged
    nan = _toy(lambda k: jnp.ones(2), lambda k: jnp.float64(jnp.nan))
    assert core.run(nan, key, nan.init(key, 0.0), 20).status == "max_steps"
    assert blowup_code(np.array([0.0, 1.0, 1e9])) == 0  # fewer than 4 rows: too short to judge
    assert blowup_code(np.array([1.0, 0.5, 1e9, np.inf])) == OBJ_EXPLODED


def test_step_codes_of_the_catalogue_and_the_families_read_the_eigen_range_off_their_factors():
    mu = jnp.zeros(2)
    # Cholesky factor with diag ratio 1e9: condition number of Sigma at least 1e18
    C = jnp.diag(jnp.array([1.0, 1e-9]))
    assert int(valid_code("chol_cov", mu, C, C @ C.T)) == COLLAPSED
    assert int(valid_code("chol_cov", mu, jnp.diag(jnp.array([1.0, 1e-7])), jnp.eye(2))) == 0
    S = jnp.diag(jnp.array([1.0, 1e-17]))
    assert int(valid_code("mean_cov", mu, S, S)) == COLLAPSED
    P = jnp.diag(jnp.array([1.0, 1e-17]))  # precision: Sigma's largest eigenvalue 1e17, ratio 1e17
    assert int(valid_code("mean_prec", mu, P, jnp.eye(2))) == COLLAPSED
    fam = GaussianFamily(2, "chol_prec")
    lam_bad = fam.pack(mu, jnp.diag(jnp.array([1e80, 1e80])))  # Sigma = 1e-160 I
    lam_ok = fam.pack(mu, jnp.diag(jnp.array([1e3, 1e-3])))
    assert int(fam.validity(lam_bad)) == COLLAPSED and int(fam.validity(lam_ok)) == 0
    diag = GaussianFamily(2, "chol_cov", diagonal=True)
    assert int(diag.validity(jnp.array([0.0, 0.0, 1e80, 1.0]))) == COV_EXPLODED
    assert int(diag.validity(jnp.array([0.0, 0.0, 1e9, 1e-9]))) == 0  # diagonal: no condition limit
    mom = MomentFamily(2)
    assert int(mom.validity((mu, jnp.diag(jnp.array([1.0, 1e-20]))))) == COLLAPSED
    assert int(mom.validity((mu, jnp.eye(2)))) == 0
    dlr = DLRPrecFamily(2, 1)
    assert int(dlr.validity((mu, jnp.array([1e-160, 1e-160]), jnp.zeros((2, 1))))) == COV_EXPLODED
    assert int(dlr.validity((mu, jnp.ones(2), jnp.ones((2, 1))))) == 0


# ------------------------------------------------------------------------------------------- sweep

# (tan-1E, lambda and tan-1N take the same steps as gd-mc, vn and srvn with exact gradients)
_SWEEP_METHODS = ["gd-mc", "bwgd", "fbgvi", "gd-mv", "vn", "srvn", "tan-2N", "tan-2N-cor1", "tan-2E"]


@pytest.mark.slow
def test_sweep_past_the_limits_no_blow_up_ends_quietly_and_below_them_no_false_alarm():
    """Every catalogue method on three 2-D Gaussian targets (one compiled loop per method: the targets
    are members of one family), 400 steps at 0.5, 2, 4 and 10 times its limit. Past the limit: no run
    whose objective exploded or whose covariance left the sane range ends max_steps / converged /
    stalled, and no run that ends so has a KL a million times its start. At half the limit: no run
    is flagged, and on the well-conditioned target every run has converged (KL < 1e-6)."""
    targets = {"A2": _a2_target(), "k1e2": rotated_gaussian_2d(1e2), "k1e4": rotated_gaussian_2d(1e4)}
    factors = [0.5, 2.0, 4.0, 10.0]
    n_flagged = 0
    for tname, t in targets.items():
        lim = stability_thresholds(np.linalg.inv(t.cov))
        for name in _SWEEP_METHODS:
            traces = run_sweep(name, t, START2, 400, [f * lim[name] for f in factors])
            for f, tr in zip(factors, traces):
                where = (tname, name, f, tr.status)
                if f < 1:
                    assert not tr.diverged, where
                    assert tr.objective[-1] <= tr.objective[0] + 1e-12, where
                    if tname == "A2":
                        assert tr.objective[-1] < 1e-6, where
                    continue
                if tr.status in ENDED:
                    assert not _exploded(tr), where
                    assert tr.objective[-1] < 1e6 * max(1.0, tr.objective[0]), where
                else:
                    n_flagged += 1
                    assert tr.status.startswith("diverged: "), where
    assert n_flagged >= 30  # of 81 runs past the limits: the sweep is not vacuous


# -------------------------------------------------------------------------------------- ValueErrors


def _alg():
    return algorithm("vn", _a2_target())


@pytest.mark.parametrize("kw", [
    {"n_steps": "5"}, {"n_steps": 2.5}, {"n_steps": True}, {"n_steps": -1},
    {"record_every": 0}, {"record_every": 1.5}, {"record_every": "2"},
    {"rel_tol": -1}, {"rel_tol": "x"}, {"rel_tol": [1e-3]}, {"rel_tol": 1e400}, {"rel_tol": float("nan")},
    {"below": 0.0}, {"chunk_size": 0}, {"chunk_size": True}, {"chunk_size": 2.0},
    {"max_time": -1.0}, {"max_time": "1"}, {"progress": 3}, {"should_stop": "yes"},
    {"start_iteration": -2}, {"rel_tol_on": 3},
])
def test_bad_run_settings_raise_value_error(kw):
    alg = _alg()
    key = jax.random.PRNGKey(0)
    s0 = alg.init(key, START2)
    n = kw.pop("n_steps", 5)
    with pytest.raises(ValueError):
        core.run(alg, key, s0, n, **kw)


def test_bad_run_many_and_resume_settings_raise_value_error():
    alg = _alg()
    key = jax.random.PRNGKey(0)
    s0 = alg.init(key, START2)
    keys, states = jnp.stack([key, key]), core.stack([s0, s0])
    for kw in ({"rel_tol": -1}, {"record_every": 0}, {"below": "x"}):
        with pytest.raises(ValueError):
            core.run_many(alg, keys, states, 5, **kw)
    with pytest.raises(ValueError):
        core.run_many(alg, keys, states, "5")
    tr = core.run(alg, key, s0, 3)
    for n in ("5", -1, 1.5):
        with pytest.raises(ValueError):
            core.resume(alg, tr, n)
    with pytest.raises(ValueError):
        core.resume(alg, tr, 2, hyper=[("rho", 0.5)])
    with pytest.raises(ValueError):
        core.slope_rule(5, -1.0)
    with pytest.raises(ValueError):
        core.slope_rule(2.5, 0.1)


@pytest.mark.parametrize("kw", [
    {"tol": -1}, {"tol": "1e-3"}, {"n_iter": "5"}, {"n_iter": 2.5}, {"n_iter": 0}, {"n_iter": True},
    {"max_seconds": -1.0}, {"batch_size": "5"}, {"chunk_iters": 0}, {"n_elbo_draws": 0},
])
def test_bad_optim_settings_raise_value_error(kw):
    m = R.crab_intercept()
    kw = {"n_iter": 10, **kw}
    with pytest.raises(ValueError):
        optim.run(m, "snngm", key=jax.random.PRNGKey(0), alpha=0.01, param="kappa", estimator="exact", **kw)


@pytest.mark.parametrize("b", ["x", None, 1.5, -0.1, 1e400])
def test_bad_optax_betas_raise_value_error(b):
    with pytest.raises(ValueError, match="b1"):
        optim.adam(0.1, b1=b)


def test_natgrad_entry_points_check_their_input_when_called_eagerly():
    z, eye = np.zeros(2), np.eye(2)
    bad_sigma = np.array([[1.0, 2.0], [2.0, 1.0]])  # indefinite
    cases = [
        (natgrad.update_kappa, (z, bad_sigma, z, eye, 0.1), "positive definite"),
        (natgrad.update_xi, (z, -eye, z, eye, 0.1), "positive definite"),
        (natgrad.natural_grad_mean_cov, (z, eye, np.zeros(3), eye), "length 2"),
        (natgrad.natural_grad_mean_cov, (z, np.ones((2, 3)), z, eye), "square"),
        (natgrad.update_chol_cov, (z, np.array([[1.0, 1.0], [0.0, 1.0]]), z, eye, 0.1), "lower triangular"),
        (natgrad.update_chol_prec, (z, np.diag([1.0, 0.0]), z, eye, 0.1), "zero on its diagonal"),
        (natgrad.update_chol_cov, (z, eye, z, eye, "big"), "step size"),
        (natgrad.natural_grad_chol_prec, (np.array([np.nan, 0.0]), eye, z, eye), "non-finite"),
        (natgrad.gaussian_target_grads, (z, eye, z, bad_sigma), "positive definite"),
        (natgrad.elbo_grads_from_expectations, (eye, z, np.ones((3, 3))), "2 x 2"),
        (natgrad.grad_chol_prec, (np.diag([1.0, 0.0]), eye), "zero on its diagonal"),
        (natgrad.fisher_block_I, (np.ones((2, 2)),), "lower triangular"),
    ]
    for fn, args, msg in cases:
        with pytest.raises(ValueError, match=msg):
            fn(*args)
    # valid input passes, and traced calls (jit / vmap, the compiled loops) skip the checks
    mu2, S2 = natgrad.update_kappa(z, eye, z, eye, 0.1)
    np.testing.assert_allclose(S2, 1.2 * eye)
    jitted = jax.jit(natgrad.update_kappa)(z, eye, z, eye, 0.1)
    np.testing.assert_allclose(jitted[1], S2)
    many = jax.vmap(lambda r: natgrad.update_chol_cov(z, eye, z, eye, r)[1])(jnp.array([0.1, 0.2]))
    assert many.shape == (2, 2, 2)
