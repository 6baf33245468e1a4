"""Reproductions of Kumar, Moellenhoff, Khan & Lucchi (2025) Sec. 6 (Fig. 2 / Table 3), App. H (Fig. 11),
App. F.1 (Fig. 5) and Sec. 3.6 (convexity in the square root, not in the variance).

Table 3's Diabetes-scale and breast-cancer rows (kumar2025-table3-*) run on the paper's own data: the LIBSVM
files rebuilt from the tables in vilab/data (vilab.models.kumar_logistic.libsvm_data). The Fig. 2 / Fig. 11 entries
run on the analogues used before those tables shipped (Pima diabetes, 532 complete rows, for Diabetes-scale;
the Wisconsin diagnostic data for breast-cancer): their numbers differ from Table 3 because the data differ, and
their checks of kind "paper" are the paper's qualitative claims."""

from __future__ import annotations

import numpy as np

from ..core import as_key
from . import Check, reproduction

PIMA_SETTINGS = ("Pima diabetes (R MASS, 532 complete cases, 7 standardised covariates + intercept), 80/20 split "
                 "(jax key 0: 426 / 106), beta = 1e-2 and steps VN 5e-3, SR-VN 5e-3, BW-GD 9e-4 (Table 2, "
                 "Diabetes-scale), five random starts m0 ~ N(0, I), C0 = I (key 0), 4000 iterations, Gauss-Hermite "
                 "expectations (20 nodes), rows every 20 iterations")
PIMA_SOURCE = ("computed by us on the Pima analogue of Diabetes-scale (independent runs of the catalogue's vn, srvn "
               "and bwgd); Table 3's Diabetes-scale values (negative ELBO 301.18, test NLL 79.72, accuracy 0.74) are "
               "for other data (768 rows, 614 for training, features scaled to [-1, 1])")
#: how the values recorded from this same code are labelled (a guard against change, not a reproduction)
REGRESSION_PIMA = ("recorded from this same code (vilab.models.kumar_logistic.fig2_runs on the Pima analogue): no independent "
                   "reference; Table 3's Diabetes-scale values are for other data")
SOLVER = "solver tolerance: the runs' common fixed point after the stated steps"
TIE_SOURCE = ("Table 3 (Sec. 6): on Diabetes-scale and breast-cancer VN, BW-GD and SQ-VN print identical train ELBO, "
              "test NLL and accuracy")


def _first_below(runs, name, best, tol):
    """The first recorded iteration where every start is within ``tol`` of ``best`` (None if never)."""
    r = runs[name]
    ex = np.nanmax(r["neg_elbo"] - best, axis=0)
    i = np.flatnonzero(ex < tol)
    return int(r["iterations"][i[0]]) if i.size else None


def _fig2_checks(nonconvex: bool):
    from ..models.kumar_logistic import fixed_point_residuals, load, mean_regulariser, target, fig2_runs

    data = load("pima")
    runs = fig2_runs(data, 4000, nonconvex=nonconvex, record_every=20, key=as_key(0))
    finals = np.concatenate([r["neg_elbo"][:, -1] for r in runs.values()])
    nlls = np.concatenate([r["test_nll"][:, -1] for r in runs.values()])
    accs = np.concatenate([r["accuracy"][:, -1] for r in runs.values()])
    best = float(np.nanmin(np.concatenate([r["neg_elbo"].ravel() for r in runs.values()])))
    tgt = target(data, nonconvex)
    worst = max(fixed_point_residuals(tgt, m, V)["grad"] for r in runs.values()
                for m, V in zip(r["final_mean"], r["final_cov"]))
    its = {name: _first_below(runs, name, best, 1e-6) for name in runs}
    status = sorted({s for r in runs.values() for s in r["status"]})
    return data, runs, finals, nlls, accs, worst, its, status, float(mean_regulariser(runs["vn"]["final_mean"][0]))


@reproduction("kumar2025-fig2-pima", items=('kumar-fig2-table3',), paper="Kumar et al. (2025)", slow=True,
              what="Fig. 2 / Table 3 analogue on Pima diabetes: VN, SR-VN and BW-GD at Table 2's Diabetes-scale steps "
                   "reach one fixed point; VN and SR-VN move alike; BW-GD is NOT slower here",
              settings=PIMA_SETTINGS, kind="mixed", source=TIE_SOURCE)
def _fig2_pima():
    data, runs, finals, nlls, accs, worst, its, status, _ = _fig2_checks(False)
    d = dict(kind="regression", source=REGRESSION_PIMA)
    rec = "printed precision: recorded to the digits shown (2 units of the last)"
    its_tol = "chosen threshold: 40 iterations (two recording intervals of 20)"
    return [
        Check("spread of the final negative ELBO over methods and starts", 0.0, float(np.ptp(finals)), tol=1e-6,
              kind="paper", source=TIE_SOURCE, tol_source=SOLVER),
        Check("spread of the final test NLL (sum) over methods and starts", 0.0, float(np.ptp(nlls)), tol=1e-5,
              kind="paper", source=TIE_SOURCE, tol_source=SOLVER),
        Check("spread of the final test accuracy", 0.0, float(np.ptp(accs)), tol=0.0, kind="paper",
              source=TIE_SOURCE, tol_source="exact"),
        Check("largest |E_q[grad l]| at the end (Eq. 22)", 0.0, worst, tol=1e-5, kind="paper",
              source="Eq. 22: the minimiser satisfies E_q[grad l] = 0", tol_source=SOLVER),
        Check("final negative ELBO (train, 426 points)", 195.159766, round(float(np.mean(finals)), 6), tol=2e-6, **d,
              tol_source=rec, note="Table 3 prints 301.18 for Diabetes-scale (614 training points, other scaling)"),
        Check("final test NLL, summed over 106 test points", 47.0537, round(float(np.mean(nlls)), 4), tol=2e-4, **d,
              tol_source=rec, note="Table 3 prints 79.72 (about 154 test points)"),
        Check("final test accuracy", 0.7736, round(float(np.mean(accs)), 4), tol=1e-4, **d,
              tol_source="printed precision: recorded to 4 decimals", note="Table 3 prints 0.74"),
        Check("VN: iterations until every start is within 1e-6 of the best", 1720, its["vn"] or -1, tol=40, **d,
              tol_source=its_tol),
        Check("SR-VN: the same", 1700, its["srvn"] or -1, tol=40, **d, tol_source=its_tol),
        Check("BW-GD: the same", 500, its["bwgd"] or -1, tol=40, **d, tol_source=its_tol,
              note="Fig. 2's caption says BW-GD 'tends to be slower'; not on this analogue: with standardised "
                   "features H is larger than on the [-1, 1]-scaled file, so alpha = 9e-4 is a bigger step in "
                   "effect (alpha lambda_max(H) is about 0.2), while VN's and SR-VN's rate is set by rho = 5e-3 alone"),
        Check("SR-VN / VN iterations (Fig. 2: 'SR-VN and VN perform similarly')", 1.0,
              (its["srvn"] or np.nan) / (its["vn"] or np.nan), tol=0.1, kind="paper",
              tol_source="chosen threshold: 'perform similarly' read as within 10 %",
              source="Fig. 2 caption (Sec. 6): 'in most cases, SR-VN and VN perform similarly'"),
        Check("every run ends without diverging", ("max_steps",), tuple(status), kind="paper",
              source="Sec. 6: Table 2's constant step sizes converge for all three methods", tol_source="exact"),
    ]


@reproduction("kumar2025-fig11-nonconvex", items=('kumar-fig11',), paper="Kumar et al. (2025)", slow=True,
              what="Fig. 11 (App. H) analogue: with sum_i m_i^2 / (1 + m_i^2) added on the mean, VN, SR-VN and BW-GD "
                   "still converge, to one point",
              settings=PIMA_SETTINGS + "; r(m) = sum_i m_i^2 / (1 + m_i^2) added to the negative ELBO",
              kind="mixed", source="App. H, Fig. 11: 'All compared methods still converge'")
def _fig11():
    data, runs, finals, nlls, accs, worst, its, status, r_end = _fig2_checks(True)
    d = dict(kind="regression", source=REGRESSION_PIMA + "; with App. H's regulariser on the mean")
    src = "App. H, Fig. 11: 'All compared methods still converge'"
    return [
        Check("every run ends without diverging", ("max_steps",), tuple(status), kind="paper", source=src,
              tol_source="exact"),
        Check("spread of the final objective over methods and starts", 0.0, float(np.ptp(finals)), tol=1e-6,
              kind="paper", source=src, tol_source=SOLVER),
        Check("largest |E_q[grad l] + grad r(m)| at the end (stationary)", 0.0, worst, tol=1e-5, kind="paper",
              source=src, tol_source=SOLVER),
        Check("final objective (negative ELBO + r(m))", 196.848587, round(float(np.mean(finals)), 6), tol=2e-6, **d,
              tol_source="printed precision: recorded to 6 decimals (2 units of the last)"),
        Check("r(m) at the end", 1.66, round(r_end, 2), tol=0.01, **d,
              tol_source="printed precision: recorded to 2 decimals (1 unit of the last)",
              note="the regulariser is active: it moves the optimum (test NLL sum "
                   f"{float(np.mean(nlls)):.4f} against 47.0537 without it)"),
        Check("VN / SR-VN / BW-GD: iterations to within 1e-6 of the best", (1720, 1720, 460),
              (its["vn"] or -1, its["srvn"] or -1, its["bwgd"] or -1), tol=40, **d,
              tol_source="chosen threshold: 40 iterations (two recording intervals of 20)"),
    ]


BC_SETTINGS = ("scikit-learn's Wisconsin diagnostic breast cancer (569 x 30 standardised + intercept, d = 31), 80/20 "
               "split (jax key 0: 455 / 114), beta = 1e-1 and steps VN 9e-3, SR-VN 6e-3, BW-GD 6.3e-3 (Table 2, "
               "breast-cancer), five random starts m0 ~ N(0, I), C0 = I (key 0), 8000 iterations, Gauss-Hermite "
               "expectations (40 nodes), rows every 80 iterations")
BC_SOURCE = ("computed by us on the Wisconsin diagnostic data (not LIBSVM's 683 x 10 breast-cancer file, whose Table 3 "
             "values are negative ELBO 52.86, test NLL 13.62, accuracy 0.956)")


@reproduction("kumar2025-fig2-breast-cancer", items=('kumar-fig2-table3',), paper="Kumar et al. (2025)", slow=True,
              what="Fig. 2 analogue on the Wisconsin diagnostic breast-cancer data (d = 31): VN and SR-VN reach the "
                   "fixed point at Table 2's steps, BW-GD is slower",
              settings=BC_SETTINGS, kind="mixed", source="Fig. 2 caption (Sec. 6): 'SR-VN and VN perform similarly "
                                                         "while BW-GD tends to be slower'")
def _fig2_bc():
    from ..models.kumar_logistic import final_values, fixed_point_residuals, load, target, fig2_runs

    data = load("breast-cancer")
    runs = fig2_runs(data, 8000, record_every=80, key=as_key(0))
    tgt = target(data, False, 40)
    res = {name: max(fixed_point_residuals(tgt, m, V, 40)["grad"] for m, V in zip(r["final_mean"], r["final_cov"]))
           for name, r in runs.items()}
    fe = {name: final_values(r) for name, r in runs.items()}
    nll = {name: final_values(r, "test_nll") for name, r in runs.items()}
    src = "Fig. 2 caption (Sec. 6): 'SR-VN and VN perform similarly while BW-GD tends to be slower'"
    d = dict(kind="regression", source="recorded from this same code (vilab.models.kumar_logistic.fig2_runs on the "
                                        "Wisconsin diagnostic data): no independent reference; " + BC_SOURCE)
    return [
        Check("VN and SR-VN: largest |E_q[grad l]| after 8000 steps (at the fixed point)", 0.0,
              max(res["vn"], res["srvn"]), tol=1e-6, kind="paper", source=src, tol_source=SOLVER),
        Check("BW-GD: largest |E_q[grad l]| after 8000 steps (still moving)", "> 100 x VN's",
              f"{res['bwgd']:.2g}", margin=float(res["bwgd"] - 100 * max(res["vn"], res["srvn"], 1e-12)),
              kind="paper", source=src,
              tol_source="chosen threshold: 'tends to be slower' read as a residual 100 times VN's after 8000 steps"),
        Check("VN vs SR-VN final negative ELBO", 0.0, float(np.max(np.abs(fe["vn"] - fe["srvn"]))), tol=1e-6,
              kind="paper", source=TIE_SOURCE, tol_source=SOLVER),
        Check("final negative ELBO (VN, train, 455 points)", -22.0334, round(float(np.mean(fe["vn"])), 4), tol=2e-4,
              **d, tol_source="printed precision: recorded to 4 decimals (2 units of the last)"),
        Check("final test NLL (VN, sum over 114 points)", 25.92, round(float(np.mean(nll["vn"])), 2), tol=0.02, **d,
              tol_source="printed precision: recorded to 2 decimals (2 units of the last)",
              note="the test NLL passes through a lower value on the way (the prior beta = 0.1 is weak for 31 "
                   "correlated features)"),
    ]


@reproduction("kumar2025-convexity", items=('kumar-convexity',), paper="Kumar et al. (2025)",
              what="Sec. 3.6: the expected loss minus the entropy is convex in the scale sigma but not in the variance "
                   "v; for |theta| at m = 0, E|theta| = sqrt(2 v / pi) and d2L/dv2 < 0 exactly for v > 2 pi",
              settings="1-D losses |theta| (closed forms) and log(1 + e^-theta) (Bonnet / Price, 1-D quadrature); "
                       "grid m in [-3, 3] (61), sigma in [0.05, 5] (100); weight 1 (|theta|) and 5 (logistic)",
              kind="mixed", source="Sec. 3.6 (after Domke 2020): E_q[l] is convex in (m, C) but not in (m, V)")
def _convexity():
    from ..models.kumar_logistic import abs_loss, abs_loss_curvatures, convexity_grid

    g_abs = convexity_grid("abs")
    g_log = convexity_grid("logistic", weight=5.0)
    v = np.linspace(1.0, 20.0, 190_001)
    c = abs_loss_curvatures(0.0, np.sqrt(v))["d2_v"]
    v_cross = float(v[np.flatnonzero(c < 0)[0]])
    z = np.random.default_rng(0).standard_normal(1_000_000)
    src = "Sec. 3.6 (Domke 2020): the expected loss is convex in the Cholesky factor C, hence in sigma"
    src_v = "Sec. 3.6 and Sec. 1: the objective is not convex in V"
    return [
        Check("|theta|: smallest d2L/dsigma2 on the grid is positive", "> 0", float(g_abs["d2_s"].min()),
              margin=float(g_abs["d2_s"].min()), kind="paper", source=src, tol_source="exact",
              note=f"min {g_abs['d2_s'].min():.3g}"),
        Check("|theta|: some d2L/dv2 on the grid is negative (smallest)", "< 0", float(g_abs["d2_v"].min()),
              margin=-float(g_abs["d2_v"].min()), kind="paper", tol_source="exact",
              source=src_v, note=f"negative on {100 * np.mean(g_abs['d2_v'] < 0):.0f}% of the grid"),
        Check("logistic loss (weight 5): d2L/dsigma2 > 0 everywhere on the grid (smallest)", "> 0",
              float(g_log["d2_s"].min()), margin=float(g_log["d2_s"].min()), kind="paper", source=src,
              tol_source="exact"),
        Check("logistic loss (weight 5): some d2L/dv2 < 0 (smallest)", "< 0", float(g_log["d2_v"].min()),
              margin=-float(g_log["d2_v"].min()), kind="paper", tol_source="exact",
              source=src_v, note=f"negative on {100 * np.mean(g_log['d2_v'] < 0):.0f}% of the grid"),
        Check("|theta| at m = 0: v where d2L/dv2 turns negative", round(2 * np.pi, 4), round(v_cross, 4), tol=2e-4,
              tol_source="chosen threshold: two steps of the 1e-4 grid in v",
              kind="derived", source="computed by us: d2/dv2 [sqrt(2v/pi) - log(v)/2] = -(1/4) sqrt(2/pi) v^-3/2 + "
                                     "1/(2 v^2) < 0 iff v > 2 pi"),
        Check("E|theta| at (m, sigma) = (0.7, 0.5): closed form vs Monte Carlo (1e6 draws)",
              round(float(np.abs(0.7 + 0.5 * z).mean()), 3), round(float(abs_loss(0.7, 0.5)), 3), tol=2e-3,
              tol_source="Monte Carlo s.e.: about 4 s.e. of 1e6 draws (values to 3 decimals)",
              kind="derived", source="computed by us: Monte Carlo, numpy default_rng(0)"),
    ]


@reproduction("kumar2025-fig5-flops", items=('kumar-fig5',), tol_source='round-off', paper="Kumar et al. (2025)",
              what="App. F.1 / Fig. 5: per-step flop counts VN d^3 + 4 d^2, SR-VN 3 d^3 + 4.5 d^2 + d/2, BW-GD "
                   "3 d^3 + 5 d^2 (measured times are machine-dependent and not checked)",
              settings="the printed formulas at d = 8, 100, 784",
              kind="mixed", source="App. F.1 (Fig. 5): the flop counts overlaid on the measured run times")
def _fig5():
    from ..models.kumar_logistic import flops

    f = flops([8, 100, 784])
    src = "App. F.1 (Fig. 5): VN O(d^3 + 4d^2), SR-VN O(3d^3 + 4.5d^2 + d/2), BW-GD O(3d^3 + 5d^2)"
    return [
        Check("VN at d = 8, 100, 784", (768.0, 1.04e6, 484_348_928.0), tuple(float(x) for x in f["vn"]), tol=1e-9,
              rel=True, kind="paper", source=src),
        Check("SR-VN at d = 8, 100, 784", (1828.0, 3_045_050.0, 1_448_437_256.0),
              tuple(float(x) for x in f["srvn"]), tol=1e-9, rel=True, kind="paper", source=src),
        Check("BW-GD at d = 8, 100, 784", (1856.0, 3.05e6, 1_448_744_192.0), tuple(float(x) for x in f["bwgd"]),
              tol=1e-9, rel=True, kind="paper", source=src),
        Check("SR-VN / VN at d = 784 (tends to 3)", 2.99, round(float(f["srvn"][2] / f["vn"][2]), 2), tol=0.0, tol_source="exact: rounded to 2 decimals",
              kind="derived", source="computed by us from the printed formulas"),
    ]


# ------------------------------------------------ Table 3 on the paper's own data (LIBSVM, rebuilt exactly)

T3_SOURCE = "Table 3 (Sec. 6)"
T3_SEEDS = 50
T3_TIE_STEPS = 4000


def _t3_settings(name: str) -> str:
    from ..models.kumar_logistic import DATASETS, TABLE2

    paper = DATASETS[name][0]
    t2 = TABLE2[paper]
    return (f"{DATASETS[name][2]}; {T3_SEEDS} random splits (jax keys 0-{T3_SEEDS - 1}) of {t2['N_train']} "
            f"training and {t2['N'] - t2['N_train']} test points (Table 2; the paper does not say how it split); "
            f"beta = {t2['beta']:g}, "
            "no intercept; the optimum of each split by VN with rho = 1 (60 steps, a Newton-like fixed-point "
            "iteration), Gauss-Hermite expectations (40 nodes); the tie: VN, SR-VN and BW-GD at Table 2's steps "
            f"({t2['steps']['vn']:g}, {t2['steps']['srvn']:g}, {t2['steps']['bwgd']:g}) from one random start "
            f"(m0 ~ N(0, I), C0 = I, key 0), {T3_TIE_STEPS} steps, on split 0")


def _table3_checks(name: str, medians: dict, sklearn42: tuple, elbo_note: str = ""):
    from ..models.kumar_logistic import DATASETS, TABLE3, fig2_runs, load, table3_comparison, table3_splits

    paper = DATASETS[name][0]
    printed = TABLE3[paper]
    comp = table3_comparison(name, range(T3_SEEDS))
    rows = {r["key"]: r for r in comp["rows"]}
    sp = comp["splits"]
    data = load(name, seed=0)
    runs = fig2_runs(data, T3_TIE_STEPS, n_starts=1, record_every=T3_TIE_STEPS // 4, n_points=40, key=as_key(0))
    fe = {m: float(r["neg_elbo"][0, -1]) for m, r in runs.items()}
    fn = {m: float(r["test_nll"][0, -1]) for m, r in runs.items()}
    fa = {m: float(r["accuracy"][0, -1]) for m, r in runs.items()}
    m_gap = {m: float(np.max(np.abs(r["final_mean"][0] - sp["mean"][0]))) for m, r in runs.items()}
    e_gap = max(abs(v - float(sp["neg_elbo"]["paper"][0])) for v in fe.values())
    sk = table3_splits(name, [42], splitter="sklearn")
    sk_vals = (round(float(sk["neg_elbo"]["none"][0]), 2), round(float(sk["test_nll"][0]), 2),
               round(float(sk["accuracy"][0]), 4))

    def span(r, f=".2f"):
        return f"[{r['min']:{f}}, {r['max']:{f}}] (median {r['median']:{f}})"

    band = ("modelling difference: the paper does not say how it split, so its value passes when it lies in the range "
            f"over {T3_SEEDS} random splits (margin: distance to the nearer end)")

    def band_check(key, what, pk, f=".2f", note="", reported_only=False, tol_source=band):
        r = rows[key]
        v = float(printed[pk])
        return Check(f"{what}: Table 3's {printed[pk]} " + ("against" if reported_only else "inside")
                     + f" the band over {T3_SEEDS} splits" + (", reported only" if reported_only else ""),
                     printed[pk], span(r, f), reported=reported_only,
                     margin=None if reported_only else min(v - float(r["min"]), float(r["max"]) - v),
                     ties=not reported_only, kind="paper", source=T3_SOURCE,
                     tol_source="" if reported_only else tol_source,
                     note=(("inside" if r["inside"] else "OUTSIDE") + "; " + note) if reported_only else note)

    derived = dict(kind="derived", source=f"computed by us: the optimum of the negative ELBO on each of {T3_SEEDS} "
                                          "random splits of the rebuilt LIBSVM file (vilab.models.kumar_logistic."
                                          "table3_comparison)")
    regression = dict(kind="regression", source="recorded from this same code (vilab.models.kumar_logistic."
                                                "table3_comparison / table3_splits): no independent reference",
                      tol_source="printed precision: recorded to the digits shown")
    tie_src = ("Table 3 (Sec. 6): VN, BW-GD and SQ-VN print identical train ELBO, test NLL and accuracy on "
               f"{paper}")
    return [
        band_check("none", "train negative ELBO without constants, E_q[l] - 1/2 log det V (our reading of what the "
                   "table prints: see the note)", "neg_elbo",
                   note="the paper does not say which constants its 'Train ELBO' keeps; our identification, as for "
                        "Tan's Table 11: without -d/2 (1 + log 2 pi) the medians over splits of BOTH rebuilt data "
                        "sets lie within 1.5 of the printed values, and both printed values lie inside the bands",
                   tol_source="set after seeing the result: which constants the printed 'Train ELBO' leaves out was "
                              "identified by this match (our reading); then the split band as below"),
        band_check("paper", "train negative ELBO as Sec. 1 defines it, E_q[l] - 1/2 log det V - d/2 (1 + log 2 pi)",
                   "neg_elbo", note=elbo_note, reported_only=True),
        band_check("test_nll", "test NLL, a SUM of log(1 + exp(-y m^T x)) over the test points", "test_nll"),
        band_check("accuracy", "test accuracy", "accuracy", f=".3f"),
        Check("median over splits of Sec. 1's negative ELBO", medians["paper"], round(rows["paper"]["median"], 3),
              tol=2e-3, **regression),
        Check("median over splits of E_q[l] - 1/2 log det V", medians["none"], round(rows["none"]["median"], 3),
              tol=2e-3, **regression),
        Check("median over splits of the test NLL (sum)", medians["test_nll"], round(rows["test_nll"]["median"], 3),
              tol=2e-3, **regression),
        Check("largest |E_q[grad l]| at the {} optima (Eq. 22)".format(T3_SEEDS), 0.0,
              float(np.max(sp["res_grad"])), tol=1e-8, **derived, tol_source="solver tolerance: VN with rho = 1"),
        Check(f"VN, SR-VN, BW-GD after {T3_TIE_STEPS} steps at Table 2's steps: spread of the negative ELBO", 0.0,
              float(np.ptp(list(fe.values()))), tol=0.005, kind="paper", source=tie_src,
              note="within half a unit of Table 3's last digit", tol_source="printed precision: Table 3's 2 decimals"),
        Check("the same: spread of the test NLL (sum)", 0.0, float(np.ptp(list(fn.values()))), tol=0.005,
              kind="paper", source=tie_src, tol_source="printed precision: Table 3's 2 decimals"),
        Check("the same: spread of the test accuracy", 0.0, float(np.ptp(list(fa.values()))), tol=0.0, kind="paper",
              source=tie_src, tol_source="exact"),
        Check("the three runs end at the VN rho = 1 optimum of split 0: largest |negative ELBO difference|", 0.0,
              e_gap, tol=1e-5, **derived, tol_source=f"solver tolerance: {T3_TIE_STEPS} steps"),
        Check("on sklearn's train_test_split(test_size=0.2, random_state=42): negative ELBO without constants, "
              "test NLL (sum), accuracy", sklearn42, sk_vals, tol=0.006, kind="regression",
              tol_source="printed precision: recorded to 2 decimals (accuracy 4)",
              source="recorded from this same code: the optimum on that one split (vilab.models.kumar_logistic.table3_splits, "
                     "splitter='sklearn'); no independent reference",
              note=f"Table 3 prints ({printed['neg_elbo']}, {printed['test_nll']}, {printed['accuracy']}). We looked "
                   "at random_state 0, 1 and 42 (42 being the usual default) after the band: on this split the "
                   "accuracy equals the printed one on both data sets, the negative ELBO without constants is "
                   "close, the test NLL is not; a hint about the paper's split, not a proof"),
        Check("... and largest |mean difference| for VN and SR-VN", 0.0, max(m_gap["vn"], m_gap["srvn"]), tol=1e-5,
              **derived, tol_source=f"solver tolerance: {T3_TIE_STEPS} steps"),
        Check("... and for BW-GD (still creeping along the flattest direction)", 0.0, m_gap["bwgd"], tol=2e-3,
              **derived, tol_source="chosen threshold: 2e-3, BW-GD's mean still creeping after 4000 steps", note="BW-GD's rate is set by alpha lambda_min(H): after 4000 steps its negative ELBO is "
                              "within 1e-7 of the optimum, its mean within about 5e-4"),
    ]


@reproduction("kumar2025-table3-diabetes", items=('kumar-fig2-table3',), paper="Kumar et al. (2025)", slow=True,
              what="Table 3, Diabetes-scale, on the LIBSVM file rebuilt from the 768-row Pima table: the printed train "
                   "negative ELBO (301.18), test NLL (79.72, a sum) and accuracy (0.74) against their range over 50 "
                   "random splits; VN, SR-VN and BW-GD tie at Table 2's steps",
              settings=_t3_settings("diabetes-scale"), kind="mixed", source=T3_SOURCE)
def _table3_diabetes():
    return _table3_checks("diabetes-scale", {"paper": 289.935, "none": 301.286, "test_nll": 74.910},
                          (301.13, 78.61, 0.7403))


@reproduction("kumar2025-table3-breast-cancer", items=('kumar-fig2-table3',), paper="Kumar et al. (2025)", slow=True,
              what="Table 3, breast-cancer, on LIBSVM's breast-cancer_scale rebuilt from the 683 complete rows of the "
                   "Wisconsin table (Id + 9 scores, d = 10): printed negative ELBO 52.86, test NLL 13.62 and accuracy "
                   "0.956 against their range over 50 random splits; the three methods tie",
              settings=_t3_settings("breast-cancer-libsvm"), kind="mixed", source=T3_SOURCE)
def _table3_breast_cancer():
    return _table3_checks(
        "breast-cancer-libsvm", {"paper": 40.063, "none": 54.253, "test_nll": 10.785}, (53.15, 11.45, 0.9562),
        elbo_note="52.86 lies above every split's value (500 splits reach 47.6 at most): with this constant the "
                  "printed value cannot be matched, so the table leaves it out (the check above); the unscaled "
                  "breast-cancer file gives about 88-115, and an intercept lowers the values")
