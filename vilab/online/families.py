"""Gaussian variational families of BONG, their linear algebra (Jones, Chang & Murphy Sec. 4.7) and their
predict step (Sec. 3).

Belief states (pytrees):

* :class:`FC` (mu, Sigma): full covariance. Used by "fc" (natural parameters
  psi = (Sigma^{-1} mu, -Sigma^{-1}/2)) and "fc_mom" (psi = (mu, Sigma)); the update equations
  differ, the stored state does not.
* :class:`Diag` (mu, s2): diagonal covariance diag(sigma^2) ("diag", "diag_mom").
* :class:`DLR` (mu, ups, W): precision Sigma^{-1} = diag(ups) + W W^T ("dlr-R", Eq. 281).

Each belief is a state of a member of the Gaussian-family protocol (:mod:`vilab.family.dense`,
:func:`family_of`): FC and Diag of :class:`vilab.family.dense.MomentFamily`, DLR of
:class:`vilab.family.lowrank.DLRPrecFamily`. Sampling, marginal variances, dense covariance and
precision are those members' methods; the DLR linear algebra (Woodbury solves, Eq. 305, the rank-R
projection of Eqs. 306-308 through the small Gram matrix, the exact DLR sampler, digest [ours]) lives in
:mod:`vilab.family.lowrank` and is re-exported here.

Predict step. Alg. 1 of the paper alternates psi_{t|t-1} = predict(psi_{t-1}) and psi_t = update(psi_{t|t-1}, x_t, y_t).
The paper's experiments assume static parameters, so its predict step (Alg. 2) is the identity. For a
non-stationary stream the paper (Sec. 3, digest Sec. 1.1) names the Gaussian random walk

    theta_t ~ N(gamma theta_{t-1}, Q):   mu_{t|t-1} = gamma mu_{t-1},   Sigma_{t|t-1} = gamma^2 Sigma_{t-1} + Q,

which is also what the authors' code implements ([repo] petergchang/bong, bong/src/bong.py, predict_bong and
predict_bong_dlr). gamma = 1, Q = 0 is the static case. The step for each belief family:

* :func:`predict_fc` (FC, used by "fc" and "fc_mom"): the equation above, exact.
* :func:`predict_diag` (Diag, "diag" and "diag_mom"): the same with a diagonal Q, exact (the predicted
  covariance gamma^2 diag(s2) + diag(Q) is diagonal again).
* :func:`predict_dlr` (DLR, precision diag(Upsilon) + W W^T): the predict step of LoFi (Chang, Duran-Martin,
  Shestopaloff, Jones & Murphy 2023, "Low-rank extended Kalman filtering for online learning of neural networks
  from streaming data"), as the BONG authors' predict_bong_dlr implements it for Q = q I. It is exact, and stays
  exact for any diagonal Q (Woodbury; derivation in its docstring, digest [ours], checked against the dense
  (gamma^2 Sigma + Q)^{-1} in tests/test_online_predict.py). A non-diagonal Q is refused for DLR beliefs: the
  predicted precision is then not diagonal plus rank R in general, and no standard DLR form exists.

:func:`dynamics_hyper` checks (gamma, Q) for a belief and returns them in the shape the runner keeps in
``state.hyper`` (so that moving gamma or Q does not recompile the loop); :func:`predict` dispatches.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..core.checks import integer, positive, real_array, real_scalar
from ..core.keys import check_key
from ..family.dense import DLRPrecFamily, MomentFamily
from ..family.lowrank import (  # noqa: F401  (re-exports)
    chol_inv,
    dlr_noise_map,
    dlr_prec_apply,
    dlr_project,
    dlr_solve,
    sym,
    woodbury_factor,
)

__all__ = [
    "FC", "Diag", "DLR", "init_belief", "marginal_variances", "mean_of", "sample", "dense_cov",
    "dense_prec", "dlr_solve", "dlr_prec_apply", "dlr_project", "dlr_noise_map", "sym", "family_of",
    "Dynamics", "dynamics_hyper", "describe_dynamics", "predict", "predict_fc", "predict_diag", "predict_dlr",
]


class FC(NamedTuple):
    """Full-covariance Gaussian N(mu, Sigma)."""

    mu: jnp.ndarray
    Sigma: jnp.ndarray


class Diag(NamedTuple):
    """Diagonal Gaussian N(mu, diag(s2)); s2 = sigma^2 (variances)."""

    mu: jnp.ndarray
    s2: jnp.ndarray


class DLR(NamedTuple):
    """Diagonal-plus-low-rank precision N(mu, (diag(ups) + W W^T)^{-1}) (Eq. 281)."""

    mu: jnp.ndarray
    ups: jnp.ndarray
    W: jnp.ndarray


def init_belief(family: str, mu0, sigma0_2: float, rank: int = 0, key=None, w0_scale: float = 0.0):
    """Prior N(mu0, sigma0^2 I) in the given family (paper Sec. 5: Sigma_0 = sigma_0^2 I).

    For "dlr" the precision is diag(ups) + W W^T with W_0 = 0 unless ``w0_scale > 0``: then
    W_0 has N(0, w0_scale^2 / (R sigma_0^2)) entries and ups_0 = 1/sigma_0^2 - rowsum(W_0^2),
    so diag(Sigma_0^{-1}) is still 1/sigma_0^2. A nonzero W_0 matters for bog/bbb-dlr, whose
    W update is multiplicative (Eqs. 333, 343: W_0 = 0 keeps W = 0; digest [ours]).
    """
    if not isinstance(mu0, jax.core.Tracer):
        m = real_array(mu0, "The prior mean mu0", ndim=1)
        mu0 = mu0 if hasattr(mu0, "dtype") and jnp.issubdtype(mu0.dtype, jnp.floating) else m
    mu0 = jnp.asarray(mu0)
    P = mu0.shape[0]
    s2 = positive(sigma0_2, "The prior variance sigma_0^2")
    w0_scale = real_scalar(w0_scale, "The scale w0_scale of W_0")
    if family == "dlr":
        rank = integer(rank, "The DLR rank R", minimum=1)
    dt = mu0.dtype
    if family in ("fc", "fc_mom"):
        return FC(mu0, s2 * jnp.eye(P, dtype=dt))
    if family in ("diag", "diag_mom"):
        return Diag(mu0, jnp.full((P,), s2, dt))
    if family == "dlr":
        if w0_scale > 0:
            if key is None:
                raise ValueError("A random W_0 needs a PRNG key.")
            W = jax.random.normal(key, (P, rank), dt) * (w0_scale / jnp.sqrt(rank * s2))
        else:
            W = jnp.zeros((P, rank), dt)
        ups = 1.0 / s2 - jnp.sum(W**2, axis=1)
        return DLR(mu0, ups, W)
    raise ValueError(f"Unknown family {family!r}; use fc, fc_mom, diag, diag_mom or dlr.")


def mean_of(b):
    return b.mu


def family_of(b):
    """The member of the Gaussian-family protocol whose state the belief b is (b itself is its ``q``):
    FC -> MomentFamily(P), Diag -> MomentFamily(P, diagonal=True), DLR -> DLRPrecFamily(P, R)."""
    if not isinstance(b, (FC, Diag, DLR)):
        raise ValueError(f"Not a BONG belief (FC, Diag or DLR): {type(b).__name__}.")
    P = b.mu.shape[0]
    if isinstance(b, DLR):
        return DLRPrecFamily(P, b.W.shape[1])
    return MomentFamily(P, isinstance(b, Diag))


def marginal_variances(b):
    """diag(Sigma) for any family (DLR: exact, via Woodbury, O(R^2 P)): the family's ``variances``."""
    return family_of(b).variances(b)


def dense_cov(b):
    """The P x P covariance (for tests and small models)."""
    return family_of(b).covariance(b)


def dense_prec(b):
    """The P x P precision (for tests and small models)."""
    return family_of(b).precision(b)


def sample(key, b, n: int):
    """n draws from the belief, (n, P): the family's ``sample``.

    FC: mu + eps chol(sym Sigma)^T (NaN if Sigma is not PD, which the runner reports as divergence).
    DLR: exact sampler (digest [ours]): with A = Ups^{-1/2} W = U_A S V_A^T,
    theta = mu + Ups^{-1/2} (eps + U_A((1 + S^2)^{-1/2} - 1) U_A^T eps), whose covariance is
    (Ups + W W^T)^{-1}; U_A S comes from the R x R Gram matrix A^T A.
    """
    fam = family_of(b)
    if not isinstance(n, jax.core.Tracer):
        check_key(key, "Sampling a belief")
        n = integer(n, "The number of draws n", minimum=1, maximum=2**31 - 1)
    return fam.sample(key, b, n)


# ---------------------------------------------------------------------------------------------
# Predict step: theta_t ~ N(gamma theta_{t-1}, Q) (Jones, Chang & Murphy Sec. 3; Alg. 1's predict)


class Dynamics(NamedTuple):
    """theta_t ~ N(gamma theta_{t-1}, Q) (Jones, Chang & Murphy Sec. 3). Q: a number q >= 0 (Q = q I), a
    vector of P variances >= 0 (diagonal Q) or a P x P positive semi-definite matrix (full-covariance beliefs
    only). The default (gamma = 1, Q = 0) is the paper's static model."""

    gamma: float = 1.0
    Q: object = 0.0


def predict_fc(b: FC, gamma, Q) -> FC:
    """Jones, Chang & Murphy Sec. 3 (digest Sec. 1.1): mu_{t|t-1} = gamma mu_{t-1},
    Sigma_{t|t-1} = gamma^2 Sigma_{t-1} + Q, with Q a P x P matrix. Exact: it is the law of
    gamma theta + N(0, Q) for theta ~ N(mu, Sigma). gamma = 1, Q = 0 returns the same numbers."""
    return FC(gamma * b.mu, gamma**2 * b.Sigma + Q)


def predict_diag(b: Diag, gamma, q) -> Diag:
    """Jones, Chang & Murphy Sec. 3 for a diagonal belief: mu_{t|t-1} = gamma mu_{t-1},
    sigma^2_{t|t-1} = gamma^2 sigma^2_{t-1} + q, with q = diag(Q) a vector (Q must be diagonal). Exact: the
    same numbers as :func:`predict_fc` on the dense diagonal covariance."""
    return Diag(gamma * b.mu, gamma**2 * b.s2 + q)


def predict_dlr(b: DLR, gamma, q) -> DLR:
    """The predict step of LoFi (Chang, Duran-Martin, Shestopaloff, Jones & Murphy 2023; the BONG authors'
    predict_bong_dlr, [repo]) for a diagonal Q = diag(q), q a vector of P variances (or one number, Q = q I):

        mu_{t|t-1} = gamma mu_{t-1}
        Upsilon_{t|t-1} = Upsilon_{t-1} / (gamma^2 + q Upsilon_{t-1})          (= 1 / (gamma^2 / Upsilon + q))
        W_{t|t-1} W_{t|t-1}^T = gamma^2 D W (I_R + W^T diag(q) D W)^{-1} W^T D,  D = diag(1 / (gamma^2 + q Upsilon_{t-1}))

    Exact (digest [ours]): with Lambda = Upsilon + W W^T, the predicted precision is
    (gamma^2 Lambda^{-1} + Q)^{-1} = (gamma^2 I + Lambda Q)^{-1} Lambda, and Woodbury on
    gamma^2 I + Lambda Q = D^{-1} + W (Q W)^T, with W^T Q D W = K^{-1} - I and I - Q D Upsilon = gamma^2 D, gives
    Upsilon_{t|t-1} + gamma^2 D W K W^T D, K = (I + W^T Q D W)^{-1}: diagonal plus rank R again, for ANY diagonal
    Q (LoFi and the authors' code state it for Q = q I). A non-diagonal Q has no such form, hence it is refused
    (:func:`dynamics_hyper`). Here W_{t|t-1} = gamma D W L^{-T} with L L^T = I + W^T Q D W (the authors take
    W chol(K), the same precision up to an R x R rotation of W). Written as Upsilon / (gamma^2 + q Upsilon) so that
    gamma = 1, q = 0 returns the same numbers.
    """
    d = 1.0 / (gamma**2 + q * b.ups)  # D = Upsilon_{t|t-1} / Upsilon_{t-1}
    ups = b.ups * d
    DW = b.W * d[:, None]
    R = DW.shape[1]
    M = jnp.eye(R, dtype=DW.dtype) + b.W.T @ (DW * jnp.broadcast_to(q, d.shape)[:, None])
    L = jnp.linalg.cholesky(0.5 * (M + M.T))
    Wn = jax.scipy.linalg.solve_triangular(L, (gamma * DW).T, lower=True).T  # gamma D W L^{-T}
    return DLR(gamma * b.mu, ups, Wn)


def predict(b, gamma, Q):
    """psi_{t|t-1} = predict(psi_{t-1}) of Jones, Chang & Murphy Alg. 1 for the random walk
    theta_t ~ N(gamma theta_{t-1}, Q) (Sec. 3): :func:`predict_fc`, :func:`predict_diag` or
    :func:`predict_dlr` by the belief's family. Q in the shape :func:`dynamics_hyper` gives for that family
    (FC: P x P matrix; Diag and DLR: P-vector).

    Called with concrete gamma and Q (not inside a compiled loop), they are first checked and shaped by
    :func:`dynamics_hyper`, the check of ``stream(dynamics=)``: Q may then be any form it takes (a number, a
    vector of variances or a matrix), and a NaN gamma or a negative or non-PSD Q raises ValueError. Under a
    JAX trace (the runner's step) they are used as given."""
    if not any(isinstance(v, jax.core.Tracer) for v in jax.tree_util.tree_leaves((gamma, Q))):
        hyper = dynamics_hyper(b, (gamma, Q))
        gamma, Q = hyper["gamma"], hyper["Q"]
    if isinstance(b, FC):
        return predict_fc(b, gamma, Q)
    if isinstance(b, Diag):
        return predict_diag(b, gamma, Q)
    if isinstance(b, DLR):
        return predict_dlr(b, gamma, Q)
    raise ValueError(f"Not a BONG belief (FC, Diag or DLR): {type(b).__name__}.")


def dynamics_hyper(belief, dynamics) -> dict:
    """Check the dynamics (gamma, Q) for ``belief`` and return {"gamma": scalar, "Q": array} in the belief's
    dtype, Q shaped for its family (FC: P x P; Diag and DLR: P variances), ready for ``state.hyper``.

    ``dynamics``: a :class:`Dynamics`, a pair (gamma, Q) or a dict {"gamma": ..., "Q": ...}. Raises
    ValueError, in a sentence, for: gamma not a finite number; Q negative, non-finite, of the wrong size, not
    symmetric or not positive semi-definite; an off-diagonal Q for a diagonal or a diagonal-plus-low-rank belief
    (its predicted covariance or precision would leave the family); gamma = 0 with a Q that is not positive
    definite (the predicted covariance would be singular).
    """
    if isinstance(dynamics, dict):
        unknown = set(dynamics) - {"gamma", "Q"}
        if unknown:
            raise ValueError(f"The dynamics take gamma and Q only; got {sorted(map(str, unknown))}.")
        dynamics = Dynamics(dynamics.get("gamma", 1.0), dynamics.get("Q", 0.0))
    try:
        gamma, Q = dynamics
    except (TypeError, ValueError) as exc:
        raise ValueError("Give the dynamics as (gamma, Q): theta_t ~ N(gamma theta_{t-1}, Q).") from exc
    if isinstance(belief, (FC, Diag, DLR)):
        P, dt = int(belief.mu.shape[0]), belief.mu.dtype
    else:
        raise ValueError(f"Not a BONG belief (FC, Diag or DLR): {type(belief).__name__}.")
    g = real_scalar(gamma, "The dynamics factor gamma")
    Qa = real_array(Q, "The process noise Q")
    if Qa.ndim == 0:
        Qa = Qa.reshape(())
        if Qa < 0:
            raise ValueError(f"The process noise Q must be >= 0 (it is a variance); got {float(Qa):g}.")
    elif Qa.ndim == 1:
        if Qa.shape[0] != P:
            raise ValueError(f"The process noise Q as a vector needs one variance per parameter ({P}); got {Qa.shape[0]}.")
        if np.any(Qa < 0):
            raise ValueError("The process noise Q must be >= 0 (its entries are variances); it has a negative entry.")
    elif Qa.ndim == 2:
        if Qa.shape != (P, P):
            raise ValueError(f"The process noise Q as a matrix must be {P} x {P}; got {Qa.shape[0]} x {Qa.shape[1]}.")
        if not np.allclose(Qa, Qa.T, rtol=1e-12, atol=1e-12 * max(1.0, float(np.max(np.abs(Qa))))):
            raise ValueError("The process noise Q must be symmetric (it is a covariance matrix).")
        Qa = 0.5 * (Qa + Qa.T)
        lo = float(np.linalg.eigvalsh(Qa)[0]) if P else 0.0
        if lo < -1e-12 * max(1.0, float(np.max(np.abs(Qa)))):
            raise ValueError(f"The process noise Q must be positive semi-definite (a covariance); its smallest "
                             f"eigenvalue is {lo:.3g}.")
    else:
        raise ValueError(f"The process noise Q must be a number, a vector or a matrix; got shape {Qa.shape}.")

    if isinstance(belief, (Diag, DLR)):
        if Qa.ndim == 2:
            if np.count_nonzero(Qa - np.diag(np.diag(Qa))):
                if isinstance(belief, Diag):
                    raise ValueError("A diagonal belief takes a diagonal process noise only: off-diagonal entries of Q "
                                     "would make the predicted covariance non-diagonal. Give Q as a vector of variances.")
                raise ValueError("A diagonal-plus-low-rank belief takes a diagonal process noise only: with off-diagonal "
                                 "entries in Q the predicted precision is no longer diagonal plus low rank. Give Q as "
                                 "one number or a vector of variances.")
            Qa = np.diag(Qa)
        Qv = np.broadcast_to(Qa, (P,)).astype(np.float64)
        if g == 0 and np.any(Qv <= 0):
            raise ValueError("gamma = 0 forgets the belief, so every variance in Q must then be positive; otherwise "
                             "the predicted covariance is singular.")
        return {"gamma": jnp.asarray(g, dt), "Q": jnp.asarray(Qv, dt)}

    Qm = Qa * np.eye(P) if Qa.ndim == 0 else (np.diag(Qa) if Qa.ndim == 1 else Qa)
    if g == 0 and (P and float(np.linalg.eigvalsh(Qm)[0]) <= 0):
        raise ValueError("gamma = 0 forgets the belief, so Q must then be positive definite; otherwise the predicted "
                         "covariance is singular.")
    return {"gamma": jnp.asarray(g, dt), "Q": jnp.asarray(Qm, dt)}


def describe_dynamics(hyper: dict) -> dict:
    """{"gamma": float, "Q": float or list} of the dynamics in ``hyper``, for a trace's settings."""
    Q = np.asarray(hyper["Q"])
    if Q.ndim == 2 and np.count_nonzero(Q - np.diag(np.diag(Q))) == 0:
        Q = np.diag(Q)
    if Q.ndim == 1 and Q.size and np.ptp(Q) == 0:
        Q = Q[0]
    return {"gamma": float(hyper["gamma"]), "Q": float(Q) if np.ndim(Q) == 0 else Q.tolist()}

