"""The "Download figure" menu under a page's main figure and under every animation (``ui.show`` adds it).

PNG, SVG and GIF are drawn by :mod:`vilab.plots.export` (kaleido and the server's Chromium) only when
the user clicks: each button hands Streamlit a callable (``st.download_button(data=callable)``, run on
click in its own thread), never bytes made on every rerun. What a click drew is kept in a store shared
by every session, keyed by the format and the figure's JSON, so a second click (or a second student)
gets it at once. Without Chromium the image buttons are disabled and the menu says why; HTML works.
"""

from __future__ import annotations

import hashlib
import json
import re
import time

import plotly.io as pio
import streamlit as st

from vilab.plots import export

__all__ = ["menu", "FORMATS", "rendered", "render_available"]

#: format -> (button label, file extension, MIME type, help)
FORMATS = {
    "png": ("PNG image", "png", "image/png", "A sharp 1920 × 1080 picture for any slide program."),
    "svg": ("SVG (vector)", "svg", "image/svg+xml", "Lines and text stay sharp at any size (PowerPoint, Keynote, "
                                                    "LaTeX via Inkscape)."),
    "html": ("HTML (interactive)", "html", "text/html", "A web page with the live figure (zoom, hover, play); "
                                                       "it works offline."),
    "gif": ("GIF animation", "gif", "image/gif", f"The animation as a looping GIF (at most {export.MAX_GIF_FRAMES} "
                                                 "frames); drawing it takes a while."),
}

_STORE = None
_AVAILABLE: dict = {}
_AVAILABLE_TTL_S = 300.0  # look for Chromium again after this long (it may have been installed meanwhile)


def _store():
    global _STORE
    if _STORE is None:
        from vilab_ui.caching import SharedStore

        _STORE = SharedStore(maxsize=24, ttl_s=3600.0)
    return _STORE


def render_available() -> str | None:
    """None when PNG / SVG / GIF can be drawn here, else the sentence saying why not (checked every 5 minutes)."""
    now = time.monotonic()
    if not _AVAILABLE or now - _AVAILABLE["at"] > _AVAILABLE_TTL_S:
        _AVAILABLE.update(at=now, reason=export.unavailable_reason())
    return _AVAILABLE["reason"]


def _make(fmt: str, fig_json: str) -> bytes:
    d = json.loads(fig_json)
    if fmt == "png":
        return export.to_png(d)
    if fmt == "svg":
        return export.to_svg(d)
    if fmt == "gif":
        return export.to_gif(d)
    return export.to_html(d)


def rendered(fmt: str, fig) -> bytes:
    """The figure's file in ``fmt`` ("png", "svg", "html", "gif"), from the shared store when this figure
    was drawn before (keyed by its JSON), else drawn now and stored."""
    if fmt not in FORMATS:
        raise ValueError(f"Export formats are {', '.join(FORMATS)}; got {fmt!r}.")
    fig_json = fig if isinstance(fig, str) else pio.to_json(fig, validate=False)
    key = (fmt, hashlib.sha256(fig_json.encode()).hexdigest())
    store = _store()
    data = store.get(key)
    if data is None:
        data = _make(fmt, fig_json)
        store[key] = data
    return data


def _slug(text) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", str(text or "").lower()).strip("-")
    return s[:40].strip("-")


def _file_stem(key: str | None) -> str:
    page = _slug(st.session_state.get("_vilab_scope", ""))
    return "-".join(p for p in ("vilab", page, _slug(key) or "figure") if p)


def menu(fig, key: str | None = None, animation: bool | None = None) -> None:
    """A small "Download figure" popover: PNG, SVG and HTML buttons, and GIF for an animated figure.

    ``fig`` is the figure as drawn (ui.show styles it first, so lecture mode's large text is kept).
    Nothing is drawn until a button is clicked."""
    animation = export.has_frames(fig) if animation is None else animation
    tag = _slug(key) or f"fig{id(fig)}"
    reason = render_available()
    stem = _file_stem(key)
    with st.popover("Download figure", icon=":material/download:", key=f"dl_{tag}"):
        st.caption("For a 16:9 slide, as shown here. Made when you click (a GIF takes longer).")
        fmts = ["png", "svg", "html"] + (["gif"] if animation else [])
        for fmt in fmts:
            label, ext, mime, help_ = FORMATS[fmt]
            needs_browser = fmt != "html"
            off = needs_browser and reason is not None
            st.download_button(label, data=lambda fmt=fmt: rendered(fmt, fig), file_name=f"{stem}.{ext}", mime=mime,
                               key=f"dl_{tag}_{fmt}", on_click="ignore", disabled=off, width="stretch",
                               help=reason if off else help_)
        if reason is not None:
            st.caption(reason)
