"""What a lecturer sees, measured in a real browser: the page checks behind the lecture-grade layout.

Used by tests/browser/test_layout.py and by scripts/screenshots.py (which a developer runs by hand to
look at every page). Each check takes a Playwright page already rendered and returns a list of
problems (empty when the page passes):

* :func:`main_figure_problems`: the page's main figure (the chart inside the container keyed
  ``main_figure``, made by ``vilab_ui.show(fig, main=True)``) lies inside the first viewport; a page
  whose main element is a table (Reproductions) must show the table's head and first rows;
* :func:`font_problems`: in lecture mode, the page title, body text, widget labels and every text of
  every Plotly chart (ticks, axis titles, legends, annotations) are at least 18 px;
* :func:`overflow_problems`: no visible element's text is clipped by its box (buttons, chips,
  labels, sidebar items, markdown);
* :func:`stage_problems`: in lecture mode, the main figure (a chart) covers at least 60 % of the viewport;
* :func:`chrome_problems`: no developer chrome (Streamlit's Deploy button).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from vilab.cli import command  # `streamlit run`, the pages' libraries imported before the server starts

ROOT = Path(__file__).resolve().parents[2]
SIZES = [(1280, 720), (1600, 1000)]
STAGE_SIZES = [(1280, 720), (1920, 1080), (1024, 768)]  # lecture mode: a laptop, a projector, an old 4:3 projector
MIN_LECTURE_PX = 18.0
MIN_STAGE_FRACTION = 0.60  # of the viewport the main figure covers on the stage (issue 37)
CHART = '.vilab-chart, [data-testid="stPlotlyChart"]'  # a chart's element: vilab's own, or Streamlit's Plotly chart


def chromium_path() -> str | None:
    return os.environ.get("VILAB_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def page_paths() -> list[tuple[str, str]]:
    """(url path, page title) for each page, as st.navigation names them."""
    out = []
    for p in sorted((ROOT / "pages").glob("*.py")):
        if p.name.startswith("_"):
            continue
        head, _, rest = p.stem.partition("_")
        name = rest if head.isdigit() and rest else p.stem
        out.append((name, name.replace("_", " ")))
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_LOGS: dict = {}  # a running server's base URL -> the file its output goes to (server_log)


def server_log(url: str, chars: int = 3000) -> str:
    """The last ``chars`` characters a server of :func:`streamlit_server` printed (for a failing test's message)."""
    log = _LOGS.get(url)
    if log is None:
        return "(no log for this server)"
    fd = log.fileno()  # read where it is, without moving the offset the server's process writes at
    size = os.fstat(fd).st_size
    return os.pread(fd, chars, max(0, size - chars)).decode(errors="replace")


def health(url: str) -> str:
    """What the server's health probe answers now (or why it does not)."""
    try:
        return urllib.request.urlopen(url + "/_stcore/health", timeout=5).read().decode(errors="replace")
    except OSError as e:
        return f"no answer ({e})"


@contextmanager
def streamlit_server(timeout_s: float = 90, env: dict | None = None, args=()):
    """A live ``streamlit run app.py`` on a free port, started as ``vilab app`` starts it (vilab_ui/serve.py);
    yields its base URL. ``env``: extra environment variables (e.g. the JAX compilation cache folder);
    ``args``: extra ``streamlit run`` options
    (["--server.fileWatcherType", "none"]). The server's output goes to a temporary file (a pipe nobody
    reads would fill up and stall a long-running server); its tail is in the error when it does not start."""
    port = _free_port()
    env = dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false", **(env or {}))
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            command(ROOT / "app.py", "--server.headless", "true", "--server.port", str(port),
                    "--server.address", "127.0.0.1", *args),
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + timeout_s
        while time.time() < deadline and proc.poll() is None:
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.3)
        else:
            proc.kill()
            proc.wait()
            log.seek(0)
            raise RuntimeError(f"streamlit did not start (exit code {proc.poll()}): "
                               + log.read().decode(errors="replace")[-2000:])
        _LOGS[url] = log
        try:
            yield url
        finally:
            _LOGS.pop(url, None)
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@contextmanager
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=chromium_path(), headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"],
        )
        try:
            yield b
        finally:
            b.close()


def wait_quiet(page, timeout_s: float, busy) -> None:
    """Wait until ``busy()`` (the page's run is going on) has been False for 1.5 s on end; AssertionError after
    ``timeout_s``."""
    deadline, quiet_since = time.time() + timeout_s, None
    while time.time() < deadline:
        if busy():
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.time()
        elif time.time() - quiet_since > 1.5:
            return
        time.sleep(0.25)
    raise AssertionError("the page kept running past the timeout")


def wait_rendered(page, timeout_s: float = 240.0) -> None:
    """Wait until the script has finished running (no 'Running...' status), a title is shown and
    every Plotly chart on the page has been drawn."""
    page.wait_for_selector("h1", timeout=timeout_s * 1000)
    wait_quiet(page, timeout_s, lambda: page.locator('[data-testid="stStatusWidget"]').count() > 0)
    page.wait_for_function(
        f"() => Array.from(document.querySelectorAll('{CHART}'))"
        ".every(c => c.querySelector('.main-svg') !== null)", timeout=60_000)
    time.sleep(0.5)  # Plotly's last relayout (automargins)


def open_page(browser, base_url: str, path: str, width: int, height: int, lecture: bool, query: str = ""):
    """A new browser tab at the page, rendered; returns (page, js_errors)."""
    page = browser.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    q = "&".join(x for x in (("lecture=1" if lecture else ""), query) if x)
    home = page_paths()[0][0]
    page.goto(f"{base_url}/{'' if path == home else path}{'?' + q if q else ''}", wait_until="domcontentloaded")
    wait_rendered(page)
    try:  # a page's first run on a busy machine can pause between the title and the figure: wait for the figure
        page.wait_for_function(f"() => document.querySelector({_MAIN_JS!r}) !== null", timeout=120_000)
        wait_rendered(page)
    except Exception:  # noqa: BLE001 - no main figure at all: the layout test says so
        pass
    return page, errors


_MAIN_JS = ('.st-key-main_figure .vilab-chart .main-svg, .st-key-main_figure [data-testid="stPlotlyChart"] .main-svg, '
            '.st-key-main_figure img, '
            '.st-key-main_figure [data-testid="stDataFrame"], .st-key-main_figure [data-testid="stTable"]')


def main_figure_problems(page) -> list[str]:
    box = page.evaluate("""() => {
        const c = document.querySelector('.st-key-main_figure .js-plotly-plot .main-svg')
               || document.querySelector('.st-key-main_figure img');
        if (c) {
            const r = c.getBoundingClientRect();
            return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, w: innerWidth, h: innerHeight};
        }
        // a page whose main element is a table (Reproductions): its heading row and first rows
        const t = document.querySelector('.st-key-main_figure [data-testid="stDataFrame"], .st-key-main_figure [data-testid="stTable"]');
        if (!t) return null;
        const r = t.getBoundingClientRect();
        return {top: r.top, bottom: Math.min(r.bottom, r.top + 150), left: r.left, right: r.right, w: innerWidth, h: innerHeight};
    }""")
    if box is None:
        return ["no main figure (a chart or table in the container keyed 'main_figure')"]
    if box["bottom"] - box["top"] < 50:  # in the page but not shown (a hidden tab panel, a collapsed container)
        return [f"main figure hidden: {box['bottom'] - box['top']:.0f} px tall"]
    out = []
    if box["top"] < -1 or box["bottom"] > box["h"] + 1:
        out.append(f"main figure spans y = {box['top']:.0f}..{box['bottom']:.0f} px; the first screen ends at {box['h']}")
    if box["left"] < -1 or box["right"] > box["w"] + 1:
        out.append(f"main figure spans x = {box['left']:.0f}..{box['right']:.0f} px; the screen is {box['w']} wide")
    return out


_FONTS_JS = """(minPx) => {
    const bad = [];
    const vis = el => { const r = el.getBoundingClientRect(); const s = getComputedStyle(el);
        return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'; };
    const px = el => parseFloat(getComputedStyle(el).fontSize);
    const say = (what, el) => bad.push(what + ' ' + px(el).toFixed(1) + 'px: "' + (el.textContent || '').trim().slice(0, 40) + '"');
    const h1 = document.querySelector('h1');
    if (h1 && px(h1) < 2 * minPx) say('title', h1);
    const sel = ['[data-testid="stMarkdownContainer"] p', '[data-testid="stMarkdownContainer"] li',
                 '[data-testid="stWidgetLabel"] p', '[data-testid="stCaptionContainer"]',
                 '[data-testid="stTable"] td', '[data-testid="stTable"] th', 'button p',
                 '[data-testid="stSidebarNav"] span'];
    for (const s of sel) for (const el of document.querySelectorAll(s)) {
        if (!vis(el) || !(el.textContent || '').trim()) continue;
        if (el.closest('[data-testid="stExpanderDetails"]') && !vis(el.closest('[data-testid="stExpanderDetails"]'))) continue;
        if (px(el) < minPx - 0.01) say(s, el);
    }
    for (const t of document.querySelectorAll('.js-plotly-plot .main-svg text')) {
        if (!(t.textContent || '').trim() || !vis(t)) continue;
        const fs = parseFloat(t.style.fontSize || getComputedStyle(t).fontSize);
        if (fs < minPx - 0.01) say('chart text', t);
    }
    return bad;
}"""


def font_problems(page, min_px: float = MIN_LECTURE_PX) -> list[str]:
    bad = page.evaluate(_FONTS_JS, min_px)
    return sorted(set(bad))[:20] + ([f"... {len(set(bad)) - 20} more"] if len(set(bad)) > 20 else [])


_OVERFLOW_JS = """() => {
    const bad = [];
    const roots = document.querySelectorAll('[data-testid="stMain"], [data-testid="stSidebar"]');
    for (const root of roots) for (const el of root.querySelectorAll('p, span, label, button, h1, h2, h3, li, div')) {
        if (el.children.length > 0 && el.tagName === 'DIV') continue;
        if (el.closest('.katex-mathml')) continue;  // KaTeX's copy for screen readers, hidden on purpose
        // the uploader's own "+" button: its icon and the screen-reader label beside it ("add icon")
        if (el.closest('[data-testid="stFileUploader"]') && (el.getAttribute('data-testid') === 'stIconMaterial'
            || /^[a-z_]+ icon$/.test((el.textContent || '').trim()))) continue;
        const shut = el.closest('details:not([open])');
        if (shut && !el.closest('summary')) continue;  // inside a closed expander: not on screen
        const t = (el.textContent || '').trim();
        if (!t) continue;
        const r = el.getBoundingClientRect();
        if (r.width === 0 || r.height === 0) continue;
        const s = getComputedStyle(el);
        if (s.visibility === 'hidden') continue;
        const clips = s.overflowX !== 'visible' || s.textOverflow === 'ellipsis';
        if (clips && el.scrollWidth > el.clientWidth + 2) bad.push(el.tagName.toLowerCase() + ': "' + t.slice(0, 50) + '"');
    }
    const offScreen = el => el.closest('details:not([open])') || el.getBoundingClientRect().width === 0;
    // a multiselect's chosen items must all show (Streamlit scrolls them sideways by default)
    for (const el of document.querySelectorAll('[data-testid="stMultiSelectTagsContainer"]')) {
        if (offScreen(el)) continue;
        if (el.scrollWidth > el.clientWidth + 2) bad.push('chosen items cut off: "' + (el.textContent || '').trim().slice(0, 50) + '"');
        // wrapped chips must stay inside the box (a box of fixed height lets them spill onto the next widget)
        const box = el.parentElement.getBoundingClientRect();
        for (const chip of el.children) {
            const r = chip.getBoundingClientRect();
            if (r.height > 0 && r.bottom > box.bottom + 1) bad.push('chosen item outside its box: "' + ((chip.textContent || '').trim() || 'the typing area').slice(0, 50) + '"');
        }
    }
    // a selectbox shows its choice in an <input>, which cannot wrap: the whole choice must fit
    for (const el of document.querySelectorAll('[data-testid="stSelectbox"] input')) {
        if (offScreen(el)) continue;
        if (el.scrollWidth > el.clientWidth + 2) bad.push('choice cut off: "' + (el.value || '').slice(0, 50) + '"');
    }
    return bad;
}"""


def overflow_problems(page) -> list[str]:
    bad = page.evaluate(_OVERFLOW_JS)
    # Streamlit's own screen-reader-only and code blocks scroll on purpose
    return sorted(set(b for b in bad if b))[:20]


def exception_problems(page, errors) -> list[str]:
    out = [f"JavaScript error: {e}" for e in errors]
    exc = page.locator('[data-testid="stException"]')
    if exc.count():
        out.append("exception on the page: " + exc.first.inner_text()[:300])
    return out


_AREA_JS = """() => {
    const c = document.querySelector('.st-key-main_figure .js-plotly-plot .main-svg')
           || document.querySelector('.st-key-main_figure img');
    if (!c) return null;
    const r = c.getBoundingClientRect();
    const w = Math.max(0, Math.min(r.right, innerWidth) - Math.max(r.left, 0));
    const h = Math.max(0, Math.min(r.bottom, innerHeight) - Math.max(r.top, 0));
    return w * h / (innerWidth * innerHeight);
}"""


def main_figure_fraction(page) -> float | None:
    """The share of the viewport that the visible part of the main figure (a chart or an image) covers; None when
    the page's main element is not a figure (a table)."""
    return page.evaluate(_AREA_JS)


def stage_problems(page, min_fraction: float = MIN_STAGE_FRACTION) -> list[str]:
    """Lecture mode's stage: the main figure covers at least ``min_fraction`` of the viewport (pages whose main
    element is a table pass)."""
    f = main_figure_fraction(page)
    if f is None or f >= min_fraction:
        return []
    return [f"the main figure covers {f:.0%} of the screen; the stage needs at least {min_fraction:.0%}"]


def chrome_problems(page) -> list[str]:
    """Developer chrome a served lab must not show: Streamlit's Deploy button (toolbarMode = "viewer" in
    .streamlit/config.toml hides it, and the menu's Rerun and Clear cache)."""
    n = page.locator('[data-testid="stAppDeployButton"], [data-testid="stToolbar"] button:has-text("Deploy")').count()
    return [f"the Deploy button is shown ({n})"] if n else []
