"""Positive definiteness: why a natural-gradient precision update can stop being a covariance (Tan 2025 Sec. 7)."""

import numpy as np
import pandas as pd
import streamlit as st

import vilab_ui as ui
from vilab import definiteness
from vilab.core import as_key
from vilab.plots import pd as pdplots
from vilab.targets.papers import bivariate_cauchy

ui.page(
    "Positive definiteness",
    "One natural-gradient step on the precision matrix can leave the Gaussians (its ellipse turns into a "
    "hyperbola); the same step on the Cholesky factor T cannot.",
)

RHO_GRID = np.round(np.linspace(0.0, 1.5, 301), 6)  # contains every value of the rho slider
MODES = ["single update (Cauchy example)", "Monte Carlo"]


@ui.cache_resource()
def _cauchy():
    return bivariate_cauchy()


@ui.cache_resource()
def _mixture(delta):
    return definiteness.two_component_mixture(delta)


@ui.cache_data(max_entries=64)
def _single(theta1, theta2, s2):
    return definiteness.single_sample_updates(_cauchy(), [0.0, 0.0], s2 * np.eye(2), [theta1, theta2], RHO_GRID)


@ui.cache_data(max_entries=32)
def _monte_carlo(target_name, delta, mu1, mu2, s2, rho, n_runs, n_steps, seed):
    tgt = _cauchy() if target_name == "bivariate Cauchy" else _mixture(delta)
    return definiteness.pd_loss_fraction(tgt, [mu1, mu2], s2 * np.eye(2), rho, n_runs=n_runs, n_steps=n_steps,
                                         key=as_key(int(seed)))


def _explain():
    with ui.explain():
        st.markdown(
            "A stochastic natural-gradient step on the precision matrix S = Σ⁻¹ uses the Hessian of log p at "
            "one sampled θ (the single-sample second-order, or Price, estimate). Where the target is not "
            "log-concave (Cauchy tails, mixtures) that Hessian can have a positive eigenvalue, and a large enough "
            "step makes the updated precision indefinite: its level set x⊤S x = 1 turns from an ellipse into a "
            "hyperbola, and q is no longer a Gaussian. Updating the Cholesky factor T of the precision "
            "(S = T T⊤) multiplicatively instead (Tan 2025, Theorem 1(ii)) keeps T T⊤ positive definite for "
            "every step size except isolated values where T becomes singular.")
        st.markdown("The two rules, for a step size ρ:")
        st.latex(r"\text{precision update:}\quad \Sigma^{-1}_{\rm new}=(1-\rho)\,\Sigma^{-1}-\rho\,\nabla^2\log p(\theta)")
        st.latex(r"\text{T update:}\quad T_{\rm new}=T\,\big(I+\rho\,\bar{\bar H}\big),")
        st.latex(r"H=-I-T^{-1}\,\nabla^2\log p(\theta)\,T^{-\top}")
        st.markdown(r"where $\bar{\bar H}$ keeps the strictly lower triangle of H and halves its diagonal. "
                    "When the two rules stop being positive definite:")
        st.latex(r"\Sigma^{-1}_{\rm new}\succ0\iff\rho\,\lambda_{\max}\!\big(I+S^{-1/2}\,\nabla^2\log p\,S^{-1/2}\big)<1,")
        st.latex(r"\det T_{\rm new}=\det T\,\prod_i\big(1+\tfrac{\rho}{2}H_{ii}\big).")
        st.markdown("So the precision update is positive definite only below a step-size limit, while T T⊤ loses "
                    "positive definiteness only at the isolated steps where a factor 1 + ρ H_ii / 2 is zero.")


ctl, area = ui.columns(1, 3.3)
with ctl:
    mode = ui.radio("View", "mode", MODES, MODES[0])

if mode == MODES[0]:
    with ctl:
        rho = ui.slider("step size rho", "rho", 0.01, 1.5, 0.3, 0.01, help="ρ, the step size of both updates")
        th1 = ui.slider("sampled θ₁", "th1", -10.0, 10.0, 3.0, 0.1, help="the draw θ at which the Hessian is taken")
        th2 = ui.slider("sampled θ₂", "th2", -10.0, 10.0, 0.0, 0.1)
        s2 = ui.log_slider("current variance s²", "s2", 0.1, 100.0, 10.0, help="the current q is N(0, s² I)")
    with area, ui.guard("single update"):
        out = _single(th1, th2, s2)
        limit, sing, eh = out["pd_limit"], out["singular_steps"], out["eig_hess"]
        k = int(np.argmin(np.abs(RHO_GRID - rho)))
        P_prec, P_chol = out["P_prec"][k], out["P_chol"][k]
        ev_p, ev_c = out["eig_prec"][k], out["eig_chol"][k]
        prec_pd, chol_pd = ev_p[0] > 0, ev_c[0] > 0
        with st.container(key=ui.MAIN_FIGURE):
            a, b = st.columns(2)
            with a:
                extent = 2.5 * np.sqrt(s2)
                st.markdown(f"**Level sets xᵀS x = 1 at ρ = {rho:g}**")
                ui.show(pdplots.level_set_figure({"precision update": P_prec, "T update": P_chol},
                                                 points={"sampled θ": (th1, th2)}, extent=extent, height=420),
                        key="levels")
            with b:
                st.markdown("**Eigenvalues of the new precision S**")
                markers = {f"indefinite beyond ρ = {limit:.3f}": limit} if np.isfinite(limit) and limit <= 1.5 else {}
                markers.update({f"T singular at ρ = {s:.3f}": s for s in sing if s <= 1.5})
                ui.show(pdplots.eigenvalue_figure(RHO_GRID, {"precision update": out["eig_prec"],
                                                             "T update": out["eig_chol"]},
                                                  current=rho, markers=markers, height=420, show_current=False),
                        key="eigs")
        a, b = st.columns(2)
        with a:
            kind = "an ellipse: a Gaussian" if prec_pd else "not an ellipse: q is no longer a Gaussian"
            ui.notice(
                f"At ρ = {rho:g} the precision update's level set is {kind} (smallest eigenvalue "
                f"{ev_p[0]:.3g}). The Hessian of log p at θ has eigenvalues {eh[0]:.3g} and {eh[1]:.3g}"
                + ("; the positive one (log p is locally convex there, as in the Cauchy's tails) pulls an "
                   "eigenvalue of the precision down as ρ grows." if eh.max() > 0 else
                   "; both are negative (log p is locally concave there), so no step size breaks the precision.")
                + f" The T update keeps {'an ellipse' if chol_pd else 'a degenerate set (T is singular)'}.")
        with b:
            ui.notice(
                ("Dashed black line: the current ρ. The precision update's smallest eigenvalue falls linearly in ρ "
                 "and crosses zero at "
                 f"ρ = {limit:.3g}: beyond it the update is not a covariance any more. " if np.isfinite(limit) else
                 "The precision update stays positive definite for every ρ here: the Hessian at θ is negative "
                 "definite. ")
                + "The T update's precision T T⊤ is a square, so its eigenvalues never go negative"
                + (f"; they touch zero only where T is singular, at ρ = {', '.join(f'{s:.3g}' for s in sing)}."
                   if len(sing) else "."))
        st.markdown(
            f"Hessian of log p at θ: eigenvalues **{eh[0]:.3g}, {eh[1]:.3g}** "
            f"(a positive one means log p is locally convex there). Precision update: eigenvalues "
            f"{ev_p[0]:.4g}, {ev_p[1]:.4g} → **{'positive definite' if prec_pd else 'INDEFINITE'}**; "
            + (f"it stays positive definite only for ρ < {limit:.4g}." if np.isfinite(limit)
               else "it stays positive definite for every ρ.")
            + f" T update: T T⊤ has eigenvalues {ev_c[0]:.3g}, {ev_c[1]:.3g} "
            f"→ **{'positive definite' if chol_pd else 'singular'}**"
            + (f"; singular only at ρ = {', '.join(f'{s:.4g}' for s in sing)}." if len(sing) else "."))
        st.caption("The current q is N(0, s² I); one draw θ; one step of each rule with the single-sample "
                   "second-order (Price) estimate of the Hessian. The defaults s² = 10, θ = (3, 0) are Tan's "
                   "Cauchy example.")
    _explain()
else:
    with ctl:
        mrho = ui.log_slider("step size ρ", "mrho", 0.01, 1.0, 0.5)
        tname = ui.select("target", "tgt", ["bivariate Cauchy", "two-component mixture"], "bivariate Cauchy")
        delta = ui.slider("mixture: mode separation δ", "delta", 0.5, 6.0, 3.0, 0.5) \
            if tname == "two-component mixture" else 3.0
        ms2 = ui.log_slider("start variance s²", "ms2", 0.1, 100.0, 10.0)
        with ui.more():
            mu1 = ui.slider("start mean μ₁", "mu1", -5.0, 5.0, 0.0, 0.5)
            mu2 = ui.slider("start mean μ₂", "mu2", -5.0, 5.0, 0.0, 0.5)
            n_runs = ui.number("Monte Carlo runs", "runs", 10, 2000, 200, 10)
            n_steps = ui.slider("steps per run", "steps", 1, 100, 20)

    @st.fragment
    def _mc_panel():
        with ui.guard("Monte Carlo"):
            with st.spinner("Running the Monte Carlo..."):
                res = _monte_carlo(tname, delta, mu1, mu2, ms2, mrho, int(n_runs), int(n_steps), ui.seed())
            ui.show(pdplots.pd_loss_figure({k: v["lost PD"] for k, v in res.items()}, int(n_runs), height=430,
                                           title=f"{tname}: runs that stopped being a Gaussian"),
                    key="mc", main=True)
            lost = {pdplots.RULE_LABELS.get(k, k): v["lost PD"] for k, v in res.items()}
            worst = max(lost, key=lost.get)
            ui.notice(
                f"Repeated single-sample steps with ρ = {mrho:g}: the rules on Σ⁻¹ or Σ lose positive definiteness "
                f"in a fraction of runs ({worst}: {lost[worst]:.0%} of {int(n_runs)}), because one draw in a "
                "non-log-concave region is enough. The Cholesky-factor rules cannot become indefinite; they fail "
                "only if a diagonal entry hits exactly zero, which almost never happens.")
            table = pd.DataFrame({pdplots.RULE_LABELS.get(k, k): {c: f"{v:.1%}" for c, v in r.items()}
                                  for k, r in res.items()}).T
            table.index.name = "update rule"
            ui.table(table)
            st.caption("'non-finite' counts runs whose step blew up (a too-large step on a heavy-tailed target): a "
                       "different failure from losing positive definiteness. All rules see the same random draws.")

    with area:
        _mc_panel()
    with ui.explain():
        st.markdown("Repeated single-sample natural-gradient steps from q = N(μ, s² I): the fraction of runs "
                    "whose update stops being a Gaussian, for each rule of Tan (2025) Table 1 and Theorem 1: the "
                    "precision Σ⁻¹ (natural parameter), the covariance Σ, the Cholesky factor C of Σ, the "
                    "Cholesky factor T of Σ⁻¹, and T with Corollary 1. Bars: 95% binomial intervals.")
