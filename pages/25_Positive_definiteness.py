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
    "A stochastic natural-gradient step on the precision matrix uses the Hessian of log p at one sampled "
    "theta. Where the target is not log-concave (Cauchy tails, mixtures) that Hessian has a positive "
    "eigenvalue, and the updated precision can become indefinite: its ellipse turns into a hyperbola and "
    "q is no longer a Gaussian. Updating the Cholesky factor T of the precision multiplicatively "
    "(Tan 2025, Theorem 1(ii)) keeps T T^T positive definite for every step size except isolated values "
    "where T becomes singular.",
)
st.latex(r"\Sigma^{-1}_{\rm new}=(1-\rho)\,\Sigma^{-1}-\rho\,\nabla^2\log p(\theta)\qquad\text{vs}\qquad "
         r"T_{\rm new}=T\,(I+\rho\,\bar{\bar H}),\ \ H=-I-T^{-1}\nabla^2\log p(\theta)\,T^{-\top}")

RHO_GRID = np.round(np.linspace(0.0, 1.5, 301), 6)  # contains every value of the rho slider


@st.cache_resource(show_spinner=False)
def _cauchy():
    return bivariate_cauchy()


@st.cache_resource(show_spinner=False)
def _mixture(delta):
    return definiteness.two_component_mixture(delta)


@st.cache_data(show_spinner=False, max_entries=64)
def _single(theta1, theta2, s2):
    return definiteness.single_sample_updates(_cauchy(), [0.0, 0.0], s2 * np.eye(2), [theta1, theta2], RHO_GRID)


@st.cache_data(show_spinner=False, max_entries=32)
def _monte_carlo(target_name, delta, mu1, mu2, s2, rho, n_runs, n_steps, seed):
    tgt = _cauchy() if target_name == "bivariate Cauchy" else _mixture(delta)
    return definiteness.pd_loss_fraction(tgt, [mu1, mu2], s2 * np.eye(2), rho, n_runs=n_runs, n_steps=n_steps,
                                         key=as_key(int(seed)))


mode = ui.radio("View", "mode", ["single update (Cauchy example)", "Monte Carlo"], "single update (Cauchy example)",
                horizontal=True)

if mode.startswith("single"):
    st.markdown("Current q = N(0, s^2 I); one draw theta; one step of each rule with the single-sample "
                "second-order (Price) estimate. Defaults: the digest's example s^2 = 10, theta = (3, 0).")
    c1, c2, c3, c4 = st.columns(4)
    with c1:
        rho = ui.slider("step size rho", "rho", 0.01, 1.5, 0.3, 0.01)
    with c2:
        th1 = ui.slider("sampled theta_1", "th1", -10.0, 10.0, 3.0, 0.1)
    with c3:
        th2 = ui.slider("sampled theta_2", "th2", -10.0, 10.0, 0.0, 0.1)
    with c4:
        s2 = ui.log_slider("current variance s^2", "s2", 0.1, 100.0, 10.0)

    with ui.guard("single update"):
        out = _single(th1, th2, s2)
        limit, sing, eh = out["pd_limit"], out["singular_steps"], out["eig_hess"]
        k = int(np.argmin(np.abs(RHO_GRID - rho)))
        P_prec, P_chol = out["P_prec"][k], out["P_chol"][k]
        ev_p, ev_c = out["eig_prec"][k], out["eig_chol"][k]
        a, b = st.columns(2)
        with a:
            extent = 2.5 * np.sqrt(s2)
            st.markdown(f"**Level sets x^T S_new x = 1 at rho = {rho:g}** (S_new: the updated precision)")
            ui.show(pdplots.level_set_figure({"precision update": P_prec, "T update": P_chol},
                                             points={"theta": (th1, th2)}, extent=extent), key="levels")
        with b:
            st.markdown("**Eigenvalues of the updated precision against rho**")
            markers = {f"precision indefinite beyond {limit:.3f}": limit} if np.isfinite(limit) and limit <= 1.5 else {}
            markers.update({f"T singular at {s:.3f}": s for s in sing if s <= 1.5})
            ui.show(pdplots.eigenvalue_figure(RHO_GRID, {"precision update": out["eig_prec"],
                                                         "T update (T T^T)": out["eig_chol"]},
                                              current=rho, markers=markers),
                    key="eigs")
        st.markdown(
            f"Hessian of log p at theta: eigenvalues **{eh[0]:.3g}, {eh[1]:.3g}** "
            f"(a positive one means log p is locally convex there). Precision update: eigenvalues "
            f"{ev_p[0]:.4g}, {ev_p[1]:.4g} -> **{'positive definite' if ev_p[0] > 0 else 'INDEFINITE'}**; "
            + (f"it stays PD only for rho < {limit:.4g}." if np.isfinite(limit) else "it stays PD for every rho.")
            + f" T update: T T^T has eigenvalues {ev_c[0]:.3g}, {ev_c[1]:.3g} "
            f"-> **{'positive definite' if ev_c[0] > 0 else 'singular'}**"
            + (f"; singular only at rho = {', '.join(f'{s:.4g}' for s in sing)}." if len(sing) else "."))
        st.latex(r"\Sigma^{-1}_{\rm new}\succ0\iff\rho\,\lambda_{\max}\!\big(I+S^{-1/2}\nabla^2\log p\,S^{-1/2}\big)<1,"
                 r"\qquad \det T_{\rm new}=\det T\prod_i\big(1+\tfrac{\rho}{2}H_{ii}\big)")
else:
    st.markdown("Repeated single-sample natural-gradient steps from q = N(mu, s^2 I): the fraction of runs "
                "whose update stops being a Gaussian, for each rule of Tan (2025) Table 1 and Theorem 1. "
                "All rules see the same random draws.")
    c1, c2, c3 = st.columns(3)
    with c1:
        tname = ui.select("target", "tgt", ["bivariate Cauchy", "two-component mixture"], "bivariate Cauchy")
        delta = ui.slider("mixture: mode separation delta", "delta", 0.5, 6.0, 3.0, 0.5) \
            if tname == "two-component mixture" else 3.0
    with c2:
        mrho = ui.log_slider("step size rho", "mrho", 0.01, 1.0, 0.5)
        ms2 = ui.log_slider("start variance s^2", "ms2", 0.1, 100.0, 10.0)
    with c3:
        mu1 = ui.slider("start mean mu_1", "mu1", -5.0, 5.0, 0.0, 0.5)
        mu2 = ui.slider("start mean mu_2", "mu2", -5.0, 5.0, 0.0, 0.5)
    with ui.more():
        n_runs = ui.number("Monte Carlo runs", "runs", 10, 2000, 200, 10)
        n_steps = ui.slider("steps per run", "steps", 1, 100, 20)

    @st.fragment
    def _mc_panel():
        with ui.guard("Monte Carlo"):
            with st.spinner("Running the Monte Carlo..."):
                res = _monte_carlo(tname, delta, mu1, mu2, ms2, mrho, int(n_runs), int(n_steps), ui.seed())
            st.markdown(f"**{tname}: runs that lost positive definiteness**")
            ui.show(pdplots.pd_loss_figure({k: v["lost PD"] for k, v in res.items()}, int(n_runs)), key="mc")
            table = pd.DataFrame(res).T
            table.index.name = "update rule"
            st.dataframe(table.style.format("{:.1%}"))
            st.caption("'non-finite' counts runs whose step blew up (a too-large step on a heavy-tailed target): a "
                       "different failure from losing positive definiteness. Factor rules cannot lose PD except "
                       "by a diagonal entry hitting exactly zero.")

    _mc_panel()
