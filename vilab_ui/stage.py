"""The page's furniture and its two modes: title, layout, the "what to notice" line, explanations, and
the CSS of normal and lecture mode.
"""

from __future__ import annotations

from typing import Any, Callable

import streamlit as st
from vilab_ui.widgets import _parse_bool, _prime, lecture, scope


def _leave_pages_directory_mode() -> None:
    """Make a page URL opened first on a fresh server go through app.py's st.navigation.

    Streamlit treats an app whose script sits beside a ``pages/`` folder as a v1 multipage app
    until some session runs ``st.navigation``: a shared link such as ``/Divergences?rho=0.9``
    opened first after a restart would run the page alone, without app.py's sidebar (seed,
    lecture mode) and with the v1 page list. Clearing that flag and rerunning hands the request
    to app.py, which resolves the same URL path through st.navigation.
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # a future Streamlit without the v1 mode
        return
    if getattr(PagesManager, "uses_pages_directory", False):
        PagesManager.uses_pages_directory = False
        st.rerun()


def page(title: str, intro: str | None = None) -> None:
    """Title and a one-line introduction (call first on every page).

    Keep ``intro`` to one sentence: the page's main figure must start on the first screen. The longer
    story and the equations go under the figure, in :func:`explain`."""
    _leave_pages_directory_mode()
    scope(title)
    if lecture():  # the stage: a one-line title, the introduction behind its "?" (the lecturer says it)
        st.title(title, help=intro or None)
        return
    st.title(title)
    if intro:
        st.markdown(intro)


def link(page_file: str, label: str) -> None:
    """A link to another page of the lab (``page_file`` like "pages/10_Vector_fields.py").

    Inside the app it is Streamlit's page link (same tab, keeps the session); a page run on its own
    (tests, ``streamlit run pages/...``) has no page registry, and gets a plain link instead."""
    from streamlit.errors import StreamlitAPIException

    try:
        st.page_link(page_file, label=label)
    except StreamlitAPIException:
        stem = page_file.rsplit("/", 1)[-1].removesuffix(".py")
        head, _, rest = stem.partition("_")
        st.markdown(f"[{label}](/{rest if head.isdigit() and rest else stem})")


STAGE = "vilab_stage"  # the key prefix of the containers :func:`columns` makes (the stage CSS finds them by it)
_STAGE_COUNT = "_vilab_stage_count"


def columns(controls: float = 1.0, figure: float = 3.0):
    """(controls column, figure column): the layout that keeps a page's main figure on the first
    screen with its controls (the step sizes first) beside it.

    In lecture mode, where the figure column holds the page's main figure, this is the stage: the figure
    column takes the whole width and the controls column becomes a drawer at the right edge of the screen
    (a handle; it opens while the pointer is over it or a control in it has the focus). See _LECTURE_CSS."""
    n = st.session_state.get(_STAGE_COUNT, 0)
    st.session_state[_STAGE_COUNT] = n + 1
    return st.container(key=f"{STAGE}_{n}").columns([controls, figure], gap="medium")


def notice(text: str) -> None:
    """The "what to notice" line under a figure: what it shows and why, in a student's words (in lecture
    mode, the figure's caption: a compact box right under it, on the first screen)."""
    st.info(f"**What to notice.** {text}")


EXPLAIN_PREFIX = "how_"  # ?how_<name>=1 opens the explanation drawn by the function <name> (see explain)


def explain(label: str = "How it works: the idea and the equations", key: str | None = None):
    """A closed expander under the figure for the longer explanation and the equations, drawn only when open.

    Use it as a decorator on the function that writes the explanation; the function runs at once, inside the
    expander, while the expander is open, and not at all while it is closed (a student opening it reruns the
    page; its cached results make that quick)::

        @ui.explain()
        def equations():
            st.markdown("...")
            st.latex("...")

    A closed explanation costs neither the server nor the browser anything: on a first load the browser does not
    lay out its text and formulas (0.07-0.17 s of a 3 s load on four pages here). Its state is in the URL as
    ``?how_<function name>=1`` (``key`` overrides the name), so a shared link can open it; a closed one leaves no
    parameter."""

    def draw(fn: Callable[[], Any]):
        k = key or EXPLAIN_PREFIX + fn.__name__
        _prime(k, False, _parse_bool, bool, signature=("explain", label))
        box = st.expander(label, key=k, on_change="rerun")
        if st.session_state.get(k):
            st.query_params[k] = "1"
            with box:
                fn()
        elif k in st.query_params:
            del st.query_params[k]
        return fn

    return draw


def table(data, **kw):
    """A table: an interactive st.dataframe on screen, a plain st.table (large text) in lecture mode."""
    if lecture():
        kw.pop("hide_index", None)
        kw.pop("use_container_width", None)
        kw.pop("width", None)
        kw.pop("height", None)
        return st.table(data)
    return st.dataframe(data, **kw)


def more(label: str = "More settings"):
    """An expander for advanced settings, closed by default (never put the step size in it)."""
    return st.expander(label, expanded=False)


# ---------------------------------------------------------------------------------------------
# Normal and lecture mode

_BASE_CSS = """
.block-container { padding-top: 1.75rem; padding-bottom: 2rem; }
[data-testid="stHeader"] { background: transparent; height: 2.5rem; }
[data-testid="stPageLink"] p, [data-testid="stPageLink"] span { white-space: normal !important; overflow: visible !important;
    text-overflow: clip !important; }
[data-testid="stMultiSelectTagsContainer"] { flex-wrap: wrap !important; overflow: visible !important;
    height: auto !important; max-height: none !important; }
[data-testid="stMultiSelect"] div:has(> [data-testid="stMultiSelectTagsContainer"]) { height: auto !important;
    max-height: none !important; }
h1 { padding-top: 0.25rem; padding-bottom: 0.25rem; }
[data-testid="stPlotlyChart"] { margin-bottom: 0; }
.vilab-chart { width: 100%; }
.vilab-chart:fullscreen { background: #fff; }
"""

# Lecture mode: the root font size grows, so every rem-sized text grows with it (titles never shrink);
# the small texts (captions, labels, help, chips, sidebar) are raised to >= 18 px; nothing is clipped.
_LECTURE_CSS = """
html { font-size: 20px; }
.block-container { max-width: 100%; padding-left: 2rem; padding-right: 2rem; }
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p,
[data-testid="stWidgetLabel"] p, [data-testid="stWidgetLabel"] label, [data-testid="stMarkdownContainer"] p,
[data-testid="stMarkdownContainer"] li, [data-testid="stSidebarNav"] span, [data-testid="stExpander"] summary p,
[data-baseweb="tag"] span, [data-baseweb="select"] div, [data-testid="stTickBarMin"], [data-testid="stTickBarMax"],
[data-testid="stSliderThumbValue"], [data-testid="stTable"] td, [data-testid="stTable"] th, button p,
[data-testid="stAlertContentInfo"] p, [data-testid="stTab"] p, [data-testid="stPageLink"] p, input, textarea {
    font-size: 0.95rem !important;
}
button p, [data-baseweb="tag"] span, [data-testid="stSidebarNav"] span, [data-testid="stWidgetLabel"] p {
    white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
}
[data-baseweb="tag"] { max-width: none !important; height: auto !important; }
/* many tabs: whole labels on rows that wrap (a sliding underline cannot follow a wrapped row: the open tab is
   underlined itself) */
[data-testid="stTabs"] [role="tablist"] { flex-wrap: wrap !important; row-gap: 0; overflow: visible !important;
    width: 100% !important; }
[data-testid="stTab"] { height: 2rem !important; }
[data-testid="stTabs"] [data-orientation="horizontal"] > button { display: none !important; }
[data-testid="stTab"] p { white-space: nowrap !important; overflow: visible !important; text-overflow: clip !important; }
[data-testid="stTab"][aria-selected="true"] { box-shadow: inset 0 -3px 0 currentColor; }
"""


# Lecture mode is a stage: the page's main figure fills the screen and grows with it. The one-line title, the
# figure (its height from --vilab-chart-height, which vilab's chart element honours), its "what to notice" caption
# under it; the controls in a drawer at the right edge (its handle, 2.4rem wide, is all that shows until the
# pointer is over it or one of its controls has the focus: the Tab key reaches them); "Download figure" in the top
# bar; room on the right for a presented deck's panel (--vilab-deck-panel, set by vilab_ui.decks).
# The stage is the container of ui.columns that holds the main figure (the innermost one, when they nest); a page
# whose main element is a table (Lecture decks) keeps its two columns.
_STAGE = (f'[class*="st-key-{STAGE}_"]:has(.st-key-main_figure)'
          f':not(:has([class*="st-key-{STAGE}_"] .st-key-main_figure))'
          ':not(:has(.st-key-main_figure [data-testid="stTable"], .st-key-main_figure [data-testid="stDataFrame"]))'
          ' > [data-testid="stLayoutWrapper"] > [data-testid="stHorizontalBlock"]')
_DRAWER = _STAGE + ' > [data-testid="stColumn"]:first-child'
_STAGE_CSS = """
:root { --vilab-handle: 2.4rem; --vilab-drawer: min(22rem, 45vw); }
[data-testid="stMainBlockContainer"] { padding-top: 0.45rem; padding-bottom: 1rem; padding-left: 1.25rem;
    padding-right: calc(var(--vilab-handle) + 0.75rem + var(--vilab-deck-panel, 0px)); }
[data-testid="stMain"] [data-testid="stVerticalBlock"] { gap: 0.6rem; }
/* the one-line title, right of the button that opens the sidebar */
h1 { font-size: 1.8rem !important; line-height: 1.25 !important; padding: 0 0 0 2.4rem !important; margin: 0 !important; }
[data-testid="stHeading"]:has(h1), [data-testid="stHeading"]:has(h1) [data-testid="stMarkdownContainer"] {
    margin: 0 !important; }
[data-testid="stHeader"] { height: 2.6rem; }
/* the figure: the screen's height less the title line above and the caption under it */
.st-key-main_figure { --vilab-chart-height: calc(100vh - var(--vilab-above, 3.3rem) - 5.6rem); }
[data-testid="stVerticalBlock"]:has(> * > [class*="_buttons"] [data-testid="stBaseButton-primary"]) .st-key-main_figure {
    --vilab-above: 6.6rem; }  /* a live view's Play row stands above the figure */
/* "Download figure" of the main figure in the top bar, left of the menu */
.st-key-main_figure [class*="st-key-dl_"] { position: fixed; top: 0.3rem; right: 3.4rem; width: auto !important;
    z-index: 999991; }
/* the caption: a compact box */
[data-testid="stMain"] [data-testid="stAlertContainer"] { padding: 0.3rem 0.7rem; }
STAGE { flex-wrap: nowrap; }
STAGE > [data-testid="stColumn"]:last-child { width: 100% !important; flex: 1 1 100% !important; min-width: 0; }
DRAWER { position: fixed !important; top: 3rem; bottom: 0.3rem; right: var(--vilab-deck-panel, 0px);
    width: var(--vilab-drawer) !important; min-width: 0 !important; flex: none !important; z-index: 999980;
    background: #fff; border-left: 1px solid #d0d4dc; box-shadow: -0.3rem 0 0.8rem rgba(0, 0, 0, 0.12);
    padding: 0 0 0 var(--vilab-handle) !important; transform: translateX(calc(100% - var(--vilab-handle)));
    transition: transform 0.15s ease-out; }
DRAWER:hover, DRAWER:focus-within { transform: none; }
DRAWER::before { content: "Controls"; position: absolute; left: 0; top: 0; bottom: 0; width: var(--vilab-handle);
    display: flex; align-items: center; justify-content: center; writing-mode: vertical-rl; transform: rotate(180deg);
    font-size: 0.95rem; font-weight: 600; color: #31333f; background: #eef0f4; letter-spacing: 0.05em; }
DRAWER > [data-testid="stVerticalBlock"] { height: 100%; overflow-y: auto; overscroll-behavior: contain;
    padding: 0.6rem 0.9rem; }
""".replace("DRAWER", _DRAWER).replace("STAGE", _STAGE)


def apply_mode() -> None:
    """The page CSS of the current mode (app.py calls it once per run, before the page)."""
    st.session_state[_STAGE_COUNT] = 0  # ui.columns numbers its containers from 0 in every run
    css = _BASE_CSS + (_LECTURE_CSS + _STAGE_CSS if lecture() else "")
    st.markdown(f"<style>{css}</style>", unsafe_allow_html=True)
