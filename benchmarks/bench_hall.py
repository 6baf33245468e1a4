"""A lecture hall at once: N students open the app together through `vilab hall` (replicas + nginx).

Starts the hall (deploy/hall.py: ``--replicas`` Streamlit processes behind nginx with sticky sessions
and the shared JAX cache), warms it up (every page once per replica, as ``vilab hall`` does), then
measures new sessions, each a browser context of one headless Chromium (its own cookies, so its own sticky
replica). A session counts as rendered when its page's script run has finished and its main figure (the
container ``main_figure``) is drawn: the time to the main figure, from the moment the session asks for the page.

Where a new session's time goes, per session, from Linux /proc (CPU seconds: robust to the load others put
on the machine, which wall times are not):

* **server CPU**: user + system time of the replica processes and their children (``utime + stime``, plus
  ``cutime + cstime`` of the children they waited for), read before the sessions open and once the replicas
  are idle again after every session rendered (what a page computes behind a load, the width reports' short
  runs and prefetches included), divided by the sessions;
* **browser CPU**: the same for Chromium's processes (and Playwright's driver, apart), which share the cores;
* nginx's CPU, the whole machine's busy CPU over the same time (``/proc/stat``: what other programs used
  shows as the rest) and the load average.

Three modes:

* ``burst`` (default): ``--sessions`` sessions opened at the same moment, round robin over ``--pages``
  (default every page): the time to the main figure (median, p90, max), per-session server and browser CPU,
  sessions per replica (nginx's access log), each replica's RSS and memory mappings. Beside it, the earlier
  runs: the issue's probe (median 114 s, max 116 s) and the previous result file's;
* ``per-page``: for one page at a time, ``--per-page-sessions`` sessions of that page opened together,
  the replicas idle before each page: server CPU per session of each page under a small crowd;
* ``idle``: one new session at a time, per page (``--repeat`` times), on the warm hall, idle before each:
  the server CPU of that session's first load, which says what each page costs.

Writes benchmarks/results/hall.json (burst), hall-per-page.json, hall-idle.json (``--out`` to change).
The browser runs on the same machine as the hall: on a small machine it takes a large share of the CPU, so
the times are an upper bound of what the students' own browsers would see.

    python benchmarks/bench_hall.py [--replicas 2] [--sessions 30] [--pages Vector_fields]
    python benchmarks/bench_hall.py --mode idle [--repeat 2]
    python benchmarks/bench_hall.py --mode per-page [--per-page-sessions 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import statistics
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

RESULTS = ROOT / "benchmarks" / "results"
OUT = {"burst": RESULTS / "hall.json", "per-page": RESULTS / "hall-per-page.json", "idle": RESULTS / "hall-idle.json"}
# the earlier burst measurements this one is compared with (30 sessions, 2 replicas, every page)
ISSUE_41_PROBE = {"median_s": 114.0, "max_s": 116.0, "load_average": "13-15",
                  "source": "issue 41's probe (30 sessions on the warmed 2-replica hall)"}
PREVIOUS = RESULTS / "hall-2026-11-24.json"
VIEWPORT = {"width": 1280, "height": 800}
CLK = os.sysconf("SC_CLK_TCK")

# the page's script run has finished and its main figure is drawn (a chart, an image or a table)
DRAWN_JS = """() => {
    if (document.querySelector('[data-testid="stStatusWidget"]')) return false;
    const c = document.querySelector('.st-key-main_figure');
    if (!c) return false;
    return c.querySelector('.js-plotly-plot .main-svg') !== null || c.querySelector('img') !== null
        || c.querySelector('[data-testid="stDataFrame"], [data-testid="stTable"]') !== null;
}"""


# what a session that did not render shows (for the report of a failure)
STATE_JS = """() => ({running: !!document.querySelector('[data-testid="stStatusWidget"]'),
    main_figure: !!document.querySelector('.st-key-main_figure'),
    chart: !!document.querySelector('.st-key-main_figure .js-plotly-plot'),
    title: (document.querySelector('h1') || {}).innerText || null,
    alerts: Array.from(document.querySelectorAll('[data-testid="stException"], [data-testid="stAlert"]'))
        .map(e => e.innerText.slice(0, 160))})"""


# ------------------------------------------------------------------------------------------ /proc
def _procs() -> dict[int, tuple[str, int, float]]:
    """pid -> (command name, parent pid, CPU seconds of it and of the children it waited for)."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")]
        f = s[s.rindex(")") + 2:].split()
        out[int(d)] = (comm, int(f[1]), sum(int(x) for x in f[11:15]) / CLK)  # utime stime cutime cstime
    return out


def tree_cpu(roots, procs=None, leave_out=()) -> dict[str, float]:
    """CPU seconds so far of the processes ``roots`` and their live descendants (children that exited count
    in the parent that waited for them), summed by command name; the processes ``leave_out`` and their
    descendants are not counted."""
    procs = _procs() if procs is None else procs
    children: dict[int, list[int]] = {}
    for pid, (_, ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    out: dict[str, float] = {}
    stack, seen = [p for p in roots if p in procs], set(leave_out)
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        comm, _, cpu = procs[pid]
        out[comm] = out.get(comm, 0.0) + cpu
        stack.extend(children.get(pid, ()))
    return out


def machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy (every core; /proc/stat, not idle or waiting for I/O)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:8]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


class Meter:
    """CPU seconds of the hall's replicas, its nginx, this benchmark's browser (Chromium, Playwright's driver) and
    the whole machine, as a snapshot; ``b - a``: what each used in between."""

    def __init__(self, h):
        procs = _procs()
        self.t = time.perf_counter()
        self.replicas = [sum(tree_cpu([p.pid], procs).values()) for p in h.replicas]
        self.nginx = sum(tree_cpu([h.proxy.pid], procs).values()) if h.proxy is not None else 0.0
        hall_pids = [p.pid for p in h.replicas] + ([h.proxy.pid] if h.proxy is not None else [])
        mine = tree_cpu([os.getpid()], procs, leave_out=hall_pids)  # the browser (the hall is a child too)
        self.chromium = sum(v for k, v in mine.items() if "chrom" in k.lower())
        self.driver = sum(v for k, v in mine.items() if "chrom" not in k.lower()) - procs[os.getpid()][2]
        self.machine = machine_busy_s()
        self.load = os.getloadavg()

    def __sub__(self, a: "Meter") -> dict:
        server = sum(self.replicas) - sum(a.replicas)
        used = {"wall_s": self.t - a.t, "server_s": server,
                "server_by_replica_s": [b - x for b, x in zip(self.replicas, a.replicas)],
                "nginx_s": self.nginx - a.nginx, "chromium_s": self.chromium - a.chromium,
                "playwright_driver_s": self.driver - a.driver, "machine_busy_s": self.machine - a.machine}
        used["other_programs_s"] = used["machine_busy_s"] - server - used["nginx_s"] - used["chromium_s"] \
            - used["playwright_driver_s"]
        return {k: ([round(x, 2) for x in v] if isinstance(v, list) else round(float(v), 2)) for k, v in used.items()}


def replicas_idle(h, quiet_s: float = 5.0, rate: float = 0.05, timeout_s: float = 180.0) -> bool:
    """Wait until every replica has used less than ``rate`` of a core for ``quiet_s`` seconds on end (it has
    finished what a page's run left to do), at most
    ``timeout_s``; False if it never was."""
    step = 0.5
    deadline = time.perf_counter() + timeout_s
    last = [sum(tree_cpu([p.pid]).values()) for p in h.replicas]
    quiet_since = time.perf_counter()
    while time.perf_counter() < deadline:
        time.sleep(step)
        now = [sum(tree_cpu([p.pid]).values()) for p in h.replicas]
        if any(b - a > rate * step for a, b in zip(last, now)):
            quiet_since = time.perf_counter()
        elif time.perf_counter() - quiet_since >= quiet_s:
            return True
        last = now
    return False


# ------------------------------------------------------------------------------------------ sessions
async def one_session(browser, url: str, ready: asyncio.Event, start: asyncio.Event, timeout_s: float) -> dict:
    try:
        ctx = await browser.new_context(viewport=VIEWPORT)
        page = await ctx.new_page()
    finally:
        ready.set()  # (a browser that cannot open a tab fails the benchmark, it does not hang it)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)[:200]))
    await start.wait()
    t0 = time.perf_counter()
    res = {"url": url}
    try:
        await page.goto(url, wait_until="commit", timeout=timeout_s * 1000)
        left = timeout_s - (time.perf_counter() - t0)
        await page.wait_for_function(DRAWN_JS, polling=100, timeout=max(left, 1.0) * 1000)
        res.update(ok=True, seconds=round(time.perf_counter() - t0, 2))
    except Exception as exc:
        res.update(ok=False, seconds=round(time.perf_counter() - t0, 2), error=f"{type(exc).__name__}: {exc}"[:200])
        try:
            res["page_state"] = await page.evaluate(STATE_JS)
        except Exception:  # noqa: BLE001 - a page that is gone
            pass
    res["_ctx"] = ctx
    res["_errors"] = errors
    return res


async def crowd(browser, h, urls: list[str], timeout_s: float) -> tuple[list[dict], dict]:
    """Open ``urls`` at the same moment, each in a new browser context; (each session's result, the CPU used
    from the moment they open until the replicas are idle again after the last one rendered). The replicas are
    idle before they open (what the warm-up or an earlier crowd left to compute is not counted)."""
    idle_before = await asyncio.to_thread(replicas_idle, h)
    start, ready = asyncio.Event(), [asyncio.Event() for _ in urls]
    tasks = [asyncio.create_task(one_session(browser, u, r, start, timeout_s)) for u, r in zip(urls, ready)]
    await asyncio.gather(*(r.wait() for r in ready))  # every context and tab exists before the bell rings
    await asyncio.sleep(1.0)
    before = Meter(h)
    start.set()
    results = await asyncio.gather(*tasks)
    rendered = Meter(h)
    idle_after = await asyncio.to_thread(replicas_idle, h)
    after = Meter(h)
    for r in results:  # the sessions stay open until the server is idle: a student does not leave at once
        ctx, errors = r.pop("_ctx"), r.pop("_errors")
        r["sticky"] = next((c["value"] for c in await ctx.cookies() if c["name"] == hall.COOKIE), None)
        if errors:
            r["js_errors"] = errors[:3]
        await ctx.close()
    return results, {"until_rendered": rendered - before, "until_idle": after - before,
                     "replicas_idle_before": idle_before, "replicas_idle_after": idle_after,
                     "load_average": {"sessions_open": before.load, "all_rendered": rendered.load, "idle": after.load}}


def distribution(xs: list[float]) -> dict:
    if not xs:
        return {}
    return {"n": len(xs), "min": round(min(xs), 2), "median": round(float(np.median(xs)), 2),
            "p90": round(float(np.percentile(xs, 90)), 2), "max": round(max(xs), 2)}


def per_session(cpu: dict, n: int) -> dict:
    return {k: round(cpu[k] / n, 3) for k in ("server_s", "chromium_s", "nginx_s", "playwright_driver_s")}


def page_name(url: str) -> str:
    return url.split("/", 3)[-1].split("?")[0] or "Home"


# ------------------------------------------------------------------------------------------ replicas
def memory(h) -> list[dict]:
    out = []
    for i, (p, url) in enumerate(zip(h.replicas, h.replica_urls)):
        m = hall.proc_memory(p.pid)
        out.append({"replica": i, "url": url, "rss_mb": round(m["rss_bytes"] / 2**20, 1), "maps": m["maps"]})
    return out


def sessions_per_replica(h) -> dict:
    """Websocket sessions (/_stcore/stream) per replica, from nginx's access log (a websocket's line is written when
    it closes; ``$upstream_addr`` lists every replica nginx tried, the last one served)."""
    log = h.prefix / "access.log"
    counts: dict[str, int] = {}
    if log.exists():
        for line in log.read_text(errors="replace").splitlines():
            m = re.search(r'"GET /_stcore/stream[^"]*" \d+ upstream=(.+?) sticky=', line)
            if m:
                addr = m.group(1).split(", ")[-1]
                counts[addr] = counts.get(addr, 0) + 1
    return counts


# ------------------------------------------------------------------------------------------ modes
async def burst(browser, h, paths, args) -> dict:
    urls = [f"{h.url}/{paths[i % len(paths)]}" for i in range(args.sessions)]
    await asyncio.to_thread(replicas_idle, h)  # what the warm-up left to compute is done (crowd waits too)
    before = memory(h)
    peak: dict[int, dict] = {}
    stop = threading.Event()

    def watch():
        while not stop.wait(1.0):
            for m in memory(h):
                p = peak.setdefault(m["replica"], {"rss_mb": 0.0, "maps": 0})
                p["rss_mb"], p["maps"] = max(p["rss_mb"], m["rss_mb"]), max(p["maps"], m["maps"])

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    print(f"{args.sessions} sessions open at once ...", flush=True)
    results, cpu = await crowd(browser, h, urls, args.timeout_s)
    stop.set()
    watcher.join(5)
    ok = [r["seconds"] for r in results if r["ok"]]
    failed = [r for r in results if not r["ok"]]
    by_page: dict[str, list[float]] = {}
    for r in results:
        if r["ok"]:
            by_page.setdefault(page_name(r["url"]), []).append(r["seconds"])
    await asyncio.sleep(2.0)  # nginx writes a websocket's line once it has closed
    per_replica = sessions_per_replica(h)
    previous = None
    if PREVIOUS.exists():
        p = json.loads(PREVIOUS.read_text())
        previous = {"date": p.get("date"), "file": str(PREVIOUS.relative_to(ROOT)),
                    "median_s": (p.get("session_seconds") or {}).get("median"),
                    "max_s": (p.get("session_seconds") or {}).get("max"),
                    "note": "counted as rendered at the title (no main figure seen), not at the main figure"}
    return {
        "load_average_burst": cpu["load_average"],
        "time_to_main_figure_s": distribution(ok), "all_rendered_s": max(ok) if ok and not failed else None,
        "rendered": len(ok), "failed": len(failed),
        "per_session_cpu_s": per_session(cpu["until_idle"], len(urls)),
        "per_session_cpu_until_rendered_s": per_session(cpu["until_rendered"], len(urls)),
        "cpu_s": cpu, "compared_with": {"issue_41_probe": ISSUE_41_PROBE, "previous_file": previous},
        "median_s_by_page": {k: float(np.median(v)) for k, v in by_page.items()},
        "websocket_sessions_per_replica": per_replica,
        "memory_before": before, "memory_after": memory(h),
        "memory_peak": [{"replica": k, **v} for k, v in sorted(peak.items())],
        "failures": failed[:10], "sessions": results,
    }


async def by_page(browser, h, paths, args, n: int, repeat: int) -> dict:
    """For each page, ``repeat`` times: ``n`` new sessions of it together, on replicas idle before."""
    pages = {}
    for path in paths:
        name = path or "Home"
        rows = []
        for _ in range(repeat):
            results, cpu = await crowd(browser, h, [f"{h.url}/{path}"] * n, args.timeout_s)
            rows.append({"seconds": [r["seconds"] for r in results], "ok": all(r["ok"] for r in results),
                         "per_session_cpu_s": per_session(cpu["until_idle"], n), "cpu_s": cpu})
        server = [r["per_session_cpu_s"]["server_s"] for r in rows]
        chromium = [r["per_session_cpu_s"]["chromium_s"] for r in rows]
        seconds = [s for r in rows for s in r["seconds"]]
        pages[name] = {"server_cpu_per_session_s": round(statistics.median(server), 3),
                       "chromium_cpu_per_session_s": round(statistics.median(chromium), 3),
                       "time_to_main_figure_s": distribution(seconds), "all_ok": all(r["ok"] for r in rows),
                       "runs": rows}
        print(f"  {name}: server CPU {pages[name]['server_cpu_per_session_s']:.2f} s per session, Chromium "
              f"{pages[name]['chromium_cpu_per_session_s']:.2f} s, main figure after "
              f"{pages[name]['time_to_main_figure_s'].get('median', float('nan')):.1f} s (median)", flush=True)
    server = [p["server_cpu_per_session_s"] for p in pages.values()]
    return {"sessions_per_page": n, "repeat": repeat, "pages": pages,
            "server_cpu_per_session_s": {"mean_over_pages": round(float(np.mean(server)), 3),
                                         "max": round(max(server), 3)}}


def table(pages: dict) -> str:
    lines = ["| Page | server CPU per new session (s) | Chromium CPU per session (s) | time to main figure, median (s) |",
             "|---|---:|---:|---:|"]
    for name, p in pages.items():
        lines.append(f"| {name} | {p['server_cpu_per_session_s']:.2f} | {p['chromium_cpu_per_session_s']:.2f} | "
                     f"{p['time_to_main_figure_s'].get('median', float('nan')):.2f} |")
    return "\n".join(lines)


async def run(h, paths, args) -> dict:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=hall.chromium_path(), headless=True,
                                           args=hall.CHROMIUM_FLAGS[1:])
        try:
            if args.mode == "burst":
                return await burst(browser, h, paths, args)
            if args.mode == "per-page":
                return await by_page(browser, h, paths, args, args.per_page_sessions, args.repeat)
            return await by_page(browser, h, paths, args, 1, args.repeat)
        finally:
            await browser.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=("burst", "per-page", "idle"), default="burst")
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--sessions", type=int, default=30, help="burst: sessions opened at once")
    ap.add_argument("--per-page-sessions", type=int, default=3, help="per-page: sessions of one page at once")
    ap.add_argument("--repeat", type=int, default=1, help="per-page and idle: rounds per page (median taken)")
    ap.add_argument("--pages", nargs="*", default=None,
                    help="url paths the sessions open, round robin (default: every page; '' is Home)")
    ap.add_argument("--no-warmup", action="store_true", help="measure a cold hall (compilation included)")
    ap.add_argument("--timeout-s", type=float, default=600.0, help="per session")
    ap.add_argument("--out", default=None, help="result file (default: benchmarks/results/hall[-MODE].json)")
    args = ap.parse_args(argv)
    if hall.chromium_path() is None or hall.find_nginx() is None:
        print("bench_hall needs nginx and Chromium (apt-get install nginx chromium) and Playwright.", file=sys.stderr)
        return 2
    if args.sessions < 1 or args.per_page_sessions < 1 or args.repeat < 1:
        print("--sessions, --per-page-sessions and --repeat must be at least 1.", file=sys.stderr)
        return 2
    paths = hall.page_paths() if args.pages is None else args.pages
    load_start = os.getloadavg()
    with hall.Hall(replicas=args.replicas, port=hall.free_port(), listen="127.0.0.1") as h:
        print(f"hall at {h.url}: {args.replicas} replicas; JAX cache {h.cache_dir}", flush=True)
        warm = {} if args.no_warmup else hall.warm_up(h.replica_urls, verbose=False)
        measured = asyncio.run(run(h, paths, args))
    load_end = os.getloadavg()
    result = {
        "benchmark": "bench_hall", "mode": args.mode, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
                   "note": "browser, nginx and replicas share this machine"},
        "settings": {"replicas": args.replicas, "sessions": args.sessions, "per_page_sessions": args.per_page_sessions,
                     "repeat": args.repeat, "pages": paths, "warmup": not args.no_warmup, "timeout_s": args.timeout_s},
        "load_average": {"start": load_start, "end": load_end},
        "warmup_s": {u: round(s, 1) for u, s in warm.items()},
        **measured,
    }
    out = Path(args.out) if args.out else OUT[args.mode]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    if args.mode == "burst":
        d, c = result["time_to_main_figure_s"], result["per_session_cpu_s"]
        print(f"\n{result['rendered']}/{args.sessions} sessions rendered; main figure after median "
              f"{d.get('median', float('nan')):.1f} s, max {d.get('max', float('nan')):.1f} s (issue 41's probe: "
              f"median {ISSUE_41_PROBE['median_s']:.0f} s, max {ISSUE_41_PROBE['max_s']:.0f} s); {result['failed']} failed")
        print(f"per session: server CPU {c['server_s']:.2f} s, Chromium {c['chromium_s']:.2f} s, nginx "
              f"{c['nginx_s']:.3f} s; other programs {result['cpu_s']['until_idle']['other_programs_s']:.1f} s "
              f"in all; sessions per replica: {result['websocket_sessions_per_replica']}")
        for b, a, p in zip(result["memory_before"], result["memory_after"], result["memory_peak"] or [{}] * args.replicas):
            print(f"replica {b['replica']}: RSS {b['rss_mb']} -> {a['rss_mb']} MB (peak {p.get('rss_mb')}), "
                  f"maps {b['maps']} -> {a['maps']}")
    else:
        print("\n" + table(result["pages"]))
        s = result["server_cpu_per_session_s"]
        print(f"server CPU per new session: mean over pages {s['mean_over_pages']:.2f} s, max {s['max']:.2f} s")
    print(f"load average {load_start[0]:.1f} -> {load_end[0]:.1f}; wrote {out}")
    return 0 if result.get("failed", 0) == 0 and all(p.get("all_ok", True) for p in result.get("pages", {}).values()) \
        else 1


if __name__ == "__main__":
    raise SystemExit(main())
