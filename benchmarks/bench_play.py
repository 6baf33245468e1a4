"""Play at the screen's rate, measured in a real browser (issue 37, item 2): per page with Play, the time from
pressing Play to the first moved frame and the frames a second over 10 s of play.

Starts the lab's server as the browser tests do (tests/browser/layout.py), opens each page's live view in
headless Chromium (/usr/bin/chromium) at 1280x720, waits until it is drawn and idle, then presses Play and
watches the main figure: on every animation frame of the browser (requestAnimationFrame) a script in the page
reads the drawn paths (the ``d`` of every line and marker path of the main chart's scatter layers) and notes
the time whenever they changed. From those times:

* **first move**: from the click on Play (timed in the page, just before the click) to the first change of
  the drawn paths (target <= 0.3 s);
* **fps**: changes a second over ``--seconds`` (default 10) of play from the first move (target >= 24), with
  the median and largest gap between two changes (a stall shows as a large gap);
* **bend**: then (after ``--seconds``, or earlier once the play is 70 % of the way to its last iteration) the
  page's live step size moved one notch with the keyboard while playing: the time until the
  star marking the change is drawn (target <= 0.5 s; one notch down, ArrowLeft), and whether the paths still move in the 2 s after it
  (the play goes on);
* the iteration reached (the "iteration N" beside the buttons) and whether the play was still on (a play that
  ends, every run stopped or the last iteration reached, is measured over its own length).

Before each play the page takes one Step and a Reset (JAX compiles the runs' loop on the first step, seconds on
a fresh server); ``--cold`` also measures each page's first play without them.

The browser, the Streamlit server and JAX share this machine's cores, with whatever else runs on it: the load
average before and after each page is recorded, with the machine. Writes a dated record
benchmarks/results/play-<date>.json and prints a Markdown table.

    python benchmarks/bench_play.py [--pages Trajectories Vector_fields] [--seconds 10] [--rounds 1]

Not a test: nothing here asserts a time (tests/browser/test_live.py checks what Play does).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser import layout  # noqa: E402

# page -> (URL query of its live view, the Live's key: its buttons are in st-key-<key>_buttons, the live step-size
# slider moved while playing)
PAGES = {
    "Trajectories": ("view=live&m=srvn&m=gd-mc", "tr", "SR-VN: step size"),
    "Vector_fields": ("live=1", "vf", "first step size tried ρ₀"),
    "Adam_vs_SNNGM": ("view=Step+by+step", "ls", "step size α₀, SNNGM"),
    "Divergences": ("tab=Batch+step+by+step", "lb", "SDb: learning rate"),
}
VIEWPORT = {"width": 1280, "height": 720}
TARGET_FIRST_S, TARGET_FPS = 0.3, 24.0

# watches the main chart's drawn paths; window.__vilabPlay = {changes: [ms], clicked: ms}
_WATCH_JS = """() => {
  const w = window.__vilabPlay = {changes: [], clicked: null, last: null};
  const sig = () => {
    const gd = document.querySelector('.st-key-main_figure .js-plotly-plot');
    if (!gd) return null;
    let s = '';
    gd.querySelectorAll('.scatterlayer path').forEach(p => { const d = p.getAttribute('d') || ''; s += d.length + ':' + d.slice(-24) + ';'; });
    return s;
  };
  const tick = (t) => {
    const s = sig();
    if (s !== null && w.last !== null && s !== w.last && w.clicked !== null) w.changes.push(performance.now());
    if (s !== null) w.last = s;
    w.raf = requestAnimationFrame(tick);
  };
  w.raf = requestAnimationFrame(tick);
}"""

_CLICK_JS = r"""(key) => {
  const b = Array.from(document.querySelectorAll(`[class*="st-key-${key}_buttons"] button`))
    .find(x => x.innerText.trim().split(/\s/)[0] === 'Play');
  if (!b) return false;
  window.__vilabPlay.clicked = performance.now();
  b.click();
  return true;
}"""


def load_average():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _iteration(page, key, of: bool = False):
    """The iteration beside the live buttons ("iteration N of M"); with ``of``, (N, M)."""
    import re

    try:
        text = page.locator(f'[class*="st-key-{key}_buttons"]').first.inner_text(timeout=5_000)
    except Exception:  # noqa: BLE001 - being redrawn
        return (None, None) if of else None
    m = re.search(r"iteration (\d+) of (\d+)", text)
    if of:
        return (int(m.group(1)), int(m.group(2))) if m else (None, None)
    return int(m.group(1)) if m else None


def _until(cond, timeout: float = 300.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.2)
    raise TimeoutError("the page did not get there")


_STARS_JS = """() => {
  const gd = document.querySelector('.st-key-main_figure .js-plotly-plot');
  return gd ? (gd.data || []).filter(t => String(t.name || '').includes('changed')).length : -1;
}"""


def _bend(page, key: str, slider: str) -> dict:
    """Move the live step size one notch while playing: seconds until its star is drawn, and whether the paths
    moved in the 2 s after."""
    stars0 = page.evaluate(_STARS_JS)
    thumb = page.get_by_role("slider", name=slider).first
    try:
        thumb.focus(timeout=10_000)
    except Exception:  # noqa: BLE001 - not on this page's view
        return {"bend_s": None, "bend_error": f"no slider {slider!r}"}
    t0 = time.perf_counter()
    page.keyboard.press("ArrowLeft")
    bend = None
    while time.perf_counter() - t0 < 30:
        if page.evaluate(_STARS_JS) > stars0:
            bend = time.perf_counter() - t0
            break
        time.sleep(0.02)
    n0 = page.evaluate("() => window.__vilabPlay.changes.length")
    time.sleep(2.0)
    moved = page.evaluate("() => window.__vilabPlay.changes.length") - n0
    playing = page.locator(f'[class*="st-key-{key}_buttons"] button').filter(has_text="Pause").count() > 0
    return {"bend_s": None if bend is None else round(bend, 3), "moves_after_bend_2s": moved,
            "playing_after_bend": playing}


def measure(browser, base: str, name: str, seconds: float, warm: bool = True) -> dict:
    query, key, slider = PAGES[name]
    res = {"page": name, "query": query, "warm": warm, "load_before": load_average()}
    page = browser.new_page(viewport=VIEWPORT)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{base}/{name}?{query}", wait_until="domcontentloaded")
        layout.wait_rendered(page)
        buttons = page.locator(f'[class*="st-key-{key}_buttons"] button')
        buttons.filter(has_text="Play").first.wait_for(timeout=120_000)
        if warm:  # one Step and Reset first: the runs' compiled loop exists (JAX compiles it on the first step)
            buttons.filter(has_text="Step").first.click()
            _until(lambda: _iteration(page, key) == 1)
            buttons.filter(has_text="Reset").first.click()
            _until(lambda: _iteration(page, key) == 0)
            layout.wait_rendered(page)
        time.sleep(2.0)  # idle, as a lecturer looks at the page before pressing Play
        page.evaluate(_WATCH_JS)
        it0 = _iteration(page, key)
        if not page.evaluate(_CLICK_JS, key):
            res["error"] = "no Play button"
            return res
        # play for `seconds` (and 1.5 s more), or until the play is 70 % of the way to its last iteration: the
        # bend is measured while there is still play left to bend (a play of 1,000 iterations can end in 6 s)
        t_end, near_end = time.time() + seconds + 1.5, False
        while time.time() < t_end and not near_end:
            time.sleep(0.25)
            it, n_max = _iteration(page, key, of=True)
            near_end = it is not None and n_max is not None and it >= 0.7 * n_max
        got = page.evaluate("() => ({changes: window.__vilabPlay.changes, clicked: window.__vilabPlay.clicked})")
        it1 = _iteration(page, key)
        playing = page.locator(f'[class*="st-key-{key}_buttons"] button').filter(has_text="Pause").count() > 0
        if playing:
            res.update(_bend(page, key, slider))
        res["stopped_for_bend_at_70pc"] = near_end
        ch = [(t - got["clicked"]) / 1000.0 for t in got["changes"]]
        res.update(iteration_start=it0, iteration_end=it1, still_playing=playing, js_errors=errors[:5])
        if not ch:
            res.update(first_move_s=None, fps=0.0, frames=0)
            return res
        first = ch[0]
        window = [t for t in ch if t <= first + seconds]
        span = min(seconds, max(window[-1] - first, 1e-9)) if len(window) > 1 else seconds
        gaps = [b - a for a, b in zip(window, window[1:])]
        res.update(first_move_s=round(first, 3), frames=len(window),
                   fps=round((len(window) - 1) / span, 1) if len(window) > 1 else 0.0,
                   span_s=round(span, 2),
                   gap_median_ms=round(1000 * statistics.median(gaps), 1) if gaps else None,
                   gap_max_ms=round(1000 * max(gaps), 1) if gaps else None,
                   gaps_over_200ms=sum(g > 0.2 for g in gaps))
        return res
    finally:
        res["load_after"] = load_average()
        page.close()


def table(results: list[dict]) -> str:
    rows = ["| page | play | first move (s) | fps | frames | largest gap (ms) | gaps > 200 ms | bend (s) | moves 2 s after "
            "the bend | iterations | load before |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        rows.append(f"| {r['page']} | {'after a Step' if r.get('warm') else 'first'} | {r.get('first_move_s')} | "
                    f"{r.get('fps')} | {r.get('frames')} | "
                    f"{r.get('gap_max_ms')} | {r.get('gaps_over_200ms')} | {r.get('bend_s')} | "
                    f"{r.get('moves_after_bend_2s')} | "
                    f"{r.get('iteration_start')} -> {r.get('iteration_end')} | {r.get('load_before')} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", nargs="*", default=list(PAGES), choices=list(PAGES))
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=1, help="plays per page (each in a new tab)")
    ap.add_argument("--cold", action="store_true", help="also a first play without a Step before it (each page's "
                    "first, on the fresh server: it includes JAX compiling the runs' loop)")
    ap.add_argument("--out", default=None, help="where to write the record (default: a dated file in results/)")
    args = ap.parse_args(argv)
    if layout.chromium_path() is None:
        print("Chromium is not installed (apt-get install chromium)")
        return 1
    started = datetime.now(timezone.utc)
    load0 = load_average()
    results = []
    with layout.streamlit_server() as base, layout.chromium() as browser:
        for name in args.pages:
            plays = ([False] if args.cold else []) + [True] * args.rounds
            for warm in plays:
                results.append(measure(browser, base, name, args.seconds, warm=warm))
                print(json.dumps(results[-1]), flush=True)
    out = {"benchmark": "bench_play", "date": started.isoformat(timespec="seconds"),
           "machine": {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
                       "system": platform.platform(), "chromium": layout.chromium_path(),
                       "note": "browser, Streamlit server and JAX share this machine, with whatever else runs"},
           "load_average": {"start": load0, "end": load_average()},
           "targets": {"first_move_s": TARGET_FIRST_S, "fps": TARGET_FPS},
           "settings": {"seconds": args.seconds, "viewport": VIEWPORT, "pages": {p: PAGES[p][0] for p in args.pages},
                        "sliders": {p: PAGES[p][2] for p in args.pages}},
           "results": results, "table": table(results)}
    dest = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"play-{started:%Y-%m-%d-%H%M}.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(out, indent=1) + "\n")
    print(out["table"])
    print(f"load average start {load0}, end {out['load_average']['end']}; written to {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
