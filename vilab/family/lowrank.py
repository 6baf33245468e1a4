"""Diagonal-plus-low-rank precision Gaussians, Sigma^{-1} = diag(ups) + W W^T: the linear algebra and the
:class:`DLRPrecFamily` member of the Gaussian-family protocol (:mod:`vilab.family.dense`).

The belief of BONG's "dlr-R" families (Jones, Chang & Murphy Sec. 4.7, Eq. 281): W is P x R, ups a
positive P-vector. Everything is O(R^2 P + R^3): Woodbury solves (Eq. 305 / 344), the rank-R projection
of Eqs. 306-308 through the small Gram matrix, the exact sampler (digest [ours]) and the exact marginal
variances. This linear algebra was in :mod:`vilab.online.families` (which re-exports it).

:class:`DLRPrecFamily` (d, rank) takes q as a flat vector lambda = (mu, ups, vec W) (W row-major, length
:attr:`~DLRPrecFamily.size`) or as a triple (mu, ups, W) such as :class:`vilab.online.families.DLR`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..core.algorithm import range_code
from .linalg import symmetrize as sym

__all__ = ["DLRPrecFamily", "dlr_solve", "dlr_prec_apply", "dlr_project", "dlr_noise_map", "sym", "chol_inv",
           "woodbury_factor"]

#: validity codes, the shared step codes of vilab.core.CODES (the same numbers as vilab.family.dense)
OK, NONFINITE, NOT_PD = 0, 2, 3

_LOG2PI = math.log(2.0 * math.pi)


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


def woodbury_factor(ups, W):
    """Q (P, R) with Q Q^T = Ups^{-1} W (I_R + W^T Ups^{-1} W)^{-1} W^T Ups^{-1}, so that
    (diag(ups) + W W^T)^{-1} = Ups^{-1} - Q Q^T (Woodbury, Eq. 344), O(R^2 P).

    The R x R Cholesky factor is inverted explicitly and applied by a matrix product: a
    triangular solve with P right-hand sides is far slower than a GEMM on XLA:CPU.
    """
    U = W / ups[:, None]
    return U @ chol_inv(jnp.eye(W.shape[1], dtype=W.dtype) + W.T @ U).T


def chol_inv(K):
    """L^{-1} for the Cholesky factor L L^T = K of a small K x K matrix, to be applied to P-row blocks
    by a matrix product (a triangular solve with P right-hand sides is slow on XLA:CPU)."""
    Lk = jnp.linalg.cholesky(sym(K))
    return jax.scipy.linalg.solve_triangular(Lk, jnp.eye(K.shape[0], dtype=K.dtype), lower=True)


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


class DLRPrecFamily(NamedTuple):
    """q = N(mu, (diag(ups) + W W^T)^{-1}), W of shape (d, rank); q flat or a (mu, ups, W) triple.

    All operations are O(rank^2 d + rank^3) except the dense helpers (:meth:`covariance`,
    :meth:`precision`, :meth:`gaussian`, :meth:`kl`), meant for small d and tests.
    """

    d: int
    rank: int

    # ------------------------------------------------------------------------------ storage
    @property
    def size(self) -> int:
        """Length of the flat lambda: d (mu) + d (ups) + d * rank (W)."""
        return self.d * (2 + self.rank)

    def check(self) -> "DLRPrecFamily":
        """The family itself, after checking its settings (ValueError with a sentence otherwise)."""
        if int(self.d) < 1:
            raise ValueError(f"The dimension d must be at least 1; got {self.d}.")
        if int(self.rank) < 1:
            raise ValueError(f"A diagonal-plus-low-rank family needs a rank R >= 1; got {self.rank}.")
        return self

    def pack(self, mu, ups, W):
        """The flat lambda = (mu, ups, W row by row)."""
        return jnp.concatenate([jnp.asarray(mu), jnp.asarray(ups), jnp.asarray(W).reshape(-1)])

    def unpack(self, lam):
        """(mu, ups, W) from the flat lambda."""
        d = self.d
        return lam[:d], lam[d:2 * d], lam[2 * d:].reshape(d, self.rank)

    def parts(self, q):
        """(mu, ups, W) from a flat lambda or a (mu, ups, W) triple (e.g. an online DLR belief)."""
        if isinstance(q, tuple):
            return q[0], q[1], q[2]
        return self.unpack(q)

    # ------------------------------------------------------------------------ distribution
    def mean(self, q):
        return self.parts(q)[0]

    def variances(self, q):
        """diag(Sigma) exactly, by Woodbury: 1 / ups - rowsums of Q^2 (O(R^2 P))."""
        _, ups, W = self.parts(q)
        Q = woodbury_factor(ups, W)
        return 1.0 / ups - jnp.sum(Q**2, axis=1)

    def solve(self, q, b):
        """Sigma^{-1} b = (diag(ups) + W W^T) b (b of shape (d,) or (d, k)): a product, no solve."""
        _, ups, W = self.parts(q)
        return dlr_prec_apply(ups, W, b)

    def cov_apply(self, q, b):
        """Sigma b = (diag(ups) + W W^T)^{-1} b by Woodbury (:func:`dlr_solve`)."""
        _, ups, W = self.parts(q)
        return dlr_solve(ups, W, b)

    def offsets(self, q, eps):
        """theta - mu for the noise eps (d,) or (n, d) ~ N(0, I): the exact sampler's linear map."""
        _, ups, W = self.parts(q)
        if jnp.ndim(eps) == 1:
            return dlr_noise_map(ups, W, eps[None])[0]
        return dlr_noise_map(ups, W, eps)

    def transform(self, q, eps):
        """theta = mu + B eps with B B^T = Sigma (the exact sampler, :func:`dlr_noise_map`)."""
        return self.mean(q) + self.offsets(q, eps)

    def sample(self, key, q, n: int):
        """n draws, shape (n, d): mu + :func:`dlr_noise_map` (ups, W, eps), eps ~ N(0, I) in mu's dtype."""
        if isinstance(n, (int, np.integer)) and n < 1:
            raise ValueError(f"The number of draws n must be at least 1; got {n}.")
        mu, ups, W = self.parts(q)
        eps = jax.random.normal(key, (n, mu.shape[0]), mu.dtype)
        return mu + dlr_noise_map(ups, W, eps)

    def half_logdet(self, q):
        """1/2 log|Sigma| = -1/2 (sum log ups + log det(I_R + W^T Ups^{-1} W)) (matrix determinant lemma)."""
        _, ups, W = self.parts(q)
        K = jnp.eye(W.shape[1], dtype=W.dtype) + W.T @ (W / ups[:, None])
        Lk = jnp.linalg.cholesky(sym(K))
        return -0.5 * jnp.sum(jnp.log(ups)) - jnp.sum(jnp.log(jnp.diagonal(Lk)))

    def entropy(self, q):
        """Entropy of q: d/2 (1 + log 2 pi) + 1/2 log|Sigma|."""
        return 0.5 * self.d * (1.0 + _LOG2PI) + self.half_logdet(q)

    def logpdf(self, q, theta):
        """log q(theta) for theta of shape (d,) or (n, d): -d/2 log 2 pi - 1/2 log|Sigma| - r^T Sigma^{-1} r / 2."""
        mu, ups, W = self.parts(q)
        r = theta - mu
        quad = jnp.sum(ups * r * r, -1) + jnp.sum((r @ W) ** 2, -1)
        return -0.5 * self.d * _LOG2PI - self.half_logdet(q) - 0.5 * quad

    def validity(self, q):
        """A vilab.core step code: 2 if mu, ups or W is not finite, 3 if some ups_i <= 0 (then
        diag(ups) + W W^T need not be positive definite and the exact sampler fails), 7 / 8 if Sigma
        left the sane range (:func:`vilab.core.algorithm.range_code`), else 0. The range is read off
        the precision's diagonal P_ii = ups_i + |W_i|^2 (O(d r)): lambda_min(P) <= min P_ii and
        lambda_max(P) >= max P_ii, so 1 / max P_ii bounds Sigma's smallest eigenvalue from above, 1 /
        min P_ii its largest from below, and max P_ii / min P_ii its condition number from below."""
        mu, ups, W = self.parts(q)
        finite = jnp.all(jnp.isfinite(mu)) & jnp.all(jnp.isfinite(ups)) & jnp.all(jnp.isfinite(W))
        pd = jnp.all(ups > 0)
        p = jnp.where(finite & pd, ups + jnp.sum(W * W, axis=-1), 1.0)
        a, b = jnp.min(p), jnp.max(p)
        rng = range_code(1.0 / b, 1.0 / a, b / a)
        return jnp.where(finite, jnp.where(pd, rng, NOT_PD), NONFINITE).astype(jnp.int32)

    # ------------------------------------------------------------------ dense (small d, tests)
    def precision(self, q):
        """diag(ups) + W W^T as a d x d matrix."""
        _, ups, W = self.parts(q)
        return jnp.diag(ups) + W @ W.T

    def covariance(self, q):
        """Sigma as a d x d matrix (the inverse of :meth:`precision`)."""
        return jnp.linalg.inv(self.precision(q))

    def gaussian(self, q):
        """The same Gaussian as :class:`vilab.family.gaussian.CholPrec` (dense Cholesky factor of the precision)."""
        from . import gaussian

        return gaussian.CholPrec(self.mean(q), jnp.linalg.cholesky(sym(self.precision(q))))

    def kl(self, q, other):
        """KL(q || other), ``other`` a :mod:`vilab.family.gaussian` parameterization or a q of this family
        (closed form, :func:`vilab.family.gaussian.kl`; dense, for small d)."""
        from . import gaussian

        if not (isinstance(other, tuple) and type(other).__module__ == gaussian.__name__):
            other = self.gaussian(other)
        return gaussian.kl(self.gaussian(q), other)
