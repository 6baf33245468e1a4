"""Soak: does a long-lived server's memory level off? One `streamlit run app.py`, driven for a bounded time.

A headless Chromium opens page after page of one server, each with random values of some of its
widgets in the URL (``?key=value``: every vilab widget reads its start value from the URL), and
waits until the page has rendered. Every ``--sample-s`` seconds the server's resident memory (RSS)
and its number of memory mappings (lines of /proc/PID/maps; the kernel stops a process at
vm.max_map_count, 65,530 by default, and each compiled XLA program holds some) are sampled.

Levelling off: the growth rate (least-squares slope, per minute) over the second half of the samples
against the first half. Memory "levels off" when the second-half slope is at most a quarter of the
first-half slope, or small in absolute terms (20 mappings / 5 MB per minute). The server's valve
(``vilab.clear_caches_if_crowded`` in app.py: every compiled program is dropped once the mappings pass
a quarter of vm.max_map_count) shows as a sudden drop; when it fired, the report also says whether the
mappings stayed bounded afterwards (never more than 10 % above the level at which it first fired).

The widgets of each page (keys, ranges, options) are found first with Streamlit's AppTest (default
view of each page, in this process; cached in --widgets). Writes benchmarks/results/soak.json.

    python benchmarks/bench_soak.py [--minutes 10] [--sample-s 15] [--pages Vector Trajectories]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
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

OUT = ROOT / "benchmarks" / "results" / "soak.json"
CHOICE_KINDS = ("selectbox", "radio", "select_slider")


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, float):
        return f"{v:.12g}"
    return str(v)


def discover_widgets(pages: list[Path]) -> dict:
    """page stem -> [widget spec] from each page's default view (AppTest, in this process)."""
    from streamlit.testing.v1 import AppTest

    out = {}
    for p in pages:
        t = time.time()
        try:
            at = AppTest.from_file(str(p), default_timeout=600).run()
        except Exception as exc:  # a page that cannot run in AppTest is driven with its defaults only
            print(f"  {p.stem}: AppTest failed ({type(exc).__name__}); default view only", flush=True)
            out[p.stem] = []
            continue
        specs = []
        for w in at.slider:
            if w.key and not isinstance(w.value, (tuple, list)):
                is_int = all(isinstance(x, int) for x in (w.min, w.max, w.value))
                specs.append({"key": w.key, "kind": "int" if is_int else "float", "lo": w.min, "hi": w.max,
                              "step": w.step})
        for w in at.number_input:
            if w.key and w.key != "seed" and w.min is not None and w.max is not None:
                is_int = all(isinstance(x, int) for x in (w.min, w.max, w.value))
                # number inputs may span decades (iterations, sample sizes): stay near the default
                hi = min(w.max, max(w.value * 4, w.min + 10 * (w.step or 1)))
                specs.append({"key": w.key, "kind": "int" if is_int else "float", "lo": w.min, "hi": hi,
                              "step": w.step})
        for kind in CHOICE_KINDS:
            for w in getattr(at, kind):
                if w.key and list(w.options):
                    specs.append({"key": w.key, "kind": "choice", "options": [str(o) for o in w.options]})
        for kind in ("toggle", "checkbox"):
            for w in getattr(at, kind):
                if w.key and w.key != "lecture":
                    specs.append({"key": w.key, "kind": "bool"})
        out[p.stem] = specs
        print(f"  {p.stem}: {len(specs)} widgets ({time.time() - t:.0f} s)", flush=True)
    return out


def random_value(spec: dict, rng: random.Random):
    if spec["kind"] == "choice":
        return rng.choice(spec["options"])
    if spec["kind"] == "bool":
        return rng.random() < 0.5
    lo, hi, step = spec["lo"], spec["hi"], spec.get("step")
    if spec["kind"] == "int":
        return rng.randint(int(lo), int(hi))
    if step:
        n = int(round((hi - lo) / step))
        return lo + step * rng.randint(0, max(n, 0))
    return rng.uniform(lo, hi)


def page_path(stem: str, first: str) -> str:
    if stem == first:
        return ""
    head, _, rest = stem.partition("_")
    return rest if head.isdigit() and rest else stem


def slope_per_min(t: list[float], y: list[float]) -> float | None:
    if len(t) < 3:
        return None
    return float(np.polyfit(np.asarray(t) / 60.0, np.asarray(y, float), 1)[0])


def levelling(samples: list[dict], field: str, small: float) -> dict:
    """Growth per minute of ``field`` over the first and second half of the samples."""
    t = [s["t_s"] for s in samples]
    y = [s[field] for s in samples]
    h = len(samples) // 2
    first, second = slope_per_min(t[: h + 1], y[: h + 1]), slope_per_min(t[h:], y[h:])
    ok = None if first is None or second is None else bool(second <= max(0.25 * first, small))
    return {"slope_first_half_per_min": first, "slope_second_half_per_min": second, "levels_off": ok,
            "start": y[0] if y else None, "max": max(y) if y else None, "end": y[-1] if y else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10.0, help="driving time (default 10)")
    ap.add_argument("--sample-s", type=float, default=15.0, help="seconds between memory samples (default 15)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pages", nargs="*", default=None, help="substrings of page file names (default: all)")
    ap.add_argument("--widgets", default=str(Path("/tmp") / "vilab_soak_widgets.json"),
                    help="cache of the discovered widgets (rediscovered when a page changed)")
    ap.add_argument("--max-widgets", type=int, default=3, help="widgets set at random per page visit")
    ap.add_argument("--skip-keys", nargs="*", default=["auto", "slow", "budget"],
                    help="widgets left at their default (default: the Reproductions page's run-on-load "
                         "switches and the Hierarchical page's time budget, which would make visits minutes long)")
    ap.add_argument("--page-timeout-s", type=float, default=120.0)
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    if hall.chromium_path() is None:
        print("bench_soak needs Chromium (apt-get install chromium) and Playwright.", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    pages = sorted(p for p in (ROOT / "pages").glob("*.py") if not p.name.startswith("_"))
    first = pages[0].stem
    if args.pages:
        pages = [p for p in pages if any(s in p.stem for s in args.pages)]
    stamp = {p.stem: p.stat().st_mtime for p in pages}
    cache = Path(args.widgets)
    widgets = None
    if cache.exists():
        saved = json.loads(cache.read_text())
        if saved.get("stamp") == stamp:
            widgets = saved["widgets"]
    if widgets is None:
        print("discovering widgets (AppTest, default view of each page) ...", flush=True)
        widgets = discover_widgets(pages)
        cache.write_text(json.dumps({"stamp": stamp, "widgets": widgets}))

    port = hall.free_port()
    env = dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false")
    log = open(Path("/tmp") / f"vilab_soak_server_{port}.log", "wb")
    server = subprocess.Popen(hall.replica_command(port), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    samples: list[dict] = []
    visits: list[dict] = []
    stop = threading.Event()
    t0 = time.time()

    def sample():
        while True:
            try:
                m = hall.proc_memory(server.pid)
            except (OSError, StopIteration):
                return
            load1 = os.getloadavg()[0]
            samples.append({"t_s": round(time.time() - t0, 1), "rss_mb": round(m["rss_bytes"] / 2**20, 1),
                            "maps": m["maps"], "visits": len(visits), "load1": load1})
            print(f"[{samples[-1]['t_s']:6.0f} s] rss {samples[-1]['rss_mb']:7.1f} MB  maps {m['maps']:6d}  "
                  f"visits {len(visits):4d}  load {load1:.2f}", flush=True)
            if stop.wait(args.sample_s):
                return

    rng = random.Random(args.seed)
    try:
        if not hall.wait_healthy(url, 120, server):
            raise RuntimeError("the server did not start")
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        with sync_playwright() as pw:
            browser = hall.launch_chromium(pw)
            ctx = browser.new_context(viewport={"width": 1280, "height": 800})
            page = ctx.new_page()
            end = t0 + args.minutes * 60
            while time.time() < end:
                p = rng.choice(pages)
                specs = [s for s in widgets.get(p.stem, []) if s["key"] not in args.skip_keys]
                chosen = rng.sample(specs, min(len(specs), rng.randint(1, args.max_widgets))) if specs else []
                query = {s["key"]: _fmt(random_value(s, rng)) for s in chosen}
                query["seed"] = str(rng.randint(0, 999))
                q = "&".join(f"{k}={urllib_quote(v)}" for k, v in query.items())
                t = time.time()
                ok, err = True, None
                try:
                    page.goto(f"{url}/{page_path(p.stem, first)}?{q}", wait_until="domcontentloaded",
                              timeout=args.page_timeout_s * 1000)
                    hall.wait_rendered(page, args.page_timeout_s, quiet_s=0.5)
                except Exception as exc:
                    ok, err = False, f"{type(exc).__name__}: {str(exc)[:120]}"
                    page.close()  # a stuck page: start over in a new tab
                    page = ctx.new_page()
                visits.append({"page": p.stem, "query": q, "s": round(time.time() - t, 2), "ok": ok,
                               **({"error": err} if err else {})})
                if server.poll() is not None:
                    raise RuntimeError(f"the server exited with code {server.returncode}")
            browser.close()
        stop.set()
        sampler.join(5)
        final = hall.proc_memory(server.pid)
        samples.append({"t_s": round(time.time() - t0, 1), "rss_mb": round(final["rss_bytes"] / 2**20, 1),
                        "maps": final["maps"], "visits": len(visits), "load1": os.getloadavg()[0]})
    finally:
        stop.set()
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()

    with open("/proc/sys/vm/max_map_count") as f:
        max_map_count = int(f.read())
    maps = levelling(samples, "maps", small=20.0)
    rss = levelling(samples, "rss_mb", small=5.0)
    # the server's valve (vilab.clear_caches_if_crowded in app.py) shows as a sudden drop of the mappings
    valve = [{"t_s": b["t_s"], "maps_before": a["maps"], "maps_after": b["maps"], "rss_mb_before": a["rss_mb"],
              "rss_mb_after": b["rss_mb"]} for a, b in zip(samples, samples[1:]) if b["maps"] < 0.75 * a["maps"]]
    if valve:
        after_first = [x["maps"] for x in samples if x["t_s"] >= valve[0]["t_s"]]
        maps["valve_events"] = valve
        maps["max_after_first_valve"] = max(after_first)
        # bounded: after the valve first fired, the mappings never passed its first peak by more than 10 %
        maps["bounded_by_valve"] = bool(max(after_first) <= 1.1 * valve[0]["maps_before"])
    per_page = {}
    for v in visits:
        d = per_page.setdefault(v["page"], {"visits": 0, "failed": 0, "seconds": []})
        d["visits"] += 1
        d["failed"] += 0 if v["ok"] else 1
        d["seconds"].append(v["s"])
    for d in per_page.values():
        s = d.pop("seconds")
        d["median_s"] = float(np.median(s))
    result = {
        "benchmark": "bench_soak", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
                   "processor": platform.processor() or platform.machine()},
        "settings": {"minutes": args.minutes, "sample_s": args.sample_s, "seed": args.seed,
                     "pages": [p.stem for p in pages], "max_widgets": args.max_widgets,
                     "skip_keys": args.skip_keys},
        "load_average_end": os.getloadavg(), "max_map_count": max_map_count,
        "visits": len(visits), "failed_visits": sum(not v["ok"] for v in visits),
        "maps": maps, "rss_mb": rss, "per_page": per_page, "samples": samples,
        "failures": [v for v in visits if not v["ok"]][:20],
    }
    if maps["slope_second_half_per_min"] and maps["slope_second_half_per_min"] > 0:
        result["maps"]["minutes_to_half_limit_at_end_slope"] = round(
            (0.5 * max_map_count - maps["end"]) / maps["slope_second_half_per_min"], 1)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"\n{len(visits)} page visits ({result['failed_visits']} failed) in {args.minutes:g} min")
    for v in maps.get("valve_events", []):
        print(f"valve at {v['t_s']:.0f} s: maps {v['maps_before']} -> {v['maps_after']}, "
              f"RSS {v['rss_mb_before']} -> {v['rss_mb_after']} MB")
    for name, r, unit in (("mappings", maps, ""), ("RSS", rss, " MB")):
        print(f"{name}: {r['start']}{unit} -> max {r['max']}{unit}, end {r['end']}{unit}; growth "
              f"{r['slope_first_half_per_min'] or 0:.1f}{unit}/min (first half) -> "
              f"{r['slope_second_half_per_min'] or 0:.1f}{unit}/min (second half): "
              f"{'levels off' if r['levels_off'] else 'still growing'}")
    print(f"wrote {out}")
    return 0


def urllib_quote(v: str) -> str:
    from urllib.parse import quote

    return quote(v, safe="")


if __name__ == "__main__":
    raise SystemExit(main())
