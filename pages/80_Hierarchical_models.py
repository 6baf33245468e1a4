"""Hierarchical models on real data: sparse Gaussian VI for GLMMs and stochastic volatility vs NUTS."""

import jax
import numpy as np
import pandas as pd
import streamlit as st

import vilab_ui as ui
from vilab.core import as_key
from vilab.hierarchical import families as fam
from vilab.hierarchical.fit import CHEN_T0, METHODS, available_methods, refit, sample_q
from vilab.hierarchical.metrics import BANDWIDTH_NOTE, m_star, mode_error, sd_ratio
from vilab.hierarchical.models import MODELS, get_model, sparsity_patterns
from vilab.hierarchical.reference import load_reference
from vilab import plots
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
missing = [f"{METHODS[m]['label']} ({why})" for m, why in avail.items() if why]
if missing:
    st.caption("Not offered for this model: " + "; ".join(missing) + ".")


@ui.cache_resource()
def _reference(k):
    return load_reference(k)


@ui.cache_resource(ttl=None)  # the store bounds itself
def _longest() -> ui.SharedStore:
    """The longest run of each method and settings so far, shared by every session: a new maximum of
    iterations continues it or cuts it (vilab.hierarchical.fit.refit gives the numbers of a new run)."""
    return ui.SharedStore(maxsize=64, ttl_s=6 * 3600)


@ui.cache_data(show_spinner="Running the method (compiling on first use) ...", max_entries=64)
def _run(k, method, n, a0, B, rule, budget_s, seed):
    m = get_model(k)
    kw = dict(alpha=a0) if method == "gva-snngm" else {}
    if method in ("fdb", "sdb"):
        kw["batch"] = B
    if method == "bam":
        n = min(n, 2000)
    k_fit, k_eval = jax.random.split(as_key(seed))
    same = (k, method, a0, B, rule, budget_s, seed)  # every setting but the number of iterations
    prev = _longest().get(same)
    f = refit(m, method, prev, key=k_fit, n_iter=n, tol=0.01 if rule else None, max_seconds=float(budget_s), **kw)
    if f.state is not None and (prev is None or f.n_steps > prev.n_steps):
        _longest()[same] = f
    return _summary(same, f.n_steps, f.status, f)


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
    for lab in chosen:  # one guard per method: a failing method warns, the others are still drawn
        with ui.guard(lab):
            results[lab] = _run(key, labels[lab], n_iter, alpha0, batch, use_rule, budget, ui.seed())
    if results:
        with ui.guard("ELBO plot"):
            ui.show(hplots.elbo_vs_time({lab: (r["t"], r["elbo"]) for lab, r in results.items()},
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
            ui.show(plots.figure(_marginal_figure(key, tuple(idx), tuple(
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
    ui.show(plots.figure(_sparsity_figure(key, n_show)), key="sparsity")
    ui.notice(f"Dark cells can be non-zero. T, the precision T Tᵀ and the Hessian of log p share one pattern: "
              + ("an arrow (each subject's effects talk only to the globals)" if model.ell == 0 else
                 "a band (each state talks to its neighbours) with dense last rows for the globals")
              + f". Here d = {model.dim}: T has {fam.n_free(st_):,} free entries instead of "
              f"{model.dim * (model.dim + 1) // 2:,} for a dense factor, so a step costs O(d), not O(d³).")
    st.caption(f"The first {n_show} local blocks and the {model.global_size} globals (the Hessian at the posterior "
               "mean, from its blocks: no dense d × d Hessian).")

with ui.explain():
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
