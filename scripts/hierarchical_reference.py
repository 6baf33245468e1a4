"""Regenerate the NUTS reference posteriors of the hierarchical page (assets/hierarchical/<key>.npz/.json).

Needs blackjax, which is not a run-time dependency (the page and the tests only read the cached files):

    pip install -e '.[reference]'                       # blackjax
    python scripts/hierarchical_reference.py            # all models (about 20 min on 2 cores)
    python scripts/hierarchical_reference.py epi1 sv_gbp

blackjax NUTS, Stan's window adaptation (diagonal mass matrix), 4 chains, on exactly the log densities of
vilab.hierarchical.models (see vilab.targets.reference). The stochastic-volatility posterior is
sampled in the non-centred coordinates e_t = b_t - phi b_{t-1} (same posterior, no funnel; centred NUTS
chains disagreed by ~0.3 posterior s.d.) and mapped back to theta = (b, alpha, lam, psi).
Chen, Nott & Tan (Sec. 7.1) used RStan with 2 chains x 50,000 iterations; we use fewer draws so that the
script runs in minutes, and store the convergence diagnostics (split R-hat, bulk ESS) with the settings.
The summaries (means, s.d.s, KDE marginal modes) use every draw; n_keep evenly spaced draws are stored
(float32) for M* (Chen's m = 1000) and the density plots. tests/test_hierarchical.py checks that the
cached files match these SETTINGS and the models.
"""

import json
import sys
import time

import numpy as np

import vilab  # noqa: F401  (float64)
from vilab.core import as_key
from vilab.hierarchical.models import get_model
from vilab.targets.reference import convergence, noncentred_state_space, run_nuts, save_reference

SEED = 2025
SETTINGS = {
    "epi1": dict(n_warmup=1000, n_samples=2500, n_chains=4, target_accept=0.8, n_keep=1000, parameterisation="centred"),
    "epi2": dict(n_warmup=1000, n_samples=2500, n_chains=4, target_accept=0.8, n_keep=1000, parameterisation="centred"),
    "sv_gbp": dict(n_warmup=1000, n_samples=2500, n_chains=4, target_accept=0.95, n_keep=1000,
                   parameterisation="non-centred"),
    "toenail": dict(n_warmup=1000, n_samples=2500, n_chains=4, target_accept=0.9, n_keep=1000,
                    parameterisation="centred"),
}


def main(keys):
    for key in keys:
        if key not in SETTINGS:
            raise SystemExit(f"unknown model {key!r}; choose from {', '.join(SETTINGS)}")
        m = get_model(key)
        s = dict(SETTINGS[key])
        n_keep, param = s.pop("n_keep"), s.pop("parameterisation")
        logdensity, to_theta, init = m.log_density, None, None
        if param == "non-centred":
            logdensity, to_theta = noncentred_state_space(m)
            init = np.zeros(m.dim)
            init[-2] = np.log(np.mean(np.asarray(m.data[0]) ** 2))  # lam at the log mean square return
        t0 = time.perf_counter()
        chains, infos = run_nuts(logdensity, m.dim, key=as_key(SEED), init=init, to_theta=to_theta, **s)
        diag = convergence(chains)
        settings = dict(SETTINGS[key], model=m.name, dim=m.dim, seed=SEED, sampler="blackjax NUTS (window adaptation)",
                        chains=infos, seconds=time.perf_counter() - t0, diagnostics=diag,
                        names=m.names()[-m.global_size:])
        path = save_reference(key, chains.reshape(-1, m.dim), settings, n_keep)
        print(f"{key}: d = {m.dim}, {chains.shape[0]} x {chains.shape[1]} draws, {settings['seconds']:.0f} s, "
              f"accept {[round(i['accept'], 3) for i in infos]}, divergences {[i['divergences'] for i in infos]}, "
              f"{json.dumps(diag)} -> {path}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or list(SETTINGS))
