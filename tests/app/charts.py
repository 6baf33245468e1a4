"""The charts a page drew, read from an AppTest run: vilab's chart element (``vilab_ui.show``), or
st.plotly_chart where Streamlit cannot serve that element's files."""

from __future__ import annotations

import json
from dataclasses import dataclass

from vilab_ui.chart import CHART_COMPONENT


@dataclass(frozen=True)
class Chart:
    spec: str  # the figure as JSON: {"data": [...], "layout": {...}, ...}
    id: str  # the element's id (it ends with the chart's key, if it has one)
    selectable: bool  # a click on it is sent to the page
    play: dict | None = None  # the message's play (contract C1: token, fps, playing, report_every_s), if any

    @property
    def figure(self) -> dict:
        return json.loads(self.spec)


def charts(node) -> list[Chart]:
    """The charts under ``node`` (an AppTest, or a block of its tree such as a column), in page order."""
    out = []
    for el in node.get("bidi_component"):
        p = el.proto
        if p.component_name == CHART_COMPONENT:
            sent = json.loads(p.bytes)
            out.append(Chart(json.dumps(sent["figure"]), p.id, bool(sent.get("select")), sent.get("play")))
    for el in node.get("plotly_chart"):
        out.append(Chart(el.proto.spec, el.proto.id, bool(list(el.proto.selection_mode))))
    return out
