"""Objective landscapes of the mean-field Gaussian (Chen, Nott & Tan digest E4) and the Table 6 analogue.

Part 1, landscapes.  For a 2-D Gaussian target p = N(nu, Lambda^{-1}) and a mean-field q = N(nu, diag(Sigma_11,
Sigma_22)) (the mean is always recovered, Chen, Nott & Tan Lemma 1), the KL, Fisher and score-based objectives
are evaluated over a log-spaced grid of (Sigma_11, Sigma_22) with the closed forms of
:mod:`vilab.divergences.gaussian` (``kl_qp``, ``fisher``, ``score_divergence``, Lemma 1), vmapped under jit.
Each objective's minimiser on the grid is compared with the closed-form mean-field optimum
(:func:`vilab.divergences.gaussian.meanfield_optimum`, Sec. 2.1).  With mu = nu the explicit forms
(Sec. 1.3) are

    KL(Sigma) = 1/2 [sum_i Lambda_ii Sigma_ii - d - sum_i log Sigma_ii - log det Lambda]
    F(Sigma)  = sum_i [1/Sigma_ii + (Lambda^2)_ii Sigma_ii] - 2 tr Lambda
    S(Sigma)  = d + sum_ij Sigma_ii Sigma_jj Lambda_ij^2 - 2 sum_i Sigma_ii Lambda_ii.

KL and F are sums of one-coordinate terms: their valleys (the best Sigma_11 for each Sigma_22) are straight
lines.  S couples the coordinates through Sigma_11 Sigma_22 Lambda_12^2: its valley, Sigma_11 = (Lambda_11 -
Lambda_12^2 Sigma_22) / Lambda_11^2 (our derivation, dS/dSigma_11 = 0), reaches Sigma_11 = 0 (variational
collapse, KKT case (a) of eq. 3) at Sigma_22 = Lambda_11 / Lambda_12^2, and the price of a collapsed q stays
finite (for KL and Fisher it is infinite).

Part 2, Table 6 (Sec. 7.2, logistic regression), German credit column: :func:`table6` runs the paper's methods
(KLD, FDr, SDr, FDb, SDb, BaM of :mod:`vilab.divergences.stochastic`) on the paper's data
(:func:`vilab.targets.german.german_credit`, d = 49) and scores them as the paper does: M* = -log(MMD^2_u + 1e-5)
and the normalised mode error (:mod:`vilab.targets.metrics`), against the NUTS posterior stored in
assets/hierarchical/german.npz. The a4a column needs the LIBSVM a4a data, which no package here ships.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from ..core.checks import integer, real_array
from .gaussian import check_precision, fisher, kl_qp, meanfield_optimum, score_divergence, score_nqp

__all__ = [
    "LANDSCAPE_CODES",
    "check_grid",
    "landscape_axes",
    "objective_landscape",
    "meanfield_objectives",
    "valleys",
    "collapse_values",
    "landscape_monte_carlo",
    "TABLE6_PAPER",
    "TABLE6_METHODS",
    "table6",
]

#: the objectives drawn on the landscape, in the page's order
LANDSCAPE_CODES = ("kl", "fisher", "score")
_MAX_GRID = 1001


# ---------------------------------------------------------------------------------------------
# part 1: landscapes


def _check_2d(precision) -> np.ndarray:
    L = check_precision(precision)
    if L.shape != (2, 2):
        raise ValueError(f"The landscape is drawn over (Σ₁₁, Σ₂₂): the target must be 2-D, but its precision is "
                         f"{L.shape[0]} x {L.shape[0]}.")
    return L


def check_grid(values, name: str = "The grid") -> np.ndarray:
    """``values`` as a float64 vector of at least 3 positive, finite, strictly increasing variances, else
    ValueError saying what to change."""
    v = real_array(values, name, finite=False, allow_empty=True)
    if v.ndim != 1:
        raise ValueError(f"{name} must be a list of variances (a vector); got shape {v.shape}.")
    if not 3 <= v.size <= _MAX_GRID:
        raise ValueError(f"{name} needs between 3 and {_MAX_GRID} variances; got {v.size}.")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} contains a NaN or infinite variance; use finite numbers.")
    if np.any(v <= 0):
        raise ValueError(f"{name} contains a variance that is zero or negative ({v.min():g}); variances must be "
                         "positive (the axes are logarithmic).")
    if np.any(np.diff(v) <= 0):
        raise ValueError(f"{name} must increase strictly from one variance to the next.")
    return v


def landscape_axes(precision, n: int = 121, decades: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Log-spaced Sigma_11 and Sigma_22 axes that hold every optimum and the true marginal variances.

    Each axis runs from the smallest positive optimum (KL, Fisher, score-based) or true variance of its
    coordinate divided by 10**decades to the largest times 10**decades, ``n`` points.
    """
    L = _check_2d(precision)
    n = integer(n, "The grid size n", minimum=3, maximum=_MAX_GRID)
    dec = real_array(decades, "The number of decades", ndim=0).item()
    if not 0.05 <= dec <= 6:
        raise ValueError(f"The margin around the optima must be between 0.05 and 6 decades; got {dec:g}.")
    pts = [meanfield_optimum(L, k).variances for k in LANDSCAPE_CODES] + [np.diag(np.linalg.inv(L))]
    pts = np.array(pts)
    axes = []
    for i in range(2):
        col = pts[:, i][pts[:, i] > 0]
        axes.append(np.logspace(np.log10(col.min()) - dec, np.log10(col.max()) + dec, n))
    return axes[0], axes[1]


@jax.jit
def _grid_values(L, s11, s22):
    """KL, Fisher and score-based over the grid [i22, i11], by Lemma 1's matrix forms (vmapped)."""
    nu = jnp.zeros(2)

    def at(a, b):
        S = jnp.diag(jnp.array([a, b]))
        return jnp.stack([kl_qp(nu, S, nu, L), fisher(nu, S, nu, L), score_divergence(nu, S, nu, L)])

    A, B = jnp.meshgrid(s11, s22)
    out = jax.vmap(at)(A.ravel(), B.ravel())
    return out.reshape(A.shape + (3,))


def meanfield_objectives(precision, variances) -> dict[str, float]:
    """KL, Fisher and score-based at q = N(nu, diag(variances)): the explicit forms with mu = nu (Chen, Nott &
    Tan Sec. 1.3).  The score-based form stays finite at a zero variance (a collapsed q, its limit); KL and
    Fisher are +inf there."""
    L = check_precision(precision)
    v = real_array(variances, "The variances", ndim=1)
    if v.shape[0] != L.shape[0] or np.any(v < 0):
        raise ValueError(f"Give {L.shape[0]} non-negative variances, one per coordinate.")
    d = L.shape[0]
    dg = np.diag(L)
    score = float(d + v @ (L**2) @ v - 2 * v @ dg)
    if np.any(v == 0):
        return {"kl": np.inf, "fisher": np.inf, "score": score}
    kl = 0.5 * (dg @ v - d - np.sum(np.log(v)) - np.linalg.slogdet(L)[1])
    fis = float(np.sum(1 / v + (L**2).sum(1) * v) - 2 * np.trace(L))
    return {"kl": float(kl), "fisher": fis, "score": score}


def valleys(precision, s11, s22) -> dict[str, dict[str, np.ndarray]]:
    """The valley floor of each objective: the best Sigma_11 for every Sigma_22 on ``s22`` ("v1") and the best
    Sigma_22 for every Sigma_11 on ``s11`` ("v2").

    From the explicit forms (Sec. 1.3), setting one partial derivative to zero (our derivation):
    KL: Sigma_ii = 1/Lambda_ii; Fisher: Sigma_ii = 1/||row i of Lambda||; score-based:
    Sigma_11 = max(0, (Lambda_11 - Lambda_12^2 Sigma_22) / Lambda_11^2) (0 = collapse), and symmetrically.
    """
    L = _check_2d(precision)
    s11, s22 = check_grid(s11, "The Σ₁₁ axis"), check_grid(s22, "The Σ₂₂ axis")
    l11, l22, l12 = L[0, 0], L[1, 1], L[0, 1]
    rn = np.sqrt((L**2).sum(1))
    return {
        "kl": {"v1": np.full(s22.shape, 1 / l11), "v2": np.full(s11.shape, 1 / l22)},
        "fisher": {"v1": np.full(s22.shape, 1 / rn[0]), "v2": np.full(s11.shape, 1 / rn[1])},
        "score": {"v1": np.maximum(0.0, (l11 - l12**2 * s22) / l11**2),
                  "v2": np.maximum(0.0, (l22 - l12**2 * s11) / l22**2)},
    }


def collapse_values(precision) -> dict[str, np.ndarray]:
    """The smallest value of each objective over q with Sigma_ii = 0 (coordinate i collapsed), i = 1..d.

    KL and Fisher: +inf (their -log Sigma_ii and 1/Sigma_ii terms).  Score-based: d + 2 min F over the other
    coordinates, the non-negative quadratic program (eq. 3) of the target's precision without row and column i,
    solved by :func:`score_nqp` (H_jk = Lambda_jk^2 / (Lambda_jj Lambda_kk) uses only entries j, k).
    """
    L = check_precision(precision)
    d = L.shape[0]
    out = np.empty(d)
    for i in range(d):
        keep = [j for j in range(d) if j != i]
        sub = L[np.ix_(keep, keep)]
        s, _ = score_nqp(sub)
        dg = np.diag(sub)
        H = sub**2 / np.outer(dg, dg)
        out[i] = d + 2 * (0.5 * s @ H @ s - s.sum())
    return {"kl": np.full(d, np.inf), "fisher": np.full(d, np.inf), "score": out}


def objective_landscape(precision, s11=None, s22=None, *, n: int = 121, decades: float = 1.0) -> dict:
    """KL, Fisher and score-based over a (Sigma_11, Sigma_22) grid of a mean-field q with mu = nu (digest E4).

    Parameters: the 2-D target's ``precision`` Lambda; the axes ``s11``, ``s22`` (positive, increasing
    variances), or None for :func:`landscape_axes` (``n`` points, ``decades`` beyond the optima).

    Returns a dict: ``s11``, ``s22`` (the axes); ``values`` {code: (len(s22), len(s11)) array, [i22, i11]};
    ``grid_min`` {code: (Sigma_11, Sigma_22) of the grid's smallest value}; ``grid_min_value``; ``optimum``
    {code: closed-form optimal variances (2,)} and ``optimum_value`` (Sec. 2.1); ``true`` the target's
    marginal variances; ``valleys`` (:func:`valleys`); ``collapse`` (:func:`collapse_values`);
    ``collapse_at`` the Sigma_22 where the score-based valley reaches Sigma_11 = 0 (Lambda_11 / Lambda_12^2;
    inf for an uncorrelated target) and the Sigma_11 where it reaches Sigma_22 = 0; ``log_step`` the larger
    log10 spacing of the axes (the grid's resolution).
    """
    L = _check_2d(precision)
    if s11 is None or s22 is None:
        a11, a22 = landscape_axes(L, n, decades)
        s11 = a11 if s11 is None else s11
        s22 = a22 if s22 is None else s22
    s11, s22 = check_grid(s11, "The Σ₁₁ axis"), check_grid(s22, "The Σ₂₂ axis")
    vals = np.asarray(_grid_values(jnp.asarray(L), jnp.asarray(s11), jnp.asarray(s22)))
    if not np.all(np.isfinite(vals)):
        raise ValueError("Some objective values on this grid overflow; choose variances closer to the target's.")
    values = {k: vals[..., j] for j, k in enumerate(LANDSCAPE_CODES)}
    grid_min, grid_min_value = {}, {}
    for k, v in values.items():
        i22, i11 = np.unravel_index(np.argmin(v), v.shape)
        grid_min[k] = (float(s11[i11]), float(s22[i22]))
        grid_min_value[k] = float(v[i22, i11])
    opts = {k: meanfield_optimum(L, k) for k in LANDSCAPE_CODES}
    l12sq = L[0, 1] ** 2
    collapse_at = (float(L[0, 0] / l12sq) if l12sq > 0 else np.inf, float(L[1, 1] / l12sq) if l12sq > 0 else np.inf)
    steps = [np.max(np.diff(np.log10(s))) for s in (s11, s22)]
    return {"s11": s11, "s22": s22, "values": values, "grid_min": grid_min, "grid_min_value": grid_min_value,
            "optimum": {k: np.asarray(o.variances, float) for k, o in opts.items()},
            "optimum_value": {k: float(o.objective) for k, o in opts.items()},
            "true": np.diag(np.linalg.inv(L)).copy(), "valleys": valleys(L, s11, s22), "collapse": collapse_values(L),
            "collapse_at": collapse_at, "log_step": float(max(steps))}


def landscape_monte_carlo(key, precision, points, n: int = 20_000) -> list[dict]:
    """Monte Carlo check of the landscape at a few (Sigma_11, Sigma_22) points (Chen, Nott & Tan Sec. 1.2).

    At each point q = N(0, diag(point)), p = N(0, Lambda^{-1}): Fisher and score-based as E_q ||grad log q -
    grad log p||_M^2 and KL as E_q[log q - log p] with the normalised log p, from ``n`` draws
    (:func:`vilab.divergences.gaussian.monte_carlo_divergence`, key folded per point and objective). Returns
    one dict per point: {"point", code: (closed form, estimate, standard error)}.
    """
    from .gaussian import monte_carlo_divergence

    L = _check_2d(precision)
    pts = real_array(points, "The points", ndim=2)
    if pts.shape[1] != 2 or np.any(pts <= 0):
        raise ValueError("Each point is a pair of positive variances (Σ₁₁, Σ₂₂).")
    Lj = jnp.asarray(L)
    _, logdet = np.linalg.slogdet(L)

    def score(th):
        return -Lj @ th

    def log_p(th):
        return -0.5 * th @ Lj @ th + 0.5 * logdet - jnp.log(2 * jnp.pi)

    out = []
    for r, (a, b) in enumerate(pts):
        row = {"point": (float(a), float(b))}
        S, z = np.diag([a, b]), np.zeros(2)
        exact = [float(kl_qp(z, S, z, L)), float(fisher(z, S, z, L)), float(score_divergence(z, S, z, L))]
        for j, k in enumerate(LANDSCAPE_CODES):
            est, se = monte_carlo_divergence(jax.random.fold_in(key, 3 * r + j), score, np.zeros(2),
                                             np.diag([a, b]), name=k, n=n, log_density=log_p)
            row[k] = (float(exact[j]), est, se)
        out.append(row)
    return out


# ---------------------------------------------------------------------------------------------
# part 2: Table 6 (Sec. 7.2) on an available logistic regression

#: Table 6 of Chen, Nott & Tan (Sec. 7.2): M* and |mu - mu*| / sigma* (mean, s.d.), time in s (thousands of
#: iterations), for the German credit (d = 49) and a4a (d = 124) data
TABLE6_PAPER = {
    "German": {"M*": {"kl": (8.82, 1.72), "fdr": (1.11, 0.02), "sdr": (0.75, 0.01), "fdb": (2.86, 0.07),
                      "sdb": (8.37, 1.28), "bam": (8.29, 1.35)},
               "mode": {"kl": (0.08, 0.05), "fdr": (0.55, 0.68), "sdr": (0.74, 0.62), "fdb": (0.25, 0.27),
                        "sdb": (0.08, 0.06), "bam": (0.08, 0.05)},
               "time": {"kl": (3.2, 35), "fdr": (15.0, 60), "sdr": (9.8, 39), "fdb": (6.2, 26), "sdb": (3.8, 15),
                        "bam": (1.6, 0.35)}},
    "a4a": {"M*": {"kl": (2.49, 0.03), "fdr": (0.71, 0.02), "sdr": (0.71, 0.01), "fdb": (1.61, 0.02),
                   "sdb": (3.04, 0.04), "bam": (5.22, 0.08)},
            "mode": {"kl": (0.18, 0.15), "fdr": (0.45, 0.52), "sdr": (0.38, 0.43), "fdb": (0.40, 0.43),
                     "sdb": (0.15, 0.15), "bam": (0.14, 0.16)},
            "time": {"kl": (19.2, 44), "fdr": (108.5, 31), "sdr": (55.2, 16), "fdb": (14.0, 10), "sdb": (70.4, 48),
                     "bam": (13.6, 1.05)}},
}
#: the methods of Table 6, in its column order
TABLE6_METHODS = ("kl", "fdr", "sdr", "fdb", "sdb", "bam")


def table6(key, model=None, *, methods=TABLE6_METHODS, max_iter: int = 60_000, batch_size: int = 3,
           bam_batch: int = 50, bam_iter: int = 2000, tol: float = 0.01, t0: float = 10.0, n_rep: int = 10,
           m: int = 1000, reference=None, progress=None) -> dict:
    """Table 6 of Chen, Nott & Tan (Sec. 7.2), German credit column: Bayesian logistic regression, d = 49.

    ``model`` defaults to :func:`vilab.targets.german.german_credit` (the paper's data and prior N(0, 100 I))
    and ``reference`` to its NUTS posterior (:func:`vilab.targets.reference.load_reference` ("german"),
    20,000 draws, made by scripts/german_reference.py; the paper used RStan). Another Bernoulli
    :class:`vilab.targets.regression.GLMModel` needs its own ``reference`` (anything with ``draws``, ``sd`` and
    ``mode``). ``max_iter`` is the paper's cap, 60,000.

    Every method of ``methods`` (KLD, FDr, SDr, FDb, SDb: :func:`vilab.divergences.stochastic.run_sgd` with a
    dense factor, Adadelta, start mu = 0, T = ``t0`` I; BaM: :func:`run_bam`, B = ``bam_batch``) runs until the
    paper's stopping rule (slope of the last five 1000-iteration ELBO averages below ``tol``) or ``max_iter``
    (BaM: ``bam_iter``, 50-iteration windows).  Scores (Sec. 7.1): M* = -log(MMD^2_u + 1e-5) from ``n_rep``
    repeats of ``m`` draws against the reference (:func:`vilab.targets.metrics.m_star`: RBF kernel on
    coordinates standardised by the reference s.d., h = sqrt(d); the paper's bandwidth is unspecified) and
    |mu - mu*| / sigma* over the coordinates (mean, s.d.).  ``progress(fraction, text)`` is called between
    methods.  Returns {"rows": {code: {"M*": (mean, sd), "mode": (mean, sd), "seconds", "iterations",
    "status", "sd_ratio"}}, "model": its name, "d", "n", "settings": a sentence}.
    """
    from ..core import check_key
    from ..targets.metrics import m_star, mode_error
    from ..targets.basic import logistic_regression
    from .stochastic import run_bam, run_sgd

    key = check_key(key, "table6")
    if model is None:
        from ..targets.reference import load_reference
        from ..targets.german import german_credit

        model = german_credit()
        reference = load_reference("german") if reference is None else reference
    elif reference is None:
        raise ValueError("A model of your own needs its reference posterior (draws, sd and mode).")
    if getattr(model, "family", None) != "bernoulli":
        raise ValueError("Table 6 is a logistic regression: the model must be a Bernoulli GLM.")
    bad = [m_ for m_ in methods if m_ not in TABLE6_METHODS]
    if bad or not methods:
        raise ValueError(f"Choose methods among {', '.join(TABLE6_METHODS)}; got {list(methods)}.")
    max_iter = integer(max_iter, "The largest number of iterations", minimum=1000, maximum=1_000_000)
    m = integer(m, "The number of draws m", minimum=10, maximum=20_000)
    _, k_fit, k_eval = jax.random.split(key, 3)
    ref = {k: np.asarray(getattr(reference, k) if hasattr(reference, k) else reference[k], float)
           for k in ("draws", "sd", "mode")}
    Y = ref["draws"]
    if Y.shape[0] > m:
        Y = Y[np.linspace(0, Y.shape[0] - 1, m).astype(int)]
    tg = logistic_regression(model.X, model.y, prior_var=model.prior_var, name=model.name)
    d = model.d
    rows = {}
    for j, meth in enumerate(methods):
        if progress is not None:
            progress(j / len(methods), meth)
        t = time.perf_counter()
        if meth == "bam":
            tr = run_bam(tg, key=k_fit, n_iter=bam_iter, batch_size=bam_batch, tol=tol, history=False,
                         Sigma0=np.eye(d) / t0**2)
        else:
            tr = run_sgd(tg, meth, key=k_fit, n_iter=max_iter, batch_size=batch_size, tol=tol,
                         T0=t0 * np.eye(d))
        secs = time.perf_counter() - t
        mu = np.asarray(tr.mean[-1], float)
        cov = np.asarray(tr.cov[-1], float)
        Lc = np.linalg.cholesky(0.5 * (cov + cov.T))

        def sample_q(mm, k, mu=mu, Lc=Lc):
            return mu + np.asarray(jax.random.normal(k, (mm, d))) @ Lc.T

        ms = m_star(sample_q, Y, ref["sd"], n_rep=n_rep, key=k_eval)
        me = mode_error(mu, ref["mode"], ref["sd"])
        rows[meth] = {"M*": ms, "mode": (me[0], me[1]), "seconds": secs, "iterations": int(tr.n_steps),
                      "status": tr.status, "sd_ratio": float(np.mean(np.sqrt(np.diag(cov)) / ref["sd"]))}
    if progress is not None:
        progress(1.0, "done")
    settings = (f"{model.name}: n = {model.n}, d = {d}, prior variance {model.prior_var:g}; start μ = 0, "
                f"T = {t0:g} I; Adadelta (decay 0.95, ε = 1e-6); B = {batch_size} (FDb, SDb), {bam_batch} (BaM); "
                f"stop when the slope of the last five 1000-iteration ELBO averages < {tol:g} or at {max_iter:,} "
                f"iterations (BaM: 50-iteration averages, {bam_iter:,}); M* from {n_rep} repeats of m = {Y.shape[0]} "
                f"draws against {len(ref['draws']):,} stored Monte Carlo draws")
    return {"rows": rows, "model": model.name, "d": d, "n": model.n, "settings": settings}
