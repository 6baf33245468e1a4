"""A process that used vilab_ui's background threads exits cleanly (issue 41): at exit the threads of
ui.prefetch take no new call, finish the one they are in, and the exit waits for them. A daemon thread still inside a compiled JAX call when the interpreter finalizes
aborts it ("terminate called after throwing an instance of '' / FATAL: exception not rethrown", status 134)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ABORT = ("terminate called", "FATAL", "Aborted", "Fatal Python error")

# background work that keeps a thread inside JAX far longer than any wait at exit: four calls of 12 s of
# compiled loops each, queued by the API under test, and the main thread leaves at once
BUSY = textwrap.dedent("""
    import sys, time
    import jax, jax.numpy as jnp
    import vilab_ui as ui

    @jax.jit
    def _step(x):
        return jax.lax.fori_loop(0, 200, lambda i, x: jnp.sin(x) @ jnp.cos(x.T) / x.shape[0], x)

    def busy(seconds):
        x = jnp.ones((200, 200))
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            x = _step(x).block_until_ready()
        return float(x[0, 0])

    busy(0.1)  # compiled before the threads start
    assert ui.prefetch(busy, (12.0,), (12.1,)) == 2
    assert ui.prefetch(busy, (12.2,), (12.3,)) == 2  # two threads
    time.sleep(1.0)  # the first call has started
    print("leaving", flush=True)
""")


def _run(code: str, *args: str, timeout: float, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, **env))


def _clean(out: subprocess.CompletedProcess) -> None:
    assert out.returncode == 0 and not any(w in out.stderr for w in ABORT), (out.returncode, out.stderr[-2000:])


def test_exit_while_prefetch_threads_are_busy_is_clean():
    out = _run(BUSY, timeout=300)
    assert "leaving" in out.stdout, out.stderr[-2000:]
    _clean(out)


ALL_PAGES = textwrap.dedent("""
    import glob
    from streamlit.testing.v1 import AppTest
    import vilab_ui as ui

    pages = sorted(glob.glob("pages/*.py"))
    for page in pages + ["pages/20_Trajectories.py"]:  # the last one again: served from its caches
        at = AppTest.from_file(page, default_timeout=600)
        at.run()
        assert not at.exception, (page, at.exception)
    print(f"ran {len(pages)} pages", flush=True)
""")


@pytest.mark.slow
def test_every_page_in_one_process_then_exit_is_clean():
    out = _run(ALL_PAGES, timeout=1800)
    assert "ran 13 pages" in out.stdout, out.stderr[-3000:]
    _clean(out)
