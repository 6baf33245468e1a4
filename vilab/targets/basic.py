"""Basic targets: Gaussians (one with a given condition number), banana, bivariate Student-t, Bayesian linear
and logistic regression."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..core.checks import finite_result, real_array, real_scalar
from ..family.gaussian import check_mean_cov
from .target import GLM, Target, check_positive


def _correlation(rho) -> float:
    rho = real_array(rho, "The correlation rho", ndim=0, finite=False, allow_empty=True).item()
    if not -1.0 < rho < 1.0:  # also rejects NaN
        raise ValueError(f"The correlation rho must lie strictly between -1 and 1; got {rho}.")
    return rho


def _bounds_from(mean, cov, k: float = 3.5):
    s = np.sqrt(np.diag(cov))
    return tuple((float(m - k * si), float(m + k * si)) for m, si in zip(mean, s))


def gaussian_target(mean, precision=None, cov=None, name: str | None = None) -> Target:
    """N(mean, precision^-1) (give exactly one of ``precision`` and ``cov``).

    log p(theta) = -1/2 (theta - m)^T Lambda (theta - m) (normalising constant dropped).
    Member ``{"mean": m, "precision": Lambda}`` of the family ("gaussian_target", d) (see Target).
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
    d = len(m)
    return _gaussian_family({"mean": m, "precision": P}, dict(
        name=name or f"Gaussian (d={d})", cov=S, bounds=_bounds_from(m, S) if d == 2 else None, info={"precision": P}))


def _gaussian_family(params, meta: dict | None = None) -> Target:
    """Traceable rebuild of :func:`gaussian_target` from params = {"mean": m, "precision": Lambda}:
    cov = sym(Lambda^-1) in jax.numpy. ``meta`` (concrete construction only) overrides name, cov,
    bounds and info."""
    m, P = params["mean"], params["precision"]
    d = m.shape[0]
    mj, Pj = jnp.asarray(m), jnp.asarray(P)

    def log_density(theta):
        r = theta - mj
        return -0.5 * r @ (Pj @ r)

    fields = {"name": f"Gaussian (d={d})", "bounds": None, "info": {"precision": P}}
    fields.update(meta or {})
    if "cov" not in fields:
        S = jnp.linalg.inv(Pj)
        fields["cov"] = 0.5 * (S + S.T)
    return Target(dim=d, log_density=log_density, mean=m, quadratic=True, family=("gaussian_target", d),
                  params=params, family_fn=_gaussian_family, **fields)


def gaussian_2d(rho: float, sd1: float = 1.0, sd2: float = 1.0, mean=(0.0, 0.0)) -> Target:
    """Bivariate Gaussian with correlation rho and marginal standard deviations sd1, sd2."""
    rho = _correlation(rho)
    sd1, sd2 = check_positive(sd1, "The standard deviation sd1"), check_positive(sd2, "The standard deviation sd2")
    cov = np.array([[sd1**2, rho * sd1 * sd2], [rho * sd1 * sd2, sd2**2]])
    return gaussian_target(mean, cov=cov, name=f"Gaussian (rho={rho:g}, sd=({sd1:g}, {sd2:g}))")


def rotated_gaussian_2d(kappa: float, scale: float = 1.0, mean=(1.0, 0.0), name: str | None = None) -> Target:
    """Bivariate Gaussian with condition number ``kappa`` whose axes lie along the diagonals.

    Sigma = scale^2 R diag(1, 1/kappa) R^T, i.e. precision Lambda = R diag(1, kappa) R^T / scale^2,
    with R the rotation by 45 degrees: the largest standard deviation is ``scale`` (along
    (1, 1)/sqrt 2), the smallest scale / sqrt(kappa) (along (-1, 1)/sqrt 2), and
    lambda_max(Lambda) / lambda_min(Lambda) = kappa. The ill-conditioned target of the Trajectories
    and Flows pages (Kumar et al. (2025) Fig. 1 style: Euclidean methods slow down with kappa,
    natural-gradient ones do not). Built by :func:`gaussian_target`, so a member of the
    ("gaussian_target", 2) family: a new kappa or scale reuses the compiled loops.
    """
    kappa = check_positive(kappa, "The condition number kappa")
    if kappa < 1.0:
        raise ValueError(f"A condition number is at least 1 (largest over smallest eigenvalue); got {kappa:g}.")
    scale = check_positive(scale, "The posterior scale")
    R = np.array([[1.0, -1.0], [1.0, 1.0]]) / np.sqrt(2.0)
    P = R @ np.diag([1.0, kappa]) @ R.T / scale**2
    if name is None:
        name = f"Gaussian (condition number {kappa:g}" + ("" if scale == 1.0 else f", scale {scale:g}") + ")"
    return gaussian_target(np.asarray(mean, float), precision=P, name=name)


def banana(b: float = 0.5, sd1: float = 2.0) -> Target:
    """Twisted Gaussian: theta1 ~ N(0, sd1^2), theta2 | theta1 ~ N(b (theta1^2 - sd1^2), 1).

    Exact moments: mean (0, 0), covariance diag(sd1^2, 1 + 2 b^2 sd1^4).
    Member {"b": b, "sd1": sd1} of the family ("banana",) (see Target).
    """
    b, sd1 = real_scalar(b, "The banana's curvature b"), check_positive(sd1, "The banana's sd1")
    b_, sd1_ = np.float64(b), np.float64(sd1)  # numpy floats overflow to inf (checked below), Python floats raise
    with np.errstate(over="ignore"):
        cov = finite_result(np.diag([sd1_**2, 1.0 + 2.0 * b_**2 * sd1_**4]), "The banana's covariance")
    x = 3.0 * sd1
    ends = (b * (0.0 - sd1**2), b * (x**2 - sd1**2))  # range of the ridge b (t1^2 - sd1^2), |t1| <= x
    y0, y1 = min(ends) - 3.0, max(ends) + 3.0
    return _banana_family({"b": b, "sd1": sd1}, dict(
        name=f"banana (b={b:g})", cov=cov, bounds=((-x, x), (float(y0), float(y1))), info={"b": b, "sd1": sd1}))


def _banana_family(params, meta: dict | None = None) -> Target:
    """Traceable rebuild of :func:`banana` from params = {"b", "sd1"}; ``meta`` as in _gaussian_family."""
    b, sd1 = params["b"], params["sd1"]

    def log_density(theta):
        t1, t2 = theta[0], theta[1]
        return -0.5 * t1**2 / sd1**2 - 0.5 * (t2 - b * (t1**2 - sd1**2)) ** 2

    fields = {"name": "banana", "bounds": None, "info": {"b": b, "sd1": sd1}}
    fields.update(meta or {})
    if "cov" not in fields:
        fields["cov"] = jnp.diag(jnp.stack([sd1**2, 1.0 + 2.0 * b**2 * sd1**4]))
    return Target(dim=2, log_density=log_density, mean=jnp.zeros(2), family=("banana",), params=params,
                  family_fn=_banana_family, **fields)


def student_t_2d(df: float, rho: float = 0.0, scale=(1.0, 1.0), loc=(0.0, 0.0)) -> Target:
    """Bivariate Student-t with ``df`` degrees of freedom (df = 1: bivariate Cauchy).

    log p(theta) = -(df + 2)/2 log(1 + (theta - m)^T S^-1 (theta - m) / df), S the scale matrix.
    Mean m exists for df > 1, covariance df/(df - 2) S for df > 2.
    Member {"df", "rho", "scale" (2,), "loc" (2,)} of the family ("student_t_2d",) (see Target).
    """
    df, rho = check_positive(df, "The degrees of freedom"), _correlation(rho)
    if np.shape(scale) != (2,) or np.shape(loc) != (2,):
        raise ValueError(f"scale and loc must each have two entries; got shapes {np.shape(scale)} and {np.shape(loc)}.")
    s1, s2 = (check_positive(v, "Each scale of the Student-t target") for v in scale)
    loc = tuple(real_array(loc, "The location loc of the Student-t target").tolist())
    S = np.array([[s1**2, rho * s1 * s2], [rho * s1 * s2, s2**2]])
    k = 6.0
    bounds = ((loc[0] - k * s1, loc[0] + k * s1), (loc[1] - k * s2, loc[1] + k * s2))
    return _student_t_family({"df": df, "rho": rho, "scale": np.array([s1, s2]), "loc": np.asarray(loc)}, dict(
        name="bivariate Cauchy" if df == 1 else f"Student-t (df={df:g})",
        mean=np.asarray(loc, float) if df > 1 else None, cov=df / (df - 2.0) * S if df > 2 else None,
        bounds=bounds, info={"df": df, "scale": S}))


def _student_t_family(params, meta: dict | None = None) -> Target:
    """Traceable rebuild of :func:`student_t_2d` from params = {"df", "rho", "scale", "loc"}. Where a
    moment does not exist (mean for df <= 1, covariance for df <= 2) the rebuild holds NaN (a traced
    df cannot choose None); ``meta`` as in _gaussian_family."""
    df, rho, loc = params["df"], params["rho"], jnp.asarray(params["loc"])
    s1, s2 = params["scale"][0], params["scale"][1]
    S = jnp.stack([jnp.stack([s1**2, rho * s1 * s2]), jnp.stack([rho * s1 * s2, s2**2])])
    Sinv = jnp.linalg.inv(S)

    def log_density(theta):
        r = theta - loc
        return -0.5 * (df + 2.0) * jnp.log1p(r @ (Sinv @ r) / df)

    fields = {"name": "Student-t", "bounds": None, "info": {"df": df, "scale": S}}
    fields.update(meta or {})
    if "mean" not in fields:
        fields["mean"] = jnp.where(df > 1.0, loc, jnp.nan)
        fields["cov"] = jnp.where(df > 2.0, df / (df - 2.0) * S, jnp.nan)
    return Target(dim=2, log_density=log_density, family=("student_t_2d",), params=params,
                  family_fn=_student_t_family, **fields)


def _check_xy(X, y):
    X = real_array(X, "The design matrix X", finite=False, allow_empty=True)
    y = real_array(y, "y", finite=False, allow_empty=True)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
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
    noise_var, prior_var = check_positive(noise_var, "The noise variance"), check_positive(prior_var, "The prior variance")
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
    prior_var = check_positive(prior_var, "The prior variance")
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
