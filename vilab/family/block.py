"""Block (arrow / banded) Cholesky factors of the precision, Sigma^{-1} = T T^T: the linear algebra and
the :class:`BlockPrecFamily` member of the Gaussian-family protocol (:mod:`vilab.family.dense`).

Sparse Cholesky factors of the precision stored by blocks (O(n) memory and work).

theta = (b_1, ..., b_n, theta_G), locals of size r, globals of size g.

* ell = 0, the *arrow* factor of Tan (2025) eq. 4 (Tan & Nott 2018; Chen, Nott & Tan Sec. 4):
  lower-triangular diagonal blocks T_1..T_n, T_g and a dense last block row T_g1..T_gn.
* ell = 1, the *banded* factor of a first-order state-space model (Chen, Nott & Tan Sec. 4,
  Rothman et al. 2010): block-bidiagonal local part plus the dense global row (scalar states, r = 1).

A :class:`BlockFactor` holds ``diag`` (n, r, r) = T_i, ``lower`` (n-1, r, r) = T_{i+1,i} (ell = 1)
or None, ``border`` (n, g, r) = T_gi, ``gg`` (g, g) = T_g. Gradients with respect to the free
entries of T use the same container (only the free entries are meaningful). The flat vector of
free parameters (what the optimizers see) is ``pack``/``unpack``.

Triangular solves are block back-substitutions (Tan (2025) Sec. 7.3): T v = w gives
v_i = T_i^{-1} w_i, v_g = T_g^{-1}(w_g - sum_i T_gi v_i); T^T x = z gives x_g = T_g^{-T} z_g,
x_i = T_i^{-T}(z_i - T_gi^T x_g). For ell = 1 the local recursion is a first-order linear
recurrence, evaluated with ``jax.lax.associative_scan`` (O(n) work, O(log n) depth).

:class:`BlockPrecFamily` (a hashable NamedTuple holding the :class:`Structure`) is the member of the
Gaussian-family protocol: q = N(mu, (T T^T)^{-1}) given either as the flat vector
lambda = (mu, :func:`pack` (T)) or as a pair (mu, BlockFactor); it offers mean, variances, sample,
logpdf / log_q_whitened, half_logdet / entropy, solve (Sigma^{-1} b), cov_apply (Sigma b), validity
codes, dense covariance / precision (small d, tests), kl via :func:`vilab.family.gaussian.kl`, Tan's Thm 2
first-order estimate on the pattern and the natural gradient on the pattern.
The hierarchical models (:mod:`vilab.hierarchical`) take their q from here.
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular

from ..core.algorithm import range_code_factor

__all__ = ["Structure", "BlockFactor", "structure_of", "identity_factor", "to_dense", "from_dense", "dense_mask",
           "solve_T", "solve_Tt", "matvec_T", "matvec_Tt", "log_abs_det", "mask_outer", "mask_outer_mean",
           "n_free", "pack", "unpack", "diag_positions", "natural_grad_arrow", "tril_half_blocks",
           "block_map", "marginal_sd", "sigma_on_pattern", "natural_grad_columns", "BlockPrecFamily",
           "log_q_whitened_T"]

#: validity codes, the shared step codes of vilab.core.CODES (the same numbers as vilab.family.dense)
OK, NONFINITE, SINGULAR_FACTOR = 0, 2, 5

_LOG2PI = math.log(2.0 * math.pi)


class Structure(NamedTuple):
    """Static description of the pattern: n local blocks of size r, g globals, Markov order ell."""

    n: int
    r: int
    g: int
    ell: int

    @property
    def d(self) -> int:
        return self.n * self.r + self.g


class BlockFactor(NamedTuple):
    """Block storage of an arrow (ell = 0) or banded (ell = 1) lower-triangular factor."""

    diag: jax.Array
    lower: jax.Array | None
    border: jax.Array
    gg: jax.Array


def structure_of(model) -> Structure:
    """The Structure of a :class:`vilab.hierarchical.models.HierModel`."""
    st = Structure(int(model.n_local), int(model.local_size), int(model.global_size), int(model.ell))
    _check(st)
    return st


def _check(st: Structure):
    if st.ell not in (0, 1):
        raise ValueError("Only random-effects (ell = 0) and first-order state-space (ell = 1) patterns are supported.")
    if st.ell == 1 and st.r != 1:
        raise ValueError("The banded (state-space) factor is implemented for scalar states (block size r = 1).")
    if min(st.n, st.r, st.g) < 1:
        raise ValueError("Need at least one local block, block size >= 1 and at least one global parameter.")


def block_map(f, *factors):
    """Apply f leafwise to BlockFactors (None stays None)."""
    return jax.tree_util.tree_map(f, *factors)


def identity_factor(st: Structure, scale: float = 1.0) -> BlockFactor:
    """T = scale * I in block storage."""
    _check(st)
    n, r, g = st.n, st.r, st.g
    return BlockFactor(scale * jnp.broadcast_to(jnp.eye(r), (n, r, r)),
                       jnp.zeros((n - 1, r, r)) if st.ell == 1 else None,
                       jnp.zeros((n, g, r)), scale * jnp.eye(g))


def dense_mask(st: Structure) -> np.ndarray:
    """Boolean d x d pattern of the free entries (Tan (2025) eq. 4 / Chen et al. Sec. 4)."""
    ones = BlockFactor(np.ones((st.n, st.r, st.r)), np.ones((st.n - 1, st.r, st.r)) if st.ell == 1 else None,
                       np.ones((st.n, st.g, st.r)), np.ones((st.g, st.g)))
    return to_dense(ones, st) != 0


def to_dense(F: BlockFactor, st: Structure) -> np.ndarray:
    """The d x d lower-triangular matrix (tests, plots and final summaries only)."""
    n, r, g = st.n, st.r, st.g
    d = st.d
    M = np.zeros((d, d))
    diag = np.asarray(F.diag)
    for i in range(n):
        M[i * r:(i + 1) * r, i * r:(i + 1) * r] = np.tril(diag[i])
    if st.ell == 1:
        low = np.asarray(F.lower)
        for i in range(n - 1):
            M[(i + 1) * r:(i + 2) * r, i * r:(i + 1) * r] = low[i]
    M[n * r:, :n * r] = np.asarray(F.border).transpose(1, 0, 2).reshape(g, n * r)
    M[n * r:, n * r:] = np.tril(np.asarray(F.gg))
    return M


def from_dense(M, st: Structure) -> BlockFactor:
    """Extract the blocks of a d x d matrix (entries outside the pattern are dropped)."""
    M = jnp.asarray(M)
    n, r, g = st.n, st.r, st.g
    nr = n * r
    loc = M[:nr, :nr].reshape(n, r, n, r)
    idx = jnp.arange(n)
    diag = jnp.tril(loc[idx, :, idx, :])
    lower = loc[idx[1:], :, idx[:-1], :] if st.ell == 1 else None
    border = M[nr:, :nr].reshape(g, n, r).transpose(1, 0, 2)
    return BlockFactor(diag, lower, border, jnp.tril(M[nr:, nr:]))


def _split(x, st: Structure):
    nr = st.n * st.r
    return x[:nr].reshape(st.n, st.r), x[nr:]


def _affine_scan(a, c, reverse=False):
    """x_t = a_t x_{t-1} + c_t (x_0 = 0), all t at once (associative scan of affine maps)."""
    def comb(p, q):
        return q[0] * p[0], q[0] * p[1] + q[1]

    return jax.lax.associative_scan(comb, (a, c), reverse=reverse)[1]


def solve_T(F: BlockFactor, w, st: Structure):
    """v = T^{-1} w by block forward substitution (Tan (2025) Sec. 7.3)."""
    wl, wg = _split(w, st)
    if st.ell == 0:
        vl = jax.vmap(lambda A, b: solve_triangular(A, b, lower=True))(F.diag, wl)
    else:
        dd = F.diag[:, 0, 0]
        s = jnp.concatenate([jnp.zeros(1), F.lower[:, 0, 0]])  # s_t = T_{t,t-1}
        vl = _affine_scan(-s / dd, wl[:, 0] / dd)[:, None]
    vg = solve_triangular(F.gg, wg - jnp.einsum("igr,ir->g", F.border, vl), lower=True)
    return jnp.concatenate([vl.reshape(-1), vg])


def solve_Tt(F: BlockFactor, z, st: Structure):
    """x = T^{-T} z by block back substitution (theta = mu + T^{-T} z samples q)."""
    zl, zg = _split(z, st)
    xg = solve_triangular(F.gg, zg, lower=True, trans=1)
    rl = zl - jnp.einsum("igr,g->ir", F.border, xg)
    if st.ell == 0:
        xl = jax.vmap(lambda A, b: solve_triangular(A, b, lower=True, trans=1))(F.diag, rl)
    else:
        dd = F.diag[:, 0, 0]
        s = jnp.concatenate([F.lower[:, 0, 0], jnp.zeros(1)])  # s_t = T_{t+1,t}
        xl = _affine_scan(-s / dd, rl[:, 0] / dd, reverse=True)[:, None]
    return jnp.concatenate([xl.reshape(-1), xg])


def matvec_T(F: BlockFactor, a, st: Structure):
    """T a."""
    al, ag = _split(a, st)
    yl = jnp.einsum("irs,is->ir", jnp.tril(F.diag), al)
    if st.ell == 1:
        yl = yl.at[1:].add(jnp.einsum("irs,is->ir", F.lower, al[:-1]))
    yg = jnp.einsum("igr,ir->g", F.border, al) + jnp.tril(F.gg) @ ag
    return jnp.concatenate([yl.reshape(-1), yg])


def matvec_Tt(F: BlockFactor, a, st: Structure):
    """T^T a."""
    al, ag = _split(a, st)
    yl = jnp.einsum("isr,is->ir", jnp.tril(F.diag), al) + jnp.einsum("igr,g->ir", F.border, ag)
    if st.ell == 1:
        yl = yl.at[:-1].add(jnp.einsum("isr,is->ir", F.lower, al[1:]))
    yg = jnp.tril(F.gg).T @ ag
    return jnp.concatenate([yl.reshape(-1), yg])


def log_abs_det(F: BlockFactor):
    """log |det T| = sum log |T_kk| (so log det Sigma^{-1} = 2 log |det T|)."""
    return jnp.sum(jnp.log(jnp.abs(jnp.diagonal(F.diag, axis1=1, axis2=2)))) + jnp.sum(
        jnp.log(jnp.abs(jnp.diag(F.gg))))


def mask_outer(p, q, st: Structure) -> BlockFactor:
    """p q^T restricted to T's pattern ("elements corresponding to zeros in T are set to 0", Tan Alg. 2S)."""
    pl, pg = _split(p, st)
    ql, qg = _split(q, st)
    diag = jnp.tril(jnp.einsum("ir,is->irs", pl, ql))
    lower = jnp.einsum("ir,is->irs", pl[1:], ql[:-1]) if st.ell == 1 else None
    return BlockFactor(diag, lower, jnp.einsum("g,ir->igr", pg, ql), jnp.tril(jnp.outer(pg, qg)))


def mask_outer_mean(P, Q, st: Structure) -> BlockFactor:
    """(1/B) sum_b mask(p_b q_b^T) for rows of P, Q (B, d): the masked low-rank products of Chen Sec. 6."""
    outs = jax.vmap(lambda p, q: mask_outer(p, q, st))(P, Q)
    return block_map(lambda x: jnp.mean(x, 0), outs)


def tril_half_blocks(F: BlockFactor) -> BlockFactor:
    """The paper's double bar on the diagonal blocks (lower triangle, halved diagonal); others unchanged."""
    def th(A):
        return jnp.tril(A) - 0.5 * jnp.diag(jnp.diagonal(A, axis1=-2, axis2=-1)) if A.ndim == 2 else \
            jnp.tril(A) - 0.5 * jax.vmap(jnp.diag)(jnp.diagonal(A, axis1=-2, axis2=-1))

    return BlockFactor(th(F.diag), F.lower, F.border, th(F.gg))


# ---------------------------------------------------------------------------------------- flat vector


def _tril_idx(r):
    rows, cols = np.tril_indices(r)
    o = np.lexsort((rows, cols))  # column-major vech order
    return rows[o], cols[o]


def n_free(st: Structure) -> int:
    """Number of free entries of T (Tan's l_lambda minus d)."""
    q = st.r * (st.r + 1) // 2
    return st.n * q + (st.n - 1) * st.r * st.r * (st.ell == 1) + st.n * st.g * st.r + st.g * (st.g + 1) // 2


def pack(F: BlockFactor, st: Structure):
    """Flat vector of the free entries: vech(T_i) for all i, T_{i+1,i}, vec(T_gi), vech(T_g)."""
    ri, ci = _tril_idx(st.r)
    rg, cg = _tril_idx(st.g)
    parts = [F.diag[:, ri, ci].reshape(-1)]
    if st.ell == 1:
        parts.append(F.lower.reshape(-1))
    parts += [F.border.reshape(-1), F.gg[rg, cg]]
    return jnp.concatenate(parts)


def unpack(v, st: Structure) -> BlockFactor:
    """Inverse of :func:`pack`."""
    n, r, g = st.n, st.r, st.g
    ri, ci = _tril_idx(r)
    rg, cg = _tril_idx(g)
    q = len(ri)
    o = 0
    diag = jnp.zeros((n, r, r), v.dtype).at[:, ri, ci].set(v[o:o + n * q].reshape(n, q))
    o += n * q
    lower = None
    if st.ell == 1:
        lower = v[o:o + (n - 1) * r * r].reshape(n - 1, r, r)
        o += (n - 1) * r * r
    border = v[o:o + n * g * r].reshape(n, g, r)
    o += n * g * r
    gg = jnp.zeros((g, g), v.dtype).at[rg, cg].set(v[o:])
    return BlockFactor(diag, lower, border, gg)


def diag_positions(st: Structure) -> np.ndarray:
    """Positions of the diagonal entries of T inside :func:`pack`'s vector."""
    ri, ci = _tril_idx(st.r)
    q = len(ri)
    loc = (np.arange(st.n)[:, None] * q + np.where(ri == ci)[0][None, :]).reshape(-1)
    rg, cg = _tril_idx(st.g)
    off = n_free(st) - len(rg)
    return np.concatenate([loc, off + np.where(rg == cg)[0]])


# --------------------------------------------------------------------------- Tan (2025) Theorem 4


def natural_grad_arrow(F: BlockFactor, grad_mu, E: BlockFactor, st: Structure):
    """Natural gradient for (mu, T) with the arrow factor, Tan (2025) Theorem 4 / Supp. S6.1, by blocks.

    E holds the Euclidean gradient with respect to the free entries: A_i (diag), G_gi (border),
    G_g (gg). Then G_i = A_i + T_i^{-T} T_gi^T G_gi, H = T_d^T Gbar with blocks H_i = T_i^T Gbar_i,
    H_gi = T_g^T G_gi (not halved), H_g = T_g^T Gbar_g, and NG_T = T Hbarbar on T's pattern:
    T_i Hbb_i, T_gi Hbb_i + T_g H_gi (= T_gi Hbb_i + T_g T_g^T G_gi), T_g Hbb_g. NG_mu = Sigma grad_mu.
    O(n (r + g)^3) work instead of O(d^3).
    """
    if st.ell != 0:
        raise ValueError("Theorem 4 is the natural gradient of the arrow factor (random-effects models, ell = 0).")
    Ti, Tgi, Tg = jnp.tril(F.diag), F.border, jnp.tril(F.gg)
    corr = jax.vmap(lambda A, B: solve_triangular(A, B, lower=True, trans=1))(Ti, jnp.einsum("igr,igs->irs", Tgi,
                                                                                              E.border))
    Gi = jnp.tril(jnp.tril(E.diag) + corr)
    Hi = jnp.einsum("isr,ist->irt", Ti, Gi)
    Hgi = jnp.einsum("hg,ihr->igr", Tg, E.border)
    Hg = Tg.T @ jnp.tril(E.gg)
    Hbb = tril_half_blocks(BlockFactor(Hi, None, Hgi, Hg))
    NG = BlockFactor(jnp.einsum("irs,ist->irt", Ti, Hbb.diag), None,
                     jnp.einsum("igs,isr->igr", Tgi, Hbb.diag) + jnp.einsum("gh,ihr->igr", Tg, Hbb.border),
                     Tg @ Hbb.gg)
    nat_mu = solve_Tt(F, solve_T(F, grad_mu, st), st)
    return nat_mu, NG


# ------------------------------------------------------------- any pattern: the Fisher by columns


def sigma_on_pattern(F: BlockFactor, st: Structure):
    """The entries of Sigma = T^{-T} T^{-1} that the column Fisher needs, in O(n) (no d x d inverse).

    With T = [[L, 0], [B, T_g]] (L the local part): Sigma_{.G} = T^{-T} T^{-1} E_G (g pairs of block
    solves), U = -Sigma_{LG} T_g, and Sigma_LL = S + U U^T with S = L^{-T} L^{-1}: block diagonal
    S_i = T_i^{-T} T_i^{-1} for the arrow (ell = 0); for the band (ell = 1, r = 1) its diagonal and
    first off-diagonal follow from L^T S = L^{-1} by the backward recursion
    S_nn = 1/l_n^2,  S_jj = 1/l_j^2 + (s_j/l_j)^2 S_{j+1,j+1},  S_{j,j+1} = -(s_j/l_j) S_{j+1,j+1}
    (l_j = T_jj, s_j = T_{j+1,j}; Takahashi-style selected inversion), one associative scan.
    Returns (diag (n, r, r) = Sigma_ii, sub (n-1, r, r) = Sigma_{i+1,i} or None, border (n, r, g) =
    Sigma_iG, gg (g, g) = Sigma_GG).
    """
    n, r, g = st.n, st.r, st.g
    nr = n * r
    EG = jnp.zeros((g, st.d)).at[jnp.arange(g), nr + jnp.arange(g)].set(1.0)
    cols = jax.vmap(lambda e: solve_Tt(F, solve_T(F, e, st), st))(EG)  # (g, d) = Sigma[G, :]
    SLG = cols[:, :nr].T.reshape(n, r, g)
    SGG = 0.5 * (cols[:, nr:] + cols[:, nr:].T)
    U = -jnp.einsum("irg,gh->irh", SLG, jnp.tril(F.gg))
    UU = jnp.einsum("irg,isg->irs", U, U)
    if st.ell == 0:
        Linv = jax.vmap(lambda A: solve_triangular(A, jnp.eye(r), lower=True))(jnp.tril(F.diag))
        return jnp.einsum("ikr,iks->irs", Linv, Linv) + UU, None, SLG, SGG
    l = F.diag[:, 0, 0]
    s = jnp.concatenate([F.lower[:, 0, 0], jnp.zeros(1)])
    Sd = _affine_scan((s / l) ** 2, 1.0 / l**2, reverse=True)
    Ssub = -(s[:-1] / l[:-1]) * Sd[1:]
    sub = Ssub[:, None, None] + jnp.einsum("irg,isg->irs", U[1:], U[:-1])
    return Sd[:, None, None] + UU, sub, SLG, SGG


def natural_grad_columns(F: BlockFactor, grad_mu, E: BlockFactor, st: Structure):
    """Natural gradient for (mu, T) on ANY lower-triangular pattern of T (arrow or band), by columns.

    The Fisher metric of N(mu, (T T^T)^{-1}) in T is (1/2) tr(Sigma dOmega Sigma dOmega), dOmega =
    dT T^T + T dT^T; with A = T^{-1} dT (lower triangular) it is tr(A^2) + ||A||_F^2 =
    sum_j [dT_j^T Sigma dT_j + (dT_jj / T_jj)^2]: no coupling between columns. So restricting T to a
    pattern (Tan (2025) Sec. 7 intro: "F11^{-1} g1", not a masked dense natural gradient) gives, for
    the free rows R_j of column j,  NG_j = (Sigma_{R_j R_j} + e_j e_j^T / T_jj^2)^{-1} grad_j,  and
    NG_mu = Sigma grad_mu. For the arrow this equals Tan (2025) Theorem 4 (:func:`natural_grad_arrow`,
    tested); for the band of a state-space model (Chen, Nott & Tan Sec. 4) it is our extension of
    Algorithm 2S: Sigma on the pattern by :func:`sigma_on_pattern`, then one (r + g) or (2 + g)
    linear solve per column, O(n) per iteration. E holds the Euclidean gradient on the free entries.
    """
    n, r, g = st.n, st.r, st.g
    Sd, Ssub, SLG, SGG = sigma_on_pattern(F, st)
    Td, Tg = jnp.tril(F.diag), jnp.tril(F.gg)
    nat_mu = solve_Tt(F, solve_T(F, grad_mu, st), st)

    def solve_masked(Fm, gv, keep):
        """Solve on the kept rows only (the others: identity rows, zero right-hand side)."""
        K = keep[:, None] & keep[None, :]
        Fm = jnp.where(K, Fm, jnp.eye(Fm.shape[0]))
        return jnp.where(keep, jnp.linalg.solve(Fm, jnp.where(keep, gv, 0.0)), 0.0)

    # global columns: rows k..g-1 of the global block
    def gcol(k):
        keep = jnp.arange(g) >= k
        Fm = SGG + jnp.zeros((g, g)).at[k, k].set(1.0 / Tg[k, k] ** 2)
        return solve_masked(Fm, E.gg[:, k], keep)

    NGgg = jax.vmap(gcol)(jnp.arange(g)).T
    if st.ell == 0:
        # column k of block i: rows k..r-1 of block i, then the globals
        def lcol(Si, SiG, Ti, Ei, EGi, k):
            keep = jnp.concatenate([jnp.arange(r) >= k, jnp.ones(g, bool)])
            Fm = jnp.block([[Si, SiG], [SiG.T, SGG]]).at[k, k].add(1.0 / Ti[k, k] ** 2)
            x = solve_masked(Fm, jnp.concatenate([Ei[:, k], EGi[:, k]]), keep)
            return x[:r], x[r:]

        per_block = jax.vmap(lambda Si, SiG, Ti, Ei, EGi: jax.vmap(
            lambda k: lcol(Si, SiG, Ti, Ei, EGi, k))(jnp.arange(r)))
        xl, xg = per_block(Sd, SLG, Td, E.diag, E.border)  # (n, r[col], r), (n, r[col], g)
        return nat_mu, BlockFactor(jnp.swapaxes(xl, 1, 2), None, jnp.swapaxes(xg, 1, 2), NGgg)
    # band, r = 1: column j has rows j, j+1 (j < n-1) and the globals
    Sd1 = Sd[:, 0, 0]
    S_next = jnp.concatenate([Sd1[1:], jnp.ones(1)])
    S_sub = jnp.concatenate([Ssub[:, 0, 0], jnp.zeros(1)])
    SLG1 = SLG[:, 0, :]
    SLG_next = jnp.concatenate([SLG1[1:], jnp.zeros((1, g))])
    E_low = jnp.concatenate([E.lower[:, 0, 0], jnp.zeros(1)])

    def bcol(j, sjj, sj1, s11, sjG, s1G, tjj, ed, el, eg):
        top = jnp.array([[sjj + 1.0 / tjj**2, sj1], [sj1, s11]])
        Fm = jnp.block([[top, jnp.stack([sjG, s1G])], [jnp.stack([sjG, s1G], 1), SGG]])
        keep = jnp.concatenate([jnp.array([True, j < n - 1]), jnp.ones(g, bool)])
        return solve_masked(Fm, jnp.concatenate([jnp.stack([ed, el]), eg]), keep)

    X = jax.vmap(bcol)(jnp.arange(n), Sd1, S_sub, S_next, SLG1, SLG_next, Td[:, 0, 0], E.diag[:, 0, 0], E_low,
                       E.border[:, :, 0])
    return nat_mu, BlockFactor(X[:, 0, None, None], X[:-1, 1, None, None], X[:, 2:, None], NGgg)


def marginal_sd(F: BlockFactor, st: Structure) -> np.ndarray:
    """Marginal standard deviations sqrt(diag Sigma), Sigma = T^{-T} T^{-1}, from :func:`sigma_on_pattern` (O(n))."""
    return np.asarray(_marginal_sd(block_map(jnp.asarray, F), st))


@partial(jax.jit, static_argnums=1)
def _marginal_sd(F, st):
    Sd, _, _, SGG = sigma_on_pattern(F, st)
    return jnp.sqrt(jnp.concatenate([jnp.diagonal(Sd, axis1=1, axis2=2).reshape(-1), jnp.diag(SGG)]))


# ---------------------------------------------------------------- the member of the family protocol


def log_q_whitened_T(log_det_T, z):
    """log q(theta) at theta = mu + T^{-T} z, q = N(mu, (T T^T)^{-1}): log|det T| - z'z/2 - (d/2) log 2 pi.

    z of shape (d,) or (n, d); ``log_det_T`` = :func:`log_abs_det` (T) (the one formula of log q for this
    family: :meth:`BlockPrecFamily.log_q_whitened` and ``vilab.hierarchical.fit.log_q`` call it)."""
    return log_det_T - 0.5 * jnp.sum(z * z, -1) - 0.5 * z.shape[-1] * _LOG2PI


def _factor_diagonal(F: BlockFactor):
    """The d diagonal entries of T (locals block by block, then the globals)."""
    return jnp.concatenate([jnp.diagonal(F.diag, axis1=1, axis2=2).reshape(-1), jnp.diagonal(F.gg)])


class BlockPrecFamily(NamedTuple):
    """q = N(mu, Sigma), Sigma^{-1} = T T^T with T the arrow (ell = 0) or banded (ell = 1) block factor.

    ``q`` in every method is the flat vector lambda = (mu, :func:`pack` (T)) (length :attr:`size`) or a
    pair (mu, :class:`BlockFactor`). Work is O(n) per operation except the dense helpers
    (:meth:`covariance`, :meth:`precision`, :meth:`dense_factor`, :meth:`gaussian`, :meth:`kl`), meant for
    small d and tests.
    """

    st: Structure

    # ------------------------------------------------------------------------------ storage
    @property
    def d(self) -> int:
        return self.st.d

    @property
    def size(self) -> int:
        """Length of lambda: d means plus the free entries of T."""
        return self.st.d + n_free(self.st)

    def check(self) -> "BlockPrecFamily":
        """The family itself, after checking its structure (ValueError with a sentence otherwise)."""
        _check(self.st)
        return self

    def pack(self, mu, F: BlockFactor):
        """The flat lambda = (mu, free entries of T)."""
        return jnp.concatenate([jnp.asarray(mu), pack(F, self.st)])

    def unpack(self, lam):
        """(mu, T as a BlockFactor) from the flat lambda."""
        d = self.st.d
        return lam[:d], unpack(lam[d:], self.st)

    def parts(self, q):
        """(mu, BlockFactor) from a flat lambda or a (mu, BlockFactor) pair."""
        if isinstance(q, tuple) and not isinstance(q, BlockFactor):
            return q[0], q[1]
        return self.unpack(q)

    def diag_index(self) -> np.ndarray:
        """Positions in the flat lambda of T's diagonal entries."""
        return self.st.d + diag_positions(self.st)

    def identity(self, scale: float = 1.0):
        """The flat lambda of mu = 0, T = scale * I."""
        return self.pack(jnp.zeros(self.st.d), identity_factor(self.st, scale))

    # ------------------------------------------------------------------------ distribution
    def mean(self, q):
        return self.parts(q)[0]

    def marginal_sd(self, q):
        """sqrt(diag Sigma) in O(n) (:func:`sigma_on_pattern`), traceable."""
        return _marginal_sd(self.parts(q)[1], self.st)

    def variances(self, q):
        """diag(Sigma), a (d,) vector, in O(n) (the square of :meth:`marginal_sd`)."""
        return self.marginal_sd(q) ** 2

    def solve(self, q, b):
        """Sigma^{-1} b = T (T^T b) (b of shape (d,) or (d, k)): two block products, no solve."""
        F = self.parts(q)[1]
        if jnp.ndim(b) == 2:
            return jax.vmap(lambda c: self.solve((None, F), c), in_axes=1, out_axes=1)(b)
        return matvec_T(F, matvec_Tt(F, b, self.st), self.st)

    def cov_apply(self, q, b):
        """Sigma b = T^{-T} (T^{-1} b) (b of shape (d,) or (d, k)): two block back-substitutions."""
        F = self.parts(q)[1]
        if jnp.ndim(b) == 2:
            return jax.vmap(lambda c: self.cov_apply((None, F), c), in_axes=1, out_axes=1)(b)
        return solve_Tt(F, solve_T(F, b, self.st), self.st)

    def offsets(self, q, z):
        """T^{-T} z for z of shape (d,) or (n, d): theta - mu of the draw with noise z."""
        F = self.parts(q)[1]
        if jnp.ndim(z) == 2:
            return jax.vmap(lambda zz: solve_Tt(F, zz, self.st))(z)
        return solve_Tt(F, z, self.st)

    def transform(self, q, z):
        """theta = mu + T^{-T} z (z of shape (d,) or (n, d)): a block back-substitution."""
        return self.mean(q) + self.offsets(q, z)

    def whiten(self, q, theta):
        """z = T^T (theta - mu), the inverse of :meth:`transform` (theta of shape (d,) or (n, d))."""
        mu, F = self.parts(q)
        if jnp.ndim(theta) == 2:
            return jax.vmap(lambda t: matvec_Tt(F, t - mu, self.st))(theta)
        return matvec_Tt(F, theta - mu, self.st)

    def sample(self, key, q, n: int):
        """n draws theta = mu + T^{-T} z, z ~ N(0, I): shape (n, d), O(n_draws n)."""
        if isinstance(n, (int, np.integer)) and n < 1:
            raise ValueError(f"The number of draws n must be at least 1; got {n}.")
        z = jax.random.normal(key, (n, self.st.d), dtype=jnp.float64)
        return self.transform(q, z)

    def half_logdet(self, q):
        """1/2 log|Sigma| = -log|det T|."""
        return -log_abs_det(self.parts(q)[1])

    def entropy(self, q):
        """Entropy of q: d/2 (1 + log 2 pi) + 1/2 log|Sigma|."""
        return 0.5 * self.st.d * (1.0 + _LOG2PI) + self.half_logdet(q)

    def log_q_whitened(self, q, z):
        """log q(theta) at theta = mu + T^{-T} z (:func:`log_q_whitened_T`)."""
        return log_q_whitened_T(log_abs_det(self.parts(q)[1]), z)

    def logpdf(self, q, theta):
        """log q(theta) for theta of shape (d,) or (n, d)."""
        return self.log_q_whitened(q, self.whiten(q, theta))

    def validity(self, q):
        """A vilab.core step code: 2 if mu or T is not finite, 5 if T has a zero on its diagonal (q is no
        longer a Gaussian), 7 / 8 if Sigma left the sane range (read off T's diagonal, which bounds
        the eigen-range of the triangular T: :func:`vilab.core.algorithm.range_code_factor`), else 0."""
        mu, F = self.parts(q)
        finite = jnp.asarray(True)
        for leaf in jax.tree_util.tree_leaves((mu, F)):
            finite = finite & jnp.all(jnp.isfinite(leaf))
        dg = _factor_diagonal(F)
        singular = jnp.any(dg == 0)
        rng = range_code_factor(jnp.where(finite & ~singular, dg, 1.0), precision=True)
        return jnp.where(~finite, NONFINITE, jnp.where(singular, SINGULAR_FACTOR, rng)).astype(jnp.int32)

    # ------------------------------------------------------------------ dense (small d, tests)
    def dense_factor(self, q):
        """T as a d x d matrix (traceable; O(d^2) memory)."""
        F = self.parts(q)[1]
        eye = jnp.eye(self.st.d)
        return jax.vmap(lambda e: matvec_T(F, e, self.st))(eye).T

    def precision(self, q):
        """Sigma^{-1} = T T^T as a d x d matrix."""
        T = self.dense_factor(q)
        return T @ T.T

    def covariance(self, q):
        """Sigma = T^{-T} T^{-1} as a d x d matrix, by block solves on the identity's columns."""
        return self.cov_apply(q, jnp.eye(self.st.d))

    def gaussian(self, q):
        """The same Gaussian as :class:`vilab.family.gaussian.CholPrec` (dense T)."""
        from . import gaussian

        return gaussian.CholPrec(self.mean(q), self.dense_factor(q))

    def kl(self, q, other):
        """KL(q || other), ``other`` a :mod:`vilab.family.gaussian` parameterization or a q of this family
        (closed form, :func:`vilab.family.gaussian.kl`; dense, for small d)."""
        from . import gaussian

        if not (isinstance(other, tuple) and type(other).__module__ == gaussian.__name__):
            other = self.gaussian(other)
        return gaussian.kl(self.gaussian(q), other)

    # ------------------------------------------------------------------ gradients on the pattern
    def thm2_first_order(self, q, z, score, entropy: bool = True):
        """Tan (2025) Theorem 2, first-order estimate at one draw, masked to T's pattern (Tan Sec. 7
        intro: masking is valid for Euclidean gradients).

        x = T^{-T} z, theta = mu + x, g = score(theta) = grad log p(theta); v = T^{-1} g + z = T^{-1}
        grad h(theta): grad_mu L = g + T z (= grad h), grad_T L = mask(-x v^T). With ``entropy=False``,
        the gradient of the smooth part E_q[log p] only (ProxGenAdam leaves the entropy to its proximal
        step): grad_mu = g, grad_T = mask(-x (T^{-1} g)^T). Returns (theta, grad_mu, grad_T as a BlockFactor).
        """
        mu, F = self.parts(q)
        st = self.st
        x = solve_Tt(F, z, st)
        theta = mu + x
        g = score(theta)
        w = solve_T(F, g, st)
        if not entropy:
            return theta, g, mask_outer(-x, w, st)
        return theta, g + matvec_T(F, z, st), mask_outer(-x, w + z, st)

    def natural_blocks(self, F: BlockFactor, grad_mu, E: BlockFactor):
        """Natural gradient (NG_mu, NG_T) on the pattern: Tan (2025) Thm 4 for the arrow
        (:func:`natural_grad_arrow`), the column Fisher for the band (:func:`natural_grad_columns`)."""
        fn = natural_grad_arrow if self.st.ell == 0 else natural_grad_columns
        return fn(F, grad_mu, E, self.st)
