"""AppTest of the time budget of fits on a user's data (issue 41): on Trajectories and Adam vs SNNGM a CSV file is
fitted when Fit (Run comparison in the real-data view) is pressed, for at most vilab_ui.csv_data.FIT_BUDGET_S seconds per press (as the CNN lab trains when Train is
pressed); a fit cut short by the budget is shown and said, not kept, and the next press goes on; Stop starts
nothing."""

from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from tests.app.charts import charts
from vilab_ui import csv_data

TRAJ = str(Path(__file__).resolve().parents[2] / "pages" / "20_Trajectories.py")
ADAM = str(Path(__file__).resolve().parents[2] / "pages" / "30_Adam_vs_SNNGM.py")


def _csv(n=400, p=3, seed=7) -> bytes:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(0.2 + X @ np.linspace(0.5, -0.5, p))))).astype(int)
    head = "y," + ",".join(f"x{k + 1}" for k in range(p))
    return (head + "\n" + "\n".join(f"{a}," + ",".join(f"{v:.4f}" for v in row) for a, row in zip(y, X))).encode()


def _page():
    at = AppTest.from_file(TRAJ, default_timeout=600)
    at.query_params.update({"tgt": "your CSV file", "m": ["gd-mc", "bwgd"], "n": "3000", "tol": "1e-12",
                            "s_gd-mc": "0.0001", "s_bwgd": "0.0001"})  # slow steps: no early convergence
    at.run()
    at.file_uploader(key="csv_upload_tr").upload("mine.csv", _csv()).run()
    assert not at.exception, at.exception
    return at


def _infos(at):
    return [i.value for i in at.info]


def test_fits_on_your_data_run_on_fit_within_the_budget(monkeypatch):
    at = _page()
    assert any("Press Fit" in i and "2 of 2 fits" in i for i in _infos(at)), _infos(at)
    assert not charts(at)  # nothing computed on upload
    assert "at most 90 seconds" in " ".join(c.value for c in at.caption)
    at.button(key="tr_stop").click().run()  # Stop starts nothing
    assert not at.exception and not charts(at) and any("Press Fit" in i for i in _infos(at))

    monkeypatch.setattr(csv_data, "FIT_BUDGET_S", 1e-3)  # a budget spent in the first chunk of steps
    at.button(key="tr_fit").click().run()
    assert not at.exception, at.exception
    warn = [w.value for w in at.warning]
    assert any("at most 0.001 seconds" in w and "cut short: GD in (m, C)" in w and "not run: BW-GD" in w
               for w in warn), warn
    assert any("Press Fit" in i and "2 of 2 fits" in i for i in _infos(at)), _infos(at)  # a cut fit is not kept
    df = at.dataframe[0].value  # ... but shown, as far as it got
    assert list(df["status"]) == ["ran out of time"], df

    monkeypatch.setattr(csv_data, "FIT_BUDGET_S", 600.0)
    at.button(key="tr_fit").click().run()
    assert not at.exception and not at.warning, [w.value for w in at.warning]
    assert not any("Press Fit" in i for i in _infos(at))
    df = at.dataframe[0].value
    assert len(df) == 2 and "ran out of time" not in list(df["status"]), df
    at.run()  # a rerun without a press shows the kept fits
    assert charts(at) and len(at.dataframe[0].value) == 2


def _adam(**params):
    at = AppTest.from_file(ADAM, default_timeout=600)
    at.query_params.update(params)
    at.run()
    return at


def test_adam_vs_snngm_fits_your_data_on_fit_within_the_budget(monkeypatch):
    at = _adam(view="2-D logistic regression", d2="your CSV file", opt=["snngm", "adam"], nit="3000")
    at.file_uploader(key="csv_upload_2d").upload("mine.csv", _csv(seed=11)).run()
    assert not at.exception, at.exception
    assert any("Press Fit" in i and "2 of 2 runs" in i for i in _infos(at)), _infos(at)
    assert not charts(at)  # nothing computed on upload, and the sweep waits for its own Fit too
    assert "sweep_result" not in at.session_state

    monkeypatch.setattr(csv_data, "FIT_BUDGET_S", 1e-3)  # spent in the first chunk of iterations
    at.button(key="fit2d_fit").click().run()
    assert not at.exception, at.exception
    warn = [w.value for w in at.warning]
    assert any("at most 0.001 seconds" in w and "cut short: SNNGM" in w and "not run: Adam" in w for w in warn), warn
    assert any("Press Fit" in i and "2 of 2 runs" in i for i in _infos(at)), _infos(at)  # a cut run is not kept

    monkeypatch.setattr(csv_data, "FIT_BUDGET_S", 600.0)
    at.button(key="fit2d_fit").click().run()
    assert not at.exception and not at.warning, [w.value for w in at.warning]
    assert charts(at) and not any("2 of 2 runs" in i for i in _infos(at)), _infos(at)
    at.run()  # kept: a rerun without a press draws them
    assert charts(at) and not at.exception


def test_adam_vs_snngm_real_data_comparison_on_your_data_keeps_to_the_budget(monkeypatch):
    at = _adam(view="Real data", ds="your CSV file", opt3=["snngm", "adam"], cov=["diagonal"], est3=["second"],
               ep="3000")
    at.file_uploader(key="csv_upload_rd").upload("mine.csv", _csv(seed=12)).run()
    assert not at.exception, at.exception
    monkeypatch.setattr(csv_data, "FIT_BUDGET_S", 1e-3)
    at.button(key="rd_run").click().run()
    assert not at.exception, at.exception
    warn = " ".join(w.value for w in at.warning)
    assert "at most 0.001 seconds" in warn and "cut short: Adam 2, diagonal" in warn and "not run: SNNGM 2" in warn, warn
    assert not at.session_state["rd_results"]["runs"]  # a run cut short is not reported as a result
