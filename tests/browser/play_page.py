"""A test page for the chart element's Play (tests/browser/test_chart_robust.py): a figure with a contour and a path,
and PLAY_FRAMES frames that grow the path one point each, played in the browser (vilab_ui.show(..., play=...)).
"More frames" sends the same play (same token) with twice as many frames; "Pause" sends it with playing false.
The element's last report of the play's position is written under the chart."""

import json

import numpy as np
import plotly.graph_objects as go
import streamlit as st

import vilab_ui as ui

PLAY_FRAMES = 45

st.title("Play test")
st.session_state.setdefault("upto", PLAY_FRAMES)
st.session_state.setdefault("playing", True)
st.button("More frames", key="more", on_click=lambda: st.session_state.update(upto=2 * PLAY_FRAMES))
st.button("Pause", key="pause", on_click=lambda: st.session_state.update(playing=False))

t = np.linspace(0.0, 2 * np.pi, 2 * PLAY_FRAMES + 1)
g = np.linspace(-1.5, 1.5, 40)
fig = go.Figure([go.Contour(x=g, y=g, z=np.add.outer(g**2, g**2), showscale=False),
                 go.Scatter(x=[np.cos(t[0])], y=[np.sin(t[0])], mode="lines+markers", name="path")])
fig.update_layout(height=420, xaxis_range=[-1.5, 1.5], yaxis_range=[-1.5, 1.5])
fig.frames = [go.Frame(name=str(i), data=[go.Scatter(x=np.cos(t[: i + 1]), y=np.sin(t[: i + 1]))], traces=[1])
              for i in range(1, st.session_state.upto + 1)]
play = {"token": "run-1", "fps": 30.0, "playing": st.session_state.playing, "report_every_s": 0.25}
ui.show(fig, key="play_chart", play=play, download=False)
state = st.session_state.get("play_chart") or {}
st.code("report: " + json.dumps(state.get("play") if hasattr(state, "get") else None), language=None)
