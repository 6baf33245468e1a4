"""Precompute the heavy digits-stream configurations of the "Online learning" page.

    .venv/bin/python scripts/precompute_online.py            # everything (~10-20 min on 2 cores)
    .venv/bin/python scripts/precompute_online.py grid       # one part: grid | lr | prior

Writes small JSON files to assets/online/ (the page loads them instantly):
  grid.json   test metrics vs t, seed 0, of the digits analogues of the paper's Figs 1-2 (dlr-10
              with all four algorithms, bong on diag/diag_mom/dlr-1/dlr-10, lin-hess and mc-ef
              with M = 100; blr/bbb with I = 10; bog/bbb alpha tuned on the validation split),
              bong-lin-hess-fc on the MLP and two runs of the digits-CNN
  lr.json     learning-rate sweep (SARCOS Figs 9-11 analogue): final test plug-in NLL of blr,
              bog, bbb (lin-hess, diag; blr and bbb with I = 1 and I = 10) for alpha in
              {5e-3, 1e-2, 5e-2, 1e-1, 5e-1}, and bong's fixed alpha = 1
  prior.json  prior-variance sweep of bong-lin-hess-{diag, dlr-10}: too small underfits, too
              large diverges
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import vilab  # noqa: E402,F401
from vilab.core import as_key  # noqa: E402
from vilab.online.digits import DEFAULT_CHECKPOINTS, run_digits  # noqa: E402
from vilab.online.runner import METRICS  # noqa: E402

OUT = ROOT / "assets" / "online"

GRID = [
    # (name, model, sigma0^2, alpha, I, M); alpha "tune": chosen on the validation split (below).
    # digits analogue of the paper's Fig. 1 ({bong, blr, bog, bbb} x {lin-hess, mc-ef} on dlr-10; blr and
    # bbb with I = 10) and Fig. 2 (bong x {lin-hess, mc-ef} x {diag, diag_mom, dlr-1, dlr-10}), plus fc
    ("bong-lin-hess-fc", "mlp", 0.3, None, 1, 10),
    ("bong-lin-hess-dlr-10", "mlp", 0.1, None, 1, 10),
    ("bong-lin-hess-dlr-1", "mlp", 0.1, None, 1, 10),
    ("bong-lin-hess-diag", "mlp", 0.1, None, 1, 10),
    ("bong-lin-hess-diag_mom", "mlp", 0.03, None, 1, 10),
    ("bong-mc-ef-dlr-10", "mlp", 0.03, None, 1, 100),
    ("bong-mc-ef-dlr-1", "mlp", 0.03, None, 1, 100),
    ("bong-mc-ef-diag", "mlp", 0.03, None, 1, 100),
    ("bong-mc-ef-diag_mom", "mlp", 0.03, None, 1, 100),
    ("blr-lin-hess-dlr-10", "mlp", 0.1, 0.5, 10, 10),
    ("blr-mc-ef-dlr-10", "mlp", 0.03, 0.5, 10, 10),
    ("bog-lin-hess-dlr-10", "mlp", 0.1, "tune", 1, 10),
    ("bog-mc-ef-dlr-10", "mlp", 0.03, "tune", 1, 100),
    ("bbb-lin-hess-dlr-10", "mlp", 0.1, "tune", 10, 10),
    ("bong-lin-hess-dlr-10", "cnn", 0.1, None, 1, 10),
    ("bong-lin-hess-diag", "cnn", 0.1, None, 1, 10),
]
TUNE_ALPHAS = [1e-2, 5e-2, 1e-1, 5e-1]
ALPHAS = [5e-3, 1e-2, 5e-2, 1e-1, 5e-1]
PRIOR_VARS = [1e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0, 3.0]


def _clean(a):
    return [None if not np.isfinite(v) else round(float(v), 5) for v in np.asarray(a, float)]


def _record(run):
    """One run (a vilab.core.Trace of run_digits) as the page's JSON record."""
    st = run.settings
    return {
        "name": st["name"], "label": run.method, "model": st["model"], "P": st["P"],
        "sigma0_2": st["sigma0_2"], "alpha": st["alpha"], "n_iter": st["n_iter"],
        "n_samples": st["n_samples"], "key": st["key"], "status": run.status,
        "t": [int(c) for c in run.iterations], "ms_per_step": round(1e3 * run.timings["seconds_per_step"], 4),
        "metrics": {k: _clean(run.extra[k]) for k in METRICS if k in run.extra},
    }


def tune_alpha(name, model, s2, I, M):
    """The learning rate with the lowest validation plug-in NLL at t = 1000 (the paper tunes alpha on a
    validation set; bong needs none)."""
    best = (np.inf, TUNE_ALPHAS[0])
    for a in TUNE_ALPHAS:
        r = run_digits(name, model=model, sigma0_2=s2, alpha=a, n_iter=I, n_samples=M, key=as_key(0), checkpoints=(0, 1000),
                       split="val", predictives=("plugin",))
        v = r.extra["nlpd_plugin"][-1] if not r.diverged else np.inf
        print(f"  tune {name} alpha={a:g}: validation NLL {v:.3f}", flush=True)
        best = min(best, (v, a))
    return best[1]


def grid():
    rows = []
    for name, model, s2, alpha, I, M in GRID:
        t0 = time.time()
        if alpha == "tune":
            alpha = tune_alpha(name, model, s2, I, M)
        r = run_digits(name, model=model, sigma0_2=s2, alpha=alpha, n_iter=I, n_samples=M, key=as_key(0),
                       checkpoints=DEFAULT_CHECKPOINTS, n_mc=30)
        rows.append(_record(r))
        print(f"{r.method:45s} {model} {r.status:10s} NLL {r.extra['nlpd_plugin'][-1]:.3f} "
              f"{1e3 * r.timings['seconds_per_step']:.2f} ms/step ({time.time() - t0:.0f} s)", flush=True)
    return rows


def lr_sweep():
    cps = (0, 250, 500, 750, 1000)
    rows = []
    base = run_digits("bong-lin-hess-diag", sigma0_2=0.1, key=as_key(0), checkpoints=cps, predictives=("plugin",))
    rows.append({**_record(base), "alpha": 1.0})
    for alg, I in (("blr", 1), ("blr", 10), ("bog", 1), ("bbb", 1), ("bbb", 10)):
        for a in ALPHAS:
            r = run_digits(f"{alg}-lin-hess-diag", sigma0_2=0.1, alpha=a, n_iter=I, key=as_key(0), checkpoints=cps, predictives=("plugin",))
            rows.append(_record(r))
            print(f"{r.method:45s} {r.status:30s} NLL {r.extra['nlpd_plugin'][-1]:.3f}", flush=True)
    return rows


def prior_sweep():
    cps = (0, 250, 500, 750, 1000)
    rows = []
    for name in ("bong-lin-hess-diag", "bong-lin-hess-dlr-10"):
        for s2 in PRIOR_VARS:
            r = run_digits(name, sigma0_2=s2, key=as_key(0), checkpoints=cps, predictives=("plugin",))
            rows.append(_record(r))
            print(f"{r.method:45s} s0^2={s2:<6g} {r.status:30s} NLL {r.extra['nlpd_plugin'][-1]:.3f}", flush=True)
    return rows


def main(parts):
    OUT.mkdir(parents=True, exist_ok=True)
    jobs = {"grid": grid, "lr": lr_sweep, "prior": prior_sweep}
    for p in parts or list(jobs):
        if p not in jobs:
            raise SystemExit(f"unknown part {p!r}; choose from {', '.join(jobs)}")
        rows = jobs[p]()
        meta = {"data": "sklearn load_digits, T = 1000 stream, 597 test examples", "created": time.strftime("%Y-%m-%d")}
        (OUT / f"{p}.json").write_text(json.dumps({"meta": meta, "runs": rows}, indent=0))
        print(f"wrote {OUT / (p + '.json')}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
