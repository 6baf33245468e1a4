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
