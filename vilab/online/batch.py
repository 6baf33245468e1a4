"""Batch BLR (Jones, Chang & Murphy App. E.6) and the implicit RVGA (App. D, Eq. 77), built from the BONG grid.

Batch BLR. The BLR inner step of the online grid with the online prior psi_{t|t-1} replaced by the fixed
prior N(0, lambda^{-1} I_P), run over the whole data set (or minibatches) for many iterations:

    blr-fc    (358)  mu_i = mu_{i-1} + alpha Sigma_i (g_i - lambda mu_{i-1})
              (359)  Sigma_i^{-1} = (1 - alpha) Sigma_{i-1}^{-1} + alpha (lambda I_P - G_i)
    blr-diag  (366)  mu_i = mu_{i-1} + alpha sigma_i^2 (g_i - lambda mu_{i-1})
              (367)  sigma_i^{-2} = (1 - alpha) sigma_{i-1}^{-2} + alpha diag(lambda I - G_i)
    (and fc_mom (362)-(363), diag_mom (370)-(371), dlr (374)-(380): the same substitution)

(g_i, G_i) are the expected gradient and Hessian of the log-likelihood of the data,
sum_n E_q[log p(y_n | f(x_n, theta))] (times N / B for a minibatch of B examples): the per-example curvature
of Table 1 (:func:`vilab.online.grid.curvature`) summed over the examples, every example seeing the same Monte
Carlo draws theta^(m) ~ q_{i-1} (M draws per iteration, shared). The update itself is the grid's
:func:`vilab.online.grid.inner_step` of the "blr" cell with the prior N(0, lambda^{-1} I): nothing is copied.
With M = 1, blr-mc-ef-diag is VOGN and blr-mc-hess-diag is VON (App. E.6; Khan et al. 2018): mc-ef sums the
squared per-example gradients at one draw (the empirical Fisher of VOGN); mc-hess uses the grid's diagonal
Hessian estimate (Hutchinson probes, Sec. 4.3; exact when the per-example Hessians are diagonal), and with a
full covariance (blr-mc-hess-fc) the exact Hessian at one draw.

Implicit RVGA (Eq. 77; Lambert et al. 2021). Exact online VB (Eq. 76) is the fixed point

    psi_t = psi_{t|t-1} - grad_{rho_t} L_t(psi_t),   i.e. for a Gaussian
    Sigma_t^{-1} = Sigma_{t|t-1}^{-1} - G(psi_t),    mu_t = mu_{t|t-1} + Sigma_{t|t-1} g(psi_t),

the gradient taken at the posterior; BONG (Eq. 75) is the explicit version (gradient at the prior).
:func:`implicit_update` solves it by a damped fixed-point iteration that is the BLR inner step with the
online prior and learning rate beta (App. D: the BLR step is mirror descent on L_t + KL, whose fixed point
is Eq. 76, so the digest's "blr with many small steps", item 17):

    psi^(k+1) = (1 - beta) psi^(k) + beta (psi_{t|t-1} - grad_rho L_t(psi^(k)))   (natural parameters),

iterated until it stops moving (the largest change of mu and of the covariance, relative to 1 + |value|,
below ``tol``) or ``max_inner`` iterations. Why this solver: each iterate is a convex combination of
precisions, so with a PSD curvature estimate (lin-hess, mc-ef, lin-ef) it stays positive definite, and it
reuses the grid's curvature and inner step for every family; beta < 1 damps the oscillation a plain
substitution (beta = 1) can show when the curvature changes fast (beta = 1 with one iteration is BONG).
Monte Carlo approximations use the same draws epsilon in every iteration (common random numbers:
theta = mu + chol(Sigma) epsilon), so the map is deterministic and has a fixed point. With lin-hess the
fixed point is the online Laplace approximation (mu_t the MAP of N(mu_{t|t-1}, Sigma_{t|t-1}) p(y_t | theta),
Sigma_t^{-1} the Hessian there): the limit of the iterated EKF. In a linear-Gaussian model implicit =
explicit = exact Bayes; in a non-conjugate one they differ by how much the curvature changes between prior
and posterior (digest item 17).

Runtime against model size (App. B.1, Fig. 4): :func:`runtime_vs_size` times one update of grid methods on a
synthetic regression MLP (y = MLP_{20-20-1}(x) + noise, x in R^10, the authors' timing setup) for a range of
parameter counts P, on the machine it runs on; :func:`complexity_order` gives the leading power of P of
Table 3.
"""

from __future__ import annotations

import functools
import statistics
import time
from dataclasses import replace
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import core
from ..core.checks import integer, positive, real_array
from ..core.cache import memoize
from ..core.trace import diverged_status
from .families import DLR, FC, Diag, init_belief, marginal_variances
from .grid import Curv, Method, curvature, inner_step, is_cubic, make_method, update
from .likelihoods import categorical, encode_all, gaussian
from .runner import UNHEALTHY, _healthy, _inputs, _raw_key, belief_path, stream_inputs

__all__ = [
    "BatchState", "ImplicitState", "batch_curvature", "batch_blr", "fit_batch_blr", "lambda_prior",
    "implicit_update", "implicit_rvga", "implicit_stream", "implicit_residual", "linear_posterior",
    "laplace_logistic", "logistic_f", "logistic_stream", "batch_vs_online", "BATCH_MODELS",
    "runtime_vs_size", "complexity_order", "mlp_regression", "RUNTIME_FAMILIES",
]

_REASON = "non-finite mean or non-positive variance"


def _as_method(method, alpha=None, n_samples: int = 10) -> Method:
    if isinstance(method, Method):
        return method
    if not isinstance(method, str):
        raise ValueError("Name the method as in the paper, e.g. 'blr-mc-ef-diag'.")
    return make_method(method, alpha=alpha, n_samples=n_samples)


def _lam(lam) -> float:
    return positive(lam, "The prior precision lambda")


def lambda_prior(family: str, P: int, lam, rank: int = 0, dtype=jnp.float64):
    """The prior N(0, lambda^{-1} I_P) of batch BLR as a belief of ``family`` (traceable in ``lam``):
    FC(0, I / lambda), Diag(0, 1 / lambda), DLR(0, Upsilon = lambda, W = 0)."""
    mu = jnp.zeros(P, dtype)
    if family in ("fc", "fc_mom"):
        return FC(mu, jnp.eye(P, dtype=dtype) / lam)
    if family in ("diag", "diag_mom"):
        return Diag(mu, jnp.full((P,), 1.0, dtype) / lam)
    return DLR(mu, jnp.full((P,), 1.0, dtype) * lam, jnp.zeros((P, rank), dtype))


def batch_curvature(method: Method, f, lik, X, Yenc, belief, key, scale=1.0) -> Curv:
    """(g, G) of sum_n E_q[log p(y_n | f(x_n, theta))] times ``scale``: Table 1's per-example curvature
    (:func:`vilab.online.grid.curvature`) summed over the rows of (X, Yenc), all with the draws of ``key``.

    g = scale sum_n g_n; G = scale sum_n G_n kept in the grid's representation: B = sqrt(scale) [B_1, ..., B_N]
    (G = -B B^T: the per-example empirical Fisher of mc-ef, the F-form of lin-hess) for the FC and DLR families,
    its diagonal -scale sum_n rowsum(B_n^2) for the diagonal families (no P x NK matrix); dense or diagonal G
    summed for mc-hess."""
    cs = jax.vmap(lambda x, y: curvature(method, f, lik, x, y, belief, key))(X, Yenc)
    g = scale * jnp.sum(cs.g, axis=0)
    if cs.Gdiag is not None:
        return Curv(g, Gdiag=scale * jnp.sum(cs.Gdiag, axis=0))
    if cs.Gd is not None:
        return Curv(g, Gd=scale * jnp.sum(cs.Gd, axis=0))
    if method.family in ("diag", "diag_mom"):
        return Curv(g, Gdiag=-scale * jnp.sum(cs.B**2, axis=(0, 2)))
    N, P, K = cs.B.shape
    return Curv(g, B=jnp.sqrt(scale) * jnp.moveaxis(cs.B, 0, 1).reshape(P, N * K))


class BatchState(NamedTuple):
    """State of batch BLR: the belief q_i, the iteration i, the run's key (iteration i draws from
    fold_in(key, i); minibatches are the slices of one permutation per epoch), the data (X, Yenc) and
    hyper = {"alpha": learning rate, "lam": prior precision} (run-time settings: no recompilation)."""

    belief: Any
    it: jax.Array
    key: jax.Array
    data: tuple
    hyper: dict


@memoize("vilab.online.batch blr", maxsize=32)
def batch_blr(method: Method, f: Callable, lik, batch_size: int | None = None) -> core.Algorithm:
    """Batch BLR (Jones, Chang & Murphy App. E.6, Eqs. 358-380) as a :class:`vilab.core.Algorithm`.

    method: a "blr" cell of the grid (:func:`vilab.online.grid.make_method`, e.g. "blr-mc-ef-diag"; its
    family, curvature approximation and M are used, its alpha is the default learning rate); f(x, theta) and
    lik as in :mod:`vilab.online.runner`; batch_size: None for the full batch, else B examples per iteration
    (a fresh permutation every epoch of N // B iterations; the curvature scaled by N / B).

    * ``init(key, start, X, Y, lam, alpha=None) -> BatchState``: start = the belief q_0 (None: the prior
      N(0, lambda^{-1} I) in the method's family); X (N, ...) inputs, Y labels / targets; lam = lambda > 0.
    * ``step(key, state, batch) -> (state, info)``: one iteration i (batch is not used: the data are in the
      state). info: code (0, or 10 when the new belief has a non-finite mean or a non-positive variance),
      step_size = alpha.
    * ``observe(state)``: mean, marginal variances, objective = the negative log joint at the mean,
      -sum_n log p(y_n | f(x_n, mu)) + lambda |mu|^2 / 2 (cheap; its minimum is the MAP).
    """
    if not isinstance(method, Method) or method.alg != "blr":
        raise ValueError("Batch BLR uses the BLR update: name a blr method such as 'blr-mc-ef-diag' "
                         "(its family and curvature approximation are used).")
    m1 = replace(method, n_iter=1)
    fam, R = method.family, method.rank

    def init(key, start, X, Y, lam, alpha=None):
        lam = _lam(lam)
        a = positive(method.alpha if alpha is None else alpha, "The learning rate alpha")
        if fam == "dlr" and a > 1:
            raise ValueError("Batch BLR with the DLR family needs alpha <= 1: its update uses sqrt(1 - alpha) W (Eq. 378).")
        X = _inputs(X)
        N = int(X.shape[0])
        if N < 1:
            raise ValueError("The data set is empty: give at least one (x, y) pair.")
        if batch_size is not None and batch_size > N:
            raise ValueError(f"The minibatch size ({batch_size}) cannot exceed the number of examples ({N}).")
        dt = X.dtype if jnp.issubdtype(X.dtype, jnp.floating) else jnp.float64
        Yenc = encode_all(lik, Y, dt)
        if Yenc.shape[0] != N:
            raise ValueError("X and Y must have the same number of examples.")
        if start is None:
            P = _n_params(f, X[0])
            start = lambda_prior(fam, P, lam, R, dt)
        return BatchState(start, jnp.int32(0), _raw_key(key), (X, Yenc),
                          {"alpha": jnp.asarray(a, dt), "lam": jnp.asarray(lam, dt)})

    def _prior(b, lam):
        P = b.mu.shape[0]
        prior = lambda_prior(fam, P, lam, R, b.mu.dtype)
        prec = lam * jnp.eye(P, dtype=b.mu.dtype) if fam in ("fc", "fc_mom") else None
        return prior, prec

    def step(key, state, batch):
        X, Yenc = state.data
        it = state.it + 1
        k_draw, k_perm = jax.random.split(state.key)
        N = X.shape[0]
        if batch_size is None or batch_size == N:
            Xb, Yb, scale = X, Yenc, 1.0
        else:
            nb = N // batch_size
            epoch, j = (it - 1) // nb, (it - 1) % nb
            perm = jax.random.permutation(jax.random.fold_in(k_perm, epoch), N)
            idx = jax.lax.dynamic_slice(perm, (j * batch_size,), (batch_size,))
            Xb, Yb, scale = X[idx], Yenc[idx], N / batch_size
        b = state.belief
        lam, a = state.hyper["lam"], state.hyper["alpha"]
        prior, prec = _prior(b, lam)
        c = batch_curvature(m1, f, lik, Xb, Yb, b, jax.random.fold_in(k_draw, it), scale)
        nb_ = inner_step(m1, b, prior, prec, c, a)
        code = jnp.where(_healthy(nb_), 0, UNHEALTHY).astype(jnp.int32)
        return state._replace(belief=nb_, it=it), {"code": code, "step_size": a}

    def observe(state):
        b = state.belief
        X, Yenc = state.data
        nll = -jnp.sum(jax.vmap(lambda x, y: lik.loglik(f(x, b.mu), y))(X, Yenc))
        return {"mean": b.mu, "var": marginal_variances(b),
                "objective": nll + 0.5 * state.hyper["lam"] * jnp.sum(b.mu**2)}

    return core.Algorithm(init, step, observe, name=f"batch {method.name}",
                          objective_name="negative log joint at the mean",
                          codes={UNHEALTHY: (diverged_status(_REASON), "")},
                          settings={"method": method.name, "batch_size": batch_size, "n_samples": method.n_samples},
                          uses_key=False)


def _n_params(f, x0) -> int:
    """The number of parameters P of f(x, theta), for the default start: the attribute ``f.n_params`` when f
    has one, else the size of x (a GLM, f(x, theta) = function of x^T theta); ValueError when f does not accept
    a parameter vector of that length."""
    P = getattr(f, "n_params", None)
    P = int(P) if P is not None else int(np.prod(np.shape(x0)))
    try:
        jax.eval_shape(f, x0, jnp.zeros(P, jnp.asarray(x0).dtype))
    except Exception:
        raise ValueError(f"The model f does not take a parameter vector of length {P} (the size of x): give the start "
                         "belief q_0, or give f an attribute n_params.") from None
    return P


def fit_batch_blr(method, f, lik, X, Y, lam, *, key, n_iter: int, alpha: float | None = None,
                  batch_size: int | None = None, start=None, n_samples: int = 10, record_every: int = 1) -> core.Trace:
    """Run batch BLR (:func:`batch_blr`) for ``n_iter`` iterations; returns the :class:`vilab.core.Trace`
    (rows: mean, var, objective every ``record_every`` iterations; ``state.belief`` the final q).

    method: a blr grid name ("blr-lin-hess-fc") or :class:`Method`; alpha overrides its learning rate
    (required with a name); lam: the prior precision lambda > 0; start: q_0 (default the prior); f needs an
    ``n_params`` attribute unless it is linear in a parameter of the size of x."""
    lam = _lam(lam)
    n_iter = integer(n_iter, "The number of iterations", minimum=1)
    if batch_size is not None:
        batch_size = integer(batch_size, "The minibatch size", minimum=1)
    if isinstance(method, str):
        if alpha is None:
            raise ValueError("Batch BLR needs a learning rate alpha (0 < alpha <= 1 is the usual range).")
        method = make_method(method, alpha=alpha, n_samples=n_samples)
    a = method.alpha if alpha is None else alpha
    # alpha lives in state.hyper: one Algorithm (one compiled loop) serves every learning rate
    alg = batch_blr(replace(method, alpha=1.0, n_iter=1), f, lik, batch_size)
    state = alg.init(key, start, X, Y, lam, a)
    return core.run(alg, core.as_key(0), state, n_iter, record_every=integer(record_every, "record_every", minimum=1))


# ------------------------------------------------------------------------------------------------
# implicit RVGA (Eq. 77)


def _change(new, old):
    return jnp.max(jnp.stack([jnp.max(jnp.abs(a - b) / (1.0 + jnp.abs(b)))
                              for a, b in zip(jax.tree_util.tree_leaves(new), jax.tree_util.tree_leaves(old))]))


@functools.partial(jax.jit, static_argnames=("method", "f", "lik", "tol", "max_inner"))
def implicit_update(method: Method, f, lik, prior, x, y, key, damping=0.5, tol: float = 1e-12, max_inner: int = 2000):
    """One implicit RVGA step (Eq. 77): the fixed point psi_t = psi_{t|t-1} - grad_{rho_t} L_t(psi_t) by the
    damped iteration of the module docstring (the BLR inner step with the online prior ``prior`` and learning
    rate ``damping``, started at the prior, curvature of ``method.approx`` at the current iterate with the draws
    of ``key`` in every iteration). Jitted (method, f, lik, tol and max_inner static); traceable.

    Returns (belief, n_inner, change): the iterate, the number of iterations taken and the last relative change
    (below ``tol`` when it stopped moving; ``n_inner == max_inner`` means it did not)."""
    mb = replace(method, alg="blr", n_iter=1)
    prec = jnp.linalg.inv(prior.Sigma) if isinstance(prior, FC) else None
    prec = None if prec is None else 0.5 * (prec + prec.T)

    def body(carry):
        it, i, _ = carry
        c = curvature(mb, f, lik, x, y, it, key)
        new = inner_step(mb, it, prior, prec, c, damping)
        return new, i + 1, _change(new, it)

    def cond(carry):
        _, i, ch = carry
        return (i < max_inner) & (ch > tol)

    dt = prior.mu.dtype
    b, n, ch = jax.lax.while_loop(cond, body, (prior, jnp.int32(0), jnp.asarray(jnp.inf, dt)))
    return b, n, ch


def implicit_residual(method: Method, f, lik, prior, post, x, y, key):
    """How far ``post`` is from satisfying Eq. 77 for the FC family: (precision residual, mean residual) =
    (max |Sigma_t^{-1} - Sigma_-^{-1} + G(post)|, max |mu_t - mu_- - Sigma_- g(post)|), with (g, G) of
    ``method.approx`` at ``post`` (the grid's curvature, draws of ``key``)."""
    if not isinstance(post, FC):
        raise ValueError("The residual of Eq. 77 is written for full-covariance beliefs (FC).")
    c = curvature(replace(method, alg="blr"), f, lik, x, y, post, key)
    G = c.Gd if c.Gd is not None else -c.B @ c.B.T
    r_prec = jnp.max(jnp.abs(jnp.linalg.inv(post.Sigma) - jnp.linalg.inv(prior.Sigma) + G))
    r_mean = jnp.max(jnp.abs(post.mu - prior.mu - prior.Sigma @ c.g))
    return float(r_prec), float(r_mean)


class ImplicitState(NamedTuple):
    """State of the implicit RVGA stream: belief, t, the stream's key (step t draws from fold_in(key, t)),
    hyper = {"damping": beta}."""

    belief: Any
    t: jax.Array
    key: jax.Array
    hyper: dict


@memoize("vilab.online.batch implicit", maxsize=32)
def implicit_rvga(method: Method, f: Callable, lik, tol: float = 1e-12, max_inner: int = 2000) -> core.Algorithm:
    """The implicit RVGA (Eq. 77) as a :class:`vilab.core.Algorithm` over a stream, one example per step
    (static parameters, Alg. 2): ``init(key, prior, damping=0.5)``, ``step(key, state, (x_t, y_t))`` ->
    info {code (0, or 10 for a non-finite / non-PD belief), step_size = damping, n_inner, change},
    ``observe``: mean and marginal variances. method: any grid cell; its curvature approximation and family
    are used (the algorithm part is ignored)."""

    def init(key, prior, damping=0.5):
        d = positive(damping, "The damping beta")
        if d > 1:
            raise ValueError("The damping beta must lie in (0, 1]: beta = 1 is the undamped substitution.")
        return ImplicitState(prior, jnp.int32(0), _raw_key(key), {"damping": jnp.asarray(d, prior.mu.dtype)})

    def step(key, state, batch):
        x, y = batch[0], batch[1]
        t = state.t + 1
        b, n, ch = implicit_update(method, f, lik, state.belief, x, y, jax.random.fold_in(state.key, t),
                                   state.hyper["damping"], tol, max_inner)
        code = jnp.where(_healthy(b), 0, UNHEALTHY).astype(jnp.int32)
        return state._replace(belief=b, t=t), {"code": code, "step_size": state.hyper["damping"], "n_inner": n,
                                                "change": ch}

    def observe(state):
        b = state.belief
        return {"mean": b.mu, "var": marginal_variances(b), "objective": jnp.asarray(jnp.nan, b.mu.dtype)}

    return core.Algorithm(init, step, observe, name=f"implicit RVGA ({method.approx}, {method.family})",
                          objective_name="none", codes={UNHEALTHY: (diverged_status(_REASON), "")},
                          settings={"approx": method.approx, "family": method.family, "tol": tol, "max_inner": max_inner},
                          uses_key=False)


def implicit_stream(method, f, lik, X, Y, prior, *, key, damping: float = 0.5, tol: float = 1e-12,
                    max_inner: int = 2000) -> core.Trace:
    """Stream (X[t], Y[t]) through the implicit RVGA; a Trace with one row per step (mean, var) and per-step
    info n_inner (fixed-point iterations) and change (the last relative change). ``state.belief``: the last
    belief."""
    method = _as_method(method)
    max_inner = integer(max_inner, "The largest number of fixed-point iterations", minimum=1)
    tol = positive(tol, "The tolerance")
    X, Yenc, T = stream_inputs(lik, X, Y, prior)
    alg = implicit_rvga(method, f, lik, tol, max_inner)
    return core.run(alg, core.as_key(0), alg.init(key, prior, damping), T, batches=(X, Yenc))


# ------------------------------------------------------------------------------------------------
# closed-form references and the page's demo


def linear_posterior(X, y, noise_var, lam):
    """Exact posterior of y = X theta + N(0, sigma^2), theta ~ N(0, lambda^{-1} I):
    Sigma = (X^T X / sigma^2 + lambda I)^{-1}, mu = Sigma X^T y / sigma^2 (numpy)."""
    X = real_array(X, "X", ndim=2)
    y = real_array(y, "y", ndim=1)
    s2, lam = positive(noise_var, "The noise variance"), _lam(lam)
    Prec = X.T @ X / s2 + lam * np.eye(X.shape[1])
    S = np.linalg.inv(Prec)
    return S @ X.T @ y / s2, 0.5 * (S + S.T)


def laplace_logistic(X, y, lam, n_newton: int = 100):
    """MAP and Laplace covariance of logistic regression p(y = 1 | x) = sigmoid(x^T theta), theta ~
    N(0, lambda^{-1} I) (numpy Newton's method): the fixed point of batch blr-lin-hess-fc."""
    X, y, lam = real_array(X, "X", ndim=2), real_array(y, "y", ndim=1), _lam(lam)
    th = np.zeros(X.shape[1])
    for _ in range(n_newton):
        p = 1 / (1 + np.exp(-X @ th))
        grad = X.T @ (y - p) - lam * th
        H = X.T @ (X * (p * (1 - p))[:, None]) + lam * np.eye(X.shape[1])
        step = np.linalg.solve(H, grad)
        th = th + step
        if np.max(np.abs(step)) < 1e-14:
            break
    p = 1 / (1 + np.exp(-X @ th))
    H = X.T @ (X * (p * (1 - p))[:, None]) + lam * np.eye(X.shape[1])
    S = np.linalg.inv(H)
    return th, 0.5 * (S + S.T)


def logistic_f(x, theta):
    """Logits (0, x^T theta) of a two-class softmax: p(y = 1 | x) = sigmoid(x^T theta)."""
    s = jnp.dot(x, theta)
    return jnp.stack([jnp.zeros_like(s), s])


def linear_f(x, theta):
    return jnp.atleast_1d(jnp.dot(x, theta))


def logistic_stream(key, T: int, dim: int = 2, scale: float = 2.0):
    """(X (T, dim), y (T,) in {0, 1}, theta_true): x ~ N(0, I), theta_true ~ N(0, scale^2 I / dim) fixed by
    the key, y ~ Bernoulli(sigmoid(x^T theta_true))."""
    T = integer(T, "The number of observations T", minimum=1, maximum=100_000)
    k1, k2, k3 = jax.random.split(core.check_key(key, "logistic_stream"), 3)
    theta = np.asarray(jax.random.normal(k1, (dim,), jnp.float64)) * scale / np.sqrt(dim)
    X = np.asarray(jax.random.normal(k2, (T, dim), jnp.float64))
    u = np.asarray(jax.random.uniform(k3, (T,), jnp.float64))
    y = (u < 1 / (1 + np.exp(-X @ theta))).astype(float)
    return X, y, theta


#: the two models of :func:`batch_vs_online`
BATCH_MODELS = ("linear-Gaussian", "logistic")


@memoize("vilab.online.batch likelihoods", maxsize=8)
def _lik(kind: str):
    return gaussian(1.0) if kind == "linear-Gaussian" else categorical(2)


def batch_vs_online(key, kind: str = "logistic", T: int = 50, lam: float = 1.0, alpha: float = 0.3,
                    n_passes: int = 30, damping: float = 0.5):
    """Batch BLR, online BONG and the implicit RVGA on one 2-D stream (the page's demo), all with the linearised
    Hessian and a full covariance (exact curvature for the linear-Gaussian model, the GLM Gauss-Newton one for
    logistic regression), prior N(0, lambda^{-1} I).

    kind "linear-Gaussian": y = x^T theta + N(0, 1), x ~ N(0, I); the reference is the exact posterior of all T
    examples (:func:`linear_posterior`), which all three reach. kind "logistic": y ~ Bernoulli(sigmoid(x^T
    theta)); the reference is the fixed point of batch BLR (the Laplace approximation at the MAP,
    :func:`laplace_logistic`).

    Returns {"X", "y", "theta", "ref": (mu, Sigma), "kind", "T",
      "batch": {"evals": per-example gradient evaluations after each pass (n_passes + 1,), "error": |mu_i - mu_ref|,
                "mean", "Sigma": final}, "bong": {"evals": 0..T, "error" (T + 1,), "mean", "Sigma": final},
      "implicit": {"evals": cumulative evaluations (T + 1,), "error", "n_inner" (T,), "mean", "Sigma"},
      "gap": (T,) max |mu_t(implicit) - mu_t(BONG)| after each example, "gap_final": the same at T,
      "status": {"batch", "bong", "implicit"}}.
    BONG uses one gradient evaluation per example; batch BLR T per pass; the implicit RVGA one per fixed-point
    iteration.
    """
    if kind not in BATCH_MODELS:
        raise ValueError(f"Unknown model {kind!r}; use one of {', '.join(BATCH_MODELS)}.")
    T = integer(T, "The number of observations T", minimum=2, maximum=2000)
    lam = _lam(lam)
    alpha = positive(alpha, "The learning rate alpha")
    if alpha > 1:
        raise ValueError("The learning rate alpha of batch BLR must lie in (0, 1].")
    n_passes = integer(n_passes, "The number of passes", minimum=1, maximum=5000)
    k_data = core.check_key(key, "batch_vs_online")
    if kind == "linear-Gaussian":
        from .linear_gaussian import make_stream
        X, y, theta = make_stream(k_data, T, 2, 1.0, 1.0)
        f = linear_f
        ref = linear_posterior(X, y, 1.0, lam)
    else:
        X, y, theta = logistic_stream(k_data, T, 2)
        f = logistic_f
        ref = laplace_logistic(X, y, lam)
    lik = _lik(kind)
    Yl = y.astype(int) if kind == "logistic" else y
    prior = lambda_prior("fc", 2, lam)
    key0 = jax.random.PRNGKey(0)  # lin-hess draws nothing
    tr = fit_batch_blr(make_method("blr-lin-hess-fc", alpha=alpha), f, lik, X, Yl, lam, key=key0, n_iter=n_passes)
    bmean = np.full((n_passes + 1, 2), np.nan)
    bmean[np.asarray(tr.iterations, int)] = np.asarray(tr.mean)
    bong = belief_path(make_method("bong-lin-hess-fc"), f, lik, X, Yl, prior, key=key0)
    imp = implicit_stream(make_method("bong-lin-hess-fc"), f, lik, X, Yl, prior, key=key0, damping=damping,
                          max_inner=500)
    imean = np.full((T + 1, 2), np.nan)
    imean[np.asarray(imp.iterations, int)] = np.asarray(imp.mean)
    n_inner = np.asarray(imp.info["n_inner"], float)
    mu_ref = ref[0]

    def err(m):
        return np.linalg.norm(np.asarray(m) - mu_ref, axis=-1)

    gap = np.max(np.abs(imean[1:] - np.asarray(bong.mu)[1:]), axis=1)
    bS = np.asarray(tr.state.belief.Sigma)
    return {
        "X": X, "y": y, "theta": theta, "ref": ref, "kind": kind, "T": T, "lam": lam,
        "batch": {"evals": np.arange(n_passes + 1) * T, "error": err(bmean), "mean": bmean[-1], "Sigma": bS},
        "bong": {"evals": np.arange(T + 1), "error": err(bong.mu), "mean": np.asarray(bong.mu)[-1],
                 "Sigma": np.asarray(bong.Sigma)[-1]},
        "implicit": {"evals": np.concatenate([[0.0], np.cumsum(n_inner)]), "error": err(imean), "n_inner": n_inner,
                     "mean": imean[-1], "Sigma": np.asarray(imp.state.belief.Sigma)},
        "gap": gap, "gap_final": float(gap[-1]),
        "status": {"batch": tr.status, "bong": "max_steps" if np.all(np.isfinite(bong.mu)) else "diverged",
                   "implicit": imp.status},
    }


# ------------------------------------------------------------------------------------------------
# running time against model size (App. B.1, Fig. 4)

#: the families the runtime measurement offers (the Fig. 4 panels: full covariance and DLR; diagonal too)
RUNTIME_FAMILIES = ("fc", "diag", "dlr-10")


def complexity_order(method) -> int:
    """The leading power of P in one step's cost (Jones, Chang & Murphy Table 3, P >> I, C, R, M): 3 for the
    cubic cells (:func:`vilab.online.grid.is_cubic`), 2 for the other full-covariance cells, 1 for the
    diagonal and DLR families."""
    m = method if isinstance(method, Method) else _as_method(method, alpha=None if str(method).startswith("bong") else 0.5)
    if is_cubic(m):
        return 3
    return 2 if m.family in ("fc", "fc_mom") else 1


def mlp_regression(key, n: int = 64, d_in: int = 10, noise_sd: float = 0.1):
    """The synthetic regression data of the paper's timing runs (digest Sec. 3.2, 4.1 (d)): x ~ N(0, I_10),
    y = MLP_{20-20-1}(x) + N(0, noise_sd^2) with a random tanh teacher network fixed by ``key``."""
    n = integer(n, "The number of examples", minimum=1, maximum=100_000)
    ks = jax.random.split(core.check_key(key, "mlp_regression"), 5)
    X = np.asarray(jax.random.normal(ks[0], (n, d_in), jnp.float64))
    W1 = np.asarray(jax.random.normal(ks[1], (d_in, 20))) / np.sqrt(d_in)
    W2 = np.asarray(jax.random.normal(ks[2], (20, 20))) / np.sqrt(20)
    w3 = np.asarray(jax.random.normal(ks[3], (20,))) / np.sqrt(20)
    y = np.tanh(np.tanh(X @ W1) @ W2) @ w3 + noise_sd * np.asarray(jax.random.normal(ks[4], (n,), jnp.float64))
    return X, y


def _mlp(d_in: int, h: int):
    """f(x, theta) of an MLP d_in-h-1 with tanh units, theta flat of length P = (d_in + 2) h + 1."""
    P = (d_in + 2) * h + 1

    def f(x, theta):
        W1 = theta[: d_in * h].reshape(d_in, h)
        b1 = theta[d_in * h: d_in * h + h]
        w2 = theta[d_in * h + h: d_in * h + 2 * h]
        return jnp.atleast_1d(jnp.tanh(x @ W1 + b1) @ w2 + theta[-1])

    f.n_params = P
    return f, P


@memoize("vilab.online.batch timed updates", maxsize=64)
def _timed_update(method: Method, d_in: int, h: int):
    f, P = _mlp(d_in, h)
    lik = _lik("linear-Gaussian")

    @jax.jit
    def one(prior, x, y, key):
        return update(method, f, lik, prior, x, y, key)

    return one, P


def runtime_vs_size(methods, widths, *, key, n_repeats: int = 3, sigma0_2: float = 0.1, n_samples: int = 10,
                    alpha: float = 0.1, max_seconds: float | None = None, progress: Callable[[float], None] | None = None):
    """Seconds per update (one example, Alg. 3 with I = 1) of each grid method on an MLP 10-h-1 for every hidden
    width h in ``widths`` (P = 12 h + 1), on THIS machine: the App. B.1 / Fig. 4 measurement. Each update is
    jitted and run once to compile (not timed), then timed ``n_repeats`` times (block_until_ready); the median
    is kept. Data: :func:`mlp_regression`.

    methods: grid names ("bong-lin-hess-fc", "blr-mc-ef-dlr-10", ...; alpha and M apply where the method takes
    them); max_seconds: stop measuring when spent (the rest stays NaN); progress(fraction) after each cell.
    Returns {"methods": names, "widths": (W,), "P": (W,), "seconds": {name: (W,) medians}, "order":
    {name: Table 3's power of P}, "device": a description of the JAX device used}.
    """
    if isinstance(methods, str):
        methods = [methods]
    methods = list(methods)
    if not methods:
        raise ValueError("Choose at least one method to time.")
    ms = [make_method(m, alpha=None if m.startswith("bong") else alpha, n_samples=n_samples) for m in methods]
    widths = [integer(w, "Every hidden width", minimum=1, maximum=100_000) for w in np.atleast_1d(widths).tolist()]
    if not widths:
        raise ValueError("Give at least one hidden width.")
    n_repeats = integer(n_repeats, "The number of repeats", minimum=1, maximum=100)
    s2 = positive(sigma0_2, "The prior variance sigma_0^2")
    key = core.check_key(key, "runtime_vs_size")
    X, y = mlp_regression(key, 8)
    out = {name: np.full(len(widths), np.nan) for name in methods}
    Ps = np.array([(X.shape[1] + 2) * w + 1 for w in widths])
    t0 = time.perf_counter()
    n_cells, done = len(ms) * len(widths), 0
    for j, w in enumerate(widths):
        for name, m in zip(methods, ms):
            if max_seconds is not None and time.perf_counter() - t0 > max_seconds:
                break
            one, P = _timed_update(m, X.shape[1], w)
            k_init, k_up = jax.random.split(jax.random.fold_in(key, j))
            mu0 = 0.3 * jax.random.normal(k_init, (P,), jnp.float64)
            prior = init_belief(m.family, mu0, s2, rank=m.rank)
            x, yy = jnp.asarray(X[0]), jnp.asarray(y[:1])
            jax.block_until_ready(one(prior, x, yy, k_up))  # compile
            times = []
            for r in range(n_repeats):
                ts = time.perf_counter()
                jax.block_until_ready(one(prior, jnp.asarray(X[r % len(X)]), jnp.asarray(y[r % len(y)][None]), k_up))
                times.append(time.perf_counter() - ts)
            out[name][j] = statistics.median(times)
            done += 1
            if progress is not None:
                progress(done / n_cells)
    dev = jax.devices()[0]
    return {"methods": methods, "widths": np.array(widths), "P": Ps, "seconds": out,
            "order": {name: complexity_order(m) for name, m in zip(methods, ms)},
            "device": f"{dev.platform.upper()} ({getattr(dev, 'device_kind', '') or 'unknown kind'})"}
