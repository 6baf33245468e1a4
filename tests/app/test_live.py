"""Live stepping on Trajectories (issue 15, item 1): Step, Step ×10, Play / Pause, Reset, a step size changed
mid-run (the path equals a direct run resumed with the new ρ at that iteration, read from the figure's data),
divergence, and hostile ``it`` / ``lr`` URL values."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs

import numpy as np
import pytest

from tests.app.charts import charts
from tests.app.live_helpers import Played, app, frame_names, message, report
from tests.app.live_helpers import arr as _arr
from tests.app.live_helpers import ok as _ok
from vilab.algorithms import algorithm, run
from vilab.core import as_key, resume
from vilab.family.gaussian import CholCov
from vilab.targets.papers import kumar_t2

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "20_Trajectories.py")
START = CholCov(np.array([-2.0, 2.5]), 0.2 * np.eye(2))  # the page's default start


def _app(**params):
    return app(PAGE, **params)


def _figure(at):
    (chart,) = charts(at)  # the live view draws one figure
    return json.loads(chart.spec)


def _path(at, code):
    """The mean path of method ``code`` as the figure draws it: (n + 1, 2)."""
    spec = _figure(at)
    (tr,) = [d for d in spec["data"] if d.get("legendgroup") == code and d.get("mode") == "lines+markers"]
    return np.column_stack([_arr(tr["x"]), _arr(tr["y"])])


def _bends(at, code):
    spec = _figure(at)
    return [d for d in spec["data"] if d.get("legendgroup") == code and "changed" in str(d.get("name"))]


def _it(at):
    v = at.query_params["it"]
    return int(v[0] if isinstance(v, list) else v)


def _param(at, key):
    v = at.query_params.get(key)
    return v[0] if isinstance(v, list) else v


def test_default_view_is_unchanged_and_has_no_live_controls():
    at = _app()
    _ok(at)
    assert at.radio(key="view").value == "paths"
    assert "it" not in at.query_params and "lr" not in at.query_params
    assert not [b for b in at.button if str(b.key).startswith("tr_")]
    assert "step by step" in at.radio(key="view").options


def test_step_step10_reset_and_a_step_size_change_mid_run():
    at = _app(view="live", m=["srvn", "gd-mc"])
    _ok(at)
    assert _it(at) == 0 and len(_path(at, "srvn")) == 1
    at.button(key="tr_step").click().run()
    _ok(at)
    assert _it(at) == 1 and len(_path(at, "srvn")) == 2
    at.button(key="tr_step10").click().run()
    assert _it(at) == 11 and len(_path(at, "gd-mc")) == 12
    at.button(key="tr_reset").click().run()
    _ok(at)
    assert _it(at) == 0 and "lr" not in at.query_params
    # 5 steps at rho = 1, then SR-VN's step size to 0.316 and ten more
    for _ in range(5):
        at.button(key="tr_step").click().run()
    at.select_slider(key="s_srvn").set_value(0.316).run()
    _ok(at)
    assert _param(at, "lr") == "srvn@0:1,5:0.316" and _it(at) == 5
    at.button(key="tr_step10").click().run()
    _ok(at)
    assert _it(at) == 15
    got = _path(at, "srvn")
    tgt = kumar_t2()
    alg = algorithm("srvn", tgt, grads="exact")
    direct = resume(alg, run("srvn", tgt, START, 5, 1.0, key=as_key(0), grads="exact"), 10, hyper={"rho": 0.316})
    assert got.shape == (16, 2)
    np.testing.assert_array_equal(got, np.asarray(direct.mean))
    # without the change the path is another one: the bend is real
    straight = run("srvn", tgt, START, 15, 1.0, key=as_key(0), grads="exact")
    assert not np.allclose(got[6:], np.asarray(straight.mean)[6:])
    # the star marks iterate 5 with the new value; GD in (m, C) did not change, so it has no star
    (star,) = _bends(at, "srvn")
    assert _arr(star["x"])[0] == got[5, 0] and star["text"] == ["ρ = 0.316"]
    assert not _bends(at, "gd-mc")
    # the page's own "Link to this step" carries the same parameters as the URL
    (link,) = [m.value for m in at.markdown if "Link to this step" in m.value]
    linked = parse_qs(link.split("](?", 1)[1].rstrip(")"))
    assert linked["it"] == ["15"] and linked["lr"] == ["srvn@0:1,5:0.316"] and linked["m"] == ["srvn", "gd-mc"]
    # the shared link opens at that step, with the same bend
    url = {k: (list(v) if isinstance(v, list) else v) for k, v in at.query_params.items()}
    fresh = _app(**url)
    _ok(fresh)
    assert _it(fresh) == 15
    np.testing.assert_array_equal(_path(fresh, "srvn"), got)
    np.testing.assert_array_equal(_path(fresh, "gd-mc"), _path(at, "gd-mc"))


def _frame_path(frame, spec, code):
    """The mean path of ``code`` in a Plotly frame of the live figure (the frame names its traces by index), put
    together as the chart element plays it (tests.app.live_helpers.Played)."""
    for i, tr in zip(frame["traces"], frame["data"]):
        assert spec["data"][i].get("legendgroup") == tr.get("legendgroup")
        if tr.get("legendgroup") == code and tr.get("mode") == "lines+markers":
            return np.column_stack([_arr(tr["x"]), _arr(tr["y"])])
    return None


def _playing(at):
    return at.button(key="tr_play").label == "Pause"


def test_play_sends_frames_the_browser_plays_and_follows_where_it_is():
    at = _app(view="live", m=["srvn", "gd-mc"])
    _ok(at)
    at.button(key="tr_play").click().run()  # Play: a stretch of frames for the chart element, at once
    _ok(at)
    assert _playing(at)
    sent = message(at, "live")
    el = Played()
    el.take(sent)
    play = sent["play"]
    assert play["playing"] is True and 10 <= play["fps"] <= 30 and play["report_every_s"] > 0
    names = frame_names(sent)
    assert names and names == sorted(set(names)) and names[0] >= 1
    base = sent["figure"]
    # the frames hold only what moves: the paths, not the target's contours (trace 0)
    assert base["data"][0]["type"] == "contour"
    assert all(0 not in f["traces"] for f in base["frames"])
    tgt = kumar_t2()
    token, seen = play["token"], names[-1]
    for _ in range(60):  # the browser reports where it is; the server sends the frames after, same stretch
        report(at, "live", sent).run()
        _ok(at)
        assert _playing(at) and _it(at) == seen  # the URL follows the browser
        sent = message(at, "live")
        el.take(sent)
        assert sent["play"]["token"] == token
        names = frame_names(sent)
        assert names and names[0] > seen and names == sorted(names)
        seen = names[-1]
        if seen > 140:
            break
    assert seen > 140, "the play stopped before a hundred iterations"  # > 2 chunks of the runs computed ahead
    j = names[-1]
    got = _frame_path(el.frames[j], el.figure, "srvn")
    direct = run("srvn", tgt, START, j, 1.0, key=as_key(0), grads="exact")
    np.testing.assert_allclose(got, np.asarray(direct.mean), rtol=1e-12, atol=1e-12)
    # Pause where the browser is (it reported the first of the frames just sent, just now)
    report(at, "live", sent, where=names[0])
    at.button(key="tr_play").click().run()
    _ok(at)
    assert not _playing(at)
    paused = _it(at)
    assert names[0] <= paused <= names[-1]
    assert "play" not in message(at, "live") and len(_path(at, "srvn")) == paused + 1
    at.run()
    assert _it(at) == paused and not _playing(at)
    # Step after a play: one iteration from there
    at.button(key="tr_step").click().run()
    _ok(at)
    assert _it(at) == paused + 1 and len(_path(at, "srvn")) == paused + 2


def test_a_step_size_change_while_playing_bends_the_path_there_and_the_play_goes_on():
    at = _app(view="live", m=["srvn", "gd-mc"])
    at.button(key="tr_play").click().run()
    sent = message(at, "live")
    for _ in range(3):
        report(at, "live", sent).run()
        sent = message(at, "live")
    names = frame_names(sent)
    report(at, "live", sent, where=names[0], ago_s=0.2).run()  # the browser is at the first of these frames
    sent = message(at, "live")
    queued = frame_names(sent)[-1]
    token = sent["play"]["token"]
    at.select_slider(key="s_srvn").set_value(0.316).run()  # moved while playing
    _ok(at)
    assert _playing(at), "a step-size change stopped the play"
    lr = _param(at, "lr")
    assert lr.startswith("srvn@0:1,") and lr.endswith(":0.316")
    bend = int(lr.split(",")[1].split(":")[0])
    assert names[0] <= bend <= queued and _it(at) == bend  # where the browser was, about
    sent = message(at, "live")
    el = Played()
    el.take(sent)
    assert sent["play"]["token"] != token and sent["play"]["playing"]  # a new stretch, from the bend
    # after the bend (the fragment draws on while the browser's queue is short: this is its last message)
    assert frame_names(sent)[0] > bend
    stars = [d for d in sent["figure"]["data"] if d.get("legendgroup") == "srvn" and "changed" in str(d.get("name"))]
    assert len(stars) == 1 and stars[0]["text"] == ["ρ = 0.316"]
    for _ in range(2):  # and it plays on
        report(at, "live", sent).run()
        _ok(at)
        assert _playing(at)
        sent = message(at, "live")
        el.take(sent)
    j = frame_names(sent)[-1]
    assert j > bend + 2
    tgt = kumar_t2()
    alg = algorithm("srvn", tgt, grads="exact")
    direct = resume(alg, run("srvn", tgt, START, bend, 1.0, key=as_key(0), grads="exact"), j - bend,
                    hyper={"rho": 0.316})
    got = _frame_path(el.frames[j], el.figure, "srvn")
    np.testing.assert_allclose(got, np.asarray(direct.mean), rtol=1e-12, atol=1e-12)
    # Reset while playing: back to 0, paused, the change forgotten
    at.button(key="tr_reset").click().run()
    _ok(at)
    assert not _playing(at) and _it(at) == 0 and "lr" not in at.query_params


def test_play_at_the_last_iteration_says_so_and_a_diverging_play_stops():
    at = _app(view="live", m=["vn"], it="1000")
    at.button(key="tr_play").click().run()
    _ok(at)
    assert not _playing(at) and _it(at) == 1000
    assert any("last iteration" in i.value for i in at.info)
    at = _app(view="live", m=["gd-mc"], **{"s_gd-mc": "1.78"})
    at.button(key="tr_play").click().run()
    for _ in range(30):
        if not _playing(at):
            break
        report(at, "live", message(at, "live")).run()
        _ok(at)
    assert not _playing(at), "the play went on past a diverged run"
    assert any("diverged" in w.value for w in at.warning)
    assert any("stepping on does nothing" in i.value for i in at.info)
    stopped = _it(at)
    at.button(key="tr_play").click().run()  # Play again: nothing left to play
    assert not _playing(at) and _it(at) == stopped


def test_a_diverging_run_stops_and_stepping_past_it_does_nothing():
    at = _app(view="live", m=["gd-mc"], **{"s_gd-mc": "1.78"})
    _ok(at)
    for _ in range(3):
        at.button(key="tr_step10").click().run()
        _ok(at)
    assert any("diverged" in w.value for w in at.warning)
    before = _it(at)
    n_path = len(_path(at, "gd-mc"))
    assert n_path - 1 < before  # the path ends at the last good iterate
    at.button(key="tr_step").click().run()
    _ok(at)
    assert _it(at) == before and len(_path(at, "gd-mc")) == n_path
    assert any("stepping on does nothing" in i.value for i in at.info)


@pytest.mark.parametrize("it,lr", [
    ("-3", ""), ("1e9", ""), ("abc", ""), ("5.5", ""), ("99999", ""), ("<script>alert(1)</script>", ""),
    ("7", "vn@0:1e9"), ("7", "zz@0:1"), ("7", "vn@5:1"), ("7", "vn@0:1,0:0.5"), ("7", "vn@0:nan"),
    ("7", "vn@0:1,5000:0.1"), ("7", "vn@0:1;vn@0:1"), ("7", "vn@0:1,3:0.5,2:0.1"), ("7", "vn"), ("7", "@:,;"),
    ("7", "[click](http://x.example/a)"), ("7", "vn@0:1," + ",".join(f"{k}:0.5" for k in range(1, 200))),
    ("7", "x" * 5000),
])
def test_hostile_it_and_lr_fall_back_to_defaults(it, lr):
    at = _app(view="live", m=["vn"], it=it, lr=lr)
    _ok(at)
    n = _it(at)
    assert 0 <= n <= 1000
    assert len(_path(at, "vn")) == n + 1
    assert "lr" not in at.query_params  # nothing valid to keep: no change after the start
    spec = json.dumps(_figure(at))
    assert "x.example" not in spec


def test_a_valid_link_with_a_later_change_than_it_drops_the_future():
    at = _app(view="live", m=["vn"], it="4", lr="vn@0:1,2:0.562,6:0.1", s_vn="0.562")
    _ok(at)
    assert _it(at) == 4 and _param(at, "lr") == "vn@0:1,2:0.562"
    assert len(_bends(at, "vn")) == 1 and _bends(at, "vn")[0]["text"] == ["ρ = 0.562"]


def test_a_hand_made_link_without_the_sliders_value_sets_the_slider_from_the_changes():
    """?lr= alone (no ?s_vn=): the slider is put at the link's step size, not recorded as one more change."""
    at = _app(view="live", m=["vn"], it="4", lr="vn@0:1,2:0.562")
    _ok(at)
    assert _it(at) == 4 and _param(at, "lr") == "vn@0:1,2:0.562"
    assert _param(at, "s_vn") == "0.562"
    assert len(_bends(at, "vn")) == 1 and _bends(at, "vn")[0]["text"] == ["ρ = 0.562"]
    at.button(key="tr_step").click().run()  # stepping on keeps the one change
    _ok(at)
    assert _it(at) == 5 and _param(at, "lr") == "vn@0:1,2:0.562"
