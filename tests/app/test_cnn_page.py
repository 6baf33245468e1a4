"""AppTest of the CNN lab page: default view, tiny VI and online runs (progress, table, charts, CSV,
gallery), extreme and bad values, recorded results from files."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.cnn_records import failing_ordering_record, smoke_records
from vilab.cnn import data, results

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "70_CNN_lab.py")


def _text(at) -> str:
    return " ".join([m.value for m in at.markdown] + [i.value for i in at.info] + [c.value for c in at.caption])


def test_default_view_device_count_and_honest_full_scale_section():
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    text = _text(at)
    assert "3,814 weights" in text and "Device: " in text  # lenet5-digits on the digits, the jax device
    if not results.full_scale():
        assert any("No GPU run has been made yet" in i.value for i in at.info)
    if results.ordering() is not None:  # the recorded cnn-digits-ordering outcome is shown
        assert any("holds" in df.value.columns for df in at.dataframe)


def test_mnist_missing_offers_digits():
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update({"ds": "mnist", "model": "bong-cnn"})
    at.run()
    assert not at.exception
    if not data.mnist_available():
        assert any("make data" in i.value and "digits" in i.value for i in at.info)
        assert "11,642 weights" in _text(at)  # bong-cnn on the 8x8 digits


@pytest.mark.slow
def test_tiny_vi_run_shows_progress_table_charts_csv_and_gallery():
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.query_params.update({"model": "mlp", "opts": "adam", "ep": "1", "ntr": "64", "bs": "32"})
    at.run()
    assert not at.exception
    at.button(key="train").click().run()
    assert not at.exception
    assert len(at.get("progress")) >= 1
    assert at.dataframe[0].value.shape[0] == 1 and "final ELBO (MC, full train)" in at.dataframe[0].value.columns
    assert len(at.download_button) == 1
    assert len(at.get("plotly_chart")) >= 6  # ELBO, NLPD, speed, two galleries, probability bars
    assert not at.warning  # no divergence, no error message
    assert at.selectbox(key="gal").value.startswith("adam | mlp on 64 digits")
    # a newer run becomes the gallery's choice
    at.multiselect(key="opts").set_value(["snngm"]).run()
    at.button(key="train").click().run()
    assert not at.exception and at.dataframe[0].value.shape[0] == 2
    assert at.selectbox(key="gal").value.startswith("snngm | mlp on 64 digits")
    # extreme values: a batch larger than the training set is explained, not a traceback
    at.selectbox(key="bs").set_value(256).run()
    at.button(key="train").click().run()
    assert not at.exception
    assert any("batch size" in w.value for w in at.warning)


@pytest.mark.slow
def test_online_run_live_chart_and_bad_npz_path():
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.query_params.update({"mode": "online (BONG family)", "model": "mlp", "om": "bong-lin-hess-diag", "T": "10",
                            "s02": "1.0"})
    at.run()
    assert not at.exception
    at.button(key="train").click().run()
    assert not at.exception
    assert at.dataframe[0].value.shape[0] == 1
    assert len(at.get("plotly_chart")) >= 3  # metrics against t, speed, gallery
    at.selectbox(key="ds").set_value("local .npz").run()
    at.text_input(key="npz").set_value("/nonexistent/file.npz").run()
    assert not at.exception
    assert at.warning  # the missing file is explained, the digits stay in use


@pytest.mark.slow
def test_recorded_results_are_shown_with_their_provenance(tmp_path, monkeypatch):
    smoke_records(tmp_path)
    failing_ordering_record(tmp_path)
    monkeypatch.setenv("VILAB_CNN_ASSETS", str(tmp_path))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    assert not any("No GPU run has been made yet" in i.value for i in at.info)
    warnings = " ".join(w.value for w in at.warning)
    assert "made on a CPU" in warnings  # a smoke test is not passed off as the papers' scale
    assert "does NOT hold" in warnings  # a failing direction is reported
    cols = [set(df.value.columns) for df in at.dataframe]
    assert any("ELBO (Tan Table 9)" in c for c in cols) and any("nlpd_plugin" in c for c in cols)
    assert len(at.get("plotly_chart")) >= 3  # Tan ELBO curves, BONG Figs 1 and 2
    assert "--allow-cpu" in _text(at)
