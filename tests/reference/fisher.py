"""Brute-force reference implementations used only by the tests: the dense Fisher information of
a Gaussian q in several coordinates, by jax autodiff of log q and an exact degree-5 cubature.
Independent of every analytic formula of vilab.family.natgrad (which the tests check against it)."""

from __future__ import annotations

from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular

from vilab.gradients.expectations import gaussian_cubature5
from vilab.family.linalg import duplication_matrix
from vilab.family.natgrad import arrow_mask, block_mask

__all__ = ["FISHER_KINDS", "free_indices", "flatten_params", "unflatten_params", "fisher_matrix"]

FISHER_KINDS = ("chol_cov", "chol_prec", "mean_cov", "mean_prec", "natural", "cor1",
                "blockdiag_chol_cov", "arrow_chol_prec", "chol_cov_logdiag")


def _pattern(kind, d, structure):
    if kind == "blockdiag_chol_cov":
        M = block_mask(structure["blocks"])
    elif kind == "arrow_chol_prec":
        M = arrow_mask(structure["local_sizes"], structure["global_size"])
    else:
        M = np.tril(np.ones((d, d)))
    if M.shape != (d, d):
        raise ValueError(f"The sparsity structure describes a {M.shape[0]}-dimensional factor, but d = {d}.")
    return M


def free_indices(kind: str, d: int, **structure) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the free matrix entries in the order ``fisher_matrix`` uses: column-major
    over the lower-triangular pattern (for a dense pattern this is vech order)."""
    M = _pattern(kind, d, structure)
    cols, rows = np.nonzero(M.T)  # column-major order
    return rows, cols


def flatten_params(kind: str, mu, factor, **structure):
    """The coordinate vector of ``fisher_matrix``: (first block, free entries of the second).

    kind: "chol_cov" (mu, vech C) | "chol_prec" (mu, vech T) | "mean_cov" (mu, vech Sigma) |
    "mean_prec" (mu, vech P), P = Sigma^-1 | "natural" (P mu, -1/2 D^T vec P) | "cor1" (T^T mu, vech T)
    | "blockdiag_chol_cov" (mu, free C), structure blocks=... | "arrow_chol_prec" (mu, free T),
    structure local_sizes=..., global_size=... . ``factor`` is C, T, Sigma or P (for "natural": P).
    """
    d = mu.shape[-1]
    rows, cols = free_indices(kind, d, **structure)
    if kind == "natural":
        P = factor
        second = -0.5 * (duplication_matrix(d).T @ jnp.reshape(P.T, (-1,)))
        return jnp.concatenate([P @ mu, second])
    first = factor.T @ mu if kind == "cor1" else mu
    if kind == "chol_cov_logdiag":  # C' = C with log C_ii on the diagonal (Tan explicit Sec. 5)
        factor = jnp.tril(factor, -1) + jnp.diag(jnp.log(jnp.diag(factor)))
    return jnp.concatenate([first, factor[rows, cols]])


def _precision_from_natural(second, d: int):
    """P from the second natural-parameter block -1/2 D^T vec P (diagonal -P_ii/2, off-diagonal -P_ij)."""
    vr, vc = free_indices("chol_cov", d)
    W = jnp.zeros((d, d), dtype=second.dtype).at[vr, vc].set(second)
    off = W - jnp.diag(jnp.diag(W))
    return -(2.0 * jnp.diag(jnp.diag(W)) + off + off.T)


def _factor(kind, rest, rows, cols, d):
    """The matrix of the free entries ``rest`` (for "chol_cov_logdiag" the diagonal is exponentiated)."""
    F = jnp.zeros((d, d), dtype=rest.dtype).at[rows, cols].set(rest)
    if kind == "chol_cov_logdiag":
        F = jnp.tril(F, -1) + jnp.diag(jnp.exp(jnp.diag(F)))
    return F


def unflatten_params(kind: str, lam, d: int, **structure):
    """Inverse of :func:`flatten_params`: returns (mu, Sigma^-1, log det Sigma^-1)."""
    rows, cols = free_indices(kind, d, **structure)
    first, rest = lam[:d], lam[d:]
    if kind == "natural":
        P = _precision_from_natural(rest, d)
        mu = jnp.linalg.solve(P, first)
        return mu, P, jnp.linalg.slogdet(P)[1]
    F = _factor(kind, rest, rows, cols, d)
    if kind in ("chol_cov", "blockdiag_chol_cov", "chol_cov_logdiag"):
        Sigma = F @ F.T
        P = jnp.linalg.inv(Sigma)
        return first, P, -2.0 * jnp.sum(jnp.log(jnp.abs(jnp.diag(F))))
    if kind in ("chol_prec", "arrow_chol_prec", "cor1"):
        P = F @ F.T
        mu = solve_triangular(F.T, first, lower=False) if kind == "cor1" else first
        return mu, P, 2.0 * jnp.sum(jnp.log(jnp.abs(jnp.diag(F))))
    if kind == "mean_cov":
        Sigma = F + F.T - jnp.diag(jnp.diag(F))
        P = jnp.linalg.inv(Sigma)
        return first, P, -jnp.linalg.slogdet(Sigma)[1]
    if kind == "mean_prec":
        P = F + F.T - jnp.diag(jnp.diag(F))
        return first, P, jnp.linalg.slogdet(P)[1]
    raise ValueError(f"Unknown Fisher kind {kind!r}; choose one of {FISHER_KINDS}.")


def _log_q(kind, lam, theta, d, structure):
    """log q_lambda(theta) (without the -d/2 log 2 pi constant) in the coordinates of
    :func:`flatten_params`, written with triangular solves so that autodiff compiles quickly."""
    rows, cols = free_indices(kind, d, **structure)
    first, rest = lam[:d], lam[d:]
    if kind == "natural":
        Lp = jnp.linalg.cholesky(_precision_from_natural(rest, d))
        mu = solve_triangular(Lp.T, solve_triangular(Lp, first, lower=True), lower=False)
        r = Lp.T @ (theta - mu)
        return jnp.sum(jnp.log(jnp.diag(Lp))) - 0.5 * r @ r
    F = _factor(kind, rest, rows, cols, d)
    if kind in ("chol_cov", "blockdiag_chol_cov", "chol_cov_logdiag"):
        z = solve_triangular(F, theta - first, lower=True)
        return -jnp.sum(jnp.log(jnp.abs(jnp.diag(F)))) - 0.5 * z @ z
    if kind in ("chol_prec", "arrow_chol_prec", "cor1"):
        mu = solve_triangular(F.T, first, lower=False) if kind == "cor1" else first
        r = F.T @ (theta - mu)
        return jnp.sum(jnp.log(jnp.abs(jnp.diag(F)))) - 0.5 * r @ r
    S = F + F.T - jnp.diag(jnp.diag(F))
    Ls = jnp.linalg.cholesky(S)
    if kind == "mean_cov":
        z = solve_triangular(Ls, theta - first, lower=True)
        return -jnp.sum(jnp.log(jnp.diag(Ls))) - 0.5 * z @ z
    r = Ls.T @ (theta - first)  # mean_prec
    return jnp.sum(jnp.log(jnp.diag(Ls))) - 0.5 * r @ r


def _freeze(v):
    return tuple(v) if isinstance(v, (list, tuple)) else v


@lru_cache(maxsize=64)
def _score_fn(kind, d, frozen_structure):
    """jit(vmap(grad_lambda log q)) for one (kind, d, structure): compiled once, reused."""
    structure = dict(frozen_structure)
    return jax.jit(jax.vmap(jax.grad(lambda lam, th: _log_q(kind, lam, th, d, structure)), in_axes=(None, 0)))


def fisher_matrix(kind: str, mu, factor, **structure) -> np.ndarray:
    """Dense Fisher information of q in the coordinates of :func:`flatten_params`, by autodiff.

    F = E_q[s s^T], s = grad_lambda log q_lambda(theta) computed by jax autodiff of log q, with
    an exact expectation: s is a quadratic polynomial in theta, so s s^T has degree 4, and the
    fully symmetric degree-5 Gaussian cubature of :func:`gaussian_cubature5` (2 d^2 + 1 points)
    integrates it exactly. Independent of every analytic formula in this module.
    kind: see :func:`flatten_params` (``factor`` is C, T, Sigma, or P = Sigma^-1; for the
    sparse kinds pass ``blocks=`` or ``local_sizes=, global_size=``).
    """
    if kind not in FISHER_KINDS:
        raise ValueError(f"Unknown Fisher kind {kind!r}; choose one of {FISHER_KINDS}.")
    mu = jnp.asarray(mu, dtype=jnp.float64)
    factor = jnp.asarray(factor, dtype=jnp.float64)
    d = mu.shape[0]
    lam0 = flatten_params(kind, mu, factor, **structure)
    m0, P0, _ = unflatten_params(kind, lam0, d, **structure)
    Lc = np.linalg.cholesky(np.linalg.inv(np.asarray(P0)))
    grid, w = gaussian_cubature5(d)
    pts = np.asarray(m0) + grid @ Lc.T
    frozen = tuple(sorted((k, _freeze(v)) for k, v in structure.items()))
    S = np.asarray(_score_fn(kind, d, frozen)(lam0, jnp.asarray(pts)))
    F = (S * w[:, None]).T @ S
    return 0.5 * (F + F.T)
