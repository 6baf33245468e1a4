"""vilab.clear_caches: compiled programs are released (their memory mappings with them)."""

import gc
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import vilab
from vilab.algorithms import run
from vilab.gaussian import MeanCov
from vilab.targets import gaussian_2d

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")


@linux
def test_clear_caches_releases_the_mappings_of_compiled_programs():
    gc.collect()
    vilab.clear_caches()
    before = vilab._count_memory_maps()[0]
    fns = [jax.jit(lambda x, i=i: jnp.sin(x) * i + jnp.cos(x) ** 2) for i in range(60)]
    for i, f in enumerate(fns):
        f(jnp.ones(i + 1)).block_until_ready()
    grown = vilab._count_memory_maps()[0]
    assert grown > before + 100  # each compiled program holds several mappings
    vilab.clear_caches()
    gc.collect()
    assert vilab._count_memory_maps()[0] < before + 0.2 * (grown - before)


def test_vilab_runs_after_clearing_its_caches():
    t = gaussian_2d(0.5)
    init = MeanCov(np.zeros(2), np.eye(2))
    a = run("vn", t, init, 5, 0.5)
    vilab.clear_caches()
    b = run("vn", t, init, 5, 0.5)
    np.testing.assert_array_equal(a.mean, b.mean)


@linux
def test_clear_caches_if_crowded_only_acts_past_the_fraction():
    used, limit = vilab._count_memory_maps()
    assert 0 < used < limit
    assert vilab.clear_caches_if_crowded(fraction=1.0) is False
    assert vilab.clear_caches_if_crowded(fraction=0.0) is True


def test_all_program_caches_together_stay_under_the_total_limit(monkeypatch):
    """Past TOTAL_LIMIT entries over every cache, the least recently used entry of any cache goes, so a
    long-lived server's compiled programs level off."""
    from vilab.core import cache as pc

    pc.clear()
    monkeypatch.setattr(pc, "TOTAL_LIMIT", 5)
    a, b = pc.ProgramCache("test-a", 10), pc.ProgramCache("test-b", 10)
    for i in range(3):
        a.get_or_build(i, lambda i=i: f"a{i}")
    b.get_or_build(0, lambda: "b0")
    a.get_or_build(0, lambda: "rebuilt")  # a hit: a's entry 0 is now the most recently used
    b.get_or_build(1, lambda: "b1")
    assert pc.total() == 5
    b.get_or_build(2, lambda: "b2")  # one too many: the least recently used of all (a's entry 1) goes
    assert pc.total() == 5 and len(a) == 2 and len(b) == 3
    assert a.get_or_build(0, lambda: "rebuilt") == "a0" and a.get_or_build(2, lambda: "rebuilt") == "a2"
    assert a.get_or_build(1, lambda: "rebuilt") == "rebuilt"
    pc.clear()
