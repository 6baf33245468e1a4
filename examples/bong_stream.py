"""Run BONG on a stream (Jones, Chang & Murphy): one observation at a time, one natural-gradient step each.

On a linear-Gaussian stream y_t = x_t^T theta + noise, BONG with the linearised-Hessian curvature and
a full-covariance belief (``bong-lin-hess-fc``) is exactly the Kalman filter, and its last belief is
the batch posterior. A diagonal belief (``bong-lin-hess-diag``) runs the same stream at O(d) cost per
step and lands near, not on, that answer. ``vilab.online.stream`` records the belief at checkpoints
and returns a ``vilab.core.Trace``.

Run:  .venv/bin/python examples/bong_stream.py
"""

import jax
import jax.numpy as jnp
import numpy as np

from vilab.online import gaussian, init_belief, make_method, stream
from vilab.online.linear_gaussian import linear_f, make_stream
from vilab.online.reference import kalman_filter

NOISE_VAR, PRIOR_VAR, T, DIM = 0.5, 1.0, 300, 4


def main(methods=("bong-lin-hess-fc", "bong-lin-hess-diag")) -> dict:
    X, y, theta_true = make_stream(jax.random.PRNGKey(0), T, dim=DIM, noise_var=NOISE_VAR, prior_var=PRIOR_VAR)
    out = {"X": X, "y": y, "theta_true": theta_true, "noise_var": NOISE_VAR, "prior_var": PRIOR_VAR}
    kf_means, _ = kalman_filter(np.zeros(DIM), PRIOR_VAR * np.eye(DIM), X, y, NOISE_VAR)
    out["kalman_mean"] = kf_means[-1]
    for name in methods:
        m = make_method(name)
        prior = init_belief(m.family, jnp.zeros(DIM), sigma0_2=PRIOR_VAR, rank=m.rank)
        tr = stream(m, linear_f, gaussian(NOISE_VAR), X, y, prior, key=jax.random.PRNGKey(1),
                    checkpoints=[10, 100, T])
        out[name] = {"status": tr.status, "checkpoints": [int(i) for i in tr.iterations],
                     "mean": np.asarray(tr.mean[-1]), "var": np.asarray(tr.var[-1]),
                     "means": np.asarray(tr.mean)}
    return out


if __name__ == "__main__":
    out = main()
    np.set_printoptions(precision=5, suppress=True)
    print("true theta:         ", out["theta_true"])
    print("Kalman filter mean: ", out["kalman_mean"])
    for name in ("bong-lin-hess-fc", "bong-lin-hess-diag"):
        r = out[name]
        print(f"{name}: {r['status']}, checkpoints {r['checkpoints']}")
        print("  final mean:    ", r["mean"])
        print("  final variance:", r["var"])
        print(f"  max |mean - Kalman mean| = {np.max(np.abs(r['mean'] - out['kalman_mean'])):.2e}")
