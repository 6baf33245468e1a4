"""Lecture decks: open a shipped deck or a deck file, edit the current deck, save it as JSON or share it as a link."""

from urllib.parse import urlsplit

import pandas as pd
import streamlit as st

import vilab_ui as ui
from vilab_ui import deck_export, decks

ui.page(
    "Lecture decks",
    "A deck is a list of saved views, each with a question for the class and its answer: open one here, "
    "then step through it from the sidebar (keys F and B).",
)


@ui.cache_resource(ttl=600)
def _shipped():
    """The decks in assets/decks (checked like any deck file)."""
    return decks.shipped()


def _table(df: pd.DataFrame) -> None:
    """A small table whose long texts wrap (st.dataframe would cut them): st.table, which renders Markdown, so
    every cell, a deck's texts included, is quoted with ui.plain."""
    st.table(df.map(ui.plain).rename(index=ui.plain, columns=ui.plain))


def _views_table(deck) -> pd.DataFrame:
    return pd.DataFrame({
        "Page": [v.title for v in deck.views],
        "Question": [v.prompt or "(none)" for v in deck.views],
        "Answer": [v.reveal or "(none)" for v in deck.views],
    }, index=[str(i) for i in range(1, len(deck) + 1)])


def _open(deck, at: int = 0) -> None:
    decks.set_current(deck, at)
    decks.go(at)


shipped = []
with ui.guard("shipped decks"):
    shipped = _shipped()

ctl, area = ui.columns(1.1, 2.6)
with ctl:
    st.markdown("**Present a shipped deck**")
    for stem, deck in shipped:
        if st.button(f"{deck.title} ({len(deck)} views)", key=f"open_{stem}", width="stretch",
                     icon=":material/slideshow:", wrap=True):
            _open(deck)
    upload = st.file_uploader("Open a deck file (.json)", type=["json"], key="deck_file", max_upload_size=1,
                              help="A deck saved with the download button below.")
    if upload is not None and st.session_state.get("_deck_file_seen") != upload.file_id:
        st.session_state["_deck_file_seen"] = upload.file_id
        with ui.guard("deck file"):
            loaded = decks.loads(upload.getvalue())
            decks.set_current(loaded)
            st.success(ui.plain(f"Opened \"{loaded.title}\" ({len(loaded)} views): present it, or edit it below."))
    st.caption("To build your own deck, open any page and use **Lecture deck** in the sidebar: "
               "each view keeps that page's settings.")

deck = decks.current()
with area:
    with st.container(key=ui.MAIN_FIGURE):
        if deck is not None and len(deck):
            st.subheader(ui.plain(deck.title))
            _table(_views_table(deck))
        else:
            st.subheader("The shipped decks")
            _table(pd.DataFrame({
                "Views": [str(len(d)) for _, d in shipped],
                "Pages": [", ".join(dict.fromkeys(v.title for v in d.views)) for _, d in shipped],
            }, index=[d.title for _, d in shipped]))
    if deck is not None and len(deck):
        ui.notice("Present the deck, then ask each question before you press **Reveal** "
                  "(key A) in the sidebar. Next and Back (keys F and B) open each view with its settings.")
        if st.button("Present this deck from view 1", key="present", type="primary", icon=":material/slideshow:"):
            _open(deck)
    else:
        ui.notice("Each view of a deck is a page with its settings, a question to ask before showing it, "
                  "and the answer the view shows. Press a deck's button to present it.")

if deck is not None and len(deck):
    st.subheader("Edit the deck")
    with st.form("deck_title", border=False):
        title = st.text_input("Title", value=deck.title, max_chars=decks.MAX_TITLE)
        if st.form_submit_button("Rename"):
            with ui.guard("title"):
                decks.set_current(deck.retitle(title), decks.position())
                st.rerun()
    for i, view in enumerate(deck.views):
        head = f"{i + 1}. {view.title}: {view.prompt or '(no question)'}"
        with st.expander(ui.plain(head if len(head) <= 90 else head[:87] + "...")):
            st.caption(ui.plain("Settings: " + (view.settings_text() or "the page's defaults")))
            with st.form(f"deck_view_{i}", border=False):
                prompt = st.text_input("Question for the class", value=view.prompt, max_chars=decks.MAX_PROMPT)
                reveal = st.text_area("Answer, shown on demand", value=view.reveal, max_chars=decks.MAX_REVEAL)
                if st.form_submit_button("Save this view"):
                    with ui.guard("view"):
                        decks.set_current(deck.edit(i, prompt, reveal), decks.position())
                        st.rerun()
            up, down, drop, show = st.columns(4)
            if up.button("Move up", key=f"up_{i}", disabled=i == 0, width="stretch"):
                decks.set_current(deck.move(i, -1))
                st.rerun()
            if down.button("Move down", key=f"down_{i}", disabled=i == len(deck) - 1, width="stretch"):
                decks.set_current(deck.move(i, 1))
                st.rerun()
            if drop.button("Remove", key=f"drop_{i}", width="stretch"):
                decks.set_current(deck.remove(i) if len(deck) > 1 else None)
                st.rerun()
            if show.button("Present from here", key=f"show_{i}", width="stretch"):
                _open(deck, i)

    st.subheader("Save or share")
    save, share = st.columns(2, gap="medium")
    with save:
        st.download_button("Download the deck (JSON)", data=decks.dumps(deck), mime="application/json",
                           file_name="".join(c if c.isalnum() else "-" for c in deck.title.lower())[:40] + ".json",
                           key="deck_download", icon=":material/download:")
        st.markdown("**Take it along**: one file that works offline, or a handout.")
        deck_export.panel(deck, key="deck_export_page")
        if st.button("Close the deck", key="discard", type="tertiary"):
            decks.set_current(None)
            st.rerun()
    with share:
        with ui.guard("share link"):
            tok = decks.encode(deck)
            parts = urlsplit(st.context.url or "")
            base = f"{parts.scheme}://{parts.netloc}/" if parts.scheme and parts.netloc else "/"
            st.markdown("**Share link**: opens the deck at view 1 on any computer that runs the lab.")
            st.code(f"{base}?{decks.DECK_PARAM}={tok}&{decks.POS_PARAM}=1", language=None, wrap_lines=True)

@ui.explain("How decks work")
def about_decks():  # not "decks": that name is the deck module this page uses above
    st.markdown(
        "A view is a page and the settings in its address bar, so it opens exactly as it was saved. "
        "The sidebar's **Lecture deck** adds the page you are on, with a question and its answer. "
        "While a deck is open, the address bar carries the whole deck and your place in it: a refresh "
        "keeps the place, and the share link opens it anywhere. The keys F (next), B (back) and A (answer) "
        "do nothing while you type in a text box."
    )
