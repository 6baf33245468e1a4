"""vilab_ui.serve, `vilab app`'s server: JAX's compilation cache is on before anything compiles and the disk folder
of the pages' results is tidied before the first visitor; VILAB_PLAIN_UI=1 makes it a plain `streamlit run`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.browser.layout import _free_port
from vilab.cli import command

ROOT = Path(__file__).resolve().parents[1]

# serve.main with Streamlit's command line replaced by a "page" that compiles one program and says what it found
MAIN = """
import sys
from streamlit.web import cli

def page(prog_name):
    import jax, jax.numpy as jnp
    from vilab.core import compile_cache
    jax.jit(lambda x: jnp.sin(x) * 3.0 + 1.0)(jnp.ones(3)).block_until_ready()
    print("argv", sys.argv[1:], "cache", compile_cache.enabled_dir(), flush=True)
    return 0

cli.main = page
from vilab_ui import serve
sys.exit(serve.main(["run", "app.py", "--server.port", "1"]))
"""


def _main(tmp_path: Path, **env) -> subprocess.CompletedProcess:
    env = {**{k: v for k, v in os.environ.items() if k != "VILAB_PLAIN_UI"}, "VILAB_JAX_CACHE": str(tmp_path / "jax"),
           "HOME": str(tmp_path / "home"), "JAX_PLATFORMS": "cpu", "VILAB_RESULT_CACHE": "on", **env}
    return subprocess.run([sys.executable, "-c", MAIN], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_command_runs_this_module_with_streamlit_run_arguments():
    cmd = command(None, "--server.port", "1")
    assert cmd[:4] == [sys.executable, "-m", "vilab_ui.serve", "run"]
    assert cmd[4] == str(ROOT / "app.py") and cmd[5:] == ["--server.port", "1"]


def test_the_compilation_cache_is_on_before_the_first_program_and_the_log_says_where_results_are(tmp_path):
    out = _main(tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"kept in {tmp_path / 'home' / '.streamlit' / 'cache'}" in out.stdout
    assert "argv ['run', 'app.py', '--server.port', '1']" in out.stdout and str(tmp_path / "jax") in out.stdout
    assert list((tmp_path / "jax").glob("*-cache")), "the page's program was not kept on disk"


def test_the_plain_switch_starts_a_plain_streamlit_run(tmp_path):
    out = _main(tmp_path, VILAB_PLAIN_UI="1")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "cache None" in out.stdout and "kept in" not in out.stdout
    assert not list((tmp_path / "jax").glob("*-cache"))


def test_the_server_answers(tmp_path):
    (tmp_path / "app.py").write_text("import streamlit as st\nst.write('hello')\n")
    port = _free_port()
    log = tmp_path / "server.log"
    env = dict(os.environ, VILAB_JAX_CACHE=str(tmp_path / "jax"), HOME=str(tmp_path / "home"), JAX_PLATFORMS="cpu")
    with open(log, "w") as out:
        proc = subprocess.Popen(command(tmp_path / "app.py", "--server.headless", "true", "--server.port", str(port),
                                        "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"),
                                cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        deadline, healthy = time.time() + 90, False
        while time.time() < deadline and not healthy:
            assert proc.poll() is None, log.read_text()
            try:
                healthy = urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read() == b"ok"
            except OSError:
                time.sleep(0.3)
        assert healthy, log.read_text()
    finally:
        proc.terminate()
        proc.wait(15)
