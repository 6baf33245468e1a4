"""PRNG keys at the edges.

Library entry points take a ``jax.random`` key. Pages, the CLI and scripts hold integer seeds (a
URL carries an int); :func:`as_key` turns one into a key, once, at that edge. Independent streams
inside a computation come from ``jax.random.split`` or ``jax.random.fold_in`` of the key passed in,
never from arithmetic on seeds.
"""

from __future__ import annotations

import jax
import numpy as np

__all__ = ["as_key", "is_key", "check_key"]


def is_key(x) -> bool:
    """Whether ``x`` is a JAX PRNG key (a typed key or a legacy uint32 pair)."""
    if isinstance(x, jax.Array):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            return True
        return x.dtype == np.uint32 and x.shape[-1:] == (2,)
    return False


def check_key(key, who: str):
    """``key`` itself when it is a JAX PRNG key; else ValueError saying that ``who`` needs one."""
    if not is_key(key):
        raise ValueError(f"{who} needs a jax.random key (vilab.core.as_key(seed) turns a seed into one); "
                         f"got {key!r}.")
    return key


def as_key(seed_or_key) -> jax.Array:
    """A PRNG key from an int seed (pages, CLI, scripts) or the key itself.

    Raises ValueError for anything else (a float, a negative number, text), with a sentence saying
    what to pass.
    """
    if is_key(seed_or_key):
        return seed_or_key
    if isinstance(seed_or_key, (bool, np.bool_)) or not isinstance(seed_or_key, (int, np.integer)):
        raise ValueError(f"A random seed must be a whole number (or a jax.random key); got {seed_or_key!r}.")
    if not 0 <= int(seed_or_key) < 2**63:
        raise ValueError(f"A random seed must be a non-negative whole number; got {seed_or_key}.")
    return jax.random.PRNGKey(int(seed_or_key))
