"""Gold-standard posteriors by NUTS (blackjax), cached in assets/hierarchical/.

Chen, Nott & Tan Sec. 7.1 use RStan, 2 chains x 50,000 iterations. We run blackjax NUTS with
Stan-style window adaptation (``blackjax.window_adaptation``, diagonal mass matrix), 4 chains, on
exactly the log densities of :mod:`vilab.hierarchical.models`; the stochastic-volatility posterior
in non-centred coordinates (:func:`noncentred_state_space`: same posterior, no funnel). The cache
keeps, per model: posterior means, s.d.s and marginal modes (Gaussian KDE, Scott's rule, on all
draws) of every coordinate, a thinned set of draws (float32) for M* and the density plots, and in
the JSON the settings, per-chain acceptance/divergences and split R-hat / bulk ESS
(:func:`convergence`). blackjax is needed only to regenerate (``pip install -e '.[reference]'``,
then ``python scripts/hierarchical_reference.py``); loading needs numpy only.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = ["Reference", "ASSET_DIR", "load_reference", "run_nuts", "marginal_modes", "save_reference",
           "has_reference", "noncentred_state_space", "convergence"]

ASSET_DIR = Path(__file__).resolve().parents[2] / "assets" / "hierarchical"


class Reference(NamedTuple):
    """Cached NUTS summary of one model."""

    mean: np.ndarray
    sd: np.ndarray
    mode: np.ndarray
    draws: np.ndarray      # (m, d) thinned draws
    settings: dict


def marginal_modes(draws: np.ndarray, n_grid: int = 512) -> np.ndarray:
    """Marginal modes of every coordinate by Gaussian kernel density (Scott's rule) on a grid."""
    from scipy.stats import gaussian_kde

    draws = np.asarray(draws, float)
    modes = np.empty(draws.shape[1])
    for k in range(draws.shape[1]):
        x = draws[:, k]
        lo, hi = np.quantile(x, [0.001, 0.999])
        grid = np.linspace(lo, hi, n_grid)
        modes[k] = grid[np.argmax(gaussian_kde(x)(grid))]
    return modes


def noncentred_state_space(model):
    """Non-centred sampling coordinates of the stochastic-volatility posterior (Stan User's Guide, SV model).

    x = (e_1..e_n, alpha, lam, psi) with e_1 = sqrt(1 - phi^2) b_1, e_t = b_t - phi b_{t-1}: the AR(1)
    prior of Chen, Nott & Tan Sec. 7.4 becomes e ~ N(0, I) whatever phi is, which removes the funnel
    between psi (phi -> 1) and the level of b that a centred NUTS run mixes badly in. The target is the
    same posterior: log p_x(x) = log p(y, b(x), theta_G) + log |det db/de|, log |det db/de| =
    -(1/2) log(1 - phi^2). Returns (logdensity(x), to_theta(x)); b(x) by an associative scan (O(n)).
    """
    if model.ell != 1 or model.local_size != 1:
        raise ValueError("The non-centred parameterisation is for the state-space (stochastic volatility) model.")
    import jax
    import jax.numpy as jnp

    n = model.n_local

    def to_theta(x):
        e, tg = x[:n], x[n:]
        phi = jax.nn.sigmoid(tg[2])
        e = e.at[0].divide(jnp.sqrt(1.0 - phi**2))
        a = jnp.full(n, phi).at[0].set(0.0)
        b = jax.lax.associative_scan(lambda p, q: (q[0] * p[0], q[0] * p[1] + q[1]), (a, e))[1]
        return jnp.concatenate([b, tg])

    def logdensity(x):
        phi = jax.nn.sigmoid(x[-1])
        return model.log_density(to_theta(x)) - 0.5 * jnp.log1p(-phi**2)

    return logdensity, to_theta


def run_nuts(logdensity, dim: int, *, n_warmup: int = 1000, n_samples: int = 4000, n_chains: int = 2,
             key, init=None, target_accept: float = 0.8, to_theta=None):
    """NUTS draws (n_chains, n_samples, dim) with blackjax window adaptation; returns (draws, infos).

    Each chain: Stan's warm-up schedule (``blackjax.window_adaptation``, diagonal mass matrix) from
    ``init`` plus a small jitter, then ``n_samples`` draws under ``lax.scan``. ``to_theta`` maps the
    sampling coordinates to the model's theta (see :func:`noncentred_state_space`). ``key``: a jax
    PRNG key (scripts turn their int seed into one with ``vilab.core.as_key``).
    """
    import blackjax
    import jax
    import jax.numpy as jnp

    from vilab.core import check_key

    key = check_key(key, "run_nuts")
    chains, infos = [], []
    for c in range(n_chains):
        key, k_init, k_warm, k_run = jax.random.split(key, 4)
        x0 = (jnp.zeros(dim) if init is None else jnp.asarray(init)) + 0.01 * jax.random.normal(k_init, (dim,))
        adapt = blackjax.window_adaptation(blackjax.nuts, logdensity, target_acceptance_rate=target_accept)
        t0 = time.perf_counter()
        (state, params), _ = adapt.run(k_warm, x0, num_steps=n_warmup)
        kernel = blackjax.nuts(logdensity, **params).step

        @jax.jit
        def sample(state, key):
            def one(st, k):
                st, inf = kernel(k, st)
                return st, (st.position, inf.acceptance_rate, inf.num_integration_steps, inf.is_divergent)

            return jax.lax.scan(one, state, jax.random.split(key, n_samples))

        _, (pos, acc, nsteps, div) = sample(state, k_run)
        if to_theta is not None:
            pos = jax.jit(jax.vmap(to_theta))(pos)
        chains.append(np.asarray(pos))
        infos.append({"seconds": time.perf_counter() - t0, "accept": float(np.mean(acc)),
                      "mean_leapfrog": float(np.mean(nsteps)), "divergences": int(np.sum(div)),
                      "step_size": float(params["step_size"])})
    return np.stack(chains, 0), infos


def convergence(chains: np.ndarray) -> dict:
    """Split R-hat (max over coordinates) and bulk effective sample size (min) of (n_chains, n_samples, d) draws.

    blackjax.diagnostics (Gelman et al. 2013; Vehtari et al. 2021). A reference is trusted when
    R-hat < 1.01 and the ESS is in the hundreds for every coordinate.
    """
    from blackjax.diagnostics import ess_bulk, rhat

    r = np.asarray(rhat(chains, chain_axis=0, sample_axis=1))
    e = np.asarray(ess_bulk(chains, chain_axis=0, sample_axis=1))
    return {"rhat_max": float(np.max(r)), "ess_bulk_min": float(np.min(e)), "ess_bulk_median": float(np.median(e))}


def save_reference(key: str, draws: np.ndarray, settings: dict, n_keep: int, **extra) -> Path:
    """Write assets/hierarchical/<key>.npz (summaries + thinned float32 draws) and <key>.json.

    ``draws`` (N, d), all chains pooled; the summaries use every draw, ``n_keep`` evenly spaced ones are stored;
    ``extra`` arrays (e.g. the covariance of every draw) are stored beside them.
    """
    ASSET_DIR.mkdir(parents=True, exist_ok=True)
    idx = np.linspace(0, draws.shape[0] - 1, n_keep).round().astype(int)
    path = ASSET_DIR / f"{key}.npz"
    np.savez_compressed(path, mean=draws.mean(0), sd=draws.std(0, ddof=1), mode=marginal_modes(draws),
                        draws=draws[idx].astype(np.float32), **extra)
    (ASSET_DIR / f"{key}.json").write_text(json.dumps(settings, indent=1))
    return path


def has_reference(key: str) -> bool:
    return (ASSET_DIR / f"{key}.npz").exists()


def load_reference(key: str) -> Reference:
    """The cached NUTS reference of a model key ("epi1", "epi2", "sv_gbp")."""
    path = ASSET_DIR / f"{key}.npz"
    if not path.exists():
        raise ValueError(f"No cached MCMC reference for {key!r}: run `python scripts/hierarchical_reference.py {key}`.")
    z = np.load(path)
    js = ASSET_DIR / f"{key}.json"
    settings = json.loads(js.read_text()) if js.exists() else {}
    return Reference(z["mean"], z["sd"], z["mode"], z["draws"].astype(np.float64), settings)
