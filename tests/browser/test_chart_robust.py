"""Every figure stays drawn (issue 37, item 3): Step, Step x10 and Play / Pause on the live views of Vector fields and
Trajectories, and F / A through every shipped deck, in a real browser. A chart that plotly.js could not draw says
"This chart could not be drawn: ..." (vilab/plots/browser/chart.js); plotly.js 4.1.1 threw on a second
``Plotly.react`` of a contour figure with the same ``datarevision``, which every figure once had."""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.browser import layout
from vilab_ui import decks

pytestmark = pytest.mark.browser

if layout.chromium_path() is None:
    import os

    if os.environ.get("CI"):
        raise RuntimeError("Chromium is required for the browser tests in CI; .ci/run installs it (apt-get install chromium).")
    pytest.skip("Chromium is not installed (apt-get install chromium)", allow_module_level=True)

# the pages with a live (Play) view: (url path, query that opens it, the key of its Live, whose buttons are in
# the container st-key-<key>_buttons)
LIVE_VIEWS = [
    ("Vector_fields", "live=1", "vf"),
    ("Trajectories", "view=live", "tr"),
    ("Adam_vs_SNNGM", "view=Step+by+step", "ls"),
    ("Divergences", "tab=Batch+step+by+step", "lb"),
]

# each chart of the page: how many traces it has, how many of them plotly.js drew (a group in one of the plot's
# trace layers), and whether it says it could not be drawn
CHARTS_JS = """() => Array.from(document.querySelectorAll('.vilab-chart, [data-testid="stPlotlyChart"]')).map(c => {
  const gd = c.classList.contains('js-plotly-plot') ? c : c.querySelector('.js-plotly-plot');
  const visible = gd && Array.isArray(gd.data) ? gd.data.filter(t => t.visible !== false && t.visible !== 'legendonly') : [];
  const drawn = gd ? gd.querySelectorAll('.cartesianlayer .mlayer > g').length : 0;
  return {text: (c.innerText || '').slice(0, 200), svg: !!c.querySelector('.main-svg'), traces: visible.length, drawn};
})"""


@pytest.fixture(scope="module")
def server():
    """The lab, without Streamlit's file watcher (files edited meanwhile do not put "File change" on the page)."""
    with layout.streamlit_server(args=["--server.fileWatcherType", "none"]) as url:
        yield url


def watch(page) -> list[str]:
    """The page's JavaScript errors (uncaught, and those logged to the console), as they come. Not counted: a 404
    of Streamlit's own probes below a page's path (its frontend asks /<page>/_stcore/host-config first)."""
    errors: list[str] = []

    def console(m):
        url = (m.location or {}).get("url") or ""
        if m.type == "error" and not ("Failed to load resource" in m.text and "/_stcore/" in url):
            errors.append(f"console: {m.text} ({url})")

    page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    page.on("console", console)
    return errors


def chart_problems(page) -> list[str]:
    """What is wrong with the page's charts now: one that could not be drawn, one without its picture, one whose
    traces were not drawn; and Streamlit's exception boxes."""
    out = []
    try:
        charts = page.evaluate(CHARTS_JS)
    except Exception as e:  # noqa: BLE001 - the page navigated meanwhile: nothing to read this time
        return [] if "navigat" in str(e) or "destroyed" in str(e) else [f"could not read the charts: {e}"]
    for i, c in enumerate(charts):
        if "could not be drawn" in c["text"]:
            out.append(f"chart {i}: {c['text']}")
        elif c["traces"] and not c["drawn"]:
            out.append(f"chart {i}: {c['traces']} traces, none drawn")
    if "could not be drawn" in (page.locator("body").inner_text(timeout=10_000) or ""):
        out.append("the page says a chart could not be drawn")
    exc = page.locator('[data-testid="stException"]')
    if exc.count():
        out.append("exception on the page: " + exc.first.inner_text()[:300])
    return out


def running(page) -> bool:
    """Streamlit's status says the script is running (not, say, that a file changed)."""
    try:
        return any("Running" in t or "Stop" in t for t in page.locator('[data-testid="stStatusWidget"]').all_inner_texts())
    except Exception:  # noqa: BLE001 - redrawn meanwhile
        return True


def settled(page, timeout_s: float = 240.0) -> None:
    """The page's run has finished and every chart is drawn (a chart that failed counts as drawn: the checks say so)."""
    page.wait_for_selector("h1", timeout=timeout_s * 1000)
    layout.wait_quiet(page, timeout_s, lambda: running(page))  # no "Running..." for 1.5 s
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('.vilab-chart')).every(c => c.querySelector('.main-svg') "
        "|| (c.innerText || '').includes('could not be drawn'))", timeout=timeout_s * 1000)


def where(page) -> tuple[str, dict]:
    parts = urlsplit(page.evaluate("location.href"))
    return parts.path.strip("/"), {k: v[-1] for k, v in parse_qs(parts.query).items()}


def until(cond, timeout_s: float = 240.0, what: str = "") -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def iteration(page, key: str) -> int:
    """The iteration a live view shows ("iteration N of M" beside its buttons), -1 while it is redrawn."""
    import re

    try:
        text = page.locator(f'[class*="st-key-{key}_buttons"]').first.inner_text(timeout=5_000)
    except Exception:  # noqa: BLE001
        return -1
    m = re.search(r"iteration (\d+) of", text)
    return int(m.group(1)) if m else -1


def button(page, key: str, label: str):
    return page.locator(f'[class*="st-key-{key}_buttons"] button').filter(has_text=label).first


def open_tab(browser, server: str, path: str, query: str = "", size=(1280, 720)):
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    errors = watch(page)
    page.goto(f"{server}/{path}{'?' + query if query else ''}", wait_until="domcontentloaded")
    settled(page)
    return page, errors


@pytest.mark.parametrize("path,query,key", LIVE_VIEWS[:2], ids=[v[0] for v in LIVE_VIEWS[:2]])
def test_step_and_play_keep_every_chart_drawn(server, browser, path, query, key):
    page, errors = open_tab(browser, server, path, query)
    try:
        until(lambda: iteration(page, key) == 0, what="iteration 0")
        assert not chart_problems(page), chart_problems(page)

        button(page, key, "Step").click()  # once: the figure that once could not be drawn
        until(lambda: iteration(page, key) >= 1, 300, "Step")
        settled(page)
        problems = chart_problems(page)
        assert not problems and not errors, (problems, errors)

        before = iteration(page, key)
        button(page, key, "Step ×10").click()
        until(lambda: iteration(page, key) >= before + 10, 300, "Step x10")
        settled(page)
        problems = chart_problems(page)
        assert not problems and not errors, (problems, errors)

        before = iteration(page, key)
        button(page, key, "Play").click()
        until(lambda: button(page, key, "Pause").count() == 1, 300, "the Pause label")
        until(lambda: iteration(page, key) > before, 300, "Play to advance")
        for _ in range(8):  # the figure as it plays
            problems = chart_problems(page)
            assert not problems and not errors, (problems, errors)
            time.sleep(0.5)
        button(page, key, "Pause").click()
        until(lambda: button(page, key, "Play").count() == 1, 300, "the Play label back")
        settled(page)
        problems = chart_problems(page)
        assert not problems and not errors, (problems, errors)
    finally:
        page.close()


@pytest.mark.parametrize("stem,deck", decks.shipped(), ids=[s for s, _ in decks.shipped()])
def test_every_figure_of_a_shipped_deck_is_drawn(server, browser, stem, deck):
    """F through the deck, A on each view (the keys a lecturer presses), and every chart of every view drawn."""
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    errors = watch(page)
    try:
        page.goto(f"{server}/?deck={decks.encode(deck)}&dv=1", wait_until="domcontentloaded")
        for k, view in enumerate(deck.views, start=1):
            if k > 1:
                page.keyboard.press("f")
            until(lambda view=view, k=k: (where(page)[0] == view.page.partition("_")[2]
                                          and where(page)[1].get("dv") == str(k)), 300, f"view {k} of {stem}")
            settled(page)
            problems = chart_problems(page)
            assert not problems and not errors, (k, problems, errors)
            page.locator("h1").first.click()  # the keys go to the page, not to a widget
            page.keyboard.press("a")
            time.sleep(1.0)
            settled(page)
            problems = chart_problems(page)
            assert not problems and not errors, (k, "after A", problems, errors)
    finally:
        page.close()


# ------------------------------------------------------------------------------------------------ Play (contract C1)
# the path's length in the browser, each time it changes: a sampler on the screen's refresh, installed before the page
SAMPLER_JS = """(() => {
  window.__vilabLengths = [];
  const tick = () => {
    const gd = document.querySelector('.vilab-chart.js-plotly-plot');
    const tr = gd && Array.isArray(gd.data) ? gd.data[1] : null;
    const n = tr && tr.x ? tr.x.length : null;
    const s = window.__vilabLengths;
    if (n !== null && s[s.length - 1] !== n) s.push(n);
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
})();"""


@pytest.fixture(scope="module")
def play_server():
    """A Streamlit server of tests/browser/play_page.py, started as the lab's (vilab.cli.command)."""
    import os
    import subprocess
    import tempfile
    import urllib.request

    from vilab.cli import command

    port = layout._free_port()
    env = dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false")
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(command(layout.ROOT / "tests" / "browser" / "play_page.py", "--server.headless", "true",
                                        "--server.port", str(port), "--server.address", "127.0.0.1"),
                                cwd=layout.ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.time() + 120
            while True:
                try:
                    if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                        break
                except OSError:
                    if time.time() > deadline or proc.poll() is not None:
                        log.seek(0)
                        raise RuntimeError("the play page's server did not start: " + log.read().decode()[-2000:])
                    time.sleep(0.3)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _report(page) -> dict | None:
    import json

    text = page.locator('[data-testid="stCode"]').first.inner_text(timeout=10_000)
    return json.loads(text.split("report:", 1)[1])


def test_play_animates_the_frames_in_the_browser_and_appends_a_later_message(play_server, browser):
    page = browser.new_page(viewport={"width": 1000, "height": 800})
    errors = watch(page)
    page.add_init_script(SAMPLER_JS)
    try:
        page.goto(play_server, wait_until="domcontentloaded")
        def lengths():
            return page.evaluate("window.__vilabLengths")

        until(lambda: lengths() and lengths()[-1] == 46, 120, "the first 45 frames played")
        first = lengths()
        assert len(set(first)) >= 20, first  # it moved, frame by frame
        assert first == sorted(first) and first[0] <= 10, first  # in order, from the start
        assert not chart_problems(page) and not errors, (chart_problems(page), errors)
        # the element reported where it is; the report reran the page, whose message (the same play) did not restart it
        until(lambda: (_report(page) or {}).get("at") == 45, 60, "the report of the last frame")
        rep = _report(page)
        assert rep["token"] == "run-1" and rep["queued"] == 45 and isinstance(rep["t"], (int, float)), rep

        n0 = len(lengths())
        page.get_by_role("button", name="More frames").click()  # the same token, 90 frames: the last 45 are appended
        until(lambda: lengths()[-1] == 91, 120, "the appended frames played")
        later = lengths()[n0:]
        assert later and min(later) > 46 and later == sorted(later), later  # on from frame 45, not from 0
        assert len(set(later)) >= 20, later
        until(lambda: (_report(page) or {}).get("at") == 90, 60, "the report of the appended frames")

        page.get_by_role("button", name="Pause").click()  # playing false: the figure itself (its base state)
        until(lambda: lengths()[-1] == 1, 60, "the figure drawn again on Pause")
        assert not chart_problems(page) and not errors, (chart_problems(page), errors)
    finally:
        page.close()
