"""One bounded cache for compiled programs.

Every place in vilab that keeps a compiled (jitted or ahead-of-time compiled) program, or an
object that owns one (an :class:`~vilab.core.Algorithm` built for a target), keeps it in a
:class:`ProgramCache`. Each cache is a least-recently-used map with a fixed size, and every cache
registers itself here, so :func:`clear` empties them all at once without reaching into modules.

Sizes: each compiled XLA program holds a handful of memory mappings; the kernel allows 65,530 per
process (vm.max_map_count). The default size of 64 entries per cache, over the dozen caches vilab
creates, keeps a long-lived server far below that limit; ``vilab.clear_caches_if_crowded`` is the
second line of defence (it also drops JAX's own jit caches).
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections import OrderedDict
from typing import Any, Callable, Hashable

__all__ = ["ProgramCache", "memoize", "clear", "caches", "DEFAULT_SIZE"]

DEFAULT_SIZE = 64
_REGISTRY: "weakref.WeakSet[ProgramCache]" = weakref.WeakSet()


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
                return self._data[key]
        value = build()  # outside the lock: building may compile for seconds
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)
        return value

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


def caches() -> list[ProgramCache]:
    """Every live program cache (for diagnostics and tests)."""
    return sorted(_REGISTRY, key=lambda c: c.name)


def clear() -> None:
    """Empty every registered program cache."""
    for c in list(_REGISTRY):
        c.clear()
