"""vilab_ui.serve, `vilab app`'s server: it starts with the modules its pages import already imported."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.browser.layout import _free_port
from vilab.cli import command
from vilab_ui import serve

ROOT = Path(__file__).resolve().parents[1]


def _app(tmp_path: Path) -> Path:
    (tmp_path / "pages").mkdir()
    (tmp_path / "app.py").write_text("from __future__ import annotations\nimport json\nimport streamlit as st\n"
                                     "st.write('hello')\n")
    (tmp_path / "pages" / "10_A.py").write_text(
        "import email.mime.text\nfrom xml.dom import minidom, Node\nfrom . import sibling\nfrom json import *\n"
        "def f():\n    import tabnanny  # inside a function: imported when called, not at the top\n")
    (tmp_path / "pages" / "20_B.py").write_text("import no_such_module_for_vilab\nimport json\n")
    (tmp_path / "pages" / "30_broken.py").write_text("def (:\n")  # a page with a syntax error is skipped
    return tmp_path / "app.py"


def test_page_modules_lists_every_top_level_import_of_app_and_pages_once(tmp_path):
    mods = serve.page_modules(_app(tmp_path))
    assert mods == ["json", "streamlit", "email.mime.text", "xml.dom", "xml.dom.minidom", "xml.dom.Node",
                    "no_such_module_for_vilab"]


def test_the_lab_pages_modules_include_its_heavy_libraries():
    mods = serve.page_modules()
    for name in ("streamlit", "vilab_ui", "numpy", "pandas", "plotly.graph_objects"):
        assert name in mods
    assert not [m for m in mods if m.startswith(".")]


def test_preload_imports_modules_and_reports_only_what_cannot_be_imported(tmp_path):
    """In a fresh interpreter: submodules and modules are imported, an imported name that is not a module is
    skipped quietly, a missing module is reported, and nothing is printed."""
    app = _app(tmp_path)
    code = ("import sys; from vilab_ui import serve\n"
            f"failed = serve.preload(serve.page_modules({str(app)!r}))\n"
            "print(failed, all(m in sys.modules for m in ('email.mime.text', 'xml.dom.minidom', 'json')),"
            " 'tabnanny' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                         check=True).stdout.strip().splitlines()
    assert out == ["['no_such_module_for_vilab'] True False"]


def test_command_runs_this_module_with_streamlit_run_arguments():
    cmd = command(None, "--server.port", "1")
    assert cmd[:4] == [sys.executable, "-m", "vilab_ui.serve", "run"]
    assert cmd[4] == str(ROOT / "app.py") and cmd[5:] == ["--server.port", "1"]


def test_the_server_answers_and_says_when_the_pages_libraries_are_imported(tmp_path):
    """The server answers once it has imported; JAX's persistent cache is on before the first import, so a program
    that a page's module compiles as it is imported is written to the cache folder (JAX decides at its first
    compilation whether it uses the cache: switched on later, the cache would stay unused all day)."""
    app = _app(tmp_path)
    (tmp_path / "compiles_on_import.py").write_text(
        "import jax, jax.numpy as jnp\nY = jax.jit(lambda x: jnp.sin(x) * 2.0 + 1.0)(jnp.ones(3))\n")
    (tmp_path / "pages" / "40_C.py").write_text("import compiles_on_import\n")
    port = _free_port()
    log = tmp_path / "server.log"
    env = dict(os.environ, VILAB_JAX_CACHE=str(tmp_path / "jax"), JAX_PLATFORMS="cpu")
    with open(log, "w") as out:
        proc = subprocess.Popen(command(app, "--server.headless", "true", "--server.port", str(port),
                                              "--server.address", "127.0.0.1", "--browser.gatherUsageStats",
                                              "false"), cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        deadline, healthy = time.time() + 90, False
        while time.time() < deadline and not (healthy and "imported" in log.read_text()):
            assert proc.poll() is None, log.read_text()
            try:
                healthy = healthy or urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                                            timeout=2).read() == b"ok"
            except OSError:
                pass
            time.sleep(0.3)
        text = log.read_text()
        assert healthy, text
        assert "the pages' libraries are imported" in text and "not importable: no_such_module_for_vilab" in text
        assert list((tmp_path / "jax").glob("*-cache")), "the program compiled on import was not kept on disk"
    finally:
        proc.terminate()
        proc.wait(15)


def test_warm_first_run_does_the_first_visitors_once_per_process_work():
    """In a fresh interpreter: after warm_first_run, the modules a first page run imported lazily are
    imported, Streamlit's check for a script not started by `streamlit run` (inspect.stack(), 0.2 s) is
    marked done, and the export menu's search for Chromium is remembered; nothing fails."""
    code = ("import sys; from vilab_ui import serve\n"
            "failed = serve.warm_first_run()\n"
            "from streamlit import delta_generator\n"
            "from vilab_ui import export\n"
            "print(failed, all(m in sys.modules for m in ('plotly.offline', 'streamlit.emojis', 'vilab_ui.export')),"
            " delta_generator._use_warning_has_been_displayed, bool(export._AVAILABLE))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                         check=True).stdout.strip().splitlines()
    assert out[-1] == "[] True True True"
