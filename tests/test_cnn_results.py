"""vilab.plots.cnn_results and scripts/cnn_full_scale.py: the script's files are what the page reads."""

import json
from pathlib import Path

import numpy as np
import pytest

from tests.cnn_records import failing_ordering_record, smoke_records
from vilab.plots import cnn_results

ROOT = Path(__file__).resolve().parents[1]


def test_reader_rejects_incomplete_or_broken_files(tmp_path):
    assert cnn_results.recorded(tmp_path) == [] and cnn_results.ordering(tmp_path) is None
    assert cnn_results.recorded(tmp_path / "missing") == []
    (tmp_path / "notes.json").write_text("{not json")  # not a record's name: ignored
    assert cnn_results.recorded(tmp_path) == []
    (tmp_path / "tan2025-table9-mnist-cpu.json").write_text(json.dumps({"experiment": "x", "results": []}))
    with pytest.raises(ValueError, match="lacks script, date, device, settings"):
        cnn_results.recorded(tmp_path)
    (tmp_path / "tan2025-table9-mnist-cpu.json").write_text("{not json")
    with pytest.raises(ValueError, match="cannot be read as JSON"):
        cnn_results.recorded(tmp_path)


def test_scale_notes_say_how_a_record_differs_from_the_paper():
    full = {"kind": "tan", "settings": {"data": "mnist", "n_train": 60000, "epochs": 300, "vogn_epochs": 7,
                                        "batch": 128, "elbo_draws": 100}}
    assert cnn_results.scale_notes(full) == []
    small = {"kind": "tan", "settings": dict(full["settings"], epochs=3, vogn_epochs=1, elbo_draws=10)}
    assert cnn_results.scale_notes(small) == ["3 epochs (paper: 300)", "1 VOGN epochs (paper: 7)",
                                          "10 draws of the final ELBO (ours: 100)"]
    bong = {"kind": "bong", "settings": {"data": "digits", "T": 1000, "n_samples": 100, "n_mc": 100, "n_test": 1000,
                                         "seeds": [0]}}
    assert cnn_results.scale_notes(bong) == ["data digits (paper: mnist)", "1,000 stream length T (paper: 2,000)",
                                         "1 seeds (paper: 3)"]


def test_assets_folder_can_be_redirected(monkeypatch, tmp_path):
    assert cnn_results.assets_dir() == ROOT / "assets" / "cnn"
    monkeypatch.setenv("VILAB_CNN_ASSETS", str(tmp_path))
    assert cnn_results.assets_dir() == tmp_path
    failing_ordering_record(tmp_path)
    rows = cnn_results.ordering_rows(cnn_results.ordering())
    assert [r["holds"] for r in rows] == [False, True] and rows[0]["computed"] == -12.5


def test_recorded_digits_ordering_if_present():
    rec = cnn_results.ordering(ROOT / "assets" / "cnn")
    if rec is None:
        pytest.skip("assets/cnn/digits-ordering.json has not been recorded")
    rows = cnn_results.ordering_rows(rec)
    assert len(rows) == 2 and all(isinstance(r["holds"], bool) and np.isfinite(r["computed"]) for r in rows)
    assert "--only digits" in rec["script"] and rec["settings"]["vi"]["seeds"] == [0, 1, 2]


@pytest.mark.slow
def test_script_smoke_run_writes_what_the_page_reads(tmp_path):
    smoke_records(tmp_path)
    recs = cnn_results.recorded(tmp_path)
    assert [(r["kind"], r["file"], r["full"]) for r in recs] == [
        ("tan", "tan2025-table9-mnist-cpu.json", False), ("bong", "bong-figs12-mnist-cpu.json", False)]
    tan, bong = recs
    assert "1 epochs (paper: 300)" in cnn_results.scale_notes(tan) and "data digits (paper: mnist)" in cnn_results.scale_notes(tan)
    for r in (tan, bong):
        assert r["device_info"]["platform"] == "cpu" and "--allow-cpu" in r["script"] and r["date"].startswith("20")
    rows = cnn_results.tan_rows(tan)
    assert len(rows) == 1 and rows[0]["ELBO (Tan Table 9)"] == -50535 and rows[0]["paper seconds"] == 603
    assert np.isfinite(rows[0]["ELBO (ours)"]) and rows[0]["status"] == "max_steps"
    curves = cnn_results.tan_curves(tan)
    assert curves[0]["optimizer"] == "adam" and curves[0]["elbo_epoch"].shape == (1,)
    assert curves[0]["label"] == rows[0]["optimizer"] == "Adam, α = 0.001"  # the lab's own name of the method
    assert curves[0]["test_err"].shape == (2,)  # the start and one epoch
    assert cnn_results.tan_notice(tan) == ""  # one optimizer: no order to tell
    assert cnn_results.bong_notice(bong).startswith("Lowest test NLPD (plug-in) at the end of the stream: ")
    assert tan["settings"]["model"] == "lenet5-digits" and tan["settings"]["data"] == "digits"
    brows = {r["method"]: r for r in cnn_results.bong_rows(bong)}
    assert set(brows) == {"bong-lin-hess-dlr-10", "bog-lin-hess-dlr-10", "bong-lin-hess-diag"}
    assert all(r["seeds"] == 2 and np.isfinite(r["nlpd_plugin"]) and r["ms/step"] > 0 for r in brows.values())
    figs = cnn_results.bong_figures(bong)
    assert [len(g) for _, g in figs] == [2, 2]  # Fig. 1: the dlr-10 methods; Fig. 2: the bong methods
    assert figs[0][1][0]["checkpoints"][-1] == 10 and figs[0][1][0]["metrics"]["nlpd_plugin"].shape == (11,)


def test_a_curve_far_off_the_others_scale_is_set_apart():
    curves = [{"label": k, "elbo_epoch": np.array(v)} for k, v in
              [("a", [-3e5, -2.5e5]), ("b", [-2.6e5, -2.1e5]), ("c", [-4e5, np.nan]), ("pga", [-3e10, -2.9e10])]]
    kept, far = cnn_results.on_one_scale(curves)
    assert [c["label"] for c in kept] == ["a", "b", "c"] and [c["label"] for c in far] == ["pga"]
    assert cnn_results.on_one_scale(curves[:2]) == (curves[:2], [])  # too few to judge: all kept
    rows = [dict(key=k, optimizer=f"{n} (alpha=0.001)", final_elbo=e, paper_elbo=p, test_error=0.02)
            for k, n, e, p in [("adam", "Adam", -2e5, -50535), ("adam-natural", "Adam (natural gradients)", -1e5, -50786)]]
    text = cnn_results.tan_notice({"results": rows})
    assert text.startswith("Final ELBO, highest first: natural-gradient Adam > Adam here; Adam > natural-gradient "
                           "Adam in Tan's Table 9.")
