"""Positive definiteness of stochastic natural-gradient updates (Tan (2025) Sec. 7 and its digest
example; Khan & Nielsen 2018): which parameterisations stay Gaussian after a single-sample step.

    single_sample_updates(target, mu, Sigma, theta, rhos)   precision (Table 1 xi/lambda) vs T (Thm 1(ii))
    precision_pd_limit(P, hess_logp)     largest rho keeping (1 - rho) P - rho hess log p PD
    chol_singular_steps(T, hess_logp)    the rho where T (I + rho Hbarbar) is singular
    pd_loss_fraction(target, mu, Sigma, rho, n_runs, n_steps, key)   Monte Carlo, per rule (PD_RULES),
                                         each rule an Algorithm run by vilab.core.run_many
    two_component_mixture(delta, sd, weight)                         a non-log-concave 2-D target
    backtracking_step_sizes(model)       Tan (2025) Fig. 2: the step size backtracking picks at each
                                         iteration, T by Theorem 1(ii) against Corollary 1, on a GLM
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..family import natgrad as ng
from ..core import CODES, Algorithm, check_key, memoize, run_many
from ..targets import Target

__all__ = ["PD_RULES", "single_sample_updates", "precision_pd_limit", "chol_singular_steps", "pd_loss_fraction",
           "two_component_mixture", "MC_STEPS", "FIG2_METHODS", "backtracking_step_sizes"]


def _check_cov(Sigma, d):
    S = np.asarray(Sigma, float)
    if S.shape != (d, d) or not np.all(np.isfinite(S)):
        raise ValueError(f"The covariance must be a finite {d} x {d} matrix; got shape {S.shape}.")
    S = 0.5 * (S + S.T)
    if np.linalg.eigvalsh(S)[0] <= 0:
        raise ValueError("The starting covariance must be positive definite.")
    return S


def _check_rho(rho):
    rho = float(rho)
    if not (np.isfinite(rho) and rho > 0):
        raise ValueError(f"The step size rho must be a positive number; got {rho}.")
    return rho


# ---------------------------------------------------------------------------------------------
# One single-sample update (Tan (2025) Sec. 7 digest example)


@jax.jit
def _single_updates(P, T, mu, hess_logp, rhos):
    """Precision rule (Table 1 xi row, Price single sample) and Thm 1(ii) T rule for every rho."""
    hh = ng.hess_h(hess_logp, P)               # hess h(theta) = hess log p + Sigma^-1
    gS = 0.5 * hh                              # Price: grad_Sigma L ~ 1/2 hess h(theta)
    gT = jnp.tril(ng.estimator_F2(T, hh))      # Tan Thm 2: F2 = -Sigma hess h T^-T
    g0 = jnp.zeros_like(mu)

    def one(rho):
        _, P_new = ng.update_xi(mu, P, g0, gS, rho)
        _, T_new = ng.update_chol_prec(mu, T, g0, gT, rho)
        return P_new, T_new

    return jax.vmap(one)(rhos)


def single_sample_updates(target: Target, mu, Sigma, theta, rhos) -> dict:
    """One stochastic natural-gradient step of the precision, for every step size in ``rhos``.

    At the sampled ``theta`` the second-order (Price) single-sample estimate gives
      precision rule (Tan (2025) Table 1 xi / lambda row; Khan et al. 2018):
          S_new = S - 2 rho (1/2) hess h(theta) = (1 - rho) S - rho hess log p(theta),
      Cholesky-of-precision rule (Tan (2025) Thm 1(ii) with F2 of Thm 2):
          T_new = T + rho T tril_half(T^T F2) = T (I + rho Hbarbar),  H = -I - T^-1 hess log p T^-T.
    The mean plays no role in the precision step (its gradient is set to zero here).
    Returns dict with "P_prec" (n, d, d) = S_new, "P_chol" = T_new T_new^T, "T" (n, d, d),
    "eig_prec", "eig_chol" (n, d) ascending, "hess_logp" at theta and its eigenvalues "eig_hess"
    (ascending), "pd_limit" (:func:`precision_pd_limit`: the precision update is PD exactly for
    rho < pd_limit, possibly inf) and "singular_steps" (:func:`chol_singular_steps`: the only rho
    at which T_new is singular), both for the current precision S = Sigma^-1.
    """
    d = target.dim
    mu = np.asarray(mu, float).reshape(d)
    S = _check_cov(Sigma, d)
    theta = np.asarray(theta, float).reshape(d)
    rhos = np.atleast_1d(np.asarray(rhos, float))
    if np.any(~np.isfinite(rhos)) or np.any(rhos < 0):
        raise ValueError("Step sizes must be finite and non-negative.")
    Hs = np.asarray(target.hess(jnp.asarray(theta)))
    if not np.all(np.isfinite(Hs)):
        raise ValueError(f"The Hessian of {target.name!r} is not finite at theta = {theta.tolist()}.")
    P = np.linalg.inv(S)
    P = 0.5 * (P + P.T)
    T = np.linalg.cholesky(P)
    P_new, T_new = _single_updates(jnp.asarray(P), jnp.asarray(T), jnp.asarray(mu), jnp.asarray(Hs), jnp.asarray(rhos))
    P_new, T_new = np.asarray(P_new), np.asarray(T_new)
    P_chol = T_new @ np.swapaxes(T_new, -1, -2)
    return {"rhos": rhos, "P_prec": P_new, "P_chol": P_chol, "T": T_new,
            "eig_prec": np.linalg.eigvalsh(P_new), "eig_chol": np.linalg.eigvalsh(P_chol), "hess_logp": Hs,
            "eig_hess": np.linalg.eigvalsh(0.5 * (Hs + Hs.T)), "pd_limit": precision_pd_limit(P, Hs),
            "singular_steps": chol_singular_steps(T, Hs)}


def precision_pd_limit(P, hess_logp) -> float:
    """Largest rho for which the single-sample precision update stays positive definite.

    S_new = (1 - rho) S - rho Hs = S^1/2 (I - rho W) S^1/2 with W = I + S^-1/2 Hs S^-1/2, so S_new
    is PD iff rho lambda_max(W) < 1: the limit is 1 / lambda_max(W) (infinite if lambda_max(W) <= 0).
    Tan digest Sec. 7: S = 0.1 I, Hs = diag(0.24, -0.30) gives 1/3.4 = 0.294.
    """
    P = np.asarray(P, float)
    w, Q = np.linalg.eigh(0.5 * (P + P.T))
    if w[0] <= 0:
        raise ValueError("The current precision must be positive definite.")
    R = (Q / np.sqrt(w)) @ Q.T  # S^-1/2
    W = np.eye(len(w)) + R @ np.asarray(hess_logp, float) @ R
    lmax = np.linalg.eigvalsh(0.5 * (W + W.T))[-1]
    return float(1.0 / lmax) if lmax > 0 else float("inf")


def chol_singular_steps(T, hess_logp) -> np.ndarray:
    """Step sizes at which the T update T (I + rho Hbarbar) is singular (sorted, positive).

    With H = T^T F2 = -I - T^-1 Hs T^-T (Tan digest Sec. 3 closed form), I + rho Hbarbar is lower
    triangular with diagonal 1 + rho H_ii / 2, singular exactly at rho = -2 / H_ii for H_ii < 0.
    For every other rho, T_new T_new^T is positive definite (Tan (2025) Sec. 7).
    """
    T = np.asarray(T, float)
    A = np.linalg.solve(T, np.asarray(hess_logp, float))
    H = -np.eye(T.shape[0]) - np.linalg.solve(T, A.T).T
    h = np.diag(H)
    return np.sort(-2.0 / h[h < 0])


# ---------------------------------------------------------------------------------------------
# Monte Carlo over repeated single-sample updates: each rule an Algorithm, the runs one run_many

PD_RULES = {
    "precision (natural parameter, Table 1 lambda)": "lambda",
    "covariance (kappa, Table 1)": "kappa",
    "Cholesky of covariance C (Thm 1(i))": "chol_cov",
    "Cholesky of precision T (Thm 1(ii))": "chol_prec",
    "T with Corollary 1": "cor1",
    "precision kept PD (Lin, Schmidt & Khan 2020)": "lsk",
}
MC_STEPS = 100  # draws are made for this many steps, so a shorter run sees the same first draws
_LOST = {"kappa": 3, "lambda": 4, "lsk": 4, "chol_cov": 5, "chol_prec": 5, "cor1": 5}  # vilab.core.CODES


def _sym(X):
    return 0.5 * (X + X.T)


def _bsym(X):
    return 0.5 * (X + jnp.swapaxes(X, -1, -2))


def _mc_update(rule, mu, M, z, g_fn, h_fn, rho):
    """One single-sample step of ``rule`` for a batch of runs (leading axis).

    theta is drawn in each rule's own factor (Tan (2025) Tables 3-4: theta = mu + C z,
    theta = mu + T^-T z), gradients are single-sample Bonnet/Price estimates."""
    solve_t = jax.vmap(lambda A, b, lower: jax.scipy.linalg.solve_triangular(A, b, lower=lower), (0, 0, None))
    eye = jnp.eye(M.shape[-1])
    if rule == "kappa":
        L = jnp.linalg.cholesky(_bsym(M))
        theta = mu + jnp.einsum("bij,bj->bi", L, z)
        P = jnp.linalg.inv(_bsym(M))
    elif rule in ("lambda", "lsk"):
        L = jnp.linalg.cholesky(_bsym(M))
        theta = mu + solve_t(jnp.swapaxes(L, 1, 2), z, False)
        P = M
    elif rule == "chol_cov":
        theta = mu + jnp.einsum("bij,bj->bi", M, z)
        Ci = jax.vmap(lambda C: jax.scipy.linalg.solve_triangular(C, eye, lower=True))(M)
        P = jnp.swapaxes(Ci, 1, 2) @ Ci
    else:
        theta = mu + solve_t(jnp.swapaxes(M, 1, 2), z, False)
        P = M @ jnp.swapaxes(M, 1, 2)
    gh = jax.vmap(ng.grad_h)(g_fn(theta), theta, mu, P)   # single-sample grad h (Bonnet)
    hh = jax.vmap(ng.hess_h)(h_fn(theta), P)               # single-sample hess h (Price)
    if rule == "kappa":
        f = lambda m_, M_, g_, h_: ng.update_kappa(m_, M_, g_, 0.5 * h_, rho)
    elif rule == "lambda":
        f = lambda m_, M_, g_, h_: ng.update_lambda(m_, M_, g_, 0.5 * h_, rho)
    elif rule == "lsk":
        f = lambda m_, M_, g_, h_: ng.update_lambda_pd(m_, M_, g_, 0.5 * h_, rho)
    elif rule == "chol_cov":
        f = lambda m_, M_, g_, h_: ng.update_chol_cov(m_, M_, g_, jnp.tril(ng.estimator_F1(h_, M_)), rho)
    elif rule == "chol_prec":
        f = lambda m_, M_, g_, h_: ng.update_chol_prec(m_, M_, g_, jnp.tril(ng.estimator_F2(M_, h_)), rho)
    else:
        f = lambda m_, M_, g_, h_: ng.update_cor1(m_, M_, g_, jnp.tril(ng.estimator_F2(M_, h_)), rho)
    return jax.vmap(f)(mu, M, gh, hh)


def _code(rule, mu, M):
    """0: fine; the shared code of a lost Gaussian (3 covariance, 4 precision, 5 singular factor);
    2: non-finite values (the step blew up). For the factor rules (C, T) q is a Gaussian whenever
    the factor is finite with a non-zero diagonal (Tan (2025) Sec. 7); for the matrix rules (kappa,
    lambda) the eigenvalues decide."""
    finite = jnp.all(jnp.isfinite(M)) & jnp.all(jnp.isfinite(mu))
    Mf = jnp.where(finite, M, jnp.eye(M.shape[-1]))
    if rule in ("kappa", "lambda", "lsk"):
        pd = jnp.linalg.eigvalsh(_bsym(Mf))[0] > 0
    else:
        pd = jnp.all(jnp.diagonal(Mf) != 0)
    return jnp.where(~finite, 2, jnp.where(pd, 0, _LOST[rule]))


class PDState(NamedTuple):
    """One Monte Carlo run: mean, the rule's matrix (Sigma, P, C or T), its draws z (MC_STEPS, d),
    the step count t, and ``hyper`` = {"rho", "n_steps"} (the run stops, "converged", after n_steps)."""

    mu: jax.Array
    M: jax.Array
    z: jax.Array
    t: jax.Array
    hyper: dict


@memoize("vilab.theory.definiteness Monte Carlo rules", maxsize=32)
def pd_rule_algorithm(rule: str, target: Target) -> Algorithm:
    """The single-sample update ``rule`` (a value of PD_RULES) on ``target`` as an Algorithm: step t
    uses the run's own draw z[t] (theta in the rule's own factor, Tan (2025) Tables 3-4) and
    second-order single-sample estimates (Price/Bonnet; Tan Sec. 5.1, Thm 2); a step that leaves
    the Gaussian family is rejected by the runner with the code of :func:`_code`."""

    def step(key, state, batch):
        z = jax.lax.dynamic_index_in_dim(state.z, state.t, keepdims=False)
        mu_n, M_n = _mc_update(rule, state.mu[None], state.M[None], z[None], target.grad_batch, target.hess_batch,
                               state.hyper["rho"])
        mu_n, M_n = mu_n[0], M_n[0]
        code = _code(rule, mu_n, M_n)
        t = state.t + 1
        code = jnp.where((code == 0) & (t >= state.hyper["n_steps"]), 1, code)
        return state._replace(mu=mu_n, M=M_n, t=t), {"code": code, "step_size": state.hyper["rho"]}

    def observe(state):
        M = state.M
        if rule == "kappa":
            S = M
        elif rule in ("lambda", "lsk"):
            S = jnp.linalg.inv(M)
        elif rule == "chol_cov":
            S = M @ M.T
        else:
            S = jnp.linalg.inv(M @ M.T)
        return {"mean": state.mu, "cov": S, "objective": jnp.nan}

    def init(key, start, rho=0.1, n_steps=MC_STEPS):
        mu, M, z = start
        return PDState(jnp.asarray(mu, jnp.float64), jnp.asarray(M, jnp.float64), jnp.asarray(z, jnp.float64),
                       jnp.int32(0), {"rho": jnp.float64(rho), "n_steps": jnp.int32(n_steps)})

    return Algorithm(init, step, observe, name=f"single-sample {rule}", objective_name="none",
                     settings={"rule": rule})


#: the statuses that mean "no longer a Gaussian" (the rest of "diverged: ..." is a numerical blow-up)
_PD_LOSS = {CODES[3][0], CODES[4][0], CODES[5][0]}


def pd_loss_fraction(target: Target, mu, Sigma, rho: float, n_runs: int = 200, n_steps: int = 20,
                     key=None, rules=None) -> dict:
    """Fraction of Monte Carlo runs that lose positive definiteness, for each update rule.

    Each run repeats ``n_steps`` (at most 100) stochastic natural-gradient steps from (mu, Sigma),
    each with one draw theta ~ q and the second-order (Price/Bonnet) single-sample estimates
    grad h(theta), hess h(theta) (Tan (2025) Sec. 5.1, Thm 2; Khan et al. 2018). Rules
    (``PD_RULES``): Table 1 lambda (precision S_new = (1 - rho) S - rho hess log p), Table 1 kappa,
    Thm 1(i) C, Thm 1(ii) T, Corollary 1. A run stops at the first step whose update is not a
    Gaussian any more: "lost PD" (an indefinite Sigma or precision; for the factor rules a zero
    diagonal entry, Tan (2025) Sec. 7) or "non-finite" (the step blew up: non-finite values, or a
    covariance that collapsed or exploded past float64's range, :data:`vilab.core.CODES`). All rules share the same
    normal draws z ~ N(0, I) drawn from ``key`` (a jax.random key, required), shape (n_runs, 100, d) (common
    random numbers; a shorter run sees the same first draws as a longer one). Each rule is one
    vmapped run of :func:`vilab.core.run_many` (compiled once per rule, target and batch size).
    Returns {label: {"lost PD": fraction, "non-finite": fraction}}.
    """
    d = target.dim
    rho = _check_rho(rho)
    n_runs, n_steps = int(n_runs), int(n_steps)
    if n_runs < 1 or not 1 <= n_steps <= MC_STEPS:
        raise ValueError(f"Use at least one Monte Carlo run and between 1 and {MC_STEPS} steps.")
    mu = np.asarray(mu, float).reshape(d)
    S = _check_cov(Sigma, d)
    P = np.linalg.inv(S)
    inits = {"kappa": S, "lambda": _sym(P), "lsk": _sym(P), "chol_cov": np.linalg.cholesky(S),
             "chol_prec": np.linalg.cholesky(_sym(P)), "cor1": np.linalg.cholesky(_sym(P))}
    labels = list(PD_RULES) if rules is None else list(rules)
    for lab in labels:
        if lab not in PD_RULES:
            raise ValueError(f"Unknown update rule {lab!r}; choose from {list(PD_RULES)}.")
    key = check_key(key, "pd_loss_fraction (it draws the Monte Carlo runs)")
    Z = jax.random.normal(key, (n_runs, MC_STEPS, d), dtype=jnp.float64)
    keys = jax.random.split(jax.random.fold_in(key, 1), n_runs)  # unused by the steps (their draws are Z)
    out = {}
    for lab in labels:
        rule = PD_RULES[lab]
        alg = pd_rule_algorithm(rule, target)
        states = jax.vmap(lambda z: alg.init(None, (mu, inits[rule], z), rho=rho, n_steps=n_steps))(Z)
        traces = run_many(alg, keys, states, MC_STEPS, record_every=MC_STEPS)
        lost = np.array([t.status in _PD_LOSS for t in traces])
        nonfinite = np.array([t.diverged for t in traces]) & ~lost  # non-finite, collapsed or exploded
        out[lab] = {"lost PD": float(np.mean(lost)), "non-finite": float(np.mean(nonfinite))}
    return out


def two_component_mixture(delta: float = 3.0, sd: float = 1.0, weight: float = 0.5) -> Target:
    """Equal-covariance two-component Gaussian mixture on R^2 (not log-concave):
    p(theta) = w N(theta; (-delta, 0), sd^2 I) + (1 - w) N(theta; (delta, 0), sd^2 I).

    Between the modes hess log p has a positive eigenvalue (for delta > sd), which is what makes
    a single-sample precision update indefinite.
    """
    delta, sd, weight = float(delta), float(sd), float(weight)
    if not (sd > 0 and np.isfinite(sd)):
        raise ValueError(f"The component standard deviation must be positive; got {sd}.")
    if not 0 < weight < 1:
        raise ValueError(f"The mixture weight must lie strictly between 0 and 1; got {weight}.")
    if not np.isfinite(delta):
        raise ValueError("The mode separation must be finite.")
    m1, m2 = jnp.array([-delta, 0.0]), jnp.array([delta, 0.0])
    lw1, lw2 = np.log(weight), np.log1p(-weight)

    def log_density(theta):
        a = lw1 - 0.5 * jnp.sum((theta - m1) ** 2) / sd**2
        b = lw2 - 0.5 * jnp.sum((theta - m2) ** 2) / sd**2
        return jnp.logaddexp(a, b)

    mean = np.array([-weight * delta + (1 - weight) * delta, 0.0])
    cov = np.diag([sd**2 + 4 * weight * (1 - weight) * delta**2, sd**2])
    k = delta + 4 * sd
    return Target(f"two-component mixture (delta={delta:g})", 2, log_density, mean=mean, cov=cov,
                  bounds=((-k, k), (-4 * sd, 4 * sd)), info={"delta": delta, "sd": sd, "weight": weight})


#: Tan (2025) Fig. 2: the two natural-gradient updates of (mu, T) it compares (vilab.algorithms method names)
FIG2_METHODS = {"T by Theorem 1(ii)": "tan-2N", "T with Corollary 1": "tan-2N-cor1"}


def backtracking_step_sizes(model, rel_tol: float = 1e-7, max_steps: int = 1000) -> dict:
    """Tan (2025) Sec. 5, Fig. 2: natural-gradient ascent of the exact ELBO of a Poisson loglinear model
    (:class:`vilab.targets.regression.GLMModel`) in (mu, T), Sigma^-1 = T T^T, by Theorem 1(ii) and by
    Corollary 1, each step with the largest rho in {1, 0.1, 0.01, ...} that keeps q Gaussian and increases
    L (Sec. 4.1's rule), from mu = 0, T = sqrt(n) I (Sec. 8's start), until |dL| < rel_tol |L| (our
    stopping rule; the paper does not state one).

    Returns {label: {"rho": step sizes (k,), "elbo": L at each iterate (k + 1,) with every constant
    (sum log y! and the prior's normaliser), "mean": final mu, "status": run status}} for the labels of
    ``FIG2_METHODS``.
    """
    from ..algorithms import run

    d, n = model.d, model.n
    init = (np.zeros(d), np.eye(d) / n)
    target, out = model.target(), {}
    for label, name in FIG2_METHODS.items():
        tr = run(name, target, init, max_steps, 1.0, schedule="backtracking", rel_tol=rel_tol)
        # the runs' ELBO leaves out constants (sum log y!, the prior's normaliser): add them back
        offset = float(model.exact_elbo(tr.mean[0], tr.cov[0])) - float(tr.extra["elbo"][0])
        out[label] = {"rho": np.asarray(tr.step_sizes, float), "elbo": np.asarray(tr.extra["elbo"], float) + offset,
                      "mean": np.asarray(tr.mean[-1]), "status": tr.status}
    return out
