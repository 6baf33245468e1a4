"""Targets: unnormalised log posteriors log p(y, theta) with autodiff derivatives.

A :class:`Target` wraps a JAX function ``log_density(theta) -> scalar`` and provides jitted
gradient and Hessian (single point and batched). Targets whose posterior is known carry it:
``mean`` / ``cov`` (exact moments) and ``quadratic=True`` when log p is quadratic (a Gaussian
posterior), which lets expectations be taken exactly. Generalised linear models carry their
structure in ``glm`` so that E_q[grad] and E_q[hess] can be computed by one-dimensional
Gauss-Hermite quadrature along each x_i^T theta.

Basic targets live in :mod:`vilab.targets.basic` and are re-exported here; targets of
individual papers live in their own modules (``vilab.targets.papers``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Target", "GLM", "check_point"]


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

    def __post_init__(self):
        if int(self.dim) < 1:
            raise ValueError(f"A target needs dimension at least 1; got {self.dim}.")
        f = self.log_density
        self.value = jax.jit(f)
        self.grad = jax.jit(jax.grad(f))
        self.hess = jax.jit(jax.hessian(f))
        self.value_batch = jax.jit(jax.vmap(f))
        self.grad_batch = jax.jit(jax.vmap(jax.grad(f)))
        self.hess_batch = jax.jit(jax.vmap(jax.hessian(f)))
        if self.mean is not None:
            self.mean = np.asarray(self.mean, dtype=np.float64)
        if self.cov is not None:
            self.cov = np.asarray(self.cov, dtype=np.float64)

    @property
    def precision(self) -> np.ndarray | None:
        """Posterior precision when the posterior covariance is known."""
        return None if self.cov is None else np.linalg.inv(self.cov)

    def __repr__(self) -> str:  # short: targets appear in error messages and cache keys
        return f"Target({self.name!r}, dim={self.dim})"


def check_point(target: Target, theta, what: str = "starting point") -> np.ndarray:
    """Validate a point for ``target``: right length, finite, finite log density and gradient."""
    th = np.asarray(theta, dtype=np.float64)
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


from .basic import (  # noqa: E402  (re-export the basic targets)
    banana,
    bayes_linreg,
    gaussian_2d,
    gaussian_target,
    logistic_regression,
    student_t_2d,
)

__all__ += ["banana", "bayes_linreg", "gaussian_2d", "gaussian_target", "logistic_regression", "student_t_2d"]
