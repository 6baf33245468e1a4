"""Brute-force verification of every natural gradient in vilab.family.natgrad.

Each analytic natural gradient is compared with solve(F, euclidean gradient), where F is the
dense Fisher matrix built by autodiff of log q (tests/reference/fisher.py) and the Euclidean
gradient is obtained by autodiff of an ELBO-like functional in the same coordinates.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import vilab  # noqa: F401  (x64)
from vilab.family import natgrad as ng
from vilab.gradients.expectations import gaussian_cubature5
from vilab.family.linalg import duplication_matrix, tril_half, vech
from vilab.targets import gaussian_target, logistic_regression

from .reference import fisher as ref

TOL = 1e-8


def _tri(rng, d, mask=None):
    A = np.tril(rng.normal(size=(d, d)))
    if mask is not None:
        A = A * mask
    A[np.diag_indices(d)] = (np.abs(np.diag(A)) + 0.5) * rng.choice([-1.0, 1.0], size=d)
    return A


def _instance(seed, d):
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=d)
    C = _tri(rng, d)
    Sigma = C @ C.T
    P = np.linalg.inv(Sigma)
    T = np.linalg.cholesky(P)
    g_mu = rng.normal(size=d)
    A = rng.normal(size=(d, d))
    G_S = A + A.T
    return rng, mu, C, Sigma, P, T, g_mu, G_S


def _linear_elbo(kind, d, g_mu, G_S, **structure):
    """L(lambda) = g_mu . mu + tr(G_S Sigma): grad_mu L = g_mu, grad_Sigma L = G_S everywhere."""

    def f(lam):
        m, P, _ = ref.unflatten_params(kind, lam, d, **structure)
        return g_mu @ m + jnp.trace(G_S @ jnp.linalg.inv(P))

    return f


def _brute(kind, mu, factor, g_mu, G_S, **structure):
    d = len(mu)
    lam = ref.flatten_params(kind, jnp.asarray(mu), jnp.asarray(factor), **structure)
    e = jax.grad(_linear_elbo(kind, d, jnp.asarray(g_mu), jnp.asarray(G_S), **structure))(lam)
    F = ref.fisher_matrix(kind, mu, factor, **structure)
    return np.linalg.solve(F, np.asarray(e))


def _err(brute, analytic):
    return np.max(np.abs(brute - analytic)) / max(1.0, np.max(np.abs(brute)))


@pytest.mark.parametrize("d,seed", [(2, 0), (3, 0), (3, 1), (4, 0), (5, 0)])
def test_table1_and_cholesky_natural_gradients_match_fisher_solve(d, seed):
    _, mu, C, Sigma, P, T, g_mu, G_S = _instance(seed + 10 * d, d)
    cases = {
        "chol_cov": (C, lambda: ng.natural_grad_chol_cov(mu, C, g_mu, ng.grad_chol_cov(C, G_S))),
        "chol_prec": (T, lambda: ng.natural_grad_chol_prec(mu, T, g_mu, ng.grad_chol_prec(T, G_S))),
        "mean_cov": (Sigma, lambda: ng.natural_grad_mean_cov(mu, Sigma, g_mu, G_S)),
        "mean_prec": (P, lambda: ng.natural_grad_mean_prec(mu, Sigma, g_mu, G_S)),
        "cor1": (T, lambda: ng.natural_grad_cor1(mu, T, g_mu, ng.grad_chol_prec(T, G_S), coords="nu")),
    }
    for kind, (factor, analytic) in cases.items():
        a_mu, a_M = analytic()
        an = np.concatenate([np.asarray(a_mu), np.asarray(vech(a_M))])
        assert _err(_brute(kind, mu, factor, g_mu, G_S), an) < TOL, kind
    # natural parameter: NG = [g - 2 G mu ; D^T vec G]
    a1, a2 = ng.natural_grad_natural(mu, Sigma, g_mu, G_S)
    an = np.concatenate([np.asarray(a1), duplication_matrix(d).T @ np.asarray(a2).T.reshape(-1)])
    assert _err(_brute("natural", mu, P, g_mu, G_S), an) < TOL


@pytest.mark.parametrize("d", [2, 3, 5])
def test_lemma1_iii_holds_for_arbitrary_nonsymmetric_gradients(d):
    """F^-1 [g; vech G] = [Sigma g; vech(Lam tril_half(Lam^T Gbar))] for ANY G (Tan Lemma 1(iii))."""
    rng, mu, C, Sigma, P, T, g_mu, _ = _instance(100 + d, d)
    G = rng.normal(size=(d, d))
    for kind, Lam, fn in [("chol_cov", C, ng.natural_grad_chol_cov), ("chol_prec", T, ng.natural_grad_chol_prec)]:
        F = ref.fisher_matrix(kind, mu, Lam)
        brute = np.linalg.solve(F, np.concatenate([g_mu, np.asarray(vech(G))]))
        a_mu, a_L = fn(mu, Lam, g_mu, G)
        assert _err(brute, np.concatenate([np.asarray(a_mu), np.asarray(vech(a_L))])) < TOL
        # the Fisher block is Lemma 1's I(Lam), and Lemma 1(ii) inverts it
        Fb = F[d:, d:]
        assert np.allclose(Fb, ng.fisher_block_I(Lam), atol=1e-9 * np.abs(Fb).max())
        assert np.allclose(np.linalg.inv(Fb), ng.fisher_block_I_inv(Lam), atol=1e-9)
        assert np.allclose(F[:d, :d], np.linalg.inv(Sigma), atol=1e-9) and np.allclose(F[:d, d:], 0, atol=1e-9)


def test_lemma1_reference_numbers_d2():
    """Short-version digest Sec. 4.3: Lam = [[2,0],[0.5,1]] gives these exact matrices."""
    Lam = np.array([[2.0, 0.0], [0.5, 1.0]])
    assert np.allclose(ng.fisher_block_I(Lam), [[0.5625, -0.25, 0], [-0.25, 1, 0], [0, 0, 2]], atol=1e-14)
    assert np.allclose(ng.fisher_block_I_inv(Lam), [[2, 0.5, 0], [0.5, 1.125, 0], [0, 0, 0.5]], atol=1e-14)
    # d = 1: I(sigma) = 2 / sigma^2
    assert np.isclose(ref.fisher_matrix("chol_cov", np.zeros(1), np.array([[1.7]]))[1, 1], 2 / 1.7**2)


def test_reference_numbers_single_sample():
    """Short-version digest claim 15 (C = T = [[2,0],[0.5,1]], z = (0.3,-1.2), grad h = (1,-2))."""
    C = np.array([[2.0, 0.0], [0.5, 1.0]])
    z = np.array([0.3, -1.2])
    gh = np.array([1.0, -2.0])
    G1 = ng.estimator_G1(gh, z)
    assert np.allclose(np.tril(G1), [[0.3, 0], [-0.6, 2.4]])
    n_mu, n_C = ng.natural_grad_chol_cov(None, C, gh, G1)
    assert np.allclose(n_C, [[0.3, 0], [-0.525, 1.2]]) and np.allclose(n_mu, [2, -1.5])
    T = C
    theta_minus_mu = np.linalg.solve(T.T, z)  # theta = mu + T^-T z
    G2 = ng.estimator_G2(theta_minus_mu, np.zeros(2), T, gh)
    assert np.allclose(G2, [[-0.225, 1.0125], [0.6, -2.7]])
    n_mu, n_T = ng.natural_grad_chol_prec(None, T, gh, G2)
    assert np.allclose(n_T, [[-0.15, 0], [0.5625, -1.35]]) and np.allclose(n_mu, [0.8125, -2.25])


def test_corollary1_step_equals_brute_force_step_in_xi_coordinates():
    """Tan digest T8: NG step in xi = (T^T mu, vech T), mapped back, equals Corollary 1's update."""
    d, rho = 4, 0.3
    _, mu, C, Sigma, P, T, g_mu, G_S = _instance(7, d)
    brute = _brute("cor1", mu, T, g_mu, G_S)
    xi = np.asarray(ref.flatten_params("cor1", jnp.asarray(mu), jnp.asarray(T))) + rho * brute
    r, c = ref.free_indices("cor1", d)
    T_new = np.zeros((d, d))
    T_new[r, c] = xi[d:]
    mu_new = np.linalg.solve(T_new.T, xi[:d])
    m2, T2 = ng.update_cor1(mu, T, g_mu, ng.grad_chol_prec(T, G_S), rho)
    assert np.allclose(T2, T_new, atol=1e-10) and np.allclose(m2, mu_new, atol=1e-10)
    # and it differs from Theorem 1(ii), which uses the old Sigma for the mean
    m1, _ = ng.update_chol_prec(mu, T, g_mu, ng.grad_chol_prec(T, G_S), rho)
    assert np.max(np.abs(np.asarray(m1) - mu_new)) > 1e-3


@pytest.mark.parametrize("sizes", [(1, 1), (2, 1), (2, 2), (1, 1, 1, 1), (2, 1, 2), (3, 2)])  # d = 2..5
def test_blockdiag_alg1S_matches_fisher_and_dense_masked(sizes):
    rng = np.random.default_rng(sum(sizes) * 7 + len(sizes))
    M = ng.block_mask(sizes)
    d = M.shape[0]
    C = _tri(rng, d, M)
    mu, g = rng.normal(size=d), rng.normal(size=d)
    E = rng.normal(size=(d, d)) * M
    r, c = ref.free_indices("blockdiag_chol_cov", d, blocks=sizes)
    F = ref.fisher_matrix("blockdiag_chol_cov", mu, C, blocks=sizes)
    brute = np.linalg.solve(F, np.concatenate([g, E[r, c]]))
    a_mu, a_C = ng.natural_grad_chol_cov_blockdiag(mu, C, g, E, sizes)
    a_C = np.asarray(a_C)
    assert _err(brute, np.concatenate([np.asarray(a_mu), a_C[r, c]])) < TOL
    assert np.all(a_C[M == 0] == 0)
    # for block-diagonal C the dense Theorem 1(i) result restricted to the blocks is the same
    dense = np.asarray(ng.natural_grad_chol_cov(mu, C, g, E)[1])
    assert np.allclose(dense[r, c], a_C[r, c], atol=1e-12)


@pytest.mark.parametrize("loc,g", [((1,), 1), ((1, 1), 1), ((2,), 1), ((1, 1), 2), ((2, 1), 2),
                                   ((1, 1, 1), 2), ((2, 2), 2)])  # d = 2..5, and the digest's T9 (d = 6)
def test_arrow_theorem4_matches_fisher_and_is_not_masked_dense(loc, g):
    rng = np.random.default_rng(len(loc) * 13 + g)
    M = ng.arrow_mask(loc, g)
    d = M.shape[0]
    T = _tri(rng, d, M)
    mu, gm = rng.normal(size=d), rng.normal(size=d)
    E = rng.normal(size=(d, d)) * M
    st = dict(local_sizes=loc, global_size=g)
    r, c = ref.free_indices("arrow_chol_prec", d, **st)
    F = ref.fisher_matrix("arrow_chol_prec", mu, T, **st)
    brute = np.linalg.solve(F, np.concatenate([gm, E[r, c]]))
    a_mu, a_T = ng.natural_grad_chol_prec_arrow(mu, T, gm, E, loc, g)
    a_T = np.asarray(a_T)
    assert _err(brute, np.concatenate([np.asarray(a_mu), a_T[r, c]])) < TOL
    assert np.all(a_T[M == 0] == 0)
    dense = np.asarray(ng.natural_grad_chol_prec(mu, T, gm, E)[1])
    if len(loc) >= 2:  # with one local block the arrow pattern is the full lower triangle
        assert np.max(np.abs(dense[r, c] - a_T[r, c])) > 1e-3  # masking the dense NG is wrong


def test_arrow_alg2S_second_order_estimate_equals_theorem4_of_masked_F2():
    """Alg. 2S writes Gbar = mask(-T_d^-T T^-1 hess_h T^-T); it equals Thm 4's G built from the
    Euclidean estimate mask(F2) (digest T11)."""
    loc, g = (2, 1), 2
    rng = np.random.default_rng(3)
    M = ng.arrow_mask(loc, g)
    d = M.shape[0]
    T = _tri(rng, d, M)
    A = rng.normal(size=(d, d))
    Hh = A + A.T
    F2 = np.asarray(ng.estimator_F2(T, Hh)) * M
    nat_from_F2 = np.asarray(ng.natural_grad_chol_prec_arrow(np.zeros(d), T, np.zeros(d), F2, loc, g)[1])
    Td = T * ng.block_mask(loc + (g,))
    Gpaper = -np.linalg.solve(Td.T, np.linalg.solve(T, Hh) @ np.linalg.inv(T).T) * M
    nat_paper = T @ (np.asarray(tril_half(Td.T @ Gpaper)) * M)
    assert np.allclose(nat_from_F2, nat_paper, atol=1e-10)


def test_arrow_alg2S_first_order_estimate_is_theorem4_of_the_masked_G2():
    """Alg. 2S's first-order Gbar = mask(-u v^T), u = T_d^-T T^T (theta - mu), v = T^-1 grad h (Tan
    Sec. 7.3), equals, draw by draw, Theorem 4's G built from the Euclidean estimate mask(G2) of
    Thm 2; so vilab's tan-2S (Thm 4 applied to mask(G2)) runs the paper's Algorithm 2S."""
    loc, g = (2, 1), 2
    rng = np.random.default_rng(8)
    M = ng.arrow_mask(loc, g)
    d = M.shape[0]
    T = _tri(rng, d, M)
    Td = T * ng.block_mask(loc + (g,))
    mu = rng.normal(size=d)
    for _ in range(3):
        z, gh = rng.normal(size=d), rng.normal(size=d)
        theta = mu + np.linalg.solve(T.T, z)
        G2 = np.asarray(ng.estimator_G2(theta, mu, T, gh)) * M
        v = np.linalg.solve(T, gh)
        u = np.linalg.solve(Td.T, T.T @ (theta - mu))
        nat_paper = T @ (np.asarray(tril_half(Td.T @ (-np.outer(u, v) * M))) * M)
        nat = np.asarray(ng.natural_grad_chol_prec_arrow(mu, T, gh, G2, loc, g)[1])
        assert np.allclose(nat, nat_paper, atol=1e-10)


def test_natural_grads_agree_as_tangent_vectors():
    """Tan digest claim 22: exact NG steps in C, T, kappa and lambda induce the same dSigma."""
    d = 3
    _, mu, C, Sigma, P, T, g_mu, G_S = _instance(5, d)
    target = 2 * Sigma @ G_S @ Sigma
    _, nC = ng.natural_grad_chol_cov(mu, C, g_mu, ng.grad_chol_cov(C, G_S))
    _, nT = ng.natural_grad_chol_prec(mu, T, g_mu, ng.grad_chol_prec(T, G_S))
    dS_C = nC @ C.T + C @ nC.T
    dP_T = nT @ T.T + T @ nT.T
    assert np.allclose(dS_C, target, atol=1e-10)
    assert np.allclose(-Sigma @ dP_T @ Sigma, target, atol=1e-10)
    _, n_eta2 = ng.natural_grad_natural(mu, Sigma, g_mu, G_S)
    assert np.allclose(Sigma @ (2 * n_eta2) @ Sigma, target, atol=1e-10)  # dP = -2 d eta2


def test_gaussian_target_exact_cholesky_gradients():
    """grad_C L = tril(-P C + C^-T), grad_T L = tril(Sigma P Sigma T - T^-T) (Tan digest T10)."""
    d = 3
    rng, mu, C, Sigma, P, T, _, _ = _instance(11, d)
    m = rng.normal(size=d)
    A = rng.normal(size=(d, d))
    Pt = A @ A.T + np.eye(d)
    g_mu, G_S = ng.gaussian_target_grads(m, Pt, mu, Sigma)
    assert np.allclose(ng.grad_chol_cov(C, G_S), np.tril(-Pt @ C + np.linalg.inv(C).T), atol=1e-10)
    assert np.allclose(ng.grad_chol_prec(T, G_S), np.tril(Sigma @ Pt @ Sigma @ T - np.linalg.inv(T).T), atol=1e-10)
    # and these agree with autodiff of the exact ELBO E log p + entropy in the factor
    def elbo_C(Cm):
        S = Cm @ Cm.T
        return -0.5 * jnp.trace(Pt @ S) + jnp.sum(jnp.log(jnp.abs(jnp.diag(Cm))))
    assert np.allclose(np.tril(jax.grad(elbo_C)(jnp.asarray(C))), ng.grad_chol_cov(C, G_S), atol=1e-10)


@pytest.mark.slow
def test_theorem2_estimators_unbiased_monte_carlo():
    """Tan Thm 2: E[tril G1] = E[tril F1] = grad_C L and E[tril G2] = E[tril F2] = grad_T L, by
    Monte Carlo on a 3-D logistic regression (means agree within 4 standard errors), and exactly
    for a Gaussian target."""
    rng = np.random.default_rng(0)
    X = np.column_stack([np.ones(40), rng.normal(size=(40, 2))])
    y = (rng.uniform(size=40) < 0.5).astype(float)
    tgt = logistic_regression(X, y, prior_var=4.0)
    d = 3
    mu = np.array([0.1, -0.2, 0.3])
    C = np.array([[0.5, 0, 0], [0.1, 0.4, 0], [-0.1, 0.05, 0.3]])
    T = np.linalg.cholesky(np.linalg.inv(C @ C.T))
    n = 100_000
    key = jax.random.PRNGKey(1)
    z = np.asarray(jax.random.normal(key, (n, d)))

    P = np.linalg.inv(C @ C.T)
    thC = mu + z @ C.T
    ghC = np.asarray(tgt.grad_batch(thC)) + (thC - mu) @ P
    hhC = np.asarray(tgt.hess_batch(thC)) + P
    G1 = np.tril(np.einsum("ni,nj->nij", ghC, z))
    F1 = np.tril(hhC @ C)
    thT = mu + np.linalg.solve(T.T, z.T).T
    ghT = np.asarray(tgt.grad_batch(thT)) + (thT - mu) @ P
    hhT = np.asarray(tgt.hess_batch(thT)) + P
    G2 = np.tril(np.asarray(jax.vmap(ng.estimator_G2, (0, None, None, 0))(thT, mu, T, ghT)))
    F2 = np.tril(np.asarray(jax.vmap(ng.estimator_F2, (None, 0))(T, hhT)))
    for a, b in [(G1, F1), (G2, F2)]:
        diff = a - b
        se = diff.std(axis=0) / np.sqrt(n) + 1e-12
        assert np.all(np.abs(diff.mean(axis=0)) < 4 * se + 1e-10)
    # against Gauss-Hermite exact gradients
    from vilab.gradients.expectations import gauss_hermite_glm
    Eg, EH = gauss_hermite_glm(tgt, jnp.asarray(mu), jnp.asarray(C @ C.T), 40)
    _, G_S = ng.elbo_grads_from_expectations(jnp.asarray(C @ C.T), Eg, EH)
    for est, exact in [(F1, ng.grad_chol_cov(C, G_S)), (F2, ng.grad_chol_prec(T, G_S))]:
        se = est.std(axis=0) / np.sqrt(n) + 1e-12
        assert np.all(np.abs(est.mean(axis=0) - np.asarray(exact)) < 4 * se + 1e-9)

    # Gaussian target: the second-order estimators are deterministic and exact
    m = np.array([1.0, -1.0, 0.5])
    Pt = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 0.5]])
    gt = gaussian_target(m, precision=Pt)
    _, G_S = ng.gaussian_target_grads(m, Pt, mu, C @ C.T)
    th = mu + z[:3] @ C.T
    for t in th:
        assert np.allclose(np.tril(ng.estimator_F1(ng.hess_h(gt.hess(t), P), C)), ng.grad_chol_cov(C, G_S), atol=1e-10)
        assert np.allclose(np.tril(ng.estimator_F2(T, ng.hess_h(gt.hess(t), P))), ng.grad_chol_prec(T, G_S), atol=1e-10)


def test_first_order_estimator_zero_at_optimum():
    """Gaussian target and q = p: grad_theta h == 0 for every draw, so G1 = G2 = 0 (digest claim 20)."""
    m = np.array([0.5, -1.0])
    Pt = np.array([[2.0, 0.5], [0.5, 1.0]])
    gt = gaussian_target(m, precision=Pt)
    for th in np.random.default_rng(0).normal(size=(5, 2)):
        assert np.allclose(ng.grad_h(gt.grad(th), th, m, Pt), 0, atol=1e-12)


def test_fisher_matrix_rejects_unknown_kind():
    with pytest.raises(ValueError, match="Unknown Fisher kind"):
        ref.fisher_matrix("cholesky", np.zeros(2), np.eye(2))
    with pytest.raises(ValueError, match="positive integers"):
        ng.block_mask([2, 0])


@pytest.mark.parametrize("d", [1, 2, 3, 6])
def test_degree5_cubature_integrates_every_monomial_up_to_degree5(d):
    """gaussian_cubature5 vs the moments of N(0, I): E[z^a] = prod (a_i - 1)!! for even a_i, else 0."""
    import itertools

    nodes, w = gaussian_cubature5(d)
    assert nodes.shape == (2 * d * d + 1, d)

    def moment(k):
        return 0.0 if k % 2 else float(np.prod(np.arange(k - 1, 0, -2))) if k else 1.0

    for deg in range(6):
        for a in itertools.product(range(deg + 1), repeat=d):
            if sum(a) != deg:
                continue
            got = w @ np.prod(nodes ** np.array(a), axis=1)
            assert got == pytest.approx(np.prod([moment(k) for k in a]), abs=1e-12)
    # the rule is degree 5, not more: E[z_1^6] = 15 is missed
    assert w @ nodes[:, 0] ** 6 != pytest.approx(15.0)
