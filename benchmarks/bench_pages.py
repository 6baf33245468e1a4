"""Page responsiveness: first load and rerun after one widget change, measured with AppTest.

For every page in pages/: time the first run (JIT compilation included), then change one widget
(the first slider, else the first select slider / number input) back and forth and time each
rerun (median and p95: the page's own work with its caches warm, i.e. redrawing), then move it to
values the page has not seen yet (new-value median: cache misses, compiled code reused).
Pages whose target parameters are sliders get extra rows (``CASES``): the page is first switched
to that target, then the target's slider is moved (a new target each time, compiled loops reused).
Run: `python benchmarks/bench_pages.py [substring ...]`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
REPEATS = 12
FRESH = 6
# page stem -> [(widgets to set first: (key, value), ..., key of the widget to move)]
CASES = {
    "20_Trajectories": [((("tgt", "correlated Gaussian"),), "kappa"), ((("tgt", "Student-t"),), "trho"),
                        ((("tgt", "Student-t"),), "df")],
    "10_Vector_fields": [((("tgt", "Gaussian N(m, 1/a)"),), "a")],
}
KINDS = ("slider", "select_slider", "number_input")


def _widget_to_move(at, key=None):
    for kind in KINDS:
        ws = [w for w in getattr(at, kind) if w.key and (key is None or w.key == key)]
        if ws:
            return kind, ws[0]
    return None, None


def _set(at, key, value):
    """Set the widget with this key, whatever its kind, and rerun."""
    for kind in KINDS + ("selectbox", "radio", "toggle", "checkbox", "text_input"):
        ws = [w for w in getattr(at, kind) if w.key == key]
        if ws:
            return ws[0].set_value(value).run()
    raise KeyError(f"no widget with key {key!r}")


def _fresh_values(kind, w, n):
    """n distinct values of the widget next to its current one (each change misses the page's caches)."""
    if kind == "slider":
        lo, hi, v = w.min, w.max, w.value
        if isinstance(v, (tuple, list)):
            return None
        step = w.step or (hi - lo) / 100
        vals = [v + k * step for k in range(1, n + 1) if v + k * step <= hi]
        vals += [v - k * step for k in range(1, n + 1) if v - k * step >= lo]
        return vals[:n] if len(vals) >= n else None
    if kind == "select_slider":
        opts = list(w.options)
        i = opts.index(str(w.value)) if str(w.value) in opts else 0
        order = [j for k in range(1, len(opts)) for j in (i + k, i - k) if 0 <= j < len(opts)]
        conv = (lambda o: o) if isinstance(w.value, str) else w.value.__class__
        return [conv(opts[j]) for j in order[:n]] if len(order) >= n else None
    if kind == "number_input":
        v, step = w.value, w.step or 1
        vals = [v + k * step for k in range(1, n + 1) if w.max is None or v + k * step <= w.max]
        vals += [v - k * step for k in range(1, n + 1) if w.min is None or v - k * step >= w.min]
        return vals[:n] if len(vals) >= n else None
    return None


def _alternatives(kind, w):
    if kind == "slider":
        lo, hi, v = w.min, w.max, w.value
        if isinstance(v, (tuple, list)):
            return None
        step = w.step or (hi - lo) / 100
        other = v + step if v + step <= hi else v - step
        return [other, v]
    if kind == "select_slider":
        opts = list(w.options)
        i = opts.index(str(w.value)) if str(w.value) in opts else 0
        j = i + 1 if i + 1 < len(opts) else i - 1
        return [w.value.__class__(opts[j]) if not isinstance(w.value, str) else opts[j], w.value]
    if kind == "number_input":
        v = w.value
        step = w.step or 1
        return [v + step if (w.max is None or v + step <= w.max) else v - step, v]
    return None


def bench_page(path: Path, setup=(), move=None) -> dict:
    t0 = time.perf_counter()
    at = AppTest.from_file(str(path), default_timeout=600).run()
    for key, value in setup:
        at = _set(at, key, value)
    first = time.perf_counter() - t0
    if at.exception:
        return {"page": path.stem, "first_s": first, "error": at.exception[0].value}
    kind, w = _widget_to_move(at, move)
    if w is None:
        at.run()
        times = []
        for _ in range(REPEATS):
            t = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - t)
        return {"page": path.stem, "first_s": first, "widget": "(rerun)", "times": times}
    vals = _alternatives(kind, w)
    key = w.key
    fresh = _fresh_values(kind, w, FRESH)
    times = []
    # one warm-up change (compiles the jitted paths for the new shape/value), then timed changes
    for rep in range(REPEATS + 2):
        widget = getattr(at, kind)(key=key)
        t = time.perf_counter()
        widget.set_value(vals[rep % 2]).run()
        dt = time.perf_counter() - t
        if rep >= 2:
            times.append(dt)
    fresh_times = []
    for v in fresh or []:  # every value new to the page: its st.cache_data entries miss, compiled code is reused
        widget = getattr(at, kind)(key=key)
        t = time.perf_counter()
        widget.set_value(v).run()
        fresh_times.append(time.perf_counter() - t)
    return {"page": path.stem, "first_s": first, "widget": f"{kind}:{key}", "times": times, "fresh": fresh_times}


def main(argv: list[str]) -> None:
    pages = sorted(p for p in (ROOT / "pages").glob("*.py") if not p.name.startswith("_"))
    if argv:
        pages = [p for p in pages if any(a in p.stem for a in argv)]
    print(f"{'page':28s} {'widget':26s} {'first load s':>12s} {'median s':>9s} {'p95 s':>7s} {'new-value median s':>19s}")
    for p in pages:
        for setup, move in [((), None)] + list(CASES.get(p.stem, [])):
            r = bench_page(p, setup, move)
            if "error" in r:
                print(f"{r['page']:28s} ERROR: {r['error']}")
                continue
            t = np.array(r["times"])
            f = f"{np.median(r['fresh']):19.3f}" if r.get("fresh") else f"{'-':>19s}"
            print(f"{r['page']:28s} {r['widget']:26s} {r['first_s']:12.2f} {np.median(t):9.3f} "
                  f"{np.percentile(t, 95):7.3f} {f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
