"""vilab.core: the protocol every iterative method follows and the one runner that drives it.

    Algorithm(init, step, observe)      the blackjax shape (vilab.core.algorithm)
    run / run_many / resume             the one driver loop (vilab.core.runner)
    Trace                               the one result type (vilab.core.trace)
    ProgramCache / memoize / clear      the one bounded cache of compiled programs (vilab.core.cache)
    as_key / check_key / no_draws_key   the one key policy at public entry points (vilab.core.keys)
"""

from .algorithm import (CODES, COLLAPSED, CONVERGED, COV_EXPLODED, NONFINITE, OBJ_EXPLODED, Algorithm,
                        finite_tree, set_hyper, status_of)
from .batch import BatchProgress, BatchResult, Job, run_batch
from .cache import ProgramCache, memoize
from .keys import as_key, check_key, is_key, key_if_draws, no_draws_key
from .runner import bucket, resume, run, run_many, slope_rule, stack
from .trace import STATUSES, Trace, diverged_status, first_failure

__all__ = ["Algorithm", "CODES", "CONVERGED", "NONFINITE", "COLLAPSED", "COV_EXPLODED", "OBJ_EXPLODED",
           "set_hyper", "status_of", "finite_tree",
           "ProgramCache", "memoize", "as_key", "check_key", "is_key", "key_if_draws", "no_draws_key",
           "run", "run_many", "resume", "slope_rule", "stack",
           "bucket", "Trace", "STATUSES", "diverged_status", "first_failure",
           "Job", "BatchProgress", "BatchResult", "run_batch"]
