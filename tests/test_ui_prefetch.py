"""ui.prefetch: results computed ahead in a background thread land in the function's cache; bounded, no
duplicates, errors ignored."""

import threading
import time

import vilab_ui as ui


def _wait_idle(timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        with ui.caching._PREFETCH_LOCK:
            if not ui.caching._PREFETCH_PENDING:
                return
        time.sleep(0.01)
    raise AssertionError("prefetch did not finish")


def test_prefetch_computes_each_call_once_in_the_background():
    calls, gate = [], threading.Event()

    def fn(x):
        gate.wait(5)
        calls.append(x)
        return x * x

    assert ui.prefetch(fn, (1,), (2,)) == 2
    assert ui.prefetch(fn, (1,)) == 0  # already waiting: not queued twice
    gate.set()
    _wait_idle()
    assert sorted(calls) == [1, 2]


def test_prefetch_is_bounded_and_ignores_errors():
    gate = threading.Event()

    def slow(x):
        gate.wait(5)
        if x == 0:
            raise ValueError("bad input")
        return x

    queued = ui.prefetch(slow, *[(i,) for i in range(10)])
    assert queued == ui.caching.PREFETCH_MAX_PENDING
    gate.set()
    _wait_idle()
    assert ui.prefetch(slow, (5,)) == 1  # the queue is free again
    _wait_idle()


def test_the_plain_switch_turns_prefetch_off(monkeypatch):
    calls = []
    monkeypatch.setenv(ui.caching.PLAIN_ENV, "1")
    assert ui.prefetch(calls.append, (1,), (2,)) == 0
    monkeypatch.setenv(ui.caching.PLAIN_ENV, "0")  # "0", "off", "no": the mechanisms are on
    assert ui.prefetch(calls.append, (3,)) == 1
    _wait_idle()
    assert calls == [3]
