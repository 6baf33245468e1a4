"""Accuracy of a Gaussian approximation against MCMC draws (Chen, Nott & Tan Sec. 7.1, Tables 6-8).

* M* = -log(MMD^2_u + 1e-5) (Zhou et al. 2023), higher is better, with the unbiased estimate
      MMD^2_u = 1/(m(m-1)) sum_{i != j} [k(x_i, x_j) + k(y_i, y_j) - k(x_i, y_j) - k(x_j, y_i)],
  x = m draws from q, y = m MCMC draws. The paper's RBF bandwidth is unspecified; OURS:
      k(x, y) = exp(-||(x - y) / s*||^2 / (2 h^2)),  h = sqrt(d),
  i.e. coordinates in units of the MCMC marginal s.d. s* and the bandwidth at the typical
  distance scale of d standardised coordinates (close to the median heuristic). Repeated with
  fresh draws from q; mean and s.d. reported (the paper: 50 repeats, m = 1000).
* normalised mode error |mu_k - mu*_k| / sigma*_k per variable (mu* the MCMC marginal mode, sigma*
  the MCMC s.d.), mean and s.d. over variables;
* s.d. ratio sigma_k / sigma*_k, mean and s.d. over variables.
"""

from __future__ import annotations

import numpy as np

from ..core.checks import integer, positive, real_array

__all__ = ["mmd2_unbiased", "m_star", "mode_error", "sd_ratio", "BANDWIDTH_NOTE"]

BANDWIDTH_NOTE = ("RBF kernel on coordinates standardised by the MCMC s.d., bandwidth h = sqrt(d) "
                  "(Chen et al. leave the bandwidth unspecified)")


def mmd2_unbiased(X, Y, scale, h: float | None = None) -> float:
    """Unbiased MMD^2 between samples X, Y (m, d) with the standardised RBF kernel (see module)."""
    X, Y, h2 = _standardised(X, Y, scale, h)
    return float(_offdiag_mean(X, X, h2) + _offdiag_mean(Y, Y, h2) - 2.0 * _offdiag_mean(X, Y, h2))


def _standardised(X, Y, scale, h):
    """X / scale, Y / scale (checked: two samples of one shape) and the squared bandwidth h^2 (d by default)."""
    scale = _positive_array(scale, "The scale (MCMC standard deviations)")
    X = real_array(X, "The sample X", ndim=2) / scale
    Y = real_array(Y, "The sample Y", ndim=2) / scale
    m, d = X.shape
    if Y.shape != (m, d) or m < 2:
        raise ValueError("MMD needs two samples of the same size (at least 2) and dimension.")
    return X, Y, float(d if h is None else positive(h, "The bandwidth h") ** 2)


JAX_MAX_DIM = 256  # up to this dimension one fused XLA program is faster; beyond it BLAS's product is


def _offdiag_mean(A: np.ndarray, B: np.ndarray, h2: float) -> float:
    """(1 / (m (m - 1))) sum_{i != j} exp(-||a_i - b_j||^2 / (2 h^2)): one term of MMD^2_u."""
    if A.shape[1] <= JAX_MAX_DIM:
        return float(_offdiag_mean_xla(A, B, h2))
    G = A @ B.T  # the m x m kernel built in place: one m x m array instead of four
    G *= -2.0
    G += np.einsum("ij,ij->i", A, A)[:, None]
    G += np.einsum("ij,ij->i", B, B)[None, :]
    np.maximum(G, 0.0, out=G)
    G *= -1.0 / (2.0 * h2)
    np.exp(G, out=G)
    m = G.shape[0]
    return float((G.sum() - np.trace(G)) / (m * (m - 1)))


def _offdiag_mean_xla(A, B, h2):
    import jax

    global _XLA_KERNEL
    if _XLA_KERNEL is None:
        import jax.numpy as jnp

        def f(A, B, h2):
            sq = jnp.sum(A**2, 1)[:, None] + jnp.sum(B**2, 1)[None, :] - 2.0 * A @ B.T
            K = jnp.exp(-jnp.maximum(sq, 0.0) / (2.0 * h2))
            m = A.shape[0]
            return (K.sum() - jnp.trace(K)) / (m * (m - 1))

        _XLA_KERNEL = jax.jit(f)
    return _XLA_KERNEL(A, B, h2)


_XLA_KERNEL = None


def m_star(sample_q, mcmc_draws, mcmc_sd, n_rep: int = 10, *, key, h: float | None = None):
    """M* = -log(MMD^2_u + 1e-5) repeated ``n_rep`` times: (mean, s.d.).

    ``sample_q(m, key)`` returns m draws of q for a jax PRNG key; m = number of stored MCMC draws.
    Repeat r uses ``jax.random.fold_in(key, r)``. The MCMC draws' own kernel term is computed once.
    """
    import jax

    from ..core import check_key

    key = check_key(key, "m_star")
    Y = real_array(mcmc_draws, "The MCMC draws", ndim=2)
    n_rep = integer(n_rep, "The number of repeats n_rep", minimum=1)
    yy = None
    vals = []
    for rep in range(n_rep):
        X, Ys, h2 = _standardised(sample_q(Y.shape[0], jax.random.fold_in(key, rep)), Y, mcmc_sd, h)
        if yy is None:
            yy = _offdiag_mean(Ys, Ys, h2)
        mmd2 = _offdiag_mean(X, X, h2) + yy - 2.0 * _offdiag_mean(X, Ys, h2)
        vals.append(-np.log(max(mmd2, 0.0) + 1e-5))
    vals = np.asarray(vals)
    return float(vals.mean()), float(vals.std(ddof=1) if len(vals) > 1 else 0.0)


def mode_error(mu, mcmc_mode, mcmc_sd):
    """|mu - mu*| / sigma* per variable: (mean, s.d., per-variable array)."""
    e = np.abs(real_array(mu, "The mean mu") - real_array(mcmc_mode, "The MCMC mode")) / _positive_array(
        mcmc_sd, "The MCMC standard deviations")
    return float(e.mean()), _sd(e), e


def sd_ratio(sd, mcmc_sd):
    """sigma / sigma* per variable: (mean, s.d., per-variable array)."""
    r = real_array(sd, "The standard deviations sd") / _positive_array(mcmc_sd, "The MCMC standard deviations")
    return float(r.mean()), _sd(r), r


def _positive_array(x, name: str) -> np.ndarray:
    a = real_array(x, name)
    if np.any(a <= 0):
        raise ValueError(f"{name} must all be positive.")
    return a


def _sd(x: np.ndarray) -> float:
    """The sample standard deviation (0 for a single value)."""
    return float(x.std(ddof=1)) if x.size > 1 else 0.0
