"""An exported deck in a real browser (issue 37 item 4): the HTML file opened from file:// in headless Chromium with
every network request refused (a hall without Wi-Fi) steps through every view with F, shows each answer with A and
goes back with B, every figure drawn, no JavaScript error."""

from __future__ import annotations

import time

import pytest

from tests.browser import layout
from vilab_ui import deck_export as dx
from vilab_ui import decks

pytestmark = pytest.mark.browser

if layout.chromium_path() is None:
    import os

    if os.environ.get("CI"):
        raise RuntimeError("Chromium is required for the browser tests in CI; .ci/run installs it (apt-get install chromium).")
    pytest.skip("Chromium is not installed (run `make test`, which installs it)", allow_module_level=True)

# views whose pages run in seconds, from two shipped decks' pages: a contour with shapes, a vector field with paths,
# a page of several figures
DECK = decks.Deck("Exported deck", (
    decks.make_view("25_Positive_definiteness", {"mode": "single update (Cauchy example)", "rho": "0.3"},
                    "Still a covariance?", "No: the precision update's smallest eigenvalue is negative."),
    decks.make_view("00_Home", {}, "Which path reaches the optimum first?", "The natural gradient's."),
    decks.make_view("25_Positive_definiteness", {"mode": "single update (Cauchy example)", "rho": "0.2"},
                    "And at a smaller step?", "Both stay ellipses."),
))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    results = dx.compute(DECK, lecture=True)
    assert [r.error for r in results] == [None] * len(DECK)
    path = tmp_path_factory.mktemp("deck") / "deck.html"
    path.write_bytes(dx.deck_html(DECK, results, "http://lab.example:8501/", lecture=True))
    return path, results


def _drawn(page) -> dict:
    return page.evaluate("""() => {
        const sec = document.querySelector('section.view.on');
        const figs = Array.from(sec.querySelectorAll('.fig'));
        return {id: sec.id, figs: figs.length, drawn: figs.filter(f => f.querySelector('.main-svg')).length,
                broken: figs.filter(f => (f.textContent || '').includes('could not be drawn')).length,
                answer: !sec.querySelector('.answer').hidden, errors: window.__deckErrors || []};
    }""")


def test_an_exported_deck_works_offline_from_a_file(browser, exported):
    path, results = exported
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    errors: list[str] = []
    refused: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    try:
        page.goto(path.as_uri(), wait_until="load")
        n = len(DECK)
        for k in range(1, n + 1):
            if k > 1:
                page.keyboard.press("f")
            deadline = time.time() + 30
            while time.time() < deadline:
                got = _drawn(page)
                if got["id"] == f"view-{k}" and got["drawn"] + got["broken"] == got["figs"]:
                    break
                time.sleep(0.2)
            assert got["id"] == f"view-{k}", got
            assert got["figs"] == len(results[k - 1].figures) and got["drawn"] == got["figs"], got
            assert not got["answer"], f"view {k}: the answer shows before A"
            assert f"View {k} of {n}" in page.locator("#where").inner_text()
            page.keyboard.press("a")
            assert _drawn(page)["answer"], f"view {k}: A did not show the answer"
            assert DECK.views[k - 1].reveal in page.locator("section.view.on .answer").inner_text()
        page.keyboard.press("f")  # past the last view: stays
        assert _drawn(page)["id"] == f"view-{n}"
        for k in range(n - 1, 0, -1):
            page.keyboard.press("b")
            got = _drawn(page)
            assert got["id"] == f"view-{k}" and got["drawn"] == got["figs"], got
        page.get_by_role("button", name="Next (F)").click()  # the buttons do what the keys do
        assert _drawn(page)["id"] == "view-2"
        link = page.locator("section.view.on a.live").get_attribute("href")
        assert link.startswith("http://lab.example:8501/?") and "dv=2" in link
        assert not errors and not _drawn(page)["errors"], errors
        assert not refused, refused  # it asked the network for nothing
    finally:
        page.close()
