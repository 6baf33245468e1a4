"""vilab: the Streamlit entry point. Registers the pages and the global sidebar; nothing else."""

from pathlib import Path

import streamlit as st

import vilab
import vilab_ui as ui
from vilab_ui import glossary

st.set_page_config(page_title="vilab: natural-gradient VI lab", layout="wide")

PAGES = Path(__file__).resolve().parent / "pages"


def _title(path: Path) -> str:
    """'10_Vector_fields.py' -> 'Vector fields'."""
    stem = path.stem
    head, _, rest = stem.partition("_")
    return (rest if head.isdigit() and rest else stem).replace("_", " ")


files = sorted(p for p in PAGES.glob("*.py") if not p.name.startswith("_"))
nav = st.navigation([st.Page(str(p), title=_title(p), default=(i == 0)) for i, p in enumerate(files)])

ui.scope("")  # the sidebar's widgets belong to every page
with st.sidebar:
    ui.number("Random seed", "seed", 0, 2**31 - 1, 0, help="Seeds every Monte Carlo estimate and stochastic run.")
    ui.toggle("Lecture mode", "lecture", False,
              help="Text and figures sized for a projector: every text at least 18 px.")
    st.caption("Every control is stored in the URL: copy it to share this exact view.")

glossary.sidebar_glossary()
ui.apply_mode()

# a server explored for hours compiles many XLA programs: free them before the kernel's limit
vilab.clear_caches_if_crowded()
nav.run()
