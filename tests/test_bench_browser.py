"""benchmarks/bench_browser.py: it imports, names a control for every page, and its helpers read what they
should. The browser measurement itself is a benchmark (run by hand or by `vilab bench browser`), not a test."""

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_browser", ROOT / "benchmarks" / "bench_browser.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_page_has_a_control_to_move(bench):
    from tests.browser import layout

    pages = [p for p, _ in layout.page_paths()]
    assert bench.HOME == pages[0]
    missing = [p for p in pages if p not in bench.CONTROLS]
    assert not missing, f"pages without a control in bench_browser.CONTROLS (add the slider a lecturer moves): {missing}"
    for path, (kind, key, query) in bench.CONTROLS.items():
        assert kind in ("slider", "toggle") and key and isinstance(query, str), path
    assert set(bench.RETRAINS) <= set(bench.CONTROLS)


def test_percentile_and_table(bench):
    assert bench.pct([], 95) is None
    assert bench.pct([1.0], 95) == 1.0
    assert bench.pct([1.0, 2.0, 3.0, 4.0, 5.0], 50) == 3.0
    assert abs(bench.pct(list(range(1, 21)), 95) - 19.05) < 1e-9
    rows = [{"page": "Hierarchical_models", "control": "slider:iters", "times": [0.5, 0.7, 0.9], "server_cpu_s": [0.1],
             "cold_empty_s": 30.0, "cold_filled_s": 10.0, "served_load_s": 2.4, "warm_load_s": 2.5,
             "returning_load_s": 2.2, "switch_s": 1.9},
            {"page": "Home", "control": "toggle:lecture", "times": [], "error": "no slider on the page"}]
    md = bench.table(rows).splitlines()
    assert md[0].startswith("| page |") and len(md) == 4
    assert "| Hierarchical models | slider:iters | 0.70 | 0.88 | 1 | 0.100 | 30.0 | 10.0 | 2.40 | 2.50 | 2.20 | 1.90 |" \
        == md[2]
    assert "no slider on the page" in md[3] and "| 0.5 |" in md[3]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux /proc")
def test_cpu_seconds_of_this_process(bench):
    t = bench.cpu_seconds(os.getpid())
    assert t is not None and t > 0
    assert bench.cpu_seconds(None) is None
    assert bench.server_pid("http://127.0.0.1:1") is None  # nothing serves port 1


def test_settle_waits_until_the_page_has_been_idle(bench):
    """The first change waits until no run has ended for the settle time and none is running."""
    import time

    class Page:
        def __init__(self):
            self.running = 3  # the status widget is shown for the first three polls

        def locator(self, _):
            page = self

            class Loc:
                def count(self):
                    page.running -= 1
                    return int(page.running >= 0)
            return Loc()

        def wait_for_timeout(self, ms):
            time.sleep(ms / 1000)

    class Runs:
        finished = [time.perf_counter()]  # a run (the width reporter's) has just ended

    page = Page()
    bench.settle(page, Runs(), 0.5, 10.0)
    assert time.perf_counter() - Runs.finished[-1] >= 0.5  # idle for the settle time after the last run
    assert page.running < 0  # and it looked until the status widget was gone


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux /proc")
def test_idle_waits_for_a_quiet_server(bench):
    """A process that computes nothing is idle at once; a busy one is not within a short timeout."""
    import subprocess
    import sys

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        assert bench.idle(sleeper.pid, window_s=0.2, timeout_s=10.0)
        assert not bench.idle(busy.pid, window_s=0.2, timeout_s=0.5)
        assert not bench.idle(None, window_s=0.1, timeout_s=0.2)
    finally:
        sleeper.kill()
        busy.kill()
        sleeper.wait()
        busy.wait()
