"""Examples per second of one VI training epoch (each optimizer of vilab.algorithms.optim) and of BONG-family
stream steps (each method the CNN lab offers), on whatever device jax offers. Compilation and the
test-set evaluations are excluded; the device is printed with the table (and recorded with --json).

    python benchmarks/bench_cnn.py            # digits: lenet5-digits (VI), digits-CNN (online); a few minutes on 2 cores
    python benchmarks/bench_cnn.py --quick    # smoke run: 512 training images, T = 20
    python benchmarks/bench_cnn.py --mnist    # the papers' networks on MNIST (LeNet-5, BONG CNN); for a GPU, needs `make data`
    python benchmarks/bench_cnn.py --mnist --json assets/cnn/bench-gpu.json   # also write the rows, device and date

VI: one epoch (the median over epochs 2-3, epoch 1 being a warm-up) of n / B minibatches (digits: n = 1,437, B = 32; MNIST: n = 60,000, B = 128 as in
Tan Sec. 8.3; VOGN B = 8, Tan's MNIST batch, since it needs per-example gradients), float32,
jitted lax.scan, the minibatch sharded over the local devices when there are several.
Online: one example per step, T steps (digits 100, MNIST 200), float32; mc-ef with M = 10 on
digits (the page's setting) and M = 100 on MNIST (the paper's); blr/bbb with I = 1 on digits
and I = 10 on MNIST (the BONG repository's default).
"""

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import vilab  # noqa: E402,F401
from vilab.cnn import data, devices, models, train  # noqa: E402
from vilab.core import as_key  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mnist", action="store_true", help="LeNet-5 / the BONG CNN on MNIST (the papers' scale)")
    p.add_argument("--quick", action="store_true", help="a smoke run with fewer examples")
    p.add_argument("--T", type=int, default=None, help="stream length of the online timing")
    p.add_argument("--epochs", type=int, default=3, help="VI epochs per optimizer (the first is a warm-up)")
    p.add_argument("--json", type=Path, default=None, help="also write the rows, device and date to this file")
    a = p.parse_args(argv)
    if a.mnist:
        if not data.mnist_available():
            raise SystemExit(data.MNIST_HINT)
        d = data.load_mnist()
        vi_net, on_net, batch, M, inner, T = models.lenet5(), models.bong_cnn((28, 28, 1)), 128, 100, 10, 200
    else:
        d = data.load_digits()
        vi_net, on_net, batch, M, inner, T = models.lenet5_digits(), models.bong_cnn((8, 8, 1)), 32, 10, 1, 100
    if a.epochs < 2:
        raise SystemExit("--epochs must be at least 2 (the first epoch is a warm-up).")
    if a.quick:
        d, T = d.subset(min(512, d.n_train), min(200, len(d.y_test))), 20
    T = a.T or T
    print(f"device: {devices.device_label()}; data: {d.name} ({d.n_train} training images)")
    head = f"{'what':<40}{'model':<20}{'P':>8}{'batch':>7}{'M':>5}{'I':>4}{'examples/s':>13}{'compile s':>11}"
    print(head)
    rows = []

    def out(what, net, b, m, i, eps, comp):
        rows.append(dict(what=what, model=net.name, P=net.n_params, batch=b, M=m, I=i, examples_per_second=eps,
                         compile_seconds=comp))
        print(f"{what:<40}{net.name:<20}{net.n_params:>8}{b:>7}{m:>5}{i:>4}{eps:>13,.1f}{comp:>11.1f}", flush=True)

    for opt in train.VI_OPTIMIZERS:
        b = 8 if opt == "vogn" else batch
        # epoch 1 warms up (first executions allocate); the median of the later epochs is reported
        r = train.vi_train(vi_net, d, opt, key=as_key(0), epochs=a.epochs, batch_size=b, eval_samples=1,
                           elbo_draws=1, eval_chunk=500)
        eps = r.settings["iters_per_epoch"] * b / float(np.median(train.per_epoch(r)["epoch_seconds"][1:]))
        out(f"VI epoch, {opt}", vi_net, b, 1, 1, eps, r.timings["compile"])
    for m in train.ONLINE_METHODS:
        alg = m.split("-")[0]
        i = inner if alg in ("blr", "bbb") else 1
        r = train.online_train(on_net, d, m, key=as_key(0), T=T, alpha=None if alg == "bong" else 0.1, n_iter=i,
                               n_samples=M, n_checkpoints=2, n_test=50, n_mc=2, which=("plugin",))
        out(f"online step, {m}", on_net, 1, M if "mc-" in m else 0, i, r.timings["examples_per_second"],
            r.timings.get("first_call", float("nan")))
    if a.json is not None:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({
            "script": " ".join(["benchmarks/bench_cnn.py", *(sys.argv[1:] if argv is None else argv)]),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "device": devices.device_label(), "device_info": devices.device_info(), "data": d.name,
            "n_train": d.n_train, "T": T, "rows": rows}, indent=1))
        print("wrote", a.json)


if __name__ == "__main__":
    main()
