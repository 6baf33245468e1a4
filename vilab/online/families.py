"""Gaussian variational families of BONG and their linear algebra (Jones, Chang & Murphy Sec. 4.7).

Belief states (pytrees):

* :class:`FC` (mu, Sigma): full covariance. Used by "fc" (natural parameters
  psi = (Sigma^{-1} mu, -Sigma^{-1}/2)) and "fc_mom" (psi = (mu, Sigma)); the update equations
  differ, the stored state does not.
* :class:`Diag` (mu, s2): diagonal covariance diag(sigma^2) ("diag", "diag_mom").
* :class:`DLR` (mu, ups, W): precision Sigma^{-1} = diag(ups) + W W^T ("dlr-R", Eq. 281).

Helpers: Woodbury solves with a DLR precision (Eq. 305), the rank-R projection of
Eqs. 306-308 done through the small Gram matrix, the exact DLR sampler (digest [ours]) and
marginal variances.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = [
    "FC", "Diag", "DLR", "init_belief", "marginal_variances", "mean_of", "sample", "dense_cov",
    "dense_prec", "dlr_solve", "dlr_prec_apply", "dlr_project", "sym",
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


def sym(A):
    """(A + A^T) / 2: the symmetrisation the digest asks for (typo list item 5)."""
    return 0.5 * (A + jnp.swapaxes(A, -1, -2))


def init_belief(family: str, mu0, sigma0_2: float, rank: int = 0, key=None, w0_scale: float = 0.0):
    """Prior N(mu0, sigma0^2 I) in the given family (paper Sec. 5: Sigma_0 = sigma_0^2 I).

    For "dlr" the precision is diag(ups) + W W^T with W_0 = 0 unless ``w0_scale > 0``: then
    W_0 has N(0, w0_scale^2 / (R sigma_0^2)) entries and ups_0 = 1/sigma_0^2 - rowsum(W_0^2),
    so diag(Sigma_0^{-1}) is still 1/sigma_0^2. A nonzero W_0 matters for bog/bbb-dlr, whose
    W update is multiplicative (Eqs. 333, 343: W_0 = 0 keeps W = 0; digest [ours]).
    """
    mu0 = jnp.asarray(mu0)
    P = mu0.shape[0]
    s2 = float(sigma0_2)
    if not s2 > 0 or not jnp.isfinite(s2):
        raise ValueError("The prior variance sigma_0^2 must be a positive number.")
    dt = mu0.dtype
    if family in ("fc", "fc_mom"):
        return FC(mu0, s2 * jnp.eye(P, dtype=dt))
    if family in ("diag", "diag_mom"):
        return Diag(mu0, jnp.full((P,), s2, dt))
    if family == "dlr":
        if rank < 1:
            raise ValueError("A DLR family needs a rank R >= 1 (e.g. 'dlr-10').")
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


def dlr_solve(ups, W, V):
    """(diag(ups) + W W^T)^{-1} V by Woodbury (Eqs. 305, 344), O(R^2 P + R^3) per column.

    = Ups^{-1} V - Ups^{-1} W (I_R + W^T Ups^{-1} W)^{-1} W^T Ups^{-1} V.
    """
    vec = V.ndim == 1
    V2 = V[:, None] if vec else V
    U = W / ups[:, None]
    K = jnp.eye(W.shape[1], dtype=W.dtype) + W.T @ U
    Vu = V2 / ups[:, None]
    out = Vu - U @ jnp.linalg.solve(K, W.T @ Vu)
    return out[:, 0] if vec else out


def dlr_prec_apply(ups, W, v):
    """(diag(ups) + W W^T) v."""
    if v.ndim == 1:
        return ups * v + W @ (W.T @ v)
    return ups[:, None] * v + W @ (W.T @ v)


def dlr_project(ups_t, W_t, R: int):
    """Rank-R projection of Eqs. 306-308: W = U[:, :R] Lambda[:R, :R] with (U, Lambda) the SVD
    of W~, and ups = ups~ + diag(W~ W~^T - W W^T) (the diagonal of the precision is kept).

    The SVD of the tall P x K matrix W~ is replaced by the eigendecomposition of the K x K Gram
    matrix W~^T W~ = V Lambda^2 V^T: then U Lambda = W~ V, so W = W~ V[:, top R] (digest
    implementation note; same subspace, no P x K factorisation).
    """
    gram = W_t.T @ W_t
    _, V = jnp.linalg.eigh(sym(gram))  # ascending
    Vtop = V[:, ::-1][:, :R]
    W = W_t @ Vtop
    ups = ups_t + jnp.sum(W_t**2, axis=1) - jnp.sum(W**2, axis=1)
    return ups, W


def _woodbury_factor(ups, W):
    """Q (P, R) with Q Q^T = Ups^{-1} W (I_R + W^T Ups^{-1} W)^{-1} W^T Ups^{-1}, so that
    (diag(ups) + W W^T)^{-1} = Ups^{-1} - Q Q^T (Woodbury, Eq. 344), O(R^2 P).

    The R x R Cholesky factor is inverted explicitly and applied by a matrix product: a
    triangular solve with P right-hand sides is far slower than a GEMM on XLA:CPU.
    """
    U = W / ups[:, None]
    return U @ _chol_inv(jnp.eye(W.shape[1], dtype=W.dtype) + W.T @ U).T


def _chol_inv(K):
    """L^{-1} for the Cholesky factor L L^T = K of a small K x K matrix, to be applied to P-row blocks
    by a matrix product (a triangular solve with P right-hand sides is slow on XLA:CPU)."""
    Lk = jnp.linalg.cholesky(sym(K))
    return jax.scipy.linalg.solve_triangular(Lk, jnp.eye(K.shape[0], dtype=K.dtype), lower=True)


def marginal_variances(b):
    """diag(Sigma) for any family (DLR: exact, via Woodbury, O(R^2 P))."""
    if isinstance(b, FC):
        return jnp.diagonal(b.Sigma)
    if isinstance(b, Diag):
        return b.s2
    Q = _woodbury_factor(b.ups, b.W)
    return 1.0 / b.ups - jnp.sum(Q**2, axis=1)


def dense_cov(b):
    """The P x P covariance (for tests and small models)."""
    if isinstance(b, FC):
        return b.Sigma
    if isinstance(b, Diag):
        return jnp.diag(b.s2)
    return jnp.linalg.inv(dense_prec(b))


def dense_prec(b):
    """The P x P precision (for tests and small models)."""
    if isinstance(b, DLR):
        return jnp.diag(b.ups) + b.W @ b.W.T
    if isinstance(b, Diag):
        return jnp.diag(1.0 / b.s2)
    return jnp.linalg.inv(b.Sigma)


def sample(key, b, n: int):
    """n draws from the belief, (n, P).

    FC: mu + chol(Sigma) eps (NaN if Sigma is not PD, which the runner reports as divergence).
    DLR: exact sampler (digest [ours]): with A = Ups^{-1/2} W = U_A S V_A^T,
    theta = mu + Ups^{-1/2} (eps + U_A((1 + S^2)^{-1/2} - 1) U_A^T eps), whose covariance is
    (Ups + W W^T)^{-1}; U_A S comes from the R x R Gram matrix A^T A.
    """
    P = b.mu.shape[0]
    eps = jax.random.normal(key, (n, P), b.mu.dtype)
    if isinstance(b, FC):
        L = jnp.linalg.cholesky(sym(b.Sigma))
        return b.mu + eps @ L.T
    if isinstance(b, Diag):
        return b.mu + eps * jnp.sqrt(b.s2)
    return b.mu + dlr_noise_map(b.ups, b.W, eps)


def dlr_noise_map(ups, W, eps):
    """eps (n, P) ~ N(0, I) -> draws of N(0, (diag(ups) + W W^T)^{-1}) (exact DLR sampler, digest [ours]).

    Linear in eps: z = Ups^{-1/2}(eps + U_A((1 + S^2)^{-1/2} - 1) U_A^T eps), A = Ups^{-1/2} W = U_A S V^T.
    """
    rs = 1.0 / jnp.sqrt(ups)
    A = W * rs[:, None]
    S2, V = jnp.linalg.eigh(sym(A.T @ A))
    S2 = jnp.maximum(S2, 0.0)
    S = jnp.sqrt(S2)
    tiny = jnp.finfo(W.dtype).eps * jnp.maximum(1.0, jnp.max(S))
    safe = jnp.where(S > tiny, S, 1.0)
    UA = (A @ V) / safe
    fac = jnp.where(S > tiny, 1.0 / jnp.sqrt(1.0 + S2) - 1.0, 0.0)
    z = eps + ((eps @ UA) * fac) @ UA.T
    return z * rs
