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
* :func:`run_bam` batch-and-match (Cai et al. 2024) with its closed-form update (Sec. 6.1).

Step sizes: Adadelta (Zeiler 2012), the paper's choice, through ``optax.adadelta`` with
learning rate 1 (optax's update is exactly Zeiler's: E[g^2], then
sqrt(E[dx^2] + eps) / sqrt(E[g^2] + eps) * g, then E[dx^2]); the paper leaves decay and eps
unspecified, the defaults 0.95 and 1e-6 are Zeiler's / Tan & Nott's.  Any optax rule can be
passed instead.  Every run returns a :class:`vilab.core.Trace`.
"""

from __future__ import annotations

import time
from functools import lru_cache, partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..core.trace import Trace, diverged_status, first_failure

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
    "run_sgd",
    "run_bam",
    "make_optimizer",
]

SGD_METHODS = ("kl", "fdr", "sdr", "fdb", "sdb")
METHOD_LABELS = {"kl": "KLD", "fdr": "FDr", "sdr": "SDr", "fdb": "FDb", "sdb": "SDb", "bam": "BaM"}


# ---------------------------------------------------------------------------------------------
# sparsity patterns of T (Sec. 4)


def sparse_pattern(n_local: int, block: int, ell: int, n_global: int) -> np.ndarray:
    """Free entries of T for a two-tier model (Chen, Nott & Tan Sec. 4, eq. 7; Rothman et al. 2010).

    theta = (b_1, ..., b_n, theta_G) with local blocks of size ``block`` that are ``ell``-th order
    Markov given the globals.  Block rows i <= n are free only for block columns i - ell <= j <= i
    (the paper's "T_ij = 0 for 1 <= j <= i - l" is off by one: it would zero the diagonal blocks
    for ell = 0; this is the corrected reading); the global block row is dense.
    """
    if min(n_local, block) < 1 or ell < 0 or n_global < 0:
        raise ValueError("n_local and block must be at least 1, ell and n_global non-negative.")
    d = n_local * block + n_global
    P = np.zeros((d, d), dtype=bool)
    for i in range(n_local):
        for j in range(max(0, i - ell), i + 1):
            P[i * block:(i + 1) * block, j * block:(j + 1) * block] = True
    P[n_local * block:, :] = True
    return np.tril(P)


def make_mask(mask, d: int) -> np.ndarray:
    """Boolean lower-triangular pattern of the free entries of T ("dense", "diagonal" or an array)."""
    if isinstance(mask, str):
        if mask == "dense":
            return np.tril(np.ones((d, d), dtype=bool))
        if mask in ("diagonal", "meanfield", "mean_field"):
            return np.eye(d, dtype=bool)
        raise ValueError("mask must be 'dense', 'diagonal' or a (d, d) boolean pattern.")
    m = np.asarray(mask, dtype=bool)
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


def batch_statistics(thetas, gs) -> BatchStats:
    """theta_bar, g_bar, C_theta, C_g, C_theta_g of Chen, Nott & Tan eq. (8) (divisor B)."""
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

    ``run_sgd`` passes mu_U = mu_W = the current mean: SGD on F_hat (Sec. 6.3, lambda_{t+1} =
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
    need ``learning_rate``), or any ``optax.GradientTransformation``.  Named rules are cached, so
    repeated runs reuse the compiled chunk function.
    """
    if isinstance(step, optax.GradientTransformation):
        return step
    if learning_rate is not None and not (np.isfinite(learning_rate) and learning_rate > 0):
        raise ValueError(f"The learning rate must be a positive number; got {learning_rate}.")
    if not (0.0 < rho < 1.0 and eps > 0.0):
        raise ValueError(f"Adadelta needs a decay rho in (0, 1) and eps > 0; got rho={rho}, eps={eps}.")
    return _make_optimizer(step, None if learning_rate is None else float(learning_rate), float(rho), float(eps))


@lru_cache(maxsize=64)
def _make_optimizer(step, learning_rate, rho, eps):
    if step == "adadelta":
        return optax.adadelta(learning_rate=1.0 if learning_rate is None else learning_rate, rho=rho, eps=eps)
    if step in ("adam", "rmsprop", "sgd", "adagrad"):
        if learning_rate is None:
            raise ValueError(f"The {step} rule needs a positive learning_rate.")
        return getattr(optax, step)(learning_rate)
    raise ValueError("step must be 'adadelta', 'adam', 'rmsprop', 'adagrad', 'sgd' or an optax transformation.")


# ---------------------------------------------------------------------------------------------
# the SGD runner (Tables 4-5)


class _Params(NamedTuple):
    mu: jax.Array
    Ts: jax.Array  # T*, lower triangular, log diagonal


def _T_of(Ts, mask):
    d = Ts.shape[0]
    off = jnp.where(mask & ~jnp.eye(d, dtype=bool), Ts, 0.0)
    return off + jnp.diag(jnp.exp(jnp.diag(Ts)))


def _to_Ts_grad(gT, T, mask):
    """D applied to the lower triangle of g_T on the free entries: d/dT*_ii = T_ii d/dT_ii."""
    d = T.shape[0]
    g = jnp.where(mask, jnp.tril(gT), 0.0)
    return g * jnp.where(jnp.eye(d, dtype=bool), jnp.diag(T)[None, :] * jnp.ones((d, 1)), 1.0)


def _logq(T, z):
    d = z.shape[-1]
    return jnp.sum(jnp.log(jnp.diag(T))) - 0.5 * jnp.sum(z**2, -1) - 0.5 * d * jnp.log(2 * jnp.pi)


@partial(jax.jit, static_argnames=("method", "logh", "opt", "n", "B", "history"))
def _sgd_chunk(params, states, key, mask, *, method, logh, opt, n, B, history):
    score = jax.grad(logh)

    def hvp(theta, v):
        return jax.jvp(score, (theta,), (v,))[1]

    def step(carry, k):
        p, (s_mu, s_T) = carry
        T = _T_of(p.Ts, mask)
        d = p.mu.shape[0]
        if method in ("kl", "fdr", "sdr"):
            z = jax.random.normal(k, (d,), dtype=p.mu.dtype)
            if method == "kl":
                g_mu, g_T = grad_kl(score, p.mu, T, z)
            elif method == "fdr":
                g_mu, g_T = grad_fdr(score, hvp, p.mu, T, z)
            else:
                g_mu, g_T = grad_sdr(score, hvp, p.mu, T, z)
            zs = z[None, :]
            thetas = p.mu + _tri_solve(T, z, trans=True)[None, :]
            u_mu, s_mu = opt.update(g_mu, s_mu, p.mu)
            mu_new = optax.apply_updates(p.mu, u_mu)
        else:
            zs = jax.random.normal(k, (B, d), dtype=p.mu.dtype)
            thetas = p.mu + _tri_solve(T, zs.T, trans=True).T
            gs = jax.vmap(score)(thetas)
            st = batch_statistics(thetas, gs)
            if method == "sdb":
                g_mu, g_T = grad_sdb(p.mu, T, st)
                u_mu, s_mu = opt.update(g_mu, s_mu, p.mu)
                mu_new = optax.apply_updates(p.mu, u_mu)
            else:
                g_mu = grad_fdb_mu(p.mu, T, st)
                u_mu, s_mu = opt.update(g_mu, s_mu, p.mu)
                mu_new = optax.apply_updates(p.mu, u_mu)
                # the exact gradient of F_hat at the current (mu, T), not Table 5's listing order
                # (W after the mean step): see grad_fdb_T
                g_T = grad_fdb_T(p.mu, p.mu, T, st)
        gTs = _to_Ts_grad(g_T, T, mask)
        u_T, s_T = opt.update(gTs, s_T, p.Ts)
        Ts_new = optax.apply_updates(p.Ts, u_T)
        elbo = jnp.mean(jax.vmap(logh)(thetas) - _logq(T, zs))
        gn = jnp.sqrt(jnp.sum(g_mu**2) + jnp.sum(gTs**2))
        un = jnp.sqrt(jnp.sum(u_mu**2) + jnp.sum(u_T**2))
        stepsize = un / jnp.maximum(gn, 1e-300)
        newp = _Params(mu_new, Ts_new)
        out = (elbo, stepsize)
        if history:
            out = out + (mu_new, _T_of(Ts_new, mask), thetas)
        return (newp, (s_mu, s_T)), out

    keys = jax.random.split(key, n)
    (params, states), outs = jax.lax.scan(step, (params, states), keys)
    return params, states, outs


def _check_target(target):
    if not hasattr(target, "log_density") or not hasattr(target, "dim"):
        raise ValueError("The target must be a vilab.targets.Target (with log_density and dim).")
    return int(target.dim)


def _init_mu_T(target, mu0, T0, d):
    mu0 = np.zeros(d) if mu0 is None else np.asarray(mu0, float).reshape(d)
    T0 = np.eye(d) if T0 is None else np.asarray(T0, float).reshape(d, d)
    if not np.all(np.isfinite(mu0)) or not np.all(np.isfinite(T0)):
        raise ValueError("The starting mean and factor must be finite.")
    if np.any(np.diag(T0) <= 0) or np.any(np.triu(T0, 1) != 0):
        raise ValueError("The starting factor T0 must be lower triangular with a positive diagonal.")
    return mu0, T0


def _exact_kl(target, mean, cov):
    if target.mean is None or target.cov is None or not getattr(target, "quadratic", False):
        return None
    nu = np.asarray(target.mean, float)
    Sp = np.asarray(target.cov, float)
    Lam = np.linalg.inv(Sp)
    d = nu.shape[0]
    out = np.full(mean.shape[0], np.nan)
    _, ldL = np.linalg.slogdet(Lam)
    for k in range(mean.shape[0]):
        sgn, ldS = np.linalg.slogdet(cov[k])
        if sgn <= 0 or not np.all(np.isfinite(cov[k])):
            continue
        r = mean[k] - nu
        out[k] = 0.5 * (np.trace(Lam @ cov[k]) + r @ Lam @ r - d - ldS - ldL)
    return out


def _converged(elbos, tol):
    """The paper's stopping rule (Sec. 7.1): slope of a line fitted to the last five averages < tol."""
    if tol is None or len(elbos) < 5:
        return False
    y = np.asarray(elbos[-5:])
    x = np.arange(5.0)
    slope = np.polyfit(x, y, 1)[0]
    return bool(slope < tol)


def run_sgd(target, method: str, *, n_iter: int = 10_000, batch_size: int = 5, mask="dense", mu0=None,
            T0=None, step="adadelta", learning_rate=None, rho: float = 0.95, eps: float = 1e-6,
            window: int = 1000, tol: float | None = None, seed: int = 0, history: bool = False) -> Trace:
    """Run KLD, FDr, SDr, FDb or SDb (Chen, Nott & Tan Tables 4-5) and return a Trace.

    Parameters
    ----------
    target : vilab.targets.Target (FDr/SDr need its Hessian-vector products, via autodiff).
    method : "kl", "fdr", "sdr", "fdb", "sdb".
    n_iter : maximum number of iterations; batch_size : B of the batch methods.
    mask : free entries of T: "dense", "diagonal" (mean field) or a boolean pattern (Sec. 4).
    mu0, T0 : start (default 0 and I; the paper does not give its starting values).
    step, learning_rate, rho, eps : the step rule (Adadelta by default, see module docstring).
    window : iterations per ELBO average (the paper averages every 1000); also the chunk length.
    tol : stop when the slope of the last five window averages of the ELBO estimate is below
        ``tol`` (the paper uses 0.01); None runs all ``n_iter`` iterations.
    history : record every iteration (and the draws, ``extra["samples"]``) instead of every window.

    The Trace's objective is the exact KL(q||p) for Gaussian targets, else minus the
    window-averaged ELBO estimate (``extra["elbo"]`` always holds the window averages, and
    ``extra["window_seconds"]`` the wall time at the end of each window, the first compilation included).
    """
    if method not in SGD_METHODS:
        raise ValueError(f"Unknown method {method!r}; choose one of {', '.join(SGD_METHODS)} (or run_bam).")
    d = _check_target(target)
    if n_iter < 1 or window < 1:
        raise ValueError("n_iter and window must be at least 1.")
    if method in ("fdb", "sdb") and batch_size < 2:
        raise ValueError("The batch methods need a batch of at least B = 2 draws.")
    mu0, T0 = _init_mu_T(target, mu0, T0, d)
    m = make_mask(mask, d)
    T0 = np.where(m, T0, 0.0)
    Ts0 = np.where(np.eye(d, dtype=bool), np.log(np.abs(np.diag(T0)))[None, :] * np.ones((d, 1)), T0)
    params = _Params(jnp.asarray(mu0), jnp.asarray(np.tril(Ts0)))
    opt = make_optimizer(step, learning_rate, rho, eps)
    states = (opt.init(params.mu), opt.init(params.Ts))
    key = jax.random.PRNGKey(seed)
    logh = target.log_density
    mjnp = jnp.asarray(m)
    B = batch_size if method in ("fdb", "sdb") else 1

    means, Ts, steps, elbos, samples = [mu0], [np.asarray(_T_of(params.Ts, mjnp))], [], [], []
    status, done, t0, elapsed = "max_steps", 0, time.perf_counter(), []
    while done < n_iter:
        n = min(window, n_iter - done)
        key, sub = jax.random.split(key)
        params, states, outs = _sgd_chunk(params, states, sub, mjnp, method=method, logh=logh, opt=opt, n=n,
                                          B=B, history=history)
        elbo, ss = np.asarray(outs[0]), np.asarray(outs[1])
        done += n
        if history:
            means.extend(np.asarray(outs[2]))
            Ts.extend(np.asarray(outs[3]))
            samples.extend(np.asarray(outs[4]))
            steps.extend(ss)
        else:
            means.append(np.asarray(params.mu))
            Ts.append(np.asarray(_T_of(params.Ts, mjnp)))
            steps.append(float(np.mean(ss)))
        elbos.append(float(np.mean(elbo)) if np.all(np.isfinite(elbo)) else np.nan)
        elapsed.append(time.perf_counter() - t0)
        if not (np.all(np.isfinite(np.asarray(params.mu))) and np.all(np.isfinite(np.asarray(params.Ts)))):
            status = diverged_status("non-finite parameters")
            break
        if _converged(elbos, tol):
            status = "converged"
            break
    return _finish(target, METHOD_LABELS[method], means, Ts, steps, elbos, samples, status, done, window,
                   history, t0, {"batch_size": B, "mask": m, "step": str(step), "window_seconds": np.asarray(elapsed)})


def _cov_from_T(T):
    with np.errstate(all="ignore"):
        Ti = np.linalg.inv(T)
        return np.einsum("...ji,...jk->...ik", Ti, Ti)  # T^{-T} T^{-1}


def _finish(target, label, means, Ts, steps, elbos, samples, status, done, window, history, t0, extra,
            covs=None):
    mean = np.asarray(means, float)
    cov = np.asarray(covs, float) if covs is not None else _cov_from_T(np.asarray(Ts, float))
    step_sizes = np.asarray(steps, float)
    k, reason = first_failure(cov, mean)
    if k is not None:
        status = reason
        k = max(k, 1)
        mean, cov, step_sizes = mean[:k], cov[:k], step_sizes[: k - 1]
        if Ts is not None and len(Ts):
            Ts = Ts[:k]
    kl = _exact_kl(target, mean, cov)
    if kl is not None:
        objective, name = kl, "KL(q||p)"
    else:
        el = np.asarray(elbos, float)
        if history:
            objective = np.full(mean.shape[0], np.nan)
        else:
            objective = np.concatenate([[np.nan], -el])[: mean.shape[0]]
        name = "negative ELBO (window average)"
    iters = np.arange(mean.shape[0]) if history else np.minimum(np.arange(mean.shape[0]) * window, done)
    ex = dict(extra)
    ex.update({"elbo": np.asarray(elbos, float), "iterations": iters, "n_iter": done,
               "seconds": time.perf_counter() - t0})
    if Ts is not None and len(Ts):
        ex["T"] = np.asarray(Ts, float)[: mean.shape[0]]
    if samples:
        ex["samples"] = np.asarray(samples, float)[: mean.shape[0] - 1]
    return Trace(mean=mean, cov=cov, objective=objective, step_sizes=step_sizes, status=status, method=label,
                 objective_name=name, extra=ex)


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


# ---------------------------------------------------------------------------------------------
# batch and match


@partial(jax.jit, static_argnames=("logh", "n", "B", "history"))
def _bam_chunk(mu, Sigma, t0, key, lr_scale, *, logh, n, B, history):
    score = jax.grad(logh)
    d = mu.shape[0]

    def step(carry, inp):
        mu, S = carry
        k, t = inp
        C = jnp.linalg.cholesky(S)
        z = jax.random.normal(k, (B, d), dtype=mu.dtype)
        thetas = mu + z @ C.T
        gs = jax.vmap(score)(thetas)
        rho = lr_scale / t
        mu_new, S_new = bam_update(mu, S, thetas, gs, rho)
        logq = -jnp.sum(jnp.log(jnp.diag(C))) - 0.5 * jnp.sum(z**2, 1) - 0.5 * d * jnp.log(2 * jnp.pi)
        elbo = jnp.mean(jax.vmap(logh)(thetas) - logq)
        out = (elbo, rho)
        if history:
            out = out + (mu_new, S_new, thetas)
        return (mu_new, S_new), out

    keys = jax.random.split(key, n)
    ts = t0 + jnp.arange(n, dtype=mu.dtype)
    (mu, Sigma), outs = jax.lax.scan(step, (mu, Sigma), (keys, ts))
    return mu, Sigma, outs


def run_bam(target, *, n_iter: int = 200, batch_size: int = 50, mu0=None, Sigma0=None, lr_scale=None,
            window: int = 50, tol: float | None = None, seed: int = 0, history: bool = True) -> Trace:
    """Batch-and-match (Cai et al. 2024), as run by Chen, Nott & Tan Sec. 6.1 / 7.

    Learning rate rho_t = ``lr_scale`` / t with the paper's lr_scale = B d (rho_t = B d / t).
    Each iteration draws B points from q_t and applies :func:`bam_update` (full covariance, no
    sparsity).  The ELBO is averaged over ``window`` iterations (the paper: 50) for the stopping rule.
    """
    d = _check_target(target)
    if batch_size < 1 or n_iter < 1:
        raise ValueError("batch_size and n_iter must be at least 1.")
    mu0 = np.zeros(d) if mu0 is None else np.asarray(mu0, float).reshape(d)
    S0 = np.eye(d) if Sigma0 is None else np.asarray(Sigma0, float).reshape(d, d)
    if np.linalg.eigvalsh(0.5 * (S0 + S0.T))[0] <= 0:
        raise ValueError("The starting covariance Sigma0 must be positive definite.")
    scale = float(batch_size * d) if lr_scale is None else float(lr_scale)
    if not scale > 0:
        raise ValueError("lr_scale must be positive.")
    mu, S = jnp.asarray(mu0), jnp.asarray(S0)
    key = jax.random.PRNGKey(seed)
    means, covs, steps, elbos, samples = [mu0], [S0], [], [], []
    status, done, t0, elapsed = "max_steps", 0, time.perf_counter(), []
    while done < n_iter:
        n = min(window, n_iter - done)
        key, sub = jax.random.split(key)
        mu, S, outs = _bam_chunk(mu, S, float(done + 1), sub, scale, logh=target.log_density, n=n, B=batch_size,
                                 history=history)
        done += n
        if history:
            means.extend(np.asarray(outs[2]))
            covs.extend(np.asarray(outs[3]))
            samples.extend(np.asarray(outs[4]))
            steps.extend(np.asarray(outs[1]))
        else:
            means.append(np.asarray(mu))
            covs.append(np.asarray(S))
            steps.append(float(np.mean(np.asarray(outs[1]))))
        el = np.asarray(outs[0])
        elbos.append(float(np.mean(el)) if np.all(np.isfinite(el)) else np.nan)
        elapsed.append(time.perf_counter() - t0)
        if not (np.all(np.isfinite(np.asarray(mu))) and np.all(np.isfinite(np.asarray(S)))):
            status = diverged_status("non-finite mean or covariance (ill-conditioned update)")
            break
        if _converged(elbos, tol):
            status = "converged"
            break
    return _finish(target, "BaM", means, None, steps, elbos, samples, status, done, window, history, t0,
                   {"batch_size": batch_size, "lr_scale": scale, "window_seconds": np.asarray(elapsed)}, covs=covs)
