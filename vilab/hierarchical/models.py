"""Hierarchical targets with sparse structure: Poisson GLMMs (Epi I, Epi II) and stochastic volatility.

theta = (b_1, ..., b_n, theta_G): locals first, globals last (Tan (2025) eq. 3; Chen, Nott & Tan
eq. 7). log p(y, theta) is a sum of *factors*, each touching one local block (GLMMs, ell = 0) or
two neighbouring ones (state space, ell = 1) and the globals, so the Hessian is block-arrow
(ell = 0) or block-tridiagonal with a dense border (ell = 1). :func:`hessian_blocks` builds it
factor by factor with ``jax.hessian`` under ``vmap`` — O(n) memory, never a dense d x d matrix.

GLMM (Tan (2025) Sec. 8.5; Chen, Nott & Tan Sec. 7.3, Supp. S4):
    eta_ij = X_ij^T beta + Z_ij^T b_i,  y_ij ~ Poisson(exp(eta_ij)),  b_i ~ N(0, (W W^T)^{-1}),
    W lower triangular, W*_kk = log W_kk, W*_kl = W_kl, zeta = vech(W*);  beta ~ N(0, s0^2 I),
    zeta ~ N(0, s0^2 I), s0^2 = 100.  theta_G = (beta, zeta).
    Epi I:  X = (1, Base, Trt, Age, Base x Trt, V4), Z = 1                  (d = 59 + 6 + 1 = 66)
    Epi II: X = (1, Base, Trt, Base x Trt, Age, Visit), Z = (1, Visit)        (d = 118 + 6 + 3 = 127)
Stochastic volatility (Chen, Nott & Tan Sec. 7.4):
    y_t ~ N(0, exp(lam + sigma b_t)), b_t ~ N(phi b_{t-1}, 1), b_1 ~ N(0, 1/(1 - phi^2)),
    sigma = exp(alpha), phi = 1/(1 + exp(-psi)), theta_G = (alpha, lam, psi) ~ N(0, 10 I).

``log_density`` keeps every normalising constant (so the ELBO is a bound on log p(y)); the
constants a paper dropped are recorded in ``HierModel.paper_constant`` (see its docstring).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import gammaln

from ..core.checks import counts, integer, real_array
from ..core.cache import memoize
from ..targets import Target
from .data import load_epilepsy, load_exchange_returns, load_toenail

__all__ = ["HierModel", "BlockHessian", "epilepsy_model", "toenail_model", "sv_model", "synthetic_glmm", "MODELS",
           "get_model",
           "hessian_blocks", "w_from_zeta", "sparsity_patterns"]

_LOG2PI = math.log(2.0 * math.pi)


class BlockHessian(NamedTuple):
    """Hessian of log p with the sparsity of the model (locals first, globals last).

    diag (n, r, r): d2/db_i db_i;  lower (n-1, r, r) or None: d2/db_{i+1} db_i (state space);
    border (n, g, r): d2/dtheta_G db_i;  gg (g, g): d2/dtheta_G^2.
    """

    diag: jax.Array
    lower: jax.Array | None
    border: jax.Array
    gg: jax.Array

    def leading(self, k: int) -> "BlockHessian":
        """The Hessian of the first k local blocks and the globals (a principal submatrix)."""
        k = int(k)
        return BlockHessian(self.diag[:k], None if self.lower is None else self.lower[:k - 1], self.border[:k],
                            self.gg)

    def to_dense(self) -> np.ndarray:
        """The d x d matrix (small problems and tests only)."""
        n, r, _ = self.diag.shape
        g = self.gg.shape[0]
        d = n * r + g
        H = np.zeros((d, d))
        for i in range(n):
            H[i * r:(i + 1) * r, i * r:(i + 1) * r] = self.diag[i]
            H[n * r:, i * r:(i + 1) * r] = self.border[i]
            H[i * r:(i + 1) * r, n * r:] = np.asarray(self.border[i]).T
        if self.lower is not None:
            for i in range(n - 1):
                blk = np.asarray(self.lower[i])
                H[(i + 1) * r:(i + 2) * r, i * r:(i + 1) * r] = blk
                H[i * r:(i + 1) * r, (i + 1) * r:(i + 2) * r] = blk.T
        H[n * r:, n * r:] = self.gg
        return H


@dataclass(eq=False)
class HierModel:
    """A two-tier model (Chen, Nott & Tan eq. 7) with its target and sparsity bookkeeping.

    n_local blocks of size ``local_size`` (r), ``global_size`` (g) globals, Markov order ``ell``
    (0: random effects, arrow; 1: state space, banded). ``factor`` evaluates the contribution of
    block i: for ell = 0 ``factor(b_i, theta_G, data_i)``, for ell = 1
    ``factor(b_prev, b_i, theta_G, data_i, is_first)``; ``global_term(theta_G)`` the rest.
    ``paper_constant``: what the paper's reported lower bound adds to ours (constants it dropped).
    """

    name: str
    n_local: int
    local_size: int
    global_size: int
    ell: int
    factor: Callable
    global_term: Callable
    data: tuple
    global_names: tuple
    local_label: str
    paper_constant: float = 0.0
    constant_note: str = ""
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        self.dim = self.n_local * self.local_size + self.global_size
        self.target = Target(self.name, self.dim, self.log_density, info=dict(self.info))

    # -- splitting theta -------------------------------------------------------------------
    def split(self, theta):
        nr = self.n_local * self.local_size
        return theta[:nr].reshape(self.n_local, self.local_size), theta[nr:]

    def factors(self, theta):
        """Per-block factor values (n,) at theta."""
        b, tg = self.split(theta)
        if self.ell == 0:
            return jax.vmap(self.factor, in_axes=(0, None, 0))(b, tg, self.data)
        b_prev = jnp.concatenate([jnp.zeros_like(b[:1]), b[:-1]], axis=0)
        first = jnp.arange(self.n_local) == 0
        return jax.vmap(self.factor, in_axes=(0, 0, None, 0, 0))(b_prev, b, tg, self.data, first)

    def log_density(self, theta):
        """log p(y, theta) with all normalising constants."""
        _, tg = self.split(theta)
        return jnp.sum(self.factors(theta)) + self.global_term(tg)

    def names(self) -> list[str]:
        """Coordinate labels: locals then globals."""
        r = self.local_size
        loc = [f"{self.local_label}[{i + 1}]" if r == 1 else f"{self.local_label}[{i + 1},{k + 1}]"
               for i in range(self.n_local) for k in range(r)]
        return loc + list(self.global_names)

    def local_factor_grads(self, theta):
        """Per-block gradients of f_i = factor_i + global_term / n with respect to (b_i, theta_G).

        The rows of the Jacobian J used by VOGN's Gauss-Newton matrix (Tan (2025) Supp. S5):
        log p = sum_i f_i. Returns (n, r) local parts and (n, g) global parts (ell = 0 only).
        """
        if self.ell != 0:
            raise ValueError("Per-subject Gauss-Newton rows are defined for random-effects models (ell = 0).")
        b, tg = self.split(theta)
        n = self.n_local

        def f(bi, t, di):
            return self.factor(bi, t, di) + self.global_term(t) / n

        gb, gt = jax.vmap(jax.grad(f, argnums=(0, 1)), in_axes=(0, None, 0))(b, tg, self.data)
        return gb, gt


@partial(jax.jit, static_argnums=0)
def _hessian_blocks(model: HierModel, theta):
    b, tg = model.split(theta)
    n, r = b.shape
    g = tg.shape[0]
    if model.ell == 0:
        def f(x, di):
            return model.factor(x[:r], x[r:], di)

        Hs = jax.vmap(jax.hessian(f))(jnp.concatenate([b, jnp.broadcast_to(tg, (n, g))], 1), model.data)
        diag = Hs[:, :r, :r]
        border = Hs[:, r:, :r]
        gg = jnp.sum(Hs[:, r:, r:], 0) + jax.hessian(model.global_term)(tg)
        return BlockHessian(diag, None, border, gg)

    def f2(x, di, first):
        return model.factor(x[:r], x[r:2 * r], x[2 * r:], di, first)

    b_prev = jnp.concatenate([jnp.zeros_like(b[:1]), b[:-1]], axis=0)
    first = jnp.arange(n) == 0
    X = jnp.concatenate([b_prev, b, jnp.broadcast_to(tg, (n, g))], 1)
    Hs = jax.vmap(jax.hessian(f2))(X, model.data, first)
    # block t touches (b_{t-1}, b_t, theta_G); b_0 is a dummy for t = 1 (its rows are ignored)
    diag = Hs[:, r:2 * r, r:2 * r] + jnp.concatenate([Hs[1:, :r, :r], jnp.zeros((1, r, r))], 0)
    lower = Hs[1:, r:2 * r, :r]
    border = Hs[:, 2 * r:, r:2 * r] + jnp.concatenate([Hs[1:, 2 * r:, :r], jnp.zeros((1, g, r))], 0)
    gg = jnp.sum(Hs[:, 2 * r:, 2 * r:], 0) + jax.hessian(model.global_term)(tg)
    return BlockHessian(diag, lower, border, gg)


def hessian_blocks(model: HierModel, theta) -> BlockHessian:
    """Hessian of log p(y, theta) in the model's block structure (Chen et al. Sec. 4 / Supp. S4-S5).

    Autodiff factor by factor: O(n (2r + g)^2) work and memory, never a dense d x d Hessian.
    """
    theta = jnp.asarray(real_array(theta, "theta"))
    if theta.shape != (model.dim,):
        raise ValueError(f"theta must have {model.dim} coordinates for {model.name}; got shape {theta.shape}.")
    return _hessian_blocks(model, theta)


def sparsity_patterns(model: HierModel, theta, n_show: int = 12) -> dict[str, np.ndarray]:
    """Boolean patterns of T, of the precision T T^T and of the Hessian of log p at ``theta``.

    For the first ``n_show`` local blocks and the globals (Chen, Nott & Tan Sec. 4, Tan (2025) eq. 4):
    T's free entries (:func:`vilab.family.block.dense_mask`), the structural non-zeros of
    T T^T (the pattern product) and the entries of the block Hessian (:func:`hessian_blocks`, no
    dense d x d Hessian) that are non-zero at ``theta``.
    """
    from ..family import block as fam

    st = fam.structure_of(model)
    k = max(1, min(int(n_show), st.n))
    Tm = fam.dense_mask(fam.Structure(k, st.r, st.g, st.ell))
    Om = (Tm.astype(float) @ Tm.T.astype(float)) != 0
    H = hessian_blocks(model, theta).leading(k).to_dense()
    return {"T (free entries)": Tm, "precision T Tᵀ": Om, "Hessian of log p": np.abs(H) > 0}


# ----------------------------------------------------------------------------------------------
# GLMMs


def w_from_zeta(zeta, r: int):
    """W (r x r lower triangular, positive diagonal) from zeta = vech(W*), W*_kk = log W_kk (column-major vech)."""
    rows, cols = np.tril_indices(r)
    order = np.lexsort((rows, cols))  # column-major vech order
    rows, cols = rows[order], cols[order]
    Wstar = jnp.zeros((r, r), dtype=zeta.dtype).at[rows, cols].set(zeta)
    return jnp.where(jnp.eye(r, dtype=bool), jnp.exp(Wstar), Wstar)


def _glmm_model(name, y, X, Z, global_names, local_label, s0sq=100.0, paper_constant=0.0, note="", info=None,
                family="poisson", observed=None):
    """A GLMM with ``family`` "poisson" (log link) or "bernoulli" (logit link); y, X, Z of shapes (n, m),
    (n, m, p), (n, m, r). ``observed`` (n, m) marks the visits that exist when subjects have different
    numbers of visits (padded entries contribute nothing)."""
    if family == "poisson":
        y = counts(y, "The counts y")  # y_ij = 0, 1, 2, ...
    elif family == "bernoulli":
        y = np.asarray(y, float)
        if not np.isin(y, (0.0, 1.0)).all():
            raise ValueError("A Bernoulli GLMM needs responses 0 or 1.")
    else:
        raise ValueError(f"family must be 'poisson' or 'bernoulli'; got {family!r}.")
    n, m, p = X.shape
    r = Z.shape[2]
    q = r * (r + 1) // 2
    g = p + q
    obs = np.ones((n, m)) if observed is None else np.asarray(observed, float)
    logfact = jnp.asarray(gammaln(np.asarray(y) + 1.0) * obs)
    data = (jnp.asarray(y), jnp.asarray(X), jnp.asarray(Z), logfact, jnp.asarray(obs))
    poisson = family == "poisson"

    def factor(bi, tg, di):
        """log p(y_i | b_i, beta) + log N(b_i; 0, (W W^T)^-1) (Chen et al. Sec. 7.3, full constants)."""
        yi, Xi, Zi, lf, oi = di
        beta, zeta = tg[:p], tg[p:]
        W = w_from_zeta(zeta, r)
        eta = Xi @ beta + Zi @ bi
        terms = yi * eta - (jnp.exp(eta) + lf if poisson else jnp.logaddexp(0.0, eta))
        ll = jnp.sum(oi * terms)
        Wb = W.T @ bi
        return ll + jnp.sum(zeta[_diag_positions(r)]) - 0.5 * Wb @ Wb - 0.5 * r * _LOG2PI

    def global_term(tg):
        return -0.5 * tg @ tg / s0sq - 0.5 * g * math.log(2 * math.pi * s0sq)

    return HierModel(name=name, n_local=n, local_size=r, global_size=g, ell=0, factor=factor,
                     global_term=global_term, data=data, global_names=tuple(global_names),
                     local_label=local_label, paper_constant=paper_constant, constant_note=note,
                     info=dict(info or {}, n_obs=int(obs.sum()), s0sq=s0sq, p=p, r=r, family=family))


def _diag_positions(r: int) -> np.ndarray:
    """Positions of the diagonal entries of W* inside zeta = vech(W*) (column-major)."""
    pos, k = [], 0
    for j in range(r):
        pos.append(k)
        k += r - j
    return np.asarray(pos)


def epilepsy_model(variant: str = "II", n_subjects: int | None = None) -> HierModel:
    """Epi I (random intercept) or Epi II (random intercept and slope in Visit) on the epilepsy data.

    Tan (2025) Sec. 8.5 (Epi II, "Poisson random slope model") and Chen, Nott & Tan Sec. 7.3
    (Epi I and Epi II). ``n_subjects`` keeps the first patients only (small instances for tests).
    Constant (``paper_constant``, what Tan's Table 11 lower bound adds to ours): Tan's L is
    positive (3138.7), so sum_ij log y_ij! (3805.57) is certainly dropped; the remaining gap to our
    converged SNNGM bound (about 27) is closed by the prior's normaliser (g/2) log(2 pi s0^2) =
    28.99 and by none of the model's other constants (a hypothesis: Tan does not say, digest Sec. 9).
    ``info`` holds the two parts ("log_y_factorial", "prior_normaliser").
    """
    if variant not in ("I", "II"):
        raise ValueError("variant must be 'I' (random intercept) or 'II' (random slope).")
    e = load_epilepsy()
    n = e.n_subjects if n_subjects is None else integer(n_subjects, "n_subjects", minimum=1, maximum=e.n_subjects)
    rs = lambda a: np.asarray(a, float).reshape(e.n_subjects, 4)[:n]  # noqa: E731
    one = np.ones((n, 4))
    base, trt, age, visit, v4 = rs(e.base), rs(e.trt), rs(e.age), rs(e.visit), rs(e.v4)
    y = rs(e.y)
    if variant == "I":
        X = np.stack([one, base, trt, age, base * trt, v4], -1)
        Z = one[..., None]
        gn = ["beta0", "beta_Base", "beta_Trt", "beta_Age", "beta_BaseTrt", "beta_V4", "zeta"]
        label = "b"
    else:
        X = np.stack([one, base, trt, base * trt, age, visit], -1)
        Z = np.stack([one, visit], -1)
        gn = ["beta0", "beta_Base", "beta_Trt", "beta_BaseTrt", "beta_Age", "beta_Visit",
              "zeta11", "zeta21", "zeta22"]
        label = "b"
    s0sq = 100.0
    log_y_fact = float(gammaln(y + 1.0).sum())
    prior_norm = 0.5 * len(gn) * math.log(2.0 * math.pi * s0sq)
    return _glmm_model(f"Epi {variant}" + ("" if n == e.n_subjects else f" (first {n} patients)"), y, X, Z, gn,
                       label, s0sq=s0sq, paper_constant=log_y_fact + prior_norm,
                       note=(f"sum_ij log y_ij! = {log_y_fact:.2f} (Tan's L > 0: certainly dropped) + the prior "
                             f"normaliser (g/2) log(2 pi s0^2) = {prior_norm:.2f} (our hypothesis)"),
                       info={"dataset": "epilepsy", "variant": variant, "log_y_factorial": log_y_fact,
                             "prior_normaliser": prior_norm})


def toenail_model() -> HierModel:
    """Tan (2025) Sec. 8.5's Toenail model: logistic random intercept,
    logit p_ij = b1 + b2 Trt_i + b3 t_ij + b4 Trt_i t_ij + theta_i, theta_i ~ N(0, 1/W^2), prior N(0, 100 I) on
    (beta, zeta = log W); 294 patients with 1 to 7 visits (the shorter ones padded and masked), d = 299.
    ``paper_constant`` (what Tan's Table 11 lower bound adds to ours): a Bernoulli likelihood has no log y!, so
    the only candidate is the prior's normaliser (g/2) log(2 pi s0^2) = 16.11, the constant that explains the
    epilepsy column (:func:`epilepsy_model`); whether Tan drops it here too is what the Toenail column tests."""
    t = load_toenail()
    n = t.n_subjects
    m = int(np.bincount(t.subject).max())
    pos = np.concatenate([np.arange(c) for c in np.bincount(t.subject)])
    def padded(a):
        out = np.zeros((n, m))
        out[t.subject, pos] = a
        return out

    obs = padded(np.ones(t.n_obs))
    trt, time, y = padded(t.trt), padded(t.time), padded(t.y)
    X = np.stack([obs, trt, time, trt * time], -1)
    Z = obs[..., None]
    gn = ["beta0", "beta_Trt", "beta_t", "beta_Trt_t", "zeta"]
    s0sq = 100.0
    prior_norm = 0.5 * len(gn) * math.log(2.0 * math.pi * s0sq)
    return _glmm_model("Toenail", y, X, Z, gn, "theta", s0sq=s0sq, paper_constant=prior_norm,
                       note=(f"the prior normaliser (g/2) log(2 pi s0^2) = {prior_norm:.2f}, the constant Tan's "
                             "epilepsy column drops (our hypothesis; a Bernoulli likelihood has no log y!)"),
                       info={"dataset": "toenail", "prior_normaliser": prior_norm}, family="bernoulli",
                       observed=obs)


def synthetic_glmm(n_subjects: int, seed: int = 0, n_visits: int = 4) -> HierModel:
    """Synthetic Epi II-shaped Poisson random-slope data with ``n_subjects`` patients (benchmarks)."""
    n = integer(n_subjects, "n_subjects", minimum=1)
    n_visits = integer(n_visits, "n_visits", minimum=1)
    rng = np.random.default_rng(integer(seed, "The seed", minimum=0))
    visit = np.broadcast_to(np.linspace(-0.3, 0.3, n_visits), (n, n_visits))
    base = np.broadcast_to(rng.normal(1.0, 0.8, (n, 1)), (n, n_visits))
    trt = np.broadcast_to(rng.integers(0, 2, (n, 1)).astype(float), (n, n_visits))
    age = np.broadcast_to(rng.normal(0, 0.2, (n, 1)), (n, n_visits))
    one = np.ones((n, n_visits))
    X = np.stack([one, base, trt, base * trt, age, visit], -1)
    Z = np.stack([one, visit], -1)
    beta = np.array([-1.3, 0.9, -0.9, 0.35, 0.5, -0.3])
    b = rng.normal(0, [0.5, 0.7], (n, 2))
    eta = X @ beta + np.einsum("ijk,ik->ij", Z, b)
    y = rng.poisson(np.exp(eta)).astype(float)
    gn = ["beta0", "beta_Base", "beta_Trt", "beta_BaseTrt", "beta_Age", "beta_Visit", "zeta11", "zeta21", "zeta22"]
    return _glmm_model(f"synthetic GLMM (n = {n})", y, X, Z, gn, "b", info={"dataset": "synthetic"})


# ----------------------------------------------------------------------------------------------
# stochastic volatility


def sv_model(series: str = "GBP", n_obs: int | None = None) -> HierModel:
    """Stochastic volatility model of Chen, Nott & Tan Sec. 7.4 on the Garch exchange-rate returns.

    theta = (b_1..b_n, alpha, lam, psi); sigma = e^alpha, phi = 1/(1 + e^-psi); prior N(0, 10 I).
    Factor t: log N(y_t; 0, e^{lam + sigma b_t}) + log N(b_t; phi b_{t-1}, 1) (t >= 2), and
    log N(b_1; 0, 1/(1 - phi^2)) for t = 1. ``n_obs`` keeps the first returns (tests).
    """
    y = load_exchange_returns(series)
    if n_obs is not None:
        y = y[: integer(n_obs, "n_obs", minimum=2, maximum=len(y))]
    n = len(y)
    s0sq = 10.0
    data = (jnp.asarray(y),)

    def factor(b_prev, b_t, tg, di, first):
        """Chen et al. Sec. 7.4 log h, the terms of time t (all constants kept)."""
        (yt,) = di
        alpha, lam, psi = tg[0], tg[1], tg[2]
        sigma = jnp.exp(alpha)
        phi = jax.nn.sigmoid(psi)
        bt, bp = b_t[0], b_prev[0]
        s = lam + sigma * bt
        obs = -0.5 * _LOG2PI - 0.5 * s - 0.5 * yt**2 * jnp.exp(-s)
        trans = -0.5 * _LOG2PI - 0.5 * (bt - phi * bp) ** 2
        one_m = 1.0 - phi**2
        init = -0.5 * _LOG2PI + 0.5 * jnp.log(one_m) - 0.5 * bt**2 * one_m
        return obs + jnp.where(first, init, trans)

    def global_term(tg):
        return -0.5 * tg @ tg / s0sq - 1.5 * math.log(2 * math.pi * s0sq)

    return HierModel(name=f"SV {series}" + ("" if n_obs is None else f" (first {n})"), n_local=n, local_size=1,
                     global_size=3, ell=1, factor=factor, global_term=global_term, data=data,
                     global_names=("alpha", "lambda", "psi"), local_label="b",
                     paper_constant=0.0, constant_note="all constants kept (Chen et al. report no ELBO values)",
                     info={"dataset": series, "n_obs": n, "s0sq": s0sq})


MODELS = {
    "epi1": ("Epilepsy, Epi I (random intercept)", lambda: epilepsy_model("I")),
    "epi2": ("Epilepsy, Epi II (random slope)", lambda: epilepsy_model("II")),
    "sv_gbp": ("Stochastic volatility, GBP (n = 945)", lambda: sv_model("GBP")),
    "toenail": ("Toenail (random intercept, logistic)", toenail_model),
}

def get_model(key: str) -> HierModel:
    """A cached model by key ("epi1", "epi2", "sv_gbp"): the same object on every call (the compiled
    fits are keyed on it), until ``vilab.clear_caches()``."""
    if not isinstance(key, str) or key not in MODELS:
        raise ValueError(f"Unknown hierarchical model {key!r}; choose one of {', '.join(MODELS)}.")
    return _build_model(key)


@memoize("vilab.hierarchical models", maxsize=len(MODELS))
def _build_model(key: str) -> HierModel:
    return MODELS[key][1]()
