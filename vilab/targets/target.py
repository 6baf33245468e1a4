"""The :class:`Target` (a log density with jitted derivatives), the :class:`GLM` structure it may carry, and
the checks of a starting point; re-exported by :mod:`vilab.targets` (whose docstring says what a target is)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Hashable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..core.checks import positive, real_array

__all__ = ["Target", "GLM", "check_point", "check_positive", "family_jits"]


class GLM(NamedTuple):
    """log p(y, theta) = sum_i loglik(x_i^T theta, y_i) - 1/2 (theta - m0)^T P0 (theta - m0).

    ``loglik(eta, y)`` is elementwise in (eta, y) and must be twice differentiable in eta.
    """

    X: jax.Array
    y: jax.Array
    loglik: Callable[[jax.Array, jax.Array], jax.Array]
    prior_mean: jax.Array
    prior_prec: jax.Array


@dataclass(eq=False)
class Target:
    """An unnormalised log density on R^d with jitted derivatives.

    Parameters
    ----------
    name : label for tables and plots.
    dim : d.
    log_density : theta (d,) -> scalar, written in jax.numpy.
    mean, cov : exact posterior moments when known (else None).
    quadratic : log p is a quadratic form (Gaussian posterior with mean/cov above).
    glm : GLM structure, when the target is a generalised linear model with Gaussian prior.
    bounds : ((x0, x1), (y0, y1)) plotting window for 2-D targets.
    info : free-form metadata (data sizes, constants dropped, source).
    family, params, family_fn : optional, all three or none. The target is the member ``params``
        (a pytree of float64 arrays) of the parametric family ``family`` (a hashable key that fixes
        everything not in ``params``: dimension, the form of log p, which of mean/cov/glm exist),
        and ``family_fn(params)`` rebuilds it from traced params (jax.numpy only, no validation,
        no numpy on params): its log density, ``mean``/``cov`` (jax arrays; NaN where a moment
        does not exist for those params) and ``quadratic``/``glm``/``info`` entries the
        algorithms use; name and bounds of the rebuild may be generic. Validation stays in the
        public constructors, on concrete values. Concrete members share one set of jitted
        derivatives per family, and :mod:`vilab.algorithms` compiles one loop per family.
        Rebuilds carry ``family`` but are marked traced (``traced=True``).
    """

    name: str
    dim: int
    log_density: Callable[[jax.Array], jax.Array]
    mean: np.ndarray | None = None
    cov: np.ndarray | None = None
    quadratic: bool = False
    glm: GLM | None = None
    bounds: tuple | None = None
    info: dict[str, Any] = field(default_factory=dict)
    family: Hashable | None = None
    params: Any = None
    family_fn: Callable[[Any], "Target"] | None = None

    def __post_init__(self):
        if int(self.dim) < 1:
            raise ValueError(f"A target needs dimension at least 1; got {self.dim}.")
        if (self.family is None) != (self.family_fn is None) or (self.family is None) != (self.params is None):
            raise ValueError("A target of a parametric family needs all of family, params and family_fn (or none).")
        self.traced = self.family is not None and any(
            isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves((self.params, self.mean, self.cov)))
        if self.family is not None and not self.traced:
            self.params = jax.tree.map(lambda a: jnp.asarray(a, dtype=jnp.float64), self.params)
            fns = family_jits(self.family, self.family_fn)
            for k, fn in fns.items():  # compiled once per family: a new member reuses them
                setattr(self, k, partial(fn, self.params))
        else:
            f = self.log_density
            self.value = jax.jit(f)
            self.grad = jax.jit(jax.grad(f))
            self.hess = jax.jit(jax.hessian(f))
            self.value_batch = jax.jit(jax.vmap(f))
            self.grad_batch = jax.jit(jax.vmap(jax.grad(f)))
            self.hess_batch = jax.jit(jax.vmap(jax.hessian(f)))
        if not self.traced:
            if self.mean is not None:
                self.mean = np.asarray(self.mean, dtype=np.float64)
            if self.cov is not None:
                self.cov = np.asarray(self.cov, dtype=np.float64)

    @property
    def precision(self):
        """Posterior precision when the posterior covariance is known (a jax array in a traced rebuild)."""
        if self.cov is None:
            return None
        return jnp.linalg.inv(self.cov) if self.traced else np.linalg.inv(self.cov)

    def __repr__(self) -> str:  # short: targets appear in error messages and cache keys
        return f"Target({self.name!r}, dim={self.dim})"


_FAMILY_JITS: dict = {}


def family_jits(family: Hashable, family_fn: Callable) -> dict:
    """The jitted value/grad/hess (and batched versions) of a family, functions of (params, theta):
    compiled once per family and shared by its members (``Target.value = partial(fn, params)``)."""
    key = (family, family_fn)
    fns = _FAMILY_JITS.get(key)
    if fns is None:
        def f(params, theta):
            return family_fn(params).log_density(theta)

        g, h = jax.grad(f, argnums=1), jax.hessian(f, argnums=1)
        fns = {"value": jax.jit(f), "grad": jax.jit(g), "hess": jax.jit(h),
               "value_batch": jax.jit(jax.vmap(f, in_axes=(None, 0))),
               "grad_batch": jax.jit(jax.vmap(g, in_axes=(None, 0))),
               "hess_batch": jax.jit(jax.vmap(h, in_axes=(None, 0)))}
        _FAMILY_JITS[key] = fns
    return fns


def check_positive(x, what: str) -> float:
    """``x`` as a float, or ValueError naming ``what`` when it is not a positive finite number
    (:func:`vilab.core.checks.positive`)."""
    return positive(x, what)


def check_point(target: Target, theta, what: str = "starting point") -> np.ndarray:
    """Validate a point for ``target``: right length, finite, finite log density and gradient."""
    th = real_array(theta, f"The {what}", finite=False, allow_empty=True)
    if th.shape != (target.dim,):
        raise ValueError(
            f"The {what} must have {target.dim} coordinates for target {target.name!r}; got shape {th.shape}."
        )
    if not np.all(np.isfinite(th)):
        raise ValueError(f"The {what} contains non-finite values.")
    val = float(target.value(jnp.asarray(th)))
    if not np.isfinite(val):
        raise ValueError(
            f"The log density of {target.name!r} is not finite at the {what} {th.tolist()}; "
            "start somewhere the target has positive density."
        )
    return th
