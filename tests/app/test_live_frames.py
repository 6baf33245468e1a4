"""Play's frames on every Play page (issue 37): the server builds each frame as plain data (Live.show, no graph
objects), and the picture a frame puts on screen is the figure the graph-objects path draws at that iteration (the
page paused there): the same traces in the same order, the same colours, dashes, names and data, numbers to 1e-12.
A play is followed as the chart element follows it (tests.app.live_helpers.Played: the frames of every message,
their tails put together), before and after a step size moved while playing (the bend's star)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.live_helpers import Played, app, frame_names, message, ok, report

PAGES = Path(__file__).resolve().parents[2] / "pages"
TR, VF = str(PAGES / "20_Trajectories.py"), str(PAGES / "10_Vector_fields.py")
ADAM, DIV = str(PAGES / "30_Adam_vs_SNNGM.py"), str(PAGES / "40_Divergences.py")

# page, its live view, the Live's key, the live chart's key, the iteration's URL parameter, a slider moved while
# playing and its new value
CASES = {
    "trajectories": (TR, {"view": "live", "m": ["srvn", "gd-mc"]}, "tr", "live", "it", "s_srvn", 0.316),
    "trajectories-coinciding-lecture": (TR, {"view": "live", "m": ["srvn", "gd-mc", "bw-gd", "fb-gvi"],
                                             "lecture": "1"}, "tr", "live", "it", "s_gd-mc", 0.1),
    "vector-fields": (VF, {"live": "1"}, "vf", "fields", "it", "rho0", 0.1),
    "vector-fields-fixed-lecture": (VF, {"live": "1", "rule": "fixed", "rho": "0.5", "lecture": "1"}, "vf", "fields",
                                    "it", "rho", 0.1),
    "adam-vs-snngm": (ADAM, {"view": "Step by step", "optl": ["adam", "adam-natural", "snngm", "nagm", "pga", "vogn"]},
                      "ls", "live2d", "it", "lsnngm", 0.1),
    "divergences-lecture": (DIV, {"tab": "Batch step by step", "lecture": "1"}, "lb", "live_batch", "step", "lsdb",
                            10.0),
}


def _differ(a, b, path="") -> str | None:
    """Where ``a`` and ``b`` (JSON values) differ: numbers by more than 1e-12 (relative, or absolute below 1),
    anything else at all; None where they agree."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return f"{path}: entries {sorted(set(a) ^ set(b)) or 'in another order'}"
        return next((d for k in a if (d := _differ(a[k], b[k], f"{path}.{k}"))), None)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} against {len(b)} entries"
        return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := _differ(x, y, f"{path}[{i}]"))), None)
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        return None if abs(a - b) <= 1e-12 * max(1.0, abs(a), abs(b)) else f"{path}: {a!r} against {b!r}"
    return None if a == b else f"{path}: {a!r} against {b!r}"


def _paused(page, query, itp, it, chart):
    """The live figure the page draws paused at iteration ``it`` (the graph-objects path)."""
    at = app(page, **{**query, itp: str(it)})
    ok(at)
    sent = message(at, chart)
    assert "play" not in sent
    return sent["figure"]


def _check(el: Played, page, query, itp, chart, its) -> int:
    """Every frame of ``its`` as played against the paused figure there; how many agree exactly."""
    exact = 0
    for it in its:
        fig = _paused(page, query, itp, it, chart)
        got = el.picture(it)
        assert len(got) == len(fig["data"]), (it, len(got), len(fig["data"]))
        where = _differ(got, fig["data"])
        assert where is None, f"iteration {it}: the frame differs from the figure at {where}"
        lay = {k: v for k, v in el.layout(it).items() if k != "datarevision"}
        assert _differ(lay, {k: v for k, v in fig["layout"].items() if k != "datarevision"}) is None, it
        exact += got == fig["data"]
    return exact


def _some(names: list[int]) -> list[int]:
    """The first, a middle and the last of a stretch's frames."""
    names = sorted(names)
    return sorted({names[0], names[len(names) // 2], names[-1]})


def _url(at) -> dict:
    return {k: (list(v) if isinstance(v, list) else v) for k, v in at.query_params.items()}


@pytest.mark.parametrize("case", list(CASES))
def test_each_frame_played_is_the_figure_drawn_paused_at_its_iteration(case):
    page, query, key, chart, itp, slider, value = CASES[case]
    at = app(page, **query)
    ok(at)
    at.button(key=f"{key}_play").click().run()
    ok(at)
    el = Played()
    sent = message(at, chart)
    el.take(sent)
    for _ in range(3):  # the browser plays the frames it was sent and reports: the next ones come
        report(at, chart, sent).run()
        ok(at)
        sent = message(at, chart)
        el.take(sent)
    assert len(el.frames) >= 10, sorted(el.frames)
    before = _check(el, page, query, itp, chart, _some(list(el.frames)))

    # a step size moved while playing: a new stretch from the browser's iteration, the star on its paths
    report(at, chart, sent, where=frame_names(sent)[0], ago_s=0.1).run()
    ok(at)
    at.select_slider(key=slider).set_value(value).run()
    ok(at)
    assert at.button(key=f"{key}_play").label == "Pause", "a step-size change stopped the play"
    sent = message(at, chart)
    token = el.token
    el.take(sent)
    assert el.token != token and el.current, "no new stretch after the step-size change"
    assert any("changed" in str(t.get("name")) for t in el.figure["data"]), "no star where the step size changed"
    report(at, chart, sent).run()
    ok(at)
    el.take(message(at, chart))
    url = _url(at)
    url.pop(itp, None)
    after = _check(el, page, url, itp, chart, _some(el.current))
    assert before + after >= 1  # the frames are heads of the runs the paused figure reads from the shared store


def test_a_frame_sends_each_data_entry_from_where_it_differs_from_the_frame_before():
    """vilab_ui.live._tail: an entry that begins as the previous frame's goes as the rest only (NaN alike NaN,
    rows of a 2-D entry whole); put together as the element does (Played), it is the entry itself."""
    from vilab_ui.live import TAIL, _tail

    nan = float("nan")
    before = {"x": [0.0, 1.0, nan, 2.0], "y": [5.0, 6.0], "customdata": [[0, 1.0], [1, 2.0]], "text": ["a"],
              "name": "path"}
    now = {"x": [0.0, 1.0, nan, 2.5, 3.0], "y": [7.0], "customdata": [[0, 1.0], [1, 2.0], [2, 3.0]],
           "text": ["a", "b"], "name": "path"}
    sent = _tail(now, before)
    assert sent[TAIL] == {"x": 3, "customdata": 2, "text": 1} and sent["x"] == [2.5, 3.0]
    assert sent["y"] == [7.0] and sent["customdata"] == [[2, 3.0]] and sent["name"] == "path"
    el = Played()
    el.take({"play": {"token": "t", "playing": True},
             "figure": {"data": [before], "layout": {}, "frames": [{"name": "1", "traces": [0], "data": [sent]}]}})
    got = el.picture(1)[0]
    assert got["x"][:2] == now["x"][:2] and got["x"][3:] == now["x"][3:] and got["x"][2] != got["x"][2]
    assert {k: got[k] for k in ("y", "customdata", "text", "name")} == {k: now[k] for k in ("y", "customdata",
                                                                                              "text", "name")}
    assert _tail({"x": [1.0]}, {"x": [2.0]}) == {"x": [1.0]}  # nothing in common: the entry whole
