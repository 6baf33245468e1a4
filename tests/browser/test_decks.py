"""Lecture decks in a real browser (issue 15 item 3, issue 37 item 1): a share link opens the deck at its first view,
the keyboard steps through it (F next, B back, A reveal), the keys do nothing while typing in a text box, a refresh
keeps the place; the deck's question and answer stand on the stage beside the figure, whole on a 1280 x 720 screen
in lecture mode; presses made while a view loads are queued, not lost."""

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


def _stage_text(page) -> str:
    loc = page.locator(".st-key-deck_stage")
    return loc.inner_text() if loc.count() else ""


def _at_view(page, k: int, view: decks.View) -> None:
    _wait_for(page, lambda: _where(page)[0] == view.page.partition("_")[2] and _where(page)[1].get("dv") == str(k),
              what=f"view {k}")
    layout.wait_rendered(page)
    path, query = _where(page)
    for key, value in view.params.items():
        assert query.get(key) == value, (key, query)
    assert f"View {k} of {len(DECK)}" in _stage_text(page)


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

        assert second.reveal not in _stage_text(page)
        page.keyboard.press("f")
        _at_view(page, 2, second)
        page.keyboard.press("a")
        _wait_for(page, lambda: second.reveal in _stage_text(page), 60, "the answer")
        assert second.prompt not in _sidebar_text(page)

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
        assert view.prompt in _stage_text(page)
        assert page.locator('[data-testid="stSidebarNav"]').count() == 0  # presenting: no page menu
        page.get_by_role("button", name="Close the deck").click()
        _wait_for(page, lambda: page.locator('[data-testid="stSidebarNav"]').count() == 1, 60, "the page menu")
        assert "dv" not in _where(page)[1] and "deck" not in _where(page)[1]
        problems = layout.exception_problems(page, errors)
        assert not problems, problems
    finally:
        page.close()


# ------------------------------------------------------------------------------------------ the stage (issue 37)

_BOXES_JS = """() => {
    const box = el => { if (!el) return null; const r = el.getBoundingClientRect();
        return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
    const stage = document.querySelector('.st-key-deck_stage');
    const q = stage && Array.from(stage.querySelectorAll('[data-testid="stMarkdownContainer"]'))
        .find(m => (m.textContent || '').startsWith('Question.'));
    const a = document.querySelector('.st-key-deck_answer');
    const fig = document.querySelector('.st-key-main_figure .js-plotly-plot .main-svg')
        || document.querySelector('.st-key-main_figure [data-testid="stTable"], .st-key-main_figure img');
    const px = Array.from((stage || document.createElement('div')).querySelectorAll('p'))
        .filter(p => (p.textContent || '').trim()).map(p => parseFloat(getComputedStyle(p).fontSize));
    return {stage: box(stage), question: box(q), answer: box(a), figure: box(fig), w: innerWidth, h: innerHeight,
            minPx: px.length ? Math.min(...px) : null};
}"""


def _inside(b, w, h) -> bool:
    return b is not None and b["top"] >= -0.5 and b["left"] >= -0.5 and b["bottom"] <= h + 0.5 and b["right"] <= w + 0.5


def _overlap(a, b) -> bool:
    return not (a["right"] <= b["left"] or b["right"] <= a["left"] or a["bottom"] <= b["top"] or b["bottom"] <= a["top"])


def _stage_problems(page, k: int) -> list[str]:
    got = page.evaluate(_BOXES_JS)
    w, h, out = got["w"], got["h"], []
    for what in ("question", "answer"):
        b = got[what]
        if b is None:
            out.append(f"view {k}: no {what} on the stage")
        elif not _inside(b, w, h):
            out.append(f"view {k}: the {what} spans y = {b['top']:.0f}..{b['bottom']:.0f}, x = {b['left']:.0f}.."
                       f"{b['right']:.0f}; the screen is {w} x {h}")
        elif got["figure"] is not None and _overlap(b, got["figure"]):
            out.append(f"view {k}: the {what} overlaps the main figure ({b} and {got['figure']})")
    if got["minPx"] is not None and got["minPx"] < layout.MIN_LECTURE_PX - 0.01:
        out.append(f"view {k}: text of {got['minPx']:.1f} px on the deck's panel")
    return out


def _stage_at(page, k: int, n: int, timeout_s: float = 600.0) -> None:
    _wait_for(page, lambda: f"View {k} of {n}" in _stage_text(page) and _where(page)[1].get("dv") == str(k),
              timeout_s, f"view {k}")
    layout.wait_rendered(page, timeout_s)  # a view's first run on a busy machine takes minutes


@pytest.mark.parametrize("stem", [s for s, _ in decks.shipped()])
def test_a_shipped_deck_stands_on_the_stage_in_lecture_mode(server, browser, stem):
    """Every view of a shipped deck at 1280 x 720 in lecture mode: after A, its question and answer are wholly on
    the screen, in text of at least 18 px, beside the main figure and not over it; F opens the next view (the
    sidebar collapsed: the keys and the panel's buttons work without it)."""
    deck = dict(decks.shipped())[stem]
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{server}/?lecture=1&deck={decks.encode(deck)}&dv=1", wait_until="domcontentloaded")
        _stage_at(page, 1, len(deck))
        collapse = page.locator('[data-testid="stSidebarCollapseButton"] button, [data-testid="stSidebarCollapseButton"]')
        if page.locator('[data-testid="stSidebar"][aria-expanded="true"]').count() and collapse.count():
            collapse.first.click()
        problems = []
        for k, view in enumerate(deck.views, 1):
            if k > 1:
                page.keyboard.press("f")
                _stage_at(page, k, len(deck))
            page.keyboard.press("a")
            _wait_for(page, lambda: page.locator(".st-key-deck_answer").count() == 1, 60, f"the answer of view {k}")
            time.sleep(0.5)
            problems += _stage_problems(page, k)
        problems += layout.exception_problems(page, errors)
        assert not problems, problems
    finally:
        page.close()


def _longest(deck: decks.Deck) -> int:
    return max(range(len(deck)), key=lambda i: len(deck.views[i].prompt) + len(deck.views[i].reveal))


@pytest.mark.parametrize("size", [(1024, 768), (1920, 1080)], ids=["1024x768", "1920x1080"])
def test_the_longest_question_and_answer_fit_on_other_screens(server, browser, size):
    """The view of each shipped deck with the longest question and answer, opened from a link on a 1024 x 768 and
    a 1920 x 1080 screen in lecture mode: after A, both wholly on the screen, beside the figure."""
    w, h = size
    problems = []
    for stem, deck in decks.shipped():
        k = _longest(deck) + 1
        page = browser.new_page(viewport={"width": w, "height": h})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        try:
            page.goto(f"{server}/?lecture=1&deck={decks.encode(deck)}&dv={k}", wait_until="domcontentloaded")
            _stage_at(page, k, len(deck))
            page.wait_for_function("() => window.__vilabDeckKeys && window.__vilabDeckKeys.listening", timeout=60_000)
            page.keyboard.press("a")
            _wait_for(page, lambda: page.locator(".st-key-deck_answer").count() == 1, 60, f"the answer of view {k}")
            time.sleep(0.5)
            problems += [f"{stem}: {p}" for p in _stage_problems(page, k) + layout.exception_problems(page, errors)]
        finally:
            page.close()
    assert not problems, problems


def test_keys_pressed_while_a_view_loads_are_queued(server, browser):
    """F pressed three times, 0.3 s apart, while the deck's first view loads lands three views on (the panel says
    where the presses are going meanwhile, unless the server has already opened the view asked for: on a quiet
    machine with the views cached a press can be served within 0.3 s); B twice then comes back two."""
    stem, deck = decks.shipped()[-1]
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{server}/?lecture=1&deck={decks.encode(deck)}&dv=1", wait_until="domcontentloaded")
        page.wait_for_function("() => window.__vilabDeckKeys && window.__vilabDeckKeys.listening", timeout=240_000)
        loading = page.locator('[data-testid="stStatusWidget"]').count() > 0
        pending = []
        for k in range(2, 5):
            page.keyboard.press("f")
            time.sleep(0.3)
            note = page.locator(".vilab-deck-pending").inner_text()
            pending.append(note)
            if not note:  # the server has acted on the press: the stage shows view k (its text may follow the note)
                _wait_for(page, lambda: f"View {k} of {len(deck)}" in _stage_text(page)
                          and _where(page)[1].get("dv") == str(k), 10, f"view {k} after an empty note {pending}")
            else:
                assert f"Opening view {k} of" in note, pending
        _stage_at(page, 4, len(deck))
        time.sleep(3.0)  # nothing more arrives
        assert _where(page)[1].get("dv") == "4" and f"View 4 of {len(deck)}" in _stage_text(page), loading
        page.keyboard.press("b")
        time.sleep(0.3)
        page.keyboard.press("b")
        _stage_at(page, 2, len(deck))
        problems = layout.exception_problems(page, errors)
        assert not problems, problems
    finally:
        page.close()
