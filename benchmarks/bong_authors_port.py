"""BASELINE, not vilab code: a port of the per-step computation of the BONG authors' JAX code.

Source: github.com/petergchang/bong, ``bong/src/bong.py`` (stored version at commit 1c23fc8b) and
``bong/util.py`` (``fast_svd``, ``sample_dlr``), read through the public-code index; the package
itself (flax, dynamax, tfds loaders) is not installable here. Only what one time step of
``run_rebayes_algorithm`` executes is ported, line by line: ``predict_bong`` / ``predict_bong_dlr``
(static parameters, gamma = 1, Q = 0) followed by

  bong-lin-hess-fc     update_lfg_bong    (Kalman form with lstsq, Eqs. 136-138)
  bong-lin-hess-diag   update_ldg_bong    (mean from the FC Kalman gain; digest: differs from Eq. 229)
  bong-lin-hess-dlr-R  update_ldlrg_bong  (LO-FI: pinv, lstsq, fast_svd = eigh of the Gram matrix)
  bong-mc-ef-dlr-R     update_dlrg_bong   (sample_dlr per draw, empirical Fisher, fast_svd)

with the authors' classification set-up (``models.initialize_mlp_model_cls``): emission mean
softmax(f) for the linearised updates, logits f for Monte Carlo, log-likelihood
-softmax_cross_entropy, emission covariance diag(p) - p p^T + 1e-5 I (the jitter they add to the
singular softmax covariance). Their driver scans the jitted step with no extra work when the
callback is the identity; here the scan carries only the belief (no per-step outputs).

It is used by benchmarks/bench_online.py to time vilab.online against it on the same model, data
and float64 dtype.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

JITTER = 1e-5


class BONGState(NamedTuple):
    mean: jnp.ndarray
    cov: jnp.ndarray


class BONGDLRState(NamedTuple):
    mean: jnp.ndarray
    prec_diag: jnp.ndarray  # (P, 1) as in the authors' code
    prec_lr: jnp.ndarray


# ---------------------------------------------------------------------------------- bong/util.py
def _vec_pinv(v):
    return jnp.where(v != 0, 1 / jnp.array(v), 0)


def fast_svd(M):
    U, S, _ = jnp.linalg.svd(M.T @ M, full_matrices=False, hermitian=True)
    U = M @ (U * _vec_pinv(jnp.sqrt(S)))
    S = jnp.sqrt(S)
    return U, S


def sample_dlr_single(key, W, diag, temperature=1.0):
    key_x, key_eps = jax.random.split(key)
    diag_inv = (1 / diag).ravel()
    diag_inv_mod = diag_inv * temperature
    D, d = W.shape
    Id = jnp.eye(d)
    M = Id + jnp.einsum("ji,j,jk->ik", W, diag_inv, W)
    L = jnp.sqrt(temperature) * jnp.linalg.solve(M.T, jnp.einsum("ji,j->ij", W, diag_inv)).T
    x = jax.random.normal(key_x, (D,)) * jnp.sqrt(diag_inv_mod)
    eps = jax.random.normal(key_eps, (d,))
    x_plus = jnp.einsum("ij,kj,k->i", L, W, x)
    x_plus = x - x_plus + jnp.einsum("ij,j->i", L, eps)
    return x_plus


def sample_dlr(key, W, diag, temperature=1.0, shape=None):
    shape = (1,) if shape is None else shape
    n_elements = int(np.prod(shape))
    keys = jax.random.split(key, n_elements)
    samples = jax.vmap(sample_dlr_single, in_axes=(0, None, None, None))(keys, W, diag, temperature)
    return samples.reshape(*shape, -1)


# ------------------------------------------------------------------------------ bong/src/bong.py
def predict_bong(state, gamma=1.0, Q=0.0):
    mean, cov = state
    return BONGState(gamma * mean, gamma**2 * cov + Q)


def predict_bong_dlr(state, gamma=1.0, q=0.0):
    mean, prec_diag, prec_lr = state
    P, L = prec_lr.shape
    new_mean = gamma * mean
    new_prec_diag = 1 / (gamma**2 / prec_diag + q)
    C = jnp.linalg.pinv(jnp.eye(L) + q * prec_lr.T @ (prec_lr * (new_prec_diag / prec_diag)))
    new_prec_lr = gamma * (new_prec_diag / prec_diag) * prec_lr @ jnp.linalg.cholesky(C)
    return BONGDLRState(new_mean, new_prec_diag, new_prec_lr)


def update_lfg_bong(rng_key, state, x, y, log_likelihood, emission_mean_function, emission_cov_function, *a):
    mean, cov = state
    y_pred = jnp.atleast_1d(emission_mean_function(mean, x))
    H = jnp.atleast_2d(jax.jacrev(emission_mean_function)(mean, x))
    R = jnp.atleast_2d(emission_cov_function(mean, x))
    S = R + (H @ cov @ H.T)
    C = cov @ H.T
    K = jnp.linalg.lstsq(S, C.T)[0].T
    new_mean = mean + K @ (y - y_pred)
    new_cov = cov - K @ S @ K.T
    return BONGState(new_mean, new_cov)


def update_ldg_bong(rng_key, state, x, y, log_likelihood, emission_mean_function, emission_cov_function, *a):
    mean, cov = state
    y_pred = jnp.atleast_1d(emission_mean_function(mean, x))
    H = jnp.atleast_2d(jax.jacrev(emission_mean_function)(mean, x))
    R = jnp.atleast_2d(emission_cov_function(mean, x))
    K = jnp.linalg.lstsq((R + (cov * H) @ H.T).T, cov * H)[0].T
    R_inv = jnp.linalg.lstsq(R, jnp.eye(R.shape[0]))[0]
    new_cov = 1 / (1 / cov + ((H.T @ R_inv) * H.T).sum(-1))
    new_mean = mean + K @ (y - y_pred)
    return BONGState(new_mean, new_cov)


def _svd_project(new_mean, prec_diag, prec_lr_tilde, L):
    """The identical closing lines of update_ldlrg_bong and update_dlrg_bong (rank-L projection)."""
    U, Lamb = fast_svd(prec_lr_tilde)
    U_new, Lamb_new = U[:, :L], Lamb[:L]
    U_extra, Lamb_extra = U[:, L:], Lamb[L:]
    extra_prec_lr = Lamb_extra * U_extra
    new_prec_lr = Lamb_new * U_new
    new_prec_diag = prec_diag + jnp.einsum("ij,ij->i", extra_prec_lr, extra_prec_lr)[:, jnp.newaxis]
    return BONGDLRState(new_mean, new_prec_diag, new_prec_lr)


def update_ldlrg_bong(rng_key, state, x, y, log_likelihood, emission_mean_function, emission_cov_function, *a):
    mean, prec_diag, prec_lr = state
    P, L = prec_lr.shape
    y_pred = jnp.atleast_1d(emission_mean_function(mean, x))
    H = jnp.atleast_2d(jax.jacrev(emission_mean_function)(mean, x))
    R = jnp.atleast_2d(emission_cov_function(mean, x))
    R_chol = jnp.linalg.cholesky(R)
    A = jnp.linalg.lstsq(R_chol, jnp.eye(R.shape[0]))[0].T
    prec_lr_tilde = jnp.hstack([prec_lr, (H.T @ A).reshape(P, -1)])
    _, L_tilde = prec_lr_tilde.shape
    G = jnp.linalg.pinv(jnp.eye(L_tilde) + prec_lr_tilde.T @ (prec_lr_tilde / prec_diag))
    mean_update = (H.T @ A) @ A.T / prec_diag - (prec_lr_tilde / prec_diag @ G) @ (
        (prec_lr_tilde / prec_diag).T @ (H.T @ A) @ A.T)
    new_mean = mean + mean_update @ (y - y_pred)
    return _svd_project(new_mean, prec_diag, prec_lr_tilde, L)


def update_dlrg_bong(rng_key, state, x, y, log_likelihood, emission_mean_function, emission_cov_function,
                     num_samples=10, empirical_fisher=True):
    mean, prec_diag, prec_lr = state
    P, L = prec_lr.shape

    def ll_fn(param):
        emission_mean = emission_mean_function(param, x)
        emission_cov = emission_cov_function(param, x)
        return jnp.mean(log_likelihood(emission_mean, emission_cov, y))

    z = sample_dlr(rng_key, prec_lr, prec_diag, shape=(num_samples,)) + mean  # sample_dlrg_bong
    grads = jax.vmap(jax.grad(ll_fn))(z)
    g = jnp.mean(grads, axis=0).reshape(-1, 1)
    prec_lr_update = 1 / jnp.sqrt(num_samples) * grads.T
    prec_lr_tilde = jnp.hstack([prec_lr, prec_lr_update.reshape(P, -1)])
    _, L_tilde = prec_lr_tilde.shape
    G = jnp.linalg.pinv(jnp.eye(L_tilde) + prec_lr_tilde.T @ (prec_lr_tilde / prec_diag))
    mean_update = g / prec_diag - (prec_lr_tilde / prec_diag @ G) @ ((prec_lr_tilde / prec_diag).T @ g)
    new_mean = mean + mean_update.ravel()
    return _svd_project(new_mean, prec_diag, prec_lr_tilde, L)


# -------------------------------------------------------- the authors' classification set-up
def classification_fns(apply_fn: Callable):
    """(log_likelihood, em_function, em_linpi_function, ec_function) of models.initialize_mlp_model_cls;
    apply_fn(w, x) -> logits."""
    log_likelihood = lambda mean, cov, y: -optax.softmax_cross_entropy(mean, y)  # noqa: E731
    em_function = apply_fn
    em_linpi_function = lambda w, x: jax.nn.softmax(apply_fn(w, x))  # noqa: E731

    def ec_function(w, x):
        ps = em_linpi_function(w, x)
        return jnp.atleast_2d(jnp.diag(ps) - jnp.outer(ps, ps) + JITTER * jnp.eye(len(ps)))

    return log_likelihood, em_function, em_linpi_function, ec_function


def make_step(name: str, apply_fn: Callable, num_samples: int = 10):
    """(init(mu0, sigma0_2, rank) -> state, step(state, x, y, key) -> state) for one of the four
    benchmarked cells; ``step`` is the authors' predict followed by their update."""
    ll, em, em_lin, ec = classification_fns(apply_fn)
    if name == "bong-lin-hess-fc":
        def init(mu0, s2, rank=0):
            return BONGState(mu0, s2 * jnp.eye(len(mu0), dtype=mu0.dtype))

        def step(state, x, y, key):
            return update_lfg_bong(key, predict_bong(state), x, y, ll, em_lin, ec)
    elif name == "bong-lin-hess-diag":
        def init(mu0, s2, rank=0):
            return BONGState(mu0, s2 * jnp.ones(len(mu0), dtype=mu0.dtype))

        def step(state, x, y, key):
            return update_ldg_bong(key, predict_bong(state), x, y, ll, em_lin, ec)
    elif name.startswith("bong-lin-hess-dlr-") or name.startswith("bong-mc-ef-dlr-"):
        def init(mu0, s2, rank):
            P = len(mu0)
            return BONGDLRState(mu0, 1 / s2 * jnp.ones((P, 1), dtype=mu0.dtype), jnp.zeros((P, rank), dtype=mu0.dtype))

        if "lin-hess" in name:
            def step(state, x, y, key):
                return update_ldlrg_bong(key, predict_bong_dlr(state), x, y, ll, em_lin, ec)
        else:
            def step(state, x, y, key):
                return update_dlrg_bong(key, predict_bong_dlr(state), x, y, ll, em, ec, num_samples, True)
    else:
        raise ValueError(f"No port of the authors' update for {name!r}.")
    return init, step
