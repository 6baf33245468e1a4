"""Registry of reproductions: the papers' numbers beside the ones vilab computes.

Each reproduction is a function returning a list of :class:`Check` rows, registered with
:func:`reproduction`. Modules of this package (``vilab/repro/*.py``) are discovered and
imported on first use, so adding a file adds its entries; the names are part of the public
interface (``vilab repro NAME``).

Example::

    from vilab.repro import Check, reproduction

    @reproduction("tan2025-optimum", paper="Tan (2025)", what="1-D toy optimum, Sec. 4.1")
    def _():
        mu, s2 = compute_it()
        return [Check("mu*", 1.070256, mu, tol=1e-6), Check("sigma^2*", 0.0019802, s2, tol=1e-7)]
"""

from __future__ import annotations

import importlib
import math
import pkgutil
import time
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Check", "Reproduction", "Result", "reproduction", "entries", "get", "run", "table_rows", "format_value",
           "import_errors"]


@dataclass(frozen=True)
class Check:
    """One compared quantity.

    ``paper`` and ``computed`` are numbers, strings or tuples of numbers. The check passes
    when ``passed`` is given and true; otherwise numbers pass when
    ``|computed - paper| <= tol`` (or ``<= tol * |paper|`` with ``rel=True``), element by
    element for tuples, and anything else passes when equal.
    """

    quantity: str
    paper: Any
    computed: Any
    tol: float = 0.0
    rel: bool = False
    passed: bool | None = None
    note: str = ""

    def ok(self) -> bool:
        if self.passed is not None:
            return bool(self.passed)
        return _close(self.paper, self.computed, self.tol, self.rel)

    def as_dict(self) -> dict:
        return {
            "quantity": self.quantity,
            "paper": _plain(self.paper),
            "computed": _plain(self.computed),
            "tol": self.tol,
            "rel": self.rel,
            "pass": self.ok(),
            "note": self.note,
        }


def _plain(x):
    """Convert numpy / jax scalars and arrays to plain Python for JSON."""
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if hasattr(x, "tolist"):
        return x.tolist()
    return x


def _close(paper, computed, tol, rel) -> bool:
    paper, computed = _plain(paper), _plain(computed)
    if isinstance(paper, list) or isinstance(computed, list):
        if not (isinstance(paper, list) and isinstance(computed, list)) or len(paper) != len(computed):
            return False
        return all(_close(p, c, tol, rel) for p, c in zip(paper, computed))
    if isinstance(paper, bool) or isinstance(computed, bool) or isinstance(paper, str) or isinstance(computed, str):
        return paper == computed
    if isinstance(paper, (int, float)) and isinstance(computed, (int, float)):
        if not math.isfinite(float(computed)):
            return False
        bound = tol * abs(paper) if rel else tol
        return abs(float(computed) - float(paper)) <= bound
    return paper == computed


@dataclass(frozen=True)
class Reproduction:
    """A registered reproduction: what it checks and how to compute it."""

    name: str
    paper: str
    what: str
    compute: Callable[[], list[Check]]
    slow: bool = False
    settings: str = ""


@dataclass
class Result:
    """The outcome of running one reproduction."""

    name: str
    paper: str
    what: str
    checks: list[Check] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.checks) and all(c.ok() for c in self.checks)

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "paper": self.paper,
            "what": self.what,
            "pass": self.passed,
            "seconds": round(self.seconds, 3),
            "error": self.error,
            "checks": [c.as_dict() for c in self.checks],
        }


_REGISTRY: dict[str, Reproduction] = {}
_DISCOVERED = False
_IMPORT_ERRORS: dict[str, str] = {}


def reproduction(name: str, *, paper: str, what: str, slow: bool = False, settings: str = ""):
    """Decorator registering ``fn() -> list[Check]`` under ``name``."""

    def deco(fn: Callable[[], list[Check]]):
        if name in _REGISTRY and _REGISTRY[name].compute.__qualname__ != fn.__qualname__:
            raise ValueError(f"Two reproductions are named {name!r}; names must be unique.")
        _REGISTRY[name] = Reproduction(name, paper, what, fn, slow, settings)
        return fn

    return deco


def _discover() -> None:
    global _DISCOVERED
    if _DISCOVERED:
        return
    for mod in pkgutil.iter_modules(__path__):
        if not mod.name.startswith("_"):
            try:
                importlib.import_module(f"{__name__}.{mod.name}")
            except Exception as exc:  # one broken module must not hide every other paper's entries
                _IMPORT_ERRORS[mod.name] = f"{type(exc).__name__}: {exc}"
    _DISCOVERED = True


def import_errors() -> dict[str, str]:
    """Modules of vilab/repro that failed to import (module name -> error); their entries are missing."""
    _discover()
    return dict(_IMPORT_ERRORS)


def entries() -> list[Reproduction]:
    """Every registered reproduction, sorted by name."""
    _discover()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def get(name: str) -> Reproduction:
    """The reproduction called ``name``; ValueError listing the known names otherwise."""
    _discover()
    if name not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY)) or "(none registered)"
        raise ValueError(f"There is no reproduction named {name!r}. Known reproductions: {known}.")
    return _REGISTRY[name]


def run(name: str) -> Result:
    """Compute one reproduction. Errors inside it are reported in ``Result.error``."""
    rep = get(name)
    t0 = time.perf_counter()
    try:
        checks = list(rep.compute())
        err = None
    except Exception as exc:  # reported, never raised: the page and the CLI show it
        checks, err = [], f"{type(exc).__name__}: {exc}"
    return Result(rep.name, rep.paper, rep.what, checks, time.perf_counter() - t0, err)


def format_value(v) -> str:
    """A short readable form of a paper or computed value (7 significant digits)."""
    v = _plain(v)
    if isinstance(v, float):
        return f"{v:.7g}"
    if isinstance(v, list):
        return "(" + ", ".join(format_value(x) for x in v) + ")"
    return str(v)


def table_rows(results: list[Result]) -> list[dict]:
    """One row per check (and one per failed computation), for tables on the page and the CLI."""
    rows = []
    for r in results:
        if r.error:
            rows.append({"reproduction": r.name, "quantity": "(error)", "paper": "", "computed": r.error,
                         "tolerance": "", "pass": False})
        for c in r.checks:
            tol = "" if c.passed is not None else (f"{c.tol:g} (rel)" if c.rel else f"{c.tol:g}")
            rows.append({"reproduction": r.name, "quantity": c.quantity, "paper": format_value(c.paper),
                         "computed": format_value(c.computed), "tolerance": tol, "pass": c.ok()})
    return rows
