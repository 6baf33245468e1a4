"""AppTest of the Stability atlas page: default view, extreme widget values, a clicked cell -> the link to its
run on Trajectories (whose query string opens the same run there: same count)."""

import base64
import json
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.app.charts import charts

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "22_Stability_atlas.py")
TRAJ = str(ROOT / "pages" / "20_Trajectories.py")
LINK = re.compile(r"\[Open this run on Trajectories\]\((Trajectories\?[^)]*)\)")

pytestmark = pytest.mark.slow  # each view compiles a method's vmapped loop once


def _app(pick=None, **params):
    at = AppTest.from_file(PAGE, default_timeout=600)
    for k, v in params.items():
        at.query_params[k] = str(v)
    if pick is not None:
        at.session_state["atlas_pick"] = pick
    return at.run()


def _arr(v):
    """A Plotly data array as a list (plain list, or Plotly's typed array {"dtype", "bdata"})."""
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).tolist()
    return v


def _figure(at):
    fig = json.loads(charts(at)[0].spec)
    for d in fig["data"]:
        for k in ("x", "y"):
            if k in d:
                d[k] = _arr(d[k])
    return fig


def _notice(at):
    return next(i.value for i in at.info if "What to notice" in i.value)


def test_default_view():
    at = _app()
    assert not at.exception and not at.error and not at.warning
    fig = _figure(at)
    names = [d.get("name") for d in fig["data"]]
    assert {"cells", "Thm 2 guarantee: η > 0", "SR-VN limit (linearised)"} <= set(names)
    heat = [d for d in fig["data"] if d["type"] == "heatmap"]
    assert len(heat[0]["x"]) == 19 and len(heat[0]["y"]) == 14  # 18 step sizes x 13 condition numbers (edges)
    cells = next(d for d in fig["data"] if d.get("name") == "cells")
    assert len(cells["x"]) == 18 * 13
    notice = _notice(at)
    assert "SR-VN: at κ = 1 its fastest run takes 8 iterations (ρ = 1)" in notice
    assert "Thm 2 guarantees a linear rate only for ρ < 0.02" in notice
    assert any("Click a cell" in c.value for c in at.caption)
    assert not any(LINK.search(m.value) for m in at.markdown)
    text = " ".join(str(m.value) for m in list(at.markdown) + list(at.caption) + list(at.info))
    assert "vilab." not in text and "srvn" not in text


def test_extreme_values():
    at = _app(m="vn", n=100, c0=5.0, tol=1e-12, klo=1000.0, khi=1.0, all=1, m1=10.0, m2=-10.0)
    assert not at.exception and not at.error
    names = [d.get("name") for d in _figure(at)["data"]]
    assert "ρ < 1/λ_max" in names and "ρ < min(2/λ_max, 4/λ_max²)" in names  # every method's limits
    at = _app(m="gd-mv", klo=1000.0, khi=1000.0, c0=0.05)  # one row
    assert not at.exception and not at.error
    heat = [d for d in _figure(at)["data"] if d["type"] == "heatmap"]
    assert len(heat[0]["y"]) == 2
    assert "κ = 1000" in _notice(at)


def test_a_clicked_cell_links_to_the_same_run_on_trajectories():
    at = _app(pick=(0.316, 31.6))
    assert not at.exception and not at.error
    line = next(m.value for m in at.markdown if "Open this run" in m.value)
    said = re.search(r"converged in (\d+) iterations", line)
    assert said and "ρ = 0.316, κ = 31.6" in line
    query = parse_qs(urlsplit(LINK.search(line).group(1)).query)
    assert {k: v[0] for k, v in query.items()} == {
        "tgt": "correlated Gaussian", "kappa": "31.6", "m": "srvn", "s_srvn": "0.316", "c0": "0.2", "m1": "-2",
        "m2": "2.5", "n": "1000", "tol": "1e-08", "g_srvn": "exact", "view": "paths"}
    sel = next(d for d in _figure(at)["data"] if d.get("name") == "selected run")
    assert sel["x"] == [0.316] and sel["y"] == [31.6]
    assert any("Thm 2 at this cell" in c.value and "says nothing" in c.value for c in at.caption)
    # the link opens that run on Trajectories: same settings, same count
    tr = AppTest.from_file(TRAJ, default_timeout=600)
    for k, v in query.items():
        tr.query_params[k] = v[0]
    tr.run()
    assert not tr.exception
    assert tr.selectbox(key="tgt").value == "correlated Gaussian"
    assert tr.select_slider(key="kappa").value == 31.6 and tr.select_slider(key="s_srvn").value == 0.316
    assert tr.multiselect(key="m").value == ["srvn"]
    df = tr.dataframe[0].value
    assert list(df["iterations"]) == [int(said.group(1))]
    # a smaller step size: Thm 2 applies at this cell
    at = _app(pick=(0.001, 1.0))
    assert any("Thm 2 at this cell: η = " in c.value and "1 − 2ηδ" in c.value for c in at.caption)
