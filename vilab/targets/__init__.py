"""Targets: unnormalised log posteriors log p(y, theta) with autodiff derivatives.

A :class:`Target` wraps a JAX function ``log_density(theta) -> scalar`` and provides jitted
gradient and Hessian (single point and batched). Targets whose posterior is known carry it:
``mean`` / ``cov`` (exact moments) and ``quadratic=True`` when log p is quadratic (a Gaussian
posterior), which lets expectations be taken exactly. Generalised linear models carry their
structure in ``glm`` so that E_q[grad] and E_q[hess] can be computed by one-dimensional
Gauss-Hermite quadrature along each x_i^T theta.

Parametric families. A target may say that it is the member ``params`` (a pytree of float64
arrays) of the family ``family`` (a hashable key), and give ``family_fn(params) -> Target`` that
rebuilds it traceably (params may be jax tracers). The basic constructors do so (Gaussians:
mean and precision; Student-t: df, rho, scale, loc; banana: b, sd1). Members of one family
share their compiled derivatives, and :func:`vilab.algorithms.run` compiles one loop per family
and passes ``params`` at run time, so moving a slider of a target parameter does not recompile.

Your own model: :func:`from_log_density` (:mod:`vilab.targets.custom`) wraps a JAX log density,
with checks. Basic targets live in :mod:`vilab.targets.basic` and are re-exported here; targets of
individual papers live in their own modules (``vilab.targets.papers``, ...).
"""

from __future__ import annotations

from .target import GLM, Target, check_point, check_positive, family_jits

__all__ = ["Target", "GLM", "check_point", "check_positive", "family_jits"]

from .basic import (  # noqa: E402  (re-export the basic targets)
    banana,
    bayes_linreg,
    gaussian_2d,
    gaussian_target,
    logistic_regression,
    rotated_gaussian_2d,
    student_t_2d,
)

__all__ += ["banana", "bayes_linreg", "gaussian_2d", "gaussian_target", "logistic_regression", "rotated_gaussian_2d",
            "student_t_2d"]

from .custom import from_log_density  # noqa: E402  (your own model in one call)

__all__ += ["from_log_density"]
