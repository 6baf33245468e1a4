"""Exponential-family likelihoods p(y_t | f_t(theta)) of the online filters.

Jones, Chang & Murphy Eq. 13: p(y | theta) ∝ exp(f^T y - A(f) - b(y)) with natural parameter
f = f(x, theta). Two are needed:

* ``categorical(C)``: f = logits, h = softmax(f), R = V[y | f] = diag(p) - p p^T (singular,
  rank C - 1); y is one-hot.
* ``gaussian(obs_var)``: f = mean, h = f, R = obs_var (known observation covariance, scalar or
  C x C). Written in the mean parameterisation of the paper's Gaussian-likelihood examples
  (lin-hess gives g = F^T R^{-1} (y - f), G = -F^T R^{-1} F).

For the linearised ("lin") curvature both return the pair (e, L) of the **F-form**
(digest [ours] under Prop. 4.2; no inverse of the singular softmax covariance)::

    g^lin = F^T e,       G^lin-hess = -F^T L L^T F = -B B^T with B = F^T L,

with e = y - p, L L^T = R for the categorical likelihood, and e = R^{-1}(y - f), L L^T = R^{-1}
for the Gaussian one. For the softmax the square root is exact and needs no eigendecomposition:
L = diag(sqrt p) - p sqrt(p)^T, since L L^T = diag(p) - 2 p p^T + p (sqrt p^T sqrt p) p^T and
sum(p) = 1 (our derivation).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..core.checks import class_labels, integer, real_array

__all__ = ["Likelihood", "categorical", "gaussian", "encode_all"]


class Likelihood(NamedTuple):
    """p(y | f). Fields: name, C (output dim), loglik(f, y), mean(f) = h, cov(f) = R,
    lin_terms(f, y) -> (e, L) of the F-form, encode(y) -> the vector y the filters see."""

    name: str
    C: int
    loglik: Callable
    mean: Callable
    cov: Callable
    lin_terms: Callable
    encode: Callable


def categorical(n_classes: int) -> Likelihood:
    """Softmax / categorical likelihood with one-hot y (Jones, Chang & Murphy Sec. 4.4)."""
    C = integer(n_classes, "The number of classes", minimum=2)

    def loglik(f, y):
        return jnp.dot(y, f) - jax.scipy.special.logsumexp(f)

    def mean(f):
        return jax.nn.softmax(f)

    def cov(f):
        p = jax.nn.softmax(f)
        return jnp.diag(p) - jnp.outer(p, p)

    def lin_terms(f, y):
        p = jax.nn.softmax(f)
        s = jnp.sqrt(p)
        L = jnp.diag(s) - jnp.outer(p, s)  # L L^T = diag(p) - p p^T exactly
        return y - p, L

    def encode(y):
        return jax.nn.one_hot(jnp.asarray(y, jnp.int32), C)

    return Likelihood("categorical", C, loglik, mean, cov, lin_terms, encode)


def gaussian(obs_var, dim: int = 1) -> Likelihood:
    """Gaussian likelihood N(y | f, R) with known R = ``obs_var`` (scalar or (C, C))."""
    dim = integer(dim, "The output dimension dim", minimum=1)
    Rm = np.atleast_2d(real_array(obs_var, "The observation variance"))
    if Rm.shape == (1, 1) and dim > 1:
        Rm = Rm[0, 0] * np.eye(dim)
    C = Rm.shape[0]
    if Rm.shape != (C, C) or not np.all(np.isfinite(Rm)):
        raise ValueError("The observation variance must be a positive number or a square matrix.")
    try:
        np.linalg.cholesky(Rm)
    except np.linalg.LinAlgError:
        raise ValueError("The observation variance must be positive (definite).") from None
    Rinv = np.linalg.inv(Rm)
    Linv = np.linalg.cholesky(Rinv)  # Linv Linv^T = R^{-1}  (Eq. 314: A = chol(R^{-1}), A^T A = R^{-1})
    logdet = float(np.linalg.slogdet(Rm)[1])

    def loglik(f, y):
        r = y - f
        return -0.5 * (r @ (jnp.asarray(Rinv) @ r)) - 0.5 * logdet - 0.5 * C * np.log(2 * np.pi)

    def mean(f):
        return f

    def cov(f):
        return jnp.asarray(Rm, f.dtype)

    def lin_terms(f, y):
        return jnp.asarray(Rinv, f.dtype) @ (y - f), jnp.asarray(Linv, f.dtype)

    def encode(y):
        return jnp.asarray(y, jnp.float64).reshape(-1, C) if jnp.ndim(y) > 0 else jnp.asarray([y])

    return Likelihood("gaussian", C, loglik, mean, cov, lin_terms, encode)


def encode_all(lik: Likelihood, Y, dtype=None):
    """The (T, C) array of observation vectors the filters see: one-hot rows for a categorical
    likelihood, targets as (T, C) for a Gaussian one; cast to ``dtype`` (the belief's dtype, so a
    float32 belief is not promoted to float64 by float64 labels inside lax.scan).

    Concrete labels are checked first: a categorical likelihood takes whole numbers 0, ..., C - 1
    (anything else would encode to a row of zeros), a Gaussian one finite real numbers.
    """
    if not isinstance(Y, jax.core.Tracer):
        if lik.name == "categorical":
            Y = class_labels(Y, lik.C, "The class labels y")
        else:
            Y = real_array(Y, "The observations y", allow_empty=True)
    Y = jnp.asarray(Y)
    out = jax.vmap(lik.encode)(Y) if lik.name == "categorical" else jnp.asarray(Y, jnp.float64).reshape(Y.shape[0], -1)
    return out if dtype is None else out.astype(dtype)
