"""The BONG grid as vilab.core Algorithms, the streaming entry point and the test metrics.

Every cell of the grid (:mod:`vilab.online.grid`) is a :class:`vilab.core.Algorithm`
(:func:`algorithm`): its state is the belief psi_t, and one step is one time step of Jones, Chang &
Murphy Alg. 1: the predict step, then the update of Alg. 3 (:func:`vilab.online.grid.update`). By
default the parameters are static and the predict step is the identity (Alg. 2, psi_{t|t-1} = psi_{t-1});
with ``dynamics=(gamma, Q)`` it is the random walk theta_t ~ N(gamma theta_{t-1}, Q) of Sec. 3
(:func:`vilab.online.families.predict`), for non-stationary streams.
The data stream comes in through :func:`vilab.core.run`'s ``batches``: ``(X, Yenc)`` with one
leading entry per example. :func:`stream` runs a method over a stream with checkpoints and returns
a :class:`vilab.core.Trace`.

Metrics (Jones, Chang & Murphy Sec. 5 and App. B.2), from :func:`make_evaluator`:
  nlpd_plugin  -mean log p(y | f(x, mu))                               ("NLPD-PI")
  nlpd_mc      -mean log (1/S) sum_s p(y | f(x, theta_s)), theta_s ~ q  (footnote 2: averages
               PROBABILITIES with logsumexp, not logits; digest typo item 9)
  nlpd_lin     the same with the logit-linearised model f(x, mu) + J(x)(theta_s - mu)
               (GLM predictive of Immer et al.; digest typo item 8)
  err_*        misclassification rate of the most probable class (RMSE for a Gaussian
               likelihood), for each predictive.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from functools import reduce
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import core
from ..core.checks import integer, real_array
from ..core.cache import memoize
from ..core.trace import diverged_status
from .families import DLR, FC, describe_dynamics, dynamics_hyper, marginal_variances, predict, sample
from .grid import Method, update
from .likelihoods import encode_all

__all__ = ["OnlineState", "algorithm", "stream", "belief_path", "make_evaluator", "METRICS", "UNHEALTHY"]

METRICS = ("nlpd_plugin", "nlpd_mc", "nlpd_lin", "err_plugin", "err_mc", "err_lin")

#: the step code of a belief that left the family (see :func:`_healthy`)
UNHEALTHY = 10
_UNHEALTHY_REASON = "non-finite mean or non-positive variance"


class OnlineState(NamedTuple):
    """State of a BONG-grid Algorithm.

    belief : psi_t (FC, Diag or DLR of :mod:`vilab.online.families`).
    t : the number of examples seen (int32).
    key : the stream's PRNG key; the draws of time step t come from fold_in(key, t) (then
        fold_in(., i) for inner iteration i), a function of t alone, so a run's numbers do not
        depend on how it is chunked, thinned or resumed.
    mark : whether ``observe`` evaluates the test metrics of this belief (set by the step from the
        optional third entry of its batch; True otherwise). :func:`stream` marks the checkpoints.
    hyper : run-time settings: {"alpha": learning rate} for blr, bog and bbb; {} for bong (alpha = 1
        by definition, Eq. 3); plus {"gamma", "Q"} when the run has dynamics (the predict step,
        :func:`vilab.online.families.dynamics_hyper`), so gamma and Q can change without recompiling.
    """

    belief: Any
    t: jax.Array
    key: jax.Array
    mark: jax.Array
    hyper: dict


def _healthy(b):
    """Finite mean and a usable covariance, checked after every step in O(P) (O(P) more for FC).

    FC: finite positive diagonal of Sigma (full positive definiteness is checked when a
    checkpoint samples from it); Diag: finite positive variances; DLR: finite W and a positive
    diagonal Upsilon, which makes Upsilon + W W^T positive definite (and is what the exact sampler
    needs). No Woodbury solve here: it ran on every step and dominated the DLR step time.
    """
    ok = jnp.all(jnp.isfinite(b.mu))
    if isinstance(b, DLR):
        return ok & jnp.all(jnp.isfinite(b.W)) & jnp.all(jnp.isfinite(b.ups)) & jnp.all(b.ups > 0)
    v = marginal_variances(b)
    return ok & jnp.all(jnp.isfinite(v)) & jnp.all(v > 0)


def _raw_key(key):
    key = core.check_key(key, "An online run")
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    return key


@memoize("vilab.online.runner algorithms", maxsize=64)
def algorithm(method: Method, f: Callable, lik, evaluate: Callable | None = None, check: bool = True) -> core.Algorithm:
    """Grid method ``method`` (:func:`vilab.online.grid.make_method`) as a :class:`vilab.core.Algorithm`.

    f(x, theta) -> logits / mean for ONE example; lik from :mod:`vilab.online.likelihoods`;
    evaluate: None or an evaluator of :func:`make_evaluator` (its metrics are recorded per row).
    check: report a belief with a non-positive variance as a divergence (code 10); ``check=False``
    follows such a belief (the moment-parameter demos show a "covariance" turning indefinite);
    non-finite values stop a run either way.

    * ``init(key, prior, alpha=None, dynamics=None) -> OnlineState``: the belief psi_0 = ``prior`` (from
      :func:`vilab.online.families.init_belief`); ``key`` is the stream's key (see
      :class:`OnlineState`); ``alpha`` defaults to ``method.alpha``; ``dynamics``: None (static
      parameters, Alg. 2) or (gamma, Q) of the random walk theta_t ~ N(gamma theta_{t-1}, Q)
      (:class:`vilab.online.families.Dynamics`; checked, ValueError for bad values); (1, 0) is the
      static model and runs as it (no predict step: the same bits as ``dynamics=None``).
    * ``step(key, state, (x_t, y_t[, mark]))``: Alg. 1: the predict step (the identity without
      dynamics, Alg. 2; else :func:`vilab.online.families.predict`, Sec. 3), then the update of Alg. 3
      (I inner iterations of (g, G) from Table 1 and the App. E step of the method's family). y_t is
      encoded (:func:`vilab.online.likelihoods.encode_all`). The runner's
      ``key`` is not used: the draws come from fold_in(state.key, t) (see :class:`OnlineState`).
      Code 10 (:data:`UNHEALTHY`): the new belief has a non-finite mean or a non-positive variance.
    * ``observe(state)``: mean, marginal variances (exact for DLR), and the test metrics of
      ``evaluate`` when the state is marked (NaN otherwise); objective = nlpd_plugin when evaluated.
    """
    name = method.label
    has_alpha = method.alg != "bong"

    def init(key, prior, alpha=None, dynamics=None):
        a = method.alpha if alpha is None else float(alpha)
        if not (a > 0 and math.isfinite(a)):
            raise ValueError("The learning rate alpha must be a positive number.")
        hyper = {"alpha": jnp.asarray(a, prior.mu.dtype)} if has_alpha else {}
        if dynamics is not None:
            dyn = dynamics_hyper(prior, dynamics)
            # (1, 0) is the static model: run it as such, so its numbers are the same bits as without dynamics
            # (a compiled identity predict step can move the last bit through XLA's fusion of the update)
            if not (float(dyn["gamma"]) == 1.0 and not np.any(np.asarray(dyn["Q"]))):
                hyper.update(dyn)
        return OnlineState(prior, jnp.int32(0), _raw_key(key), jnp.asarray(True), hyper)

    def step(key, state, batch):
        x, y = batch[0], batch[1]
        mark = jnp.asarray(batch[2], bool) if len(batch) > 2 else jnp.asarray(True)
        t = state.t + 1
        alpha = state.hyper["alpha"] if has_alpha else None
        b = state.belief
        if "gamma" in state.hyper:  # psi_{t|t-1} = predict(psi_{t-1}) (Alg. 1); without dynamics the identity (Alg. 2)
            b = predict(b, state.hyper["gamma"], state.hyper["Q"])
        nb = update(method, f, lik, b, x, y, jax.random.fold_in(state.key, t), alpha=alpha)
        code = jnp.where(_healthy(nb), 0, UNHEALTHY).astype(jnp.int32) if check else jnp.int32(0)
        return state._replace(belief=nb, t=t, mark=mark), {"code": code, "step_size": 1.0 if alpha is None else alpha}

    if evaluate is not None:
        probe = None

        def metrics(b, mark):
            nonlocal probe
            if probe is None:
                probe = jax.eval_shape(evaluate, b)
            nan = {k: jnp.full(s.shape, jnp.nan, s.dtype) for k, s in probe.items()}
            return jax.lax.cond(mark, lambda bb: dict(evaluate(bb)), lambda bb: nan, b)

    def observe(state):
        b = state.belief
        out = {"mean": b.mu, "var": marginal_variances(b)}
        if evaluate is None:
            out["objective"] = jnp.asarray(jnp.nan, b.mu.dtype)
            return out
        vals = metrics(b, state.mark)
        out.update(vals)
        out["objective"] = vals.get("nlpd_plugin", jnp.asarray(jnp.nan, b.mu.dtype))
        return out

    return core.Algorithm(
        init, step, observe, name=name,
        objective_name="test NLPD (plug-in)" if evaluate is not None else "none",
        codes={UNHEALTHY: (diverged_status(_UNHEALTHY_REASON), "")},
        settings={"method": method.name, "label": method.label, "alpha": method.alpha, "n_iter": method.n_iter,
                  "n_samples": method.n_samples},
        uses_key=False,  # draws of step t come from fold_in(state.key, t)
    )


def make_evaluator(f, lik, X_test, Y_test, n_mc: int = 50, key=None, which=("plugin", "mc", "lin")):
    """A jitted ``belief -> {metric: value}`` on a held-out set (see module docstring).

    Y_test: integer labels (categorical) or targets (Gaussian). ``which`` selects predictives.
    key: the PRNG key of the Monte Carlo predictives (one fixed key: every belief scored with the
    same draws of eps, common random numbers); needed when ``which`` holds "mc" (vilab.core.keys' policy).
    """
    Xte = _inputs(X_test, "The test inputs X_test")
    Yenc = encode_all(lik, Y_test, Xte.dtype if jnp.issubdtype(Xte.dtype, jnp.floating) else None)
    S = integer(n_mc, "The number of Monte Carlo draws n_mc", minimum=1)
    key = core.key_if_draws(key, "mc" in tuple(which), "make_evaluator's Monte Carlo predictive (which has 'mc')")

    def scores(logits_or_means, Yenc):  # (S, N, C) -> (nlpd, err)
        lp = jax.vmap(jax.vmap(lik.loglik))(logits_or_means, jnp.broadcast_to(Yenc, logits_or_means.shape[:2] + Yenc.shape[1:]))
        nlpd = -jnp.mean(jax.scipy.special.logsumexp(lp, axis=0) - jnp.log(lp.shape[0]))
        if lik.name == "categorical":
            probs = jnp.mean(jax.nn.softmax(logits_or_means, axis=-1), axis=0)
            err = jnp.mean(jnp.argmax(probs, axis=-1) != jnp.argmax(Yenc, axis=-1))
        else:
            err = jnp.sqrt(jnp.mean((jnp.mean(logits_or_means, axis=0) - Yenc) ** 2))
        return nlpd, err

    @jax.jit
    def _evaluate(b, Xte, Yenc, key):
        mu = b.mu
        out = {}
        f0 = jax.vmap(lambda x: f(x, mu))(Xte)  # (N, C)
        out["nlpd_plugin"], out["err_plugin"] = scores(f0[None], Yenc)
        if "mc" in which or "lin" in which:
            thetas = sample(key, b, S)
        if "mc" in which:
            fs = jax.lax.map(lambda th: jax.vmap(lambda x: f(x, th))(Xte), thetas)  # a draw at a time (see grid.curvature)
            out["nlpd_mc"], out["err_mc"] = scores(fs, Yenc)
        if "lin" in which:
            dz = thetas - mu
            # linearise once at mu, then push the draws through one at a time (see grid.curvature)
            _, f_lin = jax.linearize(lambda th: jax.vmap(lambda x: f(x, th))(Xte), mu)
            jv = jax.lax.map(f_lin, dz)
            out["nlpd_lin"], out["err_lin"] = scores(f0[None] + jv, Yenc)
        return out

    def evaluate(b):
        # test data are arguments of the jitted function, not closure constants
        return _evaluate(b, Xte, Yenc, key)

    return evaluate


def _inputs(X, what: str = "The inputs X"):
    """X as a jnp array of its own dtype (float32 stays float32) after checking that it holds
    finite real numbers with one leading entry per example."""
    if isinstance(X, jax.core.Tracer):
        return X
    a = real_array(X, what, allow_empty=True)
    if a.ndim < 1:
        raise ValueError(f"{what} must have one row per example; got a single number.")
    X = X if hasattr(X, "dtype") and jnp.issubdtype(X.dtype, jnp.floating) else a
    return jnp.asarray(X)


def _checkpoints(checkpoints, T):
    if checkpoints is not None and np.ndim(checkpoints) == 0:
        checkpoints = [checkpoints]
    cps = sorted({0, T} | {integer(c, "Every checkpoint") for c in (checkpoints if checkpoints is not None else [])})
    if cps[0] < 0 or cps[-1] > T:
        raise ValueError(f"Checkpoints must lie between 0 and T = {T}.")
    return cps



def stream_inputs(lik, X, Y, prior):
    """(X, encoded Y, T) of a data stream, checked: at least one example, as many responses as inputs."""
    X = _inputs(X)
    T = int(X.shape[0])
    if T < 1:
        raise ValueError("The data stream is empty: give at least one (x, y) pair.")
    Yenc = encode_all(lik, Y, prior.mu.dtype)
    if Yenc.shape[0] != T:
        raise ValueError("X and Y must have the same number of examples.")
    return X, Yenc, T

def stream(method: Method, f: Callable, lik, X, Y, prior, *, key, checkpoints, evaluate: Callable | None = None,
           progress: Callable[[float], None] | None = None, on_chunk: Callable[[core.Trace], None] | None = None,
           keep_states: bool = False, max_time: float | None = None, dynamics=None) -> core.Trace:
    """Stream (X[t], Y[t]), t = 1..T, through grid method ``method``, one example per step (Alg. 1);
    record the belief and the test metrics at ``checkpoints``.

    f(x, theta) -> logits/mean for ONE x; lik from :mod:`vilab.online.likelihoods`; Y integer labels
    (categorical) or targets; prior: the belief psi_0; key: the stream's PRNG key (step t draws from
    fold_in(key, t)); checkpoints: steps at which to record (0 and T are added);
    evaluate: :func:`make_evaluator`'s function (metrics per checkpoint); progress(fraction) and
    on_chunk(trace so far) are called after every chunk of steps, i.e. every gcd of the gaps
    between checkpoints (one compiled loop serves the whole run), so at least once per checkpoint.
    max_time: a time budget in seconds, checked after every chunk; a run that spends it ends with
    status "max_time" at the last chunk done (a page's live run cannot hold the server indefinitely).
    dynamics: None (static parameters, the paper's setting) or (gamma, Q) of the random walk
    theta_t ~ N(gamma theta_{t-1}, Q) applied before every update (the predict step, Sec. 3;
    :class:`vilab.online.families.Dynamics`); recorded in ``settings["dynamics"]``.

    Returns a :class:`vilab.core.Trace` with one row per checkpoint reached: ``iterations`` the
    checkpoints (0 = the prior), ``mean`` (R, P), ``var`` (R, P) marginal variances,
    ``extra[metric]`` (R,) for every metric of ``evaluate`` (NaN for a checkpoint whose evaluation
    failed), ``extra["states"]`` the beliefs at the checkpoints when ``keep_states``,
    ``extra["steps_done"]``, ``timings["seconds_per_step"]`` (wall time per example of the compiled
    steps after the first chunk, which compiles; checkpoint evaluations excluded), ``state`` the
    final :class:`OnlineState` (``state.belief`` the last valid belief) and ``status`` "max_steps"
    or "diverged: <reason>": a step whose belief has a non-finite mean or a non-positive variance
    (the trace keeps the beliefs before it), or a checkpoint whose metrics are not finite (the
    covariance is not positive definite; the prior cannot be evaluated).
    """
    X, Yenc, T = stream_inputs(lik, X, Y, prior)
    cps = _checkpoints(checkpoints, T)
    cp_set = set(cps)
    L = reduce(math.gcd, [b - a for a, b in zip(cps[:-1], cps[1:])])
    alg = algorithm(method, f, lik, evaluate)
    batches = (X, Yenc)
    if evaluate is not None and not set(range(0, T, L)) <= cp_set:
        # rows fall at every multiple of L; mark the checkpoints, the only ones evaluated
        batches = (X, Yenc, jnp.asarray(np.isin(np.arange(1, T + 1), cps)))

    def keep(tr):  # the indices of the checkpoint rows of a trace
        return np.array([i for i, it in enumerate(tr.iterations) if int(it) in cp_set], dtype=int)

    states = [jax.tree_util.tree_map(np.asarray, prior)] if keep_states else None
    stamps = [(time.perf_counter(), 0)]

    def chunk_done(tr):
        stamps.append((time.perf_counter(), tr.n_steps))
        if keep_states and tr.n_steps in cp_set:
            states.append(tr.state.belief)
        if on_chunk is not None:
            on_chunk(_restrict(tr, keep(tr), "max_steps", states, cps))

    def host_stop(rows):  # a checkpoint whose metrics are not finite (the prior's included) ends the run
        if evaluate is None:
            return False
        at = np.isin(np.asarray(rows["iterations"]), cps)
        return not all(np.all(np.isfinite(np.asarray(rows[k])[at])) for k in METRICS if k in rows)

    state0 = alg.init(key, prior, dynamics=dynamics)
    tr = core.run(alg, key, state0, T, batches=batches, record_every=L, chunk_size=L,
                  progress=progress, host_stop=host_stop, on_chunk=chunk_done, max_time=max_time)
    n_done = int(tr.info["code"].shape[0])
    status = "max_time" if tr.status == "max_time" else "max_steps"
    if tr.diverged:  # a rejected step: the runner kept the beliefs before it
        status = f"{tr.status} at step t = {tr.n_steps + 1}"
    idx = keep(tr)
    if evaluate is not None:
        for j, i in enumerate(idx):
            if not all(np.isfinite(tr.extra[k][i]) for k in METRICS if k in tr.extra):
                t_bad = int(tr.iterations[i])
                if t_bad == 0:
                    status = diverged_status("the prior cannot be evaluated (check the prior variance)")
                else:
                    why = "the covariance is not positive definite" if isinstance(prior, FC) else "non-finite predictive"
                    status = diverged_status(f"{why} at checkpoint t = {t_bad}")
                idx = idx[: j + 1]
                for k in METRICS:  # a checkpoint whose evaluation failed keeps no (partly NaN) numbers
                    if k in tr.extra:
                        tr.extra[k][i] = np.nan
                break
    out = _restrict(tr, idx, status, states, cps)
    out.extra["steps_done"] = n_done
    if dynamics is not None:
        out.settings["dynamics"] = describe_dynamics(dynamics_hyper(prior, dynamics))
    out.timings["seconds_per_step"] = _seconds_per_step(stamps, evaluate, tr.state.belief, cp_set)
    return out


def _restrict(tr: core.Trace, idx, status, states, cps) -> core.Trace:
    """The trace's checkpoint rows ``idx``, with ``status`` (and the states kept at them)."""
    def pick(a):
        return None if a is None else np.asarray(a)[idx]

    extra = {k: (np.asarray(v)[idx] if isinstance(v, np.ndarray) and v.ndim and v.shape[0] == tr.n_rows else v)
             for k, v in tr.extra.items()}
    if states is not None:
        extra["states"] = list(states[: len(idx)])
    return replace(tr, mean=pick(tr.mean), var=pick(tr.var), cov=pick(tr.cov), objective=pick(tr.objective),
                   iterations=pick(tr.iterations), extra=extra, status=status,
                   settings={**tr.settings, "checkpoints": list(cps)}, timings=dict(tr.timings))


def _seconds_per_step(stamps, evaluate, belief, cp_set):
    """Wall time per example from the chunk time stamps [(time, iteration)], the first chunk (which
    compiles the loop) left out unless it is the only one: the chunks that made no checkpoint
    evaluation when there are such, else all of them less their evaluations (one timed here)."""
    if len(stamps) < 2:
        return float("nan")
    chunks = [(tb - ta, kb - ka, kb in cp_set and evaluate is not None)
              for (ta, ka), (tb, kb) in zip(stamps[:-1], stamps[1:])]
    if len(chunks) > 1:
        chunks = chunks[1:]
    plain = [c for c in chunks if not c[2]]
    if plain:
        return sum(c[0] for c in plain) / max(sum(c[1] for c in plain), 1)
    seconds = sum(c[0] for c in chunks)
    jax.block_until_ready(evaluate(belief))  # compiled once per evaluator
    t0 = time.perf_counter()
    jax.block_until_ready(evaluate(belief))
    seconds = max(seconds - len(chunks) * (time.perf_counter() - t0), 0.1 * seconds)
    return seconds / max(sum(c[1] for c in chunks), 1)


def belief_path(method: Method, f: Callable, lik, X, Y, prior, *, key, check: bool = False, dynamics=None):
    """Every belief psi_0 .. psi_T of one method on a short stream, stacked (leading axis T + 1): for
    demos and tests on small models. Runs :func:`vilab.core.run` one step per chunk and keeps the
    state after each; ``check=False`` (default) follows beliefs whose variance turned negative (the
    fc_mom demos); after a non-finite step the rest of the path is NaN. ``dynamics``: None (static) or
    (gamma, Q), the predict step before each update (as in :func:`stream`); psi_t is the belief after
    the update of step t."""
    X = _inputs(X)
    T = int(X.shape[0])
    Yenc = encode_all(lik, Y, prior.mu.dtype)
    alg = algorithm(method, f, lik, None, check)
    seen = [jax.tree_util.tree_map(np.asarray, prior)]
    if T > 0 and not isinstance(X, jax.core.Tracer):
        # the stream padded (with its last example, never used) to a power of two: streams of 9 to 16
        # examples share one compiled batch window instead of compiling one per length (a slider on T)
        pad = max(8, 1 << (T - 1).bit_length()) - T
        X, Yenc = (np.concatenate([a, np.repeat(a[-1:], pad, axis=0)]) for a in (np.asarray(X), np.asarray(Yenc)))
    core.run(alg, key, alg.init(key, prior, dynamics=dynamics), T, batches=(X, Yenc), chunk_size=1,
             on_chunk=lambda tr: seen.append(tr.state.belief))
    nan = jax.tree_util.tree_map(lambda a: np.full_like(np.asarray(a, float), np.nan).astype(np.asarray(a).dtype), seen[0])
    seen += [nan] * (T + 1 - len(seen))
    return jax.tree_util.tree_map(lambda *xs: np.stack(xs), *seen)
