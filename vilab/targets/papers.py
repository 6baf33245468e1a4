"""Targets of Tan (2025) and Kumar et al. (2025), built on :class:`vilab.targets.Target`.

* :func:`horseshoe_crab_toy` - Tan (2025) Sec. 4.1: Poisson loglinear intercept-only model of the
  numbers of satellites of n = 173 female horseshoe crabs (Agresti, Table 3.2), prior N(0, 100).
  Only n, sum y = 505 and sum log y! = 530.034417 enter the likelihood.
* :func:`kumar_t2` - Kumar digest T2: 2-D Bayesian linear regression (6 points, noise 0.25, prior N(0, I)).
* :func:`kumar_t3` - Kumar digest T3: 2-D Bayesian logistic regression (n = 50, rng seed 0).
* :func:`bivariate_cauchy` - the positive-definiteness example of the Tan digest (Sec. 7).

The constructors are cached (the same Target object is returned on every call), so the jitted
loops of vilab.algorithms, which are cached per target, are compiled once per process.
"""

from __future__ import annotations

import math
from functools import lru_cache

import jax.numpy as jnp
import numpy as np

from . import GLM, Target, bayes_linreg, check_positive, logistic_regression

__all__ = ["horseshoe_crab_toy", "kumar_t2", "kumar_t3", "bivariate_cauchy", "CRAB_N", "CRAB_SUM_Y",
           "CRAB_SUM_LOG_Y_FACT"]

CRAB_N = 173
CRAB_SUM_Y = 505.0
CRAB_SUM_LOG_Y_FACT = 530.034417


def horseshoe_crab_toy(prior_var: float = 100.0) -> Target:
    """Tan (2025) Sec. 4.1: y_i ~ Poisson(exp(theta)), i = 1..173, theta ~ N(0, prior_var).

    log p(y, theta) = 505 theta - 173 e^theta - 530.034417 - theta^2 / (2 sigma0^2)
                      - 1/2 log(2 pi sigma0^2),
    so that the ELBO is the paper's (Supp. S2)
    L(mu, s2) = 505 mu - 173 exp(mu + s2/2) - 530.0344 - (mu^2 + s2)/200 + 1/2 log s2 + 1/2 (1 - log 100).
    ``info`` carries L and its gradient twice: as jax functions (``exact_elbo``, ``exact_elbo_grads``)
    and as Python-float functions (``scalar_elbo``, ``scalar_elbo_grads``) for
    :func:`vilab.theory.fields.euclidean_kappa_ieee`, which reproduces the paper's chaotic Euclidean runs.
    The data enter only through (n, sum y, sum log y!); the GLM form has one pseudo-observation
    whose log-likelihood is the whole sum, so E_q[log p] is exact by Gauss-Hermite quadrature.
    """
    return _horseshoe_crab_toy(check_positive(prior_var, "The prior variance"))


@lru_cache(maxsize=8)
def _horseshoe_crab_toy(s0: float) -> Target:
    const = -CRAB_SUM_LOG_Y_FACT - 0.5 * np.log(2.0 * np.pi * s0)

    def loglik(eta, y):
        return y * eta - CRAB_N * jnp.exp(eta) + const

    def log_density(theta):
        return loglik(theta[0], CRAB_SUM_Y) - 0.5 * theta[0] ** 2 / s0

    def exact_elbo(mu, Sigma):  # Tan (2025) Supp. S2, d = 1, in the paper's order of operations
        m, s2 = mu[0], Sigma[0, 0]
        return (CRAB_SUM_Y * m - CRAB_N * jnp.exp(m + s2 / 2) - CRAB_SUM_LOG_Y_FACT
                - (m**2 + s2) / (2 * s0) + 0.5 * jnp.log(s2) + 0.5 * (1 - np.log(s0)))

    def exact_elbo_grads(mu, Sigma):  # grad_mu L = 505 - 173 w - mu/s0, grad_s2 L = (1/s2 - 1/s0 - 173 w)/2
        m, s2 = mu[0], Sigma[0, 0]
        w = CRAB_N * jnp.exp(m + s2 / 2)
        return jnp.reshape(CRAB_SUM_Y - w - m / s0, (1,)), jnp.reshape(0.5 * (1 / s2 - 1 / s0 - w), (1, 1))

    def scalar_elbo(m: float, s2: float) -> float:  # the same, in IEEE scalar arithmetic (C library exp)
        e = m + s2 / 2
        w = CRAB_N * math.exp(e) if e < 709.0 else math.inf
        return (CRAB_SUM_Y * m - w - CRAB_SUM_LOG_Y_FACT - (m**2 + s2) / (2 * s0) + 0.5 * math.log(s2)
                + 0.5 * (1 - math.log(s0)))

    def scalar_elbo_grads(m: float, s2: float) -> tuple[float, float]:
        e = m + s2 / 2
        w = CRAB_N * math.exp(e) if e < 709.0 else math.inf
        return CRAB_SUM_Y - w - m / s0, 0.5 * (1 / s2 - 1 / s0 - w)

    glm = GLM(jnp.ones((1, 1)), jnp.array([CRAB_SUM_Y]), loglik, jnp.zeros(1), jnp.eye(1) / s0)
    return Target("horseshoe crabs, Poisson intercept (Tan 2025 Sec. 4.1)", 1, log_density, glm=glm,
                  info={"n": CRAB_N, "sum_y": CRAB_SUM_Y, "sum_log_y_factorial": CRAB_SUM_LOG_Y_FACT,
                        "prior_var": s0, "exact_elbo": exact_elbo, "exact_elbo_grads": exact_elbo_grads,
                        "scalar_elbo": scalar_elbo, "scalar_elbo_grads": scalar_elbo_grads,
                        "optimum": (1.070256, 0.0019802), "elbo_at_optimum": -499.4653})


KUMAR_T2_X = np.array([[1.0, 0.9], [0.8, 1.0], [1.2, 1.1], [-0.5, -0.6], [0.3, 0.2], [-1.0, -0.8]])
KUMAR_T2_Y = np.array([1.1, 0.3, 1.5, -0.4, 0.6, -1.3])


@lru_cache(maxsize=8)
def kumar_t2() -> Target:
    """Kumar digest T2: y ~ N(X theta, 0.25 I), theta ~ N(0, I); posterior precision
    A = X^T X / 0.25 + I = [[18.68, 16.72], [16.72, 17.24]] (eigenvalues 1.2245, 34.6955)."""
    t = bayes_linreg(KUMAR_T2_X, KUMAR_T2_Y, noise_var=0.25, prior_var=1.0,
                     name="2-D Bayesian linear regression (Kumar T2)")
    t.info.update({"source": "Kumar digest Sec. 4, T2", "m0": (-2.0, 2.5)})
    return t


@lru_cache(maxsize=8)
def kumar_t3() -> Target:
    """Kumar digest T3: X = N(0,1)^(50x2) @ [[1, 0], [0.8, 0.6]], w = (2, -1), y = +-1 with
    P(+1) = sigmoid(x^T w), numpy default_rng(0); prior N(0, I) (beta = 1)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2)) @ np.array([[1.0, 0.0], [0.8, 0.6]])
    w = np.array([2.0, -1.0])
    p = 1.0 / (1.0 + np.exp(-X @ w))
    y = np.where(rng.uniform(size=50) < p, 1.0, -1.0)
    t = logistic_regression(X, y, prior_var=1.0, name="2-D Bayesian logistic regression (Kumar T3)")
    t.info.update({"source": "Kumar digest Sec. 4, T3", "neg_elbo_at_optimum": 23.259848})
    return t


@lru_cache(maxsize=8)
def bivariate_cauchy() -> Target:
    """log p(theta) = -(nu + d)/2 log(1 + |theta|^2 / nu), nu = 1, d = 2 (Tan digest Sec. 7):
    hess log p(theta) = -((nu + d)/nu) [I/a - 2 theta theta^T / (nu a^2)], a = 1 + |theta|^2/nu,
    positive along theta when |theta|^2 > nu, e.g. diag(0.24, -0.30) at (3, 0)."""
    nu = 1.0

    def log_density(theta):
        return -0.5 * (nu + 2.0) * jnp.log1p(theta @ theta / nu)

    return Target("bivariate Cauchy", 2, log_density, bounds=((-6.0, 6.0), (-6.0, 6.0)), info={"df": nu})
