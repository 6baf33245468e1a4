"""Every method of the catalogue as a :class:`vilab.core.Algorithm` (init / step / observe).

    alg = algorithm("tan-2N-cor1", target, schedule="backtracking")      # memoized: one per settings
    state = alg.init(key, MeanCov(mu0, Sigma0), rho=1.0)                 # host: checks the start
    trace = vilab.core.run(alg, key, state, 1000, rel_tol=1e-7, rel_tol_on="elbo")

One step of method ``name`` (see :mod:`vilab.algorithms.core` for the update rules and the paper
equation of each) is: the gradients the update takes (``Method.takes``: exact expectations, or
Tan (2025) Thm 2 / Stein-Price estimates from the step's key), then

* ``schedule="constant"``: the update with rho = ``state.hyper["rho"]``; a proposal that is not a
  Gaussian any more (non-PD, singular factor, non-finite, exploding) is reported with the shared
  failure codes (2-6 of :data:`vilab.core.CODES`) and the runner rejects it;
* ``schedule="backtracking"`` (Tan (2025) Sec. 4.1): the largest rho in {rho0, rho0 f, rho0 f^2, ...}
  (f = ``backtrack_factor``, ``max_backtracks`` rungs, restarted at rho0 = ``hyper["rho"]`` every
  step) whose update keeps q a Gaussian AND increases the exact ELBO. The ladder of the *next* step
  is evaluated at the end of each step (``state.ahead``) so that a step after which no rung
  increases the ELBO reports code 10 ("stalled": stationary to machine precision, or no rung
  small enough) while still
  counting as the step it is; when ``hyper["rho"]`` was changed (:func:`vilab.core.resume`) the
  ladder is evaluated afresh.

The state carries the ELBO (and, on Gaussian targets, KL(q || p)) of its iterate, computed by the
step, so ``observe`` only reads them: Tan's Table 2 rule is ``run(..., rel_tol=1e-7,
rel_tol_on="elbo")``, a KL tolerance ``run(..., below=1e-8, below_on="kl")``.

A target of a parametric family (``target.family``) is served by one step per family: the member's
parameters travel in the state (``state.params``) and the step rebuilds the target from them
(``target.family_fn``). ``algorithm(name, member)`` returns an Algorithm whose ``init`` runs on that
member and whose step and observe are the family's, so a new member reuses the compiled loop.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..core import Algorithm
from ..core.algorithm import range_code_factor
from ..core.cache import ProgramCache, identity_key
from ..core.runner import positive_number, whole_number
from ..family import natgrad as ng
from ..family.gaussian import (
    KINDS,
    CholCov,
    CholPrec,
    MeanCov,
    check_factor,
    check_mean_cov,
    from_mean_cov,
    to_mean_cov,
)
from ..targets import Target, check_point, check_positive
from . import oracle
from .core import Method, State, get_method, gradients, logdet_sigma_of, sigma_of, sqrt_of, valid_code

__all__ = ["algorithm", "CatalogueState", "Ahead", "SCHEDULES", "STALLED", "trace_count", "is_gaussian", "initial_state",
           "single_draw_algorithm", "SingleDrawState", "SINGLE_DRAW_PATHS"]

SCHEDULES = ("constant", "backtracking")
STALLED = 10  # the backtracking ladder found no step size that increases the ELBO
# "stalled", not "converged": an empty ladder does not prove an optimum (it happens at a stationary
# point to machine precision, and also far from one when every rung overshoots or round-off hides
# the increase); see vilab.core.trace.STATUSES
_CODES = {STALLED: ("stalled", "no step size in the backtracking ladder increased the ELBO (stationary to "
                               "machine precision, or every rung overshoots: try a smaller first step size)")}
_ALGORITHMS = ProgramCache("vilab.algorithms catalogue", maxsize=64)
_MEMBERS = ProgramCache("vilab.algorithms catalogue, family members", maxsize=64)
_SINGLE = ProgramCache("vilab.algorithms single-draw natural step", maxsize=16)
_TRACES = [0]


def trace_count() -> int:
    """How many times a catalogue step has been traced (compiled) in this process. A run or sweep
    that reuses a compiled loop (a new start, step size, tolerance, key, or a new member of a cached
    family) leaves it unchanged."""
    return _TRACES[0]


class Ahead(NamedTuple):
    """The backtracking ladder's choice from an iterate: the accepted proposal (mean, chart matrix,
    Sigma, ELBO, KL), its step size, whether any rung was accepted, and the rho0 it was built with."""

    mu: jax.Array
    M: jax.Array
    Sigma: jax.Array
    elbo: jax.Array
    kl: jax.Array
    rho: jax.Array
    accept: jax.Array
    rho0: jax.Array


class CatalogueState(NamedTuple):
    """mu, M (the chart's matrix: Sigma, P, C or T), Sigma, the ELBO and KL(q || p) of the iterate
    (0 where the target is not Gaussian; kept by the backtracking rule, which computes them anyway,
    NaN after a constant step: observe computes them where they are read), ``hyper = {"rho": ...}``,
    the family member's params (None for a target without a family) and the backtracking ladder's
    next proposal (None for a constant step size)."""

    mu: jax.Array
    M: jax.Array
    Sigma: jax.Array
    elbo: jax.Array
    kl: jax.Array
    hyper: dict
    params: Any
    ahead: Any


def is_gaussian(target: Target) -> bool:
    return bool(target.quadratic and target.cov is not None)


def _gaussian_terms(target: Target):
    """(m, P = Sigma_p^-1, log det P) of a Gaussian target, for KL(q || p): numpy constants for a
    concrete target, jax values of the traced parameters for a family member rebuilt in the step."""
    if target.traced:
        P = jnp.linalg.inv(target.cov)
        return target.mean, P, jnp.linalg.slogdet(P)[1]
    P = np.linalg.inv(target.cov)
    return jnp.asarray(target.mean), jnp.asarray(P), float(np.linalg.slogdet(P)[1])


def algorithm(name: str, target: Target, *, grads: str = "exact", schedule: str = "constant",
              n_samples: int = 1, n_points: int = 40, backtrack_factor: float = 0.1, max_backtracks: int = 16,
              blocks=None, local_sizes=None, global_size=None) -> Algorithm:
    """Method ``name`` of the catalogue (:func:`vilab.algorithms.list_methods`) on ``target`` as a
    :class:`vilab.core.Algorithm` (see the module docstring). Memoized: the same settings give the
    same object (so the runner reuses its compiled loops); a member of a target family gives the
    family's Algorithm. ValueError for unknown or inconsistent settings."""
    if not isinstance(target, Target):
        raise ValueError("target must be a vilab.targets.Target.")
    method = get_method(name)
    structure = {}
    for k, v in (("blocks", blocks), ("local_sizes", local_sizes), ("global_size", global_size)):
        if v is None:
            continue
        if k not in method.structure:
            raise ValueError(f"The option {k} describes a sparse factor; only "
                             f"{'tan-1S' if k == 'blocks' else 'tan-2S'} takes it, not {method.name}.")
        if k == "global_size":
            structure[k] = whole_number(v, "global_size", 0, True)
        else:
            if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
                raise ValueError(f"{k} must be a list of block sizes (whole numbers); got {v!r}.")
            structure[k] = tuple(whole_number(x, f"Every entry of {k}", 1, True) for x in v)
    if not isinstance(grads, str) or grads not in oracle.MODES:
        raise ValueError(f"grads must be one of {oracle.MODES}; got {grads!r}.")
    if not isinstance(schedule, str) or schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}; got {schedule!r}.")
    cfg = {"grads": grads, "schedule": schedule,
           "backtrack_factor": positive_number(backtrack_factor, "backtrack_factor"),
           "max_backtracks": whole_number(max_backtracks, "max_backtracks", 1, True),
           "n_samples": whole_number(n_samples, "n_samples", 1, True),
           "n_points": whole_number(n_points, "n_points", 2, True)}
    if grads == "exact" and not oracle.has_exact(target):
        raise ValueError(f"Exact gradients need a Gaussian or GLM target; {target.name!r} is neither. "
                         "Use grads='first' or grads='second' (stochastic estimates).")
    if schedule == "backtracking" and grads != "exact":
        raise ValueError("The backtracking rule compares exact ELBO values; use it with grads='exact'.")
    if not 0 < cfg["backtrack_factor"] < 1:
        raise ValueError("backtrack_factor must lie strictly between 0 and 1.")
    if cfg["max_backtracks"] < 1 or cfg["n_samples"] < 1 or cfg["n_points"] < 2:
        raise ValueError("max_backtracks and n_samples must be at least 1, n_points at least 2.")
    if method.structure:
        _sizes(structure, "blocks" if method.name == "tan-1S" else "local_sizes", target.dim)
    fam = target.family is not None
    who = ("family", target.family, target.family_fn) if fam else identity_key(target)
    key = (method.name, who, target.dim, tuple(sorted(cfg.items())), tuple(sorted(structure.items())))
    alg = _ALGORITHMS.get_or_build(key, lambda: _build(method, target, cfg, structure))
    if not fam:
        return alg
    # one Algorithm per member, whose init runs on that member; it shares the family's step and
    # observe functions, hence the family's compiled loops
    return _MEMBERS.get_or_build((key, identity_key(target)),
                                 lambda: dataclasses.replace(alg, init=functools.partial(alg.init, target=target)))


def srvn_gaussian(mu, C, m, Lam, rho):
    """Kumar et al. (2025) Eq. 17 / Alg. 1 on the Gaussian target N(m, Lambda^-1), where
    g = E_q[grad l] = Lambda (mu - m) and H = E_q[hess l] = Lambda exactly (l = -log p):

        C+ = C - rho C tril_half(C^T Lambda C - I),    m+ = mu - rho C C^T g   (the old C).

    The same update as the catalogue's general path, grad_C = tril(2 G C), G = (Sigma^-1 - Lambda) / 2,
    fed to Tan (2025) Thm 1(i) (C^T tril(X) and C^T X differ by a strictly upper triangular matrix,
    and C^T Sigma^-1 C = I), computed without Sigma^-1 (no Cholesky of Sigma, no triangular
    solve) and without autodiff of the constant Hessian: three d x d products instead of five and
    a factorisation."""
    d = C.shape[-1]
    A = C.T @ (Lam @ C) - jnp.eye(d, dtype=C.dtype)
    L = jnp.tril(A)
    L = L - 0.5 * L * jnp.eye(d, dtype=C.dtype)  # tril_half: strict lower triangle, diagonal halved
    return mu - rho * (C @ (C.T @ (Lam @ (mu - m)))), C - rho * (C @ L)


def _sizes(options, key, d):
    if key == "blocks":
        if options.get("blocks") is None:
            raise ValueError("Method tan-1S needs the block sizes of C: pass blocks=(d1, d2, ...).")
        sizes = tuple(int(s) for s in options["blocks"])
        total = sum(sizes)
    else:
        if options.get("local_sizes") is None or options.get("global_size") is None:
            raise ValueError("Method tan-2S needs local_sizes=(r1, ..., rn) and global_size=g (locals first).")
        sizes = tuple(int(s) for s in options["local_sizes"])
        total = sum(sizes) + int(options["global_size"])
    if total != d:
        raise ValueError(f"The block sizes add up to {total}, but the target has dimension {d}.")
    return sizes


def initial_state(method: Method | str, init, **options) -> State:
    """The method's starting state from ``init``: a vilab.family.gaussian parameterization (MeanCov,
    CholCov, CholPrec, Natural, ...) or a pair (mu, Sigma). A CholCov start is used as is by
    (mu, C) methods, a CholPrec start by (mu, T) methods (so signs of the factor are kept).
    Sparse methods project the start onto their pattern (block-diagonal C: Cholesky factors of
    the diagonal blocks of Sigma; arrow T: the Cholesky factor of Sigma^-1 restricted to the
    pattern). Raises ValueError for a non-PD or malformed start."""
    m = get_method(method) if isinstance(method, str) else method
    chart = m.chart
    if isinstance(init, CholCov) and chart == "chol_cov":
        mu, M = check_factor(init.mu, init.C, "C")
    elif isinstance(init, CholPrec) and chart == "chol_prec":
        mu, M = check_factor(init.mu, init.T, "T")
    else:
        if isinstance(init, tuple(KINDS.values())):
            if isinstance(init, (CholCov, CholPrec)):
                check_factor(*init, name="C" if isinstance(init, CholCov) else "T")
            mu, Sigma = (np.asarray(a) for a in to_mean_cov(init))
        elif isinstance(init, (tuple, list)) and len(init) == 2:
            mu, Sigma = init
        else:
            raise ValueError(
                "The start must be a Gaussian from vilab.family.gaussian (e.g. MeanCov(mu, Sigma)) or a pair (mu, Sigma)."
            )
        mu, Sigma = check_mean_cov(mu, Sigma)
        if chart == "mean_cov":
            M = Sigma
        elif chart == "mean_prec":
            M = np.linalg.inv(Sigma)
            M = 0.5 * (M + M.T)
        elif chart == "chol_cov":
            if m.name == "tan-1S":
                M = np.zeros_like(Sigma)
                o = 0
                for s in _sizes(options, "blocks", len(mu)):
                    M[o:o + s, o:o + s] = np.linalg.cholesky(Sigma[o:o + s, o:o + s])
                    o += s
            else:
                M = np.linalg.cholesky(Sigma)
        else:
            M = np.asarray(from_mean_cov(MeanCov(jnp.asarray(mu), jnp.asarray(Sigma)), "chol_prec").T)
    if m.name == "tan-1S":
        M = M * ng.block_mask(_sizes(options, "blocks", len(mu)))
    if m.name == "tan-2S":
        _sizes(options, "local_sizes", len(mu))
        M = M * ng.arrow_mask(options["local_sizes"], options["global_size"])
    return State(jnp.asarray(mu, jnp.float64), jnp.asarray(M, jnp.float64))


def _build(method, target0: Target, cfg: dict, structure: dict) -> Algorithm:

    chart, d = method.chart, target0.dim
    family = target0.family is not None
    rebuild = target0.family_fn if family else (lambda _params, t=target0: t)
    n_points, mode = cfg["n_points"], cfg["grads"]
    gauss = is_gaussian(target0)
    exact_elbo = oracle.has_exact(target0)
    z0 = jax.random.normal(jax.random.PRNGKey(20250), (256, d), dtype=jnp.float64)  # common random numbers
    J = cfg["max_backtracks"]
    # rho_j = rho0 / (1/f)^j: for f = 0.1 this is rho0 * 10^-j correctly rounded (10^j is exact),
    # which the chaotic Euclidean runs of Tan's Table 2 need (0.1^j accumulates rounding error)
    divisors = jnp.asarray((1.0 / cfg["backtrack_factor"]) ** np.arange(J, dtype=np.float64))
    backtracking = cfg["schedule"] == "backtracking"
    # SR-VN with exact gradients on a member of the Gaussian family: Kumar et al. Eq. 17 as printed
    # (H = Lambda, the target's constant Hessian), no inverse of Sigma (see srvn_gaussian)
    eq17 = (method.name == "srvn" and mode == "exact" and family and target0.family[0] == "gaussian_target"
            and "exact_elbo_grads" not in target0.info)

    def elbo_of(target, mu, M, Sigma):
        ld = logdet_sigma_of(chart, M)
        if exact_elbo:
            return oracle.elbo_exact(target, mu, Sigma, ld, n_points)
        return oracle.elbo_mc(target, mu, sqrt_of(chart, M), ld, z0)

    def kl_of(target, mu, M, Sigma):
        if not gauss:
            return jnp.zeros((), jnp.float64)
        m_t, P_t, ld_P = _gaussian_terms(target)
        return oracle.kl_to_gaussian(mu, Sigma, logdet_sigma_of(chart, M), m_t, P_t, ld_P)

    def propose(target, mu, M, grads, rho):
        mu2, M2 = method.update(mu, M, grads, rho, structure)
        S2 = sigma_of(chart, M2)
        code = valid_code(chart, mu2, M2, S2)
        safe = code == 0
        S_safe = jnp.where(safe, S2, jnp.eye(d))
        M_safe = jnp.where(safe, M2, jnp.eye(d))  # the chart matrix of N(0, I): a harmless stand-in
        L2 = jnp.where(safe, elbo_of(target, mu2, M_safe, S_safe), jnp.nan)
        return mu2, M2, S2, code, L2

    def ladder(target, mu, M, L, rho0):
        """Tan (2025) Sec. 4.1: every rung at once (vmapped), the largest accepted one."""
        grads = gradients(method, target, State(mu, M), mode, None, cfg["n_samples"], n_points, structure)
        props = jax.vmap(propose, in_axes=(None, None, None, None, 0))(target, mu, M, grads, rho0 / divisors)
        ok = (props[3] == 0) & (props[4] > L)
        j = jnp.argmax(ok)
        mu2, M2, S2, _, L2 = (p[j] for p in props)
        accept = jnp.any(ok)
        kl2 = kl_of(target, mu2, M2, jnp.where(accept, S2, jnp.eye(d)))
        return Ahead(mu2, M2, S2, L2, kl2, rho0 / divisors[j], accept, jnp.asarray(rho0, jnp.float64))

    def start(params, mu, M, rho):
        target = rebuild(params)
        S = sigma_of(chart, M)
        L = elbo_of(target, mu, M, S)
        kl = kl_of(target, mu, M, S)
        ahead = ladder(target, mu, M, L, rho) if backtracking else None
        return S, L, kl, ahead

    start_jit = jax.jit(start)

    def init(key, start_point, rho: float = 1.0, target: Target | None = None) -> CatalogueState:
        """The state at ``start_point`` (a vilab.family.gaussian parameterization or (mu, Sigma); host code:
        checks the start and converts it to the method's chart) with step size ``rho``. ``target``:
        the family member to run on (needed when this Algorithm serves a family)."""
        if family and target is None:
            raise ValueError("This algorithm serves a family of targets: pass target=<the member to run on>.")
        tgt = target0 if target is None else target
        if family:
            if tgt.family != target0.family or tgt.family_fn is not target0.family_fn:
                raise ValueError(f"The target {tgt.name!r} is not a member of the family this algorithm was built for.")
        elif tgt is not target0:
            raise ValueError("This algorithm was built for another target; build one with "
                             "vilab.algorithms.algorithm(name, target).")
        rho = check_positive(rho, "The step size")
        st = initial_state(method, start_point, **structure)
        if st.mu.shape != (d,):
            raise ValueError(f"The start has dimension {st.mu.shape[0]}, the target {d}.")
        check_point(tgt, np.asarray(st.mu))
        params = tgt.params if family else None
        S, L, kl, ahead = start_jit(params, st.mu, st.M, jnp.float64(rho))
        return CatalogueState(st.mu, st.M, S, L, kl, {"rho": jnp.float64(rho)}, params, ahead)

    def step(key, state: CatalogueState, batch):
        """One update of ``method`` (see its paper equation in ``Method.paper``)."""
        _TRACES[0] += 1  # a Python side effect: counts traces (compilations), not calls
        target = rebuild(state.params)
        rho0 = state.hyper["rho"]
        if not backtracking:
            if eq17:
                mu2, M2 = srvn_gaussian(state.mu, state.M, target.mean, target.info["precision"], rho0)
            else:
                grads = gradients(method, target, State(state.mu, state.M), mode, key, cfg["n_samples"], n_points,
                                  structure)
                mu2, M2 = method.update(state.mu, state.M, grads, rho0, structure)
            S2 = sigma_of(chart, M2)
            code = valid_code(chart, mu2, M2, S2)
            # the ELBO and KL of the new iterate are computed by observe, for the rows (or the
            # stopping rules) that read them: a thinned run does not pay for them every step
            nan = jnp.full((), jnp.nan, jnp.float64)
            return state._replace(mu=mu2, M=M2, Sigma=S2, elbo=nan, kl=nan), {"code": code, "step_size": rho0}
        a = jax.lax.cond(state.ahead.rho0 == rho0, lambda: state.ahead,
                         lambda: ladder(target, state.mu, state.M, state.elbo, rho0))
        # the ladder of the next step (from the accepted iterate); no rung accepted now (only after a
        # change of rho) or next: "stalled" (code 10)
        nxt = ladder(target, a.mu, a.M, a.elbo, rho0)
        pick = lambda new, old: jnp.where(a.accept, new, old)  # noqa: E731
        new = state._replace(mu=pick(a.mu, state.mu), M=pick(a.M, state.M), Sigma=pick(a.Sigma, state.Sigma),
                             elbo=pick(a.elbo, state.elbo), kl=pick(a.kl, state.kl),
                             ahead=jax.tree_util.tree_map(pick, nxt, state.ahead))
        code = jnp.where(a.accept & nxt.accept, 0, STALLED)
        return new, {"code": code, "step_size": jnp.where(a.accept, a.rho, jnp.nan)}

    def observe(state: CatalogueState) -> dict:
        if backtracking:  # the ladder computed them
            elbo, kl = state.elbo, state.kl
        else:
            target = rebuild(state.params)
            elbo = elbo_of(target, state.mu, state.M, state.Sigma)
            kl = kl_of(target, state.mu, state.M, state.Sigma)
        row = {"mean": state.mu, "cov": state.Sigma, "objective": kl if gauss else -elbo, "elbo": elbo,
               "factor": state.M}
        if gauss:
            row["kl"] = kl
        return row

    exact = mode == "exact" or exact_elbo
    objective_name = "KL(q || p)" if gauss else ("negative ELBO" if exact
                                                 else "negative ELBO (Monte Carlo, 256 fixed draws)")
    settings = {"method": method.name, "chart": method.chart, "takes": method.takes, **cfg, **structure,
                "paper": method.paper, "dim": d}
    return Algorithm(init, step, observe, name=method.name, objective_name=objective_name, codes=_CODES,
                     settings=settings)


# ---------------------------------------------------------------------------------------------
# Tan (explicit) Sec. 4: Algorithm 1b with one draw per step in O(d^2) (beside the catalogue's tan-1N)

#: the two ways :func:`single_draw_algorithm` computes the step: the O(d^2) form, or the dense O(d^3) product
SINGLE_DRAW_PATHS = ("sample", "dense")


class SingleDrawState(NamedTuple):
    """mu, C (Sigma = C C^T; no Sigma is kept, it would cost O(d^3) a step) and ``hyper = {"rho": ...}``."""

    mu: jax.Array
    C: jax.Array
    hyper: dict


def single_draw_algorithm(target: Target, *, path: str = "sample", record_factor: bool = False,
                          n_points: int = 40) -> Algorithm:
    """Tan (2025) Alg. 1N (Table 3) with the first-order Thm 2 estimate from ONE draw per step, i.e. the
    catalogue's ``algorithm("tan-1N", target, grads="first", n_samples=1)``, in the O(d^2) form of Tan
    (explicit) Sec. 4 (:func:`vilab.family.natgrad.natural_step_chol_cov_sample`). One step, with z ~ N(0, I) drawn
    from the step's key exactly as the catalogue draws it:

        theta = mu + C z,   g = grad log p(theta) + C^-T z   (= grad_theta h, h = log p - log q),
        mu+ = mu + rho C C^T g,   C+ = C + rho C Hbarbar,   Hbar = tril(C^T tril(g z^T)) = tril(w z^T), w = C^T g,

    where C Hbarbar comes from a reverse cumulative sum along the rows of C * w^T: with w, one triangular
    solve and one gradient of log p, a step costs O(d^2) plus the gradient, against the dense product
    C tril_half(C^T tril(g z^T)) (O(d^3)) and the catalogue's C C^T of every iterate (O(d^3)).
    ``path="dense"`` takes that dense product instead (same draws, same iterates to round-off: the
    reference the O(d^2) form is checked against).

    The state holds no Sigma; ``observe`` (run on recorded rows only) returns the mean, the variances
    (row sums of C * C, O(d^2)), the negative ELBO as the objective (exact for Gaussian and GLM targets, else
    the Monte Carlo estimate with 256 fixed draws of the catalogue; an O(d^3) cost per recorded row, so
    record sparsely at large d) and, with ``record_factor``, C itself (``Trace.extra["factor"]``). A step
    that leaves the Gaussians reports the shared codes (2 non-finite, 5 a zero on C's diagonal, 6 exploded,
    7/8 out of the sane range, read off C's diagonal in O(d)). Memoized on (target, path, record_factor,
    n_points). ValueError for an unknown path."""
    if not isinstance(target, Target):
        raise ValueError("target must be a vilab.targets.Target.")
    if not isinstance(path, str) or path not in SINGLE_DRAW_PATHS:
        raise ValueError(f"path must be one of {SINGLE_DRAW_PATHS} (the O(d^2) step or the dense O(d^3) one); "
                         f"got {path!r}.")
    cfg = (path, bool(record_factor), whole_number(n_points, "n_points", 2, True))
    return _SINGLE.get_or_build((identity_key(target), cfg), lambda: _build_single(target, *cfg))


def _materialised(x):
    """``x`` itself, computed once. XLA on CPU fuses the inverse-error-function tail of a fresh normal draw into
    every d x d consumer of the draw (the O(d^2) step's entries read z_b), evaluating it d^2 times instead of d:
    at d = 500 that made the step 3-4 times slower (and ``lax.optimization_barrier`` is dropped on CPU). A
    conditional is a fusion boundary; both branches return x for a finite draw (a non-finite one, which a
    normal draw never is, becomes NaN and the step reports code 2)."""
    return jax.lax.cond(jnp.all(jnp.isfinite(x)), lambda a: a, lambda a: jnp.full_like(a, jnp.nan), x)


def _build_single(target: Target, path: str, record_factor: bool, n_points: int) -> Algorithm:
    from jax.scipy.linalg import solve_triangular

    from ..family import natgrad as ng

    d = target.dim
    exact_elbo = oracle.has_exact(target)
    z0 = jax.random.normal(jax.random.PRNGKey(20250), (256, d), dtype=jnp.float64)  # the catalogue's draws
    tan1n = get_method("tan-1N")

    def init(key, start_point, rho: float = 1.0) -> SingleDrawState:
        """The state at ``start_point`` (a vilab.gaussian parameterization or (mu, Sigma); CholCov is used as is)."""
        rho = check_positive(rho, "The step size")
        st = initial_state(tan1n, start_point)
        if st.mu.shape != (d,):
            raise ValueError(f"The start has dimension {st.mu.shape[0]}, the target {d}.")
        check_point(target, np.asarray(st.mu))
        return SingleDrawState(st.mu, st.M, {"rho": jnp.float64(rho)})

    def step(key, state: SingleDrawState, batch):
        """One single-draw natural step (Tan (explicit) Sec. 4, Alg. 1b; the draw as the catalogue's)."""
        mu, C, rho = state.mu, state.C, state.hyper["rho"]
        zz = _materialised(jax.random.normal(key, (1, d), dtype=mu.dtype))  # shapes as in the catalogue's oracle
        theta = mu + zz @ C.T
        g = (target.grad_batch(theta) + solve_triangular(C.T, zz.T, lower=False).T)[0]  # grad_theta h
        z = zz[0]
        if path == "sample":
            n_mu, n_C = ng.natural_step_chol_cov_sample(C, z, g)
        else:
            n_mu, n_C = ng.natural_grad_chol_cov(mu, C, g, jnp.tril(jnp.outer(g, z)))
        mu2, C2 = mu + rho * n_mu, C + rho * n_C
        dg = jnp.abs(jnp.diag(C2))
        finite = jnp.all(jnp.isfinite(mu2)) & jnp.all(jnp.isfinite(C2))
        singular = jnp.min(dg) <= 1e-150
        big = (jnp.max(jnp.abs(mu2)) > 1e12) | (jnp.max(jnp.abs(C2)) > 1e12)  # |Sigma| <= d max|C|^2
        rng = range_code_factor(jnp.where(finite & ~singular, dg, 1.0))
        code = jnp.where(~finite, 2, jnp.where(singular, 5, jnp.where(big, 6, rng)))
        return state._replace(mu=mu2, C=C2), {"code": code, "step_size": rho}

    def observe(state: SingleDrawState) -> dict:
        mu, C = state.mu, state.C
        ld = 2.0 * jnp.sum(jnp.log(jnp.abs(jnp.diag(C))))
        elbo = oracle.elbo_exact(target, mu, C @ C.T, ld, n_points) if exact_elbo else oracle.elbo_mc(target, mu, C, ld, z0)
        row = {"mean": mu, "var": jnp.sum(C * C, axis=1), "objective": -elbo, "elbo": elbo}
        if record_factor:
            row["factor"] = C
        return row

    settings = {"method": "tan-1N, single draw (Tan explicit Sec. 4)", "path": path, "grads": "first",
                "n_samples": 1, "chart": "chol_cov", "dim": d,
                "paper": "Tan (2025) Alg. 1N (Table 3); Tan (explicit) Sec. 4, the O(d^2) single-draw step"}
    objective_name = "negative ELBO" if exact_elbo else "negative ELBO (Monte Carlo, 256 fixed draws)"
    return Algorithm(init, step, observe, name=f"tan-1N-single-draw ({path})", objective_name=objective_name,
                     settings=settings)
