"""Deep-net GLMs with a normal-gamma shrinkage prior, fitted by Tan's (2025) optimizers (Sec. 8.4, Supp. S8).

Model (Tan (2025) Sec. 8.4, after Tran et al. 2020). A feed-forward network with two hidden layers of
m = 20 ReLU units and one linear output unit eta_i = f(x_i, theta) (x_i in R^p); the response is
normal, y_i ~ N(eta_i, v) (identity link), or Bernoulli, y_i ~ Bernoulli(1 / (1 + exp(-eta_i))) (logit
link). theta (dimension d = p m + m + m^2 + m + m + 1; 2461 for p = 100) holds every weight and bias:

    theta = (w_{x_1}, ..., w_{x_p}, w, biases),

w_{x_j} in R^m the first-layer weights leaving input x_j, w (d_w = m^2 + m) the other weights. Priors:

    w_{x_j} | tau_j ~ N(0, tau_j I_m),  tau_j | gamma_j ~ Gamma((m + 1)/2, rate gamma_j^2 / 2),   j = 1..p,
    w ~ N(0, I_{d_w} / gamma_w),   flat prior on the biases,   v ~ IG(a0, b0) (normal response only).

The paper does not state a0, b0: we use a0 = b0 = 1 (:data:`A0`, :data:`B0`).

Mean field (Supp. S8): q(Theta) = q_lambda(theta) q(v) prod_j q(tau_j), q_lambda = N(mu, diag(sigma^2)),
with the closed-form optimal factors

    q(v) = IG(a, b),  a = a0 + n/2,  b = b0 + sum_i E_q (y_i - eta_i)^2 / 2;       E(1/v) = a/b
    q(1/tau_j) = inverse Gaussian(mean alpha_j, shape beta_j),
        alpha_j = gamma_j / sqrt(mu_xj' mu_xj + sigma_xj' sigma_xj),  beta_j = gamma_j^2;
        E(1/tau_j) = alpha_j,  E(tau_j) = 1/alpha_j + 1/beta_j,

and the empirical-Bayes shrinkage parameters that maximise the ELBO (Supp. S8, "we have")

    gamma_w = d_w / (mu_w' mu_w + sigma_w' sigma_w),   gamma_j = sqrt((m + 1) / (1/alpha_j + 1/beta_j)).

ELBO: :func:`elbo` is Supp. S8's expression (normal: S8.1; Bernoulli: S8.2). It holds for ANY
(a, b, alpha_j, beta_j, gamma), not only at the optimal factors (we checked it: the constant terms
come out the same; tests/test_deepglm.py compares it with a Monte Carlo average of
log p(y, Theta) - log q(Theta) from scipy's densities). Its only intractable term, sum_i E(y_i - eta_i)^2
(normal) or sum_i E{y_i eta_i - log(1 + e^eta_i)} (Bernoulli), is estimated on a minibatch B with one
draw theta = mu + sigma z: n/|B| sum_{i in B} (y_i - eta_i(theta))^2 (Supp. S8.1), unbiased.

One iteration (:func:`algorithm`), on a minibatch, with one draw theta = mu + sigma z:

1. the closed-form updates, in this order: q(v) from the minibatch estimate of sum E(y - eta)^2,
   q(tau_j) from the current (mu, sigma) and gamma_j, then gamma_j from q(tau_j) and gamma_w from (mu, sigma)
   (the paper gives the updates, not their order; this is ours);
2. the ELBO estimate at the current lambda with these factors (recorded: "average lower bound");
3. one step of an optimizer of :mod:`vilab.algorithms.optim` on lambda = (mu, c), sigma = |c| (VOGN: (mu, t),
   sigma = 1/|t|), fed exactly as :func:`vilab.cnn.train.vi_estimator` feeds it for a diagonal Gaussian
   over network weights (Tan (2025) Thm 2, first order, one draw; Table 5 / Supp. S5), with the log
   joint of theta given the other factors

       log p~(theta) = n/|B| sum_B l_i(theta) - gamma_w w'w / 2 - sum_j alpha_j w_xj' w_xj / 2,
       l_i = -(a/b)(y_i - eta_i)^2 / 2 (normal),  y_i eta_i - log(1 + e^eta_i) (Bernoulli),

   and, for VOGN, the diagonal Gauss-Newton n/|B| sum_B (grad l_i)^2 + the prior precisions
   (alpha_j for w_xj, gamma_w for w, 0 for the biases).

The step size alpha (alpha0 for SNNGM) is a run-time setting (``state.hyper["alpha"]``).
Start: mu from a LeCun-normal initialiser (biases 0), sigma = 1/sqrt(n) (Tan Sec. 8: C = I/sqrt(n);
VOGN T = sqrt(n) I), gamma_j = 1 (ours: only the first q(tau) update reads it).

:func:`fit` runs epochs of minibatches drawn without replacement through :func:`vilab.core.run` and
returns a :class:`vilab.core.Trace` with one row per epoch: the epoch's average ELBO estimate (Tan
Fig. 9 row 1), the cumulative wall time and the gamma_j (Fig. 9 row 2).

Data: :func:`simulate` draws the two simulated sets of Sec. 8.4 (Tran et al. 2020 Sec. 6.1.2/6.1.3).
The paper's census-income and protein sets are UCI downloads and are not included.

The network is float32 (like :mod:`vilab.cnn`); q(v), q(tau) and gamma are float64.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import digamma, gammaln

from .. import core
from ..core.checks import integer, positive
from ..core.cache import memoize

__all__ = ["A0", "B0", "HIDDEN", "METHODS", "RESPONSES", "DATASETS", "PAPER_SETTING", "REDUCED_SETTING",
           "DeepGLM", "DeepGLMData", "DeepGLMState", "simulate", "simulate_binary", "simulate_real",
           "q_v_update", "q_tau_update", "gamma_update", "gamma_w_update", "inv_gauss_moments", "elbo",
           "data_term", "algorithm", "init_state", "fit", "default_alpha", "method_label", "per_epoch"]

A0, B0 = 1.0, 1.0  # IG(a0, b0) prior of the normal dispersion v: not stated in the paper, our choice
HIDDEN = 20  # m, units per hidden layer (Tan Sec. 8.4)
RESPONSES = ("normal", "bernoulli")
#: Table 10's column order; keys of vilab.algorithms.optim.OPTIMIZERS
METHODS = ("adam", "pga", "adam-natural", "snngm", "nagm", "vogn")
_LABELS = {"adam": "Adam", "pga": "PGA", "adam-natural": "NAdam", "snngm": "SNNGM", "nagm": "NAGM", "vogn": "VOGN"}
#: Step sizes: Adam, NAdam, PGA alpha = 1e-3 (Tan Table 5 defaults); SNNGM alpha0, NAGM, VOGN are tuned in the
#: paper and not reported. Ours, from a few reduced runs (n = 10,000, p = 100, batch 500, 50-200 epochs, seed 0,
#: both simulated sets): SNNGM alpha0 = 1e-3; NAGM 1e-2 (0.03 climbs faster on the binary set but its covariance
#: exploded after ~190 epochs on the real one; 0.1 diverged); VOGN 0.03 (1e-3 and 1e-2 crawl).
_DEFAULT_ALPHA = {"adam": 1e-3, "pga": 1e-3, "adam-natural": 1e-3, "snngm": 1e-3, "nagm": 1e-2, "vogn": 3e-2}

#: data sets of Sec. 8.4 offered here: name -> (response, number of relevant inputs, description)
DATASETS = {
    "binary": ("bernoulli", 5, "y = 1{5 - 2(x1 + 2 x2)^2 + 4 x3 x4 + 3 x5 >= 0}, x_j ~ U(-1, 1)"),
    "real": ("normal", 10, "y = 5 + 10 x1 + 10/(x2^2 + 1) + 5 x3 x4 + 2 x4 + 5 x4^2 + 5 x5 + 2 x6 + 10/(x7^2 + 1) "
                           "+ 5 x8 x9 + 5 x9^2 + 5 x10 + eps, x ~ N(0, [0.5^|i-j|])"),
}
#: Tan (2025) Sec. 8.4: n = 1e5, p = 100, minibatch 5000 (VOGN 50), 1000 epochs (binary) / 2000 (real)
PAPER_SETTING = dict(n=100_000, p=100, batch_size=5000, epochs={"binary": 1000, "real": 2000}, vogn_batch=50)
#: what vilab runs (CPU minutes): n = 10,000, p = 100, minibatch 500 for every method, a few tens of epochs
REDUCED_SETTING = dict(n=10_000, p=100, batch_size=500, epochs=30)


def method_label(method: str) -> str:
    """The name Table 10 prints for a method."""
    _check_method(method)
    return _LABELS[method]


def default_alpha(method: str) -> float:
    """The default step size (alpha0 for SNNGM) of a method on a deep GLM."""
    _check_method(method)
    return _DEFAULT_ALPHA[method]


def _check_method(method):
    if method not in METHODS:
        raise ValueError(f"Unknown method {method!r}; choose one of {', '.join(METHODS)}.")
    return method


# =========================================================================================== model
@dataclass(frozen=True)
class DeepGLM:
    """The network and prior structure of a deep GLM (module docstring).

    p : number of inputs; response : "normal" or "bernoulli"; m : units per hidden layer (20 in the paper).
    theta is laid out as (W1 row by row: w_{x_1}, ..., w_{x_p} (p m), W2 (m^2), w3 (m), b1 (m), b2 (m), b3 (1)).
    """

    p: int
    response: str = "bernoulli"
    m: int = HIDDEN

    def __post_init__(self):
        integer(self.p, "The number of inputs p", minimum=1, maximum=100_000)
        integer(self.m, "The number of hidden units m", minimum=1, maximum=1000)
        if self.response not in RESPONSES:
            raise ValueError(f"The response must be one of {', '.join(RESPONSES)}; got {self.response!r}.")

    @property
    def d_x(self) -> int:
        """Number of first-layer weights, p m."""
        return self.p * self.m

    @property
    def d_w(self) -> int:
        """Number of other weights (W2 and w3), m^2 + m."""
        return self.m * self.m + self.m

    @property
    def d(self) -> int:
        """Dimension of theta: every weight and bias."""
        return self.d_x + self.d_w + 2 * self.m + 1

    def split(self, theta):
        """(W1 (p, m), W2 (m, m), w3 (m,), b1 (m,), b2 (m,), b3 ()) from a flat theta."""
        p, m = self.p, self.m
        i = 0
        W1 = theta[i:i + p * m].reshape(p, m); i += p * m  # noqa: E702
        W2 = theta[i:i + m * m].reshape(m, m); i += m * m  # noqa: E702
        w3 = theta[i:i + m]; i += m  # noqa: E702
        b1 = theta[i:i + m]; i += m  # noqa: E702
        b2 = theta[i:i + m]; i += m  # noqa: E702
        return W1, W2, w3, b1, b2, theta[i]

    def eta(self, theta, X):
        """The network's output eta_i = f(x_i, theta) for each row of X (ReLU after both hidden layers)."""
        W1, W2, w3, b1, b2, b3 = self.split(theta)
        h = jax.nn.relu(X @ W1 + b1)
        h = jax.nn.relu(h @ W2 + b2)
        return h @ w3 + b3

    def first_layer_sq(self, v):
        """For a vector v over theta: sum over each input's first-layer weights of v^2, a (p,) vector
        (v = mu or sigma gives mu_xj' mu_xj or sigma_xj' sigma_xj)."""
        return jnp.sum(v[: self.d_x].reshape(self.p, self.m) ** 2, axis=1)

    def other_sq(self, v):
        """sum of v^2 over the other weights w (W2, w3)."""
        return jnp.sum(v[self.d_x:self.d_x + self.d_w] ** 2)

    def prior_precision(self, alpha_tau, gamma_w, dtype=jnp.float32):
        """E_q of the prior precision of every entry of theta: alpha_j (= E 1/tau_j) for w_xj, gamma_w for
        w, 0 for the biases (flat prior). A (d,) vector."""
        return jnp.concatenate([jnp.repeat(jnp.asarray(alpha_tau, dtype), self.m),
                                jnp.full((self.d_w,), gamma_w, dtype), jnp.zeros((2 * self.m + 1,), dtype)])

    def init_mu(self, key, dtype=jnp.float32):
        """LeCun-normal weights (s.d. 1/sqrt(fan in)), zero biases."""
        k1, k2, k3 = jax.random.split(key, 3)
        p, m = self.p, self.m
        W1 = jax.random.normal(k1, (p * m,), dtype) / math.sqrt(p)
        W2 = jax.random.normal(k2, (m * m,), dtype) / math.sqrt(m)
        w3 = jax.random.normal(k3, (m,), dtype) / math.sqrt(m)
        return jnp.concatenate([W1, W2, w3, jnp.zeros((2 * m + 1,), dtype)])


class DeepGLMData(NamedTuple):
    """A data set for a deep GLM: X (n, p) float32, y (n,) float32, the response family, its name, how
    many leading inputs the response depends on (``relevant``; the rest are noise), a description."""

    X: np.ndarray
    y: np.ndarray
    response: str
    name: str
    relevant: int
    description: str = ""

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def p(self) -> int:
        return int(self.X.shape[1])


def simulate_binary(key, n: int = 10_000, p: int = 100) -> DeepGLMData:
    """Tan (2025) Sec. 8.4's binary set: x_j ~ U(-1, 1), y = 1{5 - 2(x1 + 2 x2)^2 + 4 x3 x4 + 3 x5 >= 0}."""
    core.check_key(key, "simulate_binary")
    n = integer(n, "The number of observations n", minimum=10, maximum=10**6)
    p = integer(p, "The number of inputs p", minimum=5, maximum=10_000)
    X = np.asarray(jax.random.uniform(key, (n, p), jnp.float64, -1.0, 1.0))
    s = 5 - 2 * (X[:, 0] + 2 * X[:, 1]) ** 2 + 4 * X[:, 2] * X[:, 3] + 3 * X[:, 4]
    return DeepGLMData(X.astype(np.float32), (s >= 0).astype(np.float32), "bernoulli", "binary", 5,
                       DATASETS["binary"][2])


def simulate_real(key, n: int = 10_000, p: int = 100) -> DeepGLMData:
    """Tan (2025) Sec. 8.4's real-valued set: x ~ N(0, [0.5^|i-j|]) (drawn as the AR(1) chain
    x_1 = e_1, x_j = 0.5 x_{j-1} + sqrt(0.75) e_j, which has exactly that covariance), eps ~ N(0, 1),
    y = 5 + 10 x1 + 10/(x2^2 + 1) + 5 x3 x4 + 2 x4 + 5 x4^2 + 5 x5 + 2 x6 + 10/(x7^2 + 1) + 5 x8 x9 + 5 x9^2
    + 5 x10 + eps."""
    core.check_key(key, "simulate_real")
    n = integer(n, "The number of observations n", minimum=10, maximum=10**6)
    p = integer(p, "The number of inputs p", minimum=10, maximum=10_000)
    k1, k2 = jax.random.split(key)
    E = np.asarray(jax.random.normal(k1, (n, p), jnp.float64))
    X = np.empty_like(E)
    X[:, 0] = E[:, 0]
    for j in range(1, p):
        X[:, j] = 0.5 * X[:, j - 1] + math.sqrt(0.75) * E[:, j]
    x = [None] + [X[:, j] for j in range(10)]  # x[1] .. x[10], the paper's 1-based names
    eps = np.asarray(jax.random.normal(k2, (n,), jnp.float64))
    y = (5 + 10 * x[1] + 10 / (x[2] ** 2 + 1) + 5 * x[3] * x[4] + 2 * x[4] + 5 * x[4] ** 2 + 5 * x[5] + 2 * x[6]
         + 10 / (x[7] ** 2 + 1) + 5 * x[8] * x[9] + 5 * x[9] ** 2 + 5 * x[10] + eps)
    return DeepGLMData(X.astype(np.float32), y.astype(np.float32), "normal", "real", 10, DATASETS["real"][2])


def simulate(name: str, key, n: int = 10_000, p: int = 100) -> DeepGLMData:
    """One of :data:`DATASETS` ("binary" or "real"), drawn from ``key``."""
    if name == "binary":
        return simulate_binary(key, n, p)
    if name == "real":
        return simulate_real(key, n, p)
    raise ValueError(f"Unknown data set {name!r}; choose one of {', '.join(DATASETS)}.")


# ============================================================== closed-form factors (Supp. S8)
def q_v_update(S, n, a0: float = A0, b0: float = B0):
    """q(v) = IG(a, b): a = a0 + n/2, b = b0 + S/2, S = sum_i E(y_i - eta_i)^2 (Supp. S8.1)."""
    return a0 + 0.5 * n, b0 + 0.5 * S


def q_tau_update(A, gamma):
    """q(1/tau_j) = inverse Gaussian(alpha_j, beta_j): alpha_j = gamma_j / sqrt(A_j), beta_j = gamma_j^2,
    A_j = mu_xj' mu_xj + sigma_xj' sigma_xj (Supp. S8.1)."""
    A, gamma = jnp.asarray(A), jnp.asarray(gamma)
    return gamma / jnp.sqrt(A), gamma**2


def inv_gauss_moments(alpha, beta):
    """(E(1/tau), E(tau)) when 1/tau ~ inverse Gaussian(mean alpha, shape beta): (alpha, 1/alpha + 1/beta)."""
    alpha, beta = jnp.asarray(alpha), jnp.asarray(beta)
    return alpha, 1.0 / alpha + 1.0 / beta


def gamma_update(alpha_tau, beta_tau, m: int = HIDDEN):
    """gamma_j = sqrt((m + 1) / (1/alpha_j + 1/beta_j)), the root of dL/dgamma_j (Supp. S8.1)."""
    return jnp.sqrt((m + 1) / inv_gauss_moments(alpha_tau, beta_tau)[1])


def gamma_w_update(W2sum, d_w: int):
    """gamma_w = d_w / (mu_w' mu_w + sigma_w' sigma_w), the root of dL/dgamma_w (Supp. S8.1)."""
    return d_w / W2sum


def data_term(model: DeepGLM, theta, X, y, scale=1.0):
    """scale * sum_i (y_i - eta_i)^2 (normal) or scale * sum_i {y_i eta_i - log(1 + e^eta_i)} (Bernoulli),
    eta = f(X, theta): the one term of the ELBO that is estimated (Supp. S8), with scale = n/|B|."""
    eta = model.eta(theta, X)
    if model.response == "normal":
        return scale * jnp.sum((y - eta) ** 2)
    return scale * jnp.sum(y * eta - jax.nn.softplus(eta))


def elbo(model: DeepGLM, mu, sigma, D, n, *, a=None, b=None, alpha_tau, beta_tau, gamma, gamma_w,
         a0: float = A0, b0: float = B0):
    """Tan (2025) Supp. S8's evidence lower bound (S8.1 normal, S8.2 Bernoulli).

    mu, sigma : (d,) mean and s.d. of q_lambda(theta); D : sum_i E(y_i - eta_i)^2 (normal) or
    sum_i E{y_i eta_i - log(1 + e^eta_i)} (Bernoulli), exact or its minibatch estimate; n : number of
    observations; (a, b) : q(v) = IG(a, b) (normal only; default the optimal a = a0 + n/2, b = b0 + D/2);
    (alpha_tau, beta_tau) : (p,) q(1/tau_j) = IG(mean alpha_j, shape beta_j); gamma (p,), gamma_w : the
    shrinkage parameters. Valid for any of these values (module docstring), in float64.
    """
    f64 = jnp.float64
    mu, sigma = jnp.asarray(mu, f64), jnp.asarray(sigma, f64)
    alpha_tau, beta_tau, gamma = (jnp.asarray(v, f64) for v in (alpha_tau, beta_tau, gamma))
    gamma_w, D = jnp.asarray(gamma_w, f64), jnp.asarray(D, f64)
    p, m, d, d_w = model.p, model.m, model.d, model.d_w
    LOG2PI = math.log(2 * math.pi)
    A = model.first_layer_sq(mu) + model.first_layer_sq(sigma)
    Aw = model.other_sq(mu) + model.other_sq(sigma)
    const = (d + p * (1 - m) - d_w) / 2 * LOG2PI + (p + d) / 2 - p * gammaln((m + 1) / 2) - p * (m + 1) / 2 * math.log(2)
    val = const + jnp.sum(jnp.log(sigma)) + d_w / 2 * jnp.log(gamma_w) - gamma_w * Aw / 2
    val = val + jnp.sum((m + 1) * jnp.log(gamma) - 0.5 * jnp.log(beta_tau) - alpha_tau * A / 2
                        - gamma**2 / 2 * (1 / alpha_tau + 1 / beta_tau))
    if model.response == "bernoulli":
        return val + D
    a_opt, b_opt = q_v_update(D, n, a0, b0)
    a = a_opt if a is None else jnp.asarray(a, f64)
    b = b_opt if b is None else jnp.asarray(b, f64)
    val = val - n / 2 * LOG2PI + a0 * math.log(b0) - gammaln(a0)
    val = val + (a - a0 - n / 2) * (jnp.log(b) - digamma(a)) - a / (2 * b) * D
    return val - a * jnp.log(b) + gammaln(a) + a * (1 - b0 / b)


# ======================================================================== the algorithm
class DeepGLMState(NamedTuple):
    """State of :func:`algorithm`.

    lam : (2d,) float32, lambda = (mu, c), sigma = |c| (VOGN: (mu, t), sigma = 1/|t|).
    opt : the optax state. aux : float64 dict of the other factors: "b" (q(v) = IG(a0 + n/2, b); normal),
    "alpha_tau", "beta_tau" (p,) (q(1/tau_j)), "gamma" (p,), "gamma_w".
    elbo : the ELBO estimate of the last step (NaN before the first). hyper : {"alpha": step size}.
    """

    lam: jax.Array
    opt: Any
    aux: dict
    elbo: jax.Array
    hyper: dict


def _layout(method, d):
    from vilab.algorithms import optim

    return optim.Layout(d, "chol_prec" if method == "vogn" else "chol_cov", True)


def init_state(model: DeepGLM, method: str, n: int, key, alpha: float | None = None, gamma0: float = 1.0):
    """The starting state (module docstring): lambda from the initialiser (``key``), sigma = 1/sqrt(n),
    gamma_j = gamma0, gamma_w = 1, b = b0 (replaced at the first step)."""
    return algorithm(model, method, n).init(key, alpha=alpha, gamma0=gamma0)


@memoize("vilab.models.deepglm algorithms", maxsize=32)
def algorithm(model: DeepGLM, method: str, n: int, a0: float = A0, b0: float = B0) -> core.Algorithm:
    """One deep-GLM method as a :class:`vilab.core.Algorithm` (module docstring, steps 1-3).

    * ``init(key, start=None, alpha=None, gamma0=1.0) -> DeepGLMState``;
    * ``step(key, state, batch)``: batch = (X (B, p), y (B,)[, key]); the draw comes from the batch's key
      when it has one. Code 2: non-finite ELBO, parameters or factors; code 5: an entry of the factor
      reached zero;
    * ``observe(state)``: mean mu, variances sigma^2, objective = minus the last ELBO estimate, "gamma".
    """
    from vilab.algorithms import optim

    _check_method(method)
    if not isinstance(model, DeepGLM):
        raise ValueError("algorithm() needs a DeepGLM model.")
    n = integer(n, "The number of observations n", minimum=1)
    a0, b0 = positive(a0, "a0"), positive(b0, "b0")
    d, m = model.d, model.m
    layout = _layout(method, d)
    feed = optim.OPTIMIZERS[method]["feed"]
    vogn = method == "vogn"
    a_q = a0 + n / 2.0
    normal = model.response == "normal"

    def sigma_of(lam):
        f = lam[d:]
        return 1.0 / jnp.abs(f) if vogn else jnp.abs(f)

    def init(key, start=None, alpha=None, gamma0=1.0):
        core.check_key(key, "init")
        a = positive(default_alpha(method) if alpha is None else alpha, "The step size alpha")
        g0 = positive(gamma0, "The starting shrinkage parameter gamma0")
        if start is None:
            f = math.sqrt(n) if vogn else 1.0 / math.sqrt(n)
            lam = jnp.concatenate([model.init_mu(key), jnp.full((d,), f, jnp.float32)])
        else:
            lam = jnp.asarray(start, jnp.float32)
            if lam.shape != (2 * d,):
                raise ValueError(f"A starting lambda must have 2d = {2 * d} entries; got shape {lam.shape}.")
        opt = optim.make_transform(method, a, layout).init(lam)
        f64 = jnp.float64
        aux = {"b": jnp.asarray(b0, f64), "alpha_tau": jnp.ones((model.p,), f64), "beta_tau": jnp.full((model.p,), g0**2, f64),
               "gamma": jnp.full((model.p,), g0, f64), "gamma_w": jnp.asarray(1.0, f64)}
        return DeepGLMState(lam, opt, aux, jnp.asarray(jnp.nan, f64), {"alpha": jnp.asarray(a, f64)})

    def step(key, state, batch):
        Xb, yb = batch[0], batch[1]
        k = batch[2] if len(batch) > 2 else key
        lam = state.lam
        mu, f = lam[:d], lam[d:]
        sig = sigma_of(lam)
        z = jax.random.normal(k, (d,), lam.dtype)
        theta = mu + sig * z
        scale = n / Xb.shape[0]
        D, gD = jax.value_and_grad(data_term, argnums=1)(model, theta, Xb, yb, scale)
        # 1. closed-form factors given q_lambda (and the minibatch estimate of sum E(y - eta)^2)
        aux0 = state.aux
        f64 = jnp.float64
        mu64, sig64 = mu.astype(f64), sig.astype(f64)
        A = model.first_layer_sq(mu64) + model.first_layer_sq(sig64)
        alpha_tau, beta_tau = q_tau_update(A, aux0["gamma"])
        gamma = gamma_update(alpha_tau, beta_tau, m)
        gamma_w = gamma_w_update(model.other_sq(mu64) + model.other_sq(sig64), model.d_w)
        b = q_v_update(D.astype(f64), n, a0, b0)[1] if normal else aux0["b"]
        aux = {"b": b, "alpha_tau": alpha_tau, "beta_tau": beta_tau, "gamma": gamma, "gamma_w": gamma_w}
        # 2. the ELBO estimate at lambda with these factors
        L = elbo(model, mu64, sig64, D, n, a=a_q if normal else None, b=b if normal else None, alpha_tau=alpha_tau,
                 beta_tau=beta_tau, gamma=gamma, gamma_w=gamma_w, a0=a0, b0=b0)
        # 3. the gradient of log p~(theta) given the factors, fed as vilab.cnn.train.vi_estimator feeds it
        c_data = (-0.5 * a_q / b).astype(lam.dtype) if normal else jnp.asarray(1.0, lam.dtype)
        prec = model.prior_precision(alpha_tau, gamma_w, lam.dtype)
        g = c_data * gD - prec * theta
        if feed == "vogn":
            per_ex = jax.vmap(jax.grad(lambda th, x, y: data_term(model, th, x[None], y[None])), (None, 0, 0))(theta, Xb, yb)
            gn = scale * jnp.sum((c_data * per_ex) ** 2, axis=0) + prec
            fv = optim.VOGNInput(-g, gn)
        else:
            if feed == "smooth":  # PGA: gradient of E_q[log p] only; the entropy is left to the prox
                egrad = jnp.concatenate([g, g * z])
            else:
                gh = g + z / f  # grad_theta h = g + C^{-T} z (Tan Thm 2)
                egrad = jnp.concatenate([gh, gh * z])
            if feed == "natural":
                egrad = layout.natural(lam, egrad)
            fv = -egrad
        tx = optim.make_transform(method, optim.weak_scalar(state.hyper["alpha"]), layout)
        upd, opt = tx.update(fv, state.opt, lam)
        new = (lam + upd).astype(lam.dtype)
        opt = jax.tree_util.tree_map(lambda x, y: jnp.asarray(x).astype(jnp.asarray(y).dtype), opt, state.opt)
        valid = layout.validity(new)
        ok = jnp.isfinite(L) & core.finite_tree(aux)
        code = jnp.where(ok, valid, core.NONFINITE).astype(jnp.int32)
        return (DeepGLMState(new, opt, aux, L, state.hyper),
                {"code": code, "step_size": state.hyper["alpha"], "elbo": L})

    def observe(state):
        return {"mean": state.lam[:d], "var": sigma_of(state.lam) ** 2, "objective": -state.elbo,
                "gamma": state.aux["gamma"]}

    return core.Algorithm(init, step, observe, name=method,
                          objective_name="negative ELBO estimate (one draw, last minibatch)",
                          settings={"method": method, "label": method_label(method), "p": model.p, "m": m,
                                    "d": d, "response": model.response, "n_train": n, "a0": a0, "b0": b0})


# ========================================================================= training loop
def fit(data: DeepGLMData, method: str = "snngm", *, key, alpha: float | None = None, epochs: int = 30,
        batch_size: int = 500, max_time: float | None = None, progress: Callable[[float], None] | None = None,
        should_stop: Callable[[], bool] | None = None, m: int = HIDDEN) -> core.Trace:
    """Fit a deep GLM to ``data`` with ``method`` (one of :data:`METHODS`): :func:`algorithm` driven by
    :func:`vilab.core.run`, one run of n // batch_size steps per epoch (minibatches drawn without
    replacement; the last n mod batch_size observations of each shuffled epoch are left out).

    key : jax PRNG key (split into the start, the minibatch order and the draws). alpha : step size
    (alpha0 for SNNGM; default :func:`default_alpha`). max_time : a wall-time budget in seconds, checked
    after every epoch (status "max_time"). progress(fraction) after every epoch; should_stop() -> True ends
    the run ("stopped").

    Returns a :class:`vilab.core.Trace` with one row per epoch (row 0 = the start): ``mean`` mu, ``var``
    sigma^2, ``objective`` minus the epoch's average ELBO estimate, also in ``extra["elbo"]`` (NaN at row 0,
    Tan Fig. 9 row 1), ``extra["seconds"]`` cumulative wall time at each row (the first epoch, which
    compiles, included), ``extra["gamma"]`` (rows, p) the shrinkage parameters (Fig. 9 row 2),
    ``info["elbo"]`` every step's estimate, ``settings`` and ``state`` (the final :class:`DeepGLMState`).
    A diverging step ends the run with status "diverged: <reason>" and the epochs before it.
    """
    _check_method(method)
    core.check_key(key, "fit")
    if not isinstance(data, DeepGLMData):
        raise ValueError("fit() needs a DeepGLMData (vilab.models.deepglm.simulate makes one).")
    n = data.n
    epochs = integer(epochs, "The number of epochs", minimum=1, maximum=100_000)
    B = integer(batch_size, "The batch size", minimum=1, maximum=n)
    if max_time is not None:
        max_time = positive(max_time, "The time budget (seconds)")
    alpha = positive(default_alpha(method) if alpha is None else alpha, "The step size alpha")
    X = np.asarray(data.X, np.float32)
    y = np.asarray(data.y, np.float32)
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("The data contain missing or infinite values.")
    if data.response == "bernoulli" and not np.all((y == 0) | (y == 1)):
        raise ValueError("A binary response must be 0 or 1.")
    model = DeepGLM(data.p, data.response, m)
    alg = algorithm(model, method, n)
    k_init, k_run = jax.random.split(key)
    state = alg.init(k_init, alpha=alpha)
    nb = n // B
    Xd, yd = jnp.asarray(X), jnp.asarray(y)
    trace, elbo_ep, secs = None, [], []
    status, note = "max_steps", ""
    t0 = time.perf_counter()
    run_key = k_run
    for e in range(epochs):
        k_run, k_perm, k_draw = jax.random.split(k_run, 3)
        perm = jax.random.permutation(k_perm, n)[: nb * B].reshape(nb, B)
        batches = (Xd[perm], yd[perm], jax.random.split(k_draw, nb))
        part = core.run(alg, run_key, state, nb, batches=batches, record_every=nb, start_iteration=e * nb)
        trace = part if trace is None else trace.extend(part)
        state, run_key = part.state, jnp.asarray(part.key)
        if part.diverged:
            status, note = part.status, f"in epoch {e + 1}"
            break
        elbo_ep.append(float(np.mean(part.info["elbo"])))
        secs.append(time.perf_counter() - t0)
        if progress is not None:
            progress((e + 1) / epochs)
        if e + 1 < epochs and should_stop is not None and should_stop():
            status = "stopped"
            break
        if e + 1 < epochs and max_time is not None and time.perf_counter() - t0 > max_time:
            status = "max_time"
            break
    its = trace.iterations
    ends = [i for i, it in enumerate(its) if it > 0 and it % nb == 0][: len(elbo_ep)]
    el = np.full(trace.n_rows, np.nan)
    sec = np.full(trace.n_rows, np.nan)
    sec[0] = 0.0
    el[ends], sec[ends] = elbo_ep[: len(ends)], secs[: len(ends)]
    settings = dict(alg.settings, dataset=data.name, relevant=data.relevant, alpha=alpha, epochs=epochs, batch_size=B,
                    iters_per_epoch=nb, n_steps=epochs * nb, record_every=nb,
                    estimator="Tan (2025) Thm 2 first order, one draw; Supp. S8 closed-form q(v), q(tau), gamma",
                    start="mu: LeCun init, biases 0; sigma = 1/sqrt(n); gamma_j = 1")
    extra = dict(trace.extra, elbo=el, seconds=sec)
    return replace(trace, objective=-el, extra=extra, settings=settings, status=status, note=note,
                   objective_name="negative average ELBO estimate of the epoch", method=method,
                   timings={"total": time.perf_counter() - t0})


def per_epoch(trace: core.Trace) -> dict:
    """The per-epoch view of a :func:`fit` Trace: "epoch" (1, 2, ...), "elbo" (average ELBO estimate of
    each finished epoch), "seconds" (cumulative wall time at its end), "gamma" (epochs, p) and "final_gamma"
    (p,) (at the last finished epoch; the start's when none finished)."""
    el = np.asarray(trace.extra["elbo"], float)
    rows = [i for i in range(1, len(el)) if np.isfinite(el[i])]
    g = np.asarray(trace.extra["gamma"], float)
    return {"epoch": np.arange(1, len(rows) + 1), "elbo": el[rows], "seconds": np.asarray(trace.extra["seconds"])[rows],
            "gamma": g[rows], "final_gamma": g[rows[-1]] if rows else g[0]}
