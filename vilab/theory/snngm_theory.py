"""Tan (2025) Theorem 3: the convergence bound of SNNGM, and a check of it on two 1-D toys.

Theorem 3 (Tan (2025) Sec. 6.1, proof in Supp. S4). Under

* (A1) L(lambda) <= L* for all lambda,
* (A2) ||ghat(lambda)|| <= R (the gradient estimate is bounded),
* (A3) L is L-smooth: ||grad L(lambda') - grad L(lambda)|| <= L ||lambda' - lambda||,
* (A4) 0 < R1 <= every eigenvalue of the Fisher matrix F_lambda <= R2,

SNNGM run for N > beta / (1 - beta) steps with step size alpha satisfies

    E ||g_tau||^2 <= (R R2 / R1) { (L* - L(lambda^(1))) / (Ntilde alpha)
                                   + (N L alpha / Ntilde) (beta / (1 - beta) + 1/2) },

Ntilde = N - beta / (1 - beta), g_tau the true Euclidean gradient at the iterate lambda^(tau) and
tau a random index with P(tau = j) proportional to 1 - beta^(N - j + 1), j = 1..N. With
alpha = c / sqrt(N) the right-hand side is O(1 / sqrt(N)).

On the toys here (q = N(mu, sigma^2), lambda = (mu, sigma^2), exact gradients, so ghat = g) the
constants are infinite globally (R, R2 and L blow up as sigma^2 -> 0). We therefore compute them
over the region a run visits: the box spanned by its iterates lambda^(1), ..., lambda^(N+1). The
proof only uses (A2) and (A4) at the iterates and (A3) on the segments between consecutive
iterates, all inside that box, so the bound with these constants is a valid bound for that run.
Each constant is an upper (R, R2, L) or lower (R1) bound over the box, in closed form:

* R: each gradient component is monotone in mu and in sigma^2 on the box, so its largest absolute
  value is at a corner; R = sqrt(sum of the squared corner maxima).
* R1, R2: the Fisher matrix of (mu, sigma^2) is diag(1 / sigma^2, 1 / (2 sigma^4)).
* L: -hess L has non-negative entries, each bounded by its value at the box's worst corner
  (largest mu and sigma^2 in the exponential, smallest sigma^2 in 1 / (2 sigma^4)); by
  Perron-Frobenius the spectral radius of that entrywise bound bounds ||hess L|| on the box.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from vilab.algorithms import optim
from vilab.core.cache import memoize

__all__ = [
    "n_tilde",
    "theorem3_bound",
    "tau_expectation",
    "sample_tau",
    "Toy",
    "TOYS",
    "toy",
    "region_constants",
    "snngm_path",
    "theorem3_check",
    "theorem3_sweep",
    "DEFAULT_NS",
]

#: N of the default sweep (half decades from 100 to 10^5).
DEFAULT_NS = (100, 316, 1000, 3162, 10000, 31623, 100000)


# ======================================================================== the bound
def _number(x, name: str) -> float:
    if isinstance(x, (bool, str, bytes)):
        raise ValueError(f"{name} must be a number; got {x!r}.")
    try:
        v = float(x)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be a number; got {x!r}.") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number; got {x!r}.")
    return v


def _beta(beta) -> float:
    b = _number(beta, "The momentum beta")
    if not 0.0 <= b < 1.0:
        raise ValueError(f"The momentum beta must lie in [0, 1) (Theorem 3 needs beta < 1); got {beta!r}.")
    return b


def _whole(N, name="The number of iterations N") -> int:
    if isinstance(N, (bool, str, bytes)):
        raise ValueError(f"{name} must be a whole number; got {N!r}.")
    try:
        v = float(N)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be a whole number; got {N!r}.") from None
    if not math.isfinite(v) or v != int(v) or v < 1:
        raise ValueError(f"{name} must be a whole number of at least 1; got {N!r}.")
    return int(v)


def n_tilde(N, beta) -> float:
    """Ntilde = N - beta / (1 - beta), the lower bound of the normaliser of tau's law (Tan (2025) Thm 3).

    sum_j (1 - beta^(N-j+1)) = N - beta (1 - beta^N) / (1 - beta) >= Ntilde.
    """
    N, beta = _whole(N), _beta(beta)
    return N - beta / (1.0 - beta)


def theorem3_bound(N, alpha, beta, R, R1, R2, L, gap) -> float:
    """The right-hand side of Tan (2025) Theorem 3 (SNNGM's convergence bound):

        E ||g_tau||^2 <= (R R2 / R1) { gap / (Ntilde alpha) + (N L alpha / Ntilde) (beta / (1 - beta) + 1/2) },

    Ntilde = N - beta / (1 - beta), gap = L* - L(lambda^(1)) >= 0 (how far the start is below the
    ELBO's upper bound L*), R the bound on the gradient estimate's norm, R1 <= R2 the bounds on
    the Fisher matrix's eigenvalues, L the smoothness constant of the ELBO, alpha SNNGM's step
    length (every step is at most alpha long). Valid for N > beta / (1 - beta).
    """
    N = _whole(N)
    beta = _beta(beta)
    alpha = _number(alpha, "The step size alpha")
    if alpha <= 0:
        raise ValueError(f"The step size alpha must be positive; got {alpha!r}.")
    if N <= beta / (1.0 - beta):
        raise ValueError(f"Theorem 3 needs more iterations than beta / (1 - beta) = {beta / (1 - beta):.4g}; "
                         f"got N = {N}. Run longer or lower the momentum beta.")
    vals = {}
    for name, v, what in (("R", R, "The gradient bound R"), ("R1", R1, "The smallest Fisher eigenvalue bound R1"),
                          ("R2", R2, "The largest Fisher eigenvalue bound R2"), ("L", L, "The smoothness constant L"),
                          ("gap", gap, "The gap L* - L(lambda^(1))")):
        vals[name] = _number(v, what)
    if vals["R1"] <= 0:
        raise ValueError(f"The smallest Fisher eigenvalue bound R1 must be positive (assumption A4); got {R1!r}.")
    if vals["R2"] < vals["R1"]:
        raise ValueError(f"The Fisher eigenvalue bounds need R1 <= R2; got R1 = {R1!r}, R2 = {R2!r}.")
    if vals["R"] < 0 or vals["L"] < 0:
        raise ValueError("The gradient bound R and the smoothness constant L cannot be negative.")
    if vals["gap"] < 0:
        raise ValueError(f"The gap L* - L(lambda^(1)) cannot be negative (L* bounds the ELBO); got {gap!r}.")
    Nt = N - beta / (1.0 - beta)
    return (vals["R"] * vals["R2"] / vals["R1"]) * (
        vals["gap"] / (Nt * alpha) + (N * vals["L"] * alpha / Nt) * (beta / (1.0 - beta) + 0.5))


def tau_expectation(values, beta) -> float:
    """E f(tau) = sum_j w_j f_j / sum_j w_j, w_j = 1 - beta^(N-j+1) (Tan (2025) Thm 3's random index),
    for values f_1..f_N (e.g. ||g_j||^2 along a run)."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.size == 0:
        raise ValueError("Give at least one value f_1, ..., f_N.")
    w = optim.tau_weights(v.size, beta)
    return float(np.sum(w * v) / np.sum(w))


def sample_tau(key, N, beta, size: int) -> np.ndarray:
    """``size`` draws of tau in 1..N with P(tau = j) proportional to 1 - beta^(N-j+1) (Tan (2025) Thm 3)."""
    N = _whole(N)
    size = _whole(size, "The number of draws")
    w = optim.tau_weights(N, beta)
    j = jax.random.choice(key, N, (size,), p=jnp.asarray(w / w.sum()))
    return np.asarray(j) + 1


# ======================================================================= the toys
@dataclass(frozen=True, eq=False)
class Toy:
    """A 1-D ELBO L(mu, sigma^2) with closed-form gradient, its optimum and the region bounds of Thm 3.

    elbo, grad : functions of (mu, s2) (numpy or jax arrays, broadcasting); grad returns (g_mu, g_s2).
    hess_bound : (mu_hi, s2_lo, s2_hi) -> 2x2 entrywise upper bound of -hess L on the box.
    """

    name: str
    label: str
    elbo: Callable
    grad: Callable
    hess_bound: Callable
    L_star: float
    optimum: tuple
    start: tuple
    c_default: float
    c_range: tuple
    description: str


def _crab_consts():
    from vilab.targets.papers import CRAB_N, CRAB_SUM_LOG_Y_FACT, CRAB_SUM_Y
    return float(CRAB_N), float(CRAB_SUM_Y), float(CRAB_SUM_LOG_Y_FACT), 100.0


def _crab_elbo(mu, s2):
    n, sy, slf, s0 = _crab_consts()
    xp = jnp if isinstance(mu, jax.Array) or isinstance(s2, jax.Array) else np
    return (sy * mu - n * xp.exp(mu + s2 / 2) - slf - (mu**2 + s2) / (2 * s0) + 0.5 * xp.log(s2)
            + 0.5 * (1 - math.log(s0)))


def _crab_grad(mu, s2):
    n, sy, _, s0 = _crab_consts()
    xp = jnp if isinstance(mu, jax.Array) or isinstance(s2, jax.Array) else np
    w = n * xp.exp(mu + s2 / 2)
    return sy - w - mu / s0, 0.5 * (1 / s2 - 1 / s0 - w)


def _crab_hess_bound(mu_hi, s2_lo, s2_hi):
    n, _, _, s0 = _crab_consts()
    w = n * math.exp(mu_hi + s2_hi / 2)  # the largest n e^(mu + s2/2) on the box
    # -hess L = [[w + 1/s0, w/2], [w/2, 1/(2 s2^2) + w/4]]
    return np.array([[w + 1 / s0, w / 2], [w / 2, 1 / (2 * s2_lo**2) + w / 4]])


def _crab_optimum():
    """(mu*, s2*, L*) of the crab ELBO by Newton's method on its gradient (L is concave)."""
    x = np.array([1.07, 0.002])
    for _ in range(100):
        g = np.array(_crab_grad(x[0], x[1]))
        n, _, _, s0 = _crab_consts()
        w = n * math.exp(x[0] + x[1] / 2)
        H = -np.array([[w + 1 / s0, w / 2], [w / 2, 1 / (2 * x[1] ** 2) + w / 4]])
        x = x - np.linalg.solve(H, g)
    return float(x[0]), float(x[1]), float(_crab_elbo(x[0], x[1]))


_GM, _GV = 1.0, 1.0  # the Gaussian target N(1, 1)


def _gauss_elbo(mu, s2):
    xp = jnp if isinstance(mu, jax.Array) or isinstance(s2, jax.Array) else np
    # E_q log N(theta; m, v) + entropy of N(mu, s2) = -KL(q || p)
    return -0.5 * ((mu - _GM) ** 2 + s2) / _GV - 0.5 * math.log(_GV) + 0.5 * xp.log(s2) + 0.5


def _gauss_grad(mu, s2):
    return -(mu - _GM) / _GV, 0.5 * (1 / s2 - 1 / _GV)


def _gauss_hess_bound(mu_hi, s2_lo, s2_hi):
    return np.array([[1 / _GV, 0.0], [0.0, 1 / (2 * s2_lo**2)]])


_CRAB_OPT = _crab_optimum()

TOYS = {
    "crab": Toy("crab", "horseshoe crabs (Poisson, Fig. 3)", _crab_elbo, _crab_grad, _crab_hess_bound,
                _CRAB_OPT[2], _CRAB_OPT[:2], (0.5, 0.02), 0.05, (1e-3, 0.3),
                "the intercept-only Poisson model of the horseshoe crabs (Tan Sec. 4.1, Fig. 3's toy), "
                "started at (0.5, 0.02)"),
    "gaussian": Toy("gaussian", "Gaussian target N(1, 1)", _gauss_elbo, _gauss_grad, _gauss_hess_bound,
                    0.0, (_GM, _GV), (-2.0, 0.2), 1.0, (0.01, 10.0),
                    "a Gaussian target N(1, 1) (the ELBO is minus the KL divergence, L* = 0), started at (-2, 0.2)"),
}


def toy(name) -> Toy:
    """A toy of :data:`TOYS` by name ("crab" or "gaussian")."""
    if not isinstance(name, str) or name not in TOYS:
        raise ValueError(f"Unknown toy {name!r}; choose one of {', '.join(TOYS)}.")
    return TOYS[name]


def region_constants(t: Toy, mu_range, s2_range) -> dict:
    """Thm 3's constants over the box mu in mu_range, sigma^2 in s2_range (see the module docstring):
    {"R": gradient-norm bound, "R1", "R2": Fisher eigenvalue bounds, "L": smoothness bound}.

    Valid on the box only (globally R, R2 and L are infinite on these toys, as sigma^2 -> 0).
    """
    a, b = (float(v) for v in mu_range)
    s_lo, s_hi = (float(v) for v in s2_range)
    if not (math.isfinite(a) and math.isfinite(b) and a <= b):
        raise ValueError(f"The mu range must be two finite numbers lo <= hi; got {mu_range!r}.")
    if not (math.isfinite(s_lo) and math.isfinite(s_hi) and 0 < s_lo <= s_hi):
        raise ValueError(f"The sigma^2 range must be two positive numbers lo <= hi; got {s2_range!r}.")
    corners = [(m, s) for m in (a, b) for s in (s_lo, s_hi)]
    g = np.array([t.grad(m, s) for m, s in corners], dtype=np.float64)  # (4, 2)
    R = float(np.sqrt(np.sum(np.max(np.abs(g), axis=0) ** 2)))
    R1 = min(1 / s_hi, 1 / (2 * s_hi**2))
    R2 = max(1 / s_lo, 1 / (2 * s_lo**2))
    M = t.hess_bound(b, s_lo, s_hi)
    L = float(np.max(np.linalg.eigvalsh(M)))
    return {"R": R, "R1": float(R1), "R2": float(R2), "L": L}


# ====================================================================== SNNGM runs
@memoize("vilab.theory.snngm_theory SNNGM paths", maxsize=32)
def _path_program(name: str, beta: float, size: int):
    t = TOYS[name]

    def fn(lam0, alpha, N):
        # optim.snngm's alpha0 is multiplied by sqrt(l_lambda) = sqrt(2): pass alpha / sqrt(2)
        tx = optim.snngm(alpha / math.sqrt(2.0), beta)
        buf = jnp.full((size + 1, 2), jnp.nan).at[0].set(lam0)

        def body(i, carry):
            lam, st, buf, bad = carry
            g = jnp.stack(t.grad(lam[0], lam[1]))
            nat = jnp.stack([lam[1] * g[0], 2.0 * lam[1] ** 2 * g[1]])  # F^{-1} g for lambda = (mu, sigma^2)
            upd, st2 = tx.update(-nat, st)
            new = lam + upd
            broken = bad | (new[1] <= 0) | ~jnp.all(jnp.isfinite(new))
            new = jnp.where(broken, jnp.nan, new)
            return new, st2, buf.at[i + 1].set(new), broken

        lam0 = jnp.asarray(lam0)
        out = jax.lax.fori_loop(0, N, body, (lam0, tx.init(lam0), buf, jnp.array(False)))
        return out[2]

    return jax.jit(fn)


def snngm_path(name: str, N, c, beta=0.9, start=None) -> dict:
    """SNNGM (Tan (2025) Table 5; :func:`vilab.algorithms.optim.snngm`) on a toy for N steps with exact natural
    gradients and Theorem 3's step size alpha = c / sqrt(N) (every step is at most alpha long).

    Returns {"lam": (N + 1, 2) iterates lambda^(1..N+1), "alpha", "status", "failed_at"}; a run whose
    sigma^2 leaves (0, inf) stops there ("diverged: negative sigma^2", the later rows NaN).
    """
    t = toy(name)
    N = _whole(N)
    beta = _beta(beta)
    c = _number(c, "The step-size constant c")
    if c <= 0:
        raise ValueError(f"The step-size constant c (alpha = c / sqrt(N)) must be positive; got {c!r}.")
    lam0 = np.asarray(t.start if start is None else start, dtype=np.float64)
    if lam0.shape != (2,) or not np.all(np.isfinite(lam0)) or lam0[1] <= 0:
        raise ValueError("The start must be (mu, sigma^2) with a finite mu and sigma^2 > 0.")
    alpha = c / math.sqrt(N)
    size = 1 << max(6, (N - 1).bit_length())  # buckets of powers of two: few compiled programs
    buf = np.asarray(_path_program(t.name, beta, size)(jnp.asarray(lam0), jnp.float64(alpha), N))[: N + 1]
    bad = ~np.all(np.isfinite(buf), axis=1)
    failed = int(np.argmax(bad)) if bad.any() else None
    return {"lam": buf, "alpha": alpha, "status": "diverged: negative sigma^2" if failed is not None else "max_steps",
            "failed_at": failed}


def theorem3_check(name: str, N, c, beta=0.9, start=None) -> dict:
    """Theorem 3 on one SNNGM run: the tau-weighted mean of ||g_t||^2 along the run against the bound.

    Runs :func:`snngm_path`, computes the true gradients g_1..g_N at lambda^(1..N), their
    tau-weighted mean E ||g_tau||^2 (exact: the only randomness is tau) and the bound of
    :func:`theorem3_bound` with the constants of :func:`region_constants` over the box of
    lambda^(1..N+1) (the region the run visits), L* the toy's optimum ELBO.
    Returns a dict: N, alpha, beta, c, observed, uniform (plain mean), bound, ratio = bound / observed,
    R, R1, R2, L, gap, box (mu range, s2 range), status, grad_sq (N,), lam (N + 1, 2).
    """
    t = toy(name)
    N, beta = _whole(N), _beta(beta)
    if N <= beta / (1.0 - beta):
        raise ValueError(f"Theorem 3 needs more iterations than beta / (1 - beta) = {beta / (1 - beta):.4g}; "
                         f"got N = {N}.")
    p = snngm_path(name, N, c, beta, start)
    lam = p["lam"]
    out = dict(N=N, alpha=p["alpha"], beta=beta, c=float(c), status=p["status"], lam=lam)
    if p["failed_at"] is not None:
        return {**out, "observed": math.nan, "uniform": math.nan, "bound": math.nan, "ratio": math.nan,
                "grad_sq": np.full(N, np.nan), "R": math.nan, "R1": math.nan, "R2": math.nan, "L": math.nan,
                "gap": math.nan, "box": None}
    gm, gs = t.grad(lam[:N, 0], lam[:N, 1])
    grad_sq = np.asarray(gm) ** 2 + np.asarray(gs) ** 2
    box = ((float(lam[:, 0].min()), float(lam[:, 0].max())), (float(lam[:, 1].min()), float(lam[:, 1].max())))
    k = region_constants(t, *box)
    gap = max(t.L_star - float(t.elbo(lam[0, 0], lam[0, 1])), 0.0)
    bound = theorem3_bound(N, p["alpha"], beta, k["R"], k["R1"], k["R2"], k["L"], gap)
    observed = tau_expectation(grad_sq, beta)
    return {**out, **k, "gap": gap, "box": box, "grad_sq": grad_sq, "observed": observed,
            "uniform": float(grad_sq.mean()), "bound": bound, "ratio": bound / observed}


def theorem3_sweep(name: str, c=None, beta=0.9, Ns=DEFAULT_NS) -> dict:
    """:func:`theorem3_check` for each N of ``Ns`` (those with N > beta / (1 - beta)), alpha = c / sqrt(N)
    (c: the toy's default when None).

    Returns {"N", "observed", "bound", "alpha", "R", "R1", "R2", "L" (arrays over N), "status" (list),
    "slope_observed", "slope_bound" (least-squares slopes of log10 value against log10 N, over the runs
    that did not diverge; about -1/2 is Theorem 3's O(1/sqrt(N))), "skipped" (the N too small for beta)}.
    """
    t = toy(name)
    c = t.c_default if c is None else c
    beta = _beta(beta)
    Ns = [_whole(n) for n in Ns]
    if not Ns:
        raise ValueError("Give at least one N.")
    keep = [n for n in Ns if n > beta / (1.0 - beta)]
    rows = [theorem3_check(name, n, c, beta) for n in keep]
    out = {k: np.array([r[k] for r in rows], dtype=np.float64)
           for k in ("N", "observed", "bound", "uniform", "alpha", "R", "R1", "R2", "L", "gap", "ratio")}
    out["status"] = [r["status"] for r in rows]
    out["skipped"] = [n for n in Ns if n not in keep]
    ok = np.isfinite(out["observed"]) & np.isfinite(out["bound"])
    for k in ("observed", "bound"):
        out[f"slope_{k}"] = (float(np.polyfit(np.log10(out["N"][ok]), np.log10(out[k][ok]), 1)[0])
                             if ok.sum() >= 2 else math.nan)
    out.update(toy=name, c=float(c), beta=beta)
    return out
