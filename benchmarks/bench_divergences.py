"""Benchmark of vilab.divergences: batch-and-match per iteration against a GSM-VI-style loop,
the SGD methods per iteration, and the mean-field / Fig. 1 computations.

The public GSM-VI implementation (github.com/modichirag/GSM-VI, gsmvi/bam.py) is not on PyPI and
cannot be installed here, so the comparison runs a faithful port of its BaM loop: a python loop
that samples with numpy.random.multivariate_normal, evaluates the score, applies the jitted
update with the matrix square root jax.scipy.linalg.sqrtm (its CPU path), adds jitter,
symmetrises and checks the Cholesky factor on the host.  Same model, batch size and
learning-rate schedule (rho_t = B d / t).
"""

import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import sqrtm

import vilab  # noqa: F401
from vilab.divergences import fig1_grid, meanfield_variances, run_bam, run_sgd
from vilab.targets import gaussian_target


@jax.jit
def _gsmvi_bam_update(samples, vs, mu0, S0, reg):
    B = samples.shape[0]
    xbar = samples.mean(0)
    xd = samples - xbar
    C = xd.T @ xd / B
    gbar = vs.mean(0)
    gd = vs - gbar
    G = gd.T @ gd / B
    U = reg * G + reg / (1 + reg) * jnp.outer(gbar, gbar)
    V = S0 + reg * C + reg / (1 + reg) * jnp.outer(mu0 - xbar, mu0 - xbar)
    I = jnp.eye(samples.shape[1])
    S = 2 * jnp.linalg.solve(I + sqrtm(I + 4 * U @ V).real.T, V.T)
    mu = mu0 / (1 + reg) + reg / (1 + reg) * (S @ gbar + xbar)
    return mu, S


def gsmvi_style_bam(score_batch, d, B, n_iter, seed=0):
    mean, cov = np.zeros(d), np.eye(d)
    rng = np.random.default_rng(seed)
    for i in range(n_iter):
        samples = rng.multivariate_normal(mean, cov, size=B)
        vs = np.asarray(score_batch(samples))
        reg = B * d / (i + 1)
        m, S = _gsmvi_bam_update(samples, vs, mean, cov, reg)
        S = np.asarray(S) + np.eye(d) * 1e-6
        S = (S + S.T) / 2
        try:
            np.linalg.cholesky(S)
            mean, cov = np.asarray(m), S
        except np.linalg.LinAlgError:
            pass
    return mean, cov


def _target(d, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    cov = A @ A.T / d + 0.5 * np.eye(d)
    return gaussian_target(rng.normal(size=d), cov=cov)


def main():
    rows = []
    for d in (10, 50):
        tg = _target(d)
        B, n = 50, 200
        run_bam(tg, n_iter=n, batch_size=B, window=n, history=False)  # compile
        t = time.perf_counter()
        tr = run_bam(tg, n_iter=n, batch_size=B, window=n, history=False)
        ours = (time.perf_counter() - t) / n
        err_ours = np.abs(tr.cov[-1] - tg.cov).max()
        gsmvi_style_bam(tg.grad_batch, d, B, 3)  # compile
        t = time.perf_counter()
        m, S = gsmvi_style_bam(tg.grad_batch, d, B, n)
        ref = (time.perf_counter() - t) / n
        err_ref = np.abs(S - tg.cov).max()
        rows.append((f"BaM d={d} B={B}", ours * 1e6, ref * 1e6, ref / ours, err_ours, err_ref))
    print(f"{'case':<22}{'vilab us/it':>12}{'GSM-VI-style us/it':>20}{'speed-up':>10}{'max|dSigma| vilab':>20}"
          f"{'ref':>10}")
    for r in rows:
        print(f"{r[0]:<22}{r[1]:>12.1f}{r[2]:>20.1f}{r[3]:>10.1f}{r[4]:>20.2e}{r[5]:>10.1e}")

    print()
    print(f"{'SGD method (d=10, dense T)':<28}{'us / iteration':>16}")
    tg = _target(10)
    for m in ("kl", "fdr", "sdr", "fdb", "sdb"):
        run_sgd(tg, m, n_iter=2000, window=2000, batch_size=5)
        t = time.perf_counter()
        run_sgd(tg, m, n_iter=20000, window=2000, batch_size=5)
        print(f"{m:<28}{(time.perf_counter() - t) / 20000 * 1e6:>16.1f}")

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
    main()
