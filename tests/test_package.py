"""The shape of the vilab package (DEVELOPING.md, "Layout"): packages grouped by concept, imports that run
one way only (down the layers below), no import cycle, no private name taken from another package, no
``except ImportError`` around vilab's own modules, and no loose modules at the top level.

The checks read the source (``ast``), never import it, and each is run once on a small made-up tree with
the fault it looks for, so that a check that cannot fail would fail here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: vilab's packages from the bottom up: a module may import from its own package or from one below it.
LAYERS = ("core", "family", "targets", "gradients", "algorithms", "models", "online", "divergences",
          "hierarchical", "cnn", "theory", "plots", "repro", "cli")
#: the only modules directly under vilab/ (the rest lives in the packages above)
TOP_LEVEL = {"__init__", "cli"}


def read_tree(files: dict[str, str]) -> dict[str, tuple[str, bool, ast.Module]]:
    """{module: (path, is_package, tree)} for {path relative to the root: source}."""
    out = {}
    for path, text in files.items():
        parts = list(Path(path).with_suffix("").parts)
        pkg = parts[-1] == "__init__"
        if pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (path, pkg, ast.parse(text, path))
    return out


def imports(mods, root: str = "vilab") -> list[tuple[str, str, str | None, ast.AST]]:
    """(importing module, imported module, name taken from it or None, node) for every import of ``root``."""
    out = []
    for mod, (_, pkg, tree) in mods.items():
        here = mod if pkg else mod.rsplit(".", 1)[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                out += [(mod, a.name, None, node) for a in node.names if a.name.split(".")[0] == root]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here.split(".")
                    up = up[: len(up) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                if base.split(".")[0] != root:
                    continue
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    out.append((mod, sub, None, node) if sub in mods else (mod, base, a.name, node))
    return out


def package(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else ""


def upward_imports(mods) -> list[str]:
    bad = []
    for a, b, _, node in imports(mods):
        pa, pb = package(a), package(b)
        if pa and pb and pa != pb and pa in LAYERS and pb in LAYERS and LAYERS.index(pb) > LAYERS.index(pa):
            bad.append(f"{a} imports {b} (line {node.lineno}): {pb} sits above {pa}")
        for p in (pa, pb):
            if p and p not in LAYERS and f"vilab.{p}" in mods and mods[f"vilab.{p}"][1]:
                bad.append(f"the package vilab.{p} has no layer in LAYERS")
    return sorted(set(bad))


def cycles(mods, root: str = "vilab") -> list[list[str]]:
    """Strongly connected sets of two or more modules of the import graph (Tarjan), lazy imports included."""
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for a, b, _, _ in imports(mods, root):
        while b not in mods and "." in b:
            b = b.rsplit(".", 1)[0]
        if b in mods and b != a:
            graph[a].add(b)
    index, low, stack, on, out, count = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = count[0]
        count[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def private_imports(mods) -> list[str]:
    return sorted(f"{a} takes {name} from {b}" for a, b, name, _ in imports(mods)
                  if name and name.startswith("_") and not name.startswith("__") and package(a) != package(b))


def guarded_imports(mods) -> list[str]:
    """Imports of vilab's own modules inside ``try: ... except ImportError``."""
    bad = []
    for mod, (_, _, tree) in mods.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Try):
                continue
            names = [ast.unparse(h.type) if h.type is not None else "" for h in node.handlers]
            if not any("ImportError" in n or "ModuleNotFoundError" in n for n in names):
                continue
            for sub in node.body:
                for n in ast.walk(sub):
                    if isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith("vilab")):
                        bad.append(f"{mod} line {n.lineno}")
                    elif isinstance(n, ast.Import) and any(a.name.startswith("vilab") for a in n.names):
                        bad.append(f"{mod} line {n.lineno}")
    return bad


def loose_modules(mods) -> list[str]:
    return sorted(m for m, (path, pkg, _) in mods.items()
                  if not pkg and m.count(".") == 1 and m.split(".")[1] not in TOP_LEVEL)


@pytest.fixture(scope="module")
def vilab_tree():
    return read_tree({str(p.relative_to(ROOT)): p.read_text() for p in (ROOT / "vilab").rglob("*.py")})


def test_imports_run_down_the_layers(vilab_tree):
    assert upward_imports(vilab_tree) == []


def test_no_import_cycle(vilab_tree):
    assert cycles(vilab_tree) == []
    ui_tree = read_tree({str(p.relative_to(ROOT)): p.read_text() for p in (ROOT / "vilab_ui").rglob("*.py")})
    assert cycles(ui_tree, "vilab_ui") == []


def test_no_private_name_crosses_a_package(vilab_tree):
    assert private_imports(vilab_tree) == []


def test_vilab_never_guards_its_own_imports(vilab_tree):
    assert guarded_imports(vilab_tree) == []


def test_the_top_level_holds_only_the_package_and_the_command(vilab_tree):
    assert loose_modules(vilab_tree) == []
    packages = {p.name for p in (ROOT / "vilab").iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(LAYERS) - {"cli"}, "every package has its layer, and every layer is a package"


FAULTY = {
    "vilab/__init__.py": "",
    "vilab/core/__init__.py": "from ..family import dense\n",  # upward
    "vilab/family/__init__.py": "",
    "vilab/core/t.py": "def _hidden(): pass\n",
    "vilab/family/dense.py": "from ..core.t import _hidden\n",  # private
    "vilab/theory/__init__.py": "",
    "vilab/theory/a.py": "from . import b\n",  # cycle a <-> b
    "vilab/theory/b.py": "try:\n    from .a import f\nexcept ImportError:\n    f = None\n",  # guarded
    "vilab/helpers.py": "",  # loose
}


def test_each_check_finds_its_fault_in_a_made_up_tree():
    mods = read_tree(FAULTY)
    assert upward_imports(mods) == ["vilab.core imports vilab.family.dense (line 1): family sits above core"]
    assert cycles(mods) == [["vilab.theory.a", "vilab.theory.b"]]
    assert private_imports(mods) == ["vilab.family.dense takes _hidden from vilab.core.t"]
    assert guarded_imports(mods) == ["vilab.theory.b line 2"]
    assert loose_modules(mods) == ["vilab.helpers"]
