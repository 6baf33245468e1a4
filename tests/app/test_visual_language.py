"""One visual language (issue 14): a method has the same colour on every page's figures.

Each page is run (its default view, and views that show many methods at once); every trace of every
Plotly figure it draws that stands for a method (by its legend group or its name: a code such as "srvn"
or a label such as "SR-VN (120 steps)") must carry that method's colour from vilab.plots.theme, so the
colour a student learns on one page means the same method on the next.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.charts import charts
from vilab.plots import theme

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(p for p in (ROOT / "pages").glob("*.py") if not p.name.startswith("_"))
# views with many methods on one figure, besides each page's default
VIEWS = [(p, {}) for p in PAGES] + [
    (ROOT / "pages" / "20_Trajectories.py",
     {"m": ["vn", "srvn", "gd-mc", "gd-mv", "bwgd", "fbgvi", "tan-1E", "tan-1N", "tan-2E", "tan-2N", "tan-2N-cor1",
            "lsk", "tan-1N-log", "svgd"]}),
    (ROOT / "pages" / "20_Trajectories.py", {"view": "step-size sweep"}),
    (ROOT / "pages" / "30_Adam_vs_SNNGM.py",
     {"view": "Step by step", "optl": ["adam", "adam-natural", "snngm", "nagm", "pga", "vogn"], "it": "3"}),
    (ROOT / "pages" / "40_Divergences.py", {"tab": "Batch step by step", "step": "3"}),
]


def _colours(trace: dict) -> list[str]:
    out = []
    for part in ("line", "marker"):
        c = (trace.get(part) or {}).get("color")
        if isinstance(c, str) and c.startswith("#"):
            out.append(c.lower())
    return out


def _figures(at) -> list[dict]:
    return [json.loads(el.spec) for el in charts(at)]


def _method_colours(specs) -> dict[str, set]:
    seen = defaultdict(set)
    for spec in specs:
        for tr in spec.get("data", []):
            code = theme.method_of(tr.get("legendgroup")) or theme.method_of(tr.get("name"))
            if code is None:
                continue
            for c in _colours(tr):
                seen[code].add(c)
    return seen


@pytest.mark.parametrize("page,query", VIEWS, ids=[f"{p.stem}-{i}" for i, (p, _) in enumerate(VIEWS)])
def test_each_method_has_its_colour_on_every_figure(page, query):
    at = AppTest.from_file(str(page), default_timeout=300)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    wrong = {}
    for code, cols in _method_colours(_figures(at)).items():
        want = theme.look(code).color.lower()
        if cols - {want}:
            wrong[code] = (want, sorted(cols))
    assert not wrong, f"{page.name}: methods drawn in another colour than their own (want, drawn): {wrong}"


def test_the_looks_tell_the_geometries_apart():
    """Natural-gradient methods are solid, Euclidean dashed, Wasserstein dotted; no two methods that can
    share a figure (the 2-D catalogue, the optimizers) share colour and dash and marker."""
    for code, lk in theme.LOOKS.items():
        if lk.geometry in ("natural", "euclidean", "wasserstein"):
            assert lk.dash == theme.GEOMETRY_DASH[lk.geometry], code
    for group in (["vn", "srvn", "gd-mc", "gd-mv", "bwgd", "fbgvi", "tan-1e", "tan-1n", "tan-2e", "tan-2n", "tan-2n-cor1",
                   "lsk", "tan-1n-log", "svgd"],
                  ["adam", "nadam", "snngm", "nagm", "vogn", "pga"],
                  ["kl", "forward_kl", "fisher", "fdb", "score", "sdb", "weighted_fisher", "bam", "gsm"],
                  ["gd-mv", "kappa", "xi", "lambda", "tan-1n", "tan-2n", "tan-2n-cor1"]):
        styles = [(theme.LOOKS[c].color, theme.LOOKS[c].dash, theme.LOOKS[c].symbol) for c in group]
        assert len(set(styles)) == len(styles), group
        labels = [theme.LOOKS[c].label for c in group]
        assert len(set(labels)) == len(labels), group
