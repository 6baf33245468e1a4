"""Lecture decks: an ordered list of saved views of the lab, each with a question for the class and its answer.

A view is a page (its file stem, e.g. ``"20_Trajectories"``) and the page's URL state (the widget keys and
values of the address bar), a one-line ``prompt`` ("Predict: will SR-VN or VN converge first?") and a
``reveal`` (the answer, shown once the class has guessed). A deck is a title and at most :data:`MAX_VIEWS`
views. It travels as a small JSON file (:func:`dumps` / :func:`loads`) or inside one URL parameter
``deck`` (:func:`encode` / :func:`decode`: zlib, then URL-safe base64); the position in the deck is the
parameter ``dv`` (1 for the first view), so a refreshed page keeps its place.

Everything loaded (a file, a link) is checked: unknown pages, wrong types, oversize files, links and texts
give a ``ValueError`` with a sentence a student understands. Texts from a deck are whatever its author
typed: show them only through :func:`vilab_ui.plain`.

The first half of this module is plain Python (no Streamlit): the deck model. The second half is the
Streamlit side: the current deck in session state, the sidebar's navigator and builder (app.py), opening
a view.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import unicodedata
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

ROOT = Path(__file__).resolve().parents[1]
PAGES_DIR = ROOT / "pages"
SHIPPED_DIR = ROOT / "assets" / "decks"

FORMAT = "vilab-deck"
VERSION = 1
DECK_PARAM = "deck"  # the whole deck, encoded (while a deck is open)
POS_PARAM = "dv"  # the open view, 1 for the first
OWN_PARAMS = frozenset({DECK_PARAM, POS_PARAM})
NOT_CAPTURED = OWN_PARAMS | {"lecture"}  # lecture mode belongs to the presenter, not to a view

MAX_VIEWS = 20
MAX_TITLE = 100
MAX_PROMPT = 200
MAX_REVEAL = 600
MAX_PARAMS = 40  # URL parameters of one view
MAX_VALUE = 400  # characters of one parameter value (as a text box holds)
MAX_LIST = 40  # values of one repeated parameter (a multiselect)
MAX_NUMBER = 1e15  # a number in a setting (beyond it a float no longer holds every whole number exactly)
MAX_NUMBER_CHARS = 40  # characters of one number as the file writes it
MAX_JSON_BYTES = 64_000
MAX_LINK_CHARS = 8_000  # the encoded deck in a link
_KEY = re.compile(r"[A-Za-z0-9_]{1,40}")
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_-]*")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")

# letters (a focused slider takes the arrows and PageUp / PageDown; Trajectories' live run takes N, P and 0)
SHORTCUT_NEXT, SHORTCUT_PREVIOUS, SHORTCUT_REVEAL = "F", "B", "A"


# ---------------------------------------------------------------------------------------------
# Pages


def page_stems() -> list[str]:
    """File stems of the lab's pages, in menu order ("00_Home", "10_Vector_fields", ...)."""
    return sorted(p.stem for p in PAGES_DIR.glob("*.py") if not p.name.startswith("_"))


def page_title(stem: str) -> str:
    """'20_Trajectories' -> 'Trajectories' (the name in the page menu)."""
    head, _, rest = stem.partition("_")
    return (rest if head.isdigit() and rest else stem).replace("_", " ")


def page_file(stem: str) -> Path:
    return PAGES_DIR / f"{stem}.py"


def _resolve_page(name: Any, where: str) -> str:
    """A page named by its file stem ("20_Trajectories"), menu title ("Trajectories") or URL path."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{where} names no page: give the page's name, for example \"20_Trajectories\".")
    stems = page_stems()
    key = name.strip().removesuffix(".py").rsplit("/", 1)[-1]
    for stem in stems:
        if key == stem or key.replace("_", " ").lower() == page_title(stem).lower():
            return stem
    shown = key if len(key) <= 40 else key[:40] + "..."
    raise ValueError(f"{where} names a page \"{shown}\" that this lab does not have; its pages are: "
                     + ", ".join(page_title(s) for s in stems) + ".")


# ---------------------------------------------------------------------------------------------
# The deck model


def _text(value: Any, what: str, limit: int, one_line: bool) -> str:
    """A text of the deck: a string of at most ``limit`` characters, control characters removed."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{what} must be text, not {_kind(value)}.")
    value = unicodedata.normalize("NFC", value)
    value = _CONTROL.sub(" ", value.replace("\r\n", "\n").replace("\r", "\n"))
    if one_line:
        value = " ".join(value.split())
    value = value.strip()
    if len(value) > limit:
        raise ValueError(f"{what} is {len(value)} characters long; keep it to {limit}.")
    return value


def _kind(value: Any) -> str:
    return {dict: "a group of named values", list: "a list", bool: "true/false", type(None): "empty"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def _param_value(value: Any, what: str) -> str | tuple[str, ...]:
    """A URL value: text, or a list of texts (a repeated parameter); numbers and true/false become text."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float)):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{what} is not a finite number.")
        if abs(value) > MAX_NUMBER:
            raise ValueError(f"{what} is a number too large for a setting; keep it between {-MAX_NUMBER:.0e} and "
                             f"{MAX_NUMBER:.0e}.")
        return repr(value) if isinstance(value, int) else f"{value:.12g}"
    if isinstance(value, str):
        if len(value) > MAX_VALUE:
            raise ValueError(f"{what} is {len(value)} characters long; a setting holds at most {MAX_VALUE}.")
        return value
    if isinstance(value, (list, tuple)):
        if len(value) > MAX_LIST:
            raise ValueError(f"{what} lists {len(value)} values; at most {MAX_LIST}.")
        out = tuple(_param_value(v, what) for v in value)
        if any(isinstance(v, tuple) for v in out):
            raise ValueError(f"{what} holds a list inside a list; a setting is a text or a list of texts.")
        return out
    raise ValueError(f"{what} must be a text, a number or a list of texts, not {_kind(value)}.")


def _params(value: Any, where: str) -> dict[str, str | tuple[str, ...]]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"The settings of {where} must be a group of named values "
                         f"(like {{\"rho\": \"0.5\"}}), not {_kind(value)}.")
    if len(value) > MAX_PARAMS:
        raise ValueError(f"{where} has {len(value)} settings; a view holds at most {MAX_PARAMS}.")
    out = {}
    for k, v in value.items():
        if not isinstance(k, str) or not _KEY.fullmatch(k):
            shown = str(k)[:40]
            raise ValueError(f"{where} has a setting named \"{shown}\": a setting's name is 1 to 40 letters, "
                             "digits or underscores.")
        if k in NOT_CAPTURED:
            continue
        out[k] = _param_value(v, f"The setting \"{k}\" of {where}")
    return out


@dataclass(frozen=True)
class View:
    """One saved view: a page, its URL state, a question for the class and the answer."""

    page: str
    params: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict)
    prompt: str = ""
    reveal: str = ""

    @property
    def title(self) -> str:
        return page_title(self.page)

    def query(self) -> dict[str, str | list[str]]:
        """The view's URL parameters (a repeated parameter as a list)."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.params.items()}

    def to_json(self) -> dict:
        return {"page": self.page, "params": self.query(), "prompt": self.prompt, "reveal": self.reveal}

    def settings_text(self, limit: int = 160) -> str:
        """The view's settings in one line ("rho=0.5, m=vn srvn"), cut at ``limit`` characters."""
        s = ", ".join(f"{k}={' '.join(v) if isinstance(v, tuple) else v}" for k, v in self.params.items()
                      if k != "seed" or v != "0")
        return s if len(s) <= limit else s[: limit - 3] + "..."


@dataclass(frozen=True)
class Deck:
    """A titled, ordered list of views (at most :data:`MAX_VIEWS`). Operations return a new deck."""

    title: str = "My deck"
    views: tuple[View, ...] = ()

    def __len__(self) -> int:
        return len(self.views)

    def to_json(self) -> dict:
        return {"format": FORMAT, "version": VERSION, "title": self.title,
                "views": [v.to_json() for v in self.views]}

    def add(self, view: View) -> "Deck":
        if len(self.views) >= MAX_VIEWS:
            raise ValueError(f"The deck already holds {MAX_VIEWS} views, as many as a deck can: "
                             "remove one first, or start a second deck.")
        return replace(self, views=self.views + (view,))

    def move(self, i: int, by: int) -> "Deck":
        """View i moved ``by`` places (clamped to the ends)."""
        self._check(i)
        j = min(max(i + by, 0), len(self.views) - 1)
        views = list(self.views)
        views.insert(j, views.pop(i))
        return replace(self, views=tuple(views))

    def remove(self, i: int) -> "Deck":
        self._check(i)
        return replace(self, views=self.views[:i] + self.views[i + 1:])

    def edit(self, i: int, prompt: str | None = None, reveal: str | None = None) -> "Deck":
        self._check(i)
        v = self.views[i]
        new = replace(v, prompt=v.prompt if prompt is None else _text(prompt, "A question", MAX_PROMPT, True),
                      reveal=v.reveal if reveal is None else _text(reveal, "An answer", MAX_REVEAL, False))
        return replace(self, views=self.views[:i] + (new,) + self.views[i + 1:])

    def retitle(self, title: str) -> "Deck":
        return replace(self, title=_text(title, "The deck's title", MAX_TITLE, True) or "My deck")

    def _check(self, i: int) -> None:
        if not 0 <= i < len(self.views):
            raise ValueError(f"The deck has no view {i + 1}: it has {len(self.views)}.")


def make_view(page: str, params: Mapping[str, Any] | None = None, prompt: str = "", reveal: str = "",
              where: str = "this view") -> View:
    """A checked :class:`View` (the deck's own URL parameters and lecture mode are left out)."""
    return View(page=_resolve_page(page, where.capitalize()), params=_params(params, where),
                prompt=_text(prompt, f"The question of {where}", MAX_PROMPT, True),
                reveal=_text(reveal, f"The answer of {where}", MAX_REVEAL, False))


def parse(obj: Any) -> Deck:
    """A :class:`Deck` from its JSON form, every field checked (ValueError says what is wrong and where)."""
    if not isinstance(obj, Mapping):
        raise ValueError("A deck is a JSON object with a \"title\" and a list of \"views\"; this file holds "
                         f"{_kind(obj)}.")
    fmt = obj.get("format", FORMAT)
    if fmt != FORMAT:
        raise ValueError("This JSON file is not a vilab deck (its \"format\" is not \"vilab-deck\").")
    version = obj.get("version", VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError("The deck's \"version\" must be a whole number (1).")
    if version > VERSION:
        raise ValueError(f"This deck was saved by a newer vilab (deck version {version}); this lab reads "
                         f"version {VERSION}.")
    title = _text(obj.get("title"), "The deck's title", MAX_TITLE, True) or "Untitled deck"
    views = obj.get("views")
    if not isinstance(views, list):
        raise ValueError("A deck needs a list of \"views\" (each a page, its settings, a question and an answer).")
    if not views:
        raise ValueError("The deck has no views: add at least one.")
    if len(views) > MAX_VIEWS:
        raise ValueError(f"The deck has {len(views)} views; a deck holds at most {MAX_VIEWS}.")
    out = []
    for i, v in enumerate(views, 1):
        where = f"view {i}"
        if not isinstance(v, Mapping):
            raise ValueError(f"View {i} must be a group of named values (page, params, prompt, reveal), "
                             f"not {_kind(v)}.")
        out.append(make_view(v.get("page"), v.get("params"), v.get("prompt"), v.get("reveal"), where))
    return Deck(title=title, views=tuple(out))


def loads(data: str | bytes) -> Deck:
    """A deck from a JSON file's contents (at most :data:`MAX_JSON_BYTES`)."""
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if len(raw) > MAX_JSON_BYTES:
        raise ValueError(f"The deck file is {len(raw) / 1000:.0f} kB; a deck holds at most "
                         f"{MAX_JSON_BYTES // 1000} kB.")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError("The deck file is not text (UTF-8): choose the .json file a deck was saved as.") from None
    try:
        obj = json.loads(text, parse_int=_json_int, parse_float=_json_float)
    except json.JSONDecodeError as exc:
        raise ValueError(f"The deck file is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                         f"{exc.msg}).") from None
    except RecursionError:
        raise ValueError("The deck file nests too deeply to be a deck.") from None
    return parse(obj)


def _number_text(text: str) -> str:
    """A number as written in a deck file, refused past :data:`MAX_NUMBER_CHARS` characters (before Python
    converts it: a long run of digits is slow to convert, and past 4,300 digits Python refuses in its own words)."""
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"The deck file holds a number {len(text)} characters long; a number in a deck is at most "
                         f"{MAX_NUMBER_CHARS} characters (between {-MAX_NUMBER:.0e} and {MAX_NUMBER:.0e}).")
    return text


def _json_int(text: str) -> int:
    return int(_number_text(text))


def _json_float(text: str) -> float:
    return float(_number_text(text))


def dumps(deck: Deck) -> str:
    """The deck as a small, readable JSON file."""
    return json.dumps(deck.to_json(), indent=1, ensure_ascii=False) + "\n"


def encode(deck: Deck) -> str:
    """The deck in one URL-safe word (zlib-compressed JSON, base64 without padding)."""
    raw = json.dumps(deck.to_json(), separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    token = base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode("ascii").rstrip("=")
    if len(token) > MAX_LINK_CHARS:
        raise ValueError(f"This deck is too large for a link ({len(token)} characters; at most "
                         f"{MAX_LINK_CHARS}): share the JSON file instead, or shorten its answers.")
    return token


def decode(token: Any) -> Deck:
    """A deck from the ``deck`` URL parameter (see :func:`encode`); ValueError for anything else."""
    bad = "This deck link is damaged (it was cut short or changed): ask for the link again, or open the deck's file."
    if not isinstance(token, str) or not token:
        raise ValueError(bad)
    if len(token) > MAX_LINK_CHARS:
        raise ValueError(f"This deck link is too long ({len(token)} characters; a deck link holds at most "
                         f"{MAX_LINK_CHARS}).")
    if not _TOKEN_CHARS.fullmatch(token):
        raise ValueError(bad)
    try:
        packed = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        z = zlib.decompressobj()
        raw = z.decompress(packed, MAX_JSON_BYTES + 1)
    except (binascii.Error, zlib.error, ValueError):
        raise ValueError(bad) from None
    if len(raw) > MAX_JSON_BYTES or z.unconsumed_tail:
        raise ValueError(f"This deck link unpacks to more than {MAX_JSON_BYTES // 1000} kB; a deck holds less.")
    if not z.eof:
        raise ValueError(bad)
    return loads(raw)


def shipped() -> list[tuple[str, Deck]]:
    """The decks shipped with the lab (assets/decks/*.json), as (file stem, deck), in file order."""
    return [(p.stem, loads(p.read_bytes())) for p in sorted(SHIPPED_DIR.glob("*.json"))]


def url_query(view: View, pos: int, token: str | None, lecture: bool | None = None) -> dict[str, Any]:
    """The query parameters that open ``view`` as position ``pos`` (0-based) of the deck ``token``."""
    q: dict[str, Any] = dict(view.query())
    if lecture is not None:
        q["lecture"] = "1" if lecture else "0"
    if token:
        q[DECK_PARAM], q[POS_PARAM] = token, str(pos + 1)
    return q


def captured(params: Mapping[str, Any]) -> dict[str, Any]:
    """A page's URL state without the deck's own parameters and lecture mode."""
    return {k: v for k, v in params.items() if k not in NOT_CAPTURED}


# ---------------------------------------------------------------------------------------------
# Streamlit: the current deck, the sidebar, opening a view

_DECK = "_vilab_deck"  # the current Deck (or None)
_POS = "_vilab_deck_pos"  # the open view (0-based) while presenting, else None
_TOKEN = "_vilab_deck_token"  # encode(current deck), None when too large for a link
_REVEALED = "_vilab_deck_revealed"  # the position whose answer is shown
_MESSAGE = "_vilab_deck_message"  # (kind, text) shown once in the sidebar
_PROMPT_INPUT, _REVEAL_INPUT = "_vilab_deck_prompt", "_vilab_deck_reveal"
_SIGNATURES = "_vilab_widget_signatures"  # vilab_ui's record of each widget key's page (see vilab_ui.widgets._prime)
_SCOPE = "_vilab_scope"  # the page whose widgets the last run made (vilab_ui.scope)


def _st():
    import streamlit as st

    return st


def current() -> Deck | None:
    """The deck of this session (built here, opened from the list, a file or a link)."""
    return _st().session_state.get(_DECK)


def position() -> int | None:
    """The open view (0-based) while a deck is being presented, else None."""
    deck, pos = current(), _st().session_state.get(_POS)
    return pos if deck is not None and isinstance(pos, int) and 0 <= pos < len(deck) else None


def presenting() -> bool:
    """Whether a deck is (or, from a deck link in the URL, is about to be) presented in this run."""
    return position() is not None or DECK_PARAM in _st().query_params


def token() -> str | None:
    return _st().session_state.get(_TOKEN)


def say(kind: str, text: str) -> None:
    """A message for the sidebar's next run ("success", "info" or "warning")."""
    _st().session_state[_MESSAGE] = (kind, text)


def set_current(deck: Deck | None, present_at: int | None = None) -> None:
    """Make ``deck`` the session's deck; present it from view ``present_at`` (0-based) or just keep it."""
    st = _st()
    st.session_state[_DECK] = deck
    try:
        st.session_state[_TOKEN] = None if deck is None or not len(deck) else encode(deck)
    except ValueError:
        st.session_state[_TOKEN] = None
    st.session_state[_POS] = present_at if deck is not None and present_at is not None else None
    st.session_state[_REVEALED] = None


def _forget_page_widgets(view: View) -> None:
    """Drop the widget values this session remembers for the pages (and the view's sidebar settings), so
    that the view's page reads its widgets from the view's URL (vilab_ui primes a remembered key from the
    session, not from the URL). Lecture mode is the presenter's, and stays."""
    st = _st()
    seen = st.session_state.get(_SIGNATURES) or {}
    for key, sig in list(seen.items()):
        page_scope = isinstance(sig, tuple) and sig and sig[0] != ""
        if key != "lecture" and (page_scope or key in view.params) and key in st.session_state:
            del st.session_state[key]


def go(pos: int, reveal: bool = False) -> None:
    """Open view ``pos`` (0-based) of the current deck: its page, with its URL state (a new script run); ``reveal``:
    with its answer shown."""
    from streamlit.errors import StreamlitAPIException

    st = _st()
    deck = current()
    if deck is None or not len(deck):
        return
    pos = min(max(int(pos), 0), len(deck) - 1)
    view = deck.views[pos]
    st.session_state[_POS], st.session_state[_REVEALED] = pos, (pos if reveal else None)
    st.session_state[_GOING] = pos  # until a run is there (a rerun asked by the browser meanwhile can undo a switch)
    import vilab_ui as ui

    query = url_query(view, pos, token(), ui.lecture())  # the presenter's lecture mode (session, else URL)
    _forget_page_widgets(view)
    try:
        st.switch_page(str(page_file(view.page)), query_params=query)
    except StreamlitAPIException:  # a page run on its own (no page registry): stay, with the view's URL
        st.query_params.from_dict(query)
        say("info", f"View {pos + 1} is on the page \"{view.title}\": open the lab (vilab app) to present.")


def sync_from_url(current_page: str) -> None:
    """Open the deck named by the URL (``?deck=...&dv=k``), or follow ``dv`` in the session's deck.

    A link that opens a deck on another page than its view's goes to the view; a refreshed page (already
    on the view, its settings in the URL) stays as it is. A damaged link gives a message and is dropped."""
    st = _st()
    tok = st.query_params.get(DECK_PARAM)
    if tok is None:
        return
    raw_pos = st.query_params.get(POS_PARAM, "1")
    if tok != st.session_state.get(_TOKEN) or current() is None:
        try:
            deck = decode(tok)
        except ValueError as exc:
            say("warning", str(exc))
            for k in OWN_PARAMS:
                st.query_params.pop(k, None)
            if position() is None:
                st.rerun()  # with the page menu, hidden for this run (see presenting)
            return
        pos = _pos(raw_pos, len(deck))
        set_current(deck, pos)
        st.session_state[_TOKEN] = tok
        view = deck.views[pos]
        here = captured(st.query_params.to_dict())
        if view.page != current_page or not set(view.params) <= set(here):
            go(pos)
        return
    if position() is not None:
        st.session_state[_POS] = _pos(raw_pos, len(current()))


def _pos(raw: Any, n: int) -> int:
    try:
        k = int(float(raw))
    except (TypeError, ValueError, OverflowError):
        k = 1
    return min(max(k, 1), n) - 1


def publish() -> None:
    """Write the open deck and position into the URL (a refresh keeps the place), or take them out."""
    st = _st()
    pos, tok = position(), token()
    if pos is not None and tok:
        st.query_params[DECK_PARAM], st.query_params[POS_PARAM] = tok, str(pos + 1)
    else:
        for k in OWN_PARAMS:
            if k in st.query_params:
                del st.query_params[k]


def _plain(text: str) -> str:
    import vilab_ui as ui

    return ui.plain(text)


def _show_message() -> None:
    st = _st()
    msg = st.session_state.pop(_MESSAGE, None)
    if msg:
        kind, text = msg
        getattr(st, kind if kind in ("success", "info", "warning") else "info")(_plain(text))


# The deck's panel while presenting: fixed on the right of the stage (below the header), beside the figure, whole on
# the screen. Its width is the CSS variable --vilab-deck-panel on :root; the main block keeps that room free (the
# stage CSS reserves it, and so does this panel's own style), so the figure and the panel never overlap.
STAGE_KEY = "deck_stage"  # the panel's container (CSS class st-key-deck_stage)
PANEL_WIDTH = "clamp(16rem, 26vw, 30rem)"  # normal mode
PANEL_WIDTH_LECTURE = "clamp(18rem, 31vw, 34rem)"  # lecture mode (20 px root font): ~40 characters a line at 1280 px
KEYS_KEY = "deck_keys"  # the key element: the F / B / A presses, counted in the browser
_HANDLED = "_vilab_deck_keys_handled"  # (window id, sequence number) of the last press this session acted on
_GOING = "_vilab_deck_going"  # the view go() opened, until a run is on it

_PANEL_CSS = """
:root { --vilab-deck-panel: %(width)s; }
%(room)s
.st-key-deck_stage { position: fixed; z-index: 999990; top: 3rem; bottom: 0.3rem; right: 0; width: var(--vilab-deck-panel);
    overflow-y: auto; box-sizing: border-box; gap: 0.45rem; justify-content: flex-start;
    padding: 0.6rem 0.8rem 0.6rem 0.9rem; border-left: 1px solid #d0d4dc; background-color: #fff;
    box-shadow: -0.3rem 0 0.8rem rgba(0, 0, 0, 0.10); }
.st-key-deck_stage [data-testid="stMarkdownContainer"] p { line-height: 1.38; margin-bottom: 0.2rem; }
.st-key-deck_stage [data-testid="stElementContainer"] { margin: 0; }
.st-key-deck_answer { border-left: 0.3rem solid #21a366; padding: 0.3rem 0.6rem; background: rgba(33, 163, 102, 0.08);
    border-radius: 0.3rem; }
.st-key-deck_buttons [data-testid="stHorizontalBlock"] { gap: 0.4rem; flex-wrap: nowrap; }
.st-key-deck_buttons [data-testid="stColumn"] { min-width: 0 !important; }
.st-key-deck_keys { min-height: 0; }
%(lecture)s
"""
# outside lecture mode the stage CSS (vilab_ui.stage, lecture mode only) does not reserve the panel's room: this does
_PANEL_ROOM_CSS = """[data-testid="stMainBlockContainer"] { padding-right: calc(var(--vilab-deck-panel) + 1.5rem) !important; }"""
_PANEL_LECTURE_CSS = """
.st-key-deck_stage [data-testid="stMarkdownContainer"] p, .st-key-deck_stage button p,
.st-key-deck_stage .vilab-deck-pending { font-size: 0.95rem !important; }
"""

# The keys F (next), B (back) and A (answer), counted in the browser. A press sends the view it asks for as the
# element's state {to, reveal, seq, win}: absolute, computed from the view the last press asked for, so presses made
# while a view loads (some take tens of seconds the first time) add up instead of being lost or merged into one rerun,
# and the panel says where the presses are going. The server acts on each sequence number once (_HANDLED); a press the
# server has not acted on yet is sent again every 3 s (a request can be lost in a page switch under way); like any
# press, a request stops a run in progress at its next step. A rerun the browser asks for with the old address
# right after go() switched pages would undo the switch: the next run opens the view again (_GOING).
_KEYS_JS = """
const RESEND_MS = 3000;
export default function (component) {
  const { data, parentElement, setStateValue } = component;
  const d = typeof data === "string" ? JSON.parse(data) : data;
  const g = window.__vilabDeckKeys = window.__vilabDeckKeys ||
    { win: Math.random().toString(36).slice(2), seq: 0, want: null, deck: null };
  if (g.deck !== d.deck) { g.deck = d.deck; g.want = null; }
  g.pos = d.pos; g.n = d.n; g.send = setStateValue;
  const done = d.win === g.win ? d.seq : 0;
  if (g.want && g.want.seq <= done) g.want = null;  // the server has opened it
  let box = parentElement.querySelector(":scope > .vilab-deck-pending");
  if (!box) {
    box = document.createElement("div");
    box.className = "vilab-deck-pending";
    box.setAttribute("aria-live", "polite");
    parentElement.appendChild(box);
  }
  g.show = () => {
    const w = g.want;
    box.textContent = w && w.to !== g.pos ? "Opening view " + (w.to + 1) + " of " + g.n + "..." :
      (w && w.reveal ? "Showing the answer..." : "");
    box.style.display = box.textContent ? "block" : "none";
  };
  g.show();
  g.ask = () => {  // a new nonce: the browser sends it even when the press is the same as the last one sent
    if (!g.want) return;
    g.want = Object.assign({}, g.want, { nonce: Date.now() });
    g.sent = Date.now();
    g.send("want", g.want);
  };
  // A press can still be lost between two runs (a page switch under way): ask again every few seconds until the
  // server says it has acted on it.
  clearInterval(g.timer);
  g.timer = setInterval(() => {
    if (g.want && Date.now() - (g.sent || 0) > RESEND_MS && document.querySelector(".st-key-deck_keys")) g.ask();
  }, 500);
  if (!g.listening) {
    g.listening = true;
    window.addEventListener("keydown", (ev) => {
      if (!g.send || ev.ctrlKey || ev.metaKey || ev.altKey || ev.repeat) return;
      const t = ev.target, tag = t && t.tagName;
      if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (t && t.isContentEditable)) return;
      const k = (ev.key || "").toLowerCase();
      if (k !== "f" && k !== "b" && k !== "a") return;
      if (!document.querySelector(".st-key-deck_keys")) return;  // no deck presented now
      ev.preventDefault();
      const base = g.want ? g.want.to : g.pos;
      let to = base, reveal = false;
      if (k === "f") to = Math.min(base + 1, g.n - 1);
      else if (k === "b") to = Math.max(base - 1, 0);
      else reveal = true;
      if (!reveal && to === base) return;
      g.seq += 1;
      g.want = { to: to, reveal: reveal || (g.want ? g.want.reveal && to === base : false), seq: g.seq, win: g.win };
      g.show();
      g.ask();
    }, true);
  }
}
"""
_KEYS: Any = None


def _keys_element():
    global _KEYS
    if _KEYS is None:
        _KEYS = _st().components.v2.component("vilab_deck_keys", js=_KEYS_JS, isolate_styles=False)
    return _KEYS


def _pressed(pos: int, n: int) -> tuple[int, bool] | None:
    """The view the key presses ask for and whether to show its answer, once per press: None when there is no
    press the server has not acted on."""
    st = _st()
    state = st.session_state.get(KEYS_KEY)
    try:
        want = (state or {}).get("want")
    except AttributeError:
        return None
    if not isinstance(want, Mapping):
        return None
    seq, win, to = want.get("seq"), want.get("win"), want.get("to")
    if not (isinstance(seq, int) and isinstance(win, str) and isinstance(to, int)) or isinstance(to, bool):
        return None
    if st.session_state.get(_HANDLED) == (win, seq) or seq <= _handled_seq(win):
        return None
    st.session_state[_HANDLED] = (win, seq)
    return min(max(to, 0), n - 1), bool(want.get("reveal"))


def _handled_seq(win: str) -> int:
    got = _st().session_state.get(_HANDLED)
    return got[1] if isinstance(got, tuple) and len(got) == 2 and got[0] == win else 0


def navigator(current_page: str) -> None:
    """The deck's panel while a deck is presented: where we are, the question, the answer on demand, Next / Back
    (keys F and B; they do not fire while typing in a text box), fixed on the right of the stage beside the figure,
    whole on the screen (the sidebar may be collapsed). Messages go to the sidebar. app.py calls it before the
    page; it draws at the top of the main block, and the panel places itself."""
    st = _st()
    with st.sidebar:
        _show_message()
    pos, deck = position(), current()
    if pos is None or deck is None:
        return
    going = st.session_state.get(_GOING)
    if isinstance(going, int) and not isinstance(going, bool) and 0 <= going < len(deck) and going != pos:
        # the switch to that view was undone (a rerun the browser asked for before it knew, with the old address,
        # came right after it): open it again
        go(going, reveal=st.session_state.get(_REVEALED) == going)
        pos = position()
    st.session_state[_GOING] = None
    pressed = _pressed(pos, len(deck))
    if pressed is not None:
        to, reveal = pressed
        if to != pos:
            go(to, reveal=reveal)
            pos = position()  # a page run on its own stays (no page registry)
        elif reveal:
            st.session_state[_REVEALED] = pos
    _panel(st, current_page, pos, deck)


def _panel(st, current_page: str, pos: int, deck: Deck) -> None:
    import vilab_ui as ui

    view, n = deck.views[pos], len(deck)
    lecture_mode = ui.lecture()
    css = _PANEL_CSS % {"width": PANEL_WIDTH_LECTURE if lecture_mode else PANEL_WIDTH,
                        "room": "" if lecture_mode else _PANEL_ROOM_CSS,
                        "lecture": _PANEL_LECTURE_CSS if lecture_mode else ""}
    with st.container(key=STAGE_KEY):
        st.markdown(f"<style>{css}</style>", unsafe_allow_html=True)
        st.markdown(f"**View {pos + 1} of {n}**: {_plain(view.title)}" if lecture_mode else
                    f"**{_plain(deck.title)}**  \nView {pos + 1} of {n}: {_plain(view.title)}")
        if view.prompt:
            st.markdown(f"**Question.** {_plain(view.prompt)}")
        revealed = st.session_state.get(_REVEALED) == pos
        if view.reveal and revealed:
            with st.container(key="deck_answer"):
                st.markdown(f"**Answer.** {_plain(view.reveal)}")
        with st.container(key="deck_buttons"):
            cols = st.columns(3 if view.reveal and not revealed else 2)
            with cols[0]:
                prev = st.button("Back", key="deck_prev", disabled=pos == 0, width="stretch",
                                 help=f"The previous view (key {SHORTCUT_PREVIOUS})")
            reveal = False
            if view.reveal and not revealed:
                with cols[1]:
                    reveal = st.button("Reveal", key="deck_reveal", width="stretch",
                                       help=f"Show the answer (key {SHORTCUT_REVEAL})")
            with cols[-1]:
                nxt = st.button("Next", key="deck_next", disabled=pos == n - 1, type="primary", width="stretch",
                                help=f"The next view (key {SHORTCUT_NEXT})")
        again = view.page != current_page and st.button("Reopen this view", key="deck_again", width="stretch")
        close = st.button("Close the deck", key="deck_close", type="tertiary",
                          help="Stop presenting; the page menu returns")
        win, seq = st.session_state.get(_HANDLED) or ("", 0)
        _keys_element()(key=KEYS_KEY, data={"pos": pos, "n": n, "deck": token() or deck.title, "win": win,
                                            "seq": seq}, on_want_change=lambda: None)
    if close:
        st.session_state[_POS] = None
        publish()
        st.rerun()
    if reveal:
        st.session_state[_REVEALED] = pos
        st.rerun()
    if prev:
        go(pos - 1)
    elif nxt:
        go(pos + 1)
    elif again:
        go(pos)


def _add_view(current_page: str) -> None:
    """on_click of "Add this view": the current page and its URL state, with the typed question and answer."""
    st = _st()
    params = {k: (vals if len(vals) != 1 else vals[0])
              for k in st.query_params for vals in [st.query_params.get_all(k)]}
    # only this page's widgets and the sidebar's: the address bar may still hold another page's settings
    seen, scope = st.session_state.get(_SIGNATURES) or {}, st.session_state.get(_SCOPE)
    mine = {k for k, sig in seen.items() if isinstance(sig, tuple) and sig and sig[0] in ("", scope)}
    if mine:
        params = {k: v for k, v in params.items() if k in mine}
    try:
        view = make_view(current_page, captured(params), st.session_state.get(_PROMPT_INPUT, ""),
                         st.session_state.get(_REVEAL_INPUT, ""))
        deck = (current() or Deck()).add(view)
    except ValueError as exc:
        say("warning", str(exc))
        return
    keep = position()
    set_current(deck, keep)
    st.session_state[_PROMPT_INPUT] = st.session_state[_REVEAL_INPUT] = ""
    say("success", f"Added view {len(deck)}: {view.title}.")


def builder(current_page: str, decks_page: str | None = None, downloads=None) -> None:
    """The sidebar's deck builder (a closed expander): a question, its answer, "Add this view to the deck".
    ``downloads(deck)``, when given, draws the deck's download buttons under them (app.py passes
    vilab_ui.deck_export's panel, which itself builds on this module)."""
    st = _st()
    deck = current()
    n = len(deck) if deck is not None else 0
    label = "Lecture deck" + (f": {n} view{'s' if n != 1 else ''}" if n else "")
    with st.expander(label, expanded=False):
        st.text_input("Question for the class", key=_PROMPT_INPUT, max_chars=MAX_PROMPT,
                      placeholder="Predict: which method converges first?")
        st.text_area("Answer, shown on demand", key=_REVEAL_INPUT, max_chars=MAX_REVEAL, height=80)
        st.button("Add this view to the deck", key="deck_add", on_click=_add_view, args=(current_page,),
                  width="stretch")
        if n and position() is None:
            if st.button("Present the deck", key="deck_present", width="stretch"):
                go(0)
        if n and downloads is not None:
            downloads(deck)
        if decks_page:
            import vilab_ui as ui

            ui.link(decks_page, "Edit, save or share the deck")
