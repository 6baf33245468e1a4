"""vilab_ui.result_cache: the pages' results kept on disk for later server processes, never a stale one."""

from __future__ import annotations

import importlib.util
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.app.charts import charts
from vilab_ui import result_cache as rc

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def store(tmp_path, monkeypatch):
    """The store switched on in a folder of this test (tests/conftest.py switches it off for the others)."""
    monkeypatch.setenv(rc.ENV, str(tmp_path / "results"))
    rc.reset()
    yield tmp_path / "results"
    rc.reset()


CALLS: list = []  # what the functions below computed (module level: a closure is never kept)


def settings(a, b=2.0, *, name="vn", _model=None):
    CALLS.append((a, b, name))
    return {"a": a, "path": np.arange(5.0) * b, "name": name}


def unpicklable(x):
    CALLS.append(x)
    return lambda: x


@pytest.fixture(autouse=True)
def _no_calls_yet():
    CALLS.clear()


def _module(path: Path, text: str):
    """A module from a file (a page with a cached function and a helper)."""
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(f"page_{abs(hash(text))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


PAGE = """
    SCALE = {scale}

    def helper(x):
        return x * SCALE

    def result(x):
        return helper(x)
"""


def test_a_later_process_is_served_from_disk(store):
    calls = CALLS
    f = rc.keep(settings)
    first = f(1, 3.0)
    again = f(1, 3.0)
    assert len(calls) == 1 and rc.stats()["hits"] == 1 and rc.stats()["misses"] == 1
    np.testing.assert_array_equal(again["path"], first["path"])
    rc.reset()  # a new process: the store is opened again from its folder
    later = f(a=1, b=3.0)  # the same call, written with keywords
    assert len(calls) == 1 and rc.stats() == {"hits": 1, "misses": 0, "not_kept": 0, "too_large": 0, "errors": 0}
    np.testing.assert_array_equal(later["path"], first["path"])
    assert any(store.iterdir())


def test_every_setting_is_in_the_key(store):
    calls = CALLS
    f = rc.keep(settings)
    f(1)
    f(1, 2.0)  # the default, given: the same call
    f(1, 2.5)
    f(1, name="srvn")
    f(2)
    assert calls == [(1, 2.0, "vn"), (1, 2.5, "vn"), (1, 2.0, "srvn"), (2, 2.0, "vn")]


def test_calls_whose_arguments_are_not_settings_are_not_kept(store):
    calls = CALLS
    f = rc.keep(settings)
    f(np.arange(3.0))  # an array: a user's data, not a setting
    f(b"raw bytes")
    f(object())
    f(1, _model=object())  # an argument left out of the key is given: the key would not say what it depends on
    f(1, _model=object())
    assert len(calls) == 5 and rc.stats()["not_kept"] == 5 and rc.stats()["misses"] == 0
    f(1, _model=None)  # left out and not given: kept
    f(1)
    assert len(calls) == 6 and rc.stats()["hits"] == 1
    f((1, (2.5, "a")), name={"k": [1, 2]})  # nested settings are settings
    assert rc.stats()["misses"] == 2


def test_a_closure_is_not_kept(store):
    outside = [3.0]

    def closure(x):
        return x * outside[0]

    f = rc.keep(closure)
    assert f(2) == 6.0
    outside[0] = 4.0
    assert f(2) == 8.0  # the captured value is not in the key: computed again
    assert rc.stats()["not_kept"] == 2


def test_other_code_is_a_new_key(store, tmp_path, monkeypatch):
    page = tmp_path / "page.py"
    f = rc.keep(_module(page, PAGE.format(scale=2)).result)
    assert f(3) == 6
    g = rc.keep(_module(page, PAGE.format(scale=5)).result)  # the page's helper changed
    assert g(3) == 15
    monkeypatch.setattr(rc, "code_version", lambda: "another version of vilab")
    assert f(3) == 6 and rc.stats()["misses"] == 3 and rc.stats()["hits"] == 0


def test_code_version_covers_every_file(tmp_path):
    import hashlib

    def digest():
        h = hashlib.sha256()
        rc._hash_files(tmp_path, h)
        return h.hexdigest()

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "data.npz").write_bytes(b"\x00\x01")
    (tmp_path / "a.py").write_text("x = 1\n")
    before = digest()
    assert digest() == before
    (tmp_path / "sub" / "data.npz").write_bytes(b"\x00\x02")
    assert digest() != before
    assert len(rc.code_version()) == 64 and rc.code_version() == rc.code_version()


def test_a_result_that_cannot_be_written_is_still_returned(store, caplog):
    calls = CALLS
    f = rc.keep(unpicklable)
    with caplog.at_level(logging.WARNING):
        assert f(1)() == 1 and f(1)() == 1
    assert len(calls) == 2 and rc.stats()["errors"] == 2
    assert sum("could not be written" in r.getMessage() for r in caplog.records) == 1  # said once


def test_an_unusable_folder_costs_time_not_the_page(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setenv(rc.ENV, str(blocker / "results"))
    rc.reset()
    calls = CALLS
    f = rc.keep(settings)
    with caplog.at_level(logging.WARNING):
        f(1)
        f(1)
    assert len(calls) == 2 and rc.store() is None
    assert "cannot be used" in caplog.text
    assert "cannot be used" in rc.open_for_server()
    rc.reset()


def test_off(monkeypatch):
    monkeypatch.setenv(rc.ENV, "off")
    rc.reset()
    calls = CALLS
    f = rc.keep(settings)
    f(1)
    f(1)
    assert len(calls) == 2 and rc.store() is None and rc.cache_dir() is None
    assert "off" in rc.open_for_server()
    rc.reset()


def test_the_folder_is_bounded(store, monkeypatch):
    monkeypatch.setattr(rc, "MAX_BYTES", 800_000)  # values up to 100 kB are kept (MAX_VALUE_FRACTION)
    rc.reset()
    f = rc.keep(lambda i: np.full(10_000, float(i)))  # 80 kB each
    for i in range(40):
        f(i)
    cache = rc.store()
    assert cache.volume() < 1_200_000 and len(cache) < 40 and rc.stats()["too_large"] == 0
    assert f(39)[0] == 39.0  # the most recent results stay


def test_the_server_log_says_where(store):
    line = rc.open_for_server()
    assert str(store) in line and "results" in line


def test_a_hit_is_reported(store):
    seen = []
    f = rc.keep(settings, on_hit=lambda func, args, kwargs: seen.append((func, args, kwargs)))
    f(1, name="vn")
    assert seen == []
    f(1, name="vn")
    assert seen == [(settings, (1,), {"name": "vn"})]


def _wait_for(predicate, timeout_s=30.0):
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_a_result_served_from_disk_is_computed_again_in_the_background(store, monkeypatch):
    """A restarted server traced none of the page's programs: the result comes from disk at once, and the
    function runs again behind it (at most RECOMPUTE_PER_FUNCTION times per function)."""
    import vilab_ui as ui

    monkeypatch.setattr(ui.caching, "_RECOMPUTE_COUNTS", {})
    monkeypatch.setattr(ui.caching, "RECOMPUTE_PER_FUNCTION", 2)
    monkeypatch.setattr(ui.caching, "RECOMPUTE_DELAY_S", 0.0)
    f = ui.cache_data()(settings)
    f.clear()  # Streamlit's memory is keyed by the function's name and source: other tests' results
    for a in (1, 2, 3):
        f(a)
    assert len(CALLS) == 3
    f.clear()  # a restarted server: memory empty, disk full
    for a in (1, 2, 3):
        assert f(a)["a"] == a
    assert rc.stats()["hits"] == 3
    assert _wait_for(lambda: len(CALLS) == 5 and ui.caching._recompute_worker is None)
    assert sorted(c[0] for c in CALLS[3:]) == [1, 2]  # two of the three, the third not queued


def stamped(a):
    import time

    CALLS.append((a, time.monotonic()))
    return a


def test_the_computation_behind_the_page_waits_for_the_visitors(store, monkeypatch):
    """A call computed again after a disk hit starts only once no page has started a run for
    RECOMPUTE_DELAY_S: a class opening the page at once is served first."""
    import time

    import vilab_ui as ui

    monkeypatch.setattr(ui.caching, "_RECOMPUTE_COUNTS", {})
    monkeypatch.setattr(ui.caching, "RECOMPUTE_DELAY_S", 0.5)
    f = ui.cache_data()(stamped)
    f.clear()
    f(1)
    f.clear()  # a restarted server
    visits = []
    for _ in range(3):  # three visitors' runs, 0.2 s apart, the first with the disk hit
        monkeypatch.setattr(ui.caching, "_LAST_PAGE_RUN", time.monotonic())
        visits.append(ui.caching._LAST_PAGE_RUN)
        if len(visits) == 1:
            assert f(1) == 1 and len(CALLS) == 1
        time.sleep(0.2)
    assert _wait_for(lambda: len(CALLS) == 2 and ui.caching._recompute_worker is None)
    assert CALLS[1][1] >= visits[-1] + 0.5


def test_ui_cache_data_keeps_results_below_its_memory(store, monkeypatch):
    import vilab_ui as ui

    monkeypatch.setattr(ui.caching, "RECOMPUTE_PER_FUNCTION", 0)  # no computation behind a hit here

    def other(a, b=2.0, *, name="vn", _model=None):  # a second function: Streamlit keys its memory by name
        CALLS.append((a, b, name))
        return a

    calls = CALLS
    kept = ui.cache_data()(settings)
    memory_only = ui.cache_data(keep=False)(other)
    kept.clear()  # Streamlit's memory is keyed by the function's name and source: other tests' results
    memory_only.clear()
    kept(1, _model=None)
    kept.clear()  # Streamlit's memory forgets; the disk does not
    kept(1)
    assert len(calls) == 1 and rc.stats()["hits"] == 1
    memory_only(7)
    memory_only.clear()
    memory_only(7)
    assert len(calls) == 3


def test_a_page_run_after_a_restart_is_served_from_disk(store):
    """Trajectories' default view: the second run, with Streamlit's memory cleared (a restarted server),
    computes nothing it kept and draws the same figure."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    def run():
        at = AppTest.from_file(str(ROOT / "pages" / "20_Trajectories.py"), default_timeout=240)
        at.run()
        assert not at.exception, at.exception
        return at

    st.cache_data.clear()  # other tests in this process ran the page: its results are in Streamlit's memory
    first = run()
    written = rc.stats()["misses"]
    assert written >= 3
    st.cache_data.clear()
    rc.reset()
    second = run()
    assert rc.stats()["misses"] == 0 and rc.stats()["hits"] >= written
    assert [c.spec for c in charts(first)] == [c.spec for c in charts(second)]


def test_the_launcher_opens_the_store(tmp_path):
    """``python -m vilab_ui.serve``'s step before the server starts: the store's line in the log."""
    code = "from vilab_ui import result_cache; print(result_cache.open_for_server())"
    env = {**__import__("os").environ, rc.ENV: str(tmp_path / "kept")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "results are kept in" in out.stdout and str(tmp_path / "kept") in out.stdout


def test_a_store_on_disk_is_found_by_a_later_process(store, tmp_path):
    """``SharedStore(on_disk=...)``: an entry written by one process is there for the next (Hierarchical
    models' longest runs, which a new maximum of iterations continues); a key that is not a setting stays
    in memory; pop removes it from disk; another source file is another key."""
    import vilab_ui as ui

    page = tmp_path / "page.py"
    page.write_text("# a page\n")
    first = ui.SharedStore(maxsize=4, on_disk="longest run", source=str(page))
    first[("epi1", "snngm", 0.03, 0)] = {"steps": np.arange(3.0)}
    first[("epi1", np.float64(0.5).tobytes())] = "bytes in the key: memory only"
    assert rc.stats()["misses"] == 1 and rc.stats()["not_kept"] == 1
    rc.reset()  # a restarted server: a new store object, memory empty
    later = ui.SharedStore(maxsize=4, on_disk="longest run", source=str(page))
    got = later.get(("epi1", "snngm", 0.03, 0))
    np.testing.assert_array_equal(got["steps"], np.arange(3.0))
    assert ("epi1", "snngm", 0.03, 0) in later and len(later) == 1  # now in memory too
    assert later.get(("epi1", np.float64(0.5).tobytes())) is None
    assert ui.SharedStore(on_disk="another store", source=str(page)).get(("epi1", "snngm", 0.03, 0)) is None
    page.write_text("# a page, changed\n")
    assert ui.SharedStore(on_disk="longest run", source=str(page)).get(("epi1", "snngm", 0.03, 0)) is None
    page.write_text("# a page\n")
    assert later.pop(("epi1", "snngm", 0.03, 0))["steps"].shape == (3,)
    rc.reset()
    assert ui.SharedStore(on_disk="longest run", source=str(page)).get(("epi1", "snngm", 0.03, 0)) is None
    assert ui.SharedStore(maxsize=4).get(("epi1", "snngm", 0.03, 0), "memory only") == "memory only"


def test_hierarchical_models_continue_a_run_of_the_server_before(store, monkeypatch):
    """A restarted server's first new maximum of iterations continues the longest run kept on disk
    (vilab.hierarchical.fit.refit is handed it) instead of fitting from the start."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    import vilab.hierarchical.fit as hfit
    import vilab_ui as ui

    handed = []
    real = hfit.refit

    def spy(model, method, previous, **kw):
        handed.append((method, None if previous is None else previous.n_steps, kw["n_iter"]))
        return real(model, method, previous, **kw)

    monkeypatch.setattr(hfit, "refit", spy)
    monkeypatch.setattr(ui.caching, "RECOMPUTE_PER_FUNCTION", 0)  # nothing computed behind the page after the test
    query = {"m_epi1": "SNNGM", "iters": "2000", "rule": "false"}

    def run(iters):
        at = AppTest.from_file(str(ROOT / "pages" / "80_Hierarchical_models.py"), default_timeout=300)
        at.query_params.update({**query, "iters": str(iters)})
        at.run()
        assert not at.exception, at.exception
        return at

    st.cache_data.clear()
    st.cache_resource.clear()
    run(2000)
    assert handed == [("gva-snngm", None, 2000)]
    st.cache_data.clear()  # a restarted server: both of Streamlit's caches empty, the disk kept
    st.cache_resource.clear()
    rc.reset()
    run(3000)
    assert handed[1:] == [("gva-snngm", 2000, 3000)]


def test_chart_margins_are_kept_for_a_restarted_server(store, monkeypatch):
    """The margins browsers reported for a figure (so that Plotly draws it once) outlive the process."""
    import vilab_ui as ui

    monkeypatch.setattr(ui.chart, "_MARGINS", None)
    ui.chart._margins_store()["vilab:abc:0:0"] = (80.0, 20.0, 60.0, 70.0)
    rc.reset()
    monkeypatch.setattr(ui.chart, "_MARGINS", None)  # a new process: an empty store in memory
    assert ui.chart._margins_store().get("vilab:abc:0:0") == (80.0, 20.0, 60.0, 70.0)


def test_the_computation_behind_the_page_waits_while_the_server_serves(store, monkeypatch):
    """... and until the server's event loop (the main thread: a new visitor's page files) is quiet."""
    import time

    import vilab_ui as ui

    if ui.caching._main_thread_cpu() is None:
        pytest.skip("per-thread CPU time needs Linux /proc")
    monkeypatch.setattr(ui.caching, "_RECOMPUTE_COUNTS", {})
    monkeypatch.setattr(ui.caching, "RECOMPUTE_DELAY_S", 0.0)
    monkeypatch.setattr(ui.caching, "_LAST_PAGE_RUN", float("-inf"))
    f = ui.cache_data()(stamped)
    f.clear()
    f(2)
    f.clear()  # a restarted server
    assert f(2) == 2 and len(CALLS) == 1
    end = time.monotonic() + 1.0
    while time.monotonic() < end:  # the main thread busy, as serving a visitor's files
        pass
    busy_until = time.monotonic()
    assert _wait_for(lambda: len(CALLS) == 2 and ui.caching._recompute_worker is None)
    assert CALLS[1][1] >= busy_until
