"""Online learning: the Bayesian online natural gradient (BONG) of Jones, Chang & Murphy."""

import os

import numpy as np
import pandas as pd
import streamlit as st

import vilab_ui as ui
from vilab.online import conjugate as cj
from vilab.online import METRICS, grid_names
from vilab.online import digits as dg
from vilab.core import Job, as_key, run_batch
from vilab.online import batch as ob
from vilab.online.linear_gaussian import DRIFTS, drift_demo, linear_demo
from vilab import plots
from vilab.plots import online as po

ui.page(
    "Online learning",
    "Each example updates the Gaussian belief by one natural-gradient step (**BONG**, Jones, Chang & Murphy).",
)
L = plots.label
TABS = ["Linear-Gaussian stream", "Conjugate families", "Digits stream", "Learning-rate and prior sweeps",
        "Drifting stream", "Batch vs online"]
tab_lin, tab_conj, tab_dig, tab_sweep, tab_drift, tab_batch = ui.tabs(TABS, "tab")


def _bong_equations():
    """The BONG update, for the explain blocks."""
    st.markdown("**BONG** takes ONE natural-gradient step of unit length, started at the prior, on the expected "
                "log-likelihood alone (no KL term: the start point is the regulariser). For conjugate models this is "
                "exact Bayes; for linear-Gaussian models it is the Kalman filter. Its relatives need a learning rate "
                "α: **BLR** (natural gradient on the VI loss, I inner steps), **BOG** (plain gradient, one step), "
                "**BBB** (plain gradient on the VI loss). ψ: the belief's parameters, F_ψ their Fisher matrix; "
                "g_t, G_t: gradient and Hessian (or its approximation) of the log-likelihood of example t.")
    st.latex(r"\psi_t=\psi_{t|t-1}+F_{\psi_{t|t-1}}^{-1}\nabla_{\psi_{t|t-1}}\,"
             r"\mathbb{E}_{\theta\sim q_{\psi_{t|t-1}}}\!\left[\log p(y_t\mid x_t,\theta)\right]")
    st.latex(r"\text{Gaussian belief:}\quad \Sigma_t^{-1}=\Sigma_{t|t-1}^{-1}-G_t,\ \ \mu_t=\mu_{t|t-1}+\Sigma_t g_t")


@ui.cache_data(max_entries=64)
def _linear(seed, T, noise_var, prior_var):
    return linear_demo(as_key(seed), T, noise_var, prior_var)


# the drifting stream's own settings (said on the page): random-walk variance per step, observation noise
DRIFT_VAR, DRIFT_NOISE = 0.01, 0.25


@ui.cache_data(max_entries=64)
def _drift(seed, T, kind, gamma, Q):
    return drift_demo(as_key(seed), T, kind, gamma, Q, drift_var=DRIFT_VAR, noise_var=DRIFT_NOISE)


@ui.cache_data(max_entries=64)
def _conj(kind, chi, nu, y):
    return cj.conjugate_demo(kind, chi, nu, y)


@ui.cache_data(max_entries=32)
def _asset(name):
    return dg.load_asset(name)


@ui.cache_resource(ttl=None)  # the store bounds itself
def _live_store() -> ui.SharedStore:
    """Finished live runs, reused by every session of this server (bounded: 64 runs, 6 hours each) and kept on
    disk for a restarted server."""
    return ui.SharedStore(maxsize=64, ttl_s=6 * 3600, on_disk="live runs", source=__file__)


# one press of Run streams for at most this long, whatever was selected (a server's owner may change it)
LIVE_BUDGET_S = float(os.environ.get("VILAB_LIVE_BUDGET_S", "90"))


def _live(name, model, T, s2, alpha, I, M, seed, progress, max_time):
    """One live run's curves: from the shared store, or streamed now (``progress`` drives this session's
    bar, so the run is not a cached function: a cached function must not touch widgets)."""
    key = (name, model, T, s2, alpha, I, M, seed)
    hit = _live_store().get(key)
    if hit is not None:
        return hit
    r = dg.run_digits(name, model=model, T=T, sigma0_2=s2, alpha=alpha, n_iter=I, n_samples=M, key=as_key(seed),
                      checkpoints=[c for c in (0, 25, 50, 100, 200, 300, 500, 750, 1000) if c <= T], n_mc=30,
                      progress=progress, max_time=max_time)
    out = {"label": r.method, "t": list(map(int, r.iterations)),
           "metrics": {k: list(r.extra[k]) for k in METRICS if k in r.extra},
           "status": r.status, "ms_per_step": 1e3 * r.timings["seconds_per_step"]}
    if r.status != "max_time":  # a run cut short by the budget is shown, not kept
        _live_store()[key] = out
    return out


def _live_job(name, model, T, s2, alpha, I, M, seed):
    """The batch job of one live run: :func:`_live` with the settings its method takes (BONG no learning rate,
    only BLR and BBB inner iterations)."""
    alg = name.split("-")[0]
    return Job.of(name, lambda progress, max_time, **_: _live(
        name, model, T, s2, None if alg == "bong" else alpha, I if alg in ("blr", "bbb") else 1, M, seed, progress,
        max_time))


# ----------------------------------------------------------------------------- linear-Gaussian
FC, MOM = "bong-lin-hess-fc", "bong-lin-hess-fc_mom"

if tab_lin.open:
    with tab_lin:

        @st.fragment
        def linear_panel():
            ctl, fig = ui.columns()
            with ctl:
                T = ui.slider("Observations in the stream", "lT", 1, 30, 10)
                R = ui.log_slider("Noise variance R", "lR", 0.01, 10.0, 1.0)
                # t runs to T; when T changes, t keeps its value where it can
                t = ui.slider("Show the belief after t observations", "lt", 0, T,
                              min(int(st.session_state.get("lt", 3)), T))
            with fig, ui.guard("linear-Gaussian stream") as stream:
                d = _linear(ui.seed(), T, R, 1.0)
                beliefs = {FC: (d["fc"][0][t], d["fc"][1][t]), "kalman": (d["kf"][0][t], d["kf"][1][t]),
                           "batch": (d["batch"][0][t], d["batch"][1][t]), MOM: (d["fc_mom"][0][t], d["fc_mom"][1][t])}
                ui.show(ui.recipe(po.linear_stream, beliefs, np.arange(T + 1), {FC: d["min_eig_fc"], MOM: d["min_eig_mom"]},
                                  theta_true=d["theta"], t_now=t, height=400 if ui.lecture() else 430),
                        key="lin", main=True)
                bad = np.where(~(d["min_eig_mom"] > 0))[0]
            with ui.guard("linear-Gaussian notes"):
                if stream.ok:  # else the stream failed (said above): nothing to describe
                    if bad.size:
                        k = int(bad[0])
                        low = float(np.nanmin(d["min_eig_mom"])) if np.any(np.isfinite(d["min_eig_mom"])) else float("nan")
                        st.warning(f"{L(MOM)} lost positive definiteness at t = {k}: its 'covariance' has a negative (or "
                                   "non-finite) eigenvalue, so it has no ellipse from there on.")
                        fate = (f"its smallest eigenvalue crosses 0 at t = {k} (shaded region) and falls to {po.sci(low)} "
                                f"by t = {T}" if np.isfinite(low) else f"its smallest eigenvalue crosses 0 at t = {k}")
                    else:
                        fate = "with this noise level and stream it stays positive definite (try a smaller R)"
                    ui.notice(f"BONG in natural parameters (wide pale blue) lies exactly under the Kalman filter and the "
                              f"batch posterior (largest gap over the stream: {po.sci(d['max_gap_kf'], 2)}): for a linear-Gaussian "
                              "model one natural-gradient step from the prior is exact Bayes. The moment form takes the "
                              "same step in (μ, Σ) but drops HΣHᵀ from the innovation covariance, so it subtracts too "
                              f"much: {fate}. The right axis is symmetric-log: linear near 0, logarithmic beyond.")

                @ui.explain()
                def linear_gaussian():
                    st.markdown("A 2-D regression stream y = xᵀθ + ε, ε ~ N(0, R), prior N(0, I). BONG with the "
                                "linearised Hessian and a full covariance in natural parameters (the CM-EKF) is exact "
                                "here. The moment-form step and the Kalman filter differ by the innovation term:")
                    st.latex(r"\Sigma^{\rm mom}_t=\Sigma-\Sigma H^\top R^{-1}H\Sigma\quad\text{vs}\quad"
                             r"\Sigma^{\rm KF}_t=\Sigma-\Sigma H^\top (R+H\Sigma H^\top)^{-1}H\Sigma")
                    st.markdown("With a small R the moment form subtracts too much and the variance turns negative "
                                "(scalar case Σ = H = 1, R = 0.5: Kalman 1/3, moment form −1).")
                    _bong_equations()

        linear_panel()

# ----------------------------------------------------------------------------- conjugate
if tab_conj.open:
    with tab_conj:

        @st.fragment
        def conj_panel():
            ctl, fig = ui.columns()
            with ctl:
                kind = ui.radio("Family", "ck", ["bernoulli", "poisson"], "bernoulli", horizontal=True,
                                format_func=str.capitalize)
                nu = ui.slider("ν (prior sample size)", "cnu", 0.2, 20.0, 5.0, step=0.1)
                chi = ui.slider("χ (prior sufficient statistic)", "cchi", 0.1, 20.0, 2.0, step=0.1)
                y = ui.slider("observation y", "cy", 0, 1 if kind == "bernoulli" else 20, 1)
            with fig, ui.guard("conjugate update") as update:
                if kind == "bernoulli" and not chi < nu:
                    raise ValueError(f"the Bernoulli family's prior Beta(χ, ν − χ) needs χ below ν; here χ = {chi:g} "
                                     f"and ν = {nu:g}. Move χ below ν (or ν above χ).")
                d = _conj(kind, float(chi), float(nu), float(y))
                ui.show(ui.recipe(po.conjugate_densities, d["theta"], d["densities"],
                                  title="Prior, one BONG step and the Bayes posterior over θ"),
                        key="cden", main=True)
                gap = float(np.max(np.abs(np.asarray(d["psi_bong"]) - np.asarray(d["psi_bayes"]))))
                ui.notice(f"The BONG step (wide pale blue) and the Bayes posterior (black dashes) are the same curve: "
                          f"one step from (χ, ν) = ({chi:g}, {nu:g}) lands on ({d['psi_bong'][0]:.4g}, "
                          f"{d['psi_bong'][1]:.4g}) = (χ + y, ν + 1), largest difference {po.sci(gap, 2)}. The natural "
                          "gradient of the expected log-likelihood is exactly (y, 1), because that expectation is "
                          "linear in the mean parameters.")
            with ui.guard("conjugate table"):
                if update.ok:  # else the update failed (said above): no numbers to list
                    ui.table(pd.DataFrame({
                        "quantity": ["∇ψ E[log p]", "natural gradient F⁻¹∇ψ E[log p]", "BONG (χ, ν)", "Bayes (χ, ν)"],
                        "value": [", ".join(f"{v:.4g}" for v in np.ravel(d[k]))
                                  for k in ("grad", "natgrad", "psi_bong", "psi_bayes")]}), hide_index=True)
                st.caption("Bernoulli: logit θ with sigmoid(θ) ~ Beta(χ, ν − χ) (needs χ < ν). Poisson: log-rate θ "
                           "with e^θ ~ Gamma(shape χ, rate ν).")

                @ui.explain()
                def conjugate_models():
                    st.markdown("With likelihood ∝ exp(θy − A(θ)) and conjugate prior ∝ exp(χθ − νA(θ)), the expected "
                                "log-likelihood is linear in the mean parameters ρ = ∇Φ(ψ), so the natural gradient is "
                                "exactly (y, 1) and one BONG step adds the sufficient statistics, like Bayes (Prop. 4.1).")
                    st.latex(r"F_\psi^{-1}\nabla_\psi\,\mathbb{E}_{q_\psi}[\log p(y\mid\theta)]=\nabla_\rho\,"
                             r"\rho^\top\binom{y}{1}=\binom{y}{1},\qquad (\chi,\nu)\mapsto(\chi+y,\ \nu+1)")

        conj_panel()

# ----------------------------------------------------------------------------- digits
METRIC_NAMES = {"plug-in NLPD": "nlpd_plugin", "MC NLPD (S = 30)": "nlpd_mc", "linearized NLPD": "nlpd_lin",
                "error (plug-in)": "err_plugin", "error (MC)": "err_mc", "error (linearized)": "err_lin"}
# every cell the paper defines (4 x 4 x 5 with dlr-10 and dlr-1, minus mc-hess with dlr)
LIVE_METHODS = grid_names((10, 1), defined_only=True)

VIEWS = {"the four algorithms": lambda n: n.endswith("dlr-10"), "BONG's covariance families": lambda n: n.startswith("bong")}


def _split(run_label: str) -> tuple[str, str]:
    """(grid code, settings) of a run's label such as "bbb-lin-hess-diag (α=1, I=1)"."""
    code, _, rest = run_label.partition(" (")
    return code, rest.rstrip(")")


def _run_settings(r):
    """The settings of a precomputed run (σ₀², α, I, M), for its hover text and the caption."""
    extra = r["label"][len(r["name"]):].strip().strip("()")
    return f"σ₀² = {r['sigma0_2']:g}{', ' + extra if extra else ''}"


if tab_dig.open:
    with tab_dig:
        data = _asset("grid")
        ctl, fig = ui.columns()
        with ctl:
            metric_label = ui.select("Metric", "dmet", list(METRIC_NAMES), "plug-in NLPD")
            metric = METRIC_NAMES[metric_label]
            if data is not None:
                models = sorted({r["model"] for r in data["runs"]})
                pmodel = ui.radio("Model", "pmod", models, "mlp" if "mlp" in models else models[0], horizontal=True,
                                  format_func=lambda m: {"mlp": "MLP", "cnn": "CNN", "linear": "softmax"}.get(m, m))
                view = ui.radio("Show", "pview", list(VIEWS), list(VIEWS)[0])
        with fig:
            if data is None:
                st.info("No precomputed runs yet: run `python scripts/precompute_online.py grid`.")
            else:
                with ui.guard("precomputed runs") as shown_runs:
                    sel = [r for r in data["runs"] if r["model"] == pmodel]
                    sel = [r for r in sel if VIEWS[view](r["name"])] or sel
                    short, common = po.short_labels([r["name"] for r in sel])
                    names = {short[r["name"]]: r for r in sel}
                    curves = {n: (r["t"], [np.nan if v is None else v for v in r["metrics"][metric]])
                              for n, r in names.items()}
                    ui.show(ui.recipe(po.metric_curves, curves, metric_label, codes={n: r["name"] for n, r in names.items()},
                                      notes={n: _run_settings(r) for n, r in names.items()},
                                      title=f"digits, {pmodel.upper()}" + (f": {common}" if common else "")),
                            key="pcurves", main=True)
        if data is not None and shown_runs.ok:  # else the runs failed (said above): no notes on them
            with ui.guard("precomputed notes"):
                final = {n: v[-1] for n, (_, v) in curves.items() if len(v) and np.isfinite(v[-1])}
                if final:
                    best = min(final, key=final.get)
                    ui.notice(f"Lower is better. After {sel[0]['t'][-1]} examples the best {metric_label} here is "
                              f"{final[best]:.3g} ({best}). BONG needs no learning rate: one unit natural-gradient "
                              "step per example; BLR, BOG and BBB need a tuned α (here tuned on a validation split), "
                              "and BLR and BBB take several inner iterations per example (see the wall times below). "
                              "Colour: algorithm; dash: covariance family; marker: curvature approximation.")
                st.caption("Settings of these runs: " + "; ".join(f"{n}: {_run_settings(r)}" for n, r in names.items())
                           + ". α of BLR, BOG and BBB tuned on the validation split.")
                for r in sel:
                    ui.report_status(r["status"], L(r["name"]))
                ui.show(ui.recipe(po.runtime_bars, [short[r["name"]] for r in sel], [r["ms_per_step"] for r in sel],
                                  title="Wall time per example (this CPU, at precompute time)",
                                  codes=[r["name"] for r in sel]), key="pbars")

        @ui.explain("About this experiment")
        def about_experiment():
            st.markdown(
                "scikit-learn's 8×8 digits, one example per step (T ≤ 1000), test NLPD on 597 held-out images. This is "
                "a **scaled-down analogue** of the paper's MNIST experiment (T = 2000, a 57,722-parameter CNN), not a "
                "reproduction of its figures; the full-size experiment belongs to the CNN lab. Models: MLP 64-32-10 "
                "(P = 2,410 weights), the paper's CNN on 8×8 inputs (P = 11,642) and softmax regression (P = 650). "
                "The precomputed runs (seed 0, T = 1000) are digits analogues of the paper's Fig. 1 (the four "
                "algorithms on a diagonal + rank-10 covariance) and Fig. 2 (BONG on several covariance families).")
            _bong_equations()

        @st.fragment
        def live_panel():
            st.subheader("Run it live")
            c1, c2 = st.columns([2, 1])
            with c1:
                methods = ui.multiselect("Methods", "lm", LIVE_METHODS, ["bong-lin-hess-diag", "bog-lin-hess-diag"],
                                         format_func=L)
            with c2:
                model = ui.radio("Model", "lmod", ["mlp", "cnn", "linear"], "mlp", horizontal=True,
                                 format_func=lambda m: {"mlp": "MLP", "cnn": "CNN", "linear": "softmax"}[m])
            c1, c2, c3 = st.columns(3)
            with c1:
                T = ui.slider("Examples T", "lTd", 25, 1000, 200, step=25)
            with c2:
                s2 = ui.log_slider("Prior variance σ₀²", "ls2", 1e-3, 10.0, 0.1)
            with c3:
                alpha = ui.log_slider("Learning rate α (BLR, BOG, BBB)", "lal", 1e-3, 1.0, 0.1)
            with ui.more("Inner iterations and samples"):
                I = ui.slider("Inner iterations I (BLR, BBB)", "lI", 1, 10, 1)
                M = ui.slider("Monte Carlo samples M (sampled empirical Fisher)", "lM", 1, 100, 10)
            st.caption(f"All {len(LIVE_METHODS)} cells the paper defines can be chosen. Cells that cost O(P³) per "
                       "step (BLR and BBB with a full covariance, BOG with a full covariance, the sampled Hessian with a "
                       "full covariance; the paper's Table 3) run live only on softmax regression (P = 650); a full "
                       "covariance is refused on the CNN. The sampled Hessian with a diagonal family uses 100 "
                       "Hutchinson probes per draw (slow).")
            config = (tuple(methods), model, int(T), float(s2), float(alpha), int(I), int(M), ui.seed())
            b1, b2, _ = st.columns([1, 1, 5])
            run = b1.button("Run", key="lrun", type="primary", disabled=not methods)
            b2.button("Stop", key="lstop", help="Ends the streaming; the methods that finished are reused by the next Run.")
            if run:
                bar = st.progress(0.0, text="streaming ...")
                out = run_batch([_live_job(name, model, int(T), float(s2), float(alpha), int(I), int(M), ui.seed())
                                 for name in methods], time_budget_s=LIVE_BUDGET_S,
                                progress=lambda p: bar.progress(p.fraction, text=f"{L(p.name)}: {p.job_fraction:.0%}"))
                bar.empty()
                for name in out.errors:  # a method that failed warns; the others are shown
                    with ui.guard(L(name)):
                        out.trace(name)
                results, skipped = list(out.traces.values()), [L(name) for name in out.not_run]
                if skipped or any(r["status"] == "max_time" for r in results):
                    st.warning(f"One press of Run streams for at most {LIVE_BUDGET_S:g} seconds: "
                               + (f"{len(skipped)} method(s) did not run ({', '.join(skipped)}). " if skipped else "")
                               + "Choose fewer methods or a shorter stream.")
                # kept for this session: a change of the Metric (outside this fragment) redraws the last run
                st.session_state["online_live_last"] = {"config": config, "model": model, "seed": ui.seed(),
                                                        "results": results}
            last = st.session_state.get("online_live_last")
            if last is None:
                st.caption("Press Run (each new setting compiles once, a few seconds; results are cached; one press "
                           f"streams for at most {LIVE_BUDGET_S:g} seconds).")
                return
            if last["config"] != config:
                st.info("The settings changed since this live run; press Run to update it.")
            results = last["results"]
            for r in results:
                code, how = _split(r["label"])
                ui.report_status(r["status"], L(code) + (f" ({how})" if how else ""))
            if results:
                codes = [_split(r["label"])[0] for r in results]
                short, common = po.short_labels(codes)
                curves = {short[c]: (r["t"], r["metrics"][metric]) for c, r in zip(codes, results)}
                ui.show(ui.recipe(po.metric_curves, curves, metric_label, codes={short[c]: c for c in codes},
                                  notes={short[c]: _split(r["label"])[1] for c, r in zip(codes, results)},
                                  title=f"digits, {last['model'].upper()}, live, seed {last['seed']}"
                                               + (f": {common}" if common else "")), key="lcurves")
                ui.show(ui.recipe(po.runtime_bars, [short[c] for c in codes], [r["ms_per_step"] for r in results],
                                  title="Wall time per example", codes=codes), key="lbars")

        live_panel()

# ----------------------------------------------------------------------------- sweeps
if tab_sweep.open:
    with tab_sweep:
        lr, pv = _asset("lr"), _asset("prior")
        if lr is None or pv is None:
            st.info("No precomputed sweeps yet: run `python scripts/precompute_online.py lr prior`.")
        else:
            ctl, fig = ui.columns()
            with ctl:
                sweep = ui.radio("Sweep", "sw", ["learning rate α", "prior variance σ₀²"], "learning rate α")
                st.caption("Digits MLP, T = 1000 examples, seed 0. Crosses at the top: runs that diverged (the "
                           "runner stops and reports the step).")
            with fig, ui.guard("precomputed sweeps"):
                if sweep == "learning rate α":
                    runs = lr["runs"]
                    base = [r for r in runs if r["name"].startswith("bong")]
                    series, codes, more_iters = {}, {}, []
                    short, common = po.short_labels([r["name"] for r in runs if not r["name"].startswith("bong")],
                                                    keep_first=True)
                    for alg, I in sorted({(r["name"].split("-")[0], r["n_iter"]) for r in runs
                                          if not r["name"].startswith("bong")}):
                        rs = sorted([r for r in runs if r["name"].startswith(alg) and r["n_iter"] == I],
                                    key=lambda r: r["alpha"])
                        lab = short[rs[0]["name"]] + (f", I = {I}" if alg in ("blr", "bbb") else "")
                        codes[lab] = rs[0]["name"]
                        if I > 1:
                            more_iters.append(lab)
                        series[lab] = ([r["alpha"] for r in rs], [r["metrics"]["nlpd_plugin"][-1] for r in rs],
                                       [r["status"] for r in rs])
                    bong = base[0]["metrics"]["nlpd_plugin"][-1] if base else None
                    baseline = ("BONG (α = 1, nothing to tune)", bong) if base else None
                    ui.show(ui.recipe(po.sweep_plot, series, "learning rate α", baseline, codes=codes, open_markers=more_iters,
                                      title="Final test NLPD against α" + (f": {common}" if common else "")),
                            key="lrs", main=True)
                    best = min(((y, lab, x) for lab, (xs, ys, st_) in series.items() for x, y, s in zip(xs, ys, st_)
                                if y is not None and np.isfinite(y) and not s.startswith("diverged")), default=None)
                    note = (f"The best tuned run ({best[1]}, α = {best[2]:g}) reaches {best[0]:.3g}"
                            + (f"; BONG, untuned, {bong:.3g}" if bong is not None else "") + ". ") if best else ""
                    ui.notice(note + "With I = 1, BLR is a BONG step of length α and matches BONG only as α → 1, and "
                              "BBB is exactly BOG (its wide line lies under BOG's); more inner iterations (open markers) help at "
                              "ten times the cost. "
                              "Too large an α diverges.")
                else:
                    series, codes = {}, {}
                    short, common = po.short_labels(sorted({r["name"] for r in pv["runs"]}))
                    for name in sorted({r["name"] for r in pv["runs"]}):
                        rs = sorted([r for r in pv["runs"] if r["name"] == name], key=lambda r: r["sigma0_2"])
                        codes[short[name]] = name
                        series[short[name]] = ([r["sigma0_2"] for r in rs],
                                               [r["metrics"]["nlpd_plugin"][-1] for r in rs], [r["status"] for r in rs])
                    ui.show(ui.recipe(po.sweep_plot, series, "prior variance σ₀²", codes=codes, cap=3.0,
                                      title=f"Final test NLPD of {common or 'BONG'} against σ₀²"), key="pvs",
                            main=True)
                    ui.notice("BONG's only setting is the prior variance σ₀². Too small underfits (the belief barely "
                              "moves from the prior); too large makes the first steps so big that the network's units "
                              "die (the NLPD returns to log 10 ≈ 2.30, chance) or the run diverges (the paper's "
                              "footnote 3).")

            @ui.explain()
            def learning_rate():
                st.markdown("**Learning rate** (analogue of the paper's SARCOS Figs 9-11): BLR, BOG and BBB (linearised "
                            "Hessian, diagonal covariance, I = 1 and I = 10 inner iterations) for α ∈ {0.005, 0.01, "
                            "0.05, 0.1, 0.5}, against BONG's fixed α = 1. **Prior variance** σ₀² of BONG on two "
                            "covariance families.")
                _bong_equations()

# ----------------------------------------------------------------------------- drifting stream
if tab_drift.open:
    with tab_drift:

        @st.fragment
        def drift_panel():
            ctl, fig = ui.columns()
            with ctl:
                kind = ui.radio("The true parameter", "dk", list(DRIFTS), "random walk")
                gamma = ui.slider("γ (dynamics factor)", "dgam", 0.8, 1.0, 1.0, step=0.005)
                Q = ui.log_slider("Q (process noise: Q·I per step)", "dQ", 1e-4, 1.0, 0.01)
                T = ui.slider("Observations in the stream", "dT", 20, 400, 200, step=10)
            with fig, ui.guard("drifting stream"):
                d = _drift(ui.seed(), T, kind, float(gamma), float(Q))
                names = ("BONG, static", "BONG, predict step")
                ui.show(ui.recipe(po.drift_tracking, d["t"], d["theta"],
                                  (d["static"]["mean"], d["static"]["sd"], d["static"]["error"]),
                                  (d["dynamic"]["mean"], d["dynamic"]["sd"], d["dynamic"]["error"]),
                                  names=names, switch_at=d["switch_at"],
                                  title=f"True θ: {kind}; predict step γ = {gamma:g}, Q = {Q:g}",
                                  height=400 if ui.lecture() else 470),
                        key="drift", main=True)
                for nm, part in zip(names, ("static", "dynamic")):
                    ui.report_status(d[part]["status"], nm)
                s0, s1 = d["summary"]["static"], d["summary"]["dynamic"]
                when = (f"after the jump at t = {d['switch_at']}" if d["switch_at"] is not None
                        else "as θ keeps wandering")
                ratio = d["summary"]["ratio"]
                verdict = (f"{ratio:.1f} times closer" if ratio >= 1.05 else
                           "no closer" if ratio > 0.95 else f"{1 / ratio:.1f} times farther")
                extra = ""
                if kind == "random walk" and gamma == 1.0 and abs(Q - DRIFT_VAR) < 1e-12:
                    extra = (f" These are the stream's own dynamics (drift variance {DRIFT_VAR:g} per step), so this "
                             "BONG is exact Bayes here: the Kalman filter of the drifting model.")
                elif gamma < 1.0:
                    extra = (f" γ = {gamma:g} < 1 also pulls the mean toward 0 before every example, so with a small Q "
                             "the estimate lags behind a θ far from 0.")
                ui.notice(f"Static BONG's standard deviation shrinks like 1/√t (at t = {T}: {s0['final_sd']:.3g}), so "
                          f"late examples barely move it {when}: over the second half of the stream its mean distance to the "
                          f"true θ is {s0['mean_error_last_half']:.3g}. The predict step adds Q to the covariance "
                          f"before every example (standard deviation at t = {T}: {s1['final_sd']:.3g}), so each new "
                          f"example still counts: mean distance {s1['mean_error_last_half']:.3g}, {verdict}."
                          + extra)
                st.latex(r"\theta_t\sim\mathcal N(\gamma\,\theta_{t-1},\,Q):\qquad \mu_{t|t-1}=\gamma\,\mu_{t-1},"
                         r"\qquad \Sigma_{t|t-1}=\gamma^2\,\Sigma_{t-1}+Q")
            with ui.guard("drifting stream notes"):
                @ui.explain()
                def drifting_stream():
                    st.markdown(f"yₜ = xₜᵀθₜ + εₜ with xₜ ~ N(0, I), εₜ ~ N(0, {DRIFT_NOISE:g}), prior N(0, I). "
                                f"**Random walk**: θₜ = θₜ₋₁ + N(0, {DRIFT_VAR:g}·I). **Sudden switch**: θ jumps "
                                "to −θ halfway through the stream. Both filters are BONG with the linearised Hessian "
                                "and a full covariance, which is exact for a linear-Gaussian model.")
                    st.markdown("The paper assumes the parameters do not move: its predict step is the identity, "
                                "the belief before example t is the belief after example t − 1 (γ = 1, Q = 0). Then "
                                "the belief after t examples is the batch posterior of all of them, old and new "
                                "weighted alike, and its variance shrinks like "
                                "1/t. The random walk θₜ ~ N(γθₜ₋₁, Q) (the paper's Sec. 3, and its authors' code) "
                                "widens the belief before every update, so the update sees a prior that is less sure "
                                "and the newest examples weigh more: old data are forgotten at a rate set by Q "
                                "(and γ). Too small a Q tracks slowly; too large a Q makes the estimate noisy (it "
                                "trusts each single example too much).")
                    _bong_equations()

        drift_panel()

# ----------------------------------------------------------------------------- batch vs online
BATCH_MODEL_NAMES = {"logistic": "logistic regression (not conjugate)", "linear-Gaussian": "linear-Gaussian (conjugate)"}
RUNTIME_FAMILY_NAMES = {"fc": "full covariance", "diag": "diagonal", "dlr-10": "diagonal + low rank (rank 10)"}
RUNTIME_APPROX_NAMES = {"lin-hess": "linearised Hessian", "mc-ef": "sampled empirical Fisher (M = 10)"}
# hidden widths h of the MLP 10-h-1 (P = 12 h + 1) timed per family; the full covariance stops earlier (O(P^3) cells)
RUNTIME_WIDTHS = {"fc": [2, 5, 10, 20, 40], "diag": [5, 20, 80, 320, 1280], "dlr-10": [5, 20, 80, 320, 1280]}
RUNTIME_BUDGET_S = float(os.environ.get("VILAB_RUNTIME_BUDGET_S", "60"))


@ui.cache_data(max_entries=64)
def _batch_online(seed, kind, T, lam, alpha, n_passes, damping):
    return ob.batch_vs_online(as_key(seed), kind, T, lam, alpha, n_passes, damping)


if tab_batch.open:
    with tab_batch:

        @st.fragment
        def batch_panel():
            ctl, fig = ui.columns()
            with ctl:
                kind = ui.radio("Model", "bm", list(BATCH_MODEL_NAMES), "logistic", format_func=BATCH_MODEL_NAMES.get)
                alpha = ui.log_slider("Learning rate α of batch BLR", "bal", 0.01, 1.0, 0.3)
                n_passes = ui.slider("Passes of batch BLR over the data", "bpass", 5, 200, 40, step=5)
                T = ui.slider("Examples in the stream", "bT", 10, 200, 50, step=10)
                lam = ui.log_slider("Prior precision λ (prior N(0, λ⁻¹I))", "blam", 0.01, 100.0, 1.0)
                with ui.more("Implicit RVGA solver"):
                    damping = ui.slider("Damping β of the fixed-point iteration", "bbeta", 0.1, 1.0, 0.5, step=0.05)
            with fig, ui.guard("batch vs online"):
                d = _batch_online(ui.seed(), kind, int(T), float(lam), float(alpha), int(n_passes), float(damping))
                ref = "the exact posterior" if kind == "linear-Gaussian" else "the batch answer"
                ui.show(ui.recipe(po.batch_vs_online, (d["batch"]["evals"], d["batch"]["error"]),
                                  (d["bong"]["evals"], d["bong"]["error"]),
                                  (d["implicit"]["evals"], d["implicit"]["error"]),
                                  (np.arange(1, T + 1), d["gap"]), reference=ref,
                                  title=f"{BATCH_MODEL_NAMES[kind]}, T = {T}, λ = {lam:g}",
                                  height=400 if ui.lecture() else 450),
                        key="bvo", main=True)
                for nm, part in (("batch BLR", "batch"), ("implicit RVGA", "implicit")):
                    ui.report_status(d["status"][part], nm)
                eb = d["batch"]["error"]
                k_close = next((i for i, e in enumerate(eb) if np.isfinite(e) and e <= 1e-3 * max(eb[0], 1e-300)), None)
                passes = (f"it needed {k_close} passes ({k_close * T} gradient evaluations) to get 1000 times closer than "
                          "its start" if k_close else f"after {n_passes} passes it is still {po.sci(eb[-1])} away "
                          "(more passes or a larger α)")
                if kind == "linear-Gaussian":
                    tail = (f"In this conjugate model BONG's one pass already lands on the exact posterior (distance "
                            f"{po.sci(d['bong']['error'][-1], 2)}), and the implicit RVGA takes the same steps: the "
                            f"gap on the right stays at round-off ({po.sci(d['gap_final'], 2)}).")
                else:
                    tail = (f"For logistic regression the curvature moves between prior and posterior, so the explicit "
                            f"step (gradient at the prior) and the implicit one (gradient at the posterior) differ: "
                            f"{po.sci(d['gap_final'], 2)} after the last example. Both online answers lie "
                            f"{po.sci(d['bong']['error'][-1], 2)} (BONG) and {po.sci(d['implicit']['error'][-1], 2)} "
                            "(implicit) from the batch answer: one pass over the stream is not the batch fit. A larger λ "
                            "(tighter prior) shrinks the gap.")
                ui.notice(f"Batch BLR revisits all {T} examples every pass: {passes}. BONG sees each example once, one "
                          f"natural-gradient step each ({T} evaluations in all); the implicit RVGA solves a fixed point per "
                          f"example ({np.mean(d['implicit']['n_inner']):.0f} iterations on average). " + tail)
            with ui.guard("batch vs online notes"):
                @ui.explain()
                def batch_vs_online():
                    st.markdown("**Batch BLR** (the paper's App. E.6) is the BLR update with the online prior replaced "
                                "by the fixed prior N(0, λ⁻¹I), run over the whole data set again and again; g and G "
                                "are the expected gradient and Hessian of the log-likelihood of all examples. With one "
                                "Monte Carlo draw it is VOGN (empirical Fisher) or VON (Hessian).")
                    st.latex(r"\mu_i=\mu_{i-1}+\alpha\,\Sigma_i\,(g_i-\lambda\mu_{i-1}),\qquad "
                             r"\Sigma_i^{-1}=(1-\alpha)\,\Sigma_{i-1}^{-1}+\alpha\,(\lambda I-G_i)")
                    st.markdown("**BONG** is the explicit step: the gradient of the expected log-likelihood is taken at "
                                "the prior ψ_{t|t−1}. The **implicit RVGA** (exact online variational Bayes) takes it at "
                                "the posterior ψ_t, so ψ_t appears on both sides; the page solves it by damped "
                                "fixed-point iteration (BLR steps of size β toward the online prior, until nothing moves).")
                    st.latex(r"\text{explicit (BONG):}\ \psi_t=\psi_{t|t-1}-\nabla_{\rho_{t|t-1}}L_t(\psi_{t|t-1})"
                             r"\qquad\text{implicit:}\ \psi_t=\psi_{t|t-1}-\nabla_{\rho_t}L_t(\psi_t)")
                    st.markdown("All three use the linearised Hessian and a full covariance. For a linear-Gaussian model "
                                "the gradient is linear in the mean and the Hessian constant, so the two online steps "
                                "coincide and both are exact Bayes; for logistic regression they differ by how much "
                                "the curvature changes between prior and posterior.")
                    _bong_equations()

        batch_panel()

        with st.expander("Running time against model size (measured on this machine)"):
            st.caption("The paper's Fig. 4 times one update against the number of parameters P on a synthetic "
                       "regression (here y = MLP₂₀₋₂₀₋₁(x) + noise, x in R¹⁰, learned by an MLP 10-h-1). Press "
                       "Measure to time it on the machine that serves this page: the numbers are this server's, not "
                       "the paper's (which used a GPU). Each update is compiled first, then timed 3 times (median). "
                       "Dotted: the paper's complexity orders (its Table 3).")
            c1, c2, c3 = st.columns(3)
            with c1:
                rfam = ui.radio("Covariance family", "rfam", list(RUNTIME_FAMILY_NAMES), "diag",
                                format_func=RUNTIME_FAMILY_NAMES.get)
            with c2:
                rapp = ui.radio("Curvature", "rapp", list(RUNTIME_APPROX_NAMES), "lin-hess",
                                format_func=RUNTIME_APPROX_NAMES.get)
            with c3:
                rn = ui.slider("Model sizes", "rn", 2, 5, 4)
            algs = ui.multiselect("Algorithms", "ralg", ["bong", "blr", "bog", "bbb"], ["bong", "blr", "bog", "bbb"],
                                  format_func=str.upper)
            widths = RUNTIME_WIDTHS[rfam][: int(rn)]
            names = [f"{a}-{rapp}-{rfam}" for a in algs]
            config = (tuple(names), tuple(widths))
            st.caption("Sizes P = " + ", ".join(str(12 * w + 1) for w in widths) + ". BLR and BBB use I = 1, α = 0.1.")
            if st.button("Measure", key="rrun", disabled=not names):
                with ui.guard("runtime measurement"):
                    bar = st.progress(0.0, text="compiling and timing ...")
                    r = ob.runtime_vs_size(names, widths, key=as_key(ui.seed()), n_samples=10,
                                           max_seconds=RUNTIME_BUDGET_S, progress=lambda f: bar.progress(min(f, 1.0)))
                    bar.empty()
                    st.session_state["online_runtime_last"] = {"config": config, "result": r}
                    if any(not np.all(np.isfinite(v)) for v in r["seconds"].values()):
                        st.warning(f"One press of Measure times for at most {RUNTIME_BUDGET_S:g} seconds: the largest "
                                   "sizes were left out. Choose fewer sizes or algorithms.")
            last = st.session_state.get("online_runtime_last")
            if last is not None:
                with ui.guard("runtime figure"):
                    r = last["result"]
                    if last["config"] != config:
                        st.info("The settings changed since this measurement; press Measure to update it.")
                    ui.show(ui.recipe(po.runtime_vs_size, r["P"], r["seconds"], r["order"],
                                      title=f"One update, measured on this server ({r['device']})",
                                      height=380 if ui.lecture() else 420), key="rfig")
                    ui.notice("Each line is one update of one method, measured here. The dotted lines are slopes, not "
                              "measurements: P (diagonal and low-rank families), P² (BONG and BOG with a full "
                              "covariance) and P³ (BLR and BBB with a full covariance must invert the prior's "
                              "precision). Small models are dominated by fixed overheads, so the slopes show only at "
                              "larger P.")
