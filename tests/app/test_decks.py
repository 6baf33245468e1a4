"""Lecture decks (issue 15 item 3): the deck model, building a deck in the app, exporting, reloading and stepping
through it, the shipped decks (every view renders), and hostile deck files and links.

The app (app.py with its sidebar) runs under AppTest through a one-line wrapper in a temporary folder: an
entry script beside a ``pages/`` folder is a "pages directory" app to AppTest, which then runs a page without
app.py on every rerun (the real server switches to st.navigation after the first run; see
vilab_ui.stage._leave_pages_directory_mode)."""

from __future__ import annotations

import base64
import json
import zlib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from vilab_ui import decks

ROOT = Path(__file__).resolve().parents[2]
DECKS_PAGE = str(ROOT / "pages" / "05_Lecture_decks.py")
HOST = "x.example"
PAYLOAD = (f"[click me](http://{HOST}/a) ![pic](http://{HOST}/p.png) <img src=http://{HOST}/h.png> "
           f"<script>alert(1)</script> :red[red] $x$")


def _app(tmp_path: Path, timeout: int = 300) -> AppTest:
    script = tmp_path / "run_app.py"
    script.write_text(f"import runpy\nrunpy.run_path({str(ROOT / 'app.py')!r}, run_name='__main__')\n")
    return AppTest.from_file(str(script), default_timeout=timeout)


def _page(at: AppTest, stem: str) -> AppTest:
    """Open a page as the menu does (the menu clears the address bar; AppTest keeps it)."""
    at.query_params.clear()
    return at.switch_page(str(ROOT / "pages" / f"{stem}.py")).run()


def _texts(at: AppTest) -> str:
    return " ".join(str(getattr(e, "value", "")) for kind in ("markdown", "success", "info", "warning")
                    for e in getattr(at.sidebar, kind))


def _stage(at: AppTest) -> str:
    """The texts of the deck's panel on the stage (the main block, not the sidebar)."""
    sidebar = {id(e.proto) for e in at.sidebar.markdown}
    return " ".join(e.value for e in at.markdown if id(e.proto) not in sidebar
                    and e.value.startswith(("**View ", "**Question.**", "**Answer.**", "**")))


# ------------------------------------------------------------------------------------------ the model


def _deck() -> decks.Deck:
    return decks.Deck("Two views", (
        decks.make_view("25_Positive_definiteness", {"rho": "0.9", "seed": "3"}, "Still a covariance?", "No."),
        decks.make_view("Divergences", {"tab": "2-D Gaussian", "rho": 0.99, "m": ["a", "b"], "lecture": "1"},
                        "  Which   variance\nshrinks most? ", "Fisher's.\nThen score-based."),
    ))


def test_json_and_link_round_trips():
    deck = _deck()
    assert deck.views[1].page == "40_Divergences"  # a menu title names its page
    assert deck.views[1].params == {"tab": "2-D Gaussian", "rho": "0.99", "m": ("a", "b")}  # lecture mode left out
    assert deck.views[1].prompt == "Which variance shrinks most?" and deck.views[1].reveal == "Fisher's.\nThen score-based."
    assert decks.loads(decks.dumps(deck)) == deck
    token = decks.encode(deck)
    assert decks.decode(token) == deck and set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert len(token) < len(decks.dumps(deck))  # compact


def test_editing_a_deck():
    deck = _deck()
    assert [v.page for v in deck.move(0, 1).views] == ["40_Divergences", "25_Positive_definiteness"]
    assert deck.move(0, -5) == deck and len(deck.remove(0)) == 1
    assert deck.edit(1, prompt="New?", reveal="Yes").views[1].reveal == "Yes"
    assert deck.retitle("  ").title == "My deck"
    with pytest.raises(ValueError, match="no view 3"):
        deck.remove(2)
    full = decks.Deck("full", tuple(deck.views[0] for _ in range(decks.MAX_VIEWS)))
    with pytest.raises(ValueError, match="already holds"):
        full.add(deck.views[0])


def _token(raw: bytes) -> str:
    return base64.urlsafe_b64encode(zlib.compress(raw)).decode().rstrip("=")


GOOD = json.loads(decks.dumps(_deck()))


def _with(**change):
    d = json.loads(json.dumps(GOOD))
    for path, value in change.items():
        *head, last = path.split("__")
        node = d
        for h in head:
            node = node[int(h)] if h.isdigit() else node[h]
        node[int(last) if last.isdigit() else last] = value
    return json.dumps(d)


HOSTILE_FILES = [
    ("not JSON", "{", "not valid JSON"),
    ("a list", "[1, 2]", "JSON object"),
    ("another format", _with(format="slides"), "not a vilab deck"),
    ("newer version", _with(version=9), "newer vilab"),
    ("no views", _with(views=[]), "no views"),
    ("views not a list", _with(views="abc"), "list of"),
    ("view not an object", _with(views__0=5), "View 1 must be"),
    ("unknown page", _with(views__1__page="99_Secret"), "does not have"),
    ("page path", _with(views__0__page="../../etc/passwd"), "does not have"),
    ("page not text", _with(views__0__page=[1]), "names no page"),
    ("params not an object", _with(views__0__params=[1, 2]), "group of named values"),
    ("bad setting name", _with(views__0__params={"a b<script>": "1"}), "setting named"),
    ("nested list", _with(views__0__params={"m": [["a"]]}), "list inside a list"),
    ("value not text", _with(views__0__params={"m": {"x": 1}}), "must be a text"),
    ("infinite number", '{"views": [{"page": "00_Home", "params": {"x": Infinity}}]}', "finite"),
    ("long value", _with(views__0__params={"m": "x" * (decks.MAX_VALUE + 1)}), "characters long"),
    ("many settings", _with(views__0__params={f"k{i}": "1" for i in range(decks.MAX_PARAMS + 1)}), "at most"),
    ("prompt not text", _with(views__0__prompt=3), "must be text"),
    ("long prompt", _with(views__0__prompt="x" * (decks.MAX_PROMPT + 1)), "keep it to"),
    ("long reveal", _with(views__0__reveal="x" * (decks.MAX_REVEAL + 1)), "keep it to"),
    ("long title", _with(title="x" * (decks.MAX_TITLE + 1)), "keep it to"),
    ("too many views", _with(views=[GOOD["views"][0]] * (decks.MAX_VIEWS + 1)), "at most"),
    ("oversize file", " " * (decks.MAX_JSON_BYTES + 1), "at most"),
    ("deep nesting", "[" * 60_000, "nests too deeply|not valid JSON"),
    ("binary", b"\xff\xfe\x00garbage", "not text"),
]


@pytest.mark.parametrize("name, data, message", HOSTILE_FILES, ids=[h[0] for h in HOSTILE_FILES])
def test_hostile_deck_files_are_clear_errors(name, data, message):
    with pytest.raises(ValueError, match=message):
        decks.loads(data)


HOSTILE_LINKS = [
    ("payload", PAYLOAD),
    ("empty", ""),
    ("not base64", "!!!!"),
    ("base64 of junk", base64.urlsafe_b64encode(b"junk junk junk").decode()),
    ("truncated", decks.encode(_deck())[:-7]),
    ("too long", "A" * (decks.MAX_LINK_CHARS + 1)),
    ("zip bomb", _token(b" " * (decks.MAX_JSON_BYTES * 20))),
    # quoted in the message (a page name is cut at its last "/": this one has none)
    ("not a deck", _token(json.dumps({"views": [{"page": f"[a](www.{HOST}) ![p](a@{HOST})"}]}).encode())),
]


@pytest.mark.parametrize("name, token", HOSTILE_LINKS, ids=[h[0] for h in HOSTILE_LINKS])
def test_hostile_deck_links_are_clear_errors(name, token):
    with pytest.raises(ValueError) as err:
        decks.decode(token)
    assert str(err.value).endswith(".") and len(str(err.value)) < 600  # one sentence, not a dump of the link


def test_control_characters_are_removed_and_texts_kept_as_typed():
    v = decks.make_view("00_Home", {}, "a\x00b\u202ec", "line 1\r\nline 2 [link](http://x.example)")
    assert v.prompt == "a b c" and v.reveal == "line 1\nline 2 [link](http://x.example)"


# ------------------------------------------------------------------------------------------ in the app


@pytest.mark.slow
def test_build_export_reload_and_step_through_a_deck(tmp_path):
    """Add views from two pages in the sidebar, export the deck to JSON, reload it, open it from a link and
    step through it with Next / Back / Reveal: each step shows the view's page with its settings."""
    at = _app(tmp_path).run()
    assert not at.exception, [e.value for e in at.exception]

    _page(at, "25_Positive_definiteness")
    at.slider(key="rho").set_value(0.9).run()
    at.sidebar.text_input(key="_vilab_deck_prompt").input("Is the precision update still a covariance?")
    at.sidebar.text_area(key="_vilab_deck_reveal").input("No: an eigenvalue is negative.")
    at.sidebar.button(key="deck_add").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Added view 1" in _texts(at)

    _page(at, "40_Divergences")
    at.slider(key="rho").set_value(0.95).run()
    at.sidebar.text_input(key="_vilab_deck_prompt").input("Which divergence shrinks the variances most?")
    at.sidebar.button(key="deck_add").click().run()
    assert not at.exception, [e.value for e in at.exception]

    deck = at.session_state["_vilab_deck"]
    assert [v.page for v in deck.views] == ["25_Positive_definiteness", "40_Divergences"]
    first, second = deck.views
    assert first.params["rho"] == "0.9" and second.params["rho"] == "0.95" and second.params["tab"] == "2-D Gaussian"
    assert "mode" not in second.params  # the other page's settings, still in AppTest's address bar, are left out
    assert "lecture" not in first.params and "deck" not in first.params
    assert second.reveal == "" and first.reveal == "No: an eigenvalue is negative."

    reloaded = decks.loads(decks.dumps(deck))  # the file the download button offers
    assert reloaded == deck

    # open the reloaded deck from its share link, on the home page: the lab goes to view 1
    show = _app(tmp_path)
    show.query_params.update({"deck": decks.encode(reloaded), "dv": "1"})
    show.run()
    assert not show.exception, [e.value for e in show.exception]

    def at_view(k: int, view: decks.View):
        assert show.title[0].value == view.title
        assert show.query_params["dv"] == str(k)
        for key, value in view.params.items():
            assert show.query_params[key] == value, key
        assert f"View {k} of 2" in _stage(show)  # on the stage, not in the sidebar
        assert view.prompt in _stage(show) and view.prompt not in _texts(show)

    at_view(1, first)
    assert show.slider(key="rho").value == 0.9
    assert "eigenvalue is negative" not in _stage(show)
    show.button(key="deck_reveal").click().run()
    assert "**Answer.** No: an eigenvalue is negative." in _stage(show)

    show.button(key="deck_next").click().run()
    assert not show.exception, [e.value for e in show.exception]
    at_view(2, second)
    assert show.slider(key="rho").value == 0.95
    assert show.button(key="deck_next").disabled

    show.run()  # a refresh (the address bar holds the deck and the place) stays on the view
    at_view(2, second)

    show.button(key="deck_prev").click().run()
    at_view(1, first)
    assert show.slider(key="rho").value == 0.9  # the page reads the view's settings, not the last ones it had

    show.button(key="deck_close").click().run()
    assert "deck" not in show.query_params and "dv" not in show.query_params


@pytest.mark.parametrize("name, token", HOSTILE_LINKS[:3] + HOSTILE_LINKS[6:], ids=[h[0] for h in HOSTILE_LINKS[:3] + HOSTILE_LINKS[6:]])
def test_a_hostile_deck_link_gives_a_message_in_the_app(tmp_path, name, token):
    at = _app(tmp_path, timeout=120)
    at.query_params.update({"deck": token, "dv": PAYLOAD})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    from tests.app.test_hostile_urls import _problems

    assert at.sidebar.warning, "no message for a damaged deck link"
    assert not _problems(at), _problems(at)  # nothing from the link shown as a link, image or HTML
    assert "deck" not in at.query_params and "dv" not in at.query_params
    assert "_vilab_deck" not in at.session_state or at.session_state["_vilab_deck"] is None


# ------------------------------------------------------------------------------------------ the page


def test_decks_page_lists_the_shipped_decks():
    at = AppTest.from_file(DECKS_PAGE, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    shipped = decks.shipped()
    assert len(shipped) >= 2
    labels = [b.label for b in at.button]
    for _, deck in shipped:
        assert any(deck.title in label for label in labels)


def test_decks_page_opens_edits_and_saves_an_uploaded_deck():
    at = AppTest.from_file(DECKS_PAGE, default_timeout=60).run()
    at.get("file_uploader")[0].upload("deck.json", decks.dumps(_deck()).encode(), "application/json")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["_vilab_deck"] == _deck()
    assert any("Two views" in s.value for s in at.subheader)
    at.button(key="down_0").click().run()
    assert [v.page for v in at.session_state["_vilab_deck"].views] == ["40_Divergences", "25_Positive_definiteness"]
    at.button(key="drop_1").click().run()
    assert len(at.session_state["_vilab_deck"]) == 1
    assert at.get("download_button") and any("?deck=" in c.value for c in at.code)
    at.button(key="open_" + decks.shipped()[0][0]).click().run()  # a page run on its own cannot switch pages
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.parametrize("lecture", ["0", "1"])
@pytest.mark.parametrize("data", [b"{", decks.dumps(_deck()).replace("Two views", PAYLOAD).encode(),
                                  _with(views__0__page=PAYLOAD).encode()], ids=["broken", "payload-title", "payload-page"])
def test_decks_page_shows_hostile_files_as_plain_text(data, lecture):
    from tests.app.test_hostile_urls import _problems

    at = AppTest.from_file(DECKS_PAGE, default_timeout=60)
    at.query_params["lecture"] = lecture
    at.run()
    at.get("file_uploader")[0].upload("deck.json", data, "application/json")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not _problems(at), _problems(at)


# ------------------------------------------------------------------------------------------ shipped decks


def _shipped_views():
    return [(stem, i, v) for stem, deck in decks.shipped() for i, v in enumerate(deck.views)]


def test_shipped_decks_teach_in_order():
    shipped = decks.shipped()
    assert len(shipped) == 2
    for _, deck in shipped:
        assert 6 <= len(deck) <= 10
        assert all(v.prompt and v.reveal for v in deck.views)  # predict, then reveal
        decks.encode(deck)  # each fits in a share link


@pytest.mark.slow
@pytest.mark.parametrize("stem, i, view", _shipped_views(), ids=[f"{s}-view{i + 1}" for s, i, _ in _shipped_views()])
def test_every_view_of_the_shipped_decks_renders(stem, i, view):
    """Each view renders without an exception, and the page keeps every setting of the view (a setting the
    page does not accept would fall back to its default, and the view would not show what its answer says)."""
    at = AppTest.from_file(str(decks.page_file(view.page)), default_timeout=600)
    at.query_params.update(view.query())
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    changed = {k: (v, at.query_params.get(k)) for k, v in view.query().items() if at.query_params.get(k) != v}
    assert not changed, changed


# ------------------------------------------------------------------------------------------ a deck to go (issue 37)


def test_decks_page_exports_the_deck_as_an_html_file():
    """The Lecture decks page's "Download deck as HTML" computes every view's figures (its page run with the view's
    settings) and offers the file; the sidebar's deck builder has the same buttons."""
    deck = decks.Deck("One view", (decks.make_view("00_Home", {}, "Which path is natural?", "The blue one."),))
    at = AppTest.from_file(DECKS_PAGE, default_timeout=600).run()
    at.get("file_uploader")[0].upload("deck.json", decks.dumps(deck).encode(), "application/json")
    at.run()
    assert at.button(key="deck_export_page_html").label == "Download deck as HTML"
    assert at.button(key="deck_export_page_pdf").label == "Download deck as PDF"
    assert not [b for b in at.download_button if b.key == "deck_export_page_save"]  # nothing made before a click
    at.button(key="deck_export_page_html").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.warning, [w.value for w in at.warning]
    save = [b for b in at.download_button if b.key == "deck_export_page_save"]
    assert save and save[0].label.startswith("Save one-view.html")
    fmt, name, data = at.session_state["_vilab_deck_export_file"][1:4]
    assert (fmt, name) == ("html", "one-view.html")
    page = data.decode("utf-8")
    assert "Which path is natural?" in page and "The blue one." in page and page.count('class="fig') >= 1


def test_the_sidebar_deck_builder_offers_the_deck_to_go(tmp_path):
    at = _app(tmp_path).run()
    at.sidebar.text_input(key="_vilab_deck_prompt").input("Which path is natural?")
    at.sidebar.button(key="deck_add").click().run()
    assert not at.exception, [e.value for e in at.exception]
    labels = {b.key: b.label for b in at.sidebar.button}
    assert labels.get("deck_export_side_html") == "Download deck as HTML"
    assert labels.get("deck_export_side_pdf") == "Download deck as PDF"
