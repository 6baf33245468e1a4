"""The catalogue of Gaussian VI update rules of Tan (2025) and Kumar et al. (2025).

Each method is an init/step pair (``METHODS[name].init``, ``METHODS[name].step``, or the
functions :func:`initial_state` / :func:`step`) driven by one compiled loop::

    from vilab.algorithms import run, run_sweep, list_methods
    tr = run("tan-2N-cor1", target, MeanCov(mu0, Sigma0), n_steps=1000, step_size=1.0,
             schedule="backtracking", rel_tol=1e-7)          # -> vilab.core.Trace
    trs = run_sweep("srvn", target, init, 500, step_sizes=[0.1, 0.5, 1.0], kl_tol=1e-8)

Methods (``list_methods()`` returns them with chart, gradient modes and source):

* Tan (2025) Table 1: ``kappa`` (mu, Sigma), ``xi`` (mu, Sigma^-1), ``lambda`` (natural parameter).
* Tan (2025) Algorithms: ``tan-1E``/``tan-1N`` in (mu, C); ``tan-2E``/``tan-2N`` in (mu, T)
  (Thm 1(ii), mean with the old Sigma); ``tan-2N-cor1`` (Corollary 1, = the paper's Alg. 2N);
  sparse ``tan-1S`` (block-diagonal C, option ``blocks``), ``tan-2S`` (arrow T, Thm 4, options
  ``local_sizes``, ``global_size``).
* Kumar et al. (2025): ``gd-mv`` (Eq. 4), ``gd-mc``, ``vn`` (Eq. 7), ``srvn`` (Eq. 17, Alg. 1),
  ``bwgd`` (Bures-Wasserstein GD), ``fbgvi`` (forward-backward Gaussian VI, Diao et al. 2023).

Gradient modes (option ``grads``): "exact" (Gaussian and GLM targets), "first", "second"
(Tan Thm 2 estimators for the tan-* factor methods; Stein/Price estimates of grad_mu and
grad_Sigma for the others). With exact gradients ``srvn`` == ``tan-1N``, ``vn`` == ``lambda``
and ``gd-mc`` == ``tan-1E`` (the papers' different names for the same update).
Step rules (option ``schedule``): "constant" or "backtracking" (Tan Sec. 4.1). Stopping: max
steps, ``rel_tol`` (|dL| < tol |L|), ``kl_tol`` (Gaussian targets). A run that leaves the
Gaussian family (non-PD, singular factor, non-finite or exploding values) stops with status
"diverged: <reason>" and keeps the iterates before the failure; bad input (step size <= 0, a
start that is not a proper Gaussian or where log p is not finite, unknown options) raises
ValueError. Each run is one jit-compiled ``lax.while_loop``; the compiled loop is reused for new
starts, step sizes, keys, tolerances and any ``n_steps`` up to the same power of two, and for
every member of a target family (``Target.family``: Gaussian, Student-t, banana), whose parameters
are run-time data; ``trace_count()`` counts the loops compiled so far.
"""

from .core import METHODS, Method, State, get_method, gradients, list_methods, sigma_of
from .driver import SCHEDULES, initial_state, run, run_sweep, step, trace_count
from .oracle import MODES

__all__ = ["run", "run_sweep", "step", "initial_state", "list_methods", "get_method", "METHODS",
           "Method", "State", "MODES", "SCHEDULES", "gradients", "sigma_of", "trace_count"]
