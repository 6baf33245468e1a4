"""A griffe extension (loaded by mkdocstrings, see mkdocs.yml) that keeps the layout of vilab's
plain-text docstrings when they are rendered as Markdown.

vilab's docstrings are written for ``help()``: aligned columns, ``name : description`` lines, RST
``Section`` / ``-------`` underlines and ``::`` before indented examples. Read as Markdown, their
single line breaks vanish and aligned tables collapse into one paragraph. This extension rewrites
the docstring text only (never the code), block by block:

* a block with aligned columns (three or more spaces between words) is shown as preformatted text;
* ``name : description`` entries and bullet items start on their own lines, and ``<`` / ``>`` in
  prose are text (``"diverged: <reason>"`` would otherwise vanish as an HTML tag);
* an underlined title becomes a bold line, and a trailing ``::`` becomes ``:`` (the indented
  block after it is already a Markdown code block).
"""

from __future__ import annotations

import re

import griffe

_ALIGNED = re.compile(r"\S {3,}\S")
_ENTRY = re.compile(r"^[\w\[\]().,*=/'\" -]{1,100} : \S")
_BULLET = re.compile(r"^(?:[*-] |\d+\. )")
_UNDERLINE = re.compile(r"^(-{3,}|={3,}|~{3,})$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+[^`]*`+)")


def _escape_angles(line: str) -> str:
    """``<reason>`` in prose is text, not an HTML tag: escape < and > outside code spans."""
    parts = _CODE_SPAN.split(line)
    return "".join(p if i % 2 else p.replace("<", "&lt;").replace(">", "&gt;") for i, p in enumerate(parts))


def _blocks(lines):
    """Split into (kind, lines): "fence" blocks (kept as they are) and "text" blocks between blank lines."""
    block, fenced = [], False
    for line in lines:
        if _FENCE.match(line):
            if not fenced:
                if block:
                    yield "text", block
                block, fenced = [line], True
            else:
                block.append(line)
                yield "fence", block
                block, fenced = [], False
            continue
        if fenced:
            block.append(line)
        elif line.strip():
            block.append(line)
        else:
            if block:
                yield "text", block
            block = []
            yield "blank", [""]
    if block:
        yield ("fence" if fenced else "text"), block


def _rewrite_block(block):
    if all(line.startswith("    ") for line in block):  # an indented (code) block
        return block
    # RST / numpy section titles: "Parameters" over "----------"
    out = []
    for line in block:
        if _UNDERLINE.match(line.strip()) and out and not _UNDERLINE.match(out[-1].strip()):
            out[-1] = f"**{out[-1].strip()}**"
            out.append("")
            continue
        out.append(line)
    block = out
    if any(_ALIGNED.search(line.strip()) for line in block if line.strip()):
        return ["```text", *block, "```"]
    block = [_escape_angles(line) for line in block]
    out = []
    for i, line in enumerate(block):
        text = line.strip()
        if i and out and out[-1] != "":
            if _BULLET.match(text) and not _BULLET.match(block[i - 1].strip()) and not block[i - 1].startswith(" "):
                out.append("")  # Markdown lists need a blank line before them
            elif _ENTRY.match(line):
                out[-1] = out[-1] + "  "  # a hard line break before each "name : description" entry
        out.append(line)
    if out and out[-1].rstrip().endswith("::"):
        out[-1] = out[-1].rstrip()[:-1]
    return out


def rewrite(text: str) -> str:
    lines = text.splitlines()
    out = []
    for kind, block in _blocks(lines):
        out.extend(_rewrite_block(block) if kind == "text" else block)
    return "\n".join(out)


class PlainDocstrings(griffe.Extension):
    """Rewrite every docstring of the loaded package with :func:`rewrite`."""

    def on_instance(self, *, obj, **kwargs) -> None:  # noqa: ARG002 (griffe's hook signature)
        doc = getattr(obj, "docstring", None)
        if doc is not None and doc.value and not getattr(obj, "is_alias", False):
            doc.value = rewrite(doc.value)
