"""Lecture-grade layout, measured in headless Chromium on a live server (issue 14).

Every page, in normal mode at 1280x720 and 1600x1000, in lecture mode at 1280x720, 1920x1080 and 1024x768:
* its main figure lies inside the first viewport;
* in lecture mode (the stage, issue 37) the main figure covers at least 60 % of the viewport, and the title,
  body text, labels and every Plotly text are >= 18 px;
* no visible element's text is clipped by its box; no Deploy button; no exception, no JavaScript error.

Screenshots of each page (1280x720, normal and lecture) go to assets/screenshots/, where the README shows them.
"""

from __future__ import annotations

import time
from urllib.parse import urlencode

import pytest

from tests.browser import layout

pytestmark = pytest.mark.browser

if layout.chromium_path() is None:
    import os

    if os.environ.get("CI"):
        raise RuntimeError("Chromium is required for the browser tests in CI; .ci/run installs it (apt-get install chromium).")
    pytest.skip("Chromium is not installed (run `make test`, which installs it)", allow_module_level=True)

SHOTS = layout.ROOT / "assets" / "screenshots"
PAGES = [p for p, _ in layout.page_paths()]


@pytest.mark.parametrize("lecture", [False, True], ids=["normal", "lecture"])
@pytest.mark.parametrize("path", PAGES)
def test_page_is_lecture_grade(server, browser, path, lecture):
    """Normal mode at 1280x720 and 1600x1000; lecture mode, the stage, at 1280x720, 1920x1080 and 1024x768: the
    main figure covers at least 60 % of the screen (and so grows with it), every text >= 18 px. Both: the main
    figure on the first screen, nothing clipped, no Deploy button, no error."""
    sizes = layout.STAGE_SIZES if lecture else layout.SIZES
    (w0, h0), *others = sizes
    page, errors = layout.open_page(browser, server, path, w0, h0, lecture)
    problems = []
    try:
        for i, (w, h) in enumerate(sizes):
            if i:
                page.set_viewport_size({"width": w, "height": h})
                time.sleep(1.5)  # the chart element follows its place's size a moment later
            found = layout.main_figure_problems(page) + layout.overflow_problems(page) + layout.chrome_problems(page)
            if lecture:
                found += layout.font_problems(page) + layout.stage_problems(page)
            problems += [f"{w}x{h}: {p}" for p in found]
            if i == 0:
                SHOTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(SHOTS / f"{path.lower()}{'-lecture' if lecture else ''}.png"))
        problems += layout.exception_problems(page, errors)
    finally:
        page.close()
    assert not problems, "\n".join(problems)


def test_stage_sidebar_starts_closed_and_opens_by_keyboard(server, browser):
    """Lecture mode: the sidebar starts closed; its button, reached with the Tab key, opens it, and the page menu
    in it is reached with the keyboard too."""
    w, h = layout.STAGE_SIZES[0]
    page, errors = layout.open_page(browser, server, "Vector_fields", w, h, True)
    try:
        side = page.locator('[data-testid="stSidebar"]')
        assert side.get_attribute("data-collapsed") == "true", "the sidebar is open on the stage"
        for _ in range(40):  # Tab through the page until the button that opens the sidebar has the focus
            page.keyboard.press("Tab")
            if page.evaluate("() => !!document.activeElement.closest('[data-testid=\"stExpandSidebarButton\"]')"):
                break
        else:
            raise AssertionError("the Tab key never reached the button that opens the sidebar")
        page.keyboard.press("Enter")
        page.wait_for_function("() => document.querySelector('[data-testid=\"stSidebar\"]')"
                               ".getAttribute('data-collapsed') === 'false'", timeout=10_000)
        time.sleep(0.5)  # the sidebar slides in
        in_nav = ("() => { const a = document.activeElement.closest('[data-testid=\"stSidebarNav\"] a');"
                  " return a ? a.getBoundingClientRect().left : null; }")
        for _ in range(60):  # on to the page menu, with the keyboard, on the screen
            page.keyboard.press("Tab")
            left = page.evaluate(in_nav)
            if left is not None:
                assert left >= 0, f"the page menu has the focus off the screen (x = {left:.0f})"
                break
        else:
            raise AssertionError("the Tab key never reached the page menu in the opened sidebar")
        assert not layout.exception_problems(page, errors)
    finally:
        page.close()


# the longest choice of every selectbox whose choices can be longer than its default: a choice that
# does not fit the control column is cut off (a selectbox cannot wrap)
LONG_CHOICES = [
    ("Trajectories", {"tgt": "logistic regression (T3)"}),
    ("Vector_fields", {"chart": "natural (mu/sigma^2, -1/(2 sigma^2))"}),  # shown as "natural parameters"
    ("Divergences", {"tgt": "log_inverse_gamma"}),
    ("Online_learning", {"tab": "Digits stream", "dmet": "error (linearized)"}),
    ("CNN_lab", {"model": "mlp"}),
    ("Positive_definiteness", {"tgt": "two-component mixture"}),
    ("Reproductions", {"r": "kumar2025-vn-srvn-order2"}),
]


@pytest.mark.parametrize("lecture", [False, True], ids=["normal", "lecture"])
@pytest.mark.parametrize("path,query", LONG_CHOICES, ids=[p for p, _ in LONG_CHOICES])
def test_long_choices_fit(server, browser, path, query, lecture):
    w, h = layout.SIZES[0]
    page, errors = layout.open_page(browser, server, path, w, h, lecture, urlencode(query))
    try:
        problems = layout.overflow_problems(page) + layout.exception_problems(page, errors)
    finally:
        page.close()
    assert not problems, "\n".join(problems)


def test_stage_atlas_click_opens_the_run(server, browser):
    """Lecture mode: a click on a cell of the Stability atlas opens that run on Trajectories (on the stage, the
    link the click makes in normal mode would be in the closed drawer)."""
    w, h = layout.STAGE_SIZES[0]
    page, errors = layout.open_page(browser, server, "Stability_atlas", w, h, True)
    try:
        box = page.locator(".st-key-main_figure .nsewdrag").first.bounding_box()
        page.mouse.click(box["x"] + 0.75 * box["width"], box["y"] + 0.8 * box["height"])  # a converging cell
        page.wait_for_url("**/Trajectories?*", timeout=120_000)
        assert "lecture=1" in page.url and "view=paths" in page.url, page.url
        layout.wait_rendered(page)
        assert page.locator("h1").first.inner_text().startswith("Trajectories")
        assert not layout.exception_problems(page, errors)
    finally:
        page.close()
