"""Sparse Cholesky factors of the precision, Sigma^{-1} = T T^T, stored by blocks: re-exported from
:mod:`vilab.families_block`, where the block linear algebra and the :class:`BlockPrecFamily` member of
the Gaussian-family protocol (:mod:`vilab.families`) now live. Every name of the old module still
imports from here.
"""

from __future__ import annotations

from ..families_block import (  # noqa: F401  (re-exports, private helpers included for old callers)
    BlockFactor,
    BlockPrecFamily,
    Structure,
    __all__,
    _affine_scan,
    _check,
    _factor_diagonal,
    _marginal_sd,
    _split,
    _tril_idx,
    block_map,
    dense_mask,
    diag_positions,
    from_dense,
    identity_factor,
    log_abs_det,
    log_q_whitened_T,
    marginal_sd,
    mask_outer,
    mask_outer_mean,
    matvec_T,
    matvec_Tt,
    n_free,
    natural_grad_arrow,
    natural_grad_columns,
    pack,
    sigma_on_pattern,
    solve_T,
    solve_Tt,
    structure_of,
    to_dense,
    tril_half_blocks,
    unpack,
)
