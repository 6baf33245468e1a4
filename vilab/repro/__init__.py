"""Registry of reproductions: the papers' numbers beside the ones vilab computes.

Each reproduction is a function returning a list of :class:`Check` rows, registered with
:func:`reproduction`. Modules of this package (``vilab/repro/*.py``) are discovered and
imported on first use, so adding a file adds its entries; the names are part of the public
interface (``vilab repro NAME``).

Every reference value says its **kind**:

* ``"paper"``: printed in the paper; ``source`` names where (table / figure / equation, page or section);
* ``"derived"``: not printed in the paper, computed by us for a setting the paper does not pin;
  ``source`` says how (the formula, the independent computation, the setting chosen);
* ``"regression"``: a value this same code produced before (no independent reference): it guards against
  change, it does not reproduce anything, and it reads "regression (same code)" on screen.

Every compared value also says where its **tolerance** comes from (``tol_source``, one of
:data:`TOL_SOURCES`, e.g. "printed precision" or "Monte Carlo s.e.: 2 s.e."); one set after seeing the
result says so ("set after seeing the result: ..."). An entry may state one ``tol_source`` for all its checks.
A value shown only for context is ``reported=True``: it reads REPORTED, never PASS, and an entry's verdict
counts only the compared values. A claim without a number to compare ("A beats B") gives its ``margin``
(how far the claim holds by: it passes when the margin is > 0, so a tie fails, or >= 0 with ``ties=True`` where
the paper's claim is "at most" / "at least"); :meth:`Check.mutated` moves any compared value past its
tolerance, so a test can see that every PASS of the registry can fail.

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

__all__ = ["KINDS", "ENTRY_KINDS", "TOL_SOURCES", "Check", "Reproduction", "Result", "reproduction", "entries", "get", "run",
           "table_rows", "format_value", "import_errors", "kind_label", "unlabelled", "without_tol_source",
           "tol_source_error", "verdict_text", "entry_items", "inventory_markdown"]


#: kinds of reference value: printed in the paper, derived by us for a setting the paper does not pin, or a value
#: recorded from this same code (a regression value, not a reproduction)
KINDS = ("paper", "derived", "regression")
#: what an entry may declare: one kind for all its checks, or "mixed" (each check says its own)
ENTRY_KINDS = KINDS + ("mixed",)


def kind_label(kind: str | None) -> str:
    """How a kind reads on screen."""
    return {"paper": "paper", "derived": "derived", "regression": "regression (same code)",
            "mixed": "paper + derived"}.get(kind or "", "(not stated)")


#: where a tolerance may come from: a check's ``tol_source`` starts with one of these (then ": " and details)
TOL_SOURCES = {
    "exact": "compared exactly: integers, labels, or an identity that holds to the last bit",
    "round-off": "two computations of the same number agree to floating-point round-off",
    "solver tolerance": "an iterative solver / quadrature stops at this accuracy",
    "printed precision": "half a unit of the paper's last printed digit (or the digits it prints)",
    "Monte Carlo s.e.": "a multiple of a Monte Carlo standard error",
    "modelling difference": "our setting differs from the paper's in a stated way",
    "chosen threshold": "a threshold chosen by us, with the reason stated (not from the paper or an error estimate)",
    "the paper's claim": "an ordering or bound the paper states, with no slack (a tie fails unless the claim is "
                         "'at most' / 'at least')",
    "set after seeing the result": "chosen after the computed value was seen: a weak check",
}


def tol_source_error(text: str) -> str | None:
    """Why ``text`` is not a valid ``tol_source`` (None when it is)."""
    t = str(text or "").strip()
    if not t:
        return "it is empty"
    if not any(t == k or t.startswith(k + ":") for k in TOL_SOURCES):
        return (f"{t!r} does not start with one of: {', '.join(TOL_SOURCES)} (then ': ' and details)")
    return None


@dataclass(frozen=True)
class Check:
    """One compared quantity.

    ``paper`` and ``computed`` are numbers, strings or tuples of numbers. With ``margin`` given
    (how far a claim holds by), the check passes when ``margin > 0`` (``>= 0`` with ``ties=True``);
    with ``passed`` given, when it is true (such a check cannot be mutated: prefer ``margin``);
    otherwise numbers pass when ``|computed - paper| <= tol`` (or ``<= tol * |paper|`` with
    ``rel=True``), element by element for tuples, and anything else passes when equal.

    ``reported=True``: the value is shown for context, not compared (status REPORTED).
    ``tol_source``: where the tolerance (or the margin's threshold) comes from, see :data:`TOL_SOURCES`.

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
    tol_source: str = ""
    reported: bool = False
    margin: float | None = None
    ties: bool = False

    def __post_init__(self):
        if self.kind is not None and self.kind not in KINDS:
            raise ValueError(f"A check's reference kind is 'paper', 'derived' or 'regression', not {self.kind!r}.")
        if self.passed is not None and self.margin is not None:
            raise ValueError(f"Check {self.quantity!r}: give either passed or margin, not both.")
        if self.reported and (self.passed is not None or self.margin is not None):
            raise ValueError(f"Check {self.quantity!r} is reported (not compared): it takes no passed or margin.")
        if self.tol_source and tol_source_error(self.tol_source):
            raise ValueError(f"The tolerance source of check {self.quantity!r}: {tol_source_error(self.tol_source)}.")

    @property
    def status(self) -> str:
        """REPORTED (shown for context), PASS or FAIL."""
        if self.reported:
            return "REPORTED"
        return "PASS" if self._holds() else "FAIL"

    def ok(self) -> bool:
        """True when this is a compared value and it passes (a reported value is never a PASS)."""
        return self.status == "PASS"

    def _holds(self) -> bool:
        if self.margin is not None:
            m = float(self.margin)  # +inf: the claim holds against a run that diverged; nan never holds
            return not math.isnan(m) and (m >= 0 if self.ties else m > 0)
        if self.passed is not None:
            return bool(self.passed)
        return _close(self.paper, self.computed, self.tol, self.rel)

    def tolerance_text(self) -> str:
        """The tolerance as it reads in a table."""
        if self.reported:
            return "(reported)"
        if self.margin is not None:
            return f"margin {float(self.margin):.4g} {'>=' if self.ties else '>'} 0"
        if self.passed is not None:
            return ""
        return f"{self.tol:g} (rel)" if self.rel else f"{self.tol:g}"

    def mutated(self) -> Check:
        """A copy whose computed value (or margin) lies past the tolerance: it must read FAIL.

        ValueError for a reported value (nothing is compared) and for a check given as ``passed=``
        (its quantity and threshold are not known: give ``margin`` instead)."""
        if self.reported:
            raise ValueError(f"Check {self.quantity!r} is reported, not compared: there is nothing to mutate.")
        if self.margin is not None:
            return replace(self, margin=-abs(float(self.margin)) - 1.0)
        if self.passed is not None:
            raise ValueError(f"Check {self.quantity!r} is given as passed=...: give its margin so it can be mutated.")
        return replace(self, computed=_past(self.paper, self.computed, self.tol, self.rel))

    def as_dict(self) -> dict:
        return {
            "quantity": self.quantity,
            "paper": _plain(self.paper),
            "computed": _plain(self.computed),
            "tol": self.tol,
            "rel": self.rel,
            "pass": self.ok(),
            "status": self.status,
            "margin": None if self.margin is None else float(self.margin),
            "note": self.note,
            "kind": self.kind,
            "source": self.source,
            "tol_source": self.tol_source,
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


def _past(paper, computed, tol, rel):
    """``computed`` moved past the tolerance around ``paper`` (the first element of a tuple)."""
    paper, computed = _plain(paper), _plain(computed)
    if isinstance(computed, list):
        if not computed:
            return ["(mutated)"]
        first = _past(paper[0] if isinstance(paper, list) and paper else paper, computed[0], tol, rel)
        return [first] + computed[1:]
    if isinstance(computed, bool):
        return not computed
    if isinstance(computed, (int, float)) and isinstance(paper, (int, float)) and not isinstance(paper, bool):
        bound = tol * abs(paper) if rel else tol
        return float(paper) + 2.0 * bound + 1e-3 * max(abs(float(paper)), 1.0)
    if isinstance(computed, (int, float)):
        return float(computed) + 1e-3 * max(abs(float(computed)), 1.0) + 1.0
    return f"{computed} (mutated)"


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
    tol_source: str = ""
    items: tuple[str, ...] = ()


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
    def compared(self) -> list[Check]:
        """The checks that are compared (not reported for context)."""
        return [c for c in self.checks if not c.reported]

    @property
    def status(self) -> str:
        """ERROR, FAIL, PASS, or REPORTED (only values shown for context: nothing compared)."""
        if self.error is not None or not self.checks:
            return "ERROR" if self.error is not None else "FAIL"
        if not self.compared:
            return "REPORTED"
        return "PASS" if all(c.ok() for c in self.compared) else "FAIL"

    @property
    def passed(self) -> bool:
        """Every compared value passes (reported ones do not count) and at least one is compared."""
        return self.status == "PASS"

    def counts(self) -> dict[str, int]:
        """How many checks read PASS, FAIL, REPORTED."""
        out = {"PASS": 0, "FAIL": 0, "REPORTED": 0}
        for c in self.checks:
            out[c.status] += 1
        return out

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "paper": self.paper,
            "what": self.what,
            "kind": self.kind,
            "source": self.source,
            "pass": self.passed,
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "error": self.error,
            "checks": [c.as_dict() for c in self.checks],
        }


_REGISTRY: dict[str, Reproduction] = {}
_DISCOVERED = False
_IMPORT_ERRORS: dict[str, str] = {}


def reproduction(name: str, *, paper: str, what: str, slow: bool = False, settings: str = "",
                 kind: str | None = None, source: str = "", tol_source: str = "", items: tuple[str, ...] = ()):
    """Decorator registering ``fn() -> list[Check]`` under ``name``.

    ``kind``: "paper" (every reference value is printed in the paper, ``source`` says where),
    "derived" (computed by us, ``source`` says how), "regression" (recorded from this code) or "mixed"
    (each Check says its own). Every entry of vilab/repro states both (tests/test_repro_registry.py checks it).
    ``tol_source``: the tolerance source of every check that states none (see :data:`TOL_SOURCES`).
    ``items``: the paper items this entry exercises, as keys of ``vilab.repro._inventory.ITEMS``
    (DEVELOPING.md's inventory is generated from them).
    """
    if kind is not None and kind not in ENTRY_KINDS:
        raise ValueError(f"The kind of reproduction {name!r} must be one of {', '.join(ENTRY_KINDS)}, not {kind!r}.")
    if tol_source and tol_source_error(tol_source):
        raise ValueError(f"The tolerance source of reproduction {name!r}: {tol_source_error(tol_source)}.")
    if isinstance(items, str):
        items = (items,)

    def deco(fn: Callable[[], list[Check]]):
        if name in _REGISTRY and _REGISTRY[name].compute.__qualname__ != fn.__qualname__:
            raise ValueError(f"Two reproductions are named {name!r}; names must be unique.")
        _REGISTRY[name] = Reproduction(name, paper, what, fn, slow, settings, kind, source, tol_source, tuple(items))
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
    tol_source = c.tol_source or ("" if c.reported else rep.tol_source)
    return replace(c, kind=kind, source=source, tol_source=tol_source)


def unlabelled(rep: Reproduction, checks: list[Check]) -> list[str]:
    """Quantities of ``checks`` whose reference value says no kind (paper / derived) or no source."""
    return [c.quantity for c in checks if c.kind not in KINDS or not str(c.source).strip()]


def without_tol_source(checks: list[Check]) -> list[str]:
    """Quantities of the compared ``checks`` that do not say where their tolerance comes from."""
    return [c.quantity for c in checks if not c.reported and tol_source_error(c.tol_source)]


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


def entry_items(rep: Reproduction) -> tuple[str, ...]:
    """The paper items ``rep`` declares it exercises (keys of ``vilab.repro._inventory.ITEMS``)."""
    return rep.items


def inventory_markdown() -> str:
    """DEVELOPING.md's section "Inventory: the papers' items in vilab", generated: one row per paper item, its
    reproduction column the entries that declare the item. ValueError for an entry declaring an unknown item."""
    from ._inventory import HEADING, INTRO, ITEMS

    by_item: dict[str, list[str]] = {i.key: [] for i in ITEMS}
    for e in entries():
        for k in entry_items(e):
            if k not in by_item:
                raise ValueError(f"Reproduction {e.name!r} declares the item {k!r}, which is not in "
                                 "vilab/repro/_inventory.py's ITEMS.")
            by_item[k].append(e.name)
    lines = [HEADING, "", INTRO, "", "| Paper | Item | Package | Page | Reproduction | Missing |",
             "|---|---|---|---|---|---|"]
    for i in ITEMS:
        names = ", ".join(f"`{n}`" for n in by_item[i.key]) or "—"
        lines.append(f"| {i.paper} | {i.item} | {i.package} | {i.page} | {names} | {i.missing} |".replace("|  |", "| |"))
    return "\n".join(lines) + "\n"


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
                         "computed": r.error, "tolerance": "", "status": "ERROR", "tolerance from": "",
                         "source": ""})
        for c in r.checks:
            rows.append({"reproduction": r.name, "quantity": c.quantity, "reference": kind_label(c.kind),
                         "paper": format_value(c.paper), "computed": format_value(c.computed),
                         "tolerance": c.tolerance_text(), "status": c.status,
                         "tolerance from": "" if c.reported else (c.tol_source or "(not stated)"),
                         "source": c.source})
    return rows


def verdict_text(r: Result) -> str:
    """An entry's verdict with its counts, e.g. "PASS (5 compared, 2 reported)"."""
    n = r.counts()
    parts = [f"{len(r.compared)} compared"] + ([f"{n['REPORTED']} reported"] if n["REPORTED"] else [])
    return f"{r.status} ({', '.join(parts)})"
