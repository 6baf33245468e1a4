"""Live stepping in a real browser (issue 15, item 1): on Trajectories' step-by-step view press Play, Pause and
Step, move SR-VN's step size mid-run with the keyboard, and check, from the figure's data in the DOM, that the
path after the change equals a direct run that switched ρ at that iteration (vilab.core.resume)."""

from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest

from tests.browser import layout
from tests.browser.layout import wait_rendered

pytestmark = pytest.mark.browser

if layout.chromium_path() is None:
    pytest.skip("Chromium is not installed (apt-get install chromium)", allow_module_level=True)

START_MEAN, START_SCALE = (-2.0, 2.5), 0.2  # the page's default start


def _query(page) -> dict:
    return {k: v[-1] for k, v in parse_qs(urlparse(page.url).query).items()}


def _it(page) -> int:
    """The iteration the live view shows ("iteration N of M" beside the buttons)."""
    try:
        text = page.locator('[class*="st-key-tr_buttons"]').first.inner_text(timeout=5_000)
    except Exception:  # noqa: BLE001 - redrawn right now
        return -1
    m = re.search(r"iteration (\d+) of", text)
    return int(m.group(1)) if m else -1


def _star_values(page, code):
    """[(iteration, new value)] of the stars (step-size changes) drawn on ``code``'s path."""
    return page.locator('[class*="st-key-main_figure"] .js-plotly-plot').first.evaluate(
        """(el, code) => (el.data || []).filter(t => t.legendgroup === code && String(t.name).includes('changed'))
             .flatMap(t => Array.from(t.text || []))""", code)


def _until(cond, timeout=120.0, what="condition", state=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}" + (f" ({state()})" if state else ""))


def _button(page, text):
    return page.locator('[class*="st-key-tr_buttons"] button').filter(has_text=text).first


def _press(page, text, cond, what, timeout=150.0, tries=3):
    """Click a live button until ``cond`` holds (a click made while the machine is busy can be lost: it is made
    again, and the checks below read the iteration it reached)."""
    for _ in range(tries):
        _button(page, text).wait_for(state="visible", timeout=300_000)
        _button(page, text).click(timeout=300_000)
        try:
            _until(cond, timeout, what)
            return
        except AssertionError:
            continue
    raise AssertionError(f"{what}: no effect after {tries} clicks")


def _path(page, code):
    """The mean path of method ``code`` as drawn: the main figure's trace of that legend group, from Plotly's div."""
    xy = page.locator('[class*="st-key-main_figure"] .js-plotly-plot').first.evaluate(
        """(el, code) => {
             const types = {f8: Float64Array, f4: Float32Array, i4: Int32Array, i2: Int16Array, i1: Int8Array,
                            u4: Uint32Array, u2: Uint16Array, u1: Uint8Array};
             const dec = v => {  // Plotly's typed-array form {dtype, bdata (base64)}, or a plain array
               if (v && v.bdata !== undefined) {
                 const s = atob(v.bdata), buf = new Uint8Array(s.length);
                 for (let i = 0; i < s.length; i++) buf[i] = s.charCodeAt(i);
                 return Array.from(new types[v.dtype](buf.buffer));
               }
               return Array.from(v || []);
             };
             const d = (el.data || []).find(t => t.legendgroup === code && t.mode === 'lines+markers');
             return d ? [dec(d.x), dec(d.y)] : null;
           }""", code)
    return None if xy is None else np.column_stack([np.asarray(xy[0], float), np.asarray(xy[1], float)])


def _drawn(page, code) -> int:
    """How many points of ``code``'s path are drawn (-1 while the figure is being redrawn and has no such trace)."""
    xy = _path(page, code)
    return -1 if xy is None else len(xy)


def test_play_pause_step_and_a_step_size_change_bend_the_path_as_a_resumed_run(server, browser):
    from vilab.algorithms import algorithm, run
    from vilab.core import as_key, resume
    from vilab.family.gaussian import CholCov
    from vilab.targets.papers import kumar_t2

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{server}/Trajectories?view=live&m=srvn&m=gd-mc", wait_until="domcontentloaded")
    wait_rendered(page)
    _until(lambda: _it(page) == 0, what="iteration 0")
    assert _query(page).get("it") == "0"
    assert _drawn(page, "srvn") == 1

    # Step: one iteration (the first one may compile the runs' loop)
    page.locator('[class*="st-key-tr_buttons"]').wait_for(timeout=120_000)
    _press(page, "Step", lambda: _it(page) >= 1, "the first Step", timeout=300)

    # Play runs on by itself (fragment ticks), Pause stops it
    before = _it(page)
    _button(page, "Play").click(timeout=300_000)  # once: a second click would pause
    _until(lambda: _button(page, "Pause").count() == 1, 300, "the Pause label")
    _until(lambda: _it(page) >= before + 3, 300, "Play to advance", state=lambda: (
        page.url, page.locator('[class*="st-key-tr_buttons"]').first.inner_text()))
    _button(page, "Pause").click(timeout=120_000)  # the app is busy while playing: no idle wait here
    _until(lambda: _button(page, "Play").count() == 1, 300, "the Play label back")
    time.sleep(2.0)
    paused = _it(page)
    time.sleep(3.0)
    assert _it(page) == paused, "the run went on after Pause"
    _until(lambda: _drawn(page, "srvn") == paused + 1, what="the paused figure")
    # the address bar follows the run: a link copied now opens at this iteration
    _until(lambda: _query(page).get("it") == str(paused), 30, "the address bar at the paused iteration",
           state=lambda: page.url)

    # Reset: back to iteration 0 (on a busy machine Play can run on to the end before the Pause lands, where a
    # Step has nothing left to do; from 0 the steps below always have room)
    _press(page, "Reset", lambda: _it(page) == 0, "Reset")
    _until(lambda: _drawn(page, "srvn") == 1, what="the reset figure")

    # Step x10, then Step: eleven iterations
    _press(page, "Step ×10", lambda: _it(page) >= 10, "the first Step x10")
    ten = _it(page)
    _press(page, "Step", lambda: _it(page) > ten, "Step")
    t = _it(page)
    _until(lambda: _drawn(page, "srvn") == t + 1, what="the stepped figure")

    # SR-VN's step size one notch down (1 -> 0.75) with the keyboard, mid-run
    thumb = page.get_by_role("slider", name="SR-VN: step size")
    thumb.focus()
    page.keyboard.press("ArrowLeft")
    _until(lambda: len(_star_values(page, "srvn")) == 1, what="the star of the change")
    rho = float(_star_values(page, "srvn")[0].split("=")[1])
    assert rho < 1.0 and _it(page) == t

    _press(page, "Step ×10", lambda: _it(page) >= t + 10, "Step x10")
    n = _it(page)
    _until(lambda: _drawn(page, "srvn") == n + 1, what="the figure after Step x10")
    got = _path(page, "srvn")

    tgt = kumar_t2()
    start = CholCov(np.array(START_MEAN), START_SCALE * np.eye(2))
    alg = algorithm("srvn", tgt, grads="exact")
    direct = resume(alg, run("srvn", tgt, start, t, 1.0, key=as_key(0), grads="exact"), n - t, hyper={"rho": rho})
    np.testing.assert_allclose(got, np.asarray(direct.mean), rtol=1e-12, atol=1e-12)

    # the keyboard shortcut of Step (N) takes one more step
    page.locator("h1").first.click()
    page.keyboard.press("n")
    _until(lambda: _it(page) == n + 1, what="the N shortcut")
    assert page.locator('[data-testid="stException"]').count() == 0
    assert not errors, errors
    page.close()


def _lr_changes(page, code) -> list[tuple[int, float]]:
    """The changes of ``code``'s step size in the address bar (?lr=code@0:v0,t1:v1,...), after the start."""
    for part in (_query(page).get("lr") or "").split(";"):
        name, _, body = part.partition("@")
        if name == code:
            return [(int(t), float(v)) for t, v in (x.split(":") for x in body.split(","))][1:]
    return []


def test_play_runs_in_the_browser_past_several_chunks_and_a_step_size_change_while_playing_bends_it(server, browser):
    """Play at the screen's rate (issue 37): the chart element plays the frames the server computes ahead, the
    play goes on past several chunks of them, a step size moved while playing bends the path where the browser
    was (the star) and the play goes on; Pause stops it where it is, and the address bar holds that step."""
    from vilab.algorithms import algorithm, run
    from vilab.core import as_key, resume
    from vilab.family.gaussian import CholCov
    from vilab.targets.papers import kumar_t2

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{server}/Trajectories?view=live&m=srvn&m=gd-mc", wait_until="domcontentloaded")
    wait_rendered(page)
    _until(lambda: _it(page) == 0 and _drawn(page, "srvn") == 1, what="iteration 0 drawn")
    _press(page, "Step", lambda: _it(page) >= 1, "the first Step", timeout=300)

    _button(page, "Play").click(timeout=300_000)
    _until(lambda: _button(page, "Pause").count() == 1, 300, "the Pause label")
    _until(lambda: _drawn(page, "srvn") >= 6, 300, "the picture to move")
    # past two chunks of the runs computed ahead (each about 2 s of frames): one continuous play
    _until(lambda: _drawn(page, "srvn") > 140, 300, "the play to pass iteration 140",
           state=lambda: (_it(page), _drawn(page, "srvn"), page.url))
    assert _button(page, "Pause").count() == 1, "the play stopped by itself"
    # the path a frame drew, put together in the browser from the frames' new parts, is the run to that iteration
    tgt = kumar_t2()
    start = CholCov(np.array(START_MEAN), START_SCALE * np.eye(2))
    playing = _path(page, "srvn")
    direct = run("srvn", tgt, start, len(playing) - 1, 1.0, key=as_key(0), grads="exact")
    np.testing.assert_allclose(playing, np.asarray(direct.mean), rtol=1e-12, atol=1e-12)

    # SR-VN's step size one notch down while playing: a star where the browser was, and the play goes on
    thumb = page.get_by_role("slider", name="SR-VN: step size")
    thumb.focus()
    page.keyboard.press("ArrowLeft")
    _until(lambda: len(_star_values(page, "srvn")) == 1, 120, "the star of the change")
    (bend, rho), = _lr_changes(page, "srvn") or [(None, None)]
    assert bend is not None and rho < 1.0, page.url
    _until(lambda: _drawn(page, "srvn") > bend + 10, 300, "the play to go on after the change",
           state=lambda: (_drawn(page, "srvn"), bend, page.url))
    assert _button(page, "Pause").count() == 1, "the step-size change stopped the play"

    _button(page, "Pause").click(timeout=120_000)
    _until(lambda: _button(page, "Play").count() == 1, 300, "the Play label back")
    time.sleep(1.5)
    paused = _it(page)
    time.sleep(2.0)
    assert _it(page) == paused, "the run went on after Pause"
    _until(lambda: _drawn(page, "srvn") == paused + 1, 60, "the paused figure at the paused iteration",
           state=lambda: (_drawn(page, "srvn"), paused))
    _until(lambda: _query(page).get("it") == str(paused), 30, "the address bar at the paused iteration",
           state=lambda: page.url)
    assert _lr_changes(page, "srvn") == [(bend, rho)]

    got = _path(page, "srvn")
    alg = algorithm("srvn", tgt, grads="exact")
    direct = resume(alg, run("srvn", tgt, start, bend, 1.0, key=as_key(0), grads="exact"), paused - bend,
                    hyper={"rho": rho})
    np.testing.assert_allclose(got, np.asarray(direct.mean), rtol=1e-12, atol=1e-12)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.locator("text=could not be drawn").count() == 0
    assert not errors, errors
    page.close()
