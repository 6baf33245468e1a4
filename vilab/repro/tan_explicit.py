"""Reproductions of Tan, "Explicit natural gradient updates for Cholesky factor in Gaussian variational
approximation" (the short version). It reports no experiment, so every reference value here is derived:
its identities (Lemma 1, Theorem 1, the single-draw estimators) checked against brute force on numbers
we chose, and deterministic runs on 1-D and 2-D toys of our own.
"""

from __future__ import annotations

import numpy as np

from . import Check, reproduction

PAPER = "Tan (explicit)"


def brute_force_fisher(C, param: str = "chol_cov", mask=None) -> np.ndarray:
    """The Fisher information of the free entries of a triangular factor C for q = N(mu, Sigma), by automatic
    differentiation: F_ab = 1/2 tr(Sigma^-1 dSigma_a Sigma^-1 dSigma_b) -- the definition, independent of Tan's
    closed forms. ``param``: Sigma = C C^T ("chol_cov"), (C C^T)^-1 ("chol_prec"), or C C^T with log C_ii as the
    free diagonal entries ("chol_cov_logdiag", Tan (explicit) Sec. 5). The free entries are the lower triangle in
    vech order (column by column), or only those where ``mask`` is nonzero (a sparse factor: block-diagonal C,
    arrow-shaped T)."""
    import jax
    import jax.numpy as jnp

    C = jnp.asarray(C, dtype=jnp.float64)
    rows, cols = free_entries(C.shape[0], mask)
    diag = rows == cols
    v0 = jnp.where(diag, jnp.log(jnp.abs(C[rows, cols])), C[rows, cols]) if param == "chol_cov_logdiag" \
        else C[rows, cols]

    def sigma(v):
        if param == "chol_cov_logdiag":
            v = jnp.where(diag, jnp.exp(v), v)
        L = C.at[rows, cols].set(v)
        S = L @ L.T
        return jnp.linalg.inv(S) if param == "chol_prec" else S

    S = sigma(v0)
    dS = jnp.moveaxis(jax.jacfwd(sigma)(v0), -1, 0)  # (m, d, d)
    Si = jnp.linalg.inv(S)
    A = jnp.einsum("ij,ajk->aik", Si, dS)
    return np.asarray(0.5 * jnp.einsum("aij,bji->ab", A, A))


def free_entries(d: int, mask=None) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of a d x d lower-triangular factor's free entries in vech order (column by column), only
    where ``mask`` is nonzero if it is given."""
    keep = np.tril(np.ones((d, d), bool)) if mask is None else np.tril(np.asarray(mask) != 0)
    pairs = [(i, j) for j in range(d) for i in range(j, d) if keep[i, j]]
    return np.array([i for i, _ in pairs], int), np.array([j for _, j in pairs], int)


@reproduction("tanx-lemma1", items=('tanx-lemma1',), tol_source='round-off', paper=PAPER,
              what="Lemma 1 and Theorem 1: the closed-form Fisher block of a Cholesky factor, its inverse and its "
                   "action equal brute force (C and T parametrisations)",
              settings="d = 1 (sigma = 3); d = 2, Lam = [[2, 0], [0.5, 1]]; random lower-triangular factors d = 4 with "
                       "|diagonal| >= 0.5 (numpy seed 0), a random dense G",
              kind="derived",
              source="computed by us: the Fisher information by its definition (automatic differentiation of Sigma), "
                     "numpy inverses, and the small cases by hand (1-D: 2 / sigma^2)")
def _lemma1():
    from ..family import natgrad as ng
    from ..family.linalg import vech

    rng = np.random.default_rng(0)
    C = np.tril(rng.normal(size=(4, 4)))
    C[np.diag_indices(4)] = np.sign(np.diag(C)) * (np.abs(np.diag(C)) + 0.5)
    G = rng.normal(size=(4, 4))
    Lam2 = np.array([[2.0, 0.0], [0.5, 1.0]])
    inv2 = ng.fisher_block_I_inv(Lam2)
    _, nat = ng.natural_grad_chol_cov(np.zeros(4), C, np.zeros(4), np.tril(G))
    return [
        Check("d = 1: I(sigma) = 2 / sigma^2 at sigma = 3", 2 / 9, float(ng.fisher_block_I(np.array([[3.0]]))[0, 0]),
              tol=1e-14),
        Check("d = 2: I(Lam)^-1 (Lemma 1(ii)) for Lam = [[2, 0], [0.5, 1]]",
              (2.0, 0.5, 0.0, 0.5, 1.125, 0.0, 0.0, 0.0, 0.5), tuple(np.round(inv2.ravel(), 12)), tol=1e-12),
        Check("d = 4: Lemma 1's I(C) - brute-force Fisher of vech C (max abs)", 0.0,
              float(np.max(np.abs(ng.fisher_block_I(C) - brute_force_fisher(C)))), tol=1e-10),
        Check("d = 4: Lemma 1's I(T) - brute-force Fisher of vech T, Sigma = (T T^T)^-1 (max abs)", 0.0,
              float(np.max(np.abs(ng.fisher_block_I(C) - brute_force_fisher(C, "chol_prec")))), tol=1e-10,
              note="Theorem 1: the same block for T as for C"),
        Check("d = 4: Lemma 1(ii) inverse - numpy inverse (max abs)", 0.0,
              float(np.max(np.abs(ng.fisher_block_I_inv(C) - np.linalg.inv(ng.fisher_block_I(C))))), tol=1e-10),
        Check("d = 4: solve(I(C), vech tril G) - vech(C tril_half(C^T tril G)) (max abs)", 0.0,
              float(np.max(np.abs(np.linalg.solve(ng.fisher_block_I(C), np.asarray(vech(np.tril(G))))
                                  - np.asarray(vech(nat))))), tol=1e-10),
    ]


@reproduction("tanx-estimators", items=('tan-thm2',), tol_source='round-off', paper=PAPER,
              what="the single-draw estimators and natural directions of Algs 1b and 2b on one worked example, and "
                   "the O(d^2) form of the C step",
              settings="C = T = [[2, 0], [0.5, 1]], z = (0.3, -1.2), grad h = (1, -2), mu = 0",
              kind="derived", source="computed by us by hand for this example (the paper works no example)")
def _estimators():
    import jax.numpy as jnp

    from ..family import natgrad as ng

    C = np.array([[2.0, 0.0], [0.5, 1.0]])
    z, g, mu = np.array([0.3, -1.2]), np.array([1.0, -2.0]), np.zeros(2)
    G1 = np.tril(np.asarray(ng.estimator_G1(g, z)))
    sig_g, step = (np.asarray(a) for a in ng.natural_step_chol_cov_sample(C, z, g))
    _, dense = ng.natural_grad_chol_cov(mu, C, g, jnp.asarray(G1))
    theta = mu + np.linalg.solve(C.T, z)  # theta = mu + T^-T z
    G2 = np.asarray(ng.estimator_G2(theta, mu, C, g))
    tmu, tstep = ng.natural_grad_chol_prec(mu, C, g, jnp.tril(jnp.asarray(G2)))
    r = lambda a: tuple(np.round(np.ravel(a), 10))  # noqa: E731
    return [
        Check("Gbar_1 = tril(grad h z^T)", (0.3, 0.0, -0.6, 2.4), r(G1), tol=1e-12),
        Check("C Hbarbar_1 (O(d^2) form)", (0.3, 0.0, -0.525, 1.2), r(step), tol=1e-12),
        Check("Sigma grad h", (2.0, -1.5), r(sig_g), tol=1e-12),
        Check("O(d^2) form - dense C tril_half(C^T Gbar_1) (max abs)", 0.0, float(np.max(np.abs(step - np.asarray(dense)))),
              tol=1e-14),
        Check("G_2 = -(theta - mu) v^T, v = T^-1 grad h", (-0.225, 1.0125, 0.6, -2.7), r(G2), tol=1e-12),
        Check("T Hbarbar_2", (-0.15, 0.0, 0.5625, -1.35), r(tstep), tol=1e-12),
        Check("T^-T T^-1 grad h", (0.8125, -2.25), r(tmu), tol=1e-12),
    ]


#: (target covariance, rho) -> iterations to KL < 1e-8 for C-Euclid, C-natural, T-Euclid, T-natural ("div": diverged)
GAUSS_2D = {
    ("[[1, .9], [.9, 1]]", 0.1): (79, 83, 398, 84),
    ("[[1, .9], [.9, 1]]", 1.0): ("div", "div", None, 7),
    ("diag(4, 0.25)", 0.1): (323, 96, 323, 96),
    ("diag(4, 0.25)", 1.0): ("div", 5, None, 4),
}
COVS = {"[[1, .9], [.9, 1]]": np.array([[1.0, 0.9], [0.9, 1.0]]), "diag(4, 0.25)": np.diag([4.0, 0.25])}


@reproduction("tanx-gaussian-2d", items=('tan-thm1i', 'tan-thm1ii-cor1'), tol_source='exact', paper=PAPER,
              what="2-D Gaussian target, exact gradients, fixed rho: the natural T update converges at rho = 1 where "
                   "the C updates diverge; iterations of the four Cholesky updates",
              settings="target N((1, -1), S), S in {[[1, .9], [.9, 1]], diag(4, 0.25)}; start mu = 0, C = I (T = I); "
                       "rho in {0.1, 1}; stop at KL < 1e-8 within 20,000 steps",
              kind="derived",
              source="computed by us: independent deterministic runs (the paper runs no example); Euclidean T at "
                     "rho = 1 does not converge and is not counted")
def _gauss_2d():
    from ..algorithms import run
    from ..family.gaussian import CholCov
    from ..targets import gaussian_target

    checks = []
    names = (("C Euclidean", "tan-1E"), ("C natural", "tan-1N"), ("T Euclidean", "tan-2E"), ("T natural", "tan-2N"))
    for (label, rho), ref in GAUSS_2D.items():
        t = gaussian_target(np.array([1.0, -1.0]), cov=COVS[label])
        for (mlabel, name), n in zip(names, ref):
            if n is None:
                continue
            tr = run(name, t, CholCov(np.zeros(2), np.eye(2)), 20000, rho, kl_tol=1e-8)
            got = tr.n_steps if tr.status == "converged" else ("div" if tr.diverged else tr.status)
            checks.append(Check(f"S = {label}, rho = {rho:g}, {mlabel}", n, got, note=f"status {tr.status}"))
    return checks


@reproduction("tanx-pd-1d", items=('tan-sec7-pd',), tol_source='round-off', paper=PAPER,
              what="1-D Cauchy: one natural-parameter step makes the precision negative, the natural T step on the "
                   "same draw keeps it positive",
              settings="log p = -log(1 + theta^2), q = N(0, 10), draw theta = sqrt(3), rho = 0.5; precision step with the "
                       "sampled Hessian, T step with the first-order estimate G_2 = -(theta - mu) v^T",
              kind="mixed",
              source="Sec. 3: the natural-parameter (precision) update does not ensure positive definiteness; Sec. 4: "
                     "the Cholesky updates do")
def _pd_1d():
    import jax
    import jax.numpy as jnp

    from ..family import natgrad as ng

    logp = lambda th: -jnp.log1p(th[0] ** 2)  # noqa: E731
    th = jnp.array([np.sqrt(3.0)])
    hess = jax.hessian(logp)(th)
    grad = jax.grad(logp)(th)
    mu, P = jnp.zeros(1), jnp.array([[0.1]])
    T = jnp.sqrt(P)
    Hh = ng.hess_h(hess, P)
    gh = ng.grad_h(grad, th, mu, P)
    _, P_new = ng.update_lambda(mu, P, gh, 0.5 * Hh, 0.5)
    _, T_new = ng.update_chol_prec(mu, T, gh, jnp.tril(ng.estimator_G2(th, mu, T, gh)), 0.5)
    d = dict(kind="derived", source="computed by us by hand: hess log p(sqrt 3) = +0.25, so the new precision is "
                                    "0.1 - 0.5 (0.25 + 0.1) = -0.075; grad h = -0.6928, G_2 = 3.7947, H = T G_2 = 1.2, "
                                    "so the T step multiplies T by 1 + rho H / 2 = 1.3")
    return [
        Check("hess log p at sqrt(3)", 0.25, float(hess[0, 0]), tol=1e-12, **d),
        Check("precision after the natural-parameter step", -0.075, float(P_new[0, 0]), tol=1e-12, **d),
        Check("T after the natural T step (from 0.3162)", 0.4111, round(float(T_new[0, 0]), 4), tol=1e-4, **d,
              tol_source="printed precision: the hand value to 4 decimals"),
        Check("the precision update loses positive definiteness, the T update keeps it", True,
              bool(P_new[0, 0] < 0 < float(T_new[0, 0]) ** 2), kind="paper", tol_source="exact"),
    ]


@reproduction("tanx-logdiag", items=('tanx-logdiag',), tol_source='round-off', paper=PAPER,
              what="Sec. 5: the natural gradient in the log-diagonal chart C' (corrected: C inside, not C') equals "
                   "the brute-force Fisher inverse times the gradient, and its step keeps the diagonal positive "
                   "where the plain step hits zero",
              settings="random lower-triangular C with diagonal in [0.5, 2], d = 2 and 3 (numpy seeds 2, 3); the 1-D "
                       "counterexample: target N(0, 1), exact gradient, rho = 1, C0 = sqrt(3)",
              kind="derived",
              source="computed by us: the Fisher information in C' coordinates by its definition (automatic "
                     "differentiation), the gradient in C' by the chain rule, numpy solves; the paper prints no "
                     "number")
def _logdiag():
    from ..family import natgrad as ng
    from ..family.linalg import tril_half

    out = []
    for d in (2, 3):
        rng = np.random.default_rng(d)
        C = np.tril(rng.normal(size=(d, d)), -1) + np.diag(rng.uniform(0.5, 2.0, d))
        mu, g_mu, G = rng.normal(size=d), rng.normal(size=d), np.tril(rng.normal(size=(d, d)))
        rows, cols = free_entries(d)
        J = np.where(rows == cols, C[rows, cols], 1.0)  # dC / dC' on the free entries
        F = brute_force_fisher(C, "chol_cov_logdiag")
        expected = np.linalg.solve(F, G[rows, cols] * J)
        _, n_Cp = ng.natural_grad_chol_cov_logdiag(mu, C, g_mu, G)
        Cp = np.tril(C, -1) + np.diag(np.log(np.diag(C)))
        L = np.tril(np.ones((d, d)), -1) + np.diag(1 / np.diag(C))
        printed = (L * (Cp @ np.asarray(tril_half(C.T @ G))))[rows, cols]
        err = float(np.abs(np.asarray(n_Cp)[rows, cols] - expected).max() / np.abs(expected).max())
        out += [Check(f"d = {d}: corrected natural gradient against the brute-force Fisher (relative error)", 0.0,
                      err, tol=1e-9),
                Check(f"d = {d}: the printed form (C' inside) differs from it (relative difference)", "> 1e-3",
                      round(float(np.abs(printed - expected).max() / np.abs(expected).max()), 4),
                      margin=float(np.abs(printed - expected).max() - 1e-3 * np.abs(expected).max()),
                      tol_source="chosen threshold: a relative difference above 1e-3, far above round-off")]
    C0 = np.array([[np.sqrt(3.0)]])
    gC = np.array([[1.0 / np.sqrt(3.0) - np.sqrt(3.0)]])  # dL/dC = 1/C - C for N(0, 1)
    _, C_plain = ng.update_chol_cov(np.zeros(1), C0, np.zeros(1), gC, 1.0)
    _, C_log = ng.update_chol_cov_logdiag(np.zeros(1), C0, np.zeros(1), gC, 1.0)
    out += [Check("1-D, rho = 1 from C0 = sqrt(3): the plain step's C1", 0.0, float(C_plain[0, 0]), tol=1e-12),
            Check("1-D, rho = 1 from C0 = sqrt(3): the log-diagonal step's C1 = sqrt(3) exp(-1)",
                  float(np.sqrt(3.0) * np.exp(-1.0)), float(C_log[0, 0]), tol=1e-12)]
    return out
