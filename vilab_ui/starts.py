"""Starting points typed by a student into a page's text box ("mu,sigma^2; mu,sigma^2"): parsing
and appending a clicked point (the vector-field page). Presentation code: no jax here."""

from __future__ import annotations

import math

__all__ = ["parse_starts", "append_start", "MAX_STARTS"]

MAX_STARTS = 8  # starting points drawn at most (each one runs every chosen rule)


def parse_starts(text: str, max_starts: int | None = MAX_STARTS) -> list[tuple[float, float]]:
    """'0,0.1; 0.5,0.02' -> [(0.0, 0.1), (0.5, 0.02)] (parentheses and spaces allowed), at most
    ``max_starts`` (None: all of them); ValueError with a sentence a student understands otherwise."""
    out = []
    for part in str(text).replace("(", "").replace(")", "").split(";"):
        if not part.strip():
            continue
        bits = [b for b in part.replace(" ", ",").split(",") if b]
        try:
            mu, s2 = (float(b) for b in bits) if len(bits) == 2 else (None, None)
        except ValueError:
            mu = None
        if mu is None:
            raise ValueError(f"Write starting points as 'mu,sigma^2; mu,sigma^2'; could not read {part.strip()!r}.")
        if not (math.isfinite(mu) and math.isfinite(s2) and s2 > 0):
            raise ValueError(f"A starting point needs a finite mean and a positive variance; got ({mu:g}, {s2:g}).")
        out.append((mu, s2))
    if not out:
        raise ValueError("Give at least one starting point, e.g. '0,0.1'.")
    return out if max_starts is None else out[: int(max_starts)]


def append_start(text: str, mu: float, s2: float, max_starts: int | None = MAX_STARTS) -> str:
    """``text`` with the start (mu, s2) appended (3 significant digits), for the page's text box.
    ValueError when the point is not a start, or when ``text`` already holds ``max_starts`` starts
    (None: no limit), since :func:`parse_starts` would not draw it."""
    if not (math.isfinite(mu) and math.isfinite(s2) and s2 > 0):
        raise ValueError(f"A starting point needs a finite mean and a positive variance; got ({mu:g}, {s2:g}).")
    n = sum(1 for part in str(text).split(";") if part.strip())
    if max_starts is not None and n >= int(max_starts):
        raise ValueError(f"At most {int(max_starts)} starting points are drawn, and there are {n} already: remove one "
                         "from the text box (or press 'reset starts') before adding another.")
    new = f"{mu:.3g},{s2:.3g}"
    return f"{text.strip()}; {new}" if str(text).strip() else new
