"""A deck to go: the whole deck as one offline HTML file (every view's figures, interactive; the question; the answer
on A; F / B to move; a link that opens the view live in the lab) or as a PDF handout (one page per view: figure,
question, answer).

Each view's figures are computed by running the view's page with the view's URL parameters under Streamlit's
AppTest, in a separate Python process (:func:`compute`): AppTest swaps Streamlit's process-wide runtime for a mock
while it runs, which a served lab (its other visitors' sessions) must never see. The worker reads the figures from
the element tree as the browser would be sent them (vilab's template, lecture style when the deck is presented in
lecture mode), one view at a time, and reports each view as it finishes, so the page can show progress; a view
that fails is reported with its reason and the export keeps the others, with a note.

The HTML inlines plotly.js (the full bundle of the installed plotly package, the same plotly.js version as vilab's
chart element) and references nothing outside itself: it works from ``file://`` with the network off. The PDF is a
print-ready HTML handout with each view's main figures as SVG images drawn by kaleido (vilab.plots.export, the
figure export's Chromium), printed to PDF by the same headless Chromium. Nothing is downloaded at run time.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence
from urllib.parse import urlencode, urlsplit, urlunsplit

from vilab_ui import decks

__all__ = ["ViewFigures", "compute", "view_figures", "deck_html", "deck_pdf", "handout_html", "lab_base_url", "view_link", "panel",
           "MAX_FIGURES_PER_VIEW", "VIEW_TIMEOUT_S"]

MAX_FIGURES_PER_VIEW = 8  #: a view's figures in the export: its main figures, then the page's others, in page order
VIEW_TIMEOUT_S = 600  #: one view's page run in the worker (a first run of some views takes tens of seconds)
PUBLIC_URL_ENV = "VILAB_PUBLIC_URL"  #: the lab's address for the links in an exported deck (else the request's)
_MAIN_SUFFIX = "-" + "main_figure"  # the id of the container of a page's main figure ends with its key


@dataclass(frozen=True)
class ViewFigures:
    """One view's figures as the browser is sent them (Plotly JSON dicts), main figures first; ``error``: why the
    view could not be computed (its figures then empty); ``seconds``: the page run's time."""

    figures: tuple[dict, ...] = ()
    main: int = 0  # how many of ``figures`` are the page's main figures (the first ones)
    error: str | None = None
    seconds: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)


# ---------------------------------------------------------------------------------------------
# computing the figures: one view's page under AppTest (in the worker process)


def _chart_specs(node) -> list[dict]:
    """The figures of the charts under ``node`` of an AppTest tree, in page order (vilab's chart element, or
    st.plotly_chart)."""
    from vilab_ui.chart import CHART_COMPONENT

    out = []
    for el in _elements(node):
        if el.type == "plotly_chart":
            out.append(json.loads(el.proto.spec))
        elif el.type == "bidi_component" and el.proto.component_name == CHART_COMPONENT:
            out.append(json.loads(el.proto.bytes)["figure"])
    return out


def _elements(node):
    from streamlit.testing.v1.element_tree import Block

    for ch in getattr(node, "children", {}).values():
        if isinstance(ch, Block):
            yield from _elements(ch)
        else:
            yield ch


def _main_blocks(node):
    from streamlit.testing.v1.element_tree import Block

    for ch in getattr(node, "children", {}).values():
        if isinstance(ch, Block):
            pid = getattr(ch.proto, "id", "") if ch.proto is not None else ""
            if isinstance(pid, str) and pid.endswith(_MAIN_SUFFIX):
                yield ch
            else:
                yield from _main_blocks(ch)


def view_figures(view: decks.View, lecture: bool, timeout_s: float = VIEW_TIMEOUT_S) -> ViewFigures:
    """Run ``view``'s page with its URL parameters under AppTest and read its figures. Only in a process of its own
    (:func:`compute` starts one): AppTest replaces Streamlit's runtime while it runs."""
    from streamlit.testing.v1 import AppTest

    t0 = time.perf_counter()
    at = AppTest.from_file(str(decks.page_file(view.page)), default_timeout=timeout_s)
    at.query_params.update(view.query())
    at.query_params["lecture"] = "1" if lecture else "0"
    try:
        at.run()
    except RuntimeError as exc:  # AppTest's own timeout
        return ViewFigures(error=_sentence(f"the page did not finish within {timeout_s:.0f} s ({exc})"),
                           seconds=time.perf_counter() - t0)
    seconds = time.perf_counter() - t0
    if at.exception:
        return ViewFigures(error=_sentence("the page stopped with an error: " + str(at.exception[0].value)),
                           seconds=seconds)
    main = [s for b in _main_blocks(at._tree) for s in _chart_specs(b)]  # noqa: SLF001 AppTest's element tree
    every = _chart_specs(at._tree)  # noqa: SLF001
    others = [s for s in every if not any(s is m or s == m for m in main)]
    figs = (main + others)[:MAX_FIGURES_PER_VIEW]
    notes = []
    if len(main) + len(others) > MAX_FIGURES_PER_VIEW:
        notes.append(f"The page draws {len(main) + len(others)} figures; the export keeps the first "
                     f"{MAX_FIGURES_PER_VIEW}.")
    warn = [str(w.value) for w in at.warning]
    if not figs:
        return ViewFigures(error=_sentence("the page drew no figure" + (f" ({warn[0]})" if warn else "")),
                           seconds=seconds)
    return ViewFigures(figures=tuple(figs), main=min(len(main), len(figs)), seconds=seconds, notes=tuple(notes))


def _sentence(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return text if text.endswith(".") else text + "."


def _worker() -> None:
    """The worker process: a job ({"views": [view JSON...], "lecture": bool}) on stdin; one JSON line per view on
    stdout ({"event": "start", "i"} then {"event": "done", "i", "figures", "main", "error", "seconds", "notes"})."""
    os.environ.setdefault("VILAB_CHART", "plotly")  # st.plotly_chart: its spec is in the element tree as it is
    try:  # the lab's compiled programs, as the server uses them (before anything is compiled)
        from vilab.core.compile_cache import enable_for_server

        enable_for_server(lambda text: print(text, file=sys.stderr))
    except ImportError:  # pragma: no cover - an older vilab
        pass
    job = json.loads(sys.stdin.read())
    out = sys.stdout
    lecture = bool(job.get("lecture"))
    for i, v in enumerate(job["views"]):
        print(json.dumps({"event": "start", "i": i}), file=out, flush=True)
        try:
            view = decks.make_view(v["page"], v.get("params"), v.get("prompt", ""), v.get("reveal", ""))
            got = view_figures(view, lecture, float(job.get("timeout_s", VIEW_TIMEOUT_S)))
        except Exception as exc:  # noqa: BLE001 one view's failure is reported; the others go on
            got = ViewFigures(error=_sentence(f"{type(exc).__name__}: {exc}"))
        print(json.dumps({"event": "done", "i": i, "figures": list(got.figures), "main": got.main,
                          "error": got.error, "seconds": round(got.seconds, 2), "notes": list(got.notes)},
                         default=_jsonable), file=out, flush=True)


def _jsonable(o):
    try:
        import numpy as np

        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, np.generic):
            return o.item()
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"{type(o).__name__} is not JSON")


_ONE_AT_A_TIME = threading.Semaphore(1)  # one export computes at a time on this server (each runs every view's page)
_CACHE: OrderedDict = OrderedDict()  # (deck JSON, lecture) -> list[ViewFigures], the last few exports
_CACHE_SIZE = 4
_CACHE_LOCK = threading.Lock()

Progress = Callable[[int, int, str], None]  # (views done, views in all, what is happening) -> None


def compute(deck: decks.Deck, lecture: bool, progress: Progress | None = None,
            timeout_s: float = VIEW_TIMEOUT_S) -> list[ViewFigures]:
    """Every view's figures (:class:`ViewFigures`, one per view, in order), computed in a worker process that runs
    each view's page; ``progress(done, n, text)`` is called as views start and finish. The last few exports are
    kept (a second download of the same deck, or its PDF after its HTML, is immediate)."""
    if not len(deck):
        raise ValueError("The deck has no views to export: add a view first.")
    key = (json.dumps(deck.to_json(), sort_keys=True), bool(lecture))
    with _CACHE_LOCK:
        got = _CACHE.get(key)
        if got is not None:
            _CACHE.move_to_end(key)
    if got is not None:
        if progress:
            progress(len(deck), len(deck), "Every view is ready.")
        return got
    n = len(deck)
    if progress:
        progress(0, n, "Waiting for another export to finish..." if _ONE_AT_A_TIME._value == 0 else  # noqa: SLF001
                 "Starting...")
    with _ONE_AT_A_TIME:
        results = _run_worker(deck, lecture, progress, timeout_s)
    if all(r.error is None for r in results):  # a failed view is tried again next time
        with _CACHE_LOCK:
            _CACHE[key] = results
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    return results


def _run_worker(deck: decks.Deck, lecture: bool, progress: Progress | None, timeout_s: float) -> list[ViewFigures]:
    n = len(deck)
    results: list[ViewFigures | None] = [None] * n
    job = json.dumps({"views": [v.to_json() for v in deck.views], "lecture": bool(lecture), "timeout_s": timeout_s})
    env = dict(os.environ, VILAB_CHART="plotly", PYTHONUNBUFFERED="1")
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "vilab_ui.deck_export"], cwd=str(decks.ROOT), env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1)
        deadline = time.monotonic() + 120 + timeout_s * n
        timer = threading.Timer(max(1.0, deadline - time.monotonic()), proc.kill)
        timer.daemon = True
        timer.start()
        try:
            proc.stdin.write(job)
            proc.stdin.close()
            done = 0
            for line in proc.stdout:
                try:
                    msg = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a page printed something
                if not isinstance(msg, dict) or not isinstance(msg.get("i"), int) or not 0 <= msg["i"] < n:
                    continue
                i = msg["i"]
                view = deck.views[i]
                if msg.get("event") == "start":
                    if progress:
                        progress(done, n, f"Computing view {i + 1} of {n}: {view.title}...")
                    continue
                results[i] = ViewFigures(figures=tuple(msg.get("figures") or ()), main=int(msg.get("main") or 0),
                                         error=msg.get("error"), seconds=float(msg.get("seconds") or 0.0),
                                         notes=tuple(msg.get("notes") or ()))
                done += 1
                if progress:
                    progress(done, n, f"View {i + 1} of {n} ({view.title}) " +
                             ("is ready." if msg.get("error") is None else "could not be computed."))
            proc.wait(30)
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        err.seek(0)
        tail = err.read().decode("utf-8", "replace")[-400:]
    why = "the export's worker stopped" + (f" (exit code {proc.returncode})" if proc.returncode else "")
    if proc.returncode and "Error" in tail:
        why += ": " + tail.strip().splitlines()[-1]
    return [r if r is not None else ViewFigures(error=_sentence(why)) for r in results]


# ---------------------------------------------------------------------------------------------
# links into the lab


def _page_path(stem: str) -> str:
    """The URL path st.navigation gives a page ("Vector_fields"; "" for the first page, the lab's home)."""
    stems = decks.page_stems()
    if stems and stem == stems[0]:
        return ""
    head, _, rest = stem.partition("_")
    return rest if head.isdigit() and rest else stem


def lab_base_url(request_url: str | None = None) -> str | None:
    """The lab's address ("http://host:8501/", with any path prefix the lab is served under), for the links of an
    exported deck: ``$VILAB_PUBLIC_URL`` if set, else the address of the request (``st.context.url``) without the
    page and query; None when neither is known."""
    raw = os.environ.get(PUBLIC_URL_ENV) or request_url
    if not raw:
        return None
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    path = parts.path or "/"
    segs = path.rstrip("/").split("/")
    pages = {_page_path(s) for s in decks.page_stems()} - {""}
    if not os.environ.get(PUBLIC_URL_ENV) and segs and segs[-1] in pages:
        segs = segs[:-1]
    path = "/".join(segs).rstrip("/") + "/"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def view_link(base_url: str, deck: decks.Deck, pos: int, lecture: bool) -> str:
    """The absolute address that opens view ``pos`` (0-based) of ``deck`` live in the lab, the deck open at it
    (F and B go on from there), or the view alone when the deck is too large for a link."""
    view = deck.views[pos]
    try:
        tok = decks.encode(deck)
    except ValueError:
        tok = None
    query = decks.url_query(view, pos, tok, lecture)
    return base_url.rstrip("/") + "/" + _page_path(view.page) + ("?" + urlencode(query, doseq=True) if query else "")


# ---------------------------------------------------------------------------------------------
# the HTML deck

_HTML_CSS = """
html, body { margin: 0; height: 100%; font-family: "Source Sans Pro", "Source Sans 3", "Segoe UI", Helvetica, Arial,
    sans-serif; color: #31333f; background: #fff; font-size: 20px; }
header { height: 2.4rem; display: flex; align-items: center; gap: 1rem; padding: 0 1rem; border-bottom: 1px solid #d0d4dc;
    white-space: nowrap; overflow: hidden; }
header .title { font-weight: 700; overflow: hidden; text-overflow: ellipsis; }
header .where { margin-left: auto; }
header .keys { color: #555; font-size: 18px; }
section.view { display: none; height: calc(100vh - 2.4rem - 1px); }
section.view.on { display: flex; }
.stage { flex: 1 1 auto; min-width: 0; overflow-y: auto; padding: 0.4rem 0.6rem; }
.stage .fig { width: 100%; height: calc(100vh - 4rem); }
.stage .fig.small { height: calc(50vh - 2rem); min-height: 300px; }
.stage h3 { font-size: 20px; margin: 1rem 0 0.3rem; }
aside { flex: 0 0 31vw; max-width: 34rem; min-width: 16rem; box-sizing: border-box; overflow-y: auto; padding: 0.8rem 1rem;
    border-left: 1px solid #d0d4dc; box-shadow: -0.3rem 0 0.8rem rgba(0, 0, 0, 0.08); }
aside h2 { font-size: 22px; margin: 0 0 0.5rem; }
aside p { margin: 0 0 0.6rem; line-height: 1.38; font-size: 20px; }
.answer { border-left: 0.3rem solid #21a366; background: rgba(33, 163, 102, 0.08); padding: 0.4rem 0.6rem;
    border-radius: 0.3rem; }
.answer[hidden] { display: none; }
nav { display: flex; gap: 0.4rem; margin: 0.8rem 0; }
nav button { flex: 1; font: inherit; font-size: 19px; white-space: nowrap; padding: 0.35rem 0.3rem; border-radius: 0.4rem; border: 1px solid #c3c6cf;
    background: #fff; cursor: pointer; }
nav button.primary { background: #ff4b4b; border-color: #ff4b4b; color: #fff; }
nav button:disabled { opacity: 0.45; cursor: default; }
a.live { font-size: 20px; }
.note { border-left: 0.3rem solid #f0a30a; background: #fff8e6; padding: 0.4rem 0.6rem; font-size: 20px; }
"""

_HTML_JS = """
(function () {
  var FIGS = JSON.parse(document.getElementById("vilab-deck-figures").textContent);
  var views = Array.prototype.slice.call(document.querySelectorAll("section.view"));
  var at = 0;
  window.__deckErrors = [];
  var CONFIG = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
  function draw(k) {
    var sec = views[k];
    if (sec.getAttribute("data-drawn")) {
      sec.querySelectorAll(".js-plotly-plot").forEach(function (gd) { Plotly.Plots.resize(gd); });
      return;
    }
    sec.setAttribute("data-drawn", "1");
    sec.querySelectorAll(".fig").forEach(function (div) {
      var f = FIGS[k][+div.getAttribute("data-j")];
      var layout = Object.assign({}, f.layout || {});
      delete layout.width; delete layout.height; layout.autosize = true;
      try {
        Plotly.newPlot(div, { data: f.data || [], layout: layout, frames: f.frames || [], config: CONFIG })
          .catch(function (e) { fail(div, e); });
      } catch (e) { fail(div, e); }
    });
  }
  function fail(div, e) {
    window.__deckErrors.push(String(e && e.message || e));
    div.textContent = "This figure could not be drawn: " + (e && e.message || e);
  }
  function show(k, reveal) {
    k = Math.max(0, Math.min(views.length - 1, k));
    views.forEach(function (s, i) { s.classList.toggle("on", i === k); });
    at = k;
    document.getElementById("where").textContent = "View " + (k + 1) + " of " + views.length;
    if (history.replaceState) history.replaceState(null, "", "#" + (k + 1));
    draw(k);
  }
  function reveal() {
    var a = views[at].querySelector(".answer");
    if (a) a.hidden = false;
    var b = views[at].querySelector("button.reveal");
    if (b) b.disabled = true;
  }
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    var t = ev.target && ev.target.tagName;
    if (t === "INPUT" || t === "TEXTAREA" || t === "SELECT") return;
    var k = (ev.key || "").toLowerCase();
    if (k === "f" || k === "arrowright" || k === "pagedown") { ev.preventDefault(); show(at + 1); }
    else if (k === "b" || k === "arrowleft" || k === "pageup") { ev.preventDefault(); show(at - 1); }
    else if (k === "a") { ev.preventDefault(); reveal(); }
  });
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest && ev.target.closest("button[data-go]");
    if (!b) return;
    var g = b.getAttribute("data-go");
    if (g === "next") show(at + 1); else if (g === "back") show(at - 1); else reveal();
  });
  var start = parseInt((location.hash || "#1").slice(1), 10);
  show(isFinite(start) ? start - 1 : 0);
})();
"""


def _text_html(text: str) -> str:
    return html.escape(text).replace("\n", "<br>")


def _json_for_script(obj) -> str:
    """JSON safe inside a <script> element (no "</script>", no "<!--")."""
    s = json.dumps(obj, separators=(",", ":"), default=_jsonable, allow_nan=False)
    return s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("\u2028", "\\u2028") \
        .replace("\u2029", "\\u2029")


def _clean(spec: dict) -> dict:
    """A figure for the file: NaN and infinities as null (JSON has none; plotly.js reads null as a gap)."""
    return json.loads(json.dumps(spec, default=_jsonable).replace("NaN", "null").replace("-Infinity", "null")
                      .replace("Infinity", "null")) if _has_nonfinite(spec) else spec


def _has_nonfinite(spec) -> bool:
    try:
        json.dumps(spec, default=_jsonable, allow_nan=False)
        return False
    except ValueError:
        return True


def deck_html(deck: decks.Deck, results: Sequence[ViewFigures], base_url: str | None, lecture: bool = False) -> bytes:
    """The deck as one self-contained HTML file (UTF-8 bytes): plotly.js inlined, every view's figures, its question,
    its answer on A (or Reveal), F / B (or the arrows, or the buttons) to move, and, when ``base_url`` is known, a link
    that opens the view live in the lab. A view without figures says why."""
    import plotly.offline

    if len(results) != len(deck):
        raise ValueError(f"The export has figures for {len(results)} views; the deck has {len(deck)}.")
    n = len(deck)
    sections, figs = [], []
    for i, (view, got) in enumerate(zip(deck.views, results)):
        specs = [_clean(s) for s in got.figures]
        figs.append(specs)
        main = [j for j in range(len(specs)) if j < max(got.main, 1)]
        rest = [j for j in range(len(specs)) if j not in main]
        stage = "".join(f'<div class="fig{" small" if len(main) > 1 else ""}" data-j="{j}"></div>' for j in main)
        if rest:
            stage += "<h3>The page's other figures</h3>" + "".join(
                f'<div class="fig small" data-j="{j}"></div>' for j in rest)
        if got.error:
            stage += (f'<p class="note">This view\'s figures could not be computed for the export: '
                      f'{html.escape(got.error)} Open it live in the lab to see it.</p>')
        for note in got.notes:
            stage += f'<p class="note">{html.escape(note)}</p>'
        link = ""
        if base_url:
            href = view_link(base_url, deck, i, lecture)
            link = f'<p><a class="live" href="{html.escape(href, quote=True)}">Open this view live in the lab</a></p>'
        settings = view.settings_text()
        aside = (f"<h2>View {i + 1} of {n}: {html.escape(view.title)}</h2>"
                 + (f'<p class="question"><b>Question.</b> {_text_html(view.prompt)}</p>' if view.prompt else "")
                 + (f'<div class="answer" hidden><p><b>Answer.</b> {_text_html(view.reveal)}</p></div>'
                    if view.reveal else "")
                 + '<nav><button data-go="back"' + (" disabled" if i == 0 else "") + '>Back (B)</button>'
                 + ('<button class="reveal" data-go="reveal">Reveal (A)</button>' if view.reveal else "")
                 + '<button class="primary" data-go="next"' + (" disabled" if i == n - 1 else "") + '>Next (F)</button>'
                 + "</nav>" + link
                 + (f'<p style="color:#555">Settings: {html.escape(settings)}</p>' if settings else ""))
        sections.append(f'<section class="view" id="view-{i + 1}"><div class="stage">{stage}</div>'
                        f"<aside>{aside}</aside></section>")
    title = html.escape(deck.title)
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{title}</title><style>{_HTML_CSS}</style>"
            f"<script>{plotly.offline.get_plotlyjs()}</script></head><body>"
            f'<header><span class="title">{title}</span><span class="where" id="where">View 1 of {n}</span>'
            '<span class="keys">F next, B back, A answer</span></header>'
            + "".join(sections)
            + f'<script type="application/json" id="vilab-deck-figures">{_json_for_script(figs)}</script>'
            f"<script>{_HTML_JS}</script></body></html>\n")
    return page.encode("utf-8")


# ---------------------------------------------------------------------------------------------
# the PDF handout

HANDOUT_FIG_WIDTH, HANDOUT_FIG_HEIGHT = 960, 540  # CSS px of each main figure's SVG (the slide size)

_HANDOUT_CSS = """
@page { size: A4 landscape; margin: 10mm 12mm; }
html, body { margin: 0; font-family: "Source Sans Pro", "Source Sans 3", "DejaVu Sans", Helvetica, Arial, sans-serif;
    color: #222; }
section { break-after: page; page-break-after: always; height: 188mm; overflow: hidden; display: flex;
    flex-direction: column; }
section:last-child { break-after: auto; page-break-after: auto; }
h1 { font-size: 13pt; margin: 0 0 1mm; color: #555; font-weight: 600; }
h2 { font-size: 15pt; margin: 0 0 2mm; }
.figs { flex: 1 1 auto; min-height: 0; display: flex; gap: 3mm; justify-content: center; align-items: center; }
.figs img { max-width: 100%; max-height: 100%; min-width: 0; object-fit: contain; }
.figs.two img { max-width: 49%; }
p { margin: 1.5mm 0; font-size: 11pt; line-height: 1.3; }
.answer { border-left: 1.2mm solid #21a366; padding-left: 2mm; }
.note { border-left: 1.2mm solid #f0a30a; padding-left: 2mm; }
a { color: #1a5fb4; }
"""


def deck_pdf(deck: decks.Deck, results: Sequence[ViewFigures], base_url: str | None = None,
             lecture: bool = False) -> bytes:
    """A PDF handout of the deck, one page per view: its main figures (SVG drawn by kaleido), the question and the
    answer, and the view's address in the lab when ``base_url`` is known; :func:`handout_html` printed by headless
    Chromium. Needs Chromium (ExportUnavailable without it)."""
    from vilab.plots import export

    return export.html_to_pdf(handout_html(deck, results, base_url, lecture))


def handout_html(deck: decks.Deck, results: Sequence[ViewFigures], base_url: str | None = None,
                 lecture: bool = False) -> bytes:
    """The print-ready HTML of :func:`deck_pdf` (A4 landscape, a page break after each view; the figures as SVG
    images drawn by kaleido, inlined)."""
    import base64

    from vilab.plots import export

    if len(results) != len(deck):
        raise ValueError(f"The export has figures for {len(results)} views; the deck has {len(deck)}.")
    mains = [[_clean(s) for s in got.figures[: max(got.main, 1)][:2]] for got in results]
    flat = [s for m in mains for s in m]
    svgs = iter(export.to_svgs(flat, HANDOUT_FIG_WIDTH, HANDOUT_FIG_HEIGHT) if flat else [])
    n = len(deck)
    pages = []
    for i, (view, got, specs) in enumerate(zip(deck.views, results, mains)):
        imgs = "".join('<img alt="figure" src="data:image/svg+xml;base64,'
                       + base64.b64encode(next(svgs)).decode("ascii") + '">' for _ in specs)
        body = f'<div class="figs{" two" if len(specs) > 1 else ""}">{imgs}</div>' if specs else ""
        if got.error:
            body += f'<p class="note">This view\'s figures could not be computed: {html.escape(got.error)}</p>'
        link = ""
        if base_url:
            href = view_link(base_url, deck, i, lecture)
            link = f'<p><a href="{html.escape(href, quote=True)}">Open this view live in the lab</a></p>'
        pages.append(f"<section><h1>{html.escape(deck.title)}</h1><h2>View {i + 1} of {n}: {html.escape(view.title)}</h2>"
                     + (f"<p><b>Question.</b> {_text_html(view.prompt)}</p>" if view.prompt else "")
                     + body
                     + (f'<p class="answer"><b>Answer.</b> {_text_html(view.reveal)}</p>' if view.reveal else "")
                     + link + "</section>")
    doc = (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{html.escape(deck.title)}</title>"
           f"<style>{_HANDOUT_CSS}</style></head><body>{''.join(pages)}</body></html>")
    return doc.encode("utf-8")


# ---------------------------------------------------------------------------------------------
# Streamlit: the deck panel's two buttons

_FILE = "_vilab_deck_export_file"  # session state: (deck JSON, format, file name, bytes, notes)


def _slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return (s[:40].strip("-") or "deck")


def _request_url() -> str | None:
    import streamlit as st

    try:
        return st.context.url
    except Exception:  # noqa: BLE001 - no request (a script run bare)
        return None


def panel(deck: decks.Deck | None, key: str = "deck_export", columns: bool = True) -> None:
    """"Download deck as HTML" and "Download deck as PDF": each computes every view's figures (with a progress bar
    and a line per view), then offers the file. A view that fails is named in a warning; the file has the others.
    ``columns``: the two buttons side by side (a page), else one under the other (the sidebar)."""
    import streamlit as st

    import vilab_ui as ui
    from vilab.plots import export

    if deck is None or not len(deck):
        return
    lecture = ui.lecture()
    no_pdf = export.unavailable_reason()
    c1, c2 = st.columns(2) if columns else (st, st)  # the sidebar: one under the other
    want_html = c1.button("Download deck as HTML", key=f"{key}_html", width="stretch", icon=":material/download:",
                          help="One file with every view's figures (interactive), questions and answers: it opens "
                               "in any browser, offline. F, B and A step through it as here.")
    want_pdf = c2.button("Download deck as PDF", key=f"{key}_pdf", width="stretch", icon=":material/picture_as_pdf:",
                         disabled=no_pdf is not None,
                         help=no_pdf or "A handout: one page per view, with its figure, question and answer.")
    ident = json.dumps(deck.to_json(), sort_keys=True)
    if want_html or want_pdf:
        fmt = "html" if want_html else "pdf"
        bar = st.progress(0.0, text="Starting...")

        def progress(done: int, n: int, text: str) -> None:
            bar.progress(min(1.0, done / max(n, 1)), text=ui.plain(text))

        t0 = time.perf_counter()
        with ui.guard("deck export"):
            results = compute(deck, lecture, progress)
            base = lab_base_url(_request_url())
            bar.progress(1.0, text="Writing the file..." if fmt == "html" else "Drawing the handout...")
            data = deck_html(deck, results, base, lecture) if fmt == "html" else deck_pdf(deck, results, base, lecture)
            notes = [f"View {i + 1} ({v.title}): {r.error}" for i, (v, r) in enumerate(zip(deck.views, results))
                     if r.error]
            st.session_state[_FILE] = (ident, fmt, f"{_slug(deck.title)}.{fmt}", data, notes,
                                       time.perf_counter() - t0)
        bar.empty()
    got = st.session_state.get(_FILE)
    if got and got[0] == ident:
        _, fmt, name, data, notes, seconds = got
        if notes:
            st.warning(ui.plain("Some views could not be computed; the file has the others, with a note: "
                                + " ".join(notes)))
        st.download_button(f"Save {name} ({len(data) / 1e6:.1f} MB)", data=data, file_name=name,
                           mime="text/html" if fmt == "html" else "application/pdf", key=f"{key}_save",
                           type="primary", width="stretch", icon=":material/save:", on_click="ignore")
        st.caption(f"Made in {seconds:.0f} s.")


if __name__ == "__main__":
    _worker()
