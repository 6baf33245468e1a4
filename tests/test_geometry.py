"""The geometry pages' computations: vilab.theory.definiteness (positive-definiteness example, Monte Carlo PD loss),
vilab.theory.guarantees (Kumar Thm 1 / Lemma 1), vilab.theory.stability (thresholds), vilab.theory.discretisation (thinned runs,
VN vs SR-VN, flow times) and the plot windows of vilab.plots.trajectories."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from vilab.theory import definiteness as pd
from vilab.theory import discretisation as disc
from vilab.theory import guarantees as gu
from vilab.theory import stability as stab
from vilab.plots import trajectories as tp

from .reference import fisher as ref
from vilab.targets import gaussian_target, rotated_gaussian_2d, student_t_2d

from .conftest import random_spd


@pytest.fixture(scope="module")
def cauchy():
    return student_t_2d(1.0)


def test_single_sample_updates_reproduce_tan_sec7_table(cauchy):
    """Tan digest Sec. 7: Sigma = 10 I, theta = (3, 0); every number of the digest's table."""
    rhos = [0.1, 0.3, 0.5, 0.6, 0.9]
    out = pd.single_sample_updates(cauchy, [0, 0], 10 * np.eye(2), [3, 0], rhos)
    np.testing.assert_allclose(out["hess_logp"], np.diag([0.24, -0.30]), atol=1e-12)
    np.testing.assert_allclose(out["eig_prec"], [[0.066, 0.120], [-0.002, 0.160], [-0.070, 0.200], [-0.104, 0.220],
                                                 [-0.206, 0.280]], atol=1e-12)
    np.testing.assert_allclose(np.diagonal(out["T"], axis1=1, axis2=2),
                               [[0.2625, 0.3479], [0.1550, 0.4111], [0.0474, 0.4743], [-0.0063, 0.5060],
                                [-0.1676, 0.6008]], atol=6e-5)
    np.testing.assert_allclose(out["eig_chol"], [[0.0689, 0.121], [0.0240, 0.169], [0.0023, 0.225], [4e-5, 0.256],
                                                 [0.0281, 0.361]], rtol=3e-3, atol=6e-5)  # digest rounds to 2-3 digits
    assert np.all(out["eig_chol"] > 0)


def test_single_sample_updates_match_brute_force(cauchy, rng):
    """S_new = (1 - rho) S - rho Hs and T_new T_new^T vs the explicit Theorem 1(ii) step."""
    Sigma = random_spd(rng, 2, cond=5.0) * 3
    theta = rng.normal(size=2) * 2
    out = pd.single_sample_updates(cauchy, [0.1, -0.2], Sigma, theta, [0.0, 0.37])
    S = np.linalg.inv(Sigma)
    Hs = np.asarray(cauchy.hess(theta))
    np.testing.assert_allclose(out["P_prec"][1], 0.63 * S - 0.37 * Hs, atol=1e-12)
    np.testing.assert_allclose(out["P_prec"][0], S, atol=1e-12)
    T = np.linalg.cholesky(S)
    H = -np.eye(2) - np.linalg.solve(T, np.linalg.solve(T, Hs).T).T  # -I - T^-1 Hs T^-T
    bb = np.tril(H) - 0.5 * np.diag(np.diag(H))
    np.testing.assert_allclose(out["T"][1], T + 0.37 * T @ bb, atol=1e-12)


def test_pd_limits_are_exact_thresholds(cauchy, rng):
    Hs = np.diag([0.24, -0.30])
    assert pd.precision_pd_limit(0.1 * np.eye(2), Hs) == pytest.approx(0.1 / 0.34)
    np.testing.assert_allclose(pd.chol_singular_steps(np.sqrt(0.1) * np.eye(2), Hs), [1 / 1.7])
    # random case: eigenvalue crosses zero exactly at the limit
    Sigma = random_spd(rng, 2) * 4
    theta = np.array([2.5, -1.0])
    H = np.asarray(cauchy.hess(theta))
    r = pd.precision_pd_limit(np.linalg.inv(Sigma), H)
    out = pd.single_sample_updates(cauchy, [0, 0], Sigma, theta, [r * 0.999, r * 1.001])
    assert out["eig_prec"][0, 0] > 0 > out["eig_prec"][1, 0]
    T = np.linalg.cholesky(np.linalg.inv(Sigma))
    for s in pd.chol_singular_steps(T, H):
        out = pd.single_sample_updates(cauchy, [0, 0], Sigma, theta, [s])
        assert abs(np.linalg.det(out["T"][0])) < 1e-10
    # a log-concave Hessian never breaks the precision update for rho <= 1
    assert pd.precision_pd_limit(np.eye(2), -np.eye(2)) == float("inf")


def test_single_sample_updates_carry_the_limits_and_the_hessian_spectrum(cauchy, rng):
    """The Positive-definiteness page's numbers come with the update: pd_limit, the singular steps of
    T and the eigenvalues of hess log p, as the stand-alone functions give them (Tan digest Sec. 7:
    limit 0.1 / 0.34 = 0.294, T singular at 1 / 1.7)."""
    out = pd.single_sample_updates(cauchy, [0, 0], 10 * np.eye(2), [3, 0], [0.3])
    assert out["pd_limit"] == pytest.approx(0.1 / 0.34, rel=1e-12)
    np.testing.assert_allclose(out["singular_steps"], [1 / 1.7], rtol=1e-12)
    np.testing.assert_allclose(out["eig_hess"], [-0.30, 0.24], atol=1e-12)
    Sigma, theta = random_spd(rng, 2) * 4, np.array([2.5, -1.0])
    out = pd.single_sample_updates(cauchy, [0, 0], Sigma, theta, [0.1])
    P, H = np.linalg.inv(Sigma), np.asarray(cauchy.hess(theta))
    assert out["pd_limit"] == pytest.approx(pd.precision_pd_limit(P, H), rel=1e-10)
    np.testing.assert_allclose(out["singular_steps"], pd.chol_singular_steps(np.linalg.cholesky(P), H), rtol=1e-10)
    np.testing.assert_allclose(out["eig_hess"], np.linalg.eigvalsh(H), atol=1e-14)
    # near the mode the Cauchy is log-concave: the precision update is PD for every step size
    out = pd.single_sample_updates(cauchy, [0, 0], np.eye(2), [0.1, 0.0], [0.5])
    assert out["pd_limit"] == float("inf") and np.all(out["eig_hess"] < 0)


@pytest.mark.slow
def test_pd_loss_fraction_cauchy_and_gaussian(cauchy):
    res = pd.pd_loss_fraction(cauchy, [0, 0], 10 * np.eye(2), 0.5, n_runs=60, n_steps=10, key=jax.random.PRNGKey(0))
    assert set(res) == set(pd.PD_RULES)
    prec = res["precision (natural parameter, Table 1 lambda)"]
    assert prec["lost PD"] > 0.5  # the precision update breaks on a Cauchy target
    for lab in ("Cholesky of precision T (Thm 1(ii))", "T with Corollary 1", "Cholesky of covariance C (Thm 1(i))"):
        assert res[lab]["lost PD"] == 0.0  # factor updates never lose PD (Tan Sec. 7)
    assert res["precision kept PD (Lin, Schmidt & Khan 2020)"]["lost PD"] == 0.0  # the retraction term
    gauss = gaussian_target(np.zeros(2), cov=np.eye(2))
    res = pd.pd_loss_fraction(gauss, [1, 1], 2 * np.eye(2), 0.5, n_runs=20, n_steps=5, key=jax.random.PRNGKey(1),
                             rules=["precision (natural parameter, Table 1 lambda)"])
    assert res["precision (natural parameter, Table 1 lambda)"] == {"lost PD": 0.0, "non-finite": 0.0}
    with pytest.raises(ValueError):
        pd.pd_loss_fraction(cauchy, [0, 0], np.eye(2), -1.0)
    with pytest.raises(ValueError):
        pd.pd_loss_fraction(cauchy, [0, 0], -np.eye(2), 0.5)
    with pytest.raises(ValueError):
        pd.pd_loss_fraction(cauchy, [0, 0], np.eye(2), 0.5, rules=["nonsense"])


def test_two_component_mixture_moments_and_curvature():
    t = pd.two_component_mixture(3.0, 1.0, 0.3)
    xs = np.linspace(-12, 12, 801)
    X, Y = np.meshgrid(xs, xs)
    P = np.exp(np.asarray(t.value_batch(np.stack([X.ravel(), Y.ravel()], 1))).reshape(X.shape))
    P /= P.sum()
    m = np.array([(P * X).sum(), (P * Y).sum()])
    np.testing.assert_allclose(m, t.mean, atol=1e-8)
    np.testing.assert_allclose((P * (X - m[0]) ** 2).sum(), t.cov[0, 0], rtol=1e-6)
    assert np.linalg.eigvalsh(np.asarray(t.hess(np.zeros(2))))[-1] > 0  # not log-concave between modes
    with pytest.raises(ValueError):
        pd.two_component_mixture(3.0, 0.0)


def test_theorem1_rates_and_bound():
    r = gu.theorem1_rates(1.2245, 0.0288)
    assert r["paper"] == pytest.approx(1.2245 * 0.0288**2 / 2)
    assert r["corrected"] == pytest.approx(1.2245 * 0.0144)
    r = gu.theorem1_rates(1.0, 4.0)  # lambda_min > 1: the printed constant is larger than the truth allows
    assert r["paper"] == 4.0 and r["corrected"] == 2.0
    np.testing.assert_allclose(gu.theorem1_bound([0, 1], 3.0, 0.5), [3.0, 3.0 * np.exp(-1.0)])
    with pytest.raises(ValueError):
        gu.theorem1_rates(0.0, 1.0)


def test_lemma1_check_counterexample_and_corrected_bound(rng):
    """Kumar digest Sec. 6.8: d = 1, V = 4 gives F_C^-1 = 2 < min{4, 8}; lambda_min/2 always holds."""
    c = gu.lemma1_check(np.array([[4.0]]))
    assert c["min_eig"] == pytest.approx(2.0) and c["paper_bound"] == 4.0 and c["corrected_bound"] == 2.0
    for _ in range(5):
        V = random_spd(rng, 3, cond=20.0) * rng.uniform(0.1, 5)
        c = gu.lemma1_check(V)
        assert c["min_eig"] >= c["corrected_bound"] * (1 - 1e-10)
        # brute force: eigenvalues of the inverse autodiff Fisher of (mu, vech C)
        C = np.linalg.cholesky(V)
        F = ref.fisher_matrix("chol_cov", np.zeros(3), C)
        assert np.linalg.eigvalsh(np.linalg.inv(F))[0] == pytest.approx(c["min_eig"], rel=1e-8)
    V = np.diag([1.375, 3.0])
    c = gu.lemma1_check(V)
    assert c["min_eig"] < c["paper_bound"]  # the printed Lemma 1 fails for lambda_min(V) > 1


def test_stability_thresholds_t2():
    A = np.array([[18.68, 16.72], [16.72, 17.24]])  # Kumar T2 posterior precision
    th = stab.stability_thresholds(A, 0.2 * np.eye(2))
    lmax = np.linalg.eigvalsh(A)[-1]
    assert th["bwgd"] == pytest.approx(1 / lmax) and th["gd-mc"] == pytest.approx(1 / lmax)
    assert th["vn"] == 1.0 and 1.0 < th["srvn"] < 2.0  # SR-VN at rho = 1 from 0.2 I converges (7 its)
    th_i = stab.stability_thresholds(A, np.eye(2))
    assert th_i["srvn"] < 0.1  # from C0 = I SR-VN needs small steps (rho >= 0.1 diverges, digest Sec. 7)
    with pytest.raises(ValueError):
        stab.stability_thresholds(-np.eye(2))


def test_bad_inputs(cauchy):
    with pytest.raises(ValueError):
        pd.single_sample_updates(cauchy, [0, 0], np.diag([1.0, -1.0]), [1, 0], [0.1])
    with pytest.raises(ValueError):
        pd.single_sample_updates(cauchy, [0, 0], np.eye(2), [1, 0], [-0.1])
    with pytest.raises(ValueError):
        pd.precision_pd_limit(-np.eye(2), np.eye(2))


def test_pd_loss_fraction_single_step_is_the_exact_threshold(cauchy):
    """With one step, a run of the precision rule loses PD exactly when rho exceeds
    precision_pd_limit at its draw theta = mu + T^-T z (the same draws as the compiled loop)."""
    import jax

    mu, Sigma, rho, n = np.array([0.5, -0.5]), 10.0 * np.eye(2), 0.3, 40
    lab = "precision (natural parameter, Table 1 lambda)"
    res = pd.pd_loss_fraction(cauchy, mu, Sigma, rho, n_runs=n, n_steps=1, key=jax.random.PRNGKey(3), rules=[lab])
    z = np.asarray(jax.random.normal(jax.random.PRNGKey(3), (n, 100, 2)))[:, 0]
    P = np.linalg.inv(Sigma)
    T = np.linalg.cholesky(P)
    lost = [pd.precision_pd_limit(P, np.asarray(cauchy.hess(mu + np.linalg.solve(T.T, zi)))) < rho for zi in z]
    assert res[lab]["lost PD"] == pytest.approx(np.mean(lost)) and 0 < np.mean(lost) < 1
    longer = pd.pd_loss_fraction(cauchy, mu, Sigma, rho, n_runs=n, n_steps=8, key=jax.random.PRNGKey(3), rules=[lab])
    assert longer[lab]["lost PD"] + longer[lab]["non-finite"] >= res[lab]["lost PD"]  # same first draws
    with pytest.raises(ValueError):
        pd.pd_loss_fraction(cauchy, mu, Sigma, rho, n_steps=101)


# ------------------------------------------------------------------------------ Kumar et al.: flows page

@pytest.fixture(scope="module")
def t2():
    from vilab.family.gaussian import CholCov
    from vilab.targets.papers import kumar_t2

    return kumar_t2(), CholCov(np.array([-2.0, 2.5]), 0.2 * np.eye(2))


@pytest.mark.slow
def test_thinned_run_equals_run_and_the_vn_closed_form(t2):
    from vilab.algorithms import run

    target, init = t2
    for name, rho, n in [("srvn", 1e-3, 3000), ("bwgd", 0.02, 400), ("srvn", 1.0, 7), ("gd-mv", 0.5 / 34.6955, 50)]:
        a = disc.thinned_run(name, target, init, rho, n, n_record=100)
        r = run(name, target, init, max(n, a.n_steps), rho)  # k is a power of two: the last block may pass n
        k = a.iterations
        assert k[0] == 0 and np.all(np.diff(k) > 0) and (a.diverged or a.n_steps >= n)
        np.testing.assert_allclose(a.mean, r.mean[k], atol=1e-13)
        np.testing.assert_allclose(a.cov, r.cov[k], atol=1e-13)
        np.testing.assert_allclose(a.objective, r.objective[k], atol=1e-12)
        assert a.diverged == r.diverged
    # Kumar digest T2: GD in (m, V) at rho = 0.5/lambda_max leaves the PD cone at its first step
    assert a.status == "diverged: covariance lost positive definiteness at step 1" and len(a.mean) == 1
    for rho in (1e-3, 0.5, 1.0):  # VN's closed form (Kumar digest Sec. 2.8) is its iteration
        a = disc.thinned_run("vn", target, init, rho, 600, n_record=60)
        b = disc.thinned_run("vn", target, init, rho, 600, n_record=60, closed_form_vn=False)
        np.testing.assert_allclose(a.mean, b.mean, atol=1e-12)
        np.testing.assert_allclose(a.cov, b.cov, atol=1e-12)
        np.testing.assert_allclose(a.objective, b.objective, atol=1e-12)
    with pytest.raises(ValueError):
        disc.thinned_run("vn", student_t_2d(3.0), init, 0.1, 10)


def test_vn_and_srvn_coincide_for_small_steps_and_differ_at_one(t2):
    """Kumar et al. Fig. 1b/c, App. B: the one-step gap is O(rho^2) with ||V_VN - V_SR||_F / rho^2 =
    0.0260 on T2 from C_0 = 0.2 I (digest Sec. 5.7); the paths at rho = 1e-5 overlap; at rho = 1 VN
    takes 1 step and SR-VN 7 to KL < 1e-8 (digest Sec. 7)."""
    target, init = t2
    gap = disc.vn_srvn_gap(target, init, np.logspace(-5, -2, 7))
    np.testing.assert_allclose(gap["gap_V"] / gap["rho"] ** 2, 0.0260, rtol=0.02)
    slope = np.polyfit(np.log(gap["rho"]), np.log(gap["gap_m"]), 1)[0]
    assert slope == pytest.approx(2.0, abs=0.01)
    a, b = (disc.thinned_run(n, target, init, 1e-5, 600_000) for n in ("vn", "srvn"))
    assert a.iterations[-1] == b.iterations[-1] >= 600_000
    assert np.abs(a.mean - b.mean).max() < 1e-4 < np.abs(a.mean[0] - a.mean[-1]).max()
    a, b = (disc.thinned_run(n, target, init, 1.0, 30) for n in ("vn", "srvn"))
    first = [int(np.flatnonzero(t.objective < 1e-8)[0]) for t in (a, b)]
    assert first == [1, 7]


def test_theorem1_report_on_t2_and_where_lemma1_fails(t2):
    """Kumar digest Sec. 6.8: on T2 the printed constant is mu = 5e-4 (lambda_min = 0.029,
    delta = 1.22) and both bounds hold; with lambda_min(V_t) > 1 the printed Lemma 1 fails."""
    from vilab.theory.flows import flow

    target, init = t2
    r = gu.theorem1_report(target, flow("natural-mv", target, init, 10.0, n_times=101))
    assert r["delta"] == pytest.approx(1.2245, abs=1e-4) and r["lam_min"] == pytest.approx(0.0288, abs=2e-4)
    assert r["rates"]["paper"] == pytest.approx(5.09e-4, rel=0.01)
    assert r["holds"] == {"paper": True, "corrected": True} and not r["lemma_fails"]
    assert r["fisher_min_eig"] >= r["lemma_corrected_bound"]
    wide = rotated_gaussian_2d(2.0, 3.0)  # Sigma = 9 R diag(1, 1/2) R^T
    from vilab.family.gaussian import CholCov

    f = flow("natural-mv", wide, CholCov(np.array([-2.0, 2.5]), 3.0 * np.eye(2)), 10.0, n_times=101)
    r = gu.theorem1_report(wide, f)
    assert r["lam_min"] > 1 and r["lemma_fails"]
    assert r["lemma_corrected_bound"] <= r["fisher_min_eig"] < r["lemma_paper_bound"]
    assert r["rates"]["paper"] == pytest.approx(2 * r["rates"]["corrected"])
    np.testing.assert_allclose(r["bounds"]["corrected"], f.objective[0] * np.exp(-2 * r["rates"]["corrected"] * f.extra["t"]))
    with pytest.raises(ValueError):
        gu.theorem1_report(student_t_2d(3.0), f)


def test_natural_kl_asymptote_is_the_e2t_slope_of_the_natural_flow(t2):
    """Kumar digest Sec. 9.4: on T2, KL_t e^{2t} tends to a constant (3.8625e3 at t = 12): the curve
    through the flow's last point above round-off meets the flow again at t = 12, and is None when
    no point is above the floor."""
    from vilab.theory.flows import flow

    target, init = t2
    f = flow("natural-mv", target, init, 14.0, n_times=141)
    ref = gu.natural_kl_asymptote(f.extra["t"], f.objective, floor=1e-300)
    assert ref[-1] == pytest.approx(f.objective[-1], rel=1e-12)
    i = int(np.argmin(np.abs(f.extra["t"] - 12.0)))
    assert f.objective[i] * np.exp(2 * f.extra["t"][i]) == pytest.approx(3.8625e3, rel=2e-3)
    assert ref[i] == pytest.approx(f.objective[i], rel=1e-2)
    np.testing.assert_allclose(np.diff(np.log(ref)) / np.diff(f.extra["t"]), -2.0, rtol=1e-12)
    kl = np.array([1.0, 1e-3, 1e-12, 0.0])
    np.testing.assert_allclose(gu.natural_kl_asymptote([0, 1, 2, 3], kl), 1e-3 * np.exp(-2.0 * (np.arange(4) - 1)))
    assert gu.natural_kl_asymptote([0, 1], [1e-12, 0.0]) is None
    with pytest.raises(ValueError):
        gu.natural_kl_asymptote([0, 1, 2], [1.0, 0.5])


def test_flow_times_put_vn_iterates_on_the_natural_flow(t2):
    """Kumar digest Sec. 9.2: VN iterate k equals the natural flow at t_k = -k log(1 - rho) (not at rho k);
    other methods are drawn at rho k."""
    from vilab.theory.flows import flow

    target, init = t2
    rho = 0.5
    tr = disc.thinned_run("vn", target, init, rho, 8, n_record=8, closed_form_vn=False)  # the iteration itself
    t = disc.flow_times("vn", rho, tr.iterations)
    np.testing.assert_allclose(t, tr.iterations * np.log(2.0), rtol=1e-14)
    f = flow("natural-mv", target, init, float(t[-1]), n_times=len(t))
    np.testing.assert_allclose(f.extra["t"], t, rtol=1e-12)
    np.testing.assert_allclose(tr.cov, f.cov, atol=1e-10)
    np.testing.assert_allclose(tr.mean, f.mean, atol=1e-10)
    f_rho_k = flow("natural-mv", target, init, rho * 8, n_times=9)  # at t = rho k the flow lags behind VN
    assert np.abs(tr.objective[1:] - f_rho_k.objective[1:]).max() > 1e-2
    np.testing.assert_allclose(disc.flow_times("srvn", 0.2, [0, 1, 5]), [0.0, 0.2, 1.0])
    np.testing.assert_array_equal(disc.flow_times("vn", 1.0, [0, 1, 2]), [0.0, np.inf, np.inf])
    with pytest.raises(ValueError):
        disc.flow_times("vn", 0.0, [1])


def test_step_size_limits_linearise_at_the_target_precision(t2):
    """On a Gaussian target the limits are stability_thresholds(A, C0) with A its precision and C0 the
    start's factor (T2: lambda_max = 34.70, 1/lambda_max for BW-GD, min(2/l, 4/l^2) for GD in (m, V))."""
    target, init = t2
    lim = stab.step_size_limits(target, init)
    A = np.linalg.inv(target.cov)
    assert lim["lam_max"] == pytest.approx(34.6955, abs=1e-3) and lim["lam_min"] == pytest.approx(1.2245, abs=1e-4)
    assert lim["limits"] == pytest.approx(stab.stability_thresholds(A, 0.2 * np.eye(2)))
    assert lim["limits"]["gd-mv"] == pytest.approx(min(2 / lim["lam_max"], 4 / lim["lam_max"] ** 2))
    assert lim["limits"]["fbgvi"] == pytest.approx(1 / lim["lam_max"])
    # kappa and scale of the rotated Gaussian: lambda = (1, kappa) / scale^2
    lim = stab.step_size_limits(rotated_gaussian_2d(10.0, 2.0), init)
    assert (lim["lam_min"], lim["lam_max"]) == pytest.approx((0.25, 2.5))


def test_vn_srvn_gap_ratio_is_the_gap_over_rho_squared(t2):
    target, init = t2
    gap = disc.vn_srvn_gap(target, init, [1e-4, 1e-3])
    np.testing.assert_allclose(gap["ratio_V"], gap["gap_V"] / gap["rho"] ** 2, rtol=1e-14)
    np.testing.assert_allclose(gap["ratio_V"], 0.0260, rtol=0.02)  # Kumar digest Sec. 5.7


def test_local_precision_is_the_fixed_point_curvature(t2):
    """Gaussian target: its precision; logistic regression T3: V*^-1 at the Gaussian fixed point
    (Kumar digest Sec. 7, T3: diag V* = (0.16412, 0.39012))."""
    from vilab.family.gaussian import CholCov
    from vilab.targets.papers import kumar_t3

    target, init = t2
    np.testing.assert_allclose(stab.local_precision(target, init), np.linalg.inv(target.cov), rtol=1e-12)
    A = stab.local_precision(kumar_t3(), CholCov(np.zeros(2), 0.3 * np.eye(2)))
    np.testing.assert_allclose(np.diag(np.linalg.inv(A)), [0.16412, 0.39012], atol=2e-5)


def test_plot_window_and_log_density_grid(cauchy):
    box = tp.plot_window(((-1, 1), (-2, 2)), [[-3.0, 0.0], [np.nan, 5.0], [1e6, 0.0]])
    np.testing.assert_allclose(box, ((-3 - 0.32, 1 + 0.32), (-2 - 0.32, 2 + 0.32)))  # NaN and far points ignored
    np.testing.assert_allclose(tp.plot_window(None, [[0, 0], [2, 1]], pad=0.0), ((-0.5, 2.5), (-0.5, 1.5)))
    with pytest.raises(ValueError):
        tp.plot_window(None, [[np.nan, 0.0]])
    vals, xs, ys = tp.log_density_grid(cauchy, ((-2, 2), (-1, 3)), n=5)
    assert vals.shape == (5, 5) and xs[0] == -2 and ys[-1] == 3
    assert vals[1, 2] == pytest.approx(float(cauchy.value(np.array([xs[2], ys[1]]))))
    with pytest.raises(ValueError):
        tp.log_density_grid(gaussian_target(np.zeros(1), cov=np.eye(1)), ((0, 1), (0, 1)))
