"""Stochastic optimizers of Tan (2025) Sec. 6 and Supp. S5, and the Algorithm that runs them.

Sign convention (read this first)
---------------------------------
Every optimizer here is an ``optax.GradientTransformation`` in optax's own convention: it
receives the gradient of the *loss* ``-L`` (the negative ELBO; Euclidean, natural, or a
special input for VOGN) and returns ``updates`` that ``optax.apply_updates(params,
updates)`` adds to the parameters. Descent on ``-L`` is ascent on the ELBO ``L``, which is
how Tan writes every algorithm (Table 5: "lambda^(t+1) = lambda^(t) + alpha ...").

The parameters are one flat vector of free variational parameters (Tan Sec. 6: "l_lambda =
length of lambda"), laid out by a :class:`vilab.family.dense.GaussianFamily` (here also called
:data:`Layout`, its historical name):

* ``"chol_cov"``: lambda = (mu, vech C), Sigma = C C^T (Tan Thm 1(i)); diagonal: (mu, diag C);
* ``"chol_prec"``: lambda = (mu, vech T), Sigma^{-1} = T T^T (Tan Thm 1(ii)); diagonal: (mu, diag T);
* ``"kappa"``: lambda = (mu, vech Sigma) (Tan Table 1), used for the 1-D toy of Fig. 3 where
  lambda = (mu, sigma^2).

Optimizers (Tan Table 5, Supp. S5):

=================  ======================  ==============================================
driver name        transformation          fed with
=================  ======================  ==============================================
``adam``           :func:`adam`            Euclidean gradient (optax.adam itself)
``adam-natural``   :func:`adam_natural`    natural gradient: Tan's "NAdam" (NOT Nesterov)
``snngm``          :func:`snngm`           natural gradient
``nagm``           :func:`nagm`            Euclidean gradient (Fisher inverse inside)
``pga``            :func:`pga`             Euclidean gradient of E_q[log p] only + prox
``vogn``           :func:`vogn`            :class:`VOGNInput` (gradient, Gauss-Newton)
=================  ======================  ==============================================

:func:`algorithm` turns a (model, optimizer, parameterization, gradient estimator) combination
into a :class:`vilab.core.Algorithm` (one step = gradient estimate + optax update; the step size
alpha lives in ``state.hyper`` so it can change mid-run), and :func:`run` drives it with
:func:`vilab.core.run` on a :class:`vilab.targets.regression.GLMModel` and returns a
:class:`vilab.core.Trace`. The layout of Tan's Table 8 is presentation: see
:mod:`vilab.plots.optim`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from vilab import core
from vilab.core import checks
from vilab.core.cache import memoize
from vilab.core.runner import positive_number, whole_number
from vilab.core.trace import Trace
from vilab.family.dense import PARAMS, GaussianFamily
from vilab.family.linalg import vech

__all__ = [
    "Layout",
    "snngm",
    "nagm",
    "adam",
    "adam_natural",
    "pga",
    "vogn",
    "VOGNInput",
    "OPTIMIZERS",
    "ESTIMATORS",
    "CODES",
    "make_transform",
    "PARAMS",
    "default_alpha",
    "snngm_alpha",
    "OptimState",
    "algorithm",
    "initial_lambda",
    "minibatch_indices",
    "run",
    "final_elbo",
    "tau_weights",
    "weak_scalar",
]


try:  # jax has no public spelling of a cast to a weakly typed value
    from jax._src.lax.lax import _convert_element_type
except ImportError:  # pragma: no cover - a jax without it: fall back to a float32 step size
    _convert_element_type = None


def weak_scalar(x):
    """``x`` as a weakly typed scalar: a float64 step size then multiplies float32 arrays in float32,
    exactly as a Python float does (set_hyper returns strongly typed values; a strong float64 would
    promote the float32 parameters of a network). The CNN and deep-GLM fits pass their step size through it."""
    if _convert_element_type is None:  # pragma: no cover
        return jnp.asarray(x, jnp.float32)
    return _convert_element_type(x, jnp.asarray(x).dtype, weak_type=True)


#: The flat-vector Gaussian family of this module (historical name of vilab.family.dense.GaussianFamily).
Layout = GaussianFamily

#: Step codes of the optimizer algorithms beside vilab.core.CODES.
NEGATIVE_SIGMA2 = 10
CODES = {NEGATIVE_SIGMA2: ("diverged: negative sigma^2",
                           "the variance of lambda = (mu, sigma^2) went below zero (Tan (2025) Fig. 3)")}


# ==================================================================== optimizers
class SNNGMState(NamedTuple):
    count: jax.Array
    m: jax.Array


def snngm_alpha(alpha0: float, n_params: int) -> float:
    """alpha = alpha0 sqrt(l_lambda) (Tan (2025) Table 5, SNNGM)."""
    alpha0 = checks.positive(alpha0, "The SNNGM step size alpha0")
    return alpha0 * math.sqrt(checks.integer(n_params, "The number of parameters l_lambda", minimum=1))


def _positive(x, name):
    """``x`` as a positive finite float (:func:`vilab.core.checks.positive`); a traced step size inside a compiled
    run is passed through (``run`` and ``init`` validated it)."""
    if isinstance(x, jax.core.Tracer):
        return x
    return checks.positive(x, name)


def _beta(b, name="beta"):
    """A momentum / moment-decay factor in [0, 1) (a real number, not a bool, text or NaN)."""
    try:
        ok = not isinstance(b, (bool, np.bool_, str, bytes)) and 0.0 <= checks.real_scalar(b, name) < 1.0
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{name} must lie in [0, 1); got {b!r}.")
    return float(b)


def _eps(eps, name="eps"):
    """Adam's denominator offset eps: a finite number >= 0 (a negative one can make the denominator
    sqrt(v) + eps zero or negative; 0, as optax allows, is exact where v > 0)."""
    what = f"Adam's offset {name} (added to sqrt(v) in the denominator)"
    v = checks.real_scalar(eps, what)
    if v < 0:
        raise ValueError(f"{what} must be a finite number >= 0; got {eps!r}.")
    return v


def snngm(alpha0: float, beta: float = 0.9) -> optax.GradientTransformation:
    """SNNGM, stochastic normalized natural gradient ascent with momentum, Tan (2025) Table 5.

    Fed ``g = -g~_t`` (minus the natural-gradient estimate of the ELBO, optax convention):

        m_t = beta m_{t-1} + (1 - beta) g~_t / ||g~_t||,   mhat_t = m_t / (1 - beta^t),
        lambda^(t+1) = lambda^(t) + alpha mhat_t,           alpha = alpha0 sqrt(l_lambda),

    l_lambda the length of the flat parameter vector (read from ``params`` or the gradient
    at ``init``). Since ||m_t|| <= 1 - beta^t (Tan Supp. S4.2) every step has Euclidean
    length <= alpha. A zero gradient gives a zero normalised direction.
    """
    alpha0 = _positive(alpha0, "The SNNGM step size alpha0")
    beta = _beta(beta)

    def init_fn(params):
        return SNNGMState(jnp.zeros([], jnp.int32), jnp.zeros_like(params))

    def update_fn(updates, state, params=None):
        alpha = alpha0 * math.sqrt(updates.size)
        nrm = jnp.linalg.norm(updates)
        u = jnp.where(nrm > 0, updates / jnp.where(nrm > 0, nrm, 1.0), 0.0)
        m = beta * state.m + (1.0 - beta) * u
        count = state.count + 1
        mhat = m / (1.0 - beta ** count.astype(updates.dtype))
        return -alpha * mhat, SNNGMState(count, m)

    return optax.GradientTransformation(init_fn, update_fn)


class NAGMState(NamedTuple):
    m: jax.Array


def nagm(
    alpha: float, beta: float = 0.9, clip: float = 5e5, *, layout: Layout, factor_ratio: float | None = None
) -> optax.GradientTransformation:
    """NAGM, natural gradient with momentum of the Euclidean gradient, Tan (2025) Table 5.

    Fed ``g = -ghat_t`` (minus the Euclidean ELBO gradient estimate):

        ghat_t <- min(1, clip / ||ghat_t||) ghat_t,   m_t = beta m_{t-1} + (1 - beta) ghat_t,
        lambda^(t+1) = lambda^(t) + alpha F_lambda(lambda^(t))^{-1} m_t     (no bias correction),

    F^{-1} applied analytically by ``layout.natural`` (Lemma 1(iii) for the factor). As in
    Tan's experiments mu and the factor get separate step sizes: the factor's is
    ``alpha / factor_ratio`` with ``factor_ratio`` 10 for a diagonal and 100 for a dense
    factor (Tan Sec. 6). Needs ``params`` in ``update``.
    """
    alpha = _positive(alpha, "The NAGM step size alpha")
    beta = _beta(beta)
    clip = _positive(clip, "The clipping threshold")
    ratio = (10.0 if layout.diagonal else 100.0) if factor_ratio is None else _positive(factor_ratio, "factor_ratio")
    scale = jnp.concatenate([jnp.full(layout.d, alpha), jnp.full(layout.size - layout.d, alpha / ratio)])

    def init_fn(params):
        return NAGMState(jnp.zeros_like(params))

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("NAGM needs the current parameters to apply the Fisher inverse.")
        g = -updates
        nrm = jnp.linalg.norm(g)
        g = g * jnp.minimum(1.0, clip / jnp.where(nrm > 0, nrm, 1.0))
        m = beta * state.m + (1.0 - beta) * g
        return scale * layout.natural(params, m), NAGMState(m)

    return optax.GradientTransformation(init_fn, update_fn)


def adam(alpha: float = 1e-3, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> optax.GradientTransformation:
    """Adam (Kingma & Ba 2015) with Tan's (2025) Table 5 defaults: ``optax.adam`` itself.

    Fed the negative Euclidean ELBO gradient it is Tan's "Adam":
    lambda^(t+1) = lambda^(t) + alpha mhat_t / (sqrt(vhat_t) + eps).
    """
    return optax.adam(_positive(alpha, "The Adam step size alpha"), b1=_beta(b1, "b1"), b2=_beta(b2, "b2"),
                      eps=_eps(eps))


def adam_natural(
    alpha: float = 1e-3, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
) -> optax.GradientTransformation:
    """Tan's (2025) "NAdam": the SAME ``optax.adam`` fed natural gradients (Table 5, Sec. 6).

    Not Nesterov-accelerated Adam (optax.nadam). The name only says what is fed in: the
    transformation is :func:`adam`; :func:`run` passes it the natural-gradient estimate.
    Tan Sec. 6: Adam keeps only the sign of mhat (its magnitude is ~alpha / sqrt(1 +
    Var/E^2)), so the natural gradient's scaling is thrown away.
    """
    return adam(alpha, b1, b2, eps)


class PGAState(NamedTuple):
    m: jax.Array
    v: jax.Array


def pga(
    alpha: float = 1e-3, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, *, layout: Layout
) -> optax.GradientTransformation:
    """ProxGenAdam (Yun et al. 2021; Tan (2025) Supp. S5), Adam-like, NO bias correction.

    Fed ``g = -ghat^l_t``, minus the gradient of the smooth part E_q[log p(y, theta)] (the
    entropy is left to the proximal step):

        m_t = b1 m_{t-1} + (1 - b1) ghat^l_t,  v_t = b2 v_{t-1} + (1 - b2) (ghat^l_t)^2,
        lambda' = lambda + alpha m_t / (sqrt(v_t) + eps),  gamma_t = alpha / (sqrt(v_t) + eps),

    then a proximal step on each diagonal entry of the factor with its own gamma:
    C_ii = (C'_ii + sgn(C'_ii) sqrt(C'_ii^2 + 4 gamma)) / 2 (minimises -log|C_ii| +
    (C_ii - C'_ii)^2 / (2 gamma)); for T, T_ii = (T'_ii + sgn(T'_ii) sqrt(T'_ii^2 - 4 gamma)) / 2
    when T'_ii^2 > 4 gamma, else T'_ii is kept (the paper does not say; digest Sec. 9).
    Defined for the Cholesky layouts only.
    """
    if layout.param not in ("chol_cov", "chol_prec"):
        raise ValueError("ProxGenAdam's proximal step is defined for the Cholesky factors C or T only.")
    alpha = _positive(alpha, "The PGA step size alpha")
    b1, b2 = _beta(b1, "b1"), _beta(b2, "b2")
    eps = _eps(eps)
    idx = jnp.asarray(layout.diag_index())
    is_C = layout.param == "chol_cov"

    def init_fn(params):
        return PGAState(jnp.zeros_like(params), jnp.zeros_like(params))

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("ProxGenAdam needs the current parameters for its proximal step.")
        g = -updates
        m = b1 * state.m + (1.0 - b1) * g
        v = b2 * state.v + (1.0 - b2) * g**2
        gamma = alpha / (jnp.sqrt(v) + eps)
        new = params + gamma * m
        c, gm = new[idx], gamma[idx]
        sgn = jnp.where(c >= 0, 1.0, -1.0)
        if is_C:
            prox = 0.5 * (c + sgn * jnp.sqrt(c**2 + 4.0 * gm))
        else:
            disc = c**2 - 4.0 * gm
            prox = jnp.where(disc > 0, 0.5 * (c + sgn * jnp.sqrt(jnp.where(disc > 0, disc, 0.0))), c)
        new = new.at[idx].set(prox)
        return new - params, PGAState(m, v)

    return optax.GradientTransformation(init_fn, update_fn)


class VOGNInput(NamedTuple):
    """What VOGN is fed (Tan (2025) Supp. S5), in optax's loss convention.

    grad : -(ghat^L_t - mu / sigma0^2) = minus the gradient of log p(y, theta) estimate.
    gn : Hhat^L_t + I / sigma0^2, a PD estimate of -hess log p(y, theta): the generalized
         Gauss-Newton matrix (or -2 grad_Sigma E_q[log p] for the loglinear model);
         (d, d), or (d,) for a diagonal layout.
    """

    grad: jax.Array
    gn: jax.Array


class VOGNState(NamedTuple):
    count: jax.Array
    m: jax.Array
    S: jax.Array


def vogn(
    alpha: float = 1e-3, b1: float = 0.9, b2: float = 0.999, *, layout: Layout
) -> optax.GradientTransformation:
    """Adam-like VOGN (Khan et al. 2018), as used by Tan (2025) Supp. S5, on lambda = (mu, T).

        m_t = b1 m_{t-1} + (1 - b1)(ghat^L_t - mu^(t) / sigma0^2),   mhat_t = m_t / (1 - b1^t),
        S^(t+1) = b2 S^(t) + (1 - b2)(Hhat^L_t + I / sigma0^2),
        mu^(t+1) = mu^(t) + alpha (S^(t+1))^{-1} mhat_t,   T^(t+1) = chol(S^(t+1)),

    S = T T^T the precision; fed a :class:`VOGNInput`. Needs ``layout.param == "chol_prec"``;
    the state keeps S (initialised from the starting T).
    """
    if layout.param != "chol_prec":
        raise ValueError("VOGN updates the precision S = T T^T: use the 'chol_prec' parameterization.")
    alpha = _positive(alpha, "The VOGN step size alpha")
    b1, b2 = _beta(b1, "b1"), _beta(b2, "b2")
    d = layout.d

    def init_fn(params):
        mu, T = layout.unpack(params)
        S = T**2 if layout.diagonal else T @ T.T
        return VOGNState(jnp.zeros([], jnp.int32), jnp.zeros(d, params.dtype), S)

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("VOGN needs the current parameters.")
        count = state.count + 1
        m = b1 * state.m + (1.0 - b1) * (-updates.grad)
        mhat = m / (1.0 - b1 ** count.astype(m.dtype))
        S = b2 * state.S + (1.0 - b2) * updates.gn
        if layout.diagonal:
            step_mu = alpha * mhat / S
            T_new = jnp.sqrt(S)
            f_new = T_new
        else:
            L = jnp.linalg.cholesky(S)
            step_mu = alpha * jax.scipy.linalg.cho_solve((L, True), mhat)
            f_new = vech(L)
        new = jnp.concatenate([params[:d] + step_mu, f_new])
        return new - params, VOGNState(count, m, S)

    return optax.GradientTransformation(init_fn, update_fn)


# ======================================================================= registry
OPTIMIZERS: dict[str, dict[str, Any]] = {
    "adam": dict(label="Adam", feed="euclidean", default_alpha=1e-3,
                 long="Adam on Euclidean gradients (optax.adam, Tan Table 5)"),
    "adam-natural": dict(label="Adam (natural gradients)", feed="natural", default_alpha=1e-3,
                         long="Adam fed natural gradients: Tan's 'NAdam', not Nesterov Adam"),
    "snngm": dict(label="SNNGM", feed="natural", default_alpha=1e-3,
                  long="stochastic normalized natural gradient ascent with momentum (alpha = alpha0 sqrt(l))"),
    "nagm": dict(label="NAGM", feed="euclidean", default_alpha=0.1,
                 long="natural gradient of the Euclidean-gradient momentum (factor step 10x/100x smaller)"),
    "pga": dict(label="ProxGenAdam", feed="smooth", default_alpha=1e-3,
                long="Adam on E_q[log p] without bias correction + proximal step on diag of the factor"),
    "vogn": dict(label="VOGN", feed="vogn", default_alpha=1e-3,
                 long="Adam-like variational online Gauss-Newton on (mu, T)"),
}

ESTIMATORS = {
    "exact": "exact gradient of the tractable (minibatch) ELBO",
    "first": "first-order single-sample estimate (Tan Thm 2: G1 = grad h z^T, G2 = -(theta-mu) v^T)",
    "second": "second-order single-sample estimate (Tan Thm 2: F1 = hess h C, F2 = -Sigma hess h T^-T)",
}


def default_alpha(name: str) -> float:
    """Default step size (alpha, or alpha0 for SNNGM) of an optimizer."""
    return OPTIMIZERS[_check_name(name)]["default_alpha"]


def _check_name(name):
    if not isinstance(name, str) or name not in OPTIMIZERS:
        raise ValueError(f"Unknown optimizer {name!r}; choose one of {', '.join(OPTIMIZERS)}.")
    return name


def make_transform(name: str, alpha: float, layout: Layout, **kw) -> optax.GradientTransformation:
    """The optax transformation behind a driver name (see ``OPTIMIZERS``)."""
    _check_name(name)
    if name == "adam":
        return adam(alpha, **kw)
    if name == "adam-natural":
        return adam_natural(alpha, **kw)
    if name == "snngm":
        return snngm(alpha, **kw)
    if name == "nagm":
        return nagm(alpha, layout=layout, **kw)
    if name == "pga":
        return pga(alpha, layout=layout, **kw)
    return vogn(alpha, layout=layout, **kw)



# =================================================================== estimators
def _make_estimator(model, layout: Layout, estimator: str, feed: str):
    """A function (lam, Xb, yb, scale, key) -> (elbo_estimate, feed_value).

    ``feed`` says what the optimizer needs: "euclidean" or "natural" (gradient of -L),
    "smooth" (gradient of -E_q[log p]), "vogn" (a VOGNInput).
    Exact: autodiff of the tractable ELBO (Tan Supp. S2). First/second order: Tan (2025)
    Thm 2 single-sample estimators (:meth:`vilab.family.dense.GaussianFamily.estimate`),
    theta = mu + C z or mu + T^{-T} z.
    """
    d = layout.d
    diag = layout.diagonal
    prior_var = model.prior_var

    if estimator == "exact":

        def e_logp(lam, Xb, yb, scale):
            return model.expected_log_joint(lam[:d], layout.variance_vector(lam), Xb, yb, scale)

        def elbo(lam, Xb, yb, scale):
            return e_logp(lam, Xb, yb, scale) + layout.entropy(lam)

        def est(lam, Xb, yb, scale, key):
            if feed == "vogn":
                mu = lam[:d]
                S = layout.variance_vector(lam)
                val, (g_mu, g_S) = jax.value_and_grad(model.expected_log_joint, argnums=(0, 1))(mu, S, Xb, yb, scale)
                if not diag:
                    g_S = 0.5 * (g_S + g_S.T)
                return val + layout.entropy(lam), VOGNInput(-g_mu, -2.0 * g_S)
            if feed == "smooth":
                val, g = jax.value_and_grad(e_logp)(lam, Xb, yb, scale)
                return val + layout.entropy(lam), -g
            val, g = jax.value_and_grad(elbo)(lam, Xb, yb, scale)
            if feed == "natural":
                g = layout.natural(lam, g)
            return val, -g

        return est

    order = estimator

    def est(lam, Xb, yb, scale, key):
        def log_p(theta):
            return model.log_joint(theta, Xb, yb, scale)

        if feed == "vogn":
            z = jax.random.normal(key, (d,), dtype=lam.dtype)
            theta = layout.transform(lam, z)
            h_val = log_p(theta) - layout.log_q_whitened(lam, z)
            g, _ = model.grad_hess(theta, Xb, yb, scale, diagonal=True)
            J = model.per_example_grads(theta, Xb, yb)
            gn = scale * ((J**2).sum(0) if diag else J.T @ J) + (1.0 if diag else jnp.eye(d)) / prior_var
            return h_val, VOGNInput(-g, gn)

        def grad_hess(theta):
            if order == "second":
                return model.grad_hess(theta, Xb, yb, scale, diagonal=diag)
            return model.grad_hess(theta, Xb, yb, scale, diagonal=True)[0], None

        h_val, egrad = layout.estimate(key, lam, log_p, order=order, smooth=feed == "smooth", grad_hess=grad_hess)
        if feed == "natural":
            egrad = layout.natural(lam, egrad)
        return h_val, -egrad

    return est


# ===================================================================== algorithm
class OptimState(NamedTuple):
    """State of an optimizer :func:`algorithm`.

    lam : the flat variational parameters lambda_t; opt_state : the optax state;
    elbo : the ELBO estimate at lam (h(theta) at one draw, or the exact minibatch ELBO);
    feed : what the optimizer will be fed at lam (the gradient estimate, computed with elbo);
    hyper : {"alpha": step size} (alpha0 for SNNGM), changeable mid-run (vilab.core.set_hyper).
    """

    lam: jax.Array
    opt_state: Any
    elbo: jax.Array
    feed: Any
    hyper: dict


class _Data:
    """A model as a cache-key part: equal when the data and constants are (a content hash), so a
    page or a reproduction that rebuilds the same model reuses the compiled programs."""

    def __init__(self, model):
        self.model = model
        h = hashlib.blake2b(digest_size=16)
        for a in (model.X, model.y):
            a = np.ascontiguousarray(a, dtype=np.float64)
            h.update(str(a.shape).encode())
            h.update(a.tobytes())
        self.key = (type(model).__name__, model.family, float(model.prior_var), float(model.log_y_factorial_sum),
                    h.hexdigest())

    def __hash__(self):
        return hash(self.key)

    def __eq__(self, other):
        return isinstance(other, _Data) and other.key == self.key


def _check_settings(model, optimizer, param, diagonal, estimator, batch_size):
    _check_name(optimizer)
    if param not in PARAMS:
        raise ValueError(f"The parameterization must be one of {', '.join(PARAMS)}; got {param!r}.")
    if optimizer == "vogn":
        param = "chol_prec"
    if optimizer == "pga" and param == "kappa":
        raise ValueError("ProxGenAdam needs a Cholesky factor: choose 'chol_cov' or 'chol_prec'.")
    if estimator == "auto":
        estimator = "exact" if model.tractable else "second"
    if estimator not in ESTIMATORS:
        raise ValueError(f"The gradient estimator must be one of {', '.join(ESTIMATORS)} or 'auto'; got {estimator!r}.")
    if estimator == "exact" and not model.tractable:
        raise ValueError(f"The ELBO of {model.name!r} has no closed form: use the 'first' or 'second' order estimator.")
    n = model.n
    B = n if batch_size is None else whole_number(batch_size, "The minibatch size", 1, integral_floats=True)
    if not 1 <= B <= n:
        raise ValueError(f"The minibatch size must be between 1 and n = {n}; got {batch_size}.")
    return param, bool(diagonal), estimator, B


def algorithm(model, optimizer: str = "snngm", *, param: str = "chol_cov", diagonal: bool = False,
              estimator: str = "auto", batch_size: int | None = None, **opt_kwargs) -> core.Algorithm:
    """One (optimizer, parameterization, gradient estimator) combination on a GLM as a
    :class:`vilab.core.Algorithm` (memoized: the same settings and data give the same object, so
    the runner reuses its compiled loop).

    One step (Tan (2025) Table 5 / Supp. S5): the optimizer's update from the gradient estimate at
    lambda_t, then the estimate at lambda_{t+1} (kept in the state with its ELBO, so ``observe``
    reads the ELBO of the current iterate and Table 2's rule |L_t - L_{t-1}| < tol |L_t| applies
    to it):

        lambda_{t+1} = lambda_t + tx.update(-ghat(lambda_t))  (or the natural / smooth / VOGN feed)

    * ``optimizer``: a key of :data:`OPTIMIZERS`; VOGN always uses "chol_prec", PGA a Cholesky factor.
    * ``estimator``: "exact" (autodiff of the tractable ELBO, Poisson), "first" / "second" (Tan
      Thm 2, :meth:`vilab.family.dense.GaussianFamily.thm2_gradient`); "auto" = exact when tractable.
    * ``batch_size``: minibatch size B (default n). Then ``batch`` (of ``init`` and of each step)
      is a vector of B row indices and the data term is scaled by n / B; step t's batch is the
      minibatch of the gradient at lambda_{t+1}. With the full batch, ``batch`` is None.

    ``init(key, start=None, alpha=None, batch=None)``: start is None (Tan Sec. 8: mu = 0,
    C = I / sqrt(n), T = sqrt(n) I, Sigma = I / n), a pair (mu0, factor0) or a flat lambda; alpha the
    step size (alpha0 for SNNGM; default per optimizer), kept in ``state.hyper["alpha"]``.
    Info per step: code, step_size (alpha), step_norm ||lambda_{t+1} - lambda_t||, elbo (at lambda_t).
    Observe: mean, cov (var for a diagonal family), objective = -elbo, elbo.
    """
    param, diagonal, estimator, B = _check_settings(model, optimizer, param, diagonal, estimator, batch_size)
    make_transform(optimizer, OPTIMIZERS[optimizer]["default_alpha"], Layout(model.d, param, diagonal).check(),
                   **opt_kwargs)  # validates the options
    return _algorithm(_Data(model), optimizer, param, diagonal, estimator, B, tuple(sorted(opt_kwargs.items())))


@memoize("vilab.algorithms.optim algorithms", maxsize=64)
def _algorithm(data: _Data, optimizer, param, diagonal, estimator, B, opt_items):
    model = data.model
    opt_kwargs = dict(opt_items)
    layout = Layout(model.d, param, diagonal).check()
    spec = OPTIMIZERS[optimizer]
    est = _make_estimator(model, layout, estimator, spec["feed"])
    d, n = layout.d, model.n
    full_batch = B == n
    X = jnp.asarray(model.X)
    y = jnp.asarray(model.y)
    scale = float(n) / float(B)
    sigma2_code = layout.param == "kappa" and d == 1

    def data_of(batch):
        return (X, y) if full_batch else (X[batch], y[batch])

    def estimate(lam, key, batch):
        Xb, yb = data_of(batch)
        return est(lam, Xb, yb, scale, key)

    estimate_jit = jax.jit(estimate)

    def init(key, start=None, alpha=None, batch=None):
        if start is None or isinstance(start, tuple) and len(start) == 2:
            mu0, f0 = (None, None) if start is None else start
            lam0 = jnp.asarray(initial_lambda(model, layout, mu0, f0))
        else:
            lam0 = jnp.asarray(start, dtype=jnp.float64)
            if lam0.shape != (layout.size,) or int(layout.validity(lam0)) != 0:
                raise ValueError(f"The starting lambda must be a valid vector of length {layout.size}.")
        a = _positive(spec["default_alpha"] if alpha is None else alpha, f"The step size alpha of {spec['label']}")
        if not full_batch:
            if batch is None:
                raise ValueError("A minibatch run needs the first minibatch (batch=) to start from.")
            batch = jnp.asarray(batch, dtype=jnp.int32)
        val, fv = estimate_jit(lam0, key, batch)
        tx = make_transform(optimizer, a, layout, **opt_kwargs)
        return OptimState(lam0, tx.init(lam0), val, fv, {"alpha": jnp.float64(a)})

    def step(key, state, batch):
        alpha = state.hyper["alpha"]
        tx = make_transform(optimizer, alpha, layout, **opt_kwargs)
        lam = state.lam
        upd, opt_state = tx.update(state.feed, state.opt_state, lam)
        new_lam = lam + upd
        code = layout.validity(new_lam)
        if sigma2_code:
            code = jnp.where(code == 3, NEGATIVE_SIGMA2, code)
        val, fv = estimate(new_lam, key, batch)
        info = {"code": code, "step_size": alpha, "step_norm": jnp.linalg.norm(upd), "elbo": state.elbo}
        return OptimState(new_lam, opt_state, val, fv, state.hyper), info

    def observe(state):
        lam = state.lam
        out = {"mean": lam[:d]}
        if diagonal:
            out["var"] = layout.variances(lam)
        else:
            out["cov"] = layout.covariance(lam)
        out["objective"] = -state.elbo
        out["elbo"] = state.elbo
        return out

    exact_rows = estimator == "exact" and full_batch
    return core.Algorithm(
        init, step, observe,
        name=f"{spec['label']} [{param}{', diagonal' if diagonal else ''}, {estimator}]",
        objective_name="negative ELBO" if exact_rows else "negative ELBO (estimate)",
        codes=CODES,
        settings=dict(optimizer=optimizer, param=param, diagonal=diagonal, estimator=estimator, batch_size=B,
                      layout=layout, **opt_kwargs),
    )


#: (algorithm, chunk, record_every, ...) whose chunk loop :func:`run` has compiled already.
_WARM = core.ProgramCache("vilab.algorithms.optim compiled chunk loops", maxsize=128)


# ======================================================================== driver
def initial_lambda(model, layout: Layout, mu0=None, factor0=None) -> np.ndarray:
    """The starting lambda; default Tan (2025) Sec. 8: mu = 0, C = I / sqrt(n) (T = sqrt(n) I, Sigma = I / n)."""
    d, n = layout.d, model.n
    mu = np.zeros(d) if mu0 is None else np.asarray(mu0, dtype=np.float64).reshape(-1)
    if mu.shape != (d,) or not np.all(np.isfinite(mu)):
        raise ValueError(f"The starting mean must be a finite vector of length {d}.")
    if factor0 is None:
        val = {"chol_cov": 1.0 / math.sqrt(n), "chol_prec": math.sqrt(n), "kappa": 1.0 / n}[layout.param]
        F = np.eye(d) * val
    else:
        F = np.asarray(factor0, dtype=np.float64)
        if F.ndim == 0:
            F = np.eye(d) * float(F)
        elif F.ndim == 1:
            F = np.diag(F)
        if F.shape != (d, d) or not np.all(np.isfinite(F)):
            raise ValueError(f"The starting factor must be a finite {d} x {d} matrix (or a vector of its diagonal).")
    if layout.param == "kappa":
        if not np.allclose(F, F.T) or np.linalg.eigvalsh(0.5 * (F + F.T))[0] <= 0:
            raise ValueError("The starting covariance must be symmetric positive definite.")
    else:
        if np.any(np.triu(F, 1) != 0) or np.any(np.diag(F) == 0):
            raise ValueError("The starting Cholesky factor must be lower triangular with a non-zero diagonal.")
    if layout.diagonal and np.any(F - np.diag(np.diag(F)) != 0):
        raise ValueError("A diagonal variational family needs a diagonal starting factor.")
    # layout.pack in numpy (vech: the lower triangle column by column)
    return np.concatenate([mu, np.diag(F) if layout.diagonal else F.T[np.triu_indices(d)]])


def minibatch_indices(rng, n: int, batch_size: int, n_rows: int) -> np.ndarray:
    """Minibatch row indices, (n_rows, batch_size) int32: epochs of n // batch_size minibatches drawn
    without replacement, one permutation of 0..n-1 per epoch (Tan (2025) Sec. 8).

    rng : a jax PRNG key (the numpy generator is seeded from it) or a numpy Generator.
    A run of T steps needs T + 1 rows: row 0 for the estimate at the start, row t for lambda_t.
    """
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(np.asarray(jax.random.key_data(rng)))
    n = checks.integer(n, "The number of data rows n", minimum=1)
    B = checks.integer(batch_size, "The minibatch size", minimum=1, maximum=n)
    n_rows = checks.integer(n_rows, "The number of index rows n_rows", minimum=0, maximum=10**8)
    nb = n // B
    out, have = [], 0
    while have < n_rows:
        out.append(rng.permutation(n)[: nb * B].reshape(nb, B))
        have += nb
    return np.concatenate(out)[:n_rows].astype(np.int32)


def _mc_elbo(model, layout: Layout, lam, key, n_draws: int):
    """Monte Carlo ELBO on the full data: mean and standard error of h(theta), theta ~ q."""
    fn = _mc_elbo_program(_Data(model), layout, int(n_draws))
    m, se = fn(jnp.asarray(lam), key)
    return float(m), float(se)


@memoize("vilab.algorithms.optim Monte Carlo ELBO", maxsize=32)
def _mc_elbo_program(data: _Data, layout: Layout, n_draws: int):
    model, d = data.model, layout.d

    def fn(lam, key):
        mu = lam[:d]
        Sigma = layout.covariance(lam)
        Lc = jnp.linalg.cholesky(Sigma)
        z = jax.random.normal(key, (n_draws, d), dtype=jnp.float64)
        th = mu + z @ Lc.T
        logq = -0.5 * d * math.log(2.0 * math.pi) - jnp.sum(jnp.log(jnp.diagonal(Lc))) - 0.5 * jnp.sum(z**2, 1)
        h = jax.vmap(lambda t: model.log_joint(t))(th) - logq
        return jnp.mean(h), jnp.std(h) / math.sqrt(n_draws)

    return jax.jit(fn)


def final_elbo(model, layout: Layout, lam, key=None, n_draws: int = 500) -> tuple[float, float]:
    """ELBO at lam: exact on the full data when tractable (standard error 0), else Monte Carlo
    with ``n_draws`` draws from ``key`` (a jax PRNG key)."""
    lam = jnp.asarray(lam)
    if model.tractable:
        return float(model.exact_elbo(lam[: layout.d], layout.variance_vector(lam))), 0.0
    n_draws = checks.integer(n_draws, "The number of ELBO draws n_draws (at least 2 for a standard error)", minimum=2)
    if key is None:
        raise ValueError("A Monte Carlo ELBO needs a random key (key=jax.random.PRNGKey(...)).")
    return _mc_elbo(model, layout, lam, key, n_draws)


def run(
    model,
    optimizer: str = "snngm",
    *,
    key,
    alpha: float | None = None,
    param: str = "chol_cov",
    diagonal: bool = False,
    estimator: str = "auto",
    n_iter: int | None = None,
    n_epochs: int | None = None,
    batch_size: int | None = None,
    batches=None,
    mu0=None,
    factor0=None,
    tol: float | None = None,
    record: str = "auto",
    chunk_iters: int = 500,
    progress: Callable[[float], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    n_elbo_draws: int = 500,
    max_seconds: float | None = None,
    **opt_kwargs,
) -> Trace:
    """Run one (parameterization, gradient estimator, optimizer) combination on a GLM model: a thin
    convenience over :func:`algorithm` and :func:`vilab.core.run` (host mode, in chunks).

    Parameters
    ----------
    model : :class:`vilab.targets.regression.GLMModel`.
    optimizer : a key of ``OPTIMIZERS`` ("adam", "adam-natural", "snngm", "nagm", "pga", "vogn").
    key : jax PRNG key (gradient draws, minibatches, the Monte Carlo final ELBO: independent
        streams split from it).
    alpha : step size (alpha0 for SNNGM, so alpha = alpha0 sqrt(l_lambda)); default per optimizer.
    param, diagonal, estimator, batch_size, **opt_kwargs : see :func:`algorithm`.
    n_iter / n_epochs : length of the run (one of them); an epoch is n // batch_size iterations.
    batches : minibatch indices (n_iter + 1, batch_size) to use instead of drawing them from
        ``key`` (see :func:`minibatch_indices`).
    mu0, factor0 : start (default Tan Sec. 8: mu = 0, C = I/sqrt(n), T = sqrt(n) I, Sigma = I/n).
    tol : stop ("converged") at the first t with |L_t - L_{t-1}| < tol |L_t| (Tan Table 2 rule;
        exact full-batch ELBO only); the count t includes that last step.
    record : rows of mean/cov/objective: "iteration", "epoch", or "auto" (iteration when
        l_lambda <= 200, else epoch). ``Trace.iterations`` gives the iteration of each row.
    chunk_iters : iterations per compiled chunk (rounded to whole epochs); between chunks
        progress(fraction) and should_stop() are called (a stopped run has status "stopped") and
        the time budget ``max_seconds`` is checked ("max_time").

    Returns
    -------
    The runner's Trace (rows: mean, cov or var, objective = -ELBO at the row's iterate, extra
    "elbo"; per step in ``info``: elbo at lambda_t, step_norm, step_size = alpha, code) with extra:
        elbo_epoch (average of info["elbo"] per epoch), final_elbo / final_elbo_se (exact when
        tractable, else Monte Carlo), wall_time (s, without compilation), time_per_iter,
        compile_time, iterations, epochs, iters_per_epoch, batch_size, lam (final), layout,
        optimizer, label, alpha, alpha_effective, estimator, failed_at (the iteration that broke).
    """
    key = core.check_key(key, "optim.run")
    param, diagonal, estimator, B = _check_settings(model, optimizer, param, diagonal, estimator, batch_size)
    spec = OPTIMIZERS[optimizer]
    layout = Layout(model.d, param, diagonal).check()
    alpha = _positive(spec["default_alpha"] if alpha is None else alpha, f"The step size alpha of {spec['label']}")
    make_transform(optimizer, alpha, layout, **opt_kwargs)  # validates the options
    n = model.n
    nb = n // B
    if (n_iter is None) == (n_epochs is None):
        raise ValueError("Give the length of the run as exactly one of n_iter or n_epochs.")
    if n_iter is not None:
        total = whole_number(n_iter, "n_iter", 1, True)
    else:
        total = whole_number(n_epochs, "n_epochs", 1, True) * nb
    if total < 1:
        raise ValueError("The run needs at least one iteration.")
    if tol is not None:
        tol = positive_number(tol, "The tolerance tol")
    if max_seconds is not None:
        max_seconds = positive_number(max_seconds, "The time budget max_seconds", allow_zero=True)
    chunk_iters = whole_number(chunk_iters, "chunk_iters", 1, True)
    n_elbo_draws = whole_number(n_elbo_draws, "n_elbo_draws", 1, True)
    full_batch = B == n
    if tol is not None and not (estimator == "exact" and full_batch):
        raise ValueError("The relative-change stopping rule needs the exact full-batch ELBO "
                         "(estimator 'exact', no minibatches).")
    if record not in ("auto", "iteration", "epoch"):
        raise ValueError("record must be 'auto', 'iteration' or 'epoch'.")
    every_iteration = layout.size <= 200 if record == "auto" else record == "iteration"
    record_every = 1 if every_iteration else nb

    k_init, k_run, k_batch, k_final = jax.random.split(key, 4)
    alg = algorithm(model, optimizer, param=param, diagonal=diagonal, estimator=estimator, batch_size=B,
                    **opt_kwargs)
    if full_batch:
        idx = None
    else:
        idx = minibatch_indices(k_batch, n, B, total + 1) if batches is None else np.asarray(batches, np.int32)
        if idx.shape != (total + 1, B):
            raise ValueError(f"The minibatch indices must have shape ({total + 1}, {B}); got {idx.shape}.")
    state = alg.init(k_init, (mu0, factor0), alpha=alpha, batch=None if idx is None else idx[0])
    steps_idx = None if idx is None else jnp.asarray(idx[1:])
    chunk = max(1, int(chunk_iters) // nb) * nb
    options = dict(record_every=record_every, rel_tol=tol, rel_tol_on="elbo", chunk_size=chunk)
    # compile the chunk loop first (one step), so that the timings below are of the iterations only
    timing = {"compile": 0.0}

    def warm_up():
        warm = core.run(alg, k_run, state, 1, batches=None if steps_idx is None else steps_idx[:1], **options)
        timing["compile"] = float(warm.timings["total"])
        return True

    _WARM.get_or_build((alg, chunk, record_every, full_batch, tol is not None), warm_up)
    compile_time = timing["compile"]
    tr = core.run(alg, k_run, state, total, batches=steps_idx, progress=progress, should_stop=should_stop,
                  max_time=max_seconds, **options)
    if progress is not None:
        progress(1.0)

    n_steps = tr.n_steps
    lam_final = np.asarray(tr.state.lam)
    fe, fse = final_elbo(model, layout, lam_final, k_final, n_elbo_draws)
    elbo_it = np.asarray(tr.info["elbo"])
    n_ep_done = n_steps // nb
    elbo_epoch = elbo_it[: n_ep_done * nb].reshape(n_ep_done, nb).mean(1) if n_ep_done else np.zeros(0)
    time_per_iter = float(tr.timings["total"]) / max(n_steps, 1)
    extra = dict(
        tr.extra,
        optimizer=optimizer,
        label=spec["label"],
        alpha=float(alpha),
        alpha_effective=snngm_alpha(alpha, layout.size) if optimizer == "snngm" else float(alpha),
        estimator=estimator,
        layout=layout,
        elbo_epoch=elbo_epoch,
        final_elbo=fe,
        final_elbo_se=fse,
        wall_time=time_per_iter * n_steps,
        time_per_iter=time_per_iter,
        compile_time=compile_time,
        iterations=int(n_steps),
        epochs=n_steps / nb,
        iters_per_epoch=nb,
        batch_size=B,
        lam=lam_final,
        failed_at=(n_steps + 1 if tr.diverged else None),
    )
    return dataclasses.replace(tr, extra=extra)


# ============================================================== Theorem 3 weights
def tau_weights(N: int, beta: float = 0.9) -> np.ndarray:
    """1 - beta^{N-j+1}, j = 1..N: the (unnormalised) law of the random index tau, Tan (2025) Thm 3, Fig. 4."""
    N = checks.integer(N, "The number of iterations N", minimum=1, maximum=10**8)
    beta = _beta(beta)
    j = np.arange(1, N + 1)
    return 1.0 - beta ** (N - j + 1.0)

