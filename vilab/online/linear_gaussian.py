"""Linear-Gaussian regression streams: BONG = Kalman filter = batch Bayes (digest Sec. 5 A, E).

y_t = x_t^T theta + eps, eps ~ N(0, R), prior N(mu_0, Sigma_0). With f(x, theta) = x^T theta the
lin-hess quantities are exact (g = x (y - x^T mu)/R, G = -x x^T/R), so bong-lin-hess-fc
(Eqs. 134-135) is the Kalman filter (Eqs. 136-138) and its last state is the batch posterior,
whereas the moment-parameter bong-lin-hess-fc_mom (Eq. 187) is not exact and can produce a
negative variance.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import integer, positive, real_array, real_scalar
from ..gaussian import check_mean_cov

from ..core.cache import memoize
from ..core.keys import as_key
from .families import FC
from .grid import make_method
from .likelihoods import gaussian
from .reference import batch_posterior, kalman_filter
from .runner import _inputs, belief_path

__all__ = ["linear_demo", "linear_f", "make_stream", "bong_linear_path", "example_5a", "scalar_fc_mom_vs_kf"]


def linear_f(x, theta):
    """f(x, theta) = x^T theta as a length-1 output."""
    return jnp.atleast_1d(jnp.dot(x, theta))


def make_stream(key, T: int, dim: int = 2, noise_var: float = 0.5, prior_var: float = 1.0):
    """(X (T, dim), y (T,), theta_true) as numpy float64, drawn from the jax PRNG ``key``: x_t ~ N(0, I),
    theta ~ N(0, prior_var I), y = x^T theta + noise, noise ~ N(0, noise_var)."""
    T = integer(T, "The number of observations T", minimum=1, maximum=10**7)
    dim = integer(dim, "The dimension dim", minimum=1, maximum=10_000)
    noise_var = positive(noise_var, "The noise variance")
    prior_var = positive(prior_var, "The prior variance")
    k_theta, k_x, k_noise = jax.random.split(as_key(key), 3)
    theta = np.asarray(jax.random.normal(k_theta, (dim,), jnp.float64)) * np.sqrt(prior_var)
    X = _normal_rows(k_x, T, dim)
    y = X @ theta + _normal_rows(k_noise, T, None) * np.sqrt(noise_var)
    return X, y, theta


def _normal_rows(key, T: int, dim: int | None) -> np.ndarray:
    """``jax.random.normal(key, (T, dim))`` (or ``(T,)``) as numpy. JAX compiles its sampler once per shape:
    with partitionable Threefry (JAX's default) the first T rows of a longer draw are the same numbers, so the
    draw is made at the next power of two and cut, and a slider moving T reuses one compiled sampler."""
    shape = (T,) if dim is None else (T, dim)
    if not jax.config.jax_threefry_partitionable:
        return np.asarray(jax.random.normal(key, shape, jnp.float64))
    n = max(8, 1 << (T - 1).bit_length())
    return np.asarray(jax.random.normal(key, (n,) + shape[1:], jnp.float64))[:T]


@memoize("vilab.online.linear_gaussian likelihoods", maxsize=32)
def _gaussian(noise_var: float):
    """One likelihood object per noise variance, so that repeated paths reuse one compiled loop (the
    runner keys its loops on the Algorithm, memoized on the likelihood object)."""
    return gaussian(noise_var)


def bong_linear_path(X, y, noise_var: float, mu0, Sigma0, family: str = "fc"):
    """Means (T+1, P) and covariances (T+1, P, P) of bong-lin-hess-{fc, fc_mom} on a linear stream."""
    if family not in ("fc", "fc_mom"):
        raise ValueError("Use family 'fc' (natural parameters) or 'fc_mom' (moment parameters).")
    mu0, Sigma0 = check_mean_cov(mu0, Sigma0, name="Sigma0")
    noise_var = positive(noise_var, "The noise variance")
    prior = FC(jnp.asarray(mu0, jnp.float64), jnp.asarray(Sigma0, jnp.float64))
    # Whitened: y / sqrt(R) = (x / sqrt(R))^T theta + N(0, 1) is the same model, and its updates (exact Bayes
    # for fc; fc_mom's Sigma H^T R^-1 H Sigma) are the same numbers up to round-off. One likelihood, N(0, 1),
    # hence one compiled loop, serves every noise variance (a slider on R does not recompile).
    w = 1.0 / np.sqrt(float(noise_var))
    X = np.asarray(_inputs(X)) * w
    y = real_array(y, "The observations y", allow_empty=True) * w
    # lin-hess has no random draws: the key only names the stream
    path = belief_path(make_method(f"bong-lin-hess-{family}"), linear_f, _gaussian(1.0), X, y, prior,
                       key=jax.random.PRNGKey(0))
    return np.asarray(path.mu), np.asarray(path.Sigma)


def example_5a():
    """The digest's Sec. 5 A example: R = 0.5, prior N(0, I_2), x = [1, 2], y = 1; x = [-1, 0.5], y = -0.3."""
    X = np.array([[1.0, 2.0], [-1.0, 0.5]])
    y = np.array([1.0, -0.3])
    return X, y, 0.5, np.zeros(2), np.eye(2)


def scalar_fc_mom_vs_kf(R: float, Sigma: float = 1.0, H: float = 1.0):
    """Posterior variance after one observation: Kalman/bong-fc vs bong-lin-hess-fc_mom (Eq. 187).

    KF: Sigma - Sigma H (R + H Sigma H)^{-1} H Sigma; fc_mom: Sigma - Sigma H R^{-1} H Sigma.
    Computed with the library's updates on a 1-parameter model (digest Sec. 5 E).
    """
    R, Sigma, H = positive(R, "The observation variance R"), positive(Sigma, "The prior variance Sigma"), real_scalar(H, "H")
    X = np.array([[H]])
    y = np.array([0.0])
    _, S_fc = bong_linear_path(X, y, R, np.zeros(1), np.array([[Sigma]]), "fc")
    _, S_mom = bong_linear_path(X, y, R, np.zeros(1), np.array([[Sigma]]), "fc_mom")
    return float(S_fc[-1, 0, 0]), float(S_mom[-1, 0, 0])


def linear_demo(key, T: int, noise_var: float, prior_var: float = 1.0):
    """Everything the page's 2-D stream panel draws: for t = 0..T the beliefs of bong-lin-hess-fc,
    the Kalman filter, the batch posterior of the first t observations and bong-lin-hess-fc_mom,
    plus the smallest covariance eigenvalue of the exact and the moment-parameter filters. ``key``: the
    jax PRNG key of the stream (:func:`make_stream`)."""
    X, y, theta = make_stream(key, T, 2, noise_var, prior_var)
    m0, S0 = np.zeros(2), prior_var * np.eye(2)
    mu_fc, S_fc = bong_linear_path(X, y, noise_var, m0, S0, "fc")
    mu_mom, S_mom = bong_linear_path(X, y, noise_var, m0, S0, "fc_mom")
    mu_kf, S_kf = kalman_filter(m0, S0, X, y, noise_var)
    batch = [(m0, S0)] + [batch_posterior(m0, S0, X[:t], y[:t], noise_var) for t in range(1, T + 1)]
    return {
        "X": X, "y": y, "theta": theta,
        "fc": (mu_fc, S_fc), "fc_mom": (mu_mom, S_mom), "kf": (mu_kf, S_kf),
        "batch": (np.array([b[0] for b in batch]), np.array([b[1] for b in batch])),
        "min_eig_fc": _safe_min_eig(S_fc), "min_eig_mom": _safe_min_eig(S_mom),
        "max_gap_kf": float(max(np.max(np.abs(mu_fc - mu_kf)), np.max(np.abs(S_fc - S_kf)))),
    }


def _safe_min_eig(S):
    out = np.full(S.shape[0], np.nan)
    for i, s in enumerate(S):
        if np.all(np.isfinite(s)):
            out[i] = np.linalg.eigvalsh(0.5 * (s + s.T))[0]
    return out
