"""The ELBO of a 1-D Gaussian q = N(mu, sigma^2) as a landscape: surfaces, gradient vector fields in
several charts, and runs of every 1-D update rule (Tan (2025) Sec. 4.1, Fig. 1, Table 2; Kumar et al.
(2025) digest Sec. 8.1).

Surfaces and fields (any array shapes; exact expectations needed)::

    elbo_grads_1d(target, mu, var) -> (L, dL/dmu, dL/dsigma^2), arrays of the broadcast shape
    elbo_grid_1d(target, mu, var) -> L, shape (len(var), len(mu))
    gradient_field_1d(target, mu, var, geometry, coords="mu-var") -> (U, V), same shape

``geometry`` (all ascent directions of the ELBO, as tangent vectors in the (mu, sigma^2) plane):

* ``euclidean-var``  Euclidean gradient in kappa = (mu, sigma^2): (g_mu, g_s2)
* ``euclidean-sd``   Euclidean gradient in (mu, sigma) (= the 1-D Wasserstein gradient flow)
* ``euclidean-prec`` Euclidean gradient in xi = (mu, 1/sigma^2)
* ``natural``        Fisher-Rao natural gradient (s2 g_mu, 2 s2^2 g_s2): the same tangent vector
                     for kappa, xi, the natural parameter, C = sigma and T = 1/sigma (Tan Table 1)
* ``wasserstein``    alias of euclidean-sd

Charts (coordinates of the same picture; ``CHARTS``): (mu, sigma^2), (mu, sigma), (mu, log sigma),
the natural parameters (mu/sigma^2, -1/(2 sigma^2)), where natural-gradient flow lines on Gaussian
targets are straight, and (mu, log sigma^2), which spreads the small variances where the runs of
Tan (2025) Fig. 1 start over the whole height of the plot::

    to_chart(mu, var, chart) -> (x, y)          from_chart(x, y, chart) -> (mu, var)
    chart_fields(mu, var, g_mu, g_var, chart) -> (x, y, Euclidean x, y, natural x, y)
    chart_window(chart, window, points) -> ((x0, x1), (y0, y1))
    chart_grid(target, chart, window_xy, n) -> dict of a regular grid in the chart's coordinates

Runs (IEEE scalar arithmetic, as the paper's code; same options and Trace as vilab.algorithms.run)::

    run_1d(rule, target, mu0, s2_0, step_size, schedule, rel_tol, n_steps) -> Trace
    euclidean_kappa_ieee(target, mu0, s2_0, ...) = run_1d("gd-mv", ...)   (Tan Table 2, Euclidean column)
    RULES_1D: gd-mv, kappa, xi, lambda, tan-1N (C = sigma), tan-2N (T = 1/sigma), tan-2N-cor1
(Starting points typed by a student are parsed by the pages' helper ``vilab_ui.starts``.)
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ..algorithms import oracle
from ..core import memoize
from ..core.algorithm import CODES, COLLAPSED, TINY
from ..core.trace import Trace, blowup_code, diverged_status
from ..targets import Target

__all__ = ["elbo_grads_1d", "elbo_grid_1d", "gradient_field_1d", "GEOMETRIES", "CHARTS", "to_chart",
           "from_chart", "chart_fields", "chart_labels", "chart_window", "chart_grid", "RULES_1D", "run_1d",
           "euclidean_kappa_ieee"]

GEOMETRIES = ("euclidean-var", "euclidean-sd", "euclidean-prec", "natural", "wasserstein")
_CHUNK = 1024  # grid points per compiled call: one compilation serves every grid size


# ---------------------------------------------------------------------------------------------
# ELBO and its Euclidean gradient on the (mu, sigma^2) plane


def _check_target(target):
    if not isinstance(target, Target) or target.dim != 1:
        raise ValueError("Vector fields on the (mu, sigma^2) plane need a 1-D target.")
    if not oracle.has_exact(target):
        raise ValueError(f"{target.name!r} has no exact expectations (needs a Gaussian or GLM target).")


def _gaussian_1d(target):
    """(m*, a) of a 1-D Gaussian target N(m*, 1/a), or None."""
    if target.dim == 1 and target.quadratic and target.mean is not None and target.cov is not None:
        return float(target.mean[0]), 1.0 / float(target.cov[0, 0])
    return None


def _gaussian_elbo(m, a):
    """Kumar et al. digest Sec. 4 T1 / 8.1, exact for the target N(m, 1/a) (log p without its
    normalising constant, as :func:`vilab.targets.gaussian_target`):
    L = -a/2 ((mu - m)^2 + s2) + 1/2 log(2 pi e s2), dL/dmu = -a (mu - m), dL/ds2 = (1/s2 - a)/2.
    numpy, so the same closures serve whole grids and scalar runs."""

    def L(mu, s2):
        return -0.5 * a * ((mu - m) ** 2 + s2) + 0.5 * np.log(s2) + 0.5 * (1.0 + math.log(2.0 * math.pi))

    def grads(mu, s2):
        return -a * (mu - m), 0.5 * (1.0 / s2 - a)

    return L, grads


@memoize("vilab.theory.fields ELBO grids", maxsize=32)
def _jitted_fields(target):
    def one(m, v):
        mu, S = jnp.reshape(m, (1,)), jnp.reshape(v, (1, 1))
        L = oracle.elbo_exact(target, mu, S, jnp.log(v))
        g, G = oracle.exact_elbo_grads(target, mu, S)
        return L, g[0], G[0, 0]

    return jax.jit(jax.vmap(one))


def elbo_grads_1d(target: Target, mu, var):
    """ELBO L(mu, sigma^2) and its Euclidean gradient (dL/dmu, dL/dsigma^2), elementwise.

    A 1-D Gaussian target uses its closed form (no compilation, so a slider over its precision
    redraws at once); any other 1-D target with exact expectations (the horseshoe-crab toy of
    Tan (2025) Supp. S2 through ``info["exact_elbo"]``, a GLM by Gauss-Hermite) one jitted, vmapped
    pass in fixed-size chunks. Returns three float64 arrays of the broadcast shape of mu and var.
    """
    _check_target(target)
    mu, var = np.broadcast_arrays(np.asarray(mu, dtype=np.float64), np.asarray(var, dtype=np.float64))
    if np.any(var <= 0) or not (np.all(np.isfinite(mu)) and np.all(np.isfinite(var))):
        raise ValueError("The grid needs finite means and positive variances.")
    gauss = _gaussian_1d(target)
    if gauss is not None:
        L_fn, g_fn = _gaussian_elbo(*gauss)
        g, gs = g_fn(mu, var)
        return L_fn(mu, var), np.broadcast_to(g, mu.shape).copy(), np.broadcast_to(gs, mu.shape).copy()
    shape, n = mu.shape, mu.size
    pad = -n % _CHUNK
    m_p = np.concatenate([mu.ravel(), np.zeros(pad)])
    v_p = np.concatenate([var.ravel(), np.ones(pad)])
    fn = _jitted_fields(target)
    outs = [fn(jnp.asarray(m_p[i:i + _CHUNK]), jnp.asarray(v_p[i:i + _CHUNK])) for i in range(0, m_p.size, _CHUNK)]
    L, g, gs = (np.concatenate([np.asarray(o[k]) for o in outs])[:n].reshape(shape) for k in range(3))
    return L, g, gs


def elbo_grid_1d(target: Target, mu, var) -> np.ndarray:
    """ELBO L(mu, sigma^2) on the grid mu x var, shape (len(var), len(mu))."""
    M, V = np.meshgrid(np.atleast_1d(np.asarray(mu, float)), np.atleast_1d(np.asarray(var, float)))
    return elbo_grads_1d(target, M, V)[0]


def gradient_field_1d(target: Target, mu, var, geometry: str = "natural", coords: str = "mu-var"):
    """Ascent direction of the ELBO in ``geometry`` at every grid point of mu x var, as (U, V) arrays
    of shape (len(var), len(mu)) in the (mu, sigma^2) plane (``coords="mu-sd"``: (d mu, d sigma))."""
    if geometry not in GEOMETRIES:
        raise ValueError(f"geometry must be one of {GEOMETRIES}; got {geometry!r}.")
    if coords not in ("mu-var", "mu-sd"):
        raise ValueError("coords must be 'mu-var' or 'mu-sd'.")
    M, v = np.meshgrid(np.atleast_1d(np.asarray(mu, float)), np.atleast_1d(np.asarray(var, float)))
    _, g, gs = elbo_grads_1d(target, M, v)
    if geometry == "euclidean-var":
        U, dV = g, gs
    elif geometry in ("euclidean-sd", "wasserstein"):
        U, dV = g, 4.0 * v * gs          # g_sigma = 2 sigma g_s2; d s2 = 2 sigma d sigma
    elif geometry == "euclidean-prec":
        U, dV = g, v**4 * gs             # g_p = -s2^2 g_s2; d s2 = -s2^2 d p
    else:
        U, dV = v * g, 2.0 * v**2 * gs   # Tan (2025) Table 1 (kappa row), 1-D
    if coords == "mu-sd":
        return U, dV / (2.0 * np.sqrt(v))
    return U, dV


# ---------------------------------------------------------------------------------------------
# Charts of the (mu, sigma^2) half-plane

# new charts go at the end: pages keep the chart's name in their URL and code refers to CHARTS[i]
CHARTS = ("(mu, sigma^2)", "(mu, sigma)", "(mu, log sigma)", "natural (mu/sigma^2, -1/(2 sigma^2))",
          "(mu, log sigma^2)")
_LABELS = {CHARTS[0]: ("mu", "sigma^2"), CHARTS[1]: ("mu", "sigma"), CHARTS[2]: ("mu", "log sigma"),
           CHARTS[3]: ("eta_1 = mu / sigma^2", "eta_2 = -1 / (2 sigma^2)"), CHARTS[4]: ("mu", "log sigma^2")}


def _chart(chart):
    if chart not in CHARTS:
        raise ValueError(f"Unknown chart {chart!r}; choose one of {CHARTS}.")
    return chart


def chart_labels(chart: str) -> tuple[str, str]:
    """Axis titles of ``chart``."""
    return _LABELS[_chart(chart)]


def to_chart(mu, var, chart: str):
    """Coordinates (x, y) of N(mu, var) in ``chart`` (arrays of the broadcast shape)."""
    mu, var = np.asarray(mu, float), np.asarray(var, float)
    c = _chart(chart)
    if c == CHARTS[0]:
        return mu, var
    if c == CHARTS[1]:
        return mu, np.sqrt(var)
    if c == CHARTS[2]:
        return mu, 0.5 * np.log(var)
    if c == CHARTS[4]:
        return mu, np.log(var)
    return mu / var, -0.5 / var


def from_chart(x, y, chart: str):
    """(mu, var) of the point (x, y) of ``chart``; ValueError where it is not a Gaussian."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    c = _chart(chart)
    if c == CHARTS[2]:
        return x, np.exp(2.0 * y)
    if c == CHARTS[4]:
        return x, np.exp(y)
    if c == CHARTS[3]:
        if np.any(y >= 0):
            raise ValueError("In natural parameters eta_2 = -1/(2 sigma^2) must be negative.")
        return -x / (2.0 * y), -0.5 / y
    if np.any(y <= 0):
        raise ValueError(f"{_LABELS[c][1]} must be positive.")
    return (x, y) if c == CHARTS[0] else (x, y**2)


def chart_fields(mu, var, g_mu, g_var, chart: str):
    """Coordinates, Euclidean gradient field and natural gradient field of the same ELBO in ``chart``.

    The natural gradient is a tangent vector, the same for every chart (Tan (2025) Sec. 3: the
    natural-gradient flow is parametrisation invariant): in (mu, s2) it is (s2 g_mu, 2 s2^2 g_s2)
    (Table 1 kappa row, d = 1), pushed forward by the chart's Jacobian. The Euclidean gradient is a
    covector: grad_phi L = J^T grad_(mu,s2) L with J = d(mu, s2)/d phi, drawn in phi's coordinates
    (the direction of Euclidean gradient ascent in that chart).
    Charts: (mu, s2); (mu, sigma): s2 = sigma^2; (mu, log sigma): s2 = e^{2 l}; (mu, log s2): s2 = e^u;
    natural (l1, l2) = (mu/s2, -1/(2 s2)): mu = -l1/(2 l2), s2 = -1/(2 l2).
    Returns (x, y, Ex, Ey, Nx, Ny) as arrays of the input shape.
    """
    mu, s2, g_mu, g_s2 = (np.asarray(v, float) for v in (mu, var, g_mu, g_var))
    c = _chart(chart)
    n_mu, n_s2 = s2 * g_mu, 2.0 * s2**2 * g_s2  # natural gradient, (mu, s2) components
    x, y = to_chart(mu, s2, c)
    if c == CHARTS[0]:
        return x, y, g_mu, g_s2, n_mu, n_s2
    if c == CHARTS[1]:  # ds2/dsigma = 2 sigma; dsigma = ds2 / (2 sigma)
        return x, y, g_mu, 2 * y * g_s2, n_mu, n_s2 / (2 * y)
    if c == CHARTS[2]:  # ds2/dl = 2 s2; dl = ds2 / (2 s2)
        return x, y, g_mu, 2 * s2 * g_s2, n_mu, n_s2 / (2 * s2)
    if c == CHARTS[4]:  # ds2/du = s2; du = ds2 / s2
        return x, y, g_mu, s2 * g_s2, n_mu, n_s2 / s2
    l1, l2 = x, y
    # J = d(mu, s2)/d(l1, l2): mu = -l1/(2 l2) -> (-1/(2 l2), l1/(2 l2^2)); s2 = -1/(2 l2) -> (0, 1/(2 l2^2))
    Ex = g_mu * (-0.5 / l2)
    Ey = g_mu * (l1 / (2 * l2**2)) + g_s2 * (1 / (2 * l2**2))
    # pushforward by d(l1, l2)/d(mu, s2) = [[1/s2, -mu/s2^2], [0, 1/(2 s2^2)]]
    Nx = n_mu / s2 - mu / s2**2 * n_s2
    Ny = n_s2 / (2 * s2**2)
    return l1, l2, Ex, Ey, Nx, Ny


def chart_window(chart: str, window, points=(), pad: float = 0.12):
    """The plotting box of ``chart``: for (mu, s2), (mu, sigma), (mu, log sigma), (mu, log s2) the image of the
    (mu, s2) rectangle ``window`` = ((mu0, mu1), (s0, s1)) (these charts map rectangles to
    rectangles); for natural parameters, where that image is a thin sliver reaching far out, the
    bounding box of the chart images of ``points`` ((mu, s2) pairs: starts, optimum), padded by
    ``pad`` of its size on each side and kept inside eta_2 < 0."""
    (m0, m1), (s0, s1) = window
    if not (s0 > 0 and s1 > s0 and m1 > m0):
        raise ValueError("The window needs mu0 < mu1 and 0 < sigma^2_0 < sigma^2_1.")
    c = _chart(chart)
    if c != CHARTS[3]:
        y0, y1 = to_chart(np.zeros(2), np.array([s0, s1], float), c)[1]
        return (float(m0), float(m1)), (float(y0), float(y1))
    pts = np.asarray(points, float).reshape(-1, 2)
    if pts.size == 0:
        pts = np.array([[m0, s0], [m1, s0], [m0, s1], [m1, s1]])
    x, y = to_chart(pts[:, 0], pts[:, 1], c)
    xr = max(x.max() - x.min(), 1e-3 * max(1.0, abs(x).max()))
    yr = max(y.max() - y.min(), 1e-3 * abs(y).max())
    y1 = min(y.max() + pad * yr, 0.5 * y.max())  # eta_2 stays negative
    return (float(x.min() - pad * xr), float(x.max() + pad * xr)), (float(y.min() - pad * yr), float(y1))


def chart_grid(target: Target, chart: str, window_xy, n: int) -> dict:
    """A regular n x n grid over ``window_xy`` in the chart's own coordinates, with the ELBO and
    both gradient fields there: dict xs, ys (1-D), L, Ex, Ey, Nx, Ny (n x n, rows = ys)."""
    (x0, x1), (y0, y1) = window_xy
    n = int(n)
    if n < 2:
        raise ValueError("A grid needs at least 2 points per axis.")
    xs, ys = np.linspace(x0, x1, n), np.linspace(y0, y1, n)
    X, Y = np.meshgrid(xs, ys)
    mu, var = from_chart(X, Y, chart)
    with np.errstate(over="ignore", invalid="ignore"):
        L, g, gs = elbo_grads_1d(target, mu, var)
        _, _, Ex, Ey, Nx, Ny = chart_fields(mu, var, g, gs, chart)
    return {"xs": xs, "ys": ys, "L": L, "Ex": Ex, "Ey": Ey, "Nx": Nx, "Ny": Ny}


# ---------------------------------------------------------------------------------------------
# Runs of the 1-D update rules in IEEE scalar arithmetic

RULES_1D = {
    "gd-mv": "Euclidean gradient in kappa = (mu, sigma^2) (Tan (2025) Table 2; Kumar et al. Eq. 4)",
    "kappa": "natural gradient in kappa = (mu, sigma^2) (Tan (2025) Table 1)",
    "xi": "natural gradient in xi = (mu, 1/sigma^2), mean with the old sigma^2 (Tan (2025) Table 1)",
    "lambda": "natural parameter, mean with the new sigma^2 (Tan (2025) Table 1; Kumar et al. VN, Eq. 7)",
    "tan-1N": "natural gradient in (mu, C), C = sigma (Tan (2025) Thm 1(i))",
    "tan-2N": "natural gradient in (mu, T), T = 1/sigma, mean with the old sigma^2 (Tan (2025) Thm 1(ii))",
    "tan-2N-cor1": "natural gradient in (mu, T), mean with the updated T (Tan (2025) Corollary 1)",
}
_CHART_1D = {"gd-mv": "s2", "kappa": "s2", "xi": "prec", "lambda": "prec", "tan-1N": "c", "tan-2N": "t",
             "tan-2N-cor1": "t"}
_REASON_1D = {"s2": "covariance lost positive definiteness", "prec": "precision lost positive definiteness",
              "c": "Cholesky factor became singular (a zero on its diagonal)",
              "t": "Cholesky factor became singular (a zero on its diagonal)"}


def _scalar_fns(target):
    """Python-float (mu, s2) -> L and -> (dL/dmu, dL/ds2): the target's own (``info["scalar_elbo"]``,
    the horseshoe-crab toy) or the closed form of a 1-D Gaussian target."""
    L_fn, g_fn = target.info.get("scalar_elbo"), target.info.get("scalar_elbo_grads")
    if target.dim == 1 and L_fn is not None and g_fn is not None:
        return L_fn, g_fn
    gauss = _gaussian_1d(target) if isinstance(target, Target) else None
    if gauss is None:
        raise ValueError("The scalar 1-D runs need a 1-D Gaussian target or a 1-D target with scalar closed "
                         "forms of the ELBO (info['scalar_elbo'] and info['scalar_elbo_grads']), like the "
                         "horseshoe-crab toy.")
    L_fn, g_fn = _gaussian_elbo(*gauss)
    return (lambda m, v: float(L_fn(m, v))), (lambda m, v: tuple(float(u) for u in g_fn(m, v)))


def _step_1d(rule, mu, M, g, G, rho):
    """One step of ``rule`` from (mu, M), M the rule's chart value (sigma^2, 1/sigma^2, C or T),
    with g = dL/dmu, G = dL/dsigma^2; the 1-D forms of the matrix updates in vilab.family.natgrad:
      gd-mv  mu + rho g,                 s2 + rho G
      kappa  mu + rho s2 g,              s2 + 2 rho s2^2 G                         (Table 1, kappa)
      xi     mu + rho s2 g,              P - 2 rho G   (old s2 in the mean)        (Table 1, xi)
      lambda P' = P - 2 rho G,           mu + rho g / P'                           (Table 1, lambda)
      tan-1N mu + rho c^2 g,             c (1 + rho c^2 G)   [C tril_half(C^T 2 G C)]   (Thm 1(i))
      tan-2N mu + rho g / t^2,           t (1 - rho G / t^2) [T tril_half(T^T grad_T)]  (Thm 1(ii))
      cor1   t' as tan-2N,               mu + rho g / (t t')                       (Corollary 1)
    Returns (mu', M', s2') with s2' = NaN where M' is not a Gaussian's."""
    if rule == "gd-mv":
        s2 = M + rho * G
        return mu + rho * g, s2, s2
    if rule == "kappa":
        s2 = M + 2.0 * rho * M * M * G
        return mu + rho * M * g, s2, s2
    if rule in ("xi", "lambda"):
        P = M - 2.0 * rho * G
        s2 = 1.0 / P if P != 0 else math.nan
        return mu + rho * (g / M if rule == "xi" else g / P), P, s2
    if rule == "tan-1N":
        c = M + rho * M * (M * M * G)
        return mu + rho * M * M * g, c, c * c
    t = M + rho * M * (-G / (M * M))
    m_new = mu + rho * g / (M * M) if rule == "tan-2N" else mu + rho * g / (M * t)
    return m_new, t, (1.0 / (t * t) if t != 0 else math.inf)


def _code_1d(kind, mu, M, s2):
    """0: a proper Gaussian; else the failure (as vilab.algorithms: non-finite, not PD/singular, exploded)."""
    if not (math.isfinite(mu) and math.isfinite(M) and math.isfinite(s2)):
        return "non-finite values"
    if (kind in ("s2", "prec") and M <= 0) or (kind in ("c", "t") and abs(M) <= 1e-150):
        return _REASON_1D[kind]
    if abs(mu) > 1e12 or abs(s2) > 1e24:
        return "values exploded (|mean| > 1e12 or |Sigma| > 1e24)"
    if s2 < TINY:  # as vilab.algorithms.core.valid_code (vilab.core.algorithm.range_code)
        return CODES[COLLAPSED][0].removeprefix("diverged: ")
    return ""


def run_1d(rule: str, target: Target, mu0: float, s2_0: float, step_size: float = 1.0,
           schedule: str = "backtracking", rel_tol: float | None = 1e-7, n_steps: int = 1000,
           backtrack_factor: float = 0.1, max_backtracks: int = 16) -> Trace:
    """Run a 1-D update rule (``RULES_1D``) on a 1-D target in IEEE scalar arithmetic.

    ``schedule`` "constant" (rho = step_size) or "backtracking" (Tan (2025) Sec. 4.1: the largest rho
    in {rho0, rho0 f, rho0 f^2, ...} keeping q a Gaussian and increasing L); stop when
    |L_new - L_old| < rel_tol |L_new| (Tan Table 2: 1e-7). Same options, statuses and Trace as
    ``vilab.algorithms.run(rule, ...)``, which computes the same iterates in XLA arithmetic (the tests
    check they agree).

    Why scalar: (i) the Euclidean runs of Tan's Table 2 take steps of rho ~ 1e-6 whose acceptance
    turns on ELBO differences of one unit in the last place, so the iteration count is chaotic in the
    rounding of exp; XLA's exp differs from the C library's by one ulp for about one argument in
    eight, which moves the count from (0.5, 0.02) from the paper's 107 to 167. The paper's code, like
    this function, uses correctly rounded scalar operations. (ii) Nothing is compiled, so a page
    redraws at once when a slider changes the target. Needs a 1-D Gaussian target or
    ``target.info["scalar_elbo"]`` and ``["scalar_elbo_grads"]`` (the horseshoe-crab toy has them).
    """
    if rule not in RULES_1D:
        raise ValueError(f"Unknown 1-D update rule {rule!r}; choose one of {list(RULES_1D)}.")
    if not isinstance(target, Target):
        raise ValueError("target must be a vilab.targets.Target.")
    L_fn, g_fn = _scalar_fns(target)
    if schedule not in ("constant", "backtracking"):
        raise ValueError(f"schedule must be 'constant' or 'backtracking'; got {schedule!r}.")
    mu, s2, rho0 = float(mu0), float(s2_0), float(step_size)
    if not (math.isfinite(mu) and math.isfinite(s2) and s2 > 0):
        raise ValueError(f"The start needs a finite mean and a positive variance; got ({mu0}, {s2_0}).")
    if not (math.isfinite(rho0) and rho0 > 0):
        raise ValueError(f"The step size must be a positive number; got {step_size}.")
    if isinstance(n_steps, bool) or int(n_steps) != n_steps or n_steps < 1:
        raise ValueError(f"n_steps must be a positive integer; got {n_steps!r}.")
    if not 0 < backtrack_factor < 1 or int(max_backtracks) < 1:
        raise ValueError("backtrack_factor must lie strictly between 0 and 1 and max_backtracks be at least 1.")
    kind = _CHART_1D[rule]
    M = {"s2": s2, "prec": 1.0 / s2, "c": math.sqrt(s2), "t": 1.0 / math.sqrt(s2)}[kind]
    # rho0 / (1/f)^j: for f = 0.1 this is rho0 * 10^-j correctly rounded, as in vilab.algorithms
    divisors = [(1.0 / backtrack_factor) ** j for j in range(int(max_backtracks))] if schedule == "backtracking" else [1.0]
    mus, s2s, Ls, rhos, Ms = [mu], [s2], [L_fn(mu, s2)], [], [M]
    status, note = "max_steps", ""
    gauss = _gaussian_1d(target)
    while len(rhos) < n_steps:
        g, G = g_fn(mu, s2)
        L_old = Ls[-1]
        accepted = None
        for dv in divisors:
            rho = rho0 / dv
            with np.errstate(all="ignore"):
                try:
                    m2, M2, v2 = _step_1d(rule, mu, M, g, G, rho)
                except (OverflowError, ZeroDivisionError):
                    m2, M2, v2 = math.nan, math.nan, math.nan
            reason = _code_1d(kind, m2, M2, v2)
            if reason:
                if schedule == "constant":
                    status = diverged_status(reason)
                    break
                continue
            L_new = L_fn(m2, v2)
            if schedule == "constant" or L_new > L_old:
                accepted = (m2, M2, v2, L_new, rho)
                break
        if accepted is None:
            if status == "max_steps":  # as vilab.algorithms: an empty ladder is "stalled", never "converged"
                status = "stalled"
                note = ("no step size in the backtracking ladder increased the ELBO (stationary to machine "
                        "precision, or every rung overshoots: try a smaller first step size)")
            break
        mu, M, s2, L_new, rho = accepted
        mus.append(mu), Ms.append(M), s2s.append(s2), Ls.append(L_new), rhos.append(rho)
        if rel_tol is not None and abs(L_new - L_old) < rel_tol * abs(L_new):
            status = "converged"
            break
    elbo = np.array(Ls)
    extra = {"elbo": elbo, "factor": np.array(Ms)[:, None, None], "chart": kind, "grads": "exact",
             "schedule": schedule, "paper": RULES_1D[rule] + ", IEEE scalar arithmetic"}
    if note:
        extra["note"] = note
    objective, name = -elbo, "negative ELBO"
    if gauss is not None:  # KL(q || p) in closed form, as vilab.algorithms reports for Gaussian targets
        m_t, a = gauss
        v = np.array(s2s)
        objective = 0.5 * (a * v - 1.0 - np.log(a * v) + a * (np.array(mus) - m_t) ** 2)
        name = "KL(q || p)"
        extra["kl"] = objective
    cov = np.array(s2s)[:, None, None]
    if status in ("max_steps", "converged", "stalled"):  # as vilab.core.run: a blow-up seen on the final row
        blown = blowup_code(objective, cov)
        if blown:
            status, note = CODES[blown]
            note += " Found on the final row: the trace holds the iterates up to the end of the run."
            extra["note"] = note
    return Trace(mean=np.array(mus)[:, None], cov=cov, objective=objective,
                 step_sizes=np.array(rhos), status=status, method=rule, objective_name=name, extra=extra, note=note)


def euclidean_kappa_ieee(target: Target, mu0: float, s2_0: float, step_size: float = 1.0,
                         schedule: str = "backtracking", rel_tol: float = 1e-7, n_steps: int = 1000,
                         backtrack_factor: float = 0.1, max_backtracks: int = 16) -> Trace:
    """Euclidean gradient ascent in kappa = (mu, sigma^2) on a 1-D target, in IEEE scalar arithmetic:
    the "Euclidean" column of Tan (2025) Table 2 (``run_1d("gd-mv", ...)``; see :func:`run_1d`)."""
    return run_1d("gd-mv", target, mu0, s2_0, step_size, schedule, rel_tol, n_steps, backtrack_factor,
                  max_backtracks)
