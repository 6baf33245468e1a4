"""Quadrature for expectations under a standard Gaussian: 1-D Gauss-Hermite nodes and weights, and Stroud's
degree-5 rule for N(0, I_d). numpy constants (not jnp), so they can be created inside a jit trace; used by
:mod:`vilab.gradients.expectations`, the GLM oracles and the closed-form optima of the targets."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..core.checks import integer

__all__ = ["hermite_nodes", "gaussian_cubature5"]


def hermite_nodes(n_points: int) -> tuple[np.ndarray, np.ndarray]:
    """Probabilists' Gauss-Hermite nodes and weights with E_{N(0,1)}[f] ~= sum_k w_k f(x_k).

    numpy constants (not jnp), so they can be created inside a jit trace.
    """
    return _hermite_nodes(integer(n_points, "The number of Gauss-Hermite nodes n_points", minimum=1, maximum=10_000))


@lru_cache(maxsize=16)
def _hermite_nodes(n_points: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.hermite_e.hermegauss(n_points)  # weight exp(-x^2/2)
    return x, w / np.sqrt(2.0 * np.pi)


def gaussian_cubature5(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes (n, d) and weights (n,) of Stroud's fully symmetric degree-5 rule for E over N(0, I_d)
    (Stroud 1967; Genz & Keister 1996): the centre with weight 2/(d+2); +-sqrt(d+2) e_i with weight
    (4-d)/(2(d+2)^2); sqrt((d+2)/2)(+-e_i +-e_j), i < j, with weight 1/(d+2)^2. Exact for every
    polynomial of degree <= 5 with 2 d^2 + 1 points (a tensor product rule would need 3^d)."""
    d = integer(d, "The dimension d", minimum=1, maximum=10_000)
    eye = np.eye(d)
    r, s = np.sqrt(d + 2.0), np.sqrt((d + 2.0) / 2.0)
    axes = np.concatenate([r * eye, -r * eye])
    i, j = np.triu_indices(d, 1)
    pairs = [s * (a * eye[i] + b * eye[j]) for a in (1.0, -1.0) for b in (1.0, -1.0)]
    nodes = np.concatenate([np.zeros((1, d)), axes, *pairs])
    weights = np.concatenate([[2.0 / (d + 2.0)], np.full(2 * d, (4.0 - d) / (2.0 * (d + 2.0) ** 2)),
                              np.full(4 * len(i), 1.0 / (d + 2.0) ** 2)])
    return nodes, weights
