"""Slide export: a Plotly figure as PNG, SVG or standalone HTML; an animated figure as a GIF.

A lecturer takes a figure out of the app for slides. Static images (PNG, SVG) and the frames of a GIF
are drawn by Plotly's own renderer, kaleido, which drives a headless Chromium: the system one
(``/usr/bin/chromium``, installed by ``scripts/ensure_chromium.sh``; the environment variable
``VILAB_CHROMIUM`` names another). One Chromium is started on the first export and kept for the
process (every session of a Streamlit server shares it); nothing is rendered before someone asks.
Without Chromium, :func:`can_render` is False, the image exports raise :class:`ExportUnavailable`
with a sentence saying what to install, and HTML still works (it needs no browser on the server).

HTML files inline plotly.js, so they open and play offline (a projector laptop without a network).

Sizes are slide sizes: :data:`SLIDE_WIDTH` x :data:`SLIDE_HEIGHT` CSS pixels (16:9), about the size
of the figure on a laptop screen, so texts keep the proportions they have there (a lecture-mode
figure keeps its >= 18 px texts), drawn at ``scale`` 2: a PNG is 1920 x 1080, a full-HD slide.
A GIF's frames are drawn at the same layout, at scale 1 (960 x 540: quick to draw, small to load).
"""

from __future__ import annotations

import asyncio
import atexit
import html
import io
import json
import os
import threading

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

__all__ = ["SLIDE_WIDTH", "SLIDE_HEIGHT", "PNG_SCALE", "GIF_WIDTH", "GIF_HEIGHT", "MAX_GIF_FRAMES",
           "MAX_PIXELS", "ExportUnavailable", "chromium_path", "can_render", "unavailable_reason",
           "has_frames", "to_png", "to_svg", "to_html", "to_gif", "gif_frames", "frame_duration_ms",
           "slide_figure", "shutdown", "to_svgs", "html_to_pdf", "PDF_TIMEOUT_S"]

SLIDE_WIDTH = 960  #: CSS pixels of an exported figure (16:9 with SLIDE_HEIGHT)
SLIDE_HEIGHT = 540
PNG_SCALE = 2  #: device pixels per CSS pixel of a PNG: 1920 x 1080
GIF_WIDTH = SLIDE_WIDTH  #: a GIF's frames: the slide layout at scale 1, 960 x 540 pixels
GIF_HEIGHT = SLIDE_HEIGHT
MAX_GIF_FRAMES = 60  #: at most this many frames in a GIF (evenly chosen from the animation's)
MAX_PIXELS = 3840 * 2160  #: largest image (width x height x scale^2) drawn; a GIF frame at most 1920 x 1080
MAX_GIF_PIXELS = 1920 * 1080
DEFAULT_FRAME_MS = 100  #: a frame's duration when the figure's Play button does not say
MIN_FRAME_MS = 20  #: GIF viewers show shorter frames for 100 ms
RENDER_TIMEOUT_S = 90.0  #: one image; a GIF gets this for each of its frames

_NO_CHROMIUM = ("PNG, SVG and GIF export need Chromium on the server, and none was found: install it "
                "(`make test` does, or `apt-get install chromium`) or set VILAB_CHROMIUM to its path. "
                "HTML export works without it.")
_NO_KALEIDO = ("PNG, SVG and GIF export need the kaleido package (`make install` installs it). "
               "HTML export works without it.")


class ExportUnavailable(RuntimeError):
    """PNG, SVG or GIF export asked for where it cannot be drawn (no Chromium, no kaleido)."""


# ---------------------------------------------------------------------------------------------
# where the browser is


def chromium_path() -> str | None:
    """The Chromium kaleido drives: ``$VILAB_CHROMIUM`` if set, else the first Chromium-like browser
    choreographer finds (``$BROWSER_PATH``, ``chromium``, ``chromium-browser``, Chrome...); None when
    there is none (or kaleido is not installed)."""
    env = os.environ.get("VILAB_CHROMIUM")
    if env:
        return env if os.path.isfile(env) and os.access(env, os.X_OK) else None
    try:
        from choreographer.browsers.chromium import Chromium
    except ImportError:
        return None
    try:
        return Chromium.find_browser(skip_local=False)
    except Exception:  # noqa: BLE001 a best-effort search must not break a page
        return None


def unavailable_reason() -> str | None:
    """Why PNG / SVG / GIF export cannot work here (a sentence for the user), or None when it can."""
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return _NO_KALEIDO
    return None if chromium_path() else _NO_CHROMIUM


def can_render() -> bool:
    """True when PNG, SVG and GIF export can work here (kaleido installed and a Chromium found)."""
    return unavailable_reason() is None


# ---------------------------------------------------------------------------------------------
# checks and figure preparation


def _figure_dict(fig) -> dict:
    """A figure's JSON-ready dict (a deep copy: the caller's figure is never changed)."""
    if isinstance(fig, go.Figure):
        return json.loads(pio.to_json(fig, validate=False))
    if isinstance(fig, dict) and "data" in fig:
        return json.loads(json.dumps(fig, cls=_NumpyJSON))
    raise ValueError(f"Export needs a Plotly figure; got {type(fig).__name__}.")


class _NumpyJSON(json.JSONEncoder):
    def default(self, o):
        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, np.generic):
            return o.item()
        return super().default(o)


def _check_size(width, height, scale, max_pixels: int = MAX_PIXELS) -> tuple[int, int, float]:
    try:
        w, h, s = int(width), int(height), float(scale)
    except (TypeError, ValueError):
        raise ValueError(f"The export size must be numbers; got width {width!r}, height {height!r}, "
                         f"scale {scale!r}.") from None
    if w != width or h != height:
        raise ValueError(f"The export width and height are whole pixels; got {width!r} x {height!r}.")
    if not (100 <= w <= 4000 and 100 <= h <= 4000):
        raise ValueError(f"Export a figure between 100 and 4000 pixels wide and high; got {w} x {h}.")
    if not (np.isfinite(s) and 0.25 <= s <= 4):
        raise ValueError(f"The export scale must be between 0.25 and 4; got {scale!r}.")
    if w * h * s * s > max_pixels:
        raise ValueError(f"A {w} x {h} figure at scale {s:g} would be {int(w * s)} x {int(h * s)} pixels; "
                         f"the largest export is {max_pixels:,} pixels: lower the size or the scale.")
    return w, h, s


def slide_figure(fig, width: int = SLIDE_WIDTH, height: int = SLIDE_HEIGHT) -> dict:
    """The figure as a dict laid out at ``width`` x ``height`` CSS pixels (its fonts, title, annotations,
    template and margins as on screen; only the size changes), ready for kaleido or HTML."""
    d = _figure_dict(fig)
    lay = d.setdefault("layout", {})
    lay["width"], lay["height"] = int(width), int(height)
    lay["autosize"] = False
    return d


def has_frames(fig) -> bool:
    """True for an animated figure (Plotly frames)."""
    if isinstance(fig, go.Figure):
        return len(fig.frames) > 0
    return isinstance(fig, dict) and bool(fig.get("frames"))


# ---------------------------------------------------------------------------------------------
# the one kaleido / Chromium of the process


class _Renderer:
    """One kaleido (one headless Chromium, one tab) on its own event-loop thread, opened on first use
    and kept; renders are serialised by a lock (every session of a server shares it). A render that
    fails or times out closes the browser; the next one opens a fresh one."""

    def __init__(self):
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._k = None

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None or not self._thread or not self._thread.is_alive():
            loop = asyncio.new_event_loop()
            t = threading.Thread(target=loop.run_forever, name="vilab-kaleido", daemon=True)
            t.start()
            self._loop, self._thread = loop, t
        return self._loop

    async def _open(self):
        from kaleido import Kaleido

        path = chromium_path()
        if path is None:
            raise ExportUnavailable(_NO_CHROMIUM)
        k = Kaleido(n=1, timeout=RENDER_TIMEOUT_S, mathjax=False, path=path)
        await k.open()
        return k

    async def _close(self):
        k, self._k = self._k, None
        if k is not None:
            try:
                await asyncio.wait_for(k.close(), 10)
            except Exception:  # noqa: BLE001 closing a broken browser is best effort
                pass

    async def _render(self, specs: list[tuple[dict, dict]]) -> list[bytes]:
        try:
            if self._k is not None and getattr(self._k, "_vilab_broken", False):
                await self._close()
            if self._k is None:
                self._k = await self._open()
            return await _on_one_tab(self._k, specs)
        except BaseException:
            await self._close()
            raise

    def render(self, specs: list[tuple[dict, dict]]) -> list[bytes]:
        reason = unavailable_reason()
        if reason:
            raise ExportUnavailable(reason)
        with self._lock:
            loop = self._ensure_loop()
            fut = asyncio.run_coroutine_threadsafe(self._render(specs), loop)
            try:
                return fut.result(timeout=30 + RENDER_TIMEOUT_S * max(1, len(specs)))
            except TimeoutError:
                fut.cancel()
                asyncio.run_coroutine_threadsafe(self._close(), loop).result(15)
                raise RuntimeError("Drawing the image took too long; try again, or export HTML.") from None

    def shutdown(self) -> None:
        loop = self._loop
        if loop is None or not loop.is_running():
            return
        with self._lock:
            try:
                asyncio.run_coroutine_threadsafe(self._close(), loop).result(15)
            except Exception:  # noqa: BLE001 at exit: best effort
                pass
            loop.call_soon_threadsafe(loop.stop)
            self._loop = self._thread = None


async def _on_one_tab(k, specs: list[tuple[dict, dict]]) -> list[bytes]:
    """Draw every spec in one kaleido tab, reloading it once at the end, in the background: kaleido's
    public ``calc_fig`` reloads plotly.js after every image (about 0.3 s), which would dominate a
    60-frame GIF and delay every file. Uses kaleido 1.x internals (pinned in pyproject); falls back
    to ``calc_fig`` when they change. A tab that fails to reload marks the browser broken
    (``k._vilab_broken``): the next render opens a fresh one."""
    try:
        from kaleido import _profiler
        from kaleido._utils import fig_tools

        tab = await k._get_kaleido_tab()  # noqa: SLF001
    except (ImportError, AttributeError):
        return [await k.calc_fig(fig, opts) for fig, opts in specs]
    try:
        out = []
        for fig, opts in specs:
            spec = fig_tools.coerce_for_js(fig, None, opts)
            prof = _profiler.RenderTaskProfile(spec, None, tab.tab.target_id)
            out.append(await asyncio.wait_for(
                tab._calc_fig(spec, topojson=None, render_prof=prof, stepper=False),  # noqa: SLF001
                RENDER_TIMEOUT_S))
        return out
    finally:
        task = asyncio.ensure_future(_give_back(k, tab))
        _PENDING.add(task)  # a reference until done (the loop keeps only weak ones)
        task.add_done_callback(_PENDING.discard)


_PENDING: set = set()


async def _give_back(k, tab) -> None:
    try:
        await asyncio.wait_for(k._return_kaleido_tab(tab), RENDER_TIMEOUT_S)  # noqa: SLF001
    except BaseException:  # noqa: BLE001 the tab is lost: open a fresh browser next time
        k._vilab_broken = True


_RENDERER = _Renderer()
atexit.register(_RENDERER.shutdown)


def shutdown() -> None:
    """Close the export Chromium (it is reopened by the next export; called at exit)."""
    _RENDERER.shutdown()


def _static(fig, fmt: str, width, height, scale) -> bytes:
    w, h, s = _check_size(width, height, scale)
    return _RENDERER.render([(slide_figure(fig, w, h), {"format": fmt, "width": w, "height": h, "scale": s})])[0]


# ---------------------------------------------------------------------------------------------
# the formats


def to_png(fig, width: int = SLIDE_WIDTH, height: int = SLIDE_HEIGHT, scale: float = PNG_SCALE) -> bytes:
    """PNG bytes of ``fig`` laid out at ``width`` x ``height`` CSS pixels, drawn at ``scale``
    (default 960 x 540 at 2: a 1920 x 1080 image). Raises :class:`ExportUnavailable` without Chromium."""
    return _static(fig, "png", width, height, scale)


def to_svg(fig, width: int = SLIDE_WIDTH, height: int = SLIDE_HEIGHT) -> bytes:
    """SVG bytes (UTF-8) of ``fig`` at ``width`` x ``height``: vector lines and real text, for slides
    that scale. Raises :class:`ExportUnavailable` without Chromium."""
    return _static(fig, "svg", width, height, 1)


_HTML_STYLE = "<style>html, body { margin: 0; padding: 0; height: 100%; background: white; }</style>"


def to_html(fig, title: str | None = None) -> bytes:
    """A standalone HTML page (UTF-8 bytes) of ``fig`` with plotly.js inlined: it opens, zooms, hovers
    and (an animated figure) plays offline. The figure fills the browser window; an animation waits
    for its Play button. No browser is needed on the server."""
    d = _figure_dict(fig)
    lay = d.setdefault("layout", {})
    lay.pop("width", None)
    lay.pop("height", None)
    lay["autosize"] = True
    page = pio.to_html(d, include_plotlyjs=True, full_html=True, auto_play=False, validate=False,
                       default_width="100%", default_height="100vh",
                       config={"displaylogo": False, "responsive": True})
    if title is None:
        t = lay.get("title")
        title = (t.get("text") if isinstance(t, dict) else t) or "vilab figure"
    head = f"<title>{html.escape(str(title))}</title>{_HTML_STYLE}"
    page = page.replace("<head>", "<head>" + head, 1) if "<head>" in page else head + page
    return page.encode("utf-8")


def to_svgs(figs, width: int = SLIDE_WIDTH, height: int = SLIDE_HEIGHT) -> list[bytes]:
    """SVG bytes of each figure of ``figs`` at ``width`` x ``height``, drawn in one go by the process's kaleido
    (a deck's handout draws all its figures at once). Raises :class:`ExportUnavailable` without Chromium."""
    w, h, _ = _check_size(width, height, 1)
    figs = list(figs)
    if not figs:
        return []
    opts = {"format": "svg", "width": w, "height": h, "scale": 1}
    return _RENDERER.render([(slide_figure(f, w, h), opts) for f in figs])


PDF_TIMEOUT_S = 120.0  #: printing one HTML document to PDF


def html_to_pdf(page: bytes | str, timeout_s: float = PDF_TIMEOUT_S) -> bytes:
    """A PDF of an HTML document (a print-ready page: its own @page size and page breaks), printed by the same
    headless Chromium the image export drives (:func:`chromium_path`), from a temporary file, without header
    and footer. The document must hold everything it shows (images as data: URLs): nothing is fetched (the
    network is refused). Raises :class:`ExportUnavailable` without Chromium."""
    import shutil
    import subprocess
    import tempfile

    path = chromium_path()
    if path is None:
        raise ExportUnavailable(_NO_CHROMIUM)
    data = page.encode("utf-8") if isinstance(page, str) else bytes(page)
    tmp = tempfile.mkdtemp(prefix="vilab-pdf-")
    try:
        src, out = os.path.join(tmp, "page.html"), os.path.join(tmp, "page.pdf")
        with open(src, "wb") as f:
            f.write(data)
        cmd = [path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
               "--disable-extensions", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
               f"--user-data-dir={os.path.join(tmp, 'profile')}", "--no-pdf-header-footer",
               "--run-all-compositor-stages-before-draw", f"--print-to-pdf={out}", "file://" + src]
        try:
            proc = subprocess.run(cmd, capture_output=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise RuntimeError("Printing the handout took too long; try again.") from None
        if not os.path.isfile(out) or os.path.getsize(out) == 0:
            tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            raise RuntimeError(f"Chromium did not print the handout (exit code {proc.returncode}): {tail[0][:200]}")
        with open(out, "rb") as f:
            return f.read()
    finally:  # Chromium's helpers may still be closing its profile: whatever they leave is removed later
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# animations


def frame_duration_ms(fig) -> int:
    """How long each frame shows, in ms, as the figure's Play button says (the ``frame.duration`` of
    its animate button that plays every frame); :data:`DEFAULT_FRAME_MS` when it does not say."""
    lay = (fig if isinstance(fig, dict) else _figure_dict(fig)).get("layout") or {}
    for menu in lay.get("updatemenus") or ():
        for b in (menu.get("buttons") or ()) if isinstance(menu, dict) else ():
            args = b.get("args") or []
            if b.get("method") == "animate" and len(args) >= 2 and args[0] is None and isinstance(args[1], dict):
                dur = (args[1].get("frame") or {}).get("duration")
                try:
                    dur = float(dur)
                except (TypeError, ValueError):
                    continue
                if np.isfinite(dur) and dur > 0:
                    return max(MIN_FRAME_MS, int(round(dur)))
    return DEFAULT_FRAME_MS


def _merge(base: dict, over: dict) -> dict:
    """``over`` merged into ``base`` (nested dicts merged, everything else replaced), as a frame
    updates a trace or the layout."""
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _pick(n: int, max_frames: int) -> list[int]:
    """At most ``max_frames`` indices of n, evenly spread, first and last included."""
    if n <= max_frames:
        return list(range(n))
    return sorted({int(round(v)) for v in np.linspace(0, n - 1, max_frames)})


def gif_frames(fig, max_frames: int = MAX_GIF_FRAMES) -> list[dict]:
    """The still figures of an animation, one per frame (at most ``max_frames``, evenly chosen, first
    and last kept): the base figure with the frame's traces and layout merged in, as Plotly draws
    the frame. The Play / Pause buttons are dropped (a GIF plays by itself); the iteration slider
    stays, moved to the frame, so each image says which iteration it shows."""
    max_frames = _check_frames(max_frames)
    d = _figure_dict(fig)
    frames = d.pop("frames", None) or []
    if not frames:
        raise ValueError("This figure has no animation frames; export it as PNG, SVG or HTML instead.")
    base_data = d.get("data") or []
    lay = dict(d.get("layout") or {})
    lay.pop("updatemenus", None)
    sliders = lay.get("sliders") or []
    out = []
    for i in _pick(len(frames), max_frames):
        fr = frames[i]
        data = list(base_data)
        fdata = fr.get("data") or []
        idx = fr.get("traces")
        idx = list(range(len(fdata))) if idx is None else list(idx)
        for j, tr in zip(idx, fdata):
            if 0 <= j < len(data):
                data[j] = _merge(data[j], tr)
            else:
                data.append(tr)
        flay = _merge(lay, fr.get("layout") or {})
        name = fr.get("name")
        new_sliders = []
        for s in sliders:
            s = dict(s)
            steps = s.get("steps") or []
            at = next((k for k, st in enumerate(steps)
                       if name is not None and (st.get("args") or [None])[0] in ([name], name)), None)
            if at is None and len(steps) == len(frames):
                at = i
            if at is not None:
                s["active"] = at
            new_sliders.append(s)
        if new_sliders:
            flay["sliders"] = new_sliders
        out.append({"data": data, "layout": flay})
    return out


def _check_frames(max_frames) -> int:
    try:
        n = int(max_frames)
    except (TypeError, ValueError):
        raise ValueError(f"The number of GIF frames must be a whole number; got {max_frames!r}.") from None
    if n != max_frames or not 2 <= n <= MAX_GIF_FRAMES:
        raise ValueError(f"A GIF has between 2 and {MAX_GIF_FRAMES} frames; got {max_frames!r}.")
    return n


def _to_gif(pngs: list[bytes], duration_ms: int) -> bytes:
    from PIL import Image

    ims = [Image.open(io.BytesIO(b)).convert("RGB") for b in pngs]
    # one palette for every frame (no flicker): from the first and last frames, which between them
    # show every colour of the animation's start and end
    sample = Image.new("RGB", (ims[0].width, ims[0].height * 2), "white")
    sample.paste(ims[0], (0, 0))
    sample.paste(ims[-1], (0, ims[0].height))
    pal = sample.quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    frames = [im.quantize(palette=pal, dither=Image.Dither.NONE) for im in ims]
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:], duration=int(duration_ms),
                   loop=0, disposal=1, optimize=False)
    return buf.getvalue()


def to_gif(fig, max_frames: int = MAX_GIF_FRAMES, width: int = GIF_WIDTH, height: int = GIF_HEIGHT,
           scale: float = 1.0, duration_ms: int | None = None) -> bytes:
    """An animated GIF of an animated figure: one image per frame (at most ``max_frames``, see
    :func:`gif_frames`), each shown for the figure's own frame duration (:func:`frame_duration_ms`,
    or ``duration_ms``), looping forever; ``width`` x ``height`` CSS pixels at ``scale``, at most
    1920 x 1080 pixels. Raises :class:`ExportUnavailable` without Chromium, ValueError for a figure
    without frames."""
    w, h, s = _check_size(width, height, scale, max_pixels=MAX_GIF_PIXELS)
    stills = gif_frames(fig, max_frames)
    if duration_ms is None:
        duration_ms = frame_duration_ms(fig)
    elif not (isinstance(duration_ms, (int, float)) and np.isfinite(duration_ms) and duration_ms > 0):
        raise ValueError(f"A frame's duration is a positive number of milliseconds; got {duration_ms!r}.")
    opts = {"format": "png", "width": w, "height": h, "scale": s}
    specs = []
    for still in stills:
        lay = still["layout"]
        lay["width"], lay["height"], lay["autosize"] = w, h, False
        specs.append((still, opts))
    return _to_gif(_RENDERER.render(specs), max(MIN_FRAME_MS, int(round(duration_ms))))
