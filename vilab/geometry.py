"""Quantities of the geometry pages that the update-rule catalogue does not provide.

Everything here is a pure function built on :mod:`vilab.natgrad` (the update rules themselves are
never re-derived here) and, for whole runs, on :func:`vilab.algorithms.run`.

Positive definiteness (Tan (2025) Sec. 7 digest example; Khan & Nielsen 2018):
    single_sample_updates(target, mu, Sigma, theta, rhos)   precision (Table 1 xi/lambda) vs T (Thm 1(ii))
    precision_pd_limit(P, hess_logp)     largest rho keeping (1 - rho) P - rho hess log p PD
    chol_singular_steps(T, hess_logp)    the rho where T (I + rho Hbarbar) is singular
    pd_loss_fraction(target, mu, Sigma, rho, n_runs, n_steps, seed)   Monte Carlo, per rule
    two_component_mixture(delta, sd, weight)                           a non-log-concave 2-D target
Guarantees (Kumar et al. (2025) Thm 1, Lemma 1; digest Sec. 6.8):
    theorem1_rates(delta, lam_min) -> {"paper": ..., "corrected": ...}
    theorem1_bound(t, excess0, mu)  = e^{-2 mu t} excess0
    lemma1_check(V) -> (smallest eigenvalue of F_C^-1, paper's bound, corrected bound)
    theorem1_report(target, natural_flow) -> delta, lam_min, both constants and bounds, Lemma 1 along the flow
    natural_kl_asymptote(t, kl) -> the e^{-2t} curve through the natural flow's last point above round-off
Step sizes (Kumar et al. digest Secs. 2.4, 2.5, 8.1, 9.12-13; Tan digest A2):
    stability_thresholds(A, C0) -> method -> step-size limit on a Gaussian target with precision A
    local_precision(target, init) -> A (the target's precision, or V*^-1 at the Gaussian fixed point)
    step_size_limits(target, init) -> {"limits": stability_thresholds(A, C0), "lam_min", "lam_max"}
    step_size_sweep(name, target, init, step_sizes, n_steps, **options) -> (iterations, statuses, traces)
Long runs and VN vs SR-VN (Kumar et al. Fig. 1b/c, App. B):
    thinned_run(name, target, init, rho, n_steps, n_record=400) -> Trace recorded every k steps
    vn_srvn_gap(target, init, rhos) -> one-step gaps ||V_VN - V_SR||_F, ||m_VN - m_SR|| (O(rho^2))
    flow_times(name, rho, k) -> the flow time of iterate k (VN: -k log(1 - rho), exact; others rho k)
Plot windows of 2-D targets: plot_window(bounds, points), log_density_grid(target, bounds, n)
(The 1-D (mu, sigma^2) fields and runs live in :mod:`vilab.fields`.)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import natgrad as ng
from .targets import Target

__all__ = [
    "PD_RULES", "single_sample_updates", "precision_pd_limit", "chol_singular_steps", "pd_loss_fraction",
    "two_component_mixture", "theorem1_rates", "theorem1_bound", "lemma1_check", "stability_thresholds",
    "step_size_sweep", "local_precision", "thinned_run", "vn_srvn_gap", "theorem1_report", "plot_window",
    "log_density_grid", "natural_kl_asymptote", "step_size_limits", "flow_times",
]


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
# Positive definiteness: one single-sample update (Tan (2025) Sec. 7 digest example)


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
# Positive definiteness: Monte Carlo over repeated single-sample updates

PD_RULES = {
    "precision (natural parameter, Table 1 lambda)": "lambda",
    "covariance (kappa, Table 1)": "kappa",
    "Cholesky of covariance C (Thm 1(i))": "chol_cov",
    "Cholesky of precision T (Thm 1(ii))": "chol_prec",
    "T with Corollary 1": "cor1",
}


def _sym(X):
    return 0.5 * (X + X.T)


def _mc_update(rule, mu, M, z, g_fn, h_fn, rho):
    """One single-sample step of ``rule`` for a batch of runs (leading axis), eager (no compile).

    theta is drawn in each rule's own factor (Tan (2025) Tables 3-4: theta = mu + C z,
    theta = mu + T^-T z), gradients are single-sample Bonnet/Price estimates."""
    solve_t = jax.vmap(lambda A, b, lower: jax.scipy.linalg.solve_triangular(A, b, lower=lower), (0, 0, None))
    eye = jnp.eye(M.shape[-1])
    if rule == "kappa":
        L = jnp.linalg.cholesky(_bsym(M))
        theta = mu + jnp.einsum("bij,bj->bi", L, z)
        P = jnp.linalg.inv(_bsym(M))
    elif rule == "lambda":
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
    elif rule == "chol_cov":
        f = lambda m_, M_, g_, h_: ng.update_chol_cov(m_, M_, g_, jnp.tril(ng.estimator_F1(h_, M_)), rho)
    elif rule == "chol_prec":
        f = lambda m_, M_, g_, h_: ng.update_chol_prec(m_, M_, g_, jnp.tril(ng.estimator_F2(M_, h_)), rho)
    else:
        f = lambda m_, M_, g_, h_: ng.update_cor1(m_, M_, g_, jnp.tril(ng.estimator_F2(M_, h_)), rho)
    return jax.vmap(f)(mu, M, gh, hh)


def _bsym(X):
    return 0.5 * (X + jnp.swapaxes(X, -1, -2))


def _codes(rule, mu, M):
    """0: fine, 1: lost positive definiteness, 2: non-finite values (the step blew up), per run.

    For the factor rules (C, T) q is a Gaussian whenever the factor is finite with a non-zero
    diagonal (Tan (2025) Sec. 7); for the matrix rules (kappa, lambda) the eigenvalues decide."""
    finite = jnp.all(jnp.isfinite(M), axis=(1, 2)) & jnp.all(jnp.isfinite(mu), axis=1)
    Mf = jnp.where(finite[:, None, None], M, jnp.eye(M.shape[-1]))
    if rule in ("kappa", "lambda"):
        pd = jnp.linalg.eigvalsh(_bsym(Mf))[:, 0] > 0
    else:
        pd = jnp.all(jnp.diagonal(Mf, axis1=1, axis2=2) != 0, axis=1)
    return jnp.where(~finite, 2, jnp.where(pd, 0, 1))


_MC: dict = {}
_MC_STEPS = 100  # draws are made for this many steps, so a shorter run sees the same first draws


def _mc_fn(rule, target):
    """jit of ``n_steps`` single-sample steps of ``rule`` for a batch of runs; a run that fails keeps
    its code (the first failure) and stops changing. Compiled once per (rule, target, batch size)."""
    key = (rule, id(target))
    hit = _MC.get(key)
    if hit is not None and hit[0] is target:
        return hit[1]

    def fn(mu_b, M_b, Z, n_steps, rho):
        def body(k, c):
            mu_b, M_b, code = c
            mu_n, M_n = _mc_update(rule, mu_b, M_b, Z[:, k], target.grad_batch, target.hess_batch, rho)
            code = jnp.where(code == 0, _codes(rule, mu_n, M_n), code)
            keep = code == 0
            return jnp.where(keep[:, None], mu_n, mu_b), jnp.where(keep[:, None, None], M_n, M_b), code

        return jax.lax.fori_loop(0, n_steps, body, (mu_b, M_b, jnp.zeros(mu_b.shape[0], jnp.int32)))[2]

    f = jax.jit(fn)
    _MC[key] = (target, f)
    return f


def pd_loss_fraction(target: Target, mu, Sigma, rho: float, n_runs: int = 200, n_steps: int = 20,
                     seed: int = 0, rules=None) -> dict:
    """Fraction of Monte Carlo runs that lose positive definiteness, for each update rule.

    Each run repeats ``n_steps`` (at most 100) stochastic natural-gradient steps from (mu, Sigma),
    each with one draw theta ~ q and the second-order (Price/Bonnet) single-sample estimates
    grad h(theta), hess h(theta) (Tan (2025) Sec. 5.1, Thm 2; Khan et al. 2018). Rules
    (``PD_RULES``): Table 1 lambda (precision S_new = (1 - rho) S - rho hess log p), Table 1 kappa,
    Thm 1(i) C, Thm 1(ii) T, Corollary 1. A run stops at the first step whose update is not a
    Gaussian any more: "lost PD" (an indefinite Sigma or precision; for the factor rules a zero
    diagonal entry, Tan (2025) Sec. 7) or "non-finite" (the step blew up). All rules share the same
    normal draws z (common random numbers), and a shorter run sees the same first draws as a longer
    one. One compiled loop per rule. Returns {label: {"lost PD": fraction, "non-finite": fraction}}.
    """
    d = target.dim
    rho = _check_rho(rho)
    n_runs, n_steps = int(n_runs), int(n_steps)
    if n_runs < 1 or not 1 <= n_steps <= _MC_STEPS:
        raise ValueError(f"Use at least one Monte Carlo run and between 1 and {_MC_STEPS} steps.")
    mu = np.asarray(mu, float).reshape(d)
    S = _check_cov(Sigma, d)
    P = np.linalg.inv(S)
    inits = {"kappa": S, "lambda": _sym(P), "chol_cov": np.linalg.cholesky(S), "chol_prec": np.linalg.cholesky(_sym(P)),
             "cor1": np.linalg.cholesky(_sym(P))}
    labels = list(PD_RULES) if rules is None else list(rules)
    for lab in labels:
        if lab not in PD_RULES:
            raise ValueError(f"Unknown update rule {lab!r}; choose from {list(PD_RULES)}.")
    batch = 16
    while batch < n_runs:  # runs are padded to a power of two: a handful of compilations serve every count
        batch *= 2
    Z = np.zeros((batch, _MC_STEPS, d))
    Z[:n_runs] = np.asarray(jax.random.normal(jax.random.PRNGKey(int(seed)), (n_runs, _MC_STEPS, d), dtype=jnp.float64))
    Z = jnp.asarray(Z)
    out = {}
    for lab in labels:
        rule = PD_RULES[lab]
        code = np.asarray(_mc_fn(rule, target)(jnp.broadcast_to(jnp.asarray(mu), (batch, d)),
                                               jnp.broadcast_to(jnp.asarray(inits[rule]), (batch, d, d)),
                                               Z, jnp.int32(n_steps), jnp.float64(rho)))[:n_runs]
        out[lab] = {"lost PD": float(np.mean(code == 1)), "non-finite": float(np.mean(code == 2))}
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


# ---------------------------------------------------------------------------------------------
# Kumar et al. (2025): Theorem 1 and Lemma 1


def theorem1_rates(delta: float, lam_min: float) -> dict:
    """PL constants of Kumar et al. (2025) Thm 1 / Lemma 2: the printed and the corrected one.

    paper (Lemma 1 as printed, Eq. 21):  mu = delta * min{lam_min, lam_min^2 / 2}
    corrected (digest Sec. 6.8):          mu = delta * lam_min / 2
    The printed Lemma 1 lower bound on eig(F_C^-1) is false when lam_min(V) > 1 (d = 1: F_C^-1 = V/2
    < min{V, V^2/2} for V > 1); lam_min(V)/2 <= eig(F_C^-1) always holds. ``delta`` is the strong
    convexity of l-bar (for a Gaussian target: lambda_min of its precision), ``lam_min`` the
    smallest eigenvalue of V_t along the trajectory.
    """
    delta, lam_min = float(delta), float(lam_min)
    if not (delta > 0 and lam_min > 0 and np.isfinite(delta) and np.isfinite(lam_min)):
        raise ValueError("Theorem 1 needs a positive strong-convexity constant delta and a positive lambda_min.")
    return {"paper": delta * min(lam_min, lam_min**2 / 2.0), "corrected": delta * lam_min / 2.0}


def theorem1_bound(t, excess0: float, mu: float) -> np.ndarray:
    """Kumar et al. (2025) Thm 1: KL_t - KL_* <= e^{-2 mu t} (KL_0 - KL_*)."""
    return float(excess0) * np.exp(-2.0 * float(mu) * np.asarray(t, float))


def natural_kl_asymptote(t, kl, floor: float = 1e-10):
    """The e^{-2t} asymptote of the natural-gradient flow's KL on a Gaussian target: c e^{-2t} with c
    fixed by the flow's last point above ``floor`` (below it, round-off), or None if none is above.

    On a Gaussian target KL(q_t || p) e^{2t} tends to a constant whatever the conditioning (Kumar
    et al. (2025) digest Sec. 9.4: natural-parameter errors decay exactly as e^{-t}, the KL as their
    square), so the curve through the last reliable point shows the flow's asymptotic slope.
    """
    t, kl = np.asarray(t, float), np.asarray(kl, float)
    if t.shape != kl.shape:
        raise ValueError(f"Times and KL values must have the same length; got {t.shape} and {kl.shape}.")
    alive = np.flatnonzero(np.isfinite(kl) & (kl > floor))
    if alive.size == 0:
        return None
    i = alive[-1]
    return kl[i] * np.exp(-2.0 * (t - t[i]))


def lemma1_check(V) -> dict:
    """Smallest eigenvalue of F^-1 in (m, C) against Kumar et al. Lemma 1's printed lower bound and
    the corrected one (digest Sec. 6.8). F = blockdiag(V^-1, I(C)) (Tan (2025) Lemma 1), C = chol(V).

    Returns {"min_eig": ..., "paper_bound": min(l, l^2/2), "corrected_bound": l/2, "lam_min": l}.
    """
    V = np.asarray(V, float)
    V = 0.5 * (V + V.T)
    lam = np.linalg.eigvalsh(V)
    if lam[0] <= 0:
        raise ValueError("V must be positive definite.")
    C = np.linalg.cholesky(V)
    IC = ng.fisher_block_I(C)
    inv_eigs = np.concatenate([lam, 1.0 / np.linalg.eigvalsh(0.5 * (IC + IC.T))])
    l = float(lam[0])
    return {"min_eig": float(inv_eigs.min()), "paper_bound": min(l, l**2 / 2.0), "corrected_bound": l / 2.0,
            "lam_min": l}


# ---------------------------------------------------------------------------------------------
# Step sizes


def stability_thresholds(A, C0=None) -> dict:
    """Step-size limits on a Gaussian target with precision A (linear stability; descent form).

    With lam_max = lambda_max(A), lam_min = lambda_min(A) and x0^2 = lambda_max(C0^T A C0):
      gd-mc, tan-1E, bwgd : 1 / lam_max  (covariance factor 1 - alpha (lam_i + lam_j); Kumar digest
                            Secs. 2.5, 8.1, 9.12; the mean alone would allow 2 / lam_max)
      fbgvi               : 1 / lam_max  (beyond it FB-GVI stalls at a wrong covariance; Sec. 2.6)
      gd-mv               : min(2 / lam_max, 4 / lam_max^2)  (local factor 1 - rho a^2 / 2; Sec. 8.1)
      vn, lambda          : 1  (S_k - A = (1 - rho)^k (S_0 - A): monotone and PD for rho <= 1; Sec. 2.8)
      srvn, tan-1N        : min(2, 2 / x0^2, 4 / (x0^2 - 1))  (1-D analysis of Sec. 2.4: mean factor
                            1 - rho x^2, scale contracts iff x^2 < 1 + 4/rho, local factor 1 - rho)
      tan-2N, tan-2N-cor1 : 2  (T update t <- t (1 + rho (u - 1)/2), local factor 1 - rho; Tan digest A2)
      tan-2E              : min(2 / lam_max, lam_min)  (Euclidean step on T: curvature 2 / lam at
                            t* = sqrt(lam), and the mean)
    These are 1-D (per eigen-direction) linearisations at the optimum or the start: reference
    lines, not guarantees (e.g. SR-VN from C0 = I on Kumar's T2 diverges below its line).
    """
    A = np.asarray(A, float)
    A = 0.5 * (A + A.T)
    lam = np.linalg.eigvalsh(A)
    if lam[0] <= 0:
        raise ValueError("The target precision must be positive definite.")
    lmin, lmax = float(lam[0]), float(lam[-1])
    C0 = np.eye(len(lam)) if C0 is None else np.asarray(C0, float)
    x2 = float(np.linalg.eigvalsh(C0.T @ A @ C0)[-1])
    sr = min(2.0, 2.0 / x2, 4.0 / (x2 - 1.0) if x2 > 1 else np.inf)
    return {"gd-mc": 1 / lmax, "tan-1E": 1 / lmax, "bwgd": 1 / lmax, "fbgvi": 1 / lmax,
            "gd-mv": min(2 / lmax, 4 / lmax**2), "vn": 1.0, "lambda": 1.0, "srvn": sr, "tan-1N": sr,
            "tan-2N": 2.0, "tan-2N-cor1": 2.0, "tan-2E": min(2 / lmax, lmin)}


def step_size_sweep(name: str, target: Target, init, step_sizes, n_steps: int, key=None, **options):
    """Iterations to tolerance for each step size, from one vmapped compiled loop
    (:func:`vilab.algorithms.run_sweep`). Returns (iterations (k,) int array, statuses list,
    traces): iterations = steps taken (for a "converged" run, the iterations to tolerance)."""
    from .algorithms import run_sweep  # lazy: pages that never sweep do not import the catalogue

    steps = np.asarray(step_sizes, float)
    if steps.ndim != 1 or steps.size == 0 or np.any(~np.isfinite(steps)) or np.any(steps <= 0):
        raise ValueError("Step sizes for a sweep must be a non-empty list of positive numbers.")
    traces = run_sweep(name, target, init, int(n_steps), steps, key=key, **options)
    return np.array([t.n_steps for t in traces], int), [t.status for t in traces], traces


def local_precision(target: Target, init, n_steps: int = 500) -> np.ndarray:
    """The precision matrix A the step-size limits are linearised with: the target's precision for a
    Gaussian target, else V*^-1 = E_q*[-hess log p] at the Gaussian fixed point q* (Kumar et al.
    (2025) Eq. 22), found by VN with rho = 1 (exact expectations needed)."""
    if target.quadratic and target.cov is not None:
        A = np.linalg.inv(np.asarray(target.cov, float))
        return 0.5 * (A + A.T)
    from .algorithms import run  # lazy, as in step_size_sweep

    tr = run("vn", target, init, int(n_steps), 1.0, rel_tol=1e-12)
    if tr.status != "converged":
        raise ValueError(f"Could not locate the Gaussian fixed point of {target.name!r} (VN: {tr.status}).")
    A = np.linalg.inv(tr.cov[-1])
    return 0.5 * (A + A.T)


def step_size_limits(target: Target, init) -> dict:
    """:func:`stability_thresholds` on ``target`` from the start ``init`` (any vilab.gaussian
    parameterisation; C0 = its covariance's Cholesky factor), linearised with A =
    :func:`local_precision`. Returns {"limits": method -> step-size limit, "lam_min", "lam_max":
    the extreme eigenvalues of A}."""
    from .gaussian import covariance

    A = local_precision(target, init)
    lam = np.linalg.eigvalsh(A)
    C0 = np.linalg.cholesky(np.asarray(covariance(init), float))
    return {"limits": stability_thresholds(A, C0), "lam_min": float(lam[0]), "lam_max": float(lam[-1])}


def flow_times(name: str, step_size: float, k) -> np.ndarray:
    """The flow time at which iterate k of method ``name`` with step size rho is drawn against a flow.

    VN (``name="vn"``) follows the natural-gradient flow exactly on Gaussian targets: its iterate k
    IS the flow at t_k = -k log(1 - rho) (Kumar et al. (2025) digest Sec. 9.2; :func:`thinned_run`),
    inf for k >= 1 when rho >= 1 (the posterior is reached in one step). Every other method is drawn
    at t = rho k, its first-order (Euler) time, where it follows its own flow only while rho is small.
    """
    rho = _check_rho(step_size)
    k = np.asarray(k, float)
    if name != "vn":
        return rho * k
    if rho >= 1.0:
        return np.where(k > 0, np.inf, 0.0)
    return -k * np.log1p(-rho)


# ---------------------------------------------------------------------------------------------
# Long runs recorded every k steps (Kumar et al. (2025) Fig. 1b: SR-VN vs VN at rho = 1e-5)

_THIN: dict = {}


def _thinned_fn(name, target, n_record):
    """jit of: n_record blocks of k steps of ``name`` (exact gradients), recording (mu, Sigma, KL)
    after each block; a step that leaves the Gaussian family freezes the state and records where
    and why (the failure codes of vilab.algorithms)."""
    key = (name, id(target), int(n_record))
    hit = _THIN.get(key)
    if hit is not None and hit[0] is target:
        return hit[1]
    from .algorithms import State, get_method, sigma_of, step
    from .algorithms.core import logdet_sigma_of, valid_code
    from .algorithms.oracle import kl_to_gaussian

    chart = get_method(name).chart
    m_t = jnp.asarray(target.mean)
    P_t = jnp.asarray(np.linalg.inv(target.cov))
    ld_P = float(np.linalg.slogdet(np.asarray(P_t))[1])

    def record(s):
        S = sigma_of(chart, s.M)
        return s.mu, S, kl_to_gaussian(s.mu, S, logdet_sigma_of(chart, s.M), m_t, P_t, ld_P)

    def fn(mu0, M0, rho, k):
        def inner(i, c):
            s, fail_at, fail_code, j = c
            new = step(name, target, s, rho)
            code = valid_code(chart, new.mu, new.M, sigma_of(chart, new.M))
            first = (code != 0) & (fail_at < 0)
            ok = (code == 0) & (fail_at < 0)
            s = State(jnp.where(ok, new.mu, s.mu), jnp.where(ok, new.M, s.M))
            return (s, jnp.where(first, j * k + i + 1, fail_at), jnp.where(first, code, fail_code), j)

        def outer(c, j):
            s, fail_at, fail_code, _ = jax.lax.fori_loop(0, k, inner, (*c, j))
            return (s, fail_at, fail_code), record(s)

        s0 = State(mu0, M0)
        (_, fail_at, fail_code), hist = jax.lax.scan(outer, (s0, jnp.int64(-1), jnp.int64(0)), jnp.arange(n_record))
        first = record(s0)
        hist = tuple(jnp.concatenate([a[None], b]) for a, b in zip(first, hist))
        return fail_at, fail_code, hist

    f = jax.jit(fn)
    _THIN[key] = (target, f)
    return f


def thinned_run(name: str, target: Target, init, step_size: float, n_steps: int, n_record: int = 400,
                closed_form_vn: bool = True):
    """``n_steps`` (at least) steps of method ``name`` with exact gradients on a Gaussian target,
    recorded every k = ceil(n_steps / n_record) steps: one compiled loop whatever the step size
    (Kumar et al. Fig. 1b needs 6e5 steps at rho = 1e-5). Returns a :class:`vilab.core.Trace` of the
    recorded iterates (objective KL(q || p), ``extra["k"]`` the iteration number of each row,
    ``extra["t"]`` = rho k); a run that leaves the Gaussian family stops there with status
    "diverged: <reason>" (vilab.algorithms' reasons), else status "max_steps".

    VN (``name="vn"``) with rho <= 1 uses its closed form on Gaussian targets (Kumar digest Sec. 2.8:
    S_k - A = (1 - rho)^k (S_0 - A), S_k m_k - A m* = (1 - rho)^k (S_0 m_0 - A m*)), i.e. the
    natural-gradient flow at t_k = -k log(1 - rho) (:func:`vilab.flows.flow`; rho = 1: the posterior
    from step 1 on), when ``closed_form_vn``; the tests check it against the iteration.
    """
    from .algorithms import initial_state
    from .algorithms.core import REASONS
    from .flows import flow
    from .core.trace import Trace, diverged_status

    if not (target.quadratic and target.cov is not None):
        raise ValueError("Long recorded runs are available on Gaussian targets (their KL is known in closed form).")
    rho = _check_rho(step_size)
    n_steps, n_record = int(n_steps), int(n_record)
    if n_steps < 1 or n_record < 1:
        raise ValueError("Use at least one step and one recorded point.")
    k = max(1, -(-n_steps // n_record))
    n_blocks = min(n_record, -(-n_steps // k))
    ks = k * np.arange(n_blocks + 1)
    if name == "vn" and closed_form_vn and rho <= 1.0:
        if rho < 1.0:
            f = flow("natural-mv", target, init, float(-ks[-1] * np.log1p(-rho)), n_times=len(ks))
            means, covs, kl = f.mean, f.cov, f.objective
        else:  # (1 - rho)^k = 0: the posterior itself from the first step on
            f = flow("natural-mv", target, init, 1.0, n_times=2)
            means = np.concatenate([f.mean[:1], np.repeat(np.asarray(target.mean, float)[None], len(ks) - 1, 0)])
            covs = np.concatenate([f.cov[:1], np.repeat(np.asarray(target.cov, float)[None], len(ks) - 1, 0)])
            kl = np.r_[f.objective[0], np.zeros(len(ks) - 1)]
        status = "max_steps"
    else:
        st = initial_state(name, init)
        fail_at, code, hist = _thinned_fn(name, target, n_record)(st.mu, st.M, jnp.float64(rho), jnp.int64(k))
        fail_at, code = int(fail_at), int(code)
        means, covs, kl = (np.asarray(h)[: n_blocks + 1] for h in hist)
        status = "max_steps"
        if fail_at >= 0:
            keep = int(np.searchsorted(ks, fail_at, side="left"))  # rows recorded before the failure
            rows = list(range(keep))
            if keep < len(ks) and fail_at - 1 > ks[keep - 1]:  # the frozen state: the last valid iterate
                rows.append(keep)
            ks = np.append(ks[:keep], [fail_at - 1] * (len(rows) - keep)).astype(int)
            means, covs, kl = means[rows], covs[rows], kl[rows]
            status = diverged_status(f"{REASONS.get(code, 'failure')} at step {fail_at}")
    return Trace(mean=means, cov=covs, objective=np.asarray(kl), step_sizes=np.full(max(len(ks) - 1, 0), rho),
                 status=status, method=name, objective_name="KL(q || p)",
                 extra={"k": ks, "t": rho * ks, "every": k})


def vn_srvn_gap(target: Target, init, rhos) -> dict:
    """One step of VN and of SR-VN from the same q_0, for every step size in ``rhos`` (Kumar et al.
    (2025) App. B, Eqs. 38-39): they agree to first order in rho, V_VN - V_SR = O(rho^2)
    (digest Sec. 5.7: ||V_VN - V_SR||_F / rho^2 = 0.0260 on T2 from C_0 = 0.2 I).
    Returns {"rho", "gap_V" = ||V_VN - V_SR||_F, "gap_m" = ||m_VN - m_SR||, "ratio_V" = gap_V / rho^2
    (constant for small rho when the gap is O(rho^2))} (exact gradients; VN in its closed form, SR-VN
    iterated, both by :func:`thinned_run`)."""
    rhos = np.atleast_1d(np.asarray(rhos, float))
    if rhos.ndim != 1 or rhos.size == 0 or np.any(~np.isfinite(rhos)) or np.any(rhos <= 0):
        raise ValueError("Step sizes must be a non-empty list of positive numbers.")
    gV, gm = [], []
    for r in rhos:
        a, b = (thinned_run(n, target, init, float(r), 1) for n in ("vn", "srvn"))
        if len(a.mean) < 2 or len(b.mean) < 2:  # a step that left the Gaussian family has no gap
            gV.append(np.nan), gm.append(np.nan)
            continue
        gV.append(np.linalg.norm(a.cov[1] - b.cov[1])), gm.append(np.linalg.norm(a.mean[1] - b.mean[1]))
    gV = np.array(gV)
    return {"rho": rhos, "gap_V": gV, "gap_m": np.array(gm), "ratio_V": gV / rhos**2}


def theorem1_report(target: Target, natural_flow, n_checks: int = 41) -> dict:
    """Kumar et al. (2025) Thm 1 on a solved natural-gradient flow (:func:`vilab.flows.flow`) of a
    Gaussian target (KL_* = 0): delta = lambda_min(A) (strong convexity, A = the target precision),
    lam_min = min_t lambda_min(V_t) along the flow (Assumption 4), the PL constants (printed and
    corrected, :func:`theorem1_rates`), the bounds e^{-2 mu t} KL_0 and whether the flow stays
    below each, and Lemma 1 checked at ``n_checks`` times: the smallest eigenvalue of F^-1 in (m, C)
    against the printed bound min{lam_min, lam_min^2/2} (false when lam_min > 1, digest Sec. 6.8)
    and the corrected lam_min / 2.
    """
    if not (target.quadratic and target.cov is not None):
        raise ValueError("Theorem 1 is illustrated on a Gaussian target (KL_* = 0, delta = lambda_min of its precision).")
    t, V, kl = np.asarray(natural_flow.t), np.asarray(natural_flow.cov), np.asarray(natural_flow.objective)
    if len(t) < 2 or len(kl) != len(t):
        raise ValueError("The flow must be solved at two or more times.")
    delta = float(np.linalg.eigvalsh(np.linalg.inv(target.cov))[0])
    lam_t = np.linalg.eigvalsh(0.5 * (V + np.swapaxes(V, 1, 2)))[:, 0]
    i_min = int(np.argmin(lam_t))
    lam_min = float(lam_t[i_min])
    rates = theorem1_rates(delta, lam_min)
    bounds = {k: theorem1_bound(t, kl[0], mu) for k, mu in rates.items()}
    holds = {k: bool(np.all(kl <= b * (1 + 1e-9) + 1e-300)) for k, b in bounds.items()}
    idx = np.unique(np.r_[np.linspace(0, len(t) - 1, min(int(n_checks), len(t))).round().astype(int), i_min])
    min_eig = min(lemma1_check(V[i])["min_eig"] for i in idx)
    return {"delta": delta, "lam_min": lam_min, "t_of_lam_min": float(t[i_min]), "rates": rates, "bounds": bounds,
            "holds": holds, "fisher_min_eig": float(min_eig), "lemma_paper_bound": min(lam_min, lam_min**2 / 2),
            "lemma_corrected_bound": lam_min / 2, "lemma_fails": bool(min_eig < min(lam_min, lam_min**2 / 2))}


# ---------------------------------------------------------------------------------------------
# Plot windows of 2-D targets (Trajectories and Flows pages)


def plot_window(bounds, points, pad: float = 0.08, max_abs: float = 1e3):
    """The box ((x0, x1), (y0, y1)) covering the target's window ``bounds`` (or None) and the finite
    ``points`` (n, 2) (starts, iterates; points beyond ``max_abs`` are ignored), padded by ``pad`` of
    its size on each side (plus 0.5 when there is no target window)."""
    pts = np.asarray(points, float).reshape(-1, 2)
    pts = pts[np.all(np.isfinite(pts), axis=1) & np.all(np.abs(pts) < max_abs, axis=1)]
    if bounds is None and pts.size == 0:
        raise ValueError("A plot window needs the target's window or at least one finite point.")
    lo = np.min(pts, 0) if pts.size else np.full(2, np.inf)
    hi = np.max(pts, 0) if pts.size else np.full(2, -np.inf)
    if bounds is not None:
        (b0, b1), (b2, b3) = bounds
        lo, hi = np.minimum(lo, [b0, b2]), np.maximum(hi, [b1, b3])
    margin = pad * (hi - lo) + (0.0 if bounds is not None else 0.5)
    return (float(lo[0] - margin[0]), float(hi[0] + margin[0])), (float(lo[1] - margin[1]), float(hi[1] + margin[1]))


def log_density_grid(target: Target, bounds, n: int = 121):
    """log p on an n x n grid over ``bounds`` (one vmapped, jitted call): (values (n, n), xs, ys),
    rows = ys, as :func:`vilab.plots.density_contour` takes them."""
    if target.dim != 2:
        raise ValueError(f"Density contours need a 2-D target; {target.name!r} has dimension {target.dim}.")
    xs, ys = np.linspace(*bounds[0], int(n)), np.linspace(*bounds[1], int(n))
    X, Y = np.meshgrid(xs, ys)
    return np.asarray(target.value_batch(jnp.asarray(np.stack([X.ravel(), Y.ravel()], 1)))).reshape(X.shape), xs, ys
