"""vilab: natural-gradient variational inference, exact and verified.

What importing vilab does to JAX: ``import vilab`` (or any ``vilab.*`` module) runs
``jax.config.update("jax_enable_x64", True)`` once. This is a process-wide switch: from then on
every JAX array created without an explicit dtype, in vilab or in your own code, defaults to
float64 (and int64). vilab needs it: the analytic layer reproduces the papers' iteration counts
and tolerances (1e-7 relative ELBO changes, KL below 1e-8, chaotic Euclidean runs), which float32
round-off would change. Nothing else is set globally at import. (Two opt-in calls change other
settings when you call them: :func:`vilab.core.compile_cache.enable_persistent_cache` sets JAX's persistent compilation
cache options, and :func:`vilab.cnn.distributed.initialize` selects Gloo as JAX's CPU
collectives.)

To compute in float32 in the same process, ask for it explicitly: ``jnp.asarray(x, jnp.float32)``,
``jnp.zeros(n, dtype=jnp.float32)``, ``jax.random.normal(key, shape, dtype=jnp.float32)``; operations
on float32 arrays stay float32. The neural-network code of vilab does exactly this. To switch x64 off
again for code that runs after vilab (vilab's own functions then lose their guarantees), call
``jax.config.update("jax_enable_x64", False)`` yourself.

Nothing in this package imports streamlit: the UI lives in ``pages/`` and ``vilab_ui``.
"""

from typing import Callable, Sequence

import jax

jax.config.update("jax_enable_x64", True)  # process-wide: see the module docstring

__version__ = "0.1.0"
__all__ = ["__version__", "clear_caches"]


def clear_caches() -> None:
    """Drop every compiled program this process holds: JAX's jit caches and vilab's own program caches
    (every :class:`vilab.core.cache.ProgramCache`: the runner's compiled loops, memoized Algorithms).

    Each compiled XLA program keeps a few memory mappings alive; a long-lived process that compiles
    thousands of programs (a test session, a server explored for hours) can reach the kernel's limit
    on mappings (vm.max_map_count) and crash inside the compiler. Calling this releases them; the
    next call of any vilab function simply compiles again.
    """
    from .core import cache

    cache.clear()
    jax.clear_caches()


def _count_memory_maps() -> tuple[int, int] | None:
    """(memory mappings of this process, the kernel's vm.max_map_count), or None off Linux."""
    try:
        with open("/proc/self/maps", "rb") as f:
            used = f.read().count(b"\n")
        with open("/proc/sys/vm/max_map_count") as f:
            limit = int(f.read())
    except (OSError, ValueError):
        return None
    return used, limit


def clear_caches_if_crowded(fraction: float = 0.5, also: Sequence[Callable[[], object]] = ()) -> bool:
    """:func:`clear_caches` when this process holds more than ``fraction`` of the memory mappings the
    kernel allows (Linux; elsewhere nothing happens). Long-lived processes such as the Streamlit server
    call it once per rerun. Returns whether the caches were cleared.

    The valve acts within the call: after clearing it collects garbage (a program held in a reference
    cycle is freed only by the collector) and counts again; while the count is still above the
    fraction it calls the clearers in ``also`` in turn (app.py passes ``st.cache_resource.clear``:
    objects cached by pages, such as targets, own compiled programs too). Last it returns the freed heap
    to the kernel (glibc's malloc_trim; measured: half the resident memory of the programs cleared would
    otherwise stay resident). Its cost when nothing is
    crowded is one read of /proc/self/maps, linear in the number of mappings (measured: 0.8 ms at 900
    mappings, 10 ms at 30,000), small against a rerun.
    """
    counts = _count_memory_maps()
    if counts is None or counts[0] <= fraction * counts[1]:
        return False
    import ctypes
    import gc

    clear_caches()
    gc.collect()
    for clear in also:
        counts = _count_memory_maps()
        if counts is None or counts[0] <= fraction * counts[1]:
            break
        clear()
        clear_caches()
        gc.collect()
    try:  # glibc keeps freed heap pages; give them back, or the resident memory stays at its peak
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass
    return True
