"""ui.cache_data keeps a page's results on disk with Streamlit's own ``persist="disk"`` (vilab_ui/caching.py):
a later server process is served them, a changed page or library never is, a user's data stays in memory, a
damaged file costs a computation and never the page, and VILAB_PLAIN_UI=1 keeps everything in memory."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import streamlit as st
from streamlit.runtime.caching import cache_data_api
from streamlit.runtime.caching.storage.local_disk_cache_storage import (
    LocalDiskCacheStorageManager,
)

import vilab_ui as ui
from vilab_ui import caching

ROOT = Path(__file__).resolve().parents[1]
CALLS: list = []


@pytest.fixture
def disk(tmp_path, monkeypatch):
    """Results kept on disk in a HOME of the test's own, as a served lab keeps them (AppTest and bare scripts
    have no Streamlit runtime, so their caches are memory-only: the server's storage manager stands in)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv(caching.DISK_ENV, raising=False)
    monkeypatch.delenv(caching.PLAIN_ENV, raising=False)
    monkeypatch.setattr(cache_data_api.DataCaches, "get_storage_manager", lambda self: LocalDiskCacheStorageManager())
    st.cache_data.clear()
    CALLS.clear()
    yield tmp_path / ".streamlit" / "cache"
    st.cache_data.clear()


def _files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.memo")) if folder.is_dir() else []


def settings(a, b=2.0, _target=None):
    CALLS.append(("settings", a, b))
    return np.arange(3) * (a if isinstance(a, float) else 1.0) * b


def test_a_call_of_plain_settings_is_kept_on_disk_and_served_from_memory_after(disk):
    f = ui.cache_data()(settings)
    assert list(f(1.5)) == [0.0, 3.0, 6.0] and list(f(1.5)) == [0.0, 3.0, 6.0]
    assert CALLS == [("settings", 1.5, 2.0)] and len(_files(disk)) == 1
    f(1.5, b=3.0)
    assert len(_files(disk)) == 2


@pytest.mark.parametrize("call", [
    lambda f: f(np.array([1.0, 2.0])),  # an array: a user's data, or derived from it
    lambda f: f(b"bytes of an upload"),
    lambda f: f(1.0, _target=object()),  # left out of the key and given: the key does not say what it depends on
])
def test_a_call_that_is_not_only_settings_stays_in_memory(disk, call):
    f = ui.cache_data()(settings)
    call(f)
    call(f)
    assert len(CALLS) == 1 and _files(disk) == []


def test_a_closure_and_keep_false_and_the_switches_stay_in_memory(disk, monkeypatch):
    def make(k):
        def scaled(a):
            CALLS.append(("scaled", a))
            return a * k
        return scaled

    assert ui.cache_data()(make(3.0))(2.0) == 6.0  # what the closure captured is no argument
    assert list(ui.cache_data(keep=False)(settings)(2.0)) == [0.0, 4.0, 8.0]
    assert _files(disk) == []
    for env, value in ((caching.PLAIN_ENV, "1"), (caching.DISK_ENV, "off")):
        monkeypatch.setenv(env, value)
        f = ui.cache_data()(settings)
        f(7.0)
        f(7.0)
        assert _files(disk) == [], env
        assert "memory only" in caching.open_for_server()
        monkeypatch.delenv(env)
        st.cache_data.clear()
    assert CALLS.count(("settings", 7.0, 2.0)) == 2  # computed once under each switch: memory still caches


def test_a_damaged_or_cut_file_is_computed_again_and_replaced(disk):
    f = ui.cache_data()(settings)
    f(1.0)
    (path,) = _files(disk)
    whole = path.read_bytes()
    for damaged in (b"", whole[: len(whole) // 2], b"not a pickle."):
        st.cache_data.clear()  # the memory layer too: the next call reads the file
        disk.mkdir(parents=True, exist_ok=True)
        path.write_bytes(damaged)
        CALLS.clear()
        assert list(f(1.0)) == [0.0, 2.0, 4.0]
        assert CALLS == [("settings", 1.0, 2.0)]
        assert path.read_bytes() != damaged  # written again, whole


def test_the_server_start_removes_cut_files_and_trims_the_folder_oldest_first(disk, monkeypatch):
    disk.mkdir(parents=True)
    import pickle

    for i in range(6):
        p = disk / f"f-{i}.memo"
        p.write_bytes(pickle.dumps(bytes(200 * 1024)))
        os.utime(p, (1000 + i, 1000 + i))
    (disk / "f-cut.memo").write_bytes(pickle.dumps(bytes(10))[:-3])
    (disk / "f-empty.memo").write_bytes(b"")
    (disk / "vilab-store-x.memo.123.456.tmp").write_bytes(b"half")  # a store's writer killed before its rename
    os.utime(disk / "vilab-store-x.memo.123.456.tmp", (1000, 1000))
    monkeypatch.setenv(caching.SIZE_ENV, "1")  # 1 MB: the six whole ones (1.2 MB) are over it
    line = caching.open_for_server()
    assert "3 damaged removed" in line and str(disk) in line
    assert sorted(p.name for p in disk.iterdir()) == ["f-4.memo", "f-5.memo"]  # trimmed to half the bound, the newest kept


def test_the_bound_must_be_a_positive_number_of_megabytes(monkeypatch):
    for bad in ("-1", "0", "lots", "inf"):
        monkeypatch.setenv(caching.SIZE_ENV, bad)
        with pytest.raises(ValueError, match="positive number of megabytes"):
            caching.max_bytes()
    monkeypatch.setenv(caching.SIZE_ENV, "2")
    assert caching.max_bytes() == 2 * 1024**2


PROCESS = textwrap.dedent("""
    import sys
    from streamlit.runtime.caching import cache_data_api
    from streamlit.runtime.caching.storage.local_disk_cache_storage import LocalDiskCacheStorageManager
    cache_data_api.DataCaches.get_storage_manager = lambda self: LocalDiskCacheStorageManager()
    from vilab_ui import caching
    caching.code_version = lambda: sys.argv[2]  # the library's version (other sessions may edit the checkout meanwhile)
    sys.path.insert(0, sys.argv[1])
    import page_module
    print(page_module.heavy(3), page_module.RUNS)
""")


def test_a_later_process_is_served_the_result_and_a_changed_page_is_not(tmp_path):
    """Two server processes one after the other (a restarted server, another replica of a hall): the second is
    served the first's result; once the page's file changes (here a helper the cached function calls), or the
    library's code version does, the result is computed again."""
    (tmp_path / "page_module.py").write_text(textwrap.dedent("""
        import vilab_ui as ui
        RUNS = []
        def helper(n):
            return n * 10
        @ui.cache_data()
        def heavy(n):
            RUNS.append(n)
            return helper(n)
    """))
    env = {k: v for k, v in os.environ.items() if k not in (caching.DISK_ENV, caching.PLAIN_ENV)}
    env["HOME"] = str(tmp_path / "home")

    def run(version="library 1") -> str:
        out = subprocess.run([sys.executable, "-c", PROCESS, str(tmp_path), version], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        return out.stdout.strip().splitlines()[-1]

    assert run() == "30 [3]"  # computed
    assert run() == "30 []"  # served from disk
    src = (tmp_path / "page_module.py").read_text()
    (tmp_path / "page_module.py").write_text(src.replace("return n * 10", "return n * 100"))
    assert run() == "300 [3]"  # the page changed: not served the old result
    assert run() == "300 []"
    assert run("library 2") == "300 [3]"  # the library changed


def test_a_shared_store_on_disk_is_found_by_a_later_store_and_never_across_pages_or_versions(disk, tmp_path,
                                                                                              monkeypatch):
    """``SharedStore(on_disk=...)``: an entry written by one server process is there for the next (Hierarchical
    models' longest run, which a new maximum of iterations continues), under the page's file and the code
    version; a key that is not a setting, or a store without on_disk, stays in memory."""
    page = tmp_path / "page.py"
    page.write_text("# the page that fills the store\n")
    first = ui.SharedStore(maxsize=4, on_disk="longest run", source=str(page))
    first[("epi1", "snngm", 0.03, 0)] = {"n_steps": 800}
    first[("data", np.ones(2).tobytes())] = "a user's data"
    ui.SharedStore(maxsize=4)[("epi1", "snngm", 0.03, 0)] = "memory only"
    assert len(_files(disk)) == 1
    later = ui.SharedStore(maxsize=4, on_disk="longest run", source=str(page))  # a restarted server
    assert later.get(("epi1", "snngm", 0.03, 0)) == {"n_steps": 800}
    assert ui.SharedStore(on_disk="another store", source=str(page)).get(("epi1", "snngm", 0.03, 0)) is None
    page.write_text("# the page, changed\n")
    assert ui.SharedStore(on_disk="longest run", source=str(page)).get(("epi1", "snngm", 0.03, 0)) is None
    page.write_text("# the page that fills the store\n")
    version = caching.code_version
    monkeypatch.setattr(caching, "code_version", lambda: "another library")
    assert ui.SharedStore(on_disk="longest run", source=str(page)).get(("epi1", "snngm", 0.03, 0)) is None
    monkeypatch.setattr(caching, "code_version", version)
    (path,) = _files(disk)
    path.write_bytes(b"damaged")
    assert ui.SharedStore(on_disk="longest run", source=str(page)).get(("epi1", "snngm", 0.03, 0), "gone") == "gone"
    assert _files(disk) == []  # the damaged file is removed
    later[("epi1", "snngm", 0.03, 0)] = {"n_steps": 900}
    assert later.pop(("epi1", "snngm", 0.03, 0)) == {"n_steps": 900} and _files(disk) == []
