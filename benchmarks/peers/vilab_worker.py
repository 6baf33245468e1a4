"""Worker for VILAB's side of ``benchmarks/bench_peers.py``, run with vilab's own venv:

    .venv/bin/python benchmarks/peers/vilab_worker.py

It answers the requests of :mod:`protocol` with vilab's public entry points, the ones the lab runs:

* BONG rows: :func:`vilab.online.make_method` + :func:`vilab.online.init_belief` +
  :func:`vilab.online.runner.algorithm`, run by :func:`vilab.core.run` over the digits stream (one example a
  step, ``record_every`` = the stream's length), as ``benchmarks/bench_online.py`` runs them; float32 rows get
  float32 mu0, inputs and labels (vilab enables x64, operations on float32 arrays stay float32).
* BaM: :func:`vilab.divergences.stochastic.run_bam`, with ``history=False, window=n`` (one window: the
  configuration of ``bench_divergences.py``) or with its defaults (``history=True``: every iterate and its draws
  recorded, window 50).
* GSM: :func:`vilab.divergences.stochastic.gsm` run by :func:`vilab.core.run` (``record_every`` = n).
"""

from __future__ import annotations

import importlib.metadata as md
import os
import platform
import sys
import time
from pathlib import Path

os.environ.pop("JAX_COMPILATION_CACHE_DIR", None)  # first calls are measured without a persistent cache
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import jax
import jax.numpy as jnp
import numpy as np
from protocol import serve

import vilab  # noqa: F401  (switches x64 on)
from vilab import core
from vilab.divergences import stochastic as sto
from vilab.models.nets import make_mlp
from vilab.online import categorical, init_belief, make_method
from vilab.online.families import marginal_variances
from vilab.online.likelihoods import encode_all
from vilab.online.runner import algorithm
from vilab.targets import gaussian_target

DATA: dict = {}
ROWS: dict = {}
LIK = categorical(10)


def hello(msg):
    out = {"python": platform.python_version(), "x64": bool(jax.config.jax_enable_x64), "backend": jax.default_backend()}
    for pkg in ("vilab", "jax", "jaxlib", "numpy", "scipy", "optax"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = getattr(sys.modules.get(pkg), "__version__", None)
    return {"versions": out}


def load(msg):
    with np.load(msg["path"]) as z:
        DATA.update({k: z[k] for k in z.files})
    return {"keys": sorted(DATA)}


def _prepare_bong(row):
    dt = jnp.float32 if row["dtype"] == "float32" else jnp.float64
    T = int(row["steps"])
    net = make_mlp([int(s) for s in DATA["mlp_sizes"]])
    X = jnp.asarray(DATA["X_train"][:T], dt)
    Y = encode_all(LIK, DATA["y_train"][:T], dt)
    mu0 = jnp.asarray(DATA["mu0"], dt)
    key = jax.random.PRNGKey(int(row.get("seed", 0)))
    f = lambda x, th: net.apply(th, x)

    t0 = time.perf_counter()
    m = make_method("bong-" + row["method"], n_samples=int(row.get("M", 10)))
    prior = init_belief(m.family, mu0, float(row["s2"]), m.rank)
    alg = algorithm(m, f, LIK)
    state = alg.init(key, prior)

    def call():
        return core.run(alg, key, state, T, batches=(X, Y), record_every=T).state.belief

    out = jax.block_until_ready(call())
    first = time.perf_counter() - t0
    ROWS[row["id"]] = {"call": call, "out": out, "kind": "bong"}
    return {"first_s": first, "dtype_out": str(out.mu.dtype)}


def _gauss(d):
    return gaussian_target(np.asarray(DATA[f"gauss{d}/mean"], float), cov=np.asarray(DATA[f"gauss{d}/cov"], float))


def _prepare_vi(row):
    d, B, n = int(row["d"]), int(row["B"]), int(row["n_iter"])
    tg = _gauss(d)
    key = jax.random.PRNGKey(int(row.get("seed", 0)))
    if row["kind"] not in ("bam", "gsm"):
        raise ValueError(f"unknown row kind {row['kind']!r}")
    if row["kind"] == "bam":
        if row["variant"] == "thinned":
            def call():
                tr = sto.run_bam(tg, key=key, n_iter=n, batch_size=B, window=n, history=False)
                return tr.mean[-1], tr.cov[-1]
        elif row["variant"] == "defaults":
            def call():
                tr = sto.run_bam(tg, key=key, n_iter=n, batch_size=B)
                return tr.mean[-1], tr.cov[-1]
        else:
            raise ValueError(f"unknown BaM variant {row['variant']!r}")
    t0 = time.perf_counter()
    if row["kind"] == "gsm":
        alg = sto.gsm(tg, batch_size=B)
        st = alg.init(key, (np.zeros(d), np.eye(d)))

        def call():
            tr = core.run(alg, key, st, n, record_every=n)
            return tr.mean[-1], tr.cov[-1]

    out = jax.block_until_ready(call())
    first = time.perf_counter() - t0
    ROWS[row["id"]] = {"call": call, "out": out, "kind": "vi"}
    return {"first_s": first}


def prepare(msg):
    row = msg["row"]
    ROWS.pop(row["id"], None)
    return _prepare_bong(row) if row["kind"] == "bong" else _prepare_vi(row)


def time_once(msg):
    r = ROWS[msg["id"]]
    t0 = time.perf_counter()
    r["out"] = jax.block_until_ready(r["call"]())
    return {"s": time.perf_counter() - t0}


def result(msg):
    r = ROWS[msg["id"]]
    if r["kind"] == "bong":
        b = r["out"]
        return {"mean": np.asarray(b.mu, np.float64).tolist(),
                "var": np.asarray(marginal_variances(b), np.float64).tolist()}
    mean, cov = r["out"]
    return {"mean": np.asarray(mean, np.float64).tolist(), "cov": np.asarray(cov, np.float64).tolist()}


def drop(msg):
    ROWS.pop(msg["id"], None)
    return {}


def update_once(msg):
    """One closed-form update of vilab (for the tests): sto.bam_update or sto.gsm_update."""
    a = {k: jnp.asarray(np.asarray(v, np.float64)) for k, v in msg["args"].items()}
    if msg["kind"] == "bam":
        mu, S = sto.bam_update(a["mu"], a["Sigma"], a["samples"], a["scores"], float(msg["reg"]))
    else:
        mu, S = sto.gsm_update(a["mu"], a["Sigma"], a["samples"], a["scores"])
    return {"mean": np.asarray(mu, np.float64).tolist(), "cov": np.asarray(S, np.float64).tolist()}


if __name__ == "__main__":
    serve({"hello": hello, "load": load, "prepare": prepare, "time": time_once, "result": result, "drop": drop,
           "update": update_once})
