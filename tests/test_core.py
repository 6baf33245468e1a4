"""The algorithm protocol, the one runner, Trace, resume, the program cache and keys (vilab.core)."""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vilab import core
from vilab.core import Algorithm, Trace, as_key, resume, run, run_many, set_hyper


class GDState(NamedTuple):
    mu: jax.Array
    Sigma: jax.Array
    hyper: dict


def make_gd(m, P):
    """Euclidean gradient ascent on the ELBO of N(m, P^-1) in (mu, Sigma) (Kumar et al. Eq. 4): the
    DEVELOPING example."""
    m, P = jnp.asarray(m), jnp.asarray(P)

    def init(key, start, rho=0.1):
        mu, Sigma = start
        return GDState(jnp.asarray(mu, float), jnp.asarray(Sigma, float), {"rho": jnp.float64(rho)})

    def step(key, state, batch):
        rho = state.hyper["rho"]
        g_mu = -P @ (state.mu - m)
        g_S = 0.5 * (jnp.linalg.inv(state.Sigma) - P)
        new = GDState(state.mu + rho * g_mu, state.Sigma + rho * g_S, state.hyper)
        code = jnp.where(jnp.linalg.eigvalsh(new.Sigma)[0] <= 0, 3, 0)
        return new, {"code": code, "step_size": rho}

    def observe(state):
        d = state.mu.shape[0]
        kl = 0.5 * (jnp.trace(P @ state.Sigma) + (state.mu - m) @ P @ (state.mu - m) - d
                    - jnp.linalg.slogdet(P @ state.Sigma)[1])
        return {"mean": state.mu, "cov": state.Sigma, "objective": kl}

    return Algorithm(init, step, observe, name="gd", objective_name="KL(q || p)")


P = np.array([[2.0, 0.5], [0.5, 1.0]])
M = np.array([1.0, -1.0])
START = (np.zeros(2), np.eye(2))
ALG = make_gd(M, P)


def _manual(alg, key, state, n, switch=None):
    """A plain Python loop over alg.step: the reference the runner must match."""
    mus = [state.mu]
    for t in range(n):
        if switch is not None and t == switch[0]:
            state = set_hyper(state, rho=switch[1])
        key, sub = jax.random.split(key)
        state, _ = alg.step(sub, state, None)
        mus.append(state.mu)
    return np.asarray(mus), state


def test_run_matches_a_python_loop_and_records_every_row():
    key = jax.random.PRNGKey(0)
    s0 = ALG.init(key, START)
    tr = run(ALG, key, s0, 40)
    ref, _ = _manual(ALG, key, s0, 40)
    assert isinstance(tr, Trace) and tr.status == "max_steps" and tr.n_steps == 40
    np.testing.assert_allclose(tr.mean, ref, rtol=0, atol=1e-14)
    assert tr.iterations.tolist() == list(range(41))
    assert tr.step_sizes.shape == (40,) and np.all(tr.step_sizes == 0.1)
    assert tr.cov.shape == (41, 2, 2) and tr.var.shape == (41, 2)
    assert tr.objective[-1] < tr.objective[0]


def test_resume_with_a_new_step_size_equals_a_run_that_switched():
    key = jax.random.PRNGKey(3)
    s0 = ALG.init(key, START, rho=0.05)
    first = run(ALG, key, s0, 50)
    both = resume(ALG, first, 50, hyper={"rho": 0.2})
    ref, _ = _manual(ALG, key, s0, 100, switch=(50, 0.2))
    np.testing.assert_allclose(both.mean, ref, rtol=0, atol=1e-14)
    assert both.n_steps == 100 and both.iterations.tolist() == list(range(101))
    assert np.all(both.step_sizes[:50] == 0.05) and np.all(both.step_sizes[50:] == 0.2)
    assert both.settings["resumed_at"] == [50]


def test_host_chunks_and_thinning_give_the_same_rows_as_one_compiled_call():
    key = jax.random.PRNGKey(1)
    s0 = ALG.init(key, START)
    a = run(ALG, key, s0, 103, record_every=10)
    b = run(ALG, key, s0, 103, record_every=10, chunk_size=7)
    assert a.iterations.tolist() == [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 103]
    assert b.iterations.tolist() == a.iterations.tolist()
    np.testing.assert_array_equal(a.mean, b.mean)
    assert a.info["step_size"].shape == (103,)


def test_divergence_is_rejected_and_reported():
    key = jax.random.PRNGKey(0)
    tr = run(ALG, key, ALG.init(key, START, rho=3.0), 100)
    assert tr.status == "diverged: covariance lost positive definiteness"
    assert np.all(np.linalg.eigvalsh(tr.cov) > 0)  # the rejected iterate is not in the trace
    assert tr.n_steps == tr.iterations[-1] == len(tr.step_sizes)


def test_divergence_between_recorded_rows_keeps_the_last_valid_iterate():
    key = jax.random.PRNGKey(0)
    full = run(ALG, key, ALG.init(key, START, rho=3.0), 100)
    thin = run(ALG, key, ALG.init(key, START, rho=3.0), 100, record_every=50)
    assert thin.status == full.status
    assert thin.iterations[-1] == full.n_steps
    np.testing.assert_array_equal(thin.mean[-1], full.mean[-1])


@pytest.mark.parametrize("chunk", [None, 1, 2, 3])
def test_a_rejected_step_leaves_the_last_valid_state_in_the_trace(chunk):
    # the loop does not keep a copy of the state every step; run() recomputes the last valid one
    key = jax.random.PRNGKey(0)
    s0 = ALG.init(key, (np.zeros(2), 10 * np.eye(2)), rho=1.9)  # rejected at step 28
    tr = run(ALG, key, s0, 100, record_every=2, chunk_size=chunk)
    n = tr.n_steps
    assert tr.diverged and n == 27
    ok = run(ALG, key, s0, n)  # the same steps, none rejected
    np.testing.assert_array_equal(np.asarray(tr.state.Sigma), np.asarray(ok.state.Sigma))
    np.testing.assert_array_equal(tr.mean[-1], ok.mean[-1])
    np.testing.assert_array_equal(np.asarray(tr.key), np.asarray(ok.key))  # so the same draws follow
    _, ref = _manual(ALG, key, s0, n)  # (a plain loop: rounding grows on this unstable path)
    np.testing.assert_allclose(np.asarray(tr.state.Sigma), np.asarray(ref.Sigma), rtol=1e-9)
    assert tr.iterations[-1] == n and np.all(np.linalg.eigvalsh(tr.cov) > 0)


def test_stopping_rules_and_host_controls():
    key = jax.random.PRNGKey(0)
    s0 = ALG.init(key, START)
    tr = run(ALG, key, s0, 10_000, below=1e-8)
    assert tr.status == "converged" and tr.objective[-1] < 1e-8 and tr.objective[-2] >= 1e-8
    rel = run(ALG, key, s0, 10_000, rel_tol=1e-6)
    assert rel.status == "converged" and rel.n_steps < 10_000
    stopped = run(ALG, key, s0, 1000, chunk_size=10, should_stop=lambda: True)
    assert stopped.status == "stopped" and stopped.n_steps == 10
    fractions, partial = [], []
    run(ALG, key, s0, 30, chunk_size=10, progress=fractions.append, on_chunk=partial.append)
    assert fractions == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert [p.n_steps for p in partial] == [10, 20, 30]
    timed = run(ALG, key, s0, 1000, chunk_size=10, max_time=0.0)
    assert timed.status == "max_time" and timed.n_steps == 10
    slope = run(ALG, key, s0, 5000, chunk_size=50, host_stop=core.slope_rule(20, 1e-9, "objective"))
    assert slope.status == "converged" and slope.n_steps < 5000


def test_run_many_sweeps_step_sizes_in_one_loop():
    key = jax.random.PRNGKey(0)
    rhos = [0.01, 0.1, 0.5, 3.0]
    states = core.stack([ALG.init(key, START, rho=r) for r in rhos])
    trs = run_many(ALG, jax.random.split(key, len(rhos)), states, 60)
    for r, tr in zip(rhos, trs):
        one = run(ALG, jax.random.split(key, len(rhos))[rhos.index(r)], ALG.init(key, START, rho=r), 60)
        assert tr.status == one.status
        np.testing.assert_allclose(tr.mean, one.mean, atol=1e-13)


def test_batches_are_fed_step_by_step():
    class S(NamedTuple):
        total: jax.Array

    alg = Algorithm(lambda key, x: S(jnp.float64(x)),
                    lambda key, s, b: (S(s.total + b), {"code": 0}),
                    lambda s: {"mean": s.total[None], "var": jnp.ones(1), "objective": s.total})
    xs = np.arange(1.0, 8.0)
    tr = run(alg, jax.random.PRNGKey(0), alg.init(None, 0.0), 7, batches=xs)
    assert tr.mean[:, 0].tolist() == np.concatenate([[0], np.cumsum(xs)]).tolist()
    with pytest.raises(ValueError, match="batches"):
        run(alg, jax.random.PRNGKey(0), alg.init(None, 0.0), 9, batches=xs)
    fn = run(alg, jax.random.PRNGKey(0), alg.init(None, 0.0), 4, batches=lambda k: jnp.float64(k))
    assert fn.mean[-1, 0] == 0 + 1 + 2 + 3


def test_bad_input_gets_a_sentence():
    key = jax.random.PRNGKey(0)
    s0 = ALG.init(key, START)
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match="number of steps"):
            run(ALG, key, s0, bad)
    with pytest.raises(ValueError, match="record_every"):
        run(ALG, key, s0, 5, record_every=0)
    with pytest.raises(ValueError, match="tolerance"):
        run(ALG, key, s0, 5, rel_tol=-1)
    with pytest.raises(ValueError, match="Unknown setting"):
        set_hyper(s0, alpha=1.0)
    with pytest.raises(ValueError, match="status"):
        Trace(np.zeros((1, 1)), None, np.zeros(1), np.zeros(0), status="completed")
    with pytest.raises(ValueError, match="seed"):
        as_key(1.5)
    with pytest.raises(ValueError, match="seed"):
        as_key(-3)
    assert as_key(7).shape == (2,)


def test_program_cache_is_bounded_and_cleared_from_one_place():
    calls = []

    @core.memoize("test cache", maxsize=2)
    def build(x):
        calls.append(x)
        return object()

    a = build(1)
    assert build(1) is a and calls == [1]
    build(2), build(3)
    assert len(build.cache) == 2
    build(1)
    assert calls == [1, 2, 3, 1]  # 1 was evicted (least recently used)
    assert build.cache in core.cache.caches()
    import vilab

    vilab.clear_caches()
    assert len(build.cache) == 0


def test_a_host_stop_records_the_row_where_the_state_is():
    key = jax.random.PRNGKey(0)
    s0 = ALG.init(key, START)
    tr = run(ALG, key, s0, 100, record_every=10, chunk_size=7, should_stop=lambda: True)
    assert tr.status == "stopped" and tr.iterations.tolist() == [0, 7] and tr.n_steps == 7
    more = resume(ALG, tr, 13, record_every=10)
    ref = run(ALG, key, s0, 20)
    np.testing.assert_array_equal(more.mean[-1], ref.mean[-1])
    assert more.iterations.tolist() == [0, 7, 10, 20]


def test_non_finite_states_are_caught_even_when_the_step_does_not_check():
    class S(NamedTuple):
        x: jax.Array

    # x doubles each step and overflows to inf; the step reports no code
    alg = Algorithm(lambda key, x: S(jnp.float64(x)), lambda key, s, b: (S(s.x * 1e100), {}),
                    lambda s: {"mean": s.x[None], "var": jnp.ones(1), "objective": s.x})
    tr = run(alg, jax.random.PRNGKey(0), alg.init(None, 1.0), 10)
    assert tr.status == "diverged: non-finite values"
    assert np.all(np.isfinite(tr.mean)) and tr.n_steps == 3  # 1e300 is the last finite iterate
    thin = run(alg, jax.random.PRNGKey(0), alg.init(None, 1.0), 10, record_every=2)
    assert thin.status == "diverged: non-finite values" and np.all(np.isfinite(thin.mean))


def test_timings_say_whether_the_loop_was_compiled():
    key = jax.random.PRNGKey(0)
    s0 = ALG.init(key, START)
    run(ALG, key, s0, 33)
    again = run(ALG, key, ALG.init(key, START, rho=0.2), 40)  # same power-of-two bucket, new step size
    assert again.timings["compiled"] is False


def test_an_algorithm_that_ignores_the_key_gets_the_same_key_every_step():
    class S(NamedTuple):
        keys: jax.Array
        t: jax.Array

    def step(key, s, b):
        return S(s.keys.at[s.t].set(jax.random.key_data(key) if not isinstance(key, jax.Array)
                                    or key.dtype == jnp.uint32 else key), s.t + 1), {}

    init = lambda key, _: S(jnp.zeros((4, 2), jnp.uint32), jnp.int32(0))  # noqa: E731
    obs = lambda s: {"mean": jnp.zeros(1), "var": jnp.ones(1), "objective": jnp.float64(0)}  # noqa: E731
    key = jax.random.PRNGKey(5)
    fixed = run(Algorithm(init, step, obs, uses_key=False), key, init(None, None), 4)
    assert (np.asarray(fixed.state.keys) == np.asarray(key)).all()
    split = run(Algorithm(init, step, obs), key, init(None, None), 4)
    assert len({tuple(k) for k in np.asarray(split.state.keys)}) == 4


def test_a_start_that_meets_the_tolerance_takes_no_step():
    key = jax.random.PRNGKey(0)
    at_optimum = ALG.init(key, (M, np.linalg.inv(P)))
    tr = run(ALG, key, at_optimum, 50, below=1e-8)
    assert tr.status == "converged" and tr.n_steps == 0 and tr.n_rows == 1 and tr.step_sizes.shape == (0,)
    many = run_many(ALG, jax.random.split(key, 2), core.stack([at_optimum, ALG.init(key, START)]), 50, below=1e-8)
    assert many[0].n_steps == 0 and many[0].status == "converged" and many[1].n_steps > 0


def test_nearby_thinning_values_share_one_compiled_loop():
    key = jax.random.PRNGKey(0)
    s0 = ALG.init(key, START)
    run(ALG, key, s0, 1000, record_every=10)
    again = run(ALG, key, s0, 1000, record_every=11)
    assert again.timings["compiled"] is False
    assert again.iterations.tolist() == list(range(0, 1000, 11)) + [1000]


def test_keep_info_false_records_rows_only():
    key = jax.random.PRNGKey(0)
    s0 = ALG.init(key, START)
    full = run(ALG, key, s0, 100, record_every=10)
    lean = run(ALG, key, s0, 100, record_every=10, keep_info=False)
    np.testing.assert_array_equal(full.mean, lean.mean)
    assert lean.info == {} and lean.step_sizes.shape == (0,) and lean.n_steps == 100
    longer = run(ALG, key, s0, 1000, record_every=100, keep_info=False)  # ten rows again: no new loop
    assert longer.timings["compiled"] is False and longer.n_steps == 1000


def test_nan_info_values_mean_unknown_not_diverged():
    key = jax.random.PRNGKey(0)
    alg = Algorithm(ALG.init, lambda k, s, b: (ALG.step(k, s, b)[0], {"code": 0, "step_size": jnp.nan}), ALG.observe)
    tr = run(alg, key, alg.init(key, START), 20)
    assert tr.status == "max_steps" and tr.n_steps == 20 and np.all(np.isnan(tr.step_sizes))


def test_a_new_run_length_or_thinning_never_compiles_again():
    # the loop's buffers depend on the size of a row only: one compiled program for every n_steps
    alg = make_gd(M + 0.25, P)  # a fresh Algorithm: its first run compiles
    key = jax.random.PRNGKey(0)
    s0 = alg.init(key, START)
    assert run(alg, key, s0, 5).timings["compiled"] is True
    for n, every in ((40, 1), (700, 1), (3000, 1), (21, 4), (2999, 250)):
        tr = run(alg, key, s0, n, record_every=every)
        assert tr.timings["compiled"] is False, (n, every)
        assert tr.n_steps == n and tr.iterations.tolist() == list(range(0, n + 1, every)) + ([n] if n % every else [])


def test_a_run_longer_than_one_call_equals_a_python_loop_and_host_chunks():
    # a 2-D row is far below ROW_BUFFER_BYTES, so a call takes STEPS_PER_CALL - 2 recorded steps:
    # 2,500 steps are three compiled calls
    from vilab.core import runner

    key = jax.random.PRNGKey(2)
    s0 = ALG.init(key, START, rho=0.01)
    n = 2500
    assert runner._call_sizes(7 * 8 + 8, 1, True)[2] < n // 2
    tr = run(ALG, key, s0, n)
    ref, last = _manual(ALG, key, s0, n)
    np.testing.assert_allclose(tr.mean, ref, rtol=0, atol=1e-14)  # eager steps round as compiled ones may not
    assert tr.iterations.tolist() == list(range(n + 1)) and tr.step_sizes.shape == (n,)
    np.testing.assert_allclose(np.asarray(tr.state.Sigma), np.asarray(last.Sigma), rtol=0, atol=1e-14)
    host = run(ALG, key, s0, n, chunk_size=333)
    thin = run(ALG, key, s0, n, record_every=7)
    np.testing.assert_array_equal(host.mean, tr.mean)
    np.testing.assert_array_equal(host.objective, tr.objective)
    np.testing.assert_array_equal(thin.mean, tr.mean[thin.iterations])
    np.testing.assert_array_equal(thin.objective, tr.objective[thin.iterations])
