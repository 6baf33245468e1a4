"""vilab.core.run_batch: several runs through the one runner with one progress, stop flag and budget."""

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
import pytest

from vilab.core import Algorithm, BatchProgress, Job, as_key, memoize, run, run_batch
from vilab.core import batch as batch_mod


class GDState(NamedTuple):
    mu: jnp.ndarray
    Sigma: jnp.ndarray
    hyper: dict


M = jnp.array([1.0, -1.0])
P = jnp.array([[2.0, 0.5], [0.5, 1.0]])


@memoize("test batch gd")
def gd():
    """Kumar et al. (2025) Eq. 4 on N(M, P^-1) (DEVELOPING.md's example): rho = 0.3 converges, a large rho
    makes the covariance lose positive definiteness (code 3)."""

    def init(key, start, rho=0.1):
        return GDState(jnp.zeros(2), jnp.eye(2), {"rho": jnp.float64(rho)})

    def step(key, s, batch):
        rho = s.hyper["rho"]
        new = GDState(s.mu - rho * P @ (s.mu - M), s.Sigma + rho * 0.5 * (jnp.linalg.inv(s.Sigma) - P), s.hyper)
        lost_pd = jnp.linalg.eigvalsh(new.Sigma)[0] <= 0
        return new, {"code": jnp.where(lost_pd, 3, 0), "step_size": rho}

    def observe(s):
        r = s.mu - M
        kl = 0.5 * (jnp.trace(P @ s.Sigma) + r @ P @ r - 2 - jnp.linalg.slogdet(P @ s.Sigma)[1])
        return {"mean": s.mu, "cov": s.Sigma, "objective": kl}

    return Algorithm(init, step, observe, name="gd-batch-test", objective_name="KL(q || p)")


KEY = as_key(0)


def job(name, rho, n=200, **options):
    alg = gd()
    return Job(name, alg, KEY, alg.init(KEY, None, rho=rho), n, {"chunk_size": 50, **options})


def test_jobs_run_in_order_with_the_numbers_of_single_runs():
    order = []
    jobs = [job("a", 0.1), job("b", 0.3), job("c", 0.05)]
    out = run_batch(jobs, progress=lambda p: order.append(p.name))
    assert list(out.traces) == ["a", "b", "c"] == list(out.names)
    assert [n for i, n in enumerate(order) if i == 0 or order[i - 1] != n] == ["a", "b", "c"]
    for j in jobs:  # the batch adds nothing to the runner: same numbers as run() alone
        alone = run(j.algorithm, j.key, j.state, j.n_steps, **j.options)
        np.testing.assert_array_equal(out.traces[j.name].objective, alone.objective)
        assert out.status[j.name] == alone.status == "max_steps"
    assert out.finished.keys() == out.traces.keys() and not out.cut and not out.not_run and not out.errors


def test_progress_fractions_rise_to_one():
    seen = []
    run_batch([job("a", 0.1, n=400), job("b", 0.2, n=100), job("c", 0.3, n=300)], progress=seen.append)
    fr = [p.fraction for p in seen]
    assert all(isinstance(p, BatchProgress) for p in seen)
    assert np.all(np.diff(fr) >= 0) and fr[-1] == 1.0 and fr[0] == 0.0
    assert len(seen) > 3 * 2  # the runner's reports between chunks are passed on, not only job ends
    assert all(0.0 <= p.job_fraction <= 1.0 and p.n_jobs == 3 for p in seen)
    # while job "b" (the second of three) runs, the batch is between 1/3 and 2/3 done
    assert all(1 / 3 <= p.fraction <= 2 / 3 for p in seen if p.name == "b")


def test_a_fit_reporting_backwards_does_not_move_the_bar_back():
    def fit(progress, should_stop, max_time):
        for f in (0.5, 0.2, float("nan"), 2.0):
            progress(f)
        return run(gd(), KEY, gd().init(KEY, None), 10)

    seen = []
    run_batch([Job.of("a", fit), Job.of("b", fit)], progress=seen.append)
    fr = [p.fraction for p in seen]
    assert np.all(np.diff(fr) >= 0) and fr[-1] == 1.0


def test_stop_after_the_first_job_keeps_its_trace():
    pressed = []

    def progress(p):
        if p.name == "a" and p.job_fraction == 1.0:
            pressed.append(True)  # the stop button, pressed as the first job ends

    out = run_batch([job("a", 0.3), job("b", 0.1), job("c", 0.1)], progress=progress,
                    should_stop=lambda: bool(pressed))
    assert list(out.traces) == ["a"] and out.traces["a"].status == "max_steps"
    assert out.status == {"a": "max_steps", "b": "stopped", "c": "stopped"}
    assert out.not_run == ["b", "c"] and out.stopped and list(out.finished) == ["a"]
    seen = []
    run_batch([job("a", 0.3), job("b", 0.1)], progress=seen.append, should_stop=lambda: bool(seen))
    assert {p.name for p in seen if p.started} == {"a"} and [p.name for p in seen if not p.started] == ["b"]
    assert seen[-1].fraction == 1.0


def test_stop_during_a_job_cuts_it_and_keeps_the_steps_done():
    calls = []

    def should_stop():
        calls.append(1)
        return len(calls) > 2  # checked before job a, then between its chunks

    out = run_batch([job("a", 0.1, n=1000), job("b", 0.1)], should_stop=should_stop)
    a = out.traces["a"]
    assert a.status == "stopped" and 0 < a.n_steps < 1000 and a.n_steps % 50 == 0
    assert out.cut == ["a"] and out.status["b"] == "stopped" and not out.finished


def test_time_budget_spent_before_a_job_leaves_it_unrun(monkeypatch):
    clock = iter(np.arange(0.0, 100.0, 10.0))  # every look at the batch's clock is 10 s later
    monkeypatch.setattr(batch_mod, "_clock", lambda: float(next(clock)))
    out = run_batch([job("a", 0.3), job("b", 0.1), job("c", 0.1)], time_budget_s=15.0)
    assert out.status == {"a": "max_steps", "b": "max_time", "c": "max_time"}
    assert list(out.traces) == ["a"] and out.not_run == ["b", "c"]


def test_time_budget_reaches_the_runner(monkeypatch):
    # the batch's clock stands still, so each job starts with the whole budget, far below one chunk's
    # time: the runner's own clock stops each job after its first chunk
    monkeypatch.setattr(batch_mod, "_clock", lambda: 0.0)
    out = run_batch([job("a", 0.1, n=1000), job("b", 0.1)], time_budget_s=1e-9)
    assert out.status == {"a": "max_time", "b": "max_time"} and out.cut == ["a", "b"]
    assert out.traces["a"].n_steps == out.traces["b"].n_steps == 50 and not out.finished


def test_a_diverging_job_does_not_stop_the_others():
    out = run_batch([job("fine", 0.1), job("wild", 5.0), job("after", 0.3)])
    assert out.status["wild"].startswith("diverged: covariance lost positive definiteness")
    assert out.traces["wild"].n_steps < 200
    assert out.status["fine"] == out.status["after"] == "max_steps"
    assert "wild" in out.finished  # a divergence is the run's own end, not a cut


def test_a_job_that_raises_is_kept_and_the_others_run():
    def broken(**_):
        raise ValueError("The step size must be positive; got -1.")

    out = run_batch([job("a", 0.1), Job.of("bad", broken), job("c", 0.1)])
    assert list(out.traces) == ["a", "c"] and "bad" not in out.status
    with pytest.raises(ValueError, match="step size must be positive"):
        out.trace("bad")
    assert out.trace("a") is out.traces["a"]


def test_a_fit_gets_the_batch_callbacks_and_what_is_left_of_the_budget():
    got = {}

    def fit(progress, should_stop, max_time):
        got.update(progress=progress, should_stop=should_stop, max_time=max_time)
        return run(gd(), KEY, gd().init(KEY, None), 20, progress=progress, should_stop=should_stop,
                   max_time=max_time)

    stop = lambda: False
    out = run_batch([Job.of("f", fit)], should_stop=stop, time_budget_s=100.0)
    assert out.status == {"f": "max_steps"} and got["should_stop"] is stop
    assert 0 < got["max_time"] <= 100.0 and callable(got["progress"])


def test_empty_batch():
    out = run_batch([])
    assert out.names == () and out.traces == {} and out.status == {}


@pytest.mark.parametrize("jobs, options, words", [
    ("adam", {}, "list of vilab.core.Job"),
    (None, {}, "list of vilab.core.Job"),
    ([("a", 1)], {}, "must be a vilab.core.Job"),
    ([job("a", 0.1), job("a", 0.2)], {}, "same name"),
    ([Job("", gd(), KEY, None, 10)], {}, "needs a name"),
    ([Job("a", "not an algorithm", KEY, None, 10)], {}, "needs a vilab.core.Algorithm"),
    ([Job("a", gd(), 0, None, 10)], {}, "needs a jax.random key"),
    ([Job("a", gd(), KEY, None, -3)], {}, "number of steps must be"),
    ([Job("a", gd(), KEY, None, 10, {"max_time": 3})], {}, "belong to the batch"),
    ([Job("a", gd(), KEY, None, 10, fit=lambda **_: None)], {}, "both an algorithm and a fit"),
    ([Job.of("a", "run it")], {}, "fit must be a function"),
    ([job("a", 0.1)], {"time_budget_s": -1.0}, "time budget"),
    ([job("a", 0.1)], {"time_budget_s": float("nan")}, "time budget"),
    ([job("a", 0.1)], {"progress": "bar"}, "progress must be a function"),
    ([job("a", 0.1)], {"should_stop": True}, "should_stop must be a function"),
])
def test_bad_input_is_refused_with_a_sentence(jobs, options, words):
    with pytest.raises(ValueError, match=words):
        run_batch(jobs, **options)


def test_a_fit_may_return_a_summary_with_its_status():
    out = run_batch([Job.of("kept", lambda **_: {"status": "converged", "final": 1.5}),
                     Job.of("cut", lambda **_: {"status": "max_time"})])
    assert out.status == {"kept": "converged", "cut": "max_time"} and out.trace("kept")["final"] == 1.5
    assert list(out.finished) == ["kept"] and out.cut == ["cut"]


@pytest.mark.parametrize("result, words", [({"final": 1.0}, "without a status"), (3.0, "without a status"),
                                           ({"status": "done"}, "not a run's status")])
def test_a_fit_that_returns_no_status_is_an_error_of_that_job(result, words):
    out = run_batch([Job.of("a", lambda **_: result), job("b", 0.1)])
    with pytest.raises(ValueError, match=words):
        out.trace("a")
    assert out.status == {"b": "max_steps"}


def test_unknown_job_name():
    out = run_batch([job("a", 0.1)])
    with pytest.raises(ValueError, match="No job named 'b'"):
        out.trace("b")
