"""Trajectories (2-D): Euclidean, Wasserstein and natural-gradient Gaussian VI side by side (Kumar et al. 2025 Fig. 1)."""

import numpy as np
import pandas as pd
import streamlit as st

import vilab_ui as ui
from vilab import stability
from vilab.algorithms import run
from vilab.core import as_key
from vilab.gaussian import CholCov
from vilab.plots import density_contour
from vilab.plots import trajectories as tplots
from vilab.targets import banana, rotated_gaussian_2d, student_t_2d
from vilab.targets.papers import kumar_t2, kumar_t3

ui.page(
    "Trajectories",
    "Each method moves q = N(m, V) towards the posterior. Natural-gradient methods (VN, SR-VN, Tan's "
    "Cholesky rules) precondition by the Fisher metric and are not slowed down by ill-conditioning; "
    "Euclidean and Wasserstein methods need step sizes of order 1/lambda_max of the posterior precision "
    "(GD in (m, C) and BW-GD below 1/lambda_max, GD in (m, V) below min(2/lambda_max, 4/lambda_max^2); "
    "beyond 1/lambda_max FB-GVI stalls at a wrong covariance) and then crawl along the flat direction. "
    "Paths show the mean, ellipses the covariance every k steps.",
)
st.latex(r"\text{VN (Kumar et al. Eq. 7): } S_{t+1}=(1-\rho)S_t+\rho H_t,\quad m_{t+1}=m_t-\rho S_{t+1}^{-1}g_t")
st.latex(r"\text{SR-VN (Eq. 17): } C_{t+1}=C_t-\rho\,C_t\,\mathrm{tril}[C_t^\top H_tC_t-I],"
         r"\quad m_{t+1}=m_t-\rho C_tC_t^\top g_t")

METHODS = ["vn", "srvn", "gd-mc", "gd-mv", "bwgd", "fbgvi", "tan-1E", "tan-1N", "tan-2E", "tan-2N", "tan-2N-cor1"]
DEFAULT_STEP = {"vn": 1.0, "srvn": 1.0, "gd-mc": 0.0237, "gd-mv": 0.00237, "bwgd": 0.0237, "fbgvi": 0.0237,
                "tan-1E": 0.0237, "tan-1N": 1.0, "tan-2E": 0.0133, "tan-2N": 1.0, "tan-2N-cor1": 1.0}
STEP_HI = 10 ** 0.25  # 1.78: the 1/8-decade grid from 1e-4 then contains 1 exactly
TARGETS = ["Bayesian linear regression (T2)", "logistic regression (T3)", "correlated Gaussian", "banana", "Student-t"]


@st.cache_resource(show_spinner=False)
def _target(name, kappa, rho_t, df):
    if name.startswith("Bayesian linear"):
        return kumar_t2()
    if name.startswith("logistic"):
        return kumar_t3()
    if name == "correlated Gaussian":
        return rotated_gaussian_2d(kappa)
    if name == "banana":
        return banana(0.5, 2.0)
    return student_t_2d(df, rho=rho_t)


def _exact_ok(tgt):
    return bool(tgt.quadratic) or tgt.glm is not None


def _options(tgt, grads, n_samples, tol):
    """run() options: the gradient mode, and the page's tolerance as a KL tolerance on Gaussian targets,
    else as a relative ELBO tolerance (exact gradients only: noisy ELBOs never settle)."""
    opts = {"grads": grads}
    if grads != "exact":
        opts["n_samples"] = int(n_samples)
    if tgt.quadratic and tgt.cov is not None:
        opts["kl_tol"] = tol
    elif grads == "exact":
        opts["rel_tol"] = tol
    return opts


@st.cache_data(show_spinner=False, max_entries=256)
def _run(tkey, method, rho, grads, n_samples, seed, m0, c0, n_steps, tol):
    tgt = _target(*tkey)
    opts = _options(tgt, grads, n_samples, tol)
    return run(method, tgt, CholCov(np.asarray(m0), c0 * np.eye(2)), int(n_steps), float(rho),
               key=as_key(int(seed)), **opts)


@st.cache_data(show_spinner=False, max_entries=64)
def _contour(tkey, bounds):
    return tplots.log_density_grid(_target(*tkey), bounds)


@st.cache_data(show_spinner=False, max_entries=32)
def _limits(tkey, m0, c0):
    return stability.step_size_limits(_target(*tkey), CholCov(np.asarray(m0), c0 * np.eye(2)))["limits"]


@st.cache_data(show_spinner=False, max_entries=64)
def _sweep(tkey, method, grads, n_samples, seed, m0, c0, n_steps, tol):
    tgt = _target(*tkey)
    opts = _options(tgt, grads, n_samples, tol)
    steps = np.logspace(-4, 0.25, 18)  # quarter decades, 1 included
    its, sts, _ = stability.step_size_sweep(method, tgt, CholCov(np.asarray(m0), c0 * np.eye(2)), steps, int(n_steps),
                                      key=as_key(int(seed)), **opts)
    return steps, its, sts


# ------------------------------------------------------------------------------------------ controls
c1, c2, c3 = st.columns(3)
with c1:
    tname = ui.select("target", "tgt", TARGETS, TARGETS[0])
    kappa = ui.log_slider("condition number", "kappa", 1.0, 1000.0, 30.0) if tname == "correlated Gaussian" else 30.0
    rho_t = ui.slider("Student-t correlation", "trho", -0.95, 0.95, 0.5, 0.05) if tname == "Student-t" else 0.5
    df = ui.log_slider("Student-t degrees of freedom", "df", 1.0, 100.0, 5.0) if tname == "Student-t" else 5.0
with c2:
    methods = ui.multiselect("methods", "m", METHODS, ["vn", "srvn", "gd-mc", "bwgd"])
    view = ui.radio("view", "view", ["paths", "animation", "step-size sweep"], "paths", horizontal=True)
with c3:
    every = ui.slider("ellipse every k steps (at most 30 per run)", "k", 1, 200, 10)
    m1 = ui.number("start mean m_1", "m1", -10.0, 10.0, -2.0, 0.5)
    m2 = ui.number("start mean m_2", "m2", -10.0, 10.0, 2.5, 0.5)
    c0 = ui.slider("start scale c_0 (C_0 = c_0 I)", "c0", 0.05, 5.0, 0.2, 0.05)

tkey = (tname, float(kappa), float(rho_t), float(df))
target = None
with ui.guard("target"):
    target = _target(*tkey)
if target is None:
    st.stop()
exact_ok = _exact_ok(target)
gauss = bool(target.quadratic and target.cov is not None)

with ui.more("Step sizes and gradients"):
    n_steps = ui.select("maximum steps", "n", [100, 300, 1000, 3000, 10000], 1000)
    tol = ui.log_slider("tolerance (KL for Gaussian targets, relative ELBO change otherwise)", "tol", 1e-12, 1e-3,
                        1e-8 if gauss else 1e-7)
    n_samples = ui.number("samples per step (stochastic gradients)", "ns", 1, 1000, 10,
                          help="Draws per step for 'first' / 'second' order gradients; the sidebar's random seed fixes them.")
    settings = {}
    cols = st.columns(3)
    for i, m in enumerate(methods):
        with cols[i % 3]:
            rho = ui.log_slider(f"{m}: step size", f"s_{m}", 1e-4, STEP_HI, DEFAULT_STEP[m],
                               points_per_decade=8)
            modes = ["exact", "first", "second"] if exact_ok else ["first", "second"]
            mode = ui.select(f"{m}: gradients", f"g_{m}", modes, modes[0])
            settings[m] = (rho, mode)
if not exact_ok:
    st.info(f"{target.name} has no closed-form expectations: gradients are Monte Carlo estimates "
            f"({int(n_samples)} draws per step), runs stop at the step limit.")

m0 = (float(m1), float(m2))
seed = ui.seed()

with ui.guard("runs"):
    traces = {m: _run(tkey, m, settings[m][0], settings[m][1], int(n_samples), seed, m0, float(c0), int(n_steps),
                      float(tol)) for m in methods}
    # the target's window, widened to show the start (and, without a window, the paths)
    pts = [m0] if target.bounds is not None else np.concatenate([t.mean for t in traces.values()] + [np.array([m0])])
    bounds = tplots.plot_window(target.bounds, pts)
    vals, xs, ys = _contour(tkey, bounds)
    contour = density_contour(vals, xs, ys)
    truth = (target.mean, target.cov) if gauss else None
    for m, tr in traces.items():
        ui.report_status(tr, m)

    if view == "paths":
        a, b = st.columns([3, 2])
        with a:
            st.markdown(f"**{target.name}: mean paths, 1-sd ellipses every {int(every)} steps**")
            ui.show(tplots.paths_figure(traces, contour, every=int(every), truth=truth, bounds=bounds), key="paths")
        with b:
            obj_name = next(iter(traces.values())).objective_name if traces else "objective"
            opt = None
            if not gauss and traces:
                opt = min(float(np.nanmin(t.objective)) for t in traces.values()) - 1e-9
            st.markdown(f"**{obj_name if gauss else obj_name + ' minus the best value seen'}**")
            ui.show(tplots.objective_figure(traces, optimum=opt, log_x=True), key="objective")
        rows = [{"method": m, "step size": settings[m][0], "gradients": settings[m][1], "iterations": tr.n_steps,
                 "status": tr.status, "final " + tr.objective_name: f"{float(tr.objective[-1]):.6g}"}
                for m, tr in traces.items()]
        st.dataframe(pd.DataFrame(rows), hide_index=True)
    elif view == "animation":
        n_frames = ui.slider("frames", "frames", 10, 150, 60)
        st.markdown("**Mean and 1-sd ellipse of each run: press Play, or drag the iteration slider**")
        ui.show(tplots.animation_figure(traces, contour, n_frames=int(n_frames), truth=truth, bounds=bounds),
                key="anim")
    else:
        st.markdown("Iterations to tolerance over 18 step sizes from 1e-4 to 1.78 (one compiled, vectorised loop per "
                    "method). Crosses: diverged; open circles: no convergence within the step limit. Dotted lines: "
                    "1-D linear-stability limits on a Gaussian target (vilab.stability.stability_thresholds; Kumar "
                    "et al. digest Secs. 2.5, 8.1): 1/lambda_max for GD in (m, C) and BW-GD, min(2/lambda_max, "
                    "4/lambda_max^2) for GD in (m, V), 1/lambda_max for FB-GVI (beyond it FB-GVI stalls at a wrong "
                    "covariance rather than blowing up), 1 for VN, the start-dependent SR-VN limit.")
        its, sts = {}, {}
        steps = None
        for m in methods:
            steps, its[m], sts[m] = _sweep(tkey, m, settings[m][1], int(n_samples), seed, m0, float(c0),
                                           int(n_steps), float(tol))
        thr = None
        if exact_ok:  # linearised at the optimum: the target's precision, or V*^-1 at the Gaussian fixed point
            allthr = _limits(tkey, m0, float(c0))
            thr = {m: allthr.get(m) for m in methods}
            if not gauss:
                st.caption("Reference lines use A = V*^-1 = E_q*[-hess log p] at the Gaussian fixed point q* "
                           "(Kumar et al. Eq. 22), the curvature the iterates feel near the end.")
        if steps is not None:
            st.markdown("**Iterations to tolerance against step size**")
            ui.show(tplots.sweep_figure(steps, its, sts, thresholds=thr, max_steps=int(n_steps)), key="sweep")
