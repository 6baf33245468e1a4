"""JAX's persistent compilation cache for the app: compile a program once per machine, not per process.

A Streamlit server compiles every XLA program its pages need on first use (seconds per page on two
cores). With the persistent cache switched on, a compiled program is written to a folder on disk and
every later process (a restarted server, the other replicas of a lecture hall, see ``vilab hall``)
loads it instead of compiling it again.

The folder is ``$VILAB_JAX_CACHE`` when set (``off`` switches the cache off), else ``$XDG_CACHE_HOME/vilab/jax``, else
``~/.cache/vilab/jax``; it is created on first use. JAX's options (jax 0.4.30 and later):
``jax_compilation_cache_dir`` (the folder), ``jax_persistent_cache_min_compile_time_secs`` (only
programs that took at least this long to compile are written; JAX's default is 1 s, vilab's is 0: most of
its programs compile in well under 0.2 s, but a page needs dozens of them, and a restarted server that
loads them all instead of compiling them saves 1-1.5 s on its first run of Trajectories, Flows or Adam vs
SNNGM; every page's programs together take about 3 MB) and ``jax_persistent_cache_min_entry_size_bytes``
(-1: no lower bound on an entry's size).

Two things JAX does that a user of the cache meets:

* it decides once per process, at its first compilation, whether it uses the cache: switch the cache on
  before anything is compiled (vilab_ui/serve.py does, before the server starts);
* a program's key includes the folder's path (JAX points XLA's own caches into the folder): programs
  copied to another folder are not found there. Fill the folder the server will use.

JAX bounds the folder's size only with the optional ``filelock`` package; without it this module
trims the folder itself, once, when the cache is switched on (oldest entries first, every file of the
folder counted: on a GPU, XLA keeps its own caches in a subfolder). JAX writes an entry in place: a process
killed while writing leaves a truncated entry, which every later process would fail to read and never
replace (JAX does not write a program whose entry exists). Switching the cache on removes such entries
first (:func:`remove_truncated`).

Trust: JAX loads whatever executables it finds in the folder. Keep it private to the user who runs
the server (the folder is created with mode 0700).
"""

from __future__ import annotations

import os
import threading
import zlib
from pathlib import Path

__all__ = ["PLAIN_ENV", "cache_dir", "enable_for_server", "enable_persistent_cache", "enabled_dir", "plain_ui",
           "remove_truncated", "trim", "user_cache_folder", "user_cache_root"]

ENV = "VILAB_JAX_CACHE"
OFF = ("0", "off", "false", "no", "none")
PLAIN_ENV = "VILAB_PLAIN_UI"  # "1": the lab's server runs with none of vilab's own mechanisms (docs/ui-mechanisms.md)
MIN_COMPILE_SECS = 0.0
MAX_BYTES = 2 * 1024**3  # the folder is trimmed to half of this when it grows past it

_lock = threading.Lock()
_enabled: Path | None = None


def user_cache_root() -> Path:
    """vilab's folder in the user's cache directory: ``$XDG_CACHE_HOME/vilab``, else ``~/.cache/vilab``
    (compiled programs go to its ``jax`` folder, decoded data sets to ``data``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "vilab"


def user_cache_folder(env: str, name: str) -> Path | None:
    """A folder of vilab's that a variable can move or switch off: ``$env`` when set (one of :data:`OFF`:
    None), else ``user_cache_root() / name`` (decoded data sets, vilab.cnn.data)."""
    value = os.environ.get(env, "").strip()
    if value.lower() in OFF:
        return None
    return Path(value).expanduser() if value else user_cache_root() / name


def cache_dir() -> Path:
    """Where the compiled programs live: ``$VILAB_JAX_CACHE``, else ``$XDG_CACHE_HOME/vilab/jax``,
    else ``~/.cache/vilab/jax``."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser()
    return user_cache_root() / "jax"


def _entries(path: Path) -> list[tuple[float, int, list[Path]]]:
    """(mtime, size, files) of each entry of the folder: a program (its ``-cache`` file and, where JAX keeps
    one, its ``-atime`` file) or any other file of the folder's tree (XLA's own caches)."""
    root = Path(path)
    out = []
    for p in root.rglob("*"):
        try:
            if not p.is_file() or (p.parent == root and p.name.endswith("-atime")
                                   and p.with_name(p.name[: -len("-atime")] + "-cache").exists()):
                continue  # an -atime file goes with its program
            files = [p]
            if p.parent == root and p.name.endswith("-cache"):
                files.append(p.with_name(p.name[: -len("-cache")] + "-atime"))
            st = p.stat()
            size = sum(f.stat().st_size for f in files if f.exists())
        except OSError:  # removed by another process meanwhile
            continue
        out.append((st.st_mtime, size, files))
    return out


def _remove(files) -> None:
    for f in files:
        try:
            f.unlink()
        except FileNotFoundError:
            pass


def trim(path: Path, max_bytes: int = MAX_BYTES) -> int:
    """Delete the least recently written cache entries of ``path`` (every file of its tree counted) until it
    holds at most half of ``max_bytes``, if it holds more than ``max_bytes``. Returns the number of entries
    removed.

    Concurrent servers may be reading an entry being removed: JAX then compiles the program again.
    """
    entries = _entries(path)
    total = sum(size for _, size, _ in entries)
    if total <= max_bytes:
        return 0
    removed = 0
    for _, size, files in sorted(entries, key=lambda e: e[0]):
        if total <= max_bytes // 2:
            break
        _remove(files)
        total -= size
        removed += 1
    return removed


def _whole(data: bytes) -> bool | None:
    """Whether an entry's bytes are one complete compressed stream as JAX writes them (zlib, or zstandard when
    that package is installed); None when the format is not one of those (the entry is then left alone)."""
    if len(data) >= 2 and data[0] & 0x0F == 8 and ((data[0] << 8) | data[1]) % 31 == 0:  # a zlib header
        d = zlib.decompressobj()
        try:
            chunk = d.decompress(data, 1 << 20)
            while chunk and not d.eof:  # 1 MB at a time: an entry is never held decompressed
                chunk = d.decompress(d.unconsumed_tail, 1 << 20)
        except zlib.error:
            return False
        return d.eof
    if data[:4] == b"\x28\xb5\x2f\xfd":  # a zstandard frame
        try:
            import zstandard
        except ImportError:
            return None
        try:
            with zstandard.ZstdDecompressor().stream_reader(data) as r:
                while r.read(1 << 20):
                    pass
        except zstandard.ZstdError:
            return False
        return True
    return None


def remove_truncated(path: Path) -> int:
    """Delete the program entries of ``path`` that are not a complete compressed stream (a writer killed
    while writing); returns how many."""
    removed = 0
    for p in Path(path).glob("*-cache"):
        try:
            data = p.read_bytes()
        except OSError:
            continue
        if _whole(data) is False:
            _remove([p, p.with_name(p.name[: -len("-cache")] + "-atime")])
            removed += 1
    return removed


def enable_persistent_cache(path: str | os.PathLike | None = None, *,
                            min_compile_secs: float = MIN_COMPILE_SECS, max_bytes: int = MAX_BYTES) -> Path | None:
    """Switch on JAX's persistent compilation cache in ``path`` (default :func:`cache_dir`) for this
    process; returns the folder. Idempotent and cheap after the first call (``app.py`` calls it on every
    rerun); the first call wins, later calls with another folder change nothing.

    Programs that took at least ``min_compile_secs`` to compile are written (0 writes every program).
    The folder is created if missing; truncated entries are removed (:func:`remove_truncated`) and if it
    holds more than ``max_bytes`` it is trimmed first.
    Without ``path``, ``VILAB_JAX_CACHE=off`` leaves the cache off (returns None).
    """
    global _enabled
    if _enabled is not None:
        return _enabled
    with _lock:
        if _enabled is not None:
            return _enabled
        if min_compile_secs < 0:
            raise ValueError("The minimum compile time of a cached program cannot be negative; pass 0 or more.")
        if path is None and os.environ.get(ENV, "").strip().lower() in OFF:
            return None
        folder = Path(path).expanduser() if path is not None else cache_dir()
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise ValueError(f"The JAX cache folder {str(folder)!r} cannot be created ({exc.strerror}); "
                             f"set {ENV} to a folder you can write to.") from None
        remove_truncated(folder)
        trim(folder, max_bytes)

        import jax

        jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_secs))
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
        jax.config.update("jax_compilation_cache_dir", str(folder))
        _enabled = folder
        return folder


def enabled_dir() -> Path | None:
    """The folder this process caches compiled programs in, or None when the cache is off."""
    return _enabled


def plain_ui() -> bool:
    """Whether ``$VILAB_PLAIN_UI`` asks for the lab without vilab's own mechanisms: Streamlit's plain memory
    caches only, no compilation cache, no prefetch, no warm-up (vilab_ui/caching.py; docs/ui-mechanisms.md)."""
    return os.environ.get(PLAIN_ENV, "").strip().lower() not in ("", *OFF)


def enable_for_server(log=print) -> Path | None:
    """:func:`enable_persistent_cache` for the lab's server (app.py, vilab_ui/serve.py): a cache folder that
    cannot be created costs compilation time, not the app, and is reported through ``log``. Call it before
    anything is compiled: JAX decides once per process, at its first compilation, whether it uses the cache.
    Nothing under :func:`plain_ui` (returns None)."""
    if plain_ui():
        return None
    try:
        return enable_persistent_cache()
    except ValueError as exc:
        log(f"vilab: {exc} Compiled programs are not kept on disk.")
        return None
