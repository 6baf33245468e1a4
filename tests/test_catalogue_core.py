"""The update catalogue on vilab.core: the gradient contract of every method (Method.takes) against
brute-force Fisher solves, resume with a new step size, sweeps through run_many, the Trace of the
flows, and no driver loop of its own in the modules that moved onto the runner."""

from __future__ import annotations

import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vilab import core
from vilab.algorithms import METHODS, CatalogueState, algorithm, run, run_sweep
from vilab.algorithms.core import State, sigma_of
from vilab.gradients.expectations import gaussian_cubature5
from vilab.theory.flows import flow
from vilab.family.gaussian import CholCov, MeanCov
from vilab.family.natgrad import arrow_mask, block_mask
from vilab.targets import student_t_2d
from vilab.targets.papers import horseshoe_crab_toy, kumar_t2

from .reference import fisher as ref

ROOT = Path(__file__).resolve().parents[1]
T2_INIT = CholCov(np.array([-2.0, 2.5]), 0.2 * np.eye(2))

# --------------------------------------------------------------------------- the gradient contract

D = 3
_RNG = np.random.default_rng(11)
_A = _RNG.normal(size=(D, D))
PREC = _A @ _A.T + 0.5 * np.eye(D)
M_T = _RNG.normal(size=D)
MU = _RNG.normal(size=D)
_B = _RNG.normal(size=(D, D))
SIGMA = _B @ _B.T + 0.7 * np.eye(D)
STRUCT = {"tan-1S": {"blocks": (2, 1)}, "tan-2S": {"local_sizes": (1, 1), "global_size": 1}}
# the Fisher coordinates (tests/reference/fisher.py) in which each natural update moves along F^-1 grad
NATURAL_KIND = {"kappa": "mean_cov", "xi": "mean_prec", "lambda": "natural", "vn": "natural", "lsk": "natural",
                "tan-1N": "chol_cov", "tan-1N-log": "chol_cov_logdiag", "srvn": "chol_cov",
                "tan-2N": "chol_prec", "tan-2N-cor1": "cor1",
                "tan-1S": "blockdiag_chol_cov", "tan-2S": "arrow_chol_prec"}
EUCLIDEAN = {"gd-mv", "gd-mc", "tan-1E", "tan-2E"}
WASSERSTEIN = {"bwgd", "fbgvi"}
STEIN = {"svgd"}


def _svgd_direction(mu, V):
    """(dm, dV) of Gaussian SVGD with the kernel K(x, y) = x^T y + 1 by brute force: the velocity
    phi(x) = E_y[K(x, y) grad log p(y) + grad_y K(x, y)] (grad_y K by autodiff), then dm = E_x phi(x),
    dV = E_x[phi(x)(x - m)^T + (x - m) phi(x)^T]; every expectation by the degree-5 Gaussian cubature, exact
    here (the integrands are polynomials of degree <= 3 on this Gaussian target)."""
    grid, w = gaussian_cubature5(D)
    pts = mu + grid @ np.linalg.cholesky(V).T
    K = lambda x, y: x @ y + 1.0  # noqa: E731
    score = lambda y: -PREC @ (y - M_T)  # noqa: E731

    def phi(x):
        terms = jax.vmap(lambda y: K(x, y) * score(y) + jax.grad(K, argnums=1)(x, y))(jnp.asarray(pts))
        return jnp.asarray(w) @ terms

    P = np.asarray(jax.vmap(phi)(jnp.asarray(pts)))
    r = pts - mu
    dm = w @ P
    dV = (P * w[:, None]).T @ r + (r * w[:, None]).T @ P
    return np.concatenate([dm, dV.ravel()])


def _elbo_sigma(mu, Sigma):
    """The ELBO on the Gaussian target N(M_T, PREC^-1), up to a constant, in (mu, Sigma)."""
    r = mu - M_T
    return -0.5 * (jnp.sum(PREC * Sigma) + r @ PREC @ r) + 0.5 * jnp.linalg.slogdet(Sigma)[1]


def _start(name):
    """(mu, chart matrix) of the start, projected on a sparse method's pattern."""
    chart = METHODS[name].chart
    S = SIGMA
    if name == "tan-1S":
        S = SIGMA * block_mask((2, 1))
    if chart == "mean_cov":
        return MU, S
    if chart == "mean_prec":
        return MU, np.linalg.inv(S)
    if chart == "chol_cov":
        return MU, np.linalg.cholesky(S)
    T = np.linalg.cholesky(np.linalg.inv(S))
    if name == "tan-2S":
        T = T * arrow_mask((1, 1), 1)
    return MU, T


def _declared_gradient(name, mu, M):
    """(grad_mu, grad_X) with X = Method.takes, by autodiff of the ELBO in the chart's own matrix."""
    takes = METHODS[name].takes
    mu, M = jnp.asarray(mu), jnp.asarray(M)
    g_mu = jax.grad(lambda m: _elbo_sigma(m, sigma_of(METHODS[name].chart, M)))(mu)
    if takes == "grad_Sigma":
        S = sigma_of(METHODS[name].chart, M)
        G = jax.grad(lambda X: _elbo_sigma(mu, 0.5 * (X + X.T)))(S)
        return g_mu, G
    if takes == "grad_C":
        G = jnp.tril(jax.grad(lambda C: _elbo_sigma(mu, C @ C.T))(M))
    else:
        G = jnp.tril(jax.grad(lambda T: _elbo_sigma(mu, jnp.linalg.inv(T @ T.T)))(M))
    if name == "tan-1S":
        G = G * block_mask((2, 1))
    if name == "tan-2S":
        G = G * arrow_mask((1, 1), 1)
    return g_mu, G


def _direction(name, mu, M, grads, flat):
    """d/drho of flat(update(rho)) at rho = 0 (the update's direction)."""
    method = METHODS[name]
    structure = STRUCT.get(name, {})
    f = lambda r: flat(*method.update(jnp.asarray(mu), jnp.asarray(M), grads, r, structure))  # noqa: E731
    return np.asarray(jax.jvp(f, (jnp.float64(0.0),), (jnp.float64(1.0),))[1])


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_fed_the_gradient_it_declares_moves_along_the_brute_force_direction(name):
    """Method.takes names the gradient an update consumes (grad_Sigma, grad_C or grad_T). Fed that
    gradient (autodiff of the ELBO), each natural update moves along F^-1 grad in its coordinates
    (F the dense Fisher by autodiff of log q), each Euclidean update along grad itself, BW-GD and
    FB-GVI along the Wasserstein gradient (grad_mu, 2 (G V + V G)), Gaussian SVGD along the moments of its
    kernel's velocity field (:func:`_svgd_direction`)."""
    mu, M = _start(name)
    grads = _declared_gradient(name, mu, M)
    if name in NATURAL_KIND:
        kind, structure = NATURAL_KIND[name], STRUCT.get(name, {})
        if kind == "natural":  # the chart matrix is P; the natural coordinates take P as well
            flat = lambda m, P: ref.flatten_params(kind, m, P)  # noqa: E731
        else:
            flat = lambda m, F: ref.flatten_params(kind, m, F, **structure)  # noqa: E731
        lam = flat(jnp.asarray(mu), jnp.asarray(M))

        def elbo_lam(v):
            m, P, _ = ref.unflatten_params(kind, v, D, **structure)
            return _elbo_sigma(m, jnp.linalg.inv(P))

        F = ref.fisher_matrix(kind, mu, M, **structure)
        expected = np.linalg.solve(F, np.asarray(jax.grad(elbo_lam)(lam)))
        got = _direction(name, mu, M, grads, flat)
    else:
        got = _direction(name, mu, M, grads, lambda m, X: jnp.concatenate([m, X.ravel()]))
        g_mu, G = (np.asarray(a) for a in grads)
        if name in EUCLIDEAN:
            expected = np.concatenate([g_mu, G.ravel()])
        elif name in STEIN:
            expected = _svgd_direction(np.asarray(mu), np.asarray(M))
        else:
            V = np.asarray(M)
            expected = np.concatenate([g_mu, (2.0 * (G @ V + V @ G)).ravel()])
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-9 * np.abs(expected).max())


@pytest.mark.parametrize("name", ["srvn", "gd-mc"])
def test_feeding_grad_sigma_to_a_cholesky_method_gives_a_different_update(name):
    """The contract matters: srvn and gd-mc take grad_C; grad_Sigma in its place is another update."""
    assert METHODS[name].takes == "grad_C"
    mu, C = _start(name)
    g_mu, G_C = _declared_gradient(name, mu, C)
    G_S = jax.grad(lambda X: _elbo_sigma(jnp.asarray(mu), 0.5 * (X + X.T)))(jnp.asarray(C @ C.T))
    right = METHODS[name].step(State(jnp.asarray(mu), jnp.asarray(C)), (g_mu, G_C), 0.1)
    wrong = METHODS[name].step(State(jnp.asarray(mu), jnp.asarray(C)), (g_mu, jnp.tril(G_S)), 0.1)
    assert np.abs(np.asarray(right.M) - np.asarray(wrong.M)).max() > 1e-3


def test_list_methods_names_what_each_update_takes():
    from vilab.algorithms import list_methods

    takes = {m["name"]: m["takes"] for m in list_methods()}
    assert takes["srvn"] == takes["gd-mc"] == takes["tan-1N"] == "grad_C"
    assert takes["tan-2N"] == takes["tan-2S"] == "grad_T"
    assert takes["kappa"] == takes["vn"] == takes["bwgd"] == "grad_Sigma"


# --------------------------------------------------------------------------- the Algorithm on the runner

def _switched(alg, key, state, n1, n2, rho2):
    """A plain Python loop over alg.step that switches rho after n1 steps: the reference."""
    for t in range(n1 + n2):
        if t == n1:
            state = core.set_hyper(state, rho=rho2)
        key, sub = jax.random.split(key)
        state, _ = alg.step(sub, state, None)
    return state


@pytest.mark.parametrize("name, target, opts, rhos", [
    ("srvn", kumar_t2(), {}, (0.05, 0.3)),
    ("tan-2N-cor1", kumar_t2(), {"schedule": "backtracking"}, (0.02, 0.005)),
    ("bwgd", student_t_2d(4.0, 0.3), {"grads": "second", "n_samples": 2}, (0.01, 0.05)),
])
def test_resume_with_a_new_rho_equals_a_run_that_switched_at_step_50(name, target, opts, rhos):
    alg = algorithm(name, target, **opts)
    key = jax.random.PRNGKey(5)
    s0 = alg.init(key, T2_INIT, rho=rhos[0], target=target)
    first = core.run(alg, key, s0, 50)
    both = core.resume(alg, first, 50, hyper={"rho": rhos[1]})
    assert both.status == "max_steps" and both.n_steps == 100 and both.iterations.tolist() == list(range(101))
    assert np.all(both.step_sizes[:50] <= rhos[0]) and np.all(both.step_sizes[50:] <= rhos[1])
    ref_state = _switched(alg, key, s0, 50, 50, rhos[1])
    np.testing.assert_allclose(both.mean[-1], np.asarray(ref_state.mu), rtol=0, atol=1e-12)
    np.testing.assert_allclose(both.cov[-1], np.asarray(ref_state.Sigma), rtol=0, atol=1e-12)
    # and the resumed trace continues the first one row for row
    np.testing.assert_array_equal(both.mean[:51], first.mean)


def test_the_state_carries_mu_M_elbo_kl_and_the_step_size():
    alg = algorithm("vn", kumar_t2())
    s = alg.init(None, T2_INIT, rho=0.5, target=kumar_t2())
    assert isinstance(s, CatalogueState) and float(s.hyper["rho"]) == 0.5
    tr = core.run(alg, jax.random.PRNGKey(0), s, 3)
    assert tr.extra["elbo"].shape == (4,) and np.allclose(tr.objective, tr.extra["kl"])
    with pytest.raises(ValueError, match="Unknown setting"):
        core.set_hyper(s, alpha=1.0)
    fam = algorithm("vn", __import__("vilab.targets", fromlist=["rotated_gaussian_2d"]).rotated_gaussian_2d(3.0))
    st = fam.init(None, T2_INIT, rho=0.5)  # the algorithm of a member starts on that member
    assert st.params is not None
    from vilab.targets import banana

    with pytest.raises(ValueError, match="not a member of the family"):
        fam.init(None, T2_INIT, rho=0.5, target=banana(0.5))


def test_algorithm_is_memoized_on_its_settings_and_a_family():
    from vilab.targets import rotated_gaussian_2d

    t2 = kumar_t2()
    assert algorithm("srvn", t2) is algorithm("srvn", t2)
    assert algorithm("srvn", t2) is not algorithm("srvn", t2, grads="first")
    # family members: one Algorithm each (its init runs on that member), one shared step and loop
    assert algorithm("vn", rotated_gaussian_2d(3.0)).step is algorithm("vn", rotated_gaussian_2d(300.0)).step
    with pytest.raises(ValueError, match="grads"):
        algorithm("srvn", t2, grads="none")
    with pytest.raises(ValueError, match="backtracking"):
        algorithm("srvn", t2, grads="first", schedule="backtracking")


def test_a_sweep_through_run_many_equals_the_individual_runs():
    t2 = kumar_t2()
    rhos = [0.05, 0.3, 1.0, 2.5]
    sweep = run_sweep("srvn", t2, T2_INIT, 200, rhos, kl_tol=1e-8)
    for rho, s in zip(rhos, sweep):
        one = run("srvn", t2, T2_INIT, 200, rho, kl_tol=1e-8)
        assert (s.status, s.n_steps) == (one.status, one.n_steps)
        np.testing.assert_allclose(s.mean, one.mean, rtol=0, atol=1e-10)
        np.testing.assert_allclose(s.objective, one.objective, rtol=0, atol=1e-10)
    assert sweep[0].status == "max_steps" and sweep[1].status == "converged"
    # the same with the runner directly: a batch of states that differ in hyper["rho"]
    alg = algorithm("srvn", t2)
    key = jax.random.PRNGKey(0)
    states = core.stack([alg.init(key, T2_INIT, rho=r, target=t2) for r in rhos])
    many = core.run_many(alg, jax.random.split(key, len(rhos)), states, 200, below=1e-8, below_on="kl")
    assert [m.n_steps for m in many] == [s.n_steps for s in sweep]


def test_backtracking_stall_is_stalled_and_counts_only_steps_taken():
    """Tan (2025) Table 2's natural-lambda column from (0, 0.1): 6 steps; a run from the optimum takes none.
    A ladder with no ascent step is "stalled" (issue 18): only a convergence test says "converged"."""
    t = horseshoe_crab_toy()
    tr = run("lambda", t, (np.array([0.0]), np.array([[0.1]])), 1000, 1.0, schedule="backtracking", rel_tol=1e-7)
    assert (tr.status, tr.n_steps) == ("converged", 6)
    opt = run("lambda", t, (np.array([0.0]), np.array([[0.1]])), 200, 1.0, schedule="backtracking")
    assert opt.status == "stalled" and "no step size" in opt.note and opt.n_steps < 200
    again = run("lambda", t, (opt.mean[-1], opt.cov[-1]), 10, 1.0, schedule="backtracking")
    assert again.status == "stalled" and again.n_steps == 0


def test_a_start_that_meets_the_kl_tolerance_takes_no_step():
    t2 = kumar_t2()
    tr = run("vn", t2, MeanCov(t2.mean, t2.cov), 10, 1.0, kl_tol=1e-8)
    assert tr.status == "converged" and tr.n_steps == 0 and tr.mean.shape == (1, 2)


# --------------------------------------------------------------------------- flows and thinned runs are Traces

def test_a_flow_is_a_trace_with_its_times():
    f = flow("natural-mv", kumar_t2(), T2_INIT, 2.0, n_times=11)
    assert isinstance(f, core.Trace) and f.status == "max_steps" and f.extra["how"] == "closed form"
    np.testing.assert_allclose(f.extra["t"], np.linspace(0, 2, 11))
    assert f.iterations.tolist() == list(range(11)) and np.allclose(f.step_sizes, 0.2)


def test_thinned_runs_record_every_k_steps_through_the_runner():
    from vilab.theory.discretisation import thinned_run

    tr = thinned_run("srvn", kumar_t2(), T2_INIT, 0.01, 1000, n_record=100)
    assert tr.settings["record_every"] == 16 and np.all(np.diff(tr.iterations)[:-1] == 16)
    assert tr.n_steps == 1000 and tr.status == "max_steps"
    np.testing.assert_allclose(tr.extra["t"], 0.01 * tr.iterations)


# --------------------------------------------------------------------------- one loop

MOVED = ["vilab/algorithms/catalogue.py", "vilab/algorithms/driver.py", "vilab/algorithms/core.py",
         "vilab/theory/fields.py", "vilab/theory/flows.py", "vilab/theory/definiteness.py", "vilab/theory/discretisation.py",
         "vilab/theory/stability.py", "vilab/theory/guarantees.py"]


def test_no_driver_loop_is_left_in_the_modules_moved_onto_the_runner():
    """grep: no while_loop / scan / fori_loop in the catalogue and the geometry modules (a single step's
    own inner loop would be allowed, but none of these needs one). fields.run_1d's scalar Python
    loop is the documented IEEE-exact exception."""
    for path in MOVED:
        text = (ROOT / path).read_text()
        assert not re.search(r"lax\.(while_loop|scan|fori_loop)", text), path
    assert not (ROOT / "vilab/geometry.py").exists()


def test_each_family_member_gets_an_algorithm_that_shares_the_compiled_loop():
    from vilab import core
    from vilab.algorithms import algorithm
    from vilab.family.gaussian import MeanCov
    from vilab.targets import gaussian_2d

    t1, t2 = gaussian_2d(0.5), gaussian_2d(0.8)
    a, b = algorithm("srvn", t1), algorithm("srvn", t2)
    assert a is algorithm("srvn", t1) and a is not b and a.step is b.step
    key = core.as_key(0)
    start = MeanCov(np.array([1.0, -1.0]), np.eye(2))
    core.run(a, key, a.init(key, start, rho=0.3), 200)
    tb = core.run(b, key, b.init(key, start, rho=0.3), 200)
    assert tb.timings["compiled"] is False  # the family's loop, compiled for t1, serves t2
    np.testing.assert_allclose(tb.cov[-1], t2.cov, atol=1e-8)  # and it ran on t2


def test_srvn_at_d50_spans_several_calls_with_the_numbers_of_one():
    # a d = 50 row (mean, cov, factor: 40 kB) fills the runner's row buffer after ~126 rows, so 300
    # recorded steps take three compiled calls; thinned to its end, the run is one call
    from vilab.core import runner
    from vilab.targets import gaussian_target

    rng = np.random.default_rng(0)
    A = rng.standard_normal((50, 50))
    target = gaussian_target(rng.standard_normal(50), cov=A @ A.T / 50 + np.eye(50))
    start = MeanCov(np.zeros(50), np.eye(50))
    every = run("srvn", target, start, 300, 0.3)
    assert runner._call_sizes(2 * 50 * 50 * 8 + 50 * 8 + 4 * 8, 1, True)[2] < 150
    thin = run("srvn", target, start, 300, 0.3, record_every=300)
    assert thin.iterations.tolist() == [0, 300] and every.iterations.tolist() == list(range(301))
    np.testing.assert_array_equal(thin.mean[-1], every.mean[-1])
    np.testing.assert_array_equal(thin.cov[-1], every.cov[-1])
    np.testing.assert_array_equal(thin.extra["elbo"][-1], every.extra["elbo"][-1])
    assert every.status == "max_steps" and every.objective[-1] < 1e-8 < every.objective[0]


@pytest.mark.parametrize("d", [2, 10, 50])
def test_srvn_on_a_gaussian_computes_eq17_directly_and_agrees_with_the_general_path(d):
    # Kumar et al. Eq. 17 with H = Lambda (catalogue.srvn_gaussian) against the general path: grad_C =
    # tril(2 G C) from exact expectations (Sigma^-1 by Cholesky, the Hessian by autodiff) into Tan's
    # Thm 1(i) (vilab.algorithms.step, which tan-1N shares)
    from vilab.algorithms import catalogue, step
    from vilab.targets import gaussian_target

    rng = np.random.default_rng(d)
    A = rng.standard_normal((d, d))
    target = gaussian_target(rng.standard_normal(d), cov=A @ A.T / d + np.eye(d))
    B = rng.standard_normal((d, d)) / np.sqrt(d)
    C = np.tril(B) + np.diag(np.abs(np.diag(B)) + 0.5)
    mu = rng.standard_normal(d)
    ref = step("srvn", target, State(jnp.asarray(mu), jnp.asarray(C)), 0.3)
    mu2, C2 = jax.jit(catalogue.srvn_gaussian)(mu, C, target.mean, target.info["precision"], 0.3)
    np.testing.assert_allclose(mu2, ref.mu, rtol=1e-12, atol=1e-12 * np.max(np.abs(ref.mu)))
    np.testing.assert_allclose(C2, ref.M, rtol=1e-12, atol=1e-12 * np.max(np.abs(ref.M)))
    assert not np.array_equal(np.asarray(C2), np.asarray(C))
    # whole runs: srvn (Eq. 17 directly) and tan-1N (the general path), the same status and iterates
    start = MeanCov(np.zeros(d), np.eye(d))
    a, b = run("srvn", target, start, 60, 0.3, kl_tol=1e-10), run("tan-1N", target, start, 60, 0.3, kl_tol=1e-10)
    assert a.status == b.status and a.n_steps == b.n_steps
    np.testing.assert_allclose(a.mean, b.mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.cov, b.cov, rtol=0, atol=1e-12)
