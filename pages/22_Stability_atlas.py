"""Stability atlas: iterations to tolerance over step size x condition number, with the analytic limits
(Kumar et al. 2025 Fig. 1 setting, Thm 2; Tan 2025 Sec. 7), one heatmap per method; a cell opens its run on
Trajectories."""

from urllib.parse import parse_qsl, urlencode

import numpy as np
import streamlit as st

import vilab_ui as ui
from vilab.theory import guarantees, stability
from vilab import plots
from vilab.plots import atlas as aplots

ui.page(
    "Stability atlas",
    "How many iterations a method needs on a 2-D Gaussian, for every step size and condition number κ; click a "
    "cell to open that run on Trajectories.",
)

METHODS = list(stability.ATLAS_METHODS)
STEP_HI = 10 ** 0.25  # the Trajectories page's step-size sliders run over ui.log_grid(1e-4, STEP_HI, 8)
STEPS = ui.log_grid(1e-4, STEP_HI, 8)[::2]  # quarter decades: each one a value of those sliders
KAPPAS = ui.log_grid(1.0, 1000.0, 4)  # each one a value of Trajectories' condition-number slider
LIMIT_KAPPAS = np.logspace(0.0, 3.0, 61)


@ui.cache_data(max_entries=64)
def _atlas(method, n_steps, tol, m0, c0):
    return stability.atlas(method, KAPPAS, STEPS, n_steps=int(n_steps), tol=float(tol), m0=m0, c0=float(c0))


@ui.cache_data(max_entries=64)
def _limits(c0):
    return stability.atlas_limits(LIMIT_KAPPAS, float(c0))


@ui.cache_data(max_entries=256)
def _theorem2(kappa, c0):
    from vilab.targets import rotated_gaussian_2d

    A = np.linalg.inv(np.asarray(rotated_gaussian_2d(float(kappa)).cov, float))
    return guarantees.theorem2_constants(0.5 * (A + A.T), float(c0) * np.eye(2))


PICK = "atlas_pick"
OPEN = "_atlas_open"  # a cell was just clicked in lecture mode: open its run
TRAJECTORIES = "pages/20_Trajectories.py"


def _on_click():
    """A click on a cell (its transparent marker) keeps the cell's (step size, kappa); in lecture mode it opens the
    cell's run on Trajectories (on the stage, the controls and their link are in the drawer)."""
    xy = ui.selected_point(st.session_state.get("atlas"))
    if xy is not None:
        st.session_state[PICK] = xy
        st.session_state[OPEN] = ui.lecture()


def _num(v) -> str:
    return f"{float(v):.12g}"


def trajectories_query(method, rho, kappa, c0, m0, n_steps, tol, lecture=False) -> str:
    """The query string of the Trajectories page showing this cell's run (its widget keys)."""
    q = [("tgt", "correlated Gaussian"), ("kappa", _num(kappa)), ("m", method), (f"s_{method}", _num(rho)),
         ("c0", _num(c0)), ("m1", _num(m0[0])), ("m2", _num(m0[1])), ("n", str(int(n_steps))), ("tol", _num(tol)),
         (f"g_{method}", "exact"), ("view", "paths")]
    if lecture:
        q.append(("lecture", "1"))
    return urlencode(q)


# ------------------------------------------------------------------------------------------ controls
ctl, area = ui.columns(1.0, 3.0)
with ctl:
    method = ui.select("method", "m", METHODS, "srvn", format_func=plots.label)
    k_lo = ui.log_slider("smallest condition number κ", "klo", 1.0, 1000.0, 1.0)
    k_hi = ui.log_slider("largest condition number κ", "khi", 1.0, 1000.0, 1000.0)
    c0 = ui.slider("start scale c₀ (C₀ = c₀ I)", "c0", 0.05, 5.0, 0.2, 0.05)
    show_all = ui.toggle("every method's limits", "all", False)
    with ui.more("Start mean and stopping"):
        n_steps = ui.select("maximum steps", "n", [100, 300, 1000, 3000], 1000)
        tol = ui.log_slider("tolerance on KL(q ‖ p)", "tol", 1e-12, 1e-3, 1e-8)
        m1 = ui.number("start mean m₁", "m1", -10.0, 10.0, -2.0, 0.5)
        m2 = ui.number("start mean m₂", "m2", -10.0, 10.0, 2.5, 0.5)
m0 = (float(m1), float(m2))
lo, hi = sorted((float(k_lo), float(k_hi)))

with area:
    at = limits = None
    with ui.guard("atlas"):
        with st.spinner(f"Running {plots.label(method)} at {len(KAPPAS) * len(STEPS)} settings at once..."):
            at = _atlas(method, int(n_steps), float(tol), m0, round(float(c0), 2))  # on the slider's 0.05 grid
        limits = _limits(float(c0))
    if at is None:
        st.stop()
    rows = np.flatnonzero((at.kappas >= lo * (1 - 1e-9)) & (at.kappas <= hi * (1 + 1e-9)))
    picked = st.session_state.get(PICK)  # (step size, kappa) of the last clicked cell
    cell = None
    if picked is not None:
        j = int(np.argmin(np.abs(np.log(at.step_sizes) - np.log(max(float(picked[0]), 1e-300)))))
        i = int(np.argmin(np.abs(np.log(at.kappas) - np.log(max(float(picked[1]), 1e-300)))))
        if i in set(rows.tolist()):
            cell = (i, j)
    fig = None
    with ui.guard("figure"):
        fig = ui.recipe(aplots.atlas_figure, at, limits, show_all=show_all, kappa_range=(lo, hi), selected=cell,
                        height=470)
        ui.show(fig, key="atlas", main=True, on_select=_on_click, selection_mode="points")
    if fig is None:
        st.stop()

    with ctl:  # beside the figure, so that the link is on the first screen
        if cell is None:
            st.caption("Click a cell to open that run (method, step size, κ, start) on the Trajectories page.")
        else:
            i, j = cell
            rho, kappa = float(at.step_sizes[j]), float(at.kappas[i])
            outcome, n_it = at.outcome[i, j], int(at.iterations[i, j])
            said = {"converged": f"converged in {n_it} iteration{'s' if n_it != 1 else ''}",
                    "diverged": f"diverged at iteration {n_it + 1} ({ui.status_text(str(at.status[i, j]))})",
                    }.get(outcome, f"no convergence in {int(at.n_steps):,} steps")
            query = trajectories_query(method, rho, kappa, float(c0), m0, int(n_steps), float(tol), ui.lecture())
            if st.session_state.pop(OPEN, False):
                from streamlit.errors import StreamlitAPIException

                try:  # the page inside the app; run on its own (tests), it has no other page to go to
                    st.switch_page(TRAJECTORIES, query_params=parse_qsl(query))
                except StreamlitAPIException:
                    pass
            st.markdown(f"**{plots.label(method)}, step size ρ = {rho:.3g}, κ = {kappa:.3g}:** {said}. "
                        f"[Open this run on Trajectories](Trajectories?{query})")

    # what to notice, from the numbers shown
    def _row_summary(i):
        ok = at.outcome[i] == "converged"
        if not ok.any():
            return None
        its = np.where(ok, at.iterations[i], np.iinfo(int).max)
        b = int(np.argmin(its))
        return {"best": int(its[b]), "best_rho": float(at.step_sizes[b]),
                "largest": float(at.step_sizes[np.flatnonzero(ok)[-1]])}

    i_lo, i_hi = int(rows[0]), int(rows[-1])
    s_lo, s_hi = _row_summary(i_lo), _row_summary(i_hi)
    name = plots.label(method)
    parts = []
    for i, s in ((i_lo, s_lo), (i_hi, s_hi))[: 1 if i_hi == i_lo else 2]:
        k = at.kappas[i]
        if s is None:
            parts.append(f"at κ = {k:g} no step size converges within {int(at.n_steps):,} steps")
        else:
            parts.append(f"at κ = {k:g} its fastest run takes {s['best']} iteration{'s' if s['best'] != 1 else ''} "
                         f"(ρ = {s['best_rho']:.3g}) and the largest converging step is {s['largest']:.3g}")
    text = f"{name}: " + "; ".join(parts) + "."
    if s_lo and s_hi and i_hi != i_lo:
        grow = s_hi["best"] / max(s_lo["best"], 1)
        if grow >= 5:
            text += (f" Its best count grows {grow:.0f}-fold from κ = {at.kappas[i_lo]:g} to {at.kappas[i_hi]:g}: its "
                     "steps must shrink with the largest curvature, and the flat direction then takes many of them.")
        else:
            text += (f" Its best count hardly depends on κ (×{grow:.1f} from κ = {at.kappas[i_lo]:g} to "
                     f"{at.kappas[i_hi]:g}): its steps are preconditioned by the covariance.")
    own = limits["linearised"].get(method) if limits else None
    if own is not None:
        lim_at = np.interp(np.log(at.kappas[rows]), np.log(limits["kappas"]), np.asarray(own, float))
        beyond = (at.step_sizes[None, :] > lim_at[:, None] * (1 + 1e-9))
        out_rows = at.outcome[rows]
        n_conv_beyond = int(np.sum(beyond & (out_rows == "converged")))
        n_fail_within = int(np.sum(~beyond & (out_rows == "diverged")))
        text += (f" Beyond its linearised limit (line) {n_conv_beyond} cell{'s' if n_conv_beyond != 1 else ''} still "
                 f"converge; below it {n_fail_within} diverge: a linearisation is a guide, not a guarantee.")
    if method in ("srvn", "tan-1N") and limits is not None:
        t2 = float(np.interp(np.log(at.kappas[i_lo]), np.log(limits["kappas"]), limits["theorem2"]))
        text += (f" Kumar et al.'s Thm 2 guarantees a linear rate only for ρ < {t2:.2g} at κ = {at.kappas[i_lo]:g} "
                 "(hatched), far below the steps that converge fastest. A wide start hurts it at large κ: its 1-D map needs "
                 "ρ < 4/(x₀² − 1) with x₀² = c₀²κ; try a smaller c₀.")
    ui.notice(text)

    if cell is not None and method in ("srvn", "tan-1N"):
        i, j = cell
        c = _theorem2(float(at.kappas[i]), float(c0))
        eta = guarantees.theorem2_eta(float(at.step_sizes[j]), c["delta"], c["M"], c["lam_min"], c["xi_l"], c["xi_u"])
        if eta > 0:
            st.caption(f"Thm 2 at this cell: η = {eta:.3g}, so L_t − L_* shrinks at least by the factor "
                       f"1 − 2ηδ = {1 - 2 * eta * c['delta']:.6f} per step.")
        else:
            st.caption(f"Thm 2 at this cell: η = {eta:.3g} ≤ 0 (ρ above {c['eta_positive_below']:.3g}): the theorem "
                       "says nothing here.")

@ui.explain()
def equations():
    st.markdown(
        "Each cell is one run, exactly the one the Trajectories page makes for the **correlated Gaussian** target: "
        "a 2-D Gaussian whose precision A has eigenvalues λ_min = 1 and λ_max = κ, from the start m₀ = (m₁, m₂), "
        "C₀ = c₀I, with exact expectations and a constant step size ρ, until KL(q ‖ p) is below the tolerance. "
        "The colour is the number of iterations (fewer = brighter); grey cells did not converge within the step "
        "limit, brown ones diverged (q stopped being a Gaussian, or blew up). All cells of a method run at once, "
        "in one compiled loop.")
    st.markdown(
        "**Linearisations (lines).** Near the optimum each update acts on each eigen-direction of A like a 1-D "
        "map; the step is stable when that map contracts. For the mean, m ← m − ρ A (m − m*) contracts when "
        "|1 − ρλ| < 1; for a covariance factor in Euclidean or Wasserstein geometry the factor is 1 − ρ(λᵢ + λⱼ):")
    st.latex(r"\text{GD in }(m,C),\ \text{BW-GD},\ \text{FB-GVI}:\ \rho<\frac{1}{\lambda_{\max}}\qquad"
             r"\text{GD in }(m,V):\ \rho<\min\Big(\frac{2}{\lambda_{\max}},\frac{4}{\lambda_{\max}^2}\Big)")
    st.markdown(
        "SR-VN's limit comes from its 1-D map x ← x(1 − ρ(x² − 1)/2) with x = c√λ (Kumar et al. 2025, Eq. 17): the "
        "scale contracts only while x² < 1 + 4/ρ, and the mean factor is 1 − ρx², so with x₀² = c₀²λ_max")
    st.latex(r"\text{SR-VN}:\ \rho<\min\Big(2,\ \frac{2}{x_0^2},\ \frac{4}{x_0^2-1}\Big),\qquad "
             r"\text{VN}:\ S_k-A=(1-\rho)^k(S_0-A)")
    st.markdown(
        "These lines are linearisations at the optimum or the start: reference lines, not guarantees. Cells beyond "
        "them can converge and cells below them can fail (SR-VN from a wide start diverges below its line).")
    st.markdown(
        "**A guarantee (hatched): Kumar et al. Thm 2.** If l̄ is δ-strongly convex and M-smooth and the iterates "
        "keep λ_min(V_t) ≥ λ_min and ξ_l ≤ ‖C_t‖_F ≤ ξ_u, SR-VN satisfies "
        "L_{t+1} − L_* ≤ (1 − 2ηδ)^{t+1} (L_0 − L_*) with (Eq. 25)")
    st.latex(r"\eta=\min\Big\{\lambda_{\min}\rho-\frac{M\rho^2\xi_u^4}{2},\ "
             r"\sqrt{5/2}\,\rho\,\xi_l^2-\frac{5\rho^2\xi_u^4M}{4}\Big\},\qquad "
             r"\eta>0\iff\rho<2\min(\rho_1,\rho_2)")
    st.latex(r"\rho_1=\frac{\lambda_{\min}}{\xi_u^4M},\qquad \rho_2=\sqrt{2/5}\,\frac{\xi_l^2}{M\xi_u^4}")
    st.markdown(
        "Here δ = 1 and M = κ (the eigenvalues of A), and λ_min, ξ_l, ξ_u are taken along the natural-gradient flow "
        "from C₀, the path that small steps follow. On Kumar's 2-D regression (T2, c₀ = 0.2) this gives "
        "ρ₁ = 1.16·10⁻³ and ρ₂ = 2.04·10⁻³; at ρ = 10⁻³ the guaranteed factor 1 − 2ηδ = 0.999960 holds against the "
        "observed worst 0.999655. The paper's proof of Thm 2 bounds one term in the wrong direction (our reading of "
        "App. C.4); the bound still holds wherever η > 0 in our checks. Note how small these steps are: where SR-VN "
        "converges fastest (ρ near 1), η < 0 and the theorem says nothing.")
    st.markdown(
        "**An exact condition (dash-dot, VN): positive definiteness.** VN's precision update "
        "S₁ = (1 − ρ)S₀ + ρA from S₀ = I/c₀² stays positive definite exactly for ρ < 1/(1 − c₀²λ_min) "
        "(Tan 2025, Sec. 7), whatever κ; beyond it the first step leaves the Gaussians.")
