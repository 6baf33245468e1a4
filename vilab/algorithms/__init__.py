"""The catalogue of Gaussian VI update rules of Tan (2025) and Kumar et al. (2025).

Each method is a :class:`vilab.core.Algorithm` (:func:`algorithm`, memoized on its settings),
driven by the one runner of :mod:`vilab.core`; ``run`` and ``run_sweep`` are conveniences::

    from vilab import core
    from vilab.algorithms import algorithm, run, run_sweep, list_methods
    alg = algorithm("tan-2N-cor1", target, schedule="backtracking")
    tr = core.run(alg, key, alg.init(key, MeanCov(mu0, Sigma0), rho=1.0), 1000,
                  rel_tol=1e-7, rel_tol_on="elbo")                       # -> vilab.core.Trace
    tr = core.resume(alg, tr, 500, hyper={"rho": 0.5})                    # go on with a new rho
    tr = run("tan-2N-cor1", target, MeanCov(mu0, Sigma0), 1000, 1.0, schedule="backtracking", rel_tol=1e-7)
    trs = run_sweep("srvn", target, init, 500, step_sizes=[0.1, 0.5, 1.0], kl_tol=1e-8)

Methods (``list_methods()`` returns them with chart, gradient modes and source; ``method_table()`` /
``method_table_markdown()`` add what each update consumes, and the Gaussian VI methods that live
outside the catalogue: batch-and-match in vilab.divergences.stochastic, the BONG family in vilab.online,
Tan's optimizers in vilab.algorithms.optim, CNN training in vilab.cnn.train):

* Tan (2025) Table 1: ``kappa`` (mu, Sigma), ``xi`` (mu, Sigma^-1), ``lambda`` (natural parameter).
* Tan (2025) Algorithms: ``tan-1E``/``tan-1N`` in (mu, C); ``tan-2E``/``tan-2N`` in (mu, T)
  (Thm 1(ii), mean with the old Sigma); ``tan-2N-cor1`` (Corollary 1, = the paper's Alg. 2N);
  sparse ``tan-1S`` (block-diagonal C, option ``blocks``), ``tan-2S`` (arrow T, Thm 4, options
  ``local_sizes``, ``global_size``).
* Kumar et al. (2025): ``gd-mv`` (Eq. 4), ``gd-mc``, ``vn`` (Eq. 7), ``srvn`` (Eq. 17, Alg. 1),
  ``bwgd`` (Bures-Wasserstein GD), ``fbgvi`` (forward-backward Gaussian VI, Diao et al. 2023).

What each update takes (``Method.takes``, by chart): grad_Sigma in the (mu, Sigma) and (mu, P)
charts, tril grad_C in (mu, C) (tan-1E/1N/1S, gd-mc, srvn), tril grad_T in (mu, T). Gradient modes
(option ``grads``): "exact" (Gaussian and GLM targets), "first", "second" (``Method.estimator``:
Tan Thm 2 estimators for the tan-* factor methods; Stein/Price estimates of grad_mu and grad_Sigma,
mapped to the chart, for the others). With exact gradients ``srvn`` == ``tan-1N``, ``vn`` == ``lambda``
and ``gd-mc`` == ``tan-1E`` (the papers' different names for the same update).
Step rules (option ``schedule``): "constant" or "backtracking" (Tan Sec. 4.1). Stopping: max
steps, ``rel_tol`` (|dL| < tol |L|), ``kl_tol`` (Gaussian targets). A run that leaves the
Gaussian family (non-PD, singular factor, non-finite or exploding values) stops with status
"diverged: <reason>" and keeps the iterates before the failure; bad input (step size <= 0, a
start that is not a proper Gaussian or where log p is not finite, unknown options) raises
ValueError. The runner's compiled loop is reused for new starts, step sizes, keys, tolerances, any
``n_steps`` and any ``record_every`` (sweeps: ``n_steps`` up to the same power of two), and for every
member of a target family
(``Target.family``: Gaussian, Student-t, banana), whose parameters are run-time data in the state;
``trace_count()`` counts the catalogue steps traced so far.
"""

from .catalogue import SCHEDULES, CatalogueState, algorithm, trace_count
from .core import METHODS, TAKES, Method, State, get_method, gradients, list_methods, sigma_of
from .driver import initial_state, run, run_sweep, step
from .oracle import MODES
from .table import method_table, method_table_markdown

__all__ = ["algorithm", "run", "run_sweep", "step", "initial_state", "list_methods", "get_method", "METHODS",
           "Method", "State", "CatalogueState", "MODES", "SCHEDULES", "TAKES", "gradients", "sigma_of",
           "trace_count", "method_table", "method_table_markdown"]
