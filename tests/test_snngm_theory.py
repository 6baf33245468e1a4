"""vilab.theory.snngm_theory: Tan (2025) Theorem 3's bound, tau's law, the region constants and the SNNGM runs,
each checked against an independent evaluation (exact fractions, Monte Carlo, autodiff, a plain-numpy SNNGM)."""

import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vilab.theory import snngm_theory as S
from vilab.targets.papers import horseshoe_crab_toy


def _bound_fraction(N, alpha, beta, R, R1, R2, L, gap):
    """Thm 3 rearranged, in exact rational arithmetic: (R R2 / R1) (gap + N L alpha^2 (b/(1-b) + 1/2)) / (Ntilde alpha)."""
    N, alpha, beta, R, R1, R2, L, gap = (Fraction(x) for x in (N, alpha, beta, R, R1, R2, L, gap))
    k = beta / (1 - beta)
    Nt = N - k
    return float((R * R2 / R1) * (gap + N * L * alpha**2 * (k + Fraction(1, 2))) / (Nt * alpha))


def test_bound_by_hand_and_in_exact_arithmetic():
    # N = 10, beta = 1/2: Ntilde = 9; 8 (6 / 4.5 + (15 / 9) 1.5) = 8 (4/3 + 5/2) = 92/3
    assert S.theorem3_bound(10, 0.5, 0.5, 2, 1, 4, 3, 6) == pytest.approx(92 / 3, rel=1e-14)
    assert S.n_tilde(10, 0.5) == 9.0
    rng = np.random.default_rng(0)
    for _ in range(50):
        beta = float(rng.uniform(0, 0.99))
        N = int(beta / (1 - beta)) + 1 + int(rng.integers(0, 10**5))
        R1 = float(rng.uniform(0.01, 5))
        args = (N, float(rng.uniform(1e-4, 1)), beta, float(rng.uniform(0, 100)), R1, R1 * float(rng.uniform(1, 1e3)),
                float(rng.uniform(0, 1e4)), float(rng.uniform(0, 100)))
        assert S.theorem3_bound(*args) == pytest.approx(_bound_fraction(*args), rel=1e-12)


@pytest.mark.parametrize("kw, words", [
    (dict(N=9, beta=0.9), "beta / (1 - beta)"),
    (dict(N=1, beta=0.5), "beta / (1 - beta)"),
    (dict(alpha=0.0), "step size alpha must be positive"),
    (dict(alpha=-1.0), "step size alpha must be positive"),
    (dict(beta=1.0), "[0, 1)"),
    (dict(beta=-0.1), "[0, 1)"),
    (dict(R1=0.0), "R1 must be positive"),
    (dict(R1=-2.0), "R1 must be positive"),
    (dict(R2=0.5), "R1 <= R2"),
    (dict(gap=-1.0), "cannot be negative"),
    (dict(L=-1.0), "cannot be negative"),
    (dict(R=float("nan")), "finite"),
    (dict(alpha="fast"), "must be a number"),
    (dict(N=10.5), "whole number"),
    (dict(N=0), "whole number"),
])
def test_bound_rejects_bad_input_with_a_sentence(kw, words):
    args = dict(N=100, alpha=0.1, beta=0.9, R=1.0, R1=1.0, R2=2.0, L=1.0, gap=1.0) | kw
    with pytest.raises(ValueError, match=None) as e:
        S.theorem3_bound(**args)
    assert words in str(e.value) and str(e.value).endswith(".")


def test_tau_expectation_against_monte_carlo_and_the_normaliser():
    N, beta = 60, 0.9
    f = np.random.default_rng(1).exponential(size=N) * np.linspace(1, 5, N)
    exact = S.tau_expectation(f, beta)
    w = 1 - beta ** (N - np.arange(1, N + 1) + 1)
    assert np.sum(w) == pytest.approx(N - beta * (1 - beta**N) / (1 - beta), rel=1e-13)
    assert np.sum(w) >= S.n_tilde(N, beta)
    tau = S.sample_tau(jax.random.PRNGKey(3), N, beta, 200_000)
    assert tau.min() >= 1 and tau.max() <= N
    mc = f[tau - 1]
    assert abs(mc.mean() - exact) < 4 * mc.std() / math.sqrt(mc.size)
    # the draws follow the law: the last index is the least likely, P(tau = N) = (1 - beta) / sum w
    assert np.mean(tau == N) == pytest.approx((1 - beta) / np.sum(w), abs=4 * math.sqrt(0.01 / 200_000) + 2e-4)
    with pytest.raises(ValueError):
        S.tau_expectation([], beta)


def test_toy_gradients_and_crab_optimum_are_independent_of_the_closed_forms():
    for name in ("crab", "gaussian"):
        t = S.toy(name)
        for mu, s2 in [(0.3, 0.05), (1.1, 0.002), (-1.0, 0.7)]:
            g = jax.grad(lambda x: t.elbo(x[0], x[1]))(jnp.array([mu, s2]))
            np.testing.assert_allclose(np.array(t.grad(mu, s2)), np.asarray(g), rtol=1e-10, atol=1e-9)
    crab = horseshoe_crab_toy()
    t = S.toy("crab")
    assert t.L_star == pytest.approx(crab.info["elbo_at_optimum"], abs=1e-4)
    np.testing.assert_allclose(t.optimum, crab.info["optimum"], rtol=1e-5)
    assert float(crab.info["exact_elbo"](jnp.array([0.5]), jnp.array([[0.02]]))) == pytest.approx(
        t.elbo(0.5, 0.02), rel=1e-12)
    assert S.toy("gaussian").elbo(1.0, 1.0) == pytest.approx(0.0, abs=1e-14)  # -KL(p || p)
    with pytest.raises(ValueError, match="Unknown toy"):
        S.toy("banana")


@pytest.mark.parametrize("name, box", [("crab", ((0.5, 1.1), (0.0015, 0.02))), ("gaussian", ((-2.0, 1.2), (0.2, 1.3)))])
def test_region_constants_bound_a_dense_grid_of_the_box(name, box):
    t = S.toy(name)
    k = S.region_constants(t, *box)
    mus, s2s = np.linspace(*box[0], 41), np.geomspace(*box[1], 41)
    M, V = np.meshgrid(mus, s2s)
    gm, gs = t.grad(M, V)
    gnorm = np.sqrt(gm**2 + gs**2)
    assert gnorm.max() <= k["R"] * (1 + 1e-12) and gnorm.max() >= 0.5 * k["R"]
    fisher = np.stack([1 / V, 1 / (2 * V**2)])  # eigenvalues of diag(1/s2, 1/(2 s2^2))
    assert fisher.min() >= k["R1"] * (1 - 1e-12) and fisher.max() <= k["R2"] * (1 + 1e-12)
    assert fisher.min() == pytest.approx(k["R1"]) and fisher.max() == pytest.approx(k["R2"])
    hess = jax.jit(jax.vmap(jax.hessian(lambda x: t.elbo(x[0], x[1]))))(jnp.stack([M.ravel(), V.ravel()], 1))
    spec = np.abs(np.linalg.eigvalsh(np.asarray(hess))).max()
    assert spec <= k["L"] * (1 + 1e-10) and spec >= 0.5 * k["L"]
    with pytest.raises(ValueError, match="sigma\\^2 range"):
        S.region_constants(t, box[0], (0.0, 1.0))


def _snngm_numpy(t, lam0, alpha, beta, N):
    """Tan (2025) Table 5's SNNGM written out in numpy (independent of vilab.algorithms.optim)."""
    lam, m, out = np.array(lam0, float), np.zeros(2), [np.array(lam0, float)]
    for k in range(1, N + 1):
        gm, gs = t.grad(lam[0], lam[1])
        nat = np.array([lam[1] * gm, 2 * lam[1] ** 2 * gs])
        m = beta * m + (1 - beta) * nat / np.linalg.norm(nat)
        lam = lam + alpha * m / (1 - beta**k)
        out.append(lam.copy())
    return np.array(out)


@pytest.mark.parametrize("name", ["crab", "gaussian"])
def test_snngm_path_matches_a_plain_implementation_and_steps_are_at_most_alpha(name):
    t = S.toy(name)
    p = S.snngm_path(name, 400, t.c_default, 0.8)
    ref = _snngm_numpy(t, t.start, p["alpha"], 0.8, 400)
    np.testing.assert_allclose(p["lam"], ref, rtol=1e-9, atol=1e-12)
    steps = np.linalg.norm(np.diff(p["lam"], axis=0), axis=1)
    assert p["status"] == "max_steps" and steps.max() <= p["alpha"] * (1 + 1e-12)


def test_the_observed_tau_average_sits_below_the_bound_and_decays_like_one_over_root_n():
    g = S.theorem3_sweep("gaussian")
    assert all(s == "max_steps" for s in g["status"]) and not g["skipped"]
    assert np.all(g["observed"] < g["bound"])
    assert -0.65 < g["slope_observed"] < -0.4 and -0.65 < g["slope_bound"] < -0.4
    # the tau-weighted mean is the weighted sum of the run's squared gradient norms
    one = S.theorem3_check("gaussian", 1000, 1.0, 0.9)
    w = 1 - 0.9 ** (1000 - np.arange(1, 1001) + 1)
    assert one["observed"] == pytest.approx(np.sum(w * one["grad_sq"]) / np.sum(w), rel=1e-12)
    assert one["bound"] == pytest.approx(_bound_fraction(1000, one["alpha"], 0.9, one["R"], one["R1"], one["R2"],
                                                         one["L"], one["gap"]), rel=1e-12)
    c = S.theorem3_sweep("crab", beta=0.5)
    assert all(s == "max_steps" for s in c["status"]) and np.all(c["observed"] < c["bound"])
    assert c["slope_observed"] < -0.3


def test_a_run_that_leaves_the_parameter_space_is_reported_and_small_n_is_skipped():
    r = S.theorem3_check("crab", 100, 0.1, 0.9)
    assert r["status"] == "diverged: negative sigma^2" and math.isnan(r["observed"])
    sw = S.theorem3_sweep("gaussian", beta=0.99, Ns=(50, 100, 1000))
    assert sw["skipped"] == [50] and list(sw["N"]) == [100, 1000]
    with pytest.raises(ValueError, match="step-size constant c"):
        S.snngm_path("gaussian", 100, 0.0)
    with pytest.raises(ValueError, match="beta / \\(1 - beta\\)"):
        S.theorem3_check("gaussian", 5, 1.0, 0.9)
    with pytest.raises(ValueError, match="start"):
        S.snngm_path("gaussian", 100, 1.0, start=(0.0, -1.0))
