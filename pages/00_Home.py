"""Home: what the lab is for, the papers behind it, a map of the pages, sharing views by URL."""

from pathlib import Path

import streamlit as st

import vilab_ui as ui

ui.page(
    "vilab: a lab for natural-gradient variational inference",
    "Gaussian variational inference fits $q(\\theta) = \\mathcal N(\\mu, \\Sigma)$ to a posterior by "
    "maximising the evidence lower bound. *How* you take the steps matters: the same objective, "
    "followed with Euclidean or natural gradients, in covariance, Cholesky or precision "
    "coordinates, takes very different paths, and some of them stop being a covariance at all. "
    "This lab lets you watch those paths, move the step size, and check the papers' numbers "
    "yourself.",
)

st.latex(r"\lambda \leftarrow \lambda + \rho\, F_\lambda^{-1} \nabla_\lambda \mathcal L(\lambda)")
st.caption("Natural-gradient ascent on the ELBO: $F_\\lambda$ is the Fisher information of $q_\\lambda$, "
           "$\\rho$ the step size.")

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
    "Vector_fields": "Euclidean vs natural gradient fields of the ELBO on a 1-D posterior, in several coordinates, with the paths of Tan's Table 1 rules.",
    "Trajectories": "2-D targets: mean paths and covariance ellipses of every update rule, objective against iteration, step-size sweeps.",
    "Positive_definiteness": "Why a precision update can stop being a covariance, and why Cholesky-factor updates cannot.",
    "Flows_and_guarantees": "Continuous-time flows and the convergence guarantees of Kumar et al.; VN vs SR-VN.",
    "Adam_vs_SNNGM": "Adam, natural-gradient Adam and SNNGM paths on toy and real data.",
    "Divergences": "Mean-field variances under KL, Fisher, score-based and weighted Fisher divergences.",
    "Online_learning": "BONG and its relatives updating a posterior one example at a time.",
    "CNN_lab": "Variational and online natural-gradient training of convolutional networks in JAX.",
    "Hierarchical_models": "Sparse natural gradients for mixed models and state-space models, against MCMC.",
    "Reproductions": "Every number of the papers that vilab reproduces: press a button, see paper vs computed.",
}
here = Path(__file__).resolve().parent
rows = []
for p in sorted(here.glob("*.py")):
    stem = p.stem.partition("_")[2]
    if stem in DESCRIPTIONS:
        rows.append(f"- **{stem.replace('_', ' ')}**: {DESCRIPTIONS[stem]}")
st.markdown("\n".join(rows))

st.subheader("Sharing a view")
st.markdown(
    "Every slider, choice and toggle is written into the page's URL as you change it "
    "(for example `?rho=0.9&sd1=2`). Copy the address bar to share the exact view: opening the link "
    "restores every control and redraws the same figures. The sidebar's **random seed** fixes every "
    "Monte Carlo draw, and **lecture mode** enlarges fonts and figures for a projector."
)
st.caption("The computation package `vilab` can be used without the app: `vilab repro --list` lists the reproductions.")
