"""What a student waits for in a real browser: slider -> redrawn figure, and first loads, per page.

Starts the lab's server as the browser tests do (tests/browser/layout.py: ``python -m vilab_ui.serve run
app.py``), drives headless Chromium (/usr/bin/chromium) and, for every page in pages/ (discovered, so new
pages are measured too):

* **cold load**: the page opened first on a fresh server process, with JAX's persistent compilation
  cache (vilab/core/compile_cache.py) and the pages' results kept on disk (Streamlit's ``persist="disk"`` folder,
  vilab_ui/caching.py; the server's HOME points into the folder) in a folder of its own: once with the folder empty (``cold, empty cache``) and once with the folder filled
  by an earlier server that served every page (``cold, filled cache``: a restarted server, or a replica
  of ``vilab hall``);
* **warm load**: the page opened in a new browser context (a new visitor) on a server that has served
  it before;
* **returning visitor**: the page opened in a new tab of a browser that has visited the app before (another
  page, with a figure, loaded in the same browser context): Streamlit's scripts, Plotly's bundle among them,
  come from the browser's cache (Streamlit serves them ``immutable``); what a lecturer who opened the lab
  earlier waits;
* **page switch**: in an open app (Home, or Lecture decks for Home itself, loaded and idle), a click on the
  page's link in the sidebar until its run has finished and its main figure is drawn: no JavaScript to
  load, what a lecturer going from one page to the next waits;
* **slider -> redraw**: the page's slider (``CONTROLS`` below; else the first slider on the page)
  moved by the keyboard, one step at a time, ``--changes`` times (default 12) in one direction, each
  step a value the page has not seen before; the time from the key press until the script run ended
  (Streamlit's ``script_finished`` message, read from the WebSocket) AND the main figure's data (or
  layout) changed in the Plotly div, that is, the figure is redrawn. Median and p95. The first change
  comes after the loaded page has been idle for ``--settle`` seconds (default 3), as a student looks at
  a page before moving a slider: earlier, the first changes also timed what follows a load (the first
  width report's short run, Plotly's resize after mounting) and made up most of the p95.

A load counts as done when the page's script run has finished and its main figure (the container
``main_figure``) is drawn. Times include Streamlit's own slider debounce and the browser's drawing: what
a user waits for. Browser, server and JAX share this machine's cores; its load average is recorded.

Writes benchmarks/results/browser.json (machine, date, load, every raw time) and prints a Markdown table.

    python benchmarks/bench_browser.py [--pages Hierarchical_models Home] [--changes 12] [--settle 3] [--no-cold]

``VILAB_PLAIN_UI=1 python benchmarks/bench_browser.py ...`` measures the servers without vilab's own mechanisms
(docs/ui-mechanisms.md); the record says which.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.browser import layout  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "browser.json"
HOME = layout.page_paths()[0][0]
VIEWPORT = {"width": 1280, "height": 900}

# The control moved on each page (url path -> (kind, key, query)): the slider a lecturer moves first.
# kind "slider" (st.slider or ui.log_slider's select slider: keyboard on its thumb) or "toggle" (a click);
# query: URL parameters the page is opened with. A page not listed moves its first visible slider.
CONTROLS: dict[str, tuple[str, str, str]] = {
    HOME: ("toggle", "lecture", ""),  # no slider: the sidebar's lecture mode restyles the main figure
    "Lecture_decks": ("toggle", "lecture", ""),
    "Vector_fields": ("slider", "na", ""),
    "Trajectories": ("slider", "c0", ""),
    "Stability_atlas": ("slider", "c0", ""),
    "Positive_definiteness": ("slider", "rho", ""),
    "Flows_and_guarantees": ("slider", "T", ""),
    "Adam_vs_SNNGM": ("slider", "aa", ""),  # Adam's alpha: the first (main) panel
    "Divergences": ("slider", "rho", ""),
    "Online_learning": ("slider", "lR", ""),
    "CNN_lab": ("slider", "ep", ""),
    "Hierarchical_models": ("slider", "iters", ""),
    "Reproductions": ("toggle", "lecture", ""),
}
RETRAINS = ("Hierarchical_models", "Online_learning", "CNN_lab")  # issue 15: these may take 1 s, others 0.5 s

# The main figure's content: data and the layout entries a control can change (fonts, height, title).
SIGNATURE_JS = """() => {
    const gds = Array.from(document.querySelectorAll('.st-key-main_figure .js-plotly-plot'));
    if (!gds.length) return null;
    const conv = (k, v) => (ArrayBuffer.isView(v) ? Array.from(v) : v);
    return gds.map(g => { const L = g.layout || {}; const T = (L.template || {}).layout || {};
        return JSON.stringify([g.data, L.height, L.font, T.font, L.title, L.annotations, L.shapes], conv); }).join('|');
}"""

# Arm a redraw measurement: remember the main figure's content and its data arrays.
ARM_JS = """(sigJs) => {
    const sig = eval(sigJs);
    window.__vb = {sig: sig(), seen: Array.from(document.querySelectorAll('.st-key-main_figure .js-plotly-plot')).map(g => g.data),
                   t0: performance.now(), t: null, sigFn: sig};
}"""

# True (and the time noted) once the main figure shows other content than when armed. The content is
# compared only when Plotly was handed new data arrays (a redraw), so polling every frame costs nothing.
CHANGED_JS = """() => {
    const v = window.__vb; if (!v) return false;
    if (v.t !== null) return true;
    const gds = Array.from(document.querySelectorAll('.st-key-main_figure .js-plotly-plot'));
    const now = gds.map(g => g.data);
    if (now.length === v.seen.length && now.every((d, i) => d === v.seen[i])) return false;
    v.seen = now;
    if (v.sigFn() === v.sig) return false;
    v.t = performance.now() - v.t0; return true;
}"""

DRAWN_JS = """() => {
    const c = document.querySelector('.st-key-main_figure');
    if (!c) return false;
    return c.querySelector('.js-plotly-plot .main-svg') !== null || c.querySelector('img') !== null
        || c.querySelector('[data-testid="stDataFrame"], [data-testid="stTable"]') !== null;
}"""


class ScriptRuns:
    """Streamlit's ``script_finished`` messages as a page receives them (its WebSocket frames decoded
    with Streamlit's own protobuf classes): when the last script run (or fragment run) ended."""

    def __init__(self, page):
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self._msg = ForwardMsg
        self.finished: list[float] = []  # perf_counter times of runs that finished (not cut short by a rerun)
        self.started: list[float] = []
        self._lock = threading.Lock()
        page.on("websocket", self._attach)

    def _attach(self, ws):
        ws.on("framereceived", self._frame)

    def _frame(self, payload):
        if isinstance(payload, str):
            return
        now = time.perf_counter()
        msg = self._msg()
        try:
            msg.ParseFromString(payload)
        except Exception:  # noqa: BLE001 - not a ForwardMsg
            return
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            with self._lock:
                self.started.append(now)
        elif kind == "script_finished":
            name = msg.DESCRIPTOR.fields_by_name["script_finished"].enum_type.values_by_number[msg.script_finished].name
            if name != "FINISHED_EARLY_FOR_RERUN":
                with self._lock:
                    self.finished.append(now)

    def finished_after(self, t0: float) -> float | None:
        with self._lock:
            later = [t for t in self.finished if t >= t0]
        return later[0] if later else None

    def started_after(self, t0: float) -> float | None:
        """When the first full script run after t0 started (fragment runs send no start message)."""
        with self._lock:
            later = [t for t in self.started if t >= t0]
        return later[0] if later else None


def _wait(page, predicate, timeout_s: float, poll_s: float = 0.02) -> bool:
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        if predicate():
            return True
        page.wait_for_timeout(poll_s * 1000)
    return False


def server_pid(base: str) -> int | None:
    """The process id of the server (``streamlit run`` or ``python -m vilab_ui.serve run``) serving ``base``
    (found by its port; Linux /proc)."""
    port = base.rsplit(":", 1)[-1].encode()
    for d in Path("/proc").glob("[0-9]*"):
        try:
            args = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(name in b" ".join(args) for name in (b"streamlit", b"vilab_ui.serve")) and b"--server.port" in args \
                and port in args:
            return int(d.name)
    return None


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU time of a process so far (Linux /proc; None elsewhere): a measure of the server's
    own work that does not grow with the load other programs put on the machine."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def idle(pid: int | None, window_s: float = 0.5, below_s: float = 0.05, timeout_s: float = 30.0) -> bool:
    """Wait until the server used less than ``below_s`` of CPU in a ``window_s`` window (it has finished
    what it computes behind a page), at most ``timeout_s``; False when it never was (or no /proc)."""
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        c0 = cpu_seconds(pid)
        time.sleep(window_s)
        c1 = cpu_seconds(pid)
        if c0 is None or c1 is None:
            return False
        if c1 - c0 < below_s:
            return True
    return False


def _quiet(page) -> bool:
    return page.locator('[data-testid="stStatusWidget"]').count() == 0


def load(browser, base: str, path: str, query: str, timeout_s: float, context=None):
    """Open the page in a new browser context (or a new tab of ``context``); (seconds until the run finished
    and the main figure is drawn, the page, its ScriptRuns)."""
    ctx = context or browser.new_context(viewport=VIEWPORT)
    page = ctx.new_page()
    runs = ScriptRuns(page)
    t0 = time.perf_counter()
    page.goto(f"{base}/{'' if path == HOME else path}{'?' + query if query else ''}", wait_until="commit")
    ok = _wait(page, lambda: runs.finished_after(t0) is not None and page.evaluate(DRAWN_JS) and _quiet(page),
               timeout_s, 0.05)
    seconds = time.perf_counter() - t0 if ok else None
    return seconds, page, runs


SETTLE_S = 3.0  # --settle: seconds a freshly loaded page stays idle before its first slider change


def settle(page, runs: ScriptRuns, seconds: float, timeout_s: float) -> None:
    """Wait until no script run (the width reporter's included) has ended for ``seconds`` and none is
    running: a student looks at a page before moving its first slider, and by then the browser has done
    what follows a load (Plotly's resize after mounting, the first width report and its short run)."""
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        last = runs.finished[-1] if runs.finished else 0.0
        if _quiet(page) and time.perf_counter() - last >= seconds:
            return
        page.wait_for_timeout(100)


def returning(browser, base: str, path: str, timeout_s: float) -> float | None:
    """Seconds to open the page in a new tab of a browser context that has loaded another page of the app with
    a Plotly figure (Vector fields for Home, else Home) and closed its tab: the app's scripts are in that
    browser's cache. None if a load did not finish in ``timeout_s``."""
    ctx = browser.new_context(viewport=VIEWPORT)
    try:
        t, page, runs = load(browser, base, "Vector_fields" if path == HOME else HOME, "", timeout_s, context=ctx)
        if t is None:
            return None
        settle(page, runs, 1.0, timeout_s)
        page.close()
        t, page, _ = load(browser, base, path, CONTROLS.get(path, ("", "", ""))[2], timeout_s, context=ctx)
        return t
    finally:
        ctx.close()


def switch(browser, base: str, path: str, timeout_s: float) -> float | None:
    """Seconds from a click on the page's link in the sidebar of an open app (another page, loaded and idle)
    until the page's run has finished and its main figure is drawn: how long a lecturer going from one
    page to the next waits. None if it did not happen in ``timeout_s``."""
    origin = "Lecture_decks" if path == HOME else HOME
    t, page, runs = load(browser, base, origin, "", timeout_s)
    try:
        if t is None:
            return None
        settle(page, runs, 2.0, timeout_s)
        more = page.locator('[data-testid="stSidebarNavViewButton"]')
        if more.count() and "more" in more.first.inner_text():  # Streamlit shows ten pages until "View N more"
            more.first.click()
            page.wait_for_timeout(300)
        links = page.locator('[data-testid="stSidebarNav"] a')
        hrefs = [links.nth(i).get_attribute("href") or "" for i in range(links.count())]
        want = [i for i, h in enumerate(hrefs) if h.rstrip("/").rsplit("/", 1)[-1] == path] if path != HOME else \
            [i for i, h in enumerate(hrefs) if h.rstrip("/") == base.rstrip("/") or h.endswith(":" + base.rsplit(":", 1)[-1])]
        if not want:
            return None
        t0 = time.perf_counter()
        links.nth(want[0]).click()
        ok = _wait(page, lambda: runs.finished_after(t0) is not None and page.evaluate(DRAWN_JS) and _quiet(page),
                   timeout_s, 0.05)
        return time.perf_counter() - t0 if ok else None
    finally:
        page.context.close()


def _slider(page, key: str):
    """The (visually hidden) range input of the slider with this key, or of the first slider on the page
    shown on screen (not in a closed expander)."""
    if key:
        loc = page.locator(f'.st-key-{key} [data-testid="stSlider"] input[type="range"]')
        if loc.count() and page.locator(f'.st-key-{key} [data-testid="stSlider"]').first.is_visible():
            return loc.first, key
    loc = page.locator('[data-testid="stMain"] [data-testid="stSlider"]')
    for i in range(loc.count()):
        if loc.nth(i).is_visible():
            parent = loc.nth(i).evaluate("e => (e.closest('[class*=\"st-key-\"]') || {}).className || ''")
            k = next((c[len('st-key-'):] for c in parent.split() if c.startswith("st-key-")), "?")
            return loc.nth(i).locator('input[type="range"]').first, k
    return None, None


def redraws(page, runs: ScriptRuns, kind: str, key: str, n: int, timeout_s: float, pid: int | None = None) -> dict:
    """Move the control n times; the seconds from each input to the run's end with the figure redrawn."""
    times, no_redraw, server, browser, cpu = [], 0, [], [], []
    if kind == "toggle":
        target = page.locator(f'.st-key-{key} label').first
        if not target.count():
            return {"error": f"no toggle {key!r}"}
        press = lambda i: target.click()  # noqa: E731
        used = key
    else:
        thumb, used = _slider(page, key)
        if thumb is None:
            return {"error": "no slider on the page"}
        now, hi, lo = (float(thumb.get_attribute(a) or 0) for a in ("value", "max", "min"))
        # one direction, new values each time; the side with more room (a slider near its top goes down)
        arrow = "ArrowRight" if hi - now >= now - lo else "ArrowLeft"

        def press(i):
            nonlocal arrow
            v, top, bottom = (float(thumb.get_attribute(a) or 0) for a in ("value", "max", "min"))
            if (arrow == "ArrowRight" and v >= top) or (arrow == "ArrowLeft" and v <= bottom):
                arrow = "ArrowLeft" if arrow == "ArrowRight" else "ArrowRight"  # at the end: come back
            thumb.focus()
            page.keyboard.press(arrow)
    settle(page, runs, SETTLE_S, timeout_s)
    # a main figure that is a table (Lecture decks) has no Plotly data to watch: its change is the run's end
    charts = page.locator('.st-key-main_figure .js-plotly-plot').count() > 0
    for i in range(n):
        page.wait_for_timeout(300)  # Plotly's last relayout (autorange) after the previous redraw
        page.evaluate(ARM_JS, SIGNATURE_JS)
        c0 = cpu_seconds(pid)
        t0 = time.perf_counter()
        press(i)
        fig = charts and _wait(page, lambda: page.evaluate(CHANGED_JS), timeout_s, 0.01)
        fin = _wait(page, lambda: runs.finished_after(t0) is not None, timeout_s, 0.01)
        if not fin:
            return {"control": f"{kind}:{used}", "times": times, "error": f"change {i + 1} did not finish in {timeout_s:.0f} s"}
        t_fin = runs.finished_after(t0) - t0
        t_start = runs.started_after(t0)
        if t_start is not None and t_start - t0 < t_fin:
            server.append(round(t_fin - (t_start - t0), 4))  # the script run, as the browser saw it
        if fig:
            t_fig = page.evaluate("() => window.__vb.t") / 1000.0
            times.append(max(t_fin, t_fig))
            browser.append(round(max(0.0, t_fig - t_fin), 4))  # drawing after the run ended
        else:  # the run ended without redrawing the main figure (a page that trains only on a button), or a table
            no_redraw += charts
            times.append(t_fin)
        _wait(page, lambda: _quiet(page), timeout_s, 0.05)
        c1 = cpu_seconds(pid)
        if c0 is not None and c1 is not None:
            cpu.append(round(c1 - c0, 3))
    return {"control": f"{kind}:{used}", "times": [round(t, 4) for t in times], "no_redraw": no_redraw,
            "script_run_s": server, "drawn_after_run_s": browser, "server_cpu_s": cpu}


WATCH_FILES = False  # --watch-files: keep Streamlit's file watcher on (see server())
FLAGS: list[str] = []  # --flag runner.postScriptGC=false ...: Streamlit options of the measured server


@contextlib.contextmanager
def server(cache_dir: Path, timeout_s: float = 120.0):
    """A fresh server on a free port (the browser tests' own server, tests/browser/layout.streamlit_server)
    whose JAX persistent cache is ``cache_dir/jax``, whose pages' results are kept in ``cache_dir/home`` (the
    server's HOME: Streamlit keeps ``persist="disk"`` results in ``~/.streamlit/cache``, vilab_ui/caching.py)
    and decoded data sets in ``cache_dir/data`` (vilab.cnn.data); yields its base URL.

    Streamlit's file watcher is off unless ``--watch-files``: in a checkout where other programs write
    files, its inotify queue overflows and it re-walks the folders, burning a tenth of a core for as long as
    a page is open; a server in a lecture hall serves files that do not change."""
    args = [] if WATCH_FILES else ["--server.fileWatcherType", "none"]
    for flag in FLAGS:
        name, _, value = flag.partition("=")
        args += [f"--{name}", value]
    (cache_dir / "home").mkdir(parents=True, exist_ok=True)
    env = {"VILAB_JAX_CACHE": str(cache_dir / "jax"), "HOME": str(cache_dir / "home"),
           "VILAB_DATA_CACHE": str(cache_dir / "data")}
    with layout.streamlit_server(timeout_s, env=env, args=args) as url:
        yield url


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * q / 100
    f = int(k)
    return xs[f] + (xs[min(f + 1, len(xs) - 1)] - xs[f]) * (k - f)


def bench_page(browser, path: str, cache_dir: Path, changes: int, timeout_s: float, cold: bool) -> dict:
    kind, key, query = CONTROLS.get(path, ("slider", "", ""))
    res: dict = {"page": path or HOME}
    with server(cache_dir) as base:
        pid = server_pid(base)
        c0 = cpu_seconds(pid)
        t, page, runs = load(browser, base, path, query, timeout_s)
        c1 = cpu_seconds(pid)
        res["cold_load_s"] = None if t is None else round(t, 3)
        res["cold_load_server_cpu_s"] = None if None in (c0, c1) else round(c1 - c0, 2)
        page.context.close()
        c0 = cpu_seconds(pid)
        t, page, runs = load(browser, base, path, query, timeout_s)  # a new visitor
        c1 = cpu_seconds(pid)
        res["warm_load_s"] = None if t is None else round(t, 3)
        res["warm_load_server_cpu_s"] = None if None in (c0, c1) else round(c1 - c0, 2)
        if t is not None:
            res.update(redraws(page, runs, kind, key, changes, timeout_s, pid))
        page.context.close()
        t = returning(browser, base, path, timeout_s)
        res["returning_load_s"] = None if t is None else round(t, 3)
        t = switch(browser, base, path, timeout_s)
        res["switch_s"] = None if t is None else round(t, 3)
    return res


def load_average():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def table(results: list[dict]) -> str:
    """The Markdown table: per page the redraw's median and p95 (and the server's CPU time per redraw, which
    the machine's load does not inflate), the cold loads (fresh server; empty and filled caches), a new
    visitor's load on the server that computed the page (once it is idle) and on the restarted server (right
    after its first load), a returning visitor's load and the page switch."""
    def f(x, d=2):
        return "–" if x is None else f"{x:.{d}f}"

    lines = ["| page | control moved | redraw median (s) | redraw p95 (s) | target p95 (s) | server CPU per redraw (s) "
             "| cold load, empty cache (s) | cold load, filled cache (s) | new visitor, served server (s) "
             "| new visitor, restarted server (s) | returning visitor (s) | page switch (s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        ts = r.get("times") or []
        cpu = r.get("server_cpu_s") or []
        name = (r["page"] or HOME).replace("_", " ")
        control = r.get("control", "–") + (f" ({r['no_redraw']} of {len(ts)} runs left the figure as it was)"
                                          if r.get("no_redraw") else "")
        if r.get("error"):
            control += f" [{r['error']}]"
        target = 1.0 if r["page"] in RETRAINS else 0.5
        lines.append(f"| {name} | {control} | {f(statistics.median(ts) if ts else None)} | {f(pct(ts, 95))} | "
                     f"{target:g} | {f(statistics.median(cpu) if cpu else None, 3)} | {f(r.get('cold_empty_s'), 1)} | "
                     f"{f(r.get('cold_filled_s'), 1)} | {f(r.get('served_load_s'))} | {f(r.get('warm_load_s'))} | "
                     f"{f(r.get('returning_load_s'))} | "
                     f"{f(r.get('switch_s'))} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    global WATCH_FILES, SETTLE_S
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", nargs="*", help="substrings of page names (default: every page)")
    ap.add_argument("--changes", type=int, default=12, help="slider changes per page (default 12)")
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds one load or redraw may take")
    ap.add_argument("--settle", type=float, default=SETTLE_S,
                    help=f"seconds a loaded page stays idle before its first change (default {SETTLE_S:g})")
    ap.add_argument("--no-cold", action="store_true", help="skip the fresh servers with an empty cache")
    ap.add_argument("--watch-files", action="store_true", help="keep Streamlit's file watcher on (off by default)")
    ap.add_argument("--flag", action="append", default=[], metavar="OPTION=VALUE",
                    help="a Streamlit option for the servers, e.g. runner.postScriptGC=false (repeatable)")
    ap.add_argument("--out", help=f"the JSON file written (default {OUT.relative_to(ROOT)} for a run over every page; "
                                  "a run over some pages writes only when given)")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # killed: still stop the servers and the browser
    WATCH_FILES, SETTLE_S = args.watch_files, args.settle
    FLAGS[:] = args.flag
    if layout.chromium_path() is None:
        print("bench_browser needs Chromium (set VILAB_CHROMIUM or install chromium).", file=sys.stderr)
        return 2
    pages = [p for p, _ in layout.page_paths()]
    if args.pages:
        pages = [p for p in pages if any(s.lower() in (p or HOME).lower() for s in args.pages)]
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    load0 = load_average()
    results = []
    root = Path(tempfile.mkdtemp(prefix="vilab-bench-browser-"))
    try:
        with layout.chromium() as browser:
            # 1. every page on a fresh server with an empty cache folder of its own (cold, empty cache);
            # 2. one server opens every page with the folder ``filled`` (as a lab served before a restart), then
            #    every page on a fresh server with that folder. The folder is filled in place, not merged from the
            #    others: JAX's cache keys hold the folder's path (its XLA cache options point into it), so programs
            #    copied from another folder are compiled again.
            filled = root / "filled"
            filled.mkdir()
            for path in pages:
                empty = root / f"empty-{path or 'home'}"
                empty.mkdir()
                res = {"page": path}
                if not args.no_cold:
                    r = bench_page(browser, path, empty, 0, args.timeout, True)
                    print(f"{path}: cold (empty cache) {r.get('cold_load_s')} s", flush=True)
                    shutil.rmtree(empty, ignore_errors=True)
                    res.update(cold_empty_s=r.get("cold_load_s"), cold_empty_server_cpu_s=r.get("cold_load_server_cpu_s"))
                results.append(res)
            with server(filled) as base:
                pid = server_pid(base)
                for res, path in zip(results, pages):
                    query = CONTROLS.get(path, ("", "", ""))[2]
                    t, page, _ = load(browser, base, path, query, args.timeout)
                    page.context.close()
                    idle(pid)  # the server has served the page and finished what it does behind it (prefetches)
                    t, page, _ = load(browser, base, path, query, args.timeout)  # a new visitor
                    page.context.close()
                    res["served_load_s"] = None if t is None else round(t, 3)
            for res, path in zip(results, pages):
                r = bench_page(browser, path, filled, args.changes, args.timeout, True)
                res.update(cold_filled_s=r.pop("cold_load_s"), cold_filled_server_cpu_s=r.pop("cold_load_server_cpu_s"),
                           load_average=load_average(), **{k: v for k, v in r.items() if k != "page"})
                ts = res.get("times") or []
                print(f"{path or HOME}: cold (filled cache) {res['cold_filled_s']} s, warm {res.get('warm_load_s')} s, "
                      f"redraw median {statistics.median(ts) if ts else None}, p95 {pct(ts, 95)} "
                      f"{res.get('error', '')}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for r in results:
        ts = r.get("times") or []
        r["median_s"] = None if not ts else round(statistics.median(ts), 3)
        r["p95_s"] = None if not ts else round(pct(ts, 95), 3)
        cpu = r.get("server_cpu_s") or []
        r["server_cpu_median_s"] = None if not cpu else round(statistics.median(cpu), 3)
        r["target_s"] = 1.0 if r["page"] in RETRAINS else 0.5
        r["page"] = r["page"] or HOME
    out = {"benchmark": "bench_browser", "date": started,
           "machine": {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
                       "system": platform.platform(), "chromium": layout.chromium_path(),
                       "note": "browser, Streamlit server and JAX share this machine"},
           "load_average": {"start": load0, "end": load_average()},
           "settings": {"changes": args.changes, "settle_s": SETTLE_S, "viewport": VIEWPORT, "file_watcher": WATCH_FILES, "streamlit_flags": FLAGS, "plain_ui": os.environ.get("VILAB_PLAIN_UI", ""), "controls": {k or HOME: v for k, v in CONTROLS.items()}},
           "results": results, "table": table(results)}
    dest = args.out or (None if args.pages else OUT)  # a partial run does not overwrite the full table
    if dest:
        Path(dest).parent.mkdir(parents=True, exist_ok=True)
        Path(dest).write_text(json.dumps(out, indent=1) + "\n")
    print(out["table"])
    print(f"load average start {load0}, end {out['load_average']['end']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
