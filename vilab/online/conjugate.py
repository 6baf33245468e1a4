"""Conjugate exponential families: BONG's natural-gradient step is exact Bayes
(Jones, Chang & Murphy Prop. 4.1, App. C Eqs. 33-49).

Likelihood p(y | theta) ∝ exp(theta y - A(theta)) with conjugate prior
q(theta) ∝ exp(chi theta - nu A(theta)), psi = (chi, nu), T(theta) = (theta, -A(theta)),
Phi(psi) its log-normaliser, F = hess Phi. BONG (Eq. 3): psi_t = psi + F^{-1} grad_psi E_q[log p].
Because E_q[log p] = rho^T (y, 1) is linear in rho = grad Phi, the natural gradient is (y, 1)
and BONG gives (chi + y, nu + 1), the Bayes update (Eq. 38).

Three examples (digest Sec. 5 B-D):
* ``"bernoulli"``: logit theta, "logistic-Beta" prior (sigmoid(theta) ~ Beta(chi, nu - chi)),
  Phi = log B(chi, nu - chi), E[log p] = y (psi(chi) - psi(nu - chi)) - (psi(nu) - psi(nu - chi)).
* ``"poisson"``: log-rate theta, log-Gamma prior (e^theta ~ Gamma(chi, rate nu)),
  Phi = lgamma(chi) - chi log nu, E[log p] = y (psi(chi) - log nu) - chi / nu (+ const).
* ``"normal"``: y ~ N(theta, 1), A = theta^2/2, prior N(chi/nu, 1/nu),
  Phi = chi^2/(2 nu) - log(nu)/2, E[log p] = y chi/nu - (chi^2/nu + 1/nu)/2 (+ const).
F and grad_psi E[log p] come from jax autodiff of these closed forms.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..core.checks import integer, real_scalar
from jax.scipy.special import betaln, digamma, gammaln

__all__ = ["conjugate_demo", "CONJUGATE", "log_partition", "expected_loglik", "natural_gradient", "bong_step", "bayes_update", "log_density", "check_psi"]

CONJUGATE = ("bernoulli", "poisson", "normal")


def check_psi(kind: str, chi: float, nu: float) -> None:
    """ValueError unless (chi, nu) is a valid prior of the family."""
    if not isinstance(kind, str) or kind not in CONJUGATE:
        raise ValueError(f"Unknown conjugate family {kind!r}; use one of {', '.join(CONJUGATE)}.")
    chi, nu = real_scalar(chi, "The prior parameter chi"), real_scalar(nu, "The prior parameter nu")
    if kind == "bernoulli" and not (0 < chi < nu):
        raise ValueError("The logistic-Beta prior needs 0 < chi < nu (Beta(chi, nu - chi) parameters must be positive).")
    if kind == "poisson" and not (chi > 0 and nu > 0):
        raise ValueError("The log-Gamma prior needs chi > 0 (shape) and nu > 0 (rate).")
    if kind == "normal" and not nu > 0:
        raise ValueError("The normal prior needs nu > 0 (its precision).")


def log_partition(kind: str, psi):
    """Phi(psi) of the conjugate prior (Eq. 7)."""
    chi, nu = psi[0], psi[1]
    if kind == "bernoulli":
        return betaln(chi, nu - chi)
    if kind == "poisson":
        return gammaln(chi) - chi * jnp.log(nu)
    return chi**2 / (2 * nu) - 0.5 * jnp.log(nu)


def expected_loglik(kind: str, psi, y):
    """E_{q_psi}[log p(y | theta)] in closed form (up to a y-only constant)."""
    chi, nu = psi[0], psi[1]
    if kind == "bernoulli":
        return y * (digamma(chi) - digamma(nu - chi)) - (digamma(nu) - digamma(nu - chi))
    if kind == "poisson":
        return y * (digamma(chi) - jnp.log(nu)) - chi / nu
    return y * chi / nu - 0.5 * (chi**2 / nu**2 + 1.0 / nu)


def natural_gradient(kind: str, psi, y):
    """(F, grad_psi E[log p], F^{-1} grad_psi E[log p]) at psi (Eq. 3); the last equals (y, 1)."""
    psi = jnp.asarray(psi, jnp.float64)
    F = jax.hessian(lambda p: log_partition(kind, p))(psi)
    gr = jax.grad(lambda p: expected_loglik(kind, p, y))(psi)
    return F, gr, jnp.linalg.solve(F, gr)


def bong_step(kind: str, psi, y):
    """psi + F^{-1} grad_psi E[log p] (BONG, Eq. 3)."""
    return jnp.asarray(psi, jnp.float64) + natural_gradient(kind, psi, y)[2]


def bayes_update(psi, y):
    """(chi + y, nu + 1): the exact conjugate update (Eq. 38)."""
    return np.array([psi[0] + y, psi[1] + 1.0])


def log_density(kind: str, psi, theta):
    """log q_psi(theta) = chi theta - nu A(theta) - Phi(psi) on a grid of theta (for plots)."""
    theta = jnp.asarray(theta, jnp.float64)
    chi, nu = psi[0], psi[1]
    A = {"bernoulli": jnp.logaddexp(0.0, theta), "poisson": jnp.exp(theta), "normal": 0.5 * theta**2}[kind]
    return chi * theta - nu * A - log_partition(kind, jnp.asarray(psi, jnp.float64))


def conjugate_demo(kind: str, chi: float, nu: float, y: float, n_grid: int = 400):
    """Prior, BONG posterior and Bayes posterior of one observation, for the page.

    Returns dict(F, grad, natgrad, psi_bong, psi_bayes, theta, densities={label: values}).
    """
    check_psi(kind, chi, nu)
    chi, nu, y = float(chi), float(nu), real_scalar(y, "The observation y")
    n_grid = integer(n_grid, "The grid size n_grid", minimum=2, maximum=100_000)
    if kind == "bernoulli" and y not in (0, 1):
        raise ValueError("A Bernoulli observation is 0 or 1.")
    if kind == "poisson" and (y < 0 or y != int(y)):
        raise ValueError("A Poisson observation is a count 0, 1, 2, ...")
    psi = np.array([chi, nu], float)
    F, gr, ng = natural_gradient(kind, psi, float(y))
    pb = np.asarray(psi + ng)
    pe = bayes_update(psi, float(y))
    # plotting window: prior mean +- 5 sd of theta (by the moments grad Phi gives)
    m = float(jax.grad(lambda p: log_partition(kind, p))(jnp.asarray(psi))[0])
    sd = float(np.sqrt(F[0, 0]))
    theta = np.linspace(m - 5 * sd, m + 5 * sd, n_grid)
    dens = {
        "prior": np.exp(np.asarray(log_density(kind, psi, theta))),
        "BONG step": np.exp(np.asarray(log_density(kind, pb, theta))),
        "Bayes posterior": np.exp(np.asarray(log_density(kind, pe, theta))),
    }
    return {"F": np.asarray(F), "grad": np.asarray(gr), "natgrad": np.asarray(ng), "psi_bong": pb, "psi_bayes": pe,
            "theta": theta, "densities": dens}
