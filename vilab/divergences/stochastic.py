"""Stochastic Gaussian VI under KL, Fisher and score-based divergences (Chen, Nott & Tan Sec. 4-6).

Variational family q = N(mu, Sigma), precision Omega = Sigma^{-1} = T T^T with T lower triangular
(the Cholesky factor of the precision), draws theta = mu + T^{-T} z, z ~ N(0, I).  The
diagonal of T is updated on the log scale, T*_ii = log T_ii (Sec. 4; the chain rule is the
matrix D = diag(vech J), J_ii = T_ii, J_ij = 1).  Only the free entries of T (``mask``) are
updated: "dense", "diagonal" (mean field) or any lower-triangular pattern (Sec. 4,
:func:`sparse_pattern`).

Methods (all gradients written in the DESCENT convention, i.e. the step is ``-rho * grad``):

* ``"kl"``  Tan & Nott (2018), the paper's KL baseline (Table 4, left column).
* ``"fdr"``, ``"sdr"``  reparameterisation-trick gradients of F and S (Table 4, right column;
  they need Hessian-vector products of log h).
* ``"fdb"``, ``"sdb"``  gradients of the batch objectives F_hat, S_hat (Table 5, eq. 9).
* ``"bam"``  batch-and-match (Cai et al. 2024) with its closed-form update (Sec. 6.1).
* ``"gsm"``  Gaussian score matching (Modi et al. 2023), which GSM-VI ships beside BaM: BaM's
  predecessor, a closed-form match of the score at each draw, averaged over the batch, no step size.

Each method is a :class:`vilab.core.Algorithm`: :func:`algorithm` (the five SGD methods) and
:func:`bam`, memoized on their settings, run by :func:`vilab.core.run` (resumable, with the step
size in ``state.hyper``); :func:`run_sgd` and :func:`run_bam` are conveniences that add the paper's
window-averaged ELBO and stopping rule (Sec. 7.1, :func:`chen_slope_rule`).

Step sizes: Adadelta (Zeiler 2012), the paper's choice, through ``optax.adadelta`` with
learning rate 1 (optax's update is exactly Zeiler's: E[g^2], then
sqrt(E[dx^2] + eps) / sqrt(E[g^2] + eps) * g, then E[dx^2]); the paper leaves decay and eps
unspecified, the defaults 0.95 and 1e-6 are Zeiler's / Tan & Nott's.  Any optax rule can be
passed instead.  Every run returns a :class:`vilab.core.Trace`.

Draws: the Algorithms draw from their own key stream (:func:`_draw_key`: one key per window of
iterations, split per iteration), the stream vilab has always used, so seeded runs reproduce
exactly; the runner's per-step key is not used.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..core import checks
from ..family import gaussian
from ..core import NONFINITE, Algorithm, Trace, is_key, run
from ..core.algorithm import range_code_factor
from ..core.cache import memoize
from ..family.gaussian import check_factor, check_mean_cov

__all__ = [
    "SGD_METHODS",
    "METHOD_LABELS",
    "sparse_pattern",
    "make_mask",
    "batch_statistics",
    "grad_kl",
    "grad_fdr",
    "grad_sdr",
    "grad_sdb",
    "grad_fdb_mu",
    "grad_fdb_T",
    "batch_objectives",
    "bam_update",
    "gsm_update",
    "gsm",
    "algorithm",
    "bam",
    "DrawStream",
    "SGDState",
    "BaMState",
    "chen_slope_rule",
    "elbo_falling",
    "run_sgd",
    "run_bam",
    "make_optimizer",
    "tail_average_variances",
]

SGD_METHODS = ("kl", "fdr", "sdr", "fdb", "sdb")
METHOD_LABELS = {"kl": "KLD", "fdr": "FDr", "sdr": "SDr", "fdb": "FDb", "sdb": "SDb", "bam": "BaM", "gsm": "GSM"}
MAX_PATTERN_DIM = 4096  # the largest d of a d x d sparsity pattern


# ---------------------------------------------------------------------------------------------
# sparsity patterns of T (Sec. 4)


def sparse_pattern(n_local: int, block: int, ell: int, n_global: int) -> np.ndarray:
    """Free entries of T for a two-tier model (Chen, Nott & Tan Sec. 4, eq. 7; Rothman et al. 2010).

    theta = (b_1, ..., b_n, theta_G) with local blocks of size ``block`` that are ``ell``-th order
    Markov given the globals.  Block rows i <= n are free only for block columns i - ell <= j <= i
    (the paper's "T_ij = 0 for 1 <= j <= i - l" is off by one: it would zero the diagonal blocks
    for ell = 0; this is the corrected reading); the global block row is dense.
    """
    n_local = checks.integer(n_local, "The number of local blocks n_local", minimum=1)
    block = checks.integer(block, "The block size", minimum=1)
    ell = checks.integer(ell, "The Markov order ell", minimum=0)
    n_global = checks.integer(n_global, "The number of globals n_global", minimum=0)
    d = n_local * block + n_global
    if d > MAX_PATTERN_DIM:
        raise ValueError(f"The pattern would have dimension {d}; at most {MAX_PATTERN_DIM} is supported.")
    P = np.zeros((d, d), dtype=bool)
    for i in range(n_local):
        for j in range(max(0, i - ell), i + 1):
            P[i * block:(i + 1) * block, j * block:(j + 1) * block] = True
    P[n_local * block:, :] = True
    return np.tril(P)


def make_mask(mask, d: int) -> np.ndarray:
    """Boolean lower-triangular pattern of the free entries of T ("dense", "diagonal" or an array)."""
    d = checks.integer(d, "The dimension d", minimum=1, maximum=MAX_PATTERN_DIM)
    if isinstance(mask, str):
        if mask == "dense":
            return np.tril(np.ones((d, d), dtype=bool))
        if mask in ("diagonal", "meanfield", "mean_field"):
            return np.eye(d, dtype=bool)
        raise ValueError("mask must be 'dense', 'diagonal' or a (d, d) boolean pattern.")
    m = checks.real_array(mask, "The sparsity pattern", ndim=2) != 0
    if m.shape != (d, d):
        raise ValueError(f"The sparsity pattern must be {d} x {d}; got shape {m.shape}.")
    m = np.tril(m)
    np.fill_diagonal(m, True)
    return m


# ---------------------------------------------------------------------------------------------
# gradient formulas (exposed for tests and for the gradient-variance study of Sec. 5.4)


def _tri_solve(T, b, trans=False):
    """Solve T x = b (trans=False) or T^T x = b (trans=True), T lower triangular."""
    return jax.scipy.linalg.solve_triangular(T, b, lower=True, trans=1 if trans else 0)


def grad_kl(score, mu, T, z):
    """Tan & Nott (2018) single-draw ELBO gradients (Chen, Nott & Tan Table 4, KLD), descent convention.

    u = T^{-T} z, theta = mu + u, g = grad log h(theta) + T z, v = T^{-1} g, g_T = -u v^T.
    The ascent step is mu += rho g, T += rho g_T; returned: (-g, -g_T) (full matrix; callers
    keep the lower triangle).
    """
    u = _tri_solve(T, z, trans=True)
    theta = mu + u
    g = score(theta) + T @ z
    v = _tri_solve(T, g)
    return -g, jnp.outer(u, v)


def grad_fdr(score, hvp, mu, T, z):
    """Unbiased single-draw gradient of F(lambda) (Chen, Nott & Tan Sec. 5.2 / Table 4, FDr).

    grad_mu F = 2 E[H g], grad_T F = 2 E[g z^T - T^{-T} z g^T H T^{-T}], H = hess log h(theta),
    g = grad log h(theta) + T z.  Returns (2 w, 2 (g z^T - u v^T)), w = H g, v = T^{-1} w.
    """
    u = _tri_solve(T, z, trans=True)
    theta = mu + u
    g = score(theta) + T @ z
    w = hvp(theta, g)
    v = _tri_solve(T, w)
    return 2.0 * w, 2.0 * (jnp.outer(g, z) - jnp.outer(u, v))


def grad_sdr(score, hvp, mu, T, z):
    """Unbiased single-draw gradient of S(lambda) (Chen, Nott & Tan Sec. 5.2 / Table 4, SDr).

    Table 4 step 3: g <- T^{-1} g, z <- z - g, g <- T^{-T} g (so g = Sigma g_orig and
    z = -T^{-1} grad log h); then w = H g, v = T^{-1} w, grad_mu = 2 w, grad_T = 2 (g z^T - u v^T).
    """
    u = _tri_solve(T, z, trans=True)
    theta = mu + u
    g = score(theta) + T @ z
    g1 = _tri_solve(T, g)
    z2 = z - g1
    g2 = _tri_solve(T, g1, trans=True)
    w = hvp(theta, g2)
    v = _tri_solve(T, w)
    return 2.0 * w, 2.0 * (jnp.outer(g2, z2) - jnp.outer(u, v))


class BatchStats(NamedTuple):
    """Summary statistics of eq. (8) (divisor B)."""

    theta_bar: jax.Array
    g_bar: jax.Array
    C_theta: jax.Array
    C_g: jax.Array
    C_theta_g: jax.Array


def _traced(*args) -> bool:
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(args))


def _draws(thetas, gs, d: int | None = None):
    """(B, d) draws and their (B, d) scores as float64 jnp arrays, checked (finite, matching shapes)."""
    th = checks.real_array(thetas, "The draws thetas", ndim=2)
    g = checks.real_array(gs, "The scores gs", ndim=2)
    if g.shape != th.shape:
        raise ValueError(f"The draws thetas and their scores gs must have the same shape (B, d); got {th.shape} "
                         f"and {g.shape}.")
    if d is not None and th.shape[1] != d:
        raise ValueError(f"The draws must have {d} coordinates (the dimension of mu); got {th.shape[1]}.")
    return jnp.asarray(th), jnp.asarray(g)


def batch_statistics(thetas, gs) -> BatchStats:
    """theta_bar, g_bar, C_theta, C_g, C_theta_g of Chen, Nott & Tan eq. (8) (divisor B)."""
    if not _traced(thetas, gs):
        thetas, gs = _draws(thetas, gs)
    tb = thetas.mean(0)
    gb = gs.mean(0)
    dt = thetas - tb
    dg = gs - gb
    B = thetas.shape[0]
    return BatchStats(tb, gb, dt.T @ dt / B, dg.T @ dg / B, dt.T @ dg / B)


def batch_objectives(mu, T, thetas, gs):
    """S_hat and F_hat of Chen, Nott & Tan Sec. 6.1 at lambda = (mu, T) for fixed draws and scores.

    S_hat = tr(V Sigma) + tr(U Sigma^{-1}) + 2 tr(W),
    F_hat = tr(V) + tr(U Sigma^{-2}) + 2 tr(W Sigma^{-1}),
    U = C_theta + (mu - theta_bar)(.)^T, V = C_g + g_bar g_bar^T, W = C_theta_g - (mu - theta_bar) g_bar^T.
    """
    st = batch_statistics(thetas, gs)
    r = mu - st.theta_bar
    U = st.C_theta + jnp.outer(r, r)
    V = st.C_g + jnp.outer(st.g_bar, st.g_bar)
    W = st.C_theta_g - jnp.outer(r, st.g_bar)
    Om = T @ T.T
    Sig = jnp.linalg.inv(Om)
    S_hat = jnp.trace(V @ Sig) + jnp.trace(U @ Om) + 2 * jnp.trace(W)
    F_hat = jnp.trace(V) + jnp.trace(U @ Om @ Om) + 2 * jnp.trace(W @ Om)
    return S_hat, F_hat


def grad_sdb(mu, T, st: BatchStats):
    """Gradient of S_hat (Chen, Nott & Tan eq. 9 / Table 5, SDb).

    g_mu = 2 T T^T (mu - theta_bar) - 2 g_bar,  g_T = 2 (U T - T^{-T} T^{-1} V T^{-T}).
    """
    r = mu - st.theta_bar
    U = st.C_theta + jnp.outer(r, r)
    V = st.C_g + jnp.outer(st.g_bar, st.g_bar)
    g_mu = 2.0 * T @ (T.T @ r) - 2.0 * st.g_bar
    VTinvT = _tri_solve(T, V.T).T  # V T^{-T} = (T^{-1} V^T)^T
    SVT = _tri_solve(T, _tri_solve(T, VTinvT), trans=True)  # T^{-T} T^{-1} V T^{-T}
    return g_mu, 2.0 * (U @ T - SVT)


def grad_fdb_mu(mu, T, st: BatchStats):
    """mu-gradient of F_hat: Omega (2 Omega (mu - theta_bar) - 2 g_bar) (eq. 9 / Table 5 step 5, FDb)."""
    r = mu - st.theta_bar
    g_mu = 2.0 * T @ (T.T @ r) - 2.0 * st.g_bar
    return T @ (T.T @ g_mu)


def grad_fdb_T(mu_U, mu_W, T, st: BatchStats):
    """T-gradient of F_hat: 2 (W + W^T + Omega U + U Omega) T (eq. 9 / Table 5 step 7, FDb).

    U uses ``mu_U`` (Table 5 step 3, before the mean update), W uses ``mu_W`` (step 6, after it,
    in the paper's listing order); with mu_U = mu_W this is the exact gradient of F_hat.

    :func:`algorithm` passes mu_U = mu_W = the current mean: SGD on F_hat (Sec. 6.3, lambda_{t+1} =
    lambda_t - rho_t grad F_hat(lambda_t)). Table 5 is a two-column box flattened by the conversion
    (digest Sec. 6.2 and errata), and its listing order, W at the updated mean, made FDb unstable on
    the epilepsy GLMMs, while the exact gradient reproduces Table 7's FDb column (M* 2.85 vs 2.89).
    """
    r = mu_U - st.theta_bar
    U = st.C_theta + jnp.outer(r, r)
    W = st.C_theta_g - jnp.outer(mu_W - st.theta_bar, st.g_bar)
    Om = T @ T.T
    return 2.0 * (W + W.T + Om @ U + U @ Om) @ T


def bam_update(mu, Sigma, thetas, gs, rho):
    """Batch-and-match closed-form update (Cai et al. 2024; Chen, Nott & Tan Sec. 6.1).

    U = rho Gamma + rho/(1+rho) g_bar g_bar^T,  V = Sigma + rho C + rho/(1+rho) (mu - theta_bar)(.)^T,
    Sigma_new = 2 V (I + (I + 4 U V)^{1/2})^{-1},  mu_new = mu/(1+rho) + rho/(1+rho) (Sigma_new g_bar + theta_bar).
    The matrix square root is taken in the symmetric form: with V = L L^T and
    N = I + 4 L^T U L = Q diag(e) Q^T, Sigma_new = 2 L Q diag(1/(1 + sqrt e)) Q^T L^T (same matrix,
    symmetric PD by construction).
    """
    if not _traced(mu, Sigma, thetas, gs, rho):
        mu, Sigma = (jnp.asarray(a) for a in check_mean_cov(mu, Sigma))
        thetas, gs = _draws(thetas, gs, mu.shape[0])
        checks.positive(rho, "The step size rho of batch-and-match")
    st = batch_statistics(thetas, gs)
    d = mu.shape[0]
    c = rho / (1.0 + rho)
    U = rho * st.C_g + c * jnp.outer(st.g_bar, st.g_bar)
    r = mu - st.theta_bar
    V = Sigma + rho * st.C_theta + c * jnp.outer(r, r)
    L = jnp.linalg.cholesky(0.5 * (V + V.T))
    N = jnp.eye(d) + 4.0 * L.T @ U @ L
    e, Q = jnp.linalg.eigh(0.5 * (N + N.T))
    LQ = L @ Q
    S_new = 2.0 * (LQ / (1.0 + jnp.sqrt(jnp.maximum(e, 1.0)))) @ LQ.T
    S_new = 0.5 * (S_new + S_new.T)
    mu_new = mu / (1.0 + rho) + c * (S_new @ st.g_bar + st.theta_bar)
    return mu_new, S_new


# ---------------------------------------------------------------------------------------------
# optimisers


def make_optimizer(step="adadelta", learning_rate=None, rho: float = 0.95, eps: float = 1e-6):
    """The step-size rule of the SGD methods.

    ``step``: "adadelta" (the paper's choice; optax.adadelta with decay ``rho``, ``eps`` and
    learning rate 1 unless ``learning_rate`` is given), "adam", "rmsprop", "adagrad", "sgd" (these
    need ``learning_rate``), or any ``optax.GradientTransformation``.  Named rules are cached (one
    object per setting).
    """
    if isinstance(step, optax.GradientTransformation):
        return step
    if learning_rate is not None:
        learning_rate = checks.positive(learning_rate, "The learning rate")
    rho = checks.real_scalar(rho, "Adadelta's decay rho")
    eps = checks.positive(eps, "Adadelta's offset eps")
    if not 0.0 < rho < 1.0:
        raise ValueError(f"Adadelta needs a decay rho in (0, 1); got rho={rho}.")
    if not isinstance(step, str):
        raise ValueError("step must be 'adadelta', 'adam', 'rmsprop', 'adagrad', 'sgd' or an optax transformation.")
    return _make_optimizer(step, None if learning_rate is None else float(learning_rate), float(rho), float(eps))


@memoize("vilab.divergences.stochastic optimizers", maxsize=64)
def _make_optimizer(step, learning_rate, rho, eps):
    if step == "adadelta":
        return optax.adadelta(learning_rate=1.0 if learning_rate is None else learning_rate, rho=rho, eps=eps)
    if step in ("adam", "rmsprop", "sgd", "adagrad"):
        if learning_rate is None:
            raise ValueError(f"The {step} rule needs a positive learning_rate.")
        return getattr(optax, step)(learning_rate)
    raise ValueError("step must be 'adadelta', 'adam', 'rmsprop', 'adagrad', 'sgd' or an optax transformation.")


# ---------------------------------------------------------------------------------------------
# shared pieces of the Algorithms: log q of the draws, the draw keys, the window ELBO average


def _logq(half_logdet_prec, z):
    """log q(theta) at draws theta = mu + F z (F any factor with F F^T = Sigma), from the standard
    normal z and 1/2 log |Sigma^{-1}| (= sum log T_ii for the precision factor T, = -sum log C_ii
    for the covariance factor C): the one log q of the SGD methods and BaM."""
    d = z.shape[-1]
    return half_logdet_prec - 0.5 * jnp.sum(z**2, -1) - 0.5 * d * jnp.log(2 * jnp.pi)


class DrawStream(NamedTuple):
    """What the SGD methods and BaM share in their states: the iteration count ``t``, the
    ``window`` (iterations per draw key and per ELBO average), the ``chain`` and window keys of
    :func:`_draw_key`, the current window's ELBO sum, count and non-finite flag (:func:`_window_elbo`),
    and the last step's ``draws`` ((B, d) when recorded, else (0, d))."""

    t: jax.Array
    window: jax.Array
    chain: jax.Array
    wkey: jax.Array
    esum: jax.Array
    ecount: jax.Array
    ebad: jax.Array
    draws: jax.Array


def _stream_init(key, window, n_draws: int, d: int) -> DrawStream:
    """The stream at t = 0: both keys are ``key``, an empty window, ``n_draws`` zero draws."""
    return DrawStream(jnp.int64(0), window, key, key, jnp.float64(0.0), jnp.int64(0), jnp.asarray(False),
                      jnp.zeros((n_draws, d)))


def _stream_key(ds: DrawStream):
    """The key of this step's draws, whether it opens a window, and the stream with its keys moved on."""
    k, chain, wkey, first = _draw_key(ds.chain, ds.wkey, ds.t, ds.window)
    return k, first, ds._replace(chain=chain, wkey=wkey)


def _stream_advance(ds: DrawStream, first, elbo, draws, record: bool) -> DrawStream:
    """The stream after a step: t + 1, the step's ELBO estimate added to the window, its draws kept
    when ``record``."""
    esum, ecount, ebad = _window_elbo(ds, elbo, first)
    return ds._replace(t=ds.t + 1, esum=esum, ecount=ecount, ebad=ebad, draws=draws if record else ds.draws)


def _draw_key(chain, wkey, t, window):
    """The key of iteration t's draws, and the updated (chain, window key).

    Draws come in windows of ``window`` iterations: at the start of each window the chain key is
    split into (chain, window key), and iteration t draws with ``fold_in(window key, t mod window)``
    (= ``split(window key, window)[t mod window]``). This is the stream vilab's stochastic runs have
    always used, so seeded runs and the published numbers are unchanged; it does not depend on how
    the runner chunks the run.
    """
    first = (t % window) == 0
    chain, wkey = jax.lax.cond(first, lambda c, w: tuple(jax.random.split(c)), lambda c, w: (c, w), chain, wkey)
    return jax.random.fold_in(wkey, (t % window).astype(jnp.uint32)), chain, wkey, first


def _window_elbo(ds: DrawStream, elbo, first):
    """Running sum and count of the current window's ELBO estimates (non-finite ones flag the window)."""
    ok = jnp.isfinite(elbo)
    esum = jnp.where(first, 0.0, ds.esum) + jnp.where(ok, elbo, 0.0)
    ecount = jnp.where(first, 0, ds.ecount) + 1
    ebad = jnp.where(first, False, ds.ebad) | ~ok
    return esum, ecount, ebad


def _window_average(ds: DrawStream):
    return jnp.where((ds.ecount > 0) & ~ds.ebad, ds.esum / jnp.maximum(ds.ecount, 1), jnp.nan)


def _check_target(target):
    if not hasattr(target, "log_density") or not hasattr(target, "dim"):
        raise ValueError("The target must be a vilab.targets.Target (with log_density and dim).")
    return int(target.dim)


def _exact_kl_of(target):
    """observe's objective for a Gaussian target: KL(q || p) by :func:`vilab.family.gaussian.kl`; else None."""
    if target.mean is None or target.cov is None or not getattr(target, "quadratic", False):
        return None
    p = gaussian.MeanCov(jnp.asarray(target.mean, float), jnp.asarray(target.cov, float))
    return lambda mu, cov: gaussian.kl(gaussian.MeanCov(mu, cov), p)


def _check_window(window):
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise ValueError("The window (iterations per ELBO average) must be a whole number of at least 1; "
                         f"got {window!r}.")
    return int(window)


# ---------------------------------------------------------------------------------------------
# the SGD methods (Tables 4-5) as an Algorithm


class SGDState(NamedTuple):
    """State of :func:`algorithm`: the variational parameters (mu, T*) with T* the factor T of the
    precision on the log scale on its diagonal, the step rule's states, the :class:`DrawStream`
    (iteration count, draw keys, window ELBO sum, last draws) and ``hyper`` = {"learning_rate"}."""

    mu: jax.Array
    Ts: jax.Array
    opt_mu: object
    opt_T: object
    stream: DrawStream
    hyper: dict


#: Codes of the stochastic Algorithms beyond vilab.core.CODES: none (they use 2, 3 and 5).
_SINGULAR = 5
_NOT_PD = 3


def _T_of(Ts, mask):
    d = Ts.shape[0]
    off = jnp.where(mask & ~jnp.eye(d, dtype=bool), Ts, 0.0)
    return off + jnp.diag(jnp.exp(jnp.diag(Ts)))


def _to_Ts_grad(gT, T, mask):
    """D applied to the lower triangle of g_T on the free entries: d/dT*_ii = T_ii d/dT_ii."""
    d = T.shape[0]
    g = jnp.where(mask, jnp.tril(gT), 0.0)
    return g * jnp.where(jnp.eye(d, dtype=bool), jnp.diag(T)[None, :] * jnp.ones((d, 1)), 1.0)


def _cov_of_T(T):
    """Sigma = T^{-T} T^{-1} of the precision factor T."""
    Ti = _tri_solve(T, jnp.eye(T.shape[0], dtype=T.dtype))
    return Ti.T @ Ti


def _rule(step, rho, eps):
    """The step rule with learning rate 1 (the learning rate multiplies its updates, from state.hyper);
    its default learning rate; and a label."""
    if isinstance(step, optax.GradientTransformation):
        return step, 1.0, "optax transformation"
    if not (0.0 < rho < 1.0 and eps > 0.0):
        raise ValueError(f"Adadelta needs a decay rho in (0, 1) and eps > 0; got rho={rho}, eps={eps}.")
    if step not in ("adadelta", "adam", "rmsprop", "sgd", "adagrad"):
        raise ValueError("step must be 'adadelta', 'adam', 'rmsprop', 'adagrad', 'sgd' or an optax transformation.")
    return _make_optimizer(step, 1.0, float(rho), float(eps)), (1.0 if step == "adadelta" else None), str(step)


def algorithm(target, method: str, *, batch_size: int = 5, mask="dense", step="adadelta", rho: float = 0.95,
              eps: float = 1e-6, record_samples: bool = False):
    """KLD, FDr, SDr, FDb or SDb (Chen, Nott & Tan Tables 4-5) as a :class:`vilab.core.Algorithm`.

    Each step draws z ~ N(0, I) (one draw; B draws for FDb/SDb), forms theta = mu + T^{-T} z and
    takes one step of the rule ``step`` along the method's gradient in lambda = (mu, T*):

    * ``"kl"``  Tan & Nott (2018), Table 4 left column (:func:`grad_kl`);
    * ``"fdr"``, ``"sdr"``  Table 4 right column, reparameterisation gradients of F and S
      (Sec. 5.2; :func:`grad_fdr`, :func:`grad_sdr`);
    * ``"fdb"``, ``"sdb"``  Table 5, gradients of the batch objectives F_hat, S_hat of eq. (9)
      (:func:`grad_fdb_mu` / :func:`grad_fdb_T`, :func:`grad_sdb`). FDb uses the exact gradient
      of F_hat at the current (mu, T), not Table 5's listing order (see :func:`grad_fdb_T`).

    The update is lambda_{t+1} = lambda_t + learning_rate * u_t, u_t the step rule's update with
    learning rate 1 (Adadelta, Zeiler 2012, the paper's choice: optax.adadelta with decay ``rho``
    and ``eps``); ``learning_rate`` lives in ``state.hyper`` (``init(key, start, learning_rate=)``,
    :func:`vilab.core.resume`). mask : free entries of T ("dense", "diagonal" or a pattern, Sec. 4).

    State: :class:`SGDState`; ``init(key, start=None, learning_rate=None, window=1000)`` with start
    (mu0, T0) (default 0 and I) or a :class:`vilab.family.gaussian.CholPrec`; ``window`` is the number of
    iterations per ELBO average (and per draw key, see :func:`_draw_key`). Info per step: code,
    step_size (the learning rate), ``elbo`` (the single-batch ELBO estimate at the iterate before the
    step) and ``effective_step_ratio`` (||u|| / ||gradient||, Adadelta's adaptive step). observe:
    mean, cov, the factor ``T``, ``elbo`` (the running average of the current window) and the
    objective, KL(q || p) for a Gaussian target (``vilab.family.gaussian.kl``) else minus that average
    (``samples``: the last step's draws, when ``record_samples``).
    """
    if method not in SGD_METHODS:
        raise ValueError(f"Unknown method {method!r}; choose one of {', '.join(SGD_METHODS)} (or bam).")
    d = _check_target(target)
    if method in ("fdb", "sdb") and batch_size < 2:
        raise ValueError("The batch methods need a batch of at least B = 2 draws.")
    m = make_mask(mask, d)
    opt, lr_default, label = _rule(step, rho, eps)
    B = int(batch_size) if method in ("fdb", "sdb") else 1
    return _sgd_algorithm(target, method, B, m.tobytes(), opt, lr_default, label, float(rho), float(eps),
                          bool(record_samples))


@memoize("vilab.divergences.stochastic SGD algorithms", maxsize=64)
def _sgd_algorithm(target, method, B, mask_bytes, opt, lr_default, label, rho, eps, record_samples):
    d = int(target.dim)
    m_np = np.frombuffer(mask_bytes, dtype=bool).reshape(d, d)
    mask = jnp.asarray(m_np)
    logh = target.log_density
    score = jax.grad(logh)
    exact_kl = _exact_kl_of(target)

    def hvp(theta, v):
        return jax.jvp(score, (theta,), (v,))[1]

    def init(key, start=None, learning_rate=None, window: int = 1000):
        if isinstance(start, gaussian.Natural | gaussian.MeanCov | gaussian.CholCov | gaussian.Expectation
                      | gaussian.MeanField):
            start = gaussian.convert(start, "chol_prec")
        mu0, T0 = (None, None) if start is None else start
        mu0 = np.zeros(d) if mu0 is None else mu0
        T0 = np.eye(d) if T0 is None else T0
        lr = lr_default if learning_rate is None else learning_rate
        if lr is None:
            raise ValueError(f"The {label} rule needs a positive learning_rate.")
        return _init_arrays(jnp.asarray(key), jnp.asarray(mu0, float).reshape(d), jnp.asarray(T0, float).reshape(d, d),
                            jnp.float64(lr), jnp.int64(_check_window(window)))

    @jax.jit
    def _init_arrays(key, mu0, T0, lr, window):
        T0 = jnp.where(mask, T0, 0.0)
        eye = jnp.eye(d, dtype=bool)
        Ts0 = jnp.tril(jnp.where(eye, jnp.log(jnp.abs(jnp.diag(T0)))[None, :] * jnp.ones((d, 1)), T0))
        return SGDState(mu0, Ts0, opt.init(mu0), opt.init(Ts0),
                        _stream_init(key, window, B if record_samples else 0, d), {"learning_rate": lr})

    def step(key, s, batch):  # key unused: the draws follow the window stream of _draw_key
        k, first, ds = _stream_key(s.stream)
        T = _T_of(s.Ts, mask)
        lr = s.hyper["learning_rate"]
        if method in ("kl", "fdr", "sdr"):
            z = jax.random.normal(k, (d,), dtype=s.mu.dtype)
            if method == "kl":
                g_mu, g_T = grad_kl(score, s.mu, T, z)
            elif method == "fdr":
                g_mu, g_T = grad_fdr(score, hvp, s.mu, T, z)
            else:
                g_mu, g_T = grad_sdr(score, hvp, s.mu, T, z)
            zs = z[None, :]
            thetas = s.mu + _tri_solve(T, z, trans=True)[None, :]
        else:
            zs = jax.random.normal(k, (B, d), dtype=s.mu.dtype)
            thetas = s.mu + _tri_solve(T, zs.T, trans=True).T
            st = batch_statistics(thetas, jax.vmap(score)(thetas))
            if method == "sdb":
                g_mu, g_T = grad_sdb(s.mu, T, st)
            else:
                g_mu = grad_fdb_mu(s.mu, T, st)
                g_T = grad_fdb_T(s.mu, s.mu, T, st)  # the exact gradient of F_hat (see grad_fdb_T)
        u_mu, opt_mu = opt.update(g_mu, s.opt_mu, s.mu)
        u_mu = u_mu * lr
        mu_new = optax.apply_updates(s.mu, u_mu)
        gTs = _to_Ts_grad(g_T, T, mask)
        u_T, opt_T = opt.update(gTs, s.opt_T, s.Ts)
        u_T = u_T * lr
        Ts_new = optax.apply_updates(s.Ts, u_T)
        elbo = jnp.mean(jax.vmap(logh)(thetas) - _logq(jnp.sum(jnp.log(jnp.diag(T))), zs))
        gn = jnp.sqrt(jnp.sum(g_mu**2) + jnp.sum(gTs**2))
        un = jnp.sqrt(jnp.sum(u_mu**2) + jnp.sum(u_T**2))
        new = SGDState(mu_new, Ts_new, opt_mu, opt_T, _stream_advance(ds, first, elbo, thetas, record_samples),
                       s.hyper)
        diag = jnp.exp(jnp.diag(Ts_new))
        # a factor whose diagonal left the sane range (Sigma collapsed or exploded, e.g. SDb with plain
        # SGD at a large rate): read off diag(T), which bounds the eigen-range of the triangular T
        finite, singular = jnp.all(jnp.isfinite(diag)), jnp.any(diag == 0)
        rng = range_code_factor(jnp.where(finite & ~singular, diag, 1.0), precision=True)
        code = jnp.where(~finite, NONFINITE, jnp.where(singular, _SINGULAR, rng))
        return new, {"code": code, "step_size": lr, "elbo": elbo,
                     "effective_step_ratio": un / jnp.maximum(gn, 1e-300)}

    def observe(s):
        T = _T_of(s.Ts, mask)
        cov = _cov_of_T(T)
        avg = _window_average(s.stream)
        obj = exact_kl(s.mu, cov) if exact_kl is not None else -avg
        out = {"mean": s.mu, "cov": cov, "objective": obj, "T": T, "elbo": avg}
        if record_samples:
            out["samples"] = s.stream.draws
        return out

    return Algorithm(init, step, observe, name=METHOD_LABELS[method],
                     objective_name="KL(q||p)" if exact_kl is not None else "negative ELBO (window average)",
                     settings={"method": method, "batch_size": B, "mask": m_np, "step": label, "rho": rho, "eps": eps},
                     uses_key=False)


# ---------------------------------------------------------------------------------------------
# batch and match as an Algorithm


class BaMState(NamedTuple):
    """State of :func:`bam`: mean, covariance and its Cholesky factor, the :class:`DrawStream`
    (iteration count, draw keys, window ELBO sum, last draws) and ``hyper`` = {"lr_scale"}."""

    mu: jax.Array
    Sigma: jax.Array
    C: jax.Array
    stream: DrawStream
    hyper: dict


def bam(target, *, batch_size: int = 50, record_samples: bool = False):
    """Batch-and-match (Cai et al. 2024, Algorithm 1 with the closed-form update of their Sec. 3;
    as run by Chen, Nott & Tan Sec. 6.1 / 7) as a :class:`vilab.core.Algorithm`.

    Iteration t (1, 2, ...) draws B points theta_b = mu + C z_b from q_t (Sigma = C C^T), takes their
    scores and applies :func:`bam_update` with learning rate rho_t = ``lr_scale`` / t (the paper:
    lr_scale = B d). Full covariance, no sparsity. ``lr_scale`` lives in ``state.hyper``
    (``init(key, start=None, lr_scale=None, window=50)``, start (mu0, Sigma0) or a
    :class:`vilab.family.gaussian.MeanCov`; ``window``: iterations per ELBO average and per draw key).
    Info: code (3 when the new covariance is not positive definite), step_size rho_t, ``elbo``.
    observe: mean, cov, ``elbo`` (running window average), objective KL(q || p) for a Gaussian
    target else minus that average (``samples`` when ``record_samples``).
    """
    d = _check_target(target)
    if isinstance(batch_size, bool) or int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"The batch size must be a whole number of at least 1; got {batch_size!r}.")
    return _bam_algorithm(target, int(batch_size), bool(record_samples), d)


def gsm_update(mu, Sigma, thetas, gs):
    """Gaussian score matching (Modi et al. 2023, Theorem 3.1 and Alg. 1): for each draw theta_b with
    score g_b, the Gaussian closest to q = N(mu, Sigma) in KL(q || q') whose score at theta_b equals g_b,

        r = mu - theta,  a = (1 + sqrt(1 + 4 (g^T Sigma g + (r^T g)^2))) / 2      (a = 1 + rho of the paper)
        mu' = mu + (1/a) (I - r g^T / (a + r^T g)) (Sigma g - r),
        Sigma' = Sigma + r r^T - (mu' - theta)(mu' - theta)^T,

    so that Sigma' g = mu' - theta (q' matches the score at theta); the batch update averages the B
    single-draw updates of (mu, Sigma) (their Alg. 1). No step size. Checked in tests against the score
    constraint and a brute-force constrained minimisation of the KL."""

    def one(theta, g):
        r = mu - theta
        rg = r @ g
        a = 0.5 * (1.0 + jnp.sqrt(1.0 + 4.0 * (g @ Sigma @ g + rg**2)))
        e = Sigma @ g - r
        m_new = mu + (e - r * (g @ e) / (a + rg)) / a
        q = m_new - theta
        return m_new, Sigma + jnp.outer(r, r) - jnp.outer(q, q)

    ms, Ss = jax.vmap(one)(thetas, gs)
    S_new = jnp.mean(Ss, axis=0)
    return jnp.mean(ms, axis=0), 0.5 * (S_new + S_new.T)


def gsm(target, *, batch_size: int = 2, record_samples: bool = False):
    """Gaussian score matching (Modi et al. 2023, Alg. 1; GSM-VI) as a :class:`vilab.core.Algorithm`,
    run like :func:`bam`: iteration t draws B points from q_t and applies :func:`gsm_update`. It has no
    learning rate (``state.hyper`` is empty); BaM (Cai et al. 2024) adds one, which lets it average
    over large batches without collapsing towards each draw. Same state, draws and observe as :func:`bam`."""
    d = _check_target(target)
    if isinstance(batch_size, bool) or int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"The batch size must be a whole number of at least 1; got {batch_size!r}.")
    return _bam_algorithm(target, int(batch_size), bool(record_samples), d, "gsm")


@memoize("vilab.divergences.stochastic BaM algorithms", maxsize=32)
def _bam_algorithm(target, B, record_samples, d, kind="bam"):
    """BaM (kind "bam") or GSM (kind "gsm"): the same loop of draws, scores and closed-form updates."""
    logh = target.log_density
    score = jax.grad(logh)
    exact_kl = _exact_kl_of(target)

    def init(key, start=None, lr_scale=None, window: int = 50):
        if isinstance(start, gaussian.Natural | gaussian.CholPrec | gaussian.CholCov | gaussian.Expectation
                      | gaussian.MeanField):
            start = gaussian.to_mean_cov(start)
        mu0, S0 = (None, None) if start is None else start
        mu0 = np.zeros(d) if mu0 is None else mu0
        S0 = np.eye(d) if S0 is None else S0
        scale = float(B * d) if lr_scale is None else lr_scale
        return _init_arrays(jnp.asarray(key), jnp.asarray(mu0, float).reshape(d), jnp.asarray(S0, float).reshape(d, d),
                            jnp.float64(scale), jnp.int64(_check_window(window)))

    @jax.jit
    def _init_arrays(key, mu0, S0, scale, window):
        return BaMState(mu0, S0, jnp.linalg.cholesky(S0), _stream_init(key, window, B if record_samples else 0, d),
                        {"lr_scale": scale} if kind == "bam" else {})

    def step(key, s, batch):  # key unused: the draws follow the window stream of _draw_key
        k, first, ds = _stream_key(s.stream)
        z = jax.random.normal(k, (B, d), dtype=s.mu.dtype)
        thetas = s.mu + z @ s.C.T
        gs = jax.vmap(score)(thetas)
        if kind == "bam":
            rho = s.hyper["lr_scale"] / (ds.t + 1).astype(s.mu.dtype)
            mu_new, S_new = bam_update(s.mu, s.Sigma, thetas, gs, rho)
        else:
            rho = jnp.asarray(jnp.nan, s.mu.dtype)  # GSM has no step size
            mu_new, S_new = gsm_update(s.mu, s.Sigma, thetas, gs)
        C_new = jnp.linalg.cholesky(S_new)
        elbo = jnp.mean(jax.vmap(logh)(thetas) - _logq(-jnp.sum(jnp.log(jnp.diag(s.C))), z))
        new = BaMState(mu_new, S_new, C_new, _stream_advance(ds, first, elbo, thetas, record_samples), s.hyper)
        finite = jnp.all(jnp.isfinite(mu_new)) & jnp.all(jnp.isfinite(S_new))
        code = jnp.where(~finite, NONFINITE, jnp.where(jnp.all(jnp.isfinite(C_new)), 0, _NOT_PD))
        return new, {"code": code, "step_size": rho, "elbo": elbo}

    def observe(s):
        avg = _window_average(s.stream)
        obj = exact_kl(s.mu, s.Sigma) if exact_kl is not None else -avg
        out = {"mean": s.mu, "cov": s.Sigma, "objective": obj, "elbo": avg}
        if record_samples:
            out["samples"] = s.stream.draws
        return out

    return Algorithm(init, step, observe, name="BaM" if kind == "bam" else "GSM",
                     objective_name="KL(q||p)" if exact_kl is not None else "negative ELBO (window average)",
                     settings={"method": kind, "batch_size": B}, uses_key=False)


# ---------------------------------------------------------------------------------------------
# conveniences: run_sgd / run_bam (the paper's window averages and stopping rule)


def _window_means(values, window):
    """Averages of consecutive windows of per-step values (the last may be partial); NaN for a window
    with a non-finite value."""
    v = np.asarray(values, float)
    out = []
    for a in range(0, v.shape[0], window):
        w = v[a:a + window]
        out.append(float(np.mean(w)) if np.all(np.isfinite(w)) else np.nan)
    return out


def chen_slope_rule(elbos, tol) -> bool:
    """The stopping rule of Chen, Nott & Tan Sec. 7.1: the slope of a least-squares line through the
    last five window averages of the ELBO estimate (x = 0..4) is below ``tol`` (the paper: 0.01).

    (The slope is signed and per window, unlike :func:`vilab.core.slope_rule`'s relative |slope|:
    the paper's rule is kept so that runs stop where they always did.)
    """
    if tol is None or len(elbos) < 5:
        return False
    slope = np.polyfit(np.arange(5.0), np.asarray(elbos[-5:]), 1)[0]
    return bool(slope < tol)


def elbo_falling(elbos, rel: float = 0.01) -> bool:
    """True when the last five window averages of the ELBO fall by more than ``rel`` of their size, and by
    more than 1 nat, per window: a run that is leaving the posterior, which :func:`chen_slope_rule` (a signed
    slope below tol) would otherwise call converged."""
    if len(elbos) < 5:
        return False
    last = np.asarray(elbos[-5:], float)
    if not np.all(np.isfinite(last)):
        return True
    return bool(np.polyfit(np.arange(5.0), last, 1)[0] < -max(rel * abs(last.mean()), 1.0))


def _check_key(key, who):
    if key is None or not is_key(key):
        raise ValueError(f"{who} needs a jax PRNG key, e.g. key=jax.random.PRNGKey(0) "
                         f"(pages and scripts turn a seed into one with vilab.core.as_key(seed)); got {key!r}.")
    return key


def _drive(alg, key, state, n_iter, window, history, tol, max_time, should_stop, progress):
    """core.run in windows of ``window`` iterations, with the paper's stopping rule between windows;
    then the window averages of the ELBO (``extra["elbo"]``) and the wall time at the end of each
    window (``extra["window_seconds"]``, the first compilation included)."""
    if isinstance(n_iter, bool) or not isinstance(n_iter, (int, np.integer)) or n_iter < 1:
        raise ValueError(f"n_iter must be a whole number of at least 1; got {n_iter!r}.")
    t0 = time.perf_counter()
    seconds, averages = [], []

    def on_chunk(tr):
        seconds.append(time.perf_counter() - t0)
        averages[:] = _window_means(tr.info["elbo"], window)

    several = tol is not None or n_iter > window  # (one window: its time is taken at the end)
    tr = run(alg, key, state, int(n_iter), record_every=1 if history else window, chunk_size=window,
             on_chunk=on_chunk if several else None,
             host_stop=(lambda rows: chen_slope_rule(averages, tol)) if tol is not None else None,
             max_time=max_time, should_stop=should_stop, progress=progress)
    el = _window_means(tr.info["elbo"], window)
    if len(seconds) < len(el):
        seconds.append(time.perf_counter() - t0)
    status = tr.status
    if status == "max_steps" and chen_slope_rule(el, tol):  # the rule holds after the last window too
        status = "converged"
    if status == "converged" and elbo_falling(el):  # the slope rule also holds for a collapsing ELBO
        status = f"diverged: the ELBO estimate fell from {np.max(el):.4g} to {el[-1]:.4g}"
    extra = dict(tr.extra)
    el_its = np.minimum(np.arange(1, len(el) + 1) * window, tr.n_steps)
    if not history and alg.objective_name.startswith("negative ELBO"):
        # rows are the window ends: the objective is minus the window averages, as averaged on the host
        obj = np.asarray(tr.objective, float).copy()
        rows = np.searchsorted(tr.iterations, el_its)
        ok = rows < obj.shape[0]
        obj[rows[ok]] = -np.asarray(el)[ok]
        tr = replace(tr, objective=obj)
    if "samples" in extra:  # the draws of step k (from row k - 1) sit on row k
        extra["samples"] = np.asarray(extra["samples"])[1:]
    extra.update({"elbo": np.asarray(el, float), "elbo_iterations": el_its,
                  "window_seconds": np.asarray(seconds[:len(el)], float)})
    return replace(tr, status=status, extra=extra)


def run_sgd(target, method: str, *, key=None, n_iter: int = 10_000, batch_size: int = 5, mask="dense", mu0=None,
            T0=None, step="adadelta", learning_rate=None, rho: float = 0.95, eps: float = 1e-6,
            window: int = 1000, tol: float | None = None, history: bool = False, max_time: float | None = None,
            should_stop=None, progress=None) -> Trace:
    """Run KLD, FDr, SDr, FDb or SDb (Chen, Nott & Tan Tables 4-5; the Algorithm is
    :func:`algorithm`) through :func:`vilab.core.run` and return its Trace.

    Parameters
    ----------
    target : vilab.targets.Target (FDr/SDr need its Hessian-vector products, via autodiff).
    method : "kl", "fdr", "sdr", "fdb", "sdb".
    key : jax PRNG key (``vilab.core.as_key(seed)`` turns a seed into one).
    n_iter : maximum number of iterations; batch_size : B of the batch methods.
    mask : free entries of T: "dense", "diagonal" (mean field) or a boolean pattern (Sec. 4).
    mu0, T0 : start (default 0 and I; the paper does not give its starting values).
    step, learning_rate, rho, eps : the step rule (Adadelta by default, see module docstring); with
        an optax transformation ``learning_rate`` is ignored (its updates are taken as they are).
    window : iterations per ELBO average (the paper averages every 1000) and per draw key.
    tol : stop ("converged") when the slope of the last five window averages of the ELBO estimate is
        below ``tol`` (:func:`chen_slope_rule`; the paper uses 0.01); None runs all ``n_iter``.
    history : record every iteration and its draws (``extra["samples"][k]``: the draws of step k + 1),
        instead of every window.
    max_time, should_stop, progress : passed to :func:`vilab.core.run` (checked between windows).

    The Trace's objective is the exact KL(q||p) for Gaussian targets, else minus the window-averaged
    ELBO estimate; ``extra["elbo"]`` holds the window averages (at iterations
    ``extra["elbo_iterations"]``), ``extra["T"]`` the factor at every row and
    ``extra["window_seconds"]`` the wall time at the end of each window. ``step_sizes`` is the
    learning rate of every step; ``info["effective_step_ratio"]`` Adadelta's ||update|| / ||gradient||.
    """
    _check_key(key, "run_sgd")
    d = _check_target(target)
    if learning_rate is not None and not (np.isfinite(learning_rate) and learning_rate > 0):
        raise ValueError(f"The learning rate must be a positive number; got {learning_rate}.")
    window = _check_window(window)
    alg = algorithm(target, method, batch_size=batch_size, mask=mask, step=step, rho=rho, eps=eps,
                    record_samples=history)
    mu0, T0 = _init_mu_T(mu0, T0, d)
    lr = None if isinstance(step, optax.GradientTransformation) else learning_rate
    state = alg.init(key, (mu0, T0), learning_rate=lr, window=window)
    return _drive(alg, key, state, n_iter, window, history, tol, max_time, should_stop, progress)


def _init_mu_T(mu0, T0, d):
    mu0 = np.zeros(d) if mu0 is None else np.asarray(mu0, float).reshape(d)
    T0 = np.eye(d) if T0 is None else np.asarray(T0, float).reshape(d, d)
    mu0, T0 = check_factor(mu0, T0, "T0")
    if np.any(np.diag(T0) <= 0):
        raise ValueError("The starting factor T0 must have a positive diagonal.")
    return mu0, T0


def run_bam(target, *, key=None, n_iter: int = 200, batch_size: int = 50, mu0=None, Sigma0=None, lr_scale=None,
            window: int = 50, tol: float | None = None, history: bool = True, max_time: float | None = None,
            should_stop=None, progress=None) -> Trace:
    """Batch-and-match (Cai et al. 2024; the Algorithm is :func:`bam`), as run by Chen, Nott & Tan
    Sec. 6.1 / 7, through :func:`vilab.core.run`; returns its Trace.

    Learning rate rho_t = ``lr_scale`` / t with the paper's lr_scale = B d (rho_t = B d / t;
    ``step_sizes`` holds rho_t). The ELBO is averaged over ``window`` iterations (the paper: 50) for
    the stopping rule ``tol`` (:func:`chen_slope_rule`); history : record every iteration (and its
    draws) instead of every window. A step whose covariance is not positive definite (or not finite)
    ends the run with status "diverged: ..." and the Trace keeps the iterates before it.
    """
    _check_key(key, "run_bam")
    d = _check_target(target)
    window = _check_window(window)
    mu0 = np.zeros(d) if mu0 is None else np.asarray(mu0, float).reshape(d)
    S0 = np.eye(d) if Sigma0 is None else np.asarray(Sigma0, float).reshape(d, d)
    mu0, S0 = check_mean_cov(mu0, S0, "Sigma0")
    scale = float(batch_size * d) if lr_scale is None else float(lr_scale)
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"lr_scale must be a positive number; got {lr_scale}.")
    alg = bam(target, batch_size=batch_size, record_samples=history)
    state = alg.init(key, (mu0, S0), lr_scale=scale, window=window)
    return _drive(alg, key, state, n_iter, window, history, tol, max_time, should_stop, progress)


# ---------------------------------------------------------------------------------------------
# iterate averaging


def tail_average_variances(trace: Trace, fraction: float = 0.5) -> np.ndarray:
    """Marginal variances diag(Sigma_t) averaged over the last ``fraction`` of a run's recorded iterates.

    A stochastic run (:func:`run_sgd`: noisy batch gradients, Adadelta steps) does not settle on its
    fixed point but keeps fluctuating around it, so its last iterate is a noisy estimate of the fixed
    point. Averaging the iterates after a burn-in (Polyak & Juditsky 1992 iterate averaging) reduces
    that noise: of the n recorded rows (evenly spaced in iterations, row 0 the start), the
    last ceil(fraction n) are averaged (always at least the last row). Returns a (d,) array; the
    Divergences page compares it with the FDb / SDb fixed points of Chen, Nott & Tan Sec. 5.
    """
    cov = np.asarray(trace.cov, float)
    if cov.ndim != 3 or cov.shape[0] == 0:
        raise ValueError("The run recorded no covariance matrices to average.")
    fraction = float(fraction)
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"The averaged fraction of the run must lie in (0, 1]; got {fraction:g}.")
    n = cov.shape[0]
    start = n - max(1, int(np.ceil(fraction * n)))
    return np.diagonal(cov[start:], axis1=1, axis2=2).mean(0)
