"""Input checks shared by the public functions of vilab (eager numpy; never inside jit).

Every public function promises: bad input raises ``ValueError`` with one sentence a student
understands (what is wrong, what to do); valid input gives a finite result or a ``ValueError``
explaining the overflow. These helpers turn the ways array conversion can fail (``TypeError``
for strings and objects, ``OverflowError`` for integers beyond float range, a complex number whose
imaginary part numpy would silently drop) into such ``ValueError`` messages, so that each check
is written once. ``name`` is the argument as the student knows it ("The mean mu", "y"); user
values appear in messages only through ``repr``.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["real_array", "real_scalar", "positive", "integer", "pd_matrix", "finite_result",
           "class_labels", "binary_labels", "counts"]


def _short(x) -> str:
    r = repr(x)
    return r if len(r) <= 60 else r[:57] + "..."


def real_array(x, name: str, *, ndim: int | None = None, finite: bool = True, allow_empty: bool = False) -> np.ndarray:
    """``x`` as a float64 array: real numbers only (no strings, no complex), finite unless
    ``finite=False``, with ``ndim`` dimensions when given, non-empty unless ``allow_empty``."""
    if isinstance(x, (str, bytes)):
        raise ValueError(f"{name} must be numbers, not text; got {_short(x)}.")
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError, OverflowError) as exc:  # ragged nested lists and the like
        raise ValueError(f"{name} must be an array of real numbers (equal-length rows); got {_short(x)}.") from exc
    if np.iscomplexobj(raw):
        raise ValueError(f"{name} must be real numbers; got complex values.")
    if raw.dtype.kind not in "biuf":
        if raw.dtype.kind == "O" and all(isinstance(v, numbers.Integral) for v in raw.ravel()):
            pass  # Python ints too large for int64: converted below (or rejected as too large)
        elif raw.dtype.kind == "O" and any(isinstance(v, numbers.Complex) and not isinstance(v, numbers.Real)
                                           for v in raw.ravel()):
            raise ValueError(f"{name} must be real numbers; got complex values.")
        else:
            raise ValueError(f"{name} must be numbers; got {_short(x)}.")
    try:
        a = raw.astype(np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{name} contains a number too large to represent (beyond about 1.8e308).") from exc
    if ndim is not None and a.ndim != ndim:
        what = {0: "a single number", 1: "a vector", 2: "a matrix"}.get(ndim, f"a {ndim}-dimensional array")
        raise ValueError(f"{name} must be {what}; got an array of shape {a.shape}.")
    if not allow_empty and a.size == 0:
        raise ValueError(f"{name} is empty; give at least one value.")
    if finite and not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains non-finite values (NaN or infinity).")
    return a


def real_scalar(x, name: str) -> float:
    """``x`` as a finite float (a real number, not a string, an array or a complex number)."""
    if isinstance(x, (bool, str, bytes)):
        raise ValueError(f"{name} must be a number; got {_short(x)}.")
    a = real_array(x, name, finite=False, allow_empty=True)
    if a.size != 1:
        raise ValueError(f"{name} must be a single number; got an array of shape {a.shape}.")
    v = float(a.reshape(()))
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite (a real number, not NaN or infinity); got {x!r}.")
    return v


def _is_nonfinite_number(x) -> bool:
    try:
        return isinstance(x, numbers.Real) and not np.isfinite(x)
    except TypeError:
        return False


def positive(x, name: str) -> float:
    """``x`` as a float, or ValueError naming ``name`` when it is not a positive finite number."""
    if _is_nonfinite_number(x):
        raise ValueError(f"{name} must be a positive finite number; got {x!r}.")
    v = real_scalar(x, name)
    if not v > 0:
        raise ValueError(f"{name} must be a positive finite number; got {x!r}.")
    return v


def integer(x, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """``x`` as a Python int within [minimum, maximum] (a whole number, not a bool, float or string)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (numbers.Integral, np.integer)):
        if isinstance(x, (float, np.floating)) and np.isfinite(x) and float(x).is_integer():
            x = int(x)
        else:
            raise ValueError(f"{name} must be a whole number; got {_short(x)}.")
    v = int(x)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be at least {minimum}; got {v}.")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be at most {maximum}; got {v}.")
    return v


def pd_matrix(S, name: str) -> np.ndarray:
    """``S`` as a float64 symmetric positive-definite matrix (square, finite, real), else ValueError.
    The returned matrix is symmetrised exactly; ``name`` is the full phrase ("The covariance Sigma")."""
    S = real_array(S, name, ndim=2)
    if S.shape[0] != S.shape[1]:
        raise ValueError(f"{name} must be a square matrix; got shape {S.shape}.")
    if not np.allclose(S, S.T, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(S).max())):
        raise ValueError(f"{name} must be symmetric.")
    S = 0.5 * (S + S.T)
    try:  # Cholesky is the cheap test; the smallest eigenvalue is computed for the message only
        C = np.linalg.cholesky(S)
    except np.linalg.LinAlgError:
        ev = np.linalg.eigvalsh(S)
        if ev[0] > 0:  # every eigenvalue positive as computed, yet the factorisation fails: too close to call
            raise ValueError(f"{name} is too close to singular to factorise in float64 (condition number about "
                             f"{ev[-1] / ev[0]:.1e}); rescale it or add a small multiple of the identity.") from None
        raise ValueError(f"{name} must be positive definite, but its smallest eigenvalue is {ev[0]:.3g}.") from None
    if not np.all(np.isfinite(C)) or np.any(np.diag(C) <= 0):
        raise ValueError(f"{name} is too close to singular (or too large) to factorise in float64; rescale it.")
    return S


def finite_result(value, what: str):
    """Return ``value`` when every entry is finite; else ValueError saying the computation overflowed.
    Skipped (value returned) under a JAX trace, where nothing is concrete."""
    try:
        a = np.asarray(value)
    except Exception:  # a tracer: cannot be inspected
        return value
    if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
        raise ValueError(f"{what} is not finite in float64 arithmetic: the inputs are too large, too small or too "
                         "close to singular; rescale them (e.g. work in units where the variances are near 1).")
    return value


def class_labels(y, n_classes: int, name: str = "The class labels y") -> np.ndarray:
    """Integer class labels in 0, ..., n_classes - 1 (as an int array), else ValueError naming the range."""
    a = real_array(y, name, finite=False, allow_empty=True)
    bad = ~np.isfinite(a) | (a != np.round(a)) | (a < 0) | (a > n_classes - 1)
    if np.any(bad):
        raise ValueError(f"{name} must be whole numbers from 0 to {n_classes - 1}; got {a[bad].ravel()[0]:g}.")
    return a.astype(np.int64)


def binary_labels(y, name: str = "The responses y") -> np.ndarray:
    """0/1 responses of a Bernoulli model as float64, else ValueError."""
    a = real_array(y, name)
    if not np.all((a == 0) | (a == 1)):
        raise ValueError(f"{name} of a Bernoulli (logistic) model must be 0 or 1; got {a[(a != 0) & (a != 1)][0]:g}.")
    return a


def counts(y, name: str = "The counts y", whole: bool = True) -> np.ndarray:
    """Non-negative whole numbers (Poisson counts) as float64, else ValueError; ``whole=False``
    lets through non-negative fractions (a data set given by its sufficient statistics)."""
    a = real_array(y, name)
    bad = (a < 0) | ((a != np.round(a)) if whole else False)
    if np.any(bad):
        raise ValueError(f"{name} of a Poisson model must be counts 0, 1, 2, ...; got {a[bad][0]:g}.")
    return a
