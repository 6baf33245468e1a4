"""A lecturer's hands, fast and slow (issue 37, item 3): 300 random actions with a fixed seed over every page with
Play (its live view) and every shipped deck: the live keys (P Play / Pause, N Step, Shift+N Step x10, 0 Reset),
the deck's keys (F next, B back, A reveal the answer), and step-size sliders moved with the arrow keys, some a
second apart, some 50 ms apart. Throughout and at the end: no chart that could not be drawn, no JavaScript error,
no exception on the page."""

from __future__ import annotations

import random
import time
import warnings

import pytest

from tests.browser import layout
from tests.browser import test_chart_robust as robust
from tests.browser.test_chart_robust import server  # noqa: F401 - the lab without the file watcher
from vilab_ui import decks

pytestmark = pytest.mark.browser

SEED = 37
ACTIONS = 300
PAUSES_S = (0.05, 0.05, 0.05, 0.2, 0.5, 1.0)  # between two actions: as fast as a key can repeat, and a human's pace
CHECK_EVERY = 10  # actions between two looks at the charts
LIVE_KEYS = ("p", "n", "n", "Shift+N", "0")
DECK_KEYS = ("f", "f", "a", "a", "b")


def _targets() -> list[tuple[str, str, str | None]]:
    """(name, url path and query, the live view's key or None for a deck)."""
    out = [(path, f"{path}?{query}", key) for path, query, key in robust.LIVE_VIEWS]
    out += [(f"deck {stem}", f"?deck={decks.encode(deck)}&dv=1", None) for stem, deck in decks.shipped()]
    return out


def _blur(page) -> None:
    """Keys go to the page (its shortcuts), not to the widget that has the focus."""
    page.evaluate("() => { const a = document.activeElement; if (a && a !== document.body) a.blur(); }")


def _move_a_slider(page, rng: random.Random) -> str:
    sliders = page.locator('[data-testid="stMain"] [data-testid="stSlider"] [role="slider"]')
    n = sliders.count()
    if not n:
        return "no slider"
    s = sliders.nth(rng.randrange(n))
    try:
        s.focus(timeout=2_000)
        key = rng.choice(("ArrowLeft", "ArrowRight"))
        for _ in range(rng.randint(1, 3)):
            page.keyboard.press(key)
    except Exception:  # noqa: BLE001 - the slider was redrawn meanwhile: the action is lost, as a hand's would be
        return "slider gone"
    finally:
        _blur(page)
    return f"slider {key}"


def _stop_playing(page, key: str) -> None:
    """Pause a play the random keys left running (a playing page reruns all the time and never looks finished)."""
    for _ in range(3):
        pause = robust.button(page, key, "Pause")
        if not pause.count():
            return
        pause.click(timeout=60_000)
        time.sleep(1.0)


def _settled(page, url: str, name: str, log: list[str]) -> None:
    """robust.settled, and when the page does not settle: which page, the last actions, what the server says."""
    try:
        robust.settled(page)
        return
    except Exception as e:  # noqa: BLE001 - once: a page that stalled is reloaded, as a lecturer would, and reported
        first = (f"{name} did not settle (reloaded once): {e}\nhealth: {layout.health(url)}\n"
                 f"the server's output, last part:\n{layout.server_log(url)}")
    warnings.warn(first, stacklevel=2)
    try:
        page.reload(wait_until="domcontentloaded")
        robust.settled(page)
    except Exception as e:  # re-raised with what a reader needs to find the cause
        raise AssertionError(
            f"{name} did not settle: {e}\nlast actions: {log[-CHECK_EVERY:]}\nhealth: {layout.health(url)}\n"
            f"the server's output, last part:\n{layout.server_log(url)}") from e


def test_random_keys_and_sliders_on_every_play_page_and_deck(server, browser):  # noqa: F811
    rng = random.Random(SEED)
    targets = _targets()
    per = [ACTIONS // len(targets) + (i < ACTIONS % len(targets)) for i in range(len(targets))]
    done, log = 0, []
    for (name, url, key), n in zip(targets, per):
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        errors = robust.watch(page)
        try:
            page.goto(f"{server}/{url}", wait_until="domcontentloaded")
            _settled(page, server, name, log)
            problems = robust.chart_problems(page)
            assert not problems and not errors, (name, "opened", problems, errors)
            furthest = -1  # the furthest iteration the live view was seen at
            for i in range(n):
                r = rng.random()
                if key is not None and r < 0.3:
                    what = _move_a_slider(page, rng)
                else:
                    k = rng.choice(LIVE_KEYS if key is not None else DECK_KEYS + LIVE_KEYS[:1])
                    _blur(page)
                    page.keyboard.press(k)
                    what = k
                log.append(f"{name} {i}: {what}")
                done += 1
                time.sleep(rng.choice(PAUSES_S))
                if (i + 1) % CHECK_EVERY == 0:
                    problems = robust.chart_problems(page)
                    assert not problems and not errors, (name, log[-CHECK_EVERY:], problems, errors)
                    if key is not None:
                        furthest = max(furthest, robust.iteration(page, key))
            if key is not None:
                furthest = max(furthest, robust.iteration(page, key))
                assert furthest > 0, (name, "the keys never moved the run", log[-n:])
                _stop_playing(page, key)
            _settled(page, server, name, log)
            problems = robust.chart_problems(page)
            assert not problems and not errors, (name, "at the end", log[-CHECK_EVERY:], problems, errors)
        finally:
            page.close()
    assert done == ACTIONS
