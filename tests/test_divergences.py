"""Tests of vilab.divergences (Chen, Nott & Tan 2025) against brute force: Monte Carlo,
autodiff, bound-constrained optimisation and quadrature."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, optimize

import vilab  # noqa: F401  (x64)
from vilab.divergences import (
    batch_meanfield_fixed_point,
    batch_objectives,
    batch_statistics,
    divergence,
    fig1_grid,
    fisher,
    gradient_variance_diagonal,
    gradient_variance_mc,
    gradient_variance_mu,
    iae,
    kl_pq,
    kl_qp,
    log_inverse_gamma_optima,
    meanfield_optimum,
    meanfield_variances,
    monte_carlo_divergence,
    precision_2d,
    precision_3d,
    run_bam,
    run_sgd,
    score_divergence,
    score_nqp,
    score_nqp_batch,
    sparse_pattern,
    tail_average_variances,
    univariate_objective,
    univariate_optima,
    weighted_fisher,
)
from vilab.divergences.stochastic import bam_update, grad_fdb_mu, grad_fdb_T, grad_fdr, grad_kl, grad_sdb, grad_sdr
from vilab.targets import gaussian_target
from vilab.targets.univariate import log_inverse_gamma_spec, skew_normal_spec, student_t, student_t_spec


K0 = jax.random.PRNGKey(0)


def _random_problem(d, seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    Lam = A @ A.T / d + np.diag(rng.uniform(0.3, 1.5, d))
    B = rng.normal(size=(d, d))
    Sig = B @ B.T / d + 0.5 * np.eye(d)
    return rng, Lam, rng.normal(size=d), rng.normal(size=d), Sig


# --------------------------------------------------------------------- Lemma 1 and closed forms


@pytest.mark.parametrize("name", ["fisher", "score", "weighted_fisher", "kl"])
def test_lemma1_closed_form_matches_monte_carlo(name):
    rng, Lam, nu, mu, Sig = _random_problem(3, 0)
    M = np.array([0.5, 1.0, 2.0])
    exact = float(divergence(name, mu, Sig, nu, Lam, weight=M))
    Ljnp = jnp.asarray(Lam)
    score = lambda th: -Ljnp @ (th - nu)  # noqa: E731
    _, logdet = np.linalg.slogdet(Lam)
    logp = lambda th: -0.5 * (th - nu) @ Ljnp @ (th - nu) + 0.5 * logdet - 1.5 * jnp.log(2 * jnp.pi)  # noqa: E731
    est, se = monte_carlo_divergence(jax.random.PRNGKey(1), score, mu, Sig, name, weight=M, n=200_000,
                                     log_density=logp)
    assert abs(est - exact) < 5 * se + 1e-9, (est, exact, se)


def test_weighted_fisher_special_cases_and_mean_recovery():
    _, Lam, nu, mu, Sig = _random_problem(4, 1)
    assert np.isclose(fisher(mu, Sig, nu, Lam), weighted_fisher(mu, Sig, nu, Lam, np.eye(4)))
    assert np.isclose(score_divergence(mu, Sig, nu, Lam), weighted_fisher(mu, Sig, nu, Lam, Sig))
    for f in (kl_qp, fisher, score_divergence):
        g = jax.grad(f)(jnp.asarray(nu), Sig, nu, Lam)  # the mean is recovered: gradient zero at mu = nu
        assert np.allclose(g, 0, atol=1e-10)
        assert abs(float(f(nu, np.linalg.inv(Lam), nu, Lam))) < 1e-10  # zero at q = p
    assert abs(float(kl_pq(nu, np.linalg.inv(Lam), nu, Lam))) < 1e-10


def test_score_divergence_affine_invariant_fisher_not():
    rng, Lam, nu, mu, Sig = _random_problem(3, 2)
    A = rng.normal(size=(3, 3)) + 2 * np.eye(3)
    b = rng.normal(size=3)
    Ai = np.linalg.inv(A)
    Lam2, Sig2 = Ai.T @ Lam @ Ai, A @ Sig @ A.T
    s1, s2 = score_divergence(mu, Sig, nu, Lam), score_divergence(A @ mu + b, Sig2, A @ nu + b, Lam2)
    f1, f2 = fisher(mu, Sig, nu, Lam), fisher(A @ mu + b, Sig2, A @ nu + b, Lam2)
    assert np.isclose(s1, s2, rtol=1e-10)
    assert not np.isclose(f1, f2, rtol=1e-3)


# --------------------------------------------------------------------- mean-field optima


@pytest.mark.parametrize("name", ["kl", "fisher", "weighted_fisher", "forward_kl"])
def test_meanfield_optimum_is_stationary_by_autodiff(name):
    _, Lam, nu, _, _ = _random_problem(4, 3)
    w = np.array([0.3, 1.0, 2.0, 5.0])
    opt = meanfield_optimum(Lam, name, weight=w)

    def obj(logv):
        return divergence(name, nu, jnp.diag(jnp.exp(logv)), nu, Lam, weight=w)

    lv = jnp.log(jnp.asarray(opt.variances))
    assert np.allclose(jax.grad(obj)(lv), 0, atol=1e-9)
    assert np.isclose(float(obj(lv)), opt.objective, rtol=1e-10)
    # and it is a minimum: random perturbations increase the objective
    rng = np.random.default_rng(0)
    for _ in range(5):
        assert float(obj(lv + 0.05 * rng.normal(size=4))) > opt.objective


def test_score_nqp_matches_bound_constrained_brute_force():
    rng = np.random.default_rng(4)
    n_collapse = 0
    fixed = [precision_3d(0.8, 0.8, 0.3), precision_3d(-0.82, -0.18, 0.6), precision_3d(0.9, 0.5, 0.2)]
    for k in range(30):
        d = int(rng.integers(2, 6))
        W = rng.normal(size=(d, d))
        L = fixed[k] if k < len(fixed) else W @ W.T / d + np.diag(rng.uniform(0.02, 0.5, d))
        d = L.shape[0]
        dg = np.diag(L)
        s, col = score_nqp(L)
        sb, colb = score_nqp_batch(L[None])
        assert np.allclose(s, sb[0], atol=1e-9) and np.array_equal(col, colb[0])
        # brute force: minimise the score divergence over diagonal Sigma >= 0 directly (Sec. 1.3 form)
        obj = lambda v: d + v @ (L**2) @ v - 2 * v @ dg  # noqa: E731
        res = optimize.minimize(obj, np.full(d, 0.5) / dg, jac=lambda v: 2 * (L**2) @ v - 2 * dg,
                                bounds=[(0, None)] * d, method="L-BFGS-B", options=dict(ftol=1e-15, gtol=1e-12))
        assert np.allclose(s / dg, res.x, atol=1e-5)
        assert meanfield_optimum(L, "score").objective <= res.fun + 1e-10
        n_collapse += int(col.any())
        # KKT conditions (a)-(b) of eq. (3)
        H = L**2 / np.outer(dg, dg)
        Hs = H @ s
        assert np.all(np.abs(Hs[~col] - 1) < 1e-8) and np.all(Hs[col] >= 1 - 1e-8)
    assert n_collapse > 0  # the sample contains collapsed optima, so case (a) is exercised


def test_two_d_formulas_and_ordering():
    for rho in (-0.95, -0.3, 0.2, 0.9):
        for sd1, sd2 in ((1, 1), (0.1, 3.0), (10.0, 0.5)):
            P = precision_2d(rho, sd1, sd2)
            kl, fi, sc, fw = (meanfield_variances(P, k) for k in ("kl", "fisher", "score", "forward_kl"))
            assert np.isclose(kl[0], sd1**2 * (1 - rho**2))
            assert np.isclose(fi[0], sd1**2 * (1 - rho**2) / np.sqrt(1 + rho**2 * sd1**2 / sd2**2))
            assert np.isclose(sc[0], sd1**2 * (1 - rho**2) / (1 + rho**2))
            assert np.allclose(fw, [sd1**2, sd2**2])
            assert np.all(sc <= kl) and np.all(fi <= kl) and np.all(kl <= fw)
            if sd1 == sd2:
                assert np.allclose(fi, np.sqrt(kl * sc))  # geometric mean (C5)
            assert (sc[0] <= fi[0] + 1e-15) == (sd1**2 / sd2**2 <= 2 + rho**2)  # criterion of Sec. 2.6


def test_weighted_fisher_vector_and_matrix_weights_agree_and_theorem1():
    _, Lam, _, _, _ = _random_problem(5, 5)
    w = np.array([0.2, 1.0, 3.0, 0.5, 7.0])
    v1 = meanfield_variances(Lam, "weighted_fisher", weight=w)
    v2 = meanfield_variances(Lam, "weighted_fisher", weight=np.diag(w))
    assert np.allclose(v1, v2)
    assert np.all(v1 <= 1 / np.diag(Lam))
    assert np.allclose(meanfield_variances(Lam, "weighted_fisher", weight=np.ones(5)),
                       meanfield_variances(Lam, "fisher"))


def test_fig1_grid_counts_match_digest_scan():
    g = fig1_grid(0.3)
    cnt = g["count"][g["pd"]]
    assert tuple(int(np.sum(cnt == k)) for k in range(4)) == (0, 790, 320, 6365)
    assert int(g["collapse"].sum()) == 368
    assert np.all(g["count"][g["dd"]] == 3)
    # non-PD points are blank
    assert np.all(np.isnan(g["count"][~g["pd"]]))


def test_batch_fixed_points():
    P = precision_3d(0.8, 0.8, 0.3)
    assert np.allclose(batch_meanfield_fixed_point(P, "sdb"), [0.61336, 0.79454, 0.79454], atol=1e-5)
    assert np.allclose(batch_meanfield_fixed_point(P, "fdb"), 1.0)
    S = batch_meanfield_fixed_point(precision_2d(0.9, 1, 3), "sdb")
    assert np.allclose(S, [0.14123, 1.27103], atol=1e-5)


# --------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call",
    [
        lambda: meanfield_variances([[1, 2], [2, 1]], "kl"),
        lambda: meanfield_variances([[1, 0.1], [0.2, 1]], "kl"),
        lambda: meanfield_variances(np.eye(2), "hellinger"),
        lambda: meanfield_variances(np.eye(2), "weighted_fisher"),
        lambda: meanfield_variances(np.eye(2), "weighted_fisher", weight=[1, -1]),
        lambda: meanfield_variances([[np.nan, 0], [0, 1]], "fisher"),
        lambda: precision_3d(0.9, 0.9, -0.9),
        lambda: precision_2d(1.0),
        lambda: precision_2d(0.5, sd1=0),
        lambda: student_t_spec(2),
        lambda: skew_normal_spec(0, -1, 1),
        lambda: run_sgd(gaussian_target(np.zeros(2), cov=np.eye(2)), "adam", key=K0),
        lambda: run_sgd(gaussian_target(np.zeros(2), cov=np.eye(2)), "sdb", batch_size=1, key=K0),
        lambda: run_sgd(gaussian_target(np.zeros(2), cov=np.eye(2)), "sdb", learning_rate=-1.0, key=K0),
        lambda: run_sgd(gaussian_target(np.zeros(2), cov=np.eye(2)), "kl", rho=1.5, key=K0),
        lambda: run_sgd(gaussian_target(np.zeros(2), cov=np.eye(2)), "kl", step="lbfgs", key=K0),
        lambda: run_sgd(gaussian_target(np.zeros(2), cov=np.eye(2)), "kl", T0=[[1.0, 0.5], [0.0, 1.0]], key=K0),
        lambda: run_bam(gaussian_target(np.zeros(2), cov=np.eye(2)), Sigma0=-np.eye(2), key=K0),
        lambda: run_sgd(gaussian_target(np.zeros(2), cov=np.eye(2)), "kl"),
        lambda: run_sgd(gaussian_target(np.zeros(2), cov=np.eye(2)), "kl", key=0),
        lambda: run_bam(gaussian_target(np.zeros(2), cov=np.eye(2))),
        lambda: run_sgd(gaussian_target(np.zeros(2), cov=np.eye(2)), "kl", key=K0, n_iter=0),
        lambda: run_sgd(gaussian_target(np.zeros(2), cov=np.eye(2)), "kl", key=K0, window=0),
        lambda: run_sgd(gaussian_target(np.zeros(2), cov=np.eye(2)), "kl", key=K0, step="adam"),
        lambda: run_bam(gaussian_target(np.zeros(2), cov=np.eye(2)), key=K0, lr_scale=-1.0),
    ],
)
def test_bad_input_raises_value_error(call):
    with pytest.raises(ValueError):
        call()


# --------------------------------------------------------------------- univariate (Sec. 3)


def test_log_inverse_gamma_numeric_optima_match_closed_forms():
    spec = log_inverse_gamma_spec(3.01, 2.5)
    closed = log_inverse_gamma_optima(3.01, 2.5)
    num = univariate_optima(spec)
    for k in ("kl", "fisher", "score"):
        assert np.isclose(num[k].mu, closed[k][0], atol=1e-6)
        assert np.isclose(num[k].var, closed[k][1], rtol=1e-6)


def test_univariate_identities_and_iae_against_quadrature():
    spec = skew_normal_spec(0.3, 2.0, 1.5)
    mu, s2 = np.array([0.1, 1.0]), np.array([0.5, 2.0])
    assert np.allclose(univariate_objective(spec, "score", mu, s2), s2 * univariate_objective(spec, "fisher", mu, s2))
    # KL by quadrature
    q = lambda x, m, v: np.exp(-0.5 * (x - m) ** 2 / v) / np.sqrt(2 * np.pi * v)  # noqa: E731
    kl = integrate.quad(lambda x: q(x, 1.0, 2.0) * (np.log(q(x, 1.0, 2.0)) - spec.logpdf(x)), -30, 30, limit=200)[0]
    assert np.isclose(univariate_objective(spec, "kl", 1.0, 2.0), kl, rtol=1e-8)
    brute = integrate.quad(lambda x: abs(q(x, 1.0, 2.0) - np.exp(spec.logpdf(x))), -40, 40, limit=400,
                           points=[-2, 0, 1, 2, 4])[0]
    assert np.isclose(iae(spec, 1.0, 2.0), brute, atol=1e-7)
    # the normalised densities integrate to one and the scores are their derivatives
    for sp in (spec, student_t_spec(4), log_inverse_gamma_spec(3.01, 1.0)):
        assert np.isclose(integrate.quad(lambda x: np.exp(sp.logpdf(x)), -80, 80, limit=400)[0], 1, atol=1e-7)
        x = np.linspace(sp.mode - 2, sp.mode + 2, 7)
        fd = (sp.logpdf(x + 1e-6) - sp.logpdf(x - 1e-6)) / 2e-6
        assert np.allclose(sp.score(x), fd, atol=1e-6)
        assert np.isclose(sp.cdf(sp.mode + 1) - sp.cdf(sp.mode - 1),
                          integrate.quad(lambda t: np.exp(sp.logpdf(t)), sp.mode - 1, sp.mode + 1)[0])
    tgt = student_t(4)
    assert np.isclose(float(tgt.value(jnp.array([0.7]))), float(student_t_spec(4).logpdf(0.7)))


def test_skew_normal_score_based_multistart_finds_global_minimum():
    spec = skew_normal_spec(0.0, 5.0, 5.0)
    o = univariate_optima(spec)["score"]
    mus = np.linspace(-5, 20, 160)
    ls = np.linspace(np.log(0.01), np.log(15), 160)
    M, LS = np.meshgrid(mus, ls)
    V = univariate_objective(spec, "score", M, np.exp(2 * LS))
    assert o.objective <= np.nanmin(V) + 1e-9
    assert np.isclose(o.var_ratio, 0.008, atol=5e-4) and np.isclose(o.mode_error, 0.09, atol=5e-3)


# --------------------------------------------------------------------- gradient formulas


def _gauss_problem(d=3, seed=7):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    Lam = A @ A.T + d * np.eye(d)
    nu = rng.normal(size=d)
    logh = lambda th: -0.5 * (th - nu) @ Lam @ (th - nu)  # noqa: E731
    mu = jnp.asarray(rng.normal(size=d))
    T = jnp.asarray(np.tril(rng.normal(size=(d, d))) + 3 * np.eye(d))
    return rng, Lam, nu, logh, mu, T


def test_reparameterisation_gradients_match_autodiff():
    rng, Lam, nu, logh, mu, T = _gauss_problem()
    score = jax.grad(logh)
    hvp = lambda t, v: jax.jvp(score, (t,), (v,))[1]  # noqa: E731
    z = jnp.asarray(rng.normal(size=3))

    def single(mu, T, which):
        th = mu + jax.scipy.linalg.solve_triangular(T, z, lower=True, trans=1)
        g = score(th) + T @ T.T @ (th - mu)
        f = g if which == "f" else jax.scipy.linalg.solve_triangular(T, g, lower=True)
        return f @ f

    for which, fn in (("f", grad_fdr), ("s", grad_sdr)):
        gm, gT = fn(score, hvp, mu, T, z)
        am, aT = jax.grad(single, (0, 1))(mu, T, which)
        assert np.allclose(gm, am, atol=1e-10) and np.allclose(jnp.tril(gT), jnp.tril(aT), atol=1e-10)

    def stl(mu, T):  # the Tan & Nott estimator is the path derivative of -ELBO (log q with lambda frozen)
        th = mu + jax.scipy.linalg.solve_triangular(T, z, lower=True, trans=1)
        ms, Ts = jax.lax.stop_gradient(mu), jax.lax.stop_gradient(T)
        r = th - ms
        return -(logh(th) - (jnp.sum(jnp.log(jnp.diag(Ts))) - 0.5 * r @ Ts @ Ts.T @ r))

    gm, gT = grad_kl(score, mu, T, z)
    am, aT = jax.grad(stl, (0, 1))(mu, T)
    assert np.allclose(gm, am, atol=1e-10) and np.allclose(jnp.tril(gT), jnp.tril(aT), atol=1e-10)


def test_batch_gradients_match_autodiff_of_batch_objectives():
    rng, Lam, nu, logh, mu, T = _gauss_problem()
    th = jnp.asarray(rng.normal(size=(6, 3)))
    gs = jax.vmap(jax.grad(logh))(th)
    st = batch_statistics(th, gs)
    aS = jax.grad(lambda m, t: batch_objectives(m, t, th, gs)[0], (0, 1))(mu, T)
    aF = jax.grad(lambda m, t: batch_objectives(m, t, th, gs)[1], (0, 1))(mu, T)
    gm, gT = grad_sdb(mu, T, st)
    assert np.allclose(gm, aS[0], atol=1e-9) and np.allclose(jnp.tril(gT), jnp.tril(aS[1]), atol=1e-9)
    assert np.allclose(grad_fdb_mu(mu, T, st), aF[0], atol=1e-9)
    assert np.allclose(jnp.tril(grad_fdb_T(mu, mu, T, st)), jnp.tril(aF[1]), atol=1e-9)
    # Lemma 3: for a Gaussian target C_g = Lambda C_theta Lambda and C_theta_g = -C_theta Lambda exactly
    assert np.allclose(st.C_g, Lam @ st.C_theta @ Lam) and np.allclose(st.C_theta_g, -st.C_theta @ Lam)


def test_bam_update_matches_matrix_square_root_form():
    from scipy.linalg import sqrtm

    rng, Lam, nu, logh, mu, _ = _gauss_problem()
    S = np.eye(3) * 0.7 + 0.1
    th = rng.normal(size=(4, 3))
    gs = np.asarray(jax.vmap(jax.grad(logh))(jnp.asarray(th)))
    rho = 2.5
    m1, S1 = bam_update(jnp.asarray(mu), jnp.asarray(S), jnp.asarray(th), jnp.asarray(gs), rho)
    # the GSM-VI reference form: Sigma = 2 V (I + sqrtm(I + 4 U V))^{-1}
    xb, gb = th.mean(0), gs.mean(0)
    C = (th - xb).T @ (th - xb) / 4
    G = (gs - gb).T @ (gs - gb) / 4
    U = rho * G + rho / (1 + rho) * np.outer(gb, gb)
    V = S + rho * C + rho / (1 + rho) * np.outer(np.asarray(mu) - xb, np.asarray(mu) - xb)
    S_ref = 2 * V @ np.linalg.inv(np.eye(3) + sqrtm(np.eye(3) + 4 * U @ V).real)
    assert np.allclose(S1, S_ref, atol=1e-10)
    assert np.allclose(m1, np.asarray(mu) / (1 + rho) + rho / (1 + rho) * (S_ref @ gb + xb), atol=1e-10)


def test_gradient_variance_formulas_match_monte_carlo():
    f = gradient_variance_diagonal(2.0, 1.5, 0.3)  # C15
    assert np.allclose([f["mu"][k] for k in ("kl", "fisher", "score")], [0.027778, 0.444444, 0.087791], atol=1e-6)
    assert np.allclose([f["T"][k] for k in ("kl", "fisher", "score")], [0.082085, 5.930645, 0.928856], atol=1e-6)
    mc = gradient_variance_mc(jax.random.PRNGKey(3), [[2.0]], [0.0], [0.3], [[1.5]], n=200_000)
    for k in ("kl", "fisher", "score"):
        assert np.isclose(mc["mu"][k][0, 0], f["mu"][k], rtol=0.03)
        assert np.isclose(mc["T_diag"][k][0], f["T"][k], rtol=0.05)
    # full-matrix mu formulas, non-diagonal target
    Lam = precision_2d(0.6, 1.0, 2.0)
    T = np.array([[1.3, 0.0], [-0.4, 0.8]])
    full = gradient_variance_mu(Lam, T)
    mc = gradient_variance_mc(jax.random.PRNGKey(4), Lam, [0.0, 0.0], [0.2, -0.1], T, n=200_000)
    for k in ("kl", "fisher", "score"):
        assert np.allclose(mc["mu"][k], full[k], rtol=0.05, atol=0.02 * np.abs(full[k]).max())
    # all vanish at convergence
    z = gradient_variance_diagonal(2.0, np.sqrt(2.0), 0.0)
    assert all(abs(v) < 1e-12 for part in z.values() for v in part.values())


def test_sparse_pattern():
    P = sparse_pattern(n_local=3, block=2, ell=1, n_global=2)
    assert P.shape == (8, 8) and np.all(np.diag(P)) and not np.any(np.triu(P, 1))
    assert P[2, 0] and not P[4, 0] and P[7, 0]  # block-bidiagonal local part, dense global rows


# --------------------------------------------------------------------- stochastic algorithms


@pytest.mark.slow
@pytest.mark.parametrize("method", ["kl", "fdr", "sdr", "fdb", "sdb"])
def test_full_factor_converges_to_exact_target(method):
    tg = gaussian_target(np.array([1.0, -1.0]), precision=precision_2d(0.9))
    tr = run_sgd(tg, method, n_iter=20_000, batch_size=5, key=jax.random.PRNGKey(1))
    assert tr.status == "max_steps"
    assert tr.mean.shape == (21, 2) and tr.cov.shape == (21, 2, 2) and tr.step_sizes.shape == (20_000,)
    assert np.all(tr.step_sizes == 1.0) and tr.info["effective_step_ratio"].shape == (20_000,)
    assert np.array_equal(tr.iterations, np.arange(21) * 1000)
    assert np.allclose(tr.mean[-1], [1, -1], atol=0.03)
    assert np.allclose(tr.cov[-1], [[1, 0.9], [0.9, 1]], atol=0.03)
    assert tr.objective[-1] < 1e-3 < tr.objective[0]


@pytest.mark.slow
def test_meanfield_runs_reach_the_divergence_optima():
    tg = gaussian_target(np.array([1.0, -1.0]), precision=precision_2d(0.9))
    expect = {"kl": 0.19, "fdr": 0.141226, "fdb": 0.19, "sdb": 0.141226}  # FDb -> KL, SDb -> Sigma(LSL)=1
    for m, v in expect.items():
        tr = run_sgd(tg, m, n_iter=10_000, batch_size=5, key=jax.random.PRNGKey(2), mask="diagonal", window=500)
        var = np.diagonal(tr.cov[-8:], axis1=1, axis2=2).mean()
        assert abs(var - v) < 0.012, (m, var)
        assert np.allclose(tr.cov[-1], np.diag(np.diag(tr.cov[-1])))


def test_tail_average_variances_averages_the_second_half():
    """Rows evenly spaced in iterations: the last ceil(f n) rows' diagonals are averaged (at least one)."""
    from vilab.core.trace import Trace

    covs = np.stack([np.diag([k, 10.0 * k]) + 0.5 for k in range(7)])  # off-diagonals are ignored
    tr = Trace(mean=np.zeros((7, 2)), cov=covs, objective=np.zeros(7), step_sizes=np.ones(6), status="max_steps",
               method="test", objective_name="none")
    np.testing.assert_allclose(tail_average_variances(tr), [np.mean([3, 4, 5, 6]) + 0.5, 45.0 + 0.5])
    np.testing.assert_allclose(tail_average_variances(tr, 1.0), [3.5, 30.5])
    np.testing.assert_allclose(tail_average_variances(tr, 1e-9), [6.5, 60.5])
    one = Trace(mean=np.zeros((1, 2)), cov=covs[:1], objective=np.zeros(1), step_sizes=np.ones(0), status="max_steps",
                method="test", objective_name="none")
    np.testing.assert_allclose(tail_average_variances(one), [0.5, 0.5])
    for f in (0.0, 1.5, np.nan):
        with pytest.raises(ValueError):
            tail_average_variances(tr, f)


def test_tail_averaged_meanfield_runs_sit_on_the_batch_fixed_points():
    """The Divergences page's check (6000 Adadelta steps, B = 5, mean field): the averaged variances of
    FDb and SDb match their fixed points (Chen, Nott & Tan Sec. 5: FDb -> KL, SDb -> Sigma_ii (L S L)_ii = 1)
    to within the remaining Monte Carlo error (a few per cent)."""
    P = precision_2d(0.9)
    tg = gaussian_target(np.zeros(2), precision=P)
    for m in ("fdb", "sdb"):
        tr = run_sgd(tg, m, n_iter=6000, batch_size=5, mask="diagonal", window=500, key=jax.random.PRNGKey(0))
        v = tail_average_variances(tr)
        fixed = batch_meanfield_fixed_point(P, m)
        np.testing.assert_allclose(v, fixed, rtol=0.06)


def test_bam_large_batch_converges_in_a_handful_of_iterations():
    tg = gaussian_target(np.array([1.0, -1.0]), precision=precision_2d(0.9))
    tr = run_bam(tg, n_iter=6, batch_size=500, key=jax.random.PRNGKey(0), window=6)
    assert tr.n_steps == 6
    assert np.allclose(tr.mean[3], [1, -1], atol=1e-6) and np.allclose(tr.cov[3], tg.cov, atol=1e-6)
    assert tr.objective[3] < 1e-10


def test_sdb_history_records_draws_and_a_diverging_run_reports_status():
    tg = gaussian_target(np.array([2.0]), cov=np.array([[1.5]]))
    tr = run_sgd(tg, "sdb", n_iter=30, batch_size=5, history=True, window=30, key=jax.random.PRNGKey(0))
    assert tr.extra["samples"].shape == (30, 5, 1) and tr.mean.shape == (31, 1)
    bad = run_sgd(tg, "fdr", n_iter=200, step="sgd", learning_rate=1e3, window=50, mu0=[50.0],
                  key=jax.random.PRNGKey(0))
    assert bad.status.startswith("diverged: ")
    assert np.all(np.isfinite(bad.mean)) and np.all(np.isfinite(bad.cov))
    assert bad.n_steps == len(bad.step_sizes) < 200 and bad.iterations[-1] == bad.n_steps


def test_non_gaussian_target_uses_elbo_objective():
    tr = run_sgd(student_t(5), "sdb", n_iter=3000, window=500, batch_size=10, key=jax.random.PRNGKey(0), tol=0.01)
    assert tr.objective_name.startswith("negative ELBO")
    assert tr.status in ("converged", "max_steps")
    assert abs(tr.mean[-1, 0]) < 0.2


@pytest.mark.parametrize("method", ["kl", "sdb"])
def test_sparse_factor_keeps_its_pattern_and_fits_a_markov_target(method):
    """Sec. 4: a banded (ell = 1) factor of the precision holds an ell = 1 Markov target exactly
    (Rothman et al.: its Cholesky factor has the same band), so the sparse run reaches the target."""
    d = 5
    Lam = 2.0 * np.eye(d) - 0.8 * (np.eye(d, k=1) + np.eye(d, k=-1))
    tg = gaussian_target(np.linspace(-1, 1, d), precision=Lam)
    pattern = sparse_pattern(n_local=d, block=1, ell=1, n_global=0)
    tr = run_sgd(tg, method, n_iter=12_000, batch_size=10, mask=pattern, key=jax.random.PRNGKey(4), window=2000)
    T = tr.extra["T"][-1]
    assert np.all(T[~pattern] == 0)  # entries outside the band never move
    assert np.allclose(tr.mean[-1], tg.mean, atol=0.05)
    assert np.allclose(tr.cov[-1], tg.cov, atol=0.05 * np.abs(tg.cov).max())


@pytest.mark.parametrize("step", ["rmsprop", "optax-adam"])
def test_optax_step_rules_also_converge(step):
    import optax

    tg = gaussian_target(np.array([1.0, -1.0]), precision=precision_2d(0.6))
    rule = optax.adam(0.01) if step == "optax-adam" else "rmsprop"
    tr = run_sgd(tg, "sdb", n_iter=6000, batch_size=10, step=rule, learning_rate=0.01, key=jax.random.PRNGKey(0),
                 window=1000)
    assert tr.status == "max_steps" and tr.objective[-1] < 0.01 < tr.objective[0]


def test_monte_carlo_divergence_takes_a_target_and_inputs_are_checked():
    tg = gaussian_target(np.array([0.5, -0.5]), precision=precision_2d(0.7))
    mu, Sig = np.array([0.2, 0.1]), np.array([[0.6, 0.1], [0.1, 0.4]])
    exact = float(divergence("fisher", mu, Sig, tg.mean, tg.precision))
    est, se = monte_carlo_divergence(jax.random.PRNGKey(0), tg, mu, Sig, "fisher", n=100_000)
    assert abs(est - exact) < 5 * se
    neg_elbo, se = monte_carlo_divergence(jax.random.PRNGKey(1), tg, mu, Sig, "kl", n=100_000)
    log_Z = 0.5 * np.linalg.slogdet(2 * np.pi * tg.cov)[1]  # the target's log density is unnormalised
    assert abs(neg_elbo + log_Z - float(divergence("kl", mu, Sig, tg.mean, tg.precision))) < 5 * se
    with pytest.raises(ValueError, match="positive definite"):
        divergence("score", mu, np.array([[1.0, 2.0], [2.0, 1.0]]), tg.mean, tg.precision)
    with pytest.raises(ValueError, match="mismatch"):
        divergence("kl", np.zeros(3), np.eye(3), tg.mean, tg.precision)
    with pytest.raises(ValueError, match="positive definite"):
        monte_carlo_divergence(jax.random.PRNGKey(0), tg, mu, -Sig, "fisher")
    with pytest.raises(ValueError, match="lower triangular"):
        gradient_variance_mu(tg.precision, np.array([[1.0, 0.3], [0.0, 1.0]]))


def test_fig1_heatmap_has_a_clickable_layer_with_the_grid_values():
    from vilab.plots.divergences import fig1_heatmap

    g = fig1_grid(0.3, n=41)
    fig = fig1_heatmap(g, marked=(0.8, 0.8), click_stride=2)
    layer = next(t for t in fig.data if t.name == "grid points")
    ia = np.searchsorted(g["a"], np.asarray(layer.x))
    ib = np.searchsorted(g["b"], np.asarray(layer.y))
    assert np.all(g["pd"][ib, ia]) and len(ia) == int(g["pd"][::2, ::2].sum())  # every PD point, none outside
    cd = np.asarray(layer.customdata)
    assert np.array_equal(cd[:, 0], g["count"][ib, ia])
    assert np.allclose(cd[:, 1:4], g["score"][ib, ia]) and np.allclose(cd[:, 4:7], g["fisher"][ib, ia])
    assert fig.data[0].type == "heatmap" and np.isnan(np.asarray(fig.data[0].z, float)[~g["pd"]]).all()
    names = [t.name for t in fig.data]
    assert "score-based collapse" in names and "diagonally dominant" in names and "selected (a, b)" in names


# --------------------------------------------------------------------- the Algorithms (vilab.core protocol)


def _resume_case(alg, state, hyper_name, new_value, n=50):
    """Run n steps, change the step size with core.resume, run n more; and the same run in a Python
    loop over alg.step that switches at step n. The two must agree."""
    from vilab import core

    key = jax.random.PRNGKey(5)
    first = core.run(alg, key, state, n)
    both = core.resume(alg, first, n, hyper={hyper_name: new_value})
    s, k, mus, step = state, key, [state.mu], jax.jit(alg.step)
    for t in range(2 * n):
        if t == n:
            s = core.set_hyper(s, **{hyper_name: new_value})
        k, sub = jax.random.split(k)
        s, _ = step(sub, s, None)
        mus.append(s.mu)
    return both, np.asarray(mus), s


def test_sgd_resume_with_a_new_learning_rate_equals_a_run_that_switched():
    from vilab.divergences import stochastic as sto

    tg = gaussian_target(np.array([1.0, -1.0]), precision=precision_2d(0.6))
    alg = sto.algorithm(tg, "sdb", batch_size=10, step="rmsprop")
    state = alg.init(jax.random.PRNGKey(3), learning_rate=0.05, window=20)
    both, mus, final = _resume_case(alg, state, "learning_rate", 0.005)
    assert both.status == "max_steps" and both.n_steps == 100 and np.array_equal(both.iterations, np.arange(101))
    np.testing.assert_allclose(both.mean, mus, rtol=0, atol=1e-12)
    np.testing.assert_allclose(both.state.Ts, final.Ts, rtol=0, atol=1e-12)
    assert np.all(both.step_sizes[:50] == 0.05) and np.all(both.step_sizes[50:] == 0.005)
    assert both.info["effective_step_ratio"].shape == (100,) and both.settings["resumed_at"] == [50]
    # the switch matters: a run that kept 0.05 ends elsewhere
    from vilab import core

    same = core.run(alg, jax.random.PRNGKey(5), state, 100)
    assert np.abs(same.mean[-1] - both.mean[-1]).max() > 1e-4


def test_bam_resume_with_a_new_lr_scale_equals_a_run_that_switched():
    from vilab.divergences import stochastic as sto

    tg = gaussian_target(np.array([1.0, -1.0]), precision=precision_2d(0.9))
    alg = sto.bam(tg, batch_size=4)
    state = alg.init(jax.random.PRNGKey(2), lr_scale=2.0, window=7)
    both, mus, final = _resume_case(alg, state, "lr_scale", 0.5)
    assert both.status == "max_steps" and both.n_steps == 100
    np.testing.assert_allclose(both.mean, mus, rtol=0, atol=1e-12)
    np.testing.assert_allclose(both.cov[-1], final.Sigma, rtol=0, atol=1e-12)
    t = np.arange(1, 101)
    np.testing.assert_allclose(both.step_sizes, np.where(t <= 50, 2.0, 0.5) / t, rtol=1e-15)


def test_run_sgd_is_core_run_with_the_window_stream():
    """run_sgd and run_bam are core.run of the Algorithms: same rows, whatever the window or chunking;
    the draws depend on the key only (a new key gives a new run, the same key the same run)."""
    from vilab import core
    from vilab.divergences import stochastic as sto

    tg = gaussian_target(np.array([1.0, -1.0]), precision=precision_2d(0.9))
    key = jax.random.PRNGKey(11)
    tr = run_sgd(tg, "fdb", key=key, n_iter=300, window=100, batch_size=5)
    alg = sto.algorithm(tg, "fdb", batch_size=5)
    ref = core.run(alg, key, alg.init(key, window=100), 300, record_every=100)
    assert np.array_equal(tr.mean, ref.mean) and np.array_equal(tr.cov, ref.cov)
    assert np.array_equal(tr.iterations, [0, 100, 200, 300]) and tr.extra["elbo"].shape == (3,)
    np.testing.assert_allclose(tr.extra["elbo"], [np.mean(tr.info["elbo"][a:a + 100]) for a in (0, 100, 200)])
    assert np.array_equal(tr.extra["elbo_iterations"], [100, 200, 300]) and tr.extra["window_seconds"].shape == (3,)
    again = run_sgd(tg, "fdb", key=key, n_iter=300, window=100, batch_size=5)
    other = run_sgd(tg, "fdb", key=jax.random.PRNGKey(12), n_iter=300, window=100, batch_size=5)
    assert np.array_equal(again.mean, tr.mean) and not np.allclose(other.mean, tr.mean)
    b = run_bam(tg, key=key, n_iter=20, batch_size=5, window=10, history=False)
    alg_b = sto.bam(tg, batch_size=5)
    ref_b = core.run(alg_b, key, alg_b.init(key, window=10), 20, record_every=10)
    assert np.array_equal(b.mean, ref_b.mean) and np.array_equal(b.iterations, [0, 10, 20])
    assert sto.algorithm(tg, "fdb", batch_size=5) is alg and sto.bam(tg, batch_size=5) is alg_b  # memoized


def test_statuses_of_the_stochastic_runs():
    """The shared vocabulary: max_steps, converged (the paper's slope rule), stopped, max_time,
    diverged: <reason>; non-Gaussian targets report minus the window-averaged ELBO."""
    tg = gaussian_target(np.array([1.0, -1.0]), precision=precision_2d(0.6))
    assert run_sgd(tg, "kl", key=K0, n_iter=200, window=100).status == "max_steps"
    stopped = run_sgd(tg, "kl", key=K0, n_iter=400, window=100, should_stop=lambda: True)
    assert stopped.status == "stopped" and stopped.n_steps == 100
    timed = run_bam(tg, key=K0, n_iter=40, batch_size=5, window=10, max_time=1e-9)  # spent after the first chunk
    assert timed.status == "max_time" and timed.n_steps == 10
    conv = run_sgd(student_t(5), "sdb", key=K0, n_iter=20_000, window=200, batch_size=10, tol=0.01)
    assert conv.status == "converged" and conv.n_steps < 20_000 and conv.n_steps % 200 == 0
    el = conv.extra["elbo"]
    assert len(el) >= 5 and np.polyfit(np.arange(5.0), el[-5:], 1)[0] < 0.01
    np.testing.assert_allclose(conv.objective[1:], -el)  # rows at the window ends
    sing = run_bam(tg, key=K0, n_iter=5, batch_size=5, window=5, lr_scale=1e300)
    assert sing.status.startswith("diverged: ") and np.all(np.isfinite(sing.cov))
