"""Matrix operators of Magnus & Neudecker used throughout Tan (2025), Sec. 2 / Supp. S1.

Conventions (Tan digest, Sec. 1):

* ``vec`` stacks columns (column-major, numpy ``order='F'``).
* ``vech`` is ``vec`` with the supradiagonal entries removed: the lower triangle,
  including the diagonal, column by column; length d(d+1)/2.
* ``tril_half`` is the paper's double bar: the lower triangle with its diagonal halved.
* ``K`` (commutation), ``L`` (elimination) and ``D`` (duplication) satisfy
  ``K vec(A) = vec(A^T)``, ``L vec(X) = vech(X)``, ``D vech(S) = vec(S)`` for symmetric S,
  ``L D = I`` and ``L L^T = I``. They are dense and meant for checks and small d only.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..core.checks import integer


def _vech_indices(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the lower triangle in column-major (vech) order."""
    cols, rows = np.triu_indices(d)  # (c, r) with c <= r, ordered by c then r
    return rows, cols


def vech_length(d: int) -> int:
    """d(d+1)/2, the length of vech of a d x d matrix."""
    return d * (d + 1) // 2


def dim_from_vech_length(m: int) -> int:
    """Invert m = d(d+1)/2; raise ValueError if m is not a triangular number."""
    m = integer(m, "The length of a vech vector", minimum=0)
    d = int(round((np.sqrt(8 * m + 1) - 1) / 2))
    if vech_length(d) != m:
        raise ValueError(
            f"A vech vector has length d(d+1)/2 for some d; {m} is not such a length."
        )
    return d


def _matrix(X, name: str = "X"):
    """X with at least two dimensions (a matrix or a stack of matrices): a jax array stays one (a
    tracer included), anything else becomes a numpy array of numbers."""
    X = X if isinstance(X, jax.Array) else _numeric(X, name)
    if X.ndim < 2:
        raise ValueError(f"{name} must be a matrix (or a stack of matrices); got shape {X.shape}.")
    return X


def _numeric(x, name: str):
    """Array-likes of numbers (real or complex) as numpy; ValueError for text and ragged lists."""
    try:
        a = np.asarray(x)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{name} must be an array of numbers (equal-length rows); got {x!r}.") from exc
    if a.dtype.kind not in "biufc":
        raise ValueError(f"{name} must be an array of numbers; got {x!r}.")
    return a


def vec(X):
    """vec(X): columns of X stacked into one vector (column-major)."""
    X = _matrix(X)
    return jnp.reshape(jnp.swapaxes(X, -1, -2), X.shape[:-2] + (-1,))


def unvec(v, d: int):
    """Inverse of :func:`vec` for a d x d matrix."""
    d = integer(d, "The matrix size d", minimum=1)
    v = jnp.asarray(v) if isinstance(v, jax.Array) else jnp.asarray(_numeric(v, "v"))
    if v.ndim < 1 or v.shape[-1] != d * d:
        raise ValueError(f"unvec needs a vector of length d^2 = {d * d}; got shape {v.shape}.")
    return jnp.swapaxes(jnp.reshape(v, v.shape[:-1] + (d, d)), -1, -2)


def vech(X):
    """vech(X): lower triangle of X (diagonal included), column by column (Tan Sec. 1)."""
    X = _matrix(X)
    if X.shape[-1] != X.shape[-2]:
        raise ValueError(f"vech needs a square matrix; got shape {X.shape}.")
    d = X.shape[-1]
    rows, cols = _vech_indices(d)
    return X[..., rows, cols]


def unvech(v, symmetric: bool = False):
    """Inverse of :func:`vech`.

    Returns the lower-triangular matrix whose vech is ``v``; with ``symmetric=True`` the
    symmetric matrix (the strictly lower part mirrored above the diagonal).
    """
    v = jnp.asarray(v) if isinstance(v, jax.Array) else jnp.asarray(_numeric(v, "The vech vector v"))
    if v.ndim < 1:
        raise ValueError(f"The vech vector v must be a vector; got shape {v.shape}.")
    d = dim_from_vech_length(v.shape[-1])
    rows, cols = _vech_indices(d)
    X = jnp.zeros(v.shape[:-1] + (d, d), dtype=v.dtype).at[..., rows, cols].set(v)
    if symmetric:
        X = X + jnp.swapaxes(X, -1, -2) - X * jnp.eye(d, dtype=v.dtype)
    return X


def tril_half(X):
    """The paper's double bar of X: lower triangle of X with the diagonal halved.

    Tan (2025) Sec. 2 notation, used in Lemma 1(iii) and Theorem 1.
    """
    X = _matrix(X)
    L = jnp.tril(X)
    return L - 0.5 * L * jnp.eye(X.shape[-1], dtype=L.dtype)

def commutation_matrix(d: int) -> np.ndarray:
    """K (d^2 x d^2) with K vec(A) = vec(A^T) for every d x d matrix A."""
    d = integer(d, "The matrix size d", minimum=1, maximum=1000)
    K = np.zeros((d * d, d * d))
    for i in range(d):
        for j in range(d):
            # vec index of A[i, j] is j*d + i; of A^T[i, j] = A[j, i] is j*d + i as well
            K[j * d + i, i * d + j] = 1.0
    return K


def elimination_matrix(d: int) -> np.ndarray:
    """L (d(d+1)/2 x d^2) with L vec(X) = vech(X) for every d x d matrix X."""
    d = integer(d, "The matrix size d", minimum=1, maximum=1000)
    rows, cols = _vech_indices(d)
    Lm = np.zeros((vech_length(d), d * d))
    Lm[np.arange(len(rows)), cols * d + rows] = 1.0
    return Lm


def duplication_matrix(d: int) -> np.ndarray:
    """D (d^2 x d(d+1)/2) with D vech(S) = vec(S) for every symmetric d x d matrix S."""
    d = integer(d, "The matrix size d", minimum=1, maximum=1000)
    rows, cols = _vech_indices(d)
    Dm = np.zeros((d * d, vech_length(d)))
    k = np.arange(len(rows))
    Dm[cols * d + rows, k] = 1.0
    Dm[rows * d + cols, k] = 1.0
    return Dm


def symmetrize(X):
    """(X + X^T) / 2."""
    X = _matrix(X)
    return 0.5 * (X + jnp.swapaxes(X, -1, -2))
