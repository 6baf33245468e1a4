"""The BONG predict step theta_t ~ N(gamma theta_{t-1}, Q) (Jones, Chang & Murphy Sec. 3, Alg. 1):
vilab.online.families (Dynamics, predict_*) and its wiring into the online runner.

* Default settings unchanged: a run without the option and a run with gamma = 1, Q = 0 give the same bits.
* Exactness: on a linear-Gaussian stream, bong-lin-hess-fc with the predict step is the Kalman filter with
  the same dynamics, written independently in numpy (predict + update; vilab.repro.bong), to 1e-10.
* Diag against FC on diagonal cases; DLR (LoFi's predict step) against the dense predicted precision
  (gamma^2 Sigma + Q)^{-1} (exact for any diagonal Q) and against the BONG authors' own form.
* Bad dynamics are ValueErrors with a sentence; the drifting-stream demo of the page.
"""

import jax
import jax.numpy as jnp
import numpy as np
import plotly.graph_objects as go
import pytest

import vilab  # noqa: F401  (float64)
from vilab.online import (DLR, FC, Diag, Dynamics, belief_path, gaussian, init_belief, make_method, predict,
                          stream)
from vilab.online.families import dense_cov, dense_prec, dynamics_hyper, predict_diag, predict_dlr, predict_fc
from vilab.online.linear_gaussian import DRIFTS, drift_demo, drifting_stream, linear_f
from vilab.online.runner import algorithm
from vilab.plots import look
from vilab.repro.bong import kalman_with_dynamics  # an independent numpy Kalman filter with dynamics
from vilab.plots import online as po

KEY = jax.random.PRNGKey(0)


def _linear_stream(T=25, P=3, seed=3, noise=0.5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, P))
    theta = np.cumsum(rng.normal(scale=0.3, size=(T, P)), axis=0)
    y = np.einsum("tp,tp->t", X, theta) + rng.normal(scale=np.sqrt(noise), size=T)
    return X, y


def _random_psd(P, seed):
    A = np.random.default_rng(seed).normal(size=(P, P))
    return A @ A.T / P + 0.05 * np.eye(P)


# ----------------------------------------------------------------------------- defaults unchanged
@pytest.mark.parametrize("name,family,rank", [("bong-lin-hess-fc", "fc", 0), ("bong-lin-hess-diag", "diag", 0),
                                              ("bong-lin-ef-dlr-2", "dlr", 2), ("blr-lin-hess-fc", "fc", 0)])
def test_gamma_one_q_zero_gives_the_same_bits_as_no_option(name, family, rank):
    X, y = _linear_stream(T=12, P=4)
    lik = gaussian(0.5)
    m = make_method(name, alpha=None if name.startswith("bong") else 0.5, n_iter=1 if name.startswith("bong") else 3)
    prior = init_belief(family, jnp.zeros(4), 0.7, rank=rank, key=KEY, w0_scale=0.3 if rank else 0.0)
    plain = belief_path(m, linear_f, lik, X, y, prior, key=KEY)
    same = belief_path(m, linear_f, lik, X, y, prior, key=KEY, dynamics=Dynamics(1.0, 0.0))
    for a, b in zip(jax.tree_util.tree_leaves(plain), jax.tree_util.tree_leaves(same)):
        assert np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)
    # and a real drift changes the path (the option is not ignored)
    moved = belief_path(m, linear_f, lik, X, y, prior, key=KEY, dynamics=(0.9, 0.1))
    assert np.max(np.abs(np.asarray(moved.mu) - np.asarray(plain.mu))) > 1e-2


def test_the_identity_predict_step_returns_the_same_numbers():
    """gamma = 1, Q = 0 is Alg. 2's identity for every family (the runner also skips it then)."""
    for b, Q in ((FC(jnp.asarray([0.3, -1e-300]), jnp.asarray([[2.0, 0.1], [0.1, 1e-200]])), jnp.zeros((2, 2))),
                 (Diag(jnp.asarray([0.3, -2.0]), jnp.asarray([1e-300, 7.0])), jnp.zeros(2)),
                 (_dlr(P=5, R=2, seed=9), 0.0)):
        out = predict(b, 1.0, Q)
        for a, c in zip(b, out):
            assert np.array_equal(np.asarray(a), np.asarray(c))


def test_stream_without_the_option_is_unchanged_and_records_the_dynamics():
    X, y = _linear_stream(T=20, P=3)
    lik = gaussian(0.5)
    m = make_method("bong-lin-hess-fc")
    prior = init_belief("fc", jnp.zeros(3), 1.0)
    a = stream(m, linear_f, lik, X, y, prior, key=KEY, checkpoints=[5, 10])
    b = stream(m, linear_f, lik, X, y, prior, key=KEY, checkpoints=[5, 10], dynamics=(1.0, 0.0))
    assert np.array_equal(a.mean, b.mean) and np.array_equal(a.var, b.var)
    assert "dynamics" not in a.settings and b.settings["dynamics"] == {"gamma": 1.0, "Q": 0.0}
    c = stream(m, linear_f, lik, X, y, prior, key=KEY, checkpoints=[5, 10], dynamics=(0.95, [0.1, 0.2, 0.3]))
    assert c.settings["dynamics"] == {"gamma": 0.95, "Q": [0.1, 0.2, 0.3]}
    assert c.status == "max_steps" and not np.allclose(c.mean, a.mean)


# ----------------------------------------------------------------------------- exactness
@pytest.mark.parametrize("gamma,Q", [(1.0, 0.05), (0.97, "matrix"), (1.02, "vector"), (0.0, 0.3)])
def test_bong_fc_with_the_predict_step_is_the_kalman_filter(gamma, Q):
    """Linear-Gaussian model, full covariance, linearised Hessian: BONG's update is the Kalman update
    (Jones, Chang & Murphy Sec. 4.5), so with the predict step it must be the Kalman filter of the drifting
    model, written independently above."""
    P, R = 3, 0.5
    X, y = _linear_stream(T=30, P=P)
    Qm = {"matrix": _random_psd(P, 1), "vector": np.diag([0.01, 0.1, 0.02])}.get(Q, None)
    Qarg = Qm if isinstance(Q, str) and Q == "matrix" else (np.diag(Qm) if Q == "vector" else Q)
    Qdense = Qm if Qm is not None else Q * np.eye(P)
    S0 = 0.5 * np.eye(P) + 0.1
    prior = FC(jnp.asarray([0.2, -0.1, 0.3]), jnp.asarray(S0))
    path = belief_path(make_method("bong-lin-hess-fc"), linear_f, gaussian(R), X, y, prior, key=KEY,
                       check=True, dynamics=(gamma, Qarg))
    mu_kf, S_kf = kalman_with_dynamics(np.asarray(prior.mu), S0, X, y, R, gamma, Qdense)
    assert np.max(np.abs(np.asarray(path.mu) - mu_kf)) < 1e-10
    assert np.max(np.abs(np.asarray(path.Sigma) - S_kf)) < 1e-10
    if gamma == 1.0 and np.ndim(Q) == 0:  # Q > 0 keeps the variances from collapsing like 1/t
        static = belief_path(make_method("bong-lin-hess-fc"), linear_f, gaussian(R), X, y, prior, key=KEY)
        assert np.trace(np.asarray(path.Sigma[-1])) > 2 * np.trace(np.asarray(static.Sigma[-1]))


def test_the_stream_runner_gives_the_kalman_filter_at_its_checkpoints():
    P, R, gamma = 2, 0.3, 0.99
    Q = np.array([[0.02, 0.01], [0.01, 0.03]])
    X, y = _linear_stream(T=40, P=P, seed=7, noise=R)
    prior = init_belief("fc", jnp.zeros(P), 2.0)
    tr = stream(make_method("bong-lin-hess-fc"), linear_f, gaussian(R), X, y, prior, key=KEY,
                checkpoints=[10, 25], dynamics=(gamma, Q))
    mu_kf, S_kf = kalman_with_dynamics(np.zeros(P), 2.0 * np.eye(P), X, y, R, gamma, Q)
    it = np.asarray(tr.iterations)
    assert list(it) == [0, 10, 25, 40]
    assert np.max(np.abs(tr.mean - mu_kf[it])) < 1e-10
    assert np.max(np.abs(tr.var - np.diagonal(S_kf[it], axis1=1, axis2=2))) < 1e-10


# ----------------------------------------------------------------------------- Diag against FC
def test_diag_predict_is_the_fc_predict_on_a_diagonal_covariance():
    rng = np.random.default_rng(0)
    mu, s2, q = rng.normal(size=5), rng.uniform(0.1, 2.0, 5), rng.uniform(0.0, 0.5, 5)
    for gamma in (1.0, 0.8, -1.3, 0.0):
        d = predict_diag(Diag(jnp.asarray(mu), jnp.asarray(s2)), gamma, jnp.asarray(q))
        f = predict_fc(FC(jnp.asarray(mu), jnp.diag(jnp.asarray(s2))), gamma, jnp.diag(jnp.asarray(q)))
        assert np.array_equal(np.asarray(d.mu), np.asarray(f.mu))
        assert np.array_equal(np.asarray(d.s2), np.diag(np.asarray(f.Sigma)))
        assert np.count_nonzero(np.asarray(f.Sigma) - np.diag(np.diag(np.asarray(f.Sigma)))) == 0
        assert np.allclose(np.asarray(d.s2), gamma**2 * s2 + q, rtol=1e-15, atol=0)


def test_diag_and_fc_bong_agree_with_the_predict_step_on_axis_aligned_inputs():
    """With one-hot inputs x_t the linearised Hessian -x x^T / R is diagonal, so the full covariance stays
    diagonal and the diagonal family is exact: the two paths (and the Kalman filter) coincide."""
    P, R, gamma = 3, 0.4, 0.95
    q = np.array([0.05, 0.0, 0.2])
    rng = np.random.default_rng(5)
    X = np.eye(P)[rng.integers(0, P, 30)] * rng.uniform(0.5, 2.0, (30, 1))
    y = rng.normal(size=30)
    lik = gaussian(R)
    pf = belief_path(make_method("bong-lin-hess-fc"), linear_f, lik, X, y, init_belief("fc", jnp.zeros(P), 1.0), key=KEY,
                     dynamics=(gamma, q))
    pd = belief_path(make_method("bong-lin-hess-diag"), linear_f, lik, X, y, init_belief("diag", jnp.zeros(P), 1.0), key=KEY,
                     dynamics=(gamma, q))
    S = np.asarray(pf.Sigma)
    assert np.max(np.abs(S - np.einsum("tij,ij->tij", S, np.eye(P)))) == 0.0
    assert np.max(np.abs(np.asarray(pd.mu) - np.asarray(pf.mu))) < 1e-12
    assert np.max(np.abs(np.asarray(pd.s2) - np.diagonal(S, axis1=1, axis2=2))) < 1e-12
    mu_kf, _ = kalman_with_dynamics(np.zeros(P), np.eye(P), X, y, R, gamma, np.diag(q))
    assert np.max(np.abs(np.asarray(pd.mu) - mu_kf)) < 1e-10


# ----------------------------------------------------------------------------- DLR (LoFi's predict step)
def _dlr(P=6, R=2, seed=0, iso=False, zero_w=False):
    rng = np.random.default_rng(seed)
    ups = np.full(P, 1.7) if iso else rng.uniform(0.5, 3.0, P)
    W = np.zeros((P, R)) if zero_w else rng.normal(size=(P, R))
    return DLR(jnp.asarray(rng.normal(size=P)), jnp.asarray(ups), jnp.asarray(W))


@pytest.mark.parametrize("case", ["q = 0", "W = 0", "isotropic Upsilon", "general", "diagonal Q", "gamma = 0"])
def test_dlr_predict_is_the_exact_predicted_precision(case):
    """LoFi's predict step keeps diag + rank R exactly (Woodbury, see predict_dlr): its precision must equal
    the inverse of the dense gamma^2 Sigma + Q computed here with numpy, for any diagonal Q."""
    P = 7
    b = _dlr(P=P, R=3, iso=case == "isotropic Upsilon", zero_w=case == "W = 0", seed=2)
    gamma = 0.0 if case == "gamma = 0" else 0.9
    q = {"q = 0": 0.0, "diagonal Q": np.linspace(0.0, 0.6, P)}.get(case, 0.35)
    nb = predict_dlr(b, gamma, jnp.asarray(q))
    want_cov = gamma**2 * np.asarray(dense_cov(b)) + np.diag(np.broadcast_to(q, (P,)))
    assert np.allclose(np.asarray(nb.mu), gamma * np.asarray(b.mu), rtol=1e-15, atol=0)
    assert np.allclose(np.asarray(dense_prec(nb)), np.linalg.inv(want_cov), rtol=1e-10, atol=1e-12)
    assert np.allclose(np.asarray(dense_cov(nb)), want_cov, rtol=1e-10, atol=1e-12)


def test_dlr_predict_matches_the_authors_form():
    """The BONG authors' code takes W' = gamma D W chol((I + q W^T D W)^{-1}) (Q = q I; computed here with
    numpy): the same Upsilon' and the same W' W'^T (W' itself differs by an R x R rotation)."""
    b = _dlr(P=8, R=3, seed=4)
    gamma, q = 0.97, 0.2
    nb = predict_dlr(b, gamma, q)
    ups, W = np.asarray(b.ups), np.asarray(b.W)
    ups_new = 1.0 / (gamma**2 / ups + q)
    D = ups_new / ups
    C = np.linalg.pinv(np.eye(3) + q * W.T @ (W * D[:, None]))
    W_auth = gamma * (D[:, None] * W) @ np.linalg.cholesky(C)
    assert np.allclose(np.asarray(nb.ups), ups_new, rtol=1e-14)
    assert np.allclose(np.asarray(nb.W) @ np.asarray(nb.W).T, W_auth @ W_auth.T, rtol=1e-10, atol=1e-13)


def test_dlr_bong_runs_with_the_predict_step():
    X, y = _linear_stream(T=15, P=4)
    prior = init_belief("dlr", jnp.zeros(4), 1.0, rank=2, key=KEY, w0_scale=0.5)
    tr = stream(make_method("bong-lin-hess-dlr-2"), linear_f, gaussian(0.5), X, y, prior, key=KEY, checkpoints=[5],
                dynamics=(0.99, [0.05, 0.0, 0.1, 0.02]))
    assert tr.status == "max_steps" and np.all(np.isfinite(tr.mean)) and np.all(tr.var > 0)
    static = stream(make_method("bong-lin-hess-dlr-2"), linear_f, gaussian(0.5), X, y, prior, key=KEY, checkpoints=[5])
    assert np.sum(tr.var[-1]) > 2 * np.sum(static.var[-1])  # Q > 0 keeps the variances up


def test_full_rank_dlr_bong_with_the_predict_step_is_the_kalman_filter():
    """With rank R = P the DLR projection drops nothing (W~ has rank <= P), so bong-lin-hess-dlr-P is exact
    Bayes, and with the predict step it must follow the Kalman filter of the drifting model."""
    P, R, gamma = 3, 0.5, 0.98
    q = np.array([0.02, 0.1, 0.05])
    X, y = _linear_stream(T=25, P=P, seed=11)
    prior = init_belief("dlr", jnp.zeros(P), 1.0, rank=P)
    path = belief_path(make_method(f"bong-lin-hess-dlr-{P}"), linear_f, gaussian(R), X, y, prior, key=KEY,
                       dynamics=(gamma, q))
    mu_kf, S_kf = kalman_with_dynamics(np.zeros(P), np.eye(P), X, y, R, gamma, np.diag(q))
    assert np.max(np.abs(np.asarray(path.mu) - mu_kf)) < 1e-9
    for t in range(X.shape[0] + 1):
        b = DLR(path.mu[t], path.ups[t], path.W[t])
        assert np.max(np.abs(np.asarray(dense_cov(b)) - S_kf[t])) < 1e-9


def test_predict_dispatches_by_family():
    b = FC(jnp.ones(2), jnp.eye(2))
    assert isinstance(predict(b, 0.5, jnp.eye(2)), FC)
    assert isinstance(predict(Diag(jnp.ones(2), jnp.ones(2)), 0.5, jnp.ones(2)), Diag)
    assert isinstance(predict(_dlr(P=2, R=1), 0.5, 0.1), DLR)
    with pytest.raises(ValueError, match="Not a BONG belief"):
        predict((jnp.ones(2), jnp.eye(2)), 1.0, 0.0)


# ----------------------------------------------------------------------------- bad dynamics
FCB, DGB, DLB = FC(jnp.zeros(3), jnp.eye(3)), Diag(jnp.zeros(3), jnp.ones(3)), _dlr(P=3, R=1)


@pytest.mark.parametrize("belief,dynamics,message", [
    (FCB, (float("nan"), 0.0), "gamma must be finite"),
    (FCB, (float("inf"), 0.0), "gamma must be finite"),
    (FCB, ("fast", 0.0), "gamma must be a number"),
    (FCB, ([1.0, 1.0], 0.0), "gamma must be a single number"),
    (FCB, (1.0, -0.1), "Q must be >= 0"),
    (FCB, (1.0, float("nan")), "non-finite"),
    (FCB, (1.0, [0.1, -0.2, 0.1]), "negative entry"),
    (FCB, (1.0, [0.1, 0.2]), "one variance per parameter"),
    (FCB, (1.0, np.eye(2)), "must be 3 x 3"),
    (FCB, (1.0, np.array([[1.0, 0.5, 0], [0, 1, 0], [0, 0, 1]])), "symmetric"),
    (FCB, (1.0, np.array([[1.0, 2.0, 0], [2.0, 1, 0], [0, 0, 1]])), "positive semi-definite"),
    (FCB, (1.0, np.zeros((3, 3, 3))), "a number, a vector or a matrix"),
    (FCB, (0.0, 0.0), "gamma = 0 forgets the belief"),
    (DGB, (1.0, np.ones((3, 3))), "diagonal process noise only"),
    (DGB, (0.0, [0.1, 0.0, 0.1]), "gamma = 0 forgets the belief"),
    (DLB, (1.0, np.array([[1.0, 0.5, 0], [0.5, 1, 0], [0, 0, 1]])), "diagonal-plus-low-rank belief takes a diagonal"),
    (DLB, (0.0, 0.0), "gamma = 0 forgets the belief"),
    (FCB, (1.0,), "Give the dynamics as"),
    (FCB, {"gamma": 1.0, "q": 0.1}, "gamma and Q only"),
])
def test_bad_dynamics_are_explained(belief, dynamics, message):
    with pytest.raises(ValueError, match=message):
        dynamics_hyper(belief, dynamics)


def test_the_runner_checks_the_dynamics_before_running():
    X, y = _linear_stream(T=5, P=3)
    with pytest.raises(ValueError, match="Q must be >= 0"):
        stream(make_method("bong-lin-hess-fc"), linear_f, gaussian(0.5), X, y, FCB, key=KEY, checkpoints=[], dynamics=(1, -1))
    alg = algorithm(make_method("bong-lin-hess-diag"), linear_f, gaussian(0.5))
    with pytest.raises(ValueError, match="diagonal process noise only"):
        alg.init(KEY, DGB, dynamics=(1.0, np.ones((3, 3))))


def test_dynamics_forms_are_normalised_per_family():
    h = dynamics_hyper(FCB, {"gamma": 2, "Q": 0.5})
    assert float(h["gamma"]) == 2.0 and np.array_equal(np.asarray(h["Q"]), 0.5 * np.eye(3))
    assert np.array_equal(np.asarray(dynamics_hyper(DGB, (1.0, np.diag([1.0, 2.0, 3.0])))["Q"]), [1.0, 2.0, 3.0])
    assert np.array_equal(np.asarray(dynamics_hyper(DLB, (1.0, 0.25 * np.eye(3)))["Q"]), [0.25] * 3)
    assert np.array_equal(np.asarray(dynamics_hyper(DLB, (1.0, [0.1, 0.2, 0.3]))["Q"]), [0.1, 0.2, 0.3])


# ----------------------------------------------------------------------------- the drifting-stream demo
def test_drifting_streams_are_reproducible_and_drift():
    X, y, th = drifting_stream(KEY, 40, "random walk", 0.01, 0.25)
    X2, y2, th2 = drifting_stream(KEY, 40, "random walk", 0.01, 0.25)
    assert np.array_equal(y, y2) and th.shape == (41, 2) and X.shape == (40, 2)
    assert 0.05 < np.std(np.diff(th, axis=0)) < 0.2  # steps of sd 0.1
    _, _, sw = drifting_stream(KEY, 40, "sudden switch")
    assert np.allclose(sw[:21], sw[0]) and np.allclose(sw[21:], -sw[0]) and np.isclose(np.linalg.norm(sw[0]), 1.5)
    for bad, msg in [(dict(kind="sideways"), "Unknown kind of drift"), (dict(T=1), "T"),
                     (dict(drift_var=-1.0), "drift variance"), (dict(noise_var=0.0), "noise variance")]:
        args = dict(key=KEY, T=40, kind="random walk", drift_var=0.01, noise_var=0.25) | bad
        with pytest.raises(ValueError, match=msg):
            drifting_stream(**args)


def test_drift_demo_is_the_kalman_filter_and_tracks_better():
    d = drift_demo(KEY, 120, "random walk", 1.0, 0.01, drift_var=0.01, noise_var=0.25)
    mu_kf, S_kf = kalman_with_dynamics(np.zeros(2), np.eye(2), d["X"], d["y"], 0.25, 1.0, 0.01 * np.eye(2))
    assert np.max(np.abs(d["dynamic"]["mean"] - mu_kf)) < 1e-10
    assert np.max(np.abs(d["dynamic"]["sd"] ** 2 - np.diagonal(S_kf, axis1=1, axis2=2))) < 1e-10
    mu_st, _ = kalman_with_dynamics(np.zeros(2), np.eye(2), d["X"], d["y"], 0.25, 1.0, np.zeros((2, 2)))
    assert np.max(np.abs(d["static"]["mean"] - mu_st)) < 1e-10
    assert np.allclose(d["dynamic"]["error"], np.linalg.norm(mu_kf - d["theta"], axis=1))
    for kind in DRIFTS:
        s = drift_demo(KEY, 200, kind, 1.0, 0.01)["summary"]
        assert s["dynamic"]["mean_error_last_half"] < 0.5 * s["static"]["mean_error_last_half"]
        assert s["dynamic"]["final_sd"] > 3 * s["static"]["final_sd"]
        assert s["ratio"] == pytest.approx(s["static"]["mean_error_last_half"] / s["dynamic"]["mean_error_last_half"])
    with pytest.raises(ValueError, match="Q must be >= 0"):
        drift_demo(KEY, 50, "random walk", 1.0, -0.01)
    with pytest.raises(ValueError, match="gamma"):
        drift_demo(KEY, 50, "random walk", float("nan"), 0.01)


def test_drift_figure_uses_bongs_look():
    d = drift_demo(KEY, 30, "sudden switch", 0.98, 0.05)
    fig = po.drift_tracking(d["t"], d["theta"], (d["static"]["mean"], d["static"]["sd"], d["static"]["error"]),
                            (d["dynamic"]["mean"], d["dynamic"]["sd"], d["dynamic"]["error"]),
                            names=("static", "with predict step"), switch_at=d["switch_at"])
    assert isinstance(fig, go.Figure)
    names = {t.name for t in fig.data}
    assert {"static", "with predict step", "true θ", "±2σ"} <= names
    blue = look("bong-lin-hess-fc").color
    assert all(t.line.color == blue for t in fig.data if t.name in ("static", "with predict step"))
    assert sum(t.name == "static" for t in fig.data) == 3  # θ₁, θ₂ and the error panel
