"""Messages in a student's words: plain text from user input, errors as warnings, run statuses.
"""

from __future__ import annotations

import re
from contextlib import contextmanager

import streamlit as st

# emphasis, code, links, images, HTML, formulas, tables, entities, and Streamlit's :colour[...] / :icon: directives
_MD_PUNCT = re.compile(r"([\\`*_\[\]$~|&]|<(?=[A-Za-z/!?])|:(?=[A-Za-z]))")  # "<" only where a tag could start
_MD_LINE_START = re.compile(r"^(\s*)([#>+=-]|\d+[.)])", re.MULTILINE)  # headings, quotes, lists at a line's start
_URLISH = re.compile(r"(\S*(?:://|www\.|@)\S*)", re.IGNORECASE)


def _code_span(s: str) -> str:
    fence = "`" * (max((len(m) for m in re.findall(r"`+", s)), default=0) + 1)
    return f"{fence} {s} {fence}"


def plain(text) -> str:
    """``text`` as Markdown that shows exactly these characters: no link, image, emphasis, heading or formula.

    For every message that may quote what a user typed or put in a URL (Streamlit renders st.warning,
    st.info, st.markdown... as Markdown, and turns bare addresses into links): Markdown punctuation is
    escaped with a backslash, and anything that looks like an address (``://``, ``www.``, ``@``) is shown
    as code, which the browser never turns into a link. Plain sentences come out unchanged."""
    parts = _URLISH.split(str(text))
    out = "".join(_code_span(p) if i % 2 else _MD_PUNCT.sub(r"\\\1", p) for i, p in enumerate(parts))
    return _MD_LINE_START.sub(lambda m: m.group(1) + m.group(2)[:-1] + "\\" + m.group(2)[-1], out)


class Guarded:
    """What :func:`guard` yields: ``ok`` is True while its block has not failed. A block that failed was
    cut short, so the names it was to assign may be missing: code after the block that uses them runs
    only ``if g.ok``."""

    __slots__ = ("ok",)

    def __init__(self):
        self.ok = True


@contextmanager
def guard(context: str = ""):
    """Show errors as messages, never as tracebacks.

    ValueError (bad input, explained by the library) becomes st.warning; any other exception
    becomes st.error with its message. Streamlit's own control flow (st.stop, reruns) passes.
    The message is shown as plain text (:func:`plain`): it may quote a value from the URL.

    ``with ui.guard("the fit") as fit:`` binds a :class:`Guarded`: a later block that needs what this one
    computed goes under ``if fit.ok:`` (else it would meet a name the failed block never assigned).
    """
    prefix = f"{context}: " if context else ""
    state = Guarded()
    try:
        yield state
    except ValueError as exc:
        state.ok = False
        st.warning(plain(f"{prefix}{exc}"))
    except Exception as exc:  # noqa: BLE001 - shown to the user instead of a traceback
        state.ok = False
        st.error(plain(f"{prefix}something went wrong ({type(exc).__name__}: {exc})."))


_STATUS_WORDS = {"converged": "converged", "max_steps": "ran all its steps", "max_time": "ran out of time",
                 "stopped": "stopped", "stalled": "stalled (no step size increased the ELBO)"}


def status_text(status: str) -> str:
    """A run's end status (vilab.core's vocabulary) in a student's words; "diverged: why" as it is."""
    return _STATUS_WORDS.get(status, status)


def report_status(trace_or_status, label: str = "") -> bool:
    """Warn when a run diverged; return True if it did."""
    status = getattr(trace_or_status, "status", trace_or_status)
    if isinstance(status, str) and status.startswith("diverged"):
        st.warning(plain(f"{label + ': ' if label else ''}{status}. The path is drawn up to the failure."))
        return True
    return False


