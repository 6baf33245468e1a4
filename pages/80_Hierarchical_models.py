"""Hierarchical models on real data: sparse Gaussian VI for GLMMs and stochastic volatility vs NUTS."""

from functools import partial

import jax
import numpy as np
import pandas as pd
import streamlit as st

import vilab_ui as ui
from vilab.core import Job, as_key, run_batch
from vilab.family import block as fam
from vilab.hierarchical.fit import CHEN_T0, METHODS, available_methods, refit, sample_q
from vilab.targets.metrics import BANDWIDTH_NOTE, m_star, mode_error, sd_ratio
from vilab.hierarchical.models import MODELS, get_model, sparsity_patterns
from vilab.targets.reference import load_reference
from vilab.models import deepglm
from vilab import plots
from vilab.plots import deepglm as dplots
from vilab.plots import hierarchical as hplots

ui.page(
    "Hierarchical models",
    "Sparse Gaussian variational inference on real data (random effects, stochastic volatility), against MCMC.",
)
DATA = {v[0]: k for k, v in MODELS.items()}
ctl, fig_col = ui.columns(1.5, 3)  # room for the data name and the method chips
with ctl:
    data_label = ui.radio("Data and model", "data", list(DATA), list(DATA)[0])  # long names wrap in a radio
key = DATA[data_label]
model = avail = None
with ui.guard("loading the model"):
    model = get_model(key)
    avail = available_methods(model)
if model is None or avail is None:
    st.stop()
labels = {METHODS[m]["label"]: m for m, why in avail.items() if not why}
with ctl:
    default_methods = ["SNNGM", "KLD"] + (["SDb"] if model.ell == 0 else [])
    chosen = ui.multiselect("Methods", f"m_{key}", list(labels), default_methods,
                            help="Tan (2025): SNNGM, NAdam (natural gradients), Adam, PGA, VOGN. "
                                 "Chen, Nott & Tan: KLD, SDb, FDb (sparse), FDr, SDr, BaM (dense). On the "
                                 "stochastic-volatility model SDb and FDb take about a minute.")
    n_iter = ui.slider("Maximum iterations", "iters", 2000, 60000, 40000, step=1000,
                       help="The papers: up to 60,000 (epilepsy) and 30,000 (stochastic volatility).")
    use_rule = ui.toggle("Stop when the ELBO levels off", "rule", True,
                         help="Chen et al.'s rule: stop when the slope of the last five 1000-iteration ELBO averages "
                              "is below 0.01.")
    with ui.more():
        alpha0 = ui.log_slider("SNNGM step size α₀", "a0", 1e-3, 1e-1, 3e-2,
                               help="α = α₀ √(number of parameters)")
        batch = ui.slider("Batch size B (FDb, SDb)", f"B_{key}", 2, 20, 10 if model.ell == 1 else 5,  # one per model
                          help="The papers: 5 for the GLMMs, 10 for stochastic volatility.")
        budget = ui.slider("Time budget per method (s)", "budget", 5, 120, 60,
                           help="A run stops here and says so (FDr, SDr and BaM ignore it).")
st.caption("Further down: **deep GLMs**, a neural network whose shrinkage prior finds the inputs that matter.")
missing = [f"{METHODS[m]['label']} ({why})" for m, why in avail.items() if why]
if missing:
    st.caption("Not offered for this model: " + "; ".join(missing) + ".")


@ui.cache_resource()
def _reference(k):
    return load_reference(k)


@ui.cache_resource(ttl=None)  # the store bounds itself
def _longest() -> ui.SharedStore:
    """The longest run of each method and settings so far, shared by every session and kept on disk (a
    restarted server continues it): a new maximum of iterations continues it or cuts it
    (vilab.hierarchical.fit.refit gives the numbers of a new run)."""
    return ui.SharedStore(maxsize=64, ttl_s=6 * 3600, on_disk="longest run", source=__file__)


def _same(k, method, a0, B, rule, budget_s, seed) -> tuple:
    """The key of a method's runs in :func:`_longest`: every setting but the number of iterations."""
    return (k, method, a0, B, rule, budget_s, seed)


@ui.cache_data(show_spinner="Running the method (compiling on first use) ...", max_entries=64)
def _run(k, method, n, a0, B, rule, budget_s, seed):
    """One method's fit, a Trace. It starts from the longest run of its settings so far (:func:`_longest`;
    vilab.hierarchical.fit.refit gives the numbers of a new run whatever it finds there) and writes nothing:
    the page keeps the longest runs (:func:`_keep_longest`), on a cache hit as on a new run."""
    m = get_model(k)
    kw = dict(alpha=a0) if method == "gva-snngm" else {}
    if method in ("fdb", "sdb"):
        kw["batch"] = B
    if method == "bam":
        n = min(n, 2000)
    k_fit, k_eval = jax.random.split(as_key(seed))
    prev = _longest().get(_same(k, method, a0, B, rule, budget_s, seed))
    return refit(m, method, prev, key=k_fit, n_iter=n, tol=0.01 if rule else None, max_seconds=float(budget_s), **kw)


def _keep_longest(same, f):
    """Keep ``f`` in the shared store when it has a final state and goes further than the run kept there."""
    prev = _longest().get(same)
    if f.state is not None and (prev is None or f.n_steps > prev.n_steps):
        _longest()[same] = f


def _fit_job(lab):
    """The batch's job of the method labelled ``lab``: its cached fit (each method has its own time budget)."""
    return Job.of(lab, lambda **_: _run(key, labels[lab], n_iter, alpha0, batch, use_rule, budget, ui.seed()))


@ui.cache_data(max_entries=128)
def _summary(same, n_steps, status, _f):
    """What the page shows of a run: a run that stopped before the new maximum of iterations is the same
    run, and its accuracy against MCMC is not computed again."""
    k, method, seed = same[0], same[1], same[-1]
    ref = _reference(k)
    ms = m_star(lambda mm, kk: sample_q(_f, mm, kk), ref.draws, ref.sd, n_rep=3, key=jax.random.split(as_key(seed))[1])
    mu, sd = _f.mean[-1], _f.sd[-1]
    return dict(label=METHODS[method]["label"], status=_f.status, mu=mu, sd=sd, t=_f.extra["seconds"][1:],
                elbo=_f.extra["elbo"][1:], n=_f.n_steps, mstar=ms, mode=mode_error(mu, ref.mode, ref.sd)[:2],
                ratio=sd_ratio(sd, ref.sd)[:2], start=_f.settings.get("T0", ""))


@ui.cache_data()
def _patterns(k, n_show):
    return sparsity_patterns(get_model(k), _reference(k).mean, n_show)


@ui.cache_data(max_entries=16)
def _sparsity_figure(k, n_show):
    return hplots.sparsity_heatmaps(_patterns(k, n_show)).to_dict()


@ui.cache_data(max_entries=64)
def _marginal_figure(k, idx, fitted):
    """fitted: ((method, means at idx, sds at idx), ...)."""
    names, draws = get_model(k).names(), _reference(k).draws
    return hplots.marginal_densities([(names[i], draws[:, i], {lab: (mu[j], sd[j]) for lab, mu, sd in fitted})
                                      for j, i in enumerate(idx)]).to_dict()


results = {}
with fig_col:
    fits = run_batch([_fit_job(lab) for lab in chosen])  # the chosen methods in turn
    for lab in fits.names:  # one guard per method: a failing method warns, the others are still drawn
        with ui.guard(lab):
            same = _same(key, labels[lab], alpha0, batch, use_rule, budget, ui.seed())
            f = fits.trace(lab)
            _keep_longest(same, f)
            results[lab] = _summary(same, f.n_steps, f.status, f)
    if results:
        with ui.guard("ELBO plot"):
            ui.show(ui.recipe(hplots.elbo_vs_time, {lab: (r["t"], r["elbo"]) for lab, r in results.items()},
                              title="Lower bound (ELBO) against time"), key="elbo", main=True)
    elif not chosen:
        st.info("Choose at least one method.")
for lab, r in results.items():
    ui.report_status(r["status"], lab)
capped = [f"{lab} ({ui.status_text(r['status'])})" for lab, r in results.items()
          if r["status"] in ("max_steps", "max_time")]
if capped and use_rule:
    st.info("Truncated before the ELBO levelled off: " + "; ".join(capped) + ". Raise the maximum iterations "
            "or the time budget to see where they converge.")
if results:
    with ui.guard("ELBO notes"):
        ends = {lab: (float(np.asarray(r["elbo"])[np.isfinite(r["elbo"])][-1]), float(r["t"][-1]))
                for lab, r in results.items() if len(r["t"]) and np.any(np.isfinite(r["elbo"]))}
        if ends:
            top = max(ends, key=lambda k: ends[k][0])
            finals = "; ".join(f"{lab} {e:.5g} after {t:.3g} s" for lab, (e, t) in ends.items())
            ui.notice(f"Higher is better. Final ELBO: {finals}. {top} ends highest. The ELBO is the objective of "
                      "Tan's methods (SNNGM, NAdam, Adam, PGA, VOGN) and of KLD; FDb, SDb, FDr, SDr and BaM minimise "
                      "other divergences, so a lower ELBO is not a failure for them: judge them against MCMC in the "
                      "table below. Natural-gradient steps (SNNGM) rescale each direction by the curvature, so they "
                      "climb in far fewer iterations than plain gradient steps.")
    st.caption("ELBO estimate averaged over every 1000 iterations (BaM: 50), as in Tan Fig. 10 and Chen et al. "
               "Figs 7 and 9. The y-axis shows where the runs end; double-click the plot to see the start. "
               f"Starts: μ = 0, T = √(n_obs) I (Tan's methods), T = {CHEN_T0:g} I (Chen's), Σ = I (BaM); "
               "BaM runs at most 2000 iterations with B = 100 (the paper's; 300 for Epi II, whose "
               "d = 127 exceeds 100).")

st.subheader("Marginal densities: MCMC against each method")
names = model.names()
n_loc = model.n_local * model.local_size
default_vars = [names[0], names[n_loc // 2], names[n_loc], names[-1]]
shown = ui.multiselect("Variables (up to 6)", f"v_{key}", names, default_vars)
ref = None
with ui.guard("MCMC reference"):
    ref = _reference(key)
if ref is not None:
    with ui.guard("marginal densities"):
        idx = [names.index(v) for v in shown][:6]
        fitted = {lab: r for lab, r in results.items() if not r["status"].startswith("diverged")}
        if idx:
            ui.show(ui.recipe(plots.figure, _marginal_figure(key, tuple(idx), tuple(
                (lab, tuple(float(r["mu"][i]) for i in idx), tuple(float(r["sd"][i]) for i in idx))
                for lab, r in fitted.items()))), key="marg")
            if fitted:
                ratios = ", ".join(f"{lab} {r['ratio'][0]:.2f}" for lab, r in fitted.items())
                ui.notice("Grey fill: the MCMC (NUTS) reference marginal; curves: each method's Gaussian marginal. A "
                          "Gaussian cannot follow skewness, and a curve narrower than the grey one underestimates the "
                          f"posterior spread. Average σ / σ* over all variables (1 = right spread): {ratios}.")
st.caption(f"Locals: {model.local_label}[i] (" + ("random effects of patient i" if model.ell == 0 else
                                                   "log-volatility state at time i") +
           f"); globals: {', '.join(model.global_names)}.")

st.subheader("Accuracy against MCMC (Chen, Nott & Tan Tables 7-8)")


def _cells(r):
    if r["status"].startswith("diverged"):
        return dict.fromkeys(["M* (mean ± sd)", "|mu - mu*| / sigma*", "sigma / sigma*"], "—")
    return {"M* (mean ± sd)": f"{r['mstar'][0]:.2f} ± {r['mstar'][1]:.2f}",
            "|mu - mu*| / sigma*": f"{r['mode'][0]:.3f} ± {r['mode'][1]:.3f}",
            "sigma / sigma*": f"{r['ratio'][0]:.2f} ± {r['ratio'][1]:.2f}"}


with ui.guard("accuracy table"):
    rows = [{"method": lab, **_cells(r), "time (s)": round(float(r["t"][-1]), 1) if len(r["t"]) else 0.0,
             "iterations": r["n"], "status": r["status"]} for lab, r in results.items()]
    if rows:
        ui.table(pd.DataFrame(rows), hide_index=True, width="stretch")
        ok = {lab: r["mstar"][0] for lab, r in results.items() if not r["status"].startswith("diverged")}
        if ok:
            best = max(ok, key=ok.get)
            ui.notice(f"M* measures how close a method's draws are to MCMC's (higher is better): {best} is closest "
                      f"here ({ok[best]:.2f}). The mode error |μ − μ*| / σ* says how far the means sit, in posterior "
                      "standard deviations; σ / σ* below 1 means the spread is underestimated, as the divergences "
                      "of Chen, Nott & Tan predict for the score-based methods.")
    if ref is not None:
        diag = ref.settings.get("diagnostics", {})
        st.caption(f"M* = -log(MMD²_u + 1e-5), higher is better: {BANDWIDTH_NOTE}; m = {ref.draws.shape[0]} draws, "
                   "3 repeats. Mode error: |mu - mu*| / sigma* per variable (mu* the MCMC marginal mode, sigma* its "
                   "s.d.), mean ± s.d. over all variables; sigma / sigma*: the same for the marginal s.d. Time: wall "
                   "time of the iterations, compilation excluded (FDr, SDr, BaM: included). Diverged runs are left out "
                   f"of the densities. Reference: {ref.settings.get('sampler', 'NUTS')}, "
                   f"{ref.settings.get('n_chains', '?')} chains x {ref.settings.get('n_samples', '?')} draws "
                   f"({ref.settings.get('parameterisation', 'centred')}), split R-hat ≤ "
                   f"{diag.get('rhat_max', float('nan')):.3f}, bulk ESS ≥ {diag.get('ess_bulk_min', float('nan')):.0f}.")

st.subheader("Sparsity patterns")
with ui.guard("sparsity patterns"):
    st_ = fam.structure_of(model)
    n_show = 8 if model.ell == 0 else 12
    ui.show(ui.recipe(plots.figure, _sparsity_figure(key, n_show)), key="sparsity")
    ui.notice(f"Dark cells can be non-zero. T, the precision T Tᵀ and the Hessian of log p share one pattern: "
              + ("an arrow (each subject's effects talk only to the globals)" if model.ell == 0 else
                 "a band (each state talks to its neighbours) with dense last rows for the globals")
              + f". Here d = {model.dim}: T has {fam.n_free(st_):,} free entries instead of "
              f"{model.dim * (model.dim + 1) // 2:,} for a dense factor, so a step costs O(d), not O(d³).")
    st.caption(f"The first {n_show} local blocks and the {model.global_size} globals (the Hessian at the posterior "
               "mean, from its blocks: no dense d × d Hessian).")

@ui.explain()
def sparse_precision():
    st.markdown("Random-effects models and state-space models have posteriors whose precision matrix is sparse: an "
                "*arrow* (each subject's effects talk only to the global parameters) or a *band* (each state talks to "
                "its neighbours and to the globals). A Gaussian approximation whose precision Cholesky factor T keeps "
                "that pattern has O(n) parameters and costs O(n) per step. Tan's sparse natural gradient (Algorithm "
                "2S) with SNNGM and its rivals, and Chen, Nott & Tan's divergence-based methods, run on the epilepsy "
                "data (Poisson GLMMs) and the GBP exchange rate (stochastic volatility), against a NUTS reference "
                "posterior.")
    st.latex(r"q=N\big(\mu,(TT^\top)^{-1}\big),\ \ \theta=\mu+T^{-\top}z")
    st.latex(r"T\leftarrow T+\rho\,T\,\bar{\bar H},\ \ H=T_d^\top\bar G\qquad\text{(Tan 2025, Thm 4: arrow)}")
    st.latex(r"\widetilde\nabla_{T_{R_j,j}}\mathcal L=\big(\Sigma_{R_jR_j}+e_je_j^\top/T_{jj}^2\big)^{-1}"
             r"\nabla_{T_{R_j,j}}\mathcal L\qquad\text{(any pattern: the band)}")
    st.markdown("Column j of T, with free rows R_j: the sparse natural gradient for any pattern, used here for the "
                "band. Methods: SNNGM (sparse natural-gradient momentum), NAdam (natural-gradient Adam), Adam, PGA "
                "(ProxGenAdam), VOGN; KLD (stochastic gradient on KL(q‖p)), FDr and SDr (Fisher and score-based "
                "divergences, reparametrised gradients), FDb and SDb (their batch forms), BaM (batch and match).")


# ------------------------------------------------------------------------------------ deep GLMs
st.divider()
st.subheader("Deep GLMs: a neural network that finds the inputs that matter (Tan 2025, Sec. 8.4)")
DG_DATA = {"Simulated binary response (depends on x1-x5)": "binary",
           "Simulated real response (depends on x1-x10)": "real"}
DG_LABELS = {deepglm.method_label(m): m for m in deepglm.METHODS}
dg_ctl, dg_fig = ui.columns(1.5, 3)
with dg_ctl:
    dg_label = ui.radio("Simulated data", "dg_data", list(DG_DATA), list(DG_DATA)[0])
    dg_chosen = ui.multiselect("Optimizers", "dg_m", list(DG_LABELS), ["SNNGM", "Adam"],
                               help="Tan's Table 10: Adam, PGA (ProxGenAdam), NAdam (Adam fed natural gradients), "
                                    "SNNGM, NAGM, VOGN.")
    dg_scale = ui.log_slider("Step sizes × (1 = defaults)", "dg_a", 0.1, 10.0, 1.0,
                             help="Multiplies every optimizer's default step size: Adam, NAdam, PGA 0.001; SNNGM "
                                  "α₀ = 0.001; NAGM 0.01; VOGN 0.03.")
    dg_epochs = ui.slider("Epochs", "dg_ep", 5, 200, 60, step=5,
                          help="The paper: 1000 (binary) and 2000 (real) epochs with n = 100,000.")
    with ui.more("More deep-GLM settings"):
        dg_n = ui.select("Observations n", "dg_n", [2000, 5000, 10000, 20000], 10000,
                         help="The paper: 100,000. Fewer observations make the weak effects harder to find.")
        dg_p = ui.select("Inputs p", "dg_p", [20, 50, 100], 100, help="The paper: 100 (all but 5 or 10 are noise).")
        dg_B = ui.select("Minibatch size", "dg_B", [100, 250, 500, 1000], 500, help="The paper: 5000 (VOGN 50).")
        dg_budget = ui.slider("Time budget per method (s)", "dg_budget", 5, 60, 30,
                              help="A run stops after the epoch that crosses it and says so.")
    dg_go = st.button("Train the deep GLMs", key="dg_train", type="primary", disabled=not dg_chosen)
dg_name = DG_DATA[dg_label]
dg_settings = (dg_name, tuple(DG_LABELS[lab] for lab in dg_chosen), int(dg_n), int(dg_p), int(dg_B), int(dg_epochs),
               float(dg_scale), float(dg_budget), ui.seed())
if dg_go and dg_chosen:
    st.session_state["dg_run"] = dg_settings


@ui.cache_resource(max_entries=8)
def _dg_data(name, n, p, seed):
    return deepglm.simulate(name, jax.random.split(as_key(seed))[0], n=n, p=p)


@ui.cache_data(show_spinner="Training the network (the first run of a method compiles it, a few seconds) ...",
               max_entries=64)
def _dg_fit(name, method, n, p, B, epochs, scale, budget, seed):
    data = _dg_data(name, n, p, seed)
    tr = deepglm.fit(data, method, key=jax.random.split(as_key(seed))[1], alpha=deepglm.default_alpha(method) * scale,
                     epochs=epochs, batch_size=B, max_time=budget)
    pe = deepglm.per_epoch(tr)
    return dict(status=tr.status, elbo=pe["elbo"], t=pe["seconds"], gamma=pe["final_gamma"], relevant=data.relevant,
                label=deepglm.method_label(method))


def _dg_job(run, method, **_):
    """A deep-GLM batch job: the cached fit of ``method`` with the settings of ``run`` (each has its own budget)."""
    name, _methods, n, p, B, epochs, scale, budget, seed = run
    return _dg_fit(name, method, n, p, B, epochs, scale, budget, seed)


dg_run = st.session_state.get("dg_run")
dg_results = {}
with dg_fig:
    if dg_run is None:
        st.info("Choose the data and the optimizers, then press **Train the deep GLMs**: the average lower bound of "
                "every epoch and each input's shrinkage parameter appear here.")
    else:
        if dg_run != dg_settings:
            st.caption("Showing the last training run; the settings have changed since. Press **Train the deep GLMs** "
                       "to run the new ones.")
        name_r, methods_r, n_r, p_r, B_r, ep_r, sc_r, bud_r, seed_r = dg_run
        dg_fits = run_batch([Job.of(deepglm.method_label(m), partial(_dg_job, dg_run, m)) for m in methods_r])
        for lab in dg_fits.names:  # one guard per optimizer: a failing one warns, the others are still drawn
            with ui.guard(lab):
                dg_results[lab] = dg_fits.trace(lab)
        curves = {lab: (r["t"], r["elbo"]) for lab, r in dg_results.items() if len(r["elbo"])}
        if curves:
            with ui.guard("lower-bound plot"):
                ui.show(ui.recipe(dplots.elbo_vs_time, curves, skip_first=min(3, max(0, ep_r // 5)),
                                  title="Average lower bound of each epoch against time"), key="dg_elbo")
            with ui.guard("shrinkage plot"):
                k = next(iter(dg_results.values()))["relevant"]
                ui.show(ui.recipe(dplots.gamma_per_input, {lab: r["gamma"] for lab, r in dg_results.items()
                                                if not r["status"].startswith("diverged")}, k,
                                  title="Shrinkage parameter γⱼ of each input at the end"), key="dg_gamma")
for lab, r in dg_results.items():
    ui.report_status(r["status"], lab)
if dg_results:
    with ui.guard("deep-GLM notes"):
        ok = {lab: r for lab, r in dg_results.items() if len(r["elbo"]) and not r["status"].startswith("diverged")}
        if ok:
            k = next(iter(ok.values()))["relevant"]
            top = max(ok, key=lambda lab: ok[lab]["elbo"][-1])
            finds = "; ".join(f"{lab} {int(np.sum(r['gamma'][:k] < np.min(r['gamma'][k:])))} of {k}"
                              for lab, r in ok.items())
            ui.notice(f"Higher is better: {top} ends with the highest average lower bound. Lower panel: a small γⱼ lets "
                      f"input j's weights be large, a large γⱼ shrinks them to zero. Relevant inputs whose γ lies below "
                      f"every noise input's: {finds}. Tan's Fig. 9 shows all of them separated at n = 100,000; with "
                      "fewer observations the weak effects (the x3 x4 interaction of the binary data) can be missed.")
        capped = [lab for lab, r in dg_results.items() if r["status"] == "max_time"]
        if capped:
            st.caption("Out of time before the last epoch: " + ", ".join(capped) + ". Raise the time budget.")
    st.caption("Each point: the average of the epoch's one-draw, one-minibatch lower-bound estimates (Tan's Fig. 9, "
               "first row). Time includes compiling the first epoch. Step sizes: Adam, NAdam, PGA 0.001 (Tan's "
               "defaults); SNNGM, NAGM and VOGN are tuned in the paper but not reported, so ours are guesses. The "
               "paper's runs (n = 100,000, 1000-2000 epochs) take minutes each; this one is reduced.")

@ui.explain("How it works: deep GLMs with a shrinkage prior")
def deep_glms():
    st.markdown("A network with two hidden layers of 20 ReLU units turns the inputs x into η = f(x, θ); the response "
                "is Bernoulli with log-odds η or normal with mean η and variance v. The 20 weights leaving input j get "
                "their own variance τⱼ, and τⱼ its own prior with rate γⱼ²/2: a large γⱼ pulls those weights to zero. "
                "The weights of q(θ) = N(μ, diag σ²) are fitted by an optimizer on minibatches; v, τ and γ have "
                "closed-form updates after every step.")
    st.latex(r"w_{x_j}\mid\tau_j\sim N(0,\tau_j I_{20}),\quad \tau_j\mid\gamma_j\sim "
             r"\mathrm{Gamma}\big(\tfrac{21}{2},\tfrac{\gamma_j^2}{2}\big),\quad w\sim N(0,I/\gamma_w)")
    st.latex(r"q(1/\tau_j)=\mathrm{InvGauss}\Big(\alpha_j=\frac{\gamma_j}{\sqrt{\mu_{x_j}^\top\mu_{x_j}"
             r"+\sigma_{x_j}^\top\sigma_{x_j}}},\ \beta_j=\gamma_j^2\Big),\qquad "
             r"\gamma_j=\sqrt{\frac{m+1}{1/\alpha_j+1/\beta_j}}")
    st.latex(r"q(v)=\mathrm{InvGamma}\Big(a_0+\frac n2,\ b_0+\frac12\sum_i E(y_i-\eta_i)^2\Big),\qquad "
             r"\sum_i E(y_i-\eta_i)^2\approx\frac{n}{|B|}\sum_{i\in B}(y_i-\hat m_i)^2")
    st.markdown("The sum over all observations, the one term without a closed form, is estimated on each minibatch B "
                "from one draw θ ~ q (m̂ᵢ the network's output at that draw; m = 20 units, InvGauss(mean, shape)). Prior of v: a₀ = b₀ = 1 (the paper does "
                "not give them).")
