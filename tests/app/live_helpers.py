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
