"""Tests of vilab.hierarchical: data, block-structured targets, sparse factors, Thm 4, Chen's sparse gradients."""

import importlib.util
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import vilab  # noqa: F401
from vilab import core
from vilab.family import natgrad
from vilab.divergences import stochastic as sto
from vilab.gradients.expectations import gaussian_cubature5
from vilab.family import block as fam
from vilab.hierarchical.data import load_epilepsy, load_exchange_returns, load_toenail
from vilab.hierarchical.fit import (METHODS, algorithm, available_methods, chen_fdb_grad_T, chen_fdb_grad_mu,
                                    chen_kld_grads, chen_sdb_grads, final_elbo, final_q, fit, sample_q, start_state,
                                    validity_code)
from vilab.targets.metrics import m_star, mmd2_unbiased, mode_error, sd_ratio
from vilab.hierarchical.models import (_glmm_model, epilepsy_model, get_model, hessian_blocks, sparsity_patterns,
                                      sv_model)
from vilab.targets.reference import ASSET_DIR, load_reference, noncentred_state_space

from .reference import fisher as fisher_ref

ROOT = Path(__file__).resolve().parents[1]
KEY = jax.random.PRNGKey(0)


def _random_factor(st, rng, scale=0.2):
    d = st.d
    M = fam.dense_mask(st)
    Td = np.where(M, rng.normal(0, scale, (d, d)), 0.0)
    np.fill_diagonal(Td, 1.0 + rng.random(d))
    return Td, fam.from_dense(Td, st)


# ------------------------------------------------------------------------------------------- data
def test_epilepsy_sizes_and_preprocessing():
    e = load_epilepsy()
    assert e.n_subjects == 59 and e.n_obs == 236
    assert np.all(np.bincount(e.subject) == 4)
    assert set(np.round(e.visit, 1)) == {-0.3, -0.1, 0.1, 0.3}
    assert e.v4.sum() == 59 and set(e.trt) == {0.0, 1.0}
    assert abs(e.age.reshape(59, 4)[:, 0].mean()) < 1e-12          # log(age) centred over patients
    assert e.y.sum() == 1948                                       # Thall & Vail total seizure count


def test_exchange_returns_sizes():
    y = load_exchange_returns("GBP")
    assert y.shape == (945,) and abs(y.mean()) < 1e-12
    assert load_exchange_returns("DEM").shape == (1866,)
    with pytest.raises(ValueError):
        load_exchange_returns("JPY")


def test_model_dimensions():
    assert get_model("epi1").dim == 66 and get_model("epi2").dim == 127 and get_model("sv_gbp").dim == 948
    assert get_model("toenail").dim == 294 + 5  # Chen et al.'s d = n r + p + r(r+1)/2 = 299
    with pytest.raises(ValueError):
        get_model("hers")
    with pytest.raises(ValueError):
        epilepsy_model("III")


def test_toenail_data_and_log_density_against_a_direct_computation():
    import pandas as pd

    t = load_toenail()
    assert (t.n_subjects, t.n_obs, int(t.y.sum())) == (294, 1908, 408)  # vilab/data/SOURCES.md
    assert np.bincount(t.subject).min() == 1 and np.bincount(t.subject).max() == 7
    m = get_model("toenail")
    assert m.info["n_obs"] == 1908 and m.info["family"] == "bernoulli"
    th = np.random.default_rng(0).normal(0, 0.3, m.dim)
    # straight from the csv, without the padding: logit p = b1 + b2 Trt + b3 t + b4 Trt t + theta_i
    df = pd.read_csv(ROOT / "vilab" / "data" / "toenail.csv")
    subj = np.unique(df["patientID"], return_inverse=True)[1]
    y = (df["outcome"] == "moderate or severe").to_numpy(float)
    trt, time = (df["treatment"] == "terbinafine").to_numpy(float), df["time"].to_numpy(float)
    b, beta, zeta = th[:294], th[294:298], th[298]
    eta = beta[0] + beta[1] * trt + beta[2] * time + beta[3] * trt * time + b[subj]
    direct = ((y * eta - np.logaddexp(0, eta)).sum()
              + (zeta - 0.5 * (np.exp(zeta) * b) ** 2 - 0.5 * np.log(2 * np.pi)).sum()
              - 0.5 * (th[294:] ** 2).sum() / 100 - 2.5 * np.log(2 * np.pi * 100))
    assert float(m.log_density(jnp.asarray(th))) == pytest.approx(direct, rel=1e-12)
    assert m.paper_constant == pytest.approx(2.5 * np.log(2 * np.pi * 100))


def test_bernoulli_glmm_rejects_counts_and_unknown_families():
    X, Z = np.ones((2, 3, 1)), np.ones((2, 3, 1))
    with pytest.raises(ValueError, match="0 or 1"):
        _glmm_model("x", np.full((2, 3), 2.0), X, Z, ["b0", "zeta"], "b", family="bernoulli")
    with pytest.raises(ValueError, match="family"):
        _glmm_model("x", np.zeros((2, 3)), X, Z, ["b0", "zeta"], "b", family="gamma")


# ------------------------------------------------------------------------------ block Hessians
@pytest.mark.parametrize("model", [epilepsy_model("I", 3), epilepsy_model("II", 3), sv_model("GBP", 7), "toenail"],
                         ids=["epi1", "epi2", "sv", "toenail"])
def test_block_hessian_equals_dense_autodiff(model):
    model = get_model(model) if isinstance(model, str) else model
    th = jnp.asarray(np.random.default_rng(0).normal(0, 0.3, model.dim))
    dense = np.asarray(jax.hessian(model.log_density)(th))
    assert np.allclose(hessian_blocks(model, th).to_dense(), dense, atol=1e-10)


def test_sv_gradient_matches_chen_supplement():
    """Chen, Nott & Tan Supp. S5: grad wrt b_t (1 < t < n) and lambda."""
    m = sv_model("GBP", 8)
    rng = np.random.default_rng(1)
    th = rng.normal(0, 0.5, m.dim)
    b, (al, lam, psi) = th[:8], th[8:]
    y = np.asarray(m.data[0])
    phi, s = 1 / (1 + np.exp(-psi)), np.exp(al)
    g = np.asarray(jax.grad(m.log_density)(jnp.asarray(th)))
    t = 3
    gt = phi * (b[t + 1] - phi * b[t]) - (b[t] - phi * b[t - 1]) - s / 2 + s / 2 * y[t] ** 2 * np.exp(-lam - s * b[t])
    glam = -8 / 2 + 0.5 * np.sum(y**2 * np.exp(-lam - s * b)) - lam / 10
    assert np.isclose(g[t], gt) and np.isclose(g[9], glam)


# ------------------------------------------------------------------------------ sparse factors
@pytest.mark.parametrize("st", [fam.Structure(4, 2, 3, 0), fam.Structure(9, 1, 3, 1)], ids=["arrow", "banded"])
def test_factor_operations_match_dense(st):
    rng = np.random.default_rng(2)
    Td, F = _random_factor(st, rng)
    w = rng.normal(size=st.d)
    assert np.allclose(fam.solve_T(F, jnp.asarray(w), st), np.linalg.solve(Td, w))
    assert np.allclose(fam.solve_Tt(F, jnp.asarray(w), st), np.linalg.solve(Td.T, w))
    assert np.allclose(fam.matvec_T(F, jnp.asarray(w), st), Td @ w)
    assert np.allclose(fam.matvec_Tt(F, jnp.asarray(w), st), Td.T @ w)
    assert np.isclose(fam.log_abs_det(F), np.linalg.slogdet(Td)[1])
    v = fam.pack(F, st)
    assert v.shape == (fam.n_free(st),) == (fam.dense_mask(st).sum(),)
    assert np.allclose(fam.to_dense(fam.unpack(v, st), st), Td)
    assert np.allclose(np.asarray(v)[fam.diag_positions(st)], np.sort(np.diag(Td))[np.argsort(np.argsort(np.diag(Td)))])
    p, q = rng.normal(size=st.d), rng.normal(size=st.d)
    M = fam.dense_mask(st)
    assert np.allclose(fam.to_dense(fam.mask_outer(jnp.asarray(p), jnp.asarray(q), st), st),
                       np.where(M, np.outer(p, q), 0))
    assert np.allclose(fam.marginal_sd(F, st), np.sqrt(np.diag(np.linalg.inv(Td @ Td.T))))


def test_banded_pattern_is_chen_sparse_pattern():
    assert np.array_equal(fam.dense_mask(fam.Structure(6, 1, 3, 1)), sto.sparse_pattern(6, 1, 1, 3))
    assert np.array_equal(fam.dense_mask(fam.Structure(4, 2, 3, 0)), natgrad.arrow_mask((2,) * 4, 3) != 0)


def _alg2s_gradient(model, rng):
    """A random factor on the model's pattern and the Euclidean gradient estimate of Alg. 2S at a draw from q."""
    st = fam.structure_of(model)
    Td, F = _random_factor(st, rng)
    mu = rng.normal(0, 0.1, st.d)
    z = rng.normal(size=st.d)
    x = np.linalg.solve(Td.T, z)                       # theta - mu = T^-T z
    g = np.asarray(model.target.grad(jnp.asarray(mu + x)))
    v = np.linalg.solve(Td, g) + z                     # T^-1 grad h
    gmu = g + Td @ z                                   # grad_theta h
    E = np.where(fam.dense_mask(st), -np.outer(x, v), 0.0)  # Tan Thm 2, masked
    return st, Td, F, mu, gmu, E


@pytest.mark.parametrize("variant", ["I", "II"])
def test_theorem4_blocks_equal_dense_formula_and_fisher_n3(variant):
    """Tan (2025) Thm 4 by blocks == vilab.family.natgrad's dense formula == brute-force Fisher solve (n = 3 patients)."""
    m = epilepsy_model(variant, 3)
    st, Td, F, mu, gmu, E = _alg2s_gradient(m, np.random.default_rng(3))
    sizes = (st.r,) * st.n
    nm, NG = fam.natural_grad_arrow(F, jnp.asarray(gmu), fam.from_dense(E, st), st)
    nm2, NG2 = natgrad.natural_grad_chol_prec_arrow(jnp.asarray(mu), jnp.asarray(Td), jnp.asarray(gmu),
                                                   jnp.asarray(E), sizes, st.g)
    assert np.allclose(fam.to_dense(NG, st), NG2, atol=1e-10) and np.allclose(nm, nm2, atol=1e-10)
    kw = dict(local_sizes=sizes, global_size=st.g)
    Fish = fisher_ref.fisher_matrix("arrow_chol_prec", mu, Td, **kw)
    flat = fisher_ref.flatten_params("arrow_chol_prec", gmu, E, **kw)
    ng_bf = np.linalg.solve(Fish, np.asarray(flat))
    ours = fisher_ref.flatten_params("arrow_chol_prec", np.asarray(nm), fam.to_dense(NG, st), **kw)
    assert np.allclose(ng_bf, ours, rtol=1e-6, atol=1e-6)
    # the column-Fisher form (any pattern) is the same natural gradient
    nm3, NG3 = fam.natural_grad_columns(F, jnp.asarray(gmu), fam.from_dense(E, st), st)
    assert np.allclose(fam.to_dense(NG3, st), fam.to_dense(NG, st), atol=1e-9) and np.allclose(nm3, nm, atol=1e-9)


def test_banded_natural_gradient_equals_brute_force_fisher():
    """Column-Fisher natural gradient of the banded factor == F^-1 g with F by autodiff + exact cubature (SV, n = 3)."""
    m = sv_model("GBP", 3)
    st, Td, F, mu, gmu, E = _alg2s_gradient(m, np.random.default_rng(7))
    d = st.d
    rows, cols = np.nonzero(fam.dense_mask(st).T)[::-1]  # free entries, column by column

    def logq(lam, th):  # log N(th; mu, (T T^T)^-1) up to a constant, T on the banded pattern
        T = jnp.zeros((d, d)).at[rows, cols].set(lam[d:])
        r = T.T @ (th - lam[:d])
        return jnp.sum(jnp.log(jnp.abs(jnp.diag(T)))) - 0.5 * r @ r

    lam0 = jnp.asarray(np.concatenate([mu, Td[rows, cols]]))
    grid, w = gaussian_cubature5(d)  # exact for the degree-4 integrand s s^T
    pts = mu + grid @ np.linalg.cholesky(np.linalg.inv(Td @ Td.T)).T
    S = np.asarray(jax.vmap(jax.grad(logq), in_axes=(None, 0))(lam0, jnp.asarray(pts)))
    Fish = (S * w[:, None]).T @ S
    ng_bf = np.linalg.solve(Fish, np.concatenate([gmu, E[rows, cols]]))
    nm, NG = fam.natural_grad_columns(F, jnp.asarray(gmu), fam.from_dense(E, st), st)
    ours = np.concatenate([np.asarray(nm), fam.to_dense(NG, st)[rows, cols]])
    assert np.allclose(ng_bf, ours, rtol=1e-7, atol=1e-8)
    # not the masked dense natural gradient (Tan Sec. 7 intro: sparsity is not masking)
    _, NGd = natgrad.natural_grad_chol_prec(jnp.asarray(mu), jnp.asarray(Td), jnp.asarray(gmu), jnp.asarray(E))
    assert not np.allclose(np.asarray(NGd)[rows, cols], fam.to_dense(NG, st)[rows, cols], atol=1e-3)


@pytest.mark.parametrize("st", [fam.Structure(4, 2, 3, 0), fam.Structure(9, 1, 3, 1)], ids=["arrow", "banded"])
def test_sigma_on_pattern_equals_dense_inverse(st):
    Td, F = _random_factor(st, np.random.default_rng(8))
    Sig = np.linalg.inv(Td @ Td.T)
    Sd, Ssub, SLG, SGG = fam.sigma_on_pattern(F, st)
    n, r = st.n, st.r
    blk = lambda i, j: Sig[i * r:(i + 1) * r, j * r:(j + 1) * r]  # noqa: E731
    assert all(np.allclose(Sd[i], blk(i, i)) for i in range(n))
    assert all(np.allclose(SLG[i], Sig[i * r:(i + 1) * r, n * r:]) for i in range(n))
    assert np.allclose(SGG, Sig[n * r:, n * r:])
    if st.ell == 1:
        assert all(np.allclose(Ssub[i], blk(i + 1, i)) for i in range(n - 1))


@pytest.mark.parametrize("model", [epilepsy_model("II", 3), sv_model("GBP", 6)], ids=["arrow", "banded"])
def test_chen_sparse_gradients_equal_dense(model):
    """Low-rank masked gradients of Chen, Nott & Tan Tables 4-5 == vilab.divergences.stochastic (dense)."""
    st = fam.structure_of(model)
    M = fam.dense_mask(st)
    rng = np.random.default_rng(4)
    Td, F = _random_factor(st, rng)
    T = jnp.asarray(Td)
    mu = jnp.asarray(rng.normal(0, 0.1, st.d))
    score = jax.grad(model.log_density)
    z = jnp.asarray(rng.normal(size=st.d))
    a, b = chen_kld_grads(mu, F, st, z, score), sto.grad_kl(score, mu, T, z)
    assert np.allclose(a[0], b[0]) and np.allclose(fam.to_dense(a[1], st), np.where(M, b[1], 0))
    thetas = jnp.asarray(np.asarray(mu) + np.linalg.solve(Td.T, rng.normal(size=(st.d, 5))).T)
    gs = jax.vmap(score)(thetas)
    bs = sto.batch_statistics(thetas, gs)
    a, b = chen_sdb_grads(mu, F, st, thetas, gs), sto.grad_sdb(mu, T, bs)
    assert np.allclose(a[0], b[0]) and np.allclose(fam.to_dense(a[1], st), np.where(M, b[1], 0), atol=1e-9)
    assert np.allclose(chen_fdb_grad_mu(mu, F, st, thetas, gs), sto.grad_fdb_mu(mu, T, bs))
    mu2 = mu + 0.01
    assert np.allclose(fam.to_dense(chen_fdb_grad_T(mu, mu2, F, st, thetas, gs), st),
                       np.where(M, sto.grad_fdb_T(mu, mu2, T, bs), 0), atol=1e-9)
    # with W at the current mu (what fit uses) the T-gradients are those of S_hat and F_hat themselves
    gS = jax.grad(lambda TT: sto.batch_objectives(mu, TT, thetas, gs)[0])(T)
    gF = jax.grad(lambda TT: sto.batch_objectives(mu, TT, thetas, gs)[1])(T)
    assert np.allclose(fam.to_dense(chen_sdb_grads(mu, F, st, thetas, gs)[1], st), np.where(M, gS, 0), rtol=1e-8,
                       atol=1e-8)
    assert np.allclose(fam.to_dense(chen_fdb_grad_T(mu, mu, F, st, thetas, gs), st), np.where(M, gF, 0),
                       rtol=1e-8, atol=1e-6)


# ------------------------------------------------------------------------------------- metrics
def test_metrics():
    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(400, 3)), rng.normal(size=(400, 3))
    sd = np.ones(3)
    assert abs(mmd2_unbiased(X, Y, sd)) < 0.01
    assert mmd2_unbiased(X + 1.0, Y, sd) > 0.1
    same = m_star(lambda m, k: np.asarray(jax.random.normal(k, (m, 3))), Y, sd, n_rep=3, key=KEY)
    shifted = m_star(lambda m, k: 1.0 + np.asarray(jax.random.normal(k, (m, 3))), Y, sd, n_rep=3, key=KEY)
    assert same[0] > shifted[0] + 2
    me = mode_error([1.0, 2.0], [0.0, 0.0], [1.0, 4.0])
    assert np.isclose(me[0], 0.75) and np.allclose(me[2], [1.0, 0.5])
    assert np.isclose(sd_ratio([1.0, 2.0], [2.0, 2.0])[0], 0.75)
    with pytest.raises(ValueError):
        mmd2_unbiased(X[:10], Y[:11], sd)


# ----------------------------------------------------------------------------------------- fits
@pytest.mark.slow
def test_fit_small_runs_and_bad_input():
    m = epilepsy_model("I", 4)
    f = fit(m, "gva-snngm", key=KEY, n_iter=600, alpha=0.01, window=200)
    el = f.extra["elbo"][1:]  # window averages (row 0 is the start)
    assert f.status == "max_steps" and el.shape == (3,) and np.all(np.isfinite(f.mean[-1]))
    assert f.iterations.tolist() == [0, 200, 400, 600] and f.info["elbo"].shape == (600,)
    assert np.isclose(el[-1], f.info["elbo"][400:].mean()) and np.allclose(f.objective[1:], -el)
    assert el[-1] > el[0]
    lb, se = final_elbo(m, f, key=KEY, n_draws=200)
    assert np.isfinite(lb) and se > 0
    again = fit(m, "gva-snngm", key=KEY, n_iter=600, alpha=0.01, window=200)  # the cached compiled program
    assert np.array_equal(again.mean, f.mean) and np.array_equal(again.extra["elbo"], f.extra["elbo"], equal_nan=True)
    sv = sv_model("GBP", 10)
    for bad in [dict(method="nope"), dict(method="kld", n_iter=0), dict(method="kld", init_scale=0.0),
                dict(method="gva-adam", alpha=-1.0), dict(method="sdb", batch=1)]:
        with pytest.raises(ValueError):
            fit(m, **{"n_iter": 10, "key": KEY, **bad})
    with pytest.raises(ValueError):
        fit(sv, "gva-vogn", key=KEY, n_iter=10)
    assert available_methods(m) == {k: "" for k in METHODS}
    why = available_methods(get_model("sv_gbp"))
    assert {k for k, v in why.items() if v} == {"gva-vogn", "fdr", "sdr", "bam"}


@pytest.mark.slow
def test_fit_diverging_reports_status():
    m = epilepsy_model("I", 4)
    f = fit(m, "gva-adam", key=KEY, n_iter=400, alpha=1e4, window=100)
    assert f.status.startswith("diverged: ") and np.all(np.isfinite(f.mean)) and np.all(np.isfinite(f.sd))
    assert f.n_steps == len(f.info["elbo"]) < 400


@pytest.mark.slow
@pytest.mark.parametrize("method", ["kld", "gva-snngm"])
def test_sv_short_runs_improve(method):
    """Chen's KLD and Tan's SNNGM with the banded natural gradient on the first 60 returns."""
    m = sv_model("GBP", 60)
    f = fit(m, method, key=KEY, n_iter=2000, window=500, alpha=3e-3 if method == "gva-snngm" else None)
    el = f.extra["elbo"][1:]
    assert f.status == "max_steps" and el[-1] > el[0] and np.all(np.isfinite(f.sd[-1]))



def _manual(alg, key, state, n, switch=None):
    """The runner's key schedule by hand (key, sub = split(key) each step), optionally with
    state.hyper changed at step switch[0]."""
    step = jax.jit(alg.step)
    for i in range(n):
        if switch is not None and i == switch[0]:
            state = core.set_hyper(state, **switch[1])
        key, sub = jax.random.split(key)
        state, _ = step(sub, state, None)
    return state


@pytest.mark.parametrize("method", ["gva-snngm", "gva-adam", "gva-vogn"])
def test_resume_with_a_new_step_size_equals_a_run_that_switched(method):
    """Tan's methods: k steps, a new alpha through vilab.core.resume, k more == one run switching alpha at k."""
    m = epilepsy_model("II", 3)
    alg = algorithm(m, method)
    s0 = start_state(m, method, KEY, alpha=0.002, window=20)
    first = core.run(alg, KEY, s0, 40, record_every=20)
    both = core.resume(alg, first, 40, hyper={"alpha": 0.01})
    ref = _manual(alg, KEY, s0, 80, switch=(40, {"alpha": 0.01}))
    row = alg.observe(ref)
    np.testing.assert_allclose(both.mean[-1], row["mean"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(both.extra["factor"][-1], row["factor"], rtol=1e-12, atol=1e-12)
    assert not np.allclose(first.extra["factor"][-1], row["factor"])  # it moved after the switch
    assert both.iterations.tolist() == [0, 20, 40, 60, 80] and both.settings["resumed_at"] == [40]
    assert np.all(both.step_sizes[:40] == 0.002) and np.all(both.step_sizes[40:] == 0.01)
    # the window average of the last row is that of the last 20 single-draw estimates
    assert np.isclose(both.extra["elbo"][-1], both.info["elbo"][60:].mean())
    with pytest.raises(ValueError):
        core.resume(alg, first, 10, hyper={"rho": 0.1})  # not a setting of this method


def test_chen_resume_and_host_chunks_equal_one_run():
    """KLD (Adadelta: no run-time settings): 30 + 30 steps == 60 steps in one compiled call == host chunks."""
    m = sv_model("GBP", 8)
    alg = algorithm(m, "kld")
    s0 = start_state(m, "kld", KEY, window=10)
    one = core.run(alg, KEY, s0, 60, record_every=10)
    two = core.resume(alg, core.run(alg, KEY, s0, 30, record_every=10), 30)
    chunked = core.run(alg, KEY, s0, 60, record_every=10, chunk_size=10)
    for tr in (two, chunked):
        np.testing.assert_allclose(tr.mean, one.mean, rtol=0, atol=1e-13)
        np.testing.assert_allclose(tr.extra["factor"], one.extra["factor"], rtol=0, atol=1e-13)
        np.testing.assert_allclose(tr.extra["elbo"], one.extra["elbo"], rtol=0, atol=1e-11, equal_nan=True)
    np.testing.assert_allclose(final_q(one)[0], _manual(alg, KEY, s0, 60).params[0], rtol=0, atol=1e-13)
    with pytest.raises(ValueError):
        core.resume(alg, one, 10, hyper={"alpha": 0.1})  # Adadelta has no step size to change


@pytest.mark.parametrize("method", ["gva-pga", "gva-nadam", "sdb", "fdb"])
def test_fit_trace_layout_and_status_vocabulary(method):
    """Every fit returns a vilab.core.Trace: rows per window, the status vocabulary, draws from the last q."""
    m = epilepsy_model("II", 3)
    f = fit(m, method, key=KEY, n_iter=90, window=30)
    assert isinstance(f, core.Trace) and f.status == "max_steps"
    assert f.iterations.tolist() == [0, 30, 60, 90] and np.isnan(f.extra["elbo"][0])
    assert f.extra["factor"].shape == (4, fam.n_free(fam.structure_of(m)))
    assert np.all(np.diff(f.extra["seconds"]) >= 0) and f.settings["structure"] == fam.structure_of(m)
    mu, F, st = final_q(f)
    np.testing.assert_allclose(f.sd[-1], fam.marginal_sd(F, st), rtol=1e-12)
    X = sample_q(f, 4000, KEY)
    assert X.shape == (4000, m.dim) and np.allclose(X.mean(0), mu, atol=5 * f.sd[-1].max() / np.sqrt(4000) + 1e-12)
    assert np.array_equal(sample_q(f, 5, KEY), sample_q(f, 5, KEY))
    stopped = fit(m, method, key=KEY, n_iter=90, window=10, tol=1e9)  # any slope is below it: the rule fires
    assert stopped.status == "converged" and stopped.n_steps == 50
    timed = fit(m, method, key=KEY, n_iter=10_000, window=10, max_seconds=1e-9)
    assert timed.status == "max_time" and timed.n_steps == 10
    for tr in (f, stopped, timed):
        assert tr.status in core.STATUSES or tr.status.startswith("diverged: ")


@pytest.mark.slow
@pytest.mark.parametrize("method", ["fdr", "bam"])
def test_dense_methods_return_the_same_trace_layout(method):
    """FDr and BaM (vilab.divergences.stochastic, dense factor) in this module's Trace layout."""
    m = epilepsy_model("I", 3)
    f = fit(m, method, key=KEY, n_iter=100, window=50, batch=20 if method == "bam" else None)
    assert isinstance(f, core.Trace) and (f.status == "max_steps" or f.diverged)
    mu, F, st = final_q(f)
    T = fam.to_dense(F, st)
    assert np.allclose(np.linalg.inv(T @ T.T).diagonal(), f.sd[-1] ** 2, rtol=1e-8)
    assert f.extra["elbo"].shape == f.extra["seconds"].shape == (f.n_rows,) and sample_q(f, 3, KEY).shape == (3, m.dim)


def test_validity_codes():
    st = fam.Structure(3, 2, 2, 0)
    F = fam.identity_factor(st)
    mu = jnp.zeros(st.d)
    assert int(validity_code(mu, F, 1.0)) == 0
    assert int(validity_code(mu, F, jnp.nan)) == core.NONFINITE
    assert int(validity_code(mu.at[0].set(jnp.inf), F, 1.0)) == core.NONFINITE
    assert int(validity_code(mu, F._replace(gg=F.gg.at[1, 1].set(0.0)), 1.0)) == 5
    assert core.CODES[5][0].startswith("diverged: ")
    with pytest.raises(ValueError):
        final_q(core.Trace(mean=np.zeros((1, 2)), cov=None, var=np.ones((1, 2)), objective=np.zeros(1),
                           step_sizes=np.zeros(0), status="max_steps"))


def test_sparsity_patterns_nest():
    """T's pattern and the Hessian's lie inside the precision's (Chen et al. Sec. 4); Hessian from its blocks."""
    for m in (epilepsy_model("II", 3), sv_model("GBP", 7)):
        th = np.random.default_rng(9).normal(0, 0.3, m.dim)
        P = sparsity_patterns(m, th, n_show=2)
        k = 2 * m.local_size + m.global_size
        assert all(v.shape == (k, k) for v in P.values())
        Om = P["precision T Tᵀ"]
        assert not np.any(P["T (free entries)"] & ~Om) and not np.any(P["Hessian of log p"] & ~Om)
        full = np.abs(np.asarray(jax.hessian(m.log_density)(jnp.asarray(th)))) > 0
        idx = np.r_[0:2 * m.local_size, m.n_local * m.local_size:m.dim]
        assert np.array_equal(P["Hessian of log p"], full[np.ix_(idx, idx)])


def test_noncentred_state_space_is_the_same_posterior():
    """log p_x(x) = log p(b(x), theta_G) + log |det db/de| (Jacobian by autodiff) for the NUTS coordinates."""
    m = sv_model("GBP", 6)
    logdensity, to_theta = noncentred_state_space(m)
    x = jnp.asarray(np.random.default_rng(10).normal(0, 0.5, m.dim))
    J = np.asarray(jax.jacfwd(to_theta)(x))
    assert np.isclose(float(logdensity(x)), float(m.log_density(to_theta(x))) + np.linalg.slogdet(J)[1])
    th = np.asarray(to_theta(x))
    phi = 1 / (1 + np.exp(-th[-1]))
    e = np.r_[np.sqrt(1 - phi**2) * th[0], th[1:6] - phi * th[:5]]
    assert np.allclose(e, np.asarray(x[:6]))
    with pytest.raises(ValueError):
        noncentred_state_space(epilepsy_model("I", 3))


# -------------------------------------------------------------------------------------- assets
def _script_settings():
    path = ROOT / "scripts" / "hierarchical_reference.py"
    spec = importlib.util.spec_from_file_location("hierarchical_reference", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.SETTINGS, mod.SEED


def test_reference_assets_small_and_consistent_with_the_script():
    """The cached NUTS references were made by scripts/hierarchical_reference.py with its SETTINGS, and converged."""
    total = sum(p.stat().st_size for p in ASSET_DIR.iterdir())
    assert total < 7e6  # four NUTS references, 1000 float32 draws each
    settings, seed = _script_settings()
    assert set(settings) == {"epi1", "epi2", "sv_gbp", "toenail"}
    for key, s in settings.items():
        ref = load_reference(key)
        m = get_model(key)
        js = json.loads((ASSET_DIR / f"{key}.json").read_text())
        assert {k: js[k] for k in s} == s and js["seed"] == seed and js["dim"] == m.dim
        assert js["names"] == list(m.global_names) and len(js["chains"]) == s["n_chains"]
        assert js["diagnostics"]["rhat_max"] < 1.02 and js["diagnostics"]["ess_bulk_min"] > 400
        assert ref.mean.shape == ref.sd.shape == ref.mode.shape == (m.dim,)
        assert ref.draws.shape == (s["n_keep"], m.dim)
        assert np.all(ref.sd > 0)
        assert np.all(np.abs(ref.draws.mean(0) - ref.mean) < 0.3 * ref.sd)
    with pytest.raises(ValueError):
        load_reference("hers")


def test_a_collapsing_elbo_is_reported_as_diverged_not_converged():
    assert not sto.elbo_falling([-700.0, -699.0, -698.5, -698.4, -698.45])  # levelled off, a little noise
    assert sto.elbo_falling([-6e5, -4e5, -4.5e5, -2e6, -2.6e6]) and sto.elbo_falling([-700.0] * 4 + [np.nan])
    # batch-and-match on Toenail with Chen et al.'s B = 1000 from Sigma = I leaves the posterior; the slope rule
    # alone (slope < 0.01) would have called it converged
    f = fit(get_model("toenail"), "bam", key=core.as_key(0), n_iter=400, batch=1000, tol=0.01)
    assert f.status.startswith("diverged: the ELBO estimate fell"), f.status


def test_sparse_fits_report_a_collapsing_elbo_as_diverged():
    """KLD, SDb, FDb and Tan's optimizers stop by the same signed slope rule (plateau_rule): a run it stops while
    the ELBO's window averages fall is reported as diverged (unless_falling, applied by fit and refit)."""
    from dataclasses import replace

    from vilab.hierarchical.fit import refit, unless_falling

    m = epilepsy_model("II", 3)
    stopped = fit(m, "sdb", key=KEY, n_iter=90, window=10, tol=1e9)  # any slope is below tol: the rule fires
    assert stopped.status == "converged" and unless_falling(stopped) is stopped  # a rising ELBO stays converged
    el = np.asarray(stopped.extra["elbo"], float).copy()
    el[1:] = -700.0 * 1.5 ** np.arange(len(el) - 1)  # falling by half its size per window
    falling = replace(stopped, extra={**stopped.extra, "elbo": el})
    out = unless_falling(falling)
    assert out.status.startswith("diverged: the ELBO estimate fell from -700 to"), out.status
    assert out.n_steps == stopped.n_steps and unless_falling(out) is out
    # refit of a run cut short (max_steps) whose averages now satisfy the rule while falling: diverged, not converged
    short = replace(falling, status="max_steps")
    again = refit(m, "sdb", short, key=KEY, n_iter=200, window=10, tol=1e9)
    assert again.status.startswith("diverged: the ELBO estimate fell"), again.status
