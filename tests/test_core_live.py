"""vilab.core.live: schedules of run-time settings, their URL form, and runs that follow them."""

from __future__ import annotations

import numpy as np
import pytest

from vilab.algorithms import algorithm
from vilab.core import as_key, resume, run
from vilab.core.live import (format_schedule, merge, parse_schedule, record, run_schedule, truncate, valid_prefix,
                             value_at)
from vilab.family.gaussian import CholCov
from vilab.targets.papers import kumar_t2

START = CholCov(np.array([-2.0, 2.5]), 0.2 * np.eye(2))


def test_record_keeps_the_value_in_force_per_iteration():
    ch = record(None, 0, 1.0)
    assert ch == ((0, 1.0),)
    assert record(ch, 0, 0.5) == ((0, 0.5),)  # moved before the first step: the start value changes
    ch = record(ch, 5, 0.3)
    assert ch == ((0, 1.0), (5, 0.3)) and value_at(ch, 4) == 1.0 and value_at(ch, 5) == 0.3
    assert record(ch, 5, 0.2) == ((0, 1.0), (5, 0.2))  # moved again at the same iteration: replaced
    assert record(ch, 5, 1.0) == ((0, 1.0),)  # moved back before stepping: no change at all
    assert record(ch, 9, 0.3) == ch  # the value already in force: nothing added
    assert record(ch, 3, 0.1) == ((0, 1.0), (3, 0.1))  # an earlier iteration forgets the later changes
    assert truncate(((0, 1.0), (5, 0.3), (8, 0.1)), 6) == ((0, 1.0), (5, 0.3))


def test_url_form_round_trips_and_rejects_what_a_page_does_not_have():
    sched = {"srvn": ((0, 1.0), (12, 0.316)), "gd-mc": ((0, 0.0237),), "snngm.alpha": ((0, 1e-3), (7, 0.01))}
    bounds = {k: (1e-4, 1.78) for k in sched}
    text = format_schedule(sched)
    assert text == "srvn@0:1,12:0.316;gd-mc@0:0.0237;snngm.alpha@0:0.001,7:0.01"
    assert parse_schedule(text, bounds, 100) == sched
    assert parse_schedule("", bounds, 100) == {}
    for bad in ["zz@0:1", "srvn@1:1", "srvn@0:1,0:2", "srvn@0:1,5:9", "srvn@0:nan", "srvn@0:1,500:0.1",
                "srvn@0:1;srvn@0:1", "srvn", "srvn@0:1,-3:0.1", "srvn@0:1,x:0.1", "x" * 5000,
                "srvn@0:1," + ",".join(f"{k}:0.5" for k in range(1, 80))]:
        with pytest.raises(ValueError):
            parse_schedule(bad, bounds, 100)
    with pytest.raises(ValueError):
        format_schedule({"a b": ((0, 1.0),)})


def test_merge_joins_the_settings_of_one_run():
    assert merge({"rho": ((0, 1.0), (4, 0.5)), "beta": ((0, 0.9), (2, 0.5))}) == [
        (0, {"rho": 1.0, "beta": 0.9}), (2, {"rho": 1.0, "beta": 0.5}), (4, {"rho": 0.5, "beta": 0.5})]
    assert merge({}) == [(0, {})]  # a method with no run-time setting (GSM)
    with pytest.raises(ValueError):
        merge({"rho": ((3, 1.0),)})


def test_run_schedule_equals_a_run_resumed_with_the_new_step_size_and_extends_a_prefix():
    tgt = kumar_t2()
    alg = algorithm("srvn", tgt, grads="exact")
    key = as_key(0)
    s0 = alg.init(key, START, rho=1.0, target=tgt)
    sched = {"rho": ((0, 1.0), (5, 0.316), (9, 0.75))}
    got = run_schedule(alg, key, s0, 14, sched)
    direct = resume(alg, resume(alg, run(alg, key, s0, 5), 4, hyper={"rho": 0.316}), 5, hyper={"rho": 0.75})
    assert got.n_steps == 14
    np.testing.assert_array_equal(got.mean, direct.mean)
    np.testing.assert_array_equal(got.cov, direct.cov)
    # step by step from a stored prefix: the same numbers
    tr = run_schedule(alg, key, s0, 3, sched)
    for n in range(4, 15):
        assert valid_prefix(tr, merge(sched), merge(sched), n)
        tr = run_schedule(alg, key, s0, n, sched, prefix=tr, prefix_settings=sched)
    np.testing.assert_array_equal(tr.mean, direct.mean)
    # a prefix whose settings differ before its end is not used
    other = {"rho": ((0, 1.0), (2, 0.5))}
    assert not valid_prefix(tr, merge(other), merge(sched), 20)
    fresh = run_schedule(alg, key, s0, 14, other, prefix=tr, prefix_settings=sched)
    np.testing.assert_array_equal(fresh.mean, run_schedule(alg, key, s0, 14, other).mean)


def test_a_diverging_live_run_stops_and_stays_stopped():
    tgt = kumar_t2()
    alg = algorithm("gd-mc", tgt, grads="exact")
    key = as_key(0)
    s0 = alg.init(key, START, rho=0.01, target=tgt)
    sched = {"rho": ((0, 0.01), (3, 1.78))}
    tr = run_schedule(alg, key, s0, 60, sched)
    assert tr.status.startswith("diverged") and 3 <= tr.n_steps < 60
    again = run_schedule(alg, key, s0, 80, sched, prefix=tr, prefix_settings=sched)
    assert again is tr


def test_head_is_the_run_as_it_was_at_an_earlier_iterate():
    from vilab.core.live import head, valid_head

    tgt = kumar_t2()
    alg = algorithm("srvn", tgt, grads="exact")
    key = as_key(0)
    s0 = alg.init(key, START, rho=1.0, target=tgt)
    sched = {"rho": ((0, 1.0), (5, 0.316))}
    long = run_schedule(alg, key, s0, 14, sched)
    for n in (0, 3, 5, 6, 13):
        h = head(long, n)
        short = run_schedule(alg, key, s0, n, sched)
        assert h.n_steps == n and h.status == "max_steps" and h.state is None
        np.testing.assert_array_equal(h.mean, short.mean)
        np.testing.assert_array_equal(h.cov, short.cov)
        np.testing.assert_array_equal(h.step_sizes, short.step_sizes)
        np.testing.assert_array_equal(h.objective, short.objective)
    assert head(long, 14) is long and head(long, 15) is None and head(long, -1) is None
    # a head is the start of another schedule's run while their settings agree before it
    bent = {"rho": ((0, 1.0), (5, 0.316), (9, 0.1))}
    assert valid_head(long, merge(bent), merge(sched), 9)  # the change at 9 acts on step 10
    assert not valid_head(long, merge(bent), merge(sched), 10)
    assert not valid_head(long, merge({"rho": ((0, 1.0), (2, 0.5))}), merge(sched), 9)
    assert not valid_head(long, merge(sched), merge(sched), 15)
    thinned = run(alg, key, s0, 12, record_every=4)
    assert head(thinned, 8).n_steps == 8 and head(thinned, 6) is None


def test_frame_iterations_step_at_least_one_and_stop_at_the_end():
    from vilab.core.live import frame_iterations

    assert frame_iterations(0, 5, lambda it: 1) == [1, 2, 3, 4, 5]
    assert frame_iterations(0, 5, lambda it: 0) == [1, 2, 3, 4, 5]  # at least one iteration a frame
    assert frame_iterations(10, 100, lambda it: it // 10, limit=4) == [11, 12, 13, 14]
    assert frame_iterations(90, 100, lambda it: 7) == [97, 100]  # the last iteration is a frame
    assert frame_iterations(100, 100, lambda it: 1) == []
