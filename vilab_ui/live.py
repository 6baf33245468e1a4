"""Live stepping for a page's runs: Play, Pause, Step, Step ×10 and Reset, with step sizes that can be
changed mid-run (the run continues from where it is, and its path bends there).

A page keeps its step-size sliders (URL-synced, as everywhere); a :class:`Live` reads their values, and
when one moves it records the change at the current iteration. The current iteration (``?it=``) and the
changes so far (``?lr=``, e.g. ``srvn@0:1,12:0.3``) are in the URL, so a shared link opens at that step
with the same bends. Every run is a pure function of (page settings, changes, iteration)
(:func:`vilab.core.live.run_schedule`), kept in a store shared by all sessions so a Step extends the last
run instead of computing it again. Only the figure reruns on Step / Play (a Streamlit fragment).

    lv = live.Live("tr", {m: f"s_{m}" for m in methods}, n_max=1000, bounds=(1e-4, 1.78))
    def draw(lv):
        traces = {m: lv.run(("tr", tkey, m), lambda m=m: build(m), {"rho": m}) for m in methods}
        bends = {m: lv.bends(m) for m in methods}
        # paths up to lv.it, bends where the step sizes changed; the builder also takes plain=True (Live.show)
        lv.show(ui.recipe(tplots.paths_figure, traces, bends=bends), key="live", main=True)
        return {plots.label(m): t for m, t in traces.items()}
    lv.player(draw)
"""

from __future__ import annotations

import bisect
import math
import re
import time
import uuid
from typing import Callable, Hashable, Mapping
from urllib.parse import urlencode

import numpy as np
import streamlit as st

from vilab.core.live import (MAX_CHANGES, Changes, change_points, format_schedule, frame_iterations, head, merge,
                             parse_schedule, record, run_schedule, stopped_early, truncate, valid_head, valid_prefix,
                             value_at)

import vilab_ui as ui
from vilab_ui import chart as _chart
from vilab_ui.spec import as_lists

_MARKUP = re.compile(r"[<>\[\]]|://|www\.", re.IGNORECASE)

__all__ = ["Live", "SHORTCUTS", "redraw"]

SHORTCUTS = {"play": "P", "step": "N", "step10": "Shift+N", "reset": "0"}

# Play (see Live.player): the chart element plays stretches of frames the server draws ahead
FPS = 30.0  # frames a second at most (the pace of the iterations is set for this rate)
FPS_MIN = 10.0  # a server slower than this many frames a second still plays, at this rate
FILL = 0.8  # the share of the server's time a play may spend drawing frames (the rest: reruns, messages)
REPORT_EVERY_S = 0.5  # how often the element reports where it is (each report reruns the live fragment)
LEAD_S = 2.0  # frames queued ahead of the browser, in seconds of play
CHUNK_S = 2.0  # the runs are computed ahead in chunks of this many seconds of play (one resume per run)
FIRST_FRAMES = 1  # frames of the first message of a stretch (sent at once: the picture moves within 0.3 s)
BUDGET_S = 0.25  # drawing time of one later message (then it is sent; a Pause or a moved step size waits for it)
_ENTRIES = 8  # runs kept per live run in the shared store (a step-size change resumes from one of them)
_DRAW_S = "_live_draw_s"  # session state: the seconds the last frames took to draw here (the last 16)
_RESTARTS = 3  # a new stretch that changes shape at its first frame starts there instead, at most this often
_DATA = ("x", "y", "z", "text", "customdata")  # a trace's entries a Play's frame gives anew (Live.show)
TAIL = "vilab_tail"  # in a frame's trace: {entry: n}, the entry holds only what follows the previous frame's first n


@ui.cache_resource(max_entries=1)
def _store() -> ui.SharedStore:
    """Live runs shared by every session: per run, its latest traces (a Step extends one of them)."""
    return ui.SharedStore(maxsize=512, ttl_s=3600.0)


def redraw(key: str):
    """An ``on_change`` callback for a page's step-size slider in a live view: rerun only the live figure
    (the fragment of the :class:`Live` named ``key``), not the whole page."""

    def _cb():
        st.rerun(scope=_frag_key(key))

    return _cb


def _frag_key(key: str) -> str:
    return f"{key}_live"


class Live:
    """The live state of a page's runs: the current iteration and each setting's changes.

    key : a name unique on the page (session-state and widget keys start with it).
    channels : {setting name: widget key}: each setting (letters, digits, '_', '.', '-'; e.g. the method's
        code, or "snngm.alpha") and the key of the widget holding its current value (a step-size slider).
    n_max : the last iteration (Play stops there).
    bounds : (lo, hi) for every setting, or {name: (lo, hi)}: the values a URL may hold.
    it_param, lr_param : the URL parameters of the iteration and the changes.
    """

    def __init__(self, key: str, channels: Mapping[str, str], n_max: int, bounds=(0.0, float("inf")), *,
                 it_param: str = "it", lr_param: str = "lr"):
        self.key, self.channels, self.n_max = str(key), dict(channels), max(int(n_max), 1)
        self.bounds = dict(bounds) if isinstance(bounds, Mapping) else {c: tuple(bounds) for c in self.channels}
        self.it_param, self.lr_param = it_param, lr_param
        self._calls = self._plains = None  # while a Play draws frames: the runs followed, the plain figures
        self._framing = False  # a Play's frame is drawn: the live figure as plain data only (see show)
        self.sync()

    # ---------------------------------------------------------------------------------- state
    def _k(self, name: str) -> str:
        return f"_live_{self.key}_{name}"

    def _from_url(self) -> tuple[int, dict]:
        it = 0
        try:
            raw = st.query_params.get(self.it_param)
            if raw is not None and str(raw).strip().isdigit() and int(raw) <= self.n_max:
                it = int(raw)
        except (TypeError, ValueError):
            it = 0
        try:
            sched = parse_schedule(st.query_params.get(self.lr_param) or "", self.bounds, self.n_max)
        except (TypeError, ValueError):
            sched = {}
        return it, {c: truncate(ch, it) for c, ch in sched.items() if c in self.channels}

    def sync(self) -> None:
        """Read the state (URL on first use in this session, then session state), record a moved widget as a
        change at the current iteration, and write the state back into the URL."""
        ss = st.session_state
        scope = ss.get("_vilab_scope", "")
        if ss.get(self._k("scope")) != scope or self._k("it") not in ss:
            ss[self._k("it")], ss[self._k("sched")] = self._from_url()
            ss[self._k("scope")] = scope
            self._prime_widgets()
        it = min(int(ss[self._k("it")]), self.n_max)
        old = ss[self._k("sched")]
        sched = {}
        for c, wkey in self.channels.items():
            v = ss.get(wkey)
            try:
                v = float(v)
            except (TypeError, ValueError):
                continue
            st.query_params[wkey] = ui.widgets._fmt_num(v)  # also on a figure-only rerun (see redraw)
            try:
                sched[c] = record(old.get(c), it, v)
            except ValueError:  # too many changes: keep the old ones, say so
                sched[c] = old.get(c) or ((0, v),)
                ss[self._k("msg")] = (f"A live run keeps at most {MAX_CHANGES} changes of one step size; press "
                                      "Reset to start again.")
        ss[self._k("it")], ss[self._k("sched")] = it, sched
        shown = {c: ch for c, ch in sched.items() if len(ch) > 1}
        st.query_params[self.it_param] = str(it)
        if shown:
            st.query_params[self.lr_param] = format_schedule(shown)
        elif self.lr_param in st.query_params:
            del st.query_params[self.lr_param]

    def _prime_widgets(self) -> None:
        """Opened from a link: put each step-size widget at its setting's value at the link's iteration, so a
        link with ``lr`` but without (or with another value of) a widget's own parameter does not record the
        widget's value as one more change. The widgets are already made in this run: their state is dropped
        and the page runs again, making them anew from the URL."""
        ss = st.session_state
        it, sched = int(ss[self._k("it")]), ss[self._k("sched")]
        moved = False
        for c, wkey in self.channels.items():
            if not sched.get(c) or wkey not in ss:
                continue
            want = value_at(sched[c], it)
            try:
                have = float(ss[wkey])
            except (TypeError, ValueError):
                continue
            if abs(have - want) > 1e-9 * max(abs(want), 1e-300):
                st.query_params[wkey] = ui.widgets._fmt_num(want)
                ss.get(ui.widgets._SIGNATURES, {}).pop(wkey, None)
                del ss[wkey]
                moved = True
        if moved:
            st.rerun()

    @property
    def it(self) -> int:
        """The current iteration."""
        return int(st.session_state[self._k("it")])

    @property
    def schedule(self) -> dict[str, Changes]:
        """{setting: ((0, v0), (t1, v1), ...)} so far."""
        return dict(st.session_state[self._k("sched")])

    def changes(self, channel: str) -> Changes:
        """The changes of one setting: ((0, v0), (t1, v1), ...)."""
        return st.session_state[self._k("sched")][channel]

    def bends(self, channel: str) -> list[tuple[int, float]]:
        """[(iteration, new value), ...]: where the setting changed after the start (where to mark the path)."""
        return change_points(self.changes(channel))

    def value(self, channel: str) -> float:
        """The setting's value now."""
        return value_at(self.changes(channel), self.it)

    @property
    def playing(self) -> bool:
        return bool(st.session_state.get(self._k("playing"), False))

    # ---------------------------------------------------------------------------------- runs
    def run(self, ident: Hashable, build: Callable[[], tuple], hyper: Mapping[str, str], n: int | None = None,
            **options):
        """The trace of one run at the current iteration (or ``n``): ``build()`` -> (algorithm, key, start
        state) is called only when the run is not in the shared store; ``ident`` names the run (everything
        it depends on besides the settings: the page, target, method, start, seed...); ``hyper`` maps the
        algorithm's run-time settings to this Live's settings ({"rho": "srvn"}, or for a method with two,
        {"alpha": "snngm", "beta": "snngm.beta"}). A run that diverges stops there (see its status).
        ``options`` go to the runner (default ``chunk_size=256``: Step, Step ×10 and a long first run share
        one compiled loop, so the first Step does not compile a new one)."""
        options.setdefault("chunk_size", 256)

        def advance(n, settings, prefix, prefix_settings):
            alg, key, state = build()
            return run_schedule(alg, key, state, n, settings, prefix=prefix, prefix_settings=prefix_settings,
                                **options)

        return self.follow(ident, hyper, advance, n)

    def follow(self, ident: Hashable, names: Mapping[str, str], advance: Callable, n: int | None = None):
        """:meth:`run` for a run that is not an Algorithm (e.g. a scalar loop): ``advance(n, settings, prefix,
        prefix_settings)`` -> the Trace at iteration ``n`` of the run whose settings change as ``settings``
        ({its name: ((0, v0), (t1, v1), ...)}, named as in ``names`` = {its name: this Live's setting}),
        continuing ``prefix`` (a Trace it returned for ``prefix_settings``; None: from the start; use
        :func:`vilab.core.live.valid_prefix` to check it). Results are kept in the shared store."""
        n = self.it if n is None else int(n)
        calls = getattr(self, "_calls", None)
        if calls is not None:  # a Play's frames are being drawn: remember the run, to compute it ahead
            calls.append((ident, names, advance))
        settings = {h: self.changes(c) for h, c in names.items()}
        skey = (ident, tuple(sorted(names.items())))
        store = _store()
        entries = store.get(skey) or []
        best = part = None
        steps = merge(settings)
        for sett, tr in entries:
            es = merge(sett)
            if tr.n_steps == n and es == steps:
                return tr
            if part is None and tr.n_steps > n and valid_head(tr, steps, es, n):
                part = (sett, tr)
            if valid_prefix(tr, steps, es, n) and (best is None or tr.n_steps > best[1].n_steps):
                best = (sett, tr)
        if best is not None and stopped_early(best[1]):
            return best[1]
        if part is not None:  # a run computed further ahead (a Play's): its first n steps
            h = head(part[1], n)
            if h is not None:
                return h
        tr = advance(n, settings, best[1] if best else None, best[0] if best else None)
        store[skey] = ([(settings, tr)] + [e for e in entries if e[1] is not tr])[:_ENTRIES]
        return tr

    def show(self, figure, *, key: str | None = None, main: bool = False, **kw):
        """Draw the live figure in ``draw`` (see :meth:`player`), as :func:`vilab_ui.show` draws a figure
        (``key``, ``main`` and ``kw`` are its arguments). ``figure`` is a :func:`vilab_ui.recipe` whose builder
        also takes ``plain=True`` and then returns, instead of the figure, what of it the runs change, as plain
        data: ``{"data": [every trace as a dict (its arrays may be numpy's), in the figure's order], "layout":
        {every layout entry computed from the runs}}`` (the live figures of vilab.plots do, e.g.
        vilab.plots.fields.field_pair_figure).

        While a Play draws its frames only that plain data is built, no graph objects: a frame's trace is the
        one of the stretch's first figure (built and styled by ui.show) with the entries of :data:`_DATA` the
        plain data gives. A trace whose other entries change, another number of traces or a changed layout
        entry ends the stretch there, and the next starts from a figure built anew."""
        if not isinstance(figure, ui.Recipe):
            raise ValueError("A live figure is given as ui.recipe(builder, ...), with a builder that also takes "
                             f"plain=True; got {type(figure).__name__}.")
        if self._plains is not None:  # a Play draws: keep the plain data (and, for a frame, only that)
            self._plains.append((key, main, figure.build(*figure.args, plain=True, **figure.kwargs)))
            if self._framing:
                return None
        return ui.show(figure, key=key, main=main, **kw)

    # ---------------------------------------------------------------------------------- buttons
    def _step(self, k: int) -> None:
        ss = st.session_state
        it = int(ss[self._k("it")])
        stop = ss.get(self._k("stop"))
        if stop is not None and it >= stop:
            ss[self._k("msg")] = _STOPPED
            return
        if it >= self.n_max:
            ss[self._k("msg")] = _LAST.format(self.n_max)
            return
        ss[self._k("it")] = min(it + int(k), self.n_max)

    def _reset(self) -> None:
        ss = st.session_state
        ss[self._k("it")] = 0
        ss[self._k("sched")] = {}
        ss[self._k("playing")] = False
        ss[self._k("stop")] = None
        ss.pop(self._k("play"), None)

    def _halt(self) -> None:
        """Stop a play where the browser is now (Pause; Step while playing): the iteration becomes the
        browser's, and the frames queued beyond it are forgotten."""
        ss = st.session_state
        pl = ss.pop(self._k("play"), None)
        if self.playing and pl is not None:
            ss[self._k("it")] = _position(pl, self._report(pl), time.time(), estimate=True)
        ss[self._k("playing")] = False

    def _toggle(self) -> None:
        ss = st.session_state
        if self.playing:
            self._halt()
            return
        ss[self._k("playing")] = True
        ss.pop(self._k("play"), None)
        if _chart_missing():  # no chart element to play frames: Play ticks the fragment (a whole-page run)
            st.rerun()

    def _clicked(self, k: int) -> None:
        st.session_state[self._k("clicked")] = True
        self._halt()
        self._step(k)

    # ---------------------------------------------------------------------------------- the player
    def player(self, draw: Callable[["Live"], Mapping], *, per_tick: int | Callable[[int], int] = 1,
               interval: float = 0.35, fast: int = 10) -> None:
        """The buttons (Play / Pause, Step, Step ×``fast``, Reset; keyboard shortcuts in :data:`SHORTCUTS`) and
        the live figure, in a fragment that alone reruns on a button.

        ``draw(live)`` draws the figure at ``live.it`` (with ``ui.show(..., main=True)``) and returns
        {label on screen: Trace} of its runs: a diverged run is reported, and when every run has stopped,
        Step does nothing and says so.

        Play runs in the browser at the screen's rate. The server computes the runs ahead in chunks (the
        runner's resume, kept in the shared store), draws the figure at each frame's iteration with ``draw``
        (collected, not drawn; each run is then a head of the run computed ahead): the stretch's first figure
        through ui.show, each frame as the live figure's plain data only (:meth:`show`: no graph objects), and
        sends the chart element a stretch of Plotly frames holding only the traces that changed
        (vilab_ui.chart's play message). The element plays them and reports where it is; each report reruns
        this fragment, which follows the browser's iteration (the URL's ``it``) and sends the next frames. A
        step size moved while playing is recorded at the browser's iteration and a new stretch starts there.
        ``per_tick``: iterations per ``interval`` seconds of play (or a function of the iteration, e.g.
        ``lambda it: max(1, it // 10)`` to speed up as the run settles), at least one a frame."""
        pace = per_tick if callable(per_tick) else (lambda it, k=int(per_tick): k)

        def frame_step(it: int, fps: float) -> int:  # iterations from one frame to the next
            return max(1, int(round(pace(it) / (fps * interval))))

        legacy = _chart_missing()  # Streamlit's own Plotly chart draws: Play ticks the fragment as before
        playing = self.playing
        st.session_state[self._k("full")] = True  # this run draws the whole page (a play checks its figure)

        @st.fragment(run_every=interval if (playing and legacy) else None, key=_frag_key(self.key))
        def _live():
            ss = st.session_state
            full = ss.pop(self._k("full"), False)
            self._more = False  # set by _play: more frames are wanted at once
            clicked = ss.pop(self._k("clicked"), False)
            pl = ss.get(self._k("play")) if self.playing and not legacy else None
            if pl is not None:  # where the browser is; a step size just moved changes the run there
                rep = self._report(pl)
                ss[self._k("it")] = _position(pl, rep, time.time(), estimate=self._moved())
                if rep is not None and rep["at"] == pl["last"] and pl["end"] is not None:
                    self._ended(pl["end_msg"])  # the browser has drawn the last frame there is
            elif self.playing and not legacy:  # Play pressed: is there anything to play?
                stop = ss.get(self._k("stop"))
                if stop is not None and self.it >= stop:
                    self._ended(_STOPPED)
                elif self.it >= self.n_max:
                    self._ended(_LAST.format(self.n_max))
            self.sync()
            if self.playing and legacy and not clicked:
                before = self.it
                self._step(max(int(pace(self.it)), 1))
                if self.it == before:  # the end, or every run stopped: stop the timer
                    ss[self._k("playing")] = False
                    st.rerun(scope="app")
                self.sync()
            row = st.container(horizontal=True, vertical_alignment="center", key=f"{self.key}_buttons")
            with row:
                st.button("Pause" if self.playing else "Play", key=f"{self.key}_play", on_click=self._toggle,
                          shortcut=SHORTCUTS["play"], help="Play / pause (key P)", type="primary")
                st.button("Step", key=f"{self.key}_step", on_click=self._clicked, args=(1,),
                          shortcut=SHORTCUTS["step"], help="One iteration (key N)")
                st.button(f"Step ×{fast}", key=f"{self.key}_step10", on_click=self._clicked, args=(fast,),
                          shortcut=SHORTCUTS["step10"], help=f"{fast} iterations (Shift+N)")
                st.button("Reset", key=f"{self.key}_reset", on_click=self._reset, shortcut=SHORTCUTS["reset"],
                          help="Back to iteration 0, forgetting the step-size changes (key 0)")
                on = self.playing
                # one line with the link (a second element would wrap under the buttons and push the figure down)
                st.markdown(f"**iteration {self.it}** of {self.n_max}"
                            + (" · playing" if on else f" · [Link to this step]({self.share_link()})"),
                            help=None if on else "The link opens this page at this iteration, with these step "
                                                 "sizes and their changes: copy it to share the exact step.")
            runs = None
            if self.playing and not legacy:
                try:
                    runs = self._play(draw, frame_step, full)
                except Exception as exc:  # noqa: BLE001 - said in a sentence, and the figure drawn paused
                    self._ended(None)
                    ss[self._k("fail")] = (f"The play stopped: {exc}" if isinstance(exc, ValueError) else
                                           f"The play stopped: something went wrong ({type(exc).__name__}: {exc}).")
                    st.rerun(scope="app" if full else "fragment")  # with the Play button back
            if runs is None:  # paused, stepped, or the play has just ended
                with ui.guard("live run"):
                    runs = draw(self) or {}
            stopped = [t for t in runs.values() if stopped_early(t)]
            ss[self._k("stop")] = (max(t.n_steps for t in stopped) if runs and len(stopped) == len(runs)
                                   else None)
            for label, tr in runs.items():
                ui.report_status(tr, label)
            msg = ss.pop(self._k("msg"), None)
            if msg:
                st.info(msg)
            fail = ss.pop(self._k("fail"), None)
            if fail:
                st.warning(ui.plain(fail))
            if self.playing and not full and self._more:
                # the browser's queue is still short: draw the next frames now, not after its next report (a
                # Pause, a Step or a moved step size interrupts this rerun at its first element)
                self._more = False
                st.rerun(scope="fragment")

        _live()

    def _moved(self) -> bool:
        """Whether a step-size widget holds another value than the one in force (it was just moved)."""
        ss = st.session_state
        sched = ss.get(self._k("sched")) or {}
        for c, wkey in self.channels.items():
            try:
                v = float(ss.get(wkey))
            except (TypeError, ValueError):
                continue
            if c in sched and value_at(sched[c], self.it) != v:
                return True
        return False

    def _report(self, pl: dict) -> dict | None:
        """The chart element's latest report on this stretch ({at, queued, t} of its play state, see
        vilab_ui.chart.show's ``play``), with the server's time it was first seen; None before the first."""
        try:
            state = st.session_state.get(pl["chart"]) if pl.get("chart") else None
            rep = state.get("play") if hasattr(state, "get") else None
        except Exception:  # noqa: BLE001 - no state yet
            rep = None
        old = pl.get("report")
        if not isinstance(rep, Mapping) or rep.get("token") != pl["token"]:
            return old
        try:
            got = {"at": int(rep["at"]), "queued": int(rep.get("queued", rep["at"])), "t": float(rep.get("t", 0.0))}
        except (KeyError, TypeError, ValueError, OverflowError):
            return old
        if not (pl["base"] <= got["at"] <= pl["last"]) or not math.isfinite(got["t"]):
            return old  # not a frame of this stretch
        if old is None or (old["at"], old["queued"], old["t"]) != (got["at"], got["queued"], got["t"]):
            got["seen"] = time.time()
            # the browser's clock against the server's: the shortest delay seen bounds their difference
            got["offset"] = min(got["seen"] - got["t"] / 1000.0, old["offset"] if old else math.inf)
            pl["report"] = got
        return pl["report"]

    def _capture(self, draw, it: int, frame: bool = False):
        """``draw(self)`` at iteration ``it``, collected without drawing: (the figures as the browser is sent
        them, the live figures' plain data (see :meth:`show`), {label: Trace}, the runs it followed), each
        figure as (key, main, figure). For a ``frame`` the live figures are built as plain data only."""
        ss = st.session_state
        keep = ss[self._k("it")]
        ss[self._k("it")] = int(it)
        self._calls, self._plains, self._framing = [], [], bool(frame)
        try:
            with _chart.capturing() as got:  # any other figure is collected, not drawn
                runs = draw(self) or {}
        finally:
            ss[self._k("it")] = keep
            calls, plains = self._calls, self._plains
            self._calls, self._plains, self._framing = None, None, False
        return list(got), plains, dict(runs), calls

    def _play(self, draw, frame_step, full: bool) -> dict | None:
        """Send the chart element the play's next frames (a new stretch when Play is pressed, after a
        step-size change, when the page's figure changed, or where the figure changes shape); returns the
        runs at the browser's iteration."""
        ss = st.session_state
        pl = ss.get(self._k("play"))
        start = None  # where a new stretch starts
        if pl is None:  # Play: the first frame after the iteration shown (the picture moves at once)
            start = min(self.it + frame_step(self.it, _fps()), self.n_max)
        elif pl["sched"] != self.schedule or (full and not self._same_page(pl, draw)):
            start = self.it  # a step size moved (or the page changed): from the browser's iteration on
        else:
            rep = self._report(pl)
            if rep is not None and rep["at"] == pl["last"] and pl["brk"] is not None:
                start = pl["brk"]  # the figure changes shape there: a new stretch from that frame
        new = start is not None
        for _ in range(_RESTARTS):
            if start is not None:
                ss[self._k("it")] = start
                self.sync()
                figs, plains, runs, calls = self._capture(draw, start)
                pl = _new_stretch(start, figs, plains, runs, calls, self.schedule)
                ss[self._k("play")] = pl
            want = _wanted(pl, self.it)
            if want and pl["end"] is None and pl["brk"] is None:
                self._extend(pl, draw, frame_step, want)
            if pl["frames"] or pl["brk"] is None:
                break
            # the stretch changes shape at its first frame: it starts there instead (a stretch without frames is
            # not played, and the element would not report)
            start = pl["brk"]
        _send(pl)
        # the first message of a stretch ends its run (no rerun at once): the browser draws an element's new data
        # when the run that sent it is over, and its first report asks for the next frames
        self._more = bool(_wanted(pl, self.it)) and pl["end"] is None and pl["brk"] is None and not new
        return _runs_at(pl, self.it)

    def _ended(self, msg: str | None) -> None:
        """The play is over (``msg`` says why, under the figure): the figure is drawn paused, where it is."""
        ss = st.session_state
        ss[self._k("playing")] = False
        ss.pop(self._k("play"), None)
        if msg:
            ss[self._k("msg")] = msg

    def _same_page(self, pl: dict, draw) -> bool:
        """Whether the page, run again, draws the stretch's last frame as it was sent (else a setting other than
        a live step size was changed, and the play starts again from where it is)."""
        figs, _, _, _ = self._capture(draw, pl["last"])
        got = _spec_of(pl, figs)
        return got is not None and _blob(_layout(got)) == _blob(_layout(pl["base_spec"])) \
            and _blob(got["data"]) == _blob(pl["data"])

    def _extend(self, pl: dict, draw, frame_step, want: int) -> None:
        """Up to ``want`` more frames, drawn for at most BUDGET_S (at least one; FIRST_FRAMES in the first
        message of a stretch). The runs are computed ahead in chunks of CHUNK_S of play (one resume per run,
        kept in the shared store), so each frame's runs are heads of them (vilab.core.live.head)."""
        last, end = pl["last"], self.n_max
        step = lambda it: frame_step(it, pl["fps"])  # noqa: E731 - the stretch's rate
        plan = frame_iterations(last, end, step, limit=FIRST_FRAMES if not pl["frames"] else want)
        if not plan:
            pl["end"], pl["end_msg"] = last, _LAST.format(self.n_max)
            return
        if pl["frames"] and pl["chunk"] < plan[-1]:  # the next chunk of the runs, from the shared store (not
            # before the first message: its frames' own runs are a step or two, and the picture moves at once)
            chunk = frame_iterations(last, end, step, limit=max(len(plan), int(CHUNK_S * pl["fps"])))[-1]
            for ident, names, advance in pl["calls"]:
                self.follow(ident, names, advance, chunk)
            pl["chunk"] = chunk
        t0 = time.perf_counter()
        for j in plan:
            if j != plan[0] and time.perf_counter() - t0 > BUDGET_S:
                break
            t1 = time.perf_counter()
            _, plains, runs, calls = self._capture(draw, j, frame=True)
            plain = _spec_of(pl, plains)
            got = None if plain is None else _restyled(pl, plain)
            spec = None
            if got is not None and got[1]:  # a trace's look changed: the figure there, built (graph objects) once
                figs, _, runs, calls = self._capture(draw, j)
                spec = _spec_of(pl, figs)
            frame = None if got is None else _frame(pl, got[0], got[1], j, spec)
            _note_draw(time.perf_counter() - t1)
            if frame is None:  # the figure changes shape (a trace or the layout): a new stretch starts there
                pl["brk"] = j
                break
            pl["frames"].append(j)
            pl["new"].append(frame)
            pl["runs"][j] = runs
            pl["calls"] = calls or pl["calls"]
            pl["last"] = j
            if runs and all(stopped_early(t) for t in runs.values()):
                pl["end"], pl["end_msg"] = j, _STOPPED
                break
            if j >= end:
                pl["end"], pl["end_msg"] = j, _LAST.format(self.n_max)
                break
        for j in [j for j in pl["runs"] if j < self.it][:-1]:  # the runs of frames the browser has passed
            del pl["runs"][j]

    def share_link(self) -> str:
        """The page's URL parameters now ("?it=...&lr=...&..."), a link that opens this very step. Built on the
        server from st.query_params, so it is right even when the browser's address bar has not yet caught up
        with the updates of the fragment's reruns (seen during Play)."""
        qp = st.query_params
        # a value no widget makes (markup, an address: a hand-edited or hostile URL) is left out of the link
        keep = {k: [v for v in qp.get_all(k) if not _MARKUP.search(v)] for k in qp}
        return "?" + urlencode({k: v for k, v in keep.items() if v}, doseq=True)


_STOPPED = ("Every run has stopped (converged, stalled or diverged): stepping on does nothing. Press Reset to start "
            "again.")
_LAST = "This is the last iteration ({}); press Reset to start again."


def _chart_missing() -> bool:
    """Whether Streamlit's own Plotly chart draws the figures here (no vilab chart element to play frames)."""
    return _chart._chart_element() is None


def _fps() -> float:
    """The frame rate a stretch plays at: FPS, or what this server draws (FILL of its time: the median of its
    last frames), at least FPS_MIN."""
    got = st.session_state.get(_DRAW_S)
    if not isinstance(got, list) or not got:
        return FPS
    s = sorted(got)[len(got) // 2]
    return float(round(min(FPS, max(FPS_MIN, FILL / s)), 1)) if s > 0 else FPS


def _note_draw(seconds: float) -> None:
    """Keep the time one frame took to draw (the last 16)."""
    got = st.session_state.get(_DRAW_S)
    got = list(got) if isinstance(got, list) else []
    st.session_state[_DRAW_S] = (got + [float(seconds)])[-16:]


def _new_stretch(start: int, figs: list, plains: list, runs: dict, calls: list | None, schedule: dict) -> dict:
    """A play's stretch from iteration ``start`` (whose figures and plain data, as collected, are ``figs`` and
    ``plains``): what the server keeps of it in session state (see Live._play)."""
    if not figs:
        raise ValueError("This page's live figure could not be found to play; press Step instead.")
    key, main, spec = next(((k, m, s) for k, m, s in figs if m), figs[0])
    if key is None and not main:
        raise ValueError("A live figure needs a key (ui.show(fig, key=...)) to play.")
    plain = next((p for k, m, p in plains if k == key and m == main), None)
    if plain is None:
        raise ValueError("This page's live figure is not drawn with Live.show, which plays its frames; press Step "
                         "instead.")
    layout, parts = _parts(plain)
    if len(parts) != len(spec["data"]):
        raise ValueError(f"The live figure's plain data has {len(parts)} traces and the figure {len(spec['data'])}; "
                         "it cannot be played. Press Step instead.")
    start = int(start)
    return {"token": uuid.uuid4().hex[:12], "base": start, "base_spec": spec, "data": list(spec["data"]),
            "style": list(spec["data"]),
            "ref": {"layout": layout, "rest": [r for r, _ in parts], "own": [_blob(o) for _, o in parts]},
            "last": start, "frames": [], "new": [], "pending": [], "moved": set(), "key": key, "main": main,
            "chart": key or _chart.MAIN_CHART, "fps": _fps(), "sched": schedule, "runs": {start: runs},
            "calls": calls or [], "chunk": start, "sent": None, "sent_at": None, "report": None, "end": None,
            "end_msg": None, "brk": None, "msg_base": (start, spec)}


def _spec_of(pl: dict, figs: list):
    """The stretch's figure among those a draw collected ((key, main, figure) each; a spec or plain data)."""
    return next((s for k, m, s in figs if k == pl["key"] and m == pl["main"]), None)


def _layout(spec: dict) -> dict:
    return {k: v for k, v in (spec.get("layout") or {}).items() if k != "datarevision"}


def _blob(x) -> bytes:
    """``x`` as the JSON the browser is sent (NaN as null: two draws of one figure compare equal)."""
    import orjson

    return orjson.dumps(x, option=orjson.OPT_SERIALIZE_NUMPY)


def _parts(plain: Mapping) -> tuple[bytes, list[tuple[bytes, dict]]]:
    """A live figure's plain data (Live.show) taken apart: (its layout entries as JSON, [(a trace's entries but
    those of :data:`_DATA` as JSON, its entries of _DATA as the browser is sent them), ...])."""
    if not isinstance(plain, Mapping) or not isinstance(plain.get("data"), (list, tuple)):
        raise ValueError("A live figure's builder, given plain=True, returns {'data': [trace dicts], 'layout': "
                         "{...}}; got " + type(plain).__name__ + ".")
    out = []
    for tr in plain["data"]:
        own = {k: tr[k] for k in _DATA if k in tr}
        rest = {k: v for k, v in tr.items() if k not in own}
        out.append((_blob(as_lists([sorted(own), rest])), as_lists(own)))
    return _blob(as_lists(plain.get("layout") or {})), out


def _restyled(pl: dict, plain: Mapping) -> tuple[bytes, list] | None:
    """The figure's plain data at a frame against the stretch's (Live.show): (its parts, :func:`_parts`, and the
    traces whose entries other than their data changed: their look, e.g. a line's width), or None when the figure
    changed shape (another number of traces, a layout entry: a new stretch starts there)."""
    ref = pl["ref"]
    layout, parts = _parts(plain)
    if len(parts) != len(ref["rest"]) or layout != ref["layout"]:
        return None
    return parts, [i for i, (rest, _) in enumerate(parts) if rest != ref["rest"][i]]


def _frame(pl: dict, parts: list, restyled: list, it: int, spec: dict | None = None) -> dict | None:
    """The Plotly frame (as a dict) that turns the stretch's first figure into the figure at iteration ``it``, from
    that figure's plain data taken apart and the traces whose look changed (:func:`_restyled`): the traces whose
    data differ from the first figure's, or differed earlier in the stretch, whole and by index (the element plays
    frames over the first figure without drawing the others again: contours, heat maps), each the first figure's
    trace with the new data. No graph objects are built, but where a trace's look changed: ``spec``, the figure at
    ``it`` as ui.show sends it, gives those traces whole (and they are the stretch's from then on); None when it
    changed shape there (another layout).

    A data entry that continues the same entry of the previous frame (of the first figure, for the first frame)
    goes as its new part only, named in the trace's :data:`TAIL` ({entry: how many it keeps}): a path grows by a
    few points a frame, and a message holds up to LEAD_S of frames. The chart element puts the entry together
    again before it plays the frame (vilab/plots/browser/chart.js); the figure drawn is the same."""
    ref, style, moved = pl["ref"], pl["style"], pl["moved"]
    if restyled:
        if spec is None or len(spec["data"]) != len(style) \
                or _blob(_layout(spec)) != _blob(_layout(pl["base_spec"])):
            return None
        for i in restyled:
            style[i], ref["rest"][i] = spec["data"][i], parts[i][0]
            moved.add(i)
    for i, (_, own) in enumerate(parts):
        if i not in moved and _blob(own) != ref["own"][i]:
            moved.add(i)
    idx = sorted(moved)
    new = {i: {**style[i], **parts[i][1]} for i in idx}
    sent = [_tail(new[i], pl["data"][i]) for i in idx]
    pl["data"] = [new.get(i, t) for i, t in enumerate(style)]
    return {"name": str(int(it)), "data": sent, "traces": idx}


def _tail(trace: dict, before: dict) -> dict:
    """``trace`` as a frame sends it after ``before`` (the same trace in the previous frame): each data entry that
    begins as the entry of ``before`` begins as what follows that common beginning only, named in :data:`TAIL`
    (a path that grew; ellipses of which only the last moved)."""
    kept = {}
    for k in _DATA:
        a, b = trace.get(k), before.get(k)
        if isinstance(a, list) and isinstance(b, list):
            n = _common(a, b)
            if n:
                kept[k] = n
    if not kept:
        return trace
    return {**trace, **{k: trace[k][n:] for k, n in kept.items()}, TAIL: kept}


def _common(a: list, b: list) -> int:
    """How many entries the lists ``a`` and ``b`` (a trace's data, as the browser is sent it) begin with alike, NaN
    (a gap) alike NaN: they are the same JSON."""
    m = min(len(a), len(b))
    if a[:m] == b[:m]:
        return m
    try:
        x, y = np.asarray(a[:m]), np.asarray(b[:m])
    except ValueError:  # ragged
        return 0
    if x.shape != y.shape or x.dtype.kind not in "fiub" or y.dtype.kind not in "fiub":
        return 0
    same = x == y
    if x.dtype.kind == "f" and y.dtype.kind == "f":
        same |= np.isnan(x) & np.isnan(y)
    same = same.reshape(m, -1).all(axis=1)
    bad = np.flatnonzero(~same)
    return int(bad[0]) if bad.size else m


def _wanted(pl: dict, it: int) -> int:
    """How many more frames to queue for the browser at iteration ``it``: LEAD_S of play ahead of it."""
    ahead = len(pl["frames"]) - bisect.bisect_right(pl["frames"], it)
    return max(0, int(math.ceil(LEAD_S * pl["fps"])) - ahead)


def _position(pl: dict, rep: dict | None, now: float, estimate: bool = False) -> int:
    """The iteration the browser is at: the frame it last reported, or with ``estimate`` the frame it has
    reached since (the report's time and the frame rate; never past the frames sent)."""
    frames, base = pl["frames"], pl["base"]
    if rep is None:
        if not estimate or not frames or pl.get("sent_at") is None:
            return base
        k = int((now - pl["sent_at"]) * pl["fps"]) - 1
    else:
        if not estimate:
            return int(rep["at"])
        i = bisect.bisect_left(frames, rep["at"])
        i = i if i < len(frames) and frames[i] == rep["at"] else -1
        k = i + int(max(0.0, now - rep["offset"] - rep["t"] / 1000.0) * pl["fps"])
    if k < 0 or not frames:
        return base
    return frames[min(k, len(frames) - 1)]


def _runs_at(pl: dict, it: int) -> dict:
    """The runs drawn at the frame the browser is at (for their statuses)."""
    j = max((j for j in pl["runs"] if j <= it), default=None)
    return pl["runs"][j] if j is not None else pl["runs"].get(pl["base"], {})


def _send(pl: dict) -> None:
    """The chart element's message (vilab_ui.chart.show's ``play``): the stretch's base figure, every frame the
    element has not yet said it queued, and the play. The browser draws only the newest message it received
    (React hands an element the latest data; a busy browser skips the ones between), so a message holds every
    frame since the element's last report, not only those drawn since the last message: none is lost."""
    new, pl["new"] = pl["new"], []
    rep = pl.get("report")
    queued = rep["queued"] if rep is not None else None
    before = pl["pending"]
    pending = [f for f in before + new if queued is None or int(f["name"]) > queued]
    if new or pl["sent"] is None or len(pending) != len(before):
        if new:  # at the rate the last frames were drawn (the element takes it from here on)
            pl["fps"] = _fps()
        pl["pending"] = pending
        fig = {**pl["msg_base"][1], "frames": pending}
        play = {"token": pl["token"], "fps": pl["fps"], "playing": True, "report_every_s": REPORT_EVERY_S,
                "base": int(pl["msg_base"][0])}
        pl["sent"] = (fig, play)
        if pl["sent_at"] is None:
            pl["sent_at"] = time.time()
    fig, play = pl["sent"]
    _show_play(fig, pl["key"], pl["main"], play)


def _show_play(fig: dict, key: str | None, main: bool, play: dict) -> None:
    """Draw a play's figure (already in the form the browser is sent, with its frames) as ui.show draws the
    page's main figure."""
    ui.show(fig, key=key or _chart.MAIN_CHART, main=main, download=main, play=play)
