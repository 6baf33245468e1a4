"""Continuous-time flows (vilab.theory.flows) and 1-D vector fields (vilab.theory.fields)."""

import numpy as np
import pytest

import vilab  # noqa: F401
from vilab.algorithms import run, run_sweep
from vilab.theory.fields import elbo_grid_1d, gradient_field_1d
from vilab.theory.flows import flow
from vilab.family.gaussian import CholCov
from vilab.targets.papers import bivariate_cauchy, horseshoe_crab_toy, kumar_t2, kumar_t3

INIT = CholCov(np.array([-2.0, 2.5]), 0.2 * np.eye(2))


def test_closed_forms_match_ode_solutions_and_natural_flows_coincide():
    t = kumar_t2()
    ref = flow("natural-mv", t, INIT, 3.0, n_times=31)
    assert ref.extra["how"] == "closed form"
    for kind in ("natural-mv", "natural-mc", "natural-lambda"):
        f = flow(kind, t, INIT, 3.0, n_times=31, method="ode")
        assert f.status == "max_steps" and f.extra["how"].startswith("solve_ivp")
        assert np.allclose(f.mean, ref.mean, atol=1e-7) and np.allclose(f.cov, ref.cov, atol=1e-8)
    w_ref = flow("wasserstein", t, INIT, 0.3, n_times=31)
    w = flow("wasserstein", t, INIT, 0.3, n_times=31, method="ode")
    assert np.allclose(w.mean, w_ref.mean, atol=1e-7) and np.allclose(w.cov, w_ref.cov, atol=1e-8)
    e = flow("euclidean-mv", t, INIT, 0.3, n_times=31)
    assert np.allclose(e.mean, w_ref.mean, atol=1e-7)  # the mean flows agree (dm = -A (m - m*))
    assert np.all(np.diff(ref.objective) < 0) and np.all(np.diff(e.objective) < 1e-12)


def test_vn_iterates_lie_on_the_natural_flow():
    """Kumar digest claim 2: VN iterate k equals the NG flow at t_k = -k log(1 - rho)."""
    t = kumar_t2()
    rho = 0.3
    tr = run("vn", t, INIT, 5, rho)
    f = flow("natural-mv", t, INIT, -5 * np.log(1 - rho), n_times=6)
    assert np.allclose(tr.mean, f.mean, atol=1e-12) and np.allclose(tr.cov, f.cov, atol=1e-12)


def test_natural_flow_kl_rate():
    """Kumar digest claim 4: KL_t e^{2t} tends to a constant (about 3.863e3 on T2)."""
    f = flow("natural-mv", kumar_t2(), INIT, 16.0, n_times=5)
    assert f.objective[-1] * np.exp(2 * 16.0) == pytest.approx(3.8634e3, rel=2e-3)


def test_natural_flows_agree_on_a_non_gaussian_target():
    t = kumar_t3()
    init = CholCov(np.zeros(2), 0.5 * np.eye(2))
    a = flow("natural-mv", t, init, 2.0, n_times=11)
    assert a.extra["how"].startswith("solve_ivp") and np.all(np.diff(a.objective) < 0)
    for kind in ("natural-mc", "natural-lambda"):
        b = flow(kind, t, init, 2.0, n_times=11)
        assert np.allclose(a.mean, b.mean, atol=1e-6) and np.allclose(a.cov, b.cov, atol=1e-7), kind


def test_every_flow_reaches_the_posterior_and_ode_matches_closed_forms_over_long_times():
    """On T2 (condition number 28) all six flows end at the posterior; the stiff Wasserstein ODE
    (LSODA with the jax Jacobian) matches its closed form to 1e-9 over the whole of [0, 30]."""
    t = kumar_t2()
    for kind in ("natural-mv", "natural-mc", "natural-lambda", "wasserstein", "euclidean-mv", "euclidean-mc"):
        f = flow(kind, t, INIT, 30.0, n_times=7)
        assert f.status == "max_steps" and abs(f.objective[-1]) < 1e-12, (kind, f.objective)
        assert np.allclose(f.mean[-1], t.mean, atol=1e-7) and np.allclose(f.cov[-1], t.cov, atol=1e-9)
    closed = flow("wasserstein", t, INIT, 30.0, n_times=61)
    ode = flow("wasserstein", t, INIT, 30.0, n_times=61, method="ode")
    assert np.allclose(ode.mean, closed.mean, atol=1e-9) and np.allclose(ode.cov, closed.cov, atol=1e-9)
    # the Euclidean flows in (m, V) and (m, C) share the mean flow dm = -A (m - m*) on a Gaussian target
    a, b = flow("euclidean-mv", t, INIT, 2.0, n_times=11), flow("euclidean-mc", t, INIT, 2.0, n_times=11)
    assert np.allclose(a.mean, b.mean, atol=1e-8) and not np.allclose(a.cov, b.cov, atol=1e-3)


@pytest.mark.slow
def test_discrete_methods_are_forward_euler_steps_of_their_flows():
    """k steps of size rho land within O(rho) of the flow at t = k rho: the error shrinks tenfold
    from rho = 1e-3 to 1e-4 (T2 and the logistic T3, t = 0.2)."""
    pairs = [("gd-mv", "euclidean-mv"), ("gd-mc", "euclidean-mc"), ("bwgd", "wasserstein"),
             ("srvn", "natural-mc"), ("lambda", "natural-lambda"), ("tan-2N-cor1", "natural-mv")]
    for target in (kumar_t2(), kumar_t3()):
        for method, kind in pairs if target is kumar_t2() else pairs[2:4]:
            f = flow(kind, target, INIT, 0.2, n_times=2, method="ode")
            coarse, fine = run_sweep(method, target, INIT, 2000, [1e-3, 1e-4])
            errs = []
            for tr, k in ((coarse, 200), (fine, 2000)):
                errs.append(max(np.abs(tr.mean[k] - f.mean[-1]).max(), np.abs(tr.cov[k] - f.cov[-1]).max()))
            assert 7.0 < errs[0] / errs[1] < 13.0 and errs[1] < 1e-3, (method, kind, errs)


def test_flow_bad_input():
    with pytest.raises(ValueError, match="Unknown flow"):
        flow("adam", kumar_t2(), INIT, 1.0)
    with pytest.raises(ValueError, match="positive"):
        flow("natural-mv", kumar_t2(), INIT, -1.0)
    with pytest.raises(ValueError, match="closed form"):
        flow("euclidean-mv", kumar_t2(), INIT, 1.0, method="closed")
    with pytest.raises(ValueError, match="solver"):
        flow("euclidean-mv", kumar_t2(), INIT, 1.0, solver="euler")
    with pytest.raises(ValueError, match="exact expectations"):
        flow("euclidean-mv", bivariate_cauchy(), INIT, 1.0)


def test_vector_fields_of_the_toy():
    t = horseshoe_crab_toy()
    mu = np.linspace(-0.5, 2.5, 7)
    var = np.linspace(0.001, 0.12, 5)
    L = elbo_grid_1d(t, mu, var)
    M, V = np.meshgrid(mu, var)
    closed = 505 * M - 173 * np.exp(M + V / 2) - 530.034417 - (M**2 + V) / 200 + 0.5 * np.log(V) + 0.5 * (1 - np.log(100))
    assert L.shape == (5, 7) and np.allclose(L, closed, rtol=1e-12)
    g = 505 - 173 * np.exp(M + V / 2) - M / 100
    gs = 0.5 * (1 / V - 1 / 100 - 173 * np.exp(M + V / 2))
    U, W = gradient_field_1d(t, mu, var, "euclidean-var")
    assert np.allclose(U, g) and np.allclose(W, gs)
    U, W = gradient_field_1d(t, mu, var, "natural")
    assert np.allclose(U, V * g) and np.allclose(W, 2 * V**2 * gs)
    U2, S = gradient_field_1d(t, mu, var, "natural", coords="mu-sd")
    assert np.allclose(S, W / (2 * np.sqrt(V)))
    U, W = gradient_field_1d(t, [1.070256], [0.0019802], "natural")
    assert abs(U[0, 0]) < 1e-6 and abs(W[0, 0]) < 1e-8
    with pytest.raises(ValueError, match="positive variances"):
        elbo_grid_1d(t, mu, [-1.0])


def test_euclidean_kappa_ieee_reproduces_table2_and_agrees_with_the_xla_run():
    """vilab.theory.fields.euclidean_kappa_ieee: Tan (2025) Table 2's Euclidean column exactly; the same iterates
    as vilab.algorithms' gd-mv up to rounding for the first steps; bad input is a ValueError."""
    from vilab.algorithms import run
    from vilab.theory.fields import euclidean_kappa_ieee
    from vilab.targets.papers import horseshoe_crab_toy

    crab = horseshoe_crab_toy()
    for start, (its, rmin) in {(0.0, 0.1): (141, 1e-5), (0.5, 0.02): (107, 1e-6), (2.0, 0.01): (115, 1e-6)}.items():
        tr = euclidean_kappa_ieee(crab, *start)
        assert (tr.n_steps, float(tr.step_sizes.min()), tr.status) == (its, rmin, "converged")
        assert np.all(np.diff(tr.extra["elbo"]) > 0)  # backtracking only accepts ascents
        xla = run("gd-mv", crab, (np.array([start[0]]), np.array([[start[1]]])), 1000, 1.0,
                  schedule="backtracking", rel_tol=1e-7)
        np.testing.assert_allclose(xla.mean[:4, 0], tr.mean[:4, 0], rtol=1e-9)
        np.testing.assert_allclose(xla.cov[:4, 0, 0], tr.cov[:4, 0, 0], rtol=1e-9)
        # both stop early, short of mu* = 1.070256, where the chaotic stopping rule fires (digest Sec. 5.1)
        assert abs(xla.mean[-1, 0] - 1.070256) < 0.015 and abs(tr.mean[-1, 0] - 1.070256) < 0.015
    # a fixed step that overshoots sigma^2 <= 0 stops with a status, keeping the steps before
    bad = euclidean_kappa_ieee(crab, 0.5, 0.02, 0.01, schedule="constant")
    assert bad.status == "diverged: covariance lost positive definiteness" and bad.n_steps < 1000
    with pytest.raises(ValueError, match="positive variance"):
        euclidean_kappa_ieee(crab, 0.0, -1.0)
    with pytest.raises(ValueError, match="step size"):
        euclidean_kappa_ieee(crab, 0.0, 0.1, 0.0)
    with pytest.raises(ValueError, match="scalar closed forms"):
        euclidean_kappa_ieee(kumar_t3(), 0.0, 1.0)
