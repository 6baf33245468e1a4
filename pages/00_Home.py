"""Home: what the lab is for, the papers behind it, a map of the pages, sharing views by URL."""

from pathlib import Path

import streamlit as st

import vilab_ui as ui
from vilab.theory import fields as vf
from vilab import plots
from vilab.plots import fields as fplots
from vilab.targets.papers import horseshoe_crab_toy

ui.page(
    "vilab: the natural-gradient VI lab",
    "Variational inference fits a Gaussian to a posterior. The same objective, followed with Euclidean or natural gradients, takes very different paths: "
    "watch them, move the step size, and check the papers' numbers yourself.",
)

CRAB_START = (0.0, 0.1)  # Tan (2025) Fig. 1's first starting point
HERO = ("gd-mv", "kappa")  # Euclidean and natural gradient ascent in (mu, sigma^2)


@ui.cache_data()
def _hero():
    """Tan (2025) Fig. 1 on the horseshoe-crab toy: ELBO contours, both paths from one start (backtracking)."""
    target = horseshoe_crab_toy()
    box = ((-0.25, 1.45), (0.0005, 0.105))
    grid = vf.chart_grid(target, vf.CHARTS[0], box, 17)
    fine = vf.chart_grid(target, vf.CHARTS[0], box, 80)
    opt = target.info["optimum"]
    l_opt = float(vf.elbo_grads_1d(target, opt[0], opt[1])[0])
    paths, steps = {}, {}
    for code in HERO:
        tr = vf.run_1d(code, target, *CRAB_START, 1.0, schedule="backtracking", rel_tol=1e-7, n_steps=1000)
        steps[code] = tr.n_steps
        paths[plots.label(code)] = (tr.mean[:, 0], tr.cov[:, 0, 0], tr.status, plots.label(code))
    return grid, fine, opt, l_opt, paths, steps


ctl, area = ui.columns(1, 2.2)
with area:
    with ui.guard("figure"):
        grid, fine, opt, l_opt, paths, steps = _hero()
        ui.show(ui.recipe(fplots.field_figure, grid["xs"], grid["ys"], grid["Nx"], grid["Ny"], objective=fine["L"],
                          objective_xy=(fine["xs"], fine["ys"]), objective_max=l_opt, optimum=opt, paths=paths,
                          normalise=True, xlabel="mean μ", ylabel="variance σ²", arrow_color="#9a9a9a", height=430),
                key="hero", main=True)
        ui.notice(f"Both paths maximise the same ELBO from the same start. The Euclidean gradient ascent "
                  f"zigzags ({steps['gd-mv']} steps): near σ² = 0 the entropy term makes its vertical component "
                  f"huge, so the step size must stay tiny. The natural gradient (grey arrows) rescales by the "
                  f"inverse Fisher information and heads for the optimum (○) in {steps['kappa']} steps.")
with ctl:
    st.markdown("**Start here**")
    for path, title, text in [
        ("pages/10_Vector_fields.py", "Vector fields", "this figure, live: any start, any coordinates"),
        ("pages/20_Trajectories.py", "Trajectories", "2-D posteriors, every method side by side"),
        ("pages/30_Adam_vs_SNNGM.py", "Adam vs SNNGM", "an optimizer built on natural gradients"),
        ("pages/40_Divergences.py", "Divergences", "why Fisher divergences shrink variances"),
        ("pages/90_Reproductions.py", "Reproductions", "check a paper's number with one button"),
    ]:
        ui.link(path, f"{title}: {text}")

st.latex(r"\lambda \leftarrow \lambda + \rho\, F_\lambda^{-1} \nabla_\lambda \mathcal L(\lambda)")
st.caption("Natural-gradient ascent on the ELBO: $F_\\lambda$ is the Fisher information of $q_\\lambda$, "
           "$\\rho$ the step size.")
st.markdown(
    "Gaussian variational inference fits $q(\\theta) = \\mathcal N(\\mu, \\Sigma)$ to a posterior by "
    "maximising the evidence lower bound (ELBO). *How* you take the steps matters: the same objective, "
    "followed with Euclidean or natural gradients, in covariance, Cholesky or precision coordinates, takes "
    "very different paths, and some of them stop being a covariance at all."
)

st.subheader("The five papers")
st.markdown(
    """
| Paper | In one line |
|---|---|
| L. S. L. Tan, *Analytic natural gradient updates for Cholesky factor in Gaussian variational approximation* (JRSS-B 2025) | The Fisher information of a Cholesky factor inverts in closed form: natural-gradient steps for $C$ ($\\Sigma = CC^\\top$) or $T$ ($\\Sigma^{-1} = TT^\\top$) cost one triangular product, and the SNNGM optimizer replaces Adam. |
| L. S. L. Tan, *Explicit natural gradient updates for Cholesky factor in Gaussian variational approximation* | The short version: explicit updates for $C$ and $T$, their sparse forms, and why updating a factor keeps $\\Sigma$ positive definite. |
| N. Kumar, T. Möllenhoff, M. E. Khan, A. Lucchi, *Optimization Guarantees for Square-Root Natural-Gradient Variational Inference* (TMLR 2025) | Square-root natural-gradient VI (SR-VN) with exponential convergence guarantees, compared with VN, Euclidean and Wasserstein gradient descent. |
| A. Chen, D. J. Nott, L. S. L. Tan, *Weighted Fisher divergence for high-dimensional Gaussian variational inference* | Fisher and score-based divergences shrink mean-field variances even more than KL (and can collapse them to zero); batch versions behave differently. |
| M. Jones, P. G. Chang, K. Murphy, *Bayesian Online Natural Gradient (BONG)* (NeurIPS 2024) | One natural-gradient step with unit learning rate from the prior, without the KL term, is exact Bayes for conjugate models and beats its relatives online. |
"""
)

st.subheader("Map of the lab")
DESCRIPTIONS = {
    "Lecture_decks": "Decks of saved views, each with a question and its answer: present the papers' key results in class, step by step with the keyboard (F / B / A).",
    "Vector_fields": "Euclidean vs natural gradient fields of the ELBO on a 1-D posterior, in several coordinates, with the paths of Tan's Table 1 rules.",
    "Trajectories": "2-D targets: mean paths and covariance ellipses of every update rule, objective against iteration, step-size sweeps.",
    "Stability_atlas": "Iterations to convergence over step size and condition number, with the stability limits and Kumar et al.'s Thm 2; a click opens the run.",
    "Positive_definiteness": "Why a precision update can stop being a covariance, and why Cholesky-factor updates cannot.",
    "Flows_and_guarantees": "Continuous-time flows and the convergence guarantees of Kumar et al.; VN vs SR-VN.",
    "Adam_vs_SNNGM": "Adam, natural-gradient Adam and SNNGM paths on toy and real data.",
    "Divergences": "Mean-field variances under KL, Fisher, score-based and weighted Fisher divergences; batch methods step by step.",
    "Online_learning": "BONG and its relatives updating a posterior one example at a time.",
    "CNN_lab": "Variational and online natural-gradient training of convolutional networks in JAX.",
    "Hierarchical_models": "Sparse natural gradients for mixed models and state-space models, against MCMC.",
    "Reproductions": "Every number of the papers that vilab reproduces: press a button, see paper vs computed.",
}
here = Path(__file__).resolve().parent
for p in sorted(here.glob("*.py")):
    stem = p.stem.partition("_")[2]
    if stem in DESCRIPTIONS:
        ui.link(f"pages/{p.name}", f"**{stem.replace('_', ' ')}**: {DESCRIPTIONS[stem]}")

st.subheader("Sharing a view")
st.markdown(
    "Every slider, choice and toggle is written into the page's URL as you change it "
    "(for example `?rho=0.9&sd1=2`). Copy the address bar to share the exact view: opening the link "
    "restores every control and redraws the same figures. The sidebar's **random seed** fixes every "
    "Monte Carlo draw, and **lecture mode** sizes every text for a projector."
)
st.caption("The computation package `vilab` can be used without the app: `vilab repro --list` lists the reproductions.")
