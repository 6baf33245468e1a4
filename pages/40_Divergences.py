"""Divergences: mean-field variances under KL, Fisher, score-based and weighted Fisher, and the noise of their
stochastic gradients (Chen, Nott & Tan)."""

import math

import numpy as np
import pandas as pd
import streamlit as st

import vilab_ui as ui
from vilab import divergences as dv
from vilab import plots
from vilab.core import as_key
from vilab.divergences import landscape as dvl
from vilab.divergences import stochastic as dvs
from vilab.plots import divergences as dplots
from vilab.targets import gaussian_target
from vilab.targets.univariate import univariate_target
from vilab_ui import live as ui_live

ui.page(
    "Divergences",
    "Which Gaussian is *closest* to a posterior depends on how closeness is measured.",
)

TABS = ["2-D Gaussian", "Weighted Fisher", "3-D collapse", "Univariate targets", "Gradient noise", "Batch methods",
        "Batch step by step", "Objective landscapes", "Logistic regression"]
CODES = ("kl", "fisher", "score")  # the exact optima compared on every tab
L = plots.label


def _sig(x: float) -> str:
    """A number with 3 significant digits."""
    return f"{x:.3g}".replace("-", "−")


@ui.cache_data(max_entries=256)
def _two_d(rho, sd1, sd2):
    P = dv.precision_2d(rho, sd1, sd2)
    return {k: dv.meanfield_variances(P, k) for k in ("kl", "fisher", "score", "forward_kl")}


@ui.cache_data(max_entries=64)
def _curves(sd1, sd2):
    rhos = np.linspace(-0.99, 0.99, 199)
    return rhos, dv.variance_curves_2d(rhos, sd1, sd2)


@ui.cache_data(max_entries=64)
def _grid(c):
    return dv.fig1_grid(c)


@ui.cache_data(max_entries=256)
def _three_d(a, b, c):
    P = dv.precision_3d(a, b, c)
    opt = dv.meanfield_optimum(P, "score")
    return {"kl": dv.meanfield_variances(P, "kl"), "fisher": dv.meanfield_variances(P, "fisher"),
            "score": opt.variances, "true": dv.meanfield_variances(P, "forward_kl"),
            "sdb": dv.batch_meanfield_fixed_point(P, "sdb")}, opt.collapsed


@ui.cache_data(max_entries=128)
def _univariate(kind, params):
    spec = univariate_target(kind, **dict(params))
    opt = dv.univariate_optima(spec)
    lo = min(spec.mode - 5 * spec.sd, min(o.mu - 4 * np.sqrt(o.var) for o in opt.values()))
    hi = max(spec.mode + 5 * spec.sd, max(o.mu + 4 * np.sqrt(o.var) for o in opt.values()))
    x = np.linspace(lo, hi, 600)
    return x, np.exp(spec.logpdf(x)), opt


@ui.cache_resource()
def _fig5_target():
    return gaussian_target(np.array([2.0]), cov=np.array([[1.5]]), name="N(2, 1.5)")


@ui.cache_data(max_entries=64)
def _fig5(n_iter, batch, seed, mu0):
    tr = dv.run_sgd(_fig5_target(), "sdb", n_iter=n_iter, batch_size=batch, history=True, window=n_iter,
                    key=as_key(seed), mu0=[mu0])
    return tr.mean[:, 0], tr.cov[:, 0, 0], tr.extra["samples"][:, :, 0], tr.status


@ui.cache_resource(max_entries=16)
def _gauss_target(cov_key):
    cov = np.array(cov_key)
    return gaussian_target(np.zeros(cov.shape[0]), cov=cov)


@ui.cache_data(max_entries=32)
def _mf_runs(cov_key, n_iter, batch, seed):
    tg = _gauss_target(cov_key)
    out = {}
    for m in ("fdb", "sdb"):
        tr = dv.run_sgd(tg, m, n_iter=n_iter, batch_size=batch, mask="diagonal", window=500,
                        key=as_key(seed))
        out[m] = (dv.tail_average_variances(tr, 0.5), tr.status)
    return out


@ui.cache_data(max_entries=128)
def _weighted(rho, sd1, sd2, kind, custom):
    return dv.weighted_fisher_comparison(dv.precision_2d(rho, sd1, sd2), kind, custom)


@ui.cache_data(max_entries=64)
def _weighted_curves(sd1, sd2, kind, custom):
    rhos = np.linspace(-0.99, 0.99, 199)
    return rhos, dv.weighted_variance_curves_2d(rhos, sd1, sd2, kind, custom)


GV_TARGETS = {"German credit": "German credit (the paper's)", "stand-in": "stand-in you can change"}


@ui.cache_data(max_entries=64)
def _fig4(t, dmu, corr, n, seed, target):
    return dv.fig4_gradient_sd(as_key(seed), t_scale=t, dmu=dmu, correlation=corr, n=n, target=target)


#: the data sets of the Table 6 tab, with their names on screen

#: short names of the weights in the legend
W_SHORT = {"identity": "M = I", "target_cov": "M = Λ⁻¹", "q_cov": "M = Σ", "custom": "your M"}

LIVE = ("sdb", "fdb", "bam", "gsm")  # the batch methods driven step by step (GSM has no step size)
LIVE_N, LIVE_B, LIVE_MU0 = 2000, 5, -2.0  # last iteration, batch size, starting mean (q_0 = N(-2, 1))
#: each method's step-size setting: (its name in the algorithm's state, slider label, low, high, default)
LIVE_STEP = {"sdb": ("learning_rate", "SDb: learning rate", 0.01, 100.0, 1.0),
             "fdb": ("learning_rate", "FDb: learning rate", 0.01, 100.0, 1.0),
             "bam": ("lr_scale", "BaM: step scale s", 0.1, 100.0, 5.0)}
LIVE_HELP = {"sdb": "multiplies every Adadelta step of SDb (1: the paper's Adadelta)",
             "fdb": "multiplies every Adadelta step of FDb (1: the paper's Adadelta)",
             "bam": "batch and match weighs step t's draws by ρₜ = s / t (the paper: s = B d = 5)"}


def _live_build(method, seed, value):
    """(algorithm, key, start state) of a batch method run step by step on N(2, 1.5) from q_0 = N(-2, 1)."""
    tg, key, mu0 = _fig5_target(), as_key(seed), np.array([LIVE_MU0])
    if method == "bam":
        alg = dvs.bam(tg, batch_size=LIVE_B)
        return alg, key, alg.init(key, (mu0, np.eye(1)), lr_scale=float(value))
    if method == "gsm":
        alg = dvs.gsm(tg, batch_size=LIVE_B)
        return alg, key, alg.init(key, (mu0, np.eye(1)))
    alg = dvs.algorithm(tg, method, batch_size=LIVE_B)
    return alg, key, alg.init(key, (mu0, np.eye(1)), learning_rate=float(value))


@ui.cache_data(max_entries=256)
def _landscape(rho, sd1, sd2, decades):
    return dvl.objective_landscape(dv.precision_2d(rho, sd1, sd2), n=121, decades=decades)


@ui.cache_data(max_entries=64)
def _landscape_mc(rho, sd1, sd2, points, seed):
    return dvl.landscape_monte_carlo(as_key(seed), dv.precision_2d(rho, sd1, sd2), points, n=20_000)


@ui.cache_data(max_entries=8, ttl=24 * 3600)
def _table6(seed):
    return dvl.table6(as_key(seed))


def _url_number(key: str, default: float, lo: float, hi: float) -> float:
    """A setting of the 2-D tab, read from the URL (its widgets are not drawn while another tab is open)."""
    try:
        v = float(st.query_params.get(key, default))
    except (TypeError, ValueError):
        return default
    return min(max(v, lo), hi) if math.isfinite(v) else default


def _variance_table(values: dict, index: list[str]) -> pd.DataFrame:
    """Rows: methods (readable names); columns: the coordinates' variances, 4 significant digits."""
    return pd.DataFrame({L(k): np.asarray(v, float) for k, v in values.items()}, index=index).T.map(
        lambda x: float(f"{x:.4g}"))


tab2d, tabw, tab3d, tab1d, tabg, tabb, tabl, tabo, tabt = ui.tabs(TABS, "tab")

# ----------------------------------------------------------------------------------------- 2-D
if tab2d.open:
    with tab2d:
        ctl, fig = ui.columns()
        with ctl:
            rho = ui.slider("correlation ρ", "rho", -0.99, 0.99, 0.9, 0.01)
            sd1 = ui.log_slider("s.d. of θ₁", "sd1", 0.001, 1000.0, 1.0)
            sd2 = ui.log_slider("s.d. of θ₂", "sd2", 0.001, 1000.0, 1.0)
            with ui.more("Rescale θ₂"):
                rescale = ui.toggle("rescale θ₂ (Fisher is not affine invariant)", "rs", False)
                k = ui.log_slider("factor k (θ₂ → k θ₂)", "k", 0.01, 100.0, 3.0) if rescale else None
        with fig, ui.guard("2-D example") as two_d:
            v = _two_d(rho, sd1, sd2)
            cov = np.array([[sd1**2, rho * sd1 * sd2], [rho * sd1 * sd2, sd2**2]])
            if rescale:
                w = _two_d(rho, sd1, sd2 * k)
                back = {n: np.array([x[0], x[1] / k**2]) for n, x in w.items() if n != "forward_kl"}
                ui.show(ui.recipe(dplots.rescaled_pair, [0, 0], cov, {n: v[n] for n in back}, back, k), key="ell2", main=True)
                moved = abs(back["fisher"][0] - v["fisher"][0]) / v["fisher"][0]
                ui.notice(f"KL and score-based optima are the same after mapping back: both rescale with θ₂. "
                          f"The Fisher optimum changes shape (Σ₁₁ moves by {100 * moved:.3g}%): the Fisher "
                          "divergence measures the score mismatch with the identity, not with the target's own "
                          "scale, so it depends on the units of θ.")
            else:
                ui.show(ui.recipe(dplots.meanfield_ellipses, [0, 0], cov, v, title="2-s.d. ellipses: target and mean-field optima"),
                        key="ell", main=True)
                ui.notice(f"A mean-field (diagonal) Gaussian cannot tilt, so it fits inside the tilted target. "
                          f"Target Σ₁₁ = {_sig(sd1**2)}; {L('kl')} {_sig(v['kl'][0])}, Fisher {_sig(v['fisher'][0])}, "
                          f"score-based {_sig(v['score'][0])}. KL(q‖p) gives the conditional variance 1/Λ₁₁ (Λ: the "
                          "target's precision matrix). Fisher and score-based match the gradients of log p, to which "
                          "the correlation adds the off-diagonal Λ₁₂ (Fisher: Σ₁₁ = 1/‖Λ₁·‖ ≤ 1/Λ₁₁), so they shrink q "
                          "further. KL(p‖q) (dash-dot) recovers the true marginal variances.")
    with tab2d:
        if two_d.ok:  # else the example failed (said above): no optima to list
            with ui.guard("2-D table"):
                table = _variance_table(v, ["Σ₁₁", "Σ₂₂"])
                table["Σ₁₁ / true Σ₁₁"] = (table["Σ₁₁"] / sd1**2).map(lambda x: float(f"{x:.4g}"))
                ui.table(table)
        with ui.guard("variance against ρ"):
            rhos, curves = _curves(sd1, sd2)
            ui.show(ui.recipe(dplots.variance_curves, rhos, curves, title="Σ₁₁ against the correlation ρ"), key="curves")
            ui.notice("At ρ = 0 the coordinates are independent and every optimum is exact; the stronger the "
                      "correlation, the more each divergence underestimates. Theorem 1: score-based and Fisher "
                      "variances never exceed KL's, which never exceeds the true variance; with equal scales "
                      "score ≤ Fisher ≤ KL ≤ true (and Fisher = √(KL · score)).")

        @ui.explain()
        def divergences():
            st.latex(r"S_M(q\|p)=\mathbb E_q\big\|\nabla\log q(\theta)-\nabla\log p(\theta\mid y)\big\|_M^2")
            st.markdown("with M = I the **Fisher** divergence and M = Σ (the covariance of q) the **score-based** "
                        "divergence; Λ is the target's precision matrix. The mean-field optima:")
            st.latex(r"\Sigma^{KL}_{ii}=\frac1{\Lambda_{ii}},\quad \Sigma^{F}_{ii}=\frac1{\|\Lambda_{i\cdot}\|_2},"
                     r"\quad \sum_j\Lambda_{ij}^2\Sigma^S_{jj}=\Lambda_{ii}\ \text{or}\ \Sigma^S_{ii}=0")
            st.markdown("Score-based ≤ Fisher in coordinate 1 exactly when sd₁²/sd₂² ≤ 2 + ρ².")

# ----------------------------------------------------------------------------------------- weighted Fisher
if tabw.open:
    with tabw:
        ctl, fig = ui.columns()
        with ctl:
            wkind = ui.select("weight M", "wM", list(dv.WEIGHTS), "target_cov", format_func=dv.WEIGHTS.get)
            custom = None
            if wkind == "custom":
                st.caption("M = [[M₁₁, M₁₂], [M₁₂, M₂₂]] must be positive definite.")
                m11 = ui.number("M₁₁", "m11", -100.0, 100.0, 1.0, 0.1)
                m12 = ui.number("M₁₂ (= M₂₁)", "m12", -100.0, 100.0, 0.5, 0.1)
                m22 = ui.number("M₂₂", "m22", -100.0, 100.0, 2.0, 0.1)
                custom = ((m11, m12), (m12, m22))
            wrho = ui.slider("correlation ρ", "wrho", -0.99, 0.99, 0.9, 0.01)
            wsd1 = ui.log_slider("s.d. of θ₁", "wsd1", 0.001, 1000.0, 1.0)
            wsd2 = ui.log_slider("s.d. of θ₂", "wsd2", 0.001, 1000.0, 1.0)
        wname = f"{L('weighted_fisher')}, {W_SHORT[wkind]}"
        wres = None
        with fig, ui.guard("weighted Fisher"):
            wres = _weighted(wrho, wsd1, wsd2, wkind, custom)
            wv = wres["variances"]
            wcov = np.array([[wsd1**2, wrho * wsd1 * wsd2], [wrho * wsd1 * wsd2, wsd2**2]])
            ui.show(ui.recipe(dplots.meanfield_ellipses, [0, 0], wcov, {k: wv[k] for k in ("kl", "fisher", "score",
                                                                                 "weighted_fisher")},
                              title=f"2-s.d. ellipses: the target and the mean-field optima "
                                                    f"({W_SHORT[wkind]})",
                              names={"weighted_fisher": wname}),
                    key="wfell", main=True)
            M = wres["M"]
            above = [i + 1 for i in range(2) if wv["weighted_fisher"][i] > wv["kl"][i] * (1 + 1e-9)]
            if wkind == "q_cov":
                why = ("With M = Σ, the covariance of q itself, S_M is the score-based divergence: its ellipse is the "
                       "score-based one.")
            elif M is not None and abs(M[0, 1]) < 1e-12:
                why = ("M is diagonal, so Theorem 1 applies: every weighted-Fisher variance is at most KL's.")
            elif above:
                why = (f"M is not diagonal, and Theorem 1 (weighted Fisher ≤ KL in every coordinate) holds only for a "
                       f"diagonal M: here {' and '.join('Σ₁₁' if i == 1 else 'Σ₂₂' for i in above)} "
                       f"{'exceeds' if len(above) == 1 else 'exceed'} KL's.")
            else:
                why = "M is not diagonal (Theorem 1 needs a diagonal M), but here both variances stay at most KL's."
            extra = (" With M = Λ⁻¹, ΛMΛ = Λ and Σᵢᵢ = √((Λ⁻¹)ᵢᵢ / Λᵢᵢ): the geometric mean of KL's variance and "
                     "the true one." if wkind == "target_cov" else "")
            ui.notice(f"Weighted Fisher ({W_SHORT[wkind]}): Σ₁₁ = {_sig(wv['weighted_fisher'][0])}, "
                      f"Σ₂₂ = {_sig(wv['weighted_fisher'][1])}; KL {_sig(wv['kl'][0])}, {_sig(wv['kl'][1])}; "
                      f"Fisher {_sig(wv['fisher'][0])}, {_sig(wv['fisher'][1])}; score-based "
                      f"{_sig(wv['score'][0])}, {_sig(wv['score'][1])}; target {_sig(wv['true'][0])}, "
                      f"{_sig(wv['true'][1])}. The weight decides which score mismatches count most, and so how "
                      f"much the diagonal q shrinks. {why}{extra} Its value at its optimum: "
                      f"S\\_M = {_sig(wres['objective'])}.")
    if wres is not None:
        with tabw:
            with ui.guard("weighted Fisher table"):
                rows = {}
                for code in ("kl", "fisher", "score", "weighted_fisher"):
                    vals = wres["values"][code]
                    rows[wname if code == "weighted_fisher" else L(code)] = {
                        "Σ₁₁": wres["variances"][code][0], "Σ₂₂": wres["variances"][code][1],
                        "KL(q‖p)": vals["kl"], "Fisher F(q‖p)": vals["fisher"], f"S_M(q‖p), {W_SHORT[wkind]}":
                        vals["weighted_fisher"]}
                ui.table(pd.DataFrame(rows).T.map(lambda x: float(f"{x:.4g}")))
                st.caption("Rows: the optimum of each divergence (μ = ν, diagonal Σ); columns: its variances and "
                           "every divergence at that q. Each divergence column is smallest in its own row: each "
                           "optimum is best only by its own measure.")
            with ui.guard("weighted Fisher against ρ"):
                rhos_w, wcurves = _weighted_curves(wsd1, wsd2, wkind, custom)
                ui.show(ui.recipe(dplots.variance_curves, rhos_w, wcurves, title="Σ₁₁ against the correlation ρ",
                                  names={"weighted_fisher": wname}, marked=wrho), key="wfcurves")
                ui.notice("The dotted line is the ρ above. "
                          + ("M = Λ⁻¹ follows the target as ρ moves; " if wkind == "target_cov" else "")
                          + ("your M stays fixed while ρ moves; " if wkind == "custom" else "")
                          + "at ρ = 0 the mean-field family contains the target and every divergence finds it.")

        @ui.explain()
        def weighted_divergences():
            st.latex(r"S_M(q\|p)=\mathbb E_q\big\|\nabla\log q(\theta)-\nabla\log p(\theta\mid y)\big\|_M^2"
                     r",\qquad \|z\|_M^2=z^\top M z")
            st.markdown("For a Gaussian target N(ν, Λ⁻¹) and q = N(μ, Σ) (Chen, Nott & Tan, Lemma 1):")
            st.latex(r"S_M(q\|p)=\operatorname{tr}(\Sigma^{-1}M)+\operatorname{tr}(\Lambda M\Lambda\Sigma)"
                     r"-2\operatorname{tr}(M\Lambda)+(\mu-\nu)^\top\Lambda M\Lambda(\mu-\nu)")
            st.markdown("With a diagonal Σ and M not depending on q, each Σᵢᵢ enters as Mᵢᵢ/Σᵢᵢ + (ΛMΛ)ᵢᵢ Σᵢᵢ, so")
            st.latex(r"\Sigma^{M}_{ii}=\sqrt{\frac{M_{ii}}{(\Lambda M\Lambda)_{ii}}},\qquad \mu=\nu .")
            st.markdown("M = I gives the Fisher divergence, M = Σ the score-based one (no closed form: a "
                        "non-negative quadratic program). M must be positive definite: otherwise some score "
                        "mismatches would count as zero or negative distance.")

# ----------------------------------------------------------------------------------------- 3-D
if tab3d.open:
    with tab3d:
        ctl, fig = ui.columns()
        with ctl:
            c = ui.slider("c = Λ₂₃", "c", -0.95, 0.95, 0.3, 0.05)
            a = ui.slider("a = Λ₁₂ (selected point)", "a", -0.99, 0.99, 0.8, 0.01)
            b = ui.slider("b = Λ₁₃ (selected point)", "b", -0.99, 0.99, 0.8, 0.01)
            st.caption("**Click a point** of the map (or move a and b) to see its variances below.")
        with fig, ui.guard("Fig. 1") as fig1:
            g = _grid(c)
            ui.show(ui.recipe(dplots.fig1_heatmap, g, marked=(a, b), title=f"c = {c:g}: # coordinates with score-based ≤ Fisher"),
                    key="fig1", main=True, on_select=ui.click_setter("fig1", "a", "b", -0.99, 0.99),
                    selection_mode="points")
    with tab3d:
        with ui.guard("selected point"):
            vals, col = _three_d(a, b, c)
            collapsed = ", ".join(str(i + 1) for i in np.nonzero(col)[0])
            n_col = f" ({int(g['collapse'].sum())} grid points here)" if fig1.ok else ""  # else the map failed
            ui.notice("Shade: how many of the three coordinates have a score-based variance ≤ the Fisher variance "
                      "(light 1, dark 3); blank: Λ is not positive definite; dashed outline: diagonally dominant Λ "
                      f"(there score ≤ Fisher in every coordinate); ×{n_col}: score-based "
                      "collapse. Collapse: the score-based optimum solves Σⱼ Λᵢⱼ² Σⱼⱼ = Λᵢᵢ; when the other "
                      "coordinates' terms already exceed Λᵢᵢ = 1, no positive Σᵢᵢ solves it and the optimum "
                      "sets Σᵢᵢ = 0.")
            if col.any():
                st.info(f"Variational collapse at (a, b) = ({a:g}, {b:g}): the score-based variance of "
                        f"coordinate(s) {collapsed} is exactly zero. The batch method SDb does not collapse.")
            ui.table(_variance_table(vals, ["i = 1", "i = 2", "i = 3"]))

        @ui.explain()
        def collapse_map():
            st.latex(r"\Lambda=\begin{pmatrix}1&a&b\\a&1&c\\b&c&1\end{pmatrix}")
            st.markdown("The target is N(0, Λ⁻¹); the map (Chen, Nott & Tan, Fig. 1) scans a and b for a fixed c. "
                        "Rows of the table: the mean-field variances of each divergence, the true marginal "
                        "variances (target) and the fixed point of batch score-based SGD (SDb).")

# ----------------------------------------------------------------------------------------- 1-D
if tab1d.open:
    with tab1d:
        ctl, fig = ui.columns()
        with ctl:
            kind = ui.select("target", "tgt", ["student_t", "skew_normal", "log_inverse_gamma"], "skew_normal",
                             format_func=lambda s: {"student_t": "Student t", "skew_normal": "skew normal",
                                                    "log_inverse_gamma": "log inverse gamma"}[s])
            if kind == "student_t":
                params = (("nu", ui.slider("degrees of freedom ν", "nu", 2.5, 30.0, 3.0, 0.5)),)
            elif kind == "skew_normal":
                t = ui.slider("scale t", "t", 0.5, 5.0, 5.0, 0.5)
                lam = ui.slider("skewness λ", "lam", -5.0, 5.0, 5.0, 0.5)
                params = (("m", 0.0), ("t", t), ("lam", lam))
            else:
                params = (("a1", ui.slider("a₁ = a₀ + n/2", "a1", 0.6, 30.0, 3.01, 0.01)), ("b1", 1.0))
        with fig, ui.guard("univariate optima") as optima:
            x, pdf, opt = _univariate(kind, params)
            ui.show(ui.recipe(dplots.univariate_densities, x, pdf, {k: (o.mu, o.var) for k, o in opt.items()},
                              title="target and optimal Gaussians"), key="uni", main=True)
            ratios = ", ".join(f"{L(k)} {_sig(o.var_ratio)}" for k, o in opt.items())
            modes = ", ".join(f"{L(k)} {_sig(o.mode_error)}" for k, o in opt.items())
            ui.notice(f"Variance of each optimum over the target's (σ²/σ*²): {ratios}; distance of its mean from the "
                      f"target's mode in target standard deviations: {modes}. In 1-D the score-based divergence is σ² "
                      "times the Fisher divergence: the factor σ² rewards a small variance, so its Gaussian is the "
                      "narrowest (on a Gaussian target, skewness λ = 0, all three are exact).")
    with tab1d:
        with ui.guard("univariate table"):
            if optima.ok:  # else the optima failed (said above): no table
                ui.table(pd.DataFrame(
                    {L(k): {"μ": o.mu, "σ²": o.var, "|μ − m*| / σ*": o.mode_error, "σ² / σ*²": o.var_ratio,
                            "accuracy 1 − IAE/2 (%)": o.accuracy} for k, o in opt.items()}).map(lambda v: float(f"{v:.4g}")))
            st.caption("m*: the target's mode, σ*: its standard deviation. Student-t accuracies integrate over the "
                       "whole line (the paper's Table 1 used a finite range).")

# ----------------------------------------------------------------------------------------- gradient noise
if tabg.open:
    with tabg:
        ctl, fig = ui.columns()
        with ctl:
            gt = ui.log_slider("starting factor T = t · I: t", "gT", 0.1, 100.0, 10.0,
                               help="T is the Cholesky factor of q's precision, so q's variances are 1/t²; "
                                    "the paper starts at t = 10")
            gtg = ui.radio("target", "gtg", list(GV_TARGETS), "German credit", format_func=GV_TARGETS.get,
                           help="German credit: the paper's own target, Λ and ν from 20,000 Monte Carlo draws of "
                                "its posterior. Stand-in: the same smallest, largest and mean Λᵢᵢ, with a "
                                "correlation and an offset μ − ν you choose.")
            german = gtg == "German credit"
            gcor, gdm = 0.0, 0.0
            if not german:
                gcor = ui.slider("correlation of neighbouring coordinates in Λ", "gcor", -0.9, 0.9, 0.0, 0.05)
            with ui.more("Monte Carlo" if german else "Monte Carlo and the mean"):
                gn = ui.select("Monte Carlo draws", "gn", [250, 1000, 4000], 1000)
                if not german:
                    gdm = ui.slider("μᵢ − νᵢ in every coordinate", "gdm", -2.0, 2.0, 0.0, 0.1)
        gres = None
        with fig, ui.guard("gradient noise"):
            gres = _fig4(gt, gdm, gcor, int(gn), ui.seed(), gtg)
            lam = gres["lambda_ii"]
            cross = dv.variance_crossings(gt, gdm)
            marks = {}
            diagonal = gcor == 0 and not german  # the crossing rules hold for a diagonal Λ at μ = ν
            if diagonal:
                marks = {p: [(cross[p]["score"], "score = KL")] + ([(cross[p]["fisher"], "Fisher = KL")]
                                                                    if np.isfinite(cross[p]["fisher"]) else [])
                         for p in ("mu", "T")}
            ui.show(ui.recipe(dplots.gradient_sd, lam, gres["closed"], gres["mc"], marks=marks, curves=not german,
                              title=f"Noise of one-draw gradients at μ = 0, T = {gt:g} I (d = {lam.size})"),
                    key="gradsd", main=True)
            med = {p: {m: float(np.median(gres["closed"][p][m])) for m in CODES} for p in ("mu", "T")}
            devs = np.concatenate([np.abs(gres["mc"][p][m] / gres["closed"][p][m] - 1) for p in ("mu", "T")
                                   for m in CODES if np.all(gres["closed"][p][m] > 0)])
            n_sc = int(np.sum(gres["closed"]["mu"]["score"] > gres["closed"]["mu"]["kl"]))
            n_sct = int(np.sum(gres["closed"]["T"]["score"] > gres["closed"]["T"]["kl"]))
            devs = devs[np.isfinite(devs)]
            rule = (f" (those with Λᵢᵢ > t²/2 = {_sig(cross['mu']['score'])})" if diagonal else "")
            dip = (f" Every μ-gradient is exact (noise zero) where Λᵢᵢ = t² = {_sig(gt**2)}: in that coordinate q "
                   "already has the target's precision." if diagonal and lam.min() <= gt**2 <= lam.max() else "")
            order = {p: " < ".join(L(m) for m in sorted(CODES, key=lambda m: med[p][m])) for p in ("mu", "T")}
            ui.notice(f"Median standard deviation over the {lam.size} coordinates, μ-gradients: KL "
                      f"{_sig(med['mu']['kl'])}, score-based {_sig(med['mu']['score'])}, Fisher "
                      f"{_sig(med['mu']['fisher'])} ({order['mu']}); T-gradients: KL {_sig(med['T']['kl'])}, "
                      f"score-based {_sig(med['T']['score'])}, Fisher {_sig(med['T']['fisher'])} ({order['T']}). "
                      f"Fisher's μ-gradient is KL's multiplied by 2Λ (the target's Hessian), the score-based one by "
                      f"2ΛΣ = 2Λ/t²: small while q is narrow (large t), large when q is wide. The score-based "
                      f"μ-gradient is noisier than KL's in {n_sc} of {lam.size} coordinates{rule}, its T-gradient "
                      f"in {n_sct}.{dip} The markers ({int(gn)} Monte Carlo draws, through the same gradient "
                      f"code the algorithms use) lie within {100 * devs.max():.2g}% of the lines, "
                      f"{100 * np.median(devs):.2g}% in the median (a s.d. from n draws wobbles by about "
                      f"1/√(2n) ≈ {100 / math.sqrt(2 * int(gn)):.2g}% for the mean, more for T). The paper's "
                      "Fig. 4 (German credit, t = 10) shows KL smallest, then score-based, with Fisher far above.")
    if gres is not None:
        with tabg:
            with ui.guard("gradient noise table"):
                gtab = {}
                for m in CODES:
                    gtab[L(m)] = {"μ: median s.d. (formula)": np.median(gres["closed"]["mu"][m]),
                                 "μ: median s.d. (Monte Carlo)": np.median(gres["mc"]["mu"][m]),
                                 "T: median s.d. (formula)": np.median(gres["closed"]["T"][m]),
                                 "T: median s.d. (Monte Carlo)": np.median(gres["mc"]["T"][m])}
                ui.table(pd.DataFrame(gtab).T.map(lambda x: float(f"{x:.4g}")))
                lo, hi = float(lam.min()), float(lam.max())
                st.caption((f"The target: the German-credit posterior (1000 applicants, d = {lam.size}), Λ and ν "
                            "from 20,000 Monte Carlo draws, as in the paper, with μ = 0; its Λᵢᵢ run from "
                            f"{lo:.4g} to {hi:.4g} (mean {lam.mean():.4g}; the paper prints 0.52 to 148.82, mean "
                            "45.68)." if german else
                            f"The stand-in target: d = {lam.size} coordinates with Λᵢᵢ from {lo:.4g} to {hi:.4g} "
                            f"(mean {lam.mean():.4g}), the range and mean the paper prints for German credit; "
                            "neighbours correlated as set above.")
                           + " The paper's Fig. 4 draws the same medians as box plots over the coordinates.")

        @ui.explain()
        def stochastic_methods():
            st.markdown("Each step of KLD, FDr and SDr (stochastic gradient descent with the reparametrisation "
                        "trick) uses one draw θ = μ + T⁻ᵀz, z ~ N(0, I). For a Gaussian target N(ν, Λ⁻¹) "
                        "(Chen, Nott & Tan, Sec. 5.1), with Σ = T⁻ᵀT⁻¹:")
            st.latex(r"g_\mu^{KL}=Az-\Lambda(\mu-\nu),\quad A=T-\Lambda T^{-\top},\qquad "
                     r"g_\mu^{F}=2\Lambda g_\mu^{KL},\qquad g_\mu^{S}=2\Lambda\Sigma g_\mu^{KL}")
            st.latex(r"\operatorname{Var}(g_\mu^{KL})=\Sigma^{-1}-2\Lambda+\Lambda\Sigma\Lambda,\quad"
                     r"\operatorname{Var}(g_\mu^{F})=4\Lambda\operatorname{Var}(g_\mu^{KL})\Lambda,\quad"
                     r"\operatorname{Var}(g_\mu^{S})=4\Lambda\Sigma\operatorname{Var}(g_\mu^{KL})\Sigma\Lambda")
            st.markdown("With diagonal Λ and T the ratios are 4Λᵢᵢ² (Fisher) and 4Λᵢᵢ²/Tᵢᵢ⁴ (score-based): "
                        "Fisher is noisier than KL once Λᵢᵢ > 1/2, score-based once Λᵢᵢ/Tᵢᵢ² > 1/2 (for the "
                        "T-gradients at μ = ν: 1/4). The Tᵢᵢ-gradients are quadratic in z; for any Λ and T each "
                        "is c + ℓᵀz + zᵀPz, whose variance is")
            st.latex(r"\operatorname{Var}\big(c+\ell^\top z+z^\top Pz\big)=\ell^\top\ell+"
                     r"2\operatorname{tr}\Big[\big(\tfrac{P+P^\top}{2}\big)^2\Big]")
            st.markdown("(the lines; for diagonal Λ and T it reduces to the paper's formulas). The markers "
                        "estimate the same variances from the draws.")

# ----------------------------------------------------------------------------------------- batch
if tabb.open:
    with tabb:
        ctl, fig = ui.columns()
        with ctl:
            B = ui.slider("batch size B", "B", 2, 50, 5, 1)
            with ui.more("SDb run settings"):
                n_it = ui.slider("iterations", "it", 6, 300, 60, 6)
                mu0 = ui.slider("starting mean", "m0", -6.0, 6.0, -2.0, 0.5)
        with fig, ui.guard("SDb progression"):
            means, var, samples, status = _fig5(n_it, B, ui.seed(), mu0)
            shown = np.unique(np.linspace(1, n_it, 6).astype(int))
            ui.show(ui.recipe(dplots.sdb_progression, means[shown], var[shown], samples[shown - 1], shown, 2.0, 1.5,
                              title="SDb on N(2, 1.5): q_t and the B draws of iteration t"),
                    key="fig5", main=True)
            ui.report_status(status, "SDb")
            step0 = math.sqrt(1e-6 / (1 - 0.95))
            ui.notice(f"In {n_it} iterations the mean of q_t went from {_sig(means[0])} to {_sig(means[-1])} "
                      f"(target 2) and its variance from {_sig(var[0])} to {_sig(var[-1])} (target 1.5). SDb moves "
                      f"slowly at first: Adadelta scales each step by the size of its past steps, which start at "
                      f"zero, so its first steps are about √(ε/(1 − ρ)) ≈ {step0:.2g} whatever the gradient and "
                      "grow only as steps accumulate. While q_t sits in the target's tail, all B draws' scores "
                      "point the same way and the batch objective prefers a narrower q_t, so the variance shrinks "
                      "before the mean arrives. Raise the iterations (SDb run settings) to see q_t reach the target.")
    with tabb:
        rho = _url_number("rho", 0.9, -0.99, 0.99)
        sd1 = _url_number("sd1", 1.0, 0.001, 1000.0)
        sd2 = _url_number("sd2", 1.0, 0.001, 1000.0)
        st.markdown(f"**Mean-field fixed points** on the 2-D target of the first tab (ρ = {rho:g}, s.d. {sd1:g} "
                    f"and {sd2:g}).")
        with ui.guard("fixed points"):
            P = dv.precision_2d(rho, sd1, sd2)
            vals = {"kl": dv.meanfield_variances(P, "kl"), "fisher": dv.meanfield_variances(P, "fisher"),
                    "score": dv.meanfield_variances(P, "score"),
                    "fdb": dv.batch_meanfield_fixed_point(P, "fdb"),
                    "sdb": dv.batch_meanfield_fixed_point(P, "sdb")}
            runs = {}
            if ui.checkbox("also run FDb and SDb (mean field, Adadelta, 6000 steps)", "run", False):
                cov = np.linalg.inv(P)
                for m, (v, status) in _mf_runs(tuple(map(tuple, cov)), 6000, 5, ui.seed()).items():
                    runs[m] = v
                    ui.report_status(status, L(m))
            ui.show(ui.recipe(dplots.fixed_point_bars, vals, runs, title="mean-field variances"), key="bars")
            ui.notice(f"Batch Fisher (FDb) ends at KL's solution Σᵢᵢ = 1/Λᵢᵢ (Σ₁₁ = {_sig(vals['fdb'][0])}); batch "
                      f"score-based (SDb) ends where Σᵢᵢ (ΛΣΛ)ᵢᵢ = 1 (Σ₁₁ = {_sig(vals['sdb'][0])}): it never "
                      "collapses, but it underestimates more than FDb. Hatched bars: the batch methods.")

        @ui.explain()
        def batch_methods():
            st.latex(r"\hat S_{q_t}(\lambda)=\frac1B\sum_{i=1}^B\big\|\nabla\log h(\theta_i)+\Sigma^{-1}(\theta_i-\mu)"
                     r"\big\|^2_\Sigma,\qquad \theta_i\sim q_t")
            st.markdown("SDb draws B points from the current q_t, holds them fixed and takes a gradient step on this "
                        "batch objective in (μ, T), with Adadelta step sizes; FDb does the same with the Fisher "
                        "norm. h is the unnormalised target density.")

# ----------------------------------------------------------------------------------------- batch, step by step
if tabl.open:
    with tabl:
        ctl, fig = ui.columns()
        with fig:
            live_box = st.container()  # buttons and the live figure, above the choice of methods
            with ui.more("Methods shown"):
                shown = ui.multiselect("Methods", "ml", list(LIVE), list(LIVE), format_func=L)
        with ctl:
            # a moved step size redraws only the live figure: the runs go on from where they are
            steps = {m: ui.log_slider(LIVE_STEP[m][1], f"l{m}", *LIVE_STEP[m][2:], help=LIVE_HELP[m],
                                      on_change=ui_live.redraw("lb")) for m in shown if m in LIVE_STEP}
            st.caption("Move a step size while paused or playing: the run goes on from the current qₜ with the "
                       "new value (a star marks where it changed).")
        with live_box:
            if not shown:
                st.info("Choose at least one method (Methods shown, under the figure).")
            else:
                # the iteration is ?step= here (?it= is the Batch methods tab's number of iterations)
                tuned = [m for m in shown if m in LIVE_STEP]
                lv = ui_live.Live("lb", {m: f"l{m}" for m in tuned}, n_max=LIVE_N,
                                  bounds={m: LIVE_STEP[m][2:4] for m in tuned}, it_param="step", lr_param="lr")
                seed_l = ui.seed()

                def _draw_live(lv):
                    # GSM has no step size to change mid-run: a run with no run-time settings
                    runs = {m: lv.run(("divergences batch", m, LIVE_B, LIVE_MU0, seed_l),
                                      lambda m=m: _live_build(m, seed_l, steps.get(m)),
                                      {LIVE_STEP[m][0]: m} if m in LIVE_STEP else {}) for m in shown}
                    lv.show(ui.recipe(dplots.live_batch, {m: (t.mean[:, 0], t.cov[:, 0, 0]) for m, t in runs.items()},
                                      2.0, 1.5, bends={m: lv.bends(m) for m in tuned}, symbol="lr",
                                      height=310 if ui.lecture() else 385),
                            key="live_batch", main=True)
                    return {L(m): t for m, t in runs.items()}

                lv.player(_draw_live, per_tick=lambda it: max(1, it // 10))
                ui.notice("Drive the batch methods on the target N(2, 1.5) from q₀ = N(−2, 1), B = 5 draws per "
                          "step: Step (key N), Step ×10 (Shift+N), Play (P), Reset (0). SDb and FDb (batch "
                          "score-based and Fisher) take Adadelta steps, which start tiny and grow as steps "
                          "accumulate: raise their learning rate mid-run and the path speeds up from that iterate "
                          "on. Batch and match (BaM) weighs step t's draws by ρₜ = s / t: its large early steps jump "
                          "close to the target at once; Gaussian score matching (GSM, BaM's predecessor, no step size) "
                          "moves to the closest Gaussian whose score matches at each draw: on this Gaussian target the "
                          "draws' scores are the target's own, and it lands exactly on the target within a few dozen "
                          "steps. The link in the address bar opens this very step, bends "
                          "included.")

        @ui.explain()
        def batch_paths():
            st.markdown("Each step draws B points from the current qₜ. SDb and FDb take an Adadelta step on the "
                        "batch score-based or Fisher objective (times the learning rate); BaM (batch and match, "
                        "Cai et al. 2024) moves (μ, Σ) in closed form to match the draws' scores, with weight "
                        "ρₜ = s / t on the new information. GSM (Gaussian score matching, Modi et al. 2023) takes, "
                        "for each draw θ with score g, the Gaussian closest to qₜ in KL whose score at θ is g "
                        "(Σ′g = μ′ − θ), and averages these over the batch; it has no step size, and BaM adds one.")

# ----------------------------------------------------------------------------------------- objective landscapes
if tabo.open:
    with tabo:
        ctl, fig = ui.columns()
        with ctl:
            orho = ui.slider("correlation ρ", "orho", -0.99, 0.99, 0.9, 0.01)
            osd1 = ui.log_slider("s.d. of θ₁", "osd1", 0.01, 100.0, 1.0)
            osd2 = ui.log_slider("s.d. of θ₂", "osd2", 0.01, 100.0, 1.0)
            with ui.more("View"):
                odec = ui.slider("margin around the optima (decades)", "odec", 0.5, 3.0, 1.0, 0.25)
                oval = ui.toggle("show each valley (best Σ₁₁ for every Σ₂₂)", "oval", True)
                omc = ui.checkbox("check three points against Monte Carlo", "omc", False)
        ores = None
        with fig, ui.guard("objective landscapes"):
            ores = _landscape(orho, osd1, osd2, odec)
            ui.show(ui.recipe(dplots.objective_landscapes, ores, valleys=oval,  # lecture mode: the tab's name is the title
                              title=None if ui.lecture() else
                              "KL, Fisher and score-based over the variances of a diagonal q",
                              height=390 if ui.lecture() else 430),
                    key="land", main=True)
            opt, true = ores["optimum"], ores["true"]
            gap = ores["optimum_value"]["score"]
            cost = float(ores["collapse"]["score"][0]) - gap
            at22 = ores["collapse_at"][0]
            order = " < ".join(L(k) for k in sorted(CODES, key=lambda k: opt[k][0]))
            if np.isfinite(at22) and abs(orho) >= 0.005:
                valley = (f"The score-based valley bends: the larger Σ₂₂, the smaller its best Σ₁₁, and at Σ₂₂ = "
                          f"{_sig(at22)} ({_sig(at22 / opt['score'][1])} times its optimal Σ₂₂) it reaches Σ₁₁ = 0. ")
            else:
                valley = "With ρ = 0 no valley bends: every objective treats the two variances separately. "
            ui.notice(f"Each panel is one objective (dark = close to its minimum); the big marker is its closed-form "
                      f"optimum, the ring the grid's lowest point, × the target's true variances. KL and Fisher "
                      f"treat each variance on its own, so their valleys are straight lines. {valley}"
                      f"Squashing θ₁ to a point (Σ₁₁ = 0, collapse) costs KL and Fisher an infinite amount, but the "
                      f"score-based objective only {_sig(cost)} above its minimum {_sig(gap)}: as |ρ| grows that "
                      f"price shrinks towards 0 and the score-based fit slides towards collapse. The score-based "
                      f"panel stays dark towards the bottom-left corner: shrinking both variances never costs it "
                      f"more than 2 (its value at a point mass), while KL and Fisher shoot up. "
                      + (f"Σ₁₁ from small to large: {order}, all below the truth {_sig(true[0])} (KL's optimum "
                         f"1/Λ₁₁ is the largest)." if abs(orho) >= 0.005 else
                         "With uncorrelated coordinates all three optima are the target itself."))
    if ores is not None:
        with tabo:
            with ui.guard("landscape table"):
                rows = {}
                for k in CODES:
                    rows[L(k)] = {"optimum Σ₁₁": ores["optimum"][k][0], "optimum Σ₂₂": ores["optimum"][k][1],
                                  "grid's lowest Σ₁₁": ores["grid_min"][k][0], "grid's lowest Σ₂₂": ores["grid_min"][k][1],
                                  "minimum": ores["optimum_value"][k],
                                  "best with Σ₁₁ = 0": float(ores["collapse"][k][0])}
                ui.table(pd.DataFrame(rows).T.map(lambda x: float(f"{x:.4g}")))
                st.caption(f"The grid has 121 × 121 points, {ores['log_step']:.3f} decades apart: its lowest point "
                           "sits a step or two from the exact optimum (further along the flat score-based valley). \"Best with Σ₁₁ = 0\": the smallest value a "
                           "q with a collapsed θ₁ can reach (inf: impossible).")
                if omc:
                    pts = tuple((float(a), float(b)) for a, b in (ores["optimum"]["kl"], ores["optimum"]["score"],
                                                                  tuple(ores["true"])))
                    mc = _landscape_mc(orho, osd1, osd2, pts, ui.seed())
                    names = ["KL's optimum", "score-based optimum", "true variances"]
                    ui.table(pd.DataFrame({f"{names[i]} ({_sig(r['point'][0])}, {_sig(r['point'][1])})":
                                           {f"{L(k)}: {w}": v for k in CODES
                                            for w, v in zip(("formula", "Monte Carlo", "± s.e."), r[k])}
                                           for i, r in enumerate(mc)}).T.map(lambda x: float(f"{x:.4g}")))
                    st.caption("Monte Carlo: 20,000 draws from q of ‖∇log q − ∇log p‖² (Fisher; weighted by Σ for "
                               "score-based) and of log q − log p (KL).")

        @ui.explain()
        def closed_forms():
            st.markdown("With q = N(ν, diag(Σ₁₁, Σ₂₂)) and the target N(ν, Λ⁻¹) (Chen, Nott & Tan, Sec. 1.3):")
            st.latex(r"KL=\tfrac12\Big[\sum_i\Lambda_{ii}\Sigma_{ii}-d-\sum_i\log\Sigma_{ii}-\log\det\Lambda\Big],\quad"
                     r"F=\sum_i\Big[\frac1{\Sigma_{ii}}+(\Lambda^2)_{ii}\Sigma_{ii}\Big]-2\operatorname{tr}\Lambda")
            st.latex(r"S=d+\sum_{i,j}\Sigma_{ii}\Sigma_{jj}\Lambda_{ij}^2-2\sum_i\Sigma_{ii}\Lambda_{ii}")
            st.markdown("KL and F are sums of one-variance terms, and −log Σᵢᵢ or 1/Σᵢᵢ blows up at Σᵢᵢ = 0. S has "
                        "no such barrier and couples the variances through Σ₁₁Σ₂₂Λ₁₂²: setting ∂S/∂Σ₁₁ = 0 gives the "
                        "valley Σ₁₁ = (Λ₁₁ − Λ₁₂²Σ₂₂)/Λ₁₁², which hits 0 at Σ₂₂ = Λ₁₁/Λ₁₂². With sᵢ = ΣᵢᵢΛᵢᵢ the "
                        "score-based problem is a quadratic program over s ≥ 0; in 2-D its solution stays inside, "
                        "but in 3-D it can sit on the boundary sᵢ = 0 (the 3-D collapse tab).")

# ----------------------------------------------------------------------------------------- Table 6
if tabt.open:
    with tabt:
        ctl, fig = ui.columns()
        with ctl:
            st.markdown("**Table 6**: Bayesian logistic regression. Which Gaussian fits the posterior best, by "
                        "each method?")
            trun = ui.checkbox("run all six yourself", "t6", False,
                               help="On German credit, about two minutes the first time; then kept for every visitor.")
            st.caption("German credit, as the paper: 1000 applicants, 20 attributes, 49 coefficients, a bad credit "
                       "risk as y = 1, prior N(0, 100 I). The Monte Carlo posterior (20,000 NUTS draws) was computed "
                       "once and is stored with the app. The paper's second data set, a4a, is not available here.")
        tres = None
        with fig, ui.guard("Table 6"):
            paper = dvl.TABLE6_PAPER["German"]
            if trun:
                with st.spinner("Running KLD, FDr, SDr, FDb, SDb and BaM on German credit..."):
                    tres = _table6(ui.seed())
                ui.show(ui.recipe(dplots.table6_bars, tres["rows"], title="German credit (our run): accuracy of each fit"),
                        key="t6bars", main=True)
                r = tres["rows"]
                best = max(r, key=lambda k: r[k]["M*"][0])
                worst = min(r, key=lambda k: r[k]["M*"][0])
                ui.notice(f"Higher M* = closer to the Monte Carlo posterior. Here {L('kld' if best == 'kl' else best)} "
                          f"scores best ({r[best]['M*'][0]:.2f}) and {L('kld' if worst == 'kl' else worst)} lowest "
                          f"({r[worst]['M*'][0]:.2f}). The paper, on the same data, found KLD, SDb and BaM far ahead "
                          "of FDb, and FDr and SDr far behind: their one-draw gradients are very noisy (Gradient noise "
                          "tab), so they crawl and stop far from the posterior. Compare the order and the mode errors: "
                          "M*'s scale depends on a kernel width the paper does not state.")
            else:
                ui.show(ui.recipe(dplots.table6_bars, {k: {"M*": paper["M*"][k], "mode": paper["mode"][k]}
                                            for k in dvl.TABLE6_METHODS},
                                  title="The paper's Table 6, German credit (49 coefficients)"),
                        key="t6paper", main=True)
                ui.notice("The paper's numbers: M* measures how close each Gaussian's draws are to the Monte Carlo "
                          "posterior's (higher is better). KLD, batch score-based (SDb) and batch and match are far "
                          "ahead; batch Fisher (FDb) is behind; the stochastic-gradient Fisher and score-based fits "
                          "(FDr, SDr) are worst, with the largest mode errors. Tick the box to run all six yourself.")
        with tabt:
            with ui.guard("Table 6 table"):
                cols = {}
                for k in dvl.TABLE6_METHODS:
                    abbr, lab = dvs.METHOD_LABELS.get(k, k), L("kld" if k == "kl" else k)
                    name = lab if abbr in lab else f"{lab} ({abbr})"
                    row = {}
                    for ds in ("German", "a4a"):
                        pt = dvl.TABLE6_PAPER[ds]
                        row[f"paper, {ds}: M*"] = f"{pt['M*'][k][0]:.2f} ± {pt['M*'][k][1]:.2f}"
                        row[f"paper, {ds}: mode error"] = f"{pt['mode'][k][0]:.2f} ± {pt['mode'][k][1]:.2f}"
                    if tres is not None:
                        rr = tres["rows"][k]
                        row["ours: M*"] = f"{rr['M*'][0]:.2f} ± {rr['M*'][1]:.2f}"
                        row["ours: mode error"] = f"{rr['mode'][0]:.3f} ± {rr['mode'][1]:.3f}"
                        row["ours: iterations"] = f"{rr['iterations']:,}"
                        row["ours: seconds"] = f"{rr['seconds']:.1f}"
                    cols[name] = row
                ui.table(pd.DataFrame(cols).T)
                if tres is not None:
                    st.caption("Our run: " + tres["settings"] + ". Mode error: |μ − μ*| / σ* averaged over the "
                               "coefficients (μ*, σ*: the Monte Carlo marginal mode and s.d.).")

        @ui.explain()
        def real_data():
            st.markdown("M* = −log(MMD² + 10⁻⁵): MMD² compares 1000 draws of the fitted Gaussian with 1000 Monte Carlo "
                        "draws of the posterior through a Gaussian kernel (the paper does not give its width; here "
                        "√d on coordinates divided by the posterior s.d.). KLD: stochastic gradients of KL(q‖p); "
                        "FDr, SDr: one-draw gradients of the Fisher and score-based divergences (they need the "
                        "target's Hessian); FDb, SDb: gradients of their batch versions (B = 3 draws); BaM: batch "
                        "and match (B = 50). All use a full covariance.")
