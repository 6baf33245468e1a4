import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vilab.family.linalg import (
    commutation_matrix,
    dim_from_vech_length,
    duplication_matrix,
    elimination_matrix,
    tril_half,
    unvec,
    unvech,
    vec,
    vech,
    vech_length,
)


@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_vech_column_major_order(d):
    X = np.arange(d * d, dtype=float).reshape(d, d)
    expected = np.concatenate([X[j:, j] for j in range(d)])  # column by column, lower part
    np.testing.assert_array_equal(vech(X), expected)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_vech_unvech_round_trips(d, seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    S = A + A.T
    np.testing.assert_allclose(unvech(vech(S), symmetric=True), S)
    np.testing.assert_allclose(unvech(vech(A)), np.tril(A))
    v = rng.normal(size=vech_length(d))
    np.testing.assert_allclose(vech(unvech(v)), v)
    np.testing.assert_allclose(unvec(vec(A), d), A)


@pytest.mark.parametrize("d", [1, 2, 3, 4, 6])
def test_K_L_D_identities(d, rng):
    A = rng.normal(size=(d, d))
    S = A + A.T
    K, Lm, Dm = commutation_matrix(d), elimination_matrix(d), duplication_matrix(d)
    np.testing.assert_allclose(K @ vec(A), vec(A.T))
    np.testing.assert_allclose(K @ K, np.eye(d * d))
    np.testing.assert_allclose(Lm @ vec(A), vech(A))
    np.testing.assert_allclose(Dm @ vech(S), vec(S))
    np.testing.assert_allclose(Lm @ Dm, np.eye(vech_length(d)))
    np.testing.assert_allclose(Lm @ Lm.T, np.eye(vech_length(d)))
    # L^T vech(X) = vec(X) for lower-triangular X (Tan digest, Sec. 1)
    np.testing.assert_allclose(Lm.T @ vech(np.tril(A)), vec(np.tril(A)))
    # Lemma S1(ii): (L N L^T)^-1 = 2 I - L K L^T with N = (K + I)/2
    N = 0.5 * (K + np.eye(d * d))
    np.testing.assert_allclose(np.linalg.inv(Lm @ N @ Lm.T), 2 * np.eye(vech_length(d)) - Lm @ K @ Lm.T, atol=1e-12)


def test_tril_half(rng):
    A = rng.normal(size=(4, 4))
    B = np.tril(A)
    B[np.diag_indices(4)] *= 0.5
    np.testing.assert_allclose(tril_half(A), B)
    batch = rng.normal(size=(3, 4, 4))
    np.testing.assert_allclose(tril_half(batch)[1], tril_half(batch[1]))


def test_bad_vech_length():
    with pytest.raises(ValueError, match="not such a length"):
        dim_from_vech_length(5)
    with pytest.raises(ValueError):
        unvech(np.ones(4))
