"""Time per iteration of the sparse hierarchical-model methods against dense implementations, as n grows.

Synthetic Epi II-shaped Poisson random-slope data with n = 10, 59, 200 subjects (d = 2n + 9):

* Tan (2025) Algorithm 2S with SNNGM. sparse: ``vilab.hierarchical.fit`` (block storage, Theorem 4 by
  blocks, O(n) per iteration); dense: the same iteration on the d x d factor with the dense Theorem 4
  formula ``vilab.family.natgrad.natural_grad_chol_prec_arrow`` and dense triangular solves.
* Chen, Nott & Tan KLD and SDb (B = 5), Adadelta. sparse: ``vilab.hierarchical.fit`` (low-rank masked
  gradients); dense: ``vilab.divergences.stochastic.grad_kl`` / ``grad_sdb`` on the d x d factor
  with the arrow mask (the paper's Tables 4-5 as written, O(d^3) per iteration for SDb).

The sparse side runs through vilab.core.run (one host chunk per window), the dense side jitted
``lax.scan`` windows, with the same optimizer (compilation excluded); the time per iteration is the
median over windows. Prints one row per (method, n) and the
scaling exponent k of time ~ n^k fitted by least squares on log-log over n = 10, 59, 200, and the
local exponent between 59 and 200 (sparse: at most about 1, fixed per-iteration overheads still
weigh at n = 10; dense: up to 2-3). Without --quick the sparse methods also run at n = 1000
(d = 2009; the dense ones would need minutes per window) and the 200 -> 1000 exponent is printed.
Run: python benchmarks/bench_hierarchical.py [--quick]
"""

from __future__ import annotations

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import vilab  # noqa: F401  (float64)
from vilab.family import natgrad
from vilab.algorithms import optim
from vilab.divergences import stochastic as sto
from vilab.family import block as fam
from vilab.hierarchical.fit import fit
from vilab.hierarchical.models import synthetic_glmm

NS = (10, 59, 200)
ALPHA0 = 0.03


def sparse_seconds_per_iter(model, method, n_iter, window):
    """Median seconds per iteration of vilab.hierarchical.fit over its windows (compilation excluded)."""
    kw = dict(alpha=ALPHA0) if method == "gva-snngm" else {}
    f = fit(model, method, key=jax.random.PRNGKey(0), n_iter=n_iter, window=window, **kw)
    return float(np.median(np.diff(f.extra["seconds"]) / np.diff(f.iterations)))


def _dense_program(model, method):
    """The dense counterpart of one iteration, on lambda = (mu, the d x d factor T with the arrow mask)."""
    st = fam.structure_of(model)
    d = st.d
    M = jnp.asarray(fam.dense_mask(st), float)
    sizes = (st.r,) * st.n
    logp, score = model.log_density, jax.grad(model.log_density)
    T0 = jnp.sqrt(model.info["n_obs"]) * jnp.eye(d) if method == "gva-snngm" else 10.0 * jnp.eye(d)

    def solve_Tt(T, z):
        return jax.scipy.linalg.solve_triangular(T.T, z, lower=False)

    if method == "gva-snngm":
        tx = optim.snngm(ALPHA0)

        def step(carry, k):
            (mu, T), s = carry
            z = jax.random.normal(k, (d,))
            x = solve_Tt(T, z)
            g = score(mu + x)
            v = jax.scipy.linalg.solve_triangular(T, g, lower=True) + z
            nm, NG = natgrad.natural_grad_chol_prec_arrow(mu, T, g + T @ z, -jnp.outer(x, v) * M, sizes, st.g)
            upd, s = tx.update(-jnp.concatenate([nm, NG.ravel()]), s)
            return ((mu + upd[:d], T + upd[d:].reshape(d, d) * M), s), logp(mu + x)

        lam0 = (jnp.zeros(d), T0)
        return step, (lam0, tx.init(jnp.zeros(d + d * d)))

    opt = sto.make_optimizer("adadelta", None, 0.95, 1e-6)
    eye = jnp.eye(d, dtype=bool)

    def step(carry, k):
        (mu, Ts), (s_mu, s_T) = carry
        T = jnp.where(eye, jnp.exp(Ts), Ts * M)
        if method == "kld":
            z = jax.random.normal(k, (d,))
            g_mu, g_T = sto.grad_kl(score, mu, T, z)
            theta = mu + solve_Tt(T, z)
        else:
            zs = jax.random.normal(k, (5, d))
            thetas = mu + jax.vmap(lambda z: solve_Tt(T, z))(zs)
            g_mu, g_T = sto.grad_sdb(mu, T, sto.batch_statistics(thetas, jax.vmap(score)(thetas)))
            theta = thetas[0]
        g_T = jnp.where(eye, g_T * T, g_T * M)
        u_mu, s_mu = opt.update(g_mu, s_mu, mu)
        u_T, s_T = opt.update(g_T, s_T, Ts)
        return ((mu + u_mu, Ts + u_T), (s_mu, s_T)), logp(theta)

    mu0, Ts0 = jnp.zeros(d), jnp.where(eye, jnp.log(T0), 0.0)
    return step, ((mu0, Ts0), (opt.init(mu0), opt.init(Ts0)))


def dense_seconds_per_iter(model, method, n_iter, window):
    step, carry = _dense_program(model, method)
    chunk = jax.jit(lambda c, keys: jax.lax.scan(step, c, keys))
    key = jax.random.PRNGKey(0)
    keys = jax.random.split(key, window)
    compiled = chunk.lower(carry, keys).compile()
    times = []
    for w in range(max(n_iter // window, 1)):
        keys = jax.random.split(jax.random.fold_in(key, w), window)
        t = time.perf_counter()
        carry, el = compiled(carry, keys)
        jax.block_until_ready(el)
        times.append((time.perf_counter() - t) / window)
    return float(np.median(times))


def exponent(ns, ts):
    return float(np.polyfit(np.log(ns), np.log(ts), 1)[0])


def main(quick: bool = False):
    methods = {"gva-snngm": "SNNGM (Tan Alg. 2S, Thm 4)", "kld": "KLD (Chen et al.)", "sdb": "SDb, B = 5 (Chen et al.)"}
    n_sparse, w_sparse = (1000, 200) if quick else (4000, 500)
    n_dense, w_dense = (40, 10) if quick else (200, 25)
    print(f"{'method':28s} {'n':>5s} {'d':>5s} {'sparse ms/it':>13s} {'dense ms/it':>12s} {'dense/sparse':>13s}")
    res = {}
    for meth, lab in methods.items():
        sp, de = [], []
        for n in NS:
            m = synthetic_glmm(n)
            ts = sparse_seconds_per_iter(m, meth, n_sparse, w_sparse)
            td = dense_seconds_per_iter(m, meth, n_dense, w_dense)
            sp.append(ts)
            de.append(td)
            print(f"{lab:28s} {n:5d} {m.dim:5d} {ts * 1e3:13.3f} {td * 1e3:12.3f} {td / ts:13.1f}", flush=True)
        big = None
        if not quick:
            m = synthetic_glmm(1000)
            big = sparse_seconds_per_iter(m, meth, n_sparse, w_sparse)
            print(f"{lab:28s} {1000:5d} {m.dim:5d} {big * 1e3:13.3f} {'-':>12s} {'-':>13s}", flush=True)
        res[meth] = (exponent(NS, sp), exponent(NS[1:], sp[1:]), exponent(NS, de), exponent(NS[1:], de[1:]),
                     None if big is None else exponent((NS[-1], 1000), (sp[-1], big)))
    print("\nscaling exponent k (time per iteration ~ n^k): fitted on n = 10, 59, 200 [local 59 -> 200]")
    for meth, (ks, ks2, kd, kd2, kb) in res.items():
        extra = "" if kb is None else f"   sparse 200 -> 1000: k = {kb:4.2f}"
        print(f"  {methods[meth]:28s} sparse k = {ks:4.2f} [{ks2:4.2f}]   dense k = {kd:4.2f} [{kd2:4.2f}]{extra}")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
