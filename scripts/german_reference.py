"""Regenerate the NUTS reference posterior of the German credit logistic regression (assets/hierarchical/german.npz
and .json): Chen, Nott & Tan Sec. 7.2 (their Fig. 4 takes Lambda and nu from MCMC draws of it; Table 6 compares
every method with them).

Needs blackjax, which is not a run-time dependency (the package and the tests only read the cached file):

    pip install -e '.[reference]'          # blackjax
    python scripts/german_reference.py     # a minute or two on 2 cores

Model: vilab.targets.german.german_credit() (d = 49, prior N(0, 100 I)); blackjax NUTS with Stan's window
adaptation, 4 chains started at the posterior mode. Stored: mean, s.d., marginal modes and 1000 evenly spaced
draws (vilab.targets.reference.save_reference), plus the covariance of every draw ("cov"), whose inverse is
Fig. 4's Lambda. The paper uses RStan; its printed diag(Lambda) lies in [0.52, 148.82] with mean 45.68.
"""

import time

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import minimize

import vilab  # noqa: F401  (float64)
from vilab.core import as_key
from vilab.targets.reference import convergence, run_nuts, save_reference
from vilab.targets.german import german_credit

SEED = 2025
SETTINGS = dict(n_warmup=1000, n_samples=5000, n_chains=4, target_accept=0.8, n_keep=1000)


def main():
    m = german_credit()
    logdensity = jax.jit(lambda th: m.log_joint(th))
    f = jax.jit(jax.value_and_grad(lambda th: -m.log_joint(th)))
    mode = minimize(lambda t: tuple(np.asarray(v, float) for v in f(jnp.asarray(t))), np.zeros(m.d), jac=True,
                    method="L-BFGS-B", options=dict(gtol=1e-10)).x
    s = dict(SETTINGS)
    n_keep = s.pop("n_keep")
    t0 = time.perf_counter()
    chains, infos = run_nuts(logdensity, m.d, key=as_key(SEED), init=mode, **s)
    chains = np.asarray(chains)
    draws = chains.reshape(-1, m.d)
    settings = dict(SETTINGS, model=m.name, source=m.source, dim=m.d, seed=SEED,
                    sampler="blackjax NUTS (window adaptation), started at the posterior mode", chains=infos,
                    seconds=time.perf_counter() - t0, diagnostics=convergence(chains), names=list(m.feature_names))
    path = save_reference("german", draws, settings, n_keep, cov=np.cov(draws, rowvar=False))
    lam = np.diag(np.linalg.inv(np.cov(draws, rowvar=False)))
    print(f"german: {chains.shape} draws, {settings['seconds']:.0f} s, diagnostics {settings['diagnostics']}, "
          f"diag(Lambda) in [{lam.min():.2f}, {lam.max():.2f}], mean {lam.mean():.2f} -> {path}")


if __name__ == "__main__":
    main()
