"""Trace: the one result type of every iterative method in vilab.

A run records *rows* (the start and every ``record_every``-th iterate, plus the last one) and
*per-step info* (small values each step reports, at every step). Pages and plots read every method's
result the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .algorithm import CODES, COLLAPSED, COV_EXPLODED, HUGE, MAX_COND, OBJ_EXPLODED, OBJ_RISE, TINY

__all__ = ["Trace", "STATUSES", "first_failure", "diverged_status", "check_status", "blowup_code"]

#: The status vocabulary: how a run ended. A run that diverged has "diverged: <reason>".
#: "stalled": the method could not make progress without having converged, e.g. a backtracking
#: ladder in which no step size increases the ELBO (Tan (2025) Sec. 4.1). Kept apart from
#: "converged", which only a convergence test may report: a ladder that fails after 0 steps from a
#: start far from the optimum (too coarse a ladder, round-off) has not found the optimum.
STATUSES = ("converged", "max_steps", "max_time", "stopped", "stalled")


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
    status : "converged", "max_steps", "max_time", "stopped", "stalled" or "diverged: <reason>"; note
      says more (e.g. why a backtracking run stalled).
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
    """Index of the first iterate that is non-finite, whose covariance is not PD, or whose covariance
    left the sane range (collapsed or exploded: see :data:`vilab.core.algorithm.TINY`).

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
        lo, hi = float(ev[0]), float(ev[-1])
        if hi > HUGE:
            return k, CODES[COV_EXPLODED][0]
        if lo < TINY or hi / lo > MAX_COND:
            return k, CODES[COLLAPSED][0]
    return None, ""


def blowup_code(objective, cov=None, var=None, best=None, max_eig_dim: int = 2000, iterations=None) -> int:
    """The step code of a blow-up visible at the end of a run (0 if none), from its recorded rows:

    * the final covariance out of the sane range (an eigenvalue below TINY = 1e-150 or condition
      number above MAX_COND = 1e16: COLLAPSED; an eigenvalue above HUGE = 1e150: COV_EXPLODED; not
      positive definite: 3; :data:`vilab.core.algorithm.TINY`). One eigendecomposition of the final
      ``cov``; without it (or beyond ``max_eig_dim``) its diagonal ``var``, which bounds the
      eigen-range from inside (a variance <= 0 there is left to the step: an online demo shows
      moment parameters going negative on purpose);
    * the objective (a loss) over the last quarter of the run rising more than OBJ_RISE = 1e2 times
      max(1, |start|, |best|) above the best value seen (``best``, default the best row), or +inf:
      OBJ_EXPLODED. Judged at the end only, because a stable run can climb as high on its way (Tan's
      T-update from a poor start overshoots its KL by 1e17 in a step, then converges), and over the
      last quarter, because a run past its stability limit often oscillates chaotically (the final
      row may be a low point of the orbit). The quarter is one of the run's *iterations* (the rows
      recorded in its last (n + 1) // 4 iterations, n the steps the rows span), not of its rows: a
      thinned run (``record_every`` large, down to a start row and a final row) is judged on the
      same stretch of the run as one that records every step, so thinning hides no blow-up. Runs of
      fewer than 3 steps are not judged on it.
    ``objective`` (R,); ``cov`` (R, d, d) or None; ``var`` (R, d) or None; ``iterations`` (R,) the
    iteration of each row (default 0, 1, ..., R - 1: every step recorded).
    """
    obj = np.asarray(objective, dtype=float).reshape(-1)
    if cov is not None and np.ndim(cov) == 3 and np.shape(cov)[-1] <= max_eig_dim:
        last = np.asarray(cov[-1], dtype=float)
        if np.all(np.isfinite(last)):
            ev = np.linalg.eigvalsh(0.5 * (last + last.T))
            lo, hi = float(ev[0]), float(ev[-1])
            if hi > HUGE:
                return COV_EXPLODED
            if lo <= 0:  # indefinite: Sigma lost positive definiteness (code 3), unless the negative eigenvalue
                # is rounding noise of a numerically singular Sigma (|lo| at eps * hi): a collapse, which
                # is also all a factor family (Sigma = C C^T, PD by construction) can show
                return COLLAPSED if -lo <= 100 * np.finfo(float).eps * hi else 3
            if lo < TINY or hi / lo > MAX_COND:
                return COLLAPSED
    elif var is not None and np.size(var):
        v = np.asarray(var, dtype=float)[-1]
        if np.all(np.isfinite(v)):
            if v.max() > HUGE:
                return COV_EXPLODED
            if 0 < v.min() < TINY:
                return COLLAPSED
    its = np.arange(obj.size) if iterations is None else np.asarray(iterations, dtype=np.int64).reshape(-1)
    if not obj.size or its.shape != obj.shape:
        return 0
    quarter = (int(its[-1]) - int(its[0]) + 1) // 4  # for rows 0..n: the last (n + 1) // 4 rows, as before
    if quarter < 1:
        return 0
    start = obj[0]
    tail = obj[its > its[-1] - quarter]
    tail = tail[~np.isnan(tail)]
    finite = obj[np.isfinite(obj)]
    if best is None:
        best = float(finite.min()) if finite.size else np.inf
    if not np.isfinite(best) or not tail.size:
        return 0
    top = float(tail.max())
    scale = max(1.0, abs(start) if np.isfinite(start) else 1.0, abs(best))
    if top == np.inf or top - best > OBJ_RISE * scale:
        return OBJ_EXPLODED
    return 0
