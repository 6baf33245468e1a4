"""Kumar et al. (2025) Thm 3 (SR-VN with biased oracles): a run fed a constant gradient and Hessian bias on
T2 stays under the corrected bound (with its bias floor) at every step and ends above the printed one."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vilab import guarantees as gu
from vilab import natgrad as ng
from vilab.algorithms.core import METHODS, State
from vilab.targets.papers import kumar_t2


def _biased_srvn(A, m_star, mu0, C0, rho, b_g, eps_H, n):
    """n SR-VN steps (Kumar Eq. 17) from exact expectations plus biases: g + b_g, H + eps_H I."""
    A, m_star, b_g = (jnp.asarray(x) for x in (A, m_star, b_g))
    srvn = METHODS["srvn"]

    def step(s, _):
        Sigma = s.M @ s.M.T
        g_mu = -A @ (s.mu - m_star) - b_g                                # ascent: -(g + b_g)
        G_S = 0.5 * (jnp.linalg.inv(Sigma) - A - eps_H * jnp.eye(len(m_star)))  # 1/2 (V^-1 - (H + b_H))
        new = srvn.step(s, (g_mu, ng.grad_chol_cov(s.M, G_S)), rho)
        return new, (new.mu, new.M @ new.M.T)

    _, (mus, Vs) = jax.lax.scan(step, State(jnp.asarray(mu0), jnp.asarray(C0)), None, length=n)
    return np.concatenate([[mu0], np.asarray(mus)]), np.concatenate([[C0 @ C0.T], np.asarray(Vs)])


def _kl(mu, V, m_star, A):
    r = mu - m_star
    return 0.5 * (np.trace(A @ V) + r @ A @ r - len(r) - np.linalg.slogdet(A @ V)[1])


@pytest.mark.parametrize("zeta_g, eps_H", [(0.3, 0.0), (0.3, 0.5)])
def test_biased_srvn_stays_under_the_corrected_bound_and_breaks_the_printed_one(zeta_g, eps_H):
    tgt = kumar_t2()
    A, m_star = np.linalg.inv(tgt.cov), np.asarray(tgt.mean)
    mu0, C0, rho, n = np.array([-2.0, 2.5]), 0.2 * np.eye(2), 1e-3, 300_000  # 1 / (2 eta delta) = 25,000 steps
    b_g = zeta_g * np.array([0.6, 0.8])
    mus, Vs = _biased_srvn(A, m_star, mu0, C0, rho, b_g, eps_H, n)
    kl = np.array([_kl(m, V, m_star, A) for m, V in zip(mus[::1000], Vs[::1000])])
    lam = np.linalg.eigvalsh(A)
    lam_min = float(np.linalg.eigvalsh(Vs)[:, 0].min())
    tr = np.trace(Vs, axis1=1, axis2=2)
    xi_l, xi_u = float(np.sqrt(tr.min())), float(np.sqrt(tr.max()))
    zeta_H2 = eps_H**2 * xi_u**2  # ||eps I C||_F^2 = eps^2 tr V
    out = gu.theorem3_bound(np.arange(0, n + 1, 1000), kl[0], rho, lam[0], lam[-1], lam_min, xi_l, xi_u,
                            zeta_g**2, zeta_H2)
    assert out["applies"]
    assert np.all(kl <= out["corrected"] * (1 + 1e-9))
    assert kl[-1] > out["printed"][-1]  # the printed additive term is negative: it cannot hold with a bias
    # where the run settles: 1/2 b^T A^-1 b for the mean bias alone, below the floor
    if eps_H == 0.0:
        assert abs(kl[-1] - 0.5 * b_g @ np.linalg.solve(A, b_g)) < 0.05 * kl[-1] + 1e-6
        assert kl[-1] <= out["floor"]


def test_without_bias_theorem3_is_theorem2():
    tgt = kumar_t2()
    c = gu.theorem2_constants(np.linalg.inv(tgt.cov), 0.2 * np.eye(2))
    args = (1e-3, c["delta"], c["M"], c["lam_min"], c["xi_l"], c["xi_u"])
    out = gu.theorem3_bound([0, 10], 2.0, *args)
    eta = gu.theorem2_eta(*args)
    assert out["applies"] and out["eta"] == pytest.approx(eta) and out["floor"] == 0.0
    np.testing.assert_allclose(out["corrected"], out["printed"])
    np.testing.assert_allclose(out["corrected"], 2.0 * (1 - 2 * eta * c["delta"]) ** np.array([0, 10]))
    assert not gu.theorem3_bound([0], 1.0, 1.0, *args[1:])["applies"]  # rho = 1: eta < 0, the theorem is silent
    with pytest.raises(ValueError, match="negative"):
        gu.theorem3_bound([0], 1.0, *args, zeta_g2=-1.0)


def test_biased_srvn_is_the_loop_above_and_without_bias_the_exact_srvn_run():
    """gu.biased_srvn keeps every `every`-th iterate of the step-by-step loop above, and with no bias it is
    vilab.algorithms.run("srvn", exact gradients) itself; its Assumption 4 constants are those of every step."""
    from vilab.algorithms import run
    from vilab.core import as_key
    from vilab.gaussian import CholCov

    tgt = kumar_t2()
    A, m_star = np.linalg.inv(tgt.cov), np.asarray(tgt.mean)
    mu0, C0, rho, n = np.array([-2.0, 2.5]), 0.2 * np.eye(2), 0.05, 200
    b_g = np.array([0.18, 0.24])
    got = gu.biased_srvn(A, m_star, mu0, C0, rho, n, b_g, 0.5, n_rows=20)
    mus, Vs = _biased_srvn(A, m_star, mu0, C0, rho, b_g, 0.5, n)
    np.testing.assert_array_equal(got["t"], np.arange(0, n + 1, 10))
    np.testing.assert_allclose(got["kl"], [_kl(m, V, m_star, A) for m, V in zip(mus[::10], Vs[::10])], rtol=1e-10)
    assert got["lam_min"] == pytest.approx(np.linalg.eigvalsh(Vs)[:, 0].min(), rel=1e-12)
    tr = np.trace(Vs, axis1=1, axis2=2)
    assert (got["xi_l"], got["xi_u"]) == pytest.approx((np.sqrt(tr.min()), np.sqrt(tr.max())), rel=1e-12)
    exact = gu.biased_srvn(A, m_star, mu0, C0, rho, n, None, 0.0, n_rows=n)
    ref = run("srvn", tgt, CholCov(mu0, C0), n, rho, key=as_key(0), grads="exact")
    np.testing.assert_allclose(exact["kl"], np.asarray(ref.objective), rtol=1e-9, atol=1e-13)


def test_theorem3_report_reads_the_runs():
    tgt = kumar_t2()
    A = np.linalg.inv(tgt.cov)
    rep = gu.theorem3_report(A, tgt.mean, [-2.0, 2.5], 0.2 * np.eye(2), 1e-3, 30_000, [0.18, 0.24], 0.0)
    ex, bi = rep["exact"], rep["biased"]
    assert ex["applies"] and ex["eta"] == pytest.approx(1.6421e-5, rel=1e-3) and ex["factor"] == pytest.approx(0.999960, abs=1e-6)
    assert np.all(ex["kl"] <= ex["bound"] * (1 + 1e-9)) and np.all(bi["kl"] <= bi["corrected"] * (1 + 1e-9))
    assert rep["zeta_g2"] == pytest.approx(0.09) and rep["zeta_H2"] == 0.0
    assert bi["kl"][-1] == pytest.approx(rep["settles"], rel=1e-6)
    big = gu.biased_srvn(A, tgt.mean, [-2.0, 2.5], 0.2 * np.eye(2), 50.0, 50)  # far too large a step
    assert big["diverged"] and big["steps_done"] < 50 and np.all(np.isfinite(big["kl"]))  # stops before the bad step
    with pytest.raises(ValueError, match="dimension"):
        gu.biased_srvn(A, tgt.mean, [0.0], 0.2 * np.eye(2), 1e-3, 10)
