"""Parametric target families (Target.family / params / family_fn) and the catalogue's per-family Algorithms.

A member of a family carries its parameters as data; vilab.algorithms compiles one loop per family
and passes the parameters at run time. The results must be those of the same target without the
family mechanism (closed over as constants), and a second member must reuse the compiled loop.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import vilab  # noqa: F401
from vilab.algorithms import catalogue, list_methods, run, run_sweep, trace_count
from vilab.family.gaussian import CholCov
from vilab.targets import Target, banana, family_jits, gaussian_2d, gaussian_target, rotated_gaussian_2d, student_t_2d

R = np.array([[1.0, -1.0], [1.0, 1.0]]) / np.sqrt(2.0)
START = CholCov(np.array([-2.0, 2.5]), 0.2 * np.eye(2))
NATURAL = {"kappa", "xi", "lambda", "tan-1N", "tan-2N", "tan-2N-cor1", "tan-1S", "tan-2S", "vn", "srvn"}
STRUCTURE = {"tan-1S": {"blocks": (1, 1)}, "tan-2S": {"local_sizes": (1,), "global_size": 1}}


def _corr_gaussian(kappa):
    """The Trajectories page's correlated Gaussian (condition number kappa)."""
    t = rotated_gaussian_2d(kappa)
    np.testing.assert_allclose(t.params["precision"], R @ np.diag([1.0, kappa]) @ R.T, rtol=1e-14, atol=1e-14)
    return t


def _plain(target):
    """The same target without the family mechanism: the driver keys it by identity and closes over it."""
    return dataclasses.replace(target, family=None, params=None, family_fn=None)


def _assert_same(a, b):
    assert a.status == b.status and a.n_steps == b.n_steps, (a.status, b.status, a.n_steps, b.n_steps)
    for x, y in ((a.mean, b.mean), (a.cov, b.cov), (a.objective, b.objective), (a.step_sizes, b.step_sizes),
                 (a.extra["elbo"], b.extra["elbo"])):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------------- the targets

@pytest.mark.parametrize("make", [lambda: _corr_gaussian(30.0), lambda: gaussian_2d(0.7, 1.0, 2.0, mean=(1.0, -1.0)),
                                  lambda: banana(0.4, 1.5), lambda: student_t_2d(3.0, 0.3, scale=(1.0, 2.0), loc=(0.5, 0)),
                                  lambda: gaussian_target(np.arange(3.0), cov=np.diag([1.0, 2.0, 3.0]))])
def test_rebuild_from_traced_params_is_the_target(make):
    t = make()
    assert t.family is not None and not t.traced and t.family_fn is not None
    assert all(np.asarray(p).dtype == np.float64 for p in jax.tree.leaves(t.params))
    x = jnp.linspace(-0.7, 0.4, t.dim)

    @jax.jit
    def rebuilt(params, theta):  # numpy on a tracer would raise here
        r = t.family_fn(params)
        assert r.traced and r.family == t.family and r.dim == t.dim and r.quadratic == t.quadratic
        return r.value(theta), r.grad(theta), r.hess(theta), r.mean, r.cov, r.precision

    v, g, H, mean, cov, prec = rebuilt(t.params, x)
    np.testing.assert_allclose(v, t.value(x), rtol=1e-13)
    np.testing.assert_allclose(g, t.grad(x), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(H, t.hess(x), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(H, jax.hessian(t.log_density)(x), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(mean, t.mean, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(cov, t.cov, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(prec, np.linalg.inv(t.cov), rtol=1e-10, atol=1e-12)


def test_student_t_without_moments_rebuilds_nan_moments():
    t = student_t_2d(1.5, 0.2)  # mean exists, covariance does not
    assert t.cov is None and t.mean is not None
    r = jax.jit(lambda p: (t.family_fn(p).mean, t.family_fn(p).cov))(t.params)
    assert np.all(np.isfinite(r[0])) and np.all(np.isnan(r[1]))
    c = student_t_2d(1.0)
    r = jax.jit(lambda p: t.family_fn(p).mean)(c.params)
    assert c.mean is None and np.all(np.isnan(r))


def test_parameters_are_differentiable_through_the_rebuild():
    """d log p / d df of a Student-t by autodiff through family_fn, against a central difference."""
    t = student_t_2d(4.0, 0.5)
    x = jnp.array([1.0, -0.5])

    def f(df):
        return t.family_fn({**t.params, "df": df}).log_density(x)

    h = 1e-5
    fd = (student_t_2d(4.0 + h, 0.5).value(x) - student_t_2d(4.0 - h, 0.5).value(x)) / (2 * h)
    np.testing.assert_allclose(jax.grad(f)(jnp.float64(4.0)), fd, rtol=1e-7)


def test_members_share_their_jitted_derivatives():
    a, b = _corr_gaussian(3.0), _corr_gaussian(300.0)
    fns = family_jits(a.family, a.family_fn)
    x = jnp.array([0.2, -0.1])
    np.testing.assert_allclose(a.grad(x), -a.info["precision"] @ (x - a.mean), rtol=1e-12)
    a.value(x), a.hess(x)  # a compiles value and hess too (the test must not depend on earlier tests)
    sizes = {k: f._cache_size() for k, f in fns.items()}
    np.testing.assert_allclose(b.grad(x), -b.info["precision"] @ (x - b.mean), rtol=1e-12)
    b.value(x), b.hess(x)
    assert {k: f._cache_size() for k, f in fns.items()} == sizes  # b compiled nothing
    assert fns["grad"]._cache_size() >= 1


@pytest.mark.parametrize("make, match", [
    (lambda: student_t_2d(-1.0), "degrees of freedom"),
    (lambda: student_t_2d(3.0, rho=1.0), "strictly between -1 and 1"),
    (lambda: student_t_2d(np.nan), "degrees of freedom"),
    (lambda: student_t_2d(3.0, scale=(1.0, -2.0)), "scale"),
    (lambda: banana(np.inf), "curvature b must be finite"),
    (lambda: banana(0.5, sd1=0.0), "sd1 must be a positive finite"),
    (lambda: _corr_gaussian(-1.0), "condition number kappa must be a positive"),
    (lambda: gaussian_2d(-1.0), "strictly between -1 and 1"),
    (lambda: Target("half", 1, lambda th: -th[0] ** 2, family=("x",), params={"a": 1.0}), "family_fn"),
])
def test_bad_parameters_still_raise_from_the_constructors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


# ------------------------------------------------------------------------------------- the driver

def _step(name, kappa_max):
    """A step size that neither diverges nor stalls on the correlated Gaussian (from C_0 = 0.2 I)."""
    if name in NATURAL:
        return 0.3 if name == "kappa" else 0.5
    return {"gd-mv": 0.03, "svgd": 0.1}.get(name, 0.4) / kappa_max  # Gaussian SVGD: |m|^2 scales its step


@pytest.mark.slow  # 8 compiled loops per method (10-20 s each on 2 busy cores)
@pytest.mark.parametrize("name", [m["name"] for m in list_methods()])
def test_family_loops_match_the_plain_loops(name):
    """Every method, run and run_sweep, on the correlated Gaussian (exact gradients: the traced
    Hessian, exact ELBO and Gaussian KL) and the Student-t (stochastic gradients): a first member
    compiles the family's loop, a second member reuses it and must give what the same target
    without the family mechanism gives (to 1e-12)."""
    opts = STRUCTURE.get(name, {})
    key = jax.random.PRNGKey(3)
    # Gaussian: run with KL stopping, sweep with backtracking on the exact ELBO (one step size diverges)
    run(name, _corr_gaussian(10.0), START, 40, _step(name, 10.0), kl_tol=1e-9, **opts)
    g = _corr_gaussian(100.0)
    _assert_same(run(name, g, START, 40, _step(name, 100.0), kl_tol=1e-9, **opts),
                 run(name, _plain(g), START, 40, _step(name, 100.0), kl_tol=1e-9, **opts))
    steps = [_step(name, 100.0), 3.0 if name in NATURAL else 0.05]
    sweep = dict(schedule="backtracking" if name in NATURAL else "constant", rel_tol=1e-10, **opts)
    run_sweep(name, _corr_gaussian(10.0), START, 30, steps, **sweep)
    for a, b in zip(run_sweep(name, g, START, 30, steps, **sweep), run_sweep(name, _plain(g), START, 30, steps, **sweep)):
        _assert_same(a, b)
    # Student-t: second-order estimates for run, first-order for the sweep (Monte Carlo ELBO)
    r = 0.005 if name == "svgd" else 0.05  # at 0.05 Gaussian SVGD's covariance blows up (round-off grows with it)
    run(name, student_t_2d(5.0, 0.5), START, 20, r, key=key, grads="second", n_samples=3, **opts)
    t = student_t_2d(2.5, -0.3)
    _assert_same(run(name, t, START, 20, r, key=key, grads="second", n_samples=3, **opts),
                 run(name, _plain(t), START, 20, r, key=key, grads="second", n_samples=3, **opts))
    stoch = dict(key=key, grads="first", n_samples=2, **opts)
    run_sweep(name, student_t_2d(5.0, 0.5), START, 20, [0.01, 0.1], **stoch)
    for a, b in zip(run_sweep(name, t, START, 20, [0.01, 0.1], **stoch),
                    run_sweep(name, _plain(t), START, 20, [0.01, 0.1], **stoch)):
        _assert_same(a, b)


def test_a_new_member_reuses_the_compiled_loop():
    """Counted on the catalogue (step traces and memoized Algorithms), not timed."""
    from vilab.core import cache

    cache.clear()  # room under the caches' total limit: no entry of this test is evicted by the earlier tests'
    init = CholCov(np.array([0.5, -0.5]), 0.3 * np.eye(2))
    run("vn", _corr_gaussian(2.0), init, 50, 1.0, kl_tol=1e-10)
    key = jax.random.PRNGKey(0)
    run_sweep("srvn", student_t_2d(7.0, 0.1), init, 20, [0.1, 0.2], grads="first", key=key)
    run("bwgd", banana(0.3, 1.0), init, 20, 0.01, grads="second", key=key)
    n_traces, n_entries = trace_count(), len(catalogue._ALGORITHMS)
    traces = []
    for kappa in (5.0, 50.0, 500.0):
        traces.append(run("vn", _corr_gaussian(kappa), init, 50, 1.0, kl_tol=1e-10))
    for df, rho in ((1.0, 0.9), (30.0, -0.5)):
        run_sweep("srvn", student_t_2d(df, rho), init, 20, [0.1, 0.2], grads="first", key=key)
    run("bwgd", banana(1.0, 2.0), init, 20, 0.01, grads="second", key=key)
    assert trace_count() == n_traces and len(catalogue._ALGORITHMS) == n_entries
    for kappa, tr in zip((5.0, 50.0, 500.0), traces):  # VN with rho = 1 is exact in one step: the new parameters are used
        assert tr.status == "converged" and tr.n_steps == 1
        np.testing.assert_allclose(tr.cov[-1], np.linalg.inv(R @ np.diag([1.0, kappa]) @ R.T), rtol=1e-10)
    # a target without a family is keyed by identity: its own Algorithm and loop (so the counters move)
    run("vn", _plain(_corr_gaussian(5.0)), init, 50, 1.0, kl_tol=1e-10)
    assert trace_count() > n_traces and len(catalogue._ALGORITHMS) == n_entries + 1
