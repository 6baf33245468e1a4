"""vilab_ui.result_cache stays within its bound through crashes (issue 41, item 5): a writer killed while it
writes leaves nothing the next start does not remove, and a value too large for the store is not kept."""

from __future__ import annotations

import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from vilab_ui import result_cache as rc

ROOT = Path(__file__).resolve().parents[1]
CAP_MB = 16  # the store's bound in these tests
VALUE_BYTES = CAP_MB * 1024**2 // 10  # each value: a tenth of the bound (kept: under MAX_VALUE_FRACTION)
DB_FILES = {"cache.db", "cache.db-wal", "cache.db-shm"}

# writes value after value into the store until it is killed; says "ready" once the store is open
WRITER = textwrap.dedent(f"""
    import sys
    import numpy as np
    from vilab_ui import result_cache as rc

    assert rc.store() is not None
    rc.code_version()
    print("ready", flush=True)
    i = int(sys.argv[1]) * 1_000_000
    while True:
        assert rc.save("crash test", i, np.full({VALUE_BYTES // 8}, float(i)))
        i += 1
""")


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv(rc.ENV, str(tmp_path / "results"))
    monkeypatch.setenv(rc.SIZE_ENV, str(CAP_MB))
    rc.reset()
    yield tmp_path / "results"
    rc.reset()


def _known(folder: Path) -> set[str]:
    """The value files the store's index (diskcache's SQLite table Cache) refers to."""
    with sqlite3.connect(folder / "cache.db") as db:
        return {os.path.normpath(f) for (f,) in db.execute("SELECT filename FROM Cache WHERE filename IS NOT NULL")}


def _files(folder: Path) -> dict[str, int]:
    """Every file of the folder but SQLite's own: relative path -> size."""
    out = {}
    for dirpath, _, files in os.walk(folder):
        for name in files:
            path = Path(dirpath) / name
            rel = os.path.normpath(path.relative_to(folder))
            if rel not in DB_FILES:
                out[rel] = path.stat().st_size
    return out


def _kill_a_writer(folder: Path, round_: int) -> None:
    env = dict(os.environ, **{rc.ENV: str(folder), rc.SIZE_ENV: str(CAP_MB)})
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(round_)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "ready", (line, proc.stderr.read() if proc.poll() is not None else "")
        # let it write a few values, then kill it wherever it is (mostly inside a write: that is all it does)
        try:
            proc.wait(timeout=random.uniform(0.2, 0.6))
        except subprocess.TimeoutExpired:
            pass
        assert proc.poll() is None, proc.stderr.read()  # still writing: it did not stop on an error
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


@pytest.mark.slow
def test_a_writer_killed_20_times_leaves_the_folder_within_its_bound(folder):
    random.seed(41)
    for round_ in range(20):
        _kill_a_writer(folder, round_)
    cache = rc.store()  # the next start
    assert cache is not None
    files, known = _files(folder), _known(folder)
    unknown = sorted(set(files) - known)
    assert not unknown, f"{len(unknown)} files the index does not know, {sum(files[f] for f in unknown)} bytes"
    assert sum(files.values()) + (folder / "cache.db").stat().st_size <= CAP_MB * 1024**2
    for key in list(cache):  # what the writers entered in the index is whole
        assert isinstance(rc._read(cache, key), np.ndarray)
    assert rc.save("crash test", "after", np.arange(VALUE_BYTES // 8.0))  # and the store works on
    assert rc.load("crash test", "after")[-1] == VALUE_BYTES // 8 - 1


def test_a_value_larger_than_a_share_of_the_bound_is_not_kept(folder, caplog):
    limit = int(rc.MAX_VALUE_FRACTION * CAP_MB * 1024**2)
    f = rc.keep(lambda n: np.zeros(n // 8))
    assert f(2 * limit).size == 2 * limit // 8  # the page has its value ...
    assert len(rc.store()) == 0 and not _files(folder)  # ... the disk does not
    assert rc.stats()["too_large"] == 1 and "not kept on disk" in caplog.text
    assert f(limit // 2).size == limit // 16 and len(rc.store()) == 1  # a smaller one is kept


def test_the_bound_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(rc.SIZE_ENV, "64")
    assert rc.max_bytes() == 64 * 1024**2
    monkeypatch.delenv(rc.SIZE_ENV)
    assert rc.max_bytes() == rc.MAX_BYTES
    for bad in ("-1", "0", "lots", "inf"):
        monkeypatch.setenv(rc.SIZE_ENV, bad)
        with pytest.raises(ValueError, match="VILAB_RESULT_CACHE_MB must be a positive number of megabytes"):
            rc.max_bytes()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_while_others_use_the_store_only_dead_writers_files_are_removed(folder):
    cache = rc.store()
    sub = folder / "ab" / "cd"
    sub.mkdir(parents=True)
    dead = sub / f"0123.val.{socket.gethostname()}.{_dead_pid()}{rc.TEMP_SUFFIX}"
    alive = sub / f"4567.val.{socket.gethostname()}.{os.getpid()}{rc.TEMP_SUFFIX}"
    fresh = sub / "89ab.val"  # a value another process may be about to enter in the index
    old = sub / "cdef.val"  # an evicted value whose removal a crash cut short
    for p in (dead, alive, fresh, old):
        p.write_bytes(b"x" * 1000)
    hour_ago = time.time() - 3600
    os.utime(old, (hour_ago, hour_ago))
    assert rc._tidy(cache, alone=False) == 2
    assert not dead.exists() and not old.exists() and alive.exists() and fresh.exists()
    assert rc._tidy(cache, alone=True) == 2  # no one else: everything the index does not know goes
    assert not _files(folder)


def test_a_second_process_does_not_remove_what_the_first_is_writing(folder):
    """The store of this process is open: another process opening it is not alone, and keeps a value file
    the index does not know yet."""
    rc.store()
    stray = folder / "ef" / "01"
    stray.mkdir(parents=True)
    (stray / "2345.val").write_bytes(b"y" * 1000)
    env = dict(os.environ, **{rc.ENV: str(folder)})
    code = "from vilab_ui import result_cache as rc; assert rc.store() is not None; print(rc._lock_file is not None)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert (stray / "2345.val").exists()
    rc.reset()  # this process is gone: the next start is alone and removes it
    rc.store()
    assert not (stray / "2345.val").exists()
