"""Time per step of Tan's single-draw natural step in (mu, C) (Alg. 1N / 1b, one draw a step): the O(d^2) form of
Tan (explicit) Sec. 4 against the dense O(d^3) product, and against the update catalogue's ``tan-1N`` with
``grads="first"`` (the same iterates; it also forms Sigma = C C^T every step), at d = 50, 200, 500.

    python benchmarks/bench_single_draw.py                 d = 50, 200, 500
    python benchmarks/bench_single_draw.py 50 1000         other dimensions

Target: a Gaussian N(m, P^-1) with a dense random precision (its gradient costs O(d^2), so the step is where the
O(d^3) lies), start mu = 0, C = I, rho = 0.1 / d, one draw per step. Each path is compiled first (a short run),
then timed over n steps recorded once at the end (record_every = n: a recorded row costs an O(d^3) ELBO), best
of 3. The machine load (/proc/loadavg) is printed beside the numbers: write it down with them.

Measured 2026-12-02 on the 2-core shared machine, load 6.9-9.5 (two runs; ms per step, O(d^2) / dense / catalogue):
d = 50: 0.06-0.11 / 0.06-0.07 / 0.24-0.27 (no gain: the step's fixed costs dominate); d = 200: 0.69-0.71 /
1.47-1.58 / 2.4-5.6; d = 500: 6.0-9.3 / 32-42 / 44-94 (the O(d^2) step 3.5-7 times faster than the dense one).
Iterates agree to 4e-16. XLA's counted flops per step (deterministic): O(d^2) 1.65e6 / 6.42e6 at d = 200 / 400,
dense 3.3e7 / 2.6e8. At d = 500 most of the O(d^2) step is the reverse cumulative sum (jnp.cumsum between two
flips, ~2 ms alone; jax.lax.cumsum(..., reverse=True) took ~0.8 ms).
"""

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import vilab  # noqa: F401  (float64)
from vilab import core
from vilab.algorithms import algorithm
from vilab.algorithms.catalogue import single_draw_algorithm
from vilab.family.gaussian import CholCov
from vilab.targets import gaussian_target

STEPS = {50: 2000, 200: 400, 500: 100}


def _load() -> str:
    try:
        return open("/proc/loadavg").read().split()[0:3].__str__()
    except OSError:
        return "(no /proc/loadavg)"


def target(d: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    return gaussian_target(rng.normal(size=d), precision=A @ A.T / d + np.eye(d), name=f"dense Gaussian d={d}")


def time_path(alg, d: int, n: int, repeat: int = 3) -> tuple[float, np.ndarray]:
    """Best seconds per step over ``repeat`` runs of n steps, and the final mean."""
    key = jax.random.PRNGKey(1)
    st = alg.init(key, CholCov(jnp.zeros(d), jnp.eye(d)), rho=0.1 / d)
    core.run(alg, key, st, 2, record_every=2)  # compile
    best, mean = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        tr = core.run(alg, key, st, n, record_every=n)
        jax.block_until_ready(tr.mean)
        best = min(best, time.perf_counter() - t0)
        mean = np.asarray(tr.mean[-1])
    return best / n, mean


def main(dims=(50, 200, 500), n_steps=None):
    print(f"load before: {_load()}")
    print(f"{'d':>5} {'steps':>6} {'O(d^2) ms/step':>15} {'dense ms/step':>14} {'catalogue ms/step':>18} "
          f"{'dense/O(d^2)':>13} {'catalogue/O(d^2)':>17} {'max |mean diff|':>16}")
    for d in dims:
        n = int(n_steps or STEPS.get(d, max(20, int(2e7 / d**2))))
        tgt = target(d)
        t_s, m_s = time_path(single_draw_algorithm(tgt, path="sample"), d, n)
        t_d, m_d = time_path(single_draw_algorithm(tgt, path="dense"), d, n)
        t_c, m_c = time_path(algorithm("tan-1N", tgt, grads="first"), d, n)
        diff = max(float(np.abs(m_s - m_d).max()), float(np.abs(m_s - m_c).max()))
        print(f"{d:>5} {n:>6} {1e3 * t_s:>15.3f} {1e3 * t_d:>14.3f} {1e3 * t_c:>18.3f} {t_d / t_s:>13.1f} "
              f"{t_c / t_s:>17.1f} {diff:>16.2e}", flush=True)
    print(f"load after: {_load()}")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(tuple(args) if args else (50, 200, 500))
