"""The inventory table of DEVELOPING.md stays true: every package name resolves, every page exists, every
reproduction is registered."""

import importlib
import re
from pathlib import Path

from vilab import repro
from vilab.algorithms import METHODS

ROOT = Path(__file__).resolve().parents[1]


def _rows():
    text = (ROOT / "DEVELOPING.md").read_text()
    section = text.split("## Inventory: the papers' items in vilab", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| Paper")]
    return [[c.strip() for c in line.strip("|").split("|")] for line in rows if not set(line) <= set("|- ")]


def _resolve(dotted: str):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(dotted)


def test_every_name_page_and_reproduction_in_the_inventory_exists():
    rows = _rows()
    assert len(rows) >= 25
    pages = {p.stem.partition("_")[2].replace("_", " ") for p in (ROOT / "pages").glob("*.py")}
    registered = {e.name for e in repro.entries()}
    for paper, item, package, page, reproduction, missing in rows:
        for name in re.findall(r"`(vilab[\w.]*)`", package):
            assert _resolve(name) is not None, (item, name)
        for method in re.findall(r'`"([\w-]+)"`', package):
            assert method in METHODS, (item, method)
        for p in [x.strip() for x in page.split(",") if x.strip() != "—"]:
            assert p in pages, (item, p)
        for r in re.findall(r"`([\w-]+)`", reproduction):
            assert r in registered, (item, r)
        if "—" in (package, page, reproduction):
            assert missing, f"{item}: say why something is missing"
