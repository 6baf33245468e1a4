"""One bounded cache for compiled programs.

Every place in vilab that keeps a compiled (jitted or ahead-of-time compiled) program, or an
object that owns one (an :class:`~vilab.core.Algorithm` built for a target), keeps it in a
:class:`ProgramCache`. Each cache is a least-recently-used map with a fixed size, and every cache
registers itself here, so :func:`clear` empties them all at once without reaching into modules.

Sizes: an entry (a compiled loop, an Algorithm with its programs) holds about 130 memory mappings
(measured with benchmarks/bench_soak.py); the kernel allows 65,530 per process (vm.max_map_count).
Each cache has its own size (64 by default), and all of them together hold at most
:data:`TOTAL_LIMIT` entries: past it, the least recently used entry of any cache goes. A long-lived
server's compiled programs therefore level off (about 12,500 mappings) instead of growing with every
new setting; ``vilab.clear_caches_if_crowded`` is the second line of defence (it also drops JAX's
own jit caches).
"""

from __future__ import annotations

import functools
import itertools
import threading
import weakref
from collections import OrderedDict
from typing import Any, Callable, Hashable

__all__ = ["ProgramCache", "memoize", "clear", "caches", "total", "DEFAULT_SIZE", "TOTAL_LIMIT"]

DEFAULT_SIZE = 64
TOTAL_LIMIT = 96  # entries over all caches (~130 mappings each): well under a quarter of 65,530
_REGISTRY: "weakref.WeakSet[ProgramCache]" = weakref.WeakSet()
_TOTAL_LOCK = threading.Lock()
_clock = itertools.count()  # a global use counter: which entry of which cache was used least recently


class ProgramCache:
    """A thread-safe LRU map ``key -> value`` with at most ``maxsize`` entries.

    ``get_or_build(key, build)`` returns the cached value or builds, stores and returns it; the least
    recently used entry is dropped when the cache is full. Keys must be hashable; an object that is
    not (a Target without a family) is keyed by ``id`` *and* kept in the entry, so a recycled id never
    returns another object's program (see :func:`identity_key`).
    """

    def __init__(self, name: str, maxsize: int = DEFAULT_SIZE):
        if maxsize < 1:
            raise ValueError("A program cache needs room for at least one entry.")
        self.name = name
        self.maxsize = int(maxsize)
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.RLock()
        _REGISTRY.add(self)

    def get_or_build(self, key: Hashable, build: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                value = self._data[key][1]
                self._data[key] = (next(_clock), value)
                return value
        value = build()  # outside the lock: building may compile for seconds
        with self._lock:
            self._data[key] = (next(_clock), value)
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)
        _evict_over_total()
        return value

    def _oldest(self) -> int | None:
        """The use stamp of this cache's least recently used entry (None when empty)."""
        with self._lock:
            return next(iter(self._data.values()))[0] if self._data else None

    def _pop_oldest(self) -> None:
        with self._lock:
            if self._data:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"ProgramCache({self.name!r}, {len(self)}/{self.maxsize})"


class _Pinned:
    """A key part standing for an unhashable object by identity; holding the object keeps its id
    from being recycled while the entry lives."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __hash__(self):
        return id(self.obj)

    def __eq__(self, other):
        return isinstance(other, _Pinned) and other.obj is self.obj


def identity_key(obj) -> Hashable:
    """A cache-key part for ``obj``: the object itself when hashable by value, else its identity."""
    try:
        hash(obj)
    except TypeError:
        return _Pinned(obj)
    return obj


def memoize(name: str, maxsize: int = DEFAULT_SIZE):
    """Decorator: cache a function's results in a registered :class:`ProgramCache`.

    Arguments that are not hashable are keyed by identity (see :func:`identity_key`). Use it for
    functions that build compiled programs or Algorithms, never for functions of large arrays.
    """

    def deco(fn):
        cache = ProgramCache(name, maxsize)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            key = (tuple(identity_key(a) for a in args),
                   tuple(sorted((k, identity_key(v)) for k, v in kwargs.items())))
            return cache.get_or_build(key, lambda: fn(*args, **kwargs))

        wrapper.cache = cache
        return wrapper

    return deco


def total() -> int:
    """Entries over every registered cache."""
    return sum(len(c) for c in list(_REGISTRY))


def _evict_over_total() -> None:
    """Drop least recently used entries, whichever cache holds them, until at most TOTAL_LIMIT remain."""
    with _TOTAL_LOCK:
        while total() > TOTAL_LIMIT:
            stamped = [(c._oldest(), c) for c in list(_REGISTRY)]
            stamped = [(t, c) for t, c in stamped if t is not None]
            if not stamped:
                return
            min(stamped, key=lambda tc: tc[0])[1]._pop_oldest()


def caches() -> list[ProgramCache]:
    """Every live program cache (for diagnostics and tests)."""
    return sorted(_REGISTRY, key=lambda c: c.name)


def clear() -> None:
    """Empty every registered program cache."""
    for c in list(_REGISTRY):
        c.clear()
