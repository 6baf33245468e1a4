"""Start the lab's Streamlit server with JAX's cache switched on and the pages' libraries imported.

``python -m vilab_ui.serve run app.py [streamlit options]`` is ``streamlit run app.py ...`` preceded by three
steps, before the server accepts its first visitor:

* JAX's persistent compilation cache is switched on (:func:`vilab.compile_cache.enable_for_server`),
  before anything is compiled: JAX decides once per process, at its first compilation, whether it uses it;
* every module that app.py and the pages in pages/ import at their top level is imported (SciPy, pandas,
  Plotly, Streamlit's elements, vilab and its plots, the app's own package...), and JAX's CPU backend is
  started. A plain ``streamlit run`` does this in its first visitor's run: on two cores, 1-2 s of the
  first page load after a restart, before any computation;
* what the first visitor's run would otherwise do once per process is done (:func:`warm_first_run`: the
  modules the pages import inside functions, the export menu's search for Chromium, a check of Streamlit's
  that reads the source of every frame on the stack);
* the store of the pages' results on disk is opened (:mod:`vilab_ui.result_cache`; the log says where).

The server starts about 2 s later (the imports come first, not beside the server's own start-up: two
threads importing the same packages at once can meet in a circular import). ``vilab app``, ``vilab hall``
and the browser tests start their servers this way (``vilab.cli.command``; this module lives in the
app's package, as it imports Streamlit, which the computation package ``vilab`` never does). A module that
fails to import is reported and skipped: the page that needs it shows the error as it always has.
"""

from __future__ import annotations

import ast
import importlib
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["page_modules", "preload", "main", "warm_first_run"]


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


def preload(modules: list[str]) -> list[str]:
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
    return failed


def warm_first_run() -> list[str]:
    """Do before the server starts what a restarted server's first page run does once per process (found
    with py-spy in that run; server CPU in a restarted server's first load 0.66-0.84 -> 0.38-0.50 s):

    * import the modules the pages and Plotly import inside functions (kaleido, Plotly's offline and colour
      modules, Streamlit's emoji table, the export menu, the MLIR modules JAX imports at its first lowering);
    * look for the Chromium that draws PNG / SVG / GIF exports (the answer is kept five minutes);
    * mark as done the check by which Streamlit's first element warns a script not started by ``streamlit
      run``: it calls ``inspect.stack()``, which reads the source of every frame (0.2 s), and this process
      is ``streamlit run``.

    Best effort: a step that fails is skipped (the first run does it, as before), and its name returned."""
    def plotly_figure():
        import plotly.graph_objects as go

        go.Figure(go.Scatter(x=[0, 1], y=[0, 1])).to_dict()

    def streamlit_once():
        from streamlit import delta_generator, string_util

        string_util.extract_leading_emoji("vilab σ")  # a text that is not ASCII: the emoji table and its pattern
        if hasattr(delta_generator, "_use_warning_has_been_displayed"):
            delta_generator._use_warning_has_been_displayed = True

    def export_menu():
        from vilab_ui import export

        export.render_available()

    def jax_lowering():
        import jax
        import jax.numpy as jnp

        jax.jit(lambda x: x * 2.0)(jnp.eye(2) + jnp.zeros((2, 2))).block_until_ready()

    failed = []
    for step in (plotly_figure, streamlit_once, export_menu, jax_lowering):
        try:
            step()
        except Exception:  # noqa: BLE001 - the first run does it then, as it always has
            failed.append(step.__name__)
    return failed


def main(argv: list[str] | None = None) -> int:
    """``python -m vilab_ui.serve run app.py [options]``: the cache switched on and :func:`preload` of app.py's and
    its pages' modules, then Streamlit's command line with the same arguments."""
    argv = list(sys.argv[1:] if argv is None else argv)
    app = next((a for a in argv[1:] if a.endswith(".py")), None) if argv[:1] == ["run"] else None
    if app is not None:
        from vilab.compile_cache import enable_for_server

        t0 = time.perf_counter()
        enable_for_server(lambda text: print(text, flush=True))
        failed, skipped = preload(page_modules(app)), warm_first_run()
        print(f"vilab: the pages' libraries are imported ({time.perf_counter() - t0:.1f} s)"
              + (f"; not importable: {', '.join(failed)}" if failed else "")
              + (f"; steps of the first run not done before it: {', '.join(skipped)}" if skipped else ""), flush=True)
        from vilab_ui import result_cache

        print(result_cache.open_for_server(), flush=True)
    from streamlit.web import cli

    sys.argv = ["streamlit", *argv]
    return cli.main(prog_name="streamlit")


if __name__ == "__main__":
    sys.exit(main())
