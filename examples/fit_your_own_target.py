"""Fit your own target: write a log density in JAX, pick any method, get a Gaussian.

The target here is a correlated 3-D Gaussian written by hand as an unnormalised log density, so the
answer is known exactly: the fitted q must equal N(m, P^-1). vilab sees only the function; with
``grads="second"`` every step estimates E_q[grad log p] and E_q[hess log p] by Monte Carlo (Price /
Bonnet), exactly as it would for a model with no closed form. The estimates use h = log p - log q
(Tan 2025, Thm 2), whose gradient vanishes at the optimum of a Gaussian target, so here the noise dies
out and the run lands on the exact answer; on other models average the late iterates, as below.
Swap the method name for any entry of ``vilab.algorithms.list_methods()``.

Run:  .venv/bin/python examples/fit_your_own_target.py
"""

import jax
import jax.numpy as jnp
import numpy as np

from vilab.algorithms import run
from vilab.targets import Target

M = np.array([1.0, -2.0, 0.5])                                     # the target's mean m
P = np.array([[2.0, 0.6, 0.0], [0.6, 1.0, 0.3], [0.0, 0.3, 0.5]])  # and precision P


def log_density(theta):
    """Your model: any jax.numpy function of theta (d,) returning a scalar, up to a constant."""
    r = theta - M
    return -0.5 * jnp.dot(r, jnp.dot(P, r))


def main(method: str = "srvn", n_steps: int = 1500, step_size: float = 0.2, burn_in: int = 500) -> dict:
    # --- the ten lines a user writes -------------------------------------------------------------
    target = Target("my model", 3, log_density)
    trace = run(method, target, (np.zeros(3), np.eye(3)), n_steps, step_size,
                key=jax.random.PRNGKey(0), grads="second", n_samples=10)
    mean = trace.mean[burn_in:].mean(axis=0)                       # Polyak average of the noisy iterates
    cov = trace.cov[burn_in:].mean(axis=0)
    # ----------------------------------------------------------------------------------------------
    return {
        "method": method,
        "status": trace.status,
        "steps": int(trace.n_steps),
        "mean": np.asarray(mean).tolist(),
        "cov": np.asarray(cov).tolist(),
        "exact_mean": M.tolist(),
        "exact_cov": np.linalg.inv(P).tolist(),
        "max_mean_error": float(np.max(np.abs(mean - M))),
        "max_cov_error": float(np.max(np.abs(cov - np.linalg.inv(P)))),
    }


if __name__ == "__main__":
    out = main()
    np.set_printoptions(precision=4, suppress=True)
    print(f"method {out['method']}: {out['status']} after {out['steps']} steps")
    print("fitted mean  ", np.array(out["mean"]), "  exact", np.array(out["exact_mean"]))
    print("fitted cov\n", np.array(out["cov"]), "\nexact cov\n", np.array(out["exact_cov"]))
    print(f"max |mean error| = {out['max_mean_error']:.3g}, max |cov error| = {out['max_cov_error']:.3g}")
