"""Gaussian score matching (Modi et al. 2023; vilab.divergences.stochastic.gsm_update / gsm), checked
against its defining problem by brute force, and as a run on Gaussian and non-Gaussian targets."""

import numpy as np
import pytest
from scipy.optimize import minimize

from vilab.core import as_key, run
from vilab.divergences import stochastic as sto
from vilab.targets import banana, gaussian_target


def _kl(m0, S0, m1, S1):
    """KL(N(m0, S0) || N(m1, S1)), written out with numpy."""
    d = len(m0)
    r = m1 - m0
    return 0.5 * (np.trace(np.linalg.solve(S1, S0)) + r @ np.linalg.solve(S1, r) - d
                  + np.linalg.slogdet(S1)[1] - np.linalg.slogdet(S0)[1])


def _case(seed, d=2):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    Sigma = A @ A.T + 0.5 * np.eye(d)
    return rng.normal(size=d), Sigma, rng.normal(size=(1, d)) * 1.5, rng.normal(size=(1, d))


@pytest.mark.parametrize("seed", range(4))
def test_single_draw_update_matches_the_score_at_the_draw(seed):
    mu, Sigma, theta, g = _case(seed, d=3)
    m_new, S_new = (np.asarray(a) for a in sto.gsm_update(mu, Sigma, theta, g))
    np.testing.assert_allclose(S_new @ g[0], m_new - theta[0], atol=1e-10)  # -S^-1 (theta - m) = g
    assert np.linalg.eigvalsh(S_new)[0] > 0


@pytest.mark.parametrize("seed", range(3))
def test_single_draw_update_is_the_closest_gaussian_matching_the_score(seed):
    """Brute force: minimise KL(q || q') over q' = N(m, L L^T) subject to the score constraint
    L L^T g = m - theta, with scipy's SLSQP from several starts; GSM's closed form is the minimiser."""
    mu, Sigma, theta, g = _case(seed)
    theta, g = theta[0], g[0]

    def unpack(x):
        L = np.array([[np.exp(x[2]), 0.0], [x[3], np.exp(x[4])]])
        return x[:2], L @ L.T

    def kl(x):
        m, S = unpack(x)
        return float(_kl(mu, Sigma, m, S))

    cons = {"type": "eq", "fun": lambda x: unpack(x)[1] @ g - (unpack(x)[0] - theta)}
    best = None
    for start in np.random.default_rng(seed).normal(size=(6, 5)) * 0.5:
        r = minimize(kl, start, constraints=[cons], method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
        if r.success and (best is None or r.fun < best.fun):
            best = r
    m_bf, S_bf = unpack(best.x)
    m_new, S_new = (np.asarray(a) for a in sto.gsm_update(mu, Sigma, theta[None], g[None]))
    np.testing.assert_allclose(m_new, m_bf, atol=1e-5)
    np.testing.assert_allclose(S_new, S_bf, atol=1e-5)


def test_gsm_finds_a_gaussian_target_exactly():
    tgt = gaussian_target(np.array([1.0, -2.0]), np.array([[2.0, 0.6], [0.6, 0.5]]))
    alg = sto.gsm(tgt, batch_size=2)
    key = as_key(0)
    tr = run(alg, key, alg.init(key, (np.zeros(2), np.eye(2))), 60)
    assert tr.status == "max_steps" and float(tr.objective[-1]) < 1e-10
    np.testing.assert_allclose(tr.mean[-1], tgt.mean, atol=1e-6)
    np.testing.assert_allclose(tr.cov[-1], tgt.cov, atol=1e-6)


def test_gsm_on_a_banana_stays_proper_and_bam_state_is_unchanged():
    alg = sto.gsm(banana(0.5, 2.0), batch_size=4)
    key = as_key(1)
    state = alg.init(key, (np.zeros(2), np.eye(2)))
    assert state.hyper == {}
    tr = run(alg, key, state, 100)
    assert not tr.diverged and np.all(np.linalg.eigvalsh(tr.cov[-1]) > 0)
    assert sto.bam(banana(0.5, 2.0), batch_size=4).init(key).hyper["lr_scale"] == 8.0


def test_gsm_rejects_a_bad_batch_size():
    with pytest.raises(ValueError, match="batch size"):
        sto.gsm(banana(0.5, 2.0), batch_size=0)
