"""The pages' results on disk stay within their bound through crashes (issue 41, item 5, on the store of issue 37:
Streamlit's own ``persist="disk"`` and ``ui.SharedStore(on_disk=...)``, vilab_ui/caching.py): a writer killed
while it writes leaves nothing that the next server start (``caching.open_for_server``) does not remove, the
folder is within ``VILAB_RESULT_CACHE_MB`` after that start, and every result left is whole and served."""

from __future__ import annotations

import os
import pickle
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vilab_ui import caching

ROOT = Path(__file__).resolve().parents[1]
CAP_MB = 4  # the folder's bound in this test
VALUE_FLOATS = CAP_MB * 1024**2 // 8 // 10  # each result a tenth of the bound: 20 writers write far more than it

# Writes result after result (a cached page function and a shared store, both kept on disk, as a served lab
# keeps them) until it is killed; says "ready" once the first result is written.
WRITER = textwrap.dedent(f"""
    import sys
    import numpy as np
    from streamlit.runtime.caching import cache_data_api
    from streamlit.runtime.caching.storage.local_disk_cache_storage import LocalDiskCacheStorageManager
    cache_data_api.DataCaches.get_storage_manager = lambda self: LocalDiskCacheStorageManager()
    import vilab_ui as ui

    @ui.cache_data()
    def heavy(i):
        return np.full({VALUE_FLOATS}, float(i))

    store = ui.SharedStore(maxsize=4, on_disk="crash test")
    i = int(sys.argv[1]) * 1_000_000
    heavy(i)
    print("ready", flush=True)
    while True:
        i += 1
        heavy(i)
        store[i] = np.full({VALUE_FLOATS}, float(i))
""")


def _kill_a_writer(env: dict, round_: int) -> None:
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(round_)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "ready", (line, proc.stderr.read() if proc.poll() is not None else "")
        try:  # let it write a few results, then kill it wherever it is (mostly inside a write: that is all it does)
            proc.wait(timeout=random.uniform(0.1, 0.5))
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
def test_a_writer_killed_20_times_leaves_the_folder_within_its_bound(tmp_path, monkeypatch):
    random.seed(41)
    env = {k: v for k, v in os.environ.items() if k not in (caching.DISK_ENV, caching.PLAIN_ENV)}
    env.update(HOME=str(tmp_path), **{caching.SIZE_ENV: str(CAP_MB)})
    for round_ in range(20):
        _kill_a_writer(env, round_)
    folder = tmp_path / ".streamlit" / "cache"
    written = sum(p.stat().st_size for p in folder.iterdir())
    assert written > CAP_MB * 1024**2  # the writers wrote past the bound: the start has something to do

    monkeypatch.setenv("HOME", str(tmp_path))  # the next start, in this process
    monkeypatch.setenv(caching.SIZE_ENV, str(CAP_MB))
    monkeypatch.delenv(caching.DISK_ENV, raising=False)
    monkeypatch.delenv(caching.PLAIN_ENV, raising=False)
    line = caching.open_for_server()
    assert str(folder) in line
    left = sorted(folder.iterdir())
    assert sum(p.stat().st_size for p in left) <= CAP_MB * 1024**2, line  # temporary files counted too
    results = [p for p in left if p.suffix == ".memo"]
    assert results, line
    for p in results:  # what is left is whole: every result file unpickles
        assert pickle.loads(p.read_bytes()) is not None, p.name
    # a killed writer's temporary file (never a result: a store renames its file when whole) goes once stale
    assert caching.remove_damaged(folder, stale_s=0.0) == sum(p.suffix == ".tmp" for p in left)
    assert all(p.suffix == ".memo" for p in folder.iterdir())
