"""Live runs: a run driven step by step whose run-time settings (a step size) change at chosen iterations.

A live run is a pure function of its start, its key and its *schedule*: for each run-time setting, the
iterations at which it took a new value, ``((0, rho_0), (t_1, rho_1), ...)``. The state after ``n`` steps is
the run to ``t_1`` followed by :func:`vilab.core.resume` with ``hyper={"rho": rho_1}`` to ``t_2``, and so on
(DEVELOPING: "pause and resume with a new step size" gives the same numbers as a single run whose setting
changed at that iteration). A page stores the schedule in its URL (:func:`format_schedule` /
:func:`parse_schedule`), so a shared link opens at the same step with the same bends.

    changes = record(((0, 1.0),), 12, 0.5)            # ((0, 1.0), (12, 0.5)): rho 0.5 from step 13 on
    trace = run_schedule(alg, key, state, 20, {"rho": changes})
    longer = run_schedule(alg, key, state, 21, {"rho": changes}, prefix=trace)   # one step more, from trace

Value ``v`` recorded at iteration ``t`` is the setting of the steps t+1, t+2, ... (the state at ``t`` is
unchanged by it: the change shows as a bend of the path at iterate ``t``).
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Callable, Mapping

import numpy as np

from .algorithm import Algorithm, set_hyper
from .runner import resume, run
from .trace import Trace

__all__ = ["Changes", "MAX_CHANGES", "parse_schedule", "format_schedule", "value_at", "record", "truncate",
           "merge", "change_points", "run_schedule", "valid_prefix", "valid_head", "head", "stopped_early",
           "frame_iterations"]

Changes = tuple  # ((iteration, value), ...): iterations strictly increasing, the first one 0

MAX_CHANGES = 64  # per setting: a shared link holds at most this many values of one setting
_MAX_TEXT = 4000
_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,40}$")


def _check_changes(changes, what: str = "the step size") -> Changes:
    out = []
    try:
        items = [(int(t), float(v)) for t, v in changes]
    except (TypeError, ValueError):
        raise ValueError(f"The changes of {what} must be pairs (iteration, value).") from None
    for t, v in items:
        if t < 0 or not math.isfinite(v):
            raise ValueError(f"The changes of {what} need iterations >= 0 and finite values; got ({t}, {v}).")
        if out and t <= out[-1][0]:
            raise ValueError(f"The changes of {what} must come at increasing iterations; got {t} after {out[-1][0]}.")
        out.append((t, v))
    if not out or out[0][0] != 0:
        raise ValueError(f"The changes of {what} must start with its value at iteration 0.")
    return tuple(out)


def value_at(changes: Changes, it: int) -> float:
    """The setting in force for the step after iterate ``it`` (the last change at or before ``it``)."""
    v = changes[0][1]
    for t, x in changes:
        if t > it:
            break
        v = x
    return v


def truncate(changes: Changes, it: int) -> Changes:
    """The changes made at or before iteration ``it`` (a later one has not happened yet)."""
    out = tuple((t, v) for t, v in changes if t <= it)
    return out or changes[:1]


def record(changes: Changes | None, it: int, value: float) -> Changes:
    """``changes`` with the setting ``value`` from iteration ``it`` on: later changes are dropped, one at
    ``it`` is replaced, and nothing is added when ``value`` is already in force (a slider moved and back)."""
    it, value = int(it), float(value)
    if not changes:
        return ((0, value),)
    kept = truncate(changes, it)
    if value_at(kept, it) == value:
        return kept
    kept = tuple((t, v) for t, v in kept if t < it)
    if kept and kept[-1][1] == value:  # moved back to the value before the change at it: no change at all
        return kept
    out = kept + ((it, value),)
    if len(out) > MAX_CHANGES:
        raise ValueError(f"A live run keeps at most {MAX_CHANGES} changes of one setting; press Reset to start "
                         "a new run.")
    return out


def change_points(changes: Changes) -> list[tuple[int, float]]:
    """The changes after the start: [(iteration, new value), ...] (where a path bends)."""
    return list(changes[1:])


def merge(settings: Mapping[str, Changes]) -> list[tuple[int, dict]]:
    """One run's settings, each with its changes, as [(iteration, {setting: value in force}), ...] at every
    iteration where one of them changes (the first at 0 holds all of them). A run without run-time settings
    (a method with no step size to change, e.g. GSM) is ``[(0, {})]``."""
    if not settings:
        return [(0, {})]
    checked = {name: _check_changes(ch, name) for name, ch in settings.items()}
    its = sorted({t for ch in checked.values() for t, _ in ch})
    return [(t, {name: value_at(ch, t) for name, ch in checked.items()}) for t in its]


# ------------------------------------------------------------------------------------------ URL form

def format_schedule(schedule: Mapping[str, Changes]) -> str:
    """The URL form of a page's schedule: ``"vn@0:1,12:0.5;srvn@0:1"`` (setting@iteration:value,...;...)."""
    parts = []
    for name, ch in schedule.items():
        if not _NAME.match(str(name)):
            raise ValueError(f"A live setting's name may hold letters, digits, '_', '.' and '-' only; got {name!r}.")
        parts.append(f"{name}@" + ",".join(f"{int(t)}:{float(v):.12g}" for t, v in ch))
    return ";".join(parts)


def parse_schedule(text: str, bounds: Mapping[str, tuple[float, float]], max_it: int) -> dict[str, Changes]:
    """Read :func:`format_schedule`'s form back, checking it against the page's settings: ``bounds`` maps each
    setting's name to its (lowest, highest) value, ``max_it`` is the last iteration. ValueError for anything
    else (an unknown name, a value out of range, iterations not increasing from 0, too many changes)."""
    text = str(text).strip()
    if not text:
        return {}
    if len(text) > _MAX_TEXT:
        raise ValueError("The list of step-size changes is too long.")
    out: dict[str, Changes] = {}
    for part in text.split(";"):
        name, sep, body = part.partition("@")
        name = name.strip()
        if not sep or name not in bounds:
            raise ValueError(f"Unknown live setting {name[:40]!r}.")
        if name in out:
            raise ValueError(f"The setting {name!r} is listed twice.")
        pairs = []
        for item in body.split(","):
            t, sep2, v = item.partition(":")
            if not sep2 or not t.strip().isdigit():
                raise ValueError(f"A change must read iteration:value; got {item[:40]!r}.")
            pairs.append((int(t), float(v)))
        ch = _check_changes(pairs, name)
        lo, hi = bounds[name]
        if len(ch) > MAX_CHANGES:
            raise ValueError(f"At most {MAX_CHANGES} changes of one setting.")
        if ch[-1][0] > int(max_it):
            raise ValueError(f"A change at iteration {ch[-1][0]} lies beyond the last iteration {int(max_it)}.")
        if any(not (lo <= v <= hi) for _, v in ch):
            raise ValueError(f"The values of {name!r} must lie in [{lo:g}, {hi:g}].")
        out[name] = ch
    return out


# ------------------------------------------------------------------------------------------ running

def stopped_early(trace: Trace) -> bool:
    """Whether the run ended on its own (diverged, converged, stalled): stepping on adds nothing."""
    return trace.status != "max_steps"


def valid_prefix(prefix: Trace | None, steps: list[tuple[int, dict]], prefix_steps: list[tuple[int, dict]] | None,
                 n: int) -> bool:
    """Whether ``prefix`` (a live run of schedule ``prefix_steps``) is the start of the run of ``steps`` to
    ``n``: same settings for every step it took (the changes before its last iterate agree, plus the one at
    its last iterate when it stopped on its own: that setting made its last, failed step)."""
    if prefix is None or prefix_steps is None:
        return False
    p = prefix.n_steps
    if p > n:
        return False
    upto = p + 1 if stopped_early(prefix) else p
    return [(t, h) for t, h in steps if t < upto] == [(t, h) for t, h in prefix_steps if t < upto]


def valid_head(trace: Trace | None, steps: list[tuple[int, dict]], trace_steps: list[tuple[int, dict]] | None,
               n: int) -> bool:
    """Whether the first ``n`` steps of ``trace`` (a live run of schedule ``trace_steps``, at least ``n`` steps
    long) are the run of ``steps`` to ``n``: the settings of its steps 1..n agree (those in force after the
    iterates before ``n``). At ``n`` = its last iterate, :func:`valid_prefix` (a run that stopped there on its
    own stopped with the setting at ``n``)."""
    if trace is None or trace_steps is None or n < 0 or n > trace.n_steps:
        return False
    if n == trace.n_steps:
        return valid_prefix(trace, steps, trace_steps, n)
    return [(t, h) for t, h in steps if t < n] == [(t, h) for t, h in trace_steps if t < n]


def head(trace: Trace, n: int) -> Trace | None:
    """The run ``trace`` as it was at iterate ``n`` (its rows to ``n``, its per-step values of steps 1..n,
    status "max_steps" since it went on), or ``trace`` itself at its last iterate; None when ``n`` is not one
    of its rows (a thinned record). A head has no state to resume from (``state`` and ``key`` are None):
    continue the whole trace instead. A Play draws its frames from heads of one run computed ahead."""
    n = int(n)
    its = np.asarray(trace.iterations)
    if n == trace.n_steps:
        return trace
    if n < 0 or n > trace.n_steps or not its.size:
        return None
    r = int(np.searchsorted(its, n, side="right"))  # rows up to iterate n
    if r == 0 or int(its[r - 1]) != n:
        return None
    first = int(its[0])
    k = n - first  # steps taken from the trace's first row to n
    n_rows = trace.n_rows

    def rows(a):
        return None if a is None else np.asarray(a)[:r]

    def per_step(a):
        a = np.asarray(a)
        return a[:k] if a.ndim and a.shape[0] == trace.n_steps - first else a

    extra = {key: (np.asarray(v)[:r] if isinstance(v, np.ndarray) and v.ndim and v.shape[0] == n_rows else v)
             for key, v in trace.extra.items()}
    return replace(trace, mean=rows(trace.mean), cov=rows(trace.cov), var=rows(trace.var),
                   objective=rows(trace.objective), iterations=its[:r], step_sizes=per_step(trace.step_sizes),
                   info={key: per_step(v) for key, v in trace.info.items()}, extra=extra, status="max_steps",
                   note="", state=None, key=None)


def frame_iterations(start: int, end: int, step: Callable[[int], int], limit: int | None = None) -> list[int]:
    """The iterations a Play shows after ``start``, up to ``end`` (included when reached): each the one before
    plus ``step(it)`` (at least 1): [start + s(start), ...]. ``limit``: at most that many."""
    out, it = [], int(start)
    while it < end and (limit is None or len(out) < limit):
        it = min(it + max(int(step(it)), 1), int(end))
        out.append(it)
    return out


def run_schedule(algorithm: Algorithm, key, state, n: int, settings: Mapping[str, Changes], *,
                 prefix: Trace | None = None, prefix_settings: Mapping[str, Changes] | None = None,
                 **options) -> Trace:
    """The run of ``algorithm`` from ``state`` (with ``key``) for ``n`` steps whose run-time settings change
    as ``settings`` says ({hyper name: ((0, v0), (t1, v1), ...)}): :func:`vilab.core.run` to the first change,
    then :func:`vilab.core.resume` with ``hyper`` = the new values at each change (the resumable runner of
    DEVELOPING's protocol; equal to one run whose settings changed at those iterations).

    ``prefix``: a trace this function returned for ``prefix_settings`` (for fewer steps); when it is the
    start of the requested run (:func:`valid_prefix`), the run continues from it instead of from 0 (a
    Step button costs one step). A run that diverges (or converges, or stalls) stops there: the returned
    trace ends before ``n`` and says why in its status. ``options`` are the runner's (record_every, ...).
    """
    n = int(n)
    if n < 0:
        raise ValueError(f"A live run needs a number of steps >= 0; got {n}.")
    steps = merge(settings)
    if prefix is not None and prefix_settings is not None and valid_prefix(prefix, steps, merge(prefix_settings), n):
        tr = prefix
        if stopped_early(tr) or tr.n_steps == n:
            return tr
    else:
        if steps[0][1]:
            state = set_hyper(state, **steps[0][1])
        first = min(n, steps[1][0]) if len(steps) > 1 else n
        tr = run(algorithm, key, state, first, **options)
    while tr.n_steps < n and not stopped_early(tr):
        p = tr.n_steps
        hyper = steps[0][1]
        for t, h in steps:
            if t <= p:
                hyper = h
        nxt = min([t for t, _ in steps if t > p] + [n])
        tr = resume(algorithm, tr, nxt - p, hyper=hyper, **options)
    return tr
