"""vilab.online, the whole grid end to end: for every one of the 76 cells the paper defines, one
time step of the library (F-form, Woodbury, Gram-eigh projection, exact DLR sampler) equals a
dense float64 brute-force evaluation of its defining equations on a tiny model (P = 17 <= 20):
vilab.online.reference.reference_update."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import vilab  # noqa: F401  (x64)
from tests.test_online import _GRID_NET, _grid_problem
from vilab.online.families import init_belief
from vilab.online.grid import grid_names, make_method, update
from vilab.online.likelihoods import categorical
from vilab.online.reference import reference_update

_GRID_ALPHA = {"bong": None, "blr": 0.5, "bog": 0.05, "bbb": 0.05}
_GRID_VALID = grid_names(2, defined_only=True)


def test_grid_has_76_defined_cells():
    assert len(_GRID_VALID) == 76 and len(grid_names(2)) == 80


@pytest.mark.parametrize("name", _GRID_VALID)
def test_every_grid_update_against_dense_reference(name):
    """All 76 defined cells (blr/bbb with I = 2 inner iterations, mc with M = 3 draws): the library's
    step (F-form, Woodbury, Gram-eigh projection, exact DLR sampler) equals a dense float64 evaluation
    of the defining equations: (g, G) from H^T R^+ H / per-sample autodiff (reference_curvature), the
    NGD/GD step by autodiff in the algorithm's coordinates (reference_step), the DLR projection by a
    dense eigendecomposition."""
    f, mu0, x, y = _grid_problem()
    alg = name.split("-")[0]
    m = make_method(name, alpha=_GRID_ALPHA[alg], n_iter=2 if alg in ("blr", "bbb") else 1, n_samples=3, n_probes=4)
    assert _GRID_NET.n_params == 17
    prior = init_belief(m.family, mu0, 0.5, m.rank, key=jax.random.PRNGKey(5), w0_scale=0.3 if m.family == "dlr" else 0.0)
    key = jax.random.PRNGKey(3)
    lik = categorical(3)
    out = update(m, f, lik, prior, x, y, key)
    ref = reference_update(m, f, lik, prior, x, y, key)
    assert out.mu.dtype == jnp.float64
    np.testing.assert_allclose(out.mu, ref.mu, rtol=1e-9, atol=1e-10)
    if m.family == "dlr":
        np.testing.assert_allclose(out.ups, ref.ups, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(out.W @ out.W.T, ref.W @ ref.W.T, rtol=1e-9, atol=1e-9)
    else:
        np.testing.assert_allclose(out[1], ref[1], rtol=1e-9, atol=1e-10)
    # the step did something (no silent no-op): the belief moved away from the prior
    assert float(jnp.max(jnp.abs(out.mu - prior.mu))) > 1e-6
