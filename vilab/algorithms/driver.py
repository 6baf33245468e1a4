"""``run`` / ``run_sweep``: drive a method with a step-size rule and stopping rules, in one jit.

The loop is a ``jax.lax.while_loop`` writing into preallocated buffers (so a run stops as soon
as a stopping rule fires); a sweep over step sizes is the same loop under ``jax.vmap``. Compiled
loops are cached per (method, target, gradient mode, step rule, buffer length): the starting
point, step size(s), key, ``n_steps`` and the tolerances are run-time arguments, and the buffer
length is ``n_steps`` rounded up to a power of two, so moving a slider (start, step size,
maximum steps within the same power of two, tolerance) reuses the compiled loop.

A target of a parametric family (``target.family``, see :class:`vilab.targets.Target`) is keyed
by its family, not by the object: its ``params`` are a run-time argument too, and the loop
rebuilds the target inside the trace (``target.family_fn(params)``), so gradients, Hessians,
the exact ELBO and the Gaussian KL all come from the traced parameters and a new member (a moved
condition-number or degrees-of-freedom slider) reuses the compiled loop. Other targets are keyed
by identity and closed over as constants.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import natgrad as ng
from ..gaussian import KINDS, CholCov, CholPrec, MeanCov, check_factor, check_mean_cov, from_mean_cov, to_mean_cov
from ..targets import Target, check_point, check_positive
from ..core.trace import Trace, diverged_status
from . import oracle
from .core import (REASONS, Method, State, get_method, gradients, logdet_sigma_of, sigma_of, sqrt_of,
                   valid_code)

__all__ = ["run", "run_sweep", "step", "initial_state", "trace_count", "SCHEDULES"]

SCHEDULES = ("constant", "backtracking")
_STALLED = 7
_CACHE: dict = {}
_TRACES = [0]  # loops traced so far: see trace_count()


def trace_count() -> int:
    """How many loops have been traced (hence compiled) in this process; a run or sweep that reuses
    a compiled loop (a new start, step size, tolerance, or a new member of a cached family) leaves
    it unchanged."""
    return _TRACES[0]


def _bucket(n: int, least: int = 8) -> int:
    """Buffer length for ``n`` entries: the next power of two (at least ``least``), so that a
    compiled loop serves every n_steps (or number of step sizes) up to it."""
    return max(least, 1 << (int(n) - 1).bit_length())


def initial_state(method: Method | str, init, **options) -> State:
    """The method's starting state from ``init``: a vilab.gaussian parameterization (MeanCov,
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
                "The start must be a Gaussian from vilab.gaussian (e.g. MeanCov(mu, Sigma)) or a pair (mu, Sigma)."
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


def _config(method, target, options):
    """Split ``options`` into the static configuration of the compiled loop, the run-time
    tolerances and the sparsity structure; ValueError for anything unknown or inconsistent."""
    opts = dict(options)
    grads = opts.pop("grads", "exact")
    schedule = opts.pop("schedule", "constant")
    cfg = {
        "grads": grads,
        "schedule": schedule,
        "backtrack_factor": float(opts.pop("backtrack_factor", 0.1)),
        "max_backtracks": int(opts.pop("max_backtracks", 16)),
        "n_samples": int(opts.pop("n_samples", 1)),
        "n_points": int(opts.pop("n_points", 40)),
    }
    tols = {"rel_tol": opts.pop("rel_tol", None), "kl_tol": opts.pop("kl_tol", None)}
    structure = {}
    for k in ("blocks", "local_sizes", "global_size"):
        if k in opts:
            v = opts.pop(k)
            if k not in method.structure:
                raise ValueError(f"The option {k} describes a sparse factor; only "
                                 f"{'tan-1S' if k == 'blocks' else 'tan-2S'} takes it, not {method.name}.")
            structure[k] = tuple(int(x) for x in v) if k != "global_size" else int(v)
    if opts:
        raise ValueError(f"Unknown option(s) {sorted(opts)} for run(); see vilab.algorithms.run's docstring.")
    if grads not in oracle.MODES:
        raise ValueError(f"grads must be one of {oracle.MODES}; got {grads!r}.")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}; got {schedule!r}.")
    if grads == "exact" and not oracle.has_exact(target):
        raise ValueError(
            f"Exact gradients need a Gaussian or GLM target; {target.name!r} is neither. "
            "Use grads='first' or grads='second' (stochastic estimates)."
        )
    if schedule == "backtracking" and grads != "exact":
        raise ValueError("The backtracking rule compares exact ELBO values; use it with grads='exact'.")
    if not 0 < cfg["backtrack_factor"] < 1:
        raise ValueError("backtrack_factor must lie strictly between 0 and 1.")
    if cfg["max_backtracks"] < 1 or cfg["n_samples"] < 1 or cfg["n_points"] < 2:
        raise ValueError("max_backtracks and n_samples must be at least 1, n_points at least 2.")
    for k in ("rel_tol", "kl_tol"):
        if tols[k] is not None:
            tols[k] = check_positive(tols[k], f"The tolerance {k}")
    if tols["kl_tol"] is not None and not _is_gaussian(target):
        raise ValueError("kl_tol needs a Gaussian target (its KL to q is known in closed form); use rel_tol.")
    if method.structure:
        _sizes(structure, "blocks" if method.name == "tan-1S" else "local_sizes", target.dim)
    return cfg, tols, structure


def _is_gaussian(target: Target) -> bool:
    return bool(target.quadratic and target.cov is not None)


def _gaussian_terms(target: Target):
    """(m, P = Sigma_p^-1, log det P) of a Gaussian target, for KL(q || p): numpy constants for a
    concrete target, jax values of the traced parameters for a family member rebuilt in the loop."""
    if target.traced:
        P = jnp.linalg.inv(target.cov)
        return target.mean, P, jnp.linalg.slogdet(P)[1]
    P = np.linalg.inv(target.cov)
    return jnp.asarray(target.mean), jnp.asarray(P), float(np.linalg.slogdet(P)[1])


def _build(method: Method, d: int, rebuild, n_buf: int, cfg: dict, structure: dict):
    """The loop ``core(params, mu0, M0, rho0, key, n_max, rel_tol, kl_tol)`` with buffers of n_buf
    steps; n_max <= n_buf and the tolerances are traced (a disabled tolerance is passed as -inf).
    ``rebuild(params)`` gives the target inside the trace: ``family_fn`` for a family member
    (params traced), else the target itself (params None, the target's arrays are constants)."""
    chart = method.chart
    n_points, mode = cfg["n_points"], cfg["grads"]
    z0 = jax.random.normal(jax.random.PRNGKey(20250), (256, d), dtype=jnp.float64)
    J = cfg["max_backtracks"]
    # rho_j = rho0 / (1/f)^j: for f = 0.1 this is rho0 * 10^-j correctly rounded (10^j is exact),
    # which the chaotic Euclidean runs of Tan's Table 2 need (0.1^j accumulates rounding error)
    divisors = (1.0 / cfg["backtrack_factor"]) ** np.arange(J, dtype=np.float64)

    def core(params, mu0, M0, rho0, key, n_max, rel_tol, kl_tol):
        _TRACES[0] += 1  # a Python side effect: counts traces (= compilations), not calls
        target = rebuild(params)
        exact_elbo = oracle.has_exact(target)
        gauss = _is_gaussian(target)
        if gauss:
            m_t, P_t, ld_P = _gaussian_terms(target)

        def elbo_of(mu, M, Sigma):
            ld = logdet_sigma_of(chart, M)
            if exact_elbo:
                return oracle.elbo_exact(target, mu, Sigma, ld, n_points)
            return oracle.elbo_mc(target, mu, sqrt_of(chart, M), ld, z0)

        def kl_of(mu, M, Sigma):
            if not gauss:
                return jnp.nan
            return oracle.kl_to_gaussian(mu, Sigma, logdet_sigma_of(chart, M), m_t, P_t, ld_P)

        def propose(mu, M, grads, rho):
            mu2, M2 = method.update(mu, M, grads, rho, structure)
            S2 = sigma_of(chart, M2)
            code = valid_code(chart, mu2, M2, S2)
            safe = code == 0
            S_safe = jnp.where(safe, S2, jnp.eye(d))
            M_safe = jnp.where(safe, M2, jnp.eye(d))  # the chart matrix of N(0, I): a harmless stand-in
            L2 = jnp.where(safe, elbo_of(mu2, M_safe, S_safe), jnp.nan)
            return mu2, M2, S2, code, L2

        S0 = sigma_of(chart, M0)
        L0 = elbo_of(mu0, M0, S0)
        kl0 = kl_of(mu0, M0, S0)
        means = jnp.zeros((n_buf + 1, d)).at[0].set(mu0)
        Ms = jnp.zeros((n_buf + 1, d, d)).at[0].set(M0)
        Ss = jnp.zeros((n_buf + 1, d, d)).at[0].set(S0)
        Ls = jnp.full((n_buf + 1,), jnp.nan).at[0].set(L0)
        kls = jnp.full((n_buf + 1,), jnp.nan).at[0].set(kl0)
        rhos = jnp.full((n_buf,), jnp.nan)
        done0 = kl0 < kl_tol
        carry = (0, mu0, M0, L0, key, done0, jnp.where(done0, 1, 0), means, Ms, Ss, Ls, kls, rhos)

        def cond(c):
            return (c[0] < n_max) & (~c[5])

        def body(c):
            k, mu, M, L, key, done, code, means, Ms, Ss, Ls, kls, rhos = c
            key, sub = jax.random.split(key)
            grads = gradients(method, target, State(mu, M), mode, sub, cfg["n_samples"], n_points, structure)
            if cfg["schedule"] == "constant":
                mu2, M2, S2, c2, L2 = propose(mu, M, grads, rho0)
                rho = rho0
                accept = c2 == 0
                fail = c2
            else:
                props = jax.vmap(propose, in_axes=(None, None, None, 0))(mu, M, grads, rho0 / divisors)
                ok = (props[3] == 0) & (props[4] > L)
                j = jnp.argmax(ok)
                mu2, M2, S2, c2, L2 = (p[j] for p in props)
                rho = rho0 / jnp.asarray(divisors)[j]
                accept = jnp.any(ok)
                fail = _STALLED
            kl2 = kl_of(mu2, M2, jnp.where(accept, S2, jnp.eye(d)))
            means = means.at[k + 1].set(jnp.where(accept, mu2, means[k + 1]))
            Ms = Ms.at[k + 1].set(jnp.where(accept, M2, Ms[k + 1]))
            Ss = Ss.at[k + 1].set(jnp.where(accept, S2, Ss[k + 1]))
            Ls = Ls.at[k + 1].set(jnp.where(accept, L2, Ls[k + 1]))
            kls = kls.at[k + 1].set(jnp.where(accept, kl2, kls[k + 1]))
            rhos = rhos.at[k].set(jnp.where(accept, rho, rhos[k]))
            # Tan (2025) Table 2 rule |L_new - L_old| < tol |L_new|, or KL < tol (Gaussian targets)
            conv = (jnp.abs(L2 - L) < rel_tol * jnp.abs(L2)) | (kl2 < kl_tol)
            new_code = jnp.where(accept, jnp.where(conv, 1, 0), fail)
            new_done = new_code != 0
            k2 = jnp.where(accept, k + 1, k)
            mu_n = jnp.where(accept, mu2, mu)
            M_n = jnp.where(accept, M2, M)
            L_n = jnp.where(accept, L2, L)
            return (k2, mu_n, M_n, L_n, key, new_done, new_code, means, Ms, Ss, Ls, kls, rhos)

        out = jax.lax.while_loop(cond, body, carry)
        k, code = out[0], out[6]
        return {"k": k, "code": code, "mean": out[7], "factor": out[8], "cov": out[9],
                "elbo": out[10], "kl": out[11], "rho": out[12]}

    return core


def _compiled(method, target, n_buf, cfg, structure, vmapped: bool):
    """The jitted loop for (method, target or its family, buffer length, configuration); a family
    member is keyed by (family, family_fn), so members share one loop (their params are an argument)."""
    fam = target.family is not None
    who = ("family", target.family, target.family_fn) if fam else id(target)
    key = (method.name, who, n_buf, tuple(sorted(cfg.items())), tuple(sorted(structure.items())), vmapped)
    hit = _CACHE.get(key)
    if hit is not None and (fam or hit[0] is target):
        return hit[1]
    rebuild = target.family_fn if fam else (lambda _params, t=target: t)
    core = _build(method, target.dim, rebuild, n_buf, cfg, structure)
    fn = jax.jit(jax.vmap(core, in_axes=(None, None, None, 0, 0, None, None, None)) if vmapped else core)
    if len(_CACHE) > 256:
        _CACHE.clear()
    _CACHE[key] = (None if fam else target, fn)
    return fn


def _params(target):
    """The run-time target argument of the loop: the family member's params, else None."""
    return target.params if target.family is not None else None


def _tol_args(n_steps, tols):
    """Run-time arguments of the loop: n_max and the tolerances (-inf where disabled)."""
    off = -np.inf
    return (jnp.int32(n_steps), jnp.float64(off if tols["rel_tol"] is None else tols["rel_tol"]),
            jnp.float64(off if tols["kl_tol"] is None else tols["kl_tol"]))


def _to_trace(method, target, cfg, out) -> Trace:
    """A Trace from the loop's buffers (numpy arrays), cut to the steps taken."""
    k, code = int(out["k"]), int(out["code"])
    n = k + 1
    gauss = _is_gaussian(target)
    note = ""
    if code == 0:
        status = "max_steps"
    elif code == 1:
        status = "converged"
    elif code == _STALLED:
        status = "converged"
        note = "no step size in the backtracking ladder increased the ELBO (stationary to machine precision)"
    else:
        status = diverged_status(REASONS.get(code, "unknown failure"))
    elbo = np.asarray(out["elbo"][:n])
    kl = np.asarray(out["kl"][:n])
    extra = {"elbo": elbo, "factor": np.asarray(out["factor"][:n]), "chart": method.chart,
             "grads": cfg["grads"], "schedule": cfg["schedule"], "paper": method.paper}
    if gauss:
        extra["kl"] = kl
    if note:
        extra["note"] = note
    exact = cfg["grads"] == "exact" or oracle.has_exact(target)
    return Trace(
        mean=np.asarray(out["mean"][:n]), cov=np.asarray(out["cov"][:n]),
        objective=kl if gauss else -elbo, step_sizes=np.asarray(out["rho"][:k]), status=status,
        method=method.name,
        objective_name="KL(q || p)" if gauss else ("negative ELBO" if exact else "negative ELBO (Monte Carlo, 256 fixed draws)"),
        extra=extra,
    )


def _prepare(name, target, init, n_steps, options):
    if not isinstance(target, Target):
        raise ValueError("target must be a vilab.targets.Target.")
    method = get_method(name)
    if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)) or n_steps < 1:
        raise ValueError(f"n_steps must be a positive integer; got {n_steps!r}.")
    cfg, tols, structure = _config(method, target, options)
    state = initial_state(method, init, **structure)
    if state.mu.shape != (target.dim,):
        raise ValueError(f"The start has dimension {state.mu.shape[0]}, the target {target.dim}.")
    check_point(target, np.asarray(state.mu))
    return method, cfg, tols, structure, state


def run(name: str, target: Target, init, n_steps: int, step_size: float, key=None, **options) -> Trace:
    """Run method ``name`` (see :func:`list_methods`) on ``target`` from ``init`` for at most
    ``n_steps`` steps and return a :class:`vilab.core.Trace`.

    step_size : rho (constant rule) or the first rung rho0 of the backtracking ladder.
    key : jax PRNG key for stochastic gradients (default PRNGKey(0)).
    options :
      grads = "exact" | "first" | "second"   exact expectations, or Tan Thm 2 / Stein-Price estimates
      n_samples = 1                          draws per step for stochastic gradients
      schedule = "constant" | "backtracking" Tan (2025) Sec. 4.1: largest rho in
                                             {rho0, rho0 f, rho0 f^2, ...} (f = backtrack_factor = 0.1,
                                             max_backtracks = 16 rungs) keeping q proper AND
                                             increasing the ELBO, restarted at rho0 every step
      rel_tol = None                         stop when |L_new - L_old| < rel_tol |L_new| (Tan Table 2: 1e-7)
      kl_tol = None                          stop when KL(q || p) < kl_tol (Gaussian targets)
      n_points = 40                          Gauss-Hermite nodes for GLM targets
      blocks=(...), local_sizes=(...), global_size=g   structure of tan-1S / tan-2S

    Trace: mean (n+1, d), cov (n+1, d, d), objective (KL for Gaussian targets, else negative ELBO),
    step_sizes (n,), status "converged" / "max_steps" / "diverged: <reason>" (a run that leaves
    the Gaussian family stops and keeps the iterates before the failure); extra: elbo (n+1,),
    factor (n+1, d, d) = the chart's matrix (Sigma, P, C or T), kl, chart, paper.
    Bad input (unknown method or option, step size <= 0, a start that is not a proper Gaussian
    or where the target's log density is not finite) raises ValueError.
    """
    method, cfg, tols, structure, state = _prepare(name, target, init, n_steps, options)
    rho0 = check_positive(step_size, "The step size")
    key = jax.random.PRNGKey(0) if key is None else key
    fn = _compiled(method, target, _bucket(n_steps), cfg, structure, vmapped=False)
    out = jax.device_get(fn(_params(target), state.mu, state.M, jnp.float64(rho0), key, *_tol_args(n_steps, tols)))
    return _to_trace(method, target, cfg, out)


def run_sweep(name: str, target: Target, init, n_steps: int, step_sizes, key=None, **options) -> list[Trace]:
    """Like :func:`run` for many step sizes at once (one vmapped, compiled loop); one Trace each.
    Stochastic runs get independent keys split from ``key``."""
    method, cfg, tols, structure, state = _prepare(name, target, init, n_steps, options)
    rhos = np.atleast_1d(np.asarray(step_sizes, dtype=np.float64))
    if rhos.ndim != 1 or rhos.size == 0:
        raise ValueError("step_sizes must be a non-empty list of numbers.")
    for r in rhos:
        check_positive(r, "Every step size")
    key = jax.random.PRNGKey(0) if key is None else key
    n = rhos.size
    keys = jax.random.split(key, n)
    # pad to a power of two (repeating the last entry) so that sweeps of similar length share a compile
    pad = _bucket(n, least=4) - n
    rhos_p = np.concatenate([rhos, np.full(pad, rhos[-1])])
    keys_p = jnp.concatenate([keys, jnp.repeat(keys[-1:], pad, axis=0)])
    fn = _compiled(method, target, _bucket(n_steps), cfg, structure, vmapped=True)
    out = jax.device_get(fn(_params(target), state.mu, state.M, jnp.asarray(rhos_p), keys_p,
                            *_tol_args(n_steps, tols)))
    return [_to_trace(method, target, cfg, {k: v[i] for k, v in out.items()}) for i in range(n)]


def step(name: str, target: Target, state: State, step_size, key=None, grads: str = "exact",
         n_samples: int = 1, n_points: int = 40, **structure) -> State:
    """One update of method ``name`` from ``state`` (blackjax-style step; jit-able in state)."""
    method = get_method(name)
    key = jax.random.PRNGKey(0) if key is None else key
    g = gradients(method, target, state, grads, key, n_samples, n_points, structure)
    return method.step(state, g, step_size, **structure)
