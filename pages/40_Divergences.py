"""Divergences: mean-field variances under KL, Fisher, score-based and weighted Fisher (Chen, Nott & Tan)."""

import numpy as np
import pandas as pd
import streamlit as st

import vilab_ui as ui
from vilab import divergences as dv
from vilab.core import as_key
from vilab.plots import divergences as dplots
from vilab.targets import gaussian_target
from vilab.targets.univariate import univariate_target

ui.page(
    "Divergences",
    "Which Gaussian is *closest* to a posterior depends on how closeness is measured. With a "
    "mean-field (diagonal) Gaussian, KL(q||p) already underestimates marginal variances; the Fisher "
    "and score-based divergences (Chen, Nott & Tan) underestimate them even more, and the "
    "score-based optimum can put a variance exactly to zero (*variational collapse*).",
)
st.latex(r"S_M(q\|p)=\mathbb E_q\big\|\nabla\log q(\theta)-\nabla\log p(\theta\mid y)\big\|_M^2,"
         r"\quad M=I:\ \text{Fisher},\quad M=\Sigma:\ \text{score-based}")


@st.cache_data(show_spinner=False, max_entries=256)
def _two_d(rho, sd1, sd2):
    P = dv.precision_2d(rho, sd1, sd2)
    return {k: dv.meanfield_variances(P, k) for k in ("kl", "fisher", "score", "forward_kl")}


@st.cache_data(show_spinner=False, max_entries=64)
def _curves(sd1, sd2):
    rhos = np.linspace(-0.99, 0.99, 199)
    return rhos, dv.variance_curves_2d(rhos, sd1, sd2)


@st.cache_data(show_spinner=False, max_entries=64)
def _grid(c):
    return dv.fig1_grid(c)


@st.cache_data(show_spinner=False, max_entries=256)
def _three_d(a, b, c):
    P = dv.precision_3d(a, b, c)
    opt = dv.meanfield_optimum(P, "score")
    return {"KL": dv.meanfield_variances(P, "kl"), "Fisher": dv.meanfield_variances(P, "fisher"),
            "score-based": opt.variances, "true": dv.meanfield_variances(P, "forward_kl"),
            "SDb fixed point": dv.batch_meanfield_fixed_point(P, "sdb")}, opt.collapsed


@st.cache_data(show_spinner=False, max_entries=128)
def _univariate(kind, params):
    spec = univariate_target(kind, **dict(params))
    opt = dv.univariate_optima(spec)
    lo = min(spec.mode - 5 * spec.sd, min(o.mu - 4 * np.sqrt(o.var) for o in opt.values()))
    hi = max(spec.mode + 5 * spec.sd, max(o.mu + 4 * np.sqrt(o.var) for o in opt.values()))
    x = np.linspace(lo, hi, 600)
    return x, np.exp(spec.logpdf(x)), opt


@st.cache_resource(show_spinner=False)
def _fig5_target():
    return gaussian_target(np.array([2.0]), cov=np.array([[1.5]]), name="N(2, 1.5)")


@st.cache_data(show_spinner=False, max_entries=64)
def _fig5(n_iter, batch, seed, mu0):
    tr = dv.run_sgd(_fig5_target(), "sdb", n_iter=n_iter, batch_size=batch, history=True, window=n_iter,
                    key=as_key(seed), mu0=[mu0])
    return tr.mean[:, 0], tr.cov[:, 0, 0], tr.extra["samples"][:, :, 0], tr.status


@st.cache_resource(show_spinner=False, max_entries=16)
def _gauss_target(cov_key):
    cov = np.array(cov_key)
    return gaussian_target(np.zeros(cov.shape[0]), cov=cov)


@st.cache_data(show_spinner=False, max_entries=32)
def _mf_runs(cov_key, n_iter, batch, seed):
    tg = _gauss_target(cov_key)
    out = {}
    for m in ("fdb", "sdb"):
        tr = dv.run_sgd(tg, m, n_iter=n_iter, batch_size=batch, mask="diagonal", window=500,
                       key=as_key(seed))
        out[m] = (dv.tail_average_variances(tr, 0.5), tr.status)
    return out


tab2d, tab3d, tab1d, tabb = st.tabs(["2-D Gaussian", "3-D: collapse (Fig. 1)", "Univariate targets",
                                     "Batch methods"])

# ----------------------------------------------------------------------------------------- 2-D
with tab2d:
    c1, c2, c3 = st.columns(3)
    with c1:
        rho = ui.slider("correlation rho", "rho", -0.99, 0.99, 0.9, 0.01)
    with c2:
        sd1 = ui.log_slider("sd of theta_1", "sd1", 0.001, 1000.0, 1.0)
    with c3:
        sd2 = ui.log_slider("sd of theta_2", "sd2", 0.001, 1000.0, 1.0)

    @st.fragment
    def _panel_2d():
        with ui.guard("2-D example"):
            v = _two_d(rho, sd1, sd2)
            cov = np.array([[sd1**2, rho * sd1 * sd2], [rho * sd1 * sd2, sd2**2]])
            rescale = ui.toggle("rescale theta_2 (shows that Fisher is not affine invariant)", "rs", False)
            if rescale:
                k = ui.log_slider("factor k (theta_2 -> k theta_2)", "k", 0.01, 100.0, 3.0)
                w = _two_d(rho, sd1, sd2 * k)
                back = {n: np.array([x[0], x[1] / k**2]) for n, x in w.items() if n != "forward_kl"}
                a, b = st.columns(2)
                with a:
                    ui.show(dplots.meanfield_ellipses([0, 0], cov, {n: v[n] for n in back},
                                                      title="optima in the original coordinates"))
                with b:
                    ui.show(dplots.meanfield_ellipses([0, 0], cov, back,
                                                      title=f"optima after theta_2 -> {k:g} theta_2, mapped back"))
                st.markdown("KL and score-based solutions are the same after mapping back (they only rescale); "
                            "the Fisher solution changes shape.")
            else:
                ui.show(dplots.meanfield_ellipses([0, 0], cov, v, title="2-sd ellipses: target and mean-field optima"))
            table = pd.DataFrame({dplots.LABELS[n]: x for n, x in v.items()}, index=["Sigma_11", "Sigma_22"]).T
            table["Sigma_11 / true"] = table["Sigma_11"] / sd1**2
            st.dataframe(table.style.format("{:.6g}"))
            st.latex(r"\Sigma^{KL}_{ii}=\frac1{\Lambda_{ii}},\quad \Sigma^{F}_{ii}=\frac1{\|\Lambda_{i\cdot}\|_2},"
                     r"\quad \sum_j\Lambda_{ij}^2\Sigma^S_{jj}=\Lambda_{ii}\ \text{or}\ \Sigma^S_{ii}=0")

    _panel_2d()

    @st.fragment
    def _panel_curves():
        with ui.guard("variance against rho"):
            rhos, curves = _curves(sd1, sd2)
            ui.show(dplots.variance_curves(rhos, curves, title="Sigma_11 against rho"))
            st.markdown("Theorem 1: score-based and Fisher variances never exceed KL's, which never exceeds the "
                        "true variance. With equal scales SD <= FD <= KL <= true (and FD = sqrt(KL SD)); "
                        "SD <= FD in coordinate 1 exactly when sd1^2/sd2^2 <= 2 + rho^2.")

    _panel_curves()

# ----------------------------------------------------------------------------------------- 3-D
with tab3d:
    st.latex(r"\Lambda=\begin{pmatrix}1&a&b\\a&1&c\\b&c&1\end{pmatrix}")

    @st.fragment
    def _panel_3d():
        c = ui.slider("c", "c", -0.95, 0.95, 0.3, 0.05)
        ca, cb = st.columns(2)
        with ca:
            a = ui.slider("a (selected point)", "a", -0.99, 0.99, 0.8, 0.01)
        with cb:
            b = ui.slider("b (selected point)", "b", -0.99, 0.99, 0.8, 0.01)
        with ui.guard("Fig. 1"):
            g = _grid(c)
            ui.show(dplots.fig1_heatmap(g, marked=(a, b),
                                        title=f"c = {c:g}: # coordinates with score-based <= Fisher variance"),
                    key="fig1", on_select=ui.click_setter("fig1", "a", "b", -0.99, 0.99), selection_mode="points")
            st.markdown("Red: all three, blue: two, green: one coordinate. Blank: not positive definite. "
                        "Orange: diagonally dominant (there score <= Fisher). x: score-based collapse. "
                        "**Click a point** (or move the a, b sliders) to see its variances below.")
        with ui.guard("selected point"):
            vals, col = _three_d(a, b, c)
            st.dataframe(pd.DataFrame(vals, index=["i=1", "i=2", "i=3"]).T.style.format("{:.6f}"))
            if col.any():
                st.info(f"Variational collapse: the score-based variance of coordinate(s) "
                        f"{', '.join(str(i + 1) for i in np.nonzero(col)[0])} is exactly zero.")

    _panel_3d()

# ----------------------------------------------------------------------------------------- 1-D
with tab1d:

    @st.fragment
    def _panel_1d():
        kind = ui.select("target", "tgt", ["student_t", "skew_normal", "log_inverse_gamma"], "skew_normal")
        if kind == "student_t":
            params = (("nu", ui.slider("degrees of freedom nu", "nu", 2.5, 30.0, 3.0, 0.5)),)
        elif kind == "skew_normal":
            c1, c2 = st.columns(2)
            with c1:
                t = ui.slider("scale t", "t", 0.5, 5.0, 5.0, 0.5)
            with c2:
                lam = ui.slider("skewness lambda", "lam", -5.0, 5.0, 5.0, 0.5)
            params = (("m", 0.0), ("t", t), ("lam", lam))
        else:
            params = (("a1", ui.slider("a1 = a0 + n/2", "a1", 0.6, 30.0, 3.01, 0.01)), ("b1", 1.0))
        with ui.guard("univariate optima"):
            x, pdf, opt = _univariate(kind, params)
            ui.show(dplots.univariate_densities(x, pdf, {k: (o.mu, o.var) for k, o in opt.items()},
                                                title="target and optimal Gaussians"))
            st.dataframe(pd.DataFrame(
                {dplots.LABELS[k]: {"mu": o.mu, "sigma^2": o.var, "|mu - m*| / sigma*": o.mode_error,
                                    "sigma^2 / sigma*^2": o.var_ratio, "accuracy 1 - IAE/2 (%)": o.accuracy}
                 for k, o in opt.items()}).style.format("{:.4f}"))
            st.caption("In 1-D the score-based divergence is sigma^2 times the Fisher divergence. Student-t "
                       "accuracies here integrate over the whole line (the paper's Table 1 used a finite range).")

    _panel_1d()

# ----------------------------------------------------------------------------------------- batch
with tabb:
    st.latex(r"\hat S_{q_t}(\lambda)=\frac1B\sum_{i=1}^B\big\|\nabla\log h(\theta_i)+\Sigma^{-1}(\theta_i-\mu)"
             r"\big\|^2_\Sigma,\qquad \theta_i\sim q_t")

    @st.fragment
    def _panel_fig5():
        B = ui.slider("batch size B", "B", 2, 50, 5, 1)
        with ui.more("SDb run settings"):
            c1, c2 = st.columns(2)
            with c1:
                n_it = ui.slider("iterations", "it", 6, 300, 60, 6)
            with c2:
                mu0 = ui.slider("starting mean", "m0", -6.0, 6.0, -2.0, 0.5)
        with ui.guard("SDb progression"):
            means, var, samples, status = _fig5(n_it, B, ui.seed(), mu0)
            shown = np.unique(np.linspace(1, n_it, 6).astype(int))
            ui.show(dplots.sdb_progression(means[shown], var[shown], samples[shown - 1], shown, 2.0, 1.5,
                                           title="SDb on N(2, 1.5): q_t and the B draws of iteration t"))
            ui.report_status(status, "SDb")

    _panel_fig5()

    @st.fragment
    def _panel_fixed():
        st.markdown("Mean-field fixed points on the 2-D target of the first tab: batch FD ends at the KL "
                    "solution, batch SD at Sigma_ii (Lambda Sigma Lambda)_ii = 1 (never collapses).")
        with ui.guard("fixed points"):
            P = dv.precision_2d(rho, sd1, sd2)
            vals = {"KL": dv.meanfield_variances(P, "kl"), "Fisher": dv.meanfield_variances(P, "fisher"),
                    "score": dv.meanfield_variances(P, "score"),
                    "FDb fixed point": dv.batch_meanfield_fixed_point(P, "fdb"),
                    "SDb fixed point": dv.batch_meanfield_fixed_point(P, "sdb")}
            if ui.checkbox("also run FDb and SDb (mean field, Adadelta, 6000 steps)", "run", False):
                cov = np.linalg.inv(P)
                runs = _mf_runs(tuple(map(tuple, cov)), 6000, 5, ui.seed())
                for m, (v, status) in runs.items():
                    vals[f"{m.upper()[:2]}b run"] = v
                    ui.report_status(status, m)
            ui.show(dplots.fixed_point_bars(vals, title="mean-field variances"))

    _panel_fixed()
