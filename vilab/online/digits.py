"""The digits stream: a CPU-sized analogue of the BONG paper's MNIST experiment (digest Sec. 4.1).

scikit-learn's ``load_digits`` (1,797 8x8 images, ships with scikit-learn, nothing is
downloaded), pixels / 16. A fixed split (seeded permutation, seed 0): 1,000 training examples
streamed one per step, 200 validation, 597 test. Each run key reorders the training stream
and redraws mu_0 from the network initialiser (as the paper's trials vary data order and mu_0).

This is a scaled-down analogue of the paper's MNIST T = 2000 CNN experiment, not a
reproduction of its figures.
"""

from __future__ import annotations

from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np

from ..core.checks import integer
from ..models.nets import digits_cnn, digits_mlp, make_linear
from .families import init_belief
from .grid import is_cubic, make_method
from .likelihoods import categorical
from ..core import Trace, is_key
from ..core.cache import memoize
from .runner import make_evaluator, stream

_CAT = categorical(10)

__all__ = ["load_asset", "model_f", "load_digits_split", "digits_model", "run_digits", "DEFAULT_CHECKPOINTS", "TUNED_SIGMA0_2"]

DEFAULT_CHECKPOINTS = (0, 50, 100, 200, 300, 500, 750, 1000)

# sigma_0^2 tuned on validation plug-in NLL in the digest's prototype (Sec. 4.1 tables);
# used as defaults by the page and the reproduction (settings, not results).
TUNED_SIGMA0_2 = {
    "lin-hess-fc": 0.3,
    "lin-hess-dlr": 0.1,
    "lin-hess-diag": 0.1,
    "lin-hess-diag_mom": 0.03,
    "mc-ef-diag": 0.03,
    "mc-ef-dlr": 0.03,
}


@lru_cache(maxsize=1)
def load_digits_split():
    """(X_train (1000, 64), y_train, X_val (200, 64), y_val, X_test (597, 64), y_test), float64."""
    from sklearn.datasets import load_digits

    d = load_digits()
    X = d.data.astype(np.float64) / 16.0
    y = d.target.astype(np.int32)
    perm = np.random.default_rng(0).permutation(len(y))
    X, y = X[perm], y[perm]
    return X[:1000], y[:1000], X[1000:1200], y[1000:1200], X[1200:], y[1200:]


@lru_cache(maxsize=None)
def digits_model(name: str = "mlp"):
    """'mlp' (64-32-10, P = 2,410), 'cnn' (P = 11,642) or 'linear' (softmax regression, P = 650)."""
    if name == "mlp":
        return digits_mlp()
    if name == "cnn":
        return digits_cnn()
    if name == "linear":
        return make_linear(64, 10)
    raise ValueError(f"Unknown digits model {name!r}; use 'mlp', 'cnn' or 'linear'.")


@lru_cache(maxsize=None)
def model_f(name: str = "mlp"):
    """f(x, theta) for the digits model ``name`` (the argument order of the filters, Sec. 3)."""
    net = digits_model(name)

    def f(x, theta):
        return net.apply(theta, x)

    return f


@memoize("vilab.online.digits evaluators", maxsize=16)
def _evaluator(model_name: str, split: str, n_mc: int, which=("plugin", "mc", "lin")):
    Xtr, ytr, Xv, yv, Xte, yte = load_digits_split()
    X, y = (Xv, yv) if split == "val" else (Xte, yte)
    return make_evaluator(model_f(model_name), _CAT, X, y, n_mc=n_mc, key=jax.random.PRNGKey(123), which=which)


def run_digits(
    name: str,
    *,
    model: str = "mlp",
    T: int = 1000,
    sigma0_2: float = 0.1,
    alpha: float | None = None,
    n_iter: int = 1,
    n_samples: int = 10,
    key,
    checkpoints=DEFAULT_CHECKPOINTS,
    split: str = "test",
    n_mc: int = 50,
    progress=None,
    keep_states: bool = False,
    w0_scale: float | None = None,
    predictives=("plugin", "mc", "lin"),
    on_chunk=None,
    max_time: float | None = None,
) -> Trace:
    """Run grid method ``name`` (e.g. "bong-lin-hess-dlr-10") on the digits stream; a
    :class:`vilab.core.Trace` of :func:`vilab.online.runner.stream` (``settings`` also hold name,
    sigma0_2, the key's raw data, model and P).

    key: a ``jax.random`` key (``vilab.core.as_key(seed)`` turns a seed into one), split as
    :func:`vilab.cnn.train.online_train` splits its key: into mu_0, W_0, the stream's draws and
    the order of the training examples (a ``jax.random.permutation``). ``max_time``: a time budget in
    seconds (status "max_time" when spent; see :func:`vilab.online.runner.stream`).

    The prior is N(mu_0, sigma0_2 I) with mu_0 from the network initialiser (seed); bog/bbb-dlr
    start from a small random W_0 (w0_scale = 0.1; Eqs. 333/343 keep W = 0 otherwise).
    """
    if not is_key(key):
        raise ValueError("run_digits needs a jax.random key (vilab.core.as_key(seed) turns a seed into one); "
                         f"got {key!r}.")
    T = integer(T, "The stream length T (the digits stream has 1,000 training examples)", minimum=1, maximum=1000)
    n_mc = integer(n_mc, "The number of Monte Carlo draws n_mc", minimum=1)
    method = make_method(name, alpha=alpha, n_iter=n_iter, n_samples=n_samples)
    net = digits_model(model)
    if method.approx == "mc-hess" and method.family in ("fc", "fc_mom") and net.n_params > 1000:
        raise ValueError("mc-hess with a full covariance needs M dense P x P Hessians per step; use it only for models "
                         "with P <= 1000 (the linear model), or choose mc-ef / lin-hess.")
    if is_cubic(method) and net.n_params > 1000:
        raise ValueError(f"{method.name} costs O(P^3) per step (Table 3 of the paper: it inverts or multiplies "
                         f"P x P matrices), about {2 * net.n_params**3 * method.n_iter / 1e9:.0f} GFLOP per example on the "
                         f"{model}: too slow for a live run. Use the linear model (P = 650), or bong / a diag or dlr family.")
    if method.family in ("fc", "fc_mom") and net.n_params > 5000:
        raise ValueError(f"A full covariance over the {net.n_params:,} weights of the {model} is a "
                         f"{net.n_params**2 * 8 / 1e9:.1f} GB matrix updated at O(C P^2) per example: too slow for a "
                         "live run. Use diag or dlr-R on this model (the MLP runs fc).")
    Xtr, ytr, *_ = load_digits_split()
    k_init, k_w, k_run, k_order = jax.random.split(key, 4)
    order = np.asarray(jax.random.permutation(k_order, len(ytr)))[:T]
    mu0 = net.init(k_init)
    if w0_scale is None:
        w0_scale = 0.1 if (method.family == "dlr" and method.alg in ("bog", "bbb")) else 0.0
    prior = init_belief(method.family, mu0, sigma0_2, method.rank, key=k_w, w0_scale=w0_scale)
    cps = sorted({c for c in (integer(c, "Every checkpoint", minimum=0) for c in checkpoints) if c <= T} | {0, T})
    ev = _evaluator(model, split, int(n_mc), tuple(predictives))
    trace = stream(method, model_f(model), _CAT, jnp.asarray(Xtr[order]), jnp.asarray(ytr[order]), prior,
                   key=k_run, checkpoints=cps, evaluate=ev, progress=progress, on_chunk=on_chunk,
                   keep_states=keep_states, max_time=max_time)
    trace.settings.update({"name": method.name, "sigma0_2": float(sigma0_2), "key": _key_data(key), "model": model,
                           "P": net.n_params})
    return trace


def _key_data(key) -> list[int]:
    """The raw words of a PRNG key (old-style uint32 keys and typed keys alike), for JSON records."""
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    return [int(v) for v in np.asarray(key).ravel()]


ASSET_DIR = __import__("pathlib").Path(__file__).resolve().parents[2] / "assets" / "online"


def load_asset(name: str):
    """Precomputed runs ``assets/online/<name>.json`` (scripts/precompute_online.py); None if absent."""
    import json

    p = ASSET_DIR / f"{name}.json"
    if not p.exists():
        return None
    return json.loads(p.read_text())
