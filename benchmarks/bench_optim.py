"""Time per iteration of the optimizers of vilab.algorithms.optim (jitted, lax.scan) against plain numpy.

Problems (Tan (2025) Sec. 8):
  * full-covariance logistic regression on the breast cancer data (d = 31 with intercept,
    n = 569, full batch, second-order gradient estimate, factor C; VOGN: T);
  * Poisson loglinear model, d = 50, n = 1e5, minibatch 5000, exact minibatch gradient, full C.
The numpy reference implements the same update (estimator + optimizer) step by step below.
Prints a table: ms per iteration (jax, best of 3 runs after compiling), ms per iteration
(numpy, best of 3), the ratio numpy / jax (> 1: the jitted optax version is faster) and the
compile time. tests/test_optim.py checks that NumpyStep and vilab.algorithms.optim take the same steps.
Run: python benchmarks/bench_optim.py [--quick]   (--quick: Adam, SNNGM, NAGM, VOGN only)
"""

from __future__ import annotations

import sys
import time

import jax
import numpy as np
from scipy.linalg import cho_solve, cholesky, solve_triangular

import vilab  # noqa: F401
from vilab.algorithms import optim
from vilab.targets import regression as R


def bb(X):
    Y = np.tril(X).copy()
    Y[np.diag_indices_from(Y)] *= 0.5
    return Y


def vech(X):
    return X.T[np.triu_indices(X.shape[0])]


def unvech(v, d):
    M = np.zeros((d, d))
    c, r = np.triu_indices(d)
    M[r, c] = v
    return M


class NumpyStep:
    """One iteration of estimator + optimizer in numpy (same equations as vilab.algorithms.optim)."""

    def __init__(self, model, name, alpha, param, batch, exact):
        self.m, self.name, self.alpha, self.param, self.B, self.exact = model, name, alpha, param, batch, exact
        d = model.d
        self.d = d
        n = model.n
        self.mu = np.zeros(d)
        self.F = np.eye(d) * (np.sqrt(n) if param == "chol_prec" else 1 / np.sqrt(n))
        lam = np.concatenate([self.mu, vech(self.F)])
        self.mom = np.zeros(d) if name == "vogn" else np.zeros_like(lam)
        self.v = np.zeros_like(lam)
        self.t = 0
        self.S = self.F @ self.F.T
        self.rng = np.random.default_rng(0)
        self.diag_idx = d + np.concatenate([[0], np.cumsum(np.arange(d, 0, -1))[:-1]])

    def _batch(self):
        m = self.m
        if self.B == m.n:
            return m.X, m.y, 1.0
        idx = self.rng.choice(m.n, self.B, replace=False)
        return m.X[idx], m.y[idx], m.n / self.B

    def grads(self, smooth=False):
        """Euclidean (g_mu, G) of L (or of E_q log p when smooth), and VOGN's (g, H)."""
        d, s0 = self.d, self.m.prior_var
        X, y, sc = self._batch()
        mu, C = self.mu, self.F
        if self.exact:  # Poisson loglinear, tractable (Tan Supp. S2)
            Sig = np.linalg.inv(C @ C.T) if self.param == "chol_prec" else C @ C.T
            w = np.exp(X @ mu + 0.5 * ((X @ Sig) * X).sum(1))
            g = sc * X.T @ (y - w) - mu / s0
            XWX = sc * (X.T * w) @ X
            if self.name == "vogn":
                return g, XWX + np.eye(d) / s0
            Ci = solve_triangular(C, np.eye(d), lower=True)
            G = (0.0 if smooth else Ci.T) - C / s0 - XWX @ C
            return g, np.tril(G)
        z = self.rng.standard_normal(d)
        if self.param == "chol_prec":
            th = mu + solve_triangular(C.T, z, lower=False)
        else:
            th = mu + C @ z
        eta = X @ th
        p = 1 / (1 + np.exp(-eta))
        g = sc * X.T @ (y - p) - th / s0
        if self.name == "vogn":
            J = (y - p)[:, None] * X
            return g, sc * J.T @ J + np.eye(d) / s0
        Hs = -sc * (X.T * (p * (1 - p))) @ X - np.eye(d) / s0
        Cit = solve_triangular(C.T, np.eye(d), lower=False)  # C^{-T}
        gh = g if smooth else g + Cit @ z
        G = Hs @ C + (0.0 if smooth else Cit)
        return gh, np.tril(G)

    def step(self):
        d, a = self.d, self.alpha
        self.t += 1
        lam = np.concatenate([self.mu, vech(self.F)])
        if self.name == "vogn":
            g, H = self.grads()
            self.mom = 0.9 * self.mom + 0.1 * g
            mhat = self.mom / (1 - 0.9**self.t)
            self.S = 0.999 * self.S + 0.001 * H
            L = cholesky(self.S, lower=True)
            self.mu = self.mu + a * cho_solve((L, True), mhat)
            self.F = L
            return
        g_mu, G = self.grads(smooth=self.name == "pga")
        C = self.F
        e = np.concatenate([g_mu, vech(G)])

        def natural(vec):
            gm, Gm = vec[:d], unvech(vec[d:], d)
            return np.concatenate([C @ (C.T @ gm), vech(C @ bb(C.T @ Gm))])

        if self.name == "adam" or self.name == "adam-natural":
            gg = natural(e) if self.name == "adam-natural" else e
            self.mom = 0.9 * self.mom + 0.1 * gg
            self.v = 0.999 * self.v + 0.001 * gg**2
            lam = lam + a * (self.mom / (1 - 0.9**self.t)) / (np.sqrt(self.v / (1 - 0.999**self.t)) + 1e-8)
        elif self.name == "snngm":
            nat = natural(e)
            self.mom = 0.9 * self.mom + 0.1 * nat / np.linalg.norm(nat)
            lam = lam + a * np.sqrt(lam.size) * self.mom / (1 - 0.9**self.t)
        elif self.name == "nagm":
            e = e * min(1.0, 5e5 / np.linalg.norm(e))
            self.mom = 0.9 * self.mom + 0.1 * e
            nat = natural(self.mom)
            nat[:d] *= a
            nat[d:] *= a / 100
            lam = lam + nat
        elif self.name == "pga":
            self.mom = 0.9 * self.mom + 0.1 * e
            self.v = 0.999 * self.v + 0.001 * e**2
            gam = a / (np.sqrt(self.v) + 1e-8)
            lam = lam + gam * self.mom
            c = lam[self.diag_idx]
            lam[self.diag_idx] = 0.5 * (c + np.sign(c) * np.sqrt(c**2 + 4 * gam[self.diag_idx]))
        self.mu, self.F = lam[:d], unvech(lam[d:], d)


def bench(model, name, alpha, batch, exact, n_jax, n_np, repeat=3):
    """ms per iteration of vilab.algorithms.optim.run (jitted, compiled once) and of NumpyStep; best of ``repeat``."""
    est = "exact" if exact else "second"
    param = "chol_prec" if name == "vogn" else "chol_cov"
    record = "epoch" if batch < model.n else "auto"
    kw = dict(alpha=alpha, param=param, estimator=est, n_iter=n_jax, batch_size=batch, chunk_iters=n_jax,
              record=record, n_elbo_draws=10)
    first = optim.run(model, name, key=jax.random.PRNGKey(0), **kw)  # compiles (cached for the timed runs)
    ms_jax = min(1e3 * optim.run(model, name, key=jax.random.PRNGKey(k + 1), **kw).extra["time_per_iter"]
                 for k in range(repeat))
    ref = NumpyStep(model, name, alpha, param, batch, exact)
    ref.step()
    ms_np = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n_np):
            ref.step()
        ms_np = min(ms_np, 1e3 * (time.perf_counter() - t0) / n_np)
    return ms_jax, ms_np, first.extra["compile_time"]


def main(quick=False):
    alphas = {"adam": 1e-3, "adam-natural": 1e-3, "snngm": 0.003, "nagm": 0.2, "pga": 1e-3, "vogn": 0.1}
    problems = [
        ("logistic, breast cancer, full C (d=31, n=569)", R.breast_cancer(), 569, False, 400, 100),
        ("loglinear d=50, n=1e5, B=5000, full C", R.simulated_loglinear(), 5000, True, 100 if quick else 200, 20),
    ]
    print(f"{'problem':48s} {'optimizer':14s} {'jax ms/it':>10s} {'numpy ms/it':>12s} {'numpy/jax':>10s} "
          f"{'compile s':>10s}")
    for label, model, B, exact, nj, nn in problems:
        names = ["adam", "snngm", "nagm", "vogn"] if quick else list(optim.OPTIMIZERS)
        for name in names:
            mj, mn, comp = bench(model, name, alphas[name], B, exact, nj, nn)
            print(f"{label:48s} {name:14s} {mj:10.3f} {mn:12.3f} {mn / mj:10.1f} {comp:10.1f}", flush=True)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
