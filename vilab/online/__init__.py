"""Online (streaming) variational Bayes: BONG and its 80-method grid (Jones, Chang & Murphy).

    from vilab.online import make_method, init_belief, stream, categorical, gaussian
    m = make_method("bong-lin-hess-dlr-10")
    prior = init_belief(m.family, mu0, sigma0_2=0.1, rank=m.rank)
    trace = stream(m, f, categorical(10), X, y, prior, key=jax.random.PRNGKey(0), checkpoints=[0, 100, 1000],
                   evaluate=make_evaluator(f, categorical(10), X_test, y_test, key=jax.random.PRNGKey(1)))
    trace.iterations, trace.extra["nlpd_plugin"], trace.status     # a vilab.core.Trace

Modules
  grid            method names, curvature estimators (Table 1), the App. E update equations
  families        belief states FC / Diag / DLR, Woodbury, Gram-eigh projection, DLR sampler; the predict
                  step theta_t ~ N(gamma theta_{t-1}, Q) (FC, Diag; DLR by LoFi's step, exact for diagonal Q)
  likelihoods     categorical (softmax) and Gaussian likelihoods in the F-form
  runner          every grid cell as a vilab.core Algorithm; stream (checkpoints, test metrics)
  reference       dense autodiff references of the defining equations, Kalman filter, batch Bayes
  conjugate       Prop. 4.1: Bernoulli/logistic-Beta, Poisson/log-Gamma, normal-normal
  linear_gaussian linear-Gaussian streams (bong-fc = KF = batch; fc_mom is not exact)
  digits          the scikit-learn digits stream (a scaled-down analogue of the MNIST experiment)
  batch           batch BLR (App. E.6) and the implicit RVGA (Eq. 77) from the grid's pieces; runtime against
                  model size (App. B.1, Fig. 4)
"""

from .families import DLR, FC, Diag, Dynamics, dense_cov, init_belief, marginal_variances, predict, sample
from .grid import (ALGORITHMS, APPROXIMATIONS, FAMILIES, Curv, Method, curvature, grid_names, inner_step, is_cubic, make_method,
                   update)
from .likelihoods import Likelihood, categorical, gaussian
from .runner import METRICS, OnlineState, algorithm, belief_path, make_evaluator, stream
from .batch import batch_blr, fit_batch_blr, implicit_rvga, implicit_stream, implicit_update, runtime_vs_size

__all__ = [
    "ALGORITHMS", "APPROXIMATIONS", "FAMILIES", "METRICS", "Curv", "DLR", "Diag", "Dynamics", "FC", "Likelihood", "Method",
    "OnlineState", "algorithm", "belief_path", "categorical", "curvature", "dense_cov", "gaussian", "grid_names", "init_belief", "inner_step",
    "is_cubic", "make_evaluator", "batch_blr", "fit_batch_blr", "implicit_rvga", "implicit_stream", "implicit_update",
    "runtime_vs_size", "make_method", "marginal_variances", "predict", "sample", "stream", "update",
]
