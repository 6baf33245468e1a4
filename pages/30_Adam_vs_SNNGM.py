"""Adam vs SNNGM: the optimizers of Tan (2025) Sec. 6, their paths, and comparisons on real data."""

import numpy as np
import pandas as pd
import streamlit as st

import vilab_ui as ui
from vilab import fields, optim
from vilab.core import as_key
from vilab.plots import optim as oplots
from vilab.repro import tan2025_optim as rep
from vilab.targets import regression as R
from vilab.targets.papers import horseshoe_crab_toy

ui.page(
    "Adam vs SNNGM",
    "Tan (2025) argues that Adam discards the natural gradient's scaling: per coordinate, Adam's step is "
    "about alpha times the sign of the averaged gradient, so feeding it natural gradients changes little "
    "(or breaks it). SNNGM instead normalises the whole natural gradient and keeps its direction. Here you "
    "can see the paths, tune alpha, and check where each optimizer wins and where it does not.",
)
st.latex(r"\text{SNNGM:}\ \ m_t=\beta m_{t-1}+(1-\beta)\frac{\tilde g_t}{\|\tilde g_t\|}")
st.latex(r"\lambda^{(t+1)}=\lambda^{(t)}+\alpha\,\frac{m_t}{1-\beta^t},\quad \alpha=\alpha_0\sqrt{\ell_\lambda}")

VIEWS = ["1-D crab toy (Fig. 3)", "2-D logistic regression", "Real data", "Notes on the optimizers"]
view = ui.radio("View", "view", VIEWS, VIEWS[0], horizontal=True)
NAMES = list(optim.OPTIMIZERS)
LABEL = {k: v["label"] for k, v in optim.OPTIMIZERS.items()}


# ----------------------------------------------------------------------------- cached work
@st.cache_data(show_spinner="Running from the three starts ...", max_entries=64)
def _fig3(name, alpha):
    return [(t.mean[:, 0], t.cov[:, 0, 0], t.status, t.extra["failed_at"] or t.extra["iterations"])
            for t in rep.fig3_run(name, alpha, max_iter=20000)]


@st.cache_resource(show_spinner=False)
def _crab():
    return horseshoe_crab_toy()


@st.cache_data(show_spinner=False)
def _field(natural):
    mus, s2s = np.linspace(-0.5, 2.5, 26), np.linspace(0.001, 0.12, 18)
    U, V = fields.gradient_field_1d(_crab(), mus, s2s, geometry="natural" if natural else "euclidean-var")
    return mus, s2s, U, V


@st.cache_resource(show_spinner=False)
def _model2d():
    return R.logistic_2d()


@st.cache_data(show_spinner=False)
def _grid2d():
    m = _model2d()
    t1, t2 = np.linspace(-0.6, 1.6, 121), np.linspace(-2.0, 0.3, 121)
    return t1, t2, m.log_joint_grid(t1, t2)


@st.cache_data(show_spinner=False, max_entries=256)
def _run2d(name, alpha, param, estimator, n_iter, seed):
    m = _model2d()
    tr = optim.run(m, name, key=as_key(seed), alpha=alpha, param=param, estimator=estimator, n_iter=n_iter,
                   mu0=[0.0, 0.0], factor0=np.eye(2) * (0.5 if param == "chol_cov" and name != "vogn" else 2.0),
                   n_elbo_draws=2000, record="iteration")
    return dict(mean=tr.mean, cov=tr.cov, elbo=tr.info["elbo"], status=tr.status,
                final=tr.extra["final_elbo"], it=tr.extra["iterations"])


@st.cache_resource(show_spinner=False)
def _dataset(name):
    return R.load(name)


def _status_text(status, count):
    return f"{status} at iteration {count}" if status.startswith("diverged") else f"{count} iterations"


# ----------------------------------------------------------------------------- view 1
if view == VIEWS[0]:
    st.markdown(
        "Poisson loglinear model with an intercept only (horseshoe crabs, n = 173), q = N(mu, sigma^2), "
        "lambda = (mu, sigma^2), exact gradients; every run stops when |L_t - L_{t-1}| < 1e-7 |L_t|. "
        "Arrows: the normalised gradient field each optimizer is fed (Euclidean for Adam, natural otherwise)."
    )
    c1, c2, c3 = st.columns(3)
    with c1:
        a_adam = ui.log_slider("alpha, Adam (Euclidean)", "aa", 1e-4, 1e-1, 1e-3)
    with c2:
        a_nat = ui.log_slider("alpha, Adam (natural)", "an", 1e-4, 1e-1, 1e-3)
    with c3:
        a0 = ui.log_slider("alpha0, SNNGM", "as", 1e-4, 1e-1, 1e-3, help="alpha = alpha0 sqrt(2) here (l = 2)")
    st.caption(f"SNNGM step length alpha = alpha0 sqrt(2) = {a0 * np.sqrt(2):.3g}; every step is at most this long.")
    with ui.guard("Fig. 3"):
        res = {name: _fig3(name, a) for name, a in [("adam", a_adam), ("adam-natural", a_nat), ("snngm", a0)]}
        panels = []
        for name, title, nat in [("adam", "Adam (Euclidean gradients)", False),
                                 ("adam-natural", "Adam (natural gradients)", True),
                                 ("snngm", "SNNGM (natural gradients)", True)]:
            mus, s2s, U, V = _field(nat)
            paths = [(f"{title.split(' (')[0]}{' (nat.)' if name == 'adam-natural' else ''} from {s}: "
                      f"{_status_text(st_, cnt)}", mp, sp, name)
                     for s, (mp, sp, st_, cnt) in zip(rep.FIG3_STARTS, res[name])]
            panels.append(dict(title=title, U=U, V=V, paths=paths))
        ui.show(oplots.field_paths(panels, mus, s2s, optimum=_crab().info["optimum"], starts=rep.FIG3_STARTS))
        rows = []
        for i, s in enumerate(rep.FIG3_STARTS):
            rows.append({"start (mu, sigma^2)": str(s),
                         **{LABEL[n]: _status_text(res[n][i][2], res[n][i][3]) for n in res},
                         "digest (Adam / SNNGM)": f"{rep.FIG3_PAPER['adam'][i]} / {rep.FIG3_PAPER['snngm'][i]}"})
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
        for i, s in enumerate(rep.FIG3_STARTS):
            ui.report_status(res["adam-natural"][i][2], f"Adam (natural) from {s}")
    st.markdown(
        "Adam moves every coordinate by about alpha per step whatever the gradient says, so it staircases "
        "(Euclidean gradients) or ignores the natural scaling (natural gradients) and can push sigma^2 below "
        "zero. SNNGM follows the natural-gradient flow straight to the optimum, in about a third of Adam's "
        "iterations with the paper's alpha."
    )

# ----------------------------------------------------------------------------- view 2
elif view == VIEWS[1]:
    st.markdown("Bayesian logistic regression with two coefficients (n = 200 simulated points, prior N(0, 100 I)), "
                "full covariance; start mu = 0. Grey: exact posterior (grid); dotted: final q, 2 sd.")
    c1, c2, c3 = st.columns(3)
    with c1:
        chosen = ui.multiselect("Optimizers", "opt", NAMES, NAMES)
    with c2:
        param = ui.radio("Factor", "par", ["chol_cov", "chol_prec"], "chol_cov", horizontal=True,
                         help="C (Sigma = C C^T) or T (Sigma^-1 = T T^T); VOGN always uses T")
        est = ui.radio("Gradient estimate", "est", ["second", "first"], "second", horizontal=True)
    with c3:
        n_iter = ui.slider("Iterations", "nit", 50, 3000, 1000, step=50)
    alphas = {}
    with ui.more("Step size per optimizer"):
        cols = st.columns(3)
        defaults = {"adam": 0.01, "adam-natural": 0.01, "snngm": 0.01, "nagm": 0.1, "pga": 0.01, "vogn": 0.1}
        for i, name in enumerate(NAMES):
            with cols[i % 3]:
                alphas[name] = ui.log_slider(f"alpha, {LABEL[name]}" + (" (alpha0)" if name == "snngm" else ""),
                                             f"a2{name.replace('-', '')}", 1e-4, 10.0, defaults[name])
    with ui.guard("2-D logistic regression"):
        runs = {name: _run2d(name, alphas[name], param, est, n_iter, ui.seed()) for name in chosen}
        t1, t2, logp = _grid2d()
        left, right = st.columns(2)
        with left:
            ui.show(oplots.mean_paths_2d((t1, t2, logp), {
                f"{LABEL[n]} (alpha {alphas[n]:.3g})": (n, r["mean"], r["cov"], r["status"]) for n, r in runs.items()},
                title="Mean paths"))
        with right:
            ui.show(oplots.elbo_curves({LABEL[n]: (n, np.arange(len(r["elbo"])), r["elbo"]) for n, r in runs.items()},
                                       log_x=True, window=25,
                                       title="ELBO estimate (single draw, moving average of 25)"))
        st.dataframe(pd.DataFrame([{"optimizer": LABEL[n], "alpha": alphas[n], "final ELBO (MC, 2000 draws)":
                                    round(r["final"], 2), "status": r["status"]} for n, r in runs.items()]),
                     hide_index=True, width="stretch")
        for n, r in runs.items():
            ui.report_status(r["status"], LABEL[n])

    st.subheader("Sweep: final ELBO against alpha")
    st.markdown(f"Each chosen optimizer at 11 step sizes from 1e-4 to 10 ({n_iter} iterations each, the "
                "settings above). The plot shows how far each run ends below the best one (log scale): the flat "
                "bottom of a curve is where the optimizer is both stable and fast enough; crosses mark runs that "
                "diverged.")
    sweep_config = (tuple(chosen), param, est, n_iter, ui.seed())
    if st.button("Run the sweep", key="sweep_btn"):
        with ui.guard("sweep"):
            grid = np.logspace(-4, 1, 11)
            bar = st.progress(0.0, text="sweeping ...")
            out = {}
            for i, name in enumerate(chosen):
                vals, bad = [], []
                for j, a in enumerate(grid):
                    bar.progress((i * len(grid) + j) / (len(chosen) * len(grid)),
                                 text=f"{LABEL[name]}, alpha = {a:.2g}")
                    r = _run2d(name, float(a), param, est, n_iter, ui.seed())
                    vals.append(r["final"])
                    bad.append(r["status"].startswith("diverged"))
                out[LABEL[name]] = (name, grid, np.array(vals), np.array(bad))
            bar.empty()
            st.session_state["sweep_result"] = (sweep_config, out)
    if "sweep_result" in st.session_state:
        cfg, out = st.session_state["sweep_result"]
        if cfg != sweep_config:
            st.info("The settings changed since this sweep ran; press Run the sweep to update it.")
        with ui.guard("sweep plot"):
            ui.show(oplots.alpha_sweep(out, title=f"Final ELBO after {cfg[3]} iterations, against alpha"))

# ----------------------------------------------------------------------------- view 3
elif view == VIEWS[2]:
    st.markdown(
        "Bayesian logistic regression (prior N(0, 100 I), standardised covariates, intercept) on data that "
        "ship with a package: scikit-learn's breast cancer set (n = 569, d = 31) and the Pima diabetes data "
        "of R's MASS (n = 532, d = 8). Start mu = 0, C = I / sqrt(n) (Tan Sec. 8). The table has the layout "
        "of Tan's Table 8: rows are optimizers with 1 = first-order and 2 = second-order gradient "
        "estimates (Thm 2), cells the final ELBO (Monte Carlo, 500 draws) and the run time in seconds."
    )
    c1, c2, c3 = st.columns(3)
    with c1:
        ds = ui.select("Data", "ds", list(R.DATASETS), "breast cancer")
        covs = ui.multiselect("Covariance", "cov", ["diagonal", "full"], ["diagonal", "full"])
    with c2:
        orders = ui.multiselect("Gradient estimate", "est3", ["first", "second"], ["first", "second"],
                                help="first: G = grad h z^T; second: G = hess h C (Tan Thm 2)")
        batch = ui.select("Minibatch", "bs", ["full batch", "n/4", "n/16"], "full batch",
                          help="Minibatches without replacement within an epoch; the data term is scaled by n/|B|")
    with c3:
        n_epochs = ui.slider("Epochs", "ep", 50, 3000, 1000, step=50)
    chosen3 = ui.multiselect("Optimizers", "opt3", NAMES, NAMES)
    alphas3 = {}
    with ui.more("Step size per optimizer"):
        cols = st.columns(3)
        defaults = {"adam": 1e-3, "adam-natural": 1e-3, "snngm": 0.01, "nagm": 0.1, "pga": 1e-3, "vogn": 0.1}
        for i, name in enumerate(NAMES):
            with cols[i % 3]:
                alphas3[name] = ui.log_slider(f"alpha, {LABEL[name]}" + (" (alpha0)" if name == "snngm" else ""),
                                              f"a3{name.replace('-', '')}", 1e-4, 1.0, defaults[name])
    config = (ds, tuple(covs), tuple(orders), batch, n_epochs, tuple(chosen3), tuple(sorted(alphas3.items())),
              ui.seed())

    def _stop():
        st.session_state["rd_stop"] = True

    b1, b2 = st.columns([1, 4])
    start = b1.button("Run comparison", key="rd_run", type="primary")
    b2.button("Stop", key="rd_stop_btn", on_click=_stop,
              help="Stops the comparison; the runs that finished stay in the table.")
    store = st.session_state.setdefault("rd_results", {"config": None, "runs": {}})
    if start:
        st.session_state["rd_stop"] = False
        with ui.guard("real data"):
            specs = oplots.comparison_specs(chosen3, orders, covs)
            model = _dataset(ds)
            bsize = {"full batch": None, "n/4": model.n // 4, "n/16": model.n // 16}[batch]
            store["config"], store["runs"] = config, {}
            bar = st.progress(0.0, text="starting ...")
            for i, (name, order, diag) in enumerate(specs):
                if st.session_state.get("rd_stop"):
                    break
                label = f"{oplots.run_label(name, order)}, {'diagonal' if diag else 'full'}"

                def _prog(f, i=i, label=label):
                    bar.progress(min(1.0, (i + f) / len(specs)), text=f"run {i + 1} of {len(specs)}: {label} ({f:.0%})")

                tr = optim.run(model, name, key=as_key(ui.seed()), alpha=alphas3[name], diagonal=diag,
                               estimator=order or "second", n_epochs=n_epochs, batch_size=bsize, progress=_prog,
                               chunk_iters=200, should_stop=lambda: bool(st.session_state.get("rd_stop")))
                store["runs"][(name, order, diag)] = oplots.comparison_summary(tr)
            bar.empty()
    runs3 = store["runs"]
    if runs3:
        if store["config"] != config:
            st.info("The settings changed since this comparison ran; press Run comparison to update it.")
        with ui.guard("results"):
            table = oplots.table8(runs3)
            st.dataframe(table, hide_index=True, width="stretch", height=35 * (len(table) + 1) + 3)
            st.caption(f"Time: wall time of the iterations on this machine; compilation (once per configuration, "
                       f"{sum(r['compile'] for r in runs3.values()):.0f} s in all here) is not counted. "
                       "For comparison, Tan's Table 8 on German credit (d = 49, full batch, full covariance): "
                       "Snngm2 -625.6, Nagm2 -626.0, VOGN -626.7, PGA2 -639.2, Adam2 -666.8, Adam1 -677.2.")
            full_batch = batch == "full batch"
            figs = st.columns(len({d for (_, _, d) in runs3}))
            for col, diag in zip(figs, sorted({d for (_, _, d) in runs3}, reverse=True)):
                curves = {oplots.run_label(n, o): (n, np.arange(1, len(r["elbo_epoch"]) + 1), r["elbo_epoch"],
                                                  "dot" if o == "first" else "solid")
                          for (n, o, d), r in runs3.items() if d == diag}
                with col:
                    ui.show(oplots.elbo_curves(curves, xlabel="epoch", log_x=True, window=20 if full_batch else 3,
                                               clip_quantile=0.1,
                                               title=f"{'Diagonal' if diag else 'Full'} covariance: average ELBO "
                                               "per epoch" + (" (moving average of 20)" if full_batch else "")))
        for (n, o, d), r in runs3.items():
            ui.report_status(r["status"], f"{oplots.run_label(n, o)}, {'diagonal' if d else 'full'}")
    else:
        st.caption("Press Run comparison: the runs go in turn with a progress bar; Stop keeps what finished. "
                   "The first run of each configuration compiles (a few seconds).")

# ----------------------------------------------------------------------------- view 4
else:
    st.markdown("All updates are ascent on the ELBO L (vilab.optim implements them as optax transformations "
                "fed the gradient of -L). g-hat is the Euclidean gradient estimate, g-tilde = F^-1 g-hat the natural "
                "one (Tan Thm 1), lambda the flat vector of the free parameters (mu, vech C), of length l_lambda; "
                "squares, roots and divisions act elementwise.")
    st.markdown("**Adam** (Tan Table 5; alpha = 0.001, beta1 = 0.9, beta2 = 0.999, eps = 1e-8; `optax.adam` itself):")
    st.latex(r"m_t=\beta_1m_{t-1}+(1-\beta_1)\hat g_t,\quad v_t=\beta_2v_{t-1}+(1-\beta_2)\hat g_t^2")
    st.latex(r"\lambda^{(t+1)}=\lambda^{(t)}+\alpha\,\frac{m_t/(1-\beta_1^t)}{\sqrt{v_t/(1-\beta_2^t)}+\epsilon}")
    st.markdown("Per coordinate the step is about alpha times the sign of the averaged gradient, shrunk by its "
                "relative variance (Tan Sec. 6):")
    st.latex(r"\Delta\lambda_i\approx\alpha\,\mathrm{sign}(\hat m_{t,i})/\sqrt{1+\mathrm{Var}(g_i)/E(g_i)^2}")
    st.markdown("**Adam (natural gradients)**: the same Adam fed the natural gradient. Tan calls it *NAdam*; it "
                "is not Nesterov-accelerated Adam (optax.nadam), hence the longer name here. Only the sign of "
                "each coordinate of g-tilde survives, so the natural gradient's scaling is lost:")
    st.latex(r"m_t=\beta_1m_{t-1}+(1-\beta_1)\tilde g_t,\quad v_t=\beta_2v_{t-1}+(1-\beta_2)\tilde g_t^2")
    st.latex(r"\lambda^{(t+1)}=\lambda^{(t)}+\alpha\,\frac{m_t/(1-\beta_1^t)}{\sqrt{v_t/(1-\beta_2^t)}+\epsilon}")
    st.markdown("**SNNGM** (Tan Table 5): the normalised natural gradient with bias-corrected momentum; every "
                "step has length at most alpha, and the effective step alpha / ||g-tilde|| grows near the optimum.")
    st.latex(r"m_t=\beta m_{t-1}+(1-\beta)\frac{\tilde g_t}{\|\tilde g_t\|}")
    st.latex(r"\lambda^{(t+1)}=\lambda^{(t)}+\alpha\,\frac{m_t}{1-\beta^t},\quad \alpha=\alpha_0\sqrt{\ell_\lambda},"
             r"\quad \|\lambda^{(t+1)}-\lambda^{(t)}\|\le\alpha")
    st.markdown("**NAGM** (Tan Table 5): the natural gradient of the momentum of clipped Euclidean gradients "
                "(threshold 5e5, no bias correction); the factor's step is 10x (diagonal) or 100x (full) smaller "
                "than the mean's.")
    st.latex(r"m_t=\beta m_{t-1}+(1-\beta)\min(1,\mathcal T/\|\hat g_t\|)\,\hat g_t")
    st.latex(r"\lambda^{(t+1)}=\lambda^{(t)}+\alpha\,F_{\lambda^{(t)}}^{-1}m_t")
    st.markdown("**ProxGenAdam** (Tan Supp. S5): Adam without bias correction on the gradient of E_q[log p] only, "
                "then a proximal step on each diagonal entry of C for the entropy term -log|C_ii| (for T: "
                "+log|T_ii|, with a minus sign under the root):")
    st.latex(r"\lambda'=\lambda^{(t)}+\gamma_t\,m_t,\quad\gamma_t=\frac{\alpha}{\sqrt{v_t}+\epsilon}")
    st.latex(r"C_{ii}=\tfrac12\left(C'_{ii}+\mathrm{sgn}(C'_{ii})\sqrt{C'^2_{ii}+4\gamma_{t,ii}}\right)")
    st.markdown("**VOGN** (Khan et al. 2018, as in Tan Supp. S5): Adam-like natural gradient on the precision "
                "S = T T^T with a Gauss-Newton curvature from per-example gradients:")
    st.latex(r"m_t=\beta_1m_{t-1}+(1-\beta_1)\hat g^{\,\log p}_t")
    st.latex(r"S^{(t+1)}=\beta_2S^{(t)}+(1-\beta_2)(\hat H^{L}_t+I/\sigma_0^2)")
    st.latex(r"\mu^{(t+1)}=\mu^{(t)}+\alpha\,(S^{(t+1)})^{-1}\frac{m_t}{1-\beta_1^t},\quad "
             r"T^{(t+1)}=\mathrm{chol}(S^{(t+1)})")
    st.markdown(
        "**What the comparison shows.** On the 1-D toy SNNGM needs about a third of Adam's iterations, and "
        "Adam with natural gradients is no better than Adam and can leave the parameter space. On the "
        "loglinear simulation (reproduction `tan2025-loglinear-d50`) SNNGM, NAGM and VOGN reach the exact "
        "optimum while Adam lags. SNNGM is not always the winner: in Tan's deep GLM experiments (Table 10) "
        "NAGM and ProxGenAdam reach the best ELBO, and with first-order gradients and a full covariance in "
        "high dimension every method suffers from the noise of the estimate (Table 8). Step sizes matter: "
        "use the sweep to see each optimizer's stable range."
    )
    st.subheader("Fig. 4: the random index of Theorem 3")
    c1, c2 = st.columns(2)
    with c1:
        N = ui.slider("N", "N", 100, 20000, 10000, step=100)
    with c2:
        beta = ui.slider("beta", "beta", 0.5, 0.99, 0.9, step=0.01)
    with ui.guard("Fig. 4"):
        w = optim.tau_weights(N, beta)
        st.markdown(f"{int(np.sum(w <= 0.99))} of the {N} weights 1 - beta^(N-j+1) are at most 0.99 "
                    "(43 for N = 10000, beta = 0.9): tau is almost uniform on 1..N.")
        ui.show(oplots.tau_weights_figure(w))
