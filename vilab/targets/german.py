"""The German credit data (UCI Statlog, Hofmann 1994) for the logistic regressions of Tan (2025) Sec. 8.2 and
Chen, Nott & Tan Sec. 7.2 / Fig. 4: 1000 applicants, good or bad credit risk, 20 attributes.

The table ships with vilab (``vilab/data/german_credit.csv``, 1000 rows, 20 attributes and ``creditability``
with the readable level names of UCI's ``german.doc``; the UCI Statlog data of Hofmann (1994), CC BY 4.0, see
``vilab/data/SOURCES.md``) and is read through ``importlib.resources``: nothing is downloaded, no other package
is needed.

Coding, as both papers describe it: the 7 quantitative attributes standardised (mean 0, sd 1), each of the 13
qualitative ones as dummies of all its levels but the first (sorted), an intercept: d = 1 + 7 + 41 = 49, the
dimension both papers print. y = 1 for a bad credit risk.
"""

from __future__ import annotations

import importlib.resources
from importlib.resources.abc import Traversable

import numpy as np

__all__ = ["german_credit", "german_credit_path", "logistic_va_optimum", "QUANTITATIVE"]

#: the quantitative attributes (the other 13 are qualitative)
QUANTITATIVE = ("duration_in_month", "credit_amount", "installment_rate_in_percentage_of_disposable_income",
                "present_residence_since", "age_in_years", "number_of_existing_credits_at_this_bank",
                "number_of_people_being_liable_to_provide_maintenance_for")


#: the bundled table, inside the vilab package
DATA_FILE = "data/german_credit.csv"


def german_credit_path() -> Traversable:
    """The bundled German credit table (``vilab/data/german_credit.csv``, a :class:`pathlib.Path` for an ordinary
    install). ValueError when the installed vilab lacks it (a copy of the sources without its data folder)."""
    ref = importlib.resources.files("vilab").joinpath(DATA_FILE)
    if not ref.is_file():
        raise ValueError(f"The German credit table vilab/{DATA_FILE} is missing from this installation of vilab: "
                         "reinstall it (pip install -e . from the repository, or pip install vilab).")
    return ref


def german_credit(prior_var: float = 100.0):
    """Bayesian logistic regression on the German credit data (:class:`vilab.targets.regression.GLMModel`,
    d = 49, n = 1000, prior N(0, ``prior_var`` I); both papers use sigma0^2 = 100)."""
    import pandas as pd

    from .regression import GLMModel, _standardise

    with german_credit_path().open("rb") as fh:
        df = pd.read_csv(fh)
    y = (df.pop("creditability").astype(str).str.strip() == "bad").to_numpy(float)
    quant = _standardise(df[list(QUANTITATIVE)].to_numpy(float))
    names, cols = list(QUANTITATIVE), [quant]
    for c in (c for c in df.columns if c not in QUANTITATIVE):
        levels = sorted(df[c].astype(str).unique())
        for lev in levels[1:]:
            cols.append((df[c].astype(str) == lev).to_numpy(float)[:, None])
            names.append(f"{c} = {lev}")
    X = np.column_stack([np.ones(len(y))] + cols)
    return GLMModel("German credit (logistic)", X, y, "bernoulli", float(prior_var),
                    feature_names=("intercept",) + tuple(names),
                    source="UCI Statlog German credit (Hofmann 1994), n = 1000, bundled with vilab")


def logistic_va_optimum(model, diagonal: bool = False, n_points: int = 48, max_iter: int = 5000):
    """The exact optimum of the Gaussian variational approximation of a Bernoulli (logit) GLM: maximises

        L(mu, C) = sum_i E[y_i eta_i - log(1 + e^eta_i)] - (mu^T mu + tr Sigma) / (2 sigma0^2)
                   - d/2 log(2 pi sigma0^2) + d/2 (1 + log 2 pi) + log|C|,   eta_i ~ N(x_i^T mu, |C^T x_i|^2),

    (Tan (2025) Supp. S7's log p(y, theta) under q = N(mu, C C^T)) with each one-dimensional expectation by
    ``n_points``-node Gauss-Hermite quadrature and scipy's L-BFGS on (mu, C) (C lower triangular with a log
    diagonal; a vector of log standard deviations when ``diagonal``). Returns (L, mu, C)."""
    import math

    import jax
    import jax.numpy as jnp
    from scipy.optimize import minimize

    from ..family.quadrature import hermite_nodes

    if model.family != "bernoulli":
        raise ValueError("logistic_va_optimum needs a logistic (Bernoulli) model.")
    X, y, d, s0 = jnp.asarray(model.X), jnp.asarray(model.y), model.d, float(model.prior_var)
    x, w = (jnp.asarray(a) for a in hermite_nodes(n_points))
    const = -0.5 * d * math.log(2 * math.pi * s0) + 0.5 * d * (1 + math.log(2 * math.pi))
    tri = np.tril_indices(d)

    def unpack(p):
        if diagonal:
            return p[:d], jnp.diag(jnp.exp(p[d:]))
        L = jnp.zeros((d, d)).at[tri].set(p[d:])
        return p[:d], L - jnp.diag(jnp.diag(L)) + jnp.diag(jnp.exp(jnp.diag(L)))

    def elbo(mu, C):
        eta, s = X @ mu, jnp.sqrt(jnp.sum((X @ C) ** 2, 1))
        softplus = jnp.logaddexp(0.0, eta[:, None] + s[:, None] * x[None, :]) @ w
        return (y @ eta - jnp.sum(softplus) - 0.5 * (mu @ mu + jnp.sum(C**2)) / s0 + const
                + jnp.sum(jnp.log(jnp.diag(C))))

    f = jax.jit(jax.value_and_grad(lambda p: -elbo(*unpack(p))))
    p0 = np.zeros(2 * d if diagonal else d + len(tri[0]))
    if diagonal:
        p0[d:] = np.log(0.1)
    else:
        L0 = np.zeros((d, d))
        np.fill_diagonal(L0, np.log(0.1))
        p0[d:] = L0[tri]
    r = minimize(lambda p: tuple(np.asarray(v, float) for v in f(jnp.asarray(p))), p0, jac=True, method="L-BFGS-B",
                 options=dict(maxiter=int(max_iter), maxfun=4 * int(max_iter), ftol=1e-15, gtol=1e-9))
    mu, C = unpack(jnp.asarray(r.x))
    return float(-r.fun), np.asarray(mu), np.asarray(C)
