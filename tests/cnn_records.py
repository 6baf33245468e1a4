"""Recorded-results files for the CNN tests, written by scripts/cnn_full_scale.py itself in a tiny
CPU smoke run (digits, one epoch, a few stream steps), so the tests read exactly what the script writes."""

from __future__ import annotations

import importlib.util
import json
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("cnn_full_scale", ROOT / "scripts" / "cnn_full_scale.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_MADE: list[Path] = []  # one smoke run per test process, copied to each test's folder


def smoke_records(folder: Path) -> Path:
    """tan2025-table9-mnist-cpu.json and bong-figs12-mnist-cpu.json from a smoke run of the script, in ``folder``."""
    if not _MADE:
        out = Path(tempfile.mkdtemp(prefix="vilab-cnn-records-"))
        main = _script().main
        common = ["--data", "digits", "--allow-cpu", "--out", str(out)]
        main(["--only", "tan", "--epochs", "1", "--optimizers", "adam", "--elbo-draws", "2", *common])
        main(["--only", "bong", "--methods", "bong-lin-hess-dlr-10", "bog-lin-hess-dlr-10", "bong-lin-hess-diag",
              "--seeds", "0", "1", "--T", "10", "--n-test", "30", "--n-mc", "3", "--n-samples", "3", *common])
        _MADE.append(out)
    for f in _MADE[0].glob("*.json"):
        shutil.copy(f, folder)
    return folder


def failing_ordering_record(folder: Path) -> Path:
    """A digits-ordering.json (vilab.repro Result.as_dict layout) in which the first direction fails."""
    checks = [{"quantity": "final ELBO: SNNGM - Adam", "paper": "> 0", "computed": -12.5, "tol": 0.0, "rel": False,
               "pass": False, "note": "SNNGM below Adam here"},
              {"quantity": "test NLPD at t = T: dlr-10 lin-hess - diag mc-ef", "paper": "< 0", "computed": -1.0,
               "tol": 0.0, "rel": False, "pass": True, "note": "holds"}]
    rec = {"experiment": "cnn-digits-ordering", "script": "scripts/cnn_full_scale.py --only digits",
           "date": "2026-01-01T00:00:00+00:00", "device": "1 x cpu (cpu, jax test)", "settings": {},
           "results": {"name": "cnn-digits-ordering", "pass": False, "checks": checks}}
    (folder / "digits-ordering.json").write_text(json.dumps(rec))
    return folder
