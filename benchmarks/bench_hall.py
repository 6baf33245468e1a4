"""A lecture hall at once: N students open the app together through `vilab hall` (replicas + nginx).

Starts the hall (deploy/hall.py: ``--replicas`` Streamlit processes behind nginx with sticky sessions
and the shared JAX cache), warms it up (every page once per replica, as ``vilab hall`` does), then
opens ``--sessions`` browser sessions at the same moment: one headless Chromium, one browser context
(its own cookies, so its own sticky replica) per student, each at a page (``--pages``: round robin
over the pages, default every page). A session counts as rendered when its page shows a drawn Plotly
chart (a ``.js-plotly-plot`` with its SVG), or, on a page without charts, its title with the script
finished. Reports the time until every session rendered, the distribution over sessions, failures,
the sessions per replica (from nginx's access log) and each replica's RSS and memory mappings before
and after. Writes benchmarks/results/hall.json.

The browser runs on the same machine as the hall: on a small machine it takes a large share of the
CPU, so the times are an upper bound of what the students' own browsers would see.

    python benchmarks/bench_hall.py [--replicas 2] [--sessions 30] [--pages Vector_fields]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from vilab.cli import load_hall  # noqa: E402

hall = load_hall()

OUT = ROOT / "benchmarks" / "results" / "hall.json"

DONE_JS = """() => {
    if (document.querySelector('.js-plotly-plot .main-svg')) return 'figure';
    if (document.querySelector('h1') && !document.querySelector('[data-testid="stStatusWidget"]')) return 'title';
    return '';
}"""


async def one_session(browser, url: str, start: asyncio.Event, timeout_s: float) -> dict:
    ctx = await browser.new_context(viewport={"width": 1280, "height": 800})
    page = await ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)[:200]))
    await start.wait()
    t0 = time.perf_counter()
    res = {"url": url}
    try:
        await page.goto(url, wait_until="domcontentloaded", timeout=timeout_s * 1000)
        title_since = None
        while True:
            if time.perf_counter() - t0 > timeout_s:
                raise TimeoutError(f"not rendered within {timeout_s:.0f} s")
            state = await page.evaluate(DONE_JS)
            if state == "figure":
                break
            if state == "title":  # a page without charts: finished when the script stays finished for 2 s
                title_since = title_since or time.perf_counter()
                if time.perf_counter() - title_since > 2.0:
                    break
            else:
                title_since = None
            await asyncio.sleep(0.1)
        res.update(ok=True, seconds=round(time.perf_counter() - t0 - (2.0 if state == "title" else 0.0), 2),
                   rendered=state)
    except Exception as exc:
        res.update(ok=False, seconds=round(time.perf_counter() - t0, 2), error=f"{type(exc).__name__}: {exc}"[:200])
    cookies = await ctx.cookies()
    res["sticky"] = next((c["value"] for c in cookies if c["name"] == hall.COOKIE), None)
    if errors:
        res["js_errors"] = errors[:3]
    await ctx.close()
    return res


async def crowd(urls: list[str], timeout_s: float) -> tuple[list[dict], float]:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=hall.chromium_path(), headless=True,
                                           args=hall.CHROMIUM_FLAGS[1:])
        start = asyncio.Event()
        tasks = [asyncio.create_task(one_session(browser, u, start, timeout_s)) for u in urls]
        await asyncio.sleep(2.0)  # every context and tab exists before the bell rings
        t0 = time.perf_counter()
        start.set()
        results = await asyncio.gather(*tasks)
        wall = time.perf_counter() - t0
        await browser.close()
    return results, wall


def memory(h) -> list[dict]:
    out = []
    for i, (p, url) in enumerate(zip(h.replicas, h.replica_urls)):
        m = hall.proc_memory(p.pid)
        out.append({"replica": i, "url": url, "rss_mb": round(m["rss_bytes"] / 2**20, 1), "maps": m["maps"]})
    return out


def sessions_per_replica(h) -> dict:
    """Websocket sessions (/_stcore/stream) per replica, from nginx's access log."""
    log = h.prefix / "access.log"
    counts: dict[str, int] = {}
    if log.exists():
        for line in log.read_text(errors="replace").splitlines():
            m = re.search(r'"GET /_stcore/stream[^"]*" \d+ upstream=(\S+)', line)
            if m:
                counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--sessions", type=int, default=30)
    ap.add_argument("--pages", nargs="*", default=None,
                    help="url paths the sessions open, round robin (default: every page; '' is Home)")
    ap.add_argument("--no-warmup", action="store_true", help="measure a cold hall (compilation included)")
    ap.add_argument("--timeout-s", type=float, default=600.0, help="per session")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    if hall.chromium_path() is None or hall.find_nginx() is None:
        print("bench_hall needs nginx and Chromium (apt-get install nginx chromium) and Playwright.", file=sys.stderr)
        return 2
    paths = hall.page_paths() if args.pages is None else args.pages
    load_start = os.getloadavg()
    peak: dict[int, dict] = {}
    with hall.Hall(replicas=args.replicas, port=hall.free_port(), listen="127.0.0.1") as h:
        print(f"hall at {h.url}: {args.replicas} replicas; JAX cache {h.cache_dir}", flush=True)
        warm = {}
        if not args.no_warmup:
            warm = hall.warm_up(h.replica_urls)
        before = memory(h)
        urls = [f"{h.url}/{paths[i % len(paths)]}" for i in range(args.sessions)]
        stop = threading.Event()

        def watch():
            while not stop.wait(1.0):
                for m in memory(h):
                    p = peak.setdefault(m["replica"], {"rss_mb": 0.0, "maps": 0})
                    p["rss_mb"], p["maps"] = max(p["rss_mb"], m["rss_mb"]), max(p["maps"], m["maps"])

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        print(f"{args.sessions} sessions open at once ...", flush=True)
        results, wall = asyncio.run(crowd(urls, args.timeout_s))
        stop.set()
        watcher.join(5)
        after = memory(h)
        per_replica = sessions_per_replica(h)
    load_end = os.getloadavg()

    ok = [r["seconds"] for r in results if r["ok"]]
    failed = [r for r in results if not r["ok"]]
    dist = ({"min": min(ok), "median": float(np.median(ok)), "p90": float(np.percentile(ok, 90)), "max": max(ok)}
            if ok else {})
    by_page: dict[str, list[float]] = {}
    for r in results:
        if r["ok"]:
            by_page.setdefault(r["url"].split("/", 3)[-1] or "Home", []).append(r["seconds"])
    result = {
        "benchmark": "bench_hall", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
                   "note": "browser, nginx and replicas share this machine"},
        "settings": {"replicas": args.replicas, "sessions": args.sessions, "pages": paths,
                     "warmup": not args.no_warmup, "timeout_s": args.timeout_s},
        "load_average": {"start": load_start, "end": load_end},
        "warmup_s": {u: round(s, 1) for u, s in warm.items()},
        "all_rendered_s": round(max(ok), 2) if ok and not failed else None,
        "wall_s": round(wall, 2), "rendered": len(ok), "failed": len(failed),
        "session_seconds": dist, "median_s_by_page": {k: float(np.median(v)) for k, v in by_page.items()},
        "websocket_sessions_per_replica": per_replica,
        "memory_before": before, "memory_after": after,
        "memory_peak": [{"replica": k, **v} for k, v in sorted(peak.items())],
        "failures": failed[:10], "sessions": results,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"\n{len(ok)}/{args.sessions} sessions rendered; all within {result['all_rendered_s']} s "
          f"(median {dist.get('median', float('nan')):.1f} s, p90 {dist.get('p90', float('nan')):.1f} s); "
          f"{len(failed)} failed")
    print(f"sessions per replica: {per_replica}")
    for b, a, p in zip(before, after, result["memory_peak"] or [{}] * len(before)):
        print(f"replica {b['replica']}: RSS {b['rss_mb']} -> {a['rss_mb']} MB (peak {p.get('rss_mb')}), "
              f"maps {b['maps']} -> {a['maps']}")
    print(f"load average {load_start[0]:.1f} -> {load_end[0]:.1f}; wrote {out}")
    return 0 if not failed else 1


if __name__ == "__main__":
    raise SystemExit(main())
