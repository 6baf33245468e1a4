"""Drive headless Chromium against a live `streamlit run app.py`: every page renders, no exception box.

Screenshots go to assets/screenshots/ (the README shows the home page's).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "assets" / "screenshots"
CHROMIUM = os.environ.get("VILAB_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.browser

if CHROMIUM is None:
    if os.environ.get("CI"):
        raise RuntimeError("Chromium is required for the browser tests in CI; .ci/run installs it (apt-get install chromium).")
    pytest.skip("Chromium is not installed (run `make test`, which installs it, or apt-get install chromium)",
                allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _page_paths() -> list[tuple[str, str]]:
    """(url path, page title) for each page, as st.navigation names them."""
    sys.path.insert(0, str(ROOT))
    out = []
    for p in sorted((ROOT / "pages").glob("*.py")):
        if p.name.startswith("_"):
            continue
        head, _, rest = p.stem.partition("_")
        name = rest if head.isdigit() and rest else p.stem
        out.append((name, name.replace("_", " ")))
    return out


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    env = dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        raise RuntimeError("streamlit did not start: " + proc.stdout.read().decode(errors="replace")[-2000:])
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"],
        )
        yield b
        b.close()


def wait_rendered(page, timeout_s: float = 240.0) -> None:
    """Wait until the script has finished running (no 'Running...' status) and a title is shown."""
    page.wait_for_selector("h1", timeout=timeout_s * 1000)
    deadline = time.time() + timeout_s
    quiet_since = None
    while time.time() < deadline:
        running = page.locator('[data-testid="stStatusWidget"]').count() > 0
        if running:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.time()
        elif time.time() - quiet_since > 1.5:
            return
        time.sleep(0.25)
    raise AssertionError("the page kept running past the timeout")


def test_shared_link_opened_first_on_a_fresh_server(server, browser):
    """A page URL with parameters, opened before any other session: app.py's sidebar and the URL's values."""
    page = browser.new_page()
    page.goto(server + "/Reproductions?seed=5&lecture=1", wait_until="domcontentloaded")
    wait_rendered(page)
    assert page.locator("h1").first.inner_text().strip() == "Reproductions"
    assert page.locator('[data-testid="stSidebar"] input[type="number"]').first.input_value() == "5"
    nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
    assert "app" not in nav.split("\n")  # not Streamlit's v1 pages-directory list
    page.close()


@pytest.mark.parametrize("path,title", _page_paths(), ids=[p for p, _ in _page_paths()])
def test_every_page_renders_in_chromium(server, browser, path, title):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    url = server + ("/" if path == _page_paths()[0][0] else f"/{path}")
    page.goto(url, wait_until="domcontentloaded")
    wait_rendered(page)
    assert page.locator("h1").first.inner_text().strip() != ""
    assert page.locator('[data-testid="stException"]').count() == 0, page.locator('[data-testid="stException"]').first.inner_text()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{path.lower()}.png"), full_page=False)
    # Plotly charts, where the page has any, are drawn by the browser
    for chart in page.locator('[data-testid="stPlotlyChart"]').all()[:3]:
        assert chart.locator(".main-svg").count() > 0
    assert not errors, errors
    page.close()


def test_url_sets_sidebar_widgets(server, browser):
    page = browser.new_page()
    page.goto(server + "/?seed=123&lecture=1", wait_until="domcontentloaded")
    wait_rendered(page)
    assert page.locator('[data-testid="stSidebar"] input[type="number"]').first.input_value() == "123"
    page.close()


# Geometry pages (issue 4): every Plotly chart is drawn, and moving a slider redraws a chart and writes
# the new value into the URL. (page path, slider label, its URL key, index of the chart it redraws)
SLIDER_PAGES = [("Vector_fields", "arrows per axis", "na", 0),
                ("Trajectories", "start scale c_0 (C_0 = c_0 I)", "c0", 0),
                ("Positive_definiteness", "step size rho", "rho", 0),
                ("Flows_and_guarantees", "time horizon t", "T", 0)]


def _chart_state(page, i):
    """What the browser drew in chart i: its traces' data, read from the Plotly graph div."""
    return page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').nth(i).evaluate(
        "el => JSON.stringify((el.data || []).map(d => [d.x, d.y]))")


@pytest.mark.parametrize("path,label,key,chart", SLIDER_PAGES, ids=[p[0] for p in SLIDER_PAGES])
def test_geometry_page_charts_render_and_a_slider_redraws(server, browser, path, label, key, chart):
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{server}/{path}", wait_until="domcontentloaded")
    wait_rendered(page)
    page.locator('[data-testid="stPlotlyChart"] .main-svg').first.wait_for(timeout=120_000)
    wait_rendered(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    charts = page.locator('[data-testid="stPlotlyChart"]')
    assert charts.count() >= 1
    for i in range(charts.count()):
        charts.nth(i).scroll_into_view_if_needed()
        page.wait_for_function("el => el.querySelector('.main-svg .cartesianlayer') !== null",
                               arg=charts.nth(i).element_handle(), timeout=30_000)
    before, url_before = _chart_state(page, chart), page.url
    thumb = page.locator(f'[data-testid="stSlider"] input[type="range"][aria-label="{label}"]')
    thumb.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("([k, u]) => window.location.href !== u && window.location.search.includes(k + '=')",
                           arg=[key, url_before], timeout=60_000)
    wait_rendered(page)
    assert page.url != url_before and f"{key}=" in page.url
    deadline = time.time() + 60
    while _chart_state(page, chart) == before and time.time() < deadline:
        time.sleep(0.5)
    assert _chart_state(page, chart) != before, "the chart was not redrawn after the slider moved"
    assert page.locator('[data-testid="stException"]').count() == 0
    assert not errors, errors
    page.close()


def test_vector_fields_click_adds_a_start(server, browser):
    """A click on the Euclidean field adds a starting point: the text box, the URL and the table grow."""
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    page.goto(f"{server}/Vector_fields", wait_until="domcontentloaded")
    wait_rendered(page)
    page.locator('[data-testid="stPlotlyChart"] .main-svg').first.wait_for(timeout=60_000)
    box = page.locator('[data-testid="stTextInput"] input').first
    before = box.input_value()
    assert before == "0,0.1; 0.5,0.02; 2,0.01"
    area = page.locator('[data-testid="stPlotlyChart"]').first.locator(".nsewdrag").first
    area.scroll_into_view_if_needed()
    b = area.bounding_box()
    page.mouse.click(b["x"] + 0.5 * b["width"], b["y"] + 0.4 * b["height"])
    deadline = time.time() + 60
    while box.input_value() == before and time.time() < deadline:
        time.sleep(0.5)
    wait_rendered(page)
    after = box.input_value()
    assert after.startswith(before + "; ") and len(after.split(";")) == len(before.split(";")) + 1
    assert "starts=" in page.url and page.url.count("%3B") == after.count(";")
    page.close()
