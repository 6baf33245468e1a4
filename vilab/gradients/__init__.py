"""Expectations under q of the target's gradient and Hessian, E_q[grad log p] and E_q[hess log p]: exact
for Gaussian targets, Gauss-Hermite quadrature, Monte Carlo (:mod:`vilab.gradients.expectations`)."""
