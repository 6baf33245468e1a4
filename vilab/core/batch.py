"""A batch of runs: several jobs one after another, with one progress report, one stop flag and one
time budget for them all.

Pages compare methods: Adam against SNNGM, BONG against BLR, a column of Tan's Table 8. Each job of a
batch is one run through the one runner (:func:`vilab.core.run`), either given as the runner's own
arguments (an :class:`~vilab.core.Algorithm`, a key, a start state, a number of steps and ``run``'s
options), or as a library fit that drives the runner itself and passes on ``progress``,
``should_stop`` and ``max_time`` (``vilab.algorithms.optim.run``, ``vilab.cnn.train.vi_train``,
``vilab.hierarchical.fit.fit``, ...). :func:`run_batch` never steps an algorithm itself: it hands
each job the part of the budget that is left and a progress callback that maps the job's fraction
onto the whole batch, checks the stop flag and the clock between jobs (the runner checks them
between chunks of steps), and keeps every Trace that was made, so that a batch stopped half way
returns the runs it finished::

    jobs = [Job("adam", alg_a, key, state_a, 1000), Job("snngm", alg_s, key, state_s, 1000)]
    out = run_batch(jobs, progress=lambda p: bar.progress(p.fraction, text=p.name),
                    should_stop=lambda: pressed, time_budget_s=60)
    out.traces      # {"adam": Trace, ...}: every job that ran (finished or cut short)
    out.status      # {"adam": "converged", "snngm": "stopped"}: every job, in the Trace's vocabulary

A diverging job is not an error: its Trace says ``"diverged: <reason>"`` and the next job runs. A job
whose call raises (bad settings for that method) is kept in ``out.errors`` and the next job runs;
``out.trace(name)`` raises that error again where the caller shows it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .algorithm import Algorithm
from .keys import check_key
from .runner import positive_number, run, whole_number
from .trace import STATUSES, Trace, check_status

__all__ = ["CUT", "BatchProgress", "BatchResult", "Job", "run_batch", "status_of_result"]

#: The statuses of a run cut short by the batch's stop flag or time budget (the Trace's vocabulary).
CUT = ("stopped", "max_time")
#: run()'s options that belong to the batch, not to one job.
_BATCH_OPTIONS = ("progress", "should_stop", "max_time")


def _clock() -> float:
    return time.perf_counter()


@dataclass(frozen=True)
class Job:
    """One run of a batch, named ``name`` (unique within the batch).

    Either the runner's arguments: ``Job(name, algorithm, key, state, n_steps, options)``, run as
    ``vilab.core.run(algorithm, key, state, n_steps, **options)`` (``options``: ``record_every``,
    ``batches``, ``rel_tol``, ``chunk_size``, ``on_chunk``, ...; not ``progress``, ``should_stop`` or
    ``max_time``, which the batch sets), or a library fit: ``Job.of(name, fit)``, called as
    ``fit(progress=..., should_stop=..., max_time=...)`` and returning a :class:`~vilab.core.Trace`
    (a fit that has no stop button takes ``**_`` and ignores it), or what a page keeps of one: a
    result with the Trace's status (a dict with a ``"status"`` entry, or an object with a ``status``
    attribute), e.g. a cached summary of a run finished before."""

    name: str
    algorithm: Algorithm | None = None
    key: Any = None
    state: Any = None
    n_steps: int = 0
    options: Mapping[str, Any] = field(default_factory=dict)
    fit: Callable[..., Trace] | None = None

    @classmethod
    def of(cls, name: str, fit: Callable[..., Trace]) -> Job:
        """A job made by a library fit ``fit(progress=, should_stop=, max_time=) -> Trace`` (or a result
        carrying a Trace's status)."""
        return cls(name, fit=fit)

    def check(self) -> None:
        """ValueError with a sentence unless this job can run."""
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"Every job of a batch needs a name (a non-empty string); got {self.name!r}.")
        if self.fit is not None:
            if not callable(self.fit):
                raise ValueError(f"Job {self.name!r}: fit must be a function returning a Trace; got {self.fit!r}.")
            if self.algorithm is not None:
                raise ValueError(f"Job {self.name!r} has both an algorithm and a fit: give one of them.")
            return
        if not isinstance(self.algorithm, Algorithm):
            raise ValueError(f"Job {self.name!r} needs a vilab.core.Algorithm (or a fit, Job.of(name, fit)); "
                             f"got {self.algorithm!r}.")
        check_key(self.key, f"Job {self.name!r}")
        whole_number(self.n_steps, f"Job {self.name!r}: the number of steps", 0)
        if not isinstance(self.options, Mapping):
            raise ValueError(f"Job {self.name!r}: options must be a dict of run()'s keyword options; "
                             f"got {self.options!r}.")
        taken = [k for k in _BATCH_OPTIONS if k in self.options]
        if taken:
            raise ValueError(f"Job {self.name!r}: {', '.join(taken)} belong to the batch (run_batch's progress, "
                             "should_stop and time_budget_s), not to one job.")


class BatchProgress(NamedTuple):
    """What a batch's progress callback receives: ``fraction`` of the whole batch done (0..1, never
    decreasing), the job (``name``, ``index`` of ``n_jobs``), the fraction of that job done, and whether it
    runs (``started`` False: a job passed over because the stop flag was up or the budget spent)."""

    fraction: float
    name: str
    index: int
    n_jobs: int
    job_fraction: float
    started: bool = True


@dataclass
class BatchResult:
    """What :func:`run_batch` returns.

    names : every job's name, in the batch's order.
    traces : {name: Trace} of every job that ran, in order, finished or cut short (its status
        "stopped" or "max_time"); for a fit that returned a summary of its Trace, that summary.
    status : {name: status} of every job that did not raise, in the Trace's vocabulary: the Trace's
        status for a job that ran, "stopped" (the stop flag was up) or "max_time" (the budget was
        spent) for one that never started.
    errors : {name: exception} of the jobs whose call raised (the next jobs still ran).
    seconds : wall time of the batch.
    """

    names: tuple[str, ...]
    traces: dict[str, Trace]
    status: dict[str, str]
    errors: dict[str, Exception]
    seconds: float

    @property
    def finished(self) -> dict[str, Trace]:
        """The Traces of the jobs that ran to their own end (not cut by the stop flag or the budget)."""
        return {n: t for n, t in self.traces.items() if self.status[n] not in CUT}

    @property
    def cut(self) -> list[str]:
        """Jobs that started and were cut short by the stop flag or the time budget."""
        return [n for n in self.traces if self.status[n] in CUT]

    @property
    def not_run(self) -> list[str]:
        """Jobs that never started (the stop flag was up or the budget spent before their turn)."""
        return [n for n in self.names if n in self.status and n not in self.traces]

    @property
    def stopped(self) -> bool:
        """Whether the stop flag ended the batch early."""
        return any(s == "stopped" for s in self.status.values())

    def trace(self, name: str) -> Trace | None:
        """The Trace of job ``name`` (None if it never started); raises that job's error if its call raised."""
        if name not in self.names:
            raise ValueError(f"No job named {name!r} in this batch; its jobs are {', '.join(self.names)}.")
        if name in self.errors:
            raise self.errors[name]
        return self.traces.get(name)


def status_of_result(result, name: str) -> str:
    """The status of what a job returned: a Trace's, or the ``status`` of a result that carries one (a dict
    entry or an attribute); ValueError unless it is in the Trace's vocabulary."""
    status = result.get("status") if isinstance(result, Mapping) else getattr(result, "status", None)
    if status is None:
        raise ValueError(f"Job {name!r}: its fit returned {type(result).__name__} without a status, not a "
                         "vilab.core.Trace (or a summary of one with its status).")
    try:
        return check_status(status)
    except ValueError:
        raise ValueError(f"Job {name!r}: its fit returned the status {status!r}, which is not a run's status "
                         f"({', '.join(STATUSES)} or 'diverged: <reason>').") from None


def _check_fn(fn, what: str):
    if fn is not None and not callable(fn):
        raise ValueError(f"{what} must be a function (or None); got {fn!r}.")


def run_batch(jobs, *, progress: Callable[[BatchProgress], None] | None = None,
              should_stop: Callable[[], bool] | None = None, time_budget_s: float | None = None) -> BatchResult:
    """Run ``jobs`` (a list of :class:`Job`) one after another through :func:`vilab.core.run`.

    progress(BatchProgress) : called when a job starts, whenever the runner reports (between chunks of
        steps) and when a job ends; ``fraction`` (the batch's) never decreases and ends at 1.
    should_stop() -> bool : checked before each job and handed to the runner, which checks it between
        chunks: a job it interrupts ends "stopped" (its Trace is kept), the jobs after it do not start
        (status "stopped").
    time_budget_s : seconds for the whole batch; each job gets what is left as the runner's
        ``max_time`` (a job it interrupts ends "max_time"); once it is spent the jobs left do not start
        (status "max_time"). None: no budget.

    Returns a :class:`BatchResult`. A diverging job ends "diverged: <reason>" and the next job runs.
    """
    if isinstance(jobs, (Job, str, bytes, Mapping)) or not hasattr(jobs, "__iter__"):
        raise ValueError("run_batch needs a list of vilab.core.Job (one per run); "
                         f"got {type(jobs).__name__}.")
    jobs = list(jobs)
    for j in jobs:
        if not isinstance(j, Job):
            raise ValueError(f"Every entry of a batch must be a vilab.core.Job; got {j!r}.")
        j.check()
    names = tuple(j.name for j in jobs)
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"Two jobs of a batch have the same name ({', '.join(map(repr, twice))}): "
                         "give every job its own name.")
    _check_fn(progress, "progress")
    _check_fn(should_stop, "should_stop")
    if time_budget_s is not None:
        time_budget_s = positive_number(time_budget_s, "The batch's time budget time_budget_s (seconds)")

    n = len(jobs)
    traces, status, errors = {}, {}, {}
    shown = [0.0]  # the batch's fraction reported last (the report never goes back)

    def report(i: int, f: float, started: bool = True):
        if progress is None:
            return
        f = min(1.0, max(0.0, float(f))) if math.isfinite(float(f)) else 0.0
        shown[0] = max(shown[0], (i + f) / max(n, 1))
        progress(BatchProgress(shown[0], names[i], i, n, f, started))

    t0 = _clock()
    stop = should_stop if should_stop is not None else (lambda: False)
    for i, job in enumerate(jobs):
        if stop():
            status[job.name] = "stopped"
            report(i, 1.0, started=False)
            continue
        left = None if time_budget_s is None else time_budget_s - (_clock() - t0)
        if left is not None and left <= 0:
            status[job.name] = "max_time"
            report(i, 1.0, started=False)
            continue
        report(i, 0.0)

        def job_progress(f, i=i):
            report(i, f)

        try:
            if job.fit is not None:
                tr = job.fit(progress=job_progress, should_stop=should_stop, max_time=left)
            else:
                tr = run(job.algorithm, job.key, job.state, job.n_steps, progress=job_progress,
                         should_stop=should_stop, max_time=left, **dict(job.options))
            end = status_of_result(tr, job.name)
        except Exception as exc:
            errors[job.name] = exc
        else:
            traces[job.name] = tr
            status[job.name] = end
        report(i, 1.0)
    return BatchResult(names=names, traces=traces, status=status, errors=errors, seconds=_clock() - t0)
