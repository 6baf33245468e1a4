"""Drive headless Chromium against a live `streamlit run app.py`: every page renders, no exception box.

Screenshots go to assets/screenshots/ (the README shows the home page's).
"""

from __future__ import annotations

import time

import pytest

from tests.browser import layout
from tests.browser.layout import CHART, ROOT, wait_rendered  # noqa: F401

SHOTS = ROOT / "assets" / "screenshots"
CHROMIUM = layout.chromium_path()

pytestmark = pytest.mark.browser

if CHROMIUM is None:
    import os

    if os.environ.get("CI"):
        raise RuntimeError("Chromium is required for the browser tests in CI; .ci/run installs it (apt-get install chromium).")
    pytest.skip("Chromium is not installed (run `make test`, which installs it, or apt-get install chromium)",
                allow_module_level=True)

_page_paths = layout.page_paths


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


def test_url_sets_sidebar_widgets(server, browser):
    page = browser.new_page()
    page.goto(server + "/?seed=123&lecture=1", wait_until="domcontentloaded")
    wait_rendered(page)
    assert page.locator('[data-testid="stSidebar"] input[type="number"]').first.input_value() == "123"
    page.close()


def test_an_explanation_opens_on_a_click_and_its_link_reopens_it(server, browser):
    """The "How it works" expander is written only while open: closed, the page holds none of its formulas; a click
    opens it (the page reruns and writes it, KaTeX formulas included) and puts ?how_equations=1 in the address bar;
    that address opened in a new tab shows it open."""
    page = browser.new_page()
    page.goto(server + "/Vector_fields", wait_until="domcontentloaded")
    wait_rendered(page)
    main = page.locator('[data-testid="stMain"]')
    box = main.locator('[data-testid="stExpander"]', has_text="How it works")
    assert box.count() == 1 and box.locator(".katex").count() == 0
    assert "how_equations" not in page.url
    box.locator("summary").click()
    page.wait_for_function("() => location.search.includes('how_equations=1')", timeout=30_000)
    box.locator(".katex").first.wait_for(state="visible", timeout=30_000)
    assert "Natural-gradient ascent" in box.inner_text()
    url = page.url
    page.close()
    page = browser.new_page()
    page.goto(url, wait_until="domcontentloaded")
    wait_rendered(page)
    box = page.locator('[data-testid="stMain"] [data-testid="stExpander"]', has_text="How it works")
    box.locator(".katex").first.wait_for(state="visible", timeout=30_000)
    page.close()


# Geometry pages (issue 4): every Plotly chart is drawn, and moving a slider redraws a chart and writes
# the new value into the URL. (page path, slider label, its URL key, index of the chart it redraws)
SLIDER_PAGES = [("Vector_fields", "arrows per axis", "na", 0),
                ("Trajectories", "start scale c₀ (C₀ = c₀ I)", "c0", 0),
                ("Positive_definiteness", "step size rho", "rho", 0),
                ("Flows_and_guarantees", "time horizon t", "T", 0)]


def _chart_state(page, i):
    """What the browser drew in chart i: its traces' data, read from the Plotly graph div."""
    return page.locator('.js-plotly-plot').nth(i).evaluate(
        "el => JSON.stringify((el.data || []).map(d => [d.x, d.y]))")


@pytest.mark.parametrize("path,label,key,chart", SLIDER_PAGES, ids=[p[0] for p in SLIDER_PAGES])
def test_geometry_page_charts_render_and_a_slider_redraws(server, browser, path, label, key, chart):
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{server}/{path}", wait_until="domcontentloaded")
    wait_rendered(page)
    page.locator('.js-plotly-plot .main-svg').first.wait_for(timeout=120_000)
    wait_rendered(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    charts = page.locator(CHART)
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
    page.locator('.js-plotly-plot .main-svg').first.wait_for(timeout=60_000)
    box = page.locator('[data-testid="stMain"] [data-testid="stTextInput"] input').first  # not the sidebar's deck builder
    before = "0,0.1; 0.5,0.02; 2,0.01"
    deadline = time.time() + 30  # a loaded machine may still be drawing the page's last rerun
    while box.input_value() != before and time.time() < deadline:
        time.sleep(0.5)
    boxes = page.evaluate("""() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stTextInput"] input')]
        .map(e => [e.getAttribute('aria-label'), e.value])""")
    assert box.input_value() == before, f"the page's text boxes hold {boxes}"
    area = page.locator(".js-plotly-plot").first.locator(".nsewdrag").first
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


HOSTILE_KEYS = ("starts", "gstarts", "ds", "npz", "tab", "rho", "T", "opts", "m", "tgt", "seed", "lecture")


@pytest.mark.parametrize("path", [p for p, _ in _page_paths()])
def test_hostile_link_shows_no_foreign_link_or_image(server, browser, path):
    """Every page opened with link, image, HTML and script payloads in its parameters (the text boxes'
    among them): the rendered page holds no link, image or frame to the payload's host, and ran no script."""
    from urllib.parse import urlencode

    from tests.app.test_hostile_urls import HOST, PAYLOAD

    payload = PAYLOAD + f" <script>window.__pwned = 1</script> <iframe src=http://{HOST}/f></iframe>"
    home = _page_paths()[0][0]
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{server}/{'' if path == home else path}?{urlencode({k: payload for k in HOSTILE_KEYS})}",
              wait_until="domcontentloaded")
    wait_rendered(page)
    found = page.evaluate("""host => [...document.querySelectorAll('a[href], img[src], iframe[src], source[src]')]
        .map(e => e.getAttribute('href') || e.getAttribute('src')).filter(u => u.includes(host))""", HOST)
    assert found == [], found
    assert page.evaluate("() => window.__pwned === undefined")
    assert page.locator('[data-testid="stException"]').count() == 0
    page.close()
