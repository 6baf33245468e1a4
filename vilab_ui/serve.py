"""Start the lab's Streamlit server with JAX's compilation cache switched on and the disk folder of the pages'
results tidied.

``python -m vilab_ui.serve run app.py [streamlit options]`` is ``streamlit run app.py ...`` preceded by two
steps, before the server accepts its first visitor:

* JAX's persistent compilation cache is switched on (:func:`vilab.core.compile_cache.enable_for_server`), before
  anything is compiled: JAX decides once per process, at its first compilation, whether it uses it;
* the code version of the pages' results is computed and Streamlit's folder of results kept on disk is
  tidied and bounded (:func:`vilab_ui.caching.open_for_server`; the log says where it is).

With ``VILAB_PLAIN_UI=1`` it is a plain ``streamlit run`` (docs/ui-mechanisms.md). ``vilab app``, ``vilab
hall`` and the browser tests start their servers this way (``vilab.cli.command``; this module lives in the
app's package, as it imports Streamlit, which the computation package ``vilab`` never does).
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """``python -m vilab_ui.serve run app.py [options]``: the two steps above, then Streamlit's command line
    with the same arguments."""
    argv = list(sys.argv[1:] if argv is None else argv)
    from vilab.core.compile_cache import enable_for_server, plain_ui

    if argv[:1] == ["run"] and not plain_ui():
        enable_for_server(lambda text: print(text, flush=True))
        from vilab_ui import caching

        print(caching.open_for_server(), flush=True)
    from streamlit.web import cli

    sys.argv = ["streamlit", *argv]
    return cli.main(prog_name="streamlit")


if __name__ == "__main__":
    sys.exit(main())
