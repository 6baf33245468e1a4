"""The variance of Tan (2025) Thm 2's estimators of the factor gradients along a run (Sec. 5.1, after Thm 2).

Thm 2: for theta ~ q = N(mu, Sigma), Sigma = C C^T = (T T^T)^-1, z = C^-1 (theta - mu), v = T^-1 grad_theta h(theta)
and h = log p(y, theta) - log q(theta) (lambda in log q held fixed),

    grad_vech(C) L = E vech(G1) = E vech(F1),   G1 = grad_theta h(theta) z^T,        F1 = hess_theta h(theta) C,
    grad_vech(T) L = E vech(G2) = E vech(F2),   G2 = -(theta - mu) v^T,               F2 = -Sigma hess_theta h(theta) T^-T.

G1, G2 are the first-order estimates (the gradient of log p at the draw), F1, F2 the second-order ones (its
Hessian). The paper's claim, in the paragraph after Thm 2: if l = log p(y, theta) is well approximated by its
second-order Taylor expansion about the mode, hess_theta h(theta) ~ hess l(mode) + Sigma^-1 does not depend on
theta, so "F1 and F2 ... have almost zero variation" while G1 and G2 "are subjected to stochasticity due to
simulation of theta"; second-order estimates are "more stable close to the optimum". For a Gaussian target l is
exactly quadratic: every single draw of F1 or F2 is the exact gradient.

What the run shows beyond the claim (ours): with the same quadratic l, grad_theta h = A (mode - mu) +
(Sigma^-1 - A)(theta - mu) (A = -hess l), so G1 and G2 also lose their noise where q reaches the optimum
N(mode, A^-1) of a Gaussian target (h is then constant). On a non-Gaussian target both keep a floor set by the
third derivatives of l: at the optimum of the 2-D logistic regression the ratio of the spreads falls to a few,
while far from it (a covariance far from the optimum's) it is in the thousands.

    single_draw_estimates(target, mu, C, key, n_draws)   tril G1, F1, G2, F2 at the same n draws, and the exact
                                                         gradients where the target gives them
    spread(X)                                            the trace of the covariance of vech X (the Frobenius
                                                         variance) and its Monte Carlo standard error
    variance_ratio(first, second)                        V(first) / V(second) with the s.e. of its logarithm
    bias_z(X, exact)                                     the largest |mean - exact| / s.e. over the entries
    along_run(target, start, ...)                        a deterministic run of Tan's Alg. 1N (exact gradients,
                                                         backtracking, Sec. 4.1) and the spread of the four
                                                         estimators at its iterates
    noise_cloud(run, k, factor)                          the single-draw estimates at iterate k, for a figure
    demo_target(name)                                    the page's targets: a logistic regression, a Gaussian
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular

from ..core import checks
from ..algorithms import run as run_method
from ..algorithms import oracle
from ..family import natgrad as ng
from ..family.gaussian import CholCov
from ..targets import Target

__all__ = ["FACTORS", "DEMO_TARGETS", "single_draw_estimates", "spread", "variance_ratio", "bias_z", "along_run",
           "noise_cloud", "demo_target", "MAX_DRAWS"]

#: the factor -> (first-order estimator, second-order estimator) of Tan (2025) Thm 2
FACTORS = {"C": ("G1", "F1"), "T": ("G2", "F2")}
#: the targets the Positive definiteness page offers
DEMO_TARGETS = ("logistic regression (n = 200)", "Gaussian (correlation 0.9)")
#: the most single-draw estimates one call takes (n x d x d float64 arrays, four of them)
MAX_DRAWS = 200_000


def _estimates(target: Target, mu, C, z):
    """The four estimators at theta = mu + C z (one row per draw), vmapped over the draws (Tan Thm 2)."""
    d = mu.shape[0]
    eye = jnp.eye(d, dtype=mu.dtype)
    Ci = solve_triangular(C, eye, lower=True)
    P = Ci.T @ Ci  # Sigma^-1
    T = jnp.linalg.cholesky(ng.sym(P))  # lower triangular, T T^T = Sigma^-1
    theta = mu + z @ C.T
    gh = target.grad_batch(theta) + (theta - mu) @ P  # grad_theta h, Tan Sec. 1: lambda in log q held fixed
    Hh = target.hess_batch(theta) + P  # hess_theta h

    def one(th, g, H, zz):
        return (jnp.tril(ng.estimator_G1(g, zz)), jnp.tril(ng.estimator_F1(H, C)),
                jnp.tril(ng.estimator_G2(th, mu, T, g)), jnp.tril(ng.estimator_F2(T, H)))

    G1, F1, G2, F2 = jax.vmap(one)(theta, gh, Hh, z)
    out = {"G1": G1, "F1": F1, "G2": G2, "F2": F2, "T": T, "theta": theta}
    if oracle.has_exact(target):  # the exact gradients (Gaussian: closed form; GLM: Gauss-Hermite quadrature)
        _, G_S = oracle.exact_elbo_grads(target, mu, C @ C.T)
        out["exact_C"] = ng.grad_chol_cov(C, G_S)
        out["exact_T"] = ng.grad_chol_prec(T, G_S)
    return out


_estimates_jit = jax.jit(_estimates, static_argnums=0)


def single_draw_estimates(target: Target, mu, C, key, n_draws: int = 2000) -> dict:
    """``n_draws`` single-draw estimates of Tan (2025) Thm 2 at q = N(mu, C C^T), all four at the same draws
    theta = mu + C z: ``"G1"``, ``"F1"`` (of grad_C L), ``"G2"``, ``"F2"`` (of grad_T L, T the lower-triangular
    factor of Sigma^-1), each (n, d, d) with the lower triangle only; ``"T"``, ``"theta"`` (n, d); and the exact
    gradients ``"exact_C"`` = tril grad_C L, ``"exact_T"`` = tril grad_T L for Gaussian and GLM targets (None
    otherwise). ValueError for a factor that is not lower triangular with a nonzero diagonal, a mean of the wrong
    length, or a number of draws outside 2 .. :data:`MAX_DRAWS`."""
    if not isinstance(target, Target):
        raise ValueError("target must be a vilab.targets.Target.")
    d = target.dim
    mu = checks.real_array(mu, "The mean mu", ndim=1)
    C = checks.real_array(C, "The Cholesky factor C", ndim=2)
    if mu.shape != (d,) or C.shape != (d, d):
        raise ValueError(f"The mean and the factor must be of length {d} and {d} x {d} for this target; got "
                         f"{mu.shape} and {C.shape}.")
    if np.any(np.triu(C, 1) != 0) or np.any(np.diag(C) == 0):
        raise ValueError("C must be lower triangular with a nonzero diagonal (a Cholesky factor of Sigma).")
    n = checks.integer(n_draws, "The number of draws", minimum=2, maximum=MAX_DRAWS)
    mu_j, C_j = jnp.asarray(mu), jnp.asarray(C)
    z = jax.random.normal(key, (n, d), dtype=jnp.float64)
    out = {"exact_C": None, "exact_T": None}
    out.update({k: np.asarray(v) for k, v in _estimates_jit(target, mu_j, C_j, z).items()})
    return out


def _vech_rows(X) -> np.ndarray:
    X = np.asarray(X, float)
    if X.ndim != 3 or X.shape[1] != X.shape[2]:
        raise ValueError(f"The estimates must be an (n, d, d) array of lower-triangular matrices; got {X.shape}.")
    if X.shape[0] < 2:
        raise ValueError("A spread needs at least two estimates.")
    i, j = np.tril_indices(X.shape[1])
    return X[:, i, j]


def _contributions(X) -> tuple[np.ndarray, float]:
    """Per-draw contributions a_i = n/(n-1) |vech X_i - mean|^2 (their mean is the unbiased total variance)."""
    V = _vech_rows(X)
    n = V.shape[0]
    a = np.sum((V - V.mean(axis=0)) ** 2, axis=1) * n / (n - 1)
    return a, float(a.mean())


def spread(X) -> tuple[float, float]:
    """(V, s.e.): V = tr Cov(vech X) = E |vech X - E vech X|^2 (the Frobenius variance of the lower triangle)
    estimated from the n estimates X (n, d, d), and its Monte Carlo standard error sd(a) / sqrt(n) of the per-draw
    squared deviations a_i."""
    a, v = _contributions(X)
    return v, float(np.std(a, ddof=1) / math.sqrt(a.size))


def variance_ratio(first, second) -> dict:
    """V(first) / V(second) of two estimators evaluated at the same n draws (:func:`spread`), with the standard
    error of its logarithm by the delta method for paired draws:
    se^2 = [var(a)/V1^2 + var(b)/V2^2 - 2 cov(a, b)/(V1 V2)] / n. Returns ``{"V_first", "V_second", "ratio",
    "log_ratio", "se_log_ratio", "lower_2se"}`` (lower_2se = log ratio - 2 s.e.; ratio = inf where V(second) is
    0 to round-off: the second estimator has no noise at all)."""
    a, v1 = _contributions(first)
    b, v2 = _contributions(second)
    if a.size != b.size:
        raise ValueError("The two estimators must be evaluated at the same draws (the same number of estimates).")
    n = a.size
    if v2 <= 0.0 or v1 <= 0.0:
        ratio = math.inf if v2 <= 0.0 < v1 else math.nan
        return {"V_first": v1, "V_second": v2, "ratio": ratio, "log_ratio": math.log(ratio) if ratio > 0 else ratio,
                "se_log_ratio": math.nan, "lower_2se": math.log(ratio) if ratio > 0 else ratio}
    c = np.cov(np.vstack([a / v1, b / v2]), ddof=1)
    se = math.sqrt(max(c[0, 0] + c[1, 1] - 2.0 * c[0, 1], 0.0) / n)
    lr = math.log(v1 / v2)
    return {"V_first": v1, "V_second": v2, "ratio": v1 / v2, "log_ratio": lr, "se_log_ratio": se,
            "lower_2se": lr - 2.0 * se}


def bias_z(X, exact) -> float:
    """The largest |mean of the estimates - exact| / (its standard error) over the lower-triangular entries
    (Thm 2's unbiasedness: of order 1 for an unbiased estimator; entries with no spread must agree to round-off,
    else the score is inf)."""
    V = _vech_rows(X)
    i, j = np.tril_indices(np.asarray(X).shape[1])
    e = np.asarray(exact, float)[i, j]
    m, se = V.mean(axis=0), V.std(axis=0, ddof=1) / math.sqrt(V.shape[0])
    diff = np.abs(m - e)
    tiny = 1e-9 * max(1.0, float(np.abs(e).max()))
    z = np.where(se > tiny, diff / np.where(se > tiny, se, 1.0), np.where(diff <= tiny, 0.0, np.inf))
    return float(z.max())


def demo_target(name: str) -> Target:
    """The page's targets (:data:`DEMO_TARGETS`): the 2-D Bayesian logistic regression of the digest's E7
    (n = 200, x = (1, N(0, 1)), theta0 = (0.5, -1), prior N(0, 100 I); vilab.targets.regression.logistic_2d) or
    the Gaussian N((1, -1), [[1, 0.9], [0.9, 1]]) (log p exactly quadratic)."""
    from ..targets import gaussian_target
    from ..targets.regression import logistic_2d

    if name == DEMO_TARGETS[0]:
        return logistic_2d().target()
    if name == DEMO_TARGETS[1]:
        return gaussian_target(np.array([1.0, -1.0]), cov=np.array([[1.0, 0.9], [0.9, 1.0]]),
                               name="Gaussian (correlation 0.9)")
    raise ValueError(f"The target must be one of {DEMO_TARGETS}; got {name!r}.")


def along_run(target: Target, start=None, *, n_steps: int = 40, rho: float = 1.0, n_draws: int = 2000,
              seed: int = 0, every: int = 1) -> dict:
    """A run of Tan (2025) Alg. 1N (natural gradient in (mu, C), ``"tan-1N"``) with exact gradients and
    backtracking from rho0 = ``rho`` (Sec. 4.1; stops when the ELBO changes by less than 1e-10 of itself), and at
    every ``every``-th iterate (and the last) ``n_draws`` single-draw estimates of Thm 2 (:func:`single_draw_estimates`,
    new draws per iterate, key from ``seed``). ``start``: a vilab.family.gaussian parameterization or (mu, Sigma);
    default mu = 0, C = I. Needs a target with exact gradients (Gaussian or GLM).

    Returns a dict: ``iterations`` (k,), ``elbo`` (k,), ``mean`` (k, d), ``factor`` (k, d, d) (C at the iterates),
    ``V`` {"G1", "F1", "G2", "F2": (k,) total variances}, ``se`` (their s.e.), ``ratio`` {"C", "T": list of
    :func:`variance_ratio` dicts}, ``bias_z`` {"G1", ...: (k,)}, ``estimates`` (the per-iterate dicts, for
    :func:`noise_cloud`), ``status`` of the run, ``target`` (its name)."""
    if not isinstance(target, Target):
        raise ValueError("target must be a vilab.targets.Target.")
    if not oracle.has_exact(target):
        raise ValueError(f"The run uses exact gradients: {target.name!r} is neither a Gaussian nor a GLM target.")
    d = target.dim
    n_steps = checks.integer(n_steps, "The number of steps", minimum=1, maximum=10_000)
    every = checks.integer(every, "every", minimum=1)
    seed = checks.integer(seed, "The seed", minimum=0)
    start = CholCov(jnp.zeros(d), jnp.eye(d)) if start is None else start
    tr = run_method("tan-1N", target, start, n_steps, rho, grads="exact", schedule="backtracking", rel_tol=1e-10)
    rows = list(range(0, tr.n_rows, every))
    if rows[-1] != tr.n_rows - 1:
        rows.append(tr.n_rows - 1)
    keys = jax.random.split(jax.random.PRNGKey(seed), len(rows))
    V = {k: [] for k in ("G1", "F1", "G2", "F2")}
    se = {k: [] for k in V}
    bz = {k: [] for k in V}
    ratio = {"C": [], "T": []}
    ests = []
    for r, key in zip(rows, keys):
        est = single_draw_estimates(target, np.asarray(tr.mean[r]), np.asarray(tr.extra["factor"][r]), key, n_draws)
        for k in V:
            v, s = spread(est[k])
            V[k].append(v)
            se[k].append(s)
            bz[k].append(bias_z(est[k], est["exact_C" if k.endswith("1") else "exact_T"]))
        for f, (first, second) in FACTORS.items():
            ratio[f].append(variance_ratio(est[first], est[second]))
        ests.append(est)
    return {"iterations": np.asarray(tr.iterations)[rows], "elbo": np.asarray(tr.extra["elbo"])[rows],
            "mean": np.asarray(tr.mean)[rows], "factor": np.asarray(tr.extra["factor"])[rows],
            "V": {k: np.asarray(v) for k, v in V.items()}, "se": {k: np.asarray(v) for k, v in se.items()},
            "bias_z": {k: np.asarray(v) for k, v in bz.items()}, "ratio": ratio, "estimates": ests,
            "status": tr.status, "target": target.name, "n_draws": int(n_draws)}


def noise_cloud(run: dict, k: int, factor: str = "C", entries=((0, 0), (1, 1))) -> dict:
    """The single-draw estimates of iterate ``k`` of :func:`along_run` (an index into its rows) for ``factor``
    "C" (G1, F1) or "T" (G2, F2), two of their entries each (default the first two diagonal entries): ``first``,
    ``second`` (n, 2) arrays, ``exact`` (2,) (None without exact gradients), the entry labels and the spreads."""
    if factor not in FACTORS:
        raise ValueError(f"The factor must be 'C' or 'T'; got {factor!r}.")
    ests = run["estimates"]
    k = checks.integer(k, "The iterate", minimum=-len(ests), maximum=len(ests) - 1)
    est = ests[k]
    d = est["G1"].shape[1]
    (a, b), (c, e) = entries
    if not all(0 <= j <= i < d for i, j in entries):
        raise ValueError(f"Each entry (i, j) must lie in the lower triangle of a {d} x {d} factor (0 <= j <= i < d).")
    first, second = FACTORS[factor]
    pick = lambda X: np.column_stack([X[:, a, b], X[:, c, e]])  # noqa: E731
    ex = est["exact_C" if factor == "C" else "exact_T"]
    return {"first": pick(est[first]), "second": pick(est[second]),
            "exact": None if ex is None else np.array([ex[a, b], ex[c, e]]),
            "names": (first, second), "entries": ((a, b), (c, e)), "factor": factor,
            "iteration": int(run["iterations"][k]),
            "V_first": float(run["V"][first][k]), "V_second": float(run["V"][second][k])}
