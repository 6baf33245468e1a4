"""The server's work per frame of a Play (issue 37, item 2), without a browser: per page with Play, the CPU time
the server spends drawing one frame of a stretch (Live._extend: each frame's runs at its iteration and the traces
that changed, in the form the chart element is sent).

Each page's live view is opened with Streamlit's AppTest (as tests/app do), Play pressed and the chart element's
reports answered (tests/app/live_helpers.report) until ``--frames`` frames were drawn. The page is played twice
from iteration 0 and only the second play is measured: the runs computed ahead (JAX, in chunks) are then in the
shared store, so what is timed is the frames' drawing, the part the browser waits on at every frame.
``time.process_time`` (the whole process's CPU, every thread) and the wall clock are taken around each call of
Live._extend and divided by the frames it added. The load average before and after each page is recorded: the
machine is shared.

    python benchmarks/bench_play_frames.py [--pages Vector_fields Divergences] [--frames 300] [--out FILE]

Not a test: nothing here asserts a time.
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

# page -> (file, URL query of its live view, the Live's key, the live chart's key)
PAGES = {
    "Trajectories": ("20_Trajectories.py", {"view": "live", "m": ["srvn", "gd-mc"]}, "tr", "live"),
    "Vector_fields": ("10_Vector_fields.py", {"live": "1"}, "vf", "fields"),
    "Adam_vs_SNNGM": ("30_Adam_vs_SNNGM.py", {"view": "Step by step"}, "ls", "live2d"),
    "Divergences": ("40_Divergences.py", {"tab": "Batch step by step"}, "lb", "live_batch"),
}


def _load() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def _play(page: str, query: dict, key: str, chart: str, frames: int, timed: list | None) -> int:
    """Open the page, press Play and answer the element's reports until ``frames`` frames were sent."""
    from tests.app.live_helpers import app, frame_names, message, ok, report

    at = app(str(ROOT / "pages" / page), **query)
    ok(at)
    at.button(key=f"{key}_play").click().run()
    ok(at)
    sent, seen = message(at, chart), 0
    for _ in range(10 * frames):
        names = frame_names(sent)
        seen = max([seen] + names)
        if seen >= frames or not sent.get("play"):
            break
        report(at, chart, sent).run()
        ok(at)
        sent = message(at, chart)
    return seen


def measure(name: str, frames: int) -> dict:
    from vilab_ui import live

    page, query, key, chart = PAGES[name]
    calls: list = []
    inner = live.Live._extend

    def timed(self, pl, *a, **kw):
        n0 = len(pl["frames"])
        c0, w0 = time.process_time(), time.perf_counter()
        try:
            return inner(self, pl, *a, **kw)
        finally:
            calls.append((len(pl["frames"]) - n0, time.process_time() - c0, time.perf_counter() - w0))

    load0 = _load()
    _play(page, query, key, chart, frames, None)  # the runs computed ahead land in the shared store
    live.Live._extend = timed
    try:
        reached = _play(page, query, key, chart, frames, calls)
    finally:
        live.Live._extend = inner
    load1 = _load()
    done = [c for c in calls if c[0] > 0]
    n = sum(c[0] for c in done)
    per = [c[1] / c[0] for c in done]
    return {"page": name, "frames": n, "iteration_reached": reached, "messages": len(done),
            "cpu_ms_per_frame": round(1e3 * sum(c[1] for c in done) / max(n, 1), 3),
            "wall_ms_per_frame": round(1e3 * sum(c[2] for c in done) / max(n, 1), 3),
            "cpu_ms_per_frame_median_message": round(1e3 * statistics.median(per), 3) if per else None,
            "load_before": load0, "load_after": load1}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", nargs="*", default=list(PAGES), choices=list(PAGES))
    ap.add_argument("--frames", type=int, default=300, help="frames to draw per page (iterations reached)")
    ap.add_argument("--out", default=None, help="where to write the record (default: print only)")
    args = ap.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    started = datetime.now(timezone.utc)
    results = []
    for name in args.pages:
        results.append(measure(name, args.frames))
        print(json.dumps(results[-1]), flush=True)
    rec = {"started_utc": started.isoformat(timespec="seconds"), "machine": platform.node(),
           "cpus": os.cpu_count(), "results": results}
    if args.out:
        Path(args.out).write_text(json.dumps(rec, indent=1) + "\n")


if __name__ == "__main__":
    main()
