"""Recorded results of the CNN experiments (``assets/cnn/*.json``), read and summarised for the page.

``scripts/cnn_full_scale.py`` writes them, each with ``experiment``, ``script`` (with its
arguments), ``date`` (UTC), ``device`` and ``settings`` beside ``results``:

* ``tan2025-table9-mnist.json`` - Tan (2025) Table 9, MNIST row (GPU): one row per optimizer
  (final ELBO, test error/NLPD, time) and ``curves`` (average ELBO per epoch);
* ``bong-figs12-mnist.json`` - Jones, Chang & Murphy Figs 1-2 on MNIST, T = 2000 (GPU): one row
  per (method, seed) with the test metrics at the checkpoints;
* ``digits-ordering.json`` - the ``cnn-digits-ordering`` reproduction (CPU, digits analogue).

Nothing here invents numbers: a missing file is simply absent from the lists. The folder is
``assets/cnn`` of the checkout, or ``$VILAB_CNN_ASSETS`` when set.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np

__all__ = ["FULL_SCALE", "ORDERING", "assets_dir", "read", "full_scale", "ordering", "tan_rows", "tan_curves",
           "bong_rows", "bong_curves", "bong_figures", "ordering_rows", "HEADER_KEYS"]

FULL_SCALE = {"tan2025-table9-mnist.json": "tan", "bong-figs12-mnist.json": "bong"}
ORDERING = "digits-ordering.json"
HEADER_KEYS = ("experiment", "script", "date", "device", "settings", "results")


def assets_dir() -> Path:
    """assets/cnn of the checkout, or the folder named by $VILAB_CNN_ASSETS."""
    env = os.environ.get("VILAB_CNN_ASSETS")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "assets" / "cnn"


def read(path) -> dict:
    """One result file; ValueError (with the file name) if it is not a complete record."""
    path = Path(path)
    try:
        res = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{path.name} cannot be read as JSON ({e}).") from e
    missing = [k for k in HEADER_KEYS if k not in res]
    if missing:
        raise ValueError(f"{path.name} lacks {', '.join(missing)}: regenerate it with scripts/cnn_full_scale.py.")
    res["file"] = path.name
    return res


def full_scale(folder=None) -> dict[str, dict]:
    """{'tan': record, 'bong': record} for the full-scale files present (possibly empty)."""
    folder = assets_dir() if folder is None else Path(folder)
    return {kind: read(folder / name) for name, kind in FULL_SCALE.items() if (folder / name).is_file()}


def ordering(folder=None) -> dict | None:
    """The recorded cnn-digits-ordering reproduction, or None."""
    folder = assets_dir() if folder is None else Path(folder)
    p = folder / ORDERING
    return read(p) if p.is_file() else None


def ordering_rows(rec: dict) -> list[dict]:
    """The checks of the recorded cnn-digits-ordering run (vilab.repro Result.as_dict format)."""
    return [{"quantity": c["quantity"], "paper's direction": c["paper"], "computed": c["computed"],
             "holds": bool(c["pass"]), "note": c["note"]} for c in rec["results"].get("checks", [])]


def _num(x) -> float:
    return float("nan") if x is None else float(x)


def tan_rows(res: dict) -> list[dict]:
    """Table 9 rows: our final ELBO beside the paper's, test error, time and examples per second."""
    return [{"optimizer": r.get("optimizer"), "ELBO (ours)": _num(r.get("final_elbo")),
             "+- s.e.": _num(r.get("final_elbo_se")), "ELBO (Tan Table 9)": _num(r.get("paper_elbo")),
             "test error": _num(r.get("test_error")), "test NLPD": _num(r.get("test_nlpd")),
             "seconds": _num(r.get("seconds")), "paper seconds": _num(r.get("paper_seconds")),
             "examples/s": _num(r.get("examples_per_second")), "status": r.get("status")}
            for r in res["results"]]


def tan_curves(res: dict) -> list[dict]:
    """[{'label', 'optimizer', 'elbo_epoch', 'test_nlpd'}] for vilab.plots.cnn.elbo_curves / metric_curves."""
    key = {r.get("optimizer"): r.get("key", r.get("optimizer")) for r in res["results"]}
    return [{"label": k, "optimizer": key.get(k, k),
             "elbo_epoch": np.asarray([_num(v) for v in c.get("elbo_epoch", [])]),
             "test_nlpd": np.asarray([_num(v) for v in c.get("test_nlpd", [])])}
            for k, c in res.get("curves", {}).items()]


def _by_method(res: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in res["results"]:
        out.setdefault(r["method"], []).append(r)
    return out


def bong_rows(res: dict, metric: str = "nlpd_plugin") -> list[dict]:
    """One row per method: the test metrics at t = T, mean and standard error over the seeds."""
    rows = []
    for m, rs in _by_method(res).items():
        row = {"method": m, "seeds": len(rs)}
        for k in ("nlpd_plugin", "nlpd_mc", "nlpd_lin", "err_plugin"):
            v = np.asarray([_num(r[k][-1]) if r.get(k) else float("nan") for r in rs])
            row[k] = float(np.mean(v))
            row[k + " s.e."] = float(np.std(v, ddof=1) / math.sqrt(len(v))) if len(v) > 1 else float("nan")
        row["ms/step"] = 1e3 * float(np.mean([_num(r.get("seconds_per_step")) for r in rs]))
        row["status"] = ", ".join(sorted({str(r.get("status")) for r in rs}))
        rows.append(row)
    return rows


def bong_curves(res: dict, methods=None) -> list[dict]:
    """[{'label', 'checkpoints', 'metrics'}] (mean over seeds) for vilab.plots.cnn.online_curves."""
    out = []
    for m, rs in _by_method(res).items():
        if methods is not None and m not in methods:
            continue
        keys = [k for k in ("nlpd_plugin", "nlpd_mc", "nlpd_lin", "err_plugin", "err_mc", "err_lin") if rs[0].get(k)]
        metrics = {k: np.mean(np.asarray([[_num(v) for v in r[k]] for r in rs]), axis=0) for k in keys}
        out.append({"label": m, "checkpoints": np.asarray(rs[0]["checkpoints"]), "metrics": metrics})
    return out


def bong_figures(res: dict) -> list[tuple[str, list[dict]]]:
    """The recorded methods grouped as the paper's figures: Fig. 1 = every algorithm on dlr-10,
    Fig. 2 = bong on every family; (title, curves) pairs, empty groups left out."""
    methods = list(_by_method(res))
    groups = [("Jones, Chang & Murphy Fig. 1 (dlr-10 family), mean over seeds",
               [m for m in methods if m.endswith("-dlr-10")]),
              ("Jones, Chang & Murphy Fig. 2 (bong, each family), mean over seeds",
               [m for m in methods if m.startswith("bong-")])]
    return [(title, bong_curves(res, ms)) for title, ms in groups if ms]
