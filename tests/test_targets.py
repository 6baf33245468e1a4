import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vilab.targets import (banana, bayes_linreg, check_point, gaussian_2d, gaussian_target, logistic_regression,
                           rotated_gaussian_2d, student_t_2d)


def _numeric_grad(f, x, h=1e-6):
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(len(x))])


@pytest.mark.parametrize(
    "target",
    [gaussian_2d(0.7, 1.0, 2.0), banana(0.4), student_t_2d(3.0, 0.3), student_t_2d(1.0),
     logistic_regression(np.random.default_rng(0).normal(size=(30, 2)), (np.arange(30) % 2).astype(float))],
    ids=lambda t: t.name,
)
def test_autodiff_gradients_match_finite_differences(target):
    x = np.array([0.3, -0.4])
    f = lambda t: float(target.value(jnp.asarray(t)))  # noqa: E731
    np.testing.assert_allclose(target.grad(x), _numeric_grad(f, x), rtol=1e-6, atol=1e-6)
    g = lambda t: np.asarray(target.grad(jnp.asarray(t)))  # noqa: E731
    H = np.array([(g(x + 1e-6 * e) - g(x - 1e-6 * e)) / 2e-6 for e in np.eye(2)])
    np.testing.assert_allclose(target.hess(x), H, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(target.grad_batch(np.stack([x, x])), np.stack([target.grad(x)] * 2))


def test_gaussian_targets_know_their_posterior():
    t = gaussian_2d(0.9, 1.0, 2.0, mean=(1.0, -1.0))
    np.testing.assert_allclose(t.cov, [[1.0, 1.8], [1.8, 4.0]])
    np.testing.assert_allclose(t.grad(t.mean), 0.0, atol=1e-12)
    np.testing.assert_allclose(-t.hess(t.mean), np.linalg.inv(t.cov), atol=1e-10)
    assert t.quadratic


def test_rotated_gaussian_has_its_condition_number_scale_and_axes():
    """Sigma = scale^2 R diag(1, 1/kappa) R^T, R the 45-degree rotation: precision eigenvalues
    (1, kappa) / scale^2 along (1, 1) and (-1, 1); a member of the gaussian_target family."""
    t = rotated_gaussian_2d(30.0)
    assert t.name == "Gaussian (condition number 30)" and t.quadratic
    np.testing.assert_allclose(t.mean, [1.0, 0.0])
    P = -np.asarray(t.hess(t.mean))
    lam, Q = np.linalg.eigh(P)
    np.testing.assert_allclose(lam, [1.0, 30.0], rtol=1e-12)
    np.testing.assert_allclose(np.abs(Q[:, 0]), [2**-0.5, 2**-0.5], atol=1e-12)  # flat direction: the diagonal
    np.testing.assert_allclose(t.cov, np.linalg.inv(P), rtol=1e-12)
    w = rotated_gaussian_2d(4.0, scale=3.0, mean=(0.0, 2.0))
    assert w.name == "Gaussian (condition number 4, scale 3)"
    R = np.array([[1.0, -1.0], [1.0, 1.0]]) / np.sqrt(2.0)
    np.testing.assert_allclose(w.cov, 9.0 * R @ np.diag([1.0, 0.25]) @ R.T, atol=1e-12)
    assert np.sqrt(np.linalg.eigvalsh(w.cov)[-1]) == pytest.approx(3.0)  # the largest sd is the scale
    assert w.family == t.family == gaussian_2d(0.3).family  # built by gaussian_target
    np.testing.assert_allclose(w.params["precision"], np.linalg.inv(w.cov), rtol=1e-12)


def test_bayes_linreg_posterior_is_exact(rng):
    X = rng.normal(size=(40, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=40)
    t = bayes_linreg(X, y, noise_var=0.5, prior_var=4.0)
    np.testing.assert_allclose(t.grad(t.mean), 0.0, atol=1e-9)
    np.testing.assert_allclose(-t.hess(t.mean), np.linalg.inv(t.cov), rtol=1e-10)


def test_banana_moments_by_monte_carlo():
    t = banana(0.5, 1.5)
    rng = np.random.default_rng(1)
    t1 = rng.normal(0, 1.5, 400_000)
    t2 = rng.normal(0.5 * (t1**2 - 1.5**2), 1.0)
    np.testing.assert_allclose(np.cov(np.vstack([t1, t2])), t.cov, rtol=0.02, atol=0.02)


def test_logistic_regression_accepts_pm1_labels(rng):
    X = rng.normal(size=(20, 2))
    y01 = (rng.random(20) < 0.5).astype(float)
    a, b = logistic_regression(X, y01), logistic_regression(X, 2 * y01 - 1)
    np.testing.assert_allclose(a.value(jnp.ones(2)), b.value(jnp.ones(2)))


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: gaussian_2d(1.0), "strictly between -1 and 1"),
        (lambda: gaussian_2d(0.5, sd1=0.0), "positive"),
        (lambda: gaussian_target([0, 0], precision=[[1, 2], [2, 1]]), "positive definite"),
        (lambda: gaussian_target([0, 0]), "exactly one"),
        (lambda: gaussian_target([0, 0, 0], cov=np.eye(2)), "mismatch"),
        (lambda: student_t_2d(0.0), "degrees of freedom"),
        (lambda: logistic_regression(np.ones((3, 2)), np.array([0.0, 1.0, 2.0])), "0/1"),
        (lambda: logistic_regression(np.ones((3, 2)), np.array([0.0, 1.0])), "one entry per row"),
        (lambda: bayes_linreg(np.ones((3, 2)), np.ones(3), noise_var=-1.0), "positive"),
        (lambda: gaussian_2d(np.nan), "strictly between -1 and 1"),
        (lambda: gaussian_2d(0.5, sd2=np.inf), "sd2 must be a positive finite"),
        (lambda: banana(b=np.nan), "curvature b must be finite"),
        (lambda: banana(sd1=-2.0), "sd1 must be a positive finite"),
        (lambda: student_t_2d(3.0, scale=(1.0, 0.0)), "scale"),
        (lambda: student_t_2d(3.0, loc=(0.0, 0.0, 0.0)), "two entries"),
        (lambda: logistic_regression(np.ones((3, 2)), np.ones(3), prior_var=np.nan), "prior variance"),
        (lambda: logistic_regression(np.ones((3, 2)), np.ones(3), prior_var="big"), "must be a number"),
        (lambda: rotated_gaussian_2d(0.5), "at least 1"),
        (lambda: rotated_gaussian_2d(np.inf), "condition number kappa must be a positive finite"),
        (lambda: rotated_gaussian_2d(10.0, scale=0.0), "scale must be a positive finite"),
    ],
)
def test_bad_targets_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_check_point():
    t = gaussian_2d(0.3)
    np.testing.assert_array_equal(check_point(t, [1.0, 2.0]), [1.0, 2.0])
    with pytest.raises(ValueError, match="2 coordinates"):
        check_point(t, [1.0])
    with pytest.raises(ValueError, match="non-finite"):
        check_point(t, [np.nan, 0.0])
    from vilab.targets import Target

    log_only_positive = Target("positive orthant", 1, lambda th: jnp.where(th[0] > 0, -th[0], -jnp.inf))
    with pytest.raises(ValueError, match="not finite"):
        check_point(log_only_positive, [-1.0])
    assert jax.numpy.isfinite(log_only_positive.value(jnp.array([1.0])))
