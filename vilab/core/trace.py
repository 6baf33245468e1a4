"""Trace: the one result type of every iterative method in vilab.

A run records *rows* (the start and every ``record_every``-th iterate, plus the last one) and
*per-step info* (small values each step reports, at every step). Pages and plots read every method's
result the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

__all__ = ["Trace", "STATUSES", "first_failure", "diverged_status", "check_status"]

#: The status vocabulary: how a run ended. A run that diverged has "diverged: <reason>".
STATUSES = ("converged", "max_steps", "max_time", "stopped")


def diverged_status(reason: str) -> str:
    """The canonical status string of a run that stopped because of ``reason``."""
    return f"diverged: {reason}"


def check_status(status: str) -> str:
    if status in STATUSES or (isinstance(status, str) and status.startswith("diverged: ")):
        return status
    raise ValueError(f"A run's status must be one of {STATUSES} or 'diverged: <reason>'; got {status!r}.")


@dataclass
class Trace:
    """History of one run.

    Rows (R of them, row 0 is the start):
      mean (R, d); cov (R, d, d) or None; var (R, d) (the diagonal of cov when cov is recorded);
      objective (R,) (``objective_name``; NaN where unknown); iterations (R,) the iteration count of
      every row (0 for the start of a fresh run); extra: further recorded rows (elbo, kl, factor, ...)
      and anything method-specific.
    Per step (n of them): step_sizes (n,); info: every per-step value the steps report.
    status : "converged", "max_steps", "max_time", "stopped" or "diverged: <reason>"; note says more
      (e.g. why a backtracking run counts as converged).
    settings : what the run was asked to do (method settings, n_steps, record_every, tolerances).
    timings : seconds: "total", and "first_call" (the first compiled call, which includes compiling
      the loop when it was not cached); "compiled": whether this run had to compile its loop.
    state, key : the final state and PRNG key, from which :func:`vilab.core.resume` continues.
    """

    mean: np.ndarray
    cov: np.ndarray | None
    objective: np.ndarray
    step_sizes: np.ndarray
    status: str
    method: str = ""
    objective_name: str = "negative ELBO"
    extra: dict[str, Any] = field(default_factory=dict)
    iterations: np.ndarray | None = None
    var: np.ndarray | None = None
    info: dict[str, np.ndarray] = field(default_factory=dict)
    note: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    state: Any = None
    key: Any = None

    def __post_init__(self):
        check_status(self.status)
        self.mean = np.asarray(self.mean)
        if self.iterations is None:
            self.iterations = np.arange(self.mean.shape[0])
        self.iterations = np.asarray(self.iterations, dtype=np.int64)
        if self.var is None and self.cov is not None:
            cov = np.asarray(self.cov)
            self.var = np.diagonal(cov, axis1=-2, axis2=-1).copy() if cov.ndim >= 2 else None
        if self.iterations.shape[0] != self.mean.shape[0]:
            raise ValueError("A Trace needs one iteration index per recorded row.")

    @property
    def n_steps(self) -> int:
        """Number of steps taken (the iteration of the last row)."""
        return int(self.iterations[-1]) if self.iterations.size else 0

    @property
    def n_rows(self) -> int:
        return int(self.mean.shape[0])

    @property
    def diverged(self) -> bool:
        return self.status.startswith("diverged")

    @property
    def sd(self) -> np.ndarray:
        """Marginal standard deviations at every row."""
        return np.sqrt(self.var)

    def extend(self, more: "Trace") -> "Trace":
        """This trace followed by ``more``, a run resumed from this one's last row (whose first row
        repeats that last row and is dropped). Status, state and key are ``more``'s."""
        if more.n_rows and self.n_rows and int(more.iterations[0]) != self.n_steps:
            raise ValueError("The second trace does not continue the first (its first row is not the last one here).")

        def cat(a, b):
            if a is None or b is None:
                return None
            return np.concatenate([np.asarray(a), np.asarray(b)[1:]])

        def cat_steps(a, b):
            return np.concatenate([np.asarray(a), np.asarray(b)])

        extra = dict(self.extra)
        for k, v in more.extra.items():
            a = self.extra.get(k)
            if isinstance(v, np.ndarray) and isinstance(a, np.ndarray) and v.ndim and v.shape[0] == more.n_rows \
                    and a.shape[0] == self.n_rows:
                extra[k] = cat(a, v)
            else:
                extra[k] = v
        info = {k: cat_steps(self.info[k], v) for k, v in more.info.items() if k in self.info}
        timings = {k: self.timings.get(k, 0.0) + more.timings.get(k, 0.0) for k in set(self.timings) | set(more.timings)}
        return replace(
            more, mean=cat(self.mean, more.mean), cov=cat(self.cov, more.cov), var=cat(self.var, more.var),
            objective=cat(self.objective, more.objective), iterations=cat(self.iterations, more.iterations),
            step_sizes=cat_steps(self.step_sizes, more.step_sizes), info=info, extra=extra, timings=timings,
            settings={**self.settings, "resumed_at": [*self.settings.get("resumed_at", []), self.n_steps]},
        )


def first_failure(cov: np.ndarray, *arrays: np.ndarray) -> tuple[int | None, str]:
    """Index of the first iterate that is non-finite or whose covariance is not PD.

    Returns ``(None, "")`` when every iterate is fine, else ``(k, reason)``; the caller keeps
    rows ``[:k]`` (the steps up to the failure). For paths computed outside the runner (ODE flows).
    """
    n = cov.shape[0]
    for k in range(n):
        if not all(np.all(np.isfinite(a[k])) for a in (cov, *arrays)):
            return k, diverged_status("non-finite values")
        ev = np.linalg.eigvalsh(0.5 * (cov[k] + np.swapaxes(cov[k], -1, -2)))
        if ev[0] <= 0:
            return k, diverged_status("covariance lost positive definiteness")
    return None, ""
