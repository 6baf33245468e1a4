"""Time per step of the BONG filters (Jones, Chang & Murphy Fig. 4 analogue) and a comparison with
a port of the authors' per-step code.

    .venv/bin/python benchmarks/bench_online.py            # full (~5-10 min on 2 idle cores)
    .venv/bin/python benchmarks/bench_online.py --quick    # MLP only, fewer steps (~1-2 min)

1. ms per example of bong-lin-hess-{diag, dlr-10, fc} and bong-mc-ef-dlr-10 (M = 10, 100) on the
   digits MLP (P = 2,410) and the digits-CNN (P = 11,642): vilab.core.run's compiled loop over the
   grid Algorithm (vilab.online.update, the per-step health check, the runner's step rejection),
   float64, best of 5 rounds.
   Next to it, the BONG authors' code (benchmarks/bong_authors_port.py, a line-by-line port of
   their predict + update, a baseline, not vilab code) on the same model, data, dtype and harness:
   ratio = their time / ours, and the largest difference of the means after the run (lin-hess
   fc and dlr: only their 1e-5 jitter on the softmax covariance separates the two; diag: their
   mean uses the FC Kalman gain, not Eq. 229; mc-ef: different random draws).
   (fc on the CNN: Sigma alone is 1.1 GB in float64 and a step is O(C P^2); ours only, full mode.)
2. Growth with P (the paper's Fig. 4): MLPs 64-h-10 of increasing width; the exponent is the
   slope of log(time per step) against log(P) (expected: ~1 for diag and dlr, ~2 for fc).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import vilab  # noqa: E402,F401
from vilab.models.nets import make_mlp  # noqa: E402
from vilab.online import categorical, init_belief, make_method  # noqa: E402
from vilab.online.digits import digits_model, load_digits_split  # noqa: E402
from vilab.online.likelihoods import encode_all  # noqa: E402
from vilab import core  # noqa: E402
from vilab.online.runner import algorithm  # noqa: E402

import bong_authors_port as port  # noqa: E402

LIK = categorical(10)
XTR, YTR, *_ = load_digits_split()
ROWS = [("bong-lin-hess-diag", 10), ("bong-lin-hess-dlr-10", 10), ("bong-lin-hess-fc", 10),
        ("bong-mc-ef-dlr-10", 10), ("bong-mc-ef-dlr-10", 100)]


def _stream(T):
    return (jnp.asarray(XTR[:T]), encode_all(LIK, YTR[:T], jnp.float64), jax.random.split(jax.random.PRNGKey(0), T))


def _timed(fns: dict, T: int, rounds: int = 5) -> dict:
    """ms per step of each compiled callable in ``fns`` (best of ``rounds``), the callables run in
    turn within each round (ours, theirs, ours, ...), so that a change of machine load between the
    two measurements does not bias their ratio. Each is compiled and warmed up first."""
    for fn in fns.values():
        jax.block_until_ready(fn())
    best = dict.fromkeys(fns, np.inf)
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            jax.block_until_ready(fn())
            best[name] = min(best[name], time.perf_counter() - t0)
    return {name: 1e3 * t / T for name, t in best.items()}


def ours(name, net, M, T, s2=0.1):
    """A callable running vilab.online on ``net`` over T examples (vilab.core.run's compiled loop over
    the grid Algorithm: update + per-step health check + the runner's rejection test, one row at the
    end); it returns the final belief."""
    m = make_method(name, n_samples=M)
    prior = init_belief(m.family, net.init(jax.random.PRNGKey(0)), s2, m.rank)
    alg = algorithm(m, lambda x, th: net.apply(th, x), LIK)
    X, Y, _ = _stream(T)
    key = jax.random.PRNGKey(0)
    state = alg.init(key, prior)
    return lambda: core.run(alg, key, state, T, batches=(X, Y), record_every=T).state.belief


def theirs(name, net, M, T, s2=0.1):
    """A callable running the port of the authors' predict + update on ``net`` over T examples,
    scanned like their run_rebayes_algorithm (no per-step outputs); it returns the final state."""
    init, step = port.make_step(name, lambda w, x: net.apply(w, x), num_samples=M)
    rank = int(name.rsplit("-", 1)[1]) if "dlr" in name else 0
    fn = jax.jit(lambda s, X, Y, K: jax.lax.scan(lambda s, i: (step(s, *i), None), s, (X, Y, K))[0])
    args = (init(net.init(jax.random.PRNGKey(0)), s2, rank), *_stream(T))
    return lambda: fn(*args)


def steps_for(name, M, P, quick):
    if name.endswith("-fc"):
        return (5 if quick else 10) if P < 5000 else 2
    if "mc-ef" in name:
        return (20 if quick else 100) if M <= 10 else (20 if quick else 50)
    return 50 if quick else 200


def part1(quick):
    print("\n1. ms per example: vilab.online (vilab.core.run's compiled loop over the grid Algorithm), float64,")
    print("   best of 5 rounds (ours and theirs in turn); 'authors' = port of the BONG authors' predict + update (bong_authors_port.py, a baseline),")
    print("   same model, data, dtype and harness; ratio = authors / ours; max|mu diff| after the run")
    print(f"{'method':28s}{'model':>6s}{'P':>8s}{'ours ms':>10s}{'authors ms':>12s}{'ratio':>7s}{'max|mu diff|':>14s}")
    models = ("mlp",) if quick else ("mlp", "cnn")
    res = {}
    for model in models:
        net = digits_model(model)
        for name, M in ROWS:
            T = steps_for(name, M, net.n_params, quick)
            lab = name + (f" (M={M})" if "mc" in name else "")
            fns = {"ours": ours(name, net, M, T)}
            if not (name.endswith("-fc") and net.n_params > 5000):  # else a second 1.1 GB covariance
                fns["theirs"] = theirs(name, net, M, T)
            ms = _timed(fns, T)
            t_o, t_t, d = ms["ours"], ms.get("theirs", float("nan")), float("nan")
            if "theirs" in fns:
                d = float(jnp.max(jnp.abs(fns["ours"]().mu - fns["theirs"]().mean)))
            res[(lab, model)] = (t_o, t_t)
            print(f"{lab:28s}{model:>6s}{net.n_params:>8,d}{t_o:10.2f}{t_t:12.2f}{t_t / t_o:7.1f}{d:14.1e}", flush=True)
    return res


def part2(quick):
    print("\n2. growth with P (MLP 64-h-10): ms per step and the exponent of P (slope of log time vs log P)")
    widths = [16, 32, 64, 128] if quick else [16, 32, 64, 128, 256, 512]
    out = {}
    for name, M, hmax in [("bong-lin-hess-diag", 10, 10**6), ("bong-lin-hess-dlr-10", 10, 10**6),
                          ("bong-mc-ef-dlr-10", 10, 10**6), ("bong-lin-hess-fc", 10, 64 if quick else 128)]:
        Ps, ts = [], []
        for h in widths:
            if h > hmax:
                continue
            net = make_mlp([64, h, 10])
            T = steps_for(name, M, net.n_params, quick)
            ms = _timed({"ours": ours(name, net, M, T)}, T, rounds=3)["ours"]
            Ps.append(net.n_params)
            ts.append(ms)
        slope = float(np.polyfit(np.log(Ps), np.log(ts), 1)[0])
        out[name] = slope
        print(f"{name:22s} " + "  ".join(f"P={p}: {t:.2f}" for p, t in zip(Ps, ts)) + f"   exponent {slope:.2f}", flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="MLP only, fewer steps and widths")
    args = ap.parse_args(argv)
    t0 = time.time()
    print("bench_online: BONG filters on the digits stream (jax", jax.__version__, ", CPU, float64)",
          "[quick]" if args.quick else "")
    part1(args.quick)
    part2(args.quick)
    print(f"\ntotal {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
