"""Speed of the update catalogue (vilab.algorithms on the vilab.core runner): compile time and run time
of 1,000 steps on 2-D targets, the backtracking Poisson toy, a vmapped step-size sweep (run_many), the
re-use of a compiled loop when a slider moves, a pause-and-resume with a new step size
(vilab.core.resume), and the continuous-time flows.

    python benchmarks/bench_algorithms.py          representative methods
    python benchmarks/bench_algorithms.py --all    every method of the catalogue on T2 (slower: one compile each)

Columns: "first call" = compile + run (seconds), "cached" = best of 5 later calls with the same
compiled loop (milliseconds; the issue asks for milliseconds for a 2-D run of 1,000 steps).
"""

import sys
import time

import jax
import numpy as np

import vilab  # noqa: F401
from vilab import core
from vilab.algorithms import METHODS, algorithm, run, run_sweep
from vilab.theory.flows import flow
from vilab.family.gaussian import CholCov
from vilab.targets import gaussian_target
from vilab.targets.papers import horseshoe_crab_toy, kumar_t2, kumar_t3


def timed(fn, repeat=5):
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return first, best


def main(all_methods: bool = False):
    rows = []
    init2 = CholCov(np.array([-2.0, 2.5]), 0.2 * np.eye(2))
    t2, t3 = kumar_t2(), kumar_t3()
    names = sorted(METHODS) if all_methods else ["vn", "srvn", "tan-2N-cor1", "bwgd", "fbgvi"]
    for name in names:
        target, opts = t2, {}
        if name == "tan-1S":
            opts = {"blocks": (1, 1)}
        if name == "tan-2S":  # arrow pattern with one local and one global coordinate (full for d = 2)
            opts = {"local_sizes": (1,), "global_size": 1}
        first, best = timed(lambda: run(name, target, init2, 1000, 0.001, **opts))
        rows.append((f"{name} on T2 (Gaussian)", "1000 steps, constant", first, best))
    first, best = timed(lambda: run("srvn", t3, CholCov(np.zeros(2), 0.3 * np.eye(2)), 1000, 0.001))
    rows.append(("srvn on T3 (logistic, GH-40)", "1000 steps, constant", first, best))
    # a slider change: new start, step size, tolerance and n_steps (same power of two) -> no compile
    first, best = timed(lambda: run("srvn", t2, CholCov(np.array([1.0, -1.0]), 0.5 * np.eye(2)), 700, 0.002,
                                    kl_tol=1e-12))
    rows.append(("srvn on T2, slider moved", "700 steps, new start/rho/tol", first, best))
    # the runner directly, and a pause/resume with a new step size (no compile: rho is in the state)
    alg = algorithm("srvn", t2)
    key = jax.random.PRNGKey(0)
    state = alg.init(key, init2, rho=0.001, target=t2)
    first, best = timed(lambda: core.run(alg, key, state, 1000))
    rows.append(("srvn on T2, vilab.core.run", "1000 steps, prebuilt state", first, best))
    half = core.run(alg, key, state, 500)
    first, best = timed(lambda: core.resume(alg, half, 500, hyper={"rho": 0.002}))
    rows.append(("srvn on T2, resumed", "500 more steps, new rho", first, best))
    crab = horseshoe_crab_toy()
    first, best = timed(lambda: run("gd-mv", crab, (np.array([0.0]), np.array([[0.1]])), 1000, 1.0,
                                    schedule="backtracking", rel_tol=1e-7))
    rows.append(("gd-mv on the Poisson toy", "backtracking, 141 steps", first, best))
    rhos = np.geomspace(1e-3, 1.0, 32)
    first, best = timed(lambda: run_sweep("srvn", t2, init2, 500, rhos, kl_tol=1e-8))
    rows.append(("srvn sweep on T2", "32 step sizes x 500 steps", first, best))
    g5 = gaussian_target(np.zeros(5), precision=np.diag(np.arange(1.0, 6.0)) + 0.3)
    first, best = timed(lambda: run("tan-2N-cor1", g5, CholCov(np.ones(5), np.eye(5)), 1000, 0.01))
    rows.append(("tan-2N-cor1 on a 5-D Gaussian", "1000 steps, constant", first, best))
    for kind in ("natural-mc", "wasserstein", "euclidean-mv"):
        first, best = timed(lambda: flow(kind, t3, init2, 5.0), repeat=3)
        rows.append((f"flow {kind} on T3", "LSODA, 201 times, t <= 5", first, best))
    print(f"{'run':40s} {'what':30s} {'first call (s)':>15s} {'cached (ms)':>12s}")
    for r in rows:
        print(f"{r[0]:40s} {r[1]:30s} {r[2]:15.2f} {1e3 * r[3]:12.2f}")


if __name__ == "__main__":
    main(all_methods="--all" in sys.argv[1:])
