"""Recorded results of the CNN experiments (``assets/cnn/*.json``), read and summarised for the page.

``scripts/cnn_full_scale.py`` writes them, each with ``experiment``, ``script`` (with its
arguments), ``date`` (UTC), ``device`` and ``settings`` beside ``results``:

* ``tan2025-table9-mnist-<device>.json`` - Tan (2025) Table 9, MNIST row: one row per optimizer
  (final ELBO, test error/NLPD, time) and ``curves`` (average ELBO per epoch);
* ``bong-figs12-mnist-<device>.json`` - Jones, Chang & Murphy Figs 1-2 on MNIST: one row per
  (method, seed) with the test metrics at the checkpoints;
* ``digits-ordering.json`` - the ``cnn-digits-ordering`` reproduction (CPU, digits analogue).

``<device>`` is ``cpu`` or ``gpu`` (the script's ``--suffix``), so a reduced run recorded on a CPU
and the papers' scale run on a GPU sit side by side; :func:`scale_notes` lists how a record's
setting differs from the paper's. Nothing here invents numbers: a missing file is simply absent
from the lists. The folder is ``assets/cnn`` of the checkout, or ``$VILAB_CNN_ASSETS`` when set.
"""

from __future__ import annotations

import json
import math
import re
import os
from pathlib import Path

import numpy as np

__all__ = ["RECORDS", "ORDERING", "PAPER_SETTINGS", "assets_dir", "read", "recorded", "scale_notes", "ordering",
           "tan_rows", "tan_curves", "on_one_scale", "tan_notice", "bong_notice", "bong_rows", "bong_curves", "bong_figures", "ordering_rows", "HEADER_KEYS"]

RECORDS = {"tan2025-table9-mnist": "tan", "bong-figs12-mnist": "bong"}  # file name stem -> kind
# the full-scale settings (Tan 2025 Sec. 8.3 / Table 9; Jones, Chang & Murphy Sec. 5.1, Figs 1-2), as
# (setting key in the record, the value, how to say it[, where the value comes from: "paper" when left out]). Three
# are not printed in the papers: the final ELBO's draws (Tan states none: 100 is ours), BONG's test images (the
# authors' code default) and the seed values (BONG's paper says 3 trials, not which seeds)
PAPER_SETTINGS = {
    "tan": [("data", "mnist", "data"), ("n_train", 60000, "training images"), ("epochs", 300, "epochs"),
            ("vogn_epochs", 7, "VOGN epochs"), ("batch", 128, "batch size"),
            ("elbo_draws", 100, "draws of the final ELBO", "ours, not stated in the paper")],
    "bong": [("data", "mnist", "data"), ("T", 2000, "stream length T"), ("n_samples", 100, "samples M (mc-ef)"),
             ("n_mc", 100, "draws of the MC predictive"),
             ("n_test", 1000, "test images", "authors' code default, not stated in the paper"),
             ("seeds", [0, 1, 2], "seeds", "paper: 3 trials; the seed values are ours")],
}
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


def recorded(folder=None) -> list[dict]:
    """Every recorded MNIST experiment in the folder (possibly none), each with ``kind`` ("tan" or
    "bong") and ``full`` (True when nothing in :func:`scale_notes` differs from the paper); records
    made at the papers' scale first, then by kind and file name."""
    folder = assets_dir() if folder is None else Path(folder)
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        kind = next((k for stem, k in RECORDS.items() if path.name == stem + ".json"
                     or path.name.startswith(stem + "-")), None)
        if kind is None:
            continue
        rec = read(path)
        rec["kind"] = kind
        rec["full"] = not scale_notes(rec)
        out.append(rec)
    return sorted(out, key=lambda r: (not r["full"], r["kind"] != "tan", r["file"]))


def scale_notes(rec: dict) -> list[str]:
    """How a record's setting differs from its paper's, one phrase each ("3 epochs (paper: 300)");
    empty at the paper's setting."""
    st = rec.get("settings", {})
    notes = []
    for key, paper, what, *origin in PAPER_SETTINGS.get(rec.get("kind", ""), []):
        v = st.get(key, paper if key == "n_train" else None)
        if v is None or v == paper:
            continue
        said = origin[0].split(":")[0] if origin else "paper"  # "paper", "ours", "authors' code default"
        said = said.split(",")[0]
        if isinstance(paper, list):
            notes.append(f"{len(v)} {what} ({said}: {len(paper)})")
        elif isinstance(paper, str):
            notes.append(f"{what} {v} ({said}: {paper})")
        else:
            notes.append(f"{v:,} {what} ({said}: {paper:,})")
    return notes


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


def _optimizer_name(row: dict, with_alpha: bool = True) -> str:
    """The lab's name of a recorded optimizer ("natural-gradient Adam, α = 0.001"): the same words, and
    so the same colour and dash, as on every other page."""
    from vilab.plots import theme

    name = theme.label(row.get("key") or row.get("optimizer", ""))
    m = re.search(r"\(alpha=([^)]*)\)$", str(row.get("optimizer", "")))
    return f"{name}, α = {m.group(1)}" if (with_alpha and m) else name


def tan_rows(res: dict) -> list[dict]:
    """Table 9 rows: our final ELBO beside the paper's, test error, time and examples per second."""
    return [{"optimizer": _optimizer_name(r), "ELBO (ours)": _num(r.get("final_elbo")),
             "+- s.e.": _num(r.get("final_elbo_se")), "ELBO (Tan Table 9)": _num(r.get("paper_elbo")),
             "test error": _num(r.get("test_error")), "test NLPD": _num(r.get("test_nlpd")),
             "seconds": _num(r.get("seconds")), "paper seconds": _num(r.get("paper_seconds")),
             "examples/s": _num(r.get("examples_per_second")), "status": r.get("status")}
            for r in res["results"]]


def tan_curves(res: dict) -> list[dict]:
    """[{'label', 'optimizer', 'elbo_epoch', 'test_nlpd'}] for vilab.plots.cnn.elbo_curves / metric_curves."""
    rows = {r.get("optimizer"): r for r in res["results"]}
    return [{"label": _optimizer_name(rows[k]) if k in rows else k,
             "optimizer": rows[k].get("key", k) if k in rows else k,
             "elbo_epoch": np.asarray([_num(v) for v in c.get("elbo_epoch", [])]),
             "test_nlpd": np.asarray([_num(v) for v in c.get("test_nlpd", [])]),
             "test_err": np.asarray([_num(v) for v in c.get("test_err", [])])}
            for k, c in res.get("curves", {}).items()]


def on_one_scale(curves: list[dict], key: str = "elbo_epoch", factor: float = 100.0) -> tuple[list[dict], list[dict]]:
    """(kept, left out): the curves whose lowest value lies within ``factor`` times the median of the
    curves' lowest values (in size), and the ones far below it, which would flatten the others into a
    line on a shared axis (ProxGenAdam's ELBO of -3e10 beside -2e5)."""
    lows = {id(c): float(np.nanmin(c[key])) if np.isfinite(c[key]).any() else float("nan") for c in curves}
    finite = [v for v in lows.values() if np.isfinite(v)]
    if len(finite) < 3:
        return list(curves), []
    ref = abs(float(np.median(finite)))
    far = [c for c in curves if np.isfinite(lows[id(c)]) and abs(lows[id(c)]) > factor * max(ref, 1.0)]
    return [c for c in curves if c not in far], far


def tan_notice(res: dict) -> str:
    """What to notice in a Table 9 record: the optimizers ordered by final ELBO, here and in the paper."""
    rows = [r for r in res["results"] if r.get("final_elbo") is not None and r.get("paper_elbo") is not None]
    if len(rows) < 2:
        return ""
    ours = sorted(rows, key=lambda r: -float(r["final_elbo"]))
    paper = sorted(rows, key=lambda r: -float(r["paper_elbo"]))
    name = {r["key"]: _optimizer_name(r, with_alpha=False) for r in rows}
    order = " > ".join(name[r["key"]] for r in ours)
    porder = " > ".join(name[r["key"]] for r in paper)
    same = [r["key"] for r in ours] == [r["key"] for r in paper]
    best = ours[0]
    return (f"Final ELBO, highest first: {order} here; {porder} in Tan's Table 9"
            + (" (the same order)." if same else ".")
            + f" {name[best['key']]} ends highest here ({float(best['final_elbo']):,.0f}); its test error is "
            f"{float(best['test_error']):.3f}.")


def bong_notice(res: dict) -> str:
    """What to notice in a BONG record: the methods ordered by test NLPD at t = T (mean over seeds)."""
    failed = [r["method"] for r in bong_rows(res) if "diverged" in r["status"]]
    rows = [r for r in bong_rows(res) if np.isfinite(r["nlpd_plugin"]) and "diverged" not in r["status"]]
    if len(rows) < 2:
        return ""
    rows.sort(key=lambda r: r["nlpd_plugin"])
    best, worst = rows[0], rows[-1]
    return (f"Lowest test NLPD (plug-in) at the end of the stream: {best['method']} ({best['nlpd_plugin']:.3f}, "
            f"error {best['err_plugin']:.3f}); highest: {worst['method']} ({worst['nlpd_plugin']:.3f}). "
            "In Jones, Chang & Murphy's Figs 1-2 BONG is best or tied within each Hessian approximation, and the "
            "linearised Hessian (lin-hess) beats the sampled empirical Fisher (mc-ef)."
            + (f" Ended early because their update failed (see the status column): {', '.join(failed)}."
               if failed else ""))


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
