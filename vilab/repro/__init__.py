"""Registry of reproductions: the papers' numbers beside the ones vilab computes.

Each reproduction is a function returning a list of :class:`Check` rows, registered with
:func:`reproduction`. Modules of this package (``vilab/repro/*.py``) are discovered and
imported on first use, so adding a file adds its entries; the names are part of the public
interface (``vilab repro NAME``).

Every reference value says its **kind**:

* ``"paper"``: printed in the paper; ``source`` names where (table / figure / equation, page or section);
* ``"derived"``: not printed in the paper, computed by us for a setting the paper does not pin;
  ``source`` says how (the formula, the independent computation, the setting chosen).

An entry declares ``kind="paper"`` or ``"derived"`` (every check inherits it and the entry's
``source``), or ``kind="mixed"``: then every check names its own ``kind`` and ``source``
(:func:`run` reports an error for a check that does not).

Example::

    from vilab.repro import Check, reproduction

    @reproduction("tan2025-optimum", paper="Tan (2025)", what="1-D toy optimum, Sec. 4.1",
                  kind="mixed", source="Sec. 4.1 (Fig. 1 marks the optimum)")
    def _():
        mu, s2 = compute_it()
        return [Check("mu*", 1.07, mu, tol=5e-3, kind="paper", source="Sec. 4.1: (1.07, 0.002)"),
                Check("sigma^2*", 0.0019802, s2, tol=1e-7, kind="derived", source="root of the exact gradient")]
"""

from __future__ import annotations

import importlib
import math
import pkgutil
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

__all__ = ["KINDS", "ENTRY_KINDS", "Check", "Reproduction", "Result", "reproduction", "entries", "get", "run",
           "table_rows", "format_value", "import_errors", "kind_label", "unlabelled"]


#: kinds of reference value: printed in the paper, or derived by us for a setting the paper does not pin
KINDS = ("paper", "derived")
#: what an entry may declare: one kind for all its checks, or "mixed" (each check says its own)
ENTRY_KINDS = KINDS + ("mixed",)


def kind_label(kind: str | None) -> str:
    """How a kind reads on screen."""
    return {"paper": "paper", "derived": "derived", "mixed": "paper + derived"}.get(kind or "", "(not stated)")


@dataclass(frozen=True)
class Check:
    """One compared quantity.

    ``paper`` and ``computed`` are numbers, strings or tuples of numbers. The check passes
    when ``passed`` is given and true; otherwise numbers pass when
    ``|computed - paper| <= tol`` (or ``<= tol * |paper|`` with ``rel=True``), element by
    element for tuples, and anything else passes when equal.

    ``kind`` says what the reference value ``paper`` is: ``"paper"`` (printed in the paper;
    ``source`` says where) or ``"derived"`` (computed by us; ``source`` says how). Left empty,
    the check takes its entry's kind and source when the entry is run (in an entry of kind
    "mixed", every check sets its kind, and a derived one its source).
    """

    quantity: str
    paper: Any
    computed: Any
    tol: float = 0.0
    rel: bool = False
    passed: bool | None = None
    note: str = ""
    kind: str | None = None
    source: str = ""

    def __post_init__(self):
        if self.kind is not None and self.kind not in KINDS:
            raise ValueError(f"A check's reference kind is 'paper' or 'derived', not {self.kind!r}.")

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
            "kind": self.kind,
            "source": self.source,
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
    kind: str | None = None
    source: str = ""


@dataclass
class Result:
    """The outcome of running one reproduction."""

    name: str
    paper: str
    what: str
    checks: list[Check] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None
    kind: str | None = None
    source: str = ""

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.checks) and all(c.ok() for c in self.checks)

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "paper": self.paper,
            "what": self.what,
            "kind": self.kind,
            "source": self.source,
            "pass": self.passed,
            "seconds": round(self.seconds, 3),
            "error": self.error,
            "checks": [c.as_dict() for c in self.checks],
        }


_REGISTRY: dict[str, Reproduction] = {}
_DISCOVERED = False
_IMPORT_ERRORS: dict[str, str] = {}


def reproduction(name: str, *, paper: str, what: str, slow: bool = False, settings: str = "",
                 kind: str | None = None, source: str = ""):
    """Decorator registering ``fn() -> list[Check]`` under ``name``.

    ``kind``: "paper" (every reference value is printed in the paper, ``source`` says where),
    "derived" (computed by us, ``source`` says how) or "mixed" (each Check says its own).
    Every entry of vilab/repro states both (tests/test_repro_registry.py checks it).
    """
    if kind is not None and kind not in ENTRY_KINDS:
        raise ValueError(f"The kind of reproduction {name!r} must be one of {', '.join(ENTRY_KINDS)}, not {kind!r}.")

    def deco(fn: Callable[[], list[Check]]):
        if name in _REGISTRY and _REGISTRY[name].compute.__qualname__ != fn.__qualname__:
            raise ValueError(f"Two reproductions are named {name!r}; names must be unique.")
        _REGISTRY[name] = Reproduction(name, paper, what, fn, slow, settings, kind, source)
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


def _with_kind(rep: Reproduction, c: Check) -> Check:
    """``c`` with its entry's kind and source filled in where it states none."""
    kind = c.kind or (rep.kind if rep.kind in KINDS else None)
    # a paper value of a mixed entry may cite the entry's table; a derived one says its own how
    inherit = kind == rep.kind or (rep.kind == "mixed" and kind == "paper")
    source = c.source or (rep.source if inherit else "")
    return replace(c, kind=kind, source=source)


def unlabelled(rep: Reproduction, checks: list[Check]) -> list[str]:
    """Quantities of ``checks`` whose reference value says no kind (paper / derived) or no source."""
    return [c.quantity for c in checks if c.kind not in KINDS or not str(c.source).strip()]


def run(name: str) -> Result:
    """Compute one reproduction. Errors inside it are reported in ``Result.error``; so is a check
    whose reference value says neither "paper" nor "derived", or not where it comes from."""
    rep = get(name)
    t0 = time.perf_counter()
    try:
        checks = [_with_kind(rep, c) for c in rep.compute()]
        err = None
        if rep.kind is not None:  # an entry that states kinds states them for every value
            missing = unlabelled(rep, checks)
            if missing:
                err = ("ValueError: these reference values do not say whether they are printed in the paper or "
                       f"derived by us, or where they come from: {'; '.join(missing)}")
    except Exception as exc:  # reported, never raised: the page and the CLI show it
        checks, err = [], f"{type(exc).__name__}: {exc}"
    return Result(rep.name, rep.paper, rep.what, checks, time.perf_counter() - t0, err, rep.kind, rep.source)


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
            rows.append({"reproduction": r.name, "quantity": "(error)", "reference": "", "paper": "",
                         "computed": r.error, "tolerance": "", "pass": False, "source": ""})
        for c in r.checks:
            tol = "" if c.passed is not None else (f"{c.tol:g} (rel)" if c.rel else f"{c.tol:g}")
            rows.append({"reproduction": r.name, "quantity": c.quantity, "reference": kind_label(c.kind),
                         "paper": format_value(c.paper), "computed": format_value(c.computed), "tolerance": tol,
                         "pass": c.ok(), "source": c.source})
    return rows
