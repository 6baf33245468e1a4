"""Lin, Schmidt & Khan (2020): the VN step with a retraction term that keeps the precision positive definite
(method "lsk", vilab.family.natgrad.update_lambda_pd), checked against the VN step, the affine-invariant geodesic
it expands, and runs where VN loses positive definiteness."""

import numpy as np
import pytest
import scipy.linalg as sla

from vilab.family import natgrad as ng
from vilab.algorithms import run
from vilab.core import as_key
from vilab.family.gaussian import CholCov
from vilab.targets import student_t_2d
from vilab.targets.papers import kumar_t2


def _spd(rng, d, scale=1.0):
    A = rng.normal(size=(d, d))
    return scale * (A @ A.T + d * np.eye(d))


def _sym(rng, d):
    A = rng.normal(size=(d, d))
    return A + A.T


def test_step_is_vn_plus_the_second_order_term_and_stays_pd():
    rng = np.random.default_rng(0)
    for d in (1, 3, 5):
        P, G_S, g = _spd(rng, d), _sym(rng, d), rng.normal(size=d)
        G = -2.0 * G_S  # H - P in descent form
        for rho in (1e-3, 0.3, 1.0, 7.0):
            mu_vn, P_vn = ng.update_lambda(np.zeros(d), P, g, G_S, rho)
            mu, P_new = ng.update_lambda_pd(np.zeros(d), P, g, G_S, rho)
            np.testing.assert_allclose(P_new - P_vn, 0.5 * rho**2 * G @ np.linalg.solve(P, G), rtol=1e-9, atol=1e-9)
            half = P + rho * G
            np.testing.assert_allclose(P_new, 0.5 * (P + half @ np.linalg.solve(P, half)), rtol=1e-9, atol=1e-9)
            assert np.linalg.eigvalsh(P_new)[0] > 0
            np.testing.assert_allclose(mu, rho * np.linalg.solve(P_new, g), rtol=1e-9)


def test_step_is_the_second_order_expansion_of_the_fisher_geodesic():
    """The exact geodesic of the Fisher (affine-invariant) metric from P with velocity G is
    P^1/2 expm(rho P^-1/2 G P^-1/2) P^1/2 (brute force with scipy's expm); the step differs from it by O(rho^3)."""
    rng = np.random.default_rng(1)
    d = 4
    P, G_S = _spd(rng, d), _sym(rng, d)
    G = -2.0 * G_S
    R = np.real(sla.sqrtm(P))
    Ri = np.linalg.inv(R)

    def geodesic(rho):
        return R @ sla.expm(rho * Ri @ G @ Ri) @ R

    errs = []
    for rho in (0.02, 0.01, 0.005):
        _, P_new = ng.update_lambda_pd(np.zeros(d), P, np.zeros(d), G_S, rho)
        errs.append(np.linalg.norm(np.asarray(P_new) - geodesic(rho)))
    ratios = [errs[0] / errs[1], errs[1] / errs[2]]
    assert all(7.0 < r < 9.0 for r in ratios), ratios  # halving rho divides a third-order error by 8
    _, P_vn = ng.update_lambda(np.zeros(d), P, np.zeros(d), G_S, 0.01)
    assert np.linalg.norm(np.asarray(P_vn) - geodesic(0.01)) > 10 * errs[1]  # VN is only first order


def test_converges_to_the_exact_posterior_of_a_gaussian_target():
    tgt = kumar_t2()
    tr = run("lsk", tgt, CholCov(np.array([-2.0, 2.5]), 0.2 * np.eye(2)), 200, 0.5, kl_tol=1e-12)
    assert tr.status == "converged"
    assert tr.objective[-1] < 1e-12  # KL(q || p)
    np.testing.assert_allclose(tr.mean[-1], tgt.mean, atol=1e-5)  # KL 1e-12: errors ~ sqrt(KL / lambda_min)
    np.testing.assert_allclose(tr.cov[-1], tgt.cov, rtol=1e-4, atol=1e-8)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_keeps_positive_definiteness_where_vn_loses_it(seed):
    """Single-draw Hessians of a heavy-tailed target are often indefinite: VN's precision loses PD, the
    retraction term keeps it (the run may still be noisy, but it never stops for lost PD)."""
    tgt = student_t_2d(1.5, rho=0.6)
    init = CholCov(np.zeros(2), np.eye(2))
    vn = run("vn", tgt, init, 300, 0.9, grads="second", n_samples=1, key=as_key(seed))
    lsk = run("lsk", tgt, init, 300, 0.9, grads="second", n_samples=1, key=as_key(seed))
    assert "positive definite" in vn.status
    assert "positive definite" not in lsk.status and not lsk.diverged
