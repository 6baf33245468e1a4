"""AppTest of the "your CSV file" data choice on Adam vs SNNGM and Trajectories (issue 19, item 4):
a valid file gives a fit; malformed, oversized, non-CSV and otherwise unusable files give a clear
message each, no exception, and the page keeps its default data."""

import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.app.charts import charts

PAGES = Path(__file__).resolve().parents[2] / "pages"
ADAM = str(PAGES / "30_Adam_vs_SNNGM.py")
TRAJ = str(PAGES / "20_Trajectories.py")


def _csv(n=80, family="logistic", seed=0, header=("y", "x1", "x2")) -> bytes:
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    eta = 0.3 + 0.8 * x1 - 0.5 * x2
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(int) if family == "logistic" else rng.poisson(np.exp(eta))
    return (",".join(header) + "\n" + "\n".join(f"{a},{b:.5f},{c:.5f}" for a, b, c in zip(y, x1, x2)) + "\n").encode()


# each: (file name, bytes, words the warning must contain)
BAD_FILES = [
    ("broken.csv", b"y,x1,x2\n" + b"1,0.5,0.2\n" * 5 + b"0,1,2,3\n" + b"1,0.5,0.2\n" * 6, "not a well-formed CSV"),
    ("huge.csv", b"y,x1,x2\n" + b"1,0.5000000,0.2000000\n" * (5 * 2**20 // 22 + 100), "at most 5 MB"),
    ("picture.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)), "not a CSV file"),
    ("latin.csv", "y,x1,x2\n1,caf\xe9,2\n".encode("latin-1"), "not UTF-8"),
    ("noheader.csv", b"1,0.5,0.2\n" * 12, "no header row"),
    ("holes.csv", b"y,x1,x2\n" + b"1,0.5,0.2\n0,0.1,0.3\n" * 6 + b"1,,0.2\n", "1 missing value in 1 row (rows 14"),
    ("counts.csv", _csv(family="poisson"), "must be 0 or 1"),
]


def _text(at):
    return " ".join(str(m.value) for m in list(at.markdown) + list(at.caption) + list(at.warning) + list(at.info)
                    + list(at.error))


def _figs(at):
    return [json.loads(c.spec) for c in charts(at)]


def _app(page, **params):
    at = AppTest.from_file(page, default_timeout=300)
    for k, v in params.items():
        at.query_params[k] = v if isinstance(v, list) else str(v)
    at.run()
    assert not at.exception, at.exception
    return at


def _fit(at):
    """Press Trajectories' Fit (its fits on your data run on request, within a time budget)."""
    at.button(key="tr_fit").click().run()
    assert not at.exception, at.exception
    assert not any("Press Fit" in i.value for i in at.info), [i.value for i in at.info]
    return at


def _upload(at, key, name, raw):
    at.file_uploader(key=key).upload(name, raw).run()
    assert not at.exception, at.exception
    return at


def test_adam_vs_snngm_fits_your_csv_and_bad_files_leave_the_simulated_data():
    at = _app(ADAM, view="2-D logistic regression", d2="your CSV file", opt=["snngm", "adam"], nit=50)
    text = _text(at)
    assert "at most 5 MB" in text and "uploads the file again" in text  # the limits and the URL's limit are stated
    assert "until then the page shows the simulated data" in text
    assert _figs(at)[0]["layout"]["xaxis"]["title"]["text"] == "θ₁ (intercept)"
    _upload(at, "csv_upload_2d", "my.csv", _csv())
    assert not at.warning, [w.value for w in at.warning]
    assert "80 rows, d = 3 coefficients" in _text(at)
    at.button(key="fit2d_fit").click().run()  # your data are fitted when Fit is pressed
    assert not at.exception and not at.warning, [w.value for w in at.warning]
    assert at.selectbox(key="resp").value == "y" and at.multiselect(key="pred").value == ["x1", "x2"]
    fig = _figs(at)[0]
    assert fig["layout"]["xaxis"]["title"]["text"] == "θ: intercept"
    assert fig["layout"]["yaxis"]["title"]["text"] == "θ: x1"
    runs = {d["name"] for d in fig["data"] if d.get("mode") == "lines" and d.get("name")}
    assert {"SNNGM", "Adam"} <= runs, runs
    assert fig["data"][0]["type"] == "contour" and fig["data"][0]["name"] == "posterior, slice"
    assert "slice" in _text(at)
    # the shown pair moves with the two selects, and the URL keeps every choice
    at.selectbox(key="cy").set_value(2).run()
    assert not at.exception and _figs(at)[0]["layout"]["yaxis"]["title"]["text"] == "θ: x2"
    for k, v in dict(d2="your CSV file", resp="y", fam="logistic", std="1", icpt="1", cy="2").items():
        assert at.query_params[k] in (v, [v]), k
    for name, raw, says in BAD_FILES:
        _upload(at, "csv_upload_2d", name, raw)
        assert any(says in w.value for w in at.warning), (name, [w.value for w in at.warning])
        assert "until the file" in _text(at)
        fig = _figs(at)[0]  # the simulated data again, the page otherwise as it was
        assert fig["layout"]["xaxis"]["title"]["text"] == "θ₁ (intercept)", name
        assert at.select_slider(key="a2snngm").value == 0.01 and at.slider(key="nit").value == 50


def test_missing_values_can_be_dropped_and_choices_come_from_the_url():
    raw = _csv(family="poisson", header=("n", "x1", "x2"))
    lines = raw.decode().splitlines()
    lines[5] = lines[5].split(",")[0] + ",,0.1"
    raw = ("\n".join(lines) + "\n").encode()
    at = _app(ADAM, view="2-D logistic regression", d2="your CSV file", opt=["snngm"], nit=50, fam="poisson",
              resp="n", pred=["x2"], icpt="1", std="0")
    _upload(at, "csv_upload_2d", "counts.csv", raw)
    assert not at.warning, [w.value for w in at.warning]  # x1 (with the hole) is not used: nothing missing
    assert at.radio(key="fam").value == "poisson" and at.multiselect(key="pred").value == ["x2"]
    assert at.checkbox(key="std").value is False and "d = 2 coefficients" in _text(at)
    at.multiselect(key="pred").set_value(["x1", "x2"]).run()
    assert any("missing value" in w.value and "drop the rows" in w.value for w in at.warning)
    at.checkbox(key="drop").check().run()
    assert not at.exception and not at.warning
    assert "79 rows, d = 3 coefficients, 1 rows with missing values left out" in _text(at)
    # a text-only choice: the predictors cannot be empty without an intercept
    at.checkbox(key="icpt").uncheck().run()
    at.multiselect(key="pred").set_value([]).run()
    assert not at.exception and any("at least one predictor" in w.value for w in at.warning)


def test_hostile_column_names_are_shown_as_plain_text():
    raw = _csv(header=("y", "[click](http://x.example)", "<b>x2</b>"))
    at = _app(ADAM, view="2-D logistic regression", d2="your CSV file", opt=["snngm"], nit=50)
    _upload(at, "csv_upload_2d", "[evil](http://x.example).csv", raw)
    assert not at.warning, [w.value for w in at.warning]
    at.button(key="fit2d_fit").click().run()
    fig = _figs(at)[0]
    assert "<b>" not in json.dumps(fig["layout"]) and "](" not in fig["layout"]["yaxis"]["title"]["text"]
    at.selectbox(key="resp").set_value("[click](http://x.example)").run()
    assert not at.exception
    warn = " ".join(w.value for w in at.warning)
    assert "must be 0 or 1" in warn
    assert "` '[click](http://x.example)' `" in warn and warn.count("](") == 1  # as code, never a link


@pytest.mark.slow
def test_real_data_view_runs_the_comparison_on_your_csv():
    at = _app(ADAM, view="Real data", ds="your CSV file", opt3=["snngm"], cov=["diagonal"], est3=["second"], ep=50)
    assert "until then the page shows the breast cancer data" in _text(at)
    _upload(at, "csv_upload_rd", "counts.csv", _csv(n=120, family="poisson", header=("n", "x1", "x2")))
    assert at.radio(key="fam").value == "logistic"
    at.radio(key="fam").set_value("poisson").run()
    assert not at.exception and not at.warning and "120 rows, d = 3" in _text(at)
    at.button(key="rd_run").click().run()
    assert not at.exception, at.exception
    assert list(at.dataframe[0].value["optimizer"]) == ["SNNGM 2"]
    assert len(charts(at)) == 1
    _upload(at, "csv_upload_rd", "bad.csv", b"n,x\n1,2\n")
    assert any("needs at least 10" in w.value for w in at.warning)
    assert any("settings changed" in i.value for i in at.info)  # the finished runs stay, marked as out of date


def test_trajectories_fit_your_csv_in_three_dimensions_and_show_two():
    at = _app(TRAJ, tgt="your CSV file", m=["vn", "gd-mc"], fam="poisson", **{"s_gd-mc": "0.001"})
    assert "until then the page shows the linear regression (T2)" in _text(at)
    _upload(at, "csv_upload_tr", "counts.csv", _csv(family="poisson", header=("n", "x1", "x2")))
    assert not at.warning, [w.value for w in at.warning]
    assert any("Press Fit" in i.value for i in at.info) and not charts(at)  # fitted when Fit is pressed
    _fit(at)
    assert at.selectbox(key="resp").value == "n"  # the column of counts
    assert at.number_input(key="cm1").value == 0.0 and at.number_input(key="cm2").value == 0.0  # from the prior mean
    text = _text(at)
    assert "the runs fit all 3" in text and "slice" in text and "not the marginal posterior" in text
    fig = _figs(at)[0]
    assert fig["layout"]["xaxis"]["title"]["text"] == "θ: intercept" and fig["data"][0]["type"] == "contour"
    paths = [d for d in fig["data"] if d.get("mode") == "lines+markers"]
    assert len(paths) == 2 and all(len(d["x"]) > 1 for d in paths)
    df = at.dataframe[0].value
    assert list(df["status"]) == ["converged", "converged"], df
    # two coefficients: the exact posterior, every view
    at.multiselect(key="pred").set_value(["x2"]).run()
    _fit(at)
    assert not at.exception and "grey contours of the exact posterior" in _text(at)
    for view in ("animation", "step-size sweep"):
        at.radio(key="view").set_value(view).run()
        assert not at.exception, (view, at.exception)
        _fit(at)
        assert charts(at), view
    at.radio(key="view").set_value("paths").run()
    for name, raw, says in BAD_FILES[:3]:
        _upload(at, "csv_upload_tr", name, raw)
        assert any(says in w.value for w in at.warning), (name, [w.value for w in at.warning])
        assert "Kumar T2" in _text(at)  # the default target again
