"""vilab.online: every cell of the BONG grid against its defining equation (dense, float64,
autodiff), Woodbury / Gram-eigh forms against dense ones, estimators against brute force,
conjugate exactness, Kalman equivalence, runner status and metrics."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special

import vilab  # noqa: F401  (x64)
from vilab.models.nets import digits_cnn, digits_mlp, make_cnn, make_linear, make_mlp
from vilab.online import conjugate as cj
from vilab.online.families import (DLR, FC, Diag, dlr_noise_map, dlr_project, dlr_solve, init_belief,
                                   marginal_variances)
from vilab.online.digits import run_digits
from vilab.online.grid import Curv, _inv, curvature, grid_names, inner_step, is_cubic, make_method
from vilab.online.likelihoods import categorical, gaussian
from vilab import core
from vilab.online.grid import update
from vilab.online.likelihoods import encode_all
from vilab.online.linear_gaussian import bong_linear_path, linear_f, make_stream, scalar_fc_mom_vs_kf
from vilab.online.reference import batch_posterior, dlr_tilde, kalman_filter, reference_step, svd_truncate
from vilab.online.runner import algorithm, belief_path, make_evaluator, stream

P, K, R = 7, 3, 2


@pytest.fixture(scope="module")
def setup():
    ks = jax.random.split(jax.random.PRNGKey(0), 12)
    mu0 = jax.random.normal(ks[0], (P,))
    mu = mu0 + 0.3 * jax.random.normal(ks[1], (P,))
    A = jax.random.normal(ks[2], (P, P))
    S0 = A @ A.T / P + 0.5 * jnp.eye(P)
    A2 = jax.random.normal(ks[3], (P, P))
    S = 0.8 * S0 + 0.05 * A2 @ A2.T / P
    g = jax.random.normal(ks[4], (P,))
    B = 0.5 * jax.random.normal(ks[5], (P, K))
    Hs = jax.random.normal(ks[9], (P, P))
    s20 = jnp.exp(0.3 * jax.random.normal(ks[6], (P,)))
    W0 = 0.5 * jax.random.normal(ks[7], (P, R))
    ups0 = 1.0 + jnp.exp(jax.random.normal(ks[8], (P,)))
    return dict(mu0=mu0, mu=mu, S0=S0, S=S, g=g, B=B, Gd=0.3 * (Hs + Hs.T), s20=s20, s2=0.7 * s20,
                W0=W0, W=0.9 * W0 + 0.1, ups0=ups0, ups=1.2 * ups0)


def _beliefs(fam, d):
    if fam.startswith("fc"):
        return FC(d["mu"], d["S"]), FC(d["mu0"], d["S0"]), _inv(d["S0"])
    if fam.startswith("diag"):
        return Diag(d["mu"], d["s2"]), Diag(d["mu0"], d["s20"]), None
    return DLR(d["mu"], d["ups"], d["W"]), DLR(d["mu0"], d["ups0"], d["W0"]), None


# dense G (mc-hess) is not defined for DLR (make_method rejects it; test_method_names_and_errors)
CELLS = [c for c in itertools.product(["bong", "blr", "bog", "bbb"], ["fc", "fc_mom", "diag", "diag_mom", "dlr"], ["factor", "dense"])
         if not (c[1] == "dlr" and c[2] == "dense")]


@pytest.mark.parametrize("alg,fam,curv", CELLS)
def test_update_matches_defining_equation(setup, alg, fam, curv):
    """App. E closed form (library) == autodiff of the defining NGD/GD step (reference)."""
    d = setup
    a = 1.0 if alg == "bong" else 0.3
    it, pr, pp = _beliefs(fam, d)
    if alg in ("bong", "bog"):
        it = pr  # one step from the prior
    name = f"{alg}-{'lin-hess' if curv == 'factor' else 'mc-hess'}-{fam}" + ("-2" if fam == "dlr" else "")
    m = make_method(name, alpha=None if alg == "bong" else a)
    if curv == "factor":
        c, G = Curv(d["g"], B=d["B"]), -d["B"] @ d["B"].T
    elif fam.startswith("diag"):
        c, G = Curv(d["g"], Gdiag=jnp.diag(d["Gd"])), d["Gd"]
    else:
        c, G = Curv(d["g"], Gd=d["Gd"]), d["Gd"]
    out = inner_step(m, it, pr, pp, c)
    ref = reference_step(alg, fam, it, pr, d["g"], G, a, rank=R)
    if fam == "dlr" and alg in ("bong", "blr"):
        ut, Wt = dlr_tilde(alg, a, it, pr, d["B"])
        np.testing.assert_allclose(out.mu, ref.mu, atol=1e-12)  # mean uses the untruncated precision
        np.testing.assert_allclose(jnp.diag(ut) + Wt @ Wt.T, jnp.linalg.inv(ref.Sigma), atol=1e-11)
        u2, W2 = svd_truncate(ut, Wt, R)
        np.testing.assert_allclose(out.ups, u2, atol=1e-12)
        np.testing.assert_allclose(out.W @ out.W.T, W2 @ W2.T, atol=1e-12)
        np.testing.assert_allclose(out.ups + jnp.sum(out.W**2, 1), jnp.diag(jnp.linalg.inv(ref.Sigma)), atol=1e-11)
    else:
        for x, y in zip(out, ref):
            np.testing.assert_allclose(x, y, atol=1e-11, rtol=1e-11)


def test_lin_ef_and_mc_ef_use_factor(setup):
    d = setup
    it, pr, pp = _beliefs("fc", d)
    g = d["g"]
    out = inner_step(make_method("bong-lin-ef-fc"), pr, pr, pp, Curv(g, B=g[:, None]))
    ref = reference_step("bong", "fc", pr, pr, g, -jnp.outer(g, g), 1.0)
    np.testing.assert_allclose(out.Sigma, ref.Sigma, atol=1e-12)
    # (131)-(133): K = Sigma g / (1 + g^T Sigma g)
    Kt = d["S0"] @ g / (1 + g @ d["S0"] @ g)
    np.testing.assert_allclose(out.Sigma, d["S0"] - jnp.outer(Kt, g) @ d["S0"], atol=1e-12)
    np.testing.assert_allclose(out.mu, d["mu0"] + Kt, atol=1e-12)


def test_woodbury_mc_ef_forms(setup):
    """(128)-(130) against the direct (126)-(127)."""
    d = setup
    M = 4
    Gh = jax.random.normal(jax.random.PRNGKey(5), (P, M))
    pr = FC(d["mu0"], d["S0"])
    out = inner_step(make_method("bong-mc-ef-fc"), pr, pr, None, Curv(Gh.mean(1), B=Gh / np.sqrt(M)))
    Kt = d["S0"] @ Gh @ jnp.linalg.inv(M * jnp.eye(M) + Gh.T @ d["S0"] @ Gh)
    np.testing.assert_allclose(out.mu, d["mu0"] + Kt @ jnp.ones(M), atol=1e-12)
    np.testing.assert_allclose(out.Sigma, d["S0"] - Kt @ Gh.T @ d["S0"], atol=1e-12)
    direct = jnp.linalg.inv(jnp.linalg.inv(d["S0"]) + Gh @ Gh.T / M)
    np.testing.assert_allclose(out.Sigma, direct, atol=1e-12)


def test_dlr_linear_algebra(setup):
    d = setup
    V = jax.random.normal(jax.random.PRNGKey(2), (P, 3))
    dense = jnp.diag(d["ups"]) + d["W"] @ d["W"].T
    np.testing.assert_allclose(dlr_solve(d["ups"], d["W"], V), jnp.linalg.solve(dense, V), atol=1e-12)
    b = DLR(d["mu"], d["ups"], d["W"])
    np.testing.assert_allclose(marginal_variances(b), jnp.diag(jnp.linalg.inv(dense)), atol=1e-12)
    Wt = jax.random.normal(jax.random.PRNGKey(3), (P, 5))
    ups, W = dlr_project(d["ups"], Wt, 2)
    u2, W2 = svd_truncate(d["ups"], Wt, 2)
    np.testing.assert_allclose(W @ W.T, W2 @ W2.T, atol=1e-12)
    np.testing.assert_allclose(ups + jnp.sum(W**2, 1), d["ups"] + jnp.sum(Wt**2, 1), atol=1e-12)  # diag kept


def test_dlr_sampler_exact(setup):
    """The sampler's linear map Z satisfies Z^T Z = (Ups + W W^T)^{-1} exactly."""
    d = setup
    for W in (d["W"], jnp.zeros((P, R)), jnp.concatenate([d["W"][:, :1], d["W"][:, :1]], 1)):  # incl. rank-deficient
        Z = dlr_noise_map(d["ups"], W, jnp.eye(P))
        np.testing.assert_allclose(Z.T @ Z, jnp.linalg.inv(jnp.diag(d["ups"]) + W @ W.T), atol=1e-12)


def _tiny_net():
    net = make_mlp([4, 3, 3])
    return net, (lambda x, th: net.apply(th, x))


# tiny model of the whole-grid test (P <= 20)
_GRID_NET = make_mlp([3, 2, 3], activation=jnp.tanh)  # P = 17, smooth (mc-hess needs Hessians)


def _grid_problem():
    f = lambda x, th: _GRID_NET.apply(th, x)  # noqa: E731
    mu0 = _GRID_NET.init(jax.random.PRNGKey(11))
    x = jnp.array([0.7, -1.2, 0.4])
    y = jax.nn.one_hot(2, 3)
    return f, mu0, x, y


def test_lin_hess_F_form_equals_pseudo_inverse_form():
    """Prop. 4.2 with singular softmax R: F^T(y - p) = H^T R^+ (y - p), F^T R F = H^T R^+ H."""
    net, f = _tiny_net()
    th = net.init(jax.random.PRNGKey(0))
    x = jnp.array([0.3, -1.0, 0.5, 2.0])
    y = jax.nn.one_hot(1, 3)
    lik = categorical(3)
    c = curvature(make_method("bong-lin-hess-fc"), f, lik, x, y, FC(th, jnp.eye(net.n_params)), None)
    H = jax.jacobian(lambda t: jax.nn.softmax(f(x, t)))(th)
    p = jax.nn.softmax(f(x, th))
    Rp = jnp.linalg.pinv(jnp.diag(p) - jnp.outer(p, p))
    np.testing.assert_allclose(c.g, H.T @ Rp @ (y - p), atol=1e-12)
    np.testing.assert_allclose(-c.B @ c.B.T, -H.T @ Rp @ H, atol=1e-12)
    # (27): lin-ef gradient = grad of -1/2 (y - h)^T R^+ (y - h) at mu, R frozen
    g27 = jax.grad(lambda t: -0.5 * (y - jax.nn.softmax(f(x, t))) @ Rp @ (y - jax.nn.softmax(f(x, t))))(th)
    np.testing.assert_allclose(g27, c.g, atol=1e-12)
    cef = curvature(make_method("bong-lin-ef-fc"), f, lik, x, y, FC(th, jnp.eye(net.n_params)), None)
    np.testing.assert_allclose(cef.B[:, 0], c.g, atol=1e-14)


def test_lin_hess_is_exact_hessian_for_linear_softmax():
    net = make_linear(3, 4)
    f = lambda x, th: net.apply(th, x)  # noqa: E731
    th = net.init(jax.random.PRNGKey(1))
    x, y = jnp.array([1.0, -0.5, 0.2]), jax.nn.one_hot(2, 4)
    c = curvature(make_method("bong-lin-hess-fc"), f, categorical(4), x, y, FC(th, jnp.eye(net.n_params)), None)
    Hx = jax.hessian(lambda t: categorical(4).loglik(f(x, t), y))(th)
    gx = jax.grad(lambda t: categorical(4).loglik(f(x, t), y))(th)
    np.testing.assert_allclose(-c.B @ c.B.T, Hx, atol=1e-12)
    np.testing.assert_allclose(c.g, gx, atol=1e-12)


def test_hutchinson_diagonal_is_unbiased():
    """mc-hess for diagonal families estimates diag(E[hess]) with Hutchinson probes (Sec. 4.3): with
    many probes it approaches the exact diagonal (the grid test checks the same probes exactly)."""
    f, mu0, x, y = _grid_problem()
    lik = categorical(3)
    tiny = Diag(mu0, 1e-14 * jnp.ones(_GRID_NET.n_params))  # draws ~ mu0: E[hess] = hess at mu0
    cd = jax.jit(lambda b: curvature(make_method("bong-mc-hess-diag", n_samples=1, n_probes=4000), f, lik, x, y, b,
                                     jax.random.PRNGKey(4)))(tiny)
    Hd = np.diag(jax.hessian(lambda t: lik.loglik(f(x, t), y))(mu0))
    assert np.max(np.abs(cd.Gdiag - Hd)) < 0.05 * np.max(np.abs(Hd))
    few = curvature(make_method("bong-mc-hess-diag", n_samples=1, n_probes=2), f, lik, x, y, tiny, jax.random.PRNGKey(4))
    assert np.max(np.abs(few.Gdiag - Hd)) > np.max(np.abs(cd.Gdiag - Hd))  # the estimate is noisy with few probes


def test_method_names_and_errors():
    names = grid_names(10)
    assert len(names) == 80 and len(set(names)) == 80
    ok = 0
    for n in names:
        a = n.split("-")[0]
        try:
            make_method(n, alpha=None if a == "bong" else 0.5)
            ok += 1
        except ValueError as e:
            assert "mc-hess" in n and "dlr" in n and "not define" in str(e)
    assert ok == 76
    m = make_method("bong-lin-hess-dlr-10")
    assert (m.alg, m.approx, m.family, m.rank, m.alpha) == ("bong", "lin-hess", "dlr", 10, 1.0)
    for bad, kw in [("bong-lin-hess-dlr", {}), ("bong-foo-fc", {}), ("bong-lin-hess-fc", {"alpha": 0.5}),
                    ("blr-lin-hess-fc", {}), ("blr-lin-hess-dlr-5", {"alpha": 1.5}), ("bog-lin-hess-fc", {"alpha": 0.1, "n_iter": 3}),
                    ("bong-lin-hess-diag-3", {}), ("blr-lin-hess-fc", {"alpha": -1.0})]:
        with pytest.raises(ValueError):
            make_method(bad, **kw)
    with pytest.raises(ValueError):
        init_belief("fc", jnp.zeros(3), -1.0)
    # dlr-10 and dlr-1 columns, mc-hess-dlr dropped: 4 x 4 x 6 - 8
    assert len(grid_names((10, 1), defined_only=True)) == 88
    # Table 3: the O(P^3) cells are refused on the MLP with a reason, fc on the CNN too
    assert is_cubic(make_method("blr-lin-hess-fc", alpha=0.5)) and is_cubic(make_method("bog-mc-ef-fc", alpha=0.1))
    assert not is_cubic(make_method("bong-lin-hess-fc")) and not is_cubic(make_method("bog-lin-hess-fc_mom", alpha=0.1))
    with pytest.raises(ValueError, match=r"O\(P\^3\)"):
        run_digits("blr-lin-hess-fc", alpha=0.5, T=5, key=core.as_key(0))
    with pytest.raises(ValueError, match="full covariance"):
        run_digits("bong-lin-hess-fc", model="cnn", T=5, key=core.as_key(0))


def test_lofi_full_rank_equals_cm_ekf():
    """bong-lin-hess-dlr with R >= P equals bong-lin-hess-fc (CM-EKF), step by step."""
    net, f = _tiny_net()
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(5, 4)), rng.integers(0, 3, 5)
    th = net.init(jax.random.PRNGKey(2))
    Pn = net.n_params
    k0 = jax.random.PRNGKey(0)
    fc = belief_path(make_method("bong-lin-hess-fc"), f, categorical(3), X, y, FC(th, 0.5 * jnp.eye(Pn)), key=k0)
    dl = belief_path(make_method(f"bong-lin-hess-dlr-{Pn}"), f, categorical(3), X, y, init_belief("dlr", th, 0.5, Pn), key=k0)
    np.testing.assert_allclose(dl.mu, fc.mu, atol=1e-10)
    prec = jnp.einsum("tp,pq->tpq", dl.ups, jnp.eye(Pn)) + jnp.einsum("tpr,tqr->tpq", dl.W, dl.W)
    np.testing.assert_allclose(prec, jnp.linalg.inv(fc.Sigma), atol=1e-8)
    # natural-parameter lin-hess: the precision grows, trace(Sigma) shrinks (digest claim 16)
    tr = np.trace(np.asarray(fc.Sigma), axis1=1, axis2=2)
    assert np.all(np.diff(tr) <= 1e-12)


def test_bog_dlr_with_zero_w_stays_zero():
    net, f = _tiny_net()
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(4, 4)), rng.integers(0, 3, 4)
    th = net.init(jax.random.PRNGKey(2))
    path = belief_path(make_method("bog-lin-hess-dlr-2", alpha=0.1), f, categorical(3), X, y, init_belief("dlr", th, 0.5, 2),
                       key=jax.random.PRNGKey(0))
    assert float(jnp.max(jnp.abs(path.W))) == 0.0


def test_kalman_and_batch():
    X, y, _ = make_stream(core.as_key(3), 25, dim=3, noise_var=0.4, prior_var=1.5)
    mu, S = bong_linear_path(X, y, 0.4, np.zeros(3), 1.5 * np.eye(3), "fc")
    mk, Sk = kalman_filter(np.zeros(3), 1.5 * np.eye(3), X, y, 0.4)
    mb, Sb = batch_posterior(np.zeros(3), 1.5 * np.eye(3), X, y, 0.4)
    np.testing.assert_allclose(mu, mk, atol=1e-10)
    np.testing.assert_allclose(S, Sk, atol=1e-10)
    np.testing.assert_allclose(mu[-1], mb, atol=1e-10)
    np.testing.assert_allclose(S[-1], Sb, atol=1e-10)
    # digest Sec. 5 E: moment parameters are not exact and can give a negative variance
    for Rv, kf, mom in [(0.5, 1 / 3, -1.0), (1.0, 0.5, 0.0), (4.0, 0.8, 0.75)]:
        a, b = scalar_fc_mom_vs_kf(Rv)
        assert abs(a - kf) < 1e-12 and abs(b - mom) < 1e-12


def test_blr_converges_to_bayes_with_iterations():
    """Linear-Gaussian: blr's error shrinks like (1 - alpha)^I (digest claim 7)."""
    X, y, _ = make_stream(core.as_key(0), 1, dim=2, noise_var=0.3)
    mb, Sb = batch_posterior(np.zeros(2), np.eye(2), X, y, 0.3)
    errs = []
    for I in (1, 5, 20):
        path = belief_path(make_method("blr-lin-hess-fc", alpha=0.5, n_iter=I), linear_f, gaussian(0.3), X, y, FC(jnp.zeros(2), jnp.eye(2)),
                           key=jax.random.PRNGKey(0))
        errs.append(float(np.max(np.abs(np.linalg.inv(path.Sigma[-1]) - np.linalg.inv(Sb)))))
    assert errs[0] > 10 * errs[1] > 100 * errs[2]
    assert errs[2] < 1e-4


@pytest.mark.parametrize("kind,psi,y", [("bernoulli", (2.0, 5.0), 1.0), ("bernoulli", (0.7, 3.1), 0.0),
                                        ("poisson", (3.0, 2.0), 4.0), ("poisson", (1.3, 0.4), 0.0), ("normal", (0.5, 2.0), -1.0)])
def test_conjugate_natural_gradient(kind, psi, y):
    _, _, ng = cj.natural_gradient(kind, psi, y)
    np.testing.assert_allclose(ng, [y, 1.0], atol=1e-10)
    np.testing.assert_allclose(cj.bong_step(kind, psi, y), cj.bayes_update(psi, y), atol=1e-10)


def test_conjugate_moments_by_quadrature():
    """rho = grad Phi = E_q[(theta, -A(theta))] and E[log p] closed forms, by quadrature."""
    for kind, psi, y, A in [("bernoulli", (2.0, 5.0), 1.0, lambda t: np.logaddexp(0, t)),
                            ("poisson", (3.0, 2.0), 4.0, np.exp)]:
        dens = lambda t: float(np.exp(cj.log_density(kind, psi, t)))  # noqa: E731
        Z = integrate.quad(dens, -30, 10)[0]
        assert abs(Z - 1) < 1e-8
        Et = integrate.quad(lambda t: t * dens(t), -30, 10)[0]
        EA = integrate.quad(lambda t: A(t) * dens(t), -30, 10)[0]
        rho = jax.grad(lambda p: cj.log_partition(kind, p))(jnp.asarray(psi))
        np.testing.assert_allclose(rho, [Et, -EA], atol=1e-7)
        # E[log p] up to the y-only constant -log y! (Poisson)
        const = -special.gammaln(y + 1) if kind == "poisson" else 0.0
        np.testing.assert_allclose(float(cj.expected_loglik(kind, jnp.asarray(psi), y)) + const, y * Et - EA + const, atol=1e-7)
    with pytest.raises(ValueError):
        cj.check_psi("bernoulli", 3.0, 2.0)


def test_runner_metrics_and_divergence():
    X, y, _ = make_stream(core.as_key(1), 30, dim=2, noise_var=0.05)
    lik = gaussian(0.05)
    ev = make_evaluator(linear_f, lik, X[:10], y[:10], n_mc=20, key=core.as_key(1))
    key = core.as_key(0)
    ok = stream(make_method("bong-lin-hess-fc"), linear_f, lik, X, y, FC(jnp.zeros(2), jnp.eye(2)), key=key,
                checkpoints=[0, 10, 20, 30], evaluate=ev, keep_states=True)
    assert isinstance(ok, core.Trace) and ok.status == "max_steps" and list(ok.iterations) == [0, 10, 20, 30]
    nl = ok.extra["nlpd_plugin"]
    assert np.all(np.isfinite(nl)) and nl[-1] < nl[0] and ok.objective_name == "test NLPD (plug-in)"
    np.testing.assert_array_equal(ok.objective, nl)
    assert len(ok.extra["states"]) == 4 and ok.timings["seconds_per_step"] > 0
    assert ok.mean.shape == (4, 2) and ok.var.shape == (4, 2) and np.all(ok.var > 0)
    for b, m, v in zip(ok.extra["states"], ok.mean, ok.var):
        np.testing.assert_array_equal(b.mu, m)
        np.testing.assert_array_equal(np.diag(b.Sigma), v)
    np.testing.assert_array_equal(ok.state.belief.mu, ok.mean[-1])
    # the metrics recorded in the loop equal the evaluator called on the recorded beliefs
    for i, b in enumerate(ok.extra["states"]):
        vals = ev(b)
        for k in ("nlpd_plugin", "nlpd_mc", "nlpd_lin", "err_plugin"):
            np.testing.assert_allclose(ok.extra[k][i], vals[k], rtol=1e-12)
    # fc_mom with a small noise variance makes the variance negative (Eq. 187): reported, not raised
    bad = stream(make_method("bong-lin-hess-fc_mom"), linear_f, lik, X, y, FC(jnp.zeros(2), jnp.eye(2)), key=key,
                 checkpoints=[0, 10, 20, 30], evaluate=ev)
    assert bad.diverged and bad.status.startswith("diverged: ")
    assert "non-positive variance at step t = " in bad.status or "not positive definite at checkpoint" in bad.status
    assert np.isfinite(bad.extra["nlpd_plugin"][0]) and bad.n_rows < 4
    assert bad.extra["steps_done"] < 30
    with pytest.raises(ValueError):
        stream(make_method("bong-lin-hess-fc"), linear_f, lik, X, y, FC(jnp.zeros(2), jnp.eye(2)), key=key, checkpoints=[50])


def _manual_path(m, f, lik, X, y, prior, key, switch=None):
    """A plain Python loop over grid.update with the draws of step t from fold_in(key, t): the
    reference the runner must match (switch = (t0, alpha): the learning rate from step t0 + 1 on)."""
    Yenc = encode_all(lik, y, prior.mu.dtype)
    b, out = prior, [prior]
    for t in range(1, len(Yenc) + 1):
        alpha = None if switch is None or t <= switch[0] else jnp.asarray(switch[1])
        b = update(m, f, lik, b, jnp.asarray(X[t - 1]), Yenc[t - 1], jax.random.fold_in(key, t), alpha=alpha)
        out.append(b)
    return out


def test_runner_chunks_progress_and_states_match_step_by_step():
    """Uneven checkpoints (rows at multiples of their gcd, only the checkpoints kept and evaluated);
    the recorded states equal a plain step-by-step filter, progress reaches 1, on_chunk sees the
    trace so far, and a float32 belief stays float32."""
    f, mu0, _, _ = _grid_problem()
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(12, 3)), rng.integers(0, 3, 12)
    m = make_method("bong-mc-ef-dlr-2", n_samples=4)
    prior = init_belief("dlr", mu0, 0.5, 2)
    seen, chunks = [], []
    ev = make_evaluator(f, categorical(3), X[:5], y[:5], n_mc=5, key=core.as_key(1))
    run = stream(m, f, categorical(3), X, y, prior, key=jax.random.PRNGKey(8), checkpoints=[4, 8], progress=seen.append,
                 keep_states=True, evaluate=ev, on_chunk=chunks.append)
    assert list(run.iterations) == [0, 4, 8, 12] and run.status == "max_steps" and seen[-1] == 1.0
    assert np.all(np.diff(seen) > 0) and [list(c.iterations) for c in chunks] == [[0, 4], [0, 4, 8], [0, 4, 8, 12]]
    path = _manual_path(m, f, categorical(3), X, y, prior, jax.random.PRNGKey(8))
    for i, t in enumerate(run.iterations):
        np.testing.assert_allclose(run.extra["states"][i].mu, path[t].mu, atol=1e-12)
        np.testing.assert_allclose(run.extra["states"][i].ups, path[t].ups, atol=1e-12)
        np.testing.assert_allclose(run.extra["nlpd_plugin"][i], ev(path[t])["nlpd_plugin"], rtol=1e-10)
    # uneven checkpoints: rows at multiples of 2, only 0, 2, 6, 12 kept
    run2 = stream(m, f, categorical(3), X, y, prior, key=jax.random.PRNGKey(8), checkpoints=[2, 6], evaluate=ev)
    assert list(run2.iterations) == [0, 2, 6, 12] and np.all(np.isfinite(run2.extra["nlpd_plugin"]))
    np.testing.assert_allclose(run2.mean[2], path[6].mu, atol=1e-12)
    p32 = init_belief("diag", mu0.astype(jnp.float32), 0.5)
    r32 = stream(make_method("bong-lin-hess-diag"), f, categorical(3), X.astype(np.float32), y, p32, key=core.as_key(0),
                 checkpoints=None)
    assert r32.state.belief.mu.dtype == jnp.float32 and r32.status == "max_steps"


def test_stream_of_a_linear_gaussian_problem_is_the_kalman_filter():
    """stream (vilab.core.run) of bong-lin-hess-fc on a linear-Gaussian stream = the Kalman filter."""
    X, y, _ = make_stream(core.as_key(5), 24, dim=3, noise_var=0.4, prior_var=1.5)
    m0, S0 = np.zeros(3), 1.5 * np.eye(3)
    tr = stream(make_method("bong-lin-hess-fc"), linear_f, gaussian(0.4), X, y, FC(jnp.asarray(m0), jnp.asarray(S0)),
                key=core.as_key(0), checkpoints=range(0, 25, 3), keep_states=True)
    mk, Sk = kalman_filter(m0, S0, X, y, 0.4)
    assert list(tr.iterations) == list(range(0, 25, 3))
    np.testing.assert_allclose(tr.mean, mk[tr.iterations], atol=1e-10)
    np.testing.assert_allclose(tr.var, np.diagonal(Sk[tr.iterations], axis1=1, axis2=2), atol=1e-10)
    np.testing.assert_allclose(np.stack([b.Sigma for b in tr.extra["states"]]), Sk[tr.iterations], atol=1e-10)


@pytest.mark.parametrize("name", ["blr-mc-ef-diag", "bog-lin-hess-dlr-2"])
def test_resume_with_a_new_learning_rate_equals_a_run_that_switched(name):
    """T/2 steps with alpha = 0.3, then vilab.core.resume with alpha = 0.05 and the rest of the stream
    as batches == one step-by-step run that switched alpha at T/2 (same draws: fold_in(key, t))."""
    f, mu0, _, _ = _grid_problem()
    rng = np.random.default_rng(4)
    T = 10
    X, y = rng.normal(size=(T, 3)), rng.integers(0, 3, T)
    lik = categorical(3)
    m = make_method(name, alpha=0.3, n_samples=3)
    prior = init_belief(m.family, mu0, 0.5, m.rank, key=jax.random.PRNGKey(5), w0_scale=0.3 if m.family == "dlr" else 0.0)
    key = jax.random.PRNGKey(11)
    first = stream(m, f, lik, X[: T // 2], y[: T // 2], prior, key=key, checkpoints=range(T // 2 + 1))
    assert first.status == "max_steps" and first.n_steps == T // 2
    Yenc = encode_all(lik, y, prior.mu.dtype)
    both = core.resume(algorithm(m, f, lik, None), first, T - T // 2, hyper={"alpha": 0.05},
                       batches=(jnp.asarray(X[T // 2:]), Yenc[T // 2:]))
    ref = _manual_path(m, f, lik, X, y, prior, key, switch=(T // 2, 0.05))
    assert both.status == "max_steps" and list(both.iterations) == list(range(T + 1))
    np.testing.assert_allclose(both.mean, np.stack([b.mu for b in ref]), atol=1e-12)
    np.testing.assert_allclose(both.step_sizes, [0.3] * (T // 2) + [0.05] * (T - T // 2), rtol=1e-15)
    # not a run that kept alpha = 0.3
    kept = _manual_path(m, f, lik, X, y, prior, key)
    assert np.max(np.abs(np.asarray(both.mean[-1]) - np.asarray(kept[-1].mu))) > 1e-6
    with pytest.raises(ValueError, match="alpha"):
        core.set_hyper(algorithm(make_method("bong-lin-hess-diag"), f, lik).init(key, init_belief("diag", mu0, 0.5)),
                       alpha=0.5)


def test_evaluator_predictives():
    """MC NLPD averages probabilities (<= mean per-sample NLL); all three agree for a tiny variance."""
    net, f = _tiny_net()
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 4)), rng.integers(0, 3, 20)
    th = net.init(jax.random.PRNGKey(0))
    lik = categorical(3)
    ev = make_evaluator(f, lik, X, y, n_mc=30, key=jax.random.PRNGKey(9))
    tight = ev(Diag(th, 1e-12 * jnp.ones(net.n_params)))
    assert abs(tight["nlpd_mc"] - tight["nlpd_plugin"]) < 1e-5 and abs(tight["nlpd_lin"] - tight["nlpd_plugin"]) < 1e-5
    b = Diag(th, 0.5 * jnp.ones(net.n_params))
    wide = ev(b)
    from vilab.online.families import sample
    thetas = sample(jax.random.PRNGKey(9), b, 30)
    lp = np.array([[lik.loglik(f(x, t), jax.nn.one_hot(c, 3)) for x, c in zip(X, y)] for t in thetas])
    np.testing.assert_allclose(wide["nlpd_mc"], -np.mean(special.logsumexp(lp, axis=0) - np.log(30)), atol=1e-10)
    assert wide["nlpd_mc"] <= -lp.mean() + 1e-12


def test_network_parameter_counts():
    assert digits_mlp().n_params == 2410
    assert digits_cnn().n_params == 11642
    assert make_cnn((28, 28)).n_params == 57722
    c = digits_cnn()
    assert c.apply(c.init(jax.random.PRNGKey(0)), jnp.ones(64)).shape == (10,)
    with pytest.raises(ValueError):
        make_mlp([5])
