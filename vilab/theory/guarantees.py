"""Guarantees of Kumar et al. (2025) for the natural-gradient flow: Theorem 1 (a PL inequality and
its exponential rate) and Lemma 1 (a lower bound on the inverse Fisher in (m, C)), with the
corrected constant of the digest (Sec. 6.8); Theorems 2 and 3 for SR-VN, Theorem 3 (biased oracles) with a
bound of our own in place of the printed one, which is not a bound (see :func:`theorem3_bound`).

    theorem1_rates(delta, lam_min) -> {"paper": ..., "corrected": ...}
    theorem1_bound(t, excess0, mu)  = e^{-2 mu t} excess0
    lemma1_check(V) -> (smallest eigenvalue of F_C^-1, paper's bound, corrected bound)
    theorem1_report(target, natural_flow) -> delta, lam_min, both constants and bounds, Lemma 1 along the flow
    natural_kl_asymptote(t, kl) -> the e^{-2t} curve through the natural flow's last point above round-off
    cut_flow(flow, t_end) -> the rows of a solved flow up to t_end
    theorem2_eta(rho, delta, M, lam_min, xi_l, xi_u) -> eta of Thm 2 (Eq. 25)
    theorem2_steps(M, lam_min, xi_l, xi_u) -> rho1, rho2 (App. C.5) and the step size below which eta > 0
    theorem2_constants(A, C0) -> delta, M, lam_min, xi_l, xi_u of a Gaussian target (along the natural-gradient flow)
    theorem2_report(A, trace) -> Thm 2 on an SR-VN run: constants along it, eta, 1 - 2 eta delta, observed ratios
    theorem3_bound(t, excess0, rho, delta, M, lam_min, xi_l, xi_u, zeta_g2, zeta_H2, M_hat) -> Thm 3 (biased
        oracles): the printed bound, a heuristic bias floor (neither is a bound) and a bound derived by us that holds
    biased_srvn(A, m_star, m0, C0, rho, n_steps, b_g, eps_H) -> an SR-VN run fed Thm 3's biased oracle, its KL
        and Assumption 4's constants along it
    theorem3_report(A, m_star, m0, C0, rho, n_steps, b_g, eps_H) -> Thm 2 and Thm 3 on such a run, side by side
"""


from __future__ import annotations

from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from ..family import natgrad as ng
from ..core.checks import finite_result, integer, pd_matrix, positive, real_array, real_scalar
from ..core import Trace
from ..core.cache import memoize
from ..targets import Target

__all__ = ["theorem1_rates", "theorem1_bound", "lemma1_check", "theorem1_report", "natural_kl_asymptote",
           "cut_flow", "theorem2_eta", "theorem2_steps", "theorem2_constants", "theorem2_report", "theorem3_bound",
           "biased_srvn", "theorem3_report", "under", "KL_ROUNDOFF_ABS", "KL_ROUNDOFF_REL", "MAX_ROWS"]


def theorem1_rates(delta: float, lam_min: float) -> dict:
    """PL constants of Kumar et al. (2025) Thm 1 / Lemma 2: the printed and the corrected one.

    paper (Lemma 1 as printed, Eq. 21):  mu = delta * min{lam_min, lam_min^2 / 2}
    corrected (digest Sec. 6.8):          mu = delta * lam_min / 2
    The printed Lemma 1 lower bound on eig(F_C^-1) is false when lam_min(V) > 1 (d = 1: F_C^-1 = V/2
    < min{V, V^2/2} for V > 1); lam_min(V)/2 <= eig(F_C^-1) always holds. ``delta`` is the strong
    convexity of l-bar (for a Gaussian target: lambda_min of its precision), ``lam_min`` the
    smallest eigenvalue of V_t along the trajectory.
    """
    delta = positive(delta, "Theorem 1's strong-convexity constant delta")
    lam_min = positive(lam_min, "Theorem 1's lambda_min")
    return {"paper": delta * min(lam_min, lam_min**2 / 2.0), "corrected": delta * lam_min / 2.0}


def theorem1_bound(t, excess0: float, mu: float) -> np.ndarray:
    """Kumar et al. (2025) Thm 1: KL_t - KL_* <= e^{-2 mu t} (KL_0 - KL_*)."""
    excess0, mu = real_scalar(excess0, "The initial excess KL_0 - KL_*"), real_scalar(mu, "The PL constant mu")
    with np.errstate(over="ignore"):
        out = excess0 * np.exp(-2.0 * mu * real_array(t, "The times t", allow_empty=True))
    return finite_result(out, "The bound e^{-2 mu t} (KL_0 - KL_*)")


def natural_kl_asymptote(t, kl, floor: float = 1e-10):
    """The e^{-2t} asymptote of the natural-gradient flow's KL on a Gaussian target: c e^{-2t} with c
    fixed by the flow's last point above ``floor`` (below it, round-off), or None if none is above.

    On a Gaussian target KL(q_t || p) e^{2t} tends to a constant whatever the conditioning (Kumar
    et al. (2025) digest Sec. 9.4: natural-parameter errors decay exactly as e^{-t}, the KL as their
    square), so the curve through the last reliable point shows the flow's asymptotic slope.
    """
    t = real_array(t, "The times t", allow_empty=True)
    kl = real_array(kl, "The KL values", finite=False, allow_empty=True)
    floor = real_scalar(floor, "floor")
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
    V = pd_matrix(V, "V")
    lam = np.linalg.eigvalsh(V)
    C = np.linalg.cholesky(V)
    IC = ng.fisher_block_I(C)
    inv_eigs = np.concatenate([lam, 1.0 / np.linalg.eigvalsh(0.5 * (IC + IC.T))])
    l = float(lam[0])
    return {"min_eig": float(inv_eigs.min()), "paper_bound": min(l, l**2 / 2.0), "corrected_bound": l / 2.0,
            "lam_min": l}


def theorem1_report(target: Target, natural_flow, n_checks: int = 41) -> dict:
    """Kumar et al. (2025) Thm 1 on a solved natural-gradient flow (:func:`vilab.theory.flows.flow`, a Trace
    with the times in ``extra["t"]``; :func:`cut_flow` keeps its first part) of a
    Gaussian target (KL_* = 0): delta = lambda_min(A) (strong convexity, A = the target precision),
    lam_min = min_t lambda_min(V_t) along the flow (Assumption 4), the PL constants (printed and
    corrected, :func:`theorem1_rates`), the bounds e^{-2 mu t} KL_0 and whether the flow stays
    below each, and Lemma 1 checked at ``n_checks`` times: the smallest eigenvalue of F^-1 in (m, C)
    against the printed bound min{lam_min, lam_min^2/2} (false when lam_min > 1, digest Sec. 6.8)
    and the corrected lam_min / 2.
    """
    if not (target.quadratic and target.cov is not None):
        raise ValueError("Theorem 1 is illustrated on a Gaussian target (KL_* = 0, delta = lambda_min of its precision).")
    t, V, kl = np.asarray(natural_flow.extra["t"]), np.asarray(natural_flow.cov), np.asarray(natural_flow.objective)
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
    min_eig = min(lemma1_check(0.5 * (V[i] + V[i].T))["min_eig"] for i in idx)
    return {"delta": delta, "lam_min": lam_min, "t_of_lam_min": float(t[i_min]), "rates": rates, "bounds": bounds,
            "holds": holds, "fisher_min_eig": float(min_eig), "lemma_paper_bound": min(lam_min, lam_min**2 / 2),
            "lemma_corrected_bound": lam_min / 2, "lemma_fails": bool(min_eig < min(lam_min, lam_min**2 / 2))}


def cut_flow(flow: Trace, t_end: float) -> Trace:
    """The rows of a solved flow (a Trace with ``extra["t"]``) at times t <= t_end."""
    t = np.asarray(flow.extra["t"])
    keep = t <= float(t_end) + 1e-9
    n = int(np.sum(keep))
    return replace(flow, mean=flow.mean[:n], cov=flow.cov[:n], var=None if flow.var is None else flow.var[:n],
                   objective=flow.objective[:n], iterations=flow.iterations[:n],
                   step_sizes=flow.step_sizes[:max(n - 1, 0)], extra={**flow.extra, "t": t[:n]})


# ---------------------------------------------------------------------------------------------
# Theorem 2: global linear convergence of SR-VN (Kumar et al. (2025) Sec. 5, App. C.4-C.5)


def theorem2_eta(rho, delta: float, M: float, lam_min: float, xi_l: float, xi_u: float):
    """Kumar et al. (2025) Thm 2, Eq. 25: the constant eta of L_{t+1} - L_* <= (1 - 2 eta delta)^{t+1} (L_0 - L_*)
    for SR-VN (Algorithm 1) with step size rho,

        eta = min{ lam_min rho - M rho^2 xi_u^4 / 2,  sqrt(5/2) rho xi_l^2 - 5 rho^2 xi_u^4 M / 4 },

    with delta, M the strong convexity and smoothness of l-bar (Assumptions 2-3; a Gaussian target: the
    extreme eigenvalues of its precision), lam_min <= lambda_min(V_t) and xi_l <= ||C_t||_F <= xi_u along
    the run (Assumption 4). The theorem says something only where 0 < eta < 1 / (2 delta) (Eq. 53);
    eta <= 0 (large steps) makes it vacuous. ``rho`` may be an array (eta elementwise).

    Erratum (digest Sec. 6.8 item 3): the proof bounds term B with tr(AB) <= ||A|| ||B|| where a lower
    bound is needed; the exact identity is tr(grad_C L^T C tril[C^T grad_C L]) = 1/2 ||C^T H C - I||_F^2.
    Eq. 25 is computed as printed; on the digest's T2 its bound still holds wherever eta > 0.
    """
    delta = positive(delta, "Theorem 2's strong-convexity constant delta")
    M = positive(M, "Theorem 2's smoothness constant M")
    lam_min = positive(lam_min, "Theorem 2's lambda_min")
    xi_l, xi_u = positive(xi_l, "Theorem 2's xi_l"), positive(xi_u, "Theorem 2's xi_u")
    if xi_l > xi_u:
        raise ValueError(f"Theorem 2 needs xi_l <= xi_u (bounds on ||C_t||_F from below and above); got {xi_l:g} > {xi_u:g}.")
    r = real_array(rho, "The step size rho", allow_empty=True)
    if np.any(r <= 0):
        raise ValueError("Step sizes rho must be positive.")
    eta = np.minimum(lam_min * r - M * r**2 * xi_u**4 / 2.0,
                     np.sqrt(2.5) * r * xi_l**2 - 5.0 * r**2 * xi_u**4 * M / 4.0)
    return float(eta) if eta.ndim == 0 else eta


def theorem2_steps(M: float, lam_min: float, xi_l: float, xi_u: float) -> dict:
    """Step sizes of Kumar et al. (2025) App. C.5 ("Eq. 55"): the maximisers of the two quadratics of
    Eq. 25 (lambda_max := xi_u^2, Remark 1),

        rho1 = lam_min / (lambda_max^2 M),   rho2 = sqrt(2/5) xi_l^2 / (M xi_u^4),

    and ``eta_positive_below`` = 2 min(rho1, rho2): eta > 0 exactly for 0 < rho < 2 min(rho1, rho2).
    The paper says "choose rho <= max{rho1, rho2}"; that is not safe (digest Sec. 5.5): use
    rho <= min(rho1, rho2). Digest check 14 (T2, C0 = 0.2 I): rho1 = 1.16e-3, rho2 = 2.04e-3.
    """
    M = positive(M, "Theorem 2's smoothness constant M")
    lam_min = positive(lam_min, "Theorem 2's lambda_min")
    xi_l, xi_u = positive(xi_l, "Theorem 2's xi_l"), positive(xi_u, "Theorem 2's xi_u")
    rho1 = lam_min / (xi_u**4 * M)
    rho2 = np.sqrt(0.4) * xi_l**2 / (M * xi_u**4)
    return {"rho1": float(rho1), "rho2": float(rho2), "eta_positive_below": float(2.0 * min(rho1, rho2))}


def theorem2_constants(A, C0, n_points: int = 201) -> dict:
    """The constants of Kumar et al. (2025) Thm 2 for SR-VN on a Gaussian target with precision A from
    (m_0, C_0): delta = lambda_min(A), M = lambda_max(A) (Assumptions 2-3), and the bounds of Assumption 4
    along the natural-gradient flow from V_0 = C_0 C_0^T, the path small-step SR-VN follows (the regime
    where eta > 0): S(s) = (1 - s) V_0^-1 + s A, s in [0, 1] (the flow is S(t) = A + (S_0 - A) e^-t),
    lam_min = min_s lambda_min(V(s)), xi_l / xi_u = min / max_s ||C(s)||_F = sqrt(tr V(s)).

    Returns {"delta", "M", "lam_min", "xi_l", "xi_u"} and theorem2_steps' rho1, rho2, eta_positive_below.
    On the digest's T2 with C_0 = 0.2 I this gives rho1 = 1.16e-3 and rho2 = 2.04e-3 (its check 14).
    """
    A = pd_matrix(A, "The target precision A")
    C0 = real_array(C0, "The starting factor C0", ndim=2)
    if C0.shape != A.shape:
        raise ValueError(f"The starting factor C0 must be {A.shape[0]} x {A.shape[0]} like A; got shape {C0.shape}.")
    n = integer(n_points, "The number of points along the flow", 2, 100000)
    V0 = pd_matrix(C0 @ C0.T, "The starting covariance C0 C0^T")
    S0 = np.linalg.inv(V0)
    s = np.linspace(0.0, 1.0, n)[:, None, None]
    S = (1.0 - s) * S0 + s * A
    lam_S = np.linalg.eigvalsh(0.5 * (S + np.swapaxes(S, 1, 2)))
    tr_V = np.sum(1.0 / lam_S, axis=1)
    lam = np.linalg.eigvalsh(A)
    out = {"delta": float(lam[0]), "M": float(lam[-1]), "lam_min": float(np.min(1.0 / lam_S[:, -1])),
           "xi_l": float(np.sqrt(tr_V.min())), "xi_u": float(np.sqrt(tr_V.max()))}
    out.update(theorem2_steps(out["M"], out["lam_min"], out["xi_l"], out["xi_u"]))
    return out


def theorem2_report(A, trace: Trace, floor: float = 1e-10) -> dict:
    """Kumar et al. (2025) Thm 2 checked on an SR-VN run (a Trace of vilab.algorithms.run("srvn", ...) with
    every row recorded, constant step size) on a Gaussian target with precision A (KL = L - L_*):
    delta, M from A; lam_min, xi_l, xi_u along the run's iterates (Assumption 4); eta (Eq. 25) and the
    per-step factor 1 - 2 eta delta; the observed per-step ratios (L_{t+1} - L_*) / (L_t - L_*) and their
    worst (largest) value; whether it is below the factor (meaningful only where 0 < eta < 1/(2 delta)).
    Ratios are taken while L_t - L_* > ``floor`` (below it, round-off). Digest check 14 (T2, C_0 = 0.2 I,
    rho = 1e-3): worst ratio 0.999655 <= 1 - 2 eta delta = 0.999960.
    """
    floor = positive(floor, "The round-off floor")
    A = pd_matrix(A, "The target precision A")
    V = np.asarray(trace.cov, float)
    kl = np.asarray(trace.objective, float)
    steps = np.asarray(trace.step_sizes, float)
    if V.ndim != 3 or len(V) < 2 or len(kl) != len(V):
        raise ValueError("Theorem 2 is checked on a run with two or more recorded iterates (covariances and KL).")
    its = np.asarray(trace.iterations)
    if not np.array_equal(its, np.arange(len(its))):
        raise ValueError("Record every iterate (record_every=1) to check Theorem 2's per-step ratio.")
    if steps.size == 0 or not np.allclose(steps, steps[0]):
        raise ValueError("Theorem 2 is about a constant step size; this run changed it.")
    rho = float(steps[0])
    lam = np.linalg.eigvalsh(A)
    delta, M = float(lam[0]), float(lam[-1])
    Vs = 0.5 * (V + np.swapaxes(V, 1, 2))
    lam_min = float(np.min(np.linalg.eigvalsh(Vs)[:, 0]))
    fro = np.sqrt(np.trace(Vs, axis1=1, axis2=2))  # ||C||_F^2 = tr(C C^T) for any factor C of V
    xi_l, xi_u = float(fro.min()), float(fro.max())
    eta = theorem2_eta(rho, delta, M, max(lam_min, 1e-300), xi_l, xi_u)
    alive = kl > floor
    both = alive[:-1] & alive[1:]
    ratios = kl[1:][both] / kl[:-1][both]
    worst = float(np.max(ratios)) if ratios.size else float("nan")
    factor = 1.0 - 2.0 * eta * delta
    return {"rho": rho, "delta": delta, "M": M, "lam_min": lam_min, "xi_l": xi_l, "xi_u": xi_u, "eta": float(eta),
            "factor": float(factor), "applies": bool(0.0 < eta < 1.0 / (2.0 * delta)), "ratios": ratios,
            "worst_ratio": worst, "holds": bool(worst <= factor),
            **theorem2_steps(M, max(lam_min, 1e-300), xi_l, xi_u)}


# ---------------------------------------------------------------------------------------------
# Theorem 3: SR-VN with biased oracles (Kumar et al. (2025) App. D)

#: the most rows :func:`biased_srvn` keeps (every step of a 10^6-step run: about 60 MB in 2-D)
MAX_ROWS = 1_000_000
#: round-off allowance when a run's KL is compared with a bound: absolute, for the closed-form KL
#: 1/2 (tr AV + r^T A r - d - log det AV), whose terms cancel near the optimum (about 1e-15 for d <= 5 and
#: moderate A, V: 1e-12 leaves a factor 1000), and relative, for q^t over up to 10^6 steps (about t * 2.2e-16)
KL_ROUNDOFF_ABS, KL_ROUNDOFF_REL = 1e-12, 1e-9


def under(kl, curve) -> bool:
    """Whether a run's KL lies on or under a bound's curve at every recorded step, up to the round-off allowance
    :data:`KL_ROUNDOFF_ABS` + :data:`KL_ROUNDOFF_REL` x curve (False where the curve is NaN: no bound)."""
    kl, curve = np.asarray(kl, float), np.asarray(curve, float)
    fin = np.isfinite(kl)
    return bool(np.all(kl[fin] <= curve[fin] * (1.0 + KL_ROUNDOFF_REL) + KL_ROUNDOFF_ABS))


def theorem3_bound(t, excess0: float, rho: float, delta: float, M: float, lam_min: float, xi_l: float, xi_u: float,
                   zeta_g2: float = 0.0, zeta_H2: float = 0.0, M_hat: float | None = None) -> dict:
    """Kumar et al. (2025) Thm 3 for SR-VN fed a biased gradient g + b_g and Hessian H + b_H, ||b_g||^2 <= zeta_g^2,
    ||b_H C||_F^2 <= zeta_H^2 (Assumption 5 with m_g = m_H = 0: additive biases), on a Gaussian target with
    precision A (delta, M = its extreme eigenvalues): the printed bound, the heuristic bias floor this module
    showed as "corrected" before (neither is a bound), and a bound derived by us that holds.

    Printed (Thm 3, from the recursion Eq. 66), with omega_m = M rho^2 xi_u^4 / 2 - lam_min rho (Eq. 49),
    omega_C = 5 rho^2 xi_u^4 M / 4 - sqrt(5/2) rho xi_l^2 (Eq. 50), eta = min(-omega_m, -omega_C) (Eq. 25)::

        Delta_t <= (1 - 2 eta delta)^t Delta_0 + omega_m zeta_g^2 + omega_C zeta_H^2.

    omega_m, omega_C < 0 wherever eta > 0, so the added term is <= 0 (a biased oracle would beat an exact one)
    and it is not accumulated over the steps (digest Sec. 5.6).

    Heuristic floor (NOT a bound; "corrected" in earlier versions of this module): unroll Eq. 66 with |omega|,
    Delta_t <= q^t Delta_0 + (1 - q^t) F_h, q = 1 - 2 eta delta, F_h = (|omega_m| zeta_g^2 + |omega_C| zeta_H^2)
    / (2 eta delta). It fails because the proof drops a cross term: with g_hat = g + b the mean step changes L by
    -rho g^T V g_hat + O(rho^2) = -rho g^T V g - rho g^T V b + O(rho^2), and -rho g^T V b is of first order in b and
    has either sign (Eq. 61 writes the first-order term as if it were -rho g_hat^T V g_hat, and Eq. 62 uses
    ||g + b||^2 <= ||g||^2 + ||b||^2, which drops 2 g^T b); Assumption 5's bound on ||b||^2 does not control it. Counterexample (digest Sec. 5.6, reproduced in tests/test_theorem3.py and
    the registry entry kumar2025-thm3): A = diag(1, 20), start at the target mean, C_0 = sqrt(2/21) I, b_g = 3 e_1,
    rho = 2.27e-3 (eta = 5.67e-5 > 0): at t = 2443 the KL is 4.152 against F_h's curve 1.736 (worst ratio 2.39 at
    t = 2440); the one-step recursion Delta_{t+1} <= q Delta_t + (1 - q) F_h fails at 14,039 of the 26,459 steps.

    Valid bound (derived by us; not in the paper). On a Gaussian target L(m, C) = 1/2 r^T A r + 1/2 tr(C^T A C)
    - sum_i log C_ii + const (r = m - m_*) and Delta = L - L_* = KL exactly. SR-VN as vilab runs it (Eq. 17 with
    Tan's tril whose diagonal is halved) moves m by -rho V g_hat and C by -rho C T, T = tril_half(Y),
    Y = C^T H_hat C - I = K + E, K = C^T H C - I (symmetric), E = C^T b_H C. One step, with V, C of step t:

    * mean (exact: L is quadratic in m, g = grad_m L = A r): dL_m = -rho g^T V g_hat + rho^2/2 g_hat^T V A V g_hat.
      The cross term is handled by the polarisation identity 2 g^T V g_hat = g^T V g + g_hat^T V g_hat - b^T V b
      (Young's inequality 2 x^T y <= |x|^2 + |y|^2 in the V inner product, here an equality), and
      V A V <= M lambda_max(V) V, so
      dL_m <= -rho/2 g^T V g + rho/2 b^T V b - rho/2 (1 - rho M lambda_max(V)) g_hat^T V g_hat.
    * factor C: the first-order term is <grad_C L, -rho C T> = -rho <K, tril_half Y> = -rho/2 <K, Y>
      = -rho/4 (||K||^2 + ||Y||^2 - ||E||^2) (polarisation again); the A part of the remainder is
      1/2 tr(dC^T A dC) <= M rho^2 lambda_max(V) ||T||^2 / 2 <= M rho^2 lambda_max(V) ||Y||^2 / 4; the entropy
      part is sum_i phi(x_i), phi(x) = x - log(1 + x), x_i = dC_ii / C_ii = -rho Y_ii / 2, and phi(x) <= x^2 for
      x >= -1/2 (which also keeps C_ii > 0), so it is <= rho^2 ||Y||^2 / 4. Hence dL_C <= -rho/4 ||K||^2 + rho/4 ||E||^2 - rho/4 (1 - rho (M lambda_max(V)
      + 1)) ||Y||^2. (This replaces Eq. 50, whose trace bound goes the wrong way, digest Sec. 6.8 item 3, and
      Eq. 47's smoothness, which ignores the entropy term.)
    * With lambda_min <= lambda_min(V_t) and lambda_max(V_t) <= tr V_t <= xi_u^2 along the run (Assumption 4,
      Remark 1; like the paper's, the bound is a posteriori in these constants):
      g^T V g >= lam_min ||g||^2, ||K||^2 = ||C^T grad_C L||^2 >= lam_min ||grad_C L||^2, b^T V b <= xi_u^2 zeta_g^2,
      ||E||_F^2 <= lambda_max(V) ||b_H C||_F^2 <= xi_u^2 zeta_H^2, and strong convexity (Eq. 19 / the step before
      Eq. 66) gives ||grad L||^2 >= 2 delta Delta_t. Together, whenever

          rho (M xi_u^2 + 1) <= 1   and   rho (M_hat xi_u^2 - 1) <= 1   (M_hat >= lambda_max(H + b_H), so x_i >= -1/2),

          Delta_{t+1} <= (1 - rho delta lam_min / 2) Delta_t + rho xi_u^2 (2 zeta_g^2 + zeta_H^2) / 4,
          Delta_t     <= q^t Delta_0 + (1 - q^t) F,   q = 1 - rho delta lam_min / 2,
                                                      F = xi_u^2 (2 zeta_g^2 + zeta_H^2) / (2 delta lam_min).

    The contraction is smaller than the paper's 1 - 2 eta delta promises and does not use eta; the floor F is loose
    (on the counterexample F = 189 while the run settles at 1/2 b^T A^-1 b = 4.5, a factor xi_u^2 / lam_min from
    bounding b^T V b and g^T V g by the extreme eigenvalues of V) but it is a bound: it holds at every step of the
    counterexample and of random instances (tests/test_theorem3.py). On a Gaussian target with a constant mean
    bias alone SR-VN settles at Delta = 1/2 b^T A^-1 b (mean shifted by -A^-1 b, covariance exact).

    ``M_hat``: an upper bound on lambda_max(H + b_H) along the run (default M: no Hessian bias). Returns
    {"eta", "factor" (1 - 2 eta delta), "omega_m", "omega_C", "applies" (0 < eta < 1 / (2 delta), Eq. 53: where the
    paper's statements say anything), "printed", "heuristic_floor", "heuristic" (NaN where not applies),
    "contraction" (q), "step_bias" (rho xi_u^2 (2 zeta_g^2 + zeta_H^2) / 4), "floor" (F), "bound" (ours, NaN where
    its step-size conditions fail), "bound_applies", "rho_max" (the largest step its conditions allow for these
    constants)}; the curves are at the iterations ``t`` (an array).
    """
    delta = positive(delta, "Theorem 3's strong-convexity constant delta")
    M = positive(M, "Theorem 3's smoothness constant M")
    lam_min = positive(lam_min, "Theorem 3's lambda_min")
    rho = positive(rho, "The step size rho")
    excess0 = real_scalar(excess0, "The starting excess L_0 - L_*")
    zg, zH = real_scalar(zeta_g2, "zeta_g^2"), real_scalar(zeta_H2, "zeta_H^2")
    if excess0 < 0 or zg < 0 or zH < 0:
        raise ValueError("The starting excess and the squared bias bounds zeta^2 cannot be negative.")
    M_hat = M if M_hat is None else real_scalar(M_hat, "The bound M_hat on the biased Hessian's largest eigenvalue")
    eta = theorem2_eta(rho, delta, M, lam_min, xi_l, xi_u)
    xi_l, xi_u = float(xi_l), float(xi_u)
    om = M * rho**2 * xi_u**4 / 2.0 - lam_min * rho
    oc = 5.0 * rho**2 * xi_u**4 * M / 4.0 - np.sqrt(2.5) * rho * xi_l**2
    factor = 1.0 - 2.0 * eta * delta
    applies = bool(0.0 < eta < 1.0 / (2.0 * delta))
    t = real_array(t, "The iterations t", allow_empty=True)
    if np.any(t < 0):
        raise ValueError("Iterations t cannot be negative.")
    decay = factor**t if applies else np.full(t.shape, np.nan)
    h_floor = (abs(om) * zg + abs(oc) * zH) / (2.0 * eta * delta) if applies else float("nan")
    # ours: the two step-size conditions of the derivation above
    u = xi_u**2
    rho_max = min(1.0 / (M * u + 1.0), 1.0 / (M_hat * u - 1.0) if M_hat * u > 1.0 else np.inf)
    ok = bool(rho <= rho_max)
    q = 1.0 - rho * delta * lam_min / 2.0
    step_bias = rho * u * (2.0 * zg + zH) / 4.0
    floor = u * (2.0 * zg + zH) / (2.0 * delta * lam_min)
    with np.errstate(under="ignore"):
        qt = q**t
    bound = qt * excess0 + (1.0 - qt) * floor if ok else np.full(t.shape, np.nan)
    return {"eta": float(eta), "factor": float(factor), "omega_m": float(om), "omega_C": float(oc), "applies": applies,
            "printed": decay * excess0 + om * zg + oc * zH, "heuristic_floor": float(h_floor),
            "heuristic": decay * excess0 + (1.0 - decay) * h_floor, "contraction": float(q),
            "step_bias": float(step_bias), "floor": float(floor), "bound": bound, "bound_applies": ok,
            "rho_max": float(rho_max)}


def biased_srvn(A, m_star, m0, C0, rho: float, n_steps: int, b_g=None, eps_H: float = 0.0,
                n_rows: int = 400) -> dict:
    """SR-VN (Kumar et al. (2025) Algorithm 1, Eq. 17) on the Gaussian target N(m_star, A^-1), fed the exact
    expected gradient and Hessian plus Thm 3's additive biases (Assumption 5 with m_g = m_H = 0): g + b_g and
    H + eps_H I, so ||b_g||^2 = zeta_g^2 and ||b_H C||_F^2 = eps_H^2 tr V <= eps_H^2 xi_u^2 = zeta_H^2.
    With b_g = 0 and eps_H = 0 it is the exact SR-VN run (vilab.algorithms.run("srvn", grads="exact")).

    An Algorithm (:func:`_biased_srvn_algorithm`) on the one runner (:func:`vilab.core.run`), about
    ``n_rows`` rows kept evenly. Assumption 4's constants are taken at *every* step (carried in the state):
    lam_min = min_t lambda_min(V_t), xi_l / xi_u = min / max_t ||C_t||_F. Returns {"t" (iterations of the
    rows), "kl" (KL(q_t || p) there), "lam_min", "xi_l", "xi_u", "diverged" (a non-finite or
    non-positive-definite iterate: the run stops before it), "steps_done"}.
    """
    import jax.numpy as jnp

    from .. import core as vcore
    from ..algorithms.core import State

    A = pd_matrix(A, "The target precision A")
    d = A.shape[0]
    m_star = real_array(m_star, "The target mean", ndim=1)
    m0 = real_array(m0, "The start mean m0", ndim=1)
    C0 = real_array(C0, "The starting factor C0", ndim=2)
    if m_star.shape != (d,) or m0.shape != (d,) or C0.shape != (d, d):
        raise ValueError(f"The target mean, start mean and starting factor must have dimension {d} like A.")
    V0 = pd_matrix(C0 @ C0.T, "The starting covariance C0 C0^T")
    rho = positive(rho, "The step size rho")
    n_steps = integer(n_steps, "The number of steps", 1, 10_000_000)
    n_rows = integer(n_rows, "The number of rows kept", 1, MAX_ROWS)
    b_g = np.zeros(d) if b_g is None else real_array(b_g, "The gradient bias b_g", ndim=1)
    if b_g.shape != (d,):
        raise ValueError(f"The gradient bias b_g must have {d} entries.")
    eps_H = real_scalar(eps_H, "The Hessian bias eps_H")
    every = -(-n_steps // min(n_rows, n_steps))  # ceil
    ev0, tr0 = float(np.linalg.eigvalsh(V0)[0]), float(np.trace(V0))
    f = jnp.float64
    state = _BiasedSRVN(State(jnp.asarray(m0), jnp.asarray(C0)), {"rho": f(rho)}, jnp.asarray(A), jnp.asarray(m_star),
                        jnp.asarray(b_g), f(eps_H), f(ev0), f(tr0), f(tr0))
    tr = vcore.run(_biased_srvn_algorithm(), vcore.as_key(0), state, n_steps, record_every=every)
    fin = tr.state
    t = np.asarray(tr.iterations)
    return {"t": t, "kl": np.asarray(tr.objective, float), "lam_min": float(fin.lam_min),
            "xi_l": float(np.sqrt(fin.tr_lo)), "xi_u": float(np.sqrt(fin.tr_hi)), "diverged": bool(tr.diverged),
            "steps_done": int(tr.n_steps)}


class _BiasedSRVN(NamedTuple):
    """The state of :func:`biased_srvn`: SR-VN's (mu, C), the step size, the target and the biases, and
    Assumption 4's running constants (smallest eigenvalue of V, smallest and largest tr V so far)."""
    s: Any
    hyper: dict
    A: Any
    m_star: Any
    b_g: Any
    eps_H: Any
    lam_min: Any
    tr_lo: Any
    tr_hi: Any


def _biased_srvn_step(key, st, batch):
    """One SR-VN step (Kumar Eq. 17) from g + b_g and H + eps_H I; code 2 (non-finite) or 3 (V not PD)."""
    import jax.numpy as jnp

    from ..algorithms.core import METHODS
    from ..core import NONFINITE

    s, A = st.s, st.A
    d = A.shape[0]
    V = s.M @ s.M.T
    g_mu = -A @ (s.mu - st.m_star) - st.b_g  # ascent direction -(g + b_g): g = A (mu - m_star) on a Gaussian
    G_S = 0.5 * (jnp.linalg.inv(V) - A - st.eps_H * jnp.eye(d))  # dL/dSigma = 1/2 (V^-1 - (H + b_H))
    new = METHODS["srvn"].step(s, (g_mu, ng.grad_chol_cov(s.M, G_S)), st.hyper["rho"])
    Vn = new.M @ new.M.T
    ev = jnp.linalg.eigvalsh(0.5 * (Vn + Vn.T))
    tv = jnp.trace(Vn)
    finite = jnp.all(jnp.isfinite(new.mu)) & jnp.all(jnp.isfinite(Vn))
    code = jnp.where(~finite, NONFINITE, jnp.where(ev[0] > 0, 0, 3)).astype(jnp.int32)
    out = st._replace(s=new, lam_min=jnp.minimum(st.lam_min, ev[0]), tr_lo=jnp.minimum(st.tr_lo, tv),
                      tr_hi=jnp.maximum(st.tr_hi, tv))
    return out, {"code": code, "step_size": st.hyper["rho"]}


def _biased_srvn_observe(st):
    """Mean, covariance and KL(q || p) (closed form) of the state."""
    import jax.numpy as jnp

    V = st.s.M @ st.s.M.T
    r = st.s.mu - st.m_star
    AV = st.A @ V
    kl = 0.5 * (jnp.trace(AV) + r @ st.A @ r - r.shape[0] - jnp.linalg.slogdet(AV)[1])
    return {"mean": st.s.mu, "cov": V, "objective": kl}


@memoize("vilab.theory.guarantees biased SR-VN", maxsize=1)
def _biased_srvn_algorithm():
    """The :class:`vilab.core.Algorithm` of :func:`biased_srvn` (one object: the runner's compiled loop is
    shared by every call of one shape)."""
    from ..core import Algorithm

    return Algorithm(init=lambda key, state: state, step=_biased_srvn_step, observe=_biased_srvn_observe,
                     name="SR-VN with a biased oracle (Kumar et al. Thm 3)", objective_name="KL(q || p)",
                     settings={"method": "srvn", "oracle": "biased"}, uses_key=False)


def theorem3_report(A, m_star, m0, C0, rho: float, n_steps: int, b_g=None, eps_H: float = 0.0,
                    n_rows: int = 400) -> dict:
    """Kumar et al. (2025) Thms 2 and 3 side by side on SR-VN runs from (m0, C0) at step size ``rho``: the exact
    run with Thm 2's bound (1 - 2 eta delta)^t (L_0 - L_*), and the run fed the biased oracle (b_g, eps_H I) with
    the bounds of :func:`theorem3_bound`: ours ("bound", valid), the paper's printed one and the heuristic floor
    (neither is a bound). Each uses Assumption 4's constants along its own run; delta, M are the extreme
    eigenvalues of A; M_hat = M + max(eps_H, 0) bounds the biased Hessian A + eps_H I. Also "settles": the excess a
    run with a constant mean bias alone settles at, 1/2 b_g^T A^-1 b_g.

    Returns {"exact": ..., "biased": ..., "delta", "M", "zeta_g2", "zeta_H2", "settles"}; each run is
    :func:`biased_srvn`'s dict with "eta", "factor", "applies", "thm2" (Thm 2's curve; for the biased run it is
    the curve without the bias term), "bound", "floor", "bound_applies", "contraction", "step_bias", "rho_max",
    "printed", "heuristic", "heuristic_floor", and, when every step is recorded (``n_rows >= n_steps``), the
    one-step recursions checked at every step: "recursion_margin" = min_t (q Delta_t + rho K - Delta_{t+1})
    plus the round-off allowance of :func:`under` (ours; >= 0 where it holds) and "heuristic_fails" = the number of steps where Delta_{t+1} > q_h Delta_t +
    (1 - q_h) F_h (the heuristic's recursion, q_h = 1 - 2 eta delta)."""
    A = pd_matrix(A, "The target precision A")
    lam = np.linalg.eigvalsh(A)
    delta, M = float(lam[0]), float(lam[-1])
    exact = biased_srvn(A, m_star, m0, C0, rho, n_steps, None, 0.0, n_rows)
    b = np.zeros(A.shape[0]) if b_g is None else np.asarray(b_g, float)
    eps_H = real_scalar(eps_H, "The Hessian bias eps_H")
    unbiased = b.shape == (A.shape[0],) and not np.any(b) and eps_H == 0.0  # it would be the exact run
    biased = dict(exact) if unbiased else biased_srvn(A, m_star, m0, C0, rho, n_steps, b_g, eps_H, n_rows)
    zeta_g2 = float(b @ b)
    zeta_H2 = eps_H**2 * biased["xi_u"] ** 2  # ||eps I C||_F^2 = eps^2 tr V <= eps^2 xi_u^2
    for run, zg, zH, Mh in ((exact, 0.0, 0.0, M), (biased, zeta_g2, zeta_H2, M + max(eps_H, 0.0))):
        b3 = theorem3_bound(run["t"], float(run["kl"][0]), rho, delta, M, max(run["lam_min"], 1e-300),
                            run["xi_l"], run["xi_u"], zg, zH, M_hat=Mh)
        run.update({k: b3[k] for k in ("eta", "factor", "applies", "bound", "floor", "bound_applies", "contraction",
                                       "step_bias", "rho_max", "printed", "heuristic", "heuristic_floor")})
        run["thm2"] = b3["factor"] ** run["t"] * float(run["kl"][0]) if b3["applies"] else np.full(run["t"].shape,
                                                                                                  np.nan)
        kl = run["kl"]
        if len(kl) > 1 and np.array_equal(run["t"], np.arange(len(kl))):
            slack = KL_ROUNDOFF_ABS + KL_ROUNDOFF_REL * kl[:-1]  # round-off allowance, see KL_ROUNDOFF_ABS
            run["recursion_margin"] = float(np.min(b3["contraction"] * kl[:-1] + b3["step_bias"] + slack - kl[1:])) \
                if b3["bound_applies"] else float("nan")
            q_h, F_h = b3["factor"], b3["heuristic_floor"]
            run["heuristic_fails"] = int(np.sum(kl[1:] > q_h * kl[:-1] + (1.0 - q_h) * F_h)) if b3["applies"] else 0
    return {"exact": exact, "biased": biased, "delta": delta, "M": M, "zeta_g2": zeta_g2, "zeta_H2": zeta_H2,
            "settles": float(0.5 * b @ np.linalg.solve(A, b))}
