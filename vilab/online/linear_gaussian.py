"""Linear-Gaussian regression streams: BONG = Kalman filter = batch Bayes (digest Sec. 5 A, E), and
drifting streams for the predict step (:func:`drifting_stream`, :func:`drift_demo`).

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

from ..core.checks import integer, positive, real_array, real_scalar
from ..family.gaussian import check_mean_cov

from ..core.cache import memoize
from ..core.keys import check_key
from .families import FC, dynamics_hyper
from .grid import make_method
from .likelihoods import gaussian
from .reference import batch_posterior, kalman_filter
from .. import core
from .runner import _inputs, algorithm, belief_path

__all__ = ["linear_demo", "linear_f", "make_stream", "bong_linear_path", "example_5a", "scalar_fc_mom_vs_kf",
           "DRIFTS", "drifting_stream", "drift_demo"]


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
    k_theta, k_x, k_noise = jax.random.split(check_key(key, "make_stream"), 3)
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


#: the kinds of drift of :func:`drifting_stream`
DRIFTS = ("random walk", "sudden switch")


def drifting_stream(key, T: int, kind: str = "random walk", drift_var: float = 0.01, noise_var: float = 0.25):
    """A 2-D regression stream whose true parameter moves: (X (T, 2), y (T,), theta (T + 1, 2)) as numpy
    float64, all drawn from the jax PRNG ``key``. y_t = x_t^T theta_t + eps_t, x_t ~ N(0, I),
    eps_t ~ N(0, noise_var); theta[0] is the start, theta[t] the parameter that made y_t.

    kind "random walk": theta_0 ~ N(0, I), theta_t = theta_{t-1} + N(0, drift_var I) (the model of the
    predict step with gamma = 1, Q = drift_var I). kind "sudden switch": theta_t = 1.5 u for t <= T/2 and
    -1.5 u after (u a random unit vector; ``drift_var`` is not used): a jump of length 3 halfway.
    """
    T = integer(T, "The number of observations T", minimum=2, maximum=100_000)
    if kind not in DRIFTS:
        raise ValueError(f"Unknown kind of drift {kind!r}; use one of {', '.join(DRIFTS)}.")
    drift_var = real_scalar(drift_var, "The drift variance per step")
    if drift_var < 0:
        raise ValueError(f"The drift variance per step must be >= 0; got {drift_var:g}.")
    noise_var = positive(noise_var, "The noise variance")
    k_theta, k_walk, k_x, k_noise = jax.random.split(check_key(key, "drifting_stream"), 4)
    z0 = np.asarray(jax.random.normal(k_theta, (2,), jnp.float64))
    if kind == "random walk":
        steps = _normal_rows(k_walk, T, 2) * np.sqrt(drift_var)
        theta = np.concatenate([z0[None], z0 + np.cumsum(steps, axis=0)])
    else:
        u = 1.5 * z0 / max(float(np.linalg.norm(z0)), 1e-12)
        half = T // 2
        theta = np.concatenate([np.repeat(u[None], half + 1, axis=0), np.repeat(-u[None], T - half, axis=0)])
    X = _normal_rows(k_x, T, 2)
    y = np.einsum("td,td->t", X, theta[1:]) + _normal_rows(k_noise, T, None) * np.sqrt(noise_var)
    return X, y, theta


def _track(X, y, noise_var, prior, dynamics):
    """Means and marginal variances (T + 1, P) of bong-lin-hess-fc on a linear stream, with or without the
    predict step; one compiled loop for every T up to a power of two and every (gamma, Q)."""
    w = 1.0 / np.sqrt(float(noise_var))  # whitened, as in bong_linear_path: one likelihood for every R
    alg = algorithm(make_method("bong-lin-hess-fc"), linear_f, _gaussian(1.0), None)
    key = jax.random.PRNGKey(0)  # lin-hess draws nothing
    T = X.shape[0]
    tr = core.run(alg, key, alg.init(key, prior, dynamics=dynamics), T, batches=(X * w, y * w))
    mean, var = np.full((T + 1, X.shape[1]), np.nan), np.full((T + 1, X.shape[1]), np.nan)
    it = np.asarray(tr.iterations, int)
    mean[it], var[it] = np.asarray(tr.mean), np.asarray(tr.var)
    return mean, var, tr.status


def drift_demo(key, T: int = 200, kind: str = "random walk", gamma: float = 1.0, Q: float = 0.01,
               drift_var: float = 0.01, noise_var: float = 0.25, prior_var: float = 1.0):
    """Static BONG against BONG with the predict step on a drifting stream (:func:`drifting_stream`):
    bong-lin-hess-fc (the Kalman filter update here) from the prior N(0, prior_var I), once with the
    paper's static predict step (gamma = 1, Q = 0) and once with theta_t ~ N(gamma theta_{t-1}, Q I)
    (Jones, Chang & Murphy Sec. 3; :func:`vilab.online.families.predict_fc`).

    Returns {"t": 0..T, "theta": (T + 1, 2), "X", "y": the stream, "static" / "dynamic": {"mean", "sd": (T + 1, 2), "error":
    (T + 1,) the distance |mu_t - theta_t|, "status"}, "switch_at": t of the jump or None, "summary":
    {"static" / "dynamic": {"mean_error_last_half", "final_error", "final_sd" (the mean of the two
    marginal sds at T)}, "ratio": static / dynamic mean error over the last half}}. With kind "random walk",
    gamma = 1 and Q = drift_var the predict-step filter is exact Bayes for the stream (a Kalman filter with
    the true dynamics).
    """
    X, y, theta = drifting_stream(key, T, kind, drift_var, noise_var)
    prior = FC(jnp.zeros(2, jnp.float64), positive(prior_var, "The prior variance") * jnp.eye(2, dtype=jnp.float64))
    dynamics = (real_scalar(gamma, "The dynamics factor gamma"), Q)
    dynamics_hyper(prior, dynamics)  # a bad gamma or Q is a ValueError before anything runs
    out = {"t": np.arange(T + 1), "theta": theta, "X": X, "y": y,
           "switch_at": (T // 2 + 1) if kind == "sudden switch" else None}
    summary = {}
    for name, dyn in (("static", None), ("dynamic", dynamics)):
        mean, var, status = _track(X, y, noise_var, prior, dyn)
        err = np.linalg.norm(mean - theta, axis=1)
        sd = np.sqrt(np.maximum(var, 0.0))
        out[name] = {"mean": mean, "sd": sd, "error": err, "status": status}
        h = (T + 1) // 2
        summary[name] = {"mean_error_last_half": float(np.nanmean(err[h:])), "final_error": float(err[-1]),
                         "final_sd": float(np.mean(sd[-1]))}
    e0, e1 = summary["static"]["mean_error_last_half"], summary["dynamic"]["mean_error_last_half"]
    summary["ratio"] = float(e0 / e1) if e1 > 0 else float("inf")
    out["summary"] = summary
    return out
