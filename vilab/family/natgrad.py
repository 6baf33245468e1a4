"""Natural and Euclidean gradients of the ELBO for Gaussian q = N(mu, Sigma), in every chart.

Sources: Tan (2025) "Analytic natural gradient updates for Cholesky factor in Gaussian
variational approximation" (Table 1, Lemma 1, Theorems 1, 2 and 4, Corollary 1, Algorithms
1S/2S), Tan's short version "Explicit natural gradient updates ..." (Algs 1c/2c) and Kumar,
Moellenhoff, Khan & Lucchi (2025) (Eqs. 7, 17). Conventions (Tan Sec. 2):

* ``grad_mu`` = dL/dmu; ``grad_Sigma`` = the symmetric matrix dL/dSigma (entries treated as
  free); ``grad_C`` / ``grad_T`` = d x d matrices of partial derivatives with respect to the
  entries of the lower-triangular factor (only the lower triangle is used: the paper's G-bar).
* All gradients are *ascent* directions of the ELBO L (Tan's convention). Kumar et al. minimise
  the negative ELBO; their g, H relate by ``grad_mu = -g``, ``grad_Sigma = -(H - Sigma^-1)/2``.
* ``tril_half`` is the paper's double bar (lower triangle, diagonal halved).

Public API (all jit-able, float64, pure functions of jnp arrays)
----------------------------------------------------------------
Table 1 of Tan (2025) (matrix form of the natural gradients):
    natural_grad_mean_cov(mu, Sigma, grad_mu, grad_Sigma) -> (nat_mu, nat_Sigma)      kappa
    natural_grad_mean_prec(mu, Sigma, grad_mu, grad_Sigma) -> (nat_mu, nat_Prec)      xi
    natural_grad_natural(mu, Sigma, grad_mu, grad_Sigma) -> (nat_eta1, nat_eta2)      lambda
    update_kappa / update_xi / update_lambda(mu, M, grad_mu, grad_Sigma, rho)          one step
Cholesky factors (Tan Thm 1, Lemma 1(iii), Corollary 1):
    natural_grad_chol_cov(mu, C, grad_mu, grad_C) -> (Sigma grad_mu, C tril_half(C^T grad_C))
    natural_grad_chol_prec(mu, T, grad_mu, grad_T) -> (Sigma grad_mu, T tril_half(T^T grad_T))
    natural_grad_cor1(mu, T, grad_mu, grad_T, coords="nu"|"mu") -> natural gradient in (T^T mu, vech T) or (mu, T);
        coords="mu": the same vector in (mu, T), the coordinates of the inputs
    update_chol_cov / update_chol_prec / update_cor1(mu, F, grad_mu, grad_F, rho)
Sparse factors (Tan Sec. 7):
    block_mask(sizes), arrow_mask(local_sizes, global_size)              0/1 patterns
    natural_grad_chol_cov_blockdiag(mu, C, grad_mu, grad_C, sizes)       Alg. 1S
    natural_grad_chol_prec_arrow(mu, T, grad_mu, grad_T, local_sizes, global_size)  Thm 4, Alg. 2S
    blockdiag_natgrad_parts / arrow_natgrad_parts(...) -> the matrices of one step (Fig. 5)
    masked_dense_natgrad(factor, F, grad_F, mask) -> the dense natural gradient with zeros put in (Sec. 7:
        not the sparse one unless F12 = 0);  sparse_natgrad_example(...) -> a worked example of both
Euclidean gradients (Tan Sec. 2, Supp. S2; Kumar App. A):
    elbo_grads_from_expectations(Sigma, E_grad_logp, E_hess_logp) -> (grad_mu, grad_Sigma)
    gaussian_target_grads(m, P, mu, Sigma) -> exact (grad_mu, grad_Sigma) for target N(m, P^-1)
    grad_chol_cov(C, grad_Sigma) = tril(2 grad_Sigma C);  grad_chol_prec(T, grad_Sigma)
Unbiased single-sample estimators (Tan Thm 2):
    grad_h(grad_logp, theta, mu, P), hess_h(hess_logp, P)
    estimator_G1(grad_h, z), estimator_F1(hess_h, C), estimator_G2(theta, mu, T, grad_h),
    estimator_F2(T, hess_h)
Fisher blocks (Tan Lemma 1):
    fisher_block_I(Lam), fisher_block_I_inv(Lam): Lemma 1's Kronecker forms (dense)
(The brute-force dense Fisher by autodiff of log q, against which the tests check every formula
here, is tests/reference/fisher.py; the degree-5 cubature it uses is vilab.gradients.expectations.)

Input checks: called eagerly on concrete arrays, the public functions check their input (shapes
that agree, finite values, a positive definite Sigma or P, a triangular factor with a nonzero
diagonal, a finite real step size) and raise ValueError; under jit / vmap / grad (traced
arguments, the updates inside the compiled loops) the check is skipped and costs nothing, as in
:mod:`vilab.family.gaussian`.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular

from ..core import checks
from .linalg import commutation_matrix, elimination_matrix, tril_half, vech_length

__all__ = [
    "natural_grad_mean_cov", "natural_grad_mean_prec", "natural_grad_natural",
    "update_kappa", "update_xi", "update_lambda", "update_lambda_pd",
    "natural_grad_chol_cov", "natural_grad_chol_prec", "natural_grad_cor1",
    "update_chol_cov", "update_chol_prec", "update_cor1",
    "natural_grad_chol_cov_logdiag", "update_chol_cov_logdiag", "natural_step_chol_cov_sample",
    "update_chol_cov_euclid", "update_chol_prec_euclid",
    "block_mask", "arrow_mask", "natural_grad_chol_cov_blockdiag", "natural_grad_chol_prec_arrow",
    "elbo_grads_from_expectations", "gaussian_target_grads", "grad_chol_cov", "grad_chol_prec",
    "grad_h", "hess_h", "estimator_G1", "estimator_F1", "estimator_G2", "estimator_F2",
    "fisher_block_I", "fisher_block_I_inv", "sym",
    "blockdiag_natgrad_parts", "arrow_natgrad_parts", "masked_dense_natgrad", "sparse_natgrad_example",
]


# ---------------------------------------------------------------------------------------------
# input checks of the public functions (eager calls only: traced arguments skip them)


def _traced(args) -> bool:
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(args))


def _array(x, what, ndim=None):
    """``x`` as a finite real float64 array with ``ndim`` dimensions (:func:`vilab.core.checks.real_array`)."""
    return checks.real_array(x, what, ndim=ndim)


def _square(x, what, d=None):
    a = _array(x, what, 2)
    if a.shape[0] != a.shape[1]:
        raise ValueError(f"{what} must be a square matrix; got shape {a.shape}.")
    if d is not None and a.shape[0] != d:
        raise ValueError(f"{what} must be {d} x {d} to match the mean; got shape {a.shape}.")
    return a


def _spd(x, what, d=None):
    a = _square(x, what, d)
    if not np.allclose(a, a.T, rtol=1e-8, atol=1e-12 * max(1.0, float(np.max(np.abs(a))))):
        raise ValueError(f"{what} must be symmetric.")
    try:
        np.linalg.cholesky(0.5 * (a + a.T))
    except np.linalg.LinAlgError:
        raise ValueError(f"{what} must be positive definite (all eigenvalues > 0).") from None
    return a


def _factor(x, what, d=None, triangular=True):
    a = _square(x, what, d)
    if triangular and np.any(np.triu(a, 1) != 0):
        raise ValueError(f"{what} must be lower triangular (a Cholesky factor).")
    if np.any(np.diag(a) == 0):
        raise ValueError(f"{what} has a zero on its diagonal: it is not the factor of a Gaussian.")
    return a


def _vector(x, what, d):
    a = _array(x, what, 1)
    if d is not None and a.shape[0] != d:
        raise ValueError(f"{what} must have length {d}; got {a.shape[0]}.")
    return a


def _step(rho):
    """The step size rho: a positive finite number (a step of rho <= 0 goes against the gradient or nowhere)."""
    checks.positive(rho, "The step size rho")


_MATRIX = {"cov": (_spd, "Sigma"), "prec": (_spd, "The precision P"), "chol": (_factor, "The Cholesky factor"),
           # sparse factors: entries outside the pattern (the upper triangle among them) are ignored
           "sparse": (functools.partial(_factor, triangular=False), "The Cholesky factor")}


def _checked(kind, grad="grad_M", rho=False, breaks=None):
    """Check (mu, M, grad_mu, grad_M[, rho]) of a public function when called eagerly (see the
    module docstring): M is Sigma ("cov"), P ("prec") or a Cholesky factor ("chol"). An update step
    (``rho=True``) called eagerly also checks its result: a non-finite one raises ValueError saying why
    (``breaks``: what makes this step undefined; by default, overflow)."""
    check, name = _MATRIX[kind]

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            eager = not _traced((args, kwargs))
            if eager and len(args) >= 4:
                M = check(args[1], name)
                d = M.shape[0]
                if args[0] is not None:  # (the natural gradients of the factors do not read mu)
                    _vector(args[0], "The mean mu", d)
                _vector(args[2], "The gradient grad_mu", d)
                _square(args[3], f"The gradient {grad}", d)
                if rho and len(args) >= 5:
                    _step(args[4])
            out = fn(*args, **kwargs)
            if eager and rho and not all(np.all(np.isfinite(np.asarray(o))) for o in out):
                why = breaks or ("the step overflows float64 arithmetic; take a smaller step size rho or rescale "
                                 "the problem")
                raise ValueError(f"{fn.__name__} gives non-finite values: {why}.")
            return out

        return wrapper

    return deco


def _eager(*spec):
    """Check the arguments of a small public helper when called eagerly (traced calls skip it), by ``spec``:
    one (kind, name) per positional argument, kind "vec" (a finite vector), "mat" (a finite square matrix)
    or "factor" (a lower-triangular factor with a nonzero diagonal); all share one dimension d."""

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            if not _traced(args):
                mats = [i for i, (k, _) in enumerate(spec) if k != "vec"]
                d = None
                for i in mats:
                    kind, name = spec[i]
                    d = (_factor if kind == "factor" else _square)(args[i], name, d).shape[0]
                for i, (kind, name) in enumerate(spec):
                    if kind == "vec":
                        d = _vector(args[i], name, d).shape[0] if d is not None else _array(args[i], name, 1).shape[0]
            return fn(*args)

        return wrapper

    return deco


def sym(X):
    """(X + X^T)/2."""
    return 0.5 * (X + jnp.swapaxes(X, -1, -2))


def _eye_like(X):
    return jnp.eye(X.shape[-1], dtype=X.dtype)


def _inv_spd(M):
    """Inverse of a symmetric positive definite matrix via Cholesky (NaN if not PD)."""
    Lc = jnp.linalg.cholesky(sym(M))
    Li = solve_triangular(Lc, _eye_like(M), lower=True)
    return Li.T @ Li


def _prec_solve(T, b):
    """Sigma b = T^-T T^-1 b for Sigma^-1 = T T^T (two triangular solves)."""
    return solve_triangular(T.T, solve_triangular(T, b, lower=True), lower=False)


# ---------------------------------------------------------------------------------------------
# Table 1 of Tan (2025): kappa = (mu, vech Sigma), xi = (mu, vech Sigma^-1), natural lambda


@_checked("cov", "grad_Sigma")
def natural_grad_mean_cov(mu, Sigma, grad_mu, grad_Sigma):
    """Natural gradient for kappa = (mu, vech Sigma), Tan (2025) Table 1 row 1 / Supp. S1.

    F_kappa^-1 grad = [Sigma grad_mu ; 2 vech(Sigma grad_Sigma Sigma)]; returned in matrix form
    ``(Sigma grad_mu, 2 Sigma grad_Sigma Sigma)``.
    """
    return Sigma @ grad_mu, 2.0 * Sigma @ grad_Sigma @ Sigma


@_checked("cov", "grad_Sigma")
def natural_grad_mean_prec(mu, Sigma, grad_mu, grad_Sigma):
    """Natural gradient for xi = (mu, vech Sigma^-1), Tan (2025) Table 1 row 2 / Supp. S1.

    NG_xi = [Sigma grad_mu ; -2 vech(grad_Sigma)]; returned as ``(Sigma grad_mu, -2 grad_Sigma)``,
    the second entry being the direction of the precision matrix.
    """
    return Sigma @ grad_mu, -2.0 * grad_Sigma


@_checked("cov", "grad_Sigma")
def natural_grad_natural(mu, Sigma, grad_mu, grad_Sigma):
    """Natural gradient for the natural parameter lambda, Tan (2025) Sec. 4 / Khan & Lin (2017).

    With lambda = [Sigma^-1 mu ; -1/2 D^T vec(Sigma^-1)],
    NG_lambda = grad_m L = [grad_mu - 2 grad_Sigma mu ; D^T vec(grad_Sigma)].
    Returned in the matrix form of :class:`vilab.family.gaussian.Natural` (eta2 = -Sigma^-1/2): the
    direction of eta1 is ``grad_mu - 2 grad_Sigma mu`` and the direction of eta2 is ``grad_Sigma``
    (D^T vec of it is the vech-coordinate form).
    """
    return grad_mu - 2.0 * grad_Sigma @ mu, grad_Sigma


@_checked("cov", "grad_Sigma", rho=True)
def update_kappa(mu, Sigma, grad_mu, grad_Sigma, rho):
    """Tan (2025) Table 1, kappa: Sigma+ = Sigma + 2 rho Sigma G Sigma, mu+ = mu + rho Sigma g.

    Sigma+ need not be positive definite (the point of Tan Sec. 4.1)."""
    n_mu, n_S = natural_grad_mean_cov(mu, Sigma, grad_mu, grad_Sigma)
    return mu + rho * n_mu, sym(Sigma + rho * n_S)


@_checked("prec", "grad_Sigma", rho=True)
def update_xi(mu, P, grad_mu, grad_Sigma, rho):
    """Tan (2025) Table 1, xi: P+ = P - 2 rho G, mu+ = mu + rho Sigma g (the OLD Sigma = P^-1).

    State (mu, P) with P = Sigma^-1; P+ may be indefinite (Tan Sec. 7 / PD discussion)."""
    Sigma = _inv_spd(P)
    return mu + rho * Sigma @ grad_mu, sym(P - 2.0 * rho * grad_Sigma)


@_checked("prec", "grad_Sigma", rho=True,
          breaks="the updated precision P+ = P - 2 rho grad_Sigma is singular, so the mean step P+^-1 grad_mu "
                 "is undefined; take another step size rho")
def update_lambda(mu, P, grad_mu, grad_Sigma, rho):
    """Tan (2025) Table 1, natural parameter: P+ = P - 2 rho G FIRST, then mu+ = mu + rho Sigma+ g.

    Equivalent to Kumar et al. (2025) Eq. 7 (VN) with gamma = 1: S+ = (1 - rho) S + rho H.
    With exact expectations, rho = 1 and a Gaussian target this is exact in one step."""
    P_new = sym(P - 2.0 * rho * grad_Sigma)
    return mu + rho * jnp.linalg.solve(P_new, grad_mu), P_new


@_checked("prec", "grad_Sigma", rho=True,
          breaks="the updated precision P+ is singular in float64 arithmetic, so the mean step P+^-1 grad_mu is "
                 "undefined; take a smaller step size rho or rescale the problem")
def update_lambda_pd(mu, P, grad_mu, grad_Sigma, rho):
    """Lin, Schmidt & Khan (2020), the Gaussian case of their improved Bayesian learning rule: the
    natural-parameter (VN) step of :func:`update_lambda` plus a second-order retraction term that keeps
    the precision positive definite for every step size.

    With G = H - P = -2 grad_Sigma (H = E_q[-hess log p], descent form),
        P+ = P + rho G + (rho^2 / 2) G P^-1 G,        mu+ = mu + rho P+^-1 grad_mu.
    P+ = 1/2 [P + (P + rho G) P^-1 (P + rho G)] is a sum of a positive definite and a positive
    semi-definite matrix, hence positive definite even where the VN step P + rho G is not (a single-sample
    Hessian, a large rho). It agrees with VN to first order in rho and has the same fixed point P = H.
    The correction uses the current P (the retraction at the current point), which the positive-definiteness
    argument needs; a variant that puts the VN-updated precision there has no such guarantee."""
    G = sym(-2.0 * grad_Sigma)
    P_new = sym(P + rho * G + 0.5 * rho**2 * G @ jnp.linalg.solve(P, G))
    return mu + rho * jnp.linalg.solve(P_new, grad_mu), P_new


# ---------------------------------------------------------------------------------------------
# Cholesky factors: Tan (2025) Lemma 1(iii), Theorem 1, Corollary 1


@_checked("chol", "grad_C")
def natural_grad_chol_cov(mu, C, grad_mu, grad_C):
    """Tan (2025) Thm 1(i): lambda = (mu, vech C), Sigma = C C^T.

    F^-1 [grad_mu ; vech(G)] = [Sigma grad_mu ; vech(C Hbarbar)], H = C^T Gbar (Lemma 1(iii)).
    Returns ``(C C^T grad_mu, C tril_half(C^T tril(grad_C)))``; no matrix inverse is needed.
    """
    return C @ (C.T @ grad_mu), C @ tril_half(C.T @ jnp.tril(grad_C))


@_checked("chol", "grad_T")
def natural_grad_chol_prec(mu, T, grad_mu, grad_T):
    """Tan (2025) Thm 1(ii): lambda = (mu, vech T), Sigma^-1 = T T^T.

    F^-1 [grad_mu ; vech(G)] = [Sigma grad_mu ; vech(T Hbarbar)], H = T^T Gbar.
    Returns ``(T^-T T^-1 grad_mu, T tril_half(T^T tril(grad_T)))``.
    """
    return _prec_solve(T, grad_mu), T @ tril_half(T.T @ jnp.tril(grad_T))


@_checked("chol", "grad_T")
def natural_grad_cor1(mu, T, grad_mu, grad_T, *, coords: str | None = None):
    """Natural gradient in xi = (nu, vech T), nu = T^T mu, Tan (2025) Corollary 1 / Supp. S3.3.

    Mind the coordinates: the inputs are Euclidean gradients in (mu, T) (``grad_mu`` = dL/dmu,
    ``grad_T`` = tril dL/dT), and the first output is a direction of a different coordinate.
    ``coords`` says which one; it has no default, so every call states it (a call without it raises
    ValueError rather than silently returning a direction of T^T mu):

    * ``coords="nu"`` (Tan's Cor. 1): ``(direction of nu = T^T mu, direction of T)`` =
      ``(T^-1 grad_mu + Hbarbar^T T^T mu, T Hbarbar)``, H = T^T Gbar. A step along it in xi is
      :func:`update_cor1` (Algorithm 2N): the mean moves with the updated T.
    * ``coords="mu"``: the same tangent vector written in (mu, T), the coordinates of the inputs:
      d mu = T^-T (d nu - dT^T mu) = Sigma grad_mu, so the pair equals :func:`natural_grad_chol_prec`
      (a natural gradient is one tangent vector; only the straight-line step differs).
    """
    if coords is None:
        raise ValueError('Say in which coordinates you want the natural gradient: coords="nu" gives the direction '
                         'of T^T mu (Tan\'s Corollary 1, what update_cor1 steps along), coords="mu" the direction of '
                         "mu itself; both come with the direction of T.")
    Hbb = tril_half(T.T @ jnp.tril(grad_T))
    if coords == "mu":
        return _prec_solve(T, grad_mu), T @ Hbb
    if coords != "nu":
        raise ValueError(f'coords must be "nu" (direction of T^T mu, Tan\'s Corollary 1) or "mu" (direction of mu); '
                         f"got {coords!r}.")
    nu_dir = solve_triangular(T, grad_mu, lower=True) + Hbb.T @ (T.T @ mu)
    return nu_dir, T @ Hbb


@_checked("chol", "grad_C", rho=True)
def update_chol_cov(mu, C, grad_mu, grad_C, rho):
    """Algorithm 1N step (Tan (2025) Table 3 / Kumar et al. Eq. 17 when grad_C = tril(2 G C)):
    mu+ = mu + rho C C^T g,  C+ = C + rho C tril_half(C^T Gbar) = C (I + rho Hbarbar)."""
    n_mu, n_C = natural_grad_chol_cov(mu, C, grad_mu, grad_C)
    return mu + rho * n_mu, C + rho * n_C


def _positive_diagonal(C):
    if not _traced(C) and not np.all(np.diag(np.asarray(C)) > 0):  # numpy: jnp would be staged inside a jit
        raise ValueError("The log-diagonal chart needs a Cholesky factor C with a positive diagonal "
                         "(log C_ii must exist); flip the sign of the columns with a negative diagonal entry.")


@_checked("chol", "grad_C")
def natural_grad_chol_cov_logdiag(mu, C, grad_mu, grad_C):
    """Tan (explicit) Sec. 5, the log-diagonal chart that makes C unique: C' = C with log C_ii on the diagonal.

    Returns ``(C C^T grad_mu, L_C * (C tril_half(C^T tril(grad_C))))``, L_C lower triangular with 1 / C_ii on the
    diagonal and ones below it (the chain rule of C_ii = exp C'_ii). Erratum: the paper prints
    L_C * (C' Hbarbar), with C' inside; the natural gradient in C' coordinates has C inside (reference digest
    Sec. 4.7, checked against the brute-force Fisher information in C' coordinates in the tests)."""
    _positive_diagonal(C)
    n_mu, n_C = natural_grad_chol_cov(mu, C, grad_mu, grad_C)
    L = jnp.tril(jnp.ones_like(n_C), -1) + jnp.diag(1.0 / jnp.diag(C))
    return n_mu, L * n_C


@_checked("chol", "grad_C", rho=True)
def update_chol_cov_logdiag(mu, C, grad_mu, grad_C, rho):
    """Tan (explicit) Sec. 5, step 5 of Alg. 1b in the log-diagonal chart (corrected form, see
    :func:`natural_grad_chol_cov_logdiag`): C'+ = C' + rho L_C * (C Hbarbar), mu+ = mu + rho C C^T g (old C).

    Below the diagonal this is :func:`update_chol_cov`'s step; on it, log C_ii moves by rho H_ii / 2, i.e.
    C_ii <- C_ii exp(rho H_ii / 2): the diagonal stays positive for every step size, so C stays the unique
    Cholesky factor of Sigma (the plain step can flip a diagonal sign or hit 0). Works on C itself."""
    n_mu, n_Cp = natural_grad_chol_cov_logdiag(mu, C, grad_mu, grad_C)
    C_new = jnp.tril(C + rho * n_Cp, -1) + jnp.diag(jnp.diag(C) * jnp.exp(rho * jnp.diag(n_Cp)))
    return mu + rho * n_mu, C_new


@_eager(("factor", "The Cholesky factor C"), ("vec", "The draw z"), ("vec", "The gradient grad_h"))
def natural_step_chol_cov_sample(C, z, grad_h):
    """Tan (explicit) Sec. 4 (reference digest Sec. 4.5): the single-draw natural direction of Alg. 1b,
    ``(C C^T grad_h, C Hbarbar_1)`` with Hbar_1 = tril(C^T tril(grad_h z^T)) = tril(w z^T), w = C^T grad_h,
    in O(d^2) operations instead of O(d^3):

        (C Hbarbar_1)_ab = z_b sum_{j=b..a} C_aj w_j - 1/2 C_ab w_b z_b,

    the inner sum a reverse cumulative sum along the rows of C * w^T (C is lower triangular, so the sum
    may run to d). Equal to :func:`natural_grad_chol_cov` fed grad_C = tril(grad_h z^T)."""
    C, z, g = jnp.asarray(C), jnp.asarray(z), jnp.asarray(grad_h)
    w = C.T @ g
    S = jnp.flip(jnp.cumsum(jnp.flip(C * w[None, :], axis=1), axis=1), axis=1)  # S_ab = sum_{j >= b} C_aj w_j
    step = jnp.tril(S * z[None, :] - 0.5 * C * (w * z)[None, :])
    return C @ w, step


@_checked("chol", "grad_T", rho=True)
def update_chol_prec(mu, T, grad_mu, grad_T, rho):
    """Theorem 1(ii) step (Tan (2025) Sec. 5): mu+ = mu + rho Sigma g (old Sigma), T+ = T + rho T Hbarbar."""
    n_mu, n_T = natural_grad_chol_prec(mu, T, grad_mu, grad_T)
    return mu + rho * n_mu, T + rho * n_T


@_checked("chol", "grad_T", rho=True,
          breaks="the updated factor T+ = T + rho T Hbarbar has a zero on its diagonal, so the mean step through "
                 "T+^-T is undefined; take another step size rho")
def update_cor1(mu, T, grad_mu, grad_T, rho):
    """Tan (2025) Corollary 1 (= Algorithm 2N, Table 4): T+ = T + rho T Hbarbar, then
    mu+ = mu + rho T+^-T T^-1 grad_mu (the mean moves with the UPDATED T)."""
    _, n_T = natural_grad_chol_prec(mu, T, grad_mu, grad_T)
    T_new = T + rho * n_T
    v = solve_triangular(T, grad_mu, lower=True)
    return mu + rho * solve_triangular(T_new.T, v, lower=False), T_new


@_checked("chol", "grad_C", rho=True)
def update_chol_cov_euclid(mu, C, grad_mu, grad_C, rho):
    """Algorithm 1E (Tan (2025) Table 3): mu+ = mu + rho g, C+ = C + rho Gbar."""
    return mu + rho * grad_mu, C + rho * jnp.tril(grad_C)


@_checked("chol", "grad_T", rho=True)
def update_chol_prec_euclid(mu, T, grad_mu, grad_T, rho):
    """Algorithm 2E (Tan (2025) Table 4): mu+ = mu + rho g, T+ = T + rho Gbar."""
    return mu + rho * grad_mu, T + rho * jnp.tril(grad_T)


# ---------------------------------------------------------------------------------------------
# Sparse factors: Tan (2025) Sec. 7 (block-diagonal C, Alg. 1S; arrow T, Thm 4 / Alg. 2S)


def _match(d: int, F, what: str) -> None:
    """ValueError unless the pattern's dimension d is the factor F's (F's shape is known under a trace too)."""
    if jnp.shape(F)[-1] != d:
        raise ValueError(f"{what} add up to {d}, but the factor is {jnp.shape(F)[-1]} x {jnp.shape(F)[-1]}.")


#: The largest dimension of a 0/1 pattern (a dense d x d float64 mask: 128 MiB at this size).
MAX_MASK_DIM = 4096


def _check_sizes(sizes, what):
    """Block sizes as a tuple of whole numbers >= 1 (not booleans, fractions or text), summing to at most
    :data:`MAX_MASK_DIM`."""
    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
        raise ValueError(f"The {what} must be a non-empty list of positive integers; got {sizes!r}.")
    sizes = tuple(sizes)
    if not sizes:
        raise ValueError(f"The {what} must be a non-empty list of positive integers; got an empty list.")
    out = []
    for s in sizes:
        try:
            out.append(checks.integer(s, what, minimum=1))
        except ValueError:
            raise ValueError(f"The {what} must be positive integers (whole numbers of at least 1); got {s!r}.") from None
    if sum(out) > MAX_MASK_DIM:
        raise ValueError(f"The {what} add up to dimension {sum(out)}; at most {MAX_MASK_DIM} is supported.")
    return tuple(out)


def block_mask(sizes) -> np.ndarray:
    """0/1 pattern of a block-diagonal lower-triangular C with diagonal blocks of ``sizes``."""
    sizes = _check_sizes(sizes, "block sizes")
    d = sum(sizes)
    M = np.zeros((d, d))
    o = 0
    for s in sizes:
        M[o:o + s, o:o + s] = np.tril(np.ones((s, s)))
        o += s
    return M


def arrow_mask(local_sizes, global_size: int) -> np.ndarray:
    """0/1 pattern of the arrow Cholesky factor T of Tan (2025) Eq. 4 (locals first, globals last):
    lower-triangular diagonal blocks T_1..T_n, T_g, and dense last block row T_g1..T_gn."""
    local_sizes = _check_sizes(local_sizes, "local block sizes")
    g = checks.integer(global_size, "The global block size", minimum=1, maximum=MAX_MASK_DIM)
    M = block_mask(local_sizes + (g,))
    dl = sum(local_sizes)
    M[dl:, :dl] = 1.0
    return M


@_checked("sparse", "grad_C")
def natural_grad_chol_cov_blockdiag(mu, C, grad_mu, grad_C, sizes):
    """Tan (2025) Sec. 7.1 / Algorithm 1S: C = blockdiag(C_1..C_K), Sigma = C C^T.

    F = blockdiag(Sigma^-1, I(C_1), ..., I(C_K)), so NG = [Sigma grad_mu ; vech(C_i Hbarbar_i)],
    H_i = C_i^T Gbar_i, computed block by block (entries outside the blocks are ignored).
    Returns ``(Sigma grad_mu, d x d matrix with blocks C_i tril_half(C_i^T G_i))``.
    """
    sizes = _check_sizes(sizes, "block sizes")
    _match(sum(sizes), C, "The block sizes")
    out = jnp.zeros_like(C)
    o = 0
    for s in sizes:
        Ci = C[o:o + s, o:o + s]
        Gi = jnp.tril(grad_C[o:o + s, o:o + s])
        out = out.at[o:o + s, o:o + s].set(Ci @ tril_half(Ci.T @ Gi))
        o += s
    Cm = C * jnp.asarray(block_mask(sizes), dtype=C.dtype)
    return Cm @ (Cm.T @ grad_mu), out


@_checked("sparse", "grad_T")
def natural_grad_chol_prec_arrow(mu, T, grad_mu, grad_T, local_sizes, global_size):
    """Tan (2025) Theorem 4 / Algorithm 2S: arrow-shaped Cholesky factor of the precision.

    Input: the Euclidean gradient with respect to the free entries of T (a d x d matrix; entries
    outside the pattern are ignored): A_i (block T_i), G_gi (block T_gi), G_g (block T_g).
    Theorem 4: G_i = A_i + T_i^-T T_gi^T G_gi; G has T's pattern with blocks G_i, G_gi, G_g;
    H = T_d^T Gbar with T_d = blockdiag(T_1, ..., T_n, T_g); natural gradient of T = T Hbarbar
    restricted to the pattern. This is NOT the dense Thm 1(ii) gradient masked to the pattern
    (Tan Sec. 7 intro): the Fisher is not block diagonal between free and structural-zero entries.
    Returns ``(Sigma grad_mu, d x d matrix with T's pattern)``.
    """
    local_sizes = _check_sizes(local_sizes, "local block sizes")
    M = jnp.asarray(arrow_mask(local_sizes, global_size), dtype=T.dtype)
    _match(M.shape[0], T, "The local block sizes and the global size")
    Tm = T * M
    E = jnp.where(M > 0, grad_T, 0.0)  # ignored means ignored: a NaN outside the pattern does not leak in
    dl = sum(local_sizes)
    Tg = Tm[dl:, dl:]
    G = E
    Td = jnp.zeros_like(Tm).at[dl:, dl:].set(Tg)
    o = 0
    for s in local_sizes:
        Ti = Tm[o:o + s, o:o + s]
        Tgi = Tm[dl:, o:o + s]
        Ggi = E[dl:, o:o + s]
        Gi = E[o:o + s, o:o + s] + solve_triangular(Ti.T, Tgi.T @ Ggi, lower=False)
        G = G.at[o:o + s, o:o + s].set(jnp.tril(Gi))
        Td = Td.at[o:o + s, o:o + s].set(Ti)
        o += s
    Hbb = tril_half(Td.T @ G) * M
    return _prec_solve(Tm, grad_mu), Tm @ Hbb


# ---------------------------------------------------------------------------------------------
# Euclidean gradients (Tan (2025) Sec. 2 / S2; Kumar et al. (2025) App. A)


def elbo_grads_from_expectations(Sigma, E_grad_logp, E_hess_logp):
    """(grad_mu L, grad_Sigma L) from E_q[grad log p], E_q[hess log p] (Bonnet / Price):
    grad_mu L = E[grad log p],  grad_Sigma L = 1/2 (E[hess log p] + Sigma^-1)  (Tan Sec. 5.1;
    Kumar Eqs. 33-34 with g = -E[grad log p], H = -E[hess log p])."""
    if not _traced((Sigma, E_grad_logp, E_hess_logp)):
        d = _spd(Sigma, "Sigma").shape[0]
        _vector(E_grad_logp, "E_q[grad log p]", d)
        _square(E_hess_logp, "E_q[hess log p]", d)
    return E_grad_logp, 0.5 * (sym(E_hess_logp) + _inv_spd(Sigma))


def gaussian_target_grads(m, P, mu, Sigma):
    """Exact ELBO gradients for the target N(m, P^-1): grad_mu = -P (mu - m),
    grad_Sigma = 1/2 (Sigma^-1 - P) (Tan digest E6)."""
    if not _traced((m, P, mu, Sigma)):
        d = _spd(P, "The target precision P").shape[0]
        _vector(m, "The target mean m", d)
        _vector(mu, "The mean mu", d)
        _spd(Sigma, "Sigma", d)
    return -P @ (mu - m), 0.5 * (_inv_spd(Sigma) - P)


def grad_chol_cov(C, grad_Sigma):
    """dL/dC over the lower triangle: tril(2 grad_Sigma C) (Tan (2025) Sec. 2 identity,
    grad_vech(C) L = 2 vech(grad_Sigma L C)); for N(m, P^-1) targets tril(-P C + C^-T)."""
    if not _traced((C, grad_Sigma)):
        _square(grad_Sigma, "The gradient grad_Sigma", _factor(C, "The Cholesky factor C").shape[0])
    return jnp.tril(2.0 * sym(grad_Sigma) @ C)


def grad_chol_prec(T, grad_Sigma):
    """dL/dT over the lower triangle: tril(-2 Sigma grad_Sigma T^-T) (Tan (2025) Sec. 2,
    grad_vech(T) L = -2 vech(Sigma grad_Sigma T^-T))."""
    if not _traced((T, grad_Sigma)):
        _square(grad_Sigma, "The gradient grad_Sigma", _factor(T, "The Cholesky factor T").shape[0])
    TinvT = solve_triangular(T.T, _eye_like(T), lower=False)  # T^-T
    Sigma = TinvT @ TinvT.T
    return jnp.tril(-2.0 * Sigma @ sym(grad_Sigma) @ TinvT)


# ---------------------------------------------------------------------------------------------
# Tan (2025) Theorem 2: unbiased single-sample estimators of grad_C L and grad_T L


@_eager(("vec", "The gradient grad_logp"), ("vec", "The point theta"), ("vec", "The mean mu"), ("mat", "The precision P"))
def grad_h(grad_logp, theta, mu, P):
    """grad_theta h(theta) = grad log p(y, theta) + Sigma^-1 (theta - mu), with h = log p - log q
    and the lambda in log q held fixed (Tan (2025) Sec. 1 note)."""
    return grad_logp + P @ (theta - mu)


@_eager(("mat", "The Hessian hess_logp"), ("mat", "The precision P"))
def hess_h(hess_logp, P):
    """hess_theta h(theta) = hess log p(y, theta) + Sigma^-1."""
    return hess_logp + P


@_eager(("vec", "The gradient grad_h_theta"), ("vec", "The draw z"))
def estimator_G1(grad_h_theta, z):
    """Tan (2025) Thm 2, first order for C: G1 = grad_theta h(theta) z^T, theta = mu + C z.
    E[tril(G1)] = grad_C L (only the lower triangle is used)."""
    return jnp.outer(grad_h_theta, z)


@_eager(("mat", "The Hessian hess_h_theta"), ("factor", "The Cholesky factor C"))
def estimator_F1(hess_h_theta, C):
    """Tan (2025) Thm 2, second order for C: F1 = hess_theta h(theta) C."""
    return hess_h_theta @ C


@_eager(("vec", "The point theta"), ("vec", "The mean mu"), ("factor", "The Cholesky factor T"), ("vec", "The gradient grad_h_theta"))
def estimator_G2(theta, mu, T, grad_h_theta):
    """Tan (2025) Thm 2, first order for T: G2 = -(theta - mu) v^T, v = T^-1 grad_theta h(theta)."""
    v = solve_triangular(T, grad_h_theta, lower=True)
    return -jnp.outer(theta - mu, v)


@_eager(("factor", "The Cholesky factor T"), ("mat", "The Hessian hess_h_theta"))
def estimator_F2(T, hess_h_theta):
    """Tan (2025) Thm 2, second order for T: F2 = -Sigma hess_theta h(theta) T^-T."""
    TinvT = solve_triangular(T.T, _eye_like(T), lower=False)
    return -(TinvT @ TinvT.T) @ hess_h_theta @ TinvT


# ---------------------------------------------------------------------------------------------
# Lemma 1 of Tan (2025) in closed form (the dense brute-force Fisher by autodiff lives in the tests:
# tests/reference/fisher.py)


def fisher_block_I(Lam) -> np.ndarray:
    """Tan (2025) Lemma 1: I(Lam) = L {(Lam^-1 (x) Lam^-T) K + I (x) Lam^-T Lam^-1} L^T (dense)."""
    Lam = _factor(Lam, "The Cholesky factor Lam")
    d = Lam.shape[0]
    Li = np.linalg.inv(Lam)
    Lm, K = elimination_matrix(d), commutation_matrix(d)
    return Lm @ (np.kron(Li, Li.T) @ K + np.kron(np.eye(d), Li.T @ Li)) @ Lm.T


def fisher_block_I_inv(Lam) -> np.ndarray:
    """Tan (2025) Lemma 1(ii): I(Lam)^-1 = 1/2 L (I (x) Lam) L^T (2I - L K L^T) L (I (x) Lam^T) L^T."""
    Lam = _factor(Lam, "The Cholesky factor Lam")
    d = Lam.shape[0]
    Lm, K = elimination_matrix(d), commutation_matrix(d)
    m = vech_length(d)
    LNLinv = 2.0 * np.eye(m) - Lm @ K @ Lm.T
    return 0.5 * Lm @ np.kron(np.eye(d), Lam) @ Lm.T @ LNLinv @ Lm @ np.kron(np.eye(d), Lam.T) @ Lm.T


# ---------------------------------------------------------------------------------------------
# Tan (2025) Fig. 5 and Sec. 7 intro, worked on a small Gaussian target (the Positive definiteness
# page's "sparse factors" view): the intermediate matrices of Alg. 1S / Thm 4 and the masked dense
# natural gradient, which is NOT the natural gradient of the sparse parameterisation in general.


def blockdiag_natgrad_parts(C, grad_C, sizes) -> dict:
    """The matrices of Tan (2025) Fig. 5 for a block-diagonal C (Sec. 7.1, Algorithm 1S):
    ``C^T``, ``Gbar`` (lower triangle of the gradient, restricted to the blocks: G = blockdiag(G_i)),
    ``H = C^T Gbar``, ``Hbarbar`` (lower triangle, halved diagonal) and the natural gradient
    ``C Hbarbar`` (= blockdiag(C_i Hbarbar_i)). All numpy arrays; C, Gbar, Hbarbar, C Hbarbar share
    the block lower-triangular pattern, H is block diagonal with full blocks."""
    M = block_mask(sizes)
    C = _square(C, "The Cholesky factor C", M.shape[0]) * M
    G = np.where(M > 0, _square(grad_C, "The gradient grad_C", M.shape[0]), 0.0)
    H = C.T @ G
    Hbb = np.asarray(tril_half(H))
    return {"C^T": C.T, "Gbar": G, "H": H, "Hbarbar": Hbb, "C Hbarbar": C @ Hbb}


def arrow_natgrad_parts(T, grad_T, local_sizes, global_size) -> dict:
    """The matrices of Tan (2025) Theorem 4 for the arrow-shaped T of Eq. 4: ``T``, ``Gbar`` (Thm 4's
    G with G_i = A_i + T_i^-T T_gi^T G_gi, T's pattern), ``H = T_d^T Gbar`` (T_d = blockdiag(T_1..T_n, T_g)),
    ``Hbarbar`` (lower triangle, halved diagonal, restricted to T's pattern) and the natural gradient
    ``T Hbarbar``, which keeps T's pattern (Tan Sec. 7.2)."""
    local_sizes = _check_sizes(local_sizes, "local block sizes")
    M = arrow_mask(local_sizes, global_size)
    d = M.shape[0]
    T = _square(T, "The Cholesky factor T", d) * M
    E = np.where(M > 0, _square(grad_T, "The gradient grad_T", d), 0.0)
    dl = sum(local_sizes)
    G, Td = E.copy(), np.zeros_like(T)
    Td[dl:, dl:] = T[dl:, dl:]
    o = 0
    for s in local_sizes:
        Ti, Tgi = T[o:o + s, o:o + s], T[dl:, o:o + s]
        G[o:o + s, o:o + s] = np.tril(E[o:o + s, o:o + s] + np.linalg.solve(Ti.T, Tgi.T @ E[dl:, o:o + s]))
        Td[o:o + s, o:o + s] = Ti
        o += s
    H = Td.T @ G
    Hbb = np.asarray(tril_half(H)) * M
    return {"T": T, "Gbar": G, "H": H, "Hbarbar": Hbb, "T Hbarbar": T @ Hbb}


def masked_dense_natgrad(factor: str, F, grad_F, mask) -> np.ndarray:
    """The WRONG shortcut of Tan (2025) Sec. 7 intro: the dense natural gradient of Thm 1
    (C tril_half(C^T Gbar) for ``factor="C"``, T tril_half(T^T Gbar) for ``"T"``), with every entry
    outside the sparsity ``mask`` set to zero. With F = [[F11, F12], [F21, F22]] (free, structural-zero
    entries) the dense natural gradient's free part is F11^-1 g1 - F11^-1 F12 g~2, while the sparse one
    is F11^-1 g1: they agree only where F12 = 0."""
    if factor not in ("C", "T"):
        raise ValueError(f"The factor must be 'C' or 'T'; got {factor!r}.")
    M = _square(mask, "The sparsity mask")
    if not np.all((M == 0) | (M == 1)):
        raise ValueError("The sparsity mask must hold 0s and 1s only (1 = a free entry).")
    d = M.shape[0]
    fn = natural_grad_chol_cov if factor == "C" else natural_grad_chol_prec
    F = np.tril(_square(F, "The Cholesky factor", d) * M)
    grad_F = np.tril(_square(grad_F, "The gradient", d))
    return np.asarray(fn(np.zeros(d), F, np.zeros(d), grad_F)[1]) * M


def sparse_natgrad_example(factor: str = "C", n_blocks: int = 4, block_size: int = 2, global_size: int = 2,
                           seed: int = 0) -> dict:
    """A small worked example of Tan (2025) Sec. 7: target N(m, P^-1) with a dense precision P (every
    coordinate coupled), q with a sparse factor at a random point of its pattern: a block-diagonal C
    (K = ``n_blocks`` blocks of ``block_size``, Alg. 1S) for ``factor="C"``, or the arrow T of Eq. 4
    (``n_blocks`` local blocks, ``global_size`` globals, Thm 4) for ``factor="T"``.

    Euclidean gradients are exact (digest E6): grad_mu = -P (mu - m), grad_Sigma = (Sigma^-1 - P)/2,
    grad_C = tril(2 grad_Sigma C) or grad_T = tril(-2 Sigma grad_Sigma T^-T); the gradient with respect to
    the free entries is their restriction (masking IS right for Euclidean gradients). Returns a dict:
    ``mask``, ``factor`` (the matrix), ``grad`` (dense Euclidean gradient), ``sparse`` (the package's
    sparse natural gradient of the factor), ``masked`` (:func:`masked_dense_natgrad`), ``diff`` =
    sparse - masked, ``parts`` (:func:`blockdiag_natgrad_parts` / :func:`arrow_natgrad_parts`),
    ``mu``, ``grad_mu``, ``nat_mu`` and the target ``m``, ``P``.
    """
    if factor not in ("C", "T"):
        raise ValueError(f"The factor must be 'C' or 'T'; got {factor!r}.")
    K = checks.integer(n_blocks, "The number of blocks n_blocks", minimum=1)
    b = checks.integer(block_size, "The block size", minimum=1)
    g = checks.integer(global_size, "The number of globals global_size", minimum=1 if factor == "T" else 0)
    seed = checks.integer(seed, "The seed", minimum=0)
    sizes = (b,) * K
    M = block_mask(sizes) if factor == "C" else arrow_mask(sizes, g)
    d = M.shape[0]
    rng = np.random.default_rng(int(seed))
    A = rng.normal(size=(d, d))
    P = A @ A.T / d + np.eye(d)  # dense target precision
    m = rng.normal(size=d)
    F = (np.tril(rng.normal(scale=0.3, size=(d, d)), -1) + np.diag(rng.uniform(0.7, 1.3, d))) * M
    mu = np.zeros(d)
    Sigma = F @ F.T if factor == "C" else np.linalg.inv(F @ F.T)
    Sigma = 0.5 * (Sigma + Sigma.T)
    grad_mu, grad_Sigma = (np.asarray(x) for x in gaussian_target_grads(m, P, mu, Sigma))
    if factor == "C":
        grad = np.asarray(grad_chol_cov(F, grad_Sigma))
        nat_mu, sparse = natural_grad_chol_cov_blockdiag(mu, F, grad_mu, grad, sizes)
        parts = blockdiag_natgrad_parts(F, grad, sizes)
    else:
        grad = np.asarray(grad_chol_prec(F, grad_Sigma))
        nat_mu, sparse = natural_grad_chol_prec_arrow(mu, F, grad_mu, grad, sizes, g)
        parts = arrow_natgrad_parts(F, grad, sizes, g)
    sparse = np.asarray(sparse)
    masked = masked_dense_natgrad(factor, F, grad, M)
    return {"mask": M, "factor": F, "grad": grad, "sparse": sparse, "masked": masked, "diff": sparse - masked,
            "parts": parts, "mu": mu, "grad_mu": grad_mu, "nat_mu": np.asarray(nat_mu), "m": m, "P": P,
            "sizes": sizes, "global_size": g if factor == "T" else 0}
