"""Benchmark of vilab.divergences: batch-and-match against a port of the public GSM-VI loop,
the SGD methods per iteration, and the mean-field / Fig. 1 computations.

BaM comparison.  The public implementation of batch-and-match is ``gsmvi/bam.py`` of
github.com/modichirag/GSM-VI (class ``BAM``, function ``bam_update``); the PyPI release
``gsmvi 0.1`` (Dec 2023) predates BaM and has no such module, so it cannot be installed here.
``public_bam_port`` below re-implements that loop operation for operation, on the same model,
batch size B and learning-rate schedule rho_t = B d / t (the schedule Chen, Nott & Tan use):
per iteration it splits a JAX key and seeds numpy with it, draws the batch with
``numpy.random.multivariate_normal``, evaluates the score, applies a jitted update that forms
C and G as means of per-sample outer products (vmap), takes the matrix square root with
``jax.scipy.linalg.sqrtm`` (the public code's CPU path) and solves for Sigma, then adds the
1e-6 jitter, symmetrises (eager JAX) and accepts the update only if a host-side Cholesky
succeeds.  vilab's ``run_bam`` applies the same closed-form update (Cai et al. 2024; checked
against the sqrtm form in tests/test_divergences.py) inside one jitted ``lax.scan``.

Prints, per case, microseconds per iteration for both, the ratio (port / vilab; the project
asks for >= 2) and the final max |Sigma - Sigma_target| of each.
Run: python benchmarks/bench_divergences.py [--quick]
"""

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import sqrtm

import vilab  # noqa: F401
from vilab.divergences import fig1_grid, meanfield_variances, run_bam, run_sgd
from vilab.targets import gaussian_target

KEY = jax.random.PRNGKey(0)


@jax.jit
def _port_update(samples, vs, mu0, S0, reg):
    """The public bam_update: batch moments, U, V, Sigma = 2 (I + (I + 4 U V)^{1/2})^{-T}-solve, mean."""
    outer = jax.vmap(jnp.outer)
    xbar = samples.mean(0)
    C = outer(samples - xbar, samples - xbar).mean(0)
    gbar = vs.mean(0)
    G = outer(vs - gbar, vs - gbar).mean(0)
    U = reg * G + reg / (1 + reg) * jnp.outer(gbar, gbar)
    V = S0 + reg * C + reg / (1 + reg) * jnp.outer(mu0 - xbar, mu0 - xbar)
    eye = jnp.eye(samples.shape[1])
    root = sqrtm(eye + 4 * U @ V).real
    S = 2 * jnp.linalg.solve(eye + root.T, V.T)
    mu = mu0 / (1 + reg) + reg / (1 + reg) * (S @ gbar + xbar)
    return mu, S


def public_bam_port(score_batch, d, B, n_iter, seed=0, jitter=1e-6):
    """The public BAM.fit loop (no monitor, no printing), step for step."""
    mean, cov = jnp.zeros(d), jnp.eye(d)
    key = jax.random.PRNGKey(seed)
    for i in range(n_iter):
        key, key_sample = jax.random.split(key, 2)
        np.random.seed(int(key_sample[0]))
        samples = np.random.multivariate_normal(mean=mean, cov=cov, size=B)
        vs = score_batch(samples)
        reg = B * d / (i + 1)  # linear regulariser reg0 / counter with reg0 = B d
        mean_new, cov_new = _port_update(samples, vs, mean, cov, reg)
        cov_new += np.eye(d) * jitter
        cov_new = (cov_new + cov_new.T) / 2.0
        try:
            ok = not np.isnan(np.linalg.cholesky(cov_new)).any()
        except np.linalg.LinAlgError:
            ok = False
        if ok:
            mean, cov = mean_new, cov_new
    return np.asarray(mean), np.asarray(cov)


def _target(d, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    cov = A @ A.T / d + 0.5 * np.eye(d)
    return gaussian_target(rng.normal(size=d), cov=cov)


def main(quick=False):
    rows = []
    for d in ((10,) if quick else (10, 50)):
        tg = _target(d)
        B, n = 50, (100 if quick else 200)
        run_bam(tg, key=KEY, n_iter=n, batch_size=B, window=n, history=False)  # compile
        t = time.perf_counter()
        tr = run_bam(tg, key=KEY, n_iter=n, batch_size=B, window=n, history=False)
        ours = (time.perf_counter() - t) / n
        err_ours = np.abs(tr.cov[-1] - tg.cov).max()
        public_bam_port(tg.grad_batch, d, B, 3)  # compile
        t = time.perf_counter()
        m, S = public_bam_port(tg.grad_batch, d, B, n)
        ref = (time.perf_counter() - t) / n
        err_ref = np.abs(S - tg.cov).max()
        rows.append((f"BaM d={d} B={B}", ours * 1e6, ref * 1e6, ref / ours, err_ours, err_ref))
    print(f"{'case':<22}{'vilab us/it':>12}{'GSM-VI port us/it':>19}{'ratio':>8}{'max|dSigma| vilab':>19}"
          f"{'port':>10}")
    for r in rows:
        print(f"{r[0]:<22}{r[1]:>12.1f}{r[2]:>19.1f}{r[3]:>8.1f}{r[4]:>19.2e}{r[5]:>10.1e}")

    print()
    print(f"{'SGD method (d=10, dense T)':<28}{'us / iteration':>16}")
    tg = _target(10)
    n_sgd = 4000 if quick else 20000
    for m in ("kl", "fdr", "sdr", "fdb", "sdb"):
        run_sgd(tg, m, key=KEY, n_iter=2000, window=2000, batch_size=5)
        t = time.perf_counter()
        run_sgd(tg, m, key=KEY, n_iter=n_sgd, window=2000, batch_size=5)
        print(f"{m:<28}{(time.perf_counter() - t) / n_sgd * 1e6:>16.1f}")

    print()
    rng = np.random.default_rng(1)
    W = rng.normal(size=(200, 200))
    L = W @ W.T / 200 + 0.1 * np.eye(200)
    for name in ("kl", "fisher", "score"):
        t = time.perf_counter()
        for _ in range(5):
            meanfield_variances(L, name)
        print(f"meanfield_variances d=200 {name:<8}{(time.perf_counter() - t) / 5 * 1e3:>10.2f} ms")
    t = time.perf_counter()
    fig1_grid(0.3)
    print(f"fig1_grid 99 x 99 (9801 NQPs)    {(time.perf_counter() - t) * 1e3:>10.2f} ms")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
