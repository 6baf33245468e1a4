"""Caches shared by every visitor: Streamlit's caches bounded in size and time, the disk store below them,
background prefetch and recompute, and :class:`SharedStore`.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Callable

import streamlit as st
from vilab_ui import result_cache

CACHE_MAX_ENTRIES = 64  # per cached function
CACHE_TTL_S = 6 * 3600  # an entry unused this long is dropped


def cache_data(*, keep: bool = True, **kw):
    """``st.cache_data`` bounded in size and time (every cache of a page is shared by all its visitors):
    at most ``max_entries`` (64) results, each dropped ``ttl`` (6 h) after it was computed, no spinner
    unless asked. A cached function must not touch widgets (Streamlit cannot replay them on a hit).

    Below the memory cache, a call whose arguments are plain settings is also kept on disk for every later
    server process (:mod:`vilab_ui.result_cache`: a restarted server, the replicas of a lecture hall);
    ``keep=False`` keeps a function's results in memory only. A result served from disk is computed again
    in the background (:func:`_compute_again`), so that the page's next slider change finds its programs traced."""
    kw.setdefault("max_entries", CACHE_MAX_ENTRIES)
    kw.setdefault("ttl", CACHE_TTL_S)
    kw.setdefault("show_spinner", False)
    memory = st.cache_data(**kw)
    return (lambda func: memory(result_cache.keep(func, on_hit=_compute_again))) if keep else memory


def cache_resource(**kw):
    """``st.cache_resource`` bounded as :func:`cache_data` is (for unpicklable or large objects: jitted
    functions, targets, data sets, :class:`SharedStore`)."""
    kw.setdefault("max_entries", CACHE_MAX_ENTRIES)
    kw.setdefault("ttl", CACHE_TTL_S)
    kw.setdefault("show_spinner", False)
    return st.cache_resource(**kw)


_PREFETCH_LOCK = threading.RLock()  # re-entered: _compute_again starts its worker while holding it
_PREFETCH_PENDING: set = set()
_PREFETCH_THREADS: list = []
PREFETCH_MAX_PENDING = 4


_STOPPING = threading.Event()  # set at exit: the background threads take no new call and end
SHUTDOWN_WAIT_S = 600.0  # the longest the exit waits for the call a background thread is in


@atexit.register
def _stop_background(timeout_s: float | None = None) -> None:
    """Stop the background threads (:func:`prefetch`, :func:`_compute_again`) before the interpreter exits:
    each finishes the call it is in and takes no other, and the exit waits for them. A daemon thread still
    inside a compiled JAX call when the interpreter finalizes aborts the process ("terminate called after
    throwing an instance of '' / FATAL: exception not rethrown"). If a call outlasts ``timeout_s``
    (:data:`SHUTDOWN_WAIT_S`), the process leaves at once with status 70 rather than finalize under it."""
    _STOPPING.set()
    deadline = time.monotonic() + (SHUTDOWN_WAIT_S if timeout_s is None else timeout_s)
    with _PREFETCH_LOCK:
        threads = list(_PREFETCH_THREADS)
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    alive = [t.name for t in threads if t.is_alive()]
    if alive:
        import sys

        print(f"vilab: background work ({', '.join(alive)}) still running after {timeout_s or SHUTDOWN_WAIT_S:g} s; "
              "leaving without finalizing the interpreter.", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(70)


def prefetch(fn: Callable, *calls: tuple) -> int:
    """Compute ``fn(*args)`` for each argument tuple in ``calls`` in a background thread, so that a later run
    finds them in ``fn``'s cache (``fn`` is a :func:`cache_data` function): a slider moved one notch by the
    keyboard then redraws from the cache. Best effort and bounded: at most ``PREFETCH_MAX_PENDING`` calls wait
    at once (others are dropped), a call already waiting is not queued twice, and an error is ignored (the
    page's own call reports it). ``fn`` shows no spinner of its own (``show_spinner=False``, :func:`cache_data`'s
    default): a spinner from the background thread would land in the page. Returns the number of calls queued."""
    todo = []
    with _PREFETCH_LOCK:
        for args in calls:
            key = (getattr(fn, "__qualname__", repr(fn)), tuple(args))
            if key in _PREFETCH_PENDING or len(_PREFETCH_PENDING) >= PREFETCH_MAX_PENDING:
                continue
            _PREFETCH_PENDING.add(key)
            todo.append((key, tuple(args)))
    if not todo:
        return 0

    def work():
        for key, args in todo:
            try:
                if not _STOPPING.is_set():  # at exit: no new call
                    fn(*args)
            except Exception:  # noqa: BLE001 - best effort: the page's own call shows the error
                pass
            finally:
                with _PREFETCH_LOCK:
                    _PREFETCH_PENDING.discard(key)

    _start_background(work, "vilab-prefetch", _session())
    return len(todo)


def _session():
    """The Streamlit script run's context of the calling thread (None outside a run): st.cache_data in a
    background thread looks for the session's context."""
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx
    except ImportError:  # pragma: no cover - an older Streamlit
        return None
    return get_script_run_ctx()


def _attach(thread: threading.Thread, ctx) -> None:
    """Hand a script run's context (:func:`_session`) to ``thread``; nothing when there is none."""
    if ctx is not None:
        from streamlit.runtime.scriptrunner import add_script_run_ctx

        add_script_run_ctx(thread, ctx)


def _start_background(target: Callable, name: str, ctx=None) -> threading.Thread | None:
    """Start a daemon thread with ``ctx`` attached, stopped and joined at exit (:func:`_stop_background`);
    None (nothing started) once the exit has begun."""
    t = threading.Thread(target=target, name=name, daemon=True)
    with _PREFETCH_LOCK:
        if _STOPPING.is_set():
            return None
        _PREFETCH_THREADS[:] = [x for x in _PREFETCH_THREADS if x.is_alive()] + [t]
        _attach(t, ctx)
        t.start()
    return t


RECOMPUTE_PER_FUNCTION = 8  # results of one function computed again in the background, per server process
RECOMPUTE_NICE = 10  # the thread's niceness (Linux): a visitor's own runs come first
RECOMPUTE_DELAY_S = 2.5  # each call waits until no page has started for this long: the visitors' browsers draw first
RECOMPUTE_BUSY_SHARE = 0.05  # ... and until the server's event loop used less than this share of a core ...
RECOMPUTE_BUSY_WINDOW_S = 0.3  # ... over this long (it serves a new visitor's page files before the page runs)

_RECOMPUTE_QUEUE: "queue.SimpleQueue" = queue.SimpleQueue()
_RECOMPUTE_COUNTS: dict = {}
_LAST_PAGE_RUN = float("-inf")  # time.monotonic() when a page last started a run (:func:`page`)
_recompute_worker: threading.Thread | None = None  # running while the queue has calls


def note_page_run() -> None:
    """A page started a run now (:func:`vilab_ui.stage.page`): the background recompute waits for the visitors."""
    global _LAST_PAGE_RUN
    _LAST_PAGE_RUN = time.monotonic()


def _compute_again(func: Callable, args: tuple, kwargs: dict) -> bool:
    """Compute ``func(*args, **kwargs)`` again in a background thread after its result was served from disk
    (:mod:`vilab_ui.result_cache`), and drop the result: a restarted server that serves a page from disk has
    traced none of its JAX programs, and a page's own stores (the longest run of Hierarchical models, which
    a new number of iterations continues) are empty; without this, the first slider change pays for both
    (7 s on Hierarchical models). One thread, one call at a time, at a lower priority than the visitors'
    runs, each call when no page has started a run for ``RECOMPUTE_DELAY_S`` and the event loop is not
    serving a visitor's page files (a visitor's browser is still drawing, and a class that opens the page at
    once comes first); at most ``RECOMPUTE_PER_FUNCTION`` calls
    of one function per process (the default view's methods, not every value a slider visited). Best
    effort: an error is ignored. Returns True if the call was queued."""
    global _recompute_worker
    ident = (func.__code__.co_filename, func.__qualname__)  # a disk hit is always a plain function's
    with _PREFETCH_LOCK:
        if _RECOMPUTE_COUNTS.get(ident, 0) >= RECOMPUTE_PER_FUNCTION:
            return False
        _RECOMPUTE_COUNTS[ident] = _RECOMPUTE_COUNTS.get(ident, 0) + 1
    _RECOMPUTE_QUEUE.put((func, args, kwargs, _session()))
    with _PREFETCH_LOCK:
        if _recompute_worker is None:
            _recompute_worker = _start_background(_recompute_loop, "vilab-recompute")
    return True


def _recompute_loop() -> None:
    """The worker of :func:`_compute_again`: runs the queued calls one by one at niceness
    ``RECOMPUTE_NICE``, each when no page has started a run (:func:`page`) for ``RECOMPUTE_DELAY_S`` and the
    server's event loop is not serving a visitor (:func:`_server_busy`); ends when the queue has stayed empty
    for a second."""
    global _recompute_worker
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), RECOMPUTE_NICE)
    except (AttributeError, OSError):  # not Linux, or not allowed: normal priority
        pass
    while True:
        try:
            func, args, kwargs, ctx = _RECOMPUTE_QUEUE.get(timeout=1.0)
        except queue.Empty:
            with _PREFETCH_LOCK:
                if _RECOMPUTE_QUEUE.empty() or _STOPPING.is_set():
                    _recompute_worker = None
                    return
            continue
        while not _STOPPING.is_set():
            while (wait := _LAST_PAGE_RUN + RECOMPUTE_DELAY_S - time.monotonic()) > 0 and not _STOPPING.wait(wait):
                pass
            if _STOPPING.is_set() or not _server_busy():
                break
        if _STOPPING.is_set():  # at exit: the queued calls are dropped (the results on disk stand)
            with _PREFETCH_LOCK:
                _recompute_worker = None
            return
        _attach(threading.current_thread(), ctx)  # a cached function it calls finds the session
        try:
            func(*args, **kwargs)
        except Exception:  # noqa: BLE001 - best effort: the result on disk stands
            pass


def _main_thread_cpu() -> float | None:
    """CPU seconds the main thread (Streamlit's event loop: page files, websockets) has used; None off Linux."""
    try:
        stat = Path(f"/proc/self/task/{threading.main_thread().native_id}/stat").read_text()
        fields = stat.rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError, AttributeError):
        return None


def _server_busy() -> bool:
    """Whether the server's event loop used more than ``RECOMPUTE_BUSY_SHARE`` of a core over the next
    ``RECOMPUTE_BUSY_WINDOW_S``: a new visitor's browser fetches Streamlit's page files (0.4 s of the loop's
    time on two cores) before its page starts a run. False where it cannot be measured."""
    c0 = _main_thread_cpu()
    time.sleep(RECOMPUTE_BUSY_WINDOW_S)
    c1 = _main_thread_cpu()
    return c0 is not None and c1 is not None and c1 - c0 > RECOMPUTE_BUSY_SHARE * RECOMPUTE_BUSY_WINDOW_S


class SharedStore:
    """A bounded store shared by every session of the server (make one with ``st.cache_resource``):
    at most ``maxsize`` entries, each kept ``ttl_s`` seconds after it was last written; the least
    recently used entry goes first. Thread-safe (each session runs in its own thread).

    For results a page wants every visitor to reuse (finished training runs); a plain dict there
    would grow with every run of every student.

    ``on_disk`` (a name) also keeps every entry whose key is a plain setting in the results store on
    disk (:mod:`vilab_ui.result_cache`, which bounds it), and looks there when memory has nothing: a
    restarted server, or another replica of a lecture hall, continues from the runs of the one before.
    ``source`` is the file that fills the store (a page's ``__file__``): a change in it is a new key, as
    for a cached function."""

    def __init__(self, maxsize: int = 32, ttl_s: float = 3600.0, on_disk: str | None = None,
                 source: str | None = None):
        if int(maxsize) < 1 or not ttl_s > 0:
            raise ValueError("A shared store needs maxsize >= 1 and a positive time to live.")
        self.maxsize, self.ttl_s = int(maxsize), float(ttl_s)
        self.on_disk, self.source = on_disk, source
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        while self._items:
            k, (t, _) = next(iter(self._items.items()))
            if now - t <= self.ttl_s:
                break
            self._items.popitem(last=False)

    def _remember(self, key, value) -> None:
        with self._lock:
            self._items.pop(key, None)
            self._items[key] = (time.monotonic(), value)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)

    def __setitem__(self, key, value) -> None:
        self._remember(key, value)
        if self.on_disk:
            result_cache.save(self.on_disk, key, value, self.source)

    def get(self, key, default=None):
        with self._lock:
            self._expire(time.monotonic())
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key][1]
        if self.on_disk:
            found = result_cache.load(self.on_disk, key, self.source, default=_MISSING)
            if found is not _MISSING:
                self._remember(key, found)
                return found
        return default

    def __getitem__(self, key):
        out = self.get(key, _MISSING)
        if out is _MISSING:
            raise KeyError(key)
        return out

    def __contains__(self, key) -> bool:
        return self.get(key, _MISSING) is not _MISSING

    def pop(self, key, default=None):
        """Remove ``key`` (from disk too) and return its value as memory had it, else ``default``."""
        with self._lock:
            item = self._items.pop(key, None)
        if self.on_disk:
            result_cache.forget(self.on_disk, key, self.source)
        return default if item is None else item[1]

    def __len__(self) -> int:
        with self._lock:
            self._expire(time.monotonic())
            return len(self._items)


_MISSING = object()


