"""vilab.core.compile_cache: the persistent compilation cache is created on first use and shared by processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vilab.core import compile_cache

# a fresh process: switch the cache on, compile one program, report the cache hits JAX counted
CHILD = textwrap.dedent("""
    import json, sys
    import jax, jax.numpy as jnp
    from vilab.core.compile_cache import enable_persistent_cache

    hits = []
    jax.monitoring.register_event_listener(
        lambda event, **kw: hits.append(event) if event == "/jax/compilation_cache/cache_hits" else None)
    folder = enable_persistent_cache(sys.argv[1], min_compile_secs=0)
    f = jax.jit(lambda x: jnp.sin(x) @ jnp.cos(x).T + 3.0)
    y = f(jnp.ones((4, 4)))
    print(json.dumps({"hits": len(hits), "folder": str(folder), "y": float(y[0, 0])}))
""")


def _child(folder: Path) -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", CHILD, str(folder)], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_process_loads_what_the_first_compiled(tmp_path):
    folder = tmp_path / "deep" / "jax"  # does not exist yet
    first = _child(folder)
    assert folder.is_dir() and first["folder"] == str(folder)
    entries = sorted(p.name for p in folder.glob("*-cache"))
    assert entries, "the first process wrote no cache entry"
    assert first["hits"] == 0
    second = _child(folder)
    assert second["hits"] >= 1, "the second process compiled again instead of loading the cached program"
    assert second["y"] == pytest.approx(first["y"])
    assert sorted(p.name for p in folder.glob("*-cache")) == entries  # nothing new was written


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("VILAB_JAX_CACHE", str(tmp_path / "mine"))
    assert compile_cache.cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("VILAB_JAX_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert compile_cache.cache_dir() == tmp_path / "xdg" / "vilab" / "jax"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert compile_cache.cache_dir() == tmp_path / "home" / ".cache" / "vilab" / "jax"


def test_trim_removes_the_oldest_entries_first(tmp_path):
    for i in range(6):
        p = tmp_path / f"k{i}-cache"
        p.write_bytes(b"x" * 100)
        (tmp_path / f"k{i}-atime").write_bytes(b"t")
        os.utime(p, (1000 + i, 1000 + i))
    assert compile_cache.trim(tmp_path, max_bytes=1000) == 0  # 600 bytes: under the bound
    assert compile_cache.trim(tmp_path, max_bytes=500) == 4  # down to 250 bytes: two entries left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k4-atime", "k4-cache", "k5-atime", "k5-cache"]


def test_a_folder_that_cannot_be_created_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    code = ("from vilab.core.compile_cache import enable_persistent_cache\n"
            "try:\n    enable_persistent_cache(__import__('sys').argv[1])\n"
            "except ValueError as e:\n    print('ValueError:', e)\n")
    out = subprocess.run([sys.executable, "-c", code, str(blocker / "jax")], capture_output=True, text=True,
                         timeout=60)
    assert "ValueError:" in out.stdout and "VILAB_JAX_CACHE" in out.stdout


def test_the_server_reports_a_folder_that_cannot_be_created_and_goes_on(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    code = "from vilab.core.compile_cache import enable_for_server\nprint(enable_for_server())\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, VILAB_JAX_CACHE=str(blocker / "jax")))
    assert out.returncode == 0, out.stderr[-1000:]
    first, last = out.stdout.strip().splitlines()
    assert "cannot be created" in first and "Compiled programs are not kept on disk." in first and last == "None"


def test_off_leaves_the_cache_off(tmp_path):
    code = ("import jax\nfrom vilab.core.compile_cache import enable_persistent_cache\n"
            "print(enable_persistent_cache(), jax.config.jax_compilation_cache_dir)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, VILAB_JAX_CACHE="off"))
    assert out.stdout.split() == ["None", "None"], out.stderr[-1000:]


def test_the_plain_switch_leaves_the_servers_cache_off(tmp_path):
    """VILAB_PLAIN_UI=1 (docs/ui-mechanisms.md): the lab's server compiles in every process; a library user who
    switches the cache on still gets it."""
    code = ("import jax\nfrom vilab.core import compile_cache as cc\n"
            "print(cc.plain_ui(), cc.enable_for_server(), jax.config.jax_compilation_cache_dir)\n"
            "print(cc.enable_persistent_cache() is not None)\n")
    for value, expect in (("1", "True None None"), ("off", "False")):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, VILAB_PLAIN_UI=value, VILAB_JAX_CACHE=str(tmp_path / value)))
        assert out.returncode == 0, out.stderr[-1000:]
        first, second = out.stdout.strip().splitlines()
        assert first.startswith(expect) and second == "True", out.stdout


def test_the_valve_clears_within_one_call_until_mappings_drop(monkeypatch):
    import vilab

    counts = iter([(40_000, 65_530), (39_000, 65_530), (20_000, 65_530)])
    calls = []
    monkeypatch.setattr(vilab, "_count_memory_maps", lambda: next(counts))
    monkeypatch.setattr(vilab, "clear_caches", lambda: calls.append("vilab+jax"))
    cleared = vilab.clear_caches_if_crowded(also=[lambda: calls.append("pages"), lambda: calls.append("never")])
    # vilab's and jax's caches first; still crowded, so the first extra clearer, then the count is fine
    assert cleared and calls == ["vilab+jax", "pages", "vilab+jax"]
    monkeypatch.setattr(vilab, "_count_memory_maps", lambda: (1_000, 65_530))
    calls.clear()
    assert not vilab.clear_caches_if_crowded(also=[lambda: calls.append("pages")]) and calls == []
