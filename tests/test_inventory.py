"""The inventory table of DEVELOPING.md is generated from the registry (each entry declares the paper items it
exercises), stays what the generator writes, and stays true: every package name resolves, every page exists."""

import importlib
import re
from pathlib import Path

import pytest

from vilab import repro
from vilab.algorithms import METHODS
from vilab.repro import _inventory

ROOT = Path(__file__).resolve().parents[1]


def _section() -> str:
    text = (ROOT / "DEVELOPING.md").read_text()
    start = text.index(_inventory.HEADING)
    end = text.find("\n## ", start + len(_inventory.HEADING))
    return text[start:] if end < 0 else text[start:end + 1]


def _rows():
    rows = [line for line in _section().splitlines() if line.startswith("| ") and not line.startswith("| Paper")]
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


def test_the_section_in_developing_is_the_generated_inventory():
    assert _section() == repro.inventory_markdown(), (
        "DEVELOPING.md's inventory differs from vilab.repro.inventory_markdown(): regenerate the section "
        "(replace it with the function's text) after changing an entry's items or vilab/repro/_inventory.py")


def test_every_entry_declares_known_items_and_every_item_key_is_unique():
    keys = [i.key for i in _inventory.ITEMS]
    assert len(keys) == len(set(keys))
    undeclared = [e.name for e in repro.entries() if not repro.entry_items(e)]
    assert not undeclared, f"entries that declare no paper item: {undeclared}"
    unknown = {e.name: k for e in repro.entries() for k in repro.entry_items(e) if k not in keys}
    assert not unknown, unknown


def test_an_entry_declaring_an_unknown_item_is_a_valueerror():
    @repro.reproduction("zz-inventory-bad", paper="P", what="w", kind="derived", source="s", items=("no-such-item",))
    def _bad():
        return []

    try:
        with pytest.raises(ValueError, match="no-such-item"):
            repro.inventory_markdown()
    finally:
        repro._REGISTRY.pop("zz-inventory-bad", None)


def test_the_reproduction_column_is_what_the_entries_declare():
    # SVGD and Kumar's Theorem 1 are exercised by no entry: the generated table says so instead of pointing at one
    by_item = {i.key: i for i in _inventory.ITEMS}
    rows = {(r[0], r[1]): r for r in _rows()}
    for key in ("kumar-svgd", "kumar-thm1-lemma1"):
        it = by_item[key]
        assert rows[(it.paper, it.item)][4] == "—" and it.missing
    declared = {k: sorted(e.name for e in repro.entries() if k in repro.entry_items(e)) for k in by_item}
    for key, it in by_item.items():
        shown = re.findall(r"`([\w-]+)`", rows[(it.paper, it.item)][4])
        assert shown == declared[key], key


def test_every_name_and_page_in_the_inventory_exists():
    rows = _rows()
    assert len(rows) == len(_inventory.ITEMS) >= 25
    pages = {p.stem.partition("_")[2].replace("_", " ") for p in (ROOT / "pages").glob("*.py")}
    for paper, item, package, page, reproduction, missing in rows:
        for name in re.findall(r"`(vilab[\w.]*)`", package):
            assert _resolve(name) is not None, (item, name)
        for method in re.findall(r'`"([\w-]+)"`', package):
            assert method in METHODS, (item, method)
        for p in [x.strip() for x in page.split(",") if x.strip() != "—"]:
            assert p in pages, (item, p)
        if "—" in (package, page, reproduction):
            assert missing, f"{item}: say why something is missing"

