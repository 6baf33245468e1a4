"""vilab.core.keys: one key policy at every public entry point. A function that draws random numbers needs a
jax.random key (no default, no integer in its place); one whose method draws nothing needs none and its numbers
do not depend on the key the runner is handed."""

from __future__ import annotations

import ast
from pathlib import Path

import jax
import numpy as np
import pytest

import vilab  # noqa: F401  (x64)
from vilab import algorithms, core, targets
from vilab.family.gaussian import CholCov
from vilab.models import kumar_logistic as klog
from vilab.online import categorical, make_evaluator
from vilab.online.linear_gaussian import make_stream
from vilab.theory import definiteness, stability

ROOT = Path(__file__).resolve().parents[1]
START = CholCov(np.array([0.5, -0.5]), 0.3 * np.eye(2))


def test_key_if_draws():
    k = core.as_key(4)
    assert core.key_if_draws(k, True, "x") is k and core.key_if_draws(k, False, "x") is k
    assert np.array_equal(core.key_if_draws(None, False, "x"), core.no_draws_key())
    with pytest.raises(ValueError, match="the thing needs a jax.random key"):
        core.key_if_draws(None, True, "the thing")
    with pytest.raises(ValueError, match="jax.random key"):
        core.key_if_draws(7, False, "x")  # a key that is given is checked even where nothing is drawn


def test_exact_runs_need_no_key_and_do_not_depend_on_one():
    t = targets.gaussian_2d(0.5)
    a = algorithms.run("srvn", t, START, 20, 0.3)
    b = algorithms.run("srvn", t, START, 20, 0.3, key=core.as_key(99))
    assert np.array_equal(a.mean, b.mean) and np.array_equal(a.cov, b.cov)


def test_stochastic_entry_points_need_a_key():
    t = targets.gaussian_2d(0.5)
    f = lambda x, th: x @ th.reshape(2, 3)  # noqa: E731
    X = np.ones((4, 2))
    for call in (
        lambda key: algorithms.run("srvn", t, START, 5, 0.3, grads="first", key=key),
        lambda key: algorithms.run_sweep("srvn", t, START, 5, [0.1, 0.2], grads="second", key=key),
        lambda key: definiteness.pd_loss_fraction(t, [0, 0], np.eye(2), 0.1, n_runs=2, n_steps=2, key=key),
        lambda key: klog.time_per_step([2], seconds_each=0.001, key=key),
        lambda key: make_evaluator(f, categorical(3), X, [0, 1, 2, 0], n_mc=2, key=key),
        lambda key: make_stream(key, 5),
    ):
        for bad in (None, 0, 1.5):
            with pytest.raises(ValueError, match="needs a jax.random key"):
                call(bad)
    make_evaluator(f, categorical(3), X, [0, 1, 2, 0], which=("plugin",))  # plug-in only: nothing is drawn


def _library_files():
    return [p for p in (ROOT / "vilab").rglob("*.py") if "repro" not in p.parts]


def _hidden_defaults(tree: ast.AST) -> list[str]:
    """``PRNGKey(n) if key is None else ...`` and ``as_key(key)`` on a parameter: a key made up or coerced
    inside the library instead of at the edge."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.IfExp) and isinstance(node.test, ast.Compare) \
                and isinstance(node.test.left, ast.Name) and node.test.left.id == "key" \
                and any(isinstance(op, ast.Is) for op in node.test.ops):
            out.append(f"line {node.lineno}: a default key when key is None")
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "as_key" \
                and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "key":
            out.append(f"line {node.lineno}: as_key(key) turns a seed into a key inside the library")
    return out


def test_no_library_function_makes_up_or_coerces_its_key():
    """Pages, the CLI, scripts and the registry's entries (vilab/repro, each a fixed seed stated in its entry)
    turn seeds into keys; the library checks the key it is given (vilab.core.check_key)."""
    bad = {str(p.relative_to(ROOT)): _hidden_defaults(ast.parse(p.read_text())) for p in _library_files()}
    assert not {p: b for p, b in bad.items() if b}


def test_the_scan_finds_what_it_looks_for():
    faulty = ast.parse("def f(key=None):\n    key = jax.random.PRNGKey(0) if key is None else key\n"
                       "def g(key):\n    return core.as_key(key)\n")
    assert len(_hidden_defaults(faulty)) == 2


def test_atlas_is_deterministic_and_takes_no_key():
    at = stability.atlas("srvn", [2.0], [0.1, 0.5], n_steps=50)
    assert np.all(np.isfinite(np.asarray(at.iterations, float)))
    with pytest.raises(TypeError):
        stability.atlas("srvn", [2.0], [0.1], key=jax.random.PRNGKey(0))
