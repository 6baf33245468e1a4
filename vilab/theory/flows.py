"""Continuous-time gradient flows of the ELBO over Gaussians q = N(m, V) (Kumar digest Sec. 2.7-2.8).

``flow(kind, target, init, t_end, n_times=201)`` -> :class:`vilab.core.Trace` (one row per time:
means, covariances, objective; the times in ``extra["t"]``, how it was solved in ``extra["how"]``).
Kinds (ascent of the ELBO L; Kumar's descent form uses g = -grad_m L, H = -E hess log p):

* ``natural-mv``     dm = V grad_m L, dV = 2 V grad_V L V                 (Kumar Eq. 9: dV = V - V H V)
* ``natural-mc``     dm = C C^T grad_m L, dC = C tril_half(C^T grad_C L)  (Kumar Eq. 15, Tan Thm 1(i))
* ``natural-lambda`` d eta1 = grad_m L - 2 grad_V L m, dP = -2 grad_V L   (natural parameters: dS = H - S)
* ``wasserstein``    dm = grad_m L, dV = 2 (grad_V L V + V grad_V L)       (dV = 2I - H V - V H)
* ``euclidean-mv``   dm = grad_m L, dV = grad_V L                          (flow of Kumar Eq. 4)
* ``euclidean-mc``   dm = grad_m L, dC = tril(2 grad_V L C)                (Domke's chart)

The three natural flows are the same curve (parameterisation invariance of the natural-gradient
flow); only their discretisations differ. For Gaussian targets N(m*, A^-1) the natural and
Wasserstein flows have closed forms (Kumar digest Sec. 2.8):
S(t) = A + (S0 - A) e^-t, S m (t) = A m* + (S0 m0 - A m*) e^-t;
m(t) = m* + e^-At (m0 - m*), V(t) = A^-1 + e^-At (V0 - A^-1) e^-At.
Everything else is integrated with scipy's solve_ivp (LSODA with the jax Jacobian; any
solve_ivp method on request) using exact expectations (Gaussian and GLM targets).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from scipy.integrate import solve_ivp
from scipy.linalg import expm

from ..family import natgrad as ng
from ..core.checks import finite_result, integer, pd_matrix, positive, real_array, real_scalar
from ..algorithms import oracle
from ..algorithms.driver import initial_state
from ..core import memoize
from ..core.trace import Trace, first_failure
from ..family.linalg import tril_half
from ..targets import Target, check_point

__all__ = ["FLOWS", "SOLVERS", "flow"]

FLOWS = ("natural-mv", "natural-mc", "natural-lambda", "wasserstein", "euclidean-mv", "euclidean-mc")
_CLOSED = ("natural-mv", "natural-mc", "natural-lambda", "wasserstein")


def _closed_form(kind, m_t, A, m0, V0, ts):
    d = len(m0)
    Ainv = np.linalg.inv(A)
    means, covs = [], []
    if kind == "wasserstein":
        for t in ts:
            E = expm(-A * t)
            means.append(m_t + E @ (m0 - m_t))
            V = Ainv + E @ (V0 - Ainv) @ E.T
            covs.append(0.5 * (V + V.T))
    else:
        S0 = np.linalg.inv(V0)
        for t in ts:
            e = np.exp(-t)
            S = A + (S0 - A) * e
            V = np.linalg.inv(S)
            covs.append(0.5 * (V + V.T))
            means.append(V @ (A @ m_t + (S0 @ m0 - A @ m_t) * e))
    return np.array(means).reshape(len(ts), d), np.array(covs)


def _rhs_builder(kind, target, d, n_points):
    def grads(mu, Sigma):
        return oracle.exact_elbo_grads(target, mu, Sigma, n_points)

    def rhs(y):
        mu = y[:d]
        if kind in ("natural-mc", "euclidean-mc"):
            C = jnp.tril(y[d:].reshape(d, d))
            g, G = grads(mu, C @ C.T)
            gC = ng.grad_chol_cov(C, G)
            if kind == "natural-mc":
                return jnp.concatenate([C @ (C.T @ g), (C @ tril_half(C.T @ gC)).ravel()])
            return jnp.concatenate([g, gC.ravel()])
        if kind == "natural-lambda":
            P = y[d:].reshape(d, d)
            mu = jnp.linalg.solve(P, y[:d])
            g, G = grads(mu, jnp.linalg.inv(P))
            return jnp.concatenate([g - 2.0 * G @ mu, (-2.0 * G).ravel()])
        V = y[d:].reshape(d, d)
        g, G = grads(mu, V)
        if kind == "natural-mv":
            return jnp.concatenate([V @ g, (2.0 * V @ G @ V).ravel()])
        if kind == "wasserstein":
            return jnp.concatenate([g, (2.0 * (G @ V + V @ G)).ravel()])
        return jnp.concatenate([g, G.ravel()])  # euclidean-mv

    return jax.jit(rhs), jax.jit(jax.jacfwd(rhs))


@memoize("vilab.theory.flows right-hand sides", maxsize=32)
def _rhs(kind, target, n_points):
    return _rhs_builder(kind, target, target.dim, n_points)


@memoize("vilab.theory.flows objectives", maxsize=32)
def _elbo_fn(target, n_points):
    return jax.jit(jax.vmap(lambda m, V, l: oracle.elbo_exact(target, m, V, l, n_points)))


SOLVERS = ("LSODA", "Radau", "BDF", "DOP853", "RK45")



def _objectives(target, means, covs, n_points):
    """KL(q_t || p) (Gaussian targets, closed form) or the negative ELBO (exact expectations) at
    every time, in one vectorised call (the ELBO evaluator is jitted and cached per target)."""
    if means.shape[0] == 0:
        return np.zeros(0), "KL(q || p)" if _gaussian(target) else "negative ELBO"
    ld = np.linalg.slogdet(covs)[1]
    if _gaussian(target):
        P = np.linalg.inv(target.cov)
        r = means - target.mean
        kl = 0.5 * (np.einsum("ij,nij->n", P, covs) - means.shape[1] - np.linalg.slogdet(P)[1] - ld
                    + np.einsum("ni,ij,nj->n", r, P, r))
        return kl, "KL(q || p)"
    L = _elbo_fn(target, n_points)(jnp.asarray(means), jnp.asarray(covs), jnp.asarray(ld))
    return -np.asarray(L), "negative ELBO"


def _gaussian(target):
    return bool(target.quadratic and target.cov is not None)


def flow(kind: str, target: Target, init, t_end: float, n_times: int = 201, method: str = "auto",
         rtol: float = 1e-10, atol: float = 1e-12, n_points: int = 40, solver: str = "LSODA",
         times=None) -> Trace:
    """Solve the flow ``kind`` from ``init`` (vilab.family.gaussian parameterization or (mu, Sigma)) on
    [0, t_end] at ``n_times`` equally spaced times; a :class:`vilab.core.Trace` with one row per
    time (``extra["t"]`` the times, ``extra["how"]`` "closed form" or the solver and tolerances,
    ``step_sizes`` the time steps), status "max_steps" (solved to t_end) or "diverged: <reason>"
    (the ODE solver stopped, or the covariance left the PD cone: the rows before it are kept).
    ``times``: instead of ``n_times`` equally spaced times, these increasing times from 0 to t_end.
    ``method``: "auto" (closed form when the target is Gaussian and the flow has one), "closed" or "ode". ``solver``: scipy's solve_ivp method;
    the default LSODA switches to a stiff (BDF) scheme with the jax Jacobian of the right-hand
    side where needed (the Euclidean and Wasserstein flows are stiff when the target is
    ill-conditioned: explicit DOP853 needs ~30x more evaluations on Kumar's T2 and is less accurate)."""
    if not isinstance(kind, str) or kind not in FLOWS:
        raise ValueError(f"Unknown flow {kind!r}; choose one of {FLOWS}.")
    if not isinstance(target, Target):
        raise ValueError("target must be a vilab.targets.Target.")
    t_end = positive(t_end, "t_end")
    n_times = integer(n_times, "n_times", minimum=2, maximum=10**7)
    n_points = integer(n_points, "n_points", minimum=1, maximum=10_000)
    rtol, atol = positive(rtol, "rtol"), positive(atol, "atol")
    if not isinstance(method, str) or method not in ("auto", "closed", "ode"):
        raise ValueError("method must be 'auto', 'closed' or 'ode'.")
    if not isinstance(solver, str) or solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}; got {solver!r}.")
    gauss = _gaussian(target)
    if method == "closed" and not (gauss and kind in _CLOSED):
        raise ValueError(f"The {kind} flow has a closed form only for Gaussian targets (and not for Euclidean flows).")
    if not oracle.has_exact(target) and not (gauss and kind in _CLOSED and method != "ode"):
        raise ValueError(f"Flows need exact expectations; {target.name!r} is not a Gaussian or GLM target.")
    st = initial_state("tan-1N", init)
    d = target.dim
    if st.mu.shape != (d,):
        raise ValueError(f"The start has dimension {st.mu.shape[0]}, the target {d}.")
    check_point(target, np.asarray(st.mu))
    m0 = np.asarray(st.mu)
    C0 = np.asarray(st.M)
    V0 = C0 @ C0.T
    if times is None:
        ts = np.linspace(0.0, float(t_end), int(n_times))
    else:
        ts = real_array(times, "times")
        if ts.ndim != 1 or ts.size < 2 or ts[0] != 0.0 or np.any(np.diff(ts) <= 0) or ts[-1] != float(t_end):
            raise ValueError("times must increase from 0 to t_end.")
    status = "max_steps"
    if (method == "closed") or (method == "auto" and gauss and kind in _CLOSED):
        means, covs = _closed_form(kind, np.asarray(target.mean), np.linalg.inv(target.cov), m0, V0, ts)
        how = "closed form"
    else:
        rhs, jac = _rhs(kind, target, int(n_points))
        if kind in ("natural-mc", "euclidean-mc"):
            y0 = np.concatenate([m0, C0.ravel()])
        elif kind == "natural-lambda":
            P0 = np.linalg.inv(V0)
            y0 = np.concatenate([P0 @ m0, P0.ravel()])
        else:
            y0 = np.concatenate([m0, V0.ravel()])
        implicit = {"jac": lambda t, y: np.asarray(jac(jnp.asarray(y)))} if solver in ("LSODA", "Radau", "BDF") else {}
        sol = solve_ivp(lambda t, y: np.asarray(rhs(jnp.asarray(y))), (0.0, float(t_end)), y0,
                        method=solver, t_eval=ts, rtol=rtol, atol=atol, **implicit)
        Y = sol.y.T
        if not sol.success or Y.shape[0] < len(ts):
            status = f"diverged: the ODE solver stopped at t = {sol.t[-1]:.3g} ({sol.message})"
        ts = ts[: Y.shape[0]]
        means, covs = [], []
        for y in Y:
            if kind in ("natural-mc", "euclidean-mc"):
                C = np.tril(y[d:].reshape(d, d))
                means.append(y[:d]); covs.append(C @ C.T)
            elif kind == "natural-lambda":
                P = y[d:].reshape(d, d)
                V = np.linalg.inv(0.5 * (P + P.T))
                means.append(V @ y[:d]); covs.append(V)
            else:
                means.append(y[:d]); covs.append(0.5 * (y[d:].reshape(d, d) + y[d:].reshape(d, d).T))
        means, covs = np.array(means).reshape(-1, d), np.array(covs).reshape(-1, d, d)
        how = f"solve_ivp {solver} rtol={rtol:g} atol={atol:g}"
    keep, why = first_failure(covs, means)
    if keep is not None:
        status = why
    else:
        keep = len(ts)
    objs, name = _objectives(target, means[:keep], covs[:keep], n_points)
    ts = ts[:keep]
    return Trace(mean=means[:keep], cov=covs[:keep], objective=objs, step_sizes=np.diff(ts), status=status,
                 method=kind, objective_name=name, extra={"t": ts, "how": how},
                 settings={"kind": kind, "t_end": float(t_end), "n_times": int(n_times), "method": method,
                           "solver": solver, "rtol": rtol, "atol": atol, "how": how})
