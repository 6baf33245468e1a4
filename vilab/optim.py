"""Stochastic optimizers of Tan (2025) Sec. 6 and Supp. S5, and a driver that runs them.

Sign convention (read this first)
---------------------------------
Every optimizer here is an ``optax.GradientTransformation`` in optax's own convention: it
receives the gradient of the *loss* ``-L`` (the negative ELBO; Euclidean, natural, or a
special input for VOGN) and returns ``updates`` that ``optax.apply_updates(params,
updates)`` adds to the parameters. Descent on ``-L`` is ascent on the ELBO ``L``, which is
how Tan writes every algorithm (Table 5: "lambda^(t+1) = lambda^(t) + alpha ...").

The parameters are one flat vector of free variational parameters (Tan Sec. 6: "l_lambda =
length of lambda"), laid out by a :class:`Layout`:

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

:func:`run` drives any (parameterization, gradient estimator, optimizer) combination on a
:class:`vilab.targets.regression.GLMModel` with minibatches and returns a
:class:`vilab.core.Trace`. :func:`comparison_specs` and :func:`table8` lay out a set of runs
like Tan's Table 8 (rows: optimizer with 1 = first- / 2 = second-order gradients; columns:
diagonal / full covariance; cells: final ELBO and time).
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from vilab.linalg import unvech, vech
from vilab.natgrad import natural_grad_chol_cov, natural_grad_chol_prec, natural_grad_mean_cov
from vilab.core.trace import Trace, diverged_status

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
    "make_transform",
    "PARAMS",
    "default_alpha",
    "snngm_alpha",
    "run",
    "final_elbo",
    "tau_weights",
    "comparison_specs",
    "comparison_summary",
    "run_label",
    "table8",
]

_LOG2PI = math.log(2.0 * math.pi)


# ============================================================== natural gradients
PARAMS = ("chol_cov", "chol_prec", "kappa")


class Layout(NamedTuple):
    """How a flat vector lambda stores (mu, factor); see the module docstring.

    ``param`` is "chol_cov" (factor C), "chol_prec" (factor T) or "kappa" (factor Sigma);
    ``diagonal`` keeps only the factor's diagonal (l_lambda = 2d, otherwise d + d(d+1)/2).
    """

    d: int
    param: str = "chol_cov"
    diagonal: bool = False

    @property
    def size(self) -> int:
        """l_lambda, the number of free variational parameters (Tan Table 5)."""
        return 2 * self.d if self.diagonal else self.d + self.d * (self.d + 1) // 2

    def check(self) -> "Layout":
        if self.param not in PARAMS:
            raise ValueError(f"The parameterization must be one of {', '.join(PARAMS)}; got {self.param!r}.")
        if int(self.d) < 1:
            raise ValueError(f"The dimension d must be at least 1; got {self.d}.")
        return self

    def unpack(self, lam):
        """(mu, factor); the factor is a (d,) vector of diagonal entries when ``diagonal``."""
        mu, rest = lam[: self.d], lam[self.d :]
        if self.diagonal:
            return mu, rest
        return mu, unvech(rest, symmetric=(self.param == "kappa"))

    def pack(self, mu, factor):
        """The flat vector of (mu, factor) (``factor`` a matrix or, when diagonal, a vector)."""
        mu = jnp.asarray(mu, dtype=jnp.float64)
        factor = jnp.asarray(factor, dtype=jnp.float64)
        if self.diagonal:
            f = jnp.diagonal(factor) if factor.ndim == 2 else factor
        else:
            f = vech(factor if factor.ndim == 2 else jnp.diag(factor))
        return jnp.concatenate([mu, f])

    def diag_index(self) -> np.ndarray:
        """Positions in lambda of the factor's diagonal entries (vech is column-major)."""
        d = self.d
        if self.diagonal:
            return d + np.arange(d)
        offsets = np.concatenate([[0], np.cumsum(np.arange(d, 0, -1))[:-1]])
        return d + offsets

    def covariance(self, lam):
        """Sigma as a (d, d) matrix."""
        mu, F = self.unpack(lam)
        if self.diagonal:
            var = {"chol_cov": F**2, "chol_prec": 1.0 / F**2, "kappa": F}[self.param]
            return jnp.diag(var)
        if self.param == "chol_cov":
            return F @ F.T
        if self.param == "kappa":
            return F
        Ti = jax.scipy.linalg.solve_triangular(F, jnp.eye(self.d), lower=True)
        return Ti.T @ Ti

    def variance_vector(self, lam):
        """diag(Sigma) for a diagonal layout, else the full matrix (for the tractable ELBO)."""
        if self.diagonal:
            F = lam[self.d :]
            return {"chol_cov": F**2, "chol_prec": 1.0 / F**2, "kappa": F}[self.param]
        return self.covariance(lam)

    def half_logdet(self, lam):
        """1/2 log|Sigma| (for the entropy of q)."""
        mu, F = self.unpack(lam)
        if self.param == "kappa":
            if self.diagonal:
                return 0.5 * jnp.sum(jnp.log(F))
            return 0.5 * jnp.linalg.slogdet(F)[1]
        dg = F if self.diagonal else jnp.diagonal(F)
        s = jnp.sum(jnp.log(jnp.abs(dg)))
        return s if self.param == "chol_cov" else -s

    def entropy(self, lam):
        """Entropy of q = N(mu, Sigma): d/2 (1 + log 2 pi) + 1/2 log|Sigma|."""
        return 0.5 * self.d * (1.0 + _LOG2PI) + self.half_logdet(lam)

    def from_matrices(self, g_mu, G):
        """Flat Euclidean gradient from grad_mu and the factor's gradient matrix G.

        Cholesky factors: (g_mu, vech(tril G)) (Tan Sec. 1, grad_{vech C} L = vech(G)).
        kappa: G = grad_Sigma L (symmetric) and grad_{vech Sigma} L = D^T vec(G)
        = vech(2 G - dg(G)) (Tan Sec. 1). Diagonal layouts take diag(G) (or G if a vector).
        """
        if self.diagonal:
            g = jnp.diagonal(G) if G.ndim == 2 else G
            return jnp.concatenate([g_mu, g])
        if self.param == "kappa":
            G = 2.0 * G - jnp.diag(jnp.diagonal(G))
        return jnp.concatenate([g_mu, vech(G)])

    def natural(self, lam, egrad):
        """Natural gradient F_lambda^{-1} egrad for a flat Euclidean gradient ``egrad``.

        chol_cov: Tan (2025) Thm 1(i); chol_prec: Thm 1(ii); kappa: Table 1 row kappa
        (Sigma g_mu, 2 vech(Sigma G Sigma)), G the symmetric grad_Sigma L. Diagonal factors:
        (c^2 g_mu, c^2 g_c / 2) and (g_mu / t^2, t^2 g_t / 2) (Sec. 5, "diagonal C"), kappa:
        (s g_mu, 2 s^2 g_s).
        """
        d = self.d
        mu, F = self.unpack(lam)
        g_mu, g_f = egrad[:d], egrad[d:]
        if self.diagonal:
            if self.param == "chol_cov":
                return jnp.concatenate([F**2 * g_mu, 0.5 * F**2 * g_f])
            if self.param == "chol_prec":
                return jnp.concatenate([g_mu / F**2, 0.5 * F**2 * g_f])
            return jnp.concatenate([F * g_mu, 2.0 * F**2 * g_f])
        G = unvech(g_f)
        if self.param == "kappa":
            Gs = 0.5 * (G + G.T)  # off-diagonal entries of D^T vec(G) are doubled
            n_mu, n_S = natural_grad_mean_cov(mu, F, g_mu, Gs)
            return jnp.concatenate([n_mu, vech(n_S)])
        fn = natural_grad_chol_cov if self.param == "chol_cov" else natural_grad_chol_prec
        n_mu, n_F = fn(mu, F, g_mu, G)
        return jnp.concatenate([n_mu, vech(n_F)])

    def validity(self, lam):
        """0 if lambda defines a Gaussian, 1 if non-finite, 2 if the covariance is not PD."""
        finite = jnp.all(jnp.isfinite(lam))
        mu, F = self.unpack(lam)
        if self.param == "kappa":
            if self.diagonal or self.d == 1:
                pd = jnp.all((F if self.diagonal else jnp.diagonal(F)) > 0)
            else:
                pd = jnp.all(jnp.isfinite(jnp.linalg.cholesky(F)))
        else:
            dg = F if self.diagonal else jnp.diagonal(F)
            pd = jnp.all(jnp.abs(dg) > 0)
        return jnp.where(finite, jnp.where(pd, 0, 2), 1)

    def failure_reason(self, code: int) -> str:
        if code == 1:
            return diverged_status("non-finite values")
        if self.param == "kappa":
            return diverged_status("negative sigma^2" if self.d == 1 else "covariance lost positive definiteness")
        return diverged_status("singular Cholesky factor (a zero on its diagonal)")


# ==================================================================== optimizers
class SNNGMState(NamedTuple):
    count: jax.Array
    m: jax.Array


def snngm_alpha(alpha0: float, n_params: int) -> float:
    """alpha = alpha0 sqrt(l_lambda) (Tan (2025) Table 5, SNNGM)."""
    return float(alpha0) * math.sqrt(int(n_params))


def _positive(x, name):
    if isinstance(x, jax.Array) and not isinstance(x, np.ndarray):
        return x  # a traced step size inside a compiled run (validated by ``run``)
    if not (isinstance(x, (int, float, np.floating, np.integer)) and math.isfinite(float(x)) and float(x) > 0):
        raise ValueError(f"{name} must be a positive number; got {x!r}.")
    return float(x)


def _beta(b, name="beta"):
    if not (0.0 <= float(b) < 1.0):
        raise ValueError(f"{name} must lie in [0, 1); got {b!r}.")
    return float(b)


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
    return optax.adam(_positive(alpha, "The Adam step size alpha"), b1=_beta(b1, "b1"), b2=_beta(b2, "b2"), eps=eps)


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
    if name not in OPTIMIZERS:
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
def _solve_lower(T, b):
    return jax.scipy.linalg.solve_triangular(T, b, lower=True)


def _solve_upper_T(T, b):
    """T^{-T} b for lower-triangular T."""
    return jax.scipy.linalg.solve_triangular(T.T, b, lower=False)


def _make_estimator(model, layout: Layout, estimator: str, feed: str):
    """A function (lam, Xb, yb, scale, key) -> (elbo_estimate, feed_value).

    ``feed`` says what the optimizer needs: "euclidean" or "natural" (gradient of -L),
    "smooth" (gradient of -E_q[log p]), "vogn" (a VOGNInput).
    Exact: autodiff of the tractable ELBO (Tan Supp. S2). First/second order: Tan (2025)
    Thm 2 single-sample estimators, theta = mu + C z or mu + T^{-T} z.
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

    second = estimator == "second"

    def est(lam, Xb, yb, scale, key):
        mu, F = layout.unpack(lam)
        z = jax.random.normal(key, (d,), dtype=lam.dtype)
        # theta and log q(theta)
        if layout.param == "chol_cov":
            theta = mu + (F * z if diag else F @ z)
        elif layout.param == "chol_prec":
            theta = mu + (z / F if diag else _solve_upper_T(F, z))
        else:
            Lc = jnp.sqrt(F) if diag else jnp.linalg.cholesky(F)
            theta = mu + (Lc * z if diag else Lc @ z)
        logq = -0.5 * d * _LOG2PI - layout.half_logdet(lam) - 0.5 * z @ z
        logp = model.log_joint(theta, Xb, yb, scale)
        h_val = logp - logq
        if feed == "vogn":
            g, _ = model.grad_hess(theta, Xb, yb, scale, diagonal=True)
            J = model.per_example_grads(theta, Xb, yb)
            gn = scale * ((J**2).sum(0) if diag else J.T @ J) + (1.0 if diag else jnp.eye(d)) / prior_var
            return h_val, VOGNInput(-g, gn)
        g, Hs = model.grad_hess(theta, Xb, yb, scale, diagonal=diag) if second else (
            model.grad_hess(theta, Xb, yb, scale, diagonal=True)[0], None)
        smooth = feed == "smooth"  # gradient of E_q[log p] only (PGA): drop the -log q parts
        if layout.param == "chol_cov":
            # grad_theta h = g + C^{-T} z; G1 = grad h z^T, F1 = hess h C (Thm 2)
            if diag:
                gh = g if smooth else g + z / F
                if second:
                    G = Hs * F + (0.0 if smooth else 1.0 / F)
                else:
                    G = gh * z
            else:
                Ctz = _solve_upper_T(F, z)
                gh = g if smooth else g + Ctz
                if second:
                    G = Hs @ F + (0.0 if smooth else _solve_upper_T(F, jnp.eye(d)))
                else:
                    G = jnp.outer(gh, z)
                G = jnp.tril(G)
            g_mu = gh
        elif layout.param == "chol_prec":
            # theta - mu = T^{-T} z, grad h = g + T z, v = T^{-1} grad h;
            # G2 = -(theta - mu) v^T, F2 = -Sigma hess h T^{-T} = -Sigma Hs T^{-T} - T^{-T}
            if diag:
                gh = g if smooth else g + F * z
                if second:
                    G = -Hs / F**3 - (0.0 if smooth else 1.0 / F)
                else:
                    G = -(z / F) * (gh / F)
            else:
                dth = _solve_upper_T(F, z)
                gh = g if smooth else g + F @ z
                if second:
                    Ti = _solve_lower(F, jnp.eye(d))  # T^{-1}
                    Sig = Ti.T @ Ti
                    G = -Sig @ Hs @ Ti.T - (0.0 if smooth else Ti.T)
                else:
                    G = -jnp.outer(dth, _solve_lower(F, gh))
                G = jnp.tril(G)
            g_mu = gh
        else:  # kappa: grad_Sigma L = E[hess h] / 2 = E[Sigma^{-1}(theta-mu) grad h^T] / 2 (Price / Stein)
            P = 1.0 / F if diag else jnp.linalg.inv(F)
            dth = theta - mu
            gh = g if smooth else g + (P * dth if diag else P @ dth)
            if second:
                G = 0.5 * (Hs + (0.0 if smooth else P))
            else:
                G = 0.5 * ((P * dth) * gh if diag else 0.5 * (jnp.outer(P @ dth, gh) + jnp.outer(gh, P @ dth)))
            g_mu = gh
        egrad = layout.from_matrices(g_mu, G)
        if feed == "natural":
            egrad = layout.natural(lam, egrad)
        return h_val, -egrad

    return est


# ======================================================================== driver
def _initial(model, layout: Layout, mu0, factor0):
    """Tan (2025) Sec. 8 default start: mu = 0, C = I / sqrt(n) (T = sqrt(n) I, Sigma = I / n)."""
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
    return np.asarray(layout.pack(mu, F))


def _epoch_runner(model, layout, estimator, optimizer, opt_kwargs, keep_lam: bool, full_batch: bool):
    """A jitted function running E epochs of nb iterations: nested lax.scan, one compile.

    The step size is an argument (traced), so changing it does not recompile.
    """
    est = _make_estimator(model, layout, estimator, OPTIMIZERS[optimizer]["feed"])
    d = layout.d

    def chunk(carry, keys, idx, scale, X, y, alpha):
        tx = make_transform(optimizer, alpha, layout, **opt_kwargs)

        def step(c, inp):
            lam, opt_state, code, fail_it, it = c
            key, ix = inp
            Xb, yb = (X, y) if full_batch else (X[ix], y[ix])
            val, feed_val = est(lam, Xb, yb, scale, key)
            upd, new_state = tx.update(feed_val, opt_state, lam)
            new_lam = lam + upd
            new_code = layout.validity(new_lam)
            ok = (code == 0) & (new_code == 0)
            lam_out = jnp.where(ok, new_lam, lam)
            state_out = jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b), new_state, opt_state)
            step_norm = jnp.where(ok, jnp.linalg.norm(upd), 0.0)
            fail_it = jnp.where((code == 0) & (new_code != 0), it + 1, fail_it)
            code = jnp.where(code == 0, new_code, code)
            out = (lam[:d], val, step_norm) + ((lam,) if keep_lam else ())
            return (lam_out, state_out, code, fail_it, it + 1), out

        def one_epoch(c, ki):
            c, out = jax.lax.scan(step, c, ki)
            return c, (out, c[0])

        return jax.lax.scan(one_epoch, carry, (keys, idx))

    return jax.jit(chunk)


def _cov_rows(layout: Layout, lams: np.ndarray) -> np.ndarray:
    """Sigma for each row of a (k, l_lambda) array of flat parameters (numpy)."""
    d = layout.d
    F = lams[:, d:]
    if layout.diagonal:
        var = {"chol_cov": F**2, "chol_prec": 1.0 / F**2, "kappa": F}[layout.param]
        return var[:, :, None] * np.eye(d)
    cols, rows = np.triu_indices(d)
    M = np.zeros((lams.shape[0], d, d))
    M[:, rows, cols] = F
    if layout.param == "kappa":
        return M + np.swapaxes(M, 1, 2) - M * np.eye(d)
    if layout.param == "chol_cov":
        return M @ np.swapaxes(M, 1, 2)
    Ti = np.linalg.inv(M)
    return np.swapaxes(Ti, 1, 2) @ Ti


def _mc_elbo(model, layout: Layout, lam, key, n_draws: int):
    """Monte Carlo ELBO on the full data: mean and standard error of h(theta), theta ~ q."""
    d = layout.d
    mu = lam[:d]
    Sigma = layout.covariance(lam)
    Lc = jnp.linalg.cholesky(Sigma)
    z = jax.random.normal(key, (n_draws, d), dtype=jnp.float64)
    th = mu + z @ Lc.T
    logq = -0.5 * d * _LOG2PI - jnp.sum(jnp.log(jnp.diagonal(Lc))) - 0.5 * jnp.sum(z**2, 1)
    logp = jax.vmap(lambda t: model.log_joint(t))(th)
    h = logp - logq
    return float(jnp.mean(h)), float(jnp.std(h) / math.sqrt(n_draws))


def final_elbo(model, layout: Layout, lam, seed: int = 0, n_draws: int = 500) -> tuple[float, float]:
    """ELBO at lam: exact on the full data when tractable (standard error 0), else Monte Carlo."""
    lam = jnp.asarray(lam)
    if model.tractable:
        return float(model.exact_elbo(lam[: layout.d], layout.variance_vector(lam))), 0.0
    return _mc_elbo(model, layout, lam, jax.random.PRNGKey(seed + 7919), n_draws)


_RUNNER_CACHE: dict = {}


def run(
    model,
    optimizer: str = "snngm",
    *,
    alpha: float | None = None,
    param: str = "chol_cov",
    diagonal: bool = False,
    estimator: str = "auto",
    n_iter: int | None = None,
    n_epochs: int | None = None,
    batch_size: int | None = None,
    mu0=None,
    factor0=None,
    seed: int = 0,
    tol: float | None = None,
    record: str = "auto",
    chunk_iters: int = 500,
    progress: Callable[[float], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    n_elbo_draws: int = 500,
    max_seconds: float | None = None,
    **opt_kwargs,
) -> Trace:
    """Run one (parameterization, gradient estimator, optimizer) combination on a GLM model.

    Parameters
    ----------
    model : :class:`vilab.targets.regression.GLMModel`.
    optimizer : a key of ``OPTIMIZERS`` ("adam", "adam-natural", "snngm", "nagm", "pga", "vogn").
    alpha : step size (alpha0 for SNNGM, so alpha = alpha0 sqrt(l_lambda)); default per optimizer.
    param : "chol_cov" (mu, C), "chol_prec" (mu, T) or "kappa" (mu, vech Sigma). VOGN always
        uses "chol_prec" (it updates the precision); PGA needs a Cholesky factor.
    diagonal : diagonal (mean-field) factor.
    estimator : "exact" (tractable ELBO: Poisson), "first" or "second" order (Tan Thm 2);
        "auto" = exact when tractable, else second.
    n_iter / n_epochs : length of the run (one of them); an epoch is n // batch_size iterations.
    batch_size : minibatch size (default: full batch). Minibatches are drawn without
        replacement within an epoch and the data term is scaled by n / |B|.
    mu0, factor0 : start (default Tan Sec. 8: mu = 0, C = I/sqrt(n), T = sqrt(n) I, Sigma = I/n).
    tol : stop at the first t with |L_t - L_{t-1}| < tol |L_t| (Tan Table 2 rule; exact
        full-batch ELBO only); the count t includes that last step.
    record : rows of mean/cov/objective: "iteration", "epoch", or "auto" (iteration when
        l_lambda <= 200, else epoch).
    progress(fraction), should_stop() : called between chunks (for a page's progress bar and
        stop button); a stopped run has status "stopped".
    max_seconds : wall-time budget; the run stops ("max_time") when it is exceeded.

    Returns
    -------
    Trace with objective = -ELBO estimate at each recorded row and extra:
        elbo (per-iteration estimate at lambda_t, t = 0..n-1, then the final value),
        elbo_epoch (average per epoch), mean_path (n+1, d), step_norm (n,),
        final_elbo / final_elbo_se (exact when tractable, else Monte Carlo),
        wall_time (s, without compilation), compile_time, iterations, epochs, lam (final),
        layout, failed_at (the iteration that broke, if any).
    """
    _check_name(optimizer)
    if param not in PARAMS:
        raise ValueError(f"The parameterization must be one of {', '.join(PARAMS)}; got {param!r}.")
    spec = OPTIMIZERS[optimizer]
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
    layout = Layout(model.d, param, bool(diagonal)).check()
    alpha = _positive(spec["default_alpha"] if alpha is None else alpha, f"The step size alpha of {spec['label']}")
    tx = make_transform(optimizer, alpha, layout, **opt_kwargs)  # validates the options

    n = model.n
    B = n if batch_size is None else int(batch_size)
    if not 1 <= B <= n:
        raise ValueError(f"The minibatch size must be between 1 and n = {n}; got {batch_size}.")
    nb = n // B
    if (n_iter is None) == (n_epochs is None):
        raise ValueError("Give the length of the run as exactly one of n_iter or n_epochs.")
    total = int(n_iter) if n_iter is not None else int(n_epochs) * nb
    if total < 1:
        raise ValueError("The run needs at least one iteration.")
    if tol is not None and not (estimator == "exact" and B == n):
        raise ValueError("The relative-change stopping rule needs the exact full-batch ELBO "
                         "(estimator 'exact', no minibatches).")
    keep_lam = layout.size <= 200 if record == "auto" else record == "iteration"
    if record not in ("auto", "iteration", "epoch"):
        raise ValueError("record must be 'auto', 'iteration' or 'epoch'.")

    lam0 = jnp.asarray(_initial(model, layout, mu0, factor0))
    full_batch = B == n
    if not keep_lam:  # rows at epoch ends: run whole epochs
        total = -(-total // nb) * nb
    E = max(1, min(int(chunk_iters) // nb, -(-total // nb)))  # epochs per compiled chunk
    cache_key = (model.family, model.prior_var, model.log_y_factorial_sum, model.X.shape, layout, estimator,
                 optimizer, tuple(sorted(opt_kwargs.items())), keep_lam, full_batch, B, E)
    alpha_arr = jnp.asarray(float(alpha))
    X = jnp.asarray(model.X)
    y = jnp.asarray(model.y)
    scale = float(n) / float(B)
    opt_state = tx.init(lam0)
    carry = (lam0, opt_state, jnp.asarray(0), jnp.asarray(-1), jnp.asarray(0))
    rng = np.random.default_rng(seed)
    key = jax.random.PRNGKey(seed)

    def batches(key_c):
        keys = jax.random.split(key_c, E * nb).reshape(E, nb, -1)
        if full_batch:
            idx = jnp.zeros((E, nb, 1), dtype=jnp.int32)
        else:
            idx = jnp.asarray(np.stack([rng.permutation(n)[: nb * B].reshape(nb, B) for _ in range(E)]),
                              dtype=jnp.int32)
        return keys, idx

    t_c = time.perf_counter()
    runner = _RUNNER_CACHE.get(cache_key)
    if runner is None:
        fn = _epoch_runner(model, layout, estimator, optimizer, opt_kwargs, keep_lam, full_batch)
        keys, idx = batches(jax.random.PRNGKey(0))
        runner = fn.lower(carry, keys, idx, scale, X, y, alpha_arr).compile()
        if len(_RUNNER_CACHE) > 64:
            _RUNNER_CACHE.clear()
        _RUNNER_CACHE[cache_key] = runner
    compile_time = time.perf_counter() - t_c

    means, elbos, norms, lams, lam_epoch = [], [], [], [], []
    done = 0
    status = "max_steps"
    stop_at = None
    code, fail_it = 0, -1
    t0 = time.perf_counter()
    while done < total:
        key, kc = jax.random.split(key)
        keys, idx = batches(kc)
        carry, (out, lam_ep) = runner(carry, keys, idx, scale, X, y, alpha_arr)
        means.append(np.asarray(out[0]).reshape(-1, layout.d))
        elbos.append(np.asarray(out[1]).reshape(-1))
        norms.append(np.asarray(out[2]).reshape(-1))
        lam_epoch.append(np.asarray(lam_ep))
        if keep_lam:
            lams.append(np.asarray(out[3]).reshape(-1, layout.size))
        done += E * nb
        code, fail_it = int(carry[2]), int(carry[3])
        if code != 0:
            status = layout.failure_reason(code)
            break
        if tol is not None:
            e_all = np.concatenate(elbos)
            hit = np.flatnonzero(np.abs(np.diff(e_all)) < tol * np.abs(e_all[1:]))
            if hit.size and hit[0] + 1 <= total:
                stop_at = int(hit[0]) + 1
                status = "converged"
                break
        if progress is not None:
            progress(min(1.0, done / total))
        if should_stop is not None and should_stop():
            status = "stopped"
            break
        if max_seconds is not None and time.perf_counter() - t0 > max_seconds:
            status = "max_time"
            break
    elapsed = time.perf_counter() - t0
    if progress is not None:
        progress(1.0)

    mean_it = np.concatenate(means)
    elbo_it = np.concatenate(elbos)
    norm_it = np.concatenate(norms)
    lam_ep_all = np.concatenate(lam_epoch)
    lam_it = np.concatenate(lams) if keep_lam else None
    if code != 0:
        n_steps = fail_it - 1  # the steps before the one that broke
    elif stop_at is not None:
        n_steps = stop_at
    else:
        n_steps = min(total, done)
    if code != 0:
        lam_final = np.asarray(carry[0])  # frozen at the last valid iterate
    elif keep_lam:
        lam_final = lam_it[n_steps] if n_steps < lam_it.shape[0] else np.asarray(carry[0])
    else:
        lam_final = lam_ep_all[n_steps // nb - 1]
    exact_rows = model.tractable and full_batch and estimator == "exact"
    fe, fse = final_elbo(model, layout, lam_final, seed, n_elbo_draws)
    elbo_path = np.concatenate([elbo_it[:n_steps], [fe if exact_rows else np.nan]])
    mean_path = np.concatenate([mean_it[:n_steps], lam_final[None, : layout.d]])
    n_ep_done = n_steps // nb
    elbo_epoch = elbo_it[: n_ep_done * nb].reshape(n_ep_done, nb).mean(1) if n_ep_done else np.zeros(0)
    if keep_lam:
        rows_lam = np.concatenate([lam_it[:n_steps], lam_final[None]])
        rows_it = np.arange(n_steps + 1)
        objective = -elbo_path
        step_sizes = norm_it[:n_steps]
    else:
        rows_lam = np.concatenate([np.asarray(lam0)[None], lam_ep_all[:n_ep_done]])
        rows_it = np.arange(n_ep_done + 1) * nb
        objective = -np.concatenate([[elbo_it[0]], elbo_epoch])
        if n_steps > n_ep_done * nb:  # a failure inside an epoch
            rows_lam = np.concatenate([rows_lam, lam_final[None]])
            rows_it = np.append(rows_it, n_steps)
            objective = np.append(objective, np.nan)
        step_sizes = np.array([norm_it[a:b].sum() for a, b in zip(rows_it[:-1], rows_it[1:])])
    time_per_iter = elapsed / max(done, 1)
    label = spec["label"]
    return Trace(
        mean=rows_lam[:, : layout.d],
        cov=_cov_rows(layout, rows_lam),
        objective=np.asarray(objective, dtype=float),
        step_sizes=np.asarray(step_sizes, dtype=float),
        status=status,
        method=f"{label} [{param}{', diagonal' if diagonal else ''}, {estimator}]",
        objective_name="negative ELBO" if exact_rows else "negative ELBO (estimate)",
        extra=dict(
            optimizer=optimizer,
            label=label,
            alpha=float(alpha),
            alpha_effective=snngm_alpha(alpha, layout.size) if optimizer == "snngm" else float(alpha),
            estimator=estimator,
            layout=layout,
            elbo=elbo_path,
            elbo_epoch=elbo_epoch,
            mean_path=mean_path,
            step_norm=norm_it[:n_steps],
            final_elbo=fe,
            final_elbo_se=fse,
            wall_time=time_per_iter * n_steps,
            time_per_iter=time_per_iter,
            compile_time=compile_time,
            iterations=int(n_steps),
            epochs=n_steps / nb,
            iters_per_epoch=nb,
            batch_size=B,
            row_iteration=rows_it,
            lam=lam_final,
            failed_at=(fail_it if code != 0 else None),
        ),
    )


# ============================================================ Table-8 comparisons
ORDER_SUFFIX = {"first": "1", "second": "2", "exact": "", None: ""}
_TABLE8_ORDER = ("adam", "pga", "adam-natural", "snngm", "nagm")


def comparison_specs(optimizers, estimators=("first", "second"), covariances=("diagonal", "full")):
    """The runs of a comparison in the layout of Tan (2025) Table 8.

    Returns a list of (optimizer, estimator, diagonal): for each covariance, every optimizer with
    every gradient estimator in Tan's row order (Adam, PGA, NAdam, SNNGM, NAGM; first order,
    then second order), and VOGN once (its Gauss-Newton curvature does not use the first- or
    second-order estimate of Thm 2, so its estimator is None).
    """
    optimizers = [_check_name(o) for o in optimizers]
    for e in estimators:
        if e not in ESTIMATORS:
            raise ValueError(f"The gradient estimator must be one of {', '.join(ESTIMATORS)}; got {e!r}.")
    for c in covariances:
        if c not in ("diagonal", "full"):
            raise ValueError(f"The covariance must be 'diagonal' or 'full'; got {c!r}.")
    if not (optimizers and estimators and covariances):
        raise ValueError("Choose at least one optimizer, one gradient estimate and one covariance.")
    out = []
    for cov in covariances:
        diag = cov == "diagonal"
        for e in estimators:
            out += [(o, e, diag) for o in _TABLE8_ORDER if o in optimizers]
        if "vogn" in optimizers:
            out.append(("vogn", None, diag))
    return out


def comparison_summary(tr: Trace) -> dict:
    """The numbers of one run that a Table-8-style comparison shows (small, picklable)."""
    e = tr.extra
    return dict(final=float(e["final_elbo"]), se=float(e["final_elbo_se"]), time=float(e["wall_time"]),
                compile=float(e["compile_time"]), status=tr.status, iterations=int(e["iterations"]),
                epochs=float(e["epochs"]), elbo_epoch=np.asarray(e["elbo_epoch"]))


def run_label(optimizer: str, estimator: str | None) -> str:
    """Row label of Tan (2025) Table 8: the optimizer and 1 (first-order) or 2 (second-order)."""
    return OPTIMIZERS[_check_name(optimizer)]["label"] + (
        f" {ORDER_SUFFIX[estimator]}" if ORDER_SUFFIX.get(estimator) else "")


def table8(results: dict):
    """A pandas DataFrame in the layout of Tan (2025) Table 8.

    results : {(optimizer, estimator, diagonal): :func:`comparison_summary` dict}. Rows: the
    optimizer with its order (e.g. "SNNGM 2"); one column per covariance holding
    "final ELBO (time in s)" like the paper, "diverged" / "stopped" where a run did not finish.
    """
    import pandas as pd

    rows: dict[str, dict] = {}
    for (opt, est, diag), r in results.items():
        label = run_label(opt, est)
        if r["status"].startswith("diverged"):
            cell = "diverged"
        else:
            cell = f"{r['final']:.1f} ({r['time']:.2f})" + (" stopped" if r["status"] == "stopped" else "")
        rows.setdefault(label, {})["diagonal" if diag else "full"] = cell
    cols = [c for c in ("diagonal", "full") if any(c in v for v in rows.values())]
    df = pd.DataFrame.from_dict(rows, orient="index", columns=cols).fillna("")
    df.index.name = "optimizer"
    return df.reset_index()


# ============================================================== Theorem 3 weights
def tau_weights(N: int, beta: float = 0.9) -> np.ndarray:
    """1 - beta^{N-j+1}, j = 1..N: the (unnormalised) law of the random index tau, Tan (2025) Thm 3, Fig. 4."""
    N = int(N)
    if N < 1:
        raise ValueError(f"N must be a positive integer; got {N}.")
    beta = _beta(beta)
    j = np.arange(1, N + 1)
    return 1.0 - beta ** (N - j + 1.0)

