"""Optimal Gaussians for univariate non-Gaussian targets (Chen, Nott & Tan Sec. 3, Supplement S1).

q = N(mu, sigma^2).  Objectives (expectations by 201-node Gauss-Hermite quadrature):

* KL(q||p) = -E_q log p(theta) - 1/2 log(2 pi sigma^2) - 1/2   (p normalised: the value is the KL);
* F(q||p)  = E_q (grad log p(theta) + (theta - mu)/sigma^2)^2;
* S(q||p)  = sigma^2 F(q||p)  (univariate identity, Sec. 1.2).

Each is minimised over (mu, log sigma) by Nelder-Mead from several starts (the skew-normal
score-based objective has local minima, Sec. 3.3), then reported with the paper's criteria:
normalised absolute mode error |mu - m_*| / sigma_*, variance ratio sigma^2 / sigma_*^2 and
accuracy 1 - IAE/2 with IAE = int |q - p| (computed exactly from the CDFs between the
crossing points of q and p).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import optimize, stats

from ..core.checks import positive, real_array, real_scalar
from ..family.quadrature import hermite_nodes
from ..targets.univariate import Univariate

__all__ = [
    "UNIVARIATE_DIVERGENCES",
    "UnivariateOptimum",
    "univariate_objective",
    "univariate_optimum",
    "univariate_optima",
    "iae",
    "accuracy",
    "log_inverse_gamma_optima",
]

UNIVARIATE_DIVERGENCES = ("kl", "fisher", "score")

_X, _W = hermite_nodes(201)
_W = _W / _W.sum()


class UnivariateOptimum(NamedTuple):
    """Optimal N(mu, var) under one divergence, with the Sec. 3 criteria (accuracy in %)."""

    divergence: str
    mu: float
    var: float
    objective: float
    mode_error: float
    var_ratio: float
    accuracy: float


def univariate_objective(spec: Univariate, divergence: str, mu, sigma2):
    """KL(q||p), F(q||p) or S(q||p) for q = N(mu, sigma2) (Chen, Nott & Tan Sec. 3; vectorised in mu, sigma2)."""
    if not isinstance(divergence, str) or divergence not in UNIVARIATE_DIVERGENCES:
        raise ValueError(f"Unknown divergence {divergence!r}; choose kl, fisher or score.")
    mu = real_array(mu, "The mean mu of q", allow_empty=True)[..., None]
    s2 = real_array(sigma2, "The variance sigma^2 of q", allow_empty=True)[..., None]
    if np.any(s2 <= 0):
        raise ValueError("The variance sigma^2 of q must be positive.")
    s = np.sqrt(s2)
    th = mu + s * _X
    if divergence == "kl":
        val = -(spec.logpdf(th) * _W).sum(-1) - 0.5 * np.log(2 * np.pi * s2[..., 0]) - 0.5
        return val
    r = spec.score(th) + (th - mu) / s2
    F = (r**2 * _W).sum(-1)
    return F if divergence == "fisher" else s2[..., 0] * F


def _starts(spec: Univariate, divergence: str, n: int = 61):
    """Starting points: the interior local minima of the objective on a (mu, log sigma) grid.

    The grid spans mu in m_* +- 4 sigma_* and sigma in [sigma_*/300, 5 sigma_*].  Only interior
    minima count: for heavy-tailed targets F(q||p) -> 0 as sigma -> infinity (the score vanishes
    in the tails), and the paper's optimum is the finite local minimum.
    """
    sd = spec.sd
    mus = spec.mode + sd * np.linspace(-4, 4, n)
    lsig = np.log(sd) + np.linspace(np.log(1 / 300), np.log(5), n)
    M, LS = np.meshgrid(mus, lsig, indexing="ij")
    with np.errstate(all="ignore"):
        V = univariate_objective(spec, divergence, M, np.exp(2 * LS))
    V = np.where(np.isfinite(V), V, np.inf)
    core = V[1:-1, 1:-1]
    is_min = np.ones_like(core, dtype=bool)
    for di in (-1, 0, 1):
        for dj in (-1, 0, 1):
            if di or dj:
                is_min &= core <= V[1 + di:n - 1 + di, 1 + dj:n - 1 + dj]
    ii, jj = np.nonzero(is_min & np.isfinite(core))
    order = np.argsort(core[ii, jj])[:4]
    starts = [(M[i + 1, j + 1], LS[i + 1, j + 1]) for i, j in zip(ii[order], jj[order])]
    if not starts:
        i, j = np.unravel_index(np.argmin(V), V.shape)
        starts = [(M[i, j], LS[i, j])]
    return starts, float(np.log(sd) + np.log(50.0))


def univariate_optimum(spec: Univariate, divergence: str, domain=None) -> UnivariateOptimum:
    """Optimal Gaussian under ``divergence`` (Chen, Nott & Tan Sec. 3): grid starts + Nelder-Mead.

    Multi-start: every interior local minimum of a (mu, log sigma) grid is polished by
    Nelder-Mead on (mu, log sigma) and the best finite one is kept (Sec. 3.3: the skew-normal
    score-based objective has local minima; Sec. 3.1: the Student-t Fisher objective also
    decreases towards sigma -> infinity, so a run escaping to sigma > 50 sigma_* is discarded).
    ``domain`` = (lo, hi) truncates the IAE integral of the accuracy (None: the whole line).
    """
    if not isinstance(divergence, str) or divergence not in UNIVARIATE_DIVERGENCES:
        raise ValueError(f"Unknown divergence {divergence!r}; choose kl, fisher or score.")

    def f(x):
        if not (-30.0 < x[1] < 30.0):  # sigma outside [1e-13, 1e13]: not a candidate
            return np.inf
        with np.errstate(all="ignore"):
            v = float(univariate_objective(spec, divergence, x[0], np.exp(2 * x[1])))
        return v if np.isfinite(v) else np.inf

    starts, log_sig_max = _starts(spec, divergence)
    best = None
    for x0 in starts:
        res = optimize.minimize(f, np.array(x0), method="Nelder-Mead",
                                options=dict(xatol=1e-10, fatol=1e-15, maxiter=4000, maxfev=8000))
        if res.x[1] > log_sig_max:
            continue
        if best is None or res.fun < best.fun:
            best = res
    if best is None:
        raise ValueError(f"No finite optimum of the {divergence} objective was found for {spec.name}.")
    mu, var = float(best.x[0]), float(np.exp(2 * best.x[1]))
    return UnivariateOptimum(
        divergence=divergence,
        mu=mu,
        var=var,
        objective=float(best.fun),
        mode_error=abs(mu - spec.mode) / spec.sd,
        var_ratio=var / spec.var,
        accuracy=100.0 * accuracy(spec, mu, var, domain),
    )


def univariate_optima(spec: Univariate, domain=None) -> dict[str, UnivariateOptimum]:
    """The KL, Fisher and score-based optima of one target (a row of Tables 1-3)."""
    return {d: univariate_optimum(spec, d, domain) for d in UNIVARIATE_DIVERGENCES}


def iae(spec: Univariate, mu: float, var: float, domain=None) -> float:
    """Integrated absolute error int |q(theta) - p(theta)| d theta (Chen, Nott & Tan Sec. 3), in [0, 2].

    Exact up to root finding: the crossing points of q and p are located on a fine grid and
    refined by Brent's method; between consecutive crossings |q - p| has one sign, so each
    piece is a difference of CDFs.  ``domain`` = (lo, hi) restricts the integral.
    """
    mu = real_scalar(mu, "The mean mu of q")
    var = positive(var, "The variance of q")
    s = np.sqrt(var)
    lo = min(mu - 14 * s, spec.mode - 14 * spec.sd)
    hi = max(mu + 14 * s, spec.mode + 14 * spec.sd)

    def d(x):
        return spec.logpdf(x) - stats.norm.logpdf(x, mu, s)

    grid = np.linspace(lo, hi, 8001)
    dv = d(grid)
    idx = np.nonzero(np.sign(dv[:-1]) * np.sign(dv[1:]) < 0)[0]
    cross = [optimize.brentq(d, grid[i], grid[i + 1], xtol=1e-13) for i in idx]
    if domain is None:
        pts = np.array([-np.inf, *cross, np.inf])
    else:
        a, b = domain
        pts = np.array([a, *[c for c in cross if a < c < b], b])
    P = spec.cdf(pts)
    Q = stats.norm.cdf(pts, mu, s)
    return float(np.sum(np.abs(np.diff(P) - np.diff(Q))))


def accuracy(spec: Univariate, mu: float, var: float, domain=None) -> float:
    """Accuracy(q) = 1 - IAE(q)/2 (Chen, Nott & Tan Sec. 3), as a fraction."""
    return 1.0 - 0.5 * iae(spec, mu, var, domain)


def log_inverse_gamma_optima(a1: float, b1: float = 1.0) -> dict[str, tuple[float, float]]:
    """Closed-form optima (mu, sigma^2) for the log-inverse-gamma target (Sec. 3.2, Supplement S1).

    KL: sigma^2 = 1/a1, mu = log(b1/a1) + 1/(2 a1).
    FD: mu = log(b1/(a1+1)) + 3 sigma^2/2 with sigma^2 exp(-sigma^2/2) = 1/(a1+1) (smaller root).
    SD: the same mu; a1^2 + (a1+1)^2 exp(-sigma^2)(sigma^2 - 1) = 0 (dS/dsigma^2 = 0, root in (0, 1)).
    """
    a1, b1 = positive(a1, "The shape a1"), positive(b1, "The scale b1")
    kl = (np.log(b1 / a1) + 0.5 / a1, 1.0 / a1)
    fd_s2 = optimize.brentq(lambda v: v * np.exp(-v / 2) - 1 / (a1 + 1), 1e-12, 2.0, xtol=1e-15)
    sd_s2 = optimize.brentq(lambda v: a1**2 + (a1 + 1) ** 2 * np.exp(-v) * (v - 1), 1e-12, 1.0, xtol=1e-15)
    base = np.log(b1 / (a1 + 1))
    return {"kl": kl, "fisher": (base + 1.5 * fd_s2, fd_s2), "score": (base + 1.5 * sd_s2, sd_s2)}
