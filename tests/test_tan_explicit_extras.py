"""Tan (explicit) Sec. 5 log-diagonal chart C' and the O(d^2) single-draw step of Sec. 4 (reference digest
Secs. 4.5 and 4.7), against brute force: the autodiff Fisher information in C' coordinates, and the O(d^3) form."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.reference import fisher as ref
from vilab.family import natgrad as ng
from vilab.algorithms import run
from vilab.family.gaussian import CholCov
from vilab.family.linalg import tril_half
from vilab.targets.papers import kumar_t2


def _case(seed, d):
    rng = np.random.default_rng(seed)
    C = np.tril(rng.normal(size=(d, d)), -1) + np.diag(rng.uniform(0.5, 2.0, d))
    return rng.normal(size=d), C, rng.normal(size=d), np.tril(rng.normal(size=(d, d)))


@pytest.mark.parametrize("d", [1, 2, 3])
def test_logdiag_natural_gradient_equals_brute_force_fisher_inverse_times_gradient(d):
    """ELBO gradient in C' by the chain rule from grad_C, Fisher in C' by autodiff (tests/reference/fisher.py):
    F^-1 grad equals L_C * (C Hbarbar), the corrected form; the printed L_C * (C' Hbarbar) does not."""
    mu, C, g_mu, G = _case(d, d)
    rows, cols = ref.free_indices("chol_cov_logdiag", d)
    J = np.where(rows == cols, C[rows, cols], 1.0)  # dC/dC' on the free entries
    grad = np.concatenate([g_mu, G[rows, cols] * J])
    F = ref.fisher_matrix("chol_cov_logdiag", mu, C)
    expected = np.linalg.solve(F, grad)
    n_mu, n_Cp = ng.natural_grad_chol_cov_logdiag(mu, C, g_mu, G)
    np.testing.assert_allclose(np.concatenate([n_mu, np.asarray(n_Cp)[rows, cols]]), expected, rtol=1e-9, atol=1e-10)
    Cp = np.tril(C, -1) + np.diag(np.log(np.diag(C)))
    L = np.tril(np.ones((d, d)), -1) + np.diag(1 / np.diag(C))
    printed = L * (Cp @ np.asarray(tril_half(C.T @ G)))  # the form the paper prints
    if d > 1:
        assert not np.allclose(np.asarray(printed)[rows, cols], expected[d:], atol=1e-6)


def test_logdiag_step_keeps_the_diagonal_positive_where_the_plain_step_hits_zero():
    """The digest's counterexample (Sec. 4.5): 1-D Gaussian target of variance 1, exact gradient, rho = 1,
    C0 = sqrt(3) gives C1 = 0 with the plain step; the log-diagonal step stays positive."""
    C0 = np.array([[np.sqrt(3.0)]])
    gC = np.array([[1.0 / np.sqrt(3.0) - np.sqrt(3.0)]])  # dL/dC = 1/C - C for N(0, 1)
    _, C_plain = ng.update_chol_cov(np.zeros(1), C0, np.zeros(1), gC, 1.0)
    _, C_log = ng.update_chol_cov_logdiag(np.zeros(1), C0, np.zeros(1), gC, 1.0)
    assert abs(float(C_plain[0, 0])) < 1e-12
    assert float(C_log[0, 0]) > 0
    with pytest.raises(ValueError, match="positive diagonal"):
        ng.natural_grad_chol_cov_logdiag(np.zeros(1), -C0, np.zeros(1), gC)


def test_logdiag_method_converges_like_tan_1n():
    tgt = kumar_t2()
    init = CholCov(np.array([-2.0, 2.5]), 0.2 * np.eye(2))
    a = run("tan-1N-log", tgt, init, 2000, 0.5, kl_tol=1e-10)
    b = run("tan-1N", tgt, init, 2000, 0.5, kl_tol=1e-10)
    assert a.status == b.status == "converged"
    assert np.all(np.diag(np.linalg.cholesky(a.cov[-1])) > 0)
    np.testing.assert_allclose(a.mean[-1], tgt.mean, atol=1e-4)


@pytest.mark.parametrize("d", [1, 4, 9])
def test_order_d2_single_draw_step_equals_the_matrix_form(d):
    rng = np.random.default_rng(d)
    C = np.tril(rng.normal(size=(d, d)))
    z, gh = rng.normal(size=d), rng.normal(size=d)
    n_mu, n_C = ng.natural_grad_chol_cov(None, C, gh, np.tril(np.outer(gh, z)))
    m2, s2 = ng.natural_step_chol_cov_sample(C, z, gh)
    np.testing.assert_allclose(m2, n_mu, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s2, n_C, rtol=1e-10, atol=1e-12)
    jitted = jax.jit(ng.natural_step_chol_cov_sample)(jnp.asarray(C), jnp.asarray(z), jnp.asarray(gh))
    np.testing.assert_allclose(jitted[1], n_C, rtol=1e-10, atol=1e-12)
