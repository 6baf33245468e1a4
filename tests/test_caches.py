"""vilab.clear_caches: compiled programs are released (their memory mappings with them)."""

import gc
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import vilab
from vilab.algorithms import run
from vilab.family.gaussian import MeanCov
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


# ----------------------------------------------------------------- vilab.core.compile_cache: the folder after a crash
def test_trim_counts_every_file_of_the_compilation_cache_folder(tmp_path):
    """XLA's own caches (a subfolder, on a GPU) are inside the bound too, oldest first."""
    import os

    from vilab.core import compile_cache

    for i in range(4):
        p = tmp_path / f"k{i}-cache"
        p.write_bytes(b"x" * 100)
        os.utime(p, (2000 + i, 2000 + i))
    xla = tmp_path / "xla_gpu_per_fusion_autotune_cache_dir"
    xla.mkdir()
    for i in range(6):
        p = xla / f"fusion{i}.textproto"
        p.write_bytes(b"y" * 100)
        os.utime(p, (1000 + i, 1000 + i))
    assert compile_cache.trim(tmp_path, max_bytes=900) == 6  # 1000 bytes: down to 400, the XLA files oldest
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [f"k{i}-cache" for i in range(4)]


def test_a_truncated_compiled_program_is_removed_when_the_cache_is_switched_on(tmp_path):
    """A process killed while JAX wrote a program leaves a truncated entry; JAX never replaces an entry that
    exists, so every later process would fail to read it and compile again. The next process to switch the
    cache on removes it, and writes the program whole."""
    import subprocess
    import zlib

    from vilab.core import compile_cache

    code = ("import sys, jax, jax.numpy as jnp; from vilab.core import compile_cache as cc; cc.enable_persistent_cache(sys.argv[1]); "
            "print(float(jax.jit(lambda x: jnp.sin(x) @ x.T)(jnp.ones((7, 5)))[0, 0]))")

    def compile_once():
        out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=300,
                             cwd=str(__import__("pathlib").Path(__file__).resolve().parents[1]))
        assert out.returncode == 0, out.stderr[-2000:]
        return out

    def whole(p):  # a complete zlib stream (JAX's format without the zstandard package)
        d = zlib.decompressobj()
        try:
            d.decompress(p.read_bytes())
        except zlib.error:
            return False
        return d.eof

    compile_once()
    entries = list(tmp_path.glob("*-cache"))
    assert entries and all(whole(p) for p in entries)
    for p in entries:  # what a writer killed half-way leaves
        p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    out = compile_once()
    assert "Error reading persistent compilation cache entry" not in out.stderr
    assert all(whole(p) for p in tmp_path.glob("*-cache"))  # written whole again
    (tmp_path / "other-cache").write_bytes(b"not compressed")  # a format it does not know is left alone
    (tmp_path / "z-cache").write_bytes(zlib.compress(b"program" * 100)[:-5])
    assert compile_cache.remove_truncated(tmp_path) == 1
    assert (tmp_path / "other-cache").exists() and not (tmp_path / "z-cache").exists()
