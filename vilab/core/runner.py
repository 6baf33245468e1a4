"""The one runner: drives any :class:`~vilab.core.Algorithm` and returns a :class:`~vilab.core.Trace`.

There is one driver loop in vilab, in :func:`_loop` below: a ``jax.lax.while_loop`` that steps the
algorithm, rejects a diverging step, applies the stopping rules and writes rows into preallocated
buffers (an inner loop takes the steps between two rows, so a thinned run pays for a row once).
Two ways to use it:

* **compiled** (default): the run is one call of the compiled loop, or a few for a long run: the
  loop's buffers depend on the size of a row only (:func:`_call_sizes`: at most
  :data:`ROW_BUFFER_BYTES` of rows and :data:`STEPS_PER_CALL` steps a call), never on ``n_steps``
  or ``record_every``, so a new run length or thinning reuses the compiled program; a 1,000-step
  2-D run takes a few milliseconds once compiled. :func:`run_many` vmaps the same loop over a batch
  of starting states (step-size sweeps, many starting points; its buffers are sized to the next
  power of two above ``n_steps``).
* **host**: given ``chunk_size``, ``max_time``, ``progress``, ``should_stop``, ``host_stop`` or
  ``on_chunk``, the runner calls the compiled loop on chunks of steps and, between chunks, reports
  progress, hands the Trace so far to live figures, honours a stop button and a time budget, and
  applies host-side stopping rules (e.g. :func:`slope_rule`).

Both give identical numbers: the PRNG key is carried through the loop (``key, sub = split(key)``
each step, unless the algorithm draws from a stream of its own, ``uses_key=False``) and rows are
recorded at iterations that are multiples of ``record_every``, whatever the chunking.
:func:`resume` continues a Trace from its final state, optionally with new run-time settings (a new
step size), and appends the rows.

Blow-ups: a step reports its own failures (codes 2-9 of :data:`vilab.core.CODES`: non-finite values,
lost positive definiteness, a covariance out of the sane range read off the factor the step holds);
the runner adds scalar checks on every observed row (non-finite values; a variance below 1e-150 or
above 1e150) and, once at the end of a run that would say "max_steps" / "converged" / "stalled" /
"max_time", a check of the final row (:func:`vilab.core.trace.blowup_code`: the final covariance's
eigen-range and condition number, and an objective that ended orders of magnitude above its best
over the last quarter of the run's iterations, so that a thinned run is judged as a full one),
which turns the status into "diverged: <reason>".

Stopping rules (:func:`run`'s ``rel_tol`` and ``below``) are tested on every step, in the compiled
loop. "converged" by ``rel_tol`` needs the objective and the iterate to have stopped moving (an
oscillation between two points of equal objective is not convergence; see :func:`run`).

Bad input is refused before anything is compiled, with a sentence: keys that are not PRNG keys,
step counts past the 32-bit loop counter (:data:`MAX_STEPS`), runs whose records would not fit in
:data:`MAX_RECORD_BYTES`, run-time settings that ``init`` would refuse, a trace resumed by an
algorithm other than the one that made it.

A rejected step (a failure code from the step, or non-finite values where the runner looks) ends the
run with the state before it. The loop does not keep a copy of the state every step for that (on a
P x P covariance the copy costs as much as a cheap step): it leaves with the rejected state, and
:func:`run` runs that chunk again from its start up to the last valid step, with the same keys and so
the same numbers. :func:`run_many` (small states, members failing at different steps) selects the
state in the loop instead.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular

from .algorithm import (COLLAPSED, CONVERGED, COV_EXPLODED, HUGE, NONFINITE, TINY, Algorithm, finite_tree,
                        is_failure_code, is_stop_code, set_hyper, status_of)
from .cache import ProgramCache, identity_key
from .keys import check_key
from .trace import Trace, blowup_code

__all__ = ["run", "run_many", "resume", "stack", "slope_rule", "bucket", "whole_number", "positive_number",
           "MAX_STEPS", "MAX_RECORD_BYTES"]

_LOOPS = ProgramCache("vilab.core.runner loops", maxsize=128)
_NEG_INF = -np.inf


def bucket(n: int, least: int = 8) -> int:
    """The next power of two at or above ``n`` (at least ``least``): buffer lengths that let one
    compiled loop serve every run length up to it."""
    return max(least, 1 << (int(n) - 1).bit_length())


def _as_dict(info) -> dict:
    if isinstance(info, dict):
        return dict(info)
    if hasattr(info, "_asdict"):
        return dict(info._asdict())
    raise ValueError("An algorithm's step must return (state, info) with info a dict or NamedTuple.")


def _failure_table(algorithm: Algorithm) -> tuple[np.ndarray, np.ndarray]:
    """Lookup arrays over codes 0..max: is-failure and ends-the-run ("converged" or "stalled")."""
    codes = algorithm.all_codes()
    top = max(codes) + 1
    fail = np.array([is_failure_code(c, codes) if c in codes or c == 0 else c != 0 for c in range(top)])
    conv = np.array([is_stop_code(c, codes) for c in range(top)])
    return fail, conv


def _loop(algorithm: Algorithm, n_buf: int, n_rows: int, batch_fn, rel_on: str, below_on: str,
          track: bool, vmapped: bool, keep_info: bool = True, moves: bool = False):
    """The compiled driver loop (see the module docstring); one per (algorithm, static settings).
    ``track``: a stopping rule reads every step's observation; ``moves``: the relative-change rule
    is on (it also measures how far each step moved q, see :func:`_move`)."""
    fail_tab, conv_tab = (jnp.asarray(a) for a in _failure_table(algorithm))
    n_codes = fail_tab.shape[0]

    def advance(carry, batches, n_max, n_total, rel_tol, below_tol, r):
        if batch_fn is not None:
            batches = batch_fn
        obs0 = carry["obs"]
        _, info_shape = jax.eval_shape(algorithm.step, carry["key"], carry["state"], _batch_at(batches, 0, carry["k"]))
        info_shape = _as_dict(info_shape)
        rows = jax.tree_util.tree_map(lambda v: jnp.zeros((n_rows,) + jnp.shape(v), jnp.result_type(v)), obs0)
        infos = {k: jnp.full((n_buf,) + s.shape, jnp.nan if jnp.issubdtype(s.dtype, jnp.inexact) else 0, s.dtype)
                 for k, s in info_shape.items()} if keep_info else {}
        c0 = dict(carry, i=jnp.int32(0), rows=rows, nrow=jnp.int32(0), infos=infos, pending=jnp.asarray(False))

        def running(c):
            return (c["i"] < n_max) & (c["code"] == 0)

        def one_step(c):
            """One step: the update, its checks and the stopping rules; no row is written here."""
            i, st, k = c["i"], c["state"], c["k"]
            if algorithm.uses_key:
                key, sub = jax.random.split(c["key"])
            else:  # the algorithm draws from its own stream: no split per step
                key = sub = c["key"]
            new, info = algorithm.step(sub, st, _batch_at(batches, i, k))
            info = _as_dict(info)
            # a step reports its own failures; the runner checks states where they are observed (a
            # pass over a large state every step would cost as much as the step itself). Info values
            # may be NaN where unknown (a step size the backtracking rule did not accept).
            code = jnp.clip(jnp.asarray(info.get("code", 0), jnp.int32), 0, n_codes - 1)
            failed = fail_tab[code]
            obs, prev = c["obs"], c["prev"]
            best = c["best"]
            if track:  # the stopping rules read the observation at every step
                obs_new = algorithm.observe(new)
                bad = ~failed & ~_finite_row(obs_new)
                code = jnp.where(bad, NONFINITE, code)
                failed = failed | bad
                blown = jnp.where(failed, 0, _range_code(obs_new))
                code = jnp.where(blown != 0, blown, code)
                failed = failed | (blown != 0)
                obs = _select(failed, c["obs"], obs_new)
                best = jnp.where(failed, best, _best(best, obs_new))
            # a rejected step: a batch of runs (vmapped) keeps each member's last valid state here; a
            # single run keeps the rejected state and leaves the loop, and run() recomputes the last
            # valid state (a select over the state every step would cost as much as a cheap step on
            # a large state, e.g. a P x P covariance)
            st2 = _select(failed, st, new) if vmapped else new
            k2 = jnp.where(failed, k, k + 1)
            conv = conv_tab[code]
            if track:
                cur = jnp.asarray(obs[rel_on])
                rule = jnp.asarray(obs[below_on]) < below_tol
                if moves:  # the relative-change rule: the objective AND the iterate have stopped moving
                    flat = jnp.abs(cur - c["prev"]) < rel_tol * jnp.abs(cur)
                    still = _move(c["obs"], obs) < jnp.sqrt(rel_tol) * jnp.maximum(1.0, jnp.abs(cur))
                    rule = rule | (flat & still)
                # a stopping rule that fires makes the run "converged", even when the step also
                # reports that it cannot go on (a backtracking ladder that "stalled" next)
                code = jnp.where(rule & ~failed, CONVERGED, code)
                conv = conv | rule
                prev = jnp.where(failed, c["prev"], jnp.asarray(cur, c["prev"].dtype))
            conv = conv & ~failed
            new_code = jnp.where(failed, code, jnp.where(conv, jnp.where(code != 0, code, CONVERGED), 0))
            # a row at multiples of record_every, at convergence, at the end, and the last valid
            # iterate when a step is rejected (unless it is recorded already)
            record = jnp.where(failed, vmapped & (c["last"] != k), ((k2 % r) == 0) | conv | (k2 >= n_total))
            infos = {n: v.at[i].set(jnp.asarray(info[n], v.dtype)) for n, v in c["infos"].items()}
            return dict(c, i=i + 1, state=st2, key=jnp.where(failed, c["key"], key), k=k2, code=new_code,
                        prev=prev, obs=obs, infos=infos, pending=record, best=best)

        def to_row(c):
            """Steps until a row is due (``pending``) or the run stops; thinned runs pay the
            bookkeeping of a row once per row, not once per step."""
            return jax.lax.while_loop(lambda c: running(c) & ~c["pending"], one_step, dict(c, pending=jnp.asarray(False)))

        def write_row(c):
            """The row that is due (the loop below enters this only when ``pending``)."""
            record = c["pending"]
            obs, code, best = c["obs"], c["code"], c["best"]
            if not track:
                # observe only the rows that are recorded (observe may be expensive), and outside a
                # lax.cond: XLA hoists observe's loop-invariant work (a target's constants, e.g. the
                # inverse and log-determinant of a Gaussian target's precision: three d x d
                # factorisations) out of the loop, which it cannot do inside a conditional (there a
                # row cost them every time: at d = 50 a recorded row cost more than the step)
                obs = algorithm.observe(c["state"])
                bad = record & ~fail_tab[code] & ~_finite_row(obs)  # a non-finite state found at a row
                code = jnp.where(bad, NONFINITE, code)
                # a blow-up found at a row: a collapsed / exploded covariance (scalar checks on what
                # observe computed, see _range_code)
                blown = jnp.where(record & ~bad & ~fail_tab[code], _range_code(obs), 0)
                code = jnp.where(blown != 0, blown, code)
                bad = bad | (blown != 0)
                record = record & ~bad
                obs = _select(bad, c["obs"], obs)
                best = jnp.where(record, _best(best, obs), best)
            nrow = c["nrow"]
            rows = {n: c["rows"][n].at[nrow].set(v) for n, v in obs.items()}
            rows["__iteration"] = c["rows"]["__iteration"].at[nrow].set(c["k"])
            return dict(c, code=code, obs=obs, rows=rows, nrow=nrow + record.astype(jnp.int32),
                        last=jnp.where(record, c["k"], c["last"]), pending=jnp.asarray(False), best=best)

        c0["rows"]["__iteration"] = jnp.zeros((n_rows,), jnp.int64)
        # steps to the first row, then (row, steps to the next row) while a row is due: every pass
        # of the outer loop writes a row, so observe runs unconditionally (no lax.cond)
        out = jax.lax.while_loop(lambda c: c["pending"], lambda c: to_row(write_row(c)), to_row(c0))
        steps = out["i"] - fail_tab[out["code"]].astype(jnp.int32)  # a rejected step is not taken
        carry_out = {k: out[k] for k in ("state", "key", "k", "code", "prev", "obs", "last", "best", "scale")}
        return carry_out, out["rows"], out["nrow"], out["infos"], steps

    if vmapped:
        advance = jax.vmap(advance, in_axes=(0, None, None, None, None, None, None))
    return jax.jit(advance)


def _select(pred, a, b):
    """a where pred else b, leaf by leaf (pred a scalar)."""
    return jax.tree_util.tree_map(lambda x, y: jnp.where(pred, x, y), a, b)


def _best(best, obs):
    """The best (smallest) objective seen, given a new observation (NaN: unknown, ignored)."""
    o = jnp.asarray(obs["objective"], jnp.float64)
    return jnp.where(o < best, o, best)


def _range_code(obs) -> jax.Array:
    """The step code of a covariance out of the sane range visible in an observation (0 if none):
    a positive variance (a diagonal entry of Sigma) below TINY or one above HUGE
    (:data:`vilab.core.algorithm.TINY`).
    Scalar operations on what observe computed (no decomposition: cheap on every row). For a PD
    Sigma, lambda_min <= Sigma_ii <= lambda_max, so such a variance proves an eigenvalue out of the
    sane range (never a false alarm); a rotated collapse that keeps the diagonal sane is left to the
    step's own code (the catalogue and the families check the eigen-range of the factor they hold)
    and to the check of the final row (:func:`vilab.core.trace.blowup_code`)."""
    v = obs["var"] if "var" in obs else jnp.diagonal(jnp.asarray(obs["cov"]), axis1=-2, axis2=-1)
    v = jnp.asarray(v)
    if not v.size:
        return jnp.int32(0)
    lo, hi = jnp.min(v).astype(jnp.float64), jnp.max(v).astype(jnp.float64)
    # a variance <= 0 is a lost positive definiteness, which the step reports if it is a failure for
    # its method (an online demo shows moment parameters going negative on purpose)
    return jnp.where(hi > HUGE, COV_EXPLODED, jnp.where((lo > 0) & (lo < TINY), COLLAPSED, 0)).astype(jnp.int32)


def _move(old, new) -> jax.Array:
    """How far a step moved q: KL(q_old || q_new) in nats, from two observations (mean and cov, or
    mean and var for a diagonal q). Affine invariant, so it does not depend on the units of the
    parameters. NaN when q_new is not a proper Gaussian (then the relative-change rule does not
    fire: a run is "converged" only where convergence can be shown)."""
    dm = jnp.asarray(new["mean"]) - jnp.asarray(old["mean"])
    if "cov" in new:
        s_old, s_new = jnp.asarray(old["cov"]), jnp.asarray(new["cov"])
        lo = jnp.linalg.cholesky(0.5 * (s_old + jnp.swapaxes(s_old, -1, -2)))
        ln = jnp.linalg.cholesky(0.5 * (s_new + jnp.swapaxes(s_new, -1, -2)))
        a = solve_triangular(ln, lo, lower=True)  # tr(S_new^-1 S_old) = |L_new^-1 L_old|_F^2
        z = solve_triangular(ln, dm, lower=True)
        logdet = 2.0 * (jnp.sum(jnp.log(jnp.diagonal(ln))) - jnp.sum(jnp.log(jnp.diagonal(lo))))
        return 0.5 * (jnp.sum(a * a) - dm.shape[-1] + logdet + jnp.sum(z * z))
    v_old, v_new = jnp.asarray(old["var"]), jnp.asarray(new["var"])
    ratio = v_old / v_new
    return 0.5 * jnp.sum(ratio - 1.0 - jnp.log(ratio) + dm * dm / v_new)


def _finite_row(obs) -> jax.Array:
    """Whether an observation's mean and covariance (or variances) are finite; the objective may be
    NaN where it is unknown."""
    return finite_tree((obs["mean"], obs.get("cov", obs.get("var"))))


def _batch_at(batches, i, k):
    if batches is None:
        return None
    if callable(batches):
        return batches(k)
    return jax.tree_util.tree_map(lambda b: b[i], batches)


def _pad_batches(batches, n_from: int, n: int, n_buf: int):
    """Steps n_from .. n_from + n of an array batch stream, padded (edge) to the loop's buffer length:
    one compiled gather for the whole stream (a run of a few hundred cheap steps must not pay for
    a dozen eager array operations)."""
    if batches is None or callable(batches):
        return batches
    leaves = jax.tree_util.tree_leaves(batches)
    have = min(int(np.shape(b)[0]) for b in leaves) if leaves else 0
    if have < n_from + n:
        raise ValueError(f"The run needs {n_from + n} batches but was given {have}.")
    return _PAD.get_or_build(n_buf, lambda: jax.jit(_edge_window, static_argnums=3))(
        batches, np.int64(n_from), np.int64(n), n_buf)


def _edge_window(batches, n_from, n, n_buf):
    idx = n_from + jnp.minimum(jnp.arange(n_buf), n - 1)
    return jax.tree_util.tree_map(lambda b: jnp.take(jnp.asarray(b), idx, axis=0), batches)


_PAD = ProgramCache("vilab.core.runner batch windows", maxsize=32)


def _loop_arg(batches):
    """What the compiled loop takes as its batches argument (a batch function is built into it)."""
    return None if callable(batches) else batches


def whole_number(x, what: str, least: int = 0, integral_floats: bool = False) -> int:
    """``x`` as an int if it is a whole number (an int, not a bool, a string or a float; with
    ``integral_floats`` also a float such as 10.0) of at least ``least``; ValueError otherwise (the
    one check of counts: steps, iterations, chunk sizes)."""
    if integral_floats and isinstance(x, (float, np.floating)) and np.isfinite(x) and float(x).is_integer():
        x = int(x)
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < least:
        kind = "a positive whole number" if least == 1 else (
            "a whole number, zero or more" if least == 0 else f"a whole number of at least {least}")
        raise ValueError(f"{what} must be {kind}; got {x!r}.")
    return int(x)


def positive_number(x, what: str, allow_zero: bool = False) -> float:
    """``x`` as a float if it is a finite positive (or, with ``allow_zero``, zero) real number (not a
    bool or a string); ValueError otherwise (the one check of tolerances and time budgets)."""
    if isinstance(x, (bool, str, bytes)) or not isinstance(x, (int, float, np.integer, np.floating)) \
            and not (isinstance(x, (np.ndarray, jax.Array)) and np.ndim(x) == 0):
        raise ValueError(f"{what} must be a positive number; got {x!r}.")
    try:
        v = float(x)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{what} must be a positive number; got {x!r}.") from None
    if not (np.isfinite(v) and (v > 0 or (allow_zero and v == 0))):
        raise ValueError(f"{what} must be a {'non-negative' if allow_zero else 'positive'} number; got {x!r}.")
    return v


#: The most steps one call of the runner takes: the compiled loop counts them in 32-bit integers.
MAX_STEPS = 2**31 - 1
#: The most memory the records of one run may take (bytes): its rows (every ``record_every``-th
#: iterate: mean, covariance, objective, ...) and, with ``keep_info``, its per-step info. The
#: compiled loop allocates its row and info buffers in full before the first step (on an
#: accelerator, in its memory), and the Trace holds them all, so a run that would need more is
#: refused before it starts rather than failing with an out-of-memory error (or hours later).
MAX_RECORD_BYTES = 2**30


def _check(algorithm, n_steps, record_every):
    if not isinstance(algorithm, Algorithm):
        raise ValueError("run() needs a vilab.core.Algorithm (an init/step/observe triple).")
    n = whole_number(n_steps, "The number of steps", 0)
    if n > MAX_STEPS:
        raise ValueError(f"The number of steps must be at most {MAX_STEPS:,} (2^31 - 1: the compiled loop "
                         f"counts steps in 32-bit integers); got {n:,}. Run it in parts with vilab.core.resume.")
    whole_number(record_every, "record_every", 1)


def _key(key, who: str):
    """``key`` as a JAX PRNG key (a numpy copy of one, e.g. a saved Trace's, is taken as it is);
    ValueError with a sentence otherwise (instead of JAX's "invalid PRNG key data")."""
    if isinstance(key, np.ndarray) and key.dtype == np.uint32:
        key = jnp.asarray(key)
    return check_key(key, who)


def _nbytes(tree) -> int:
    return int(sum(np.prod(np.shape(x), dtype=np.int64) * np.dtype(getattr(x, "dtype", np.float64)).itemsize
                   for x in jax.tree_util.tree_leaves(tree)))


def _check_memory(fn, call_args, start_obs, n_steps: int, record_every: int, keep_info: bool, n_buf: int,
                  members: int = 1):
    """ValueError when the records of a run would take more than :data:`MAX_RECORD_BYTES`, computed from
    what would be allocated: the row and info buffers of the compiled loop ``fn`` (its output shapes
    for ``call_args``, found without running it; the trace is the one the call then uses), and the
    Trace's copy of every row (every ``record_every``-th iterate) and every step's info. The rows
    alone (one row: the start observation ``start_obs``) are counted first, so that a run far too
    long is refused before anything is traced."""
    n_rows_all = int(n_steps) // int(record_every) + 3

    def refuse(need, per_row, per_step):
        raise ValueError(
            f"This run would keep {need / 2**30:.1f} GiB of records ({n_rows_all:,} rows of {per_row:,.0f} bytes"
            + (f" and {per_step:,.0f} bytes of info for each of {int(n_steps):,} steps" if per_step else "")
            + f"), more than the limit of {MAX_RECORD_BYTES / 2**30:.0f} GiB: the runner allocates its records in "
            f"full before the first step. Record fewer rows (a larger record_every; now {int(record_every):,}), "
            + ("pass keep_info=False, " if per_step else "")
            + f"or take fewer steps (now {int(n_steps):,}; vilab.core.resume continues a run).")

    per_row = _nbytes(start_obs) + 8 * members
    if n_rows_all * per_row > MAX_RECORD_BYTES:
        refuse(n_rows_all * per_row, per_row, 0)
    _, rows, _, infos, _ = jax.eval_shape(fn, *call_args)
    rows_buf, info_buf = _nbytes(rows), _nbytes(infos)
    per_row = rows_buf / max(1, int(np.shape(rows["__iteration"])[-1]))
    per_step = info_buf / int(n_buf) if keep_info else 0  # the info buffer holds n_buf steps (every member)
    need = max(rows_buf + info_buf, n_rows_all * per_row + int(n_steps) * per_step)
    if need > MAX_RECORD_BYTES:
        refuse(need, per_row, per_step)


def _tol(x, what):
    if x is None:
        return _NEG_INF
    return positive_number(x, f"The tolerance {what}")


_OBSERVE = ProgramCache("vilab.core.runner observe", maxsize=128)


def _observe(algorithm: Algorithm, state, vmapped=False):
    fn = _OBSERVE.get_or_build((identity_key(algorithm.observe), vmapped),
                               lambda: jax.jit(jax.vmap(algorithm.observe) if vmapped else algorithm.observe))
    return fn(state)


def _check_names(rel_tol_on, below_on):
    for what, name in (("rel_tol_on", rel_tol_on), ("below_on", below_on)):
        if not isinstance(name, str):
            raise ValueError(f"{what} must name a recorded value (a string such as 'objective'); got {name!r}.")


def _start(observe, rel_on, below_on, state, start_iteration, below):
    """The loop's first carry from a state (compiled with observe: one call per run)."""
    obs = observe(state)
    shape = jnp.shape(obs["objective"]) if "objective" in obs else ()
    k = jnp.full(shape, start_iteration, jnp.int64)
    # a start that already meets the `below` rule takes no step
    code = jnp.where(jnp.asarray(obs.get(below_on, jnp.nan)) < below, CONVERGED, 0).astype(jnp.int32)
    prev = jnp.asarray(obs.get(rel_on, jnp.full(shape, jnp.nan)), jnp.float64)
    # what the blow-up check of the final row compares with (vilab.core.trace.blowup_code): the best
    # objective seen (on every observed row or step), and the scale max(1, |start|) of the start
    o = jnp.asarray(obs.get("objective", jnp.full(shape, jnp.nan)), jnp.float64)
    best = jnp.where(jnp.isnan(o), jnp.inf, o)
    scale = jnp.where(jnp.isfinite(o), jnp.maximum(1.0, jnp.abs(o)), 1.0)
    return {"k": k, "code": code, "prev": prev, "obs": obs, "last": k, "best": best, "scale": scale}, obs


def _start_carry(algorithm, key, state, start_iteration, rel_on, below=_NEG_INF, below_on="objective",
                 vmapped=False):
    def build():
        observe = jax.vmap(algorithm.observe) if vmapped else algorithm.observe
        return jax.jit(lambda st, it, b: _start(observe, rel_on, below_on, st, it, b))

    fn = _OBSERVE.get_or_build(("start", identity_key(algorithm.observe), vmapped, rel_on, below_on), build)
    try:
        carry, obs = fn(state, np.int64(start_iteration), np.float64(below))
    except TypeError as e:  # JAX's words for arrays of the wrong shape or kind (a state of another size)
        raise ValueError(f"This algorithm ({algorithm.name or 'unnamed'}) cannot read the state it was given: "
                         "it is a state of another algorithm or of another dimension. Build the state with "
                         f"this algorithm's init. (JAX said: {str(e).splitlines()[0][:200]})") from e
    for need in ("mean", "objective"):
        if need not in obs:
            raise ValueError(f"An algorithm's observe() must return {need!r}.")
    if "cov" not in obs and "var" not in obs:
        raise ValueError("An algorithm's observe() must return 'cov' or 'var'.")
    if rel_on not in obs or below_on not in obs:
        missing = rel_on if rel_on not in obs else below_on
        raise ValueError(f"The stopping rule reads {missing!r}, which this method does not record.")
    return dict(carry, state=state, key=key), obs  # the state is not passed through: no copy


def _identity(algorithm: Algorithm):
    """What a compiled loop depends on: the step and observe functions, the codes, the key use. Two
    Algorithms that share these (e.g. one per member of a target family, differing only in ``init``)
    share their compiled loops."""
    return (identity_key(algorithm.step), identity_key(algorithm.observe),
            tuple(sorted(algorithm.all_codes().items())), algorithm.uses_key)


def _rows_for(n_buf: int, record_every: int) -> int:
    """Row-buffer length of a loop of n_buf steps recording every record_every-th: rows at the
    multiples, plus the end, convergence and a last valid iterate; a power of two, so that nearby
    record_every values (a thinning slider) share one compiled loop."""
    return bucket(n_buf // int(record_every) + 3, least=4)


#: The most bytes of rows one compiled call of :func:`run` holds (its row buffer): with rows of
#: ``b`` bytes a call records up to the largest power of two <= ROW_BUFFER_BYTES / b rows (at least
#: 8, at most STEPS_PER_CALL); a longer run takes several calls.
ROW_BUFFER_BYTES = 8 * 2**20
#: The most steps one compiled call of :func:`run` takes when it keeps per-step info or reads a
#: batch array (the length of those buffers).
STEPS_PER_CALL = 1024


def _call_sizes(row_bytes: int, record_every: int, step_buffers: bool) -> tuple[int, int, int]:
    """(step-buffer length, row-buffer length, most steps a call takes) of :func:`run`'s compiled
    loop: they depend on the size of a row only, not on n_steps or record_every, so one compiled
    program serves every run length. A call of n steps records at most n // record_every + 2 rows
    (the multiples of record_every, and the end)."""
    fit = max(1, ROW_BUFFER_BYTES // max(1, int(row_bytes)))
    n_rows = max(8, min(STEPS_PER_CALL, 1 << (fit.bit_length() - 1)))
    n_buf = STEPS_PER_CALL if step_buffers else 8
    per_call = (n_rows - 2) * int(record_every)
    return n_buf, n_rows, int(min(per_call, n_buf if step_buffers else MAX_STEPS))


def _compiled(algorithm, n_buf, n_rows, batches, rel_on, below_on, track, vmapped, keep_info=True, moves=False):
    mode = "none" if batches is None else ("fn" if callable(batches) else "arrays")
    key = (_identity(algorithm), n_buf, n_rows, mode, rel_on, below_on, track, vmapped, keep_info, moves,
           identity_key(batches) if mode == "fn" else None)
    return _LOOPS.get_or_build(key, lambda: _loop(algorithm, n_buf, n_rows, batches if mode == "fn" else None,
                                                  rel_on, below_on, track, vmapped, keep_info, moves))


_CHECKED_AT_END = ("max_steps", "converged", "stalled", "max_time")


def _trace(algorithm, start_obs, start_iteration, rows_list, infos_list, n_taken, code, host_status, carry,
           settings, timings, index=None, check_end=True) -> Trace:
    """Assemble a Trace from the start row and the chunks' buffers (numpy)."""
    pick = (lambda a: a[index]) if index is not None else (lambda a: a)
    obs_rows = {k: [np.asarray(pick(v))[None]] for k, v in start_obs.items()}
    its = [np.array([start_iteration])]
    for rows, nrow in rows_list:
        nrow = int(pick(nrow))
        for k in obs_rows:
            obs_rows[k].append(np.asarray(pick(rows[k]))[:nrow])
        its.append(np.asarray(pick(rows["__iteration"]))[:nrow])
    rows = {k: np.concatenate(v) for k, v in obs_rows.items()}
    info = {}
    for n_chunk, infos in zip(n_taken, infos_list):
        n_chunk = int(pick(n_chunk))
        for k, v in infos.items():
            info.setdefault(k, []).append(np.asarray(pick(v))[:n_chunk])
    info = {k: np.concatenate(v) if v else np.zeros(0) for k, v in info.items()}
    codes = algorithm.all_codes()
    code = int(pick(code))
    if host_status is not None and code == 0:
        status, note = host_status, ""
    else:
        status, note = status_of(code, codes)
    if check_end and status in _CHECKED_AT_END:
        # a blow-up the steps did not report (a rotated collapse, an objective that climbed orders of
        # magnitude): checked once, on the final row (one eigendecomposition per run)
        o = np.asarray(rows["objective"], dtype=float).reshape(-1)
        best = min(float(np.asarray(pick(carry["best"]))), float(np.min(o[~np.isnan(o)], initial=np.inf)))
        blown = blowup_code(rows["objective"], rows.get("cov"), rows.get("var"), best=best,
                            iterations=np.concatenate(its))
        if blown:
            status, why = codes[blown]
            note = why + " Found on the final row: the trace holds the iterates up to the end of the run."
    extra = {k: v for k, v in rows.items() if k not in ("mean", "cov", "var", "objective")}
    step_sizes = info.get("step_size", np.full(sum(len(v) for v in info.values()) and
                                               len(next(iter(info.values()))), np.nan))
    # the final state stays where it is (a copy of a P x P covariance to numpy costs milliseconds)
    final = (carry["state"], carry["key"]) if index is None else \
        jax.tree_util.tree_map(lambda a: np.asarray(a)[index], (carry["state"], carry["key"]))
    return Trace(mean=rows["mean"], cov=rows.get("cov"), var=rows.get("var"), objective=rows["objective"],
                 step_sizes=np.asarray(step_sizes, dtype=float), status=status, method=algorithm.name,
                 objective_name=algorithm.objective_name, extra=extra, iterations=np.concatenate(its),
                 info=info, note=note, settings=settings, timings=timings, state=final[0], key=final[1])


def run(algorithm: Algorithm, key, state, n_steps: int, *, batches=None, record_every: int = 1,
        rel_tol: float | None = None, rel_tol_on: str = "objective", below: float | None = None,
        below_on: str = "objective", start_iteration: int = 0, chunk_size: int | None = None,
        max_time: float | None = None, progress: Callable[[float], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        host_stop: Callable[[dict], bool] | None = None,
        on_chunk: Callable[[Trace], None] | None = None, keep_info: bool = True) -> Trace:
    """Run ``algorithm`` from ``state`` for at most ``n_steps`` steps; return a :class:`Trace`.

    key : jax PRNG key; step t uses the t-th split of it (carried through the loop).
    batches : None (full-data methods); a pytree of arrays with one leading entry per step (a data
        stream, minibatch indices), indexed by the step within this call; or a traceable function
        ``batches(k) -> batch`` of the global iteration k.
    record_every : record a row at iterations that are multiples of it, and at the last one.
    rel_tol : stop ("converged") when the objective has stopped changing, |o_new - o_old| <
        rel_tol |o_new|, o = observe()[rel_tol_on] (Tan (2025) Table 2's rule with
        rel_tol_on="elbo"), AND the iterate has stopped moving: the step moved q by
        KL(q_old || q_new) < sqrt(rel_tol) max(1, |o_new|) nats. The objective alone is not enough:
        an iteration that jumps between two points of equal objective (a period-2 oscillation at
        a step size on its stability limit: VN at rho = 2 maps the precision S to 2H - S) has
        |o_new - o_old| = 0 and has not converged. The pair of tests, a tolerance tau on the
        objective's change and sqrt(tau) on the step's, is the classical termination rule of
        Gill, Murray & Wright (1981, Practical Optimization, Sec. 8.2.3): near an optimum the
        objective is flat to second order, so a relative change tau of the objective goes with
        steps of order sqrt(tau). KL is the step's size in the objective's own unit (nats) and
        does not depend on how the parameters are scaled. A run that converges is never held
        back by it (on vilab's reproductions the last step moves q by 1e-3 to 100 times
        rel_tol |o|, far below sqrt(rel_tol) |o|), while an oscillation moves q by O(1) nats
        every step. The test is made on every step, in the compiled loop.
    below : stop ("converged") when observe()[below_on] < below (e.g. a KL tolerance).
    start_iteration : the iteration count of ``state`` (used by :func:`resume`).
    keep_info : record the per-step info (``Trace.info``, ``Trace.step_sizes``); a long thinned run
        that needs only its rows passes False and skips a write per step.
    chunk_size, max_time, progress(fraction), should_stop(), host_stop(rows), on_chunk(trace) : run on
        the host in chunks of ``chunk_size`` steps (default 500) and, between chunks, report progress,
        hand the Trace so far to ``on_chunk`` (live figures), stop when the button was pressed
        ("stopped"), when the time budget is spent ("max_time") or when ``host_stop`` says so for the
        rows recorded so far ("converged").

    A step that leaves the Gaussian family or produces non-finite values is rejected: the run stops
    with status "diverged: <reason>" and keeps the iterates before it.
    """
    _check(algorithm, n_steps, record_every)
    key = _key(key, "run()")
    if not isinstance(keep_info, (bool, np.bool_)):
        raise ValueError(f"keep_info must be True or False; got {keep_info!r}.")
    rel_tol, below = _tol(rel_tol, "rel_tol"), _tol(below, "below")
    _check_names(rel_tol_on, below_on)
    whole_number(start_iteration, "start_iteration", 0)
    host = any(x is not None for x in (chunk_size, max_time, progress, should_stop, host_stop, on_chunk))
    if chunk_size is not None:
        whole_number(chunk_size, "chunk_size", 1)
    if max_time is not None:
        max_time = positive_number(max_time, "The time budget max_time (seconds)", allow_zero=True)
    for name, fn in (("progress", progress), ("should_stop", should_stop), ("host_stop", host_stop),
                     ("on_chunk", on_chunk)):
        if fn is not None and not callable(fn):
            raise ValueError(f"{name} must be a function (or None); got {fn!r}.")
    chunk = int(chunk_size or 500) if host else max(int(n_steps), 1)
    settings = {**dict(algorithm.settings), "n_steps": int(n_steps), "record_every": int(record_every),
                "rel_tol": None if rel_tol == _NEG_INF else rel_tol, "below": None if below == _NEG_INF else below}
    t0 = time.perf_counter()
    carry, start_obs = _start_carry(algorithm, key, state, start_iteration, rel_tol_on, below, below_on)
    track = rel_tol != _NEG_INF or below != _NEG_INF
    # the compiled loop's buffers do not depend on n_steps (nor on record_every): a run longer than
    # one call's buffers takes several calls (same keys, same numbers), so a new run length never
    # compiles again
    n_buf, n_rows, per_call = _call_sizes(_nbytes(start_obs) + 8, int(record_every),
                                          bool(keep_info) or not (batches is None or callable(batches)))
    fn = _compiled(algorithm, n_buf, n_rows, batches, rel_tol_on, below_on, track, False, bool(keep_info),
                   rel_tol != _NEG_INF)
    fail_tab = _failure_table(algorithm)[0]

    def rejected(c) -> bool:  # the run ended on a rejected step
        return bool(fail_tab[min(int(c["code"]), len(fail_tab) - 1)])

    n_total = np.int64(start_iteration + n_steps)
    cache_before = fn._cache_size() if hasattr(fn, "_cache_size") else 0
    rows_list, infos_list, taken = [], [], []
    done, host_status, first = 0, None, None
    args = (np.float64(rel_tol), np.float64(below), np.int64(record_every))
    n_first = min(chunk, per_call, n_steps)
    b_first = _loop_arg(_pad_batches(batches, 0, n_first, n_buf)) if n_steps else None
    if n_steps:
        _check_memory(fn, (carry, b_first, np.int32(n_first), n_total, *args), start_obs, n_steps,
                      record_every, keep_info, n_buf)
    t_run0 = time.perf_counter()
    while done < n_steps and int(carry["code"]) == 0:
        # one compiled call: at most per_call steps, never past the end of the host chunk
        n = min(per_call, min(n_steps, (done // chunk + 1) * chunk) - done)
        b = b_first if done == 0 else _loop_arg(_pad_batches(batches, done, n, n_buf))
        start = carry
        carry, rows, nrow, infos, steps = fn(start, b, np.int32(n), n_total, *args)
        if rejected(carry):
            # a step was rejected: the loop kept the rejected state (see _loop); run the call again
            # up to the last valid step (same keys, same numbers), which also records that iterate
            n_ok = int(steps)
            again, rows, nrow, _, _ = fn(start, b, np.int32(n_ok), np.int64(int(start["k"]) + n_ok), *args)
            carry = dict(again, code=carry["code"])
        jax.block_until_ready(carry["k"])
        if first is None:
            first = time.perf_counter() - t0  # includes compiling the loop when it was not cached
        rows_list.append((rows, nrow))
        infos_list.append(infos)
        taken.append(steps)
        done += n
        if int(carry["code"]) != 0:
            break
        if not host or (done % chunk and done < n_steps):  # the host acts between chunks
            continue
        if progress is not None:
            progress(min(1.0, done / max(n_steps, 1)))
        so_far = None
        if on_chunk is not None or host_stop is not None:
            so_far = _trace(algorithm, start_obs, start_iteration, rows_list, infos_list, taken, carry["code"],
                            None, carry, settings, {"total": time.perf_counter() - t0}, check_end=False)
        if on_chunk is not None:
            on_chunk(so_far)
        if host_stop is not None and done < n_steps:
            if host_stop({"objective": so_far.objective, "iterations": so_far.iterations, **so_far.extra}):
                host_status = "converged"
                break
        if should_stop is not None and done < n_steps and should_stop():
            host_status = "stopped"
            break
        if max_time is not None and done < n_steps and time.perf_counter() - t_run0 > max_time:
            host_status = "max_time"
            break
    if (host_status is not None or rejected(carry)) and int(carry["last"]) != int(carry["k"]):
        # stopped between chunks at an iteration that is not a multiple of record_every, or a first
        # step of a chunk rejected: record it, so that the trace ends where the state is
        obs = _observe(algorithm, carry["state"])
        # never a row of a non-finite or out-of-range state
        if host_status is not None or (bool(_finite_row(obs)) and int(_range_code(obs)) == 0):
            row = {n: jnp.asarray(v)[None] for n, v in obs.items()}
            row["__iteration"] = jnp.asarray(carry["k"])[None]
            rows_list.append((row, 1))
    timings = {"total": time.perf_counter() - t0, "first_call": first or 0.0,
               "compiled": fn._cache_size() > cache_before if hasattr(fn, "_cache_size") else None}
    return _trace(algorithm, start_obs, start_iteration, rows_list, infos_list, taken, carry["code"], host_status,
                  carry, settings, timings)


def run_many(algorithm: Algorithm, keys, states, n_steps: int, *, batches=None, record_every: int = 1,
             rel_tol: float | None = None, rel_tol_on: str = "objective", below: float | None = None,
             below_on: str = "objective") -> list[Trace]:
    """:func:`run` for a batch of starts at once, in one vmapped compiled loop: ``states`` is a state
    whose leaves have a leading batch axis (build it with ``jax.vmap(algorithm.init)`` or
    :func:`stack`), ``keys`` one key per member. A step-size sweep is a batch of states differing in
    ``hyper["rho"]``. Batches (if any) are shared. One Trace per member."""
    _check(algorithm, n_steps, record_every)
    rel_tol, below = _tol(rel_tol, "rel_tol"), _tol(below, "below")
    _check_names(rel_tol_on, below_on)
    keys = _key(keys, "run_many()")
    if jnp.ndim(keys) < (1 if jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key) else 2) \
            or int(jnp.shape(keys)[0]) < 1:
        raise ValueError("run_many needs one PRNG key per member (a non-empty batch of keys).")
    n_members = int(jnp.shape(keys)[0])
    leads = {int(np.shape(x)[0]) if np.ndim(x) else None for x in jax.tree_util.tree_leaves(states)}
    if leads != {n_members}:
        raise ValueError(f"run_many needs a batch of {n_members} states (one per key, stacked along a first axis: "
                         f"vilab.core.stack); the state's leaves have leading sizes {sorted(map(str, leads))}.")
    pad = bucket(n_members, least=4) - n_members  # sweeps of similar size share one compiled loop

    def padded(a):
        a = jnp.asarray(a)
        return jnp.concatenate([a, jnp.repeat(a[-1:], pad, axis=0)]) if pad else a

    keys_p = padded(keys)
    states_p = jax.tree_util.tree_map(padded, states)
    n_buf = bucket(max(int(n_steps), 1))
    t0 = time.perf_counter()
    carry, start_obs = _start_carry(algorithm, keys_p, states_p, 0, rel_tol_on, below, below_on, vmapped=True)
    track = rel_tol != _NEG_INF or below != _NEG_INF
    fn = _compiled(algorithm, n_buf, _rows_for(n_buf, record_every), batches, rel_tol_on, below_on, track, True,
                   moves=rel_tol != _NEG_INF)
    b = _loop_arg(_pad_batches(batches, 0, int(n_steps), n_buf))
    call = (carry, b, jnp.int32(n_steps), jnp.int64(n_steps), jnp.float64(rel_tol), jnp.float64(below),
            jnp.int64(record_every))
    if n_steps:
        _check_memory(fn, call, start_obs, n_steps, record_every, True, n_buf, members=n_members + pad)
    if n_steps and not bool(jnp.all(carry["code"] != 0)):
        carry, rows, nrow, infos, steps = fn(*call)
        chunks = ([(rows, nrow)], [infos], [steps])
    else:
        chunks = ([], [], [])
    jax.block_until_ready(carry["k"])
    timings = {"total": time.perf_counter() - t0, "members": n_members}
    settings = {**dict(algorithm.settings), "n_steps": int(n_steps), "record_every": int(record_every)}
    # to numpy once: indexing each member out of device arrays costs one JAX slice per array per member
    start_obs, chunks, carry = jax.device_get((start_obs, chunks, carry))
    return [_trace(algorithm, start_obs, 0, *chunks, carry["code"], None, carry, settings, timings, index=i)
            for i in range(n_members)]


def stack(states: list) -> Any:
    """Stack a list of states (same structure) into one batched state for :func:`run_many`."""
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *states)


def resume(algorithm: Algorithm, trace: Trace, n_steps: int, *, hyper: dict | None = None, **options) -> Trace:
    """Continue ``trace`` for ``n_steps`` more steps from its final state and key, optionally with new
    run-time settings (``hyper={"rho": 0.05}``); the returned Trace holds both parts (rows of the
    continuation appended). ``options`` are :func:`run`'s. Equal to a single run whose settings
    changed at ``trace.n_steps``."""
    if not isinstance(algorithm, Algorithm):
        raise ValueError("resume() needs the vilab.core.Algorithm that made the trace.")
    if not isinstance(trace, Trace):
        raise ValueError(f"resume() continues a vilab.core.Trace (what run() returns); got {type(trace).__name__}.")
    if trace.state is None or trace.key is None:
        raise ValueError("This trace has no saved state to continue from.")
    if trace.diverged:
        raise ValueError("This run diverged; start a new run instead of continuing it.")
    _check_made_by(algorithm, trace)
    whole_number(n_steps, "The number of steps", 0)
    if hyper is not None and not isinstance(hyper, dict):
        raise ValueError(f"hyper must be a dict of run-time settings, e.g. {{'rho': 0.05}}; got {hyper!r}.")
    state = jax.tree_util.tree_map(jnp.asarray, trace.state)
    if hyper:
        state = set_hyper(state, **hyper)
    options.setdefault("record_every", trace.settings.get("record_every", 1))
    more = run(algorithm, jnp.asarray(trace.key), state, n_steps, start_iteration=trace.n_steps, **options)
    return trace.extend(more)


_RUN_SETTINGS = ("n_steps", "record_every", "rel_tol", "below", "resumed_at")


def _same(a, b) -> bool:
    try:
        return bool(np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object)))
    except Exception:  # noqa: BLE001 (settings of odd kinds: compare them as text)
        return repr(a) == repr(b)


def _check_made_by(algorithm: Algorithm, trace: Trace):
    """ValueError unless ``trace`` was made by an algorithm like ``algorithm``: the same name and
    constructor settings (method, chart, schedule, dimension, ...; ``Algorithm.settings``, which every
    Trace copies). Continuing another method's state would read its numbers in the wrong chart."""
    if algorithm.name and trace.method and trace.method != algorithm.name:
        raise ValueError(f"This trace was made by {trace.method!r}, not by {algorithm.name!r}: continue it with "
                         "the algorithm that made it.")
    for k, v in dict(algorithm.settings).items():
        if k in _RUN_SETTINGS or k not in trace.settings:
            continue
        if not _same(trace.settings[k], v):
            raise ValueError(f"This trace was made by an algorithm with {k} = {trace.settings[k]!r}, not "
                             f"{v!r}: continue it with the algorithm that made it.")


def slope_rule(window: int, tol: float, field: str = "elbo") -> Callable[[dict], bool]:
    """A host-side stopping rule: stop once the least-squares slope of the last ``window`` recorded
    values of ``field``, per iteration, is below ``tol`` times their mean magnitude (a noisy ELBO
    that has stopped rising; Chen, Nott & Tan Sec. 6 run to such a plateau)."""
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 3:
        raise ValueError(f"The slope window needs a whole number of at least 3 recorded values; got {window!r}.")
    tol = positive_number(tol, "The slope tolerance")
    if not isinstance(field, str):
        raise ValueError(f"field must name a recorded value (a string); got {field!r}.")

    def rule(rows: dict) -> bool:
        v = np.asarray(rows[field], dtype=float)
        it = np.asarray(rows["iterations"], dtype=float)
        if v.shape[0] < window or not np.all(np.isfinite(v[-window:])):
            return False
        x, y = it[-window:], v[-window:]
        slope = np.polyfit(x, y, 1)[0]
        return abs(slope) * (x[-1] - x[0]) < tol * max(np.mean(np.abs(y)), 1e-300)

    return rule

