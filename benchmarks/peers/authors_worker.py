"""Worker for the AUTHORS' code, run by ``benchmarks/bench_peers.py`` in the authors' own venv (never vilab's).

    PEER_PYTHON benchmarks/peers/authors_worker.py --bong CHECKOUT --gsm CHECKOUT --x64 0|1

It puts the two checkouts first on ``sys.path`` and imports their code as it is in the checkout (nothing of it
is copied here, nothing is fetched): ``bong.src.bong`` (the filters), ``bong.util`` (``MLP``,
``run_rebayes_algorithm``) from petergchang/bong, and ``gsmvi.bam`` / ``gsmvi.gsm`` from modichirag/GSM-VI. It
never imports vilab. It answers the requests of :mod:`protocol` (one JSON object a line).

What this file adds around the authors' code (the glue, nothing of their algorithms):

* BONG's classification set-up: the four functions of ``initialize_model`` in
  ``bong/experiments/mnist_clf.py`` (the same lines as ``initialize_mlp_model_cls`` in
  ``bong/experiments/models.py``): log-likelihood ``-optax.softmax_cross_entropy(logits, y)``, emission mean
  (logits for Monte Carlo, softmax for the linearised updates, as ``mnist_clf.tune_agents`` swaps in
  ``em_linpi_function`` for "-l-" agents) and emission covariance ``diag(p) - p p^T + 1e-5 I``. They are
  written out here because importing ``mnist_clf`` pulls in tensorflow-datasets and matplotlib, and
  ``models.initialize_mlp_model_cls`` raises NameError at the benchmarked commit (``nparams`` is undefined)
  and hard-codes GELU; the network is the authors' ``bong.util.MLP`` with ``activation=nn.relu`` (vilab's
  digits MLP is ReLU), its parameters set from the harness's mu0 (the index map below).
* The driver: the authors' ``run_rebayes_algorithm`` under one ``jax.jit`` (their function, called with a
  ``transform`` that returns None: their default returns the whole state at every step, which for the full
  covariance stacks 1000 P x P matrices, 46 GB), so that a call is one compiled 1000-step ``lax.scan`` and the
  second call does not trace again.
* BaM / GSM targets: a Gaussian log density in jax, ``lp = jit(sum of log N(x; m, S))`` and ``lp_g =
  jit(grad(lp))``, the pattern of ``examples/example_bam.py`` without numpyro.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import os
import platform
import sys
import time
from pathlib import Path

ap = argparse.ArgumentParser()
ap.add_argument("--bong", required=True, help="checkout of petergchang/bong")
ap.add_argument("--gsm", required=True, help="checkout of modichirag/GSM-VI")
ap.add_argument("--x64", type=int, choices=(0, 1), required=True, help="jax_enable_x64 (1 for the float64 rows)")
ARGS = ap.parse_args()
os.environ.pop("JAX_COMPILATION_CACHE_DIR", None)  # first calls are measured without a persistent cache
sys.path[:0] = [str(Path(ARGS.bong).resolve()), str(Path(ARGS.gsm).resolve())]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax

jax.config.update("jax_enable_x64", bool(ARGS.x64))
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import optax
from flax import linen as nn
from jax.flatten_util import ravel_pytree
from protocol import serve

DATA: dict = {}
ROWS: dict = {}


def _versions():
    out = {"python": platform.python_version(), "x64": bool(ARGS.x64), "backend": jax.default_backend()}
    for pkg in ("jax", "jaxlib", "numpy", "scipy", "flax", "optax", "chex", "jax-tqdm", "optuna"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = None
    return out


def hello(msg):
    import bong.src.bong
    import gsmvi.bam
    import gsmvi.gsm

    return {"versions": _versions(), "bong_file": bong.src.bong.__file__, "gsm_file": gsmvi.bam.__file__}


def load(msg):
    with np.load(msg["path"]) as z:
        DATA.update({k: z[k] for k in z.files})
    return {"keys": sorted(DATA)}


def _block(x):
    return jax.block_until_ready(x)


# ------------------------------------------------------------------------------------------------ BONG
def _dtype(name):
    if name == "float64" and not ARGS.x64:
        raise ValueError("a float64 row needs the worker started with --x64 1")
    return jnp.float64 if name == "float64" else jnp.float32


def _flax_params(dt):
    """The authors' MLP 64-32-10 (ReLU) and the permutation ``perm`` with flax_flat = vilab_flat[perm]: the
    harness sends vilab's layer arrays filled with the flat indices (``layer/dense0/w`` ...)."""
    sizes = [int(s) for s in DATA["mlp_sizes"]]
    from bong.util import MLP

    model = MLP(features=sizes[1:], activation=nn.relu)
    tree = model.init(jr.PRNGKey(0), jnp.zeros(sizes[0], dt))
    idx = {"params": {f"Dense_{l}": {"kernel": jnp.asarray(DATA[f"layer/dense{l}/w"], jnp.float32),
                                      "bias": jnp.asarray(DATA[f"layer/dense{l}/b"], jnp.float32)}
                      for l in range(len(sizes) - 1)}}
    if jax.tree_util.tree_structure(idx) != jax.tree_util.tree_structure(tree):
        raise ValueError("the authors' MLP has another parameter tree than vilab's 64-32-10 layers")
    perm = np.rint(np.asarray(ravel_pytree(idx)[0])).astype(np.int64)
    tree = jax.tree_util.tree_map(lambda a: a.astype(dt), tree)  # float64 rows: unravel must return float64
    _, unflatten_fn = ravel_pytree(tree)
    return model, unflatten_fn, perm


def _classification_fns(model, unflatten_fn):
    """bong/experiments/mnist_clf.py ``initialize_model`` (same lines as models.initialize_mlp_model_cls)."""
    apply_fn = lambda w, x: model.apply(unflatten_fn(w), jnp.atleast_1d(x))
    log_likelihood = lambda mean, cov, y: -optax.softmax_cross_entropy(mean, y)
    em_function = apply_fn
    em_linpi_function = lambda w, x: jax.nn.softmax(apply_fn(w, x))

    def ec_function(w, x):
        ps = em_linpi_function(w, x)
        cov = jnp.diag(ps) - jnp.outer(ps, ps) + 1e-5 * jnp.eye(len(ps))
        return jnp.atleast_2d(cov)

    return log_likelihood, em_function, em_linpi_function, ec_function


def _agent(method, mu0, s2, ll, em, em_lin, ec, M, rank):
    """The authors' agent class for a benchmarked cell, with explicit flags (the agents.py dictionaries'
    "dlrg-l-bong" sets empirical_fisher=True, which at this commit is the linearised-EF update, not lin-hess)."""
    from bong.src import bong as B

    common = {"init_mean": mu0, "init_cov": s2, "log_likelihood": ll, "emission_cov_function": ec}
    if method == "lin-hess-diag":
        return B.dg_bong(**common, emission_mean_function=em_lin, linplugin=True, empirical_fisher=False)
    if method == "lin-hess-fc":
        return B.fg_bong(**common, emission_mean_function=em_lin, linplugin=True, empirical_fisher=False)
    if method.startswith("lin-hess-dlr-"):
        return B.dlrg_bong(**common, emission_mean_function=em_lin, linplugin=True, empirical_fisher=False, rank=rank)
    if method.startswith("mc-ef-dlr-"):
        return B.dlrg_bong(**common, emission_mean_function=em, linplugin=False, empirical_fisher=True,
                           num_samples=M, rank=rank)
    if method == "mc-ef-diag":
        return B.dg_bong(**common, emission_mean_function=em, linplugin=False, empirical_fisher=True, num_samples=M)
    raise ValueError(f"no authors' agent for {method!r}")


def _prepare_bong(row):
    from bong.util import run_rebayes_algorithm

    dt = _dtype(row["dtype"])
    T = int(row["steps"])
    model, unflatten_fn, perm = _flax_params(dt)
    X = jnp.asarray(DATA["X_train"][:T], dt)
    Y = jax.nn.one_hot(jnp.asarray(DATA["y_train"][:T]), 10, dtype=dt)
    mu0 = jnp.asarray(np.asarray(DATA["mu0"])[perm], dt)
    key = jr.PRNGKey(int(row.get("seed", 0)))
    ll, em, em_lin, ec = _classification_fns(model, unflatten_fn)
    no_output = lambda key, alg, state, x, y: None

    t0 = time.perf_counter()
    alg = _agent(row["method"], mu0, float(row["s2"]), ll, em, em_lin, ec, int(row.get("M", 10)),
                 int(row.get("rank", 0)))
    state0 = alg.init()
    run = jax.jit(lambda k, s, X, Y: run_rebayes_algorithm(k, alg, X, Y, init_state=s, transform=no_output)[0])
    out = _block(run(key, state0, X, Y))
    first = time.perf_counter() - t0
    ROWS[row["id"]] = {"call": lambda: run(key, state0, X, Y), "out": out, "perm": perm, "kind": "bong"}
    return {"first_s": first, "dtype_out": str(out.mean.dtype), "identity_layout": bool(np.all(perm == np.arange(len(perm))))}


def _bong_summary(st, perm):
    """Mean and marginal variances in vilab's parameter order (float64 numpy)."""
    inv = np.empty_like(perm)
    inv[perm] = np.arange(len(perm))
    mean = np.asarray(st.mean, np.float64)
    if hasattr(st, "cov"):
        c = np.asarray(st.cov, np.float64)
        var = c if c.ndim == 1 else np.diag(c).copy()
    else:  # DLR precision Upsilon + W W^T: diag of its inverse by Woodbury (float64, on the host)
        ups = np.asarray(st.prec_diag, np.float64).ravel()
        W = np.asarray(st.prec_lr, np.float64)
        DW = W / ups[:, None]
        K = np.eye(W.shape[1]) + W.T @ DW
        var = 1.0 / ups - np.einsum("ij,ij->i", DW @ np.linalg.inv(K), DW)
    return {"mean": mean[inv].tolist(), "var": var[inv].tolist()}


# ------------------------------------------------------------------------------------------ BaM / GSM
def _gauss_target(d):
    m = jnp.asarray(DATA[f"gauss{d}/mean"], jnp.float64)
    S = jnp.asarray(DATA[f"gauss{d}/cov"], jnp.float64)
    Prec = jnp.linalg.inv(S)
    logdet = jnp.linalg.slogdet(S)[1]

    def logp(x):
        r = x - m
        return -0.5 * (jnp.einsum("...i,ij,...j->...", r, Prec, r) + logdet + d * jnp.log(2 * jnp.pi))

    lp = jax.jit(lambda x: jnp.sum(logp(x)))
    lp_g = jax.jit(jax.grad(lp, argnums=0))
    return lp, lp_g


def _prepare_vi(row):
    from gsmvi.bam import BaM, Regularizers
    from gsmvi.gsm import GSM

    if not ARGS.x64:
        raise ValueError("the BaM and GSM rows run in float64 (GSM-VI's examples enable x64)")
    d, B, n = int(row["d"]), int(row["B"]), int(row["n_iter"])
    key = jr.PRNGKey(int(row.get("seed", 0)))

    lp, lp_g = _gauss_target(d)
    if row["kind"] == "bam":
        bam = BaM(D=d, lp=lp, lp_g=lp_g, use_lowrank=False, jit_compile=True)

        def call():  # rho_t = B d / t: Regularizers.linear(reg0) gives reg0 / (its calls so far), one an iteration
            return bam.fit(key, regf=Regularizers().linear(float(B * d)), batch_size=B, niter=n - 1, verbose=False)
    else:
        gsm = GSM(D=d, lp=lp, lp_g=lp_g)

        def call():
            return gsm.fit(key, batch_size=B, niter=n - 1, verbose=False)

    t0 = time.perf_counter()
    out = _block(call())  # fit runs niter + 1 = n updates (range(niter + 1))
    first = time.perf_counter() - t0
    ROWS[row["id"]] = {"call": call, "out": out, "kind": "vi"}
    return {"first_s": first}


# ------------------------------------------------------------------------------------------- requests
def prepare(msg):
    row = msg["row"]
    ROWS.pop(row["id"], None)
    return _prepare_bong(row) if row["kind"] == "bong" else _prepare_vi(row)


def time_once(msg):
    r = ROWS[msg["id"]]
    t0 = time.perf_counter()
    r["out"] = _block(r["call"]())
    return {"s": time.perf_counter() - t0}


def result(msg):
    r = ROWS[msg["id"]]
    if r["kind"] == "bong":
        return _bong_summary(r["out"], r["perm"])
    mean, cov = r["out"]
    return {"mean": np.asarray(mean, np.float64).tolist(), "cov": np.asarray(cov, np.float64).tolist()}


def drop(msg):
    ROWS.pop(msg["id"], None)
    return {}


def update_once(msg):
    """One closed-form update of the authors' code on given draws (for the tests): gsmvi.bam.bam_update or
    gsmvi.gsm.gsm_update."""
    a = {k: jnp.asarray(np.asarray(v, np.float64)) for k, v in msg["args"].items()}
    if msg["kind"] == "bam":
        from gsmvi.bam import bam_update

        mu, S = bam_update(a["samples"], a["scores"], a["mu"], a["Sigma"], float(msg["reg"]))
    else:
        from gsmvi.gsm import gsm_update

        mu, S = gsm_update(a["samples"], a["scores"], a["mu"], a["Sigma"])
    return {"mean": np.asarray(mu, np.float64).tolist(), "cov": np.asarray(S, np.float64).tolist()}


if __name__ == "__main__":
    serve({"hello": hello, "load": load, "prepare": prepare, "time": time_once, "result": result, "drop": drop,
           "update": update_once})
