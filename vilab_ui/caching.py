"""Caches shared by every visitor, and the few mechanisms of vilab's own that stay (docs/ui-mechanisms.md says
what each one buys, measured).

* :func:`cache_data`: ``st.cache_data`` bounded in size and time; a call whose arguments are plain settings is
  also kept on disk by Streamlit itself (``persist="disk"``), under a code-version argument, so that a
  restarted server or another replica of a lecture hall finds it and a changed library never serves it;
* :func:`cache_resource`: ``st.cache_resource``, bounded the same way;
* :class:`SharedStore`: a bounded store of finished runs that every session of the server reuses.

``VILAB_PLAIN_UI=1`` (:func:`plain`) switches every mechanism of vilab's own off: Streamlit's plain memory
caches only (no disk), and ``vilab app`` / ``python -m vilab_ui.serve`` start a plain ``streamlit
run`` (no JAX compilation cache, no imports before the first visitor, no warm-up). ``VILAB_RESULT_CACHE=off``
switches off only the disk (the test suite does: a test that replaces a function must not be served the real
function's results).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import inspect
import logging
import os
import pickle
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Callable

import numpy as np
import streamlit as st

from vilab.core.compile_cache import OFF, PLAIN_ENV, trim
from vilab.core.compile_cache import plain_ui as plain

__all__ = ["CACHE_MAX_ENTRIES", "CACHE_TTL_S", "DISK_ENV", "PLAIN_ENV", "SharedStore", "cache_data", "cache_resource",
           "code_version", "disk_folder", "kept_on_disk", "open_for_server", "plain"]

CACHE_MAX_ENTRIES = 64  # per cached function, in memory
CACHE_TTL_S = 6 * 3600  # an entry unused this long is dropped from memory
DISK_ENV = "VILAB_RESULT_CACHE"  # "off": no result is kept on disk
SIZE_ENV = "VILAB_RESULT_CACHE_MB"  # the disk folder's bound in megabytes (default DISK_MAX_BYTES)
DISK_MAX_BYTES = 256 * 1024**2
KEY_MAX_CHARS = 20_000  # arguments longer than this (as text) are not a setting: not kept on disk
# the checkout's data the package reads (reference posteriors, recorded runs, decks); not the screenshots
ASSET_DIRS = ("hierarchical", "online", "cnn", "decks")
LIBRARIES = ("jax", "jaxlib", "numpy", "scipy", "optax", "pandas", "plotly", "scikit-learn", "streamlit")

_log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------------ the caches
def disk_on() -> bool:
    """Whether :func:`cache_data` keeps results on disk: not under :data:`PLAIN_ENV` nor ``VILAB_RESULT_CACHE=off``."""
    return not plain() and os.environ.get(DISK_ENV, "").strip().lower() not in OFF


def disk_folder() -> Path:
    """Where Streamlit keeps ``persist="disk"`` results: ``~/.streamlit/cache`` of the user who runs the server
    (one ``.memo`` pickle per result; every server process of that user on this machine reads it)."""
    from streamlit.runtime.caching.storage.local_disk_cache_storage import (
        get_cache_folder_path,
    )

    return Path(get_cache_folder_path())


def cache_data(*, keep: bool = True, **kw):
    """``st.cache_data`` bounded in size and time (every cache of a page is shared by all its visitors): at most
    ``max_entries`` (64) results in memory, each dropped ``ttl`` (6 h) after it was computed, no spinner unless
    asked. A cached function must not touch widgets (Streamlit cannot replay them on a hit).

    With ``keep`` (the default), a call whose arguments are plain settings (:func:`kept_on_disk`) is also kept on
    disk by Streamlit (``persist="disk"``, bounded by :func:`open_for_server`), under an extra argument that is
    the code version (:func:`code_version` and the hash of the function's own file): a restarted server or
    another replica of a lecture hall is served it, a changed library or page is not. ``keep=False``, or
    :func:`plain`, keeps results in memory only."""
    kw.setdefault("max_entries", CACHE_MAX_ENTRIES)
    kw.setdefault("ttl", CACHE_TTL_S)
    kw.setdefault("show_spinner", False)
    memory = st.cache_data(**kw)
    if not keep:
        return memory
    on_disk = st.cache_data(**{**kw, "ttl": None, "persist": "disk"})  # Streamlit's disk ignores a ttl

    def decorate(func):
        in_memory = memory(func)
        code = getattr(func, "__code__", None)
        if code is None or code.co_freevars:  # not a plain function, or a closure: what it captured is no argument
            return in_memory

        @functools.wraps(func)
        def versioned(*args, vilab_code: str, **kwargs):
            return func(*args, **kwargs)

        versioned.__qualname__ = f"{func.__qualname__}[kept on disk]"  # a cache of its own (Streamlit keys on it)
        kept = on_disk(versioned)

        @functools.wraps(func)
        def call(*args, **kwargs):
            if not (disk_on() and kept_on_disk(func, args, kwargs)):
                return in_memory(*args, **kwargs)
            version = _version(func)
            unreadable, unwritable = _cache_errors()
            for _ in range(2):  # a file that cannot be read (cut short, damaged) is removed and computed again
                try:
                    return kept(*args, vilab_code=version, **kwargs)
                except unreadable as exc:
                    _report(exc)
                    kept.clear(*args, vilab_code=version, **kwargs)
                except unwritable as exc:  # a full disk, or a value no pickle holds: memory has the same rules
                    _report(exc)
                    break
            return in_memory(*args, **kwargs)

        def clear(*args, **kwargs):
            in_memory.clear(*args, **kwargs)
            if args or kwargs:
                kept.clear(*args, vilab_code=_version(func), **kwargs)
            else:
                kept.clear()

        call.clear = clear
        return call

    return decorate


def cache_resource(**kw):
    """``st.cache_resource`` bounded as :func:`cache_data` is (for unpicklable or large objects: jitted
    functions, targets, data sets, :class:`SharedStore`)."""
    kw.setdefault("max_entries", CACHE_MAX_ENTRIES)
    kw.setdefault("ttl", CACHE_TTL_S)
    kw.setdefault("show_spinner", False)
    return st.cache_resource(**kw)


def _cache_errors() -> tuple[tuple, tuple]:
    """(the errors of a result on disk that cannot be read, those of one that cannot be written)."""
    from streamlit.runtime.caching.cache_errors import (
        CacheError,
        UnserializableReturnValueError,
    )

    return (CacheError, EOFError), (UnserializableReturnValueError,)


_reported: set[str] = set()


def _report(exc: BaseException) -> None:
    kind = type(exc).__name__
    if kind not in _reported:
        _reported.add(kind)
        _log.warning("vilab: a result kept on disk could not be read or written (%s: %s); it is computed "
                     "again.", kind, exc)


_PLAIN = (type(None), bool, int, float, complex, str)


def _plain(x, depth: int = 0) -> bool:
    """True for a setting: a number, string or None, or a tuple, list, frozenset or dict of them."""
    if isinstance(x, _PLAIN):
        return True
    if isinstance(x, np.generic):
        return isinstance(x.item(), _PLAIN)
    if depth > 8:
        return False
    if isinstance(x, (tuple, list, frozenset)):
        return all(_plain(v, depth + 1) for v in x)
    if isinstance(x, dict):
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in x.items())
    return False


def kept_on_disk(func: Callable, args: tuple, kwargs: dict) -> bool:
    """Whether the call ``func(*args, **kwargs)`` says everything it depends on, so that its result may be kept
    on disk for other processes: every argument is a plain setting (a number, a string, None, or a tuple, list
    or dict of them: not an array, a data frame or bytes, so a user's data and what is derived from it stay in
    memory), no argument left out of Streamlit's key (a ``_name``) is given, and the arguments are short."""
    try:
        bound = inspect.signature(func).bind(*args, **kwargs)
    except TypeError:
        return False
    for name, value in bound.arguments.items():
        if name.startswith("_"):
            if value is not None:  # left out of the key and given: the key would not say what the result depends on
                return False
        elif not _plain(value):
            return False
    return len(repr(bound.arguments)) <= KEY_MAX_CHARS


def _hash_files(root: Path, h) -> None:
    for p in sorted(root.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(p.relative_to(root).as_posix().encode() + b"\0")
            h.update(p.read_bytes() + b"\0")


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """A hash of what a result depends on besides its function and arguments: every file of the ``vilab`` and
    ``vilab_ui`` packages (source and data), the data the package reads from the checkout's ``assets``
    (:data:`ASSET_DIRS`), and the versions of Python, the numerical and plotting libraries, and the device JAX
    computes on. Computed once per process (the loaded code does not change while a server runs; a page's own
    file is hashed per function, see :func:`cache_data`)."""
    import platform

    import jax

    import vilab

    h = hashlib.sha256()
    for folder in (Path(vilab.__file__).parent, Path(__file__).parent):  # vilab and vilab_ui
        _hash_files(folder, h)
    assets = Path(vilab.__file__).resolve().parents[1] / "assets"
    for name in ASSET_DIRS:
        if (assets / name).is_dir():
            _hash_files(assets / name, h)
    for name in LIBRARIES:
        try:
            h.update(f"{name}={importlib.metadata.version(name)}\0".encode())
        except importlib.metadata.PackageNotFoundError:
            h.update(f"{name}=none\0".encode())
    h.update(f"python={platform.python_version()}\0device={jax.default_backend()}\0".encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=256)
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _version(func: Callable) -> str:
    """The code-version argument of ``func``'s results on disk: :func:`code_version` and the hash of the file
    that defines ``func`` (a page: the function and every helper it calls there)."""
    path = func.__code__.co_filename
    try:
        s = os.stat(path)
        digest = _file_digest(path, s.st_mtime_ns, s.st_size)
    except OSError:
        digest = hashlib.sha256(func.__code__.co_code).hexdigest()
    return hashlib.sha256(f"{code_version()}\0{digest}".encode()).hexdigest()[:32]


def max_bytes() -> int:
    """The disk folder's bound: ``$VILAB_RESULT_CACHE_MB`` megabytes when set, else :data:`DISK_MAX_BYTES`."""
    value = os.environ.get(SIZE_ENV, "").strip()
    if not value:
        return DISK_MAX_BYTES
    try:
        mb = float(value)
    except ValueError:
        mb = float("nan")
    if not mb > 0 or mb == float("inf"):
        raise ValueError(f"{SIZE_ENV} must be a positive number of megabytes; got {value!r}.")
    return int(mb * 1024**2)


def remove_damaged(folder: Path, stale_s: float = 600.0) -> int:
    """Remove the results in ``folder`` that a process killed while writing left incomplete (Streamlit writes a
    file in place; a pickle ends with its STOP opcode ``.``, a cut one does not), and the temporary files of
    :class:`SharedStore` writers ``stale_s`` old (a running writer renames its file within a second); returns
    how many."""
    removed = 0
    for p in Path(folder).glob("*.tmp"):
        try:
            if time.time() - p.stat().st_mtime >= stale_s:
                p.unlink()
                removed += 1
        except OSError:
            continue
    for p in Path(folder).glob("*.memo"):
        try:
            with open(p, "rb") as f:
                whole = f.seek(0, os.SEEK_END) > 0 and f.seek(-1, os.SEEK_END) >= 0 and f.read(1) == b"."
            if not whole:
                p.unlink()
                removed += 1
        except OSError:  # removed by another process meanwhile
            continue
    return removed


def open_for_server() -> str:
    """Before the first visitor (vilab_ui/serve.py): compute :func:`code_version`, remove damaged results and
    trim Streamlit's disk folder to :func:`max_bytes` (Streamlit bounds it by nothing; oldest results first);
    a line for the server's log."""
    if not disk_on():
        return f"vilab: the pages' results are kept in memory only ({PLAIN_ENV}=1 or {DISK_ENV}=off)."
    folder = disk_folder()
    code_version()
    damaged = trimmed = 0
    if folder.is_dir():
        damaged, trimmed = remove_damaged(folder), trim(folder, max_bytes())
    size = sum(p.stat().st_size for p in folder.glob("*.memo")) if folder.is_dir() else 0
    return (f"vilab: the pages' results are kept in {folder} ({size / 1024**2:.0f} MB"
            + (f"; {damaged} damaged removed" if damaged else "") + (f"; {trimmed} oldest removed" if trimmed else "")
            + ").")


# ------------------------------------------------------------------------------------------------ SharedStore
class SharedStore:
    """A bounded store shared by every session of the server (make one with ``st.cache_resource``): at most
    ``maxsize`` entries, each kept ``ttl_s`` seconds after it was last written; the least recently used entry
    goes first. Thread-safe (each session runs in its own thread).

    For results a page wants every visitor to reuse (finished training runs); a plain dict there would grow
    with every run of every student.

    ``on_disk`` (a name) also keeps every entry whose key is a plain setting as a file in Streamlit's folder of
    results kept on disk (:func:`disk_folder`, bounded with them), under the code version and the hash of
    ``source`` (the file that fills the store, a page's ``__file__``), and looks there when memory has nothing.
    A page's :func:`cache_data` result served from disk after a restart has not filled the page's store: without
    this, Hierarchical models' first slider change after a restart ran the longest run again (10.8 s of server
    CPU instead of 0.3 s, docs/ui-mechanisms.md)."""

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

    def _file(self, key) -> Path | None:
        """The file of entry ``key`` on disk; None when the store keeps nothing there (no ``on_disk``, the disk
        switched off, or ``key`` not a plain setting)."""
        if not self.on_disk or not disk_on() or not _plain(key) or len(text := repr(key)) > KEY_MAX_CHARS:
            return None
        source = ""
        if self.source:
            try:
                s = os.stat(self.source)
                source = _file_digest(self.source, s.st_mtime_ns, s.st_size)
            except OSError:
                source = self.source
        digest = hashlib.sha256("\0".join((code_version(), source, self.on_disk, text)).encode()).hexdigest()
        return disk_folder() / f"vilab-store-{digest[:40]}.memo"

    def __setitem__(self, key, value) -> None:
        self._remember(key, value)
        path = self._file(key)
        if path is not None:
            temp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            try:  # written whole under another name, then renamed: a reader never sees half a file
                path.parent.mkdir(parents=True, exist_ok=True)
                temp.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
                os.replace(temp, path)
            except Exception as exc:  # noqa: BLE001 - unpicklable or a full disk: memory has it
                temp.unlink(missing_ok=True)
                _report(exc)

    def get(self, key, default=None):
        with self._lock:
            self._expire(time.monotonic())
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key][1]
        path = self._file(key)
        if path is not None and path.is_file():
            try:
                value = pickle.loads(path.read_bytes())
            except Exception as exc:  # noqa: BLE001 - damaged: removed, and the page computes it
                _report(exc)
                path.unlink(missing_ok=True)
            else:
                self._remember(key, value)
                return value
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
        path = self._file(key)
        if path is not None:
            path.unlink(missing_ok=True)
        return default if item is None else item[1]

    def __len__(self) -> int:
        with self._lock:
            self._expire(time.monotonic())
            return len(self._items)


_MISSING = object()
