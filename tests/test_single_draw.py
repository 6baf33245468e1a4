"""Tan (explicit) Sec. 4: the O(d^2) single-draw natural step in a run (vilab.algorithms.catalogue.single_draw_algorithm).

Its iterates are the catalogue's tan-1N with one first-order draw per step (the dense O(d^3) path) on the same
draws, to round-off; the dense variant of the same Algorithm is the catalogue's step bit for bit. Times per step are
measured by benchmarks/bench_single_draw.py (no timed assertion here)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vilab import core
from vilab.algorithms import algorithm, method_table
from vilab.algorithms.catalogue import single_draw_algorithm
from vilab.family.gaussian import CholCov, MeanCov
from vilab.targets import gaussian_target, logistic_regression


def _dense_gaussian(d, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    return gaussian_target(rng.normal(size=d), precision=A @ A.T / d + np.eye(d), name=f"dense Gaussian d={d}")


def _runs(target, start, rho, n, key=3):
    key = jax.random.PRNGKey(key)
    out = {}
    for name, alg in (("catalogue", algorithm("tan-1N", target, grads="first", n_samples=1)),
                      ("sample", single_draw_algorithm(target, record_factor=True)),
                      ("dense", single_draw_algorithm(target, path="dense", record_factor=True))):
        out[name] = core.run(alg, key, alg.init(key, start, rho=rho), n)
    return out


def test_the_o_d2_step_gives_the_dense_paths_iterates_on_the_same_draws_at_d50():
    d = 50
    tr = _runs(_dense_gaussian(d), CholCov(jnp.zeros(d), jnp.eye(d)), 0.002, 300)
    ref = tr["catalogue"]
    assert ref.status == "max_steps" and ref.n_rows == 301
    for name in ("sample", "dense"):
        t = tr[name]
        assert t.status == "max_steps" and t.n_rows == ref.n_rows
        assert np.max(np.abs(t.mean - ref.mean)) <= 1e-10, name
        assert np.max(np.abs(t.extra["factor"] - ref.extra["factor"])) <= 1e-10, name
        np.testing.assert_allclose(t.var, np.diagonal(ref.cov, axis1=1, axis2=2), rtol=1e-9, atol=1e-12)
    # the dense variant is the catalogue's arithmetic: the same numbers to the last bit
    assert np.array_equal(tr["dense"].mean, ref.mean)
    # the iterates moved (a run that stood still would agree trivially)
    assert np.max(np.abs(ref.mean[-1] - ref.mean[0])) > 0.1


def test_the_o_d2_step_on_a_logistic_regression_matches_the_catalogue():
    rng = np.random.default_rng(1)
    X = np.column_stack([np.ones(300), rng.normal(size=(300, 7))])
    y = (rng.uniform(size=300) < 1 / (1 + np.exp(-X @ rng.normal(size=8)))).astype(float)
    tgt = logistic_regression(X, y, prior_var=10.0)
    tr = _runs(tgt, MeanCov(np.zeros(8), 0.05 * np.eye(8)), 0.01, 200, key=7)
    ref, s = tr["catalogue"], tr["sample"]
    assert s.status == ref.status == "max_steps"
    assert np.max(np.abs(s.mean - ref.mean)) <= 1e-10
    assert np.max(np.abs(s.extra["factor"] - ref.extra["factor"])) <= 1e-10
    # the objective is the exact negative ELBO (a GLM target): the catalogue's on the same iterates
    np.testing.assert_allclose(s.objective, ref.objective, rtol=1e-9)


def test_resume_with_a_new_step_size_and_memoized_programs():
    d = 20
    tgt = _dense_gaussian(d, seed=2)
    alg = single_draw_algorithm(tgt)
    assert single_draw_algorithm(tgt) is alg and single_draw_algorithm(tgt, path="dense") is not alg
    key = jax.random.PRNGKey(0)
    tr = core.run(alg, key, alg.init(key, CholCov(jnp.zeros(d), jnp.eye(d)), rho=0.005), 100, record_every=50)
    more = core.resume(alg, tr, 100, hyper={"rho": 0.002}, record_every=50)
    assert more.n_steps == 200 and np.all(np.isfinite(more.mean))
    assert tr.settings["path"] == "sample" and "Sec. 4" in tr.settings["paper"]


def test_a_too_large_step_is_reported_and_the_iterates_before_it_are_kept():
    d = 30
    tgt = _dense_gaussian(d, seed=3)
    alg = single_draw_algorithm(tgt)
    key = jax.random.PRNGKey(1)
    tr = core.run(alg, key, alg.init(key, CholCov(jnp.zeros(d), jnp.eye(d)), rho=2.0), 500)
    assert tr.status.startswith("diverged"), tr.status
    assert np.all(np.isfinite(tr.mean)) and tr.n_steps < 500


def test_bad_settings_are_a_valueerror_with_a_sentence():
    tgt = _dense_gaussian(4)
    with pytest.raises(ValueError, match="path must be one of"):
        single_draw_algorithm(tgt, path="fast")
    with pytest.raises(ValueError, match="vilab.targets.Target"):
        single_draw_algorithm("not a target")
    alg = single_draw_algorithm(tgt)
    with pytest.raises(ValueError, match="dimension"):
        alg.init(jax.random.PRNGKey(0), CholCov(jnp.zeros(3), jnp.eye(3)))
    with pytest.raises(ValueError, match="step size"):
        alg.init(jax.random.PRNGKey(0), CholCov(jnp.zeros(4), jnp.eye(4)), rho=-1.0)


def test_the_method_table_lists_it():
    rows = [r for r in method_table() if r["section"] == "outside" and "single_draw_algorithm" in r["where"]]
    assert len(rows) == 1 and "Sec. 4" in rows[0]["paper"]
