"""The update catalogue: one init/step pair per method and the jit-compiled driver ``run``.

A method works in one *chart* (its state is ``State(mu, M)``):

==============  ===========================  ==================================================
chart           M                            methods
==============  ===========================  ==================================================
``mean_cov``    Sigma                        kappa, gd-mv, bwgd, fbgvi, svgd
``mean_prec``   P = Sigma^-1                 xi, lambda, vn, lsk
``chol_cov``    C, Sigma = C C^T             tan-1E, tan-1N, tan-1N-log, tan-1S, gd-mc, srvn
``chol_prec``   T, Sigma^-1 = T T^T          tan-2E, tan-2N, tan-2N-cor1, tan-2S
==============  ===========================  ==================================================

All updates are written as ascent on the ELBO L with the Euclidean gradients
``grad_mu = dL/dmu`` and either ``grad_Sigma = dL/dSigma`` or ``grad_F = dL/dF`` (F = C or T);
Kumar et al.'s descent form follows from g = -grad_mu, H - V^-1 = -2 grad_Sigma.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular

from ..family import natgrad as ng
from ..core.algorithm import range_code, range_code_factor
from . import oracle

__all__ = ["State", "Method", "METHODS", "list_methods", "get_method"]


class State(NamedTuple):
    """The iterate of a method: mean and the chart's matrix (Sigma, P, C or T)."""

    mu: jax.Array
    M: jax.Array


# ---------------------------------------------------------------------------------------------
# charts


def sigma_of(chart, M):
    """Covariance of the chart's matrix."""
    d = M.shape[-1]
    eye = jnp.eye(d, dtype=M.dtype)
    if chart == "mean_cov":
        return M
    if chart == "mean_prec":
        return ng.sym(jnp.linalg.solve(M, eye))
    if chart == "chol_cov":
        return M @ M.T
    Ti = solve_triangular(M, eye, lower=True)
    return Ti.T @ Ti


def sqrt_of(chart, M):
    """A square root B of the covariance (B B^T = Sigma) from the chart's own matrix: C, T^-T,
    chol(Sigma) or chol(P)^-T. Sampling theta = mu + B z never inverts an ill-conditioned Sigma."""
    eye = jnp.eye(M.shape[-1], dtype=M.dtype)
    if chart == "chol_cov":
        return M
    if chart == "chol_prec":
        return solve_triangular(M.T, eye, lower=False)
    if chart == "mean_cov":
        return jnp.linalg.cholesky(ng.sym(M))
    return solve_triangular(jnp.linalg.cholesky(ng.sym(M)).T, eye, lower=False)


def precision_of(chart, M):
    """Precision Sigma^-1 of the chart's matrix."""
    if chart == "mean_prec":
        return M
    if chart == "chol_prec":
        return M @ M.T
    if chart == "chol_cov":
        Ci = solve_triangular(M, jnp.eye(M.shape[-1], dtype=M.dtype), lower=True)
        return Ci.T @ Ci
    return ng.sym(jnp.linalg.inv(M))


def logdet_sigma_of(chart, M):
    if chart == "chol_cov":
        return 2.0 * jnp.sum(jnp.log(jnp.abs(jnp.diag(M))))
    if chart == "chol_prec":
        return -2.0 * jnp.sum(jnp.log(jnp.abs(jnp.diag(M))))
    ld = jnp.linalg.slogdet(M)[1]
    return ld if chart == "mean_cov" else -ld


def valid_code(chart, mu, M, Sigma):
    """0 if the iterate is a proper Gaussian, else the failure code (see ``REASONS``): non-finite,
    not PD / singular factor, exploded values, or a covariance out of the sane range of
    :func:`vilab.core.algorithm.range_code` (collapsed: an eigenvalue below 1e-150 or condition
    number above 1e16; exploded: an eigenvalue above 1e150). The range comes from what the check
    computes anyway: the eigenvalues of Sigma or P, or the diagonal of a Cholesky factor (bounds on
    the eigen-range, :func:`vilab.core.algorithm.range_code_factor`)."""
    finite = jnp.all(jnp.isfinite(mu)) & jnp.all(jnp.isfinite(M)) & jnp.all(jnp.isfinite(Sigma))
    big = (jnp.max(jnp.abs(mu)) > 1e12) | (jnp.max(jnp.abs(Sigma)) > 1e24)
    if chart in ("chol_cov", "chol_prec"):
        dg = jnp.abs(jnp.diag(M))
        bad_pd = jnp.min(dg) <= 1e-150
        pd_code = 5
        rng = range_code_factor(jnp.where(finite & ~bad_pd, dg, 1.0), precision=chart == "chol_prec")
    else:
        ev = jnp.linalg.eigvalsh(ng.sym(jnp.where(jnp.isfinite(M), M, 0.0)))
        bad_pd = ev[0] <= 0.0
        pd_code = 3 if chart == "mean_cov" else 4
        lo, hi = jnp.where(bad_pd, 1.0, ev[0]), jnp.where(bad_pd, 1.0, ev[-1])
        rng = range_code(lo, hi) if chart == "mean_cov" else range_code(1.0 / hi, 1.0 / lo, hi / lo)
    return jnp.where(~finite, 2, jnp.where(bad_pd, pd_code, jnp.where(big, 6, rng)))


REASONS = {
    2: "non-finite values",
    3: "covariance lost positive definiteness",
    4: "precision lost positive definiteness",
    5: "Cholesky factor became singular (a zero on its diagonal)",
    6: "values exploded (|mean| > 1e12 or |Sigma| > 1e24)",
    7: "covariance collapsed (an eigenvalue below 1e-150 or condition number above 1e16)",
    8: "covariance exploded (an eigenvalue above 1e150)",
}


# ---------------------------------------------------------------------------------------------
# updates: (mu, M, grads, rho, opts) -> (mu, M). grads = (grad_mu, grad_Sigma or grad_F, extra)


def _plain(update):
    """An update of vilab.family.natgrad taking (mu, M, grad_mu, grad_M, rho), as a method update."""
    return lambda mu, M, gr, rho, o: update(mu, M, gr[0], gr[1], rho)


_u_kappa = _plain(ng.update_kappa)
_u_xi = _plain(ng.update_xi)
_u_lambda = _plain(ng.update_lambda)
_u_lambda_pd = _plain(ng.update_lambda_pd)
_u_1E = _plain(ng.update_chol_cov_euclid)
_u_1N = _plain(ng.update_chol_cov)
_u_2E = _plain(ng.update_chol_prec_euclid)
_u_2N = _plain(ng.update_chol_prec)
_u_cor1 = _plain(ng.update_cor1)
_u_1N_log = _plain(ng.update_chol_cov_logdiag)


def _u_1S(mu, M, gr, rho, o):
    n_mu, n_C = ng.natural_grad_chol_cov_blockdiag(mu, M, gr[0], gr[1], o["blocks"])
    return mu + rho * n_mu, M + rho * n_C


def _u_2S(mu, M, gr, rho, o):
    """Algorithm 2S: T+ = T + rho T Hbarbar (Thm 4), then mu+ = mu + rho T+^-T v, v = T^-1 grad_mu."""
    _, n_T = ng.natural_grad_chol_prec_arrow(mu, M, gr[0], gr[1], o["local_sizes"], o["global_size"])
    T_new = M + rho * n_T
    v = solve_triangular(M, gr[0], lower=True)
    return mu + rho * solve_triangular(T_new.T, v, lower=False), T_new


def _u_gd_mv(mu, M, gr, rho, o):
    """Kumar et al. (2025) Eq. 4: V+ = V - rho/2 (H - V^-1) = V + rho grad_Sigma, m+ = m - rho g.
    (Also the Euclidean kappa update of Tan (2025) Table 2.)"""
    return mu + rho * gr[0], ng.sym(M + rho * gr[1])


def _u_bwgd(mu, M, gr, rho, o):
    """Kumar et al. (2025) Sec. 6 / Lambert et al. (2022) Alg. 1: m+ = m - a g,
    M = I - a (H - V^-1) = I + 2 a grad_Sigma, V+ = M V M."""
    Mx = jnp.eye(M.shape[-1], dtype=M.dtype) + 2.0 * rho * gr[1]
    return mu + rho * gr[0], ng.sym(Mx @ M @ Mx)


def _u_fbgvi(mu, M, gr, rho, o):
    """Forward-backward Gaussian VI (Diao et al. 2023, Alg. 1; Kumar digest Sec. 2.6):
    m+ = m - h g; V_half = (I - h H) V (I - h H); V+ = 1/2 (V_half + 2hI + [V_half (V_half + 4hI)]^1/2),
    the exact JKO step of the entropy. Here H = -E[hess log p] = V^-1 - 2 grad_Sigma."""
    d = M.shape[-1]
    eye = jnp.eye(d, dtype=M.dtype)
    H = jnp.linalg.solve(M, eye) - 2.0 * gr[1]
    Mx = eye - rho * H
    Vh = ng.sym(Mx @ M @ Mx)
    lam, Q = jnp.linalg.eigh(Vh)
    lam = jnp.maximum(lam, 0.0)  # V_half = M V M is PSD by construction (round-off aside)
    new = 0.5 * (lam + 2.0 * rho + jnp.sqrt(lam * (lam + 4.0 * rho)))
    return mu + rho * gr[0], ng.sym((Q * new) @ Q.T)


def _u_svgd(mu, M, gr, rho, o):
    """Gaussian SVGD, density form (Kumar et al. (2025) App. G run "a deterministic version of Liu et al.
    2024, Alg. 1", sample averages replaced by expectations, and do not print the update; this is our
    choice, stated): Stein variational gradient descent with the bilinear kernel K(x, y) = x^T y + 1, whose
    velocity field for q = N(m, V) is affine, phi(x) = E_q[K(x, y) grad log p(y) + grad_y K(x, y)]
    = (I + E_q[grad log p(y) y^T]) x + E_q[grad log p(y)], so an Euler step x <- x + eps phi(x) keeps q Gaussian:

        B = I - H V + b m^T  (Stein: E_q[grad log p(y) (y - m)^T] = -H V),  b = E_q[grad log p] = grad_mu,
        m+ = m + eps (B m + b),   V+ = (I + eps B) V (I + eps B)^T,   H = V^-1 - 2 grad_Sigma.

    The fixed point on a Gaussian target is the exact posterior (b = 0, H V = I). The kernel is not centred,
    so the mean's speed depends on |m|: not invariant to shifting the parameters (checked against the
    particle SVGD update in the tests)."""
    d = M.shape[-1]
    eye = jnp.eye(d, dtype=M.dtype)
    H = jnp.linalg.solve(M, eye) - 2.0 * gr[1]
    B = eye - H @ M + jnp.outer(gr[0], mu)
    Mx = eye + rho * B
    return mu + rho * (B @ mu + gr[0]), ng.sym(Mx @ M @ Mx.T)


#: what an update of each chart consumes besides grad_mu = dL/dmu (ascent, Euclidean gradients)
TAKES = {"mean_cov": "grad_Sigma", "mean_prec": "grad_Sigma", "chol_cov": "grad_C", "chol_prec": "grad_T"}


@dataclass(frozen=True)
class Method:
    """One update rule: its chart, update, gradient estimator and provenance.

    The update consumes ``(grad_mu, grad_X)`` with X = :attr:`takes`: ``grad_Sigma`` = dL/dSigma for
    the (mu, Sigma) and (mu, Sigma^-1) charts, ``grad_C`` = tril dL/dC or ``grad_T`` = tril dL/dT
    for the Cholesky charts (C C^T = Sigma, T T^T = Sigma^-1); every method of one chart takes the
    same gradient (srvn and gd-mc take grad_C, like tan-1N and tan-1E).

    ``estimator`` says how the stochastic modes ("first", "second") estimate that gradient:
    "thm2" draws theta = mu + F-factor z and uses Tan (2025) Thm 2's factor estimators (G1/F1 for C,
    G2/F2 for T); "sigma" estimates (grad_mu, grad_Sigma) by Stein / Price (Tan Sec. 5.1) from
    draws of the chart's own square root and maps grad_Sigma to the chart (grad_C = tril(2 G C)).
    """

    name: str
    chart: str
    estimator: str
    update: Callable
    paper: str
    description: str
    modes: tuple = oracle.MODES
    structure: tuple = ()

    @property
    def takes(self) -> str:
        """The gradient the update consumes besides grad_mu: "grad_Sigma", "grad_C" or "grad_T"."""
        return TAKES[self.chart]

    @property
    def consumes(self) -> tuple:
        """The gradients :meth:`step` reads, in the order it takes them: ``("grad_mu", self.takes)``.
        For the Cholesky charts only the lower triangle of grad_C / grad_T is read. Hessians of log p
        enter only through the estimate of grad_X in mode "second" (``estimator``)."""
        return ("grad_mu", self.takes)

    def init(self, mu, M) -> State:
        """The method's initial state (mean and chart matrix)."""
        return State(jnp.asarray(mu, jnp.float64), jnp.asarray(M, jnp.float64))

    def step(self, state: State, grads, rho, **options) -> State:
        """One update with step size rho and precomputed gradients (see :func:`gradients`)."""
        mu, M = self.update(state.mu, state.M, grads, rho, options)
        return State(mu, M)


_M = [
    Method("kappa", "mean_cov", "sigma", _u_kappa, "Tan (2025) Table 1",
           "natural gradient in kappa = (mu, vech Sigma): Sigma += 2 rho Sigma G Sigma"),
    Method("xi", "mean_prec", "sigma", _u_xi, "Tan (2025) Table 1",
           "natural gradient in xi = (mu, vech Sigma^-1): P -= 2 rho G, mean with the old Sigma"),
    Method("lambda", "mean_prec", "sigma", _u_lambda, "Tan (2025) Table 1",
           "natural parameter: P -= 2 rho G first, mean with the new Sigma"),
    Method("tan-1E", "chol_cov", "thm2", _u_1E, "Tan (2025) Alg. 1E (Table 3)",
           "Euclidean gradient in (mu, C)"),
    Method("tan-1N", "chol_cov", "thm2", _u_1N, "Tan (2025) Thm 1(i), Alg. 1N (Table 3)",
           "natural gradient in (mu, C): C += rho C tril_half(C^T G)"),
    Method("tan-1N-log", "chol_cov", "thm2", _u_1N_log, "Tan (explicit) Sec. 5, log-diagonal C' (corrected)",
           "natural gradient in (mu, C') with log C_ii: C_ii *= exp(rho H_ii / 2), so C stays the unique factor"),
    Method("tan-2E", "chol_prec", "thm2", _u_2E, "Tan (2025) Alg. 2E (Table 4)",
           "Euclidean gradient in (mu, T)"),
    Method("tan-2N", "chol_prec", "thm2", _u_2N, "Tan (2025) Thm 1(ii)",
           "natural gradient in (mu, T), mean with the old Sigma"),
    Method("tan-2N-cor1", "chol_prec", "thm2", _u_cor1, "Tan (2025) Corollary 1, Alg. 2N (Table 4)",
           "natural gradient in (mu, T), mean moved with the updated T"),
    Method("tan-1S", "chol_cov", "thm2", _u_1S, "Tan (2025) Sec. 7.1, Alg. 1S (Table 6)",
           "block-diagonal C (option blocks=(sizes...))", structure=("blocks",)),
    Method("tan-2S", "chol_prec", "thm2", _u_2S, "Tan (2025) Thm 4, Alg. 2S (Table 6)",
           "arrow-shaped T of hierarchical models (options local_sizes=(...), global_size=g)",
           structure=("local_sizes", "global_size")),
    Method("gd-mv", "mean_cov", "sigma", _u_gd_mv, "Kumar et al. (2025) Eq. 4",
           "Euclidean gradient descent in (m, V)"),
    Method("gd-mc", "chol_cov", "sigma", _u_1E, "Kumar et al. (2025) Sec. 2.1 (Domke's chart)",
           "Euclidean gradient descent in (m, C)"),
    Method("vn", "mean_prec", "sigma", _u_lambda, "Kumar et al. (2025) Eq. 7",
           "variational Newton: S+ = (1 - rho) S + rho H, m+ = m - rho S+^-1 g"),
    Method("lsk", "mean_prec", "sigma", _u_lambda_pd, "Lin, Schmidt & Khan (2020), improved Bayesian learning rule",
           "VN with a retraction term that keeps the precision PD: S+ = S + rho G + rho^2/2 G S^-1 G, G = H - S"),
    Method("srvn", "chol_cov", "sigma", _u_1N, "Kumar et al. (2025) Eq. 17, Alg. 1",
           "square-root VN: C+ = C - rho C tril_half(C^T H C - I), m+ = m - rho C C^T g"),
    Method("bwgd", "mean_cov", "sigma", _u_bwgd, "Kumar et al. (2025) Sec. 6; Lambert et al. (2022)",
           "Bures-Wasserstein gradient descent: V+ = M V M, M = I - a (H - V^-1)"),
    Method("svgd", "mean_cov", "sigma", _u_svgd, "Kumar et al. (2025) App. G (Liu et al. 2024, Alg. 1, density form)",
           "Gaussian SVGD with the bilinear kernel x^T y + 1 (update not printed in the paper: our reconstruction)"),
    Method("fbgvi", "mean_cov", "sigma", _u_fbgvi, "Diao et al. (2023) Alg. 1 (Kumar digest Sec. 2.6)",
           "forward-backward Gaussian VI (JKO step of the entropy)"),
]
METHODS: dict[str, Method] = {m.name: m for m in _M}


def list_methods() -> list[dict]:
    """Every method with its chart, supported gradient modes, step rules and source."""
    return [
        {"name": m.name, "chart": m.chart, "takes": m.takes, "estimator": m.estimator, "modes": m.modes,
         "step_rules": ("constant", "backtracking"), "needs": m.structure,
         "paper": m.paper, "description": m.description}
        for m in _M
    ]


def get_method(name: str) -> Method:
    if not isinstance(name, str) or name not in METHODS:
        raise ValueError(f"Unknown method {name!r}. Known methods: {', '.join(METHODS)}.")
    return METHODS[name]


# ---------------------------------------------------------------------------------------------
# gradients in the method's chart


def gradients(method: Method, target, state: State, mode: str, key, n_samples: int, n_points: int,
              opts: dict):
    """The ascent gradients the method's update consumes at ``state``: (grad_mu, grad_X) with
    X = ``method.takes`` (Sigma for the (mu, Sigma) and (mu, P) charts, tril grad_C or tril grad_T for
    the Cholesky charts): exact expectations, or estimates by ``method.estimator`` (Tan Thm 2's
    factor estimators, or Stein/Price in Sigma mapped to the chart)."""
    chart, mu, M = method.chart, state.mu, state.M
    Sigma = sigma_of(chart, M)
    d = mu.shape[-1]
    if mode == "exact":
        g_mu, G_S = oracle.exact_elbo_grads(target, mu, Sigma, n_points)
        if chart in ("mean_cov", "mean_prec"):
            return g_mu, G_S
        G = ng.grad_chol_cov(M, G_S) if chart == "chol_cov" else ng.grad_chol_prec(M, G_S)
        return g_mu, _mask(method, G, opts)
    order = 1 if mode == "first" else 2
    z = jax.random.normal(key, (n_samples, d), dtype=mu.dtype)
    if method.estimator == "thm2":
        if chart == "chol_cov":
            g_mu, G = oracle.chol_cov_grads_stochastic(target, mu, M, z, order)
        else:
            g_mu, G = oracle.chol_prec_grads_stochastic(target, mu, M, z, order)
        return g_mu, _mask(method, G, opts)
    # Stein/Price estimates of grad_Sigma from draws of the chart's own square root
    theta = mu + z @ sqrt_of(chart, M).T
    g_mu, G_S = oracle.sigma_grads_stochastic(target, mu, Sigma, precision_of(chart, M), theta, order)
    if chart == "chol_cov":
        return g_mu, ng.grad_chol_cov(M, G_S)
    return g_mu, G_S


def _mask(method, G, opts):
    if method.name == "tan-1S":
        return G * jnp.asarray(ng.block_mask(opts["blocks"]), dtype=G.dtype)
    if method.name == "tan-2S":
        return G * jnp.asarray(ng.arrow_mask(opts["local_sizes"], opts["global_size"]), dtype=G.dtype)
    return G
