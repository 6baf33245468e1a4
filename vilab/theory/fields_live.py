"""Tan (2025) Table 2's one-dimensional update rules driven live: the step size (fixed, or the first rung of
the backtracking ladder) changes at chosen iterations while the run goes on (vilab.core.live's schedules).

:func:`vilab.theory.fields.run_1d` is a scalar loop (no compiled state to resume), so a change of step size at
iteration t restarts it from the iterate (mu_t, sigma^2_t) with the new step size. The rules keep nothing
else between steps but the chart's factor (sigma^2, 1/sigma^2, sigma or 1/sigma), recomputed from sigma^2_t:
equal to an uninterrupted run up to the rounding of that factor.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..core.live import Changes, merge, valid_prefix, value_at
from ..core.trace import Trace
from .fields import run_1d

__all__ = ["run_1d_schedule"]


def run_1d_schedule(rule: str, target, mu0: float, s2_0: float, changes: Changes, n: int,
                    schedule: str = "backtracking", *, prefix: Trace | None = None,
                    prefix_changes: Changes | None = None) -> Trace:
    """Rule ``rule`` of :func:`vilab.theory.fields.run_1d` (Tan (2025) Table 1-2, Sec. 4.1's backtracking) from
    (mu0, s2_0) for ``n`` steps, with no stopping test, its step size following ``changes``
    (((0, rho_0), (t_1, rho_1), ...): rho_k for the steps after t_k). A run that diverges or stalls (no
    rung of the ladder increases the ELBO: the optimum to machine precision) stops there. ``prefix``: a
    trace this function returned for ``prefix_changes``, continued when it is the start of this run."""
    n = int(n)
    if n < 0:
        raise ValueError(f"A live run needs a number of steps >= 0; got {n}.")
    steps = merge({"rho": changes})
    tr = None
    if prefix is not None and prefix_changes is not None and valid_prefix(prefix, steps, merge({"rho": prefix_changes}), n):
        tr = prefix
    if tr is None:
        first = run_1d(rule, target, mu0, s2_0, value_at(changes, 0), schedule=schedule, rel_tol=None,
                       n_steps=max(1, min(n, steps[1][0] if len(steps) > 1 else n)))
        tr = first if n > 0 else _head(first)
    while tr.n_steps < n and tr.status == "max_steps":
        p = tr.n_steps
        nxt = min([t for t, _ in steps if t > p] + [n])
        more = run_1d(rule, target, float(tr.mean[-1, 0]), float(tr.cov[-1, 0, 0]), value_at(changes, p),
                      schedule=schedule, rel_tol=None, n_steps=nxt - p)
        tr = tr.extend(replace(more, iterations=np.asarray(more.iterations) + p))
    return tr


def _head(tr: Trace) -> Trace:
    """The start row of a run only (a live run at iteration 0)."""
    rows = lambda a: None if a is None else np.asarray(a)[:1]  # noqa: E731
    extra = {k: (np.asarray(v)[:1] if isinstance(v, np.ndarray) and v.ndim and v.shape[0] == tr.n_rows else v)
             for k, v in tr.extra.items()}
    return replace(tr, mean=rows(tr.mean), cov=rows(tr.cov), var=rows(tr.var), objective=rows(tr.objective),
                   iterations=np.zeros(1, np.int64), step_sizes=np.zeros(0), extra=extra, status="max_steps")
