"""vilab.algorithms: the step-size and stopping rules as stated by Tan (2025) Sec. 4.1 / Table 2,
divergence as a status on a non-log-concave target, jit-ability, reuse of compiled loops, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import vilab  # noqa: F401
from vilab.algorithms import State, initial_state, run, run_sweep, step
from vilab.algorithms import oracle, trace_count
from vilab.algorithms.core import logdet_sigma_of, sigma_of
from vilab.family.gaussian import CholCov, MeanCov
from vilab.targets import gaussian_target
from vilab.targets.papers import bivariate_cauchy, horseshoe_crab_toy, kumar_t2

T2_INIT = CholCov(np.array([-2.0, 2.5]), 0.2 * np.eye(2))


def _elbo(target, chart, mu, M):
    Sigma = sigma_of(chart, jnp.asarray(M))
    return float(oracle.elbo_exact(target, jnp.asarray(mu), Sigma, logdet_sigma_of(chart, jnp.asarray(M))))


@pytest.mark.parametrize("name", ["gd-mv", "kappa", "xi", "tan-1N"])
def test_backtracking_takes_the_largest_rho_that_keeps_q_proper_and_increases_the_elbo(name):
    """Tan (2025) Sec. 4.1: at every iteration rho is the largest of {1, 0.1, 0.01, ...} such that
    the variance stays positive and L increases (restarted at 1 each time). Checked step by step:
    the accepted rho increases L, and ten times that rho (when below 1) does not qualify."""
    t = horseshoe_crab_toy()
    tr = run(name, t, (np.array([0.0]), np.array([[0.1]])), 300, 1.0, schedule="backtracking", rel_tol=1e-7)
    chart = tr.extra["chart"]
    assert tr.status == "converged" and np.all(np.diff(tr.extra["elbo"]) > 0)
    exps = np.log10(tr.step_sizes)
    assert np.allclose(exps, np.round(exps), atol=1e-12) and np.all(tr.step_sizes <= 1.0)
    for k in range(min(tr.n_steps, 20)):
        rho = float(tr.step_sizes[k])
        mu, M = tr.mean[k], tr.extra["factor"][k]
        L_old = tr.extra["elbo"][k]
        assert _elbo(t, chart, tr.mean[k + 1], tr.extra["factor"][k + 1]) > L_old
        if rho < 1.0:
            nxt = step(name, t, State(jnp.asarray(mu), jnp.asarray(M)), 10 * rho)
            S = np.asarray(sigma_of(chart, nxt.M))
            if np.all(np.isfinite(S)) and np.linalg.eigvalsh(S)[0] > 0:
                assert _elbo(t, chart, nxt.mu, nxt.M) <= L_old, (k, rho)


def test_stopping_rules_fire_exactly_when_stated():
    """rel_tol: stop at the first step with |L_new - L_old| < tol |L_new| (Tan Table 2's rule);
    kl_tol: stop at the first iterate with KL < tol; otherwise max_steps with exactly n_steps."""
    t = horseshoe_crab_toy()
    tr = run("xi", t, (np.array([0.5]), np.array([[0.02]])), 300, 1.0, schedule="backtracking", rel_tol=1e-7)
    L = tr.extra["elbo"]
    rel = np.abs(np.diff(L)) / np.abs(L[1:])
    assert tr.status == "converged" and rel[-1] < 1e-7 and np.all(rel[:-1] >= 1e-7)
    t2 = kumar_t2()
    tr = run("srvn", t2, T2_INIT, 300, 0.5, kl_tol=1e-8)
    assert tr.status == "converged" and tr.objective[-1] < 1e-8 and np.all(tr.objective[:-1] >= 1e-8)
    tr = run("srvn", t2, T2_INIT, 13, 0.5, kl_tol=1e-8)
    assert tr.status == "max_steps" and tr.n_steps == 13 and tr.step_sizes.shape == (13,)
    # a start that already meets the tolerance takes no step
    tr = run("vn", t2, MeanCov(t2.mean, t2.cov), 10, 1.0, kl_tol=1e-8)
    assert tr.status == "converged" and tr.n_steps == 0


def test_compiled_loop_is_reused_across_starts_steps_tolerances_and_n_steps():
    """A slider change (start, step size, tolerance, maximum steps in the same power of two) reuses
    the compiled loop; a shorter run is the prefix of a longer one."""
    t2 = kumar_t2()
    long = run("tan-2N", t2, T2_INIT, 1000, 0.3)
    # switching a stopping rule on is a different loop of the runner (it observes every step);
    # its value, the start, the step size and n_steps are run-time values
    run("tan-2N", t2, T2_INIT, 1000, 0.2, kl_tol=1e-3)
    run("tan-2N", t2, T2_INIT, 1000, 0.2, rel_tol=1e-3)
    n_traced = trace_count()
    again = run("tan-2N", t2, T2_INIT, 1000, 0.3)
    short = run("tan-2N", t2, T2_INIT, 600, 0.3, kl_tol=1e-6)
    other = run("tan-2N", t2, CholCov(np.zeros(2), np.eye(2)), 700, 0.7, rel_tol=1e-9)
    assert trace_count() == n_traced and np.array_equal(again.mean, long.mean)
    assert short.status == "converged" and other.status == "converged"
    k = short.n_steps
    assert np.array_equal(short.mean, long.mean[:k + 1]) and np.array_equal(short.cov, long.cov[:k + 1])
    sweep_a = run_sweep("tan-2N", t2, T2_INIT, 1000, [0.1, 0.3, 0.5])
    n_traced = trace_count()
    sweep_b = run_sweep("tan-2N", t2, T2_INIT, 900, [0.2, 0.3])  # padded to the same 4 lanes
    assert trace_count() == n_traced and len(sweep_a) == 3 and len(sweep_b) == 2
    # vmapped lanes agree with the single run up to rounding (batched linear algebra)
    assert sweep_a[1].n_steps == 1000 and np.allclose(sweep_a[1].mean, long.mean, rtol=0, atol=1e-10)
    assert sweep_b[1].n_steps == 900 and np.allclose(sweep_b[1].mean, long.mean[:901], rtol=0, atol=1e-10)


def test_precision_update_diverges_on_the_cauchy_while_the_T_update_stays_positive_definite():
    """Tan (2025) Sec. 7 / digest Sec. 8c: with stochastic second-order (Price) gradients on the
    bivariate Cauchy, the natural-parameter update loses positive definiteness (a status, no NaN),
    the Cholesky-of-precision update keeps Sigma positive definite along the whole run."""
    t = bivariate_cauchy()
    init = MeanCov(np.zeros(2), 10.0 * np.eye(2))
    for name in ("lambda", "vn", "xi"):
        tr = run(name, t, init, 300, 0.5, key=jax.random.PRNGKey(1), grads="second")
        assert tr.status == "diverged: precision lost positive definiteness", (name, tr.status)
        assert tr.n_steps == 0 and np.all(np.isfinite(tr.objective))
    tr = run("tan-2N-cor1", t, init, 300, 0.05, key=jax.random.PRNGKey(1), grads="second")
    assert tr.status == "max_steps" and np.all(np.isfinite(tr.objective))
    assert np.all(np.linalg.eigvalsh(tr.cov) > 0) and np.all(np.abs(np.diagonal(tr.extra["factor"], 0, 1, 2)) > 0)
    tr = run("lambda", t, init, 300, 0.05, key=jax.random.PRNGKey(1), grads="second")
    assert tr.diverged and 0 < tr.n_steps < 300 and np.all(np.linalg.eigvalsh(tr.cov) > 0)


def test_steps_are_jit_able():
    """One update (exact or stochastic gradients) compiles with jax.jit and matches the eager step."""
    t2 = kumar_t2()
    for name in ("tan-2N-cor1", "srvn", "fbgvi", "lambda"):
        s0 = initial_state(name, T2_INIT)
        f = jax.jit(lambda s, r, key: step(name, t2, s, r, key=key, grads="second"))
        a, b = f(s0, 0.3, jax.random.PRNGKey(2)), step(name, t2, s0, 0.3, key=jax.random.PRNGKey(2), grads="second")
        assert np.allclose(a.mu, b.mu, atol=1e-12) and np.allclose(a.M, b.M, atol=1e-12)


def test_more_bad_input():
    t2 = kumar_t2()
    with pytest.raises(ValueError, match="singular"):
        run("srvn", t2, CholCov(np.zeros(2), np.array([[1.0, 0.0], [0.5, 0.0]])), 10, 0.5)
    with pytest.raises(ValueError, match="lower triangular"):
        run("srvn", t2, CholCov(np.zeros(2), np.array([[1.0, 0.3], [0.5, 1.0]])), 10, 0.5)
    with pytest.raises(ValueError, match="only tan-1S"):
        run("srvn", t2, T2_INIT, 10, 0.5, blocks=(1, 1))
    with pytest.raises(ValueError, match="add up to"):
        run("tan-2S", t2, T2_INIT, 10, 0.5, local_sizes=(1, 1), global_size=1)
    with pytest.raises(ValueError, match="kl_tol"):
        run("srvn", t2, T2_INIT, 10, 0.5, kl_tol=-1.0)
    with pytest.raises(ValueError, match="Gaussian target"):
        run("srvn", bivariate_cauchy(), T2_INIT, 10, 0.5, grads="first", kl_tol=1e-3)
    with pytest.raises(ValueError, match="dimension"):
        run("srvn", t2, MeanCov(np.zeros(3), np.eye(3)), 10, 0.5)
    with pytest.raises(ValueError, match="step size"):
        run_sweep("srvn", t2, T2_INIT, 10, [0.5, 0.0])


def test_fbgvi_reference_numbers():
    """Kumar digest Secs. 2.6 and 7: FB-GVI is exact in one step at h = 1/a on an isotropic
    Gaussian target N(mu, I/a), and on T2 with h = 1.5/lambda_max it stalls at KL = 0.451."""
    a = 4.0
    iso = gaussian_target(np.array([1.0, -0.5]), precision=a * np.eye(2))
    tr = run("fbgvi", iso, MeanCov(np.array([-1.5, 2.0]), np.array([[2.0, 0.3], [0.3, 0.5]])), 5, 1 / a,
             kl_tol=1e-12)
    assert tr.status == "converged" and tr.n_steps == 1
    t2 = kumar_t2()
    lmax = float(np.linalg.eigvalsh(np.linalg.inv(t2.cov))[-1])
    tr = run("fbgvi", t2, T2_INIT, 3000, 1.5 / lmax, kl_tol=1e-8)
    assert tr.status == "max_steps" and tr.objective[-1] == pytest.approx(0.451, abs=1e-3)
    assert abs(tr.objective[-1] - tr.objective[-100]) < 1e-10  # a fixed point, not slow convergence
