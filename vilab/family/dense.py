"""Gaussian families q = N(mu, Sigma): the one protocol every method uses, and its members.

The protocol (:class:`GaussianFamilyProtocol`, a ``typing.Protocol``; every member is a small hashable
NamedTuple, so it can key compiled programs, and every method is a pure, jit-able function of ``q``,
the member's parameters, a flat vector lambda or, where noted, the member's own tuple):

* ``mean(q)``, ``variances(q)`` (the marginal variances diag(Sigma));
* ``sample(key, q, n)`` -> (n, d) draws, ``transform(q, z)`` = mu + B z with B B^T = Sigma;
* ``logpdf(q, theta)``, ``half_logdet(q)`` = 1/2 log|Sigma|, ``entropy(q)``;
* ``solve(q, b)`` = Sigma^{-1} b (always the precision applied to b; the precision-factor members
  also have ``cov_apply(q, b)`` = Sigma b);
* ``validity(q)`` -> a :data:`vilab.core.CODES` step code: 0 fine, 2 non-finite, 3 covariance not
  positive definite, 5 a Cholesky factor with a zero on its diagonal;
* ``pack`` / ``unpack`` / ``size`` (the flat storage), ``covariance(q)`` and ``precision(q)`` as
  dense d x d matrices (small d, tests), ``gaussian(q)`` (the same Gaussian as a :mod:`vilab.family.gaussian`
  parameterization: natural / expectation parameters by :func:`vilab.family.gaussian.convert`) and
  ``kl(q, other)`` via :func:`vilab.family.gaussian.kl`.

Members:

=================================================  =====================================================
:class:`GaussianFamily` (d, param, diagonal)       dense or diagonal Cholesky of Sigma / of Sigma^-1 /
                                                   Sigma itself (Tan (2025)); below. Also natural
                                                   gradients and Tan's Thm 2 estimators.
:class:`~vilab.family.block.BlockPrecFamily`       Sigma^-1 = T T^T, T an arrow (ell = 0) or banded
(Structure(n, r, g, ell))                          (ell = 1) block factor (Tan (2025) eq. 4, Chen, Nott &
                                                   Tan Sec. 4); O(n) solves (vilab.hierarchical's q)
:class:`~vilab.family.lowrank.DLRPrecFamily`       Sigma^-1 = diag(ups) + W W^T (BONG's dlr-R, Jones,
(d, rank)                                          Chang & Murphy Eq. 281); Woodbury, exact sampler
:class:`MomentFamily` (d, diagonal)                (mu, Sigma) or (mu, diag s2) as BONG stores them
                                                   (vilab.online's FC / Diag beliefs): Sigma symmetrised
                                                   before it is factored
=================================================  =====================================================

GaussianFamily
--------------

A :class:`GaussianFamily` says how a flat vector of free variational parameters lambda (Tan (2025)
Sec. 6: "l_lambda = length of lambda") stores the mean and a factor of the covariance:

==============  ===================================  ==========================================
``param``       dense (``diagonal=False``)           diagonal (``diagonal=True``)
==============  ===================================  ==========================================
``"chol_cov"``  (mu, vech C), Sigma = C C^T          (mu, c), Sigma = diag(c^2)
                (Tan Thm 1(i))
``"chol_prec"`` (mu, vech T), Sigma^-1 = T T^T       (mu, t), Sigma = diag(1 / t^2)
                (Tan Thm 1(ii))
``"kappa"``     (mu, vech Sigma) (Tan Table 1)       (mu, s), Sigma = diag(s)
==============  ===================================  ==========================================

``vech`` stacks the lower triangle column by column (:func:`vilab.family.linalg.vech`). The family is a
small hashable NamedTuple (d, param, diagonal), so it can key compiled programs; every method is a
pure, jit-able function of lambda:

* pack / unpack, size, diag_index: the storage;
* mean, covariance, variances, precision, solve, sqrt / transform / sample, logpdf, half_logdet,
  entropy, kl (via :func:`vilab.family.gaussian.kl`): the distribution;
* natural(lam, egrad): the natural gradient F_lambda^-1 egrad in closed form (Tan (2025) Thm 1,
  Table 1, Sec. 5 diagonal forms), built on :mod:`vilab.family.natgrad`;
* validity(lam): a :data:`vilab.core.CODES` step code (0 fine, 2 non-finite, 3 covariance not
  positive definite, 5 Cholesky factor singular);
* thm2_gradient / estimate: Tan (2025) Thm 2's unbiased single-sample estimators of the Euclidean
  ELBO gradient (first order G1 / G2, second order F1 / F2), written once here.

``vilab.algorithms.optim.Layout`` is this class (its historical name).
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import cho_solve, solve_triangular

from . import gaussian, natgrad
from ..core.algorithm import range_code, range_code_factor
from .linalg import symmetrize as _sym
from .linalg import unvech, vech

__all__ = ["GaussianFamily", "PARAMS", "OK", "NONFINITE", "NOT_PD", "SINGULAR_FACTOR", "ORDERS",
           "GaussianFamilyProtocol", "MomentFamily", "BlockPrecFamily", "DLRPrecFamily", "Structure", "BlockFactor"]

PARAMS = ("chol_cov", "chol_prec", "kappa")
ORDERS = ("first", "second")

#: validity codes (the shared step codes of vilab.core.CODES)
OK, NONFINITE, NOT_PD, SINGULAR_FACTOR = 0, 2, 3, 5

_LOG2PI = math.log(2.0 * math.pi)


@runtime_checkable
class GaussianFamilyProtocol(Protocol):
    """What every Gaussian family offers (see the module docstring); ``q`` is the member's parameters."""

    @property
    def d(self) -> int: ...

    @property
    def size(self) -> int: ...

    def mean(self, q): ...

    def variances(self, q): ...

    def covariance(self, q): ...

    def precision(self, q): ...

    def solve(self, q, b): ...

    def transform(self, q, z): ...

    def sample(self, key, q, n: int): ...

    def logpdf(self, q, theta): ...

    def half_logdet(self, q): ...

    def entropy(self, q): ...

    def validity(self, q): ...

    def gaussian(self, q): ...

    def kl(self, q, other): ...


def _solve_lower(T, b):
    return solve_triangular(T, b, lower=True)


def _solve_upper_T(T, b):
    """T^{-T} b for lower-triangular T."""
    return solve_triangular(T.T, b, lower=False)


class GaussianFamily(NamedTuple):
    """A Gaussian family stored as a flat vector lambda = (mu, factor); see the module docstring.

    d : dimension; param : "chol_cov" (factor C), "chol_prec" (factor T) or "kappa" (factor Sigma);
    diagonal : keep only the factor's diagonal (l_lambda = 2d, otherwise d + d(d+1)/2).
    """

    d: int
    param: str = "chol_cov"
    diagonal: bool = False

    # ------------------------------------------------------------------------------ storage
    @property
    def size(self) -> int:
        """l_lambda, the number of free variational parameters (Tan Table 5)."""
        return 2 * self.d if self.diagonal else self.d + self.d * (self.d + 1) // 2

    def check(self) -> "GaussianFamily":
        """The family itself, after checking its settings (ValueError with a sentence otherwise)."""
        if self.param not in PARAMS:
            raise ValueError(f"The parameterization must be one of {', '.join(PARAMS)}; got {self.param!r}.")
        if int(self.d) < 1:
            raise ValueError(f"The dimension d must be at least 1; got {self.d}.")
        return self

    def unpack(self, lam):
        """(mu, factor); the factor is a (d,) vector of diagonal entries when ``diagonal``."""
        mu, rest = lam[: self.d], lam[self.d :]
        if self.diagonal:
            return mu, rest
        return mu, unvech(rest, symmetric=(self.param == "kappa"))

    def pack(self, mu, factor):
        """The flat vector of (mu, factor) (``factor`` a matrix or, when diagonal, a vector)."""
        mu = jnp.asarray(mu, dtype=jnp.float64)
        factor = jnp.asarray(factor, dtype=jnp.float64)
        if self.diagonal:
            f = jnp.diagonal(factor) if factor.ndim == 2 else factor
        else:
            f = vech(factor if factor.ndim == 2 else jnp.diag(factor))
        return jnp.concatenate([mu, f])

    def diag_index(self) -> np.ndarray:
        """Positions in lambda of the factor's diagonal entries (vech is column-major)."""
        d = self.d
        if self.diagonal:
            return d + np.arange(d)
        offsets = np.concatenate([[0], np.cumsum(np.arange(d, 0, -1))[:-1]])
        return d + offsets

    # ------------------------------------------------------------------------ distribution
    def mean(self, lam):
        return lam[: self.d]

    def variances(self, lam):
        """diag(Sigma), a (d,) vector."""
        if self.diagonal:
            F = lam[self.d :]
            return {"chol_cov": F**2, "chol_prec": 1.0 / F**2, "kappa": F}[self.param]
        return jnp.diagonal(self.covariance(lam))

    def covariance(self, lam):
        """Sigma as a (d, d) matrix (for chol_prec through a triangular inverse of T, not of Sigma^-1)."""
        mu, F = self.unpack(lam)
        if self.diagonal:
            return jnp.diag(self.variances(lam))
        if self.param == "chol_cov":
            return F @ F.T
        if self.param == "kappa":
            return F
        Ti = _solve_lower(F, jnp.eye(self.d, dtype=F.dtype))
        return Ti.T @ Ti

    def variance_vector(self, lam):
        """diag(Sigma) for a diagonal family, else the full matrix (what a tractable ELBO takes)."""
        return self.variances(lam) if self.diagonal else self.covariance(lam)

    def precision(self, lam):
        """Sigma^-1 as a (d, d) matrix."""
        mu, F = self.unpack(lam)
        if self.diagonal:
            return jnp.diag(1.0 / self.variances(lam))
        if self.param == "chol_prec":
            return F @ F.T
        L = self._chol_sigma(F)
        return cho_solve((L, True), jnp.eye(self.d, dtype=L.dtype))

    def solve(self, lam, b):
        """Sigma^-1 b (b of shape (d,) or (d, k)) with triangular solves on the stored factor."""
        mu, F = self.unpack(lam)
        if self.diagonal:
            v = self.variances(lam)
            return b / (v if jnp.ndim(b) == 1 else v[:, None])
        if self.param == "chol_prec":
            return F @ (F.T @ b)
        L = self._chol_sigma(F)
        return cho_solve((L, True), b)

    def _chol_sigma(self, F):
        """A lower Cholesky factor of Sigma from a dense factor (C itself, or chol of kappa's Sigma)."""
        return F if self.param == "chol_cov" else jnp.linalg.cholesky(F)

    def transform(self, lam, z):
        """theta = mu + B z with B B^T = Sigma: C z, T^{-T} z (a triangular solve, no inverse of an
        ill-conditioned Sigma is formed) or chol(Sigma) z for kappa. z has shape (d,) or (n, d)."""
        if jnp.ndim(z) == 2:
            return jax.vmap(lambda zz: self.transform(lam, zz))(z)
        mu, F = self.unpack(lam)
        if self.param == "chol_cov":
            return mu + (F * z if self.diagonal else F @ z)
        if self.param == "chol_prec":
            return mu + (z / F if self.diagonal else _solve_upper_T(F, z))
        Lc = jnp.sqrt(F) if self.diagonal else jnp.linalg.cholesky(F)
        return mu + (Lc * z if self.diagonal else Lc @ z)

    def sqrt(self, lam):
        """B with B B^T = Sigma as a (d, d) matrix (C, T^{-T} or chol(Sigma)); see :meth:`transform`."""
        return self.transform(jnp.concatenate([jnp.zeros(self.d, lam.dtype), lam[self.d :]]),
                              jnp.eye(self.d, dtype=lam.dtype)).T

    def whiten(self, lam, theta):
        """z = B^{-1} (theta - mu), the inverse of :meth:`transform` (theta of shape (d,) or (n, d))."""
        if jnp.ndim(theta) == 2:
            return jax.vmap(lambda t: self.whiten(lam, t))(theta)
        mu, F = self.unpack(lam)
        r = theta - mu
        if self.param == "chol_cov":
            return r / F if self.diagonal else _solve_lower(F, r)
        if self.param == "chol_prec":
            return r * F if self.diagonal else F.T @ r
        return r / jnp.sqrt(F) if self.diagonal else _solve_lower(jnp.linalg.cholesky(F), r)

    def sample(self, key, lam, n: int):
        """n draws theta = mu + B z, z ~ N(0, I): shape (n, d)."""
        if isinstance(n, (int, np.integer)) and n < 1:
            raise ValueError(f"The number of draws n must be at least 1; got {n}.")
        z = jax.random.normal(key, (n, self.d), dtype=jnp.float64)
        return self.transform(lam, z)

    def half_logdet(self, lam):
        """1/2 log|Sigma| (for the entropy of q)."""
        mu, F = self.unpack(lam)
        if self.param == "kappa":
            if self.diagonal:
                return 0.5 * jnp.sum(jnp.log(F))
            return 0.5 * jnp.linalg.slogdet(F)[1]
        dg = F if self.diagonal else jnp.diagonal(F)
        s = jnp.sum(jnp.log(jnp.abs(dg)))
        return s if self.param == "chol_cov" else -s

    def entropy(self, lam):
        """Entropy of q = N(mu, Sigma): d/2 (1 + log 2 pi) + 1/2 log|Sigma|."""
        return 0.5 * self.d * (1.0 + _LOG2PI) + self.half_logdet(lam)

    def log_q_whitened(self, lam, z):
        """log q(theta) at theta = mu + B z: -d/2 log 2 pi - 1/2 log|Sigma| - z^T z / 2."""
        return -0.5 * self.d * _LOG2PI - self.half_logdet(lam) - 0.5 * jnp.sum(z**2, axis=-1)

    def logpdf(self, lam, theta):
        """log q_lambda(theta) for theta of shape (d,) or (n, d)."""
        return self.log_q_whitened(lam, self.whiten(lam, theta))

    def gaussian(self, lam):
        """The same Gaussian as a :mod:`vilab.family.gaussian` parameterization (CholCov, CholPrec, MeanCov
        or MeanField)."""
        mu, F = self.unpack(lam)
        if self.diagonal:
            return gaussian.MeanField(mu, jnp.sqrt(self.variances(lam)))
        if self.param == "chol_cov":
            return gaussian.CholCov(mu, F)
        if self.param == "chol_prec":
            return gaussian.CholPrec(mu, F)
        return gaussian.MeanCov(mu, F)

    def kl(self, lam, other):
        """KL(q_lambda || other), ``other`` a :mod:`vilab.family.gaussian` parameterization or a lambda of this
        family (closed form, :func:`vilab.family.gaussian.kl`)."""
        if not isinstance(other, tuple):
            other = self.gaussian(jnp.asarray(other))
        return gaussian.kl(self.gaussian(lam), other)

    # ------------------------------------------------------------------------ validity
    def validity(self, lam):
        """A vilab.core step code for lambda: 0 if it defines a Gaussian, 2 if it is not finite, 3 if
        kappa's Sigma is not positive definite, 5 if a Cholesky factor has a zero on its diagonal,
        7 / 8 if Sigma left the sane range (collapsed: an eigenvalue below 1e-150 or, dense, condition
        number above 1e16; exploded: an eigenvalue above 1e150; :func:`vilab.core.algorithm.range_code`),
        read off the diagonal of the Cholesky factor the check holds anyway (no decomposition more)."""
        finite = jnp.all(jnp.isfinite(lam))
        mu, F = self.unpack(lam)
        if self.param == "kappa":
            if self.diagonal or self.d == 1:
                s = F if self.diagonal else jnp.diagonal(F)
                pd = jnp.all(s > 0)
                rng = range_code(jnp.min(s), jnp.max(s), 1.0)
            else:
                L = jnp.linalg.cholesky(F)
                pd = jnp.all(jnp.isfinite(L))
                rng = range_code_factor(jnp.where(pd, jnp.diagonal(L), 1.0))
            bad = NOT_PD
        else:
            dg = F if self.diagonal else jnp.diagonal(F)
            pd = jnp.all(jnp.abs(dg) > 0)
            bad = SINGULAR_FACTOR
            safe = jnp.where(pd & finite, dg, 1.0)
            prec = self.param == "chol_prec"
            if self.diagonal:  # Sigma = diag(dg^2) or diag(1 / dg^2): exact, no condition-number limit
                a, b = jnp.min(jnp.abs(safe)), jnp.max(jnp.abs(safe))
                rng = range_code(1 / (b * b), 1 / (a * a), 1.0) if prec else range_code(a * a, b * b, 1.0)
            else:
                rng = range_code_factor(safe, precision=prec)
        return jnp.where(finite, jnp.where(pd, rng, bad), NONFINITE)

    # ------------------------------------------------------------------ natural gradients
    def from_matrices(self, g_mu, G):
        """Flat Euclidean gradient from grad_mu and the factor's gradient matrix G.

        Cholesky factors: (g_mu, vech(tril G)) (Tan Sec. 1, grad_{vech C} L = vech(G)).
        kappa: G = grad_Sigma L (symmetric) and grad_{vech Sigma} L = D^T vec(G)
        = vech(2 G - dg(G)) (Tan Sec. 1). Diagonal families take diag(G) (or G if a vector).
        """
        if self.diagonal:
            g = jnp.diagonal(G) if G.ndim == 2 else G
            return jnp.concatenate([g_mu, g])
        if self.param == "kappa":
            G = 2.0 * G - jnp.diag(jnp.diagonal(G))
        return jnp.concatenate([g_mu, vech(G)])

    def natural(self, lam, egrad):
        """Natural gradient F_lambda^{-1} egrad for a flat Euclidean gradient ``egrad``.

        chol_cov: Tan (2025) Thm 1(i); chol_prec: Thm 1(ii) (:func:`vilab.family.natgrad.natural_grad_chol_cov`,
        :func:`~vilab.family.natgrad.natural_grad_chol_prec`); kappa: Table 1 row kappa (Sigma g_mu,
        2 vech(Sigma G Sigma)), G the symmetric grad_Sigma L (:func:`~vilab.family.natgrad.natural_grad_mean_cov`).
        Diagonal factors (Sec. 5, "diagonal C"): (c^2 g_mu, c^2 g_c / 2) and (g_mu / t^2, t^2 g_t / 2);
        kappa: (s g_mu, 2 s^2 g_s).
        """
        d = self.d
        mu, F = self.unpack(lam)
        g_mu, g_f = egrad[:d], egrad[d:]
        if self.diagonal:
            if self.param == "chol_cov":
                return jnp.concatenate([F**2 * g_mu, 0.5 * F**2 * g_f])
            if self.param == "chol_prec":
                return jnp.concatenate([g_mu / F**2, 0.5 * F**2 * g_f])
            return jnp.concatenate([F * g_mu, 2.0 * F**2 * g_f])
        G = unvech(g_f)
        if self.param == "kappa":
            Gs = 0.5 * (G + G.T)  # off-diagonal entries of D^T vec(G) are doubled
            n_mu, n_S = natgrad.natural_grad_mean_cov(mu, F, g_mu, Gs)
            return jnp.concatenate([n_mu, vech(n_S)])
        fn = natgrad.natural_grad_chol_cov if self.param == "chol_cov" else natgrad.natural_grad_chol_prec
        n_mu, n_F = fn(mu, F, g_mu, G)
        return jnp.concatenate([n_mu, vech(n_F)])

    # -------------------------------------------------------------- Tan (2025) Theorem 2
    def thm2_gradient(self, lam, z, grad_logp, hess_logp=None, *, order: str = "second", smooth: bool = False):
        """Tan (2025) Thm 2: a single-sample unbiased estimate of the flat Euclidean ELBO gradient.

        theta = mu + B z (:meth:`transform`), h(theta) = log p(y, theta) - log q(theta) with lambda in
        log q held fixed; ``grad_logp`` = grad log p(y, theta) and ``hess_logp`` = hess log p(y, theta)
        (a (d,) diagonal for a diagonal family; unused for ``order="first"``). grad_mu L is estimated by
        grad_theta h (Bonnet), the factor's gradient by

        * chol_cov: G1 = grad h z^T (first order), F1 = hess h C = hess log p C + C^{-T} (second order);
        * chol_prec: G2 = -(theta - mu) v^T with v = T^{-1} grad h, F2 = -Sigma hess h T^{-T}
          = -Sigma hess log p T^{-T} - T^{-T};
        * kappa: grad_Sigma L = E[hess h] / 2 = E[Sigma^{-1}(theta - mu) grad h^T] / 2 (Price / Stein),
          symmetrised;
        * diagonal factors: the diagonals of the same matrices (Sec. 5).

        Only the lower triangle of G1, F1, G2, F2 enters (Thm 2: E[tril G] = grad_C L).
        ``smooth=True`` drops every -log q part (grad h -> grad log p, hess h -> hess log p): the
        gradient of E_q[log p] alone, which ProxGenAdam needs (its proximal step handles the entropy).
        """
        if order not in ORDERS:
            raise ValueError(f"The order of Tan's estimator must be 'first' or 'second'; got {order!r}.")
        second = order == "second"
        if second and hess_logp is None:
            raise ValueError("The second-order estimator needs the Hessian of log p.")
        d, diag = self.d, self.diagonal
        mu, F = self.unpack(lam)
        g, Hs = grad_logp, hess_logp
        if self.param == "chol_cov":
            if diag:
                gh = g if smooth else g + z / F
                G = (Hs * F + (0.0 if smooth else 1.0 / F)) if second else gh * z
            else:
                gh = g if smooth else g + _solve_upper_T(F, z)  # grad h = g + C^{-T} z
                if second:
                    G = natgrad.estimator_F1(Hs, F) + (0.0 if smooth else _solve_upper_T(F, jnp.eye(d)))
                else:
                    G = natgrad.estimator_G1(gh, z)
                G = jnp.tril(G)
        elif self.param == "chol_prec":
            if diag:
                gh = g if smooth else g + F * z
                G = (-Hs / F**3 - (0.0 if smooth else 1.0 / F)) if second else -(z / F) * (gh / F)
            else:
                dth = _solve_upper_T(F, z)  # theta - mu = T^{-T} z
                gh = g if smooth else g + F @ z  # grad h = g + T z
                if second:
                    G = natgrad.estimator_F2(F, Hs) - (0.0 if smooth else _solve_upper_T(F, jnp.eye(d)))
                else:
                    G = natgrad.estimator_G2(dth, jnp.zeros_like(dth), F, gh)
                G = jnp.tril(G)
        else:
            P = 1.0 / F if diag else jnp.linalg.inv(F)
            dth = (jnp.sqrt(F) * z) if diag else jnp.linalg.cholesky(F) @ z
            gh = g if smooth else g + (P * dth if diag else P @ dth)
            if second:
                G = 0.5 * (Hs + (0.0 if smooth else P))
            else:
                G = 0.5 * ((P * dth) * gh if diag else 0.5 * (jnp.outer(P @ dth, gh) + jnp.outer(gh, P @ dth)))
        return self.from_matrices(gh, G)

    def estimate(self, key, lam, log_p: Callable, *, order: str = "second", smooth: bool = False,
                 grad_hess: Callable | None = None):
        """One draw of Tan's Thm 2 estimator: returns (h(theta), flat Euclidean gradient of the ELBO).

        z ~ N(0, I) from ``key``, theta = mu + B z, h = log p(theta) - log q(theta) (an unbiased
        estimate of the ELBO). ``grad_hess(theta) -> (grad, hess)`` gives the derivatives of log p in
        closed form (hess a (d,) diagonal for a diagonal family); by default they come from autodiff
        of ``log_p``. See :meth:`thm2_gradient`.
        """
        z = jax.random.normal(key, (self.d,), dtype=lam.dtype)
        theta = self.transform(lam, z)
        h = log_p(theta) - self.log_q_whitened(lam, z)
        if grad_hess is None:
            g = jax.grad(log_p)(theta)
            H = None
            if order == "second":
                H = jax.hessian(log_p)(theta)
                H = jnp.diagonal(H) if self.diagonal else H
        else:
            g, H = grad_hess(theta)
        return h, self.thm2_gradient(lam, z, g, H, order=order, smooth=smooth)


class MomentFamily(NamedTuple):
    """q = N(mu, Sigma) (``diagonal=False``) or N(mu, diag(s2)) (``diagonal=True``) in moment form, as
    BONG stores its FC and Diag beliefs (:mod:`vilab.online.families`).

    ``q`` is a pair (mu, Sigma) / (mu, s2) (an online FC / Diag belief) or the flat vector of
    ``GaussianFamily(d, "kappa", diagonal)`` (pack / unpack are that family's). Unlike that family,
    a dense Sigma is symmetrised, (Sigma + Sigma^T) / 2, before it is factored (online updates leave it
    asymmetric by rounding), and draws are mu + eps L^T with eps (n, d) ~ N(0, I) in mu's dtype.
    """

    d: int
    diagonal: bool = False

    @property
    def flat(self) -> GaussianFamily:
        """The flat storage: ``GaussianFamily(d, "kappa", diagonal)``."""
        return GaussianFamily(self.d, "kappa", self.diagonal)

    @property
    def size(self) -> int:
        return self.flat.size

    def check(self) -> "MomentFamily":
        self.flat.check()
        return self

    def pack(self, mu, Sigma):
        return self.flat.pack(mu, Sigma)

    def unpack(self, lam):
        return self.flat.unpack(lam)

    def parts(self, q):
        """(mu, Sigma or s2) from a pair or a flat vector."""
        if isinstance(q, tuple):
            return q[0], q[1]
        return self.unpack(q)

    def mean(self, q):
        return self.parts(q)[0]

    def variances(self, q):
        """diag(Sigma) (the stored s2 for a diagonal family)."""
        S = self.parts(q)[1]
        return S if self.diagonal else jnp.diagonal(S)

    def covariance(self, q):
        S = self.parts(q)[1]
        return jnp.diag(S) if self.diagonal else S

    def precision(self, q):
        """Sigma^-1 as a d x d matrix (a dense inverse: small d, tests)."""
        S = self.parts(q)[1]
        return jnp.diag(1.0 / S) if self.diagonal else jnp.linalg.inv(S)

    def _chol(self, S):
        return jnp.linalg.cholesky(_sym(S))

    def solve(self, q, b):
        """Sigma^-1 b (b of shape (d,) or (d, k)): a division, or a Cholesky solve of sym(Sigma)."""
        S = self.parts(q)[1]
        if self.diagonal:
            return b / (S if jnp.ndim(b) == 1 else S[:, None])
        return cho_solve((self._chol(S), True), b)

    def transform(self, q, z):
        """theta = mu + B z, B = sqrt(s2) or chol(sym Sigma); z of shape (d,) or (n, d)."""
        mu, S = self.parts(q)
        if self.diagonal:
            return mu + z * jnp.sqrt(S)
        L = self._chol(S)
        return mu + (L @ z if jnp.ndim(z) == 1 else z @ L.T)

    def sample(self, key, q, n: int):
        """n draws mu + eps B^T, eps (n, d) ~ N(0, I) in mu's dtype (NaN if Sigma is not positive definite)."""
        if isinstance(n, (int, np.integer)) and n < 1:
            raise ValueError(f"The number of draws n must be at least 1; got {n}.")
        mu = self.mean(q)
        eps = jax.random.normal(key, (n, mu.shape[0]), mu.dtype)
        return self.transform(q, eps)

    def half_logdet(self, q):
        S = self.parts(q)[1]
        if self.diagonal:
            return 0.5 * jnp.sum(jnp.log(S))
        return jnp.sum(jnp.log(jnp.diagonal(self._chol(S))))

    def entropy(self, q):
        return 0.5 * self.d * (1.0 + _LOG2PI) + self.half_logdet(q)

    def logpdf(self, q, theta):
        """log q(theta) for theta of shape (d,) or (n, d)."""
        mu, S = self.parts(q)
        r = theta - mu
        if self.diagonal:
            quad = jnp.sum(r * r / S, -1)
        else:
            L = self._chol(S)
            w = _solve_lower(L, r.T if jnp.ndim(r) == 2 else r)
            quad = jnp.sum(w * w, 0)
        return -0.5 * self.d * _LOG2PI - self.half_logdet(q) - 0.5 * quad

    def validity(self, q):
        """A vilab.core step code: 2 if not finite, 3 if Sigma (sym) is not positive definite, 7 / 8 if
        Sigma left the sane range (:func:`vilab.core.algorithm.range_code`, from the Cholesky factor
        the check computes anyway), else 0."""
        mu, S = self.parts(q)
        finite = jnp.all(jnp.isfinite(mu)) & jnp.all(jnp.isfinite(S))
        if self.diagonal:
            pd = jnp.all(S > 0)
            rng = range_code(jnp.min(S), jnp.max(S), 1.0)
        else:
            L = self._chol(S)
            pd = jnp.all(jnp.isfinite(L))
            rng = range_code_factor(jnp.where(pd, jnp.diagonal(L), 1.0))
        return jnp.where(finite, jnp.where(pd, rng, NOT_PD), NONFINITE).astype(jnp.int32)

    def gaussian(self, q):
        """:class:`vilab.family.gaussian.MeanField` (diagonal) or :class:`vilab.family.gaussian.MeanCov` (sym Sigma)."""
        mu, S = self.parts(q)
        return gaussian.MeanField(mu, jnp.sqrt(S)) if self.diagonal else gaussian.MeanCov(mu, _sym(S))

    def kl(self, q, other):
        """KL(q || other), ``other`` a :mod:`vilab.family.gaussian` parameterization or a q of this family."""
        if not (isinstance(other, tuple) and type(other).__module__ == gaussian.__name__):
            other = self.gaussian(other)
        return gaussian.kl(self.gaussian(q), other)


# the other members live next to their linear algebra
from .block import BlockFactor, BlockPrecFamily, Structure  # noqa: E402
from .lowrank import DLRPrecFamily  # noqa: E402
