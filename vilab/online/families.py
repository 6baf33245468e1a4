"""Gaussian variational families of BONG and their linear algebra (Jones, Chang & Murphy Sec. 4.7).

Belief states (pytrees):

* :class:`FC` (mu, Sigma): full covariance. Used by "fc" (natural parameters
  psi = (Sigma^{-1} mu, -Sigma^{-1}/2)) and "fc_mom" (psi = (mu, Sigma)); the update equations
  differ, the stored state does not.
* :class:`Diag` (mu, s2): diagonal covariance diag(sigma^2) ("diag", "diag_mom").
* :class:`DLR` (mu, ups, W): precision Sigma^{-1} = diag(ups) + W W^T ("dlr-R", Eq. 281).

Each belief is a state of a member of the Gaussian-family protocol (:mod:`vilab.families`,
:func:`family_of`): FC and Diag of :class:`vilab.families.MomentFamily`, DLR of
:class:`vilab.families_lowrank.DLRPrecFamily`. Sampling, marginal variances, dense covariance and
precision are those members' methods; the DLR linear algebra (Woodbury solves, Eq. 305, the rank-R
projection of Eqs. 306-308 through the small Gram matrix, the exact DLR sampler, digest [ours]) lives in
:mod:`vilab.families_lowrank` and is re-exported here.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ..checks import integer, positive, real_array, real_scalar
from ..families import DLRPrecFamily, MomentFamily
from ..families_lowrank import (  # noqa: F401  (re-exports)
    _chol_inv,
    _woodbury_factor,
    dlr_noise_map,
    dlr_prec_apply,
    dlr_project,
    dlr_solve,
    sym,
)

__all__ = [
    "FC", "Diag", "DLR", "init_belief", "marginal_variances", "mean_of", "sample", "dense_cov",
    "dense_prec", "dlr_solve", "dlr_prec_apply", "dlr_project", "dlr_noise_map", "sym", "family_of",
]


class FC(NamedTuple):
    """Full-covariance Gaussian N(mu, Sigma)."""

    mu: jnp.ndarray
    Sigma: jnp.ndarray


class Diag(NamedTuple):
    """Diagonal Gaussian N(mu, diag(s2)); s2 = sigma^2 (variances)."""

    mu: jnp.ndarray
    s2: jnp.ndarray


class DLR(NamedTuple):
    """Diagonal-plus-low-rank precision N(mu, (diag(ups) + W W^T)^{-1}) (Eq. 281)."""

    mu: jnp.ndarray
    ups: jnp.ndarray
    W: jnp.ndarray


def init_belief(family: str, mu0, sigma0_2: float, rank: int = 0, key=None, w0_scale: float = 0.0):
    """Prior N(mu0, sigma0^2 I) in the given family (paper Sec. 5: Sigma_0 = sigma_0^2 I).

    For "dlr" the precision is diag(ups) + W W^T with W_0 = 0 unless ``w0_scale > 0``: then
    W_0 has N(0, w0_scale^2 / (R sigma_0^2)) entries and ups_0 = 1/sigma_0^2 - rowsum(W_0^2),
    so diag(Sigma_0^{-1}) is still 1/sigma_0^2. A nonzero W_0 matters for bog/bbb-dlr, whose
    W update is multiplicative (Eqs. 333, 343: W_0 = 0 keeps W = 0; digest [ours]).
    """
    if not isinstance(mu0, jax.core.Tracer):
        m = real_array(mu0, "The prior mean mu0", ndim=1)
        mu0 = mu0 if hasattr(mu0, "dtype") and jnp.issubdtype(mu0.dtype, jnp.floating) else m
    mu0 = jnp.asarray(mu0)
    P = mu0.shape[0]
    s2 = positive(sigma0_2, "The prior variance sigma_0^2")
    w0_scale = real_scalar(w0_scale, "The scale w0_scale of W_0")
    if family == "dlr":
        rank = integer(rank, "The DLR rank R", minimum=1)
    dt = mu0.dtype
    if family in ("fc", "fc_mom"):
        return FC(mu0, s2 * jnp.eye(P, dtype=dt))
    if family in ("diag", "diag_mom"):
        return Diag(mu0, jnp.full((P,), s2, dt))
    if family == "dlr":
        if w0_scale > 0:
            if key is None:
                raise ValueError("A random W_0 needs a PRNG key.")
            W = jax.random.normal(key, (P, rank), dt) * (w0_scale / jnp.sqrt(rank * s2))
        else:
            W = jnp.zeros((P, rank), dt)
        ups = 1.0 / s2 - jnp.sum(W**2, axis=1)
        return DLR(mu0, ups, W)
    raise ValueError(f"Unknown family {family!r}; use fc, fc_mom, diag, diag_mom or dlr.")


def mean_of(b):
    return b.mu


def family_of(b):
    """The member of the Gaussian-family protocol whose state the belief b is (b itself is its ``q``):
    FC -> MomentFamily(P), Diag -> MomentFamily(P, diagonal=True), DLR -> DLRPrecFamily(P, R)."""
    P = b.mu.shape[0]
    if isinstance(b, DLR):
        return DLRPrecFamily(P, b.W.shape[1])
    if isinstance(b, (FC, Diag)):
        return MomentFamily(P, isinstance(b, Diag))
    raise ValueError(f"Not a BONG belief (FC, Diag or DLR): {type(b).__name__}.")


def marginal_variances(b):
    """diag(Sigma) for any family (DLR: exact, via Woodbury, O(R^2 P)): the family's ``variances``."""
    return family_of(b).variances(b)


def dense_cov(b):
    """The P x P covariance (for tests and small models)."""
    return family_of(b).covariance(b)


def dense_prec(b):
    """The P x P precision (for tests and small models)."""
    return family_of(b).precision(b)


def sample(key, b, n: int):
    """n draws from the belief, (n, P): the family's ``sample``.

    FC: mu + eps chol(sym Sigma)^T (NaN if Sigma is not PD, which the runner reports as divergence).
    DLR: exact sampler (digest [ours]): with A = Ups^{-1/2} W = U_A S V_A^T,
    theta = mu + Ups^{-1/2} (eps + U_A((1 + S^2)^{-1/2} - 1) U_A^T eps), whose covariance is
    (Ups + W W^T)^{-1}; U_A S comes from the R x R Gram matrix A^T A.
    """
    return family_of(b).sample(key, b, n)
