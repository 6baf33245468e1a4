"""Page responsiveness: first load and rerun after one widget change, measured with AppTest.

For every page in pages/: time the first run (JIT compilation included), then change one widget
(the first slider, else the first select slider / number input) back and forth and time each
rerun. Prints median and p95 per page. Run: `python benchmarks/bench_pages.py [substring ...]`.
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


def _widget_to_move(at):
    for kind in ("slider", "select_slider", "number_input"):
        ws = [w for w in getattr(at, kind) if w.key]
        if ws:
            return kind, ws[0]
    return None, None


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


def bench_page(path: Path) -> dict:
    t0 = time.perf_counter()
    at = AppTest.from_file(str(path), default_timeout=600).run()
    first = time.perf_counter() - t0
    if at.exception:
        return {"page": path.stem, "first_s": first, "error": at.exception[0].value}
    kind, w = _widget_to_move(at)
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
    times = []
    # one warm-up change (compiles the jitted paths for the new shape/value), then timed changes
    for rep in range(REPEATS + 2):
        widget = getattr(at, kind)(key=key)
        t = time.perf_counter()
        widget.set_value(vals[rep % 2]).run()
        dt = time.perf_counter() - t
        if rep >= 2:
            times.append(dt)
    return {"page": path.stem, "first_s": first, "widget": f"{kind}:{key}", "times": times}


def main(argv: list[str]) -> None:
    pages = sorted(p for p in (ROOT / "pages").glob("*.py") if not p.name.startswith("_"))
    if argv:
        pages = [p for p in pages if any(a in p.stem for a in argv)]
    print(f"{'page':28s} {'widget':26s} {'first load s':>12s} {'median s':>9s} {'p95 s':>7s}")
    for p in pages:
        r = bench_page(p)
        if "error" in r:
            print(f"{r['page']:28s} ERROR: {r['error']}")
            continue
        t = np.array(r["times"])
        print(f"{r['page']:28s} {r['widget']:26s} {r['first_s']:12.2f} {np.median(t):9.3f} {np.percentile(t, 95):7.3f}",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
