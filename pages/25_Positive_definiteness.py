"""Positive definiteness: why a natural-gradient precision update can stop being a covariance (Tan 2025 Sec. 7)."""

import numpy as np
import pandas as pd
import streamlit as st

import vilab_ui as ui
from vilab.theory import definiteness
from vilab.theory import estimator_variance as ev
from vilab.family import natgrad as ng
from vilab.core import as_key
from vilab.plots import estimators as estplots
from vilab.plots import pd as pdplots
from vilab.targets.crabs import CRAB_MODELS, horseshoe_crabs
from vilab.targets.papers import bivariate_cauchy
from vilab.targets.regression import loglinear_optimum

ui.page(
    "Positive definiteness",
    "One natural-gradient step on the precision matrix can leave the Gaussians (its ellipse turns into a "
    "hyperbola); the same step on the Cholesky factor T cannot.",
)

RHO_GRID = np.round(np.linspace(0.0, 1.5, 301), 6)  # contains every value of the rho slider
MODES = ["single update (Cauchy example)", "Monte Carlo", "sparse factors (Fig. 5)", "step sizes on real data (Fig. 2)",
         "gradient noise (Thm 2)"]
PANELS = ["level sets", "eigenvalues"]  # the single update's two panels (one at a time in lecture mode)
FACTORS = ["block-diagonal C (factor of the covariance)", "arrow-shaped T (factor of the precision)"]
EST_FACTORS = ["C (factor of the covariance)", "T (factor of the precision)"]  # the gradient-noise view
EST_DRAWS = [250, 500, 1000, 2000, 4000]


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
def _sparse_example(factor, n_blocks, block_size, n_globals, seed):
    return ng.sparse_natgrad_example(factor, n_blocks, block_size, n_globals, seed)


@ui.cache_data(max_entries=32)
def _monte_carlo(target_name, delta, mu1, mu2, s2, rho, n_runs, n_steps, seed):
    tgt = _cauchy() if target_name == "bivariate Cauchy" else _mixture(delta)
    return definiteness.pd_loss_fraction(tgt, [mu1, mu2], s2 * np.eye(2), rho, n_runs=n_runs, n_steps=n_steps,
                                         key=as_key(int(seed)))


@ui.cache_data(max_entries=8)
def _estimator_run(target_name, n_draws, seed):
    return ev.along_run(ev.demo_target(target_name), n_draws=n_draws, seed=seed)


@ui.cache_resource()
def _crab_runs(model_key):
    model = horseshoe_crabs(model_key)
    return definiteness.backtracking_step_sizes(model), loglinear_optimum(model)[2]


def _explain():
    @ui.explain()
    def precision_step():
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
        # lecture mode: one panel at a time fills the stage (?panel= in the URL)
        panel = ui.radio("panel", "panel", PANELS, PANELS[0], help="the panel that fills the screen") \
            if ui.lecture() else None
    shown = [p for p in PANELS if panel in (None, p)]
    with area, ui.guard("single update"):
        out = _single(th1, th2, s2)
        limit, sing, eh = out["pd_limit"], out["singular_steps"], out["eig_hess"]
        k = int(np.argmin(np.abs(RHO_GRID - rho)))
        P_prec, P_chol = out["P_prec"][k], out["P_chol"][k]
        ev_p, ev_c = out["eig_prec"][k], out["eig_chol"][k]
        prec_pd, chol_pd = ev_p[0] > 0, ev_c[0] > 0
        with st.container(key=ui.MAIN_FIGURE):
            cols = dict(zip(shown, st.columns(len(shown))))
            if PANELS[0] in cols:
                with cols[PANELS[0]]:
                    extent = 2.5 * np.sqrt(s2)
                    st.markdown(f"**Level sets xᵀS x = 1 at ρ = {rho:g}**")
                    ui.show(ui.recipe(pdplots.level_set_figure, {"precision update": P_prec, "T update": P_chol},
                                      points={"sampled θ": (th1, th2)}, extent=extent, height=420),
                            key="levels")
            if PANELS[1] in cols:
                with cols[PANELS[1]]:
                    st.markdown("**Eigenvalues of the new precision S**")
                    markers = {f"indefinite beyond ρ = {limit:.3f}": limit} if np.isfinite(limit) and limit <= 1.5 else {}
                    markers.update({f"T singular at ρ = {s:.3f}": s for s in sing if s <= 1.5})
                    ui.show(ui.recipe(pdplots.eigenvalue_figure, RHO_GRID,
                                      {"precision update": out["eig_prec"], "T update": out["eig_chol"]},
                                      current=rho, markers=markers, height=420, show_current=False),
                            key="eigs")
        cols = dict(zip(shown, st.columns(len(shown))))
        if PANELS[0] in cols:
            with cols[PANELS[0]]:
                kind = "an ellipse: a Gaussian" if prec_pd else "not an ellipse: q is no longer a Gaussian"
                ui.notice(
                    f"At ρ = {rho:g} the precision update's level set is {kind} (smallest eigenvalue "
                    f"{ev_p[0]:.3g}). The Hessian of log p at θ has eigenvalues {eh[0]:.3g} and {eh[1]:.3g}"
                    + ("; the positive one (log p is locally convex there, as in the Cauchy's tails) pulls an "
                       "eigenvalue of the precision down as ρ grows." if eh.max() > 0 else
                       "; both are negative (log p is locally concave there), so no step size breaks the precision.")
                    + f" The T update keeps {'an ellipse' if chol_pd else 'a degenerate set (T is singular)'}.")
        if PANELS[1] in cols:
            with cols[PANELS[1]]:
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
elif mode == MODES[1]:
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
            ui.show(ui.recipe(pdplots.pd_loss_figure, {k: v["lost PD"] for k, v in res.items()}, int(n_runs), height=430,
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

    @ui.explain()
    def breakdown_rates():
        st.markdown("Repeated single-sample natural-gradient steps from q = N(μ, s² I): the fraction of runs "
                    "whose update stops being a Gaussian, for each rule of Tan (2025) Table 1 and Theorem 1: the "
                    "precision Σ⁻¹ (natural parameter), the covariance Σ, the Cholesky factor C of Σ, the "
                    "Cholesky factor T of Σ⁻¹, and T with Corollary 1. Bars: 95% binomial intervals.")
elif mode == MODES[3]:
    with ctl:
        crab = ui.radio("model of the crab data", "crm", list(CRAB_MODELS.values()), CRAB_MODELS["width"],
                        help="Poisson regression of each female horseshoe crab's number of satellites (173 crabs)")
    crab_key = {v: k for k, v in CRAB_MODELS.items()}[crab]
    with area, ui.guard("the crab runs"):
        with st.spinner("Running both updates on the crab data (about 10 s the first time)..."):
            runs, L_star = _crab_runs(crab_key)
        st.markdown(f"**Horseshoe crabs, {crab.split(' (')[0]}: the step size each update could take, and its "
                    "progress**")
        ui.show(ui.recipe(pdplots.step_size_figure, runs, L_star, height=380 if ui.lecture() else 420),
                key="crabsteps", main=True)
        t1, c1 = runs["T by Theorem 1(ii)"], runs["T with Corollary 1"]
        small = sorted({f"{r:g}" for r in t1["rho"] if r < 1}, key=float)
        ui.notice(
            f"Both start at μ = 0, T = √173 I and accept, at each step, the largest ρ in 1, 0.1, 0.01, … that keeps "
            f"q a Gaussian and raises the ELBO. Theorem 1(ii) has to start with ρ = {small[0] if small else '1'} "
            f"and needs {int((t1['rho'] < 1).sum())} short steps before ρ = 1 is safe; Corollary 1 takes ρ = 1 "
            + ("at every step" if np.all(c1["rho"] == 1) else f"at {int((c1['rho'] == 1).sum())} of its steps")
            + f". It reaches the optimum (L* = {L_star:.4f}) in {c1['rho'].size} iterations, "
            f"Theorem 1(ii) in {t1['rho'].size}: a larger first step, not a different optimum.")
        st.caption("The right panel's L* is computed separately, by a fixed-point iteration on the natural "
                   "parameters; both runs stop when the ELBO changes by less than 10⁻⁷ of its value. Data: "
                   "Agresti's horseshoe crabs (173 females), shipped with the lab.")

    @ui.explain()
    def theorem1_rules():
        st.markdown("Tan (2025) Sec. 5 and Fig. 2. Both rules update the Cholesky factor T of the precision "
                    "the same way; they differ in when the mean moves. Theorem 1(ii) moves μ with the old T:")
        st.latex(r"\mu_{+}=\mu+\rho\,\Sigma\,\nabla_\mu L,\qquad T_{+}=T+\rho\,T\,\bar{\bar H}")
        st.markdown("Corollary 1 takes the natural gradient in ν = T⊤μ instead, which moves the mean with the "
                    "updated factor:")
        st.latex(r"T_{+}=T+\rho\,T\,\bar{\bar H},\qquad \mu_{+}=\mu+\rho\,T_{+}^{-\top}T^{-1}\nabla_\mu L")
        st.markdown("At the start Σ = I/173 is far too wide for the width coefficient (its posterior variance "
                    "is about 4·10⁻⁴, since width, in cm, is about 26), so the first mean step of Theorem 1(ii), which "
                    "uses that old Σ, overshoots unless ρ is tiny. Corollary 1 first tightens T with the "
                    "curvature, and its mean step uses the new, much narrower covariance, so ρ = 1 is safe. "
                    "The paper: \"updates in Corollary 1 converge faster and are more resilient to larger stepsizes\".")
elif mode == MODES[4]:
    with ctl:
        etgt = ui.radio("target", "etgt", ev.DEMO_TARGETS, ev.DEMO_TARGETS[0],
                        help="a logistic regression (log p is not quadratic) or a Gaussian (log p is quadratic)")
        efac = ui.radio("Cholesky factor", "efac", EST_FACTORS, EST_FACTORS[0],
                        help="the gradient with respect to C (Σ = C C⊤) or to T (Σ⁻¹ = T T⊤)")
        it_slot = st.container()  # the iterate slider: its range is the run's length, known once it is computed
        with ui.more():
            edraws = ui.select("draws per iterate", "edraws", EST_DRAWS, 1000,
                               help="how many single-draw estimates are taken at each iterate")
    fac = "C" if efac == EST_FACTORS[0] else "T"
    first, second = ev.FACTORS[fac]
    gauss = etgt == ev.DEMO_TARGETS[1]
    with area, ui.guard("gradient noise"):
        with st.spinner("Running the natural-gradient updates and drawing the estimates (about 20 s the first time)..."):
            run = _estimator_run(etgt, int(edraws), ui.seed())
        n_it = len(run["iterations"])
        with it_slot:
            k = ui.slider("iteration of the run", "eit", 0, n_it - 1, min(2, n_it - 1),
                          help="the iterate of the run at which the estimates are drawn")
        cloud = ev.noise_cloud(run, k, fac)
        r = run["ratio"][fac][k]
        st.markdown(f"**{int(edraws)} single-draw estimates of the gradient with respect to {fac}, iteration {k}**")
        ui.show(ui.recipe(estplots.noise_cloud_figure, cloud, height=400 if ui.lecture() else 440), key="estcloud",
                main=True)
        sym1, sym2 = estplots.estimator_symbol(first), estplots.estimator_symbol(second)
        if r["V_second"] <= 1e-20 * max(r["V_first"], 1e-300):
            ui.notice(
                f"Each dot is the gradient with respect to {fac} estimated from one draw θ from q. The first-order "
                f"estimates {sym1} (from the gradient of log p) are spread out (spread {r['V_first']:.3g}); the "
                f"second-order estimate {sym2} (from the Hessian) is the same at every draw and equals the exact "
                "gradient: the Hessian of a Gaussian's log density does not depend on θ.")
        else:
            ui.notice(
                f"Each dot is the gradient with respect to {fac} estimated from one draw θ from q. The first-order "
                f"estimates {sym1} (from the gradient of log p) have spread {r['V_first']:.3g}, the second-order ones "
                f"{sym2} (from the Hessian) {r['V_second']:.3g}: {r['ratio']:.3g} times less noise at this iterate. "
                "Both are centred on the exact gradient (black cross): Theorem 2 says both are unbiased.")
        st.markdown("**How noisy one draw's estimate is along the run**")
        ui.show(ui.recipe(estplots.spread_figure, run, fac, current=k, height=340 if ui.lecture() else 380),
                key="estspread")
        ratios = [x["ratio"] for x in run["ratio"][fac]]
        j = int(np.argmax(ratios))
        if gauss:
            ui.notice(
                f"The second-order spread stays at round-off level at every iterate. The first-order spread falls "
                f"as q nears the target, from {run['V'][first][0]:.3g} to {run['V'][first][-1]:.2g}: at the optimum "
                "q equals the target, so log p − log q is constant and its gradient is zero at every draw.")
        else:
            ui.notice(
                f"The second-order estimate is less noisy at every iterate, most of all at iteration "
                f"{int(run['iterations'][j])} ({ratios[j]:.3g} times), where q sits near the mode but its "
                f"covariance is still far from the optimum's. At the optimum (iteration {int(run['iterations'][-1])}) "
                f"the gap shrinks to {ratios[-1]:.2g} times: there both estimators keep a noise floor set by how far "
                "log p is from quadratic.")
        st.caption("The run: the natural-gradient update of (μ, C) with exact gradients, starting from μ = 0, C = I "
                   "and taking at each step the largest step size in 1, 0.1, 0.01, … that raises the ELBO. At each "
                   "iterate new draws θ ~ q; spread = sum of the variances of the factor's lower-triangle entries, "
                   "bars ±2 standard errors. Change the random seed in the sidebar for new draws.")

    @ui.explain()
    def gradient_noise():
        st.markdown("Tan (2025) Theorem 2 gives two unbiased estimates of the gradient of the ELBO with respect to "
                    "the Cholesky factor, both from one draw θ from q = N(μ, Σ), with z = C⁻¹(θ − μ), "
                    "v = T⁻¹∇h(θ) and h = log p − log q:")
        st.latex(r"\nabla_{\mathrm{vech}(C)}\mathcal L = \mathrm E\,\mathrm{vech}(G_1) = \mathrm E\,\mathrm{vech}(F_1),"
                 r"\qquad G_1=\nabla_\theta h(\theta)\,z^\top,\quad F_1=\nabla^2_\theta h(\theta)\,C")
        st.latex(r"\nabla_{\mathrm{vech}(T)}\mathcal L = \mathrm E\,\mathrm{vech}(G_2) = \mathrm E\,\mathrm{vech}(F_2),"
                 r"\qquad G_2=-(\theta-\mu)\,v^\top,\quad F_2=-\Sigma\,\nabla^2_\theta h(\theta)\,T^{-\top}")
        st.markdown("G uses the gradient of log p (first order), F its Hessian (second order). Why F is less noisy: "
                    "if log p = ℓ is close to quadratic around its mode θ̂,")
        st.latex(r"\nabla^2_\theta h(\theta)\approx\nabla^2\ell(\hat\theta)+\Sigma^{-1},\qquad"
                 r"\nabla_\theta h(\theta)\approx\nabla^2\ell(\hat\theta)(\theta-\hat\theta)+\Sigma^{-1}(\theta-\mu)")
        st.markdown("The Hessian hardly depends on the draw θ, so F is nearly the same at every draw; the gradient "
                    "moves with θ, so G is noisy. For a Gaussian target the first line is exact: F has no noise at "
                    "all. The second line also shows when G loses its noise: only where μ = θ̂ and Σ⁻¹ = −∇²ℓ(θ̂), "
                    "the optimum of a Gaussian target. The spread drawn is")
        st.latex(r"V(X)=\mathrm E\,\big\|\mathrm{vech}(X)-\mathrm E\,\mathrm{vech}(X)\big\|^2,")
        st.markdown("the sum of the variances of the entries of the lower triangle. First-order estimates are cheaper "
                    "(no Hessian); the paper finds second-order ones worth their cost for dense covariances in high "
                    "dimensions (its Table 8: a simulation with d = 100 and the toxicity data, d = 1025).")
else:
    with ctl:
        fac = ui.radio("sparse factor", "sfac", FACTORS, FACTORS[0],
                       help="which Cholesky factor is kept sparse: C with Σ = C C⊤, or T with Σ⁻¹ = T T⊤")
        is_c = fac == FACTORS[0]
        K = ui.slider("number of blocks K", "K", 1, 6, 4, 1, help="K diagonal blocks (for T: K local blocks)")
        bs = ui.slider("block size", "blk", 1, 4, 2, 1)
        n_glob = 2 if is_c else ui.slider("global parameters", "nglob", 1, 3, 2, 1,
                                       help="the last block row of T couples every local block to the globals")
    with area, ui.guard("sparse factors"):
        ex = _sparse_example("C" if is_c else "T", int(K), int(bs), int(n_glob), ui.seed())
        parts, M = ex["parts"], ex["mask"]
        F = "C" if is_c else "T"
        code = "tan-1n" if is_c else "tan-2n"
        names = {"C^T": "C⊤", "T": "T", "Gbar": "Ḡ", "H": f"H = {F}{'⊤' if is_c else '_d⊤'} Ḡ",
                 "Hbarbar": "H̿",
                 "C Hbarbar": "C H̿ (natural gradient)", "T Hbarbar": "T H̿ (natural gradient)"}
        mats = {names[k]: v for k, v in parts.items()}
        st.markdown(f"**Nonzero entries (shaded) of the matrices of one natural-gradient step, d = {M.shape[0]}**")
        ui.show(ui.recipe(pdplots.sparsity_figure, mats, code, height=400 if ui.lecture() else 440), key="sparsity", main=True)
        free = int(M.sum())
        nat = parts[f"{F} Hbarbar"]
        outside = int(pdplots.nonzero_pattern(nat)[M == 0].sum())
        g_out = int(pdplots.nonzero_pattern(ex["grad"])[M == 0].sum())
        d = M.shape[0]
        full = free == d * (d + 1) // 2
        if full:
            ui.notice(f"With these settings {F} has no structural zeros (a full lower triangle of {free} entries), "
                      "so the sparse and the dense natural gradients are the same thing. Raise the number of blocks "
                      "K to see the pattern.")
        else:
            ui.notice(
                f"{F} has {free} free entries (its shaded pattern). The full gradient ∂L/∂{F} of this target has "
                f"{g_out} nonzero entries outside the pattern (the target couples all coordinates), but Ḡ keeps "
                f"only the free ones, and the natural gradient {F} H̿ has {outside} nonzero entries outside {F}'s "
                f"pattern: the update {F} + ρ {F} H̿ stays {'block diagonal' if is_c else 'arrow shaped'}. "
                "H itself is "
                + ("block diagonal with full blocks; taking H̿ cuts it back to lower-triangular blocks."
                   if is_c else "arrow shaped with full diagonal blocks; taking H̿ cuts those back to T's pattern."))
        diff = ex["diff"]
        nd, ns = float(np.linalg.norm(diff)), float(np.linalg.norm(ex["sparse"]))
        st.markdown("**The sparse natural gradient against the dense one with its extra entries set to zero**")
        ui.show(ui.recipe(pdplots.natgrad_comparison_figure, ex["sparse"], ex["masked"], M, code, height=380), key="masking")
        if full:
            st.caption(f"No zeros to put in: the difference has norm {nd:.2g}.")
        elif is_c:
            ui.notice(
                f"Here the two agree: the difference has norm {nd:.2g} (the sparse one has norm {ns:.3g}). At a "
                "block-diagonal C the blocks of q are independent, so the Fisher information does not couple the "
                "free entries with the zero ones and masking happens to be right. Switch to the arrow-shaped T "
                "to see it fail.")
        else:
            ui.notice(
                f"They differ: the difference has norm {nd:.3g}, {nd / max(ns, 1e-300):.0%} of the sparse natural "
                f"gradient's norm {ns:.3g} (largest entry difference {float(np.abs(diff).max()):.3g}). The last "
                "block row of T couples the free entries with the zero ones in the Fisher information, so the "
                "dense natural gradient with zeros put in is not the natural gradient of the sparse factor.")
        st.caption("Target: a Gaussian N(m, P⁻¹) with a dense random precision P; q has mean 0 and a random factor "
                   "with the chosen pattern; the gradients are exact. Change the random seed in the sidebar for "
                   "another example.")

    @ui.explain()
    def sparse_factors():
        st.markdown("Tan (2025) Sec. 7: when q's Cholesky factor is sparse, the natural gradient keeps the "
                    "sparsity. For a block-diagonal C = blockdiag(C₁, …, C_K) (Algorithm 1S), with Ḡ the "
                    "gradient over the free entries:")
        st.latex(r"H = C^\top \bar G,\qquad \text{natural gradient of } C = C\,\bar{\bar H}"
                 r"= \operatorname{blockdiag}\big(C_1\bar{\bar H}_1,\dots,C_K\bar{\bar H}_K\big)")
        st.markdown("where H̿ keeps the lower triangle of H and halves its diagonal. For the arrow-shaped T of "
                    "the precision (Theorem 4), with T_d the diagonal blocks of T:")
        st.latex(r"G_i = A_i + T_i^{-\top}T_{gi}^\top G_{gi},\qquad H = T_d^\top \bar G,\qquad"
                 r"\text{natural gradient of } T = T\,\bar{\bar H}")
        st.markdown("Why not just compute the dense natural gradient and set the extra entries to zero? Split "
                    "the Fisher information F into the free entries (1) and the zero ones (2):")
        st.latex(r"\big(F^{-1}g\big)_1 = F_{11}^{-1}g_1 - F_{11}^{-1}F_{12}\,\big(F^{-1}g\big)_2"
                 r"\;\neq\; F_{11}^{-1}g_1 \quad\text{unless } F_{12}=0.")
        st.markdown("The right one is F₁₁⁻¹ g₁, the natural gradient of the sparse factor on its own. Setting "
                    "entries to zero is fine for ordinary (Euclidean) gradients, not for natural ones.")
