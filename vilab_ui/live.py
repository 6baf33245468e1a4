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
        fig = ...  # paths up to lv.it, bends at lv.changes(m)
        ui.show(fig, key="live", main=True)
        return {plots.label(m): t for m, t in traces.items()}
    lv.player(draw)
"""

from __future__ import annotations

import re
from typing import Callable, Hashable, Mapping
from urllib.parse import urlencode

import streamlit as st

from vilab.core.live import (MAX_CHANGES, Changes, change_points, format_schedule, merge, parse_schedule, record,
                             run_schedule, stopped_early, truncate, valid_prefix, value_at)

import vilab_ui as ui

_MARKUP = re.compile(r"[<>\[\]]|://|www\.", re.IGNORECASE)

__all__ = ["Live", "SHORTCUTS", "redraw"]

SHORTCUTS = {"play": "P", "step": "N", "step10": "Shift+N", "reset": "0"}


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
        settings = {h: self.changes(c) for h, c in names.items()}
        skey = (ident, tuple(sorted(names.items())))
        store = _store()
        entries = store.get(skey) or []
        best = None
        steps = merge(settings)
        for sett, tr in entries:
            if tr.n_steps == n and merge(sett) == steps:
                return tr
            if valid_prefix(tr, steps, merge(sett), n) and (best is None or tr.n_steps > best[1].n_steps):
                best = (sett, tr)
        if best is not None and stopped_early(best[1]):
            return best[1]
        tr = advance(n, settings, best[1] if best else None, best[0] if best else None)
        store[skey] = ([(settings, tr)] + [e for e in entries if e[1] is not tr])[:4]
        return tr

    # ---------------------------------------------------------------------------------- buttons
    def _step(self, k: int) -> None:
        ss = st.session_state
        it = int(ss[self._k("it")])
        stop = ss.get(self._k("stop"))
        if stop is not None and it >= stop:
            ss[self._k("msg")] = ("Every run has stopped (converged, stalled or diverged): stepping on does "
                                  "nothing. Press Reset to start again.")
            return
        if it >= self.n_max:
            ss[self._k("msg")] = f"This is the last iteration ({self.n_max}); press Reset to start again."
            return
        ss[self._k("it")] = min(it + int(k), self.n_max)

    def _reset(self) -> None:
        ss = st.session_state
        ss[self._k("it")] = 0
        ss[self._k("sched")] = {}
        ss[self._k("playing")] = False
        ss[self._k("stop")] = None

    def _toggle(self) -> None:
        ss = st.session_state
        ss[self._k("playing")] = not self.playing
        st.rerun()  # Play / Pause start or stop the fragment's timer: that needs a whole-page run

    def player(self, draw: Callable[["Live"], Mapping], *, per_tick: int | Callable[[int], int] = 1,
               interval: float = 0.35, fast: int = 10) -> None:
        """The buttons (Play / Pause, Step, Step ×``fast``, Reset; keyboard shortcuts in :data:`SHORTCUTS`) and
        the live figure, in a fragment that alone reruns on a button or a tick of Play.

        ``draw(live)`` draws the figure at ``live.it`` (with ``ui.show(..., main=True)``) and returns
        {label on screen: Trace} of its runs: a diverged run is reported, and when every run has stopped,
        Step does nothing and says so. ``per_tick``: steps per tick of Play (or a function of the iteration,
        e.g. ``lambda it: max(1, it // 10)`` to speed up as the run settles)."""
        playing = self.playing

        @st.fragment(run_every=interval if playing else None, key=_frag_key(self.key))
        def _live():
            ss = st.session_state
            self.sync()
            ticking = self.playing and not ss.pop(self._k("clicked"), False)
            if ticking:
                k = per_tick(self.it) if callable(per_tick) else per_tick
                before = self.it
                self._step(max(int(k), 1))
                if self.it == before:  # the end, or every run stopped: stop the timer
                    ss[self._k("playing")] = False
                    st.rerun(scope="app")
                self.sync()
            row = st.container(horizontal=True, vertical_alignment="center", key=f"{self.key}_buttons")
            with row:
                st.button("Pause" if playing else "Play", key=f"{self.key}_play", on_click=self._toggle,
                          shortcut=SHORTCUTS["play"], help="Play / pause (key P)", type="primary")
                st.button("Step", key=f"{self.key}_step", on_click=self._clicked, args=(1,),
                          shortcut=SHORTCUTS["step"], help="One iteration (key N)")
                st.button(f"Step ×{fast}", key=f"{self.key}_step10", on_click=self._clicked, args=(fast,),
                          shortcut=SHORTCUTS["step10"], help=f"{fast} iterations (Shift+N)")
                st.button("Reset", key=f"{self.key}_reset", on_click=self._reset, shortcut=SHORTCUTS["reset"],
                          help="Back to iteration 0, forgetting the step-size changes (key 0)")
                # one line with the link (a second element would wrap under the buttons and push the figure down)
                st.markdown(f"**iteration {self.it}** of {self.n_max}"
                            + (" · playing" if playing else f" · [Link to this step]({self.share_link()})"),
                            help=None if playing else "The link opens this page at this iteration, with these step "
                                                      "sizes and their changes: copy it to share the exact step.")
            runs = {}
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

        _live()

    def share_link(self) -> str:
        """The page's URL parameters now ("?it=...&lr=...&..."), a link that opens this very step. Built on the
        server from st.query_params, so it is right even when the browser's address bar has not yet caught up
        with the updates of the fragment's reruns (seen during Play)."""
        qp = st.query_params
        # a value no widget makes (markup, an address: a hand-edited or hostile URL) is left out of the link
        keep = {k: [v for v in qp.get_all(k) if not _MARKUP.search(v)] for k in qp}
        return "?" + urlencode({k: v for k, v in keep.items() if v}, doseq=True)

    def _clicked(self, k: int) -> None:
        st.session_state[self._k("clicked")] = True
        self._step(k)
