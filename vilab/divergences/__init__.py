"""Divergences for Gaussian variational inference: KL, Fisher, score-based and weighted Fisher.

Chen, Nott & Tan (2025), "Weighted Fisher divergence for high-dimensional Gaussian variational
inference".  Submodules:

* :mod:`.gaussian`   closed forms (Lemma 1), Monte Carlo estimates, mean-field optima (Sec. 2),
                     the non-negative quadratic program of the score-based divergence, Fig. 1 grid;
* :mod:`.univariate` optimal Gaussians for non-Gaussian univariate targets (Sec. 3, Tables 1-3);
* :mod:`.stochastic` KLD, FDr, SDr, FDb, SDb (Tables 4-5) and batch-and-match as vilab.core
                     Algorithms (stochastic.algorithm, stochastic.bam); run_sgd / run_bam run them
                     through vilab.core.run (key=..., a jax PRNG key) and return Traces;
                     tail_average_variances(trace) averages a run's variances after a burn-in;
* :mod:`.gradvar`    gradient-variance formulas of Sec. 5.4 (diagonal, and exact for a dense Lambda),
                     their Monte Carlo counterpart and the Fig. 4 setting;
* :mod:`.landscape`  the KL, Fisher and score-based objectives over (Sigma_11, Sigma_22) of a mean-field q
                     (objective_landscape, digest E4) and Table 6 on the German credit data (table6, against
                     a stored NUTS posterior).

The public entry point of the mean-field comparison is
``meanfield_variances(precision, divergence, weight=None)``.
"""

from .gaussian import (
    DIVERGENCES,
    WEIGHTS,
    MeanFieldOptimum,
    batch_meanfield_fixed_point,
    check_precision,
    check_weight_pd,
    divergence,
    fig1_grid,
    fisher,
    kl_pq,
    kl_qp,
    meanfield_optimum,
    meanfield_variances,
    monte_carlo_divergence,
    precision_2d,
    precision_3d,
    score_divergence,
    score_nqp,
    score_nqp_batch,
    variance_curves_2d,
    weight_matrix,
    weighted_fisher,
    weighted_fisher_comparison,
    weighted_meanfield,
    weighted_variance_curves_2d,
)
from .gradvar import (
    fig4_gradient_sd,
    fig4_precision,
    gradient_variance_diagonal,
    gradient_variance_mc,
    gradient_variance_mu,
    gradient_variance_T,
    variance_crossings,
)
from .landscape import (
    collapse_values,
    landscape_monte_carlo,
    meanfield_objectives,
    objective_landscape,
    table6,
)
from .stochastic import (
    METHOD_LABELS,
    SGD_METHODS,
    bam_update,
    batch_objectives,
    batch_statistics,
    make_mask,
    run_bam,
    run_sgd,
    sparse_pattern,
    tail_average_variances,
)
from .univariate import (
    UnivariateOptimum,
    accuracy,
    iae,
    log_inverse_gamma_optima,
    univariate_objective,
    univariate_optima,
    univariate_optimum,
)

__all__ = [
    "DIVERGENCES", "MeanFieldOptimum", "batch_meanfield_fixed_point", "check_precision", "divergence",
    "fig1_grid", "fisher", "kl_pq", "kl_qp", "meanfield_optimum", "meanfield_variances",
    "monte_carlo_divergence", "precision_2d", "precision_3d", "score_divergence", "score_nqp",
    "score_nqp_batch", "variance_curves_2d", "weighted_fisher", "gradient_variance_diagonal", "gradient_variance_mc",
    "gradient_variance_mu", "gradient_variance_T", "variance_crossings", "fig4_precision", "fig4_gradient_sd", "WEIGHTS", "check_weight_pd",
    "weight_matrix", "weighted_meanfield", "weighted_fisher_comparison", "weighted_variance_curves_2d", "METHOD_LABELS", "SGD_METHODS", "bam_update", "batch_objectives",
    "batch_statistics", "make_mask", "run_bam", "run_sgd", "sparse_pattern", "tail_average_variances", "UnivariateOptimum",
    "accuracy", "iae", "log_inverse_gamma_optima", "univariate_objective", "univariate_optima",
    "univariate_optimum", "objective_landscape", "meanfield_objectives", "collapse_values", "landscape_monte_carlo",
    "table6",
]
