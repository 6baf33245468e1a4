"""Basic targets: Gaussians, banana, bivariate Student-t, Bayesian linear and logistic regression."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..gaussian import check_mean_cov
from . import GLM, Target


def _bounds_from(mean, cov, k: float = 3.5):
    s = np.sqrt(np.diag(cov))
    return tuple((float(m - k * si), float(m + k * si)) for m, si in zip(mean, s))


def gaussian_target(mean, precision=None, cov=None, name: str | None = None) -> Target:
    """N(mean, precision^-1) (give exactly one of ``precision`` and ``cov``).

    log p(theta) = -1/2 (theta - m)^T Lambda (theta - m) (normalising constant dropped).
    """
    if (precision is None) == (cov is None):
        raise ValueError("Give the Gaussian target either a precision matrix or a covariance matrix (exactly one).")
    if precision is not None:
        m, P = check_mean_cov(mean, precision, name="Lambda", matrix_kind="precision")
        S = np.linalg.inv(P)
    else:
        m, S = check_mean_cov(mean, cov)
        P = np.linalg.inv(S)
    S = 0.5 * (S + S.T)
    Pj, mj = jnp.asarray(P), jnp.asarray(m)

    def log_density(theta):
        r = theta - mj
        return -0.5 * r @ (Pj @ r)

    d = len(m)
    return Target(
        name or f"Gaussian (d={d})", d, log_density, mean=m, cov=S, quadratic=True,
        bounds=_bounds_from(m, S) if d == 2 else None,
        info={"precision": P},
    )


def gaussian_2d(rho: float, sd1: float = 1.0, sd2: float = 1.0, mean=(0.0, 0.0)) -> Target:
    """Bivariate Gaussian with correlation rho and marginal standard deviations sd1, sd2."""
    rho, sd1, sd2 = float(rho), float(sd1), float(sd2)
    if not -1.0 < rho < 1.0:
        raise ValueError(f"The correlation rho must lie strictly between -1 and 1; got {rho}.")
    if sd1 <= 0 or sd2 <= 0:
        raise ValueError(f"Standard deviations must be positive; got sd1={sd1}, sd2={sd2}.")
    cov = np.array([[sd1**2, rho * sd1 * sd2], [rho * sd1 * sd2, sd2**2]])
    return gaussian_target(mean, cov=cov, name=f"Gaussian (rho={rho:g}, sd=({sd1:g}, {sd2:g}))")


def banana(b: float = 0.5, sd1: float = 2.0) -> Target:
    """Twisted Gaussian: theta1 ~ N(0, sd1^2), theta2 | theta1 ~ N(b (theta1^2 - sd1^2), 1).

    Exact moments: mean (0, 0), covariance diag(sd1^2, 1 + 2 b^2 sd1^4).
    """
    b, sd1 = float(b), float(sd1)
    if sd1 <= 0:
        raise ValueError(f"sd1 must be positive; got {sd1}.")

    def log_density(theta):
        t1, t2 = theta[0], theta[1]
        return -0.5 * t1**2 / sd1**2 - 0.5 * (t2 - b * (t1**2 - sd1**2)) ** 2

    cov = np.diag([sd1**2, 1.0 + 2.0 * b**2 * sd1**4])
    x = 3.0 * sd1
    ends = (b * (0.0 - sd1**2), b * (x**2 - sd1**2))  # range of the ridge b (t1^2 - sd1^2), |t1| <= x
    y0, y1 = min(ends) - 3.0, max(ends) + 3.0
    return Target(f"banana (b={b:g})", 2, log_density, mean=np.zeros(2), cov=cov,
                  bounds=((-x, x), (float(y0), float(y1))), info={"b": b, "sd1": sd1})


def student_t_2d(df: float, rho: float = 0.0, scale=(1.0, 1.0), loc=(0.0, 0.0)) -> Target:
    """Bivariate Student-t with ``df`` degrees of freedom (df = 1: bivariate Cauchy).

    log p(theta) = -(df + 2)/2 log(1 + (theta - m)^T S^-1 (theta - m) / df), S the scale matrix.
    Mean m exists for df > 1, covariance df/(df - 2) S for df > 2.
    """
    df, rho = float(df), float(rho)
    if df <= 0:
        raise ValueError(f"The degrees of freedom must be positive; got {df}.")
    if not -1.0 < rho < 1.0:
        raise ValueError(f"The correlation rho must lie strictly between -1 and 1; got {rho}.")
    s1, s2 = (float(v) for v in scale)
    if s1 <= 0 or s2 <= 0:
        raise ValueError("The scales of the Student-t target must be positive.")
    S = np.array([[s1**2, rho * s1 * s2], [rho * s1 * s2, s2**2]])
    Sinv = jnp.asarray(np.linalg.inv(S))
    m = jnp.asarray(loc, dtype=jnp.float64)

    def log_density(theta):
        r = theta - m
        return -0.5 * (df + 2.0) * jnp.log1p(r @ (Sinv @ r) / df)

    mean = np.asarray(loc, float) if df > 1 else None
    cov = df / (df - 2.0) * S if df > 2 else None
    k = 6.0
    bounds = ((loc[0] - k * s1, loc[0] + k * s1), (loc[1] - k * s2, loc[1] + k * s2))
    name = "bivariate Cauchy" if df == 1 else f"Student-t (df={df:g})"
    return Target(name, 2, log_density, mean=mean, cov=cov, bounds=bounds, info={"df": df, "scale": S})


def _check_xy(X, y):
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"The design matrix X must be 2-D (n x d); got shape {X.shape}.")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have one entry per row of X ({X.shape[0]}); got shape {y.shape}.")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("X and y must be finite.")
    return X, y


def bayes_linreg(X, y, noise_var: float = 1.0, prior_var: float = 1.0, name: str | None = None) -> Target:
    """y ~ N(X theta, noise_var I), theta ~ N(0, prior_var I): Gaussian posterior, exact.

    Posterior precision X^T X / noise_var + I / prior_var, mean = cov X^T y / noise_var.
    """
    X, y = _check_xy(X, y)
    if noise_var <= 0 or prior_var <= 0:
        raise ValueError("The noise variance and the prior variance must be positive.")
    d = X.shape[1]
    P = X.T @ X / noise_var + np.eye(d) / prior_var
    S = np.linalg.inv(P)
    m = S @ X.T @ y / noise_var
    Xj, yj = jnp.asarray(X), jnp.asarray(y)

    def loglik(eta, yy):
        return -0.5 * (yy - eta) ** 2 / noise_var

    def log_density(theta):
        return jnp.sum(loglik(Xj @ theta, yj)) - 0.5 * theta @ theta / prior_var

    glm = GLM(Xj, yj, loglik, jnp.zeros(d), jnp.eye(d) / prior_var)
    return Target(name or f"Bayesian linear regression (n={X.shape[0]}, d={d})", d, log_density,
                  mean=m, cov=0.5 * (S + S.T), quadratic=True, glm=glm,
                  bounds=_bounds_from(m, S) if d == 2 else None,
                  info={"n": X.shape[0], "precision": P})


def logistic_regression(X, y, prior_var: float = 1.0, name: str | None = None) -> Target:
    """Bayesian logistic regression: y_i ~ Bernoulli(sigmoid(x_i^T theta)), theta ~ N(0, prior_var I).

    ``y`` may be coded 0/1 or -1/+1. log p = sum_i [y_i eta_i - log(1 + e^eta_i)] - |theta|^2 / (2 prior_var).
    """
    X, y = _check_xy(X, y)
    if prior_var <= 0:
        raise ValueError(f"The prior variance must be positive; got {prior_var}.")
    vals = set(np.unique(y).tolist())
    if vals <= {-1.0, 1.0}:
        y = (y + 1.0) / 2.0
    elif not vals <= {0.0, 1.0}:
        raise ValueError("Logistic regression needs labels y coded 0/1 (or -1/+1).")
    d = X.shape[1]
    Xj, yj = jnp.asarray(X), jnp.asarray(y)

    def loglik(eta, yy):
        return yy * eta - jnp.logaddexp(0.0, eta)

    def log_density(theta):
        return jnp.sum(loglik(Xj @ theta, yj)) - 0.5 * theta @ theta / prior_var

    glm = GLM(Xj, yj, loglik, jnp.zeros(d), jnp.eye(d) / prior_var)
    return Target(name or f"Bayesian logistic regression (n={X.shape[0]}, d={d})", d, log_density,
                  glm=glm, info={"n": X.shape[0], "prior_var": prior_var})
