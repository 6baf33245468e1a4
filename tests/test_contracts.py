"""The input contract of vilab's public functions (issue 18, item 5).

Bad input raises ValueError with a readable sentence that names the offending argument; valid input
gives a finite result or a ValueError that explains the overflow. Each case below is a reproducer of a
reported failure or a hand-made bad input (wrong shape, NaN / inf, not positive definite, negative
variance, complex, text, lists, integers beyond float range, empty and 0-d arrays); the shared checks
live in :mod:`vilab.core.checks`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vilab.core import checks
from vilab.gradients import expectations
from vilab.theory import flows, guarantees
from vilab.family import linalg
from vilab.models import nets
from vilab.family import gaussian as G
from vilab.theory.discretisation import flow_times, thinned_run
from vilab.divergences import gaussian as D
from vilab.divergences import gradvar, univariate
from vilab.hierarchical import fit as hfit
from vilab.targets import metrics as hmetrics
from vilab.hierarchical import models as hmodels
from vilab.online import categorical, conjugate, linear_gaussian, init_belief, make_method
from vilab.online import gaussian as gauss_lik
from vilab.online.likelihoods import encode_all
from vilab.online.runner import make_evaluator
from vilab.targets import basic, check_point, papers, regression
from vilab.targets import univariate as TU

I2 = np.eye(2)
Z2 = np.zeros(2)
NON_PD = np.array([[1.0, 2.0], [2.0, 1.0]])  # eigenvalues 3 and -1
MC = G.MeanCov(Z2, I2)
KEY = jax.random.PRNGKey(0)
HUGE_INT = 10**400  # beyond float64: OverflowError in numpy


def _mc(mu=Z2, S=I2):
    return G.MeanCov(mu, S)


def assert_value_error(fn, *words):
    """fn() raises ValueError (not TypeError, OverflowError, ...) whose message names every word."""
    with pytest.raises(ValueError) as exc:
        fn()
    assert type(exc.value) is ValueError, f"{type(exc.value).__name__}: {exc.value}"
    msg = str(exc.value)
    assert msg.strip().endswith((".", ")")), msg  # a sentence
    for w in words:
        assert w.lower() in msg.lower(), f"{w!r} not in {msg!r}"
    return msg


# ---------------------------------------------------------------------------------------------
# the reported reproducers


def test_closed_form_kl_rejects_a_non_pd_covariance():
    """Reported: KL accepted a non-PD matrix and returned -0.549."""
    assert_value_error(lambda: D.kl_qp(Z2, NON_PD, Z2, I2), "covariance", "positive definite", "-1")
    assert_value_error(lambda: D.kl_qp(Z2, I2, Z2, NON_PD), "precision", "positive definite")
    assert_value_error(lambda: D.kl_pq(Z2, NON_PD, Z2, I2), "positive definite")
    assert_value_error(lambda: D.divergence("kl", Z2, NON_PD, Z2, I2), "positive definite")
    assert_value_error(lambda: G.kl(_mc(Z2, NON_PD), MC), "positive definite")
    for fn in (D.fisher, D.score_divergence):
        assert_value_error(lambda: fn(Z2, NON_PD, Z2, I2), "positive definite")


@pytest.mark.parametrize("Sigma, Lambda", [
    (I2, 1e200 * I2),     # Lambda M Lambda overflows: inf - inf = NaN before the fix
    (1e-320 * I2, I2),    # subnormal covariance: its inverse overflows
])
def test_fisher_divergence_is_finite_or_explains_the_overflow(Sigma, Lambda):
    """Reported: divergence("fisher", ...) returned NaN on an input that passed validation."""
    assert_value_error(lambda: D.divergence("fisher", Z2, Sigma, Z2, Lambda), "not finite", "rescale")


def test_fisher_divergence_of_a_near_singular_pd_covariance_is_finite():
    S = np.array([[1.0, 1 - 1e-12], [1 - 1e-12, 1.0]])
    v = D.divergence("fisher", Z2, S, Z2, I2)
    assert np.isfinite(v) and v > 0


def test_logpdf_accepts_lists_like_numpy():
    """Reported: gaussian.logpdf raised TypeError for a list."""
    assert float(G.logpdf(MC, [0.0, 1.0])) == pytest.approx(float(G.logpdf(MC, np.array([0.0, 1.0]))))
    assert G.logpdf(MC, [[0.0, 1.0], [1.0, 0.0]]).shape == (2,)


@pytest.mark.parametrize("fn, words", [
    (lambda: G.entropy(_mc(np.array([0.0, 1j]))), ("mean mu", "real numbers")),
    (lambda: G.entropy(_mc(Z2, I2 + 0j * 1j + np.array([[0, 1e-3j], [-1e-3j, 0]]))), ("covariance", "real numbers")),
    (lambda: G.logpdf(MC, np.array([0.0, 1j])), ("x", "real numbers")),
    (lambda: D.divergence("kl", np.array([0.0, 1j]), I2, Z2, I2), ("mean mu", "real numbers")),
    (lambda: D.divergence("kl", Z2, I2, np.array([0.0, 1j]), I2), ("target mean nu", "real numbers")),
    (lambda: D.meanfield_variances(I2 * (1 + 0j) + np.array([[0, 1j], [-1j, 0]]), "kl"), ("precision", "real")),
    (lambda: basic.gaussian_target([0.0, 1j], cov=I2), ("mean", "real numbers")),
    (lambda: regression.GLMModel("m", np.ones((3, 1)) * (1 + 1j), np.ones(3), "poisson"), ("design matrix", "real")),
    (lambda: encode_all(categorical(3), [1 + 1j]), ("class labels", "real numbers")),
    (lambda: check_point(basic.gaussian_2d(0.0), [0.0, 1j]), ("starting point", "real numbers")),
])
def test_complex_input_is_rejected_not_truncated(fn, words):
    """Reported: complex input was accepted with the imaginary part dropped."""
    assert_value_error(fn, *words)


@pytest.mark.parametrize("label", [7, -1, 1.5, np.nan, 3])
def test_categorical_labels_outside_the_classes_are_rejected(label):
    """Reported: labels 7, -1, 1.5, NaN encoded to rows of zeros and the run 'completed'."""
    msg = assert_value_error(lambda: encode_all(categorical(3), [0, label, 1]), "class labels", "0 to 2")
    assert "whole numbers" in msg


def test_categorical_labels_reach_stream_and_evaluator_checks():
    f = lambda x, th: th.reshape(2, 3).T @ x  # noqa: E731
    X = np.ones((2, 2))
    assert_value_error(lambda: make_evaluator(f, categorical(3), X, [0, 7]), "class labels", "0 to 2")
    from vilab.online import stream
    m = make_method("bong-lin-hess-diag")
    prior = init_belief("diag", np.zeros(6), 1.0)
    assert_value_error(lambda: stream(m, f, categorical(3), X, [0, -1], prior, key=KEY, checkpoints=[1]),
                       "class labels", "0 to 2")


@pytest.mark.parametrize("family, y, words", [
    ("bernoulli", [0.0, 1.0, 3.0], ("0 or 1", "3")),
    ("bernoulli", [0.0, 0.5, 1.0], ("0 or 1",)),
    ("poisson", [1.0, -2.0, 0.0], ("counts", "-2")),
])
def test_glm_responses_must_fit_the_family(family, y, words):
    """Reported: GLM models accepted Bernoulli y = 3 and negative Poisson counts."""
    X = np.ones((3, 2))
    assert_value_error(lambda: regression.GLMModel("m", X, y, family), "responses y", *words)


@pytest.mark.parametrize("prior_var", [np.inf, -1.0, 0.0, np.nan, "big", 1j])
def test_glm_prior_variance_must_be_positive_finite(prior_var):
    """Reported: prior variance inf was accepted."""
    assert_value_error(lambda: regression.GLMModel("m", np.ones((3, 1)), [0.0, 1.0, 0.0], "bernoulli", prior_var),
                       "prior variance")


def test_glmm_counts_must_be_counts():
    X = np.ones((2, 3, 1))
    Z = np.ones((2, 3, 1))
    assert_value_error(lambda: hmodels._glmm_model("m", np.array([[1.0, -1.0, 0.0], [0, 0, 0]]), X, Z, ["b", "z"], "b"),
                       "counts", "-1")


@pytest.mark.parametrize("n", [0, 1, -3, 2.5, "10", HUGE_INT])
def test_final_elbo_needs_at_least_two_draws(n):
    """Reported: n_elbo_draws = 0 gave a NaN ELBO (vilab.hierarchical.fit.final_elbo: n_draws).
    The argument is validated before the trace is read, so no fit is needed."""
    assert_value_error(lambda: hfit.final_elbo(None, None, key=KEY, n_draws=n), "n_draws")


@pytest.mark.parametrize("fn, words", [
    # integers too large for int64 / float64: OverflowError before the fix
    (lambda: G.sample(KEY, MC, HUGE_INT), ("number of draws n",)),
    (lambda: G.entropy(_mc([HUGE_INT, 0])), ("mean mu", "too large")),
    (lambda: D.kl_qp([HUGE_INT, 0], I2, Z2, I2), ("mean mu", "too large")),
    (lambda: encode_all(categorical(3), [HUGE_INT]), ("class labels",)),
    (lambda: regression.GLMModel("m", np.ones((1, 1)), [HUGE_INT], "poisson"), ("responses y",)),
    # strings where numbers are expected: TypeError before the fix
    (lambda: G.logpdf(MC, ["a", "b"]), ("point x", "numbers")),
    (lambda: G.sample(KEY, MC, "3"), ("number of draws n", "whole number")),
    (lambda: G.sample(KEY, MC, 1.5), ("number of draws n", "whole number")),
    (lambda: G.convert(MC, ["natural"]), ("parameterization",)),
    (lambda: D.divergence(["kl"], Z2, I2, Z2, I2), ("divergence",)),
    (lambda: D.divergence("weighted_fisher", Z2, I2, Z2, I2, weight=["a", "b"]), ("weight", "numbers")),
    (lambda: categorical("ten"), ("number of classes", "whole number")),
    (lambda: gauss_lik("big"), ("observation variance",)),
    (lambda: make_method(3), ("not a method",)),
    (lambda: make_method("blr-lin-hess-diag", alpha="fast"), ("learning rate alpha",)),
    (lambda: make_method("bong-lin-hess-diag", n_samples=2.5), ("monte carlo samples",)),
    (lambda: init_belief("diag", ["a", "b"], 1.0), ("prior mean mu0", "numbers")),
    (lambda: init_belief("diag", np.zeros(2), "one"), ("prior variance",)),
    (lambda: init_belief("dlr", np.zeros(2), 1.0, rank=0), ("rank",)),
    (lambda: basic.banana("curly"), ("curvature b",)),
    (lambda: basic.student_t_2d(3.0, loc=("a", 0.0)), ("location",)),
    (lambda: basic.gaussian_2d("0.5"), ("correlation rho",)),
    (lambda: regression.GLMModel("m", np.ones((2, 1)), ["a", "b"], "poisson"), ("responses y", "numbers")),
    (lambda: regression.GLMModel("m", np.ones((2, 1)), [0.0, 1.0], ["bernoulli"]), ("family",)),
    (lambda: regression.simulated_loglinear(n="many"), ("number of observations",)),
    (lambda: regression.load(["Pima"]), ("data set",)),
    (lambda: hmodels.synthetic_glmm("many"), ("n_subjects",)),
    (lambda: hmodels.get_model(["epi1"]), ("hierarchical model",)),
    (lambda: hfit.fit(None, "gva-snngm", key=KEY, n_iter="lots"), ("n_iter",)),
    (lambda: hfit.fit(None, "gva-snngm", key=KEY, init_scale=-1.0), ("init_scale",)),
    (lambda: hfit.fit(None, ["gva-snngm"], key=KEY), ("unknown method",)),
    (lambda: expectations.hermite_nodes([3]), ("gauss-hermite nodes",)),
    (lambda: expectations.hermite_nodes(0), ("gauss-hermite nodes", "at least 1")),
    (lambda: expectations.gaussian_cubature5(0), ("dimension d",)),
    (lambda: guarantees.theorem1_rates("a", 1.0), ("delta",)),
    (lambda: guarantees.theorem1_rates(1.0, np.inf), ("lambda_min",)),
    (lambda: guarantees.lemma1_check(NON_PD), ("V", "positive definite")),
    (lambda: guarantees.lemma1_check([[1.0, "x"], [0.0, 1.0]]), ("V", "numbers")),
    (lambda: guarantees.natural_kl_asymptote(["a"], [1.0]), ("times",)),
    (lambda: flow_times("vn", "big", [1, 2]), ("step size rho",)),
    (lambda: flow_times("vn", 0.1, ["a"]), ("iteration numbers",)),
    (lambda: D.precision_2d("high"), ("correlation rho",)),
    (lambda: D.precision_3d(0.1, "b", 0.1), ("b",)),
    (lambda: D.fig1_grid(0.1, n="many"), ("grid size n",)),
    (lambda: D.score_nqp(NON_PD), ("precision", "positive definite")),
    (lambda: D.score_nqp_batch(np.array([NON_PD])), ("precision", "positive definite")),
    (lambda: D.monte_carlo_divergence(KEY, lambda t: -t, Z2, I2, n="many"), ("draws n",)),
    (lambda: D.monte_carlo_divergence(KEY, lambda t: -t, Z2, I2, n=1), ("draws n", "at least 2")),
    (lambda: D.batch_meanfield_fixed_point(I2, "sdb", iters="a"), ("iters",)),
    (lambda: D.variance_curves_2d(["a"]), ("correlations",)),
])
def test_wrong_types_raise_value_error_naming_the_argument(fn, words):
    """Reported: OverflowError / TypeError where ValueError is promised."""
    assert_value_error(fn, *words)


# ---------------------------------------------------------------------------------------------
# hand-made bad inputs, per argument kind


BAD_MEANS = {
    "nan": ([np.nan, 0.0], "non-finite"),
    "inf": ([np.inf, 0.0], "non-finite"),
    "matrix": (np.zeros((2, 2)), "vector"),
    "0-d": (0.0, "vector"),
    "empty": ([], "empty"),
    "text": ("ab", "numbers"),
    "ragged": ([[0.0], [0.0, 1.0]], "array"),
    "wrong length": ([0.0, 0.0, 0.0], "dimension mismatch"),
}

BAD_COVS = {
    "non-PD": (NON_PD, "positive definite"),
    "negative variance": (np.diag([1.0, -1.0]), "positive definite"),
    "singular": (np.ones((2, 2)), "positive definite"),
    "asymmetric": (np.array([[1.0, 0.5], [0.0, 1.0]]), "symmetric"),
    "nan": (np.array([[1.0, np.nan], [np.nan, 1.0]]), "non-finite"),
    "inf": (np.diag([1.0, np.inf]), "non-finite"),
    "not square": (np.ones((2, 3)), "square"),
    "vector": (np.ones(2), "square"),
    "wrong size": (np.eye(3), "dimension mismatch"),
    "text": ([["a", "b"], ["c", "d"]], "numbers"),
}

GAUSSIAN_OPS = {
    "entropy": lambda p: G.entropy(p),
    "logpdf": lambda p: G.logpdf(p, Z2),
    "sample": lambda p: G.sample(KEY, p, 3),
    "kl": lambda p: G.kl(p, MC),
    "kl reversed": lambda p: G.kl(MC, p),
    "to_mean_cov": lambda p: G.to_mean_cov(p),
    "convert": lambda p: G.convert(p, "natural"),
    "precision": lambda p: G.precision(p),
}


@pytest.mark.parametrize("op", GAUSSIAN_OPS, ids=str)
@pytest.mark.parametrize("case", BAD_MEANS, ids=str)
def test_gaussian_operations_reject_bad_means(op, case):
    mu, word = BAD_MEANS[case]
    assert_value_error(lambda: GAUSSIAN_OPS[op](_mc(mu, I2)), word)


@pytest.mark.parametrize("op", GAUSSIAN_OPS, ids=str)
@pytest.mark.parametrize("case", BAD_COVS, ids=str)
def test_gaussian_operations_reject_bad_covariances(op, case):
    S, word = BAD_COVS[case]
    assert_value_error(lambda: GAUSSIAN_OPS[op](_mc(Z2, S)), word)


@pytest.mark.parametrize("p, words", [
    (G.CholCov(Z2, np.array([[1.0, 1.0], [0.0, 1.0]])), ("factor C", "lower triangular")),
    (G.CholCov(Z2, np.diag([1.0, 0.0])), ("factor C", "singular")),
    (G.CholPrec(Z2, np.diag([0.0, 1.0])), ("factor T", "singular")),
    (G.Natural(Z2, 0.5 * I2), ("-2 eta2", "positive definite")),
    (G.Expectation(Z2, -I2), ("m2 - m1 m1^T", "positive definite")),
    (G.MeanField(Z2, np.array([1.0, -1.0])), ("standard deviation", "positive")),
    (G.MeanField(Z2, np.array([1.0, 1j])), ("standard deviations sigma", "real numbers")),
    ((Z2, I2), ("gaussian parameterization",)),
])
def test_every_parameterization_is_validated(p, words):
    assert_value_error(lambda: G.entropy(p), *words)


@pytest.mark.parametrize("x, word", [
    ([np.nan, 0.0], "non-finite"), ([0.0, 0.0, 0.0], "dimension mismatch"), (np.zeros((2, 2, 2)), "dimension mismatch"),
    ("ab", "numbers"), ([], "empty"),
])
def test_logpdf_rejects_bad_points(x, word):
    assert_value_error(lambda: G.logpdf(MC, x), word)


def test_gaussian_results_that_overflow_are_explained():
    assert_value_error(lambda: G.logpdf(MC, [1e300, 0.0]), "log density", "not finite")
    assert_value_error(lambda: G.convert(_mc(Z2, 1e-310 * I2), "natural"), "natural", "not finite")
    assert_value_error(lambda: G.kl(_mc(np.array([1e200, 0.0]), I2), MC), "KL", "not finite")
    # found by Hypothesis: m2 = Sigma + mu mu^T rounds Sigma = 1e-16 away next to mu = 1
    assert_value_error(lambda: G.convert(_mc(np.array([1.0]), np.array([[1e-16]])), "expectation"),
                       "cannot be represented", "expectation", "rescale")


@pytest.mark.parametrize("n", [0, -1, 2.5, "3", None, HUGE_INT])
def test_sample_needs_a_positive_whole_number_of_draws(n):
    assert_value_error(lambda: G.sample(KEY, MC, n), "number of draws n")


@pytest.mark.parametrize("kind", ["nat", 3, None, ["natural"]])
def test_unknown_parameterizations(kind):
    assert_value_error(lambda: G.convert(MC, kind), "parameterization")
    assert_value_error(lambda: G.from_mean_cov(MC, kind), "parameterization")


DIV_FUNCS = {
    "kl_qp": D.kl_qp, "kl_pq": D.kl_pq, "fisher": D.fisher, "score": D.score_divergence,
    "divergence kl": lambda *a: D.divergence("kl", *a), "divergence fisher": lambda *a: D.divergence("fisher", *a),
    "divergence forward_kl": lambda *a: D.divergence("forward_kl", *a),
    "weighted_fisher": lambda *a: D.weighted_fisher(*a, np.ones(2)),
}


@pytest.mark.parametrize("fn", DIV_FUNCS, ids=str)
@pytest.mark.parametrize("which, bad, word", [
    ("mu", [np.nan, 0.0], "non-finite"), ("mu", [0.0, 0.0, 0.0], "dimension mismatch"),
    ("Sigma", NON_PD, "positive definite"), ("Sigma", np.diag([1.0, -2.0]), "positive definite"),
    ("Sigma", np.ones((2, 3)), "square"), ("nu", [np.inf, 0.0], "non-finite"),
    ("nu", np.zeros(3), "dimension mismatch"), ("nu", 0.0, "vector"),
    ("Lambda", NON_PD, "positive definite"), ("Lambda", np.full((2, 2), np.nan), "non-finite"),
    ("Lambda", np.ones((2, 2, 2)), "square"), ("Lambda", "I", "numbers"),
])
def test_closed_form_divergences_reject_bad_input(fn, which, bad, word):
    args = {"mu": Z2, "Sigma": I2, "nu": Z2, "Lambda": I2}
    args[which] = bad
    assert_value_error(lambda: DIV_FUNCS[fn](args["mu"], args["Sigma"], args["nu"], args["Lambda"]), word)


@pytest.mark.parametrize("weight, word", [
    (None, "needs a weight"), (np.array([1.0, -1.0]), "positive"), (np.array([1.0, np.nan]), "non-finite"),
    (np.ones(3), "length"), (NON_PD, "semi-definite"), (np.array([1.0, 1j]), "real numbers"),
])
def test_weighted_fisher_rejects_bad_weights(weight, word):
    assert_value_error(lambda: D.divergence("weighted_fisher", Z2, I2, Z2, I2, weight=weight), "weight", word)


@pytest.mark.parametrize("precision, word", [
    (NON_PD, "positive definite"), (np.full((2, 2), np.nan), "non-finite"), ("P", "numbers"), ([], "empty"),
    (np.ones((2, 3)), "square"), (np.ones(2), "square"),
])
@pytest.mark.parametrize("divergence", ["kl", "fisher", "score", "forward_kl"])
def test_meanfield_optimum_rejects_bad_precisions(precision, word, divergence):
    assert_value_error(lambda: D.meanfield_optimum(precision, divergence), "precision", word)


@pytest.mark.parametrize("fn, words", [
    (lambda: D.precision_2d(np.nan), ("correlation rho",)),
    (lambda: D.precision_2d(0.5, sd1=-1.0), ("sd1",)),
    (lambda: D.precision_3d(0.9, 0.9, -0.9), ("positive-definite",)),
    (lambda: D.fig1_grid(1.5), ("c",)),
    (lambda: D.fig1_grid(0.1, n=1), ("grid size n", "at least 2")),
    (lambda: D.fig1_grid(0.1, lim=1.5), ("lim",)),
    (lambda: D.score_nqp_batch(np.eye(9)), ("d <= 8",)),
    (lambda: D.batch_meanfield_fixed_point(I2, "xyz"), ("method",)),
    (lambda: D.monte_carlo_divergence(KEY, lambda t: -t, Z2, NON_PD), ("positive definite",)),
    (lambda: D.monte_carlo_divergence(KEY, lambda t: -t, Z2, I2, name="kl"), ("log_density",)),
    (lambda: D.monte_carlo_divergence(KEY, lambda t: -t, Z2, I2, name="forward_kl"), ("closed form",)),
])
def test_divergence_helpers_reject_bad_input(fn, words):
    assert_value_error(fn, *words)


@pytest.mark.parametrize("y", [[0.0, 1.0, np.nan], [0.0, 1.0, np.inf]])
def test_glm_rejects_non_finite_data(y):
    assert_value_error(lambda: regression.GLMModel("m", np.ones((3, 1)), y, "poisson"), "NaN or infinite")


@pytest.mark.parametrize("X, y, word", [
    (np.ones(3), np.ones(3), "(n, d)"), (np.ones((3, 1)), np.ones(2), "(n, d)"), (np.ones((0, 1)), [], "(n, d)"),
    (np.ones((3, 0)), np.ones(3), "(n, d)"),
])
def test_glm_rejects_bad_shapes(X, y, word):
    assert_value_error(lambda: regression.GLMModel("m", X, y, "poisson"), word)


def test_crab_intercept_keeps_its_fractional_counts():
    m = regression.crab_intercept()  # y_i = 505/173 (sufficient statistics) is not a whole count, but >= 0
    assert m.n == 173 and np.all(m.y > 0)


@pytest.mark.parametrize("fn, words", [
    (lambda: basic.logistic_regression(np.ones((2, 1)), [0.0, 2.0]), ("0/1",)),
    (lambda: basic.logistic_regression(np.ones((2, 1)) * 1j, [0.0, 1.0]), ("design matrix", "real")),
    (lambda: basic.bayes_linreg(np.ones((2, 1)), [0.0, np.nan]), ("finite",)),
    (lambda: basic.bayes_linreg(np.ones((0, 1)), []), ("design matrix",)),
    (lambda: basic.bayes_linreg(np.ones((2, 1)), [0.0, 1.0], noise_var=-1.0), ("noise variance",)),
    (lambda: basic.gaussian_target([0.0, 0.0], cov=NON_PD), ("covariance", "positive definite")),
    (lambda: basic.gaussian_target([0.0, 0.0], precision=NON_PD), ("precision", "positive definite")),
    (lambda: basic.banana(1e200), ("covariance", "not finite")),
    (lambda: basic.gaussian_2d(1.0), ("correlation rho",)),
    (lambda: basic.rotated_gaussian_2d(0.5), ("condition number",)),
    (lambda: check_point(basic.gaussian_2d(0.0), [0.0]), ("starting point", "2 coordinates")),
    (lambda: check_point(basic.gaussian_2d(0.0), [np.nan, 0.0]), ("starting point", "non-finite")),
])
def test_targets_reject_bad_input(fn, words):
    assert_value_error(fn, *words)


@pytest.mark.parametrize("fn, words", [
    (lambda: categorical(1), ("number of classes", "at least 2")),
    (lambda: gauss_lik(-1.0), ("observation variance",)),
    (lambda: gauss_lik(np.nan), ("observation variance", "non-finite")),
    (lambda: gauss_lik([[1.0, 0.0]]), ("observation variance",)),
    (lambda: gauss_lik(1.0, dim=0), ("dim",)),
    (lambda: encode_all(gauss_lik(1.0), [0.0, 1j]), ("observations y", "real")),
    (lambda: init_belief("diag", np.zeros(2), np.inf), ("prior variance",)),
    (lambda: init_belief("diag", np.zeros(2), -1.0), ("prior variance",)),
    (lambda: init_belief("diag", [np.nan, 0.0], 1.0), ("prior mean mu0", "non-finite")),
    (lambda: init_belief("diag", np.zeros((2, 2)), 1.0), ("prior mean mu0", "vector")),
    (lambda: init_belief("fc", [], 1.0), ("prior mean mu0", "empty")),
    (lambda: init_belief("tri", np.zeros(2), 1.0), ("unknown family",)),
    (lambda: make_method("blr-lin-hess-diag", alpha=-1.0), ("learning rate alpha",)),
    (lambda: make_method("blr-lin-hess-diag", alpha=np.inf), ("learning rate alpha",)),
    (lambda: make_method("blr-lin-hess-diag", alpha=0.5, n_iter=0), ("inner iterations",)),
    (lambda: make_method("bong-mc-hess-diag", n_samples=0), ("monte carlo samples",)),
])
def test_online_rejects_bad_input(fn, words):
    assert_value_error(fn, *words)


def test_online_stream_rejects_bad_inputs_and_checkpoints():
    from vilab.online import stream
    f = lambda x, th: th.reshape(2, 3).T @ x  # noqa: E731
    m = make_method("bong-lin-hess-diag")
    prior = init_belief("diag", np.zeros(6), 1.0)
    X = np.ones((2, 2))
    assert_value_error(lambda: stream(m, f, categorical(3), X * 1j, [0, 1], prior, key=KEY, checkpoints=[1]),
                       "inputs X", "real")
    assert_value_error(lambda: stream(m, f, categorical(3), [[np.nan, 0.0], [0, 0]], [0, 1], prior, key=KEY,
                                      checkpoints=[1]), "inputs X", "non-finite")
    assert_value_error(lambda: stream(m, f, categorical(3), X, [0, 1], prior, key=KEY, checkpoints=[0.5]),
                       "checkpoint", "whole number")
    assert_value_error(lambda: stream(m, f, categorical(3), X, [0, 1], prior, key=KEY, checkpoints=[5]), "checkpoints")
    assert_value_error(lambda: make_evaluator(f, categorical(3), X, [0, 1], n_mc=0), "n_mc")


@pytest.mark.parametrize("fn, words", [
    (lambda: hmodels.synthetic_glmm(0), ("n_subjects", "at least 1")),
    (lambda: hmodels.synthetic_glmm(2.5), ("n_subjects", "whole number")),
    (lambda: hmodels.get_model("epi9"), ("unknown hierarchical model",)),
    (lambda: hfit.fit(None, "gva-snngm", key=KEY, n_iter=0), ("n_iter", "at least 1")),
    (lambda: hfit.fit(None, "gva-snngm", key=KEY, window=0), ("window", "at least 1")),
    (lambda: hfit.fit(None, "gva-snngm", key=KEY, max_seconds=-1.0), ("max_seconds",)),
    (lambda: hfit.fit(None, "gva-snngm", key=KEY, tol=np.nan), ("tol",)),
    (lambda: hfit.fit(None, "gva-snngm", key=KEY, init_scale=np.inf), ("init_scale",)),
    (lambda: hfit.fit(None, "gva-snngm", key=KEY, batch=0), ("batch size", "at least 1")),
    (lambda: hfit.sample_q(None, 0, KEY), ("number of draws m",)),
    (lambda: hfit.algorithm(None, "nope"), ("unknown method",)),
])
def test_hierarchical_rejects_bad_input(fn, words):
    assert_value_error(fn, *words)


def test_hierarchical_model_arguments():
    m = hmodels.synthetic_glmm(2)
    assert_value_error(lambda: hmodels.hessian_blocks(m, np.zeros(3)), "theta", "coordinates")
    assert_value_error(lambda: hmodels.hessian_blocks(m, np.full(m.dim, np.nan)), "theta", "non-finite")
    assert_value_error(lambda: hmodels.hessian_blocks(m, np.zeros(m.dim) * 1j), "theta", "real")


@pytest.mark.parametrize("fn, words", [
    (lambda: expectations.expected_grad_hess(basic.gaussian_2d(0.3), Z2, NON_PD), ("positive definite",)),
    (lambda: expectations.expected_grad_hess(basic.gaussian_2d(0.3), [np.nan, 0.0], I2), ("non-finite",)),
    (lambda: expectations.expected_grad_hess(basic.gaussian_2d(0.3), np.zeros(3), I2), ("shape",)),
    (lambda: expectations.expected_grad_hess(basic.gaussian_2d(0.3), Z2, I2, method="magic"), ("expectation method",)),
    (lambda: expectations.expected_grad_hess(basic.banana(), Z2, I2, method="mc-first"), ("prng key",)),
    (lambda: expectations.expected_grad_hess(basic.banana(), Z2, I2, method="mc-first", key=KEY, n_samples=0),
     ("monte carlo samples",)),
    (lambda: expectations.monte_carlo(basic.banana(), Z2, I2, KEY, n_samples="many"), ("monte carlo samples",)),
    (lambda: expectations.monte_carlo(basic.banana(), Z2, I2, KEY, order=3), ("order",)),
    (lambda: expectations.monte_carlo(basic.banana(), Z2, NON_PD, KEY), ("positive definite",)),
    (lambda: expectations.gauss_hermite_glm(basic.banana(), Z2, I2), ("glm target",)),
    (lambda: expectations.gauss_hermite_glm("target", Z2, I2), ("target",)),
])
def test_expectations_reject_bad_input(fn, words):
    assert_value_error(fn, *words)


@pytest.mark.parametrize("kwargs, words", [
    ({"kind": "sideways"}, ("unknown flow",)),
    ({"kind": ["natural-mv"]}, ("unknown flow",)),
    ({"t_end": -1.0}, ("t_end",)),
    ({"t_end": "long"}, ("t_end",)),
    ({"n_times": 1}, ("n_times", "at least 2")),
    ({"n_times": 2.5}, ("n_times",)),
    ({"rtol": 0.0}, ("rtol",)),
    ({"method": "magic"}, ("method",)),
    ({"solver": "Euler"}, ("solver",)),
    ({"times": [0.0, "a"]}, ("times",)),
    ({"times": [0.0, 2.0, 1.0]}, ("times must increase",)),
    ({"init": (Z2, NON_PD)}, ("positive definite",)),
])
def test_flow_rejects_bad_input(kwargs, words):
    args = {"kind": "natural-mv", "target": basic.gaussian_2d(0.3), "init": (Z2, I2), "t_end": 1.0}
    args.update(kwargs)
    assert_value_error(lambda: flows.flow(**args), *words)


@pytest.mark.parametrize("kwargs, words", [
    ({"step_size": 0.0}, ("step size rho",)), ({"step_size": np.nan}, ("step size rho",)),
    ({"n_steps": 0}, ("n_steps",)), ({"n_steps": "many"}, ("n_steps",)), ({"n_record": 0.5}, ("n_record",)),
])
def test_thinned_run_rejects_bad_input(kwargs, words):
    args = {"name": "vn", "target": basic.gaussian_2d(0.3), "init": (Z2, I2), "step_size": 0.1, "n_steps": 10}
    args.update(kwargs)
    assert_value_error(lambda: thinned_run(**args), *words)


@pytest.mark.parametrize("fn, words", [
    (lambda: checks.real_array(np.array([1, 2], dtype=object), "a") + checks.real_array("x", "The xs"), ("xs",)),
    (lambda: checks.integer(True, "n"), ("n", "whole number")),
    (lambda: checks.integer(np.nan, "n"), ("n", "whole number")),
    (lambda: checks.positive(1j, "s"), ("s",)),
    (lambda: checks.pd_matrix(NON_PD, "The matrix S"), ("matrix S", "positive definite", "-1")),
    (lambda: checks.class_labels([[0, 1], [2, 5]], 3), ("class labels", "0 to 2")),
    (lambda: checks.finite_result(jnp.array([1.0, jnp.inf]), "The thing"), ("thing", "not finite")),
])
def test_shared_checks(fn, words):
    assert_value_error(fn, *words)


def test_checks_accept_array_likes_and_python_ints_beyond_int64():
    assert checks.real_array([10**30, 1], "a").tolist() == [1e30, 1.0]
    assert checks.real_array(jnp.ones(2, jnp.float32), "a").dtype == np.float64
    assert checks.integer(np.int64(3), "n") == 3 and checks.integer(4.0, "n") == 4
    assert checks.class_labels([0.0, 2.0], 3).tolist() == [0, 2]


@pytest.mark.parametrize("fn, words", [
    (lambda: linalg.dim_from_vech_length("3"), ("length of a vech vector",)),
    (lambda: linalg.dim_from_vech_length(-3), ("length of a vech vector", "at least 0")),
    (lambda: linalg.dim_from_vech_length(4), ("not such a length",)),
    (lambda: linalg.vech(np.ones(3)), ("matrix",)),
    (lambda: linalg.vech(np.ones((2, 3))), ("square",)),
    (lambda: linalg.unvech(["a", "b", "c"]), ("vech vector", "numbers")),
    (lambda: linalg.unvec(np.ones(3), 2), ("length d^2",)),
    (lambda: linalg.commutation_matrix("2"), ("matrix size d",)),
    (lambda: linalg.duplication_matrix(0), ("matrix size d", "at least 1")),
    (lambda: linalg.tril_half([["a"]]), ("numbers",)),
    (lambda: conjugate.check_psi("bernoulli", "a", 2.0), ("chi",)),
    (lambda: conjugate.check_psi(["normal"], 1.0, 2.0), ("conjugate family",)),
    (lambda: conjugate.conjugate_demo("bernoulli", 1.0, 2.0, 3.0), ("bernoulli observation",)),
    (lambda: conjugate.conjugate_demo("poisson", 1.0, 2.0, -1.0), ("poisson observation",)),
    (lambda: conjugate.conjugate_demo("normal", 1.0, 2.0, np.nan), ("observation y", "finite")),
    (lambda: conjugate.conjugate_demo("normal", 1.0, np.inf, 0.0), ("nu", "finite")),
    (lambda: conjugate.conjugate_demo("normal", 1.0, 2.0, 0.0, n_grid=0), ("n_grid",)),
    (lambda: linear_gaussian.make_stream(KEY, "5"), ("number of observations T",)),
    (lambda: linear_gaussian.make_stream(KEY, 1.5), ("number of observations T", "whole number")),
    (lambda: linear_gaussian.make_stream(KEY, 5, noise_var=np.inf), ("noise variance",)),
    (lambda: linear_gaussian.scalar_fc_mom_vs_kf("a"), ("observation variance R",)),
    (lambda: linear_gaussian.bong_linear_path(np.ones((3, 2)), np.ones(3), 1.0, Z2, NON_PD), ("Sigma0", "positive definite")),
    (lambda: hmetrics.mmd2_unbiased(np.full((3, 2), np.nan), np.ones((3, 2)), np.ones(2)), ("sample X", "non-finite")),
    (lambda: hmetrics.mmd2_unbiased(np.ones((3, 2)), np.ones((3, 2)), -np.ones(2)), ("scale", "positive")),
    (lambda: hmetrics.mmd2_unbiased(np.ones((3, 2)) * 1j, np.ones((3, 2)), np.ones(2)), ("sample X", "real")),
    (lambda: hmetrics.mode_error([1.0, 2.0], [1.0, 2.0], [0.0, 1.0]), ("mcmc standard deviations", "positive")),
    (lambda: hmetrics.sd_ratio(["a"], [1.0]), ("standard deviations sd", "numbers")),
    (lambda: univariate.univariate_objective(TU.student_t_spec(5.0), "kl", "a", 1.0), ("mean mu", "numbers")),
    (lambda: univariate.univariate_objective(TU.student_t_spec(5.0), "kl", np.nan, 1.0), ("mean mu", "non-finite")),
    (lambda: univariate.univariate_objective(TU.student_t_spec(5.0), "kl", 0.0, -1.0), ("variance", "positive")),
    (lambda: univariate.univariate_objective(TU.student_t_spec(5.0), ["kl"], 0.0, 1.0), ("unknown divergence",)),
    (lambda: univariate.iae(TU.student_t_spec(5.0), "a", 1.0), ("mean mu",)),
    (lambda: univariate.iae(TU.student_t_spec(5.0), 1j, 1.0), ("mean mu", "real")),
    (lambda: univariate.log_inverse_gamma_optima("a"), ("shape a1",)),
    (lambda: univariate.log_inverse_gamma_optima(np.inf), ("shape a1",)),
    (lambda: TU.univariate_target(["x"]), ("univariate target",)),
    (lambda: TU.skew_normal_spec("a"), ("location m",)),
    (lambda: TU.skew_normal_spec(0.0, 1.0, np.inf), ("skewness lambda", "finite")),
    (lambda: gradvar.gradient_variance_diagonal(1j, 1.0), ("lambda_ii", "real")),
    (lambda: gradvar.gradient_variance_diagonal(-1.0, 1.0), ("positive",)),
    (lambda: gradvar.gradient_variance_mc(KEY, I2, Z2, Z2, I2, n=1), ("draws n", "at least 2")),
    (lambda: gradvar.gradient_variance_mc(KEY, I2, Z2, Z2, I2, n="a"), ("draws n",)),
    (lambda: papers.horseshoe_crab_toy(np.inf), ("prior variance",)),
    (lambda: papers.horseshoe_crab_toy("a"), ("prior variance",)),
    (lambda: nets.make_mlp(["a", 2]), ("sizes", "whole number")),
    (lambda: nets.make_mlp([2, 0]), ("sizes", "at least 1")),
    (lambda: nets.make_linear("a", 2), ("sizes",)),
    (lambda: nets.lenet5(n_classes=0), ("n_classes",)),
    (lambda: nets.lenet5(n_classes="a"), ("n_classes",)),
    (lambda: nets.lenet5((28, 28)), ("input shape",)),
    (lambda: nets.n_params_of(["a"]), ("sizes",)),
    (lambda: nets.make_cnn((8, 8), channels=(0,)), ("channels",)),
    (lambda: nets.make_cnn("8x8"), ("image_shape",)),
    (lambda: nets.bong_cnn(kernel=0), ("kernel",)),
    (lambda: nets.mlp(hidden=(-1,)), ("hidden",)),
])
def test_more_modules_reject_bad_input(fn, words):
    assert_value_error(fn, *words)


@pytest.mark.parametrize("alpha, word", [(HUGE_INT, "too large"), ("fast", "number"), (-1.0, "positive"),
                                         (np.nan, "positive")])
def test_hierarchical_step_size(alpha, word):
    m = hmodels.synthetic_glmm(2)
    assert_value_error(lambda: hfit.start_state(m, "gva-snngm", KEY, alpha=alpha), "step size of SNNGM", word)
