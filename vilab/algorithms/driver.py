"""Thin conveniences over :mod:`vilab.core`: ``run`` / ``run_sweep`` build the catalogue's
:class:`~vilab.core.Algorithm` (:func:`vilab.algorithms.algorithm`, memoized) and call the one runner,
:func:`vilab.core.run` / :func:`vilab.core.run_many`; ``step`` is one bare update; ``initial_state``
the method's chart point of a start. There is no loop here: the runner's is the only one.

Compiled loops are the runner's, keyed on the Algorithm (one per method, target or target family and
settings) and the size of a row (their buffers do not depend on ``n_steps`` or ``record_every``):
the start, step size(s), key, ``n_steps``, the thinning and the tolerances are run-time values, so
moving a slider reuses the compiled loop (a sweep, :func:`run_sweep`, compiles per power of two of
``n_steps``).
A member of a parametric family (``target.family``) carries its ``params`` in the state, so a new
member (a moved condition-number or degrees-of-freedom slider) reuses the family's loop.
"""

from __future__ import annotations

from dataclasses import replace

import jax
import numpy as np

from .. import core as vcore
from ..targets import Target, check_positive
from ..core.trace import Trace
from .catalogue import SCHEDULES, STALLED, algorithm, initial_state, is_gaussian, trace_count
from .core import State, get_method, gradients

__all__ = ["run", "run_sweep", "step", "initial_state", "trace_count", "SCHEDULES"]

_ALG_KEYS = ("grads", "schedule", "n_samples", "n_points", "backtrack_factor", "max_backtracks", "blocks",
             "local_sizes", "global_size")
_RUN_KEYS = ("record_every", "chunk_size", "max_time", "progress", "should_stop", "on_chunk")


def _split(options):
    """(algorithm settings, tolerances, runner options) of ``options``; ValueError for unknown ones."""
    opts = dict(options)
    alg = {k: opts.pop(k) for k in _ALG_KEYS if k in opts}
    tols = {"rel_tol": opts.pop("rel_tol", None), "kl_tol": opts.pop("kl_tol", None)}
    runner = {k: opts.pop(k) for k in _RUN_KEYS if k in opts}
    if opts:
        raise ValueError(f"Unknown option(s) {sorted(opts)} for run(); see vilab.algorithms.run's docstring.")
    return alg, tols, runner


def _prepare(name, target, n_steps, options):
    if not isinstance(target, Target):
        raise ValueError("target must be a vilab.targets.Target.")
    if not isinstance(name, str):
        raise ValueError(f"The method must be named by a string (see vilab.algorithms.list_methods()); got {name!r}.")
    get_method(name)
    if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)) or not 1 <= n_steps <= 10**9:
        raise ValueError(f"n_steps must be a whole number from 1 to 1e9; got {n_steps!r}.")
    alg_opts, tols, runner = _split(options)
    alg = algorithm(name, target, **alg_opts)
    for k in ("rel_tol", "kl_tol"):
        if tols[k] is not None:
            tols[k] = check_positive(tols[k], f"The tolerance {k}")
    if tols["kl_tol"] is not None and not is_gaussian(target):
        raise ValueError("kl_tol needs a Gaussian target (its KL to q is known in closed form); use rel_tol.")
    return alg, tols, runner


def _finish(alg, target, tr: Trace, zero_step=None) -> Trace:
    """The catalogue's Trace: the runner's plus extra chart/grads/schedule/paper (and note)."""
    s = alg.settings
    extra = dict(tr.extra)
    extra.update({"chart": s["chart"], "grads": s["grads"], "schedule": s["schedule"], "paper": s["paper"]})
    status, note = tr.status, tr.note
    if zero_step is not None:  # the start already meets a stopping rule, or the ladder is empty: no step
        status, note = ("stalled", zero_step) if zero_step == alg.codes[STALLED][1] else ("converged", zero_step)
    if note:
        extra["note"] = note
    if not is_gaussian(target):
        extra.pop("kl", None)
    return replace(tr, extra=extra, status=status, note=note)


def _zero_reason(alg, state, tols):
    if tols["kl_tol"] is not None and float(state.kl) < tols["kl_tol"]:
        return ""
    if state.ahead is not None and not bool(state.ahead.accept):
        return alg.codes[STALLED][1]
    return None


def _core_options(tols):
    out = {}
    if tols["rel_tol"] is not None:
        out.update(rel_tol=tols["rel_tol"], rel_tol_on="elbo")
    if tols["kl_tol"] is not None:
        out.update(below=tols["kl_tol"], below_on="kl")
    return out


def _key(key, alg, who: str):
    """The PRNG key of a run (vilab.core.keys' policy): a stochastic method (grads "first" / "second") needs
    one; with exact expectations nothing is drawn and none is needed."""
    grads = alg.settings["grads"]
    return vcore.key_if_draws(key, grads != "exact", f"{who} with grads={grads!r} (it draws from q every step)")


def _step_sizes(step_sizes) -> np.ndarray:
    """The step sizes of a sweep as a 1-D float array; ValueError with a sentence for anything but a
    non-empty list of finite positive numbers."""
    what = "step_sizes must be a non-empty list of positive numbers"
    if isinstance(step_sizes, (str, bytes, dict)) or step_sizes is None:
        raise ValueError(f"{what}; got {step_sizes!r}.")
    items = np.atleast_1d(np.asarray(step_sizes, dtype=object))
    if items.ndim != 1 or items.size == 0:
        raise ValueError(f"{what}; got {step_sizes!r}.")
    return np.array([check_positive(r, "Every step size") for r in items], dtype=np.float64)


def run(name: str, target: Target, init, n_steps: int, step_size: float, key=None, **options) -> Trace:
    """Run method ``name`` (see :func:`list_methods`) on ``target`` from ``init`` for at most
    ``n_steps`` steps and return a :class:`vilab.core.Trace`: builds
    :func:`vilab.algorithms.algorithm` and calls :func:`vilab.core.run`.

    step_size : rho (constant rule) or the first rung rho0 of the backtracking ladder.
    key : jax PRNG key (``vilab.core.as_key(seed)``), needed for stochastic gradients (grads "first" /
      "second"); with exact expectations (the default) nothing is drawn and none is needed.
    options :
      grads = "exact" | "first" | "second"   exact expectations, or Tan Thm 2 / Stein-Price estimates
      n_samples = 1                          draws per step for stochastic gradients
      schedule = "constant" | "backtracking" Tan (2025) Sec. 4.1: largest rho in
                                             {rho0, rho0 f, rho0 f^2, ...} (f = backtrack_factor = 0.1,
                                             max_backtracks = 16 rungs) keeping q proper AND
                                             increasing the ELBO, restarted at rho0 every step
      rel_tol = None                         stop when |L_new - L_old| < rel_tol |L_new| (Tan Table 2: 1e-7)
      kl_tol = None                          stop when KL(q || p) < kl_tol (Gaussian targets)
      n_points = 40                          Gauss-Hermite nodes for GLM targets
      blocks=(...), local_sizes=(...), global_size=g   structure of tan-1S / tan-2S
      record_every, chunk_size, max_time, progress, should_stop, on_chunk   vilab.core.run's options

    Trace: mean (n+1, d), cov (n+1, d, d), objective (KL for Gaussian targets, else negative ELBO),
    step_sizes (n,), status "converged" / "max_steps" / "stalled" (a backtracking ladder with no
    rung that increases the ELBO) / "diverged: <reason>" (a run that leaves
    the Gaussian family stops and keeps the iterates before the failure); extra: elbo (n+1,),
    factor (n+1, d, d) = the chart's matrix (Sigma, P, C or T), kl, chart, paper. The final state
    is ``trace.state``: :func:`vilab.core.resume` continues it (with a new ``hyper={"rho": ...}``).
    Bad input (unknown method or option, step size <= 0, a start that is not a proper Gaussian
    or where the target's log density is not finite) raises ValueError.
    """
    alg, tols, runner = _prepare(name, target, n_steps, options)
    rho0 = check_positive(step_size, "The step size")
    key = _key(key, alg, "vilab.algorithms.run")
    state = alg.init(key, init, rho=rho0, target=target)
    why = _zero_reason(alg, state, tols)
    if why is not None:
        return _finish(alg, target, vcore.run(alg, key, state, 0), zero_step=why)
    return _finish(alg, target, vcore.run(alg, key, state, int(n_steps), **_core_options(tols), **runner))


def run_sweep(name: str, target: Target, init, n_steps: int, step_sizes, key=None, **options) -> list[Trace]:
    """Like :func:`run` for many step sizes at once (:func:`vilab.core.run_many`: one vmapped,
    compiled loop over states that differ in ``hyper["rho"]``); one Trace each. Stochastic runs get
    independent keys split from ``key``."""
    alg, tols, runner = _prepare(name, target, n_steps, options)
    if runner:
        raise ValueError(f"run_sweep takes no runner option(s) {sorted(runner)}.")
    rhos = _step_sizes(step_sizes)
    key = _key(key, alg, "vilab.algorithms.run_sweep")
    keys = jax.random.split(key, rhos.size)
    states = [alg.init(key, init, rho=float(r), target=target) for r in rhos]
    traces = vcore.run_many(alg, keys, vcore.stack(states), int(n_steps), **_core_options(tols))
    out = []
    for k, s, tr in zip(keys, states, traces):
        why = _zero_reason(alg, s, tols)
        out.append(_finish(alg, target, vcore.run(alg, k, s, 0), zero_step=why) if why is not None
                   else _finish(alg, target, tr))
    return out


def step(name: str, target: Target, state: State, step_size, key=None, grads: str = "exact",
         n_samples: int = 1, n_points: int = 40, **structure) -> State:
    """One bare update of method ``name`` from the chart point ``state`` = State(mu, M), with the
    gradients the method takes (``Method.takes``; exact, or estimated from ``key``, which stochastic
    ``grads`` need). jit-able."""
    method = get_method(name)
    key = vcore.key_if_draws(key, grads != "exact", f"vilab.algorithms.step with grads={grads!r}")
    g = gradients(method, target, state, grads, key, n_samples, n_points, structure)
    return method.step(state, g, step_size, **structure)
