"""Your own model: from_log_density, the method table generated from the code, feeding your own
gradients to one step, and the mkdocs hook that inserts the table."""

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import vilab
from vilab import core
from vilab.algorithms import (METHODS, State, algorithm, get_method, list_methods, method_table,
                              method_table_markdown)
from vilab.targets import Target, from_log_density

ROOT = Path(__file__).resolve().parents[1]
STRUCT = {"tan-1S": {"blocks": (1, 2)}, "tan-2S": {"local_sizes": (1, 1), "global_size": 1}}


def _logistic_like(theta):
    return -0.5 * jnp.sum(theta ** 2) - jnp.sum(jnp.log1p(jnp.exp(-(theta + 1.0))))


# ---- from_log_density -------------------------------------------------------------------------

def test_from_log_density_gives_autodiff_derivatives():
    t = from_log_density(_logistic_like, 3, name="mine")
    assert isinstance(t, Target) and t.dim == 3 and t.name == "mine"
    x = jnp.array([0.3, -0.2, 1.0])
    np.testing.assert_allclose(t.grad(x), jax.grad(_logistic_like)(x), rtol=1e-12)
    np.testing.assert_allclose(t.hess(x), jax.hessian(_logistic_like)(x), rtol=1e-12)
    assert t.value(x).dtype == jnp.float64


@pytest.mark.parametrize("bad, dim, words", [
    (lambda th: th ** 2, 2, "one number"),                       # a vector, not a scalar
    (lambda th: float(np.sum(np.asarray(th))), 2, "not pure JAX"),  # numpy on a tracer
    (lambda th: th[0] if th[1] > 0 else th[1], 2, "not pure JAX"),  # Python if on theta
    (lambda th: jnp.log(th[0]), 2, "not finite at the start"),     # log 0 at zeros
    (lambda th: jnp.sqrt(jnp.abs(th[0])), 1, "gradient"),          # infinite slope at 0
    (lambda th: th @ jnp.ones(3), 2, "fails"),                       # written for another dimension
    ("not a function", 2, "function"),
    (lambda th: jnp.sum(th), 0, "whole number"),
    (lambda th: jnp.sum(th), 2.5, "whole number"),
])
def test_from_log_density_refuses_bad_functions_with_a_sentence(bad, dim, words):
    with pytest.raises(ValueError, match=words):
        from_log_density(bad, dim)


def test_from_log_density_start_and_its_checks():
    t = from_log_density(lambda th: jnp.log(th[0]) - th[0] - th[1] ** 2, 2, start=[1.0, 0.0])
    assert np.isfinite(float(t.value(jnp.array([1.0, 0.0]))))
    with pytest.raises(ValueError, match="2 coordinates"):
        from_log_density(lambda th: jnp.sum(th), 2, start=[1.0, 2.0, 3.0])


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_runs_on_your_own_model(name):
    t = from_log_density(_logistic_like, 3)
    alg = algorithm(name, t, grads="first", n_samples=4, **STRUCT.get(name, {}))
    key = core.as_key(0)
    tr = core.run(alg, key, alg.init(key, (np.zeros(3), 0.5 * np.eye(3)), rho=0.05), 30)
    assert tr.n_steps == 30 and tr.status == "max_steps", tr.status
    assert np.all(np.isfinite(tr.mean)) and np.all(np.isfinite(tr.objective))


# ---- the method table -------------------------------------------------------------------------

def test_method_table_covers_every_method_and_the_methods_outside():
    rows = method_table()
    inside = [r for r in rows if r["section"] == "catalogue"]
    assert [r["name"] for r in inside] == [m["name"] for m in list_methods()]
    for r in inside:
        m = get_method(r["name"])
        assert r["consumes"] == ("grad_mu", m.takes) and r["paper"] == m.paper and r["paper"]
    outside = " ".join(r["name"] + r["where"] for r in rows if r["section"] == "outside")
    for words in ("batch-and-match", "vilab.divergences.stochastic", "BONG", "vilab.online", "vilab.cnn"):
        assert words in outside
    md = method_table_markdown()
    for m in list_methods():
        assert f"| `{m['name']}` |" in md
    table_lines = [line for line in md.splitlines() if line.startswith("|")]
    assert len(table_lines) == len(rows) + 4  # every row, plus a header and a rule per table


def _point(method, d=3, seed=0):
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=d)
    L = np.tril(rng.normal(size=(d, d)) * 0.1) + np.eye(d)
    M = L @ L.T if method.chart in ("mean_cov", "mean_prec") else L
    if method.name in STRUCT:
        from vilab.family import natgrad as ng
        o = STRUCT[method.name]
        M = M * (ng.block_mask(o["blocks"]) if "blocks" in o else ng.arrow_mask(o["local_sizes"], o["global_size"]))
    A = rng.normal(size=(d, d)) * 0.1
    G = A + A.T if method.takes == "grad_Sigma" else np.tril(A)
    return jnp.asarray(mu), jnp.asarray(M), jnp.asarray(rng.normal(size=d)), jnp.asarray(G)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_consumes_column_agrees_with_what_the_step_reads(name):
    """The step depends on both gradients it claims (non-zero derivative), and a Cholesky-chart step
    reads only the lower triangle of grad_C / grad_T (NaN above the diagonal leaves it finite and equal)."""
    m = get_method(name)
    opts = STRUCT.get(name, {})
    mu, M, g_mu, G = _point(m)

    def out(g_mu, G):
        s = m.step(State(mu, M), (g_mu, G), 0.1, **opts)
        return jnp.concatenate([s.mu, s.M.ravel()])

    J_mu, J_G = jax.jacobian(out, argnums=(0, 1))(g_mu, G)
    assert float(jnp.max(jnp.abs(J_mu))) > 0, "the step ignores grad_mu"
    assert float(jnp.max(jnp.abs(J_G))) > 0, f"the step ignores {m.takes}"
    if m.takes in ("grad_C", "grad_T"):
        upper = np.triu(np.ones(G.shape, bool), 1)
        assert float(jnp.max(jnp.abs(J_G[:, upper]))) == 0.0
        poisoned = jnp.where(upper, jnp.nan, G)
        f = jax.jit(out)  # traced: the host-side input checks of vilab.family.natgrad (which refuse NaN) step aside
        a, b = f(g_mu, G), f(g_mu, poisoned)
        assert bool(jnp.all(jnp.isfinite(b)))
        np.testing.assert_allclose(b, a, rtol=0, atol=0)


def test_your_own_gradient_estimates_in_one_step():
    """Feed one step of srvn (chart (mu, C)) with your own (grad_mu, tril grad_C)."""
    from vilab.family import natgrad as ng
    m = get_method("srvn")
    mu, C = jnp.zeros(2), jnp.eye(2)
    g_mu, G_S = jnp.array([1.0, -1.0]), jnp.array([[-0.5, 0.0], [0.0, -0.25]])
    s = m.step(State(mu, C), (g_mu, ng.grad_chol_cov(C, G_S)), 0.5)
    np.testing.assert_allclose(s.mu, 0.5 * g_mu)  # Sigma = I: the mean moves by rho Sigma g
    assert s.M.shape == (2, 2) and bool(jnp.all(jnp.isfinite(s.M)))


# ---- the mkdocs hook and the page ---------------------------------------------------------------

def test_mkdocs_hook_inserts_the_table():
    spec = importlib.util.spec_from_file_location("method_table_hook", ROOT / "docs/hooks/method_table.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = (ROOT / "docs/your-model.md").read_text()
    assert hook.MARKER in page
    out = hook.on_page_markdown(page, None, {}, None)
    assert hook.MARKER not in out and method_table_markdown() in out
    assert hook.on_page_markdown("no marker", None, {}, None) == "no marker"


def test_import_enables_x64_and_nothing_else_in_the_docstring():
    assert jax.config.jax_enable_x64
    assert "jax_enable_x64" in vilab.__doc__ and "float32" in vilab.__doc__


def test_the_page_examples_run_and_give_what_they_say():
    import re
    src = (ROOT / "docs/your-model.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", src, re.S)
    assert len(blocks) == 3
    ns = {"print": lambda *a: None}
    exec(blocks[0] + blocks[1].replace("500)", "20)") + blocks[2], ns)  # noqa: S102 (our own page)
    assert ns["trace"].n_steps == 20 and ns["trace"].status == "max_steps"
    np.testing.assert_allclose(ns["new"].mu, [0.5, -0.5])
    np.testing.assert_allclose(ns["new"].M, [[0.75, 0.0], [0.0, 0.875]])


def test_cor1_coordinates_are_explicit():
    """coords="nu" (Tan Cor. 1) is the derivative of xi = (T^T mu, T) along the (mu, T)
    direction of coords="mu", which equals Thm 1(ii)'s natural gradient."""
    from vilab.family import natgrad as ng
    rng = np.random.default_rng(3)
    d = 3
    mu = jnp.asarray(rng.normal(size=d))
    T = jnp.asarray(np.tril(rng.normal(size=(d, d)) * 0.2) + np.eye(d))
    g = jnp.asarray(rng.normal(size=d))
    G = jnp.asarray(np.tril(rng.normal(size=(d, d))))
    with pytest.raises(ValueError, match='coords="nu" gives the direction of T\\^T mu'):
        ng.natural_grad_cor1(mu, T, g, G)  # no default: the coordinate trap cannot be fallen into silently
    nu_dir, T_dir = ng.natural_grad_cor1(mu, T, g, G, coords="nu")
    mu_dir, T_dir2 = ng.natural_grad_cor1(mu, T, g, G, coords="mu")
    for a, b in zip((mu_dir, T_dir2), ng.natural_grad_chol_prec(mu, T, g, G)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    # chain rule: d(T^T mu) = dT^T mu + T^T dmu
    _, dnu = jax.jvp(lambda m, t: t.T @ m, (mu, T), (mu_dir, T_dir2))
    np.testing.assert_allclose(dnu, nu_dir, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(T_dir2, T_dir, rtol=1e-12)
    with pytest.raises(ValueError, match="coords"):
        ng.natural_grad_cor1(mu, T, g, G, coords="xi")
    with pytest.raises(TypeError):  # keyword only: a call always says which coordinates it means
        ng.natural_grad_cor1(mu, T, g, G, "mu")
