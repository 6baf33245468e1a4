"""Deep GLMs (Tan (2025) Sec. 8.4, Supp. S8): the ELBO formula against an independent Monte Carlo
computation from scipy's densities, the closed-form factors as stationary points of the ELBO, the
inverse-Gaussian moments, the unbiased minibatch estimate, short training runs, bad input."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize, stats

from vilab.models import deepglm as dg
from vilab.core import as_key

M = dg.HIDDEN


def _small(response, p=3, n=40, seed=0):
    """A small model, data and a q(theta) with spread-out means and s.d.s."""
    model = dg.DeepGLM(p, response)
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, p))
    y = (rng.uniform(size=n) < 0.5).astype(float) if response == "bernoulli" else rng.normal(2.0, 1.5, n)
    mu = rng.normal(0, 0.4, model.d)
    sigma = rng.uniform(0.05, 0.3, model.d)
    return model, X, y, mu, sigma


def _eta_np(model, theta, X):
    """The network in numpy, written again from the layout (W1, W2, w3, b1, b2, b3)."""
    p, m = model.p, model.m
    S = theta.shape[0]
    i = 0
    W1 = theta[:, i:i + p * m].reshape(S, p, m); i += p * m  # noqa: E702
    W2 = theta[:, i:i + m * m].reshape(S, m, m); i += m * m  # noqa: E702
    w3 = theta[:, i:i + m]; i += m  # noqa: E702
    b1 = theta[:, i:i + m]; i += m  # noqa: E702
    b2 = theta[:, i:i + m]; i += m  # noqa: E702
    b3 = theta[:, i]
    h = np.maximum(np.einsum("np,spm->snm", X, W1) + b1[:, None, :], 0)
    h = np.maximum(np.einsum("snm,smk->snk", h, W2) + b2[:, None, :], 0)
    return np.einsum("snm,sm->sn", h, w3) + b3[:, None]


@pytest.mark.parametrize("response", ["normal", "bernoulli"])
def test_elbo_formula_equals_monte_carlo_of_log_joint_minus_log_q(response):
    """Supp. S8's closed-form ELBO (for arbitrary, non-optimal q(v), q(tau), gamma) against
    E_q[log p(y, theta, v, tau) - log q(theta) - log q(v) - log q(tau)] averaged over draws of every
    variable, each density from scipy.stats (flat prior on the biases). The data term of the formula is
    the Monte Carlo average over the same theta draws, so only the analytic terms are compared."""
    model, X, y, mu, sigma = _small(response)
    p, m, d, n = model.p, model.m, model.d, len(y)
    rng = np.random.default_rng(1)
    S = 10000
    alpha_t, beta_t = np.array([1.3, 0.4, 2.5]), np.array([0.7, 3.0, 1.1])
    gamma, gamma_w, a, b = np.array([0.9, 2.0, 0.5]), 1.7, 30.0, 45.0
    theta = mu + sigma * rng.standard_normal((S, d))
    eta = _eta_np(model, theta, X)
    # tau_j ~ GIG(1/2, beta_j, beta_j / alpha_j^2) = scipy geninvgauss(1/2, beta/alpha, scale=1/alpha)
    tau = np.stack([stats.geninvgauss(0.5, beta_t[j] / alpha_t[j], scale=1 / alpha_t[j]).rvs(S, random_state=rng)
                    for j in range(p)], 1)
    lp = np.zeros(S)
    lq = stats.norm.logpdf(theta, mu, sigma).sum(1)
    if response == "normal":
        v = stats.invgamma(a, scale=b).rvs(S, random_state=rng)
        lp += stats.norm.logpdf(y[None], eta, np.sqrt(v)[:, None]).sum(1) + stats.invgamma.logpdf(v, dg.A0, scale=dg.B0)
        lq += stats.invgamma.logpdf(v, a, scale=b)
        D = np.mean(((y[None] - eta) ** 2).sum(1))
    else:
        lp += (y[None] * eta - np.logaddexp(0, eta)).sum(1)
        D = np.mean((y[None] * eta - np.logaddexp(0, eta)).sum(1))
    wx = theta[:, : p * m].reshape(S, p, m)
    w = theta[:, p * m: p * m + model.d_w]
    lp += stats.norm.logpdf(w, 0, 1 / math.sqrt(gamma_w)).sum(1)
    lp += stats.norm.logpdf(wx, 0, np.sqrt(tau)[:, :, None]).sum((1, 2))
    lp += stats.gamma.logpdf(tau, (m + 1) / 2, scale=2 / gamma**2).sum(1)
    lq += sum(stats.geninvgauss.logpdf(tau[:, j], 0.5, beta_t[j] / alpha_t[j], scale=1 / alpha_t[j]) for j in range(p))
    h = lp - lq
    if response == "normal":
        # E[log N(y | eta, v)] = -n/2 log 2pi - n/2 E log v - E(1/v) sum (y - eta)^2 / 2: replace the draws'
        # data term by its expectation given theta's average D (reduces noise; the analytic parts stay MC)
        ss = ((y[None] - eta) ** 2).sum(1)
        h = h + 0.5 * ss / v - 0.5 * D * a / b
    else:
        ll = (y[None] * eta - np.logaddexp(0, eta)).sum(1)
        h = h - ll + D
    mc, se = h.mean(), h.std() / math.sqrt(S)
    formula = float(dg.elbo(model, mu, sigma, D, n, a=a if response == "normal" else None,
                            b=b if response == "normal" else None, alpha_tau=alpha_t, beta_tau=beta_t, gamma=gamma,
                            gamma_w=gamma_w))
    assert abs(formula - mc) < 4 * se + 1e-9, (formula, mc, se)
    assert se < 0.3  # the check can see an error of 1 nat (a dropped constant)


def _elbo_np(model, mu, sigma, D, n, **kw):
    return float(dg.elbo(model, mu, sigma, D, n, **kw))


def test_q_v_update_maximises_the_elbo():
    """b = b0 + S/2 and a = a0 + n/2 maximise the ELBO over (a, b) (Nelder-Mead on the formula)."""
    model, X, y, mu, sigma = _small("normal")
    n, D = 40, 123.4
    fix = dict(alpha_tau=np.ones(3), beta_tau=np.ones(3), gamma=np.ones(3), gamma_w=1.0)
    a_opt, b_opt = dg.q_v_update(D, n)
    assert (a_opt, b_opt) == (dg.A0 + n / 2, dg.B0 + D / 2)
    neg = lambda lab: -_elbo_np(model, mu, sigma, D, n, a=math.exp(lab[0]), b=math.exp(lab[1]), **fix)  # noqa: E731
    res = optimize.minimize(neg, [math.log(5.0), math.log(5.0)], method="Nelder-Mead",
                            options=dict(xatol=1e-9, fatol=1e-12, maxiter=4000))
    np.testing.assert_allclose(np.exp(res.x), [a_opt, b_opt], rtol=1e-4)
    # and a perturbed b is worse
    assert neg([math.log(a_opt), math.log(b_opt)]) < neg([math.log(a_opt), math.log(1.1 * b_opt)])


def test_q_tau_and_gamma_updates_are_stationary_points():
    """alpha_j = gamma_j / sqrt(A_j), beta_j = gamma_j^2 zero the ELBO's derivatives in (alpha_j, beta_j);
    gamma_j = sqrt((m+1)/(1/alpha_j + 1/beta_j)) and gamma_w = d_w / (mu_w'mu_w + sigma_w'sigma_w) zero them
    in gamma (central finite differences of the formula), and they are maxima (a nudge lowers it)."""
    model, X, y, mu, sigma = _small("bernoulli")
    A = np.asarray(model.first_layer_sq(mu) + model.first_layer_sq(sigma))
    Aw = float(model.other_sq(mu) + model.other_sq(sigma))
    gamma = np.array([0.8, 1.5, 3.0])
    al, be = (np.asarray(v) for v in dg.q_tau_update(A, gamma))
    np.testing.assert_allclose(al, gamma / np.sqrt(A))
    np.testing.assert_allclose(be, gamma**2)
    gw = float(dg.gamma_w_update(Aw, model.d_w))
    base = dict(alpha_tau=al, beta_tau=be, gamma=gamma, gamma_w=gw)

    def L(**kw):
        return _elbo_np(model, mu, sigma, -10.0, 40, **{**base, **kw})

    for j in range(3):
        for name, vec in (("alpha_tau", al), ("beta_tau", be)):
            h = 1e-5 * vec[j]
            up, dn = vec.copy(), vec.copy()
            up[j] += h
            dn[j] -= h
            deriv = (L(**{name: up}) - L(**{name: dn})) / (2 * h)
            assert abs(deriv) < 1e-5 * max(1.0, abs(L())), (name, j, deriv)
            far = vec.copy()
            far[j] *= 1.3
            assert L(**{name: far}) < L()
    g_new = np.asarray(dg.gamma_update(al, be))
    np.testing.assert_allclose(g_new, np.sqrt((M + 1) / (1 / al + 1 / be)))
    base2 = dict(base, gamma=g_new)
    for j in range(3):
        h = 1e-6 * g_new[j]
        up, dn = g_new.copy(), g_new.copy()
        up[j] += h
        dn[j] -= h
        d = (_elbo_np(model, mu, sigma, -10.0, 40, **{**base2, "gamma": up})
             - _elbo_np(model, mu, sigma, -10.0, 40, **{**base2, "gamma": dn})) / (2 * h)
        assert abs(d) < 1e-4, d
    h = 1e-6 * gw
    d = (L(gamma_w=gw + h) - L(gamma_w=gw - h)) / (2 * h)
    assert abs(d) < 1e-4 and L(gamma_w=1.2 * gw) < L() and L(gamma_w=0.8 * gw) < L()


def test_the_formula_would_notice_a_wrong_update():
    """The stationarity check can fail: at alpha_j = 2 gamma_j / sqrt(A_j) the derivative is far from 0."""
    model, X, y, mu, sigma = _small("bernoulli")
    A = np.asarray(model.first_layer_sq(mu) + model.first_layer_sq(sigma))
    gamma = np.ones(3)
    al, be = (np.asarray(v) for v in dg.q_tau_update(A, gamma))
    wrong = 2 * al
    kw = dict(beta_tau=be, gamma=gamma, gamma_w=1.0)
    h = 1e-5
    up, dn = wrong.copy(), wrong.copy()
    up[0] += h
    dn[0] -= h
    deriv = (_elbo_np(model, mu, sigma, 0.0, 40, alpha_tau=up, **kw) - _elbo_np(model, mu, sigma, 0.0, 40, alpha_tau=dn, **kw)) / (2 * h)
    assert abs(deriv) > 0.1


def test_inverse_gaussian_moments_against_monte_carlo():
    """1/tau ~ inverse Gaussian(mean alpha, shape beta) = scipy invgauss(alpha/beta, scale=beta):
    E(1/tau) = alpha and E(tau) = 1/alpha + 1/beta."""
    rng = np.random.default_rng(3)
    for alpha, beta in ((0.7, 2.0), (3.0, 0.5), (12.0, 40.0)):
        u = stats.invgauss(alpha / beta, scale=beta).rvs(400_000, random_state=rng)
        e_inv, e_tau = (float(v) for v in dg.inv_gauss_moments(alpha, beta))
        assert abs(u.mean() - e_inv) < 5 * u.std() / math.sqrt(u.size)
        t = 1 / u
        assert abs(t.mean() - e_tau) < 5 * t.std() / math.sqrt(t.size)
        # and the wrong guess E(tau) = 1/alpha is rejected
        assert abs(t.mean() - 1 / alpha) > 5 * t.std() / math.sqrt(t.size)


@pytest.mark.parametrize("response", ["normal", "bernoulli"])
def test_minibatch_data_term_is_unbiased(response):
    """n/|B| sum_B over random minibatches with one draw theta each averages to the full-data Monte Carlo
    value sum_i E_q (y_i - eta_i)^2 (or the Bernoulli log-likelihood)."""
    model, X, y, mu, sigma = _small(response, n=200, seed=4)
    Xj, yj = jnp.asarray(X, jnp.float32), jnp.asarray(y, jnp.float32)
    key = as_key(5)
    R, B, n = 6000, 10, 200

    @jax.jit
    def one(k):
        k1, k2 = jax.random.split(k)
        idx = jax.random.choice(k1, n, (B,), replace=False)
        th = jnp.asarray(mu, jnp.float32) + jnp.asarray(sigma, jnp.float32) * jax.random.normal(k2, (model.d,))
        return dg.data_term(model, th, Xj[idx], yj[idx], n / B)

    est = np.asarray(jax.vmap(one)(jax.random.split(key, R)), float)
    rng = np.random.default_rng(6)
    th = mu + sigma * rng.standard_normal((4000, model.d))
    eta = _eta_np(model, th, X)
    per = ((y - eta) ** 2).sum(1) if response == "normal" else (y * eta - np.logaddexp(0, eta)).sum(1)
    se = math.sqrt(est.var() / R + per.var() / per.size)
    assert abs(est.mean() - per.mean()) < 4 * se, (est.mean(), per.mean(), se)
    # a biased scaling (n/|B| replaced by 1) would be caught
    assert abs(est.mean() * B / n - per.mean()) > 4 * se


def test_simulators():
    b = dg.simulate_binary(as_key(0), n=2000, p=8)
    X = b.X.astype(float)
    s = 5 - 2 * (X[:, 0] + 2 * X[:, 1]) ** 2 + 4 * X[:, 2] * X[:, 3] + 3 * X[:, 4]
    assert b.X.shape == (2000, 8) and np.all(np.abs(b.X) <= 1) and np.array_equal(b.y, (s >= 0).astype(np.float32))
    assert b.relevant == 5 and b.response == "bernoulli"
    r = dg.simulate_real(as_key(1), n=40000, p=12)
    C = np.cov(r.X.T)
    target = 0.5 ** np.abs(np.subtract.outer(np.arange(12), np.arange(12)))
    assert np.max(np.abs(C - target)) < 0.03 and r.relevant == 10 and r.response == "normal"
    same = dg.simulate_real(as_key(1), n=40000, p=12)
    assert np.array_equal(same.y, r.y)  # drawn from the key alone


def test_dimensions_match_the_paper():
    """d = 2461 for p = 100, 641 for p = 9 and 1221 for p = 38 (digest: implied by the network)."""
    assert [dg.DeepGLM(p).d for p in (100, 9, 38)] == [2461, 641, 1221]
    assert dg.DeepGLM(100).d_w == 420


@pytest.mark.parametrize("method", dg.METHODS)
def test_a_short_run_raises_the_elbo(method):
    data = dg.simulate_binary(as_key(0), n=600, p=10)
    tr = dg.fit(data, method, key=as_key(1), epochs=6, batch_size=100)
    pe = dg.per_epoch(tr)
    assert tr.status == "max_steps" and len(pe["elbo"]) == 6
    assert pe["elbo"][-1] > pe["elbo"][0] + 10
    assert pe["gamma"].shape == (6, 10) and np.all(pe["gamma"] > 0)
    assert tr.state.hyper["alpha"] == pytest.approx(dg.default_alpha(method))


def test_normal_response_run_and_q_v():
    data = dg.simulate_real(as_key(2), n=600, p=12)
    tr = dg.fit(data, "snngm", key=as_key(3), epochs=8, batch_size=100)
    pe = dg.per_epoch(tr)
    assert tr.status == "max_steps" and pe["elbo"][-1] > pe["elbo"][0]
    aux = tr.state.aux
    assert float(aux["b"]) > dg.B0 and np.all(np.isfinite(np.asarray(aux["gamma"])))


def test_step_size_is_a_run_time_setting_and_a_huge_one_diverges_with_a_reason():
    from vilab import core

    data = dg.simulate_binary(as_key(0), n=400, p=5)
    model = dg.DeepGLM(5, "bernoulli")
    alg = dg.algorithm(model, "adam", 400)
    st = core.set_hyper(alg.init(as_key(1)), alpha=0.01)
    assert float(st.hyper["alpha"]) == 0.01
    X, y = jnp.asarray(data.X), jnp.asarray(data.y)
    tr = core.run(alg, as_key(2), st, 3, batches=(X[None].repeat(3, 0), y[None].repeat(3, 0)))
    assert tr.status == "max_steps" and np.isfinite(tr.objective[-1])
    bad = dg.fit(data, "adam", key=as_key(1), epochs=3, batch_size=100, alpha=1e30)
    assert bad.status.startswith("diverged: ") and bad.note == "in epoch 1" and len(dg.per_epoch(bad)["elbo"]) == 0


def test_bad_inputs_raise_value_error():
    data = dg.simulate_binary(as_key(0), n=1000, p=5)
    with pytest.raises(ValueError, match="Unknown method"):
        dg.fit(data, "sgd", key=as_key(0))
    with pytest.raises(ValueError, match="random key"):
        dg.fit(data, "adam", key=3)
    with pytest.raises(ValueError, match="batch size"):
        dg.fit(data, "adam", key=as_key(0), batch_size=2000)
    with pytest.raises(ValueError, match="epochs"):
        dg.fit(data, "adam", key=as_key(0), epochs=0)
    with pytest.raises(ValueError, match="step size"):
        dg.fit(data, "adam", key=as_key(0), alpha=-1)
    with pytest.raises(ValueError, match="step size"):
        dg.fit(data, "adam", key=as_key(0), alpha=float("nan"))
    with pytest.raises(ValueError, match="Unknown data set"):
        dg.simulate("census", as_key(0))
    with pytest.raises(ValueError, match="response"):
        dg.DeepGLM(5, "poisson")
    with pytest.raises(ValueError, match="number of inputs"):
        dg.simulate_binary(as_key(0), n=100, p=2)
    with pytest.raises(ValueError, match="0 or 1"):
        dg.fit(data._replace(y=data.y * 2), "adam", key=as_key(0))
    with pytest.raises(ValueError, match="missing or infinite"):
        X = data.X.copy()
        X[0, 0] = np.nan
        dg.fit(data._replace(X=X), "adam", key=as_key(0))
    with pytest.raises(ValueError, match="time budget"):
        dg.fit(data, "adam", key=as_key(0), max_time=0)
