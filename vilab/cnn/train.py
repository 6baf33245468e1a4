"""Variational training of a network: minibatch ELBO with Tan's optimizers, and online BONG.

1. :func:`vi_algorithm` - a :class:`vilab.core.Algorithm` for a diagonal Gaussian
   q(theta) = N(mu, diag(sigma^2)) over ALL weights of a network (Tan (2025) Sec. 8.3: "diagonal
   covariance only"), prior N(0, sigma0^2 I) with sigma0 = 10 (Tan Sec. 8, "all models"),
   likelihood softmax(f(x, theta)). The ELBO

       L(lambda) = E_q[log p(y | theta) + log p(theta)] + H(q)

   is estimated on a minibatch B with the data term scaled by n/|B| and one draw
   theta = mu + C z, z ~ N(0, I) (Tan (2025) Thm 2, first-order form, diagonal C = diag(c)):

       h(theta) = log p(y, theta) - log q(theta),   grad_theta h = g + C^{-T} z = g + z / c,
       grad_mu L ~ grad_theta h,                      grad_c L ~ grad_theta h * z      (diag of G1),

   with g = n/|B| sum_B grad log p(y_i | theta) - theta / sigma0^2. One step is this estimate
   followed by the optax transformation of :mod:`vilab.algorithms.optim` (Tan Table 5 and Supp. S5), fed as
   there:

   adam          Euclidean gradient of -L               lambda = (mu, c), sigma = |c|
   adam-natural  natural gradient (Tan's "NAdam")       (c^2 g_mu, c^2 g_c / 2), Tan Sec. 5 "diagonal C"
   snngm         natural gradient, alpha = alpha0 sqrt(2P)
   nagm          Euclidean gradient (Fisher inverse inside, factor step 10x smaller)
   pga           gradient of E_q[log p] only (g, g z) + proximal step on c (Tan Supp. S5)
   vogn          lambda = (mu, t), sigma = 1/t, theta = mu + z / t; gradient of log p(y, theta) and
                 the diagonal GGN n/|B| sum_B (grad log p(y_i | theta))^2 + 1/sigma0^2 (Supp. S5)

   The step size alpha (alpha0 for SNNGM) is a run-time setting (``state.hyper["alpha"]``): it can
   be changed between steps (:func:`vilab.core.resume` with ``hyper={"alpha": ...}``) without
   recompiling. Start (Tan Sec. 8): mu from the network initialiser, C = I / sqrt(n) (T = sqrt(n) I).

2. :func:`vi_train` - epochs of minibatches drawn without replacement through
   :func:`vilab.core.run` (host mode: progress, stop button, time budget). Reported per epoch: the
   average of the per-iteration ELBO estimates (Tan Figs 6-8 "average lower bound at each epoch"),
   test NLPD and error of the Monte Carlo predictive (probabilities averaged over draws) and of
   the plug-in predictive at mu. At the end a Monte Carlo ELBO on the full training set (mean and
   standard error over draws; Tan Sec. 8: "mean of h(theta) over simulations theta ~ q").
   Returns a :class:`vilab.core.Trace` (see :func:`vi_train` for what it holds).

3. :func:`online_train` - one pass over the first T training examples, one example per step,
   with a BONG-family method of :mod:`vilab.online` (Jones, Chang & Murphy Alg. 1; e.g.
   "bong-lin-hess-dlr-10") through :func:`vilab.online.runner.stream`, plug-in / MC / linearized
   NLPD and error at checkpoints; also a :class:`vilab.core.Trace`.

Everything is float32 and jitted, the data live on the device, and with several local devices
each minibatch is sharded over them (:mod:`vilab.cnn.devices`). A step whose parameters stop
defining a Gaussian is rejected and the run ends with status "diverged: <reason>".
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from functools import partial
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import core
from ..algorithms import optim
from ..core.cache import ProgramCache, memoize
from .data import ImageData
from .devices import batch_sharding, check_batch_size, data_mesh, device_label, put_replicated
from .models import CNN

__all__ = ["VI_OPTIMIZERS", "VIState", "vi_algorithm", "vi_estimator", "vi_train", "init_lambda", "per_epoch",
           "vi_rows", "vi_posterior", "predictive", "online_predictive", "predictive_entropy", "online_train",
           "ONLINE_METHODS", "default_vi_alpha", "LOG2PI"]

LOG2PI = math.log(2.0 * math.pi)
VI_OPTIMIZERS = ("adam", "adam-natural", "snngm", "nagm", "pga", "vogn")

# Step sizes used when none is given. Adam/NAdam/PGA: Tan Table 5 defaults (fixed in all his
# experiments). SNNGM (alpha0), NAGM and VOGN: Tan tuned them ("refer to code", not published).
# Ours: SNNGM alpha0 = 3e-3 chosen on one digits run (lenet5-digits, 10 epochs, batch 32, seed 0)
# among {1e-3, 3e-3, 1e-2} (1e-2 had the higher ELBO, 3e-3 the lower test error); NAGM 1e-2 on the
# same run (0.1 diverged); VOGN 1e-3 is Tan's starting value, untuned.
_DEFAULT_ALPHA = {"adam": 1e-3, "adam-natural": 1e-3, "pga": 1e-3, "snngm": 3e-3, "nagm": 1e-2, "vogn": 1e-3}

# BONG-family methods offered for online training (Jones, Chang & Murphy Figs 1-2).
ONLINE_METHODS = ("bong-lin-hess-diag", "bong-lin-hess-dlr-10", "bong-mc-ef-diag", "bong-mc-ef-dlr-10",
                  "blr-lin-hess-dlr-10", "bog-lin-hess-dlr-10", "bbb-lin-hess-dlr-10", "bong-lin-hess-diag_mom")


def default_vi_alpha(optimizer: str) -> float:
    """The default step size (alpha0 for SNNGM) of a VI optimizer."""
    _check_optimizer(optimizer)
    return _DEFAULT_ALPHA[optimizer]


def _check_optimizer(name):
    if name not in VI_OPTIMIZERS:
        raise ValueError(f"Unknown optimizer {name!r}; choose one of {', '.join(VI_OPTIMIZERS)}.")
    return name


def _check_alpha(alpha) -> float:
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        a = float("nan")
    if not (a > 0 and math.isfinite(a)):
        raise ValueError(f"The step size alpha must be a positive number; got {alpha!r}.")
    return a


def _layout(optimizer: str, P: int):
    """Diagonal layout of vilab.algorithms.optim: (mu, c) with C = diag(c), or (mu, t) with T = diag(t) for VOGN."""
    param = "chol_prec" if optimizer == "vogn" else "chol_cov"
    return optim.Layout(P, param, True)


def init_lambda(net: CNN, n: int, optimizer: str, key) -> jax.Array:
    """lambda_1 = (mu_1, c_1) with mu_1 from the initialiser and c_1 = 1/sqrt(n) (Tan Sec. 8);
    VOGN: (mu_1, t_1 = sqrt(n))."""
    mu = net.init(key, jnp.float32)
    f = math.sqrt(n) if optimizer == "vogn" else 1.0 / math.sqrt(n)
    return jnp.concatenate([mu, jnp.full((net.n_params,), f, jnp.float32)])


def _sigma(lam, P, optimizer):
    f = lam[P:]
    return 1.0 / jnp.abs(f) if optimizer == "vogn" else jnp.abs(f)


def _loglik_sum(net: CNN, theta, Xb, yb):
    """sum_i log softmax(f(x_i, theta))[y_i] over a minibatch."""
    logits = net.apply_batch(theta, Xb)
    return jnp.sum(jnp.take_along_axis(jax.nn.log_softmax(logits), yb[:, None], axis=1))


def vi_estimator(net: CNN, optimizer: str, n: int, prior_var: float = 100.0):
    """(estimate, layout): ``estimate(lam, Xb, yb, key) -> (h(theta), feed)``, Tan (2025) Thm 2's
    single-draw first-order estimate on a minibatch (module docstring), ``feed`` what the optimizer
    of :mod:`vilab.algorithms.optim` eats (optax loss convention: minus the ascent direction)."""
    _check_optimizer(optimizer)
    P = net.n_params
    layout = _layout(optimizer, P)
    feed = optim.OPTIMIZERS[optimizer]["feed"]
    s0 = float(prior_var)
    if not (s0 > 0 and math.isfinite(s0)):
        raise ValueError("The prior variance sigma0^2 must be a positive number.")
    log_prior_const = -0.5 * P * (LOG2PI + math.log(s0))

    def log_joint(theta, Xb, yb):
        scale = n / Xb.shape[0]
        return scale * _loglik_sum(net, theta, Xb, yb) - 0.5 * jnp.sum(theta**2) / s0 + log_prior_const

    def estimate(lam, Xb, yb, key):
        mu, f = lam[:P], lam[P:]
        z = jax.random.normal(key, (P,), lam.dtype)
        if optimizer == "vogn":
            theta = mu + z / f  # theta = mu + T^{-T} z
            logq = -0.5 * P * LOG2PI + jnp.sum(jnp.log(jnp.abs(f))) - 0.5 * z @ z
        else:
            theta = mu + f * z  # theta = mu + C z
            logq = -0.5 * P * LOG2PI - jnp.sum(jnp.log(jnp.abs(f))) - 0.5 * z @ z
        logp, g = jax.value_and_grad(log_joint)(theta, Xb, yb)
        h = logp - logq
        if feed == "vogn":
            per_ex = jax.vmap(jax.grad(lambda th, x, y: _loglik_sum(net, th, x[None], y[None])), (None, 0, 0))(theta, Xb, yb)
            gn = (n / Xb.shape[0]) * jnp.sum(per_ex**2, axis=0) + 1.0 / s0
            return h, optim.VOGNInput(-g, gn)
        if feed == "smooth":  # PGA: gradient of E_q[log p(y, theta)] only; entropy left to the prox
            egrad = jnp.concatenate([g, g * z])
        else:
            gh = g + z / f  # grad_theta h = g + C^{-T} z (Tan Thm 2)
            egrad = jnp.concatenate([gh, gh * z])
        if feed == "natural":
            egrad = layout.natural(lam, egrad)
        return h, -egrad

    return estimate, layout


class VIState(NamedTuple):
    """State of :func:`vi_algorithm`.

    lam : (2P,) float32, lambda = (mu, c) with C = diag(c), or (mu, t) with T = diag(t) for VOGN.
    opt : the optax state of the optimizer.
    elbo : the ELBO estimate h(theta) of the last step (NaN before the first).
    hyper : {"alpha": the step size (alpha0 for SNNGM)}, a run-time setting.
    """

    lam: jax.Array
    opt: Any
    elbo: jax.Array
    hyper: dict


@memoize("vilab.cnn.train VI algorithms", maxsize=32)
def vi_algorithm(net: CNN, optimizer: str, n: int, *, prior_var: float = 100.0, sharding=None) -> core.Algorithm:
    """Variational training of ``net`` with a diagonal Gaussian as a :class:`vilab.core.Algorithm`
    (Tan (2025) Sec. 8.3; Thm 2 first-order single-draw estimate, Table 5 / Supp. S5 optimizers).

    n : the number of training examples (the minibatch term is scaled by n/|B|).
    sharding : None, or the sharding of a minibatch's first axis (:func:`vilab.cnn.devices.batch_sharding`).

    * ``init(key, start=None, alpha=None) -> VIState``: lambda from :func:`init_lambda` (``key``) or
      ``start`` (a (2P,) lambda); alpha defaults to :func:`default_vi_alpha`.
    * ``step(key, state, batch)``: batch = (images (B, H, W, C), labels (B,)[, key]); the draw z comes
      from the batch's key when it has one (:func:`vi_train` passes the per-step keys with the
      minibatches), else from ``key``. Code 2: non-finite ELBO estimate or parameters; code 5: an
      entry of the factor reached zero.
    * ``observe(state)``: mean mu, variances sigma^2, objective = -h of the last step (one draw on one
      minibatch: noisy; :func:`vi_train` records per-epoch averages instead).
    """
    _check_optimizer(optimizer)
    P = net.n_params
    estimate, layout = vi_estimator(net, optimizer, n, prior_var)

    def init(key, start=None, alpha=None):
        a = _check_alpha(default_vi_alpha(optimizer) if alpha is None else alpha)
        lam = init_lambda(net, n, optimizer, key) if start is None else jnp.asarray(start, jnp.float32)
        if lam.shape != (2 * P,):
            raise ValueError(f"A starting lambda must have 2P = {2 * P} entries; got shape {lam.shape}.")
        opt = optim.make_transform(optimizer, a, layout).init(lam)
        # float64 here (as set_hyper keeps it); step casts it to a weakly typed value (see vilab.algorithms.optim.weak_scalar)
        return VIState(lam, opt, jnp.asarray(jnp.nan, jnp.float32), {"alpha": jnp.asarray(a, jnp.float64)})

    def step(key, state, batch):
        Xb, yb = batch[0], batch[1]
        k = batch[2] if len(batch) > 2 else key
        if sharding is not None:
            Xb = jax.lax.with_sharding_constraint(Xb, sharding)
            yb = jax.lax.with_sharding_constraint(yb, sharding)
        alpha = optim.weak_scalar(state.hyper["alpha"])
        tx = optim.make_transform(optimizer, alpha, layout)
        lam = state.lam
        h, fv = estimate(lam, Xb, yb, k)
        upd, opt = tx.update(fv, state.opt, lam)
        new = (lam + upd).astype(lam.dtype)
        opt = jax.tree_util.tree_map(lambda a, b: jnp.asarray(a).astype(jnp.asarray(b).dtype), opt, state.opt)
        valid = layout.validity(new)  # a core code: 0 fine, 2 non-finite, 5 a zero on the factor's diagonal
        code = jnp.where(jnp.isfinite(h), valid, core.NONFINITE)
        return (VIState(new, opt, h.astype(jnp.float32), state.hyper),
                {"code": code.astype(jnp.int32), "step_size": state.hyper["alpha"], "elbo": h})

    def observe(state):
        return {"mean": state.lam[:P], "var": _sigma(state.lam, P, optimizer) ** 2, "objective": -state.elbo}

    label = optim.OPTIMIZERS[optimizer]["label"]
    return core.Algorithm(init, step, observe, name=optimizer,
                          objective_name="negative ELBO estimate (one draw, last minibatch)",
                          settings={"optimizer": optimizer, "optimizer_label": label, "model": net.name,
                                    "n_params": P, "n_train": int(n), "prior_var": float(prior_var)})


def _chunks(nb: int, target: int) -> int:
    """The largest divisor of nb not above target (equal chunks: one compilation)."""
    target = max(1, min(nb, int(target)))
    for L in range(target, 0, -1):
        if nb % L == 0:
            return L
    return 1


def _padded(X, y, size):
    n = X.shape[0]
    m = -(-n // size) * size
    pad = m - n
    Xp = np.concatenate([X, np.zeros((pad,) + X.shape[1:], X.dtype)]) if pad else X
    yp = np.concatenate([y, np.zeros(pad, y.dtype)]) if pad else y
    w = np.concatenate([np.ones(n, np.float32), np.zeros(pad, np.float32)])
    return Xp.reshape((m // size, size) + X.shape[1:]), yp.reshape(m // size, size), w.reshape(m // size, size)


@memoize("vilab.cnn.train VI evaluators", maxsize=32)
def _make_eval(net: CNN, optimizer: str, n_samples: int):
    """Jitted (lam, Xc, yc, wc, key) -> (nlpd_mc, err_mc, nlpd_plugin, err_plugin) over chunks."""
    P = net.n_params

    def chunk_stats(lam, Xb, yb, wb, key):
        mu, sig = lam[:P], _sigma(lam, P, optimizer)
        z = jax.random.normal(key, (n_samples, P), lam.dtype)
        logp = jax.vmap(lambda zz: jax.nn.log_softmax(net.apply_batch(mu + sig * zz, Xb)))(z)  # (S, B, K)
        lp_mc = jax.scipy.special.logsumexp(logp, axis=0) - jnp.log(n_samples)  # log mean prob
        lp0 = jax.nn.log_softmax(net.apply_batch(mu, Xb))
        pick = lambda lp: jnp.take_along_axis(lp, yb[:, None], axis=1)[:, 0]  # noqa: E731
        return (jnp.sum(-pick(lp_mc) * wb), jnp.sum((jnp.argmax(lp_mc, 1) != yb) * wb),
                jnp.sum(-pick(lp0) * wb), jnp.sum((jnp.argmax(lp0, 1) != yb) * wb))

    @jax.jit
    def evaluate(lam, Xc, yc, wc, key):
        keys = jax.random.split(key, Xc.shape[0])
        s = jax.lax.map(lambda a: jnp.stack(chunk_stats(lam, *a)), (Xc, yc, wc, keys))
        return jnp.sum(s, axis=0) / jnp.sum(wc)

    return evaluate


@memoize("vilab.cnn.train full-data ELBO", maxsize=32)
def _make_full_elbo(net: CNN, optimizer: str, n: int, prior_var: float):
    """Jitted (lam, Xc, yc, wc, z) -> h(theta) with theta from z on the FULL training data."""
    P = net.n_params
    c0 = -0.5 * P * (LOG2PI + math.log(prior_var))

    @jax.jit
    def h_full(lam, Xc, yc, wc, z):
        mu = lam[:P]
        sig = _sigma(lam, P, optimizer)
        theta = mu + sig * z
        ll = jax.lax.map(lambda a: jnp.sum(jnp.take_along_axis(jax.nn.log_softmax(net.apply_batch(theta, a[0])),
                                                                a[1][:, None], axis=1)[:, 0] * a[2]), (Xc, yc, wc))
        logp = jnp.sum(ll) - 0.5 * jnp.sum(theta**2) / prior_var + c0
        logq = -0.5 * P * LOG2PI - jnp.sum(jnp.log(sig)) - 0.5 * z @ z
        return logp - logq

    return h_full


_TEST_METRICS = ("test_nlpd", "test_err", "test_nlpd_plugin", "test_err_plugin")


def vi_train(
    net: CNN,
    data: ImageData,
    optimizer: str = "snngm",
    *,
    key,
    alpha: float | None = None,
    epochs: int = 5,
    batch_size: int = 128,
    prior_var: float = 100.0,
    eval_samples: int = 10,
    elbo_draws: int = 10,
    eval_chunk: int = 1000,
    chunk_batches: int = 50,
    progress: Callable[[float], None] | None = None,
    on_chunk: Callable[[core.Trace], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    max_time: float | None = None,
) -> core.Trace:
    """Train q(theta) = N(mu, diag(sigma^2)) over the weights of ``net`` on ``data`` (module docstring):
    :func:`vi_algorithm` driven by :func:`vilab.core.run`, one run of n // batch_size steps per epoch
    (minibatches drawn without replacement, passed as the runner's ``batches``).

    key : jax PRNG key (split into the start, the minibatch order and draws, the test-set draws and
        the final ELBO's draws). optimizer: one of VI_OPTIMIZERS; alpha: its step size (alpha0 for
        SNNGM); prior N(0, prior_var I).
    progress(fraction) after every chunk of at most ``chunk_batches`` minibatches, on_chunk(Trace so
    far) after every epoch (live charts), should_stop() -> True ends the run with status "stopped";
    max_time caps the wall time in seconds (status "max_time").

    Returns a :class:`vilab.core.Trace` with one row per epoch (row 0 = the start; ``iterations``
    the steps at the epoch ends): ``mean`` mu and ``var`` sigma^2; ``objective`` minus the average
    of the epoch's ELBO estimates, also in ``extra["elbo"]`` (NaN at row 0);
    ``extra["test_nlpd"]``, ``["test_err"]`` (Monte Carlo predictive) and ``["test_nlpd_plugin"]``,
    ``["test_err_plugin"]`` (plug-in at mu) at every row, ``extra["epoch_seconds"]``,
    ``extra["final_elbo"]`` and ``["final_elbo_se"]`` (Monte Carlo on the full training set),
    ``extra["device"]``; ``info["elbo"]`` every step's estimate; ``settings`` (optimizer, alpha,
    batch size, ...); ``timings`` ("run": seconds in the compiled steps, "compile" (an estimate: the
    first chunk's time beyond that of the others), "examples_per_second" (the first chunk left
    out), "total"); ``state`` the final :class:`VIState`. A run stopped inside an
    epoch keeps no row for the unfinished epoch (its steps are in ``info``).
    """
    _check_optimizer(optimizer)
    core.check_key(key, "vi_train")
    if tuple(data.shape) != tuple(net.in_shape):
        raise ValueError(f"The model {net.name} expects {net.in_shape} images but the data set has {data.shape}; "
                         "pick a model built for this data set.")
    if data.n_classes > net.out_dim:
        raise ValueError(f"The data have {data.n_classes} classes but the model has {net.out_dim} outputs.")
    epochs = int(epochs)
    if epochs < 1:
        raise ValueError("Train for at least one epoch.")
    n = data.n_train
    B = int(batch_size)
    if not 1 <= B <= n:
        raise ValueError(f"The batch size must be between 1 and the number of training examples ({n}); got {batch_size}.")
    mesh = data_mesh()
    check_batch_size(B, mesh)
    alpha = _check_alpha(default_vi_alpha(optimizer) if alpha is None else alpha)
    nb = n // B
    # equal chunks (one compiled loop); at least two per epoch, so that the first (which compiles)
    # can be left out of the measured speed
    L = _chunks(nb, min(int(chunk_batches), max(1, nb // 2)))
    P = net.n_params
    label = optim.OPTIMIZERS[optimizer]["label"]

    sharding = batch_sharding(mesh)
    alg = vi_algorithm(net, optimizer, n, prior_var=float(prior_var), sharding=sharding)
    evaluate = _make_eval(net, optimizer, int(eval_samples))
    h_full = _make_full_elbo(net, optimizer, n, float(prior_var))

    put = partial(put_replicated, mesh=mesh)
    X, y = put(jnp.asarray(data.x_train)), put(jnp.asarray(data.y_train))
    Xe, ye, we = (put(jnp.asarray(a)) for a in _padded(data.x_test, data.y_test, min(int(eval_chunk), len(data.y_test))))
    Xf, yf, wf = (put(jnp.asarray(a)) for a in _padded(data.x_train, data.y_train, min(int(eval_chunk), n)))

    k_init, k_run, k_eval, k_elbo = jax.random.split(key, 4)
    state = put(alg.init(k_init, None, alpha=alpha))
    run_key = k_run  # the runner's key; the steps draw from the per-step keys passed with the minibatches

    def ev(lam_):
        return [float(v) for v in evaluate(lam_, Xe, ye, we, k_eval)]

    settings = dict(optimizer=optimizer, label=f"{label} (alpha={alpha:g})", model=net.name, n_params=P,
                    dataset=data.name, alpha=alpha,
                    alpha_effective=(alpha * math.sqrt(2 * P) if optimizer == "snngm" else alpha),
                    epochs=epochs, batch_size=B, iters_per_epoch=nb, prior_var=float(prior_var),
                    eval_samples=int(eval_samples), elbo_draws=int(elbo_draws), n_train=n,
                    n_test=int(len(data.y_test)), n_steps=epochs * nb, record_every=nb,
                    estimator="Tan (2025) Thm 2 first order, one draw", start="mu: LeCun init; C = I/sqrt(n)")
    metrics = {k: [v] for k, v in zip(_TEST_METRICS, ev(state.lam))}
    elbo_ep, ep_sec = [], []
    chunks: list[tuple[float, int]] = []  # (seconds, steps) of every chunk of compiled steps
    run_s = 0.0
    status, note = "max_steps", ""
    trace = None
    t0 = time.perf_counter()

    def assemble(tr: core.Trace, fe=float("nan"), fse=float("nan")) -> core.Trace:
        """The trace with the epoch averages, the test metrics and the settings of this run."""
        its = tr.iterations
        ends = [i for i, it in enumerate(its) if it > 0 and it % nb == 0][: len(elbo_ep)]
        elbo = np.full(tr.n_rows, np.nan)
        ep_s = np.full(tr.n_rows, np.nan)
        elbo[ends], ep_s[ends] = elbo_ep[: len(ends)], ep_sec[: len(ends)]
        extra = dict(tr.extra, elbo=elbo, epoch_seconds=ep_s, final_elbo=fe, final_elbo_se=fse,
                     device=device_label())
        for k, v in metrics.items():
            col = np.full(tr.n_rows, np.nan)
            col[[0] + ends] = v[: len(ends) + 1]
            extra[k] = col
        steps = int(tr.info["elbo"].shape[0]) if "elbo" in tr.info else 0
        secs = np.asarray([c[0] for c in chunks[1:]], float)
        if secs.size and secs.sum() > 0:  # leave out the first chunk, which compiles the loop
            eps = sum(c[1] for c in chunks[1:]) * B / float(secs.sum())
            compile_s = max(0.0, chunks[0][0] - float(np.median(secs / [c[1] for c in chunks[1:]])) * chunks[0][1])
        else:
            eps = steps * B / run_s if run_s > 0 else float("nan")
            compile_s = chunks[0][0] if chunks else 0.0
        timings = {"total": time.perf_counter() - t0, "run": max(run_s - compile_s, 0.0), "compile": compile_s,
                   "examples_per_second": eps}
        return replace(tr, objective=-elbo, extra=extra, settings=dict(settings), timings=timings,
                       objective_name="negative average ELBO estimate of the epoch", method=optimizer)

    for e in range(epochs):
        k_run, k_perm = jax.random.split(k_run)
        perm = jax.random.permutation(k_perm, n)[: nb * B].reshape(nb, B).astype(jnp.int32)
        keys = jax.random.split(jax.random.fold_in(k_run, e), nb)
        batches = (X[perm], y[perm], keys)
        t_ep = time.perf_counter()
        last = [t_ep, 0]

        def prog(f, e=e, last=last):
            now, k = time.perf_counter(), int(round(float(f) * nb))
            chunks.append((now - last[0], k - last[1]))
            last[:] = [now, k]
            if progress is not None:
                progress(min(1.0, (e + float(f)) / epochs))

        budget = None if max_time is None else max(max_time - (time.perf_counter() - t0), 1e-9)
        part = core.run(alg, run_key, state, nb, batches=batches, record_every=nb, start_iteration=e * nb,
                        chunk_size=L, progress=prog, should_stop=should_stop, max_time=budget)
        ep_time = time.perf_counter() - t_ep
        run_s += ep_time
        trace = part if trace is None else trace.extend(part)
        state = jax.tree_util.tree_map(lambda a: put(jnp.asarray(a)), part.state)
        run_key = jnp.asarray(part.key)
        done = int(part.info["elbo"].shape[0])
        if part.diverged:
            status, note = part.status, f"in epoch {e + 1}"
            break
        if done < nb:  # stopped inside an epoch: no epoch average, no evaluation
            status = part.status
            break
        elbo_ep.append(float(np.mean(part.info["elbo"])))
        ep_sec.append(ep_time)
        m = ev(state.lam)
        for k, v in zip(_TEST_METRICS, m):
            metrics[k].append(v)
        if not all(np.isfinite(m)):
            status = core.diverged_status(f"the predictive is not finite after epoch {e + 1}")
            break
        stop = should_stop is not None and e + 1 < epochs and should_stop()
        out_of_time = max_time is not None and e + 1 < epochs and time.perf_counter() - t0 > max_time
        if on_chunk is not None:
            on_chunk(replace(assemble(trace), status="stopped" if stop else ("max_time" if out_of_time else "max_steps")))
        if stop or out_of_time:
            status = "stopped" if stop else "max_time"
            break
    if progress is not None:
        progress(1.0)
    # Monte Carlo ELBO on the full training data at the final lambda (Tan Sec. 8)
    zs = jax.random.normal(k_elbo, (int(elbo_draws), P), jnp.float32)
    hv = np.array([float(h_full(state.lam, Xf, yf, wf, z)) for z in zs])
    fe = float(np.mean(hv)) if np.all(np.isfinite(hv)) else float("nan")
    fse = float(np.std(hv) / math.sqrt(len(hv))) if np.all(np.isfinite(hv)) else float("nan")
    if not np.isfinite(fe) and not status.startswith("diverged"):
        status = core.diverged_status("the final ELBO is not finite")
    return replace(assemble(trace, fe, fse), status=status, note=note)


def per_epoch(trace: core.Trace) -> dict:
    """The per-epoch view of a :func:`vi_train` Trace: ``elbo_epoch`` (one entry per finished epoch)
    and the test metrics with an extra first entry for the start (epoch 0), ``epoch_seconds``."""
    its = np.asarray(trace.iterations)
    nb = int(trace.settings.get("iters_per_epoch", 1))
    rows = [0] + [i for i, it in enumerate(its) if it > 0 and it % nb == 0 and np.isfinite(trace.extra["elbo"][i])]
    out = {"elbo_epoch": np.asarray(trace.extra["elbo"])[rows[1:]],
           "epoch_seconds": np.asarray(trace.extra["epoch_seconds"])[rows[1:]]}
    for k in _TEST_METRICS:
        out[k] = np.asarray(trace.extra[k])[rows]
    return out


def vi_rows(trace: core.Trace, label: str | None = None) -> list[dict]:
    """One row per epoch (epoch 0 = start) of a :func:`vi_train` Trace, for tables and CSV."""
    pe = per_epoch(trace)
    s = trace.settings
    label = s.get("label", "") if label is None else label
    out = []
    for e in range(len(pe["test_nlpd"])):
        out.append({
            "run": label, "optimizer": s.get("optimizer"), "model": s.get("model"), "dataset": s.get("dataset"),
            "epoch": e, "elbo_epoch_avg": float(pe["elbo_epoch"][e - 1]) if e >= 1 else float("nan"),
            "test_nlpd_mc": float(pe["test_nlpd"][e]), "test_err_mc": float(pe["test_err"][e]),
            "test_nlpd_plugin": float(pe["test_nlpd_plugin"][e]), "test_err_plugin": float(pe["test_err_plugin"][e]),
            "seconds": float(pe["epoch_seconds"][: e].sum()),
        })
    return out


def vi_posterior(trace: core.Trace) -> tuple[np.ndarray, np.ndarray]:
    """(mu, sigma) of the final q of a :func:`vi_train` Trace (numpy, float32)."""
    lam = jnp.asarray(trace.state.lam)
    P = lam.shape[0] // 2
    return np.asarray(lam[:P]), np.asarray(_sigma(lam, P, trace.settings["optimizer"]))


@partial(jax.jit, static_argnums=0)
def _mean_softmax(net: CNN, thetas, X):
    """(1/S) sum_s softmax(f(x, theta_s)) for each row x of X; thetas (S, P)."""
    # a draw at a time: vmapping over weight draws makes XLA:CPU run grouped convolutions, far slower
    return jnp.mean(jax.lax.map(lambda th: jax.nn.softmax(net.apply_batch(th, X)), thetas), axis=0)


def predictive(net: CNN, mu, sigma, X, n_samples: int = 20, *, key=None) -> np.ndarray:
    """Monte Carlo predictive probabilities p(y | x) = (1/S) sum_s softmax(f(x, theta_s)), theta_s ~ q
    = N(mu, diag(sigma^2)) (the VI posterior), the draws from ``key``. n_samples = 0 gives the
    plug-in softmax(f(x, mu)) (no key needed). Returns (N, K) numpy."""
    mu = jnp.asarray(mu, jnp.float32)
    X = jnp.asarray(X, jnp.float32)
    if int(n_samples) <= 0:
        return np.asarray(_mean_softmax(net, mu[None], X))
    core.check_key(key, "predictive")
    z = jax.random.normal(key, (int(n_samples), mu.shape[0]), jnp.float32)
    return np.asarray(_mean_softmax(net, mu + jnp.asarray(sigma, jnp.float32) * z, X))


def online_predictive(net: CNN, belief, X, n_samples: int = 20, *, key=None) -> np.ndarray:
    """The same Monte Carlo predictive for a BONG belief (Diag or DLR), with exact draws from it
    (vilab.online.families.sample: a DLR belief is not replaced by its marginal variances)."""
    from vilab.online.families import sample

    X = jnp.asarray(X, jnp.float32)
    if int(n_samples) <= 0:
        return np.asarray(_mean_softmax(net, jnp.asarray(belief.mu, jnp.float32)[None], X))
    core.check_key(key, "online_predictive")
    thetas = sample(key, belief, int(n_samples))
    return np.asarray(_mean_softmax(net, jnp.asarray(thetas, jnp.float32), X))


def predictive_entropy(probs) -> np.ndarray:
    """Entropy -sum_k p_k log p_k (nats) of each row of predictive probabilities."""
    p = np.clip(np.asarray(probs, np.float64), 1e-12, 1.0)
    return -np.sum(p * np.log(p), axis=1)


# ------------------------------------------------------------------------------------ online
#: the Monte Carlo draws of the online test metrics use this one fixed key, so that runs which
#: differ in seed, method or prior are scored with common random numbers
_EVAL_KEY = 123
_EVALUATORS = ProgramCache("vilab.cnn.train online evaluators", maxsize=16)


@memoize("vilab.cnn.train network functions", maxsize=32)
def _filter_f(net: CNN):
    """f(x, theta) = net.apply(theta, x), the argument order of the filters (one function per network,
    so vilab.online's compiled step is reused across runs)."""
    return lambda x, theta: net.apply(theta, x)


@memoize("vilab.cnn.train likelihoods", maxsize=16)
def _categorical(n_classes: int):
    """One likelihood object per class count, so that vilab.online's compiled step (cached on
    (method, f, likelihood)) is reused across runs."""
    from vilab.online.likelihoods import categorical

    return categorical(n_classes)


def online_train(
    net: CNN,
    data: ImageData,
    method: str = "bong-lin-hess-dlr-10",
    *,
    key,
    T: int = 1000,
    sigma0_2: float = 0.1,
    alpha: float | None = None,
    n_iter: int = 1,
    n_samples: int = 10,
    n_checkpoints: int = 8,
    n_test: int | None = 500,
    n_mc: int = 20,
    which=("plugin", "mc", "lin"),
    progress: Callable[[float], None] | None = None,
    on_chunk: Callable[[core.Trace], None] | None = None,
    dtype=jnp.float32,
    max_time: float | None = None,
) -> core.Trace:
    """Stream T training examples (in an order drawn from ``key``) through a BONG-family method.

    Uses vilab.online (grid.make_method, families.init_belief, runner.stream/make_evaluator,
    likelihoods.categorical): prior N(mu_0, sigma0_2 I) with mu_0 from the network initialiser,
    one example per step (Jones, Chang & Murphy Alg. 1), metrics at ``n_checkpoints`` evenly
    spaced steps on the first ``n_test`` test images. ``key`` is split into the start, the prior's
    low-rank factor, the stream's draws and the order of the examples.

    Returns the :class:`vilab.core.Trace` of :func:`vilab.online.runner.stream`: one row per
    checkpoint (``iterations``; 0 = the prior), ``extra[metric]`` for the metrics of ``which``,
    ``state.belief`` the final belief, ``timings["seconds_per_step"]`` and
    ``timings["examples_per_second"]``, the run's settings in ``settings`` and ``extra["device"]``.
    on_chunk(Trace so far) is called as the stream runs, at least once per checkpoint (live charts).
    max_time caps the wall time in seconds (status "max_time", the checkpoints reached kept).

    dtype: float32 by default, like the VI path; the BONG digest (Sec. 4.1) measured float32 vs
    float64 changing a DLR run's final NLL by up to 0.03 and recommends float64 on CPU for
    reproductions (pass ``dtype=jnp.float64``). One example per step: nothing to shard.
    """
    from vilab.online.families import init_belief
    from vilab.online.grid import make_method
    from vilab.online.runner import make_evaluator, stream

    core.check_key(key, "online_train")
    if tuple(data.shape) != tuple(net.in_shape):
        raise ValueError(f"The model {net.name} expects {net.in_shape} images but the data set has {data.shape}.")
    T = int(T)
    if not 1 <= T <= data.n_train:
        raise ValueError(f"The stream length T must be between 1 and {data.n_train}.")
    if not (float(sigma0_2) > 0 and math.isfinite(float(sigma0_2))):
        raise ValueError("The prior variance sigma0^2 must be a positive number.")
    m = make_method(method, alpha=alpha, n_iter=n_iter, n_samples=n_samples)
    if m.family in ("fc", "fc_mom") and net.n_params > 5000:
        raise ValueError(f"A full covariance over {net.n_params:,} weights needs {net.n_params**2 * 4 / 1e9:.1f} GB; "
                         "use a diag or dlr family for CNNs.")
    dtype = jnp.dtype(dtype).type
    lik = _categorical(max(data.n_classes, net.out_dim))
    k_init, k_w, k_run, k_order = jax.random.split(key, 4)
    mu0 = net.init(k_init, dtype)
    w0 = 0.1 if (m.family == "dlr" and m.alg in ("bog", "bbb")) else 0.0
    prior = init_belief(m.family, mu0, sigma0_2, m.rank, key=k_w, w0_scale=w0)
    order = np.asarray(jax.random.permutation(k_order, data.n_train))[:T]
    Xs = jnp.asarray(data.x_train[order], dtype)
    ys = jnp.asarray(data.y_train[order])
    ne = len(data.y_test) if n_test is None else min(int(n_test), len(data.y_test))
    f = _filter_f(net)
    # one evaluator (one compilation) per network and test set
    ekey = (net, data.name, data.source, data.n_train, ne, int(n_mc), tuple(which), dtype)
    ev = _EVALUATORS.get_or_build(ekey, lambda: make_evaluator(
        f, lik, jnp.asarray(data.x_test[:ne], dtype), data.y_test[:ne], n_mc=int(n_mc),
        key=jax.random.PRNGKey(_EVAL_KEY), which=tuple(which)))
    k = max(1, int(n_checkpoints))
    step = max(1, T // k)
    cps = sorted({0, T} | set(range(step, T, step)))
    tr = stream(m, f, lik, Xs, ys, prior, key=k_run, checkpoints=cps, evaluate=ev, progress=progress,
                on_chunk=on_chunk, keep_states=False, max_time=max_time)
    sps = float(tr.timings.get("seconds_per_step", float("nan")))
    settings = {**tr.settings, "name": m.name, "sigma0_2": float(sigma0_2), "alpha": m.alpha, "n_iter": m.n_iter,
                "n_samples": m.n_samples, "model": net.name, "P": net.n_params, "dataset": data.name, "T": T,
                "n_test": ne, "dtype": jnp.dtype(dtype).name}
    timings = {**tr.timings, "examples_per_second": 1.0 / sps if sps > 0 else float("nan")}
    return replace(tr, settings=settings, timings=timings, extra={**tr.extra, "device": device_label()})
