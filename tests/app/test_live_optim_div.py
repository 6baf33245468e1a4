"""Live stepping on Adam vs SNNGM ("Step by step" view) and on Divergences ("Batch step by step" tab), issue 15
item 1: Step, Step ×10, Reset, a step size changed mid-run (the path drawn equals a direct run resumed with the
new setting at that iteration, read from the figure's data), the shared link, hostile ``it`` / ``step`` / ``lr``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.app.charts import charts
from tests.app.live_helpers import app as _app
from tests.app.live_helpers import arr as _arr
from tests.app.live_helpers import ok as _ok
from vilab.algorithms import optim
from vilab.core import as_key, resume, run
from vilab.divergences import stochastic as dvs
from vilab.targets import gaussian_target
from vilab.targets import regression as R

PAGES = Path(__file__).resolve().parents[2] / "pages"
ADAM, DIV = str(PAGES / "30_Adam_vs_SNNGM.py"), str(PAGES / "40_Divergences.py")
LIVE_VIEW, LIVE_TAB = "Step by step", "Batch step by step"


def _spec(at, key):
    (chart,) = [c for c in charts(at) if c.id.endswith(key) or key in c.id]
    return json.loads(chart.spec)


def _param(at, key):
    v = at.query_params.get(key)
    return v[0] if isinstance(v, list) else v


def _lines(spec, name):
    """The first "lines" trace called ``name`` (a method's path), as an (n, 2) array."""
    tr = next(d for d in spec["data"] if d.get("name") == name and d.get("mode") == "lines")
    return np.column_stack([_arr(tr["x"]), _arr(tr["y"])])


def _stars(spec, group):
    """The markers of a method's step-size changes (named "<method>: <symbol> changed")."""
    return [d for d in spec["data"] if d.get("legendgroup") == group and str(d.get("name", "")).endswith("changed")]


def _texts(star):
    return [str(t).replace(" ", "") for t in star["text"]]


# ------------------------------------------------------------------------------------------ Adam vs SNNGM
def _adam_direct(name, n_first, n_more, alpha0, alpha1):
    """The page's run of ``name`` (2-D logistic regression, seed 0) with alpha0 for n_first steps, then alpha1."""
    alg = optim.algorithm(R.logistic_2d(), name, param="chol_cov", estimator="second")
    key = as_key(0)
    tr = run(alg, key, alg.init(key, (np.zeros(2), 0.5 * np.eye(2)), alpha=alpha0), n_first)
    return tr if not n_more else resume(alg, tr, n_more, hyper={"alpha": alpha1})


def test_adam_default_view_has_no_live_state():
    at = _app(ADAM)
    _ok(at)
    assert LIVE_VIEW in at.radio(key="view").options
    assert "it" not in at.query_params and "lr" not in at.query_params
    assert not [b for b in at.button if str(b.key).startswith("ls_")]


def test_adam_step_step10_reset_and_alpha_change_mid_run():
    at = _app(ADAM, view=LIVE_VIEW)
    _ok(at)
    assert _param(at, "it") == "0" and at.multiselect(key="optl").value == ["adam", "snngm"]
    at.button(key="ls_step").click().run()
    _ok(at)
    assert _param(at, "it") == "1" and len(_lines(_spec(at, "live2d"), "SNNGM")) == 2
    at.button(key="ls_step10").click().run()
    assert _param(at, "it") == "11" and len(_lines(_spec(at, "live2d"), "Adam")) == 12
    at.button(key="ls_reset").click().run()
    _ok(at)
    assert _param(at, "it") == "0" and "lr" not in at.query_params
    at.button(key="ls_step10").click().run()
    at.button(key="ls_step").click().run()
    # SNNGM's alpha0 from 0.01 to 0.1 at iteration 11, then ten more steps
    at.select_slider(key="lsnngm").set_value(0.1).run()
    _ok(at)
    assert _param(at, "lr") == "snngm@0:0.01,11:0.1" and _param(at, "it") == "11"
    at.button(key="ls_step10").click().run()
    _ok(at)
    assert _param(at, "it") == "21"
    spec = _spec(at, "live2d")
    got = _lines(spec, "SNNGM")
    direct = np.asarray(_adam_direct("snngm", 11, 10, 0.01, 0.1).mean)
    assert got.shape == (22, 2)
    np.testing.assert_allclose(got, direct, rtol=1e-12, atol=1e-14)
    straight = np.asarray(_adam_direct("snngm", 21, 0, 0.01, None).mean)
    assert not np.allclose(got[13:], straight[13:])  # the bend is real
    np.testing.assert_allclose(_lines(spec, "Adam"), np.asarray(_adam_direct("adam", 21, 0, 0.01, None).mean),
                               rtol=1e-12, atol=1e-14)  # Adam's alpha did not change
    (star,) = _stars(spec, "snngm")
    assert _texts(star) == ["α=0.1"] and _arr(star["x"])[0] == got[11, 0]
    assert not _stars(spec, "adam")
    # the shared link opens at that step with the same bend
    fresh = _app(ADAM, **{k: (list(v) if isinstance(v, list) else v) for k, v in at.query_params.items()})
    _ok(fresh)
    assert _param(fresh, "it") == "21"
    np.testing.assert_array_equal(_lines(_spec(fresh, "live2d"), "SNNGM"), got)


def test_adam_live_extreme_alphas_and_every_optimizer():
    at = _app(ADAM, view=LIVE_VIEW, optl=list(optim.OPTIMIZERS), ladam="10", lsnngm="0.0001", lvogn="10")
    _ok(at)
    for _ in range(2):
        at.button(key="ls_step10").click().run()
        _ok(at)
    assert _param(at, "it") == "20"
    at.multiselect(key="optl").set_value([]).run()  # nothing chosen: a sentence, no figure
    _ok(at)
    assert any("at least one optimizer" in i.value for i in at.info)


@pytest.mark.parametrize("it, lr", [("-3", "snngm@0:1e400"), ("1e9", "<script>alert(1)</script>"),
                                    ("abc", "snngm@5:0.1"), ("5000", "adam@0:0.01,3:nan;;@@"),
                                    ("", "snngm@0:0.01,2:0.1,1:0.2")])
def test_adam_hostile_live_urls_fall_back(it, lr):
    at = _app(ADAM, view=LIVE_VIEW, it=it, lr=lr)
    _ok(at)
    assert _param(at, "it") == "0" and "lr" not in at.query_params


def test_adam_shared_link_opens_at_its_step():
    at = _app(ADAM, view=LIVE_VIEW, it="7", lr="adam@0:0.01,3:0.1", ladam="0.1")  # as the app writes it
    _ok(at)
    assert _param(at, "it") == "7" and _param(at, "lr") == "adam@0:0.01,3:0.1"
    got = _lines(_spec(at, "live2d"), "Adam")
    np.testing.assert_allclose(got, np.asarray(_adam_direct("adam", 3, 4, 0.01, 0.1).mean), rtol=1e-12, atol=1e-14)


# ------------------------------------------------------------------------------------------ Divergences
def _div_direct(method, n_first, n_more, v0, v1):
    """The tab's run of ``method`` on N(2, 1.5) from N(-2, 1), B = 5, seed 0: v0 for n_first steps, then v1."""
    tg = gaussian_target(np.array([2.0]), cov=np.array([[1.5]]))
    key = as_key(0)
    if method == "bam":
        alg, name = dvs.bam(tg, batch_size=5), "lr_scale"
        state = alg.init(key, (np.array([-2.0]), np.eye(1)), lr_scale=v0)
    else:
        alg, name = dvs.algorithm(tg, method, batch_size=5), "learning_rate"
        state = alg.init(key, (np.array([-2.0]), np.eye(1)), learning_rate=v0)
    tr = run(alg, key, state, n_first)
    return tr if not n_more else resume(alg, tr, n_more, hyper={name: v1})


def _div_path(spec, label):
    """(mean, variance) path of a method in the right panel (the second "lines" trace of that name)."""
    trs = [d for d in spec["data"] if d.get("name") == label and d.get("mode") == "lines"]
    tr = trs[-1]
    return np.column_stack([_arr(tr["x"]), _arr(tr["y"])])


def test_divergences_batch_tab_steps_and_a_learning_rate_change_mid_run():
    from vilab import plots

    at = _app(DIV, tab=LIVE_TAB)
    _ok(at)
    assert _param(at, "step") == "0" and "it" not in at.query_params  # ?it= stays the Batch tab's slider
    at.button(key="lb_step10").click().run()
    at.button(key="lb_step").click().run()
    _ok(at)
    assert _param(at, "step") == "11"
    at.select_slider(key="lsdb").set_value(10.0).run()
    at.run()  # AppTest keeps only the fragment's elements after a fragment rerun: draw the whole page again
    at.select_slider(key="lbam").set_value(0.1).run()
    _ok(at)
    assert _param(at, "lr") in ("bam@0:5,11:0.1;sdb@0:1,11:10", "sdb@0:1,11:10;bam@0:5,11:0.1")
    at.button(key="lb_step10").click().run()
    _ok(at)
    assert _param(at, "step") == "21"
    spec = _spec(at, "live_batch")
    for code, v0, v1 in (("sdb", 1.0, 10.0), ("bam", 5.0, 0.1), ("fdb", 1.0, None)):
        got = _div_path(spec, plots.label(code))
        tr = _div_direct(code, 11, 10, v0, v1) if v1 else _div_direct(code, 21, 0, v0, None)
        want = np.column_stack([np.asarray(tr.mean)[:, 0], np.asarray(tr.cov)[:, 0, 0]])
        assert got.shape == (22, 2)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    straight = _div_direct("sdb", 21, 0, 1.0, None)
    assert not np.allclose(_div_path(spec, plots.label("sdb"))[13:, 0], np.asarray(straight.mean)[13:, 0])
    (star,) = _stars(spec, "sdb")
    assert _texts(star) == ["lr=10"]
    assert not _stars(spec, "fdb")
    at.button(key="lb_reset").click().run()
    _ok(at)
    assert _param(at, "step") == "0" and "lr" not in at.query_params


@pytest.mark.parametrize("step, lr", [("-1", "sdb@0:1e999"), ("99999", "<img src=x>"), ("x", "bam@0:0,1:-5"),
                                      ("3.5", "sdb@0:1,5:2,5:3")])
def test_divergences_hostile_live_urls_fall_back(step, lr):
    at = _app(DIV, tab=LIVE_TAB, step=step, lr=lr, lsdb="1e400", lbam="-2")
    _ok(at)
    assert _param(at, "step") == "0" and "lr" not in at.query_params
    assert at.select_slider(key="lsdb").value == 1.0 and at.select_slider(key="lbam").value == 5.0


@pytest.mark.parametrize("page, query", [(ADAM, {"view": LIVE_VIEW, "optl": list(optim.OPTIMIZERS), "it": "3"}),
                                         (DIV, {"tab": LIVE_TAB, "step": "3"})], ids=["adam", "divergences"])
def test_live_figures_draw_each_method_in_its_colour(page, query):
    from tests.app.test_visual_language import _figures, _method_colours
    from vilab.plots import theme

    at = _app(page, **query)
    _ok(at)
    seen = _method_colours(_figures(at))
    assert len(seen) >= (6 if page == ADAM else 3)
    wrong = {c: sorted(cols) for c, cols in seen.items() if cols - {theme.look(c).color.lower()}}
    assert not wrong, wrong


# ------------------------------------------------------------------------------------------ Play on every page
VF = str(PAGES / "10_Vector_fields.py")


@pytest.mark.parametrize("page, query, prefix, chart, itp, slider, value", [
    (ADAM, {"view": LIVE_VIEW}, "ls", "live2d", "it", "lsnngm", 0.1),
    (DIV, {"tab": LIVE_TAB}, "lb", "live_batch", "step", "lsdb", 10.0),
    (VF, {"live": "1", "rule": "fixed"}, "vf", "fields", "it", "rho", 0.1),
], ids=["adam", "divergences", "vector-fields"])
def test_play_follows_the_browser_and_a_step_size_change_while_playing_keeps_playing(page, query, prefix, chart,
                                                                                    itp, slider, value):
    from tests.app.live_helpers import frame_names, message, report

    at = _app(page, **query)
    _ok(at)
    play = at.button(key=f"{prefix}_play")
    play.click().run()
    _ok(at)
    assert at.button(key=f"{prefix}_play").label == "Pause"
    sent = message(at, chart)
    assert sent["play"]["playing"] and frame_names(sent)
    token = sent["play"]["token"]
    for _ in range(3):  # the browser plays the frames and reports: the next ones come, the URL follows
        last = frame_names(sent)[-1]
        report(at, chart, sent).run()
        _ok(at)
        assert int(_param(at, itp)) == last
        sent = message(at, chart)
        assert sent["play"]["token"] == token and frame_names(sent)[0] > last
    at.select_slider(key=slider).set_value(value).run()  # a step size moved while playing
    _ok(at)
    assert at.button(key=f"{prefix}_play").label == "Pause", "a step-size change stopped the play"
    bend = int(_param(at, itp))
    assert last <= bend <= frame_names(sent)[-1]
    lr = _param(at, "lr")
    assert lr and f"{bend}:" in lr
    sent = message(at, chart)
    assert sent["play"]["token"] != token and frame_names(sent)[0] > bend
    report(at, chart, sent).run()
    _ok(at)
    assert at.button(key=f"{prefix}_play").label == "Pause"
    at.button(key=f"{prefix}_play").click().run()  # Pause
    _ok(at)
    assert at.button(key=f"{prefix}_play").label == "Play" and "play" not in message(at, chart)
