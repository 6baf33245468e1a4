"""Univariate non-Gaussian targets of Chen, Nott & Tan (2025), Sec. 3 and Supplement S1.

Each target comes in two forms:

* a :class:`vilab.targets.Target` with ``dim = 1`` (JAX log density; the stochastic algorithms
  and the expectation code use it), from :func:`student_t`, :func:`log_inverse_gamma`,
  :func:`skew_normal`;
* a :class:`Univariate` record of vectorised numpy callables (normalised log density, score,
  CDF) and the exact mode and variance, from :func:`student_t_spec`, ... , which the
  univariate optima and the accuracy 1 - IAE/2 of :mod:`vilab.divergences.univariate` need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np
from scipy import optimize, special, stats

from ..core.checks import real_scalar
from . import Target, check_positive

__all__ = [
    "Univariate",
    "student_t_spec",
    "log_inverse_gamma_spec",
    "skew_normal_spec",
    "student_t",
    "log_inverse_gamma",
    "skew_normal",
    "univariate_target",
]


@dataclass(frozen=True)
class Univariate:
    """A univariate density with everything the Sec. 3 comparisons need.

    logpdf, score, cdf : vectorised numpy functions of theta (normalised log density,
        d/dtheta log p, distribution function).
    mode, var : the target's mode m_* and variance sigma_*^2 (Sec. 3 criteria).
    name, params : labels.
    """

    name: str
    params: dict
    logpdf: Callable[[np.ndarray], np.ndarray]
    score: Callable[[np.ndarray], np.ndarray]
    cdf: Callable[[np.ndarray], np.ndarray]
    mode: float
    var: float
    jax_logpdf: Callable

    @property
    def sd(self) -> float:
        return float(np.sqrt(self.var))

    def target(self) -> Target:
        """The same density as a ``vilab.targets.Target`` (dim = 1)."""
        f = self.jax_logpdf
        return Target(self.name, 1, lambda th: f(th[0]), info={"params": dict(self.params), "mode": self.mode,
                                                            "var": self.var})


def student_t_spec(nu: float) -> Univariate:
    """Student t(nu), Chen, Nott & Tan Sec. 3.1: ``grad log p = -(nu+1) theta / (nu + theta^2)``.

    The variance nu/(nu-2) needs nu > 2 (the paper uses nu = 3, 5, 10).
    """
    nu = check_positive(nu, "The degrees of freedom nu")
    if nu <= 2:
        raise ValueError("The Student-t variance is finite only for nu > 2; choose nu above 2.")
    c = special.gammaln((nu + 1) / 2) - special.gammaln(nu / 2) - 0.5 * np.log(np.pi * nu)

    def jax_logpdf(th):
        return (jsp.gammaln((nu + 1) / 2) - jsp.gammaln(nu / 2) - 0.5 * jnp.log(jnp.pi * nu)
                - (nu + 1) / 2 * jnp.log1p(th**2 / nu))

    return Univariate(
        name=f"Student t({nu:g})",
        params={"nu": nu},
        logpdf=lambda th: c - (nu + 1) / 2 * np.log1p(np.asarray(th) ** 2 / nu),
        score=lambda th: -(nu + 1) * np.asarray(th) / (nu + np.asarray(th) ** 2),
        cdf=lambda th: stats.t.cdf(th, nu),
        mode=0.0,
        var=nu / (nu - 2),
        jax_logpdf=jax_logpdf,
    )


def log_inverse_gamma_spec(a1: float = 3.01, b1: float = 1.0) -> Univariate:
    """theta = log(x), x ~ IG(a1, b1): Chen, Nott & Tan Sec. 3.2 (normal sample model, Tan & Chen 2024).

    ``log p(theta) = a1 log b1 - log Gamma(a1) - a1 theta - b1 exp(-theta)``;
    score ``-a1 + b1 exp(-theta)``; mode log(b1/a1); variance trigamma(a1).
    The paper's data (n = 6, a0 = b0 = 0.01) give a1 = a0 + n/2 = 3.01; b1 only shifts theta.
    """
    a1 = check_positive(a1, "The shape a1")
    b1 = check_positive(b1, "The scale b1")
    c = a1 * np.log(b1) - special.gammaln(a1)

    def jax_logpdf(th):
        return a1 * jnp.log(b1) - jsp.gammaln(a1) - a1 * th - b1 * jnp.exp(-th)

    return Univariate(
        name=f"log inverse gamma({a1:g}, {b1:g})",
        params={"a1": a1, "b1": b1},
        logpdf=lambda th: c - a1 * np.asarray(th) - b1 * np.exp(-np.asarray(th)),
        score=lambda th: -a1 + b1 * np.exp(-np.asarray(th)),
        # P(theta <= x) = P(1/exp(theta) >= exp(-x)) and 1/exp(theta) ~ Gamma(a1, rate b1)
        cdf=lambda th: stats.gamma.sf(b1 * np.exp(-np.asarray(th)), a1),
        mode=float(np.log(b1 / a1)),
        var=float(special.polygamma(1, a1)),
        jax_logpdf=jax_logpdf,
    )


def skew_normal_spec(m: float = 0.0, t: float = 1.0, lam: float = 1.0) -> Univariate:
    """Skew normal SN(m, t, lambda), Chen, Nott & Tan Sec. 3.3: ``p = 2 phi(theta | m, t^2) Phi(lambda (theta - m))``.

    Note the paper's Phi argument is lambda (theta - m), not lambda (theta - m)/t: the standard
    shape is alpha = lambda t (so (t, lambda) = (1, 5) and (5, 1) agree up to scale).
    Score ``-(theta - m)/t^2 + lambda phi(.)/Phi(.)`` (the ratio from log Phi, stable in the tails);
    variance ``t^2 (1 - 2 delta^2 / pi)``, delta = alpha / sqrt(1 + alpha^2); mode by Brent's method.
    """
    t = check_positive(t, "The scale t")
    m, lam = real_scalar(m, "The skew-normal location m"), real_scalar(lam, "The skew-normal skewness lambda")
    alpha = lam * t

    def logpdf(th):
        x = np.asarray(th, float) - m
        return np.log(2.0) + stats.norm.logpdf(x, scale=t) + special.log_ndtr(lam * x)

    def score(th):
        x = np.asarray(th, float) - m
        u = lam * x
        return -x / t**2 + lam * np.exp(stats.norm.logpdf(u) - special.log_ndtr(u))

    def jax_logpdf(th):
        x = th - m
        return jnp.log(2.0) - 0.5 * jnp.log(2 * jnp.pi * t**2) - 0.5 * x**2 / t**2 + jsp.log_ndtr(lam * x)

    delta = alpha / np.sqrt(1 + alpha**2)
    mean = m + t * delta * np.sqrt(2 / np.pi)
    # the mode lies between m and the mean; the log density is concave
    lo, hi = (m, mean) if alpha >= 0 else (mean, m)
    if alpha == 0:
        mode = m
    else:
        mode = optimize.brentq(lambda x: float(score(x)), lo - 1e-9 * t, hi + 1e-9 * t, xtol=1e-14)
    return Univariate(
        name=f"skew normal(m={m:g}, t={t:g}, lambda={lam:g})",
        params={"m": m, "t": t, "lam": lam},
        logpdf=logpdf,
        score=score,
        cdf=lambda th: stats.skewnorm.cdf(th, alpha, loc=m, scale=t),
        mode=float(mode),
        var=float(t**2 * (1 - 2 * delta**2 / np.pi)),
        jax_logpdf=jax_logpdf,
    )


def student_t(nu: float) -> Target:
    """Student t(nu) as a 1-D Target (Chen, Nott & Tan Sec. 3.1)."""
    return student_t_spec(nu).target()


def log_inverse_gamma(a1: float = 3.01, b1: float = 1.0) -> Target:
    """Log-transformed inverse gamma as a 1-D Target (Chen, Nott & Tan Sec. 3.2)."""
    return log_inverse_gamma_spec(a1, b1).target()


def skew_normal(m: float = 0.0, t: float = 1.0, lam: float = 1.0) -> Target:
    """Skew normal SN(m, t, lambda) as a 1-D Target (Chen, Nott & Tan Sec. 3.3)."""
    return skew_normal_spec(m, t, lam).target()


def univariate_target(kind: str, **params) -> Univariate:
    """The spec of a Sec. 3 target by name: "student_t" (nu), "log_inverse_gamma" (a1, b1), "skew_normal" (m, t, lam)."""
    makers = {"student_t": student_t_spec, "log_inverse_gamma": log_inverse_gamma_spec,
              "skew_normal": skew_normal_spec}
    if not isinstance(kind, str) or kind not in makers:
        raise ValueError(f"Unknown univariate target {kind!r}; choose one of {', '.join(makers)}.")
    return makers[kind](**params)
