"""Online learning: the Bayesian online natural gradient (BONG) of Jones, Chang & Murphy."""

import numpy as np
import pandas as pd
import streamlit as st

import vilab_ui as ui
from vilab.online import conjugate as cj
from vilab.online import METRICS, grid_names
from vilab.online import digits as dg
from vilab.online.linear_gaussian import linear_demo
from vilab.plots import online as po

ui.page(
    "Online learning",
    "Data arrive one example at a time. **BONG** (Jones, Chang & Murphy) updates the Gaussian belief with ONE "
    "natural-gradient step of unit length, started at the prior, on the expected log-likelihood alone (no KL "
    "term: the start point is the regulariser). For conjugate models this is exact Bayes; for linear-Gaussian "
    "models it is the Kalman filter. Its relatives need a learning rate: **blr** (natural gradient on the "
    "VI loss, I inner steps), **bog** (plain gradient, one step), **bbb** (plain gradient on the VI loss).",
)
st.latex(r"\psi_t=\psi_{t|t-1}+F_{\psi_{t|t-1}}^{-1}\nabla_{\psi_{t|t-1}}\,"
         r"\mathbb{E}_{\theta\sim q_{\psi_{t|t-1}}}\!\left[\log p(y_t\mid x_t,\theta)\right]")
st.latex(r"\text{Gaussian belief:}\quad \Sigma_t^{-1}=\Sigma_{t|t-1}^{-1}-G_t,\ \ \mu_t=\mu_{t|t-1}+\Sigma_t g_t")

tab_lin, tab_conj, tab_dig, tab_sweep = st.tabs(
    ["Linear-Gaussian stream", "Conjugate families", "Digits stream", "Learning-rate and prior sweeps"])


@st.cache_data(show_spinner=False, max_entries=64)
def _linear(seed, T, noise_var, prior_var):
    return linear_demo(seed, T, noise_var, prior_var)


@st.cache_data(show_spinner=False, max_entries=64)
def _conj(kind, chi, nu, y):
    return cj.conjugate_demo(kind, chi, nu, y)


@st.cache_data(show_spinner=False, max_entries=32)
def _asset(name):
    return dg.load_asset(name)


@st.cache_data(show_spinner=False, max_entries=64)
def _live(name, model, T, s2, alpha, I, M, seed, _progress=None):
    r = dg.run_digits(name, model=model, T=T, sigma0_2=s2, alpha=alpha, n_iter=I, n_samples=M, seed=seed,
                      checkpoints=[c for c in (0, 25, 50, 100, 200, 300, 500, 750, 1000) if c <= T], n_mc=30,
                      progress=_progress)
    return {"label": r.method, "t": list(map(int, r.iterations)),
            "metrics": {k: list(r.extra[k]) for k in METRICS if k in r.extra},
            "status": r.status, "ms_per_step": 1e3 * r.timings["seconds_per_step"]}


# ----------------------------------------------------------------------------- linear-Gaussian
with tab_lin:

    @st.fragment
    def linear_panel():
        st.markdown(
            "A 2-D regression stream y = xᵀθ + ε, ε ~ N(0, R), prior N(0, I). **bong-lin-hess-fc** (natural "
            "parameters, CM-EKF) is exact here: its ellipse lies on the Kalman filter's and on the batch "
            "posterior of the first t observations. **bong-lin-hess-fc_mom** takes the same step in moment "
            "parameters (μ, Σ) and is not exact:")
        st.latex(r"\Sigma^{\rm mom}_t=\Sigma-\Sigma H^\top R^{-1}H\Sigma\quad\text{vs}\quad"
                 r"\Sigma^{\rm KF}_t=\Sigma-\Sigma H^\top (R+H\Sigma H^\top)^{-1}H\Sigma")
        st.markdown("It drops the HΣHᵀ of the innovation covariance, so with a small R it subtracts too much and "
                    "the variance turns negative (scalar case Σ = H = 1, R = 0.5: Kalman 1/3, fc_mom −1).")
        c1, c2, c3 = st.columns(3)
        with c1:
            T = ui.slider("Observations in the stream", "lT", 1, 30, 10)
        with c2:
            R = ui.log_slider("Noise variance R", "lR", 0.01, 10.0, 1.0)
        with c3:  # t runs to T; when T changes, t keeps its value where it can
            t = ui.slider("Show the belief after t observations", "lt", 0, T, min(int(st.session_state.get("lt", 3)), T))
        with ui.guard("linear-Gaussian stream"):
            d = _linear(ui.seed(), T, R, 1.0)
            beliefs = {
                "bong-fc (= CM-EKF)": (d["fc"][0][t], d["fc"][1][t]),
                "Kalman filter": (d["kf"][0][t], d["kf"][1][t]),
                "batch posterior": (d["batch"][0][t], d["batch"][1][t]),
                "bong-lin-hess-fc_mom": (d["fc_mom"][0][t], d["fc_mom"][1][t]),
            }
            ui.show(po.posterior_ellipses(beliefs, theta_true=d["theta"], title=f"2σ ellipses after t = {t}"), key="ell")
            st.caption(f"max |bong-fc − Kalman| over the whole stream: {d['max_gap_kf']:.1e}")
            ui.show(po.variance_paths(np.arange(T + 1), d["min_eig_fc"], d["min_eig_mom"],
                                      title="Smallest eigenvalue of Σ_t (below 0: not a covariance)"), key="eig")
            bad = np.where(~(d["min_eig_mom"] > 0))[0]
            if bad.size:
                st.warning(f"bong-lin-hess-fc_mom lost positive definiteness at t = {int(bad[0])}: its 'covariance' has a "
                           "negative (or non-finite) eigenvalue, so it has no ellipse from there on.")

    linear_panel()

# ----------------------------------------------------------------------------- conjugate
with tab_conj:

    @st.fragment
    def conj_panel():
        st.markdown(
            "With likelihood ∝ exp(θy − A(θ)) and conjugate prior ∝ exp(χθ − νA(θ)), the expected log-likelihood "
            "is linear in the mean parameters ρ = ∇Φ(ψ), so the natural gradient is exactly (y, 1) and one BONG "
            "step adds the sufficient statistics, like Bayes (Prop. 4.1).")
        st.latex(r"F_\psi^{-1}\nabla_\psi\,\mathbb{E}_{q_\psi}[\log p(y\mid\theta)]=\nabla_\rho\,\rho^\top\binom{y}{1}"
                 r"=\binom{y}{1},\qquad (\chi,\nu)\mapsto(\chi+y,\ \nu+1)")
        kind = ui.radio("Family", "ck", ["bernoulli", "poisson"], "bernoulli", horizontal=True)
        c1, c2, c3 = st.columns(3)
        with c1:
            nu = ui.slider("ν (prior sample size)", "cnu", 0.2, 20.0, 5.0, step=0.1)
        with c2:
            chi = ui.slider("χ (prior sufficient statistic)", "cchi", 0.1, 20.0, 2.0, step=0.1)
        with c3:
            y = ui.slider("observation y", "cy", 0, 1 if kind == "bernoulli" else 20, 1)
        st.caption("Bernoulli: logit θ with sigmoid(θ) ~ Beta(χ, ν − χ) (needs χ < ν). Poisson: log-rate θ with "
                   "e^θ ~ Gamma(shape χ, rate ν).")
        with ui.guard("conjugate update"):
            d = _conj(kind, float(chi), float(nu), float(y))
            st.dataframe(pd.DataFrame({
                "quantity": ["∇ψ E[log p]", "natural gradient F⁻¹∇ψ E[log p]", "BONG (χ, ν)", "Bayes (χ, ν)"],
                "value": [np.round(d["grad"], 6).tolist(), np.round(d["natgrad"], 10).tolist(),
                          np.round(d["psi_bong"], 10).tolist(), np.round(d["psi_bayes"], 10).tolist()]}),
                hide_index=True)
            ui.show(po.conjugate_densities(d["theta"], d["densities"], title="Prior, BONG step and Bayes posterior over θ"), key="cden")

    conj_panel()

# ----------------------------------------------------------------------------- digits
METRIC_NAMES = {"plug-in NLPD": "nlpd_plugin", "MC NLPD (S = 30)": "nlpd_mc", "linearized NLPD": "nlpd_lin",
                "error (plug-in)": "err_plugin", "error (MC)": "err_mc", "error (linearized)": "err_lin"}
# every cell the paper defines (4 x 4 x 5 with dlr-10 and dlr-1, minus mc-hess with dlr)
LIVE_METHODS = grid_names((10, 1), defined_only=True)

with tab_dig:
    st.markdown(
        "scikit-learn's 8×8 digits, one example per step (T ≤ 1000), test NLPD on 597 held-out images. This is a "
        "**scaled-down analogue** of the paper's MNIST experiment (T = 2000, a 57,722-parameter CNN), not a "
        "reproduction of its figures; the full-size experiment belongs to the CNN lab. Models: MLP 64-32-10 "
        "(P = 2,410), the paper's CNN on 8×8 inputs (P = 11,642) and softmax regression (P = 650).")
    metric_label = ui.select("Metric", "dmet", list(METRIC_NAMES), "plug-in NLPD")
    metric = METRIC_NAMES[metric_label]

    @st.fragment
    def precomputed_panel():
        st.subheader("Heavy configurations (precomputed)")
        data = _asset("grid")
        if data is None:
            st.info("No precomputed runs yet: run `python scripts/precompute_online.py grid`.")
            return
        with ui.guard("precomputed runs"):
            runs = data["runs"]
            held = {}
            for r in runs:
                held.setdefault(r["model"], []).append(r["label"])
            st.caption("Digits analogues of the paper's Fig. 1 (the four algorithms on dlr-10) and Fig. 2 (bong on "
                       "several covariance families), computed by `scripts/precompute_online.py` (seed 0, T = 1000; "
                       "α of bog and bbb tuned on the validation split). The precomputed runs are "
                       + "; ".join(f"**digits-{m}**: {', '.join(labs)}" for m, labs in held.items()) + ".")
            models = sorted(held)
            model = ui.radio("Model", "pmod", models, "mlp" if "mlp" in models else models[0], horizontal=True)
            sel = [r for r in runs if r["model"] == model]
            curves = {f"{r['label']} σ₀²={r['sigma0_2']:g}": (r["t"], [np.nan if v is None else v for v in r["metrics"][metric]])
                      for r in sel}
            ui.show(po.metric_curves(curves, metric_label, title=f"digits-{model}, seed 0"), key="pcurves")
            ui.show(po.runtime_bars([r["label"] for r in sel], [r["ms_per_step"] for r in sel],
                                    title="Wall time per example (this CPU, at precompute time)"), key="pbars")
            for r in sel:
                ui.report_status(r["status"], r["label"])

    precomputed_panel()

    @st.fragment
    def live_panel():
        st.subheader("Run it live")
        c1, c2 = st.columns([2, 1])
        with c1:
            methods = ui.multiselect("Methods", "lm", LIVE_METHODS, ["bong-lin-hess-diag", "bog-lin-hess-diag"])
        with c2:
            model = ui.radio("Model", "lmod", ["mlp", "cnn", "linear"], "mlp", horizontal=True)
        st.caption(f"All {len(LIVE_METHODS)} cells the paper defines can be chosen (dlr-10 and dlr-1; mc-hess is not defined "
                   "for dlr). Cells that cost O(P³) per step "
                   "(blr/bbb with a full covariance, bog-fc, mc-hess-fc; the paper's Table 3) run live only on the linear "
                   "model (softmax regression, P = 650); a full covariance is refused on the CNN. "
                   "mc-hess with a diagonal family estimates diag(G) with 100 Hutchinson probes per draw (slow).")
        c1, c2, c3 = st.columns(3)
        with c1:
            T = ui.slider("Examples T", "lTd", 25, 1000, 200, step=25)
        with c2:
            s2 = ui.log_slider("Prior variance σ₀²", "ls2", 1e-3, 10.0, 0.1)
        with c3:
            alpha = ui.log_slider("Learning rate α (blr, bog, bbb)", "lal", 1e-3, 1.0, 0.1)
        with ui.more("Inner iterations and samples"):
            I = ui.slider("Inner iterations I (blr, bbb)", "lI", 1, 10, 1)
            M = ui.slider("Monte Carlo samples M (mc-ef)", "lM", 1, 100, 10)
        config = (tuple(methods), model, int(T), float(s2), float(alpha), int(I), int(M), ui.seed())
        if st.button("Run", key="lrun", type="primary"):
            results = []
            bar = st.progress(0.0, text="streaming ...")
            for i, name in enumerate(methods):
                with ui.guard(name):
                    alg = name.split("-")[0]
                    res = _live(name, model, int(T), float(s2), None if alg == "bong" else float(alpha),
                                int(I) if alg in ("blr", "bbb") else 1, int(M), ui.seed(),
                                _progress=lambda f, i=i: bar.progress(min(1.0, (i + f) / max(len(methods), 1)),
                                                                      text=f"{name}: {f:.0%}"))
                    results.append(res)
            bar.empty()
            # kept for this session: a change of the Metric (outside this fragment) redraws the last run
            st.session_state["online_live_last"] = {"config": config, "model": model, "seed": ui.seed(),
                                                    "results": results}
        last = st.session_state.get("online_live_last")
        if last is None:
            st.caption("Press Run (each new setting compiles once, a few seconds; results are cached).")
            return
        if last["config"] != config:
            st.info("The settings changed since this live run; press Run to update it.")
        results = last["results"]
        for r in results:
            ui.report_status(r["status"], r["label"])
        if results:
            curves = {r["label"]: (r["t"], r["metrics"][metric]) for r in results}
            ui.show(po.metric_curves(curves, metric_label, title=f"digits-{last['model']}, live, seed {last['seed']}"),
                    key="lcurves")
            ui.show(po.runtime_bars([r["label"] for r in results], [r["ms_per_step"] for r in results],
                                    title="Wall time per example"), key="lbars")

    live_panel()

# ----------------------------------------------------------------------------- sweeps
with tab_sweep:

    @st.fragment
    def sweep_panel():
        st.markdown(
            "**Learning rate** (analogue of the paper's SARCOS Figs 9-11): blr, bog and bbb (lin-hess, diagonal, "
            "I = 1 and I = 10 inner iterations) for α ∈ {0.005, 0.01, 0.05, 0.1, 0.5}, against bong's fixed α = 1. "
            "With I = 1, blr is a bong step of length α and matches bong only as α → 1, and bbb is exactly bog; more "
            "inner iterations help at ten times the cost. bong has nothing to tune. **Prior variance** σ₀² of "
            "bong: too small underfits (the belief barely moves), too large makes the first steps so big that the "
            "network's units die (the NLPD returns to log 10 ≈ 2.30) or the run diverges (the paper's footnote 3).")
        lr, pv = _asset("lr"), _asset("prior")
        if lr is None or pv is None:
            st.info("No precomputed sweeps yet: run `python scripts/precompute_online.py lr prior`.")
            return
        with ui.guard("precomputed sweeps"):
            runs = lr["runs"]
            base = [r for r in runs if r["name"].startswith("bong")]
            series = {}
            for alg, I in sorted({(r["name"].split("-")[0], r["n_iter"]) for r in runs if not r["name"].startswith("bong")}):
                rs = sorted([r for r in runs if r["name"].startswith(alg) and r["n_iter"] == I], key=lambda r: r["alpha"])
                lab = f"{alg}-lin-hess-diag" + (f", I = {I}" if alg in ("blr", "bbb") else "")
                series[lab] = ([r["alpha"] for r in rs], [r["metrics"]["nlpd_plugin"][-1] for r in rs], [r["status"] for r in rs])
            baseline = ("bong (α = 1, untuned)", base[0]["metrics"]["nlpd_plugin"][-1]) if base else None
            ui.show(po.sweep_plot(series, "learning rate α", baseline, title="Final test NLPD after T = 1000, digits MLP"), key="lrs")
            series = {}
            for name in sorted({r["name"] for r in pv["runs"]}):
                rs = sorted([r for r in pv["runs"] if r["name"] == name], key=lambda r: r["sigma0_2"])
                series[name] = ([r["sigma0_2"] for r in rs], [r["metrics"]["nlpd_plugin"][-1] for r in rs], [r["status"] for r in rs])
            ui.show(po.sweep_plot(series, "prior variance σ₀²", title="Final test NLPD against the prior variance", cap=3.0), key="pvs")
            st.caption("Crosses at the top: runs that diverged (the runner stops and reports the step).")

    sweep_panel()
