"""What the live-stepping page tests share: open a page with URL parameters, check it ran clean, read figure data."""

import base64

import numpy as np
from streamlit.testing.v1 import AppTest


def app(page: str, **params):
    """The page run once with these URL parameters."""
    at = AppTest.from_file(page, default_timeout=600)
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def arr(v):
    """A Plotly data array as numbers (plain list, or Plotly's typed array {"dtype", "bdata"})."""
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
    return np.asarray(v, float)


def message(at, key: str) -> dict:
    """What the live figure's chart element was last sent ({figure, config, select, fit, play}), by chart key."""
    import json

    from vilab_ui.chart import CHART_COMPONENT

    (sent,) = [json.loads(el.proto.bytes) for el in at.get("bidi_component")
               if el.proto.component_name == CHART_COMPONENT and el.proto.id.endswith(key)]
    return sent


def frame_names(sent: dict) -> list[int]:
    return [int(f["name"]) for f in sent["figure"].get("frames") or []]


def report(at, key: str, sent: dict, where: int | None = None, ago_s: float = 0.0):
    """Tell the page what the chart element reports while it plays: it has drawn the frame of iteration ``where``
    (default: the last one it was sent) ``ago_s`` seconds ago (vilab_ui.chart's play state)."""
    import time

    names = frame_names(sent)
    last = names[-1] if names else None
    at.session_state[key] = {"play": {"token": sent["play"]["token"], "at": last if where is None else where,
                                      "queued": last, "t": (time.time() - ago_s) * 1000.0}}
    return at


class Played:
    """What the chart element makes of a play's messages, as vilab/plots/browser/chart.js does: the frames of each
    message it has not yet queued, in order, with their tails put together (a frame's trace may hold a data array's
    new part only: its ``vilab_tail`` {key: n} keeps the first n entries of the frame before, the figure's before
    the first). Give it every message of the play (``take``); ``frames`` maps each frame's iteration to the frame
    as the browser plays it (the latest stretch's, where two have one), ``figure`` is the current stretch's figure
    and ``current`` its frames' iterations."""

    def __init__(self):
        self.token, self.figure, self.frames, self.current = None, None, {}, []
        self._figures, self._last = {}, []

    def take(self, sent: dict) -> list[dict]:
        """The frames ``sent`` adds (each whole), in order."""
        import copy

        from vilab_ui.live import TAIL

        play, fig = sent.get("play"), sent["figure"]
        if not play or not play.get("playing"):
            self.token = None
            return []
        if play["token"] != self.token:  # a new stretch: its figure is the base of its first frame
            self.token, self.figure, self.current = play["token"], fig, []
            self._last = [{k: v for k, v in t.items() if isinstance(v, list)} for t in fig["data"]]
        top = self.current[-1] if self.current else -1
        fresh = [copy.deepcopy(f) for f in fig.get("frames") or [] if int(f["name"]) > top]
        for f in fresh:
            for i, t in zip(f["traces"], f["data"]):
                for k, n in (t.pop(TAIL, None) or {}).items():
                    t[k] = self._last[i].get(k, [])[:n] + t[k]
                self._last[i].update({k: v for k, v in t.items() if isinstance(v, list)})
            it = int(f["name"])
            self.frames[it], self._figures[it] = f, self.figure
            self.current.append(it)
        return fresh

    def picture(self, it: int) -> list[dict]:
        """The traces on screen at the frame of iteration ``it``: its stretch's figure's, with the frame's in their
        place."""
        data = list(self._figures[it]["data"])
        f = self.frames[it]
        for i, t in zip(f["traces"], f["data"]):
            data[i] = t
        return data

    def layout(self, it: int) -> dict:
        """The layout on screen at the frame of iteration ``it`` (its stretch's figure's)."""
        return self._figures[it]["layout"]
