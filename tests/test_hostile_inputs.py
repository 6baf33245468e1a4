"""Hostile input to the public functions outside the runner (issue 41, item 4): each case the probe found
(online.predict, targets.from_log_density, natgrad, optim, divergences at condition number 1e16, deck
numbers) and the others of the same kind. Bad input raises ValueError (exactly, not a subclass or another
type) with a sentence that names the argument and the problem; a divergence is never negative."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vilab.family import gaussian as G
from vilab.family import natgrad as ng
from vilab import online
from vilab.algorithms import optim
from vilab.divergences import gaussian as D
from vilab.divergences import stochastic as ST
from vilab.family.dense import GaussianFamily, MomentFamily
from vilab.online import DLR, FC, Diag, predict
from vilab.targets import from_log_density
from vilab.targets.papers import horseshoe_crab_toy
from vilab_ui import decks

Z2, I2 = np.zeros(2), np.eye(2)


def assert_sentence(fn, *words):
    """fn() raises ValueError itself whose message is a sentence naming every word (case-insensitive)."""
    with pytest.raises(ValueError) as exc:
        fn()
    assert type(exc.value) is ValueError, f"{type(exc.value).__name__}: {exc.value}"
    msg = str(exc.value)
    assert msg.strip().endswith((".", ")")), msg
    for w in words:
        assert w.lower() in msg.lower(), f"{w!r} not in {msg!r}"
    return msg


# ---------------------------------------------------------------------------------------------
# online.predict: gamma and Q checked as stream(dynamics=) checks them

BELIEFS = {"fc": FC(jnp.zeros(2), jnp.eye(2)), "diag": Diag(jnp.zeros(2), jnp.ones(2)),
           "dlr": DLR(jnp.zeros(2), jnp.ones(2), jnp.zeros((2, 1)))}


@pytest.mark.parametrize("family", sorted(BELIEFS))
@pytest.mark.parametrize("gamma, Q, words", [
    (np.nan, np.zeros((2, 2)), ("gamma", "finite")),          # the reported case: a NaN belief came back
    (0.9, -np.eye(2), ("process noise Q",)),                  # a negative variance
    (0.9, np.ones(3), ("process noise Q", "one variance per parameter")),
    ("fast", 0.1, ("gamma", "number")),
])
def test_predict_checks_gamma_and_q(family, gamma, Q, words):
    assert_sentence(lambda: predict(BELIEFS[family], gamma, Q), *words)


def test_predict_takes_q_in_every_form_stream_takes():
    """The check also shapes Q as stream(dynamics=) does: a number, a vector or a matrix for every family."""
    out = predict(BELIEFS["fc"], 0.5, 0.1)
    np.testing.assert_allclose(np.asarray(out.Sigma), 0.35 * np.eye(2))
    out = predict(BELIEFS["diag"], 0.5, np.diag([0.1, 0.2]))
    np.testing.assert_allclose(np.asarray(out.s2), [0.35, 0.45])


# ---------------------------------------------------------------------------------------------
# targets.from_log_density: the moments and the window are checked


def _log_p(theta):
    return -0.5 * jnp.sum(theta**2)


@pytest.mark.parametrize("kwargs, words", [
    (dict(mean=[np.nan, 0.0]), ("posterior mean", "non-finite")),
    (dict(mean=[0.0, 0.0, 0.0]), ("posterior mean", "2 coordinates")),
    (dict(cov=[[1.0, 2.0], [2.0, 1.0]]), ("posterior covariance", "positive definite")),
    (dict(cov=np.eye(3)), ("posterior covariance", "2 x 2")),
    (dict(cov=[[1.0, 0.5], [0.0, 1.0]]), ("posterior covariance", "symmetric")),
    (dict(bounds=((1.0, -1.0), (-1.0, 1.0))), ("bounds", "low < high")),
    (dict(bounds=((0.0, 1.0),)), ("bounds", "2 pairs")),
    (dict(bounds=((0.0, np.inf), (0.0, 1.0))), ("bounds", "non-finite")),
    (dict(info="notes"), ("info", "dictionary")),
])
def test_from_log_density_checks_its_moments_and_window(kwargs, words):
    assert_sentence(lambda: from_log_density(_log_p, 2, **kwargs), *words)


def test_from_log_density_keeps_good_moments_and_window():
    t = from_log_density(_log_p, 2, mean=[0, 0], cov=I2, bounds=[[-3, 3], [-2, 2]])
    np.testing.assert_array_equal(t.cov, I2)
    assert t.bounds == ((-3.0, 3.0), (-2.0, 2.0))


# ---------------------------------------------------------------------------------------------
# natgrad


def test_update_lambda_with_a_singular_updated_precision_says_so():
    """P - 2 rho grad_Sigma = 0: the mean step P+^-1 grad_mu was NaN / inf."""
    assert_sentence(lambda: ng.update_lambda(Z2, I2, np.ones(2), 0.5 * I2, 1.0), "update_lambda", "singular", "rho")


def test_update_cor1_with_a_zero_on_the_updated_diagonal_says_so():
    assert_sentence(lambda: ng.update_cor1(Z2, I2, np.ones(2), -2.0 * I2, 1.0), "update_cor1", "diagonal", "rho")


@pytest.mark.parametrize("sizes, words", [
    ([2.7], ("block sizes", "2.7")),       # was silently truncated to 2
    (["a"], ("block sizes", "'a'")),       # was int()'s "invalid literal for int() with base 10"
    ([True], ("block sizes",)),
    (3, ("block sizes", "list")),          # was TypeError: 'int' object is not iterable
    ([10**9], ("block sizes", "at most")),  # was MemoryError
])
def test_block_mask_refuses_what_is_not_a_list_of_whole_sizes(sizes, words):
    assert_sentence(lambda: ng.block_mask(sizes), *words)


def test_arrow_mask_refuses_a_fractional_global_size():
    assert_sentence(lambda: ng.arrow_mask([2], 1.5), "global block size", "whole number")


UPDATES = {
    "update_kappa": (I2, I2), "update_xi": (I2, I2), "update_lambda": (I2, I2), "update_lambda_pd": (I2, I2),
    "update_chol_cov": (I2, I2), "update_chol_prec": (I2, I2), "update_cor1": (I2, I2),
    "update_chol_cov_logdiag": (I2, I2), "update_chol_cov_euclid": (I2, I2), "update_chol_prec_euclid": (I2, I2),
}


@pytest.mark.parametrize("name", sorted(UPDATES))
@pytest.mark.parametrize("rho", [-1.0, 0.0])
def test_every_update_refuses_a_step_size_that_is_not_positive(name, rho):
    M, G_ = UPDATES[name]
    assert_sentence(lambda: getattr(ng, name)(Z2, M, 0.1 * np.ones(2), 0.1 * G_, rho), "step size rho")


def test_sparse_natgrad_example_refuses_fractional_sizes():
    assert_sentence(lambda: ng.sparse_natgrad_example("C", n_blocks=2.5), "n_blocks", "whole number")
    assert_sentence(lambda: ng.masked_dense_natgrad("C", I2, I2, [["a", "b"], ["c", "d"]]), "mask")


# ---------------------------------------------------------------------------------------------
# optim: step sizes, moment decays and Adam's eps


@pytest.mark.parametrize("make, words", [
    (lambda: optim.adam(1e-3, eps=np.nan), ("eps", "finite")),
    (lambda: optim.adam(1e-3, eps=-1.0), ("eps", ">= 0")),
    (lambda: optim.adam(1e-3, eps="small"), ("eps", "number")),
    (lambda: optim.adam_natural(1e-3, eps=np.inf), ("eps", "finite")),
    (lambda: optim.pga(1e-3, eps=-1e-8, layout=GaussianFamily(2, "chol_cov")), ("eps", ">= 0")),
    (lambda: optim.adam(True), ("step size alpha",)),                  # a bool was taken as 1
    (lambda: optim.adam(jnp.asarray(np.nan)), ("step size alpha",)),   # a concrete jax NaN went through
    (lambda: optim.snngm(jnp.asarray(-1.0)), ("alpha0",)),
    (lambda: optim.snngm_alpha("a", 3), ("alpha0",)),
    (lambda: optim.tau_weights(2.5), ("N", "whole number")),
    (lambda: optim.minibatch_indices(np.random.default_rng(0), 10, 2.5, 4), ("minibatch size",)),
    (lambda: optim.minibatch_indices(np.random.default_rng(0), 10, 0, 4), ("minibatch size",)),
])
def test_optimizers_refuse_nonsense_settings(make, words):
    assert_sentence(make, *words)


# ---------------------------------------------------------------------------------------------
# divergences at condition number 1e16: never negative


def _ill_conditioned_pairs():
    """Sigma = R diag(1, 1e-16) R^T (condition number ~1e16, accepted by validation) and Lambda = Sigma^-1
    computed in float64: q and p nearly equal, where the expanded trace formulas cancel catastrophically
    (before the fix: forward KL, KL, Fisher and score divergence down to -6e15 on this grid)."""
    out = []
    for th in np.linspace(0.1, 3.0, 30):
        c, s = np.cos(th), np.sin(th)
        R = np.array([[c, -s], [s, c]])
        S = R @ np.diag([1.0, 1e-16]) @ R.T
        S = 0.5 * (S + S.T)
        L = np.linalg.inv(S)
        out.append((S, 0.5 * (L + L.T)))
    return out


@pytest.mark.parametrize("name", ["kl", "forward_kl", "fisher", "score"])
def test_closed_form_divergences_are_never_negative_at_condition_number_1e16(name):
    values = []
    for S, L in _ill_conditioned_pairs():
        try:
            values.append(float(D.divergence(name, Z2, S, Z2, L)))
        except ValueError as exc:  # refused (too close to singular, or not finite): a sentence, not a number
            assert type(exc) is ValueError and ("singular" in str(exc) or "not finite" in str(exc)), exc
    assert len(values) >= 25 and min(values) >= 0.0, min(values)


def test_a_covariance_too_close_to_singular_to_factorise_is_called_that():
    """Cholesky fails on this rotated diag(1, 1e-16) while its computed eigenvalues are positive: the
    message said "must be positive definite, but its smallest eigenvalue is 5.55e-17"."""
    S = np.array([[0.34633356501078993, -0.47580103694475784], [-0.47580103694475784, 0.6536664349892101]])
    assert np.linalg.eigvalsh(S)[0] > 0
    assert_sentence(lambda: D.divergence("forward_kl", Z2, S, Z2, I2), "covariance", "too close to singular")
    assert_sentence(lambda: G.entropy(G.MeanCov(Z2, S)), "covariance", "too close to singular")


def test_gaussian_kl_between_nearly_equal_distributions_is_not_negative():
    """KL(p || q) for q = p with its covariance scaled by 1 + 1e-15 (an ill-conditioned one) came out
    -4.4e-16; every family's kl goes through vilab.family.gaussian.kl."""
    for rho in (1 - 2**-52, 1 - 2**-51, 1 - 2**-50, 1 - 1e-14):
        S = 1e8 * np.array([[1.0, rho], [rho, 1.0]])
        assert float(G.kl(G.MeanCov(Z2, S), G.MeanCov(Z2, S * (1 + 1e-15)))) >= 0.0
        b, c = FC(jnp.zeros(2), jnp.asarray(S)), FC(jnp.zeros(2), jnp.asarray(S * (1 + 1e-15)))
        assert float(MomentFamily(2).kl(b, c)) >= 0.0


# ---------------------------------------------------------------------------------------------
# deck numbers bounded like deck strings

def _deck_with(number_text: str) -> str:
    deck = {"format": "vilab-deck", "version": 1, "title": "t",
            "views": [{"page": decks.page_stems()[0], "params": {"seed": 1}, "prompt": "", "reveal": ""}]}
    return json.dumps(deck).replace('"seed": 1', f'"seed": {number_text}')


@pytest.mark.parametrize("number, words", [
    ("5" * 5000, ("number", "characters")),   # was Python's "Exceeds the limit (4300 digits) ..."
    ("5" * 400, ("number", "characters")),
    ("1" + "0" * 20, ("seed", "too large")),
    ("-1e300", ("seed", "too large")),
])
def test_deck_numbers_are_bounded_with_a_sentence(number, words):
    text = _deck_with(number)
    msg = assert_sentence(lambda: decks.loads(text), *words)
    assert "4300" not in msg and "int()" not in msg
    token = decks.encode(decks.loads(_deck_with("7")))
    assert decks.loads(_deck_with("7")).views[0].params["seed"] == "7" and decks.decode(token).views
    assert_sentence(lambda: decks.make_view(decks.page_stems()[0], {"seed": 10**5000}), "seed", "too large")


# ---------------------------------------------------------------------------------------------
# the others of the same kind (a sweep of the public functions of vilab.online, vilab.targets,
# vilab.family.natgrad, vilab.algorithms.optim and vilab.divergences with text, NaN, negative numbers, None and
# wrong shapes): each of these answered with TypeError, AttributeError, ZeroDivisionError or IndexError
# in Python's or JAX's words, or returned NaN


KEY = jax.random.PRNGKey(0)
_B = FC(jnp.zeros(2), jnp.eye(2))
_TH, _G = np.ones((3, 2)), -np.ones((3, 2))
OTHERS = [
    ("grad_h NaN", lambda: ng.grad_h([np.nan, 0.0], Z2, Z2, I2), ("grad_logp", "non-finite")),
    ("estimator_G1 text", lambda: ng.estimator_G1(Z2, "a"), ("draw z", "text")),
    ("estimator_G1 lengths", lambda: ng.estimator_G1(Z2, np.ones(3)), ("draw z", "length 2")),
    ("estimator_F2 number", lambda: ng.estimator_F2(1.0, I2), ("factor T", "matrix")),
    ("natural_step scalar z", lambda: ng.natural_step_chol_cov_sample(I2, 0.0, Z2), ("draw z", "vector")),
    ("blockdiag sizes", lambda: ng.natural_grad_chol_cov_blockdiag(Z2, I2, Z2, I2, [1, 2]), ("block sizes", "2 x 2")),
    ("arrow sizes", lambda: ng.natural_grad_chol_prec_arrow(Z2, I2, Z2, I2, [1, 1], 1), ("sizes", "2 x 2")),
    ("sparse_pattern text", lambda: ST.sparse_pattern("a", 1, 0, 1), ("n_local", "whole number")),
    ("sparse_pattern NaN", lambda: ST.sparse_pattern(2, float("nan"), 0, 1), ("block size", "whole number")),
    ("make_mask d", lambda: ST.make_mask("dense", 2.5), ("dimension d", "whole number")),
    ("make_mask text", lambda: ST.make_mask([["a", "b"], ["c", "d"]], 2), ("sparsity pattern",)),
    ("bam_update mu", lambda: ST.bam_update("a", I2, _TH, _G, 1.0), ("mean mu",)),
    ("bam_update rho", lambda: ST.bam_update(Z2, I2, _TH, _G, -1.0), ("rho", "positive")),
    ("bam_update shapes", lambda: ST.bam_update(Z2, I2, _TH, np.ones((3, 3)), 1.0), ("scores gs", "same shape")),
    ("batch_statistics list", lambda: ST.batch_statistics([1.0, 2.0], [1.0, 2.0]), ("draws thetas", "matrix")),
    ("make_optimizer rate", lambda: ST.make_optimizer("adam", "fast"), ("learning rate",)),
    ("make_optimizer rho", lambda: ST.make_optimizer("adadelta", None, "a"), ("rho",)),
    ("dense_cov not a belief", lambda: online.dense_cov("x"), ("BONG belief",)),
    ("marginal_variances not a belief", lambda: online.marginal_variances(np.ones(3)), ("BONG belief",)),
    ("sample n", lambda: online.sample(KEY, _B, 2.5), ("draws n", "whole number")),
    ("sample key", lambda: online.sample(0.0, _B, 3), ("jax.random key",)),
    ("variance_curves_2d number", lambda: D.variance_curves_2d(0.5), ("rhos", "list")),
    ("monte_carlo key", lambda: D.monte_carlo_divergence("k", lambda t: -t, Z2, I2), ("jax.random key",)),
    ("monte_carlo score", lambda: D.monte_carlo_divergence(KEY, None, Z2, I2), ("score", "function")),
    ("default_alpha list", lambda: optim.default_alpha(["adam"]), ("Unknown optimizer",)),
    ("grid_names rank", lambda: online.grid_names(2.5), ("DLR rank", "whole number")),
    ("horseshoe_crab_toy list", lambda: horseshoe_crab_toy([1.0, 2.0]), ("prior variance",)),
]


@pytest.mark.parametrize("fn, words", [pytest.param(fn, words, id=name) for name, fn, words in OTHERS])
def test_the_others_of_the_same_kind_answer_in_a_sentence(fn, words):
    assert_sentence(fn, *words)
