"""The algorithm protocol every iterative method of vilab follows (the blackjax shape).

An :class:`Algorithm` is a pair of pure functions plus what the runner records::

    state = algorithm.init(key, start)                  # start: a Gaussian, a pair (mu, Sigma), ...
    state, info = algorithm.step(key, state, batch)     # one update; batch is None for full-data methods
    row = algorithm.observe(state)                      # what a Trace row holds

* ``State`` is any pytree (a NamedTuple in practice). Run-time settings that a lecturer may change
  mid-run (the step size rho, SNNGM's alpha, ...) live in the state, in a dict field ``hyper``, in
  the manner of ``optax.inject_hyperparams``: :func:`set_hyper` returns the state with new values,
  and the runner continues from it without recompiling.
* ``Info`` is a dict (or NamedTuple) of small per-step values. Two entries have a fixed meaning:
  ``"code"`` (int; 0 = fine, see :data:`CODES` for the rest) and ``"step_size"`` (the step size the
  step used). The runner records every entry at every step (``Trace.info``).
* ``observe(state)`` returns a dict with ``"mean"`` (d,), either ``"cov"`` (d, d) or ``"var"`` (d,),
  ``"objective"`` (a scalar, NaN where unknown) and any extra entries (``"elbo"``, ``"kl"``, ...),
  recorded every ``record_every`` steps (``Trace.mean``, ``Trace.cov``, ``Trace.extra[...]``).
  Anything expensive that ``step`` already computed (the ELBO for a backtracking test) belongs in the
  state, so that ``observe`` only reads it.

Codes a step reports (``info["code"]``): 0 continue; 1 converged (the algorithm's own test); 2-6 the
shared failures of :data:`CODES`; an algorithm adds its own in ``Algorithm.codes`` (10 and up), each
with the status it means and a note. A diverging step is rejected by the runner: the trace keeps the
iterates before it and says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Algorithm", "CODES", "CONVERGED", "NONFINITE", "COLLAPSED", "COV_EXPLODED", "OBJ_EXPLODED",
           "set_hyper", "status_of", "is_failure_code", "is_stop_code", "TINY", "HUGE", "MAX_COND", "OBJ_RISE",
           "range_code", "range_code_factor", "STEP_SIZE_SETTINGS", "check_setting"]

CONVERGED = 1
NONFINITE = 2
COLLAPSED = 7
COV_EXPLODED = 8
OBJ_EXPLODED = 9

#: Codes 7-9 (beside 2-6): a covariance out of the sane range below, or an objective that exploded.
#: Sane range of a covariance in float64 (what the divergence checks of the runner, the catalogue
#: and the families use). An eigenvalue of Sigma below TINY or above HUGE is 140 orders of magnitude
#: away from any target vilab draws (whose scales lie within 1e-10 .. 1e10); its square, which the
#: precision or a Fisher product holds, is within a factor 1e8 of float64's overflow (1.8e308) or
#: underflow, so the next step is garbage. A condition number above MAX_COND = 1e16 (float64 carries
#: 15.95 significant digits, eps = 2.2e-16) makes Sigma numerically singular: its Cholesky factor
#: and every solve with it have no correct digit left. Legitimate runs stay far inside: the most
#: ill-conditioned posterior in vilab's tests, pages and reproductions has condition number 1e8.
TINY = 1e-150
HUGE = 1e150
MAX_COND = 1e16
#: A run's objective (a loss: KL, negative ELBO, NLPD) "exploded" when, over the last quarter of its
#: iterations (the rows recorded there, whatever ``record_every`` is), it lies more than
#: OBJ_RISE * max(1, |start|, |best|) above the best value seen
#: (:func:`vilab.core.trace.blowup_code`): a difference, so that negative objectives are handled, scaled
#: by the largest magnitude of the run, so that the objective's unit does not matter. Judged at the
#: end of a run only: a stable run can climb far higher on its way (Tan's T-update overshoots its KL
#: by 1e17 from a poor start, then converges), so no in-loop threshold separates the two.
OBJ_RISE = 1e2

#: code -> (status, note): the shared vocabulary of step outcomes.
CODES: dict[int, tuple[str, str]] = {
    1: ("converged", ""),
    2: ("diverged: non-finite values", ""),
    3: ("diverged: covariance lost positive definiteness", ""),
    4: ("diverged: precision lost positive definiteness", ""),
    5: ("diverged: Cholesky factor became singular (a zero on its diagonal)", ""),
    6: ("diverged: values exploded (|mean| > 1e12 or |Sigma| > 1e24)", ""),
    COLLAPSED: ("diverged: covariance collapsed (an eigenvalue below 1e-150 or condition number above 1e16)",
                "Sigma became numerically singular: float64 carries 16 digits, so a condition number past "
                "1e16 (or an eigenvalue below 1e-150, whose square underflows) leaves no correct digit in "
                "the next step. The step size is likely past its stability limit."),
    COV_EXPLODED: ("diverged: covariance exploded (an eigenvalue above 1e150)",
                   "Sigma grew past 1e150 (its square overflows float64). The step size is likely past its "
                   "stability limit."),
    OBJ_EXPLODED: ("diverged: objective exploded (ended far above its best value)",
                   "Over the last quarter of the run the objective lay more than 100 times max(1, |start|, "
                   "|best|) above the best value it had reached: the iteration is unstable (or stuck at a "
                   "wrong point), the step size is likely past its stability limit."),
}


@dataclass(frozen=True, eq=False)
class Algorithm:
    """One iterative method: ``init(key, start) -> State``, ``step(key, state, batch) -> (State, Info)``,
    ``observe(state) -> dict`` (see the module docstring).

    name, objective_name : labels the Trace carries.
    codes : the algorithm's own step codes (10 and up) -> (status, note), beside :data:`CODES`.
    settings : the constructor's settings, copied into every Trace (``Trace.settings``).
    uses_key : False for an algorithm that ignores the key ``step`` is given (deterministic updates, or
      draws from a stream the state carries); the runner then skips splitting a key every step.

    Algorithms compare and hash by identity. The runner keys its compiled loops on the ``step`` and
    ``observe`` functions (and the codes), so a constructor that should reuse compiled programs across
    calls is memoized (:func:`vilab.core.cache.memoize`), and Algorithms that differ only in ``init``
    (one per member of a target family) share their loops.
    """

    init: Callable[..., Any]
    step: Callable[..., tuple[Any, Any]]
    observe: Callable[[Any], dict]
    name: str = ""
    objective_name: str = "negative ELBO"
    codes: Mapping[int, tuple[str, str]] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)
    uses_key: bool = True

    def all_codes(self) -> dict[int, tuple[str, str]]:
        return {**CODES, **dict(self.codes)}


def status_of(code: int, codes: Mapping[int, tuple[str, str]]) -> tuple[str, str]:
    """(status, note) of a step code; unknown codes read as an unknown failure."""
    if code == 0:
        return "max_steps", ""
    return codes.get(int(code), (f"diverged: unknown failure (code {int(code)})", ""))


def is_failure_code(code: int, codes: Mapping[int, tuple[str, str]]) -> bool:
    return code != 0 and status_of(code, codes)[0].startswith("diverged")


def is_stop_code(code: int, codes: Mapping[int, tuple[str, str]]) -> bool:
    """A code that ends the run without rejecting the step: "converged" or "stalled"."""
    return code != 0 and code in codes and status_of(code, codes)[0] in ("converged", "stalled")


def range_code(lo, hi, cond=None):
    """Step code of a covariance whose eigenvalues lie in [lo, hi] (or, for a lower bound on them,
    lo an upper bound on the smallest, hi a lower bound on the largest) with condition number at
    least ``cond`` (default hi / lo): 0 if inside the sane range (:data:`TINY`, :data:`HUGE`,
    :data:`MAX_COND`), :data:`COLLAPSED` or :data:`COV_EXPLODED` otherwise. Scalar ops (traceable)."""
    cond = hi / lo if cond is None else cond
    dt = jnp.result_type(lo, hi)
    fi = jnp.finfo(dt if jnp.issubdtype(dt, jnp.floating) else jnp.float64)
    # in float32 the limits 1e-150 / 1e150 are not representable: there they become the type's own
    # smallest normal number and largest finite number
    tiny, huge = max(TINY, float(fi.tiny)), min(HUGE, float(fi.max))
    collapsed = (lo < tiny) | (cond > MAX_COND)
    return jnp.where(hi > huge, COV_EXPLODED, jnp.where(collapsed, COLLAPSED, 0)).astype(jnp.int32)


def range_code_factor(diag, precision: bool = False):
    """:func:`range_code` from the diagonal of a triangular Cholesky factor (of Sigma, or of Sigma^-1
    when ``precision``). The diagonal entries of a triangular F are its eigenvalues, and
    sigma_min(F) <= min |F_ii| <= max |F_ii| <= sigma_max(F), so min |F_ii|^2 bounds the smallest
    eigenvalue of F F^T from above and max |F_ii|^2 the largest from below: a cheap check (no
    decomposition) that never flags a covariance inside the sane range."""
    dg = jnp.abs(diag)
    a, b = jnp.min(dg), jnp.max(dg)
    lo, hi = (1.0 / (b * b), 1.0 / (a * a)) if precision else (a * a, b * b)
    return range_code(lo, hi, (b / a) ** 2)


#: Run-time settings with a fixed meaning wherever they appear (like ``info["step_size"]``): step sizes,
#: which :func:`set_hyper` (and so :func:`vilab.core.resume`) accepts only as finite positive numbers, the
#: check every ``init`` of vilab makes of them.
STEP_SIZE_SETTINGS = ("rho", "alpha")


def check_setting(name: str, value, like=None):
    """``value`` as an array fit to be the run-time setting ``name`` (ValueError otherwise, with a sentence):
    real numbers (not True/False, text or None), finite, whole numbers where the setting ``like`` (its
    current value) holds integers, of ``like``'s shape, and positive for a step size
    (:data:`STEP_SIZE_SETTINGS`). Traced values (inside jit) are passed through unchecked."""
    what = f"The step size {name}" if name in STEP_SIZE_SETTINGS else f"The setting {name}"
    if isinstance(value, jax.core.Tracer):
        return value
    if value is None or isinstance(value, (bool, str, bytes, np.bool_)):
        raise ValueError(f"{what} must be a number; got {value!r}.")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number; got {value!r}.") from None
    if arr.dtype == np.bool_ or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{what} must be a number (or an array of real numbers); got {value!r}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} must be finite; got {value!r}.")
    old = None if like is None else np.asarray(like)
    if old is not None and np.issubdtype(old.dtype, np.integer) and not np.all(np.mod(arr, 1) == 0):
        raise ValueError(f"{what} must be a whole number; got {value!r}.")
    if name in STEP_SIZE_SETTINGS and not np.all(arr > 0):
        raise ValueError(f"{what} must be a positive number; got {value!r}.")
    if old is not None and arr.shape != old.shape:
        raise ValueError(f"{what} must have shape {old.shape}; got {arr.shape}.")
    return arr


def set_hyper(state, **values):
    """The state with new run-time settings (``state.hyper[name] = value``), e.g. a new step size.

    Only settings the state already has can be set (ValueError otherwise, naming the ones it has);
    each value is checked as ``init`` checks it (:func:`check_setting`: a finite real number, a
    positive one for a step size rho or alpha, a whole number for a count) and keeps the dtype and
    shape of the old one, so the runner reuses its compiled loop.
    """
    hyper = getattr(state, "hyper", None)
    if not isinstance(hyper, dict) or not hasattr(state, "_replace"):
        raise ValueError("This algorithm has no settings that can be changed during a run.")
    unknown = sorted(set(values) - set(hyper))
    if unknown:
        raise ValueError(f"Unknown setting(s) {unknown}; this algorithm's run-time settings are {sorted(hyper)}.")
    new = dict(hyper)
    for k, v in values.items():
        old = jnp.asarray(hyper[k])
        new[k] = jnp.asarray(check_setting(k, v, old), dtype=old.dtype)
    return state._replace(hyper=new)


def finite_tree(tree) -> jax.Array:
    """Whether every floating-point leaf of ``tree`` is finite (traceable)."""
    ok = jnp.asarray(True)
    for leaf in jax.tree_util.tree_leaves(tree):
        leaf = jnp.asarray(leaf)
        if jnp.issubdtype(leaf.dtype, jnp.inexact):
            ok = ok & jnp.all(jnp.isfinite(leaf))
    return ok
