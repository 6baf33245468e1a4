"""PRNG keys at the edges: one policy for every public entry point.

- A library function that draws random numbers takes ``key``, a ``jax.random`` key, with no default
  and no integer in its place (:func:`check_key`; a missing key is a ValueError that says how to make
  one). Pages, the CLI and scripts hold integer seeds (a URL carries an int); :func:`as_key` turns one
  into a key, once, at that edge.
- A function whose method draws nothing (exact expectations, BONG's lin-hess rules, Gauss-Hermite
  quadrature) needs no key. Where it hands one to the runner anyway (the runner's protocol threads a key
  through every step), it hands :func:`no_draws_key`, which no step of it uses: its numbers do not
  depend on it.
- Independent streams inside a computation come from ``jax.random.split`` or ``jax.random.fold_in``
  of the key passed in, never from arithmetic on seeds.
"""

from __future__ import annotations

import jax
import numpy as np

__all__ = ["as_key", "is_key", "check_key", "no_draws_key", "key_if_draws"]


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


def no_draws_key() -> jax.Array:
    """The key a method that draws nothing hands the runner (see the policy above): never used by its steps."""
    return jax.random.PRNGKey(0)


def key_if_draws(key, draws: bool, who: str):
    """The key of an entry point whose method draws random numbers only in some settings: ``key`` itself
    (checked) when it draws; when it does not, ``key`` if one is given (checked) and :func:`no_draws_key`
    otherwise. ValueError when it draws and ``key`` is missing."""
    if key is None and not draws:
        return no_draws_key()
    return check_key(key, who)


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
