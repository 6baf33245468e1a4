"""The BONG method grid: {bong, blr, bog, bbb} x {mc-hess, mc-ef, lin-hess, lin-ef} x
{fc, fc_mom, diag, diag_mom, dlr-R} (Jones, Chang & Murphy Tables 1-3, App. E).

A method is named as in the paper, e.g. ``"bong-lin-hess-dlr-10"``, ``"blr-mc-ef-diag"``,
``"bog-lin-hess-fc_mom"``. :func:`make_method` parses and validates it; :func:`update`
performs one time step (Alg. 3): I inner iterations of

    (g, G) = curvature(approx, psi_{t,i-1})          # Table 1, Eqs. 11-12, 21-22, 26-28
    psi_{t,i} = inner_step(alg, family, psi_{t,i-1}; psi_{t|t-1}, g, G, alpha)   # App. E

Curvature is passed as :class:`Curv` holding g and ONE of
  B (P, K): G = -B B^T (mc-ef: B = Ghat/sqrt(M), Eq. 26; lin-hess: B = F^T L, Eq. 22 in F-form;
            lin-ef: B = g^lin, Eq. 28),
  Gd (P, P): dense G (mc-hess, Eq. 12, fc families),
  Gdiag (P,): diag(G) (mc-hess for diagonal families: Hutchinson estimate, Sec. 4.3).

Not defined by the paper, hence ValueError: mc-hess with the DLR family ("This approach works
for mc-ef and lin-ef methods but not mc-hess, which we omit", App. E.5).

Corrected forms implemented here (digest Sec. 1.13): blr uses F^{-1} (Eq. 30 typo);
bog-fc/bbb-fc precision updates are symmetrised ((A + A^T)/2, typo item 5); Eq. 152 uses the
(t, i-1) iterate; the singular softmax covariance is never inverted (F-form).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from ..core.checks import integer, positive
from .families import DLR, FC, Diag, chol_inv, woodbury_factor, dlr_prec_apply, dlr_project, dlr_solve, sample, sym

__all__ = [
    "ALGORITHMS", "APPROXIMATIONS", "FAMILIES", "Method", "Curv", "make_method", "grid_names", "is_cubic",
    "curvature", "inner_step", "update",
]

ALGORITHMS = ("bong", "blr", "bog", "bbb")
APPROXIMATIONS = ("mc-hess", "mc-ef", "lin-hess", "lin-ef")
FAMILIES = ("fc", "fc_mom", "diag", "diag_mom", "dlr")


@dataclass(frozen=True)
class Method:
    """A cell of the grid with its hyperparameters (hashable: usable as a jit static arg).

    alg, approx, family, rank (R, DLR only), alpha (learning rate; 1 for bong), n_iter (I),
    n_samples (M, mc only), n_probes (Hutchinson probes, mc-hess with diag families).
    """

    alg: str
    approx: str
    family: str
    rank: int = 0
    alpha: float = 1.0
    n_iter: int = 1
    n_samples: int = 10
    n_probes: int = 100

    @property
    def name(self) -> str:
        fam = f"dlr-{self.rank}" if self.family == "dlr" else self.family
        return f"{self.alg}-{self.approx}-{fam}"

    @property
    def label(self) -> str:
        extra = []
        if self.alg != "bong":
            extra.append(f"α={self.alpha:g}")
        if self.alg in ("blr", "bbb"):
            extra.append(f"I={self.n_iter}")
        if self.approx.startswith("mc"):
            extra.append(f"M={self.n_samples}")
        return self.name + (f" ({', '.join(extra)})" if extra else "")


_NAME = re.compile(r"^(bong|blr|bog|bbb)-(mc-hess|mc-ef|lin-hess|lin-ef)-(fc_mom|fc|diag_mom|diag|dlr)(?:-(\d+))?$")


def make_method(name: str, alpha: float | None = None, n_iter: int = 1, n_samples: int = 10, n_probes: int = 100) -> Method:
    """Parse a paper-style name ("bong-lin-hess-dlr-10") into a validated :class:`Method`.

    bong: alpha = 1 and I = 1 by definition (Eq. 3); bog: I = 1 (Eq. 29); blr/bbb: any alpha > 0
    and I >= 1 (Eqs. 30-32); blr-dlr needs alpha <= 1 (sqrt(1 - alpha) in Eq. 318/328).
    """
    m = _NAME.match(name.strip()) if isinstance(name, str) else None
    if not m:
        raise ValueError(
            f"{name!r} is not a method of the grid. Write algorithm-approximation-family, e.g. "
            "'bong-lin-hess-dlr-10', with algorithm in bong/blr/bog/bbb, approximation in "
            "mc-hess/mc-ef/lin-hess/lin-ef and family in fc/fc_mom/diag/diag_mom/dlr-R."
        )
    alg, approx, family, rank = m.group(1), m.group(2), m.group(3), m.group(4)
    if family == "dlr":
        if rank is None or int(rank) < 1:
            raise ValueError("The DLR family needs its rank in the name, e.g. 'dlr-10'.")
        rank = int(rank)
        if approx == "mc-hess":
            raise ValueError(
                f"{name}: the paper does not define mc-hess for the DLR family (the SVD projection "
                "needs a low-rank G; App. E.5 omits it). Use mc-ef or lin-hess with dlr."
            )
    elif rank is not None:
        raise ValueError(f"Only the DLR family takes a rank; write '{alg}-{approx}-{family}'.")
    else:
        rank = 0
    n_iter = integer(n_iter, "The number of inner iterations I", minimum=1)
    n_samples = integer(n_samples, "The number of Monte Carlo samples M", minimum=1)
    n_probes = integer(n_probes, "The number of probes", minimum=1)
    if alpha is not None:
        alpha = positive(alpha, "The learning rate alpha")
    if alg == "bong":
        if alpha is not None and alpha != 1.0:
            raise ValueError("bong has no learning rate: it takes one natural-gradient step with alpha = 1 (Eq. 3). Use blr for a tunable alpha.")
        alpha = 1.0
    elif alpha is None:
        raise ValueError(f"{alg} needs a learning rate alpha (only bong fixes alpha = 1).")
    alpha = float(alpha)
    if not (alpha > 0 and alpha < float("inf")):
        raise ValueError("The learning rate alpha must be a positive number.")
    if alg in ("bong", "bog") and n_iter != 1:
        raise ValueError(f"{alg} takes exactly one step per observation (I = 1); inner iterations are for blr and bbb.")
    if n_iter < 1:
        raise ValueError("The number of inner iterations I must be at least 1.")
    if alg == "blr" and family == "dlr" and alpha > 1:
        raise ValueError("blr-dlr needs alpha <= 1: its update uses sqrt(1 - alpha) W (Eq. 318).")
    if approx.startswith("mc") and n_samples < 1:
        raise ValueError("The number of Monte Carlo samples M must be at least 1.")
    return Method(alg, approx, family, rank, alpha, n_iter, n_samples, n_probes)


def grid_names(rank: int | tuple = 10, defined_only: bool = False) -> list[str]:
    """The grid names in the paper's order: 80 for one DLR rank (mc-hess-dlr included; make_method
    rejects those 4 with a reason). ``rank`` may be a tuple (e.g. (10, 1): dlr-10 and dlr-1 columns);
    ``defined_only`` drops the cells the paper does not define."""
    if isinstance(rank, (str, bytes)) or not hasattr(rank, "__iter__"):
        rank = (rank,)
    ranks = tuple(integer(r, "The DLR rank", minimum=1) for r in rank)
    fams = ["fc", "fc_mom", "diag", "diag_mom"] + [f"dlr-{r}" for r in ranks]
    names = [f"{a}-{h}-{f}" for a in ALGORITHMS for h in APPROXIMATIONS for f in fams]
    return [n for n in names if not (defined_only and "mc-hess" in n and "-dlr-" in n)]


def is_cubic(method: Method) -> bool:
    """True for the cells whose step costs O(P^3) (Jones, Chang & Murphy Table 3): blr and bbb with a
    full covariance (the KL term needs Sigma_{t|t-1}^{-1}), bog-fc (GD on natural parameters),
    and mc-hess with a full covariance (a dense Hessian per draw)."""
    if method.family not in ("fc", "fc_mom"):
        return False
    return method.alg in ("blr", "bbb") or (method.alg == "bog" and method.family == "fc") or method.approx == "mc-hess"


# --------------------------------------------------------------------------------------------
# Curvature estimators (Table 1)
# --------------------------------------------------------------------------------------------


class Curv(NamedTuple):
    """Expected gradient g and expected Hessian G (one representation, see module docstring)."""

    g: jnp.ndarray
    B: Optional[jnp.ndarray] = None
    Gd: Optional[jnp.ndarray] = None
    Gdiag: Optional[jnp.ndarray] = None


def _diag_of(c: Curv):
    if c.Gdiag is not None:
        return c.Gdiag
    if c.B is not None:
        return -jnp.sum(c.B**2, axis=1)
    return jnp.diagonal(c.Gd)


def _dense_G(c: Curv):
    if c.Gd is not None:
        return c.Gd
    if c.B is not None:
        return -c.B @ c.B.T
    return jnp.diag(c.Gdiag)


def curvature(method: Method, f, lik, x, y, belief, key) -> Curv:
    """(g, G) of Table 1 at the current iterate ``belief``.

    lin-hess (Eqs. 21-22, F-form): F = jac f(x, .)(mu), (e, L) = lik.lin_terms(f(x, mu), y),
      g = F^T e, G = -(F^T L)(F^T L)^T.
    lin-ef (Eqs. 27-28): g as above, G = -g g^T.
    mc-ef (Eqs. 11, 26): theta^(m) ~ q, ghat^(m) = grad log p(y | f(x, theta^(m))),
      g = mean ghat, G = -(1/M) Ghat Ghat^T.
    mc-hess (Eqs. 11-12): G = mean of Hessians (fc families); for diagonal families diag(G)
      by Hutchinson with ``n_probes`` Rademacher probes per sample (Sec. 4.3).
    """
    mu = belief.mu
    if method.approx in ("lin-hess", "lin-ef"):
        f0 = f(x, mu)
        F = jax.jacrev(lambda th: f(x, th))(mu)  # (C, P)
        e, L = lik.lin_terms(f0, y)
        g = F.T @ e
        if method.approx == "lin-ef":
            return Curv(g, B=g[:, None])
        return Curv(g, B=F.T @ L)
    M = method.n_samples
    k_s, k_h = jax.random.split(key)
    thetas = sample(k_s, belief, M)

    def logp(th):
        return lik.loglik(f(x, th), y)

    # one draw at a time: vmapping over parameter draws batches the network's weights, which XLA:CPU
    # runs as grouped convolutions, 20x slower for a CNN at M = 100 (benchmarks/bench_online.py)
    grads = jax.lax.map(jax.grad(logp), thetas)  # (M, P)
    g = jnp.mean(grads, axis=0)
    if method.approx == "mc-ef":
        return Curv(g, B=grads.T / jnp.sqrt(M))
    # mc-hess
    if method.family in ("fc", "fc_mom"):
        H = jax.lax.map(jax.hessian(logp), thetas)
        return Curv(g, Gd=sym(jnp.mean(H, axis=0)))
    N = method.n_probes
    z = jax.random.rademacher(k_h, (M, N, mu.shape[0]), dtype=mu.dtype)

    def hvp(th, v):
        return jax.jvp(jax.grad(logp), (th,), (v,))[1]

    Hz = jax.lax.map(lambda a: jax.vmap(lambda v: hvp(a[0], v))(a[1]), (thetas, z))
    return Curv(g, Gdiag=jnp.mean(z * Hz, axis=(0, 1)))


# --------------------------------------------------------------------------------------------
# Inner steps (App. E)
# --------------------------------------------------------------------------------------------


def _inv(A):
    return sym(jnp.linalg.inv(sym(A)))


def _fc_step(alg, mom, it: FC, prior: FC, prior_prec, c: Curv, a):
    mu, S = it.mu, it.Sigma
    mu0, S0 = prior.mu, prior.Sigma
    g = c.g
    if not mom:
        if alg == "bong":
            if c.B is not None:
                # Woodbury forms (128)-(133), (136)-(138): Sigma_t = (Sigma^{-1} + B B^T)^{-1}
                # with K = I + B^T Sigma B = L L^T and C = Sigma B L^{-T}: Sigma_t = Sigma - C C^T,
                # symmetric by construction (no extra P x P symmetrisation pass). One product
                # Sigma [B, g] reads Sigma once; Sigma_t g = Sigma g - C (C^T g) (126) needs no
                # second pass over the P x P matrix.
                SBg = S @ jnp.concatenate([c.B, g[:, None]], axis=1)
                SB, Sg = SBg[:, :-1], SBg[:, -1]
                C = SB @ chol_inv(jnp.eye(c.B.shape[1], dtype=S.dtype) + c.B.T @ SB).T
                return FC(mu + Sg - C @ (C.T @ g), S - C @ C.T)
            # (127): Sigma_t^{-1} = Sigma^{-1} - G
            S_new = _inv(_inv(S) - _dense_G(c))
            return FC(mu + S_new @ g, S_new)  # (126)
        if alg == "blr":
            # (141)-(142)
            G = _dense_G(c)
            P_new = (1 - a) * _inv(S) + a * prior_prec - a * G
            S_new = _inv(P_new)
            return FC(mu + a * S_new @ (prior_prec @ (mu0 - mu) + g), S_new)
        if alg == "bog":
            # (147)-(148), Sigma g mu^T symmetrised
            SG = S0 @ g
            if c.B is not None:
                SB = S0 @ c.B
                SGS = -SB @ SB.T
            else:
                SGS = S0 @ _dense_G(c) @ S0
            P_new = prior_prec - 2 * a * (jnp.outer(SG, mu0) + jnp.outer(mu0, SG)) - 2 * a * SGS
            S_new = _inv(P_new)
            return FC(S_new @ (prior_prec @ mu0 + a * SG), S_new)
        # bbb (153), (156) symmetrised; v = g + Sigma_-^{-1}(mu_- - mu)
        v = g + prior_prec @ (mu0 - mu)
        Sv = S @ v
        G = _dense_G(c)
        Prec = _inv(S)
        P_new = Prec - 2 * a * (jnp.outer(Sv, mu) + jnp.outer(mu, Sv) + S + S @ (G - prior_prec) @ S)
        S_new = _inv(P_new)
        return FC(S_new @ (Prec @ mu + a * Sv), S_new)
    # fc_mom, E.2
    if alg == "bong":
        # (184)-(185)
        if c.B is not None:
            SBg = S @ jnp.concatenate([c.B, g[:, None]], axis=1)
            SB = SBg[:, :-1]
            return FC(mu + SBg[:, -1], S - SB @ SB.T)
        return FC(mu + S @ g, sym(S + S @ c.Gd @ S))
    if alg == "blr":
        # (188)-(189)
        G = _dense_G(c)
        return FC(mu + a * S @ (prior_prec @ (mu0 - mu) + g), sym((1 + a) * S + a * S @ (G - prior_prec) @ S))
    if alg == "bog":
        # (192)-(193)
        return FC(mu + a * g, sym(S + 0.5 * a * _dense_G(c)))
    # bbb (196)-(197)
    return FC(mu + a * (g + prior_prec @ (mu0 - mu)), sym(S + 0.5 * a * (_inv(S) - prior_prec + _dense_G(c))))


def _diag_step(alg, mom, it: Diag, prior: Diag, c: Curv, a):
    mu, s2 = it.mu, it.s2
    mu0, s20 = prior.mu, prior.s2
    g, dG = c.g, _diag_of(c)
    if not mom:
        if alg == "bong":  # (227)-(228)
            s2n = 1.0 / (1.0 / s2 - dG)
            return Diag(mu + s2n * g, s2n)
        if alg == "blr":  # (233)-(234)
            s2n = 1.0 / ((1 - a) / s2 + a / s20 - a * dG)
            return Diag(mu + a * s2n * ((mu0 - mu) / s20 + g), s2n)
        if alg == "bog":  # (239)-(240)
            s2n = 1.0 / (1.0 / s20 - 4 * a * s20 * mu0 * g - 2 * a * s20**2 * dG)
            return Diag(s2n * (mu0 / s20 + a * s20 * g), s2n)
        # bbb (245)-(246)
        v = g + (mu0 - mu) / s20
        s2n = 1.0 / (1.0 / s2 - 4 * a * s2 * mu * v - 2 * a * s2**2 * (dG - 1.0 / s20) - 2 * a * s2)
        return Diag(s2n * (mu / s2 + a * s2 * v), s2n)
    if alg == "bong":  # (265)-(266)
        return Diag(mu + s2 * g, s2 + s2**2 * dG)
    if alg == "blr":  # (269)-(270)
        return Diag(mu + a * s2 * ((mu0 - mu) / s20 + g), s2 + a * s2**2 * (1.0 / s2 - 1.0 / s20) + a * s2**2 * dG)
    if alg == "bog":  # (273)-(274)
        return Diag(mu + a * g, s2 + 0.5 * a * dG)
    # bbb (277)-(278)
    return Diag(mu + a * ((mu0 - mu) / s20 + g), s2 + 0.5 * a * (1.0 / s2 - 1.0 / s20 + dG))


def _sandwich_diag(ups, W, d):
    """diag(Sigma diag(d) Sigma) for Sigma = (diag(ups) + W W^T)^{-1} = Ups^{-1} - Q Q^T, O(R^2 P)
    (the diagonal of the sandwich in Eqs. 342/354, expanded as in Eq. 348)."""
    u = 1.0 / ups
    Q = woodbury_factor(ups, W)  # Sigma = Ups^{-1} - Q Q^T
    QQd = jnp.sum(Q**2, axis=1)
    Mq = Q.T @ (d[:, None] * Q)
    return u**2 * d - 2 * u * d * QQd + jnp.sum((Q @ Mq) * Q, axis=1)


def _dlr_step(alg, R, it: DLR, prior: DLR, c: Curv, a):
    mu, ups, W = it.mu, it.ups, it.W
    mu0, ups0, W0 = prior.mu, prior.ups, prior.W
    g, B = c.g, c.B
    if alg == "bong":
        # (302)-(308), (309)-(314): W~ = [W_-, B]; mean with the untruncated precision
        Wt = jnp.concatenate([W, B], axis=1)
        mu_new = mu + dlr_solve(ups, Wt, g)
        ups_new, W_new = dlr_project(ups, Wt, R)
        return DLR(mu_new, ups_new, W_new)
    if alg == "blr":
        # (315)-(330): ups~ = (1-a) ups + a ups_-, W~ = [sqrt(1-a) W, sqrt(a) W_-, sqrt(a) B]
        ups_t = (1 - a) * ups + a * ups0
        Wt = jnp.concatenate([jnp.sqrt(1 - a) * W, jnp.sqrt(a) * W0, jnp.sqrt(a) * B], axis=1)
        r = dlr_prec_apply(ups0, W0, mu0 - mu) + g
        mu_new = mu + a * dlr_solve(ups_t, Wt, r)
        ups_new, W_new = dlr_project(ups_t, Wt, R)
        return DLR(mu_new, ups_new, W_new)
    if alg == "bog":
        # (331)-(340): C = Sigma_- B; Ups += a/2 diag(C C^T); W += a C C^T W_-
        C = dlr_solve(ups0, W0, B)
        return DLR(mu0 + a * g, ups0 + 0.5 * a * jnp.sum(C**2, axis=1), W0 + a * C @ (C.T @ W0))
    # bbb (341)-(357): D = (Ups_- - Ups) + W_- W_-^T - W W^T + B B^T  (= ... - G)
    mu_new = mu + a * (dlr_prec_apply(ups0, W0, mu0 - mu) + g)
    d = ups0 - ups
    dgain = _sandwich_diag(ups, W, d)
    SW = dlr_solve(ups, W, W)
    Wgain = dlr_solve(ups, W, d[:, None] * SW)
    for V, sgn in ((W0, 1.0), (W, -1.0), (B, 1.0)):
        CV = dlr_solve(ups, W, V)
        dgain = dgain + sgn * jnp.sum(CV**2, axis=1)
        Wgain = Wgain + sgn * CV @ (CV.T @ W)
    return DLR(mu_new, ups + 0.5 * a * dgain, W + a * Wgain)


def inner_step(method: Method, it, prior, prior_prec, c: Curv, alpha=None):
    """psi_{t,i} from psi_{t,i-1} = ``it``, the prior psi_{t|t-1} and (g, G): App. E.

    ``alpha`` (a traced scalar) overrides ``method.alpha``: the learning rate as a run-time setting
    (vilab.online.runner keeps it in the state so that a run can change it without recompiling)."""
    a = method.alpha if alpha is None else alpha
    if method.family in ("fc", "fc_mom"):
        return _fc_step(method.alg, method.family == "fc_mom", it, prior, prior_prec, c, a)
    if method.family in ("diag", "diag_mom"):
        return _diag_step(method.alg, method.family == "diag_mom", it, prior, c, a)
    return _dlr_step(method.alg, method.rank, it, prior, c, a)


def update(method: Method, f, lik, prior, x, y, key, alpha=None):
    """One time step psi_t = update(psi_{t|t-1}, x_t, y_t) (Alg. 3; I inner iterations).

    Inner iteration i (0-based) uses key fold_in(key, i), so blr(I=1, alpha=1) and bong see the
    same Monte Carlo draws (and bbb(I=1) and bog). ``alpha`` overrides ``method.alpha`` (see
    :func:`inner_step`); bong ignores it (alpha = 1 by definition, Eq. 3).
    """
    if method.alg == "bong":
        alpha = None
    prior_prec = _inv(prior.Sigma) if (isinstance(prior, FC) and method.alg != "bong" and not (method.alg == "bog" and method.family == "fc_mom")) else None

    def body(i, it):
        c = curvature(method, f, lik, x, y, it, jax.random.fold_in(key, i))
        return inner_step(method, it, prior, prior_prec, c, alpha)

    if method.n_iter == 1:
        return body(0, prior)
    return jax.lax.fori_loop(0, method.n_iter, body, prior)
