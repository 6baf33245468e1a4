"""The pages' results kept on disk: a restarted server, or another replica of a lecture hall, finds what the
pages computed before instead of computing it again.

Streamlit's ``st.cache_data`` keeps a page's results in the server's memory: a restarted server computes
every one again on its first visit (a second of JAX tracing on Trajectories, eight seconds of refits on
Hierarchical models), and the replicas of a lecture hall (``vilab hall``) each compute their own. Every
:func:`vilab_ui.cache_data` function therefore also looks in, and writes to, a folder on disk shared by
every server process of the user.

A call is kept only when its arguments say everything it depends on:

* every argument in the key is a plain setting: a number, a string, None, or a tuple, list or dict of
  them (not an array, a data frame or bytes: a user's data and what is derived from it stay in memory);
* no argument left out of the key (Streamlit's ``_name`` arguments: an object the other arguments
  determine, or a user's data) is given;
* the function is not a closure (values it captured are not in the key).

The key holds :func:`code_version` (a hash of the source and data of the ``vilab`` and ``vilab_ui``
packages, of the reference data in ``assets``, and the versions of the libraries the results come from),
the function's own file (a page with its helpers), its name and the arguments. A change in any of them is
a new key: a result computed by other code is never served. Results of older code stay until the folder's size bound evicts them.

A result served from disk leaves nothing in the process: no JAX program traced, no page store filled.
:func:`vilab_ui.cache_data` therefore computes it again behind the page, in a background thread (``on_hit``
of :func:`keep`), so that the next slider change is as fast as on a server that computed the page itself.

A page's shared store of runs (:class:`vilab_ui.SharedStore` with ``on_disk``: Hierarchical models' longest
run of each method, which a new maximum of iterations continues; Online learning's live runs; the Table 7 and 8
runs) keeps its entries here too (:func:`save`, :func:`load`, :func:`forget`), under the same rules: a key
that is a plain setting, the code version and the page's file in the disk key.

The folder is ``$VILAB_RESULT_CACHE`` when set (``off`` switches it off), else
``$XDG_CACHE_HOME/vilab/results``, else ``~/.cache/vilab/results``; created on first use (mode 0700),
bounded to :data:`MAX_BYTES` (``$VILAB_RESULT_CACHE_MB`` megabytes when set; least recently used results
are evicted first). It is a `diskcache <https://grantjenks.com/docs/diskcache/>`_ store (SQLite and files),
safe for concurrent processes and threads. A folder that cannot be used costs time, never the page: the
call is computed, the reason logged once.

The bound holds through crashes and large values:

* a value larger than :data:`MAX_VALUE_FRACTION` of the bound is not kept (the page has it in memory);
* a value's file is written under a temporary name and renamed when complete (:class:`_AtomicDisk`), so a
  process killed while writing leaves a temporary file, never a half-written value;
* when a process opens the store and no other process has it open (a lock file beside the folder, held
  shared while a process uses the store), it removes every file the store's index does not know: the
  temporary files and the values a killed writer wrote but had not yet entered in the index
  (``diskcache.Cache.check(fix=True)``), and the files of values evicted when a crash cut their removal
  short. While other processes use the store (a lecture hall's replicas), it removes only those that no
  running writer can be writing: temporary files of writers no longer running, and files :data:`STALE_S`
  old. Trust: results are unpickled from it; keep it private to the user who runs the server, as the JAX
compilation cache next to it (vilab/compile_cache.py).

The test suite switches it off (tests/conftest.py): a test that replaces a function would otherwise be
served the real function's results.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import inspect
import logging
import os
import pickle
import socket
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from vilab.compile_cache import user_cache_folder

__all__ = ["ENV", "MAX_BYTES", "MAX_VALUE_FRACTION", "SIZE_ENV", "cache_dir", "code_version", "entry_key", "forget",
           "keep", "key_for", "load", "max_bytes", "open_for_server", "reset", "save", "stats", "store"]

ENV = "VILAB_RESULT_CACHE"
SIZE_ENV = "VILAB_RESULT_CACHE_MB"  # the bound in megabytes, when set
MAX_BYTES = 256 * 1024**2
MAX_VALUE_FRACTION = 1 / 8  # a value larger than this share of the bound is not kept
TEMP_SUFFIX = ".tmp"  # a value's file while it is written: <name>.val.<host>.<pid>.tmp
STALE_S = 600  # a file the index does not know, this old, is no running writer's (see _tidy)
KEY_MAX_CHARS = 20_000  # arguments longer than this (as text) are not a setting: not kept
# the checkout's data the package reads (reference posteriors, recorded runs, decks); not the screenshots
ASSET_DIRS = ("hierarchical", "online", "cnn", "decks")
LIBRARIES = ("jax", "jaxlib", "numpy", "scipy", "optax", "pandas", "plotly", "scikit-learn", "streamlit")

_log = logging.getLogger(__name__)
_lock = threading.Lock()
_store: Any = None
_opened = False
_lock_file: Any = None  # held shared while this process has the store open (see _tidy)
_stats = {"hits": 0, "misses": 0, "not_kept": 0, "too_large": 0, "errors": 0}
_reported: set[str] = set()


def cache_dir() -> Path | None:
    """Where the results live: ``$VILAB_RESULT_CACHE``, else ``<user cache>/vilab/results``; None when off."""
    return user_cache_folder(ENV, "results")


def _report(what: str, exc: BaseException) -> None:
    _stats["errors"] += 1
    if what not in _reported:
        _reported.add(what)
        _log.warning("vilab: results are not kept on disk (%s: %s: %s); the pages compute them.",
                     what, type(exc).__name__, exc)


def max_bytes() -> int:
    """The store's bound in bytes: ``$VILAB_RESULT_CACHE_MB`` megabytes when set, else :data:`MAX_BYTES`."""
    value = os.environ.get(SIZE_ENV, "").strip()
    if not value:
        return MAX_BYTES
    try:
        mb = float(value)
    except ValueError:
        mb = float("nan")
    if not mb > 0 or mb == float("inf"):
        raise ValueError(f"{SIZE_ENV} must be a positive number of megabytes; got {value!r}.")
    return int(mb * 1024**2)


def _temp_name(full_path: str) -> str:
    return f"{full_path}.{socket.gethostname()}.{os.getpid()}{TEMP_SUFFIX}"


def _writer_gone(path: str) -> bool:
    """True for a temporary file (:func:`_temp_name`) of a process of this machine that is no longer running."""
    parts = os.path.basename(path).split(".")
    if len(parts) < 5 or not parts[-2].isdigit() or ".".join(parts[2:-2]) != socket.gethostname():
        return False
    try:
        os.kill(int(parts[-2]), 0)
    except ProcessLookupError:
        return True
    except OSError:  # running, as another user
        return False
    return False


def _lock_path(folder: Path) -> Path:
    return folder.with_name(folder.name + ".lock")


def _open_alone(folder: Path) -> bool:
    """Take the lock beside the folder: True when no other process has the store open (this one then
    holds it exclusively until :func:`_tidy` is done), False when others do (or locks are not available).
    Either way the lock is then held shared while this process has the store open."""
    global _lock_file
    try:
        import fcntl
    except ImportError:  # no flock: behave as if others used the store
        return False
    try:
        _lock_file = open(_lock_path(folder), "a+b")
    except OSError:
        _lock_file = None
        return False
    try:
        fcntl.flock(_lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        pass
    try:
        fcntl.flock(_lock_file, fcntl.LOCK_SH)
    except OSError:  # a folder without locks (some network file systems): others may be there
        _release_lock()
    return False


def _share_lock() -> None:
    if _lock_file is not None:
        import fcntl

        fcntl.flock(_lock_file, fcntl.LOCK_SH)


def _release_lock() -> None:
    global _lock_file
    if _lock_file is not None:
        _lock_file.close()  # closing the file releases its lock
        _lock_file = None


def _stale(path: str, now: float) -> bool:
    """A file the index does not know that no running writer can be writing: a temporary file of a writer of
    this machine that is gone, or any file last written :data:`STALE_S` or more ago (a writer enters its value
    in the index as soon as the file is complete; an evicted value whose removal a crash cut short is old)."""
    if path.endswith(TEMP_SUFFIX) and _writer_gone(path):
        return True
    try:
        return now - os.stat(path).st_mtime >= STALE_S
    except OSError:
        return False


def _tidy(cache, alone: bool) -> int:
    """Remove the files of the store's folder that its index does not know (found by diskcache's own
    ``check``); returns how many. ``alone`` (no other process has the store open): every such file (and
    index rows whose file is missing). Else only the :func:`_stale` ones: the others may be another
    process's value being written."""
    import diskcache

    def count() -> int:
        return sum(len(files) for _, _, files in os.walk(cache.directory))

    before = count()
    found = cache.check(fix=alone)  # the warnings it recorded: what it found (and fixed, when alone)
    if not alone:
        now = time.time()
        for w in found:
            path = str(w.message).partition("unknown file: ")[2]
            if issubclass(w.category, diskcache.UnknownFileWarning) and path and _stale(path, now):
                try:
                    os.remove(path)
                except OSError:
                    pass
    return before - count()


def _atomic_disk():
    """diskcache's Disk, with every value file written under a temporary name and renamed when complete."""
    import diskcache

    class _AtomicDisk(diskcache.Disk):
        def _write(self, full_path, iterator, mode, encoding=None):
            temp = _temp_name(full_path)
            try:
                size = super()._write(temp, iterator, mode, encoding)
                os.replace(temp, full_path)
            except BaseException:
                try:
                    os.remove(temp)
                except OSError:
                    pass
                raise
            return size

    return _AtomicDisk


def store():
    """The process's store (a ``diskcache.Cache``), opened on first use; None when off or not usable.
    Opening it removes the files a crashed writer left (:func:`_tidy`)."""
    global _store, _opened
    if _opened:
        return _store
    with _lock:
        if not _opened:
            folder = cache_dir()
            if folder is not None:
                try:
                    import diskcache

                    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
                    alone = _open_alone(folder)
                    try:
                        _store = diskcache.Cache(str(folder), size_limit=max_bytes(),
                                                 eviction_policy="least-recently-used", disk=_atomic_disk())
                        try:
                            removed = _tidy(_store, alone)
                        except Exception as exc:  # noqa: BLE001 - the store works; the files stay for later
                            _report("the files a crashed process left could not be removed", exc)
                        else:
                            if removed:
                                _log.info("vilab: removed %d files a crashed process left in %s.", removed, folder)
                    finally:
                        _share_lock()
                except Exception as exc:  # noqa: BLE001 - an unusable folder costs time, not the page
                    _report(f"the folder {str(folder)!r} cannot be used", exc)
                    if _store is not None:
                        _store.close()
                    _store = None
                    _release_lock()
            _opened = True
    return _store


def reset() -> None:
    """Close the store and forget it (the next call opens ``cache_dir()`` again); counters back to 0."""
    global _store, _opened
    with _lock:
        if _store is not None:
            _store.close()
        _release_lock()
        _store, _opened = None, False
        _stats.update(hits=0, misses=0, not_kept=0, too_large=0, errors=0)
        _reported.clear()


def stats() -> dict:
    """Counts since the process started (or :func:`reset`): ``hits`` (served from disk), ``misses``
    (computed and written), ``not_kept`` (calls whose arguments are not plain settings), ``too_large``
    (values over :data:`MAX_VALUE_FRACTION` of the bound, not written), ``errors``."""
    return dict(_stats)


def open_for_server() -> str:
    """Open the store and compute :func:`code_version` before the first visitor (vilab_ui/serve.py); a line
    for the server's log saying where results are kept."""
    cache = store()
    if cache is None:
        folder = cache_dir()
        return ("vilab: the pages' results are not kept on disk"
                + (f" ({ENV}=off)" if folder is None else f" ({str(folder)!r} cannot be used)") + ".")
    code_version()
    try:
        size = f"{len(cache)} results, {cache.volume() / 1024**2:.0f} MB"
    except Exception as exc:  # noqa: BLE001
        size = type(exc).__name__
    return f"vilab: the pages' results are kept in {cache.directory} ({size})."


def _hash_files(root: Path, h) -> None:
    for p in sorted(root.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(p.relative_to(root).as_posix().encode() + b"\0")
            h.update(p.read_bytes() + b"\0")


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """A hash of what a result depends on besides its function and arguments: every file of the ``vilab``
    and ``vilab_ui`` packages (source and data), the data the package reads from the checkout's ``assets``
    (:data:`ASSET_DIRS`), and the versions of Python, the numerical and plotting libraries, and the device
    JAX computes on. Computed once per process (the loaded code does not change while a server runs; a
    page's own file is hashed per call, see :func:`key_for`)."""
    import vilab
    import vilab_ui

    h = hashlib.sha256()
    for pkg in (vilab, vilab_ui):
        _hash_files(Path(pkg.__file__).parent, h)
    assets = Path(vilab.__file__).resolve().parents[1] / "assets"
    for name in ASSET_DIRS:
        if (assets / name).is_dir():
            _hash_files(assets / name, h)
    for name in LIBRARIES:
        try:
            h.update(f"{name}={importlib.metadata.version(name)}\0".encode())
        except importlib.metadata.PackageNotFoundError:
            h.update(f"{name}=none\0".encode())
    import platform

    import jax

    h.update(f"python={platform.python_version()}\0device={jax.default_backend()}\0".encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=256)
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _path_digest(path: str) -> str | None:
    """The hash of the file at ``path``; None when it cannot be read."""
    try:
        st = os.stat(path)
        return _file_digest(path, st.st_mtime_ns, st.st_size)
    except OSError:
        return None


def _source_digest(func: Callable) -> str:
    """The hash of the file that defines ``func`` (a page: the function and every helper it calls there),
    or of its source text when the file cannot be read."""
    digest = _path_digest(func.__code__.co_filename)
    if digest is not None:
        return digest
    try:
        return hashlib.sha256(inspect.getsource(func).encode()).hexdigest()
    except (OSError, TypeError):
        return hashlib.sha256(func.__code__.co_code).hexdigest()


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


def key_for(func: Callable, args: tuple, kwargs: dict) -> str | None:
    """The disk key of the call ``func(*args, **kwargs)``, or None when the call is not kept (an argument
    in the key is not a plain setting, an argument left out of the key is given, or ``func`` is a closure)."""
    code = getattr(func, "__code__", None)
    if code is None or code.co_freevars:  # not a plain function, or a closure
        return None
    try:
        bound = inspect.signature(func).bind(*args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    items = []
    for name, value in bound.arguments.items():
        if name.startswith("_"):
            if value is not None:  # left out of the key and given: the key would not say what it depends on
                return None
            continue
        if not _plain(value):
            return None
        items.append((name, value))
    return _digest(repr(items), _source_digest(func), func.__module__, func.__qualname__)


def _digest(text: str, *names: str) -> str | None:
    """The disk key of a call or an entry: ``text`` (its settings), the code version and ``names``; None when
    ``text`` is too long to be a setting."""
    if len(text) > KEY_MAX_CHARS:
        return None
    return hashlib.sha256("\0".join((code_version(), *names, text)).encode()).hexdigest()


def entry_key(name: str, key, source: str | None = None) -> str | None:
    """The disk key of entry ``key`` of the store called ``name`` (:class:`vilab_ui.SharedStore` with
    ``on_disk``), filled by the code in the file ``source`` (its hash is in the key, as a page's file is
    in a call's); None when ``key`` is not a plain setting."""
    if not _plain(key):
        return None
    digest = "" if source is None else (_path_digest(source) or source)
    return _digest(repr(key), digest, "store", name)


def keep(func: Callable, on_hit: Callable | None = None) -> Callable:
    """``func`` with its results kept on disk (see the module's docstring). The wrapper has ``func``'s name,
    signature and source (``functools.wraps``), so ``st.cache_data`` on top of it keys its memory on them.

    ``on_hit(func, args, kwargs)`` is called after a result was served from disk (vilab_ui.cache_data
    computes it again in the background: what the computation leaves in the process, JAX's traced
    programs and a page's stores, is then there for the next slider change)."""
    @functools.wraps(func)
    def kept(*args, **kwargs):
        cache = store()
        key = key_for(func, args, kwargs) if cache is not None else None
        if key is None:
            if cache is not None:
                _stats["not_kept"] += 1
            return func(*args, **kwargs)
        found = _read(cache, key)
        if found is not _MISSING:
            if on_hit is not None:
                on_hit(func, args, kwargs)
            return found
        value = func(*args, **kwargs)
        _write(cache, key, value)
        return value

    return kept


def _read(cache, key: str):
    """The value under ``key`` (a hit counted), or ``_MISSING``."""
    try:
        found = cache.get(key, default=_MISSING)
        if isinstance(found, bytes):  # what _write keeps: the value's pickle
            found = pickle.loads(found)
    except Exception as exc:  # noqa: BLE001 - a damaged entry or folder: compute
        _report("a result could not be read", exc)
        return _MISSING
    if found is not _MISSING:
        _stats["hits"] += 1
    return found


def _write(cache, key: str, value) -> bool:
    """Keep ``value`` (pickled here, so that its size is known before anything is written): False when it
    cannot be pickled or written, or is larger than :data:`MAX_VALUE_FRACTION` of the bound."""
    _stats["misses"] += 1
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        limit = int(MAX_VALUE_FRACTION * cache.size_limit)
        if len(data) > limit:
            _stats["too_large"] += 1
            if "too large" not in _reported:
                _reported.add("too large")
                _log.warning("vilab: a result of %.1f MB is not kept on disk: the store keeps values up to %.1f MB "
                             "(%g of its bound).", len(data) / 1024**2, limit / 1024**2, MAX_VALUE_FRACTION)
            return False
        cache.set(key, data)
        return True
    except Exception as exc:  # noqa: BLE001 - unpicklable or a full disk: the page has its value
        _report("a result could not be written", exc)
        return False


def _entry(name: str, key, source: str | None):
    """(the store, the disk key of entry ``key`` of the store ``name``); the key is None when the store is off
    or ``key`` is not a setting."""
    cache = store()
    return cache, (entry_key(name, key, source) if cache is not None else None)


def load(name: str, key, source: str | None = None, default=None):
    """Entry ``key`` of the store ``name`` as kept on disk (:func:`entry_key`), or ``default`` (the store off,
    the key not a setting, nothing kept)."""
    cache, disk_key = _entry(name, key, source)
    if disk_key is None:
        return default
    found = _read(cache, disk_key)
    return default if found is _MISSING else found


def save(name: str, key, value, source: str | None = None) -> bool:
    """Keep ``value`` on disk as entry ``key`` of the store ``name``; False when it is not kept (the store
    off, the key not a plain setting, the value not picklable)."""
    cache, disk_key = _entry(name, key, source)
    if disk_key is None:
        if cache is not None:
            _stats["not_kept"] += 1
        return False
    return _write(cache, disk_key, value)


def forget(name: str, key, source: str | None = None) -> None:
    """Remove entry ``key`` of the store ``name`` from disk, if kept."""
    cache, disk_key = _entry(name, key, source)
    if disk_key is not None:
        try:
            cache.delete(disk_key)
        except Exception as exc:  # noqa: BLE001
            _report("a result could not be removed", exc)


_MISSING = object()
