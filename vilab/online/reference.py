"""Brute-force references for the online filters (float64, dense, autodiff).

* :func:`reference_step`: one inner step of any grid cell computed from its DEFINING equation,
  not from the App. E closed forms: the surrogate expected log-likelihood
  l(mu, Sigma) = g^T mu + tr(G Sigma)/2 has exactly the Bonnet/Price gradients
  (grad_mu = g, grad_Sigma = G/2; Eqs. 85-89), the KL term is written out (Eq. 103/204), and
  jax.grad differentiates them in the coordinates the algorithm uses:
    bong/blr, natural families: psi += alpha grad_rho (l - [KL]) (mirror descent, Eqs. 5, 31)
    bong/blr, moment families:  psi += alpha F^{-1} grad_psi (l - [KL]), F^{-1} of Eq. 183/264
    bog/bbb: psi += alpha grad_psi (l - [KL])  (Eqs. 29, 32; fc: symmetrised psi^(2) step)
    dlr bong/blr: the fc natural step on the dense precision, then the rank-R truncation by a
      full numpy-style SVD of W~ (Eqs. 306-308); dlr bog/bbb: GD on (mu, Upsilon, W).
* :func:`reference_curvature`: (g, G) of Table 1 as dense P x P matrices, by brute force:
  lin-hess/lin-ef with the Jacobian H of h = E[y | f] and the pseudo-inverse of R (Eqs. 21-22,
  27-28; the library uses the F-form instead), per-sample autodiff gradients and Hessians for
  mc-ef/mc-hess (Eqs. 11-12, 26), draws mapped through a dense symmetric square root of the
  covariance (DLR) and, for the diagonal families' mc-hess, the same Rademacher probes.
* :func:`reference_update`: a whole time step (Alg. 3, I inner iterations) of any grid cell from
  the two above, the DLR rank-R projection done by a dense eigendecomposition of W~ W~^T.
* :func:`kalman_filter` (Eqs. 136-138) and :func:`batch_posterior` for linear-Gaussian models.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .families import DLR, FC, Diag

__all__ = ["reference_step", "reference_curvature", "reference_update", "kalman_filter", "batch_posterior", "dlr_tilde",
           "svd_truncate"]


def _ell(g, G, mu, Sigma):
    return g @ mu + 0.5 * jnp.trace(G @ Sigma)


def _kl(mu, Sigma, mu0, Sigma0):
    P0 = jnp.linalg.inv(Sigma0)
    d = mu - mu0
    return 0.5 * (d @ P0 @ d + jnp.trace(P0 @ Sigma) - jnp.linalg.slogdet(Sigma)[1])


def _obj(g, G, mu, Sigma, prior_mu, prior_Sigma, with_kl):
    val = _ell(g, G, mu, Sigma)
    if with_kl:
        val = val - _kl(mu, Sigma, prior_mu, prior_Sigma)
    return val


def dlr_tilde(alg, alpha, it: DLR, prior: DLR, B):
    """(Upsilon~, W~) of Eqs. 302-303 (bong) or 317-318 (blr), written out for the tests."""
    if alg == "bong":
        return it.ups, jnp.concatenate([it.W, B], axis=1)
    a = alpha
    return (1 - a) * it.ups + a * prior.ups, jnp.concatenate([jnp.sqrt(1 - a) * it.W, jnp.sqrt(a) * prior.W, jnp.sqrt(a) * B], axis=1)


def reference_step(alg: str, family: str, it, prior, g, G, alpha: float, rank: int = 0):
    """Dense reference of one inner step (see module docstring). G is the dense (P, P) matrix."""
    a = float(alpha)
    kl = alg in ("blr", "bbb")
    if isinstance(prior, FC):
        pm, pS = prior.mu, prior.Sigma
    elif isinstance(prior, Diag):
        pm, pS = prior.mu, jnp.diag(prior.s2)
    else:
        pm, pS = prior.mu, jnp.linalg.inv(jnp.diag(prior.ups) + prior.W @ prior.W.T)

    def J(mu, Sigma):
        return _obj(g, G, mu, Sigma, pm, pS, kl)

    if family == "fc":
        mu, S = it.mu, it.Sigma
        if alg in ("bong", "blr"):
            rho1, rho2 = mu, S + jnp.outer(mu, mu)
            d1, d2 = jax.grad(lambda r1, r2: J(r1, r2 - jnp.outer(r1, r1)), argnums=(0, 1))(rho1, rho2)
            Prec = jnp.linalg.inv(S)
            psi1, psi2 = Prec @ mu + a * d1, -0.5 * Prec + a * d2
        else:
            Prec = jnp.linalg.inv(S)
            psi1, psi2 = Prec @ mu, -0.5 * Prec

            def Jpsi(p1, p2):
                Sg = jnp.linalg.inv(-2.0 * p2)
                return J(Sg @ p1, Sg)

            d1, d2 = jax.grad(Jpsi, argnums=(0, 1))(psi1, psi2)
            psi1, psi2 = psi1 + a * d1, psi2 + a * 0.5 * (d2 + d2.T)
        Pn = -2.0 * psi2
        Sn = jnp.linalg.inv(Pn)
        return FC(jnp.linalg.solve(Pn, psi1), Sn)
    if family == "fc_mom":
        mu, S = it.mu, it.Sigma
        dm, dS = jax.grad(J, argnums=(0, 1))(mu, S)
        if alg in ("bong", "blr"):
            return FC(mu + a * S @ dm, S + a * 2.0 * S @ dS @ S)  # F^{-1} = blockdiag(S, 2 S⊗S)
        return FC(mu + a * dm, S + a * dS)
    if family in ("diag", "diag_mom"):
        mu, s2 = it.mu, it.s2

        def Jd(m, v):
            return J(m, jnp.diag(v))

        if family == "diag_mom":
            dm, dv = jax.grad(Jd, argnums=(0, 1))(mu, s2)
            if alg in ("bong", "blr"):
                return Diag(mu + a * s2 * dm, s2 + a * 2.0 * s2**2 * dv)
            return Diag(mu + a * dm, s2 + a * dv)
        if alg in ("bong", "blr"):
            d1, d2 = jax.grad(lambda r1, r2: Jd(r1, r2 - r1**2), argnums=(0, 1))(mu, s2 + mu**2)
            psi1, psi2 = mu / s2 + a * d1, -0.5 / s2 + a * d2
        else:
            d1, d2 = jax.grad(lambda p1, p2: Jd(p1 / (-2.0 * p2), 1.0 / (-2.0 * p2)), argnums=(0, 1))(mu / s2, -0.5 / s2)
            psi1, psi2 = mu / s2 + a * d1, -0.5 / s2 + a * d2
        s2n = 1.0 / (-2.0 * psi2)
        return Diag(s2n * psi1, s2n)
    # dlr
    mu, ups, W = it.mu, it.ups, it.W
    if alg in ("bong", "blr"):
        fc = reference_step(alg, "fc", FC(mu, jnp.linalg.inv(jnp.diag(ups) + W @ W.T)), FC(pm, pS), g, G, a)
        return fc  # the caller compares the DLR result with this FC step and its SVD truncation

    def Jdlr(m, u, Wm):
        return J(m, jnp.linalg.inv(jnp.diag(u) + Wm @ Wm.T))

    dm, du, dW = jax.grad(Jdlr, argnums=(0, 1, 2))(mu, ups, W)
    return DLR(mu + a * dm, ups + a * du, W + a * dW)


def _sym_sqrt(A):
    w, V = np.linalg.eigh(0.5 * (A + A.T))
    return (V * np.sqrt(np.maximum(w, 0.0))) @ V.T


def reference_draws(key, b, n: int):
    """n draws theta = mu + Z eps from the SAME standard normals as families.sample, with a dense
    square root Z of Sigma: Cholesky (FC), sqrt of the variances (Diag), and for DLR
    Z = Ups^{-1/2} sqrtm((I + A A^T)^{-1}), A = Ups^{-1/2} W, built from the dense P x P matrix."""
    mu = np.asarray(b.mu)
    eps = np.asarray(jax.random.normal(key, (n, mu.shape[0]), b.mu.dtype))
    if isinstance(b, FC):
        return mu + eps @ np.linalg.cholesky(np.asarray(b.Sigma)).T
    if isinstance(b, Diag):
        return mu + eps * np.sqrt(np.asarray(b.s2))
    rs = 1.0 / np.sqrt(np.asarray(b.ups))
    A = np.asarray(b.W) * rs[:, None]
    Z = rs[:, None] * _sym_sqrt(np.linalg.inv(np.eye(mu.shape[0]) + A @ A.T))
    return mu + eps @ Z.T


def reference_curvature(method, f, lik, x, y, b, key):
    """(g, G) of Table 1 at belief b, dense and by brute force (see the module docstring)."""
    mu = jnp.asarray(b.mu)
    if method.approx in ("lin-hess", "lin-ef"):
        h = lambda th: lik.mean(f(x, th))  # noqa: E731
        H = np.asarray(jax.jacobian(h)(mu))  # (C, P)
        Rp = np.linalg.pinv(np.asarray(lik.cov(f(x, mu))))
        yhat = np.asarray(h(mu))
        if method.approx == "lin-hess":  # Eqs. 21-22
            return H.T @ Rp @ (np.asarray(y) - yhat), -H.T @ Rp @ H
        # Eq. 27 with R frozen at mu, Eq. 28
        g = np.asarray(jax.grad(lambda th: -0.5 * (y - h(th)) @ jnp.asarray(Rp) @ (y - h(th)))(mu))
        return g, -np.outer(g, g)
    M = method.n_samples
    k_s, k_h = jax.random.split(key)
    thetas = reference_draws(k_s, b, M)
    logp = lambda th: lik.loglik(f(x, th), y)  # noqa: E731
    grads = np.asarray(jax.vmap(jax.grad(logp))(jnp.asarray(thetas)))  # (M, P), one autodiff gradient per draw
    g = grads.mean(0)  # Eq. 11
    if method.approx == "mc-ef":
        return g, -grads.T @ grads / M  # Eq. 26
    Hs = np.asarray(jax.vmap(jax.hessian(logp))(jnp.asarray(thetas)))  # (M, P, P) dense Hessians
    if method.family in ("fc", "fc_mom"):
        return g, Hs.mean(0)  # Eq. 12
    z = np.asarray(jax.random.rademacher(k_h, (M, method.n_probes, mu.shape[0]), dtype=mu.dtype))
    dG = np.einsum("mnp,mpq,mnq->p", z, Hs, z) / (M * method.n_probes)  # Hutchinson, same probes
    return g, np.diag(dG)


def _eig_truncate(ups_t, Lambda_t, R):
    """Eqs. 306-308 from the dense precision: W W^T = top-R eigen part of W~ W~^T = Lambda~ - diag(ups~),
    ups = ups~ + diag(W~ W~^T - W W^T)."""
    WWt = np.asarray(Lambda_t) - np.diag(np.asarray(ups_t))
    w, V = np.linalg.eigh(0.5 * (WWt + WWt.T))
    W = V[:, ::-1][:, :R] * np.sqrt(np.maximum(w[::-1][:R], 0.0))
    return np.asarray(ups_t) + np.diag(WWt) - np.sum(W**2, axis=1), W


def reference_update(method, f, lik, prior, x, y, key):
    """One time step of grid cell ``method`` (Alg. 3): for i = 1..I, (g, G) by
    :func:`reference_curvature` at the iterate (key fold_in(key, i - 1), as the library), then
    :func:`reference_step`; bong/blr-dlr take the FC natural step on the dense precision and
    project to rank R by a dense eigendecomposition."""
    it = prior
    for i in range(method.n_iter):
        g, G = reference_curvature(method, f, lik, x, y, it, jax.random.fold_in(key, i))
        g, G = jnp.asarray(g), jnp.asarray(G)
        if method.family == "dlr" and method.alg in ("bong", "blr"):
            fc = reference_step(method.alg, "dlr", it, prior, g, G, method.alpha, method.rank)
            a = method.alpha
            ups_t = np.asarray(it.ups) if method.alg == "bong" else (1 - a) * np.asarray(it.ups) + a * np.asarray(prior.ups)
            ups, W = _eig_truncate(ups_t, np.linalg.inv(np.asarray(fc.Sigma)), method.rank)
            it = DLR(fc.mu, jnp.asarray(ups), jnp.asarray(W))
        else:
            it = reference_step(method.alg, method.family, it, prior, g, G, method.alpha, method.rank)
    return it


def svd_truncate(ups_t, W_t, R):
    """Eqs. 306-308 with a full SVD (reference for the Gram-eigh version)."""
    U, s, _ = np.linalg.svd(np.asarray(W_t), full_matrices=False)
    W = U[:, :R] * s[:R]
    ups = np.asarray(ups_t) + np.sum(np.asarray(W_t) ** 2, axis=1) - np.sum(W**2, axis=1)
    return ups, W


def kalman_filter(mu0, Sigma0, H, y, R):
    """Kalman measurement updates (Eqs. 136-138) for y_t = H_t theta + eps, eps ~ N(0, R).

    H: (T, C, P) or (T, P) (scalar observations); y: (T, C) or (T,); R: (C, C) or scalar.
    Returns the means (T+1, P) and covariances (T+1, P, P), row 0 the prior.
    """
    mu, S = np.asarray(mu0, float), np.asarray(Sigma0, float)
    H = np.asarray(H, float)
    y = np.asarray(y, float)
    if H.ndim == 2:
        H, y = H[:, None, :], y[:, None]
    Rm = np.atleast_2d(np.asarray(R, float))
    mus, Ss = [mu], [S]
    for Ht, yt in zip(H, y):
        K = S @ Ht.T @ np.linalg.inv(Rm + Ht @ S @ Ht.T)
        mu = mu + K @ (yt - Ht @ mu)
        S = S - K @ Ht @ S
        S = 0.5 * (S + S.T)
        mus.append(mu)
        Ss.append(S)
    return np.array(mus), np.array(Ss)


def batch_posterior(mu0, Sigma0, H, y, R):
    """Exact posterior of theta ~ N(mu0, Sigma0), y_t ~ N(H_t theta, R), all data at once."""
    H = np.asarray(H, float)
    y = np.asarray(y, float)
    if H.ndim == 2:
        H, y = H[:, None, :], y[:, None]
    Rinv = np.linalg.inv(np.atleast_2d(np.asarray(R, float)))
    P0 = np.linalg.inv(np.asarray(Sigma0, float))
    Prec = P0 + sum(Ht.T @ Rinv @ Ht for Ht in H)
    rhs = P0 @ np.asarray(mu0, float) + sum(Ht.T @ Rinv @ yt for Ht, yt in zip(H, y))
    S = np.linalg.inv(Prec)
    return S @ rhs, S
