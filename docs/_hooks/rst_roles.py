"""mkdocs hook: turn the reStructuredText roles of vilab's docstrings into links.

vilab's docstrings cross-reference with Sphinx roles (``:func:`run```, ``:class:`~vilab.core.Trace```).
mkdocstrings renders them as the role name followed by inline code (``:func:<code>run</code>``). This
hook, on the API pages, replaces each with an *optional* mkdocs-autorefs reference: the name is
resolved like Python would from the object the docstring belongs to (the nearest preceding API
heading: its own attribute, then its module, then each enclosing package), and left as plain code
when it names nothing the reference documents. Optional references never produce a warning, so
the strict build stays strict about the references written in the Markdown pages.
"""

from __future__ import annotations

import html
import importlib
import re
from functools import lru_cache

_ROLE = re.compile(r":(?:py:)?(func|class|mod|meth|data|attr|obj|exc|const):<code>(~?)([^<]+?)</code>")
_HEADING = re.compile(r'<h[1-6] id="(vilab(?:\.[A-Za-z_][A-Za-z0-9_]*)*)"')


@lru_cache(maxsize=None)
def _exists(path: str) -> bool:
    """Whether the dotted ``path`` names a module or an attribute reachable from one."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # not a module (or one that cannot be imported here): try a shorter prefix
            continue
        try:
            for name in parts[cut:]:
                obj = getattr(obj, name)
        except AttributeError:
            return False
        return True
    return False


def _candidates(name: str, context: str | None):
    if name.startswith("vilab"):
        yield name
        return
    if context is None:
        return
    ctx = context.split(".")
    if name.startswith("."):  # relative to the package of the context's module
        dots = len(name) - len(name.lstrip("."))
        rest = name.lstrip(".")
        for cut in range(len(ctx), 0, -1):  # find the module part of the context
            if _is_module(".".join(ctx[:cut])):
                base = ctx[:cut] if _is_package(".".join(ctx[:cut])) else ctx[:cut - 1]
                base = base[: len(base) - (dots - 1)] if dots > 1 else base
                yield ".".join([*base, rest]) if rest else ".".join(base)
                return
        return
    for cut in range(len(ctx), 0, -1):
        yield ".".join([*ctx[:cut], name])


@lru_cache(maxsize=None)
def _is_module(path: str) -> bool:
    try:
        importlib.import_module(path)
        return True
    except Exception:
        return False


@lru_cache(maxsize=None)
def _is_package(path: str) -> bool:
    try:
        return hasattr(importlib.import_module(path), "__path__")
    except Exception:
        return False


def _resolve(name: str, context: str | None) -> str | None:
    name = name.strip().rstrip("()")
    for cand in _candidates(name, context):
        if _exists(cand):
            return cand
    return None


def on_page_content(html_text: str, page, config, files):  # noqa: ARG001 (mkdocs hook signature)
    if not page.file.src_uri.startswith("api/"):
        return html_text
    headings = [(m.start(), m.group(1)) for m in _HEADING.finditer(html_text)]

    def context_at(pos: int) -> str | None:
        ctx = None
        for start, ident in headings:
            if start > pos:
                break
            ctx = ident
        return ctx

    def replace(m: re.Match) -> str:
        tilde, raw = m.group(2), html.unescape(m.group(3))
        shown = raw.lstrip(".").split(".")[-1] if tilde else raw
        target = _resolve(raw, context_at(m.start()))
        code = f"<code>{html.escape(shown)}</code>"
        if target is None:
            return code
        return f'<autoref identifier="{html.escape(target)}" optional>{code}</autoref>'

    return _ROLE.sub(replace, html_text)
