"""The symbols used across the lab, in a student's words (shown in every page's sidebar)."""

from __future__ import annotations

import streamlit as st

#: symbol (LaTeX) -> meaning
GLOSSARY: list[tuple[str, str]] = [
    (r"q = \mathcal N(\mu, \Sigma)", "the Gaussian approximation being fitted; μ (or m) its mean, Σ (or V) its covariance"),
    (r"p(\theta \mid y)", "the posterior (the target) that q approximates"),
    (r"\mathcal L", "the ELBO, evidence lower bound: the objective VI maximises (equivalently, KL(q‖p) is minimised)"),
    (r"\rho", "the step size (learning rate) of an update"),
    (r"\nabla \mathcal L", "the Euclidean gradient: the ordinary vector of partial derivatives"),
    (r"F,\ F^{-1}\nabla\mathcal L", "the Fisher information of q, and the natural gradient it defines"),
    (r"C", "a Cholesky factor of the covariance: Σ = C Cᵀ, lower triangular"),
    (r"T", "a Cholesky factor of the precision: Σ⁻¹ = T Tᵀ"),
    (r"\kappa = (\mu, \sigma^2)", "the mean–variance coordinates of a 1-D Gaussian (Vector fields); on Trajectories κ is the condition number of the target"),
    (r"\xi = (\mu, 1/\sigma^2)", "the mean–precision coordinates of a 1-D Gaussian"),
    (r"\lambda", "the natural parameters (μ/σ², −1/(2σ²)); on Trajectories, λ_max is the largest eigenvalue of the target's precision"),
    (r"\eta", "the constant in Kumar et al.'s guarantee for SR-VN (Thm 2): the gap to the optimum shrinks at least by a factor 1 − 2ηδ per step"),
    (r"S,\ H,\ g", "a precision matrix, a Hessian of −log p, a gradient of −log p (Kumar et al.)"),
    (r"\alpha", "the base step size (learning rate) of Adam and SNNGM; every SNNGM step has length at most α"),
    (r"D_F,\ D_S", "the Fisher divergence (mismatch of scores) and the score-based divergence of Chen, Nott & Tan"),
    (r"\mathrm{KL}(q\|p),\ \mathrm{KL}(p\|q)", "reverse KL (what VI minimises) and forward KL"),
    (r"t", "time (flows), or the index of an observation (online learning)"),
]


def sidebar_glossary() -> None:
    """A closed expander "Symbols used in the lab" in the sidebar with every entry of :data:`GLOSSARY`, written only
    while it is open (?how_symbols=1): its formulas cost a page's first load nothing."""
    import vilab_ui as ui

    with st.sidebar:
        @ui.explain("Symbols used in the lab")
        def symbols():
            st.markdown("\n".join(f"- ${sym}$: {text}" for sym, text in GLOSSARY))
