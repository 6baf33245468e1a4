"""Speed of the one runner (vilab.core.run through vilab.algorithms.run) on SR-VN (Kumar et al. (2025)
Eq. 17) with a Gaussian target N(m, S) at d = 2, 10, 50, 200, against a plain numpy loop of the same
formula, C <- C - rho C tril_half(C^T H C - I), m <- m - rho C C^T g, g = P (m - m*), H = P = S^-1:

* first call: compile + run of N steps (seconds), for a dimension not compiled yet;
* new N: a call with another n_steps and record_every after that (seconds; the runner's buffers do not
  depend on n_steps, so it must not compile: "compiled" says whether it did);
* ms a step, every row recorded (mean, cov, factor, objective, ELBO, KL) and thinned (record_every=N:
  the first and last rows), best of ``--repeat`` calls;
* ms a recorded row: (every row - thinned) per step, and the row's bytes;
* numpy: ms a step of the loop above, bare and writing the same row (mean, C C^T, C and the KL) into
  preallocated arrays.

    python benchmarks/bench_runner.py                  d = 2, 10, 50, 200; writes benchmarks/results/runner-<date>.json
    python benchmarks/bench_runner.py --dims 2,50 --repeat 3 --no-record

Timings depend on the machine and its load (the load average is in the record); nothing here is
asserted by the tests.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import time
from pathlib import Path

import jax
import numpy as np

import vilab
from vilab import algorithms
from vilab.family.gaussian import MeanCov
from vilab.targets import gaussian_target

N_STEPS = {2: 400, 10: 400, 50: 200, 200: 50}
RHO = 0.3


def problem(d: int):
    rng = np.random.default_rng(d)
    A = rng.standard_normal((d, d))
    S = A @ A.T / d + np.eye(d)
    return rng.standard_normal(d), S


def tril_half(X):
    L = np.tril(X)
    L[np.diag_indices_from(L)] *= 0.5
    return L


def numpy_srvn(m_t, P, n: int, record: bool):
    """Kumar et al. Eq. 17 on N(m_t, P^-1) from N(0, I), n steps; with ``record`` the row of every
    iterate (mean, Sigma = C C^T, C, KL(q || p)) written into preallocated arrays."""
    d = len(m_t)
    m, C, eye = np.zeros(d), np.eye(d), np.eye(d)
    ld_P = np.linalg.slogdet(P)[1]
    if record:
        means, covs, facs, kls = np.empty((n, d)), np.empty((n, d, d)), np.empty((n, d, d)), np.empty(n)
    for t in range(n):
        g = P @ (m - m_t)
        C_new = C - RHO * C @ tril_half(C.T @ P @ C - eye)
        m = m - RHO * C @ (C.T @ g)
        C = C_new
        if record:
            S = C @ C.T
            r = m - m_t
            kls[t] = 0.5 * (np.sum(P * S) - d - ld_P - 2 * np.sum(np.log(np.abs(np.diag(C)))) + r @ P @ r)
            means[t], covs[t], facs[t] = m, S, C
    return m, C


def best_of(fn, repeat: int) -> float:
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def bench(d: int, repeat: int) -> dict:
    m_t, S = problem(d)
    P = np.linalg.inv(S)
    target = gaussian_target(m_t, cov=S)
    start = MeanCov(np.zeros(d), np.eye(d))
    n = N_STEPS[d]

    def call(n_steps, every):
        return algorithms.run("srvn", target, start, n_steps, RHO, record_every=every)

    t0 = time.perf_counter()
    first = call(n, 1)
    first_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    other = call(n // 2 + 3, 5)
    new_n_s = time.perf_counter() - t0
    every = best_of(lambda: call(n, 1), repeat) / n
    thin = best_of(lambda: call(n, n), repeat) / n
    np_bare = best_of(lambda: numpy_srvn(m_t, P, n, False), repeat) / n
    np_rec = best_of(lambda: numpy_srvn(m_t, P, n, True), repeat) / n
    # the runner's final iterate is the numpy loop's (the same formula; round-off apart)
    m_np, C_np = numpy_srvn(m_t, P, n, False)
    agree = float(max(np.max(np.abs(first.mean[-1] - m_np)), np.max(np.abs(first.extra["factor"][-1] - C_np))))
    row_bytes = int(sum(np.asarray(v[0]).nbytes for v in (first.mean, first.cov, first.objective))
                    + sum(np.asarray(v[0]).nbytes for k, v in first.extra.items() if isinstance(v, np.ndarray)))
    return {"d": d, "n_steps": n, "first_call_s": round(first_s, 3), "compiled_first": first.timings["compiled"],
            "new_n_call_s": round(new_n_s, 4), "new_n": [n // 2 + 3, 5], "compiled_new_n": other.timings["compiled"],
            "ms_per_step_every_row": round(every * 1e3, 4), "ms_per_step_thinned": round(thin * 1e3, 4),
            "ms_per_recorded_row": round((every - thin) * 1e3, 4), "row_bytes": row_bytes,
            "numpy_ms_per_step": round(np_bare * 1e3, 4), "numpy_ms_per_step_recording": round(np_rec * 1e3, 4),
            "speed_vs_numpy_thinned": round(np_bare / thin, 2), "speed_vs_numpy_recording": round(np_rec / every, 2),
            "max_abs_diff_to_numpy": agree}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="2,10,50,200")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-record", action="store_true", help="print only, write no JSON record")
    ap.add_argument("--label", default="", help="a word added to the record's file name")
    args = ap.parse_args()
    dims = [int(x) for x in args.dims.split(",")]
    unknown = [d for d in dims if d not in N_STEPS]
    if unknown:
        raise SystemExit(f"--dims takes some of {sorted(N_STEPS)}; got {unknown}.")
    load0 = [round(x, 2) for x in os.getloadavg()]
    results = []
    print(f"{'d':>4} {'N':>4} {'first s':>8} {'new N s':>8} {'comp':>5} {'every ms':>9} {'thin ms':>8} "
          f"{'row ms':>7} {'row kB':>7} {'np ms':>7} {'np rec':>7} {'x np':>5} {'x np rec':>8}")
    for d in dims:
        r = bench(d, args.repeat)
        results.append(r)
        print(f"{d:>4} {r['n_steps']:>4} {r['first_call_s']:>8.2f} {r['new_n_call_s']:>8.3f} "
              f"{str(r['compiled_new_n']):>5} {r['ms_per_step_every_row']:>9.4f} {r['ms_per_step_thinned']:>8.4f} "
              f"{r['ms_per_recorded_row']:>7.4f} {r['row_bytes'] / 1e3:>7.1f} {r['numpy_ms_per_step']:>7.4f} "
              f"{r['numpy_ms_per_step_recording']:>7.4f} {r['speed_vs_numpy_thinned']:>5.2f} "
              f"{r['speed_vs_numpy_recording']:>8.2f}", flush=True)
    load1 = [round(x, 2) for x in os.getloadavg()]
    record = {"benchmark": "bench_runner", "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "machine": {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
                          "system": platform.platform(), "jax": jax.__version__, "numpy": np.__version__,
                          "vilab": getattr(vilab, "__version__", "")},
              "load_average": {"start": load0, "end": load1},
              "settings": {"method": "srvn", "step_size": RHO, "n_steps": {str(k): N_STEPS[k] for k in dims},
                           "repeat": args.repeat, "start": "N(0, I)",
                           "target": "N(m, S), S = A A^T / d + I, A and m standard normal (seed d)"},
              "results": results}
    if not args.no_record:
        out = Path(__file__).parent / "results"
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d-%H%M")
        path = out / f"runner-{stamp}{'-' + args.label if args.label else ''}.json"
        path.write_text(json.dumps(record, indent=1) + "\n")
        print("wrote", path)


if __name__ == "__main__":
    main()
