"""A process that ran every page exits cleanly (issue 41): no thread of vilab_ui is left inside a compiled JAX
call when the interpreter finalizes (which aborts it: "terminate called after throwing an instance of '' /
FATAL: exception not rethrown", status 134). vilab_ui starts no background thread of its own any more."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ABORT = ("terminate called", "FATAL", "Aborted", "Fatal Python error")

def _run(code: str, *args: str, timeout: float, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, **env))


def _clean(out: subprocess.CompletedProcess) -> None:
    assert out.returncode == 0 and not any(w in out.stderr for w in ABORT), (out.returncode, out.stderr[-2000:])


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
