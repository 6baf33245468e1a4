"""Variational training of a network: minibatch ELBO with Tan's optimizers, and online BONG.

1. :func:`vi_train` - a diagonal Gaussian q(theta) = N(mu, diag(sigma^2)) over ALL weights of a
   network (Tan (2025) Sec. 8.3: "diagonal covariance only"), prior N(0, sigma0^2 I) with
   sigma0 = 10 (Tan Sec. 8, "all models"), likelihood softmax(f(x, theta)). The ELBO

       L(lambda) = E_q[log p(y | theta) + log p(theta)] + H(q)

   is estimated on a minibatch B with the data term scaled by n/|B| and one draw
   theta = mu + C z, z ~ N(0, I) (Tan (2025) Thm 2, first-order form, diagonal C = diag(c)):

       h(theta) = log p(y, theta) - log q(theta),   grad_theta h = g + C^{-T} z = g + z / c,
       grad_mu L ~ grad_theta h,                      grad_c L ~ grad_theta h * z      (diag of G1),

   with g = n/|B| sum_B grad log p(y_i | theta) - theta / sigma0^2. The optimizers are the optax
   transformations of :mod:`vilab.optim` (Tan Table 5 and Supp. S5), fed as there:

   adam          Euclidean gradient of -L               lambda = (mu, c), sigma = |c|
   adam-natural  natural gradient (Tan's "NAdam")       (c^2 g_mu, c^2 g_c / 2), Tan Sec. 5 "diagonal C"
   snngm         natural gradient, alpha = alpha0 sqrt(2P)
   nagm          Euclidean gradient (Fisher inverse inside, factor step 10x smaller)
   pga           gradient of E_q[log p] only (g, g z) + proximal step on c (Tan Supp. S5)
   vogn          lambda = (mu, t), sigma = 1/t, theta = mu + z / t; gradient of log p(y, theta) and
                 the diagonal GGN n/|B| sum_B (grad log p(y_i | theta))^2 + 1/sigma0^2 (Supp. S5)

   Start (Tan Sec. 8): mu from the network initialiser, C = I / sqrt(n) (T = sqrt(n) I).
   Reported per epoch: the average of the per-iteration ELBO estimates (Tan Figs 6-8
   "average lower bound at each epoch"), test NLPD and error of the Monte Carlo predictive
   (probabilities averaged over draws) and of the plug-in predictive at mu. At the end a Monte
   Carlo ELBO on the full training set (mean and standard error over draws; Tan Sec. 8: "mean of
   h(theta) over simulations theta ~ q").

2. :func:`online_train` - one pass over the first T training examples, one example per step,
   with a BONG-family method of :mod:`vilab.online` (Jones, Chang & Murphy Alg. 1; e.g.
   "bong-lin-hess-dlr-10"), plug-in / MC / linearized NLPD and error at checkpoints.

Everything is float32, jitted (``lax.scan`` over minibatches), the data live on the device, and
with several local devices each minibatch is sharded over them (:mod:`vilab.cnn.devices`).
A run whose parameters stop defining a Gaussian stops with status "diverged: <reason>".
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from .data import ImageData
from .devices import batch_sharding, check_batch_size, data_mesh, device_label, replicated
from .models import CNN

__all__ = ["VI_OPTIMIZERS", "VIRun", "vi_train", "vi_step_fn", "init_lambda", "predictive", "online_predictive",
           "predictive_entropy", "online_train", "ONLINE_METHODS", "default_vi_alpha", "LOG2PI"]

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


def _optim():
    try:
        from vilab import optim
    except ImportError as e:  # pragma: no cover - vilab.optim is part of the package
        raise ValueError("vilab.optim (Tan's optimizers) is not available in this installation.") from e
    return optim


def _layout(optimizer: str, P: int):
    """Diagonal layout of vilab.optim: (mu, c) with C = diag(c), or (mu, t) with T = diag(t) for VOGN."""
    optim = _optim()
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


def vi_step_fn(net: CNN, optimizer: str, alpha: float, n: int, prior_var: float = 100.0, sharding=None):
    """(transformation, estimate, step) for one optimizer; see the module docstring.

    estimate(lam, Xb, yb, key) -> (h(theta), feed) with feed what the optimizer eats (optax loss
    convention: minus the ascent direction). step(carry, (Xb, yb, key)) -> (carry, h) with
    carry = (lam, opt_state, code); code != 0 freezes lambda at the last valid iterate
    (1: non-finite, 2: a zero on the factor's diagonal).
    """
    optim = _optim()
    _check_optimizer(optimizer)
    P = net.n_params
    layout = _layout(optimizer, P)
    tx = optim.make_transform(optimizer, float(alpha), layout)
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

    def step(carry, inp):
        lam, st, code = carry
        Xb, yb, key = inp
        if sharding is not None:
            Xb = jax.lax.with_sharding_constraint(Xb, sharding)
            yb = jax.lax.with_sharding_constraint(yb, sharding)
        h, fv = estimate(lam, Xb, yb, key)
        upd, st_new = tx.update(fv, st, lam)
        new = (lam + upd).astype(lam.dtype)
        new_code = jnp.where(jnp.isfinite(h), layout.validity(new), 1)
        ok = (code == 0) & (new_code == 0)
        lam_out = jnp.where(ok, new, lam)
        st_out = jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b).astype(b.dtype), st_new, st)
        code = jnp.where(code == 0, new_code, code)
        return (lam_out, st_out, code), h

    return tx, estimate, step, layout


@dataclass
class VIRun:
    """Result of :func:`vi_train`. Per-epoch arrays have one entry per finished epoch; the
    test metrics have an extra first entry for the start (epoch 0)."""

    optimizer: str
    label: str
    model: str
    n_params: int
    dataset: str
    settings: dict
    elbo_epoch: np.ndarray
    elbo_iter: np.ndarray
    test_nlpd: np.ndarray
    test_err: np.ndarray
    test_nlpd_plugin: np.ndarray
    test_err_plugin: np.ndarray
    epoch_seconds: np.ndarray
    final_elbo: float
    final_elbo_se: float
    status: str
    seconds: float
    compile_seconds: float
    examples_per_second: float
    device: str
    mu: np.ndarray
    sigma: np.ndarray
    extra: dict = field(default_factory=dict)

    @property
    def diverged(self) -> bool:
        return self.status.startswith("diverged")

    def rows(self) -> list[dict]:
        """One row per epoch (epoch 0 = start), for tables and CSV."""
        out = []
        for e in range(len(self.test_nlpd)):
            out.append({
                "run": self.label, "optimizer": self.optimizer, "model": self.model, "dataset": self.dataset,
                "epoch": e, "elbo_epoch_avg": float(self.elbo_epoch[e - 1]) if e >= 1 else float("nan"),
                "test_nlpd_mc": float(self.test_nlpd[e]), "test_err_mc": float(self.test_err[e]),
                "test_nlpd_plugin": float(self.test_nlpd_plugin[e]), "test_err_plugin": float(self.test_err_plugin[e]),
                "seconds": float(self.epoch_seconds[: e].sum()),
            })
        return out


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


_CACHE: dict = {}


def vi_train(
    net: CNN,
    data: ImageData,
    optimizer: str = "snngm",
    *,
    alpha: float | None = None,
    epochs: int = 5,
    batch_size: int = 128,
    prior_var: float = 100.0,
    seed: int = 0,
    eval_samples: int = 10,
    elbo_draws: int = 10,
    eval_chunk: int = 1000,
    chunk_batches: int = 50,
    progress: Callable[[float], None] | None = None,
    on_epoch: Callable[["VIRun"], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    max_seconds: float | None = None,
) -> VIRun:
    """Train q(theta) = N(mu, diag(sigma^2)) over the weights of ``net`` on ``data`` (module docstring).

    optimizer: one of VI_OPTIMIZERS; alpha: its step size (alpha0 for SNNGM); epochs of
    floor(n / batch_size) minibatches drawn without replacement; prior N(0, prior_var I).
    progress(fraction) after every chunk of minibatches, on_epoch(partial VIRun) after every
    epoch, should_stop() -> True ends the run with status "stopped"; max_seconds caps wall time.
    """
    _check_optimizer(optimizer)
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
    alpha = default_vi_alpha(optimizer) if alpha is None else float(alpha)
    if not (alpha > 0 and math.isfinite(alpha)):
        raise ValueError("The step size alpha must be a positive number.")
    nb = n // B
    L = _chunks(nb, chunk_batches)
    P = net.n_params
    optim = _optim()
    label = optim.OPTIMIZERS[optimizer]["label"]

    ckey = (net.name, net.n_params, optimizer, alpha, n, B, L, float(prior_var), int(eval_samples),
            None if mesh is None else mesh.devices.size)
    fns = _CACHE.get(ckey)
    if fns is None:
        tx, _, step, layout = vi_step_fn(net, optimizer, alpha, n, prior_var, batch_sharding(mesh))

        def chunk(carry, X, y, idx, keys):
            def body(c, inp):
                ix, k = inp
                return step(c, (X[ix], y[ix], k))
            return jax.lax.scan(body, carry, (idx, keys))

        fns = (tx, jax.jit(chunk), _make_eval(net, optimizer, int(eval_samples)),
               _make_full_elbo(net, optimizer, n, float(prior_var)))
        if len(_CACHE) > 32:
            _CACHE.clear()
        _CACHE[ckey] = fns
    tx, chunk_fn, evaluate, h_full = fns

    rep = replicated(mesh)
    put = (lambda a: jax.device_put(a, rep)) if rep is not None else jax.device_put
    X, y = put(jnp.asarray(data.x_train)), put(jnp.asarray(data.y_train))
    Xe, ye, we = (put(jnp.asarray(a)) for a in _padded(data.x_test, data.y_test, min(int(eval_chunk), len(data.y_test))))
    Xf, yf, wf = (put(jnp.asarray(a)) for a in _padded(data.x_train, data.y_train, min(int(eval_chunk), n)))

    key = jax.random.PRNGKey(int(seed))
    k_init, k_run, k_eval, k_elbo = jax.random.split(key, 4)
    lam = put(init_lambda(net, n, optimizer, k_init))
    carry = (lam, tx.init(lam), jnp.asarray(0, jnp.int32))

    t0 = time.perf_counter()
    idx0 = jnp.zeros((L, B), jnp.int32)
    keys0 = jax.random.split(k_run, L)
    compiled = chunk_fn.lower(carry, X, y, idx0, keys0).compile()
    compile_s = time.perf_counter() - t0

    def ev(lam_):
        return [float(v) for v in evaluate(lam_, Xe, ye, we, k_eval)]

    m0 = ev(lam)
    nlpd, err, nlpd0, err0 = [m0[0]], [m0[1]], [m0[2]], [m0[3]]
    elbo_it, elbo_ep, ep_sec = [], [], []
    status = "max_epochs"
    run_s = 0.0
    steps_done = 0
    info = dict(optimizer=optimizer, alpha=alpha, alpha_effective=(alpha * math.sqrt(2 * P) if optimizer == "snngm" else alpha),
                epochs=epochs, batch_size=B, iters_per_epoch=nb, prior_var=float(prior_var), seed=int(seed),
                eval_samples=int(eval_samples), elbo_draws=int(elbo_draws), n_train=n, n_test=int(len(data.y_test)),
                estimator="Tan (2025) Thm 2 first order, one draw", start="mu: LeCun init; C = I/sqrt(n)")

    def snapshot(fe=float("nan"), fse=float("nan")):
        lam_np = np.asarray(carry[0])
        sig = np.asarray(_sigma(carry[0], P, optimizer))
        return VIRun(optimizer, f"{label} (alpha={alpha:g})", net.name, P, data.name, dict(info),
                     np.asarray(elbo_ep), np.asarray(elbo_it), np.asarray(nlpd), np.asarray(err), np.asarray(nlpd0),
                     np.asarray(err0), np.asarray(ep_sec), fe, fse, status, run_s, compile_s,
                     steps_done * B / run_s if run_s > 0 else float("nan"), device_label(), lam_np[:P], sig)

    stop = False
    for e in range(epochs):
        k_run, k_perm = jax.random.split(k_run)
        perm = jax.random.permutation(k_perm, n)[: nb * B].reshape(nb // L, L, B).astype(jnp.int32)
        keys = jax.random.split(jax.random.fold_in(k_run, e), nb).reshape(nb // L, L, -1)
        t_ep = time.perf_counter()
        hs = []
        for c in range(nb // L):
            t1 = time.perf_counter()
            carry, h = compiled(carry, X, y, perm[c], keys[c])
            h = np.asarray(h)  # blocks
            run_s += time.perf_counter() - t1
            steps_done += L
            hs.append(h)
            code = int(carry[2])
            if code != 0:
                why = "non-finite ELBO or parameters" if code == 1 else "a standard deviation reached zero"
                status = f"diverged: {why} in epoch {e + 1}"
                break
            if progress is not None:
                progress((e * nb + (c + 1) * L) / (epochs * nb))
            if should_stop is not None and should_stop():
                status, stop = "stopped", True
                break
            if max_seconds is not None and time.perf_counter() - t0 > max_seconds:
                status, stop = "max_time", True
                break
        hs = np.concatenate(hs)
        if status.startswith("diverged"):
            good = hs[np.isfinite(hs)]
            elbo_it.extend(good.tolist())
            break
        elbo_it.extend(hs.tolist())
        if len(hs) < nb:  # stopped inside an epoch: no epoch average, no evaluation
            break
        elbo_ep.append(float(np.mean(hs)))
        ep_sec.append(time.perf_counter() - t_ep)
        m = ev(carry[0])
        nlpd.append(m[0]), err.append(m[1]), nlpd0.append(m[2]), err0.append(m[3])
        if not all(np.isfinite(m)):
            status = f"diverged: the predictive is not finite after epoch {e + 1}"
            break
        if on_epoch is not None:
            on_epoch(snapshot())
        if stop:
            break
    if progress is not None:
        progress(1.0)
    # Monte Carlo ELBO on the full training data at the final lambda (Tan Sec. 8)
    zs = jax.random.normal(k_elbo, (int(elbo_draws), P), jnp.float32)
    hv = np.array([float(h_full(carry[0], Xf, yf, wf, z)) for z in zs])
    fe = float(np.mean(hv)) if np.all(np.isfinite(hv)) else float("nan")
    fse = float(np.std(hv) / math.sqrt(len(hv))) if np.all(np.isfinite(hv)) else float("nan")
    if not np.isfinite(fe) and not status.startswith("diverged"):
        status = "diverged: the final ELBO is not finite"
    return snapshot(fe, fse)


@partial(jax.jit, static_argnums=0)
def _mean_softmax(net: CNN, thetas, X):
    """(1/S) sum_s softmax(f(x, theta_s)) for each row x of X; thetas (S, P)."""
    # a draw at a time: vmapping over weight draws makes XLA:CPU run grouped convolutions, far slower
    return jnp.mean(jax.lax.map(lambda th: jax.nn.softmax(net.apply_batch(th, X)), thetas), axis=0)


def predictive(net: CNN, mu, sigma, X, n_samples: int = 20, seed: int = 0) -> np.ndarray:
    """Monte Carlo predictive probabilities p(y | x) = (1/S) sum_s softmax(f(x, theta_s)), theta_s ~ q
    = N(mu, diag(sigma^2)) (the VI posterior). n_samples = 0 gives the plug-in softmax(f(x, mu)).
    Returns (N, K) numpy."""
    mu = jnp.asarray(mu, jnp.float32)
    X = jnp.asarray(X, jnp.float32)
    if int(n_samples) <= 0:
        return np.asarray(_mean_softmax(net, mu[None], X))
    z = jax.random.normal(jax.random.PRNGKey(seed), (int(n_samples), mu.shape[0]), jnp.float32)
    return np.asarray(_mean_softmax(net, mu + jnp.asarray(sigma, jnp.float32) * z, X))


def online_predictive(net: CNN, belief, X, n_samples: int = 20, seed: int = 0) -> np.ndarray:
    """The same Monte Carlo predictive for a BONG belief (Diag or DLR), with exact draws from it
    (vilab.online.families.sample: a DLR belief is not replaced by its marginal variances)."""
    from vilab.online.families import sample

    X = jnp.asarray(X, jnp.float32)
    if int(n_samples) <= 0:
        return np.asarray(_mean_softmax(net, jnp.asarray(belief.mu, jnp.float32)[None], X))
    thetas = sample(jax.random.PRNGKey(seed), belief, int(n_samples))
    return np.asarray(_mean_softmax(net, jnp.asarray(thetas, jnp.float32), X))


def predictive_entropy(probs) -> np.ndarray:
    """Entropy -sum_k p_k log p_k (nats) of each row of predictive probabilities."""
    p = np.clip(np.asarray(probs, np.float64), 1e-12, 1.0)
    return -np.sum(p * np.log(p), axis=1)


# ------------------------------------------------------------------------------------ online
_F_CACHE: dict = {}
_EV_CACHE: dict = {}


def _filter_f(net: CNN):
    """f(x, theta) = net.apply(theta, x), the argument order of the filters (one function per network,
    so vilab.online's compiled step is reused across runs)."""
    k = (net.name, net.n_params)
    if k not in _F_CACHE:
        _F_CACHE[k] = lambda x, theta: net.apply(theta, x)
    return _F_CACHE[k]


@lru_cache(maxsize=None)
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
    T: int = 1000,
    sigma0_2: float = 0.1,
    alpha: float | None = None,
    n_iter: int = 1,
    n_samples: int = 10,
    seed: int = 0,
    n_checkpoints: int = 8,
    n_test: int | None = 500,
    n_mc: int = 20,
    which=("plugin", "mc", "lin"),
    progress: Callable[[float], None] | None = None,
    on_checkpoint: Callable[[int, dict], None] | None = None,
    dtype=jnp.float32,
):
    """Stream the first T training examples (seeded order) through a BONG-family method.

    Uses vilab.online (grid.make_method, families.init_belief, runner.run_online/make_evaluator,
    likelihoods.categorical): prior N(mu_0, sigma0_2 I) with mu_0 from the network initialiser,
    one example per step (Jones, Chang & Murphy Alg. 1), metrics at ``n_checkpoints`` evenly
    spaced steps on the first ``n_test`` test images. Returns vilab.online.runner.OnlineRun
    (``extra`` holds the settings, the device and the examples per second).

    on_checkpoint(t, metrics) is called at every checkpoint as the stream runs (live charts).
    dtype: float32 by default, like the VI path; the BONG digest (Sec. 4.1) measured float32 vs
    float64 changing a DLR run's final NLL by up to 0.03 and recommends float64 on CPU for
    reproductions (pass ``dtype=jnp.float64``). One example per step: nothing to shard.
    """
    try:
        from vilab.online.families import init_belief
        from vilab.online.grid import make_method
        from vilab.online.runner import make_evaluator, run_online
    except ImportError as e:  # pragma: no cover
        raise ValueError("vilab.online (the BONG grid) is not available in this installation.") from e
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
    key = jax.random.PRNGKey(int(seed))
    k_init, k_w, k_run, _ = jax.random.split(key, 4)
    mu0 = net.init(k_init, dtype)
    w0 = 0.1 if (m.family == "dlr" and m.alg in ("bog", "bbb")) else 0.0
    prior = init_belief(m.family, mu0, sigma0_2, m.rank, key=k_w, w0_scale=w0)
    order = np.random.default_rng(1000 + int(seed)).permutation(data.n_train)[:T]
    Xs = jnp.asarray(data.x_train[order], dtype)
    ys = jnp.asarray(data.y_train[order])
    ne = len(data.y_test) if n_test is None else min(int(n_test), len(data.y_test))
    f = _filter_f(net)
    # one evaluator (one compilation) per network and test set; its Monte Carlo draws use a fixed key,
    # so runs that differ in seed, method or prior are scored with common random numbers
    ekey = (net.name, net.n_params, data.name, data.source, data.n_train, ne, int(n_mc), tuple(which), dtype)
    ev = _EV_CACHE.get(ekey)
    if ev is None:
        if len(_EV_CACHE) > 32:
            _EV_CACHE.clear()
        ev = _EV_CACHE[ekey] = make_evaluator(f, lik, jnp.asarray(data.x_test[:ne], dtype), data.y_test[:ne],
                                              n_mc=int(n_mc), key=jax.random.PRNGKey(123), which=tuple(which))
    k = max(1, int(n_checkpoints))
    step = max(1, T // k)
    cps = sorted({0, T} | set(range(step, T, step)))
    evaluate = ev
    if on_checkpoint is not None:
        seen = iter(cps)

        def evaluate(b):  # run_online evaluates once per checkpoint, in order
            out = ev(b)
            on_checkpoint(next(seen), {k_: float(v) for k_, v in out.items()})
            return out

    run = run_online(m, f, lik, Xs, ys, prior, key=k_run, checkpoints=cps, evaluate=evaluate, progress=progress,
                     keep_states=False)
    run.extra.update({"name": m.name, "sigma0_2": float(sigma0_2), "alpha": m.alpha, "n_iter": m.n_iter,
                      "n_samples": m.n_samples, "seed": int(seed), "model": net.name, "P": net.n_params,
                      "dataset": data.name, "T": T, "n_test": ne, "dtype": jnp.dtype(dtype).name,
                      "device": device_label(),
                      "examples_per_second": 1.0 / run.seconds_per_step if run.seconds_per_step > 0 else float("nan")})
    return run
