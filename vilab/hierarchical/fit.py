"""Running the methods of Tan (2025) and Chen, Nott & Tan on the hierarchical models, at scale.

Two groups of methods share the sparse factor of :mod:`vilab.family.block` (arrow for the
GLMMs, band for the state-space model):

* Tan (2025), GVA with a sparse Cholesky factor of the precision (Sec. 7.2, Algorithm 2S),
  first-order gradient estimates (Sec. 8.5: "only first-order gradient estimates"), driven by the
  optimizers of :mod:`vilab.algorithms.optim` (Table 5 / Supp. S5):
    ``gva-snngm``  SNNGM fed the natural gradient: Theorem 4 by blocks for the arrow
                   (:func:`~vilab.family.block.natural_grad_arrow`); for the band, the same
                   Fisher restricted to the pattern, solved column by column
                   (:func:`~vilab.family.block.natural_grad_columns`, our extension);
    ``gva-nadam``  Adam fed the same natural gradient (Tan's "NAdam");
    ``gva-adam``   Adam fed the Euclidean gradient (mu, free entries of T);
    ``gva-pga``    ProxGenAdam: Euclidean gradient of E_q[log p] + proximal step on diag(T);
    ``gva-vogn``   VOGN with the Gauss-Newton matrix J^T J of the per-subject factors (Supp. S5; dense
                   d x d, random-effects models only: the Cholesky of the arrow precision has the
                   arrow pattern, so nothing is lost; d = 127 for Epi II).
  Step sizes (``METHODS``): Adam, NAdam, PGA alpha = 0.001 (Tan's defaults); SNNGM alpha0 = 0.03 and
  VOGN alpha = 0.1 (Tan tunes both and does not report them: VOGN's 0.001 "adjusted upwards by a
  factor of 10 each time if necessary"; 0.01 still crawls on Epi II after 20,000 iterations).
  One draw z ~ N(0, I), theta = mu + T^{-T} z, v = T^{-1} grad h = T^{-1} grad log p + z;
  Euclidean gradients grad_mu L = grad log p + T z, grad_T L = mask(-(theta - mu) v^T) (Tan Thm 2,
  masked: valid for Euclidean gradients, Tan Sec. 7 intro). Start: mu = 0, T = sqrt(n_obs) I (the
  paper's C = I / sqrt(n), Sec. 8).
* Chen, Nott & Tan: ``kld`` (Tan & Nott 2018), ``fdb``, ``sdb`` (batch objectives, Table 5), with
  Adadelta (rho = 0.95, eps = 1e-6; the paper gives no constants) on (mu, T*), T*_kk = log T_kk
  (Sec. 4); the low-rank masked forms of Table 4/5's matrix gradients are used (U = (1/B) sum a_b a_b^T,
  V = (1/B) sum g_b g_b^T, W = (1/B) sum (theta_b - mu) g_b^T), so an iteration costs O(B n) instead
  of O(d^3); they are tested against :mod:`vilab.divergences.stochastic` (dense). ``fdr``, ``sdr``
  and ``bam`` call :func:`vilab.divergences.stochastic.run_sgd` / ``run_bam`` (dense d x d: Epi I/II
  only). Start mu = 0, T = 10 I (``CHEN_T0``; the paper gives no starting values except T = 10 I in
  its Sec. 5.4 analysis).

Each method is a :class:`vilab.core.Algorithm` (:func:`algorithm`, memoized per model, method and
batch size; the step size is a run-time setting, ``state.hyper["alpha"]``, so
``vilab.core.resume(alg, trace, n, hyper={"alpha": a})`` changes it mid-run without recompiling).
:func:`fit` drives it with :func:`vilab.core.run` on the host, one chunk per window of iterations, and
returns a :class:`vilab.core.Trace`: one row per window (mean, marginal variances, the window average
of the single-draw ELBO estimate in ``extra["elbo"]``, the packed factor T in ``extra["factor"]``, the
wall time in ``extra["seconds"]``), the papers' "average lower bound every 1000 iterations".
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import core
from ..core.checks import finite_result, integer, positive, real_scalar
from ..core import NONFINITE, Algorithm, Trace, memoize
from ..family import block as fam
from ..family.block import BlockFactor, BlockPrecFamily, Structure

__all__ = ["METHODS", "fit", "algorithm", "start_state", "HierState", "thm2_grads", "log_q", "validity_code",
           "chen_kld_grads", "chen_sdb_grads", "chen_fdb_grad_mu", "chen_fdb_grad_T", "sample_q", "final_elbo",
           "final_q", "method_label", "plateau_rule", "TAN_METHODS", "CHEN_METHODS", "CHEN_T0",
           "available_methods", "refit", "prefix"]

SINGULAR = 5  # vilab.core.CODES[5]: the Cholesky factor has a zero on its diagonal

METHODS = {
    "gva-snngm": dict(label="SNNGM", group="tan", opt="snngm", feed="natural", alpha=3e-2),
    "gva-adam": dict(label="Adam", group="tan", opt="adam", feed="euclidean", alpha=1e-3),
    "gva-nadam": dict(label="NAdam", group="tan", opt="adam-natural", feed="natural", alpha=1e-3),
    "gva-pga": dict(label="PGA", group="tan", opt="pga", feed="smooth", alpha=1e-3),
    "gva-vogn": dict(label="VOGN", group="tan", opt="vogn", feed="vogn", alpha=1e-1),
    "kld": dict(label="KLD", group="chen", batch=1),
    "fdb": dict(label="FDb", group="chen", batch=5),
    "sdb": dict(label="SDb", group="chen", batch=5),
    "fdr": dict(label="FDr", group="chen-dense", batch=1),
    "sdr": dict(label="SDr", group="chen-dense", batch=1),
    "bam": dict(label="BaM", group="chen-dense", batch=100),
}
TAN_METHODS = tuple(k for k, v in METHODS.items() if v["group"] == "tan")
CHEN_T0 = 10.0  # Chen's methods start at T = 10 I (see ``fit``)
CHEN_METHODS = tuple(k for k, v in METHODS.items() if v["group"] != "tan")


def method_label(key: str) -> str:
    return METHODS[key]["label"]


DENSE_MAX_DIM = 400  # FDr, SDr and BaM run on a dense d x d factor (vilab.divergences.stochastic)


def available_methods(model) -> dict[str, str]:
    """The methods that run on ``model`` -> "" ; the others -> the reason they are not offered."""
    out = {}
    for k, v in METHODS.items():
        if v.get("feed") == "vogn":
            out[k] = "" if model.ell == 0 else "VOGN's Gauss-Newton rows are per subject (random-effects models only)"
        elif v["group"] == "chen-dense":
            out[k] = "" if model.dim <= DENSE_MAX_DIM else (
                f"runs on a dense d x d factor (d = {model.dim} here; vilab.divergences.stochastic)")
        else:
            out[k] = ""
    return out


class _PGALayout(NamedTuple):
    """What vilab.algorithms.optim.pga needs to know: the factor is T, and where its diagonal sits in lambda."""

    param: str
    idx: np.ndarray

    def diag_index(self):
        return self.idx


# ------------------------------------------------------------------------------ shared pieces


class HierState(NamedTuple):
    """State of every method of this module.

    params : the variational parameters in the method's own coordinates (Tan: lambda = (mu, free
        entries of T); VOGN: vilab.algorithms.optim's dense (mu, vech T); Chen: (mu, T*) with T*_kk = log T_kk).
    opt : the optimizer's state.
    elbo_sum, n_in : sum and count of the single-draw ELBO estimates of the current window (a row
        records their average, the papers' "average lower bound every 1000 iterations").
    window : iterations per window.
    hyper : run-time settings ({"alpha": step size} for Tan's methods; {} for Chen's Adadelta).
    """

    params: Any
    opt: Any
    elbo_sum: jax.Array
    n_in: jax.Array
    window: jax.Array
    hyper: dict


def log_q(log_det_T, z):
    """log q(theta) at theta = mu + T^{-T} z, q = N(mu, (T T^T)^{-1}): log|det T| - z'z/2 - (d/2) log 2 pi
    (:func:`vilab.family.block.log_q_whitened_T`, the family's one formula)."""
    return fam.log_q_whitened_T(log_det_T, z)


def _family_of(F: BlockFactor) -> BlockPrecFamily:
    """The :class:`~vilab.family.block.BlockPrecFamily` whose factor F is (its Structure from the shapes)."""
    n, r = F.diag.shape[0], F.diag.shape[1]
    return BlockPrecFamily(Structure(int(n), int(r), int(F.gg.shape[0]), 0 if F.lower is None else 1))


def thm2_grads(mu, F: BlockFactor, st: Structure, z, score, entropy: bool = True):
    """Tan (2025) Theorem 2, first-order estimate at one draw, masked to T's pattern (Tan Sec. 7 intro:
    masking is valid for Euclidean gradients).

    x = T^{-T} z, theta = mu + x, g = grad log p(theta); v = T^{-1} g + z = T^{-1} grad h(theta):
    grad_mu L = g + T z (= grad h), grad_T L = mask(-x v^T). With ``entropy=False``, the gradient of
    the smooth part E_q[log p] only (ProxGenAdam leaves the entropy to its proximal step):
    grad_mu = g, grad_T = mask(-x (T^{-1} g)^T). Returns (theta, grad_mu, grad_T as a BlockFactor).
    Written once on the family: :meth:`vilab.family.block.BlockPrecFamily.thm2_first_order`.
    """
    return BlockPrecFamily(st).thm2_first_order((mu, F), z, score, entropy)


def validity_code(mu, F: BlockFactor, elbo) -> jax.Array:
    """The vilab.core code of an iterate: NONFINITE (2) for non-finite parameters or ELBO estimate,
    5 for a zero on T's diagonal (q no longer a Gaussian), else 0: the family's code
    (:meth:`vilab.family.block.BlockPrecFamily.validity`) and a non-finite ELBO estimate."""
    code = _family_of(F).validity((mu, F))
    return jnp.where(jnp.all(jnp.isfinite(elbo)), code, NONFINITE).astype(jnp.int32)


def _accumulate(state: HierState, params, opt, elbo) -> HierState:
    """The state after a step: new parameters, the ELBO estimate added to the current window."""
    fresh = state.n_in >= state.window
    return state._replace(params=params, opt=opt, elbo_sum=jnp.where(fresh, 0.0, state.elbo_sum) + elbo,
                          n_in=jnp.where(fresh, 0, state.n_in) + 1)


def _row(mu, F: BlockFactor, st: Structure, state: HierState) -> dict:
    el = jnp.where(state.n_in > 0, state.elbo_sum / jnp.maximum(state.n_in, 1), jnp.nan)
    return {"mean": mu, "var": BlockPrecFamily(st).variances((mu, F)), "objective": -el, "elbo": el,
            "factor": fam.pack(F, st)}


def _hyper_alpha(spec, alpha):
    alpha = spec["alpha"] if alpha is None else alpha
    return {"alpha": jnp.float64(positive(alpha, f"The step size of {spec['label']}"))}


def _start(params, opt, window, hyper) -> HierState:
    window = integer(window, "The window (iterations per ELBO average)", minimum=1)
    return HierState(params, opt, jnp.float64(0.0), jnp.int32(0), jnp.int32(window), hyper)


def _default_scale(model, method):
    if METHODS[method]["group"] == "tan":
        return math.sqrt(int(model.info.get("n_obs", fam.structure_of(model).n)))
    return CHEN_T0


# ------------------------------------------------------------------------------ Tan (2025)


def _tan_algorithm(model, method) -> Algorithm:
    """Tan (2025) Algorithm 2S (Sec. 7.2) with the optimizer of ``method`` (Table 5 / Supp. S5)."""
    from ..algorithms import optim

    spec = METHODS[method]
    st = fam.structure_of(model)
    family = BlockPrecFamily(st)
    d = st.d
    logp, score = model.log_density, jax.grad(model.log_density)
    pga_layout = _PGALayout("chol_prec", family.diag_index())
    feed = spec["feed"]

    def transform(alpha):
        if spec["opt"] == "pga":
            return optim.pga(alpha, layout=pga_layout)
        return optim.make_transform(spec["opt"], alpha, None)

    decode = family.unpack

    def init(key, start=None, *, alpha=None, window=1000):
        """start: the scale t0 of the starting factor T = t0 I (default sqrt(n_obs)); mu = 0."""
        t0 = _default_scale(model, method) if start is None else float(start)
        hyper = _hyper_alpha(spec, alpha)
        lam0 = family.identity(t0)
        return _start(lam0, transform(float(hyper["alpha"])).init(lam0), window, hyper)

    def step(key, s, batch):
        alpha = s.hyper["alpha"]
        mu, F = decode(s.params)
        z = jax.random.normal(key, (d,))
        theta, gm, E = family.thm2_first_order((mu, F), z, score, entropy=feed != "smooth")
        elbo = logp(theta) - family.log_q_whitened((mu, F), z)
        if feed == "natural":
            gm, E = family.natural_blocks(F, gm, E)
        upd, opt = transform(alpha).update(-jnp.concatenate([gm, fam.pack(E, st)]), s.opt, s.params)
        lam = s.params + upd
        code = validity_code(*decode(lam), elbo)
        return _accumulate(s, lam, opt, elbo), {"code": code, "step_size": alpha, "elbo": elbo}

    def observe(s):
        return _row(*decode(s.params), st, s)

    settings = dict(method=method, label=spec["label"], structure=st, optimizer=spec["opt"], feed=spec["feed"])
    if feed == "natural":
        settings["natural_gradient"] = "Tan Thm 4 (arrow)" if st.ell == 0 else "column Fisher (band)"
    return Algorithm(init, step, observe, name=spec["label"], objective_name="negative ELBO (window average)",
                     settings=settings)


def _vogn_algorithm(model) -> Algorithm:
    """VOGN (Tan (2025) Supp. S5, GLMMs): J^T J of the per-subject factors f_i as the curvature."""
    from ..algorithms import optim

    st = fam.structure_of(model)
    if st.ell != 0:
        raise ValueError("VOGN's Gauss-Newton matrix is built from per-subject factors: it is offered for the "
                         "random-effects models (Epi I, Epi II), not for the state-space model.")
    spec = METHODS["gva-vogn"]
    d, n, r = st.d, st.n, st.r
    layout = optim.Layout(d, "chol_prec")
    logp = model.log_density
    rows = np.repeat(np.arange(n), r)
    cols = np.arange(n * r)

    def decode(lam):
        mu, T = layout.unpack(lam)
        return mu, fam.from_dense(T, st)

    def init(key, start=None, *, alpha=None, window=1000):
        t0 = _default_scale(model, "gva-vogn") if start is None else float(start)
        hyper = _hyper_alpha(spec, alpha)
        lam0 = layout.pack(jnp.zeros(d), t0 * jnp.eye(d))
        return _start(lam0, optim.vogn(float(hyper["alpha"]), layout=layout).init(lam0), window, hyper)

    def step(key, s, batch):
        alpha = s.hyper["alpha"]
        mu, T = layout.unpack(s.params)
        z = jax.random.normal(key, (d,))
        theta = layout.transform(s.params, z)  # mu + T^{-T} z (vilab.family.dense.GaussianFamily)
        gb, gt = model.local_factor_grads(theta)
        J = jnp.zeros((n, d)).at[rows, cols].set(gb.reshape(-1)).at[:, n * r:].set(gt)
        elbo = logp(theta) - log_q(jnp.sum(jnp.log(jnp.abs(jnp.diag(T)))), z)
        upd, opt = optim.vogn(alpha, layout=layout).update(optim.VOGNInput(-jnp.sum(J, 0), J.T @ J), s.opt,
                                                            s.params)
        lam = s.params + upd
        code = validity_code(*decode(lam), elbo)
        return _accumulate(s, lam, opt, elbo), {"code": code, "step_size": alpha, "elbo": elbo}

    def observe(s):
        return _row(*decode(s.params), st, s)

    return Algorithm(init, step, observe, name=spec["label"], objective_name="negative ELBO (window average)",
                     settings=dict(method="gva-vogn", label=spec["label"], structure=st, optimizer="vogn",
                                   feed="Gauss-Newton J^T J (dense d x d)"))


# ------------------------------------------------------------------------------ Chen, Nott & Tan


def chen_kld_grads(mu, F: BlockFactor, st: Structure, z, score):
    """Tan & Nott (2018) KLD step of Chen, Nott & Tan Table 4, descent convention, on the sparse factor.

    The gradient of KL(q || p) is minus Tan's Theorem 2 ELBO gradient (:func:`thm2_grads`):
    u = T^{-T} z, theta = mu + u, g = grad log h(theta) + T z, v = T^{-1} g; returns
    (-g, mask(u v^T), theta).
    """
    theta, g, E = thm2_grads(mu, F, st, z, score)
    return -g, block_scale(-1.0, E), theta


def chen_sdb_grads(mu, F: BlockFactor, st: Structure, thetas, gs):
    """Gradient of S_hat (Chen, Nott & Tan eq. 9 / Table 5, SDb) on T's pattern, in low-rank form.

    g_mu = 2 T T^T (mu - theta_bar) - 2 g_bar;  g_T = 2 (U T - Sigma V T^{-T}) with
    U T = (1/B) sum a_b (T^T a_b)^T, a_b = theta_b - mu, and Sigma V T^{-T} = (1/B) sum (Sigma g_b)(T^{-1} g_b)^T.
    """
    tbar, gbar = thetas.mean(0), gs.mean(0)
    g_mu = 2.0 * fam.matvec_T(F, fam.matvec_Tt(F, mu - tbar, st), st) - 2.0 * gbar
    a = thetas - mu
    ta = jax.vmap(lambda x: fam.matvec_Tt(F, x, st))(a)
    w = jax.vmap(lambda x: fam.solve_T(F, x, st))(gs)
    s = jax.vmap(lambda x: fam.solve_Tt(F, x, st))(w)
    E = block_scale(2.0, block_sub(fam.mask_outer_mean(a, ta, st), fam.mask_outer_mean(s, w, st)))
    return g_mu, E


def chen_fdb_grad_mu(mu, F: BlockFactor, st: Structure, thetas, gs):
    """grad_mu F_hat = Sigma^{-1} grad_mu S_hat (Chen, Nott & Tan eq. 9 / Table 5 step 5, FDb)."""
    tbar, gbar = thetas.mean(0), gs.mean(0)
    g_muS = 2.0 * fam.matvec_T(F, fam.matvec_Tt(F, mu - tbar, st), st) - 2.0 * gbar
    return fam.matvec_T(F, fam.matvec_Tt(F, g_muS, st), st)


def chen_fdb_grad_T(mu_U, mu_W, F: BlockFactor, st: Structure, thetas, gs):
    """grad_T F_hat = 2 (W + W^T + Sigma^{-1} U + U Sigma^{-1}) T on T's pattern (Chen et al. eq. 9, FDb).

    U = (1/B) sum a a^T with a = theta - mu_U (before the mean update), W = (1/B) sum e g^T with
    e = theta - mu_W; each term is a masked sum of B outer products. Table 5 lists W after the mean
    update (step 6: mu_W = the updated mu); :func:`fit` uses mu_U = mu_W = mu, the exact gradient of
    F_hat at the current (mu, T): with the listing order FDb is unstable on Epi I (window ELBO
    -2e4 after 20,000 iterations from T = 10 I, worse from T = I), while the exact gradient
    reproduces Chen et al. Table 7's FDb column (normalised mode error 0.28 +/- 0.20 and s.d. ratio
    0.83 +/- 0.21 against the paper's 0.28 +/- 0.19 and 0.81 +/- 0.21).
    """
    a = thetas - mu_U
    e = thetas - mu_W
    mT = jax.vmap(lambda x: fam.matvec_Tt(F, x, st))
    mTT = jax.vmap(lambda x: fam.matvec_T(F, x, st))
    ta, tg, te = mT(a), mT(gs), mT(e)
    Tta = mTT(ta)
    E = fam.mask_outer_mean(e, tg, st)
    for P, Q in ((gs, te), (Tta, ta), (a, mT(Tta))):
        E = block_add(E, fam.mask_outer_mean(P, Q, st))
    return block_scale(2.0, E)


def block_add(A: BlockFactor, B_: BlockFactor) -> BlockFactor:
    return fam.block_map(lambda x, y: x + y, A, B_)


def block_sub(A: BlockFactor, B_: BlockFactor) -> BlockFactor:
    return fam.block_map(lambda x, y: x - y, A, B_)


def block_scale(c, A: BlockFactor) -> BlockFactor:
    return fam.block_map(lambda x: c * x, A)


_ADADELTA = dict(rho=0.95, eps=1e-6)  # Chen et al. give no constants; Zeiler's (2012) defaults


def _chen_algorithm(model, method, B) -> Algorithm:
    """KLD / SDb / FDb of Chen, Nott & Tan (Tables 4-5) with Adadelta on (mu, T*), T*_kk = log T_kk."""
    from ..divergences.stochastic import make_optimizer

    spec = METHODS[method]
    st = fam.structure_of(model)
    family = BlockPrecFamily(st)
    d = st.d
    logp, score = model.log_density, jax.grad(model.log_density)
    opt = make_optimizer("adadelta", None, _ADADELTA["rho"], _ADADELTA["eps"])
    dpos = jnp.asarray(fam.diag_positions(st))

    def T_of(Ts):
        return fam.unpack(Ts.at[dpos].set(jnp.exp(Ts[dpos])), st)

    def to_Ts_grad(E, Ts):  # chain rule for T*_kk = log T_kk (Chen Sec. 4: D = diag(vech J))
        v = fam.pack(E, st)
        return v.at[dpos].multiply(jnp.exp(Ts[dpos]))

    def init(key, start=None, *, window=1000):
        """start: the scale t0 of the starting factor T = t0 I (default ``CHEN_T0``); mu = 0."""
        t0 = CHEN_T0 if start is None else float(start)
        Ts0 = fam.pack(fam.identity_factor(st), st).at[dpos].set(math.log(t0))  # T*_kk = log T_kk
        mu0 = jnp.zeros(d)
        return _start((mu0, Ts0), (opt.init(mu0), opt.init(Ts0)), window, {})

    def step(key, s, batch):
        (mu, Ts), (s_mu, s_T) = s.params, s.opt
        F = T_of(Ts)
        if method == "kld":
            z = jax.random.normal(key, (d,))
            g_mu, E, theta = chen_kld_grads(mu, F, st, z, score)
            elbo = logp(theta) - family.log_q_whitened((mu, F), z)
            upd, s_mu = opt.update(g_mu, s_mu, mu)
        else:
            zs = jax.random.normal(key, (B, d))
            thetas = family.transform((mu, F), zs)
            gs = jax.vmap(score)(thetas)
            elbo = jnp.mean(jax.vmap(logp)(thetas) - family.log_q_whitened((mu, F), zs))
            if method == "sdb":
                g_mu, E = chen_sdb_grads(mu, F, st, thetas, gs)
                upd, s_mu = opt.update(g_mu, s_mu, mu)
            else:
                upd, s_mu = opt.update(chen_fdb_grad_mu(mu, F, st, thetas, gs), s_mu, mu)
                # W at the current mu (exact gradient of F_hat), not after the mean update as Table 5
                # lists it: see chen_fdb_grad_T
                E = chen_fdb_grad_T(mu, mu, F, st, thetas, gs)
        mu_new = mu + upd
        updT, s_T = opt.update(to_Ts_grad(E, Ts), s_T, Ts)
        Ts_new = Ts + updT
        code = validity_code(mu_new, T_of(Ts_new), elbo)
        return (_accumulate(s, (mu_new, Ts_new), (s_mu, s_T), elbo),
                {"code": code, "step_size": jnp.float64(jnp.nan), "elbo": elbo})

    def observe(s):
        mu, Ts = s.params
        return _row(mu, T_of(Ts), st, s)

    return Algorithm(init, step, observe, name=spec["label"], objective_name="negative ELBO (window average)",
                     settings=dict(method=method, label=spec["label"], structure=st, batch=B, step="adadelta",
                                   **_ADADELTA))


# ------------------------------------------------------------------------------ the algorithms


def algorithm(model, method: str, batch: int | None = None) -> Algorithm:
    """The :class:`vilab.core.Algorithm` of ``method`` (a key of ``METHODS`` run on the sparse factor:
    Tan's and KLD / FDb / SDb) on ``model``; ``batch`` is B of FDb / SDb (default ``METHODS``).

    Memoized per (model, method, batch), so every fit of a model reuses the compiled loop; the step
    size is a run-time setting (``state.hyper["alpha"]``, Tan's methods), set by :func:`start_state`
    or changed with ``vilab.core.resume(alg, trace, n, hyper={"alpha": a})``. Its ``init(key, start,
    alpha=, window=)`` takes the starting scale t0 (T = t0 I, mu = 0; None for the default).
    """
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"Unknown method {method!r}; choose one of {', '.join(METHODS)}.")
    group = METHODS[method]["group"]
    if group == "chen-dense":
        raise ValueError(f"{METHODS[method]['label']} runs on a dense factor through vilab.divergences.stochastic; "
                         "use fit() for it.")
    if group == "tan":
        return _build(model, method, None)
    return _build(model, method, _chen_batch(method, batch))


@memoize("vilab.hierarchical algorithms", maxsize=32)
def _build(model, method: str, B: int | None) -> Algorithm:
    if method == "gva-vogn":
        return _vogn_algorithm(model)
    if METHODS[method]["group"] == "tan":
        return _tan_algorithm(model, method)
    return _chen_algorithm(model, method, B)


def _chen_batch(method, batch):
    B = METHODS[method]["batch"] if batch is None else integer(batch, "The batch size B", minimum=1)
    if method in ("fdb", "sdb") and B < 2:
        raise ValueError("The batch methods need a batch of at least B = 2 draws.")
    return B if method != "kld" else 1


def start_state(model, method: str, key, *, alpha: float | None = None, batch: int | None = None,
                window: int = 1000, init_scale: float | None = None) -> HierState:
    """The starting state of ``algorithm(model, method, batch)``: mu = 0, T = init_scale I."""
    if init_scale is not None:
        init_scale = positive(init_scale, "init_scale (the starting T = init_scale * I)")
    window = integer(window, "The window (iterations per ELBO average)", minimum=1)
    alg = algorithm(model, method, batch)
    if METHODS[method]["group"] == "tan":
        return alg.init(key, init_scale, alpha=alpha, window=window)
    return alg.init(key, init_scale, window=window)


def plateau_rule(tol: float):
    """Chen, Nott & Tan Sec. 7.1's stopping rule as a vilab.core host_stop: stop once the least-squares
    slope of the last five window averages of the ELBO estimate (per window) is below ``tol`` (the
    paper's 0.01; a falling ELBO stops too)."""

    from ..divergences.stochastic import chen_slope_rule

    def rule(rows: dict) -> bool:
        el = np.asarray(rows["elbo"], float)[np.asarray(rows["iterations"]) > 0]
        return len(el) >= 5 and bool(np.all(np.isfinite(el[-5:]))) and chen_slope_rule(el, tol)

    return rule


def unless_falling(tr: Trace) -> Trace:
    """``tr``, or, when the slope rule stopped it as converged while the ELBO's window averages were falling
    (:func:`vilab.divergences.stochastic.elbo_falling`: the rule's signed slope holds for a collapsing ELBO
    too), the same run reported as diverged, with the fall in its status."""
    from ..divergences.stochastic import elbo_falling

    if tr.status != "converged" or "elbo" not in tr.extra:
        return tr
    el = np.asarray(tr.extra["elbo"], float)[np.asarray(tr.iterations) > 0]
    if not elbo_falling(el):
        return tr
    return replace(tr, status=f"diverged: the ELBO estimate fell from {np.nanmax(el):.4g} to {el[-1]:.4g}")


def fit(model, method: str, *, key, n_iter: int = 20_000, alpha: float | None = None, batch: int | None = None,
        tol: float | None = None, window: int = 1000, max_seconds: float | None = None,
        init_scale: float | None = None) -> Trace:
    """Run one method on a :class:`vilab.hierarchical.models.HierModel`; returns a :class:`vilab.core.Trace`.

    method : a key of ``METHODS``; key : a jax PRNG key. n_iter : maximum iterations; window :
    iterations per ELBO average (the papers: 1000) and per recorded row; tol : the slope rule of Chen
    et al. Sec. 7.1 (:func:`plateau_rule`, stop when the slope of the last five window averages is
    below tol, the paper's 0.01); None runs all iterations; max_seconds : stop (status "max_time") once
    the wall time exceeds this budget (FDr, SDr and BaM, run by vilab.divergences.stochastic, ignore
    it). alpha : step size of Tan's optimizers (alpha0 for SNNGM); batch : B of FDb/SDb/BaM. Start:
    mu = 0 and T = init_scale * I, by default sqrt(n_obs) I for Tan's methods (Tan (2025) Sec. 8:
    C = I / sqrt(n)) and ``CHEN_T0`` I = 10 I for Chen's (the one starting value the paper states,
    Sec. 5.4; T = I lets the stochastic-volatility runs draw sigma = e^alpha so large that
    exp(-lam - sigma b_t) overflows the ELBO estimate).

    The Trace: rows at the start and at the end of every window: ``mean``, ``var`` (marginal
    variances of q; ``Trace.sd``), ``objective`` = minus the window-average ELBO estimate,
    ``extra["elbo"]`` (that average, NaN at the start), ``extra["factor"]`` (T's free entries,
    ``families.pack``), ``extra["seconds"]`` (wall time at each row, compilation excluded);
    ``info["elbo"]``: the single-draw estimate of every step; ``settings["structure"]``: the pattern.
    Use :func:`final_q`, :func:`sample_q` and :func:`final_elbo` on it.
    """
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"Unknown method {method!r}; choose one of {', '.join(METHODS)}.")
    n_iter = integer(n_iter, "The number of iterations n_iter", minimum=1)
    window = integer(window, "The window (iterations per ELBO average)", minimum=1)
    if init_scale is not None:
        init_scale = positive(init_scale, "init_scale (the starting T = init_scale * I)")
    if max_seconds is not None:
        max_seconds = positive(max_seconds, "The time budget max_seconds")
    if tol is not None:
        tol = real_scalar(tol, "The slope tolerance tol")
    if batch is not None:
        batch = integer(batch, "The batch size B", minimum=1)
    key = core.check_key(key, "fit")
    window = min(window, n_iter)
    if METHODS[method]["group"] == "chen-dense":
        return _fit_chen_dense(model, method, key, n_iter, batch, window, tol, init_scale)
    alg = algorithm(model, method, batch)
    state = start_state(model, method, key, alpha=alpha, batch=batch, window=window, init_scale=init_scale)
    opts = dict(record_every=window, chunk_size=window, max_time=max_seconds,
                host_stop=None if tol is None else plateau_rule(tol))
    core.run(alg, key, state, 1, record_every=window, chunk_size=window)  # compile outside the clock
    stamps = []
    t0 = time.perf_counter()
    tr = core.run(alg, key, state, n_iter, on_chunk=lambda _: stamps.append(time.perf_counter() - t0), **opts)
    tr.extra["seconds"] = _row_seconds(tr, stamps, time.perf_counter() - t0)
    t_scale = _default_scale(model, method) if init_scale is None else float(init_scale)
    tr.settings.update(window=window, tol=tol, max_seconds=max_seconds, T0=f"{t_scale:.4g} I",
                       **({"alpha": float(state.hyper["alpha"])} if "alpha" in state.hyper else {}))
    return unless_falling(tr)


def prefix(trace: Trace, n_iter: int) -> Trace | None:
    """The first ``n_iter`` iterations of a :func:`fit` Trace as a Trace of their own: what
    ``fit(..., n_iter=n_iter)`` with the same settings returns, when this run went past ``n_iter``
    and recorded a row there (``n_iter`` a multiple of its window). Status "max_steps" (a run that
    stopped at ``n_iter`` by the rule, or diverged after it, had not stopped before: the rule is
    checked only between windows, never at a run's last iteration); None when there is no row at
    ``n_iter``. A prefix shorter than the run has no final state (``state`` None): it cannot be resumed."""
    n_iter = integer(n_iter, "The number of iterations n_iter", minimum=0)
    its = np.asarray(trace.iterations)
    if n_iter > trace.n_steps:
        return None
    if n_iter == trace.n_steps:  # one run of n_iter iterations: no rule, no budget at its last iteration
        keep = trace.status in ("converged", "max_steps", "max_time")
        settings = {**trace.settings, "n_steps": n_iter} if "n_steps" in trace.settings else trace.settings
        return replace(trace, status="max_steps", note="", state=trace.state if keep else None,
                       key=trace.key if keep else None, settings=settings)
    R = int(np.searchsorted(its, n_iter, side="right"))
    if R == 0 or int(its[R - 1]) != n_iter:
        return None

    def cut(a):
        return None if a is None else np.asarray(a)[:R]

    extra = {k: (np.asarray(v)[:R] if isinstance(v, np.ndarray) and v.ndim and v.shape[0] == trace.n_rows else v)
             for k, v in trace.extra.items()}
    info = {k: np.asarray(v)[:n_iter] for k, v in trace.info.items()}
    settings = {k: v for k, v in trace.settings.items() if k != "resumed_at"}
    if "n_steps" in settings:
        settings["n_steps"] = n_iter
    return replace(trace, mean=cut(trace.mean), cov=cut(trace.cov), var=cut(trace.var),
                   objective=cut(trace.objective), iterations=its[:R], step_sizes=np.asarray(trace.step_sizes)[:n_iter],
                   info=info, extra=extra, status="max_steps", note="", settings=settings, state=None, key=None)


def refit(model, method: str, previous: Trace | None, *, key, n_iter: int, alpha: float | None = None,
          batch: int | None = None, tol: float | None = None, window: int = 1000,
          max_seconds: float | None = None, init_scale: float | None = None) -> Trace:
    """``fit(model, method, key=key, n_iter=n_iter, ...)``, computed from ``previous``, a fit of the same
    model, method, key and settings with another ``n_iter``, wherever that gives the same Trace: a
    slider that moves the maximum of iterations then costs at most the new iterations, not a new run.

    * ``previous`` stopped (converged by the rule, or diverged) at or before ``n_iter``: it is the result;
    * ``n_iter`` below its end, at one of its rows: its :func:`prefix`;
    * it ran all its ``N < n_iter`` iterations: the rule is checked at N (as one run of ``n_iter``
      would between windows), then the run continues from its final state with
      :func:`vilab.core.resume` (the runner carries the key, so the numbers are those of one run),
      the rule seeing every window average since the start, and the time budget what is left of it;
    * otherwise (no previous run, a dense method of Chen et al., another window, a run cut by the time
      budget that must go further): a new :func:`fit`.

    Wall times (``extra["seconds"]``) are those of the runs actually made. Only the iterations and the
    stopping rule are reused: pass the same key and settings as for ``previous``.
    """
    n_iter = integer(n_iter, "The number of iterations n_iter", minimum=1)
    window_used = min(integer(window, "The window (iterations per ELBO average)", minimum=1), n_iter)
    ok = (previous is not None and isinstance(previous, Trace) and method in METHODS
          and METHODS[method]["group"] != "chen-dense" and previous.settings.get("method") == method
          and previous.settings.get("window") == window_used and previous.settings.get("tol") == tol
          and previous.settings.get("max_seconds") == (None if max_seconds is None else float(max_seconds))
          and "factor" in previous.extra and "seconds" in previous.extra)
    if not ok:
        return fit(model, method, key=key, n_iter=n_iter, alpha=alpha, batch=batch, tol=tol, window=window,
                   max_seconds=max_seconds, init_scale=init_scale)
    N = previous.n_steps
    if n_iter <= N:
        cut = prefix(previous, n_iter)
        if cut is not None:
            return cut
    elif previous.status == "converged" or previous.diverged:
        return replace(previous, settings={**previous.settings, "n_steps": n_iter})
    elif previous.status == "max_steps" and previous.state is not None and previous.key is not None:
        el, its = np.asarray(previous.extra["elbo"], float), np.asarray(previous.iterations)
        if tol is not None and plateau_rule(tol)({"elbo": el, "iterations": its}):
            return unless_falling(replace(previous, status="converged"))  # one run of n_iter stops here
        spent = float(np.asarray(previous.extra["seconds"])[-1])
        if max_seconds is not None and spent > max_seconds:
            return replace(previous, status="max_time")
        rule = None
        if tol is not None:
            base = plateau_rule(tol)

            def rule(rows):
                return base({"elbo": np.r_[el, np.asarray(rows["elbo"], float)[1:]],
                             "iterations": np.r_[its, np.asarray(rows["iterations"])[1:]]})

        alg = algorithm(model, method, batch)
        stamps = []
        t0 = time.perf_counter()
        out = core.resume(alg, previous, n_iter - N, record_every=window_used, chunk_size=window_used,
                          max_time=None if max_seconds is None else max_seconds - spent, host_stop=rule,
                          on_chunk=lambda _: stamps.append(time.perf_counter() - t0))
        n_new = out.n_rows - previous.n_rows + 1  # the continuation's rows, its first repeating the last one
        more = _row_seconds(replace(out, iterations=out.iterations[-n_new:], mean=out.mean[-n_new:]), stamps,
                            time.perf_counter() - t0)
        out.extra["seconds"] = np.r_[np.asarray(previous.extra["seconds"]), spent + more[1:]]
        out.settings.pop("resumed_at", None)
        out.settings["n_steps"] = n_iter
        out.settings.update({k: previous.settings[k] for k in ("window", "tol", "max_seconds", "T0", "alpha")
                             if k in previous.settings})
        return unless_falling(out)
    return fit(model, method, key=key, n_iter=n_iter, alpha=alpha, batch=batch, tol=tol, window=window,
               max_seconds=max_seconds, init_scale=init_scale)


def _row_seconds(tr: Trace, stamps, total) -> np.ndarray:
    """Wall time at every row: 0 at the start, then the end of each chunk (one row per chunk; a
    diverged run's last row, inside its chunk, gets the total)."""
    sec = np.r_[0.0, stamps][: tr.n_rows]
    return np.r_[sec, np.full(tr.n_rows - len(sec), total)]


def _fit_chen_dense(model, method, key, n_iter, batch, window, tol, init_scale):
    """FDr, SDr and BaM through vilab.divergences.stochastic (dense d x d factor), as a Trace of this
    module's layout (rows: mean, var, elbo, factor, seconds)."""
    from ..divergences import stochastic as sto

    st = fam.structure_of(model)
    t0 = CHEN_T0 if init_scale is None else float(init_scale)
    if st.d > DENSE_MAX_DIM:
        raise ValueError(f"{METHODS[method]['label']} runs on a dense d x d factor; d = {st.d} is too large here "
                         "(use KLD, FDb or SDb, which exploit the sparsity).")
    B = METHODS[method]["batch"] if batch is None else integer(batch, "The batch size B", minimum=1)
    if method == "bam" and batch is None and st.d >= B:
        # the paper's B = 100 (epilepsy) is below Epi II's d = 127: the batch covariance is then
        # rank deficient and BaM's first update (learning rate B d) was non-finite for both seeds we
        # tried; B = 300 converges (300 iterations, normalised mode error 0.09, s.d. ratio 0.96)
        B = 300
    if method == "bam":
        # BaM starts at Sigma = I whatever init_scale says: from Sigma = I / 9 or I / 100 its first
        # update (learning rate B d) is already non-finite on Epi I
        bw = min(window, 50)
        tr = sto.run_bam(model.target, key=key, n_iter=n_iter, batch_size=B, window=bw, tol=tol, history=False)
    else:
        bw = window
        tr = sto.run_sgd(model.target, method, key=key, n_iter=n_iter, batch_size=max(B, 1),
                         mask=fam.dense_mask(st), T0=t0 * np.eye(st.d), window=window, tol=tol)
    return _dense_as_rows(tr, st, method, bw, dict(batch=B, T0="Sigma0 = I" if method == "bam" else f"{t0:.4g} I",
                                                   window=bw, tol=tol,
                                                   via="vilab.divergences.stochastic (dense factor, sparse mask)"))


def _dense_as_rows(tr: Trace, st: Structure, method: str, window: int, settings: dict) -> Trace:
    ex = dict(tr.extra)
    n = tr.n_rows
    covs = np.asarray(tr.cov, float)
    with np.errstate(all="ignore"):
        if "T" in ex and np.asarray(ex["T"]).shape[0] == n:
            Ts = np.asarray(ex["T"], float)
        else:
            Ts = np.stack([np.linalg.cholesky(np.linalg.inv(c)) for c in covs])
    Fs = [fam.from_dense(T, st) for T in Ts]  # BaM's dense factor is projected onto the pattern (as ever)
    factor = np.stack([np.asarray(fam.pack(F, st)) for F in Fs])
    var = np.stack([fam.marginal_sd(F, st) ** 2 for F in Fs])  # q as stored: sample_q draws from the same
    its = np.asarray(tr.iterations)
    if "iterations" in ex and np.asarray(ex["iterations"]).shape[0] >= n:  # the old layout: rows' iterations
        its = np.asarray(ex["iterations"])[:n]
    el = np.asarray(ex.get("elbo", np.full(n, np.nan)), float)
    if not (el.shape[0] == n and np.isnan(el[0])):  # window averages without the start row
        el = np.r_[np.nan, el, np.full(max(n - 1 - el.shape[0], 0), np.nan)][:n]
    secs = np.asarray(ex.get("window_seconds", np.full(n - 1, tr.timings.get("total", np.nan))), float)
    secs = np.r_[0.0, secs][:n]
    secs = np.r_[secs, np.full(n - len(secs), secs[-1] if len(secs) else 0.0)]
    extra = {"elbo": el[:n], "factor": factor, "seconds": secs}
    return Trace(mean=tr.mean, cov=None, var=var, objective=-el[:n],
                 step_sizes=tr.step_sizes, status=tr.status, method=METHODS[method]["label"],
                 objective_name="negative ELBO (window average)", extra=extra, iterations=its, info=tr.info,
                 note=tr.note, settings={**dict(tr.settings), **settings, "method": method,
                                         "label": METHODS[method]["label"], "structure": st},
                 timings=tr.timings)


# ------------------------------------------------------------------------------ using a fit


def final_q(trace: Trace) -> tuple[np.ndarray, BlockFactor, Structure]:
    """(mu, T as a BlockFactor, the pattern) of the last row of a :func:`fit` Trace."""
    st = trace.settings.get("structure")
    if not isinstance(st, Structure) or "factor" not in trace.extra:
        raise ValueError("This Trace was not produced by vilab.hierarchical.fit (it has no sparse factor).")
    F = fam.unpack(jnp.asarray(np.asarray(trace.extra["factor"])[-1]), st)
    return np.asarray(trace.mean[-1]), F, st


def sample_q(trace: Trace, m: int, key) -> np.ndarray:
    """m draws theta = mu + T^{-T} z from the fitted q (block back-substitutions, O(m n)); key: jax PRNG key."""
    m = integer(m, "The number of draws m", minimum=1, maximum=2**31 - 1)
    mu, F, st = final_q(trace)
    z = jax.random.normal(core.check_key(key, "sample_q"), (m, st.d))
    return mu + np.asarray(_offsets_batch(F, z, BlockPrecFamily(st)))


@partial(jax.jit, static_argnums=2)
def _offsets_batch(F, Z, family: BlockPrecFamily):
    """T^{-T} z for every row of Z (the family's :meth:`~vilab.family.block.BlockPrecFamily.offsets`)."""
    return family.offsets((None, F), Z)


def final_elbo(model, trace: Trace, *, key, n_draws: int = 2000) -> tuple[float, float]:
    """Monte Carlo ELBO at the final q (mean, standard error); Tan Sec. 8: mean of h over draws from q.
    ``n_draws`` >= 2 (the standard error needs two draws)."""
    n_draws = integer(n_draws, "The number of ELBO draws n_draws (at least 2 for a standard error)", minimum=2,
                      maximum=2**31 - 1)
    mu, F, st = final_q(trace)
    z = jax.random.normal(core.check_key(key, "final_elbo"), (n_draws, st.d))
    family = BlockPrecFamily(st)
    thetas = mu + np.asarray(_offsets_batch(F, z, family))
    lp = np.asarray(model.target.value_batch(jnp.asarray(thetas)))
    h = lp - np.asarray(family.log_q_whitened((mu, F), z))
    out = float(h.mean()), float(h.std(ddof=1) / math.sqrt(n_draws))
    finite_result(np.asarray(out), "The Monte Carlo ELBO at the final q")
    return out
