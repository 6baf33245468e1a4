"""Your own model as a :class:`vilab.targets.Target`: one call from a JAX log density.

    import jax.numpy as jnp
    from vilab.targets import from_log_density

    def log_p(theta):                       # theta: (d,) float64 array -> scalar
        return -0.5 * jnp.sum(theta ** 2) - jnp.sum(jnp.log1p(jnp.exp(-theta)))

    target = from_log_density(log_p, 3, name="my model")   # gradient and Hessian by autodiff

The result works with every method of :func:`vilab.algorithms.list_methods` in the stochastic
gradient modes (``grads="first"`` uses grad log p, ``grads="second"`` also the Hessian); exact
expectations (``grads="exact"``) need a Gaussian or GLM target, or closed forms passed in ``info``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..core.checks import pd_matrix, real_array
from .target import Target

__all__ = ["from_log_density"]


def from_log_density(log_density: Callable, dim: int, *, name: str = "my model", start=None,
                     mean=None, cov=None, bounds=None, info: dict | None = None) -> Target:
    """A :class:`Target` from ``log_density(theta) -> scalar`` (written with jax.numpy) on R^dim.

    Gradient and Hessian come from JAX's autodiff (``jax.grad``, ``jax.hessian``), jitted once.
    The function is checked before it is wrapped, each with a ValueError saying what to fix: it must
    be traceable by JAX (no numpy, ``float()`` or Python ``if`` on theta), return one number (shape
    ``()``) for a theta of shape ``(dim,)``, and have a finite value and gradient at ``start``
    (default: zeros, the usual start of the methods). ``mean`` / ``cov``: the exact posterior
    moments if you know them (they are only used for comparisons): a finite vector of length dim and a
    dim x dim symmetric positive definite matrix; ``bounds``: the plotting window of a 2-D target, one
    (low, high) pair of finite numbers with low < high per coordinate; ``info``: free-form metadata.
    """
    if not callable(log_density):
        raise ValueError("log_density must be a function of theta (a JAX array of shape (dim,)) returning a number.")
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or int(dim) < 1:
        raise ValueError(f"dim must be a whole number of at least 1 (the length of theta); got {dim!r}.")
    d = int(dim)
    name = str(name)
    theta0 = np.zeros(d) if start is None else real_array(start, "The start", finite=True)
    if theta0.shape != (d,):
        raise ValueError(f"The start must have {d} coordinates (dim = {d}); got shape {theta0.shape}.")
    mean, cov, bounds = _mean(mean, d), _cov(cov, d), _bounds(bounds, d)
    if info is not None and not isinstance(info, Mapping):
        raise ValueError(f"info must be a dictionary of metadata (or None); got {type(info).__name__}.")
    spec = jax.ShapeDtypeStruct((d,), jnp.float64)
    try:
        out = jax.eval_shape(log_density, spec)
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError,
            jax.errors.TracerBoolConversionError, jax.errors.TracerIntegerConversionError) as e:
        raise ValueError(f"The log density of {name!r} is not pure JAX code: write it with jax.numpy (not numpy, "
                         "float() or a Python if on theta; use jnp.where for branches). JAX said: "
                         f"{type(e).__name__}.") from None
    except Exception as e:  # noqa: BLE001  (the user's own function failed: say so in a sentence)
        raise ValueError(f"The log density of {name!r} fails on a theta of shape ({d},): "
                         f"{type(e).__name__}: {e}".strip()) from None
    if not hasattr(out, "shape") or tuple(out.shape) != ():
        shape = getattr(out, "shape", type(out).__name__)
        raise ValueError(f"The log density of {name!r} must return one number (shape ()); it returns shape {shape}. "
                         "Sum over the data, e.g. return jnp.sum(...).")
    if not jnp.issubdtype(out.dtype, jnp.floating):
        raise ValueError(f"The log density of {name!r} must return a real floating-point number; it returns {out.dtype}.")
    target = Target(name=name, dim=d, log_density=log_density, mean=mean, cov=cov, bounds=bounds,
                    info=dict(info or {}))
    x0 = jnp.asarray(theta0, jnp.float64)
    v, g = float(target.value(x0)), np.asarray(target.grad(x0))
    if not np.isfinite(v):
        raise ValueError(f"The log density of {name!r} is not finite at the start {theta0.tolist()}; "
                         "pass start=<a point where the density is positive>.")
    if not np.all(np.isfinite(g)):
        raise ValueError(f"The gradient of the log density of {name!r} is not finite at the start {theta0.tolist()}; "
                         "pass another start, or check the function for log(0) or division by zero.")
    return target


def _mean(mean, d: int):
    """The exact posterior mean (a finite vector of length d) or None."""
    if mean is None:
        return None
    m = real_array(mean, "The posterior mean", ndim=1)
    if m.shape != (d,):
        raise ValueError(f"The posterior mean must have {d} coordinates (dim = {d}); got {m.shape[0]}.")
    return m


def _cov(cov, d: int):
    """The exact posterior covariance (a d x d symmetric positive definite matrix) or None."""
    if cov is None:
        return None
    S = real_array(cov, "The posterior covariance", ndim=2)
    if S.shape != (d, d):
        raise ValueError(f"The posterior covariance must be a {d} x {d} matrix (dim = {d}); got shape {S.shape}.")
    return pd_matrix(S, "The posterior covariance")


def _bounds(bounds, d: int):
    """The plotting window: d pairs (low, high) of finite numbers with low < high, as a tuple, or None."""
    if bounds is None:
        return None
    b = real_array(bounds, "The plotting window bounds", ndim=2)
    if b.shape != (d, 2):
        raise ValueError(f"The plotting window bounds must be {d} pairs (low, high), one per coordinate; "
                         f"got shape {b.shape}.")
    bad = np.flatnonzero(~(b[:, 0] < b[:, 1]))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"The plotting window bounds of coordinate {i + 1} must have low < high; "
                         f"got ({b[i, 0]:g}, {b[i, 1]:g}).")
    return tuple((float(lo), float(hi)) for lo, hi in b)
