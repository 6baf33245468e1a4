"""The sparse-factor view of the Positive definiteness page (Tan 2025 Fig. 5, Sec. 7 intro): the package's
sparse natural gradients equal the Fisher-inverse of the RESTRICTED parameterisation (brute-force autodiff
Fisher over the free entries, tests/reference/fisher.py), masking the dense natural gradient does not
(for the arrow T), and every matrix of Fig. 5 keeps the factor's pattern."""

import numpy as np
import pytest

from tests.reference.fisher import fisher_matrix, free_indices
from vilab.family import natgrad as ng
from vilab.plots import pd as pdplots


def _brute_force(ex, factor):
    """F_restricted^-1 [grad_mu ; free entries of the gradient], split into (mu part, d x d factor part)."""
    d = ex["mask"].shape[0]
    if factor == "C":
        kind, st = "blockdiag_chol_cov", dict(blocks=ex["sizes"])
    else:
        kind, st = "arrow_chol_prec", dict(local_sizes=ex["sizes"], global_size=ex["global_size"])
    Fi = fisher_matrix(kind, ex["mu"], ex["factor"], **st)
    rows, cols = free_indices(kind, d, **st)
    g = np.concatenate([ex["grad_mu"], ex["grad"][rows, cols]])
    sol = np.linalg.solve(Fi, g)
    out = np.zeros((d, d))
    out[rows, cols] = sol[d:]
    return sol[:d], out


@pytest.mark.parametrize("factor,K,b,g", [("C", 4, 2, 0), ("C", 2, 3, 0), ("T", 3, 2, 2), ("T", 2, 1, 3)])
def test_sparse_natgrad_is_the_restricted_fisher_inverse(factor, K, b, g):
    ex = ng.sparse_natgrad_example(factor, K, b, g, seed=3)
    nat_mu, nat_F = _brute_force(ex, factor)
    scale = max(1.0, np.abs(nat_F).max())
    assert np.allclose(ex["sparse"], nat_F, atol=1e-8 * scale, rtol=0)
    assert np.allclose(ex["nat_mu"], nat_mu, atol=1e-8 * max(1.0, np.abs(nat_mu).max()), rtol=0)
    # the Fig. 5 chain ends in the same natural gradient
    last = ex["parts"]["C Hbarbar" if factor == "C" else "T Hbarbar"]
    assert np.allclose(last, ex["sparse"], atol=1e-12 * scale)


@pytest.mark.parametrize("K,b,g", [(3, 2, 2), (4, 2, 2), (2, 3, 1)])
def test_masked_dense_natgrad_is_wrong_for_the_arrow(K, b, g):
    ex = ng.sparse_natgrad_example("T", K, b, g, seed=1)
    _, nat_F = _brute_force(ex, "T")
    err = np.linalg.norm(ex["masked"] - nat_F)
    assert err > 1e-2 * np.linalg.norm(nat_F)  # a real, not a round-off, difference
    assert np.allclose(ex["diff"], ex["sparse"] - ex["masked"])
    # the masked dense one is indeed the dense Thm 1(ii) gradient with zeros put in
    dense = np.asarray(ng.natural_grad_chol_prec(ex["mu"], ex["factor"], ex["grad_mu"], ex["grad"])[1])
    assert np.allclose(ex["masked"], dense * ex["mask"])
    assert np.abs(dense * (1 - ex["mask"])).max() > 1e-3  # the dense one leaves the pattern


def test_masking_happens_to_be_right_for_a_block_diagonal_C():
    """At a block-diagonal C the Fisher does not couple free and zero entries (q factorises over blocks)."""
    ex = ng.sparse_natgrad_example("C", 4, 2, seed=0)
    assert np.abs(ex["diff"]).max() < 1e-12 * np.abs(ex["sparse"]).max()
    dense = np.asarray(ng.natural_grad_chol_cov(ex["mu"], ex["factor"], ex["grad_mu"], ex["grad"])[1])
    assert np.abs(dense * (1 - ex["mask"])).max() > 1e-3  # the dense gradient itself does leave the blocks


@pytest.mark.parametrize("factor", ["C", "T"])
def test_fig5_patterns(factor):
    ex = ng.sparse_natgrad_example(factor, 4, 2, 2, seed=2)
    M, p = ex["mask"], ex["parts"]
    pat = pdplots.nonzero_pattern
    F = "C" if factor == "C" else "T"
    # Gbar, Hbarbar and the natural gradient keep the factor's pattern (and fill it, for this random example)
    for key in ("Gbar", "Hbarbar", f"{F} Hbarbar"):
        assert np.array_equal(pat(p[key]), M), key
    # the dense Euclidean gradient does not
    assert pat(ex["grad"])[M == 0].sum() > 0
    d = M.shape[0]
    if factor == "C":
        assert np.array_equal(pat(p["C^T"]), M.T)
        blocks = np.kron(np.eye(4), np.ones((2, 2)))  # H = C^T Gbar is block diagonal with full blocks
        assert np.array_equal(pat(p["H"]), blocks)
    else:
        assert pat(p["H"])[np.triu_indices(d, 1)].sum() > 0  # H has entries above the diagonal...
        assert pat(p["H"])[(M == 0) & (np.tril(np.ones((d, d))) > 0)].sum() == 0  # ...but none in the zero blocks


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError):
        ng.sparse_natgrad_example("X")
    with pytest.raises(ValueError):
        ng.sparse_natgrad_example("C", 0, 2)
    with pytest.raises(ValueError):
        ng.sparse_natgrad_example("T", 2, 2, 0)
    with pytest.raises(ValueError):
        ng.masked_dense_natgrad("Q", np.eye(2), np.eye(2), np.eye(2))


def test_figures():
    ex = ng.sparse_natgrad_example("T", 3, 2, 2, seed=0)
    fig = pdplots.sparsity_figure(ex["parts"], "tan-2n")
    assert len(fig.data) == 5
    assert np.array_equal(np.asarray(fig.data[0].z), ex["mask"])
    fig = pdplots.natgrad_comparison_figure(ex["sparse"], ex["masked"], ex["mask"])
    n = int(ex["mask"].sum())
    assert len(fig.data) == 3 and all(len(t.x) == n for t in fig.data)
    assert np.allclose(fig.data[2].y, fig.data[0].y - fig.data[1].y)
    with pytest.raises(ValueError):
        pdplots.natgrad_comparison_figure(ex["sparse"], ex["masked"][:2], ex["mask"])
    with pytest.raises(ValueError):
        pdplots.sparsity_figure({})
