"""vilab: the Streamlit entry point. Registers the pages and the global sidebar; nothing else."""

from pathlib import Path

import streamlit as st

import vilab
import vilab_ui as ui
from vilab.core.compile_cache import enable_for_server
from vilab_ui import deck_export, decks, glossary

# lecture mode is a stage: the sidebar starts closed (its button at the top left, or the keyboard, opens it)
st.set_page_config(page_title="vilab: natural-gradient VI lab", layout="wide",
                   initial_sidebar_state="collapsed" if ui.lecture() else "auto")


@st.cache_resource(show_spinner=False)
def _compile_cache() -> str | None:
    """Compiled XLA programs go to a folder on disk (VILAB_JAX_CACHE, else ~/.cache/vilab/jax): a restarted
    server, and every replica of `vilab hall`, loads them instead of compiling again. Once per process."""
    folder = enable_for_server(lambda text: print(text, flush=True))  # an unwritable folder is reported
    return None if folder is None else str(folder)


_compile_cache()

PAGES = Path(__file__).resolve().parent / "pages"
MAPS_FRACTION = 0.25  # of vm.max_map_count: see vilab.clear_caches_if_crowded below


def _title(path: Path) -> str:
    """'10_Vector_fields.py' -> 'Vector fields'."""
    stem = path.stem
    head, _, rest = stem.partition("_")
    return (rest if head.isdigit() and rest else stem).replace("_", " ")


files = sorted(p for p in PAGES.glob("*.py") if not p.name.startswith("_"))
pages = {p.stem: st.Page(str(p), title=_title(p), default=(i == 0)) for i, p in enumerate(files)}
# while a deck is presented its navigator leads the sidebar, at the top, in place of the page menu
nav = st.navigation(list(pages.values()), position="hidden" if decks.presenting() else "sidebar")
here = next((stem for stem, p in pages.items() if p is nav), files[0].stem)  # the page this run shows
DECKS_PAGE = next((f"pages/{p.name}" for p in files if p.stem.endswith("_Lecture_decks")), None)

ui.scope("")  # the sidebar's widgets belong to every page
decks.sync_from_url(here)  # a deck link (?deck=...&dv=k) opens the deck at its view
decks.navigator(here)  # while a deck is presented: the question, the answer, Back / Next (keys B / F); places itself
with st.sidebar:
    ui.number("Random seed", "seed", 0, 2**31 - 1, 0, help="Seeds every Monte Carlo estimate and stochastic run.")
    ui.toggle("Lecture mode", "lecture", False,
              help="Text and figures sized for a projector: every text at least 18 px.")
    st.caption("Every control is stored in the URL: copy it to share this exact view.")
    decks.builder(here, DECKS_PAGE,  # "Add this view to the deck", and the deck's downloads
                  downloads=lambda deck: deck_export.panel(deck, key="deck_export_side", columns=False))
decks.publish()  # the open deck and its position stay in the URL

glossary.sidebar_glossary()
ui.apply_mode()

# a server explored for hours compiles many XLA programs (each holds memory mappings, ~90 kB of RSS
# apiece): free them at a quarter of the kernel's limit on mappings (~16,000 by default, ~1.7 GB RSS),
# since vilab's bounded program caches together can hold several times that limit. Objects the pages
# keep in st.cache_resource (targets, models) own programs too: dropped only if still crowded.
vilab.clear_caches_if_crowded(MAPS_FRACTION, also=[st.cache_resource.clear])
nav.run()
