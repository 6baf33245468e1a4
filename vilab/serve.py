"""Start the lab's Streamlit server with the pages' libraries already imported.

``python -m vilab.serve run app.py [streamlit options]`` is ``streamlit run app.py ...`` plus one
background thread, started with the server, that imports every module that app.py and the pages in
pages/ import (SciPy, pandas, Plotly, Streamlit's elements, vilab's plots and
algorithms, the app's own package...) and starts JAX's CPU backend. A
plain ``streamlit run`` imports them in the first visitor's run: on two cores a second or more of the
first page load after a restart, before any computation. Here the server's start-up and the imports
overlap, and a visitor arriving meanwhile waits only for what is left (Python's import lock).

``vilab app``, ``vilab hall`` and the browser tests start their servers this way (:func:`command`).
A module that fails to import is skipped: the page that needs it reports the error as it always has.
"""

from __future__ import annotations

import ast
import importlib
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["command", "page_modules", "preload", "main"]


def command(app: str | Path | None = None, *options: str) -> list[str]:
    """The command that serves ``app`` (default: the checkout's app.py) with ``options`` (Streamlit's
    ``--server.port 8501``...): ``[python, -m, vilab.serve, run, app, *options]``."""
    return [sys.executable, "-m", "vilab.serve", "run", str(app or ROOT / "app.py"), *options]


def page_modules(app: str | Path | None = None) -> list[str]:
    """The modules imported at the top level of ``app`` and of every page beside it (pages/*.py), in
    order of first appearance: ``import a.b`` gives ``a.b``, ``from a import b`` gives ``a`` and
    ``a.b`` (``b`` may be a submodule). Relative imports are left out."""
    app = Path(app or ROOT / "app.py")
    files = [app, *sorted((app.parent / "pages").glob("*.py"))]
    seen: dict[str, None] = {}
    for f in files:
        try:
            tree = ast.parse(f.read_text(encoding="utf-8"), str(f))
        except (OSError, SyntaxError):
            continue  # the page reports its own error when it runs
        for node in tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    seen.setdefault(alias.name)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                if node.module == "__future__":
                    continue
                seen.setdefault(node.module)
                for alias in node.names:
                    if alias.name != "*":
                        seen.setdefault(f"{node.module}.{alias.name}")
    return list(seen)


def preload(modules: list[str], log=None) -> list[str]:
    """Import ``modules`` (a name that is an attribute, not a submodule, is skipped quietly) and start
    JAX's CPU backend if JAX is among them. Returns the modules that failed to import."""
    failed = []
    for name in modules:
        parent, _, last = name.rpartition(".")
        if parent and parent in sys.modules and hasattr(sys.modules[parent], last) \
                and not isinstance(getattr(sys.modules[parent], last), type(sys)):
            continue  # `from a import function`: a is imported, the name is not a module
        try:
            importlib.import_module(name)
        except ImportError:
            if not parent:
                failed.append(name)
        except Exception:  # noqa: BLE001 - a broken module is the page's to report, not the server's
            failed.append(name)
    if "jax" in sys.modules:
        try:
            sys.modules["jax"].devices()  # the CPU client: created once per process, on first use
        except Exception:  # noqa: BLE001
            pass
    if log is not None:
        log(failed)
    return failed


def main(argv: list[str] | None = None) -> int:
    """``python -m vilab.serve run app.py [options]``: Streamlit's command line, with :func:`preload`
    of app.py's and its pages' modules running beside the server's start-up."""
    argv = list(sys.argv[1:] if argv is None else argv)
    app = next((a for a in argv[1:] if a.endswith(".py")), None) if argv[:1] == ["run"] else None
    if app is not None:
        t0 = time.perf_counter()
        # before any import that might compile: JAX decides at its first compilation whether it uses the cache
        from vilab.compile_cache import enable_for_server

        enable_for_server(lambda text: print(text, flush=True))

        def _log(failed):
            took = time.perf_counter() - t0
            print(f"vilab: the pages' libraries are imported ({took:.1f} s)"
                  + (f"; not importable: {', '.join(failed)}" if failed else ""), flush=True)

        threading.Thread(target=preload, args=(page_modules(app), _log), name="vilab-preload",
                         daemon=True).start()
    from streamlit.web import cli

    sys.argv = ["streamlit", *argv]
    return cli.main(prog_name="streamlit")


if __name__ == "__main__":
    sys.exit(main())
