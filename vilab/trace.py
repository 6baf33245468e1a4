"""The trace every iterative method returns, whatever its family.

Algorithms of the update-rule catalogue (``vilab.algorithms``), the divergence-based
stochastic methods (``vilab.divergences``) and the optimizer driver (``vilab.optim``) all
return a :class:`Trace`, so pages and plots treat them alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Trace", "first_failure", "diverged_status"]


@dataclass
class Trace:
    """History of one run.

    Attributes
    ----------
    mean : (n+1, d) array, the mean at every iterate (row 0 is the start).
    cov : (n+1, d, d) array, the covariance at every iterate.
    objective : (n+1,) array, negative ELBO or KL (see ``objective_name``); NaN where unknown.
    step_sizes : (n,) array, the step size used at each step.
    status : "converged", "max_steps", or "diverged: <reason>".
    method, objective_name : labels for plots and tables.
    extra : anything method-specific (factor paths, ELBO estimates, wall time ...).
    """

    mean: np.ndarray
    cov: np.ndarray
    objective: np.ndarray
    step_sizes: np.ndarray
    status: str
    method: str = ""
    objective_name: str = "negative ELBO"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def n_steps(self) -> int:
        """Number of steps taken (rows of ``mean`` minus one)."""
        return int(self.mean.shape[0]) - 1

    @property
    def diverged(self) -> bool:
        return self.status.startswith("diverged")


def diverged_status(reason: str) -> str:
    """The canonical status string of a run that stopped because of ``reason``."""
    return f"diverged: {reason}"


def first_failure(cov: np.ndarray, *arrays: np.ndarray) -> tuple[int | None, str]:
    """Index of the first iterate that is non-finite or whose covariance is not PD.

    Returns ``(None, "")`` when every iterate is fine, else ``(k, reason)``; the caller keeps
    rows ``[:k]`` (the steps up to the failure).
    """
    n = cov.shape[0]
    for k in range(n):
        if not all(np.all(np.isfinite(a[k])) for a in (cov, *arrays)):
            return k, diverged_status("non-finite values")
        ev = np.linalg.eigvalsh(0.5 * (cov[k] + np.swapaxes(cov[k], -1, -2)))
        if ev[0] <= 0:
            return k, diverged_status("covariance lost positive definiteness")
    return None, ""
