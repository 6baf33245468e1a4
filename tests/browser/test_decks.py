"""Lecture decks in a real browser (issue 15 item 3): a share link opens the deck at its first view, the
keyboard steps through it (F next, B back, A reveal), the keys do nothing while typing in a text box, and a
refresh keeps the place."""

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
    pytest.skip("Chromium is not installed (run `make test`, which installs it)", allow_module_level=True)

DECK = decks.Deck("Browser deck", (
    decks.make_view("40_Divergences", {"tab": "2-D Gaussian", "rho": "0.95"}, "Which variance is smallest?",
                    "The score-based one."),
    decks.make_view("25_Positive_definiteness", {"rho": "0.9"}, "Still a covariance?", "Not the precision update."),
))


def _where(page) -> tuple[str, dict]:
    """(path, query) of the address bar. Playwright's page.url can lag behind Streamlit's history.pushState
    (it shows the address before the last page switch), so ask the page itself."""
    parts = urlsplit(page.evaluate("location.href"))
    return parts.path.strip("/"), {k: v[-1] for k, v in parse_qs(parts.query).items()}


def _wait_for(page, pred, timeout_s: float = 240.0, what: str = "") -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}; the page is at {_where(page)}")


def _sidebar_text(page) -> str:
    return page.locator('[data-testid="stSidebar"]').inner_text()


def _at_view(page, k: int, view: decks.View) -> None:
    _wait_for(page, lambda: _where(page)[0] == view.page.partition("_")[2] and _where(page)[1].get("dv") == str(k),
              what=f"view {k}")
    layout.wait_rendered(page)
    path, query = _where(page)
    for key, value in view.params.items():
        assert query.get(key) == value, (key, query)
    assert f"View {k} of {len(DECK)}" in _sidebar_text(page)


def test_keyboard_steps_through_a_deck_opened_from_a_link(server, browser):
    w, h = layout.SIZES[0]
    page = browser.new_page(viewport={"width": w, "height": h})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{server}/?deck={decks.encode(DECK)}&dv=1", wait_until="domcontentloaded")
        first, second = DECK.views
        _at_view(page, 1, first)  # the link opened on the home page went to view 1

        # typing the shortcut's letter in a text box types it, and does not turn the page
        page.locator('[data-testid="stSidebar"] summary', has_text="Lecture deck").click()
        box = page.locator('[data-testid="stSidebar"] input[type="text"]').first
        box.click()
        box.press("f")
        time.sleep(2.0)
        assert box.input_value() == "f" and _where(page)[1].get("dv") == "1"
        box.press("Backspace")
        page.locator("h1").first.click()  # focus out of the text box

        assert second.reveal not in _sidebar_text(page)
        page.keyboard.press("f")
        _at_view(page, 2, second)
        page.keyboard.press("a")
        _wait_for(page, lambda: second.reveal in _sidebar_text(page), 60, "the answer")

        page.reload(wait_until="domcontentloaded")  # a refresh keeps the place
        _at_view(page, 2, second)

        page.locator("h1").first.click()
        page.keyboard.press("b")
        _at_view(page, 1, first)
        problems = layout.exception_problems(page, errors)
        assert not problems, problems
    finally:
        page.close()


def test_the_decks_page_presents_a_shipped_deck(server, browser):
    """The Lecture decks page's button opens the deck's first view, its question in the sidebar, the page
    menu replaced by the deck's navigator until the deck is closed."""
    stem, deck = decks.shipped()[0]
    w, h = layout.SIZES[0]
    page, errors = layout.open_page(browser, server, "Lecture_decks", w, h, lecture=False)
    try:
        page.get_by_role("button", name=deck.title, exact=False).click()
        view = deck.views[0]
        _wait_for(page, lambda: _where(page)[0] == view.page.partition("_")[2] and _where(page)[1].get("dv") == "1",
                  what="the deck's first view")
        layout.wait_rendered(page)
        assert view.prompt in _sidebar_text(page)
        assert page.locator('[data-testid="stSidebarNav"]').count() == 0  # presenting: no page menu
        page.get_by_role("button", name="Close the deck").click()
        _wait_for(page, lambda: page.locator('[data-testid="stSidebarNav"]').count() == 1, 60, "the page menu")
        assert "dv" not in _where(page)[1] and "deck" not in _where(page)[1]
        problems = layout.exception_problems(page, errors)
        assert not problems, problems
    finally:
        page.close()
