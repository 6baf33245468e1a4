"""Reproductions of Kumar, Moellenhoff, Khan & Lucchi (2025) Sec. 6 (Fig. 2 / Table 3), App. H (Fig. 11),
App. F.1 (Fig. 5) and Sec. 3.6 (convexity in the square root, not in the variance), on data that ship with
packages: the paper's LIBSVM files are not available, so Pima diabetes stands in for Diabetes-scale and the
Wisconsin diagnostic breast-cancer data for LIBSVM's breast-cancer (vilab.kumar_logistic). Their numbers
differ from Table 3 because the data differ; the checks of kind "paper" are the paper's qualitative claims."""

from __future__ import annotations

import numpy as np

from . import Check, reproduction

PIMA_SETTINGS = ("Pima diabetes (R MASS, 532 complete cases, 7 standardised covariates + intercept), 80/20 split "
                 "(jax key 0: 426 / 106), beta = 1e-2 and steps VN 5e-3, SR-VN 5e-3, BW-GD 9e-4 (Table 2, "
                 "Diabetes-scale), five random starts m0 ~ N(0, I), C0 = I (key 0), 4000 iterations, Gauss-Hermite "
                 "expectations (20 nodes), rows every 20 iterations")
PIMA_SOURCE = ("computed by us on the Pima analogue of Diabetes-scale (independent runs of the catalogue's vn, srvn "
               "and bwgd); Table 3's Diabetes-scale values (negative ELBO 301.18, test NLL 79.72, accuracy 0.74) are "
               "for other data (768 rows, 614 for training, features scaled to [-1, 1])")
TIE_SOURCE = ("Table 3 (Sec. 6): on Diabetes-scale and breast-cancer VN, BW-GD and SQ-VN print identical train ELBO, "
              "test NLL and accuracy")


def _first_below(runs, name, best, tol):
    """The first recorded iteration where every start is within ``tol`` of ``best`` (None if never)."""
    r = runs[name]
    ex = np.nanmax(r["neg_elbo"] - best, axis=0)
    i = np.flatnonzero(ex < tol)
    return int(r["iterations"][i[0]]) if i.size else None


def _fig2_checks(nonconvex: bool):
    from ..kumar_logistic import fixed_point_residuals, load, mean_regulariser, target, fig2_runs

    data = load("pima")
    runs = fig2_runs(data, 4000, nonconvex=nonconvex, record_every=20)
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


@reproduction("kumar2025-fig2-pima", paper="Kumar et al. (2025)", slow=True,
              what="Fig. 2 / Table 3 analogue on Pima diabetes: VN, SR-VN and BW-GD at Table 2's Diabetes-scale steps "
                   "reach one fixed point; VN and SR-VN move alike; BW-GD is NOT slower here",
              settings=PIMA_SETTINGS, kind="mixed", source=TIE_SOURCE)
def _fig2_pima():
    data, runs, finals, nlls, accs, worst, its, status, _ = _fig2_checks(False)
    d = dict(kind="derived", source=PIMA_SOURCE)
    return [
        Check("spread of the final negative ELBO over methods and starts", 0.0, float(np.ptp(finals)), tol=1e-6,
              kind="paper", source=TIE_SOURCE),
        Check("spread of the final test NLL (sum) over methods and starts", 0.0, float(np.ptp(nlls)), tol=1e-5,
              kind="paper", source=TIE_SOURCE),
        Check("spread of the final test accuracy", 0.0, float(np.ptp(accs)), tol=0.0, kind="paper",
              source=TIE_SOURCE),
        Check("largest |E_q[grad l]| at the end (Eq. 22)", 0.0, worst, tol=1e-5, kind="paper",
              source="Eq. 22: the minimiser satisfies E_q[grad l] = 0"),
        Check("final negative ELBO (train, 426 points)", 195.159766, round(float(np.mean(finals)), 6), tol=2e-6, **d,
              note="Table 3 prints 301.18 for Diabetes-scale (614 training points, other scaling)"),
        Check("final test NLL, summed over 106 test points", 47.0537, round(float(np.mean(nlls)), 4), tol=2e-4, **d,
              note="Table 3 prints 79.72 (about 154 test points)"),
        Check("final test accuracy", 0.7736, round(float(np.mean(accs)), 4), tol=1e-4, **d,
              note="Table 3 prints 0.74"),
        Check("VN: iterations until every start is within 1e-6 of the best", 1720, its["vn"] or -1, tol=40, **d),
        Check("SR-VN: the same", 1700, its["srvn"] or -1, tol=40, **d),
        Check("BW-GD: the same", 500, its["bwgd"] or -1, tol=40, **d,
              note="Fig. 2's caption says BW-GD 'tends to be slower'; not on this analogue: with standardised "
                   "features H is larger than on the [-1, 1]-scaled file, so alpha = 9e-4 is a bigger step in "
                   "effect (alpha lambda_max(H) is about 0.2), while VN's and SR-VN's rate is set by rho = 5e-3 alone"),
        Check("SR-VN / VN iterations (Fig. 2: 'SR-VN and VN perform similarly')", 1.0,
              (its["srvn"] or np.nan) / (its["vn"] or np.nan), tol=0.1, kind="paper",
              source="Fig. 2 caption (Sec. 6): 'in most cases, SR-VN and VN perform similarly'"),
        Check("every run ends without diverging", ("max_steps",), tuple(status), kind="paper",
              source="Sec. 6: Table 2's constant step sizes converge for all three methods"),
    ]


@reproduction("kumar2025-fig11-nonconvex", paper="Kumar et al. (2025)", slow=True,
              what="Fig. 11 (App. H) analogue: with sum_i m_i^2 / (1 + m_i^2) added on the mean, VN, SR-VN and BW-GD "
                   "still converge, to one point",
              settings=PIMA_SETTINGS + "; r(m) = sum_i m_i^2 / (1 + m_i^2) added to the negative ELBO",
              kind="mixed", source="App. H, Fig. 11: 'All compared methods still converge'")
def _fig11():
    data, runs, finals, nlls, accs, worst, its, status, r_end = _fig2_checks(True)
    d = dict(kind="derived", source=PIMA_SOURCE + "; with App. H's regulariser on the mean")
    src = "App. H, Fig. 11: 'All compared methods still converge'"
    return [
        Check("every run ends without diverging", ("max_steps",), tuple(status), kind="paper", source=src),
        Check("spread of the final objective over methods and starts", 0.0, float(np.ptp(finals)), tol=1e-6,
              kind="paper", source=src),
        Check("largest |E_q[grad l] + grad r(m)| at the end (stationary)", 0.0, worst, tol=1e-5, kind="paper",
              source=src),
        Check("final objective (negative ELBO + r(m))", 196.848587, round(float(np.mean(finals)), 6), tol=2e-6, **d),
        Check("r(m) at the end", 1.66, round(r_end, 2), tol=0.01, **d,
              note="the regulariser is active: it moves the optimum (test NLL sum "
                   f"{float(np.mean(nlls)):.4f} against 47.0537 without it)"),
        Check("VN / SR-VN / BW-GD: iterations to within 1e-6 of the best", (1720, 1720, 460),
              (its["vn"] or -1, its["srvn"] or -1, its["bwgd"] or -1), tol=40, **d),
    ]


BC_SETTINGS = ("scikit-learn's Wisconsin diagnostic breast cancer (569 x 30 standardised + intercept, d = 31), 80/20 "
               "split (jax key 0: 455 / 114), beta = 1e-1 and steps VN 9e-3, SR-VN 6e-3, BW-GD 6.3e-3 (Table 2, "
               "breast-cancer), five random starts m0 ~ N(0, I), C0 = I (key 0), 8000 iterations, Gauss-Hermite "
               "expectations (40 nodes), rows every 80 iterations")
BC_SOURCE = ("computed by us on the Wisconsin diagnostic data (not LIBSVM's 683 x 10 breast-cancer file, whose Table 3 "
             "values are negative ELBO 52.86, test NLL 13.62, accuracy 0.956)")


@reproduction("kumar2025-fig2-breast-cancer", paper="Kumar et al. (2025)", slow=True,
              what="Fig. 2 analogue on the Wisconsin diagnostic breast-cancer data (d = 31): VN and SR-VN reach the "
                   "fixed point at Table 2's steps, BW-GD is slower",
              settings=BC_SETTINGS, kind="mixed", source="Fig. 2 caption (Sec. 6): 'SR-VN and VN perform similarly "
                                                         "while BW-GD tends to be slower'")
def _fig2_bc():
    from ..kumar_logistic import final_values, fixed_point_residuals, load, target, fig2_runs

    data = load("breast-cancer")
    runs = fig2_runs(data, 8000, record_every=80)
    tgt = target(data, False, 40)
    res = {name: max(fixed_point_residuals(tgt, m, V, 40)["grad"] for m, V in zip(r["final_mean"], r["final_cov"]))
           for name, r in runs.items()}
    fe = {name: final_values(r) for name, r in runs.items()}
    nll = {name: final_values(r, "test_nll") for name, r in runs.items()}
    src = "Fig. 2 caption (Sec. 6): 'SR-VN and VN perform similarly while BW-GD tends to be slower'"
    d = dict(kind="derived", source=BC_SOURCE)
    return [
        Check("VN and SR-VN: largest |E_q[grad l]| after 8000 steps (at the fixed point)", 0.0,
              max(res["vn"], res["srvn"]), tol=1e-6, kind="paper", source=src),
        Check("BW-GD: largest |E_q[grad l]| after 8000 steps (still moving)", "> 100 x VN's",
              f"{res['bwgd']:.2g}", passed=bool(res["bwgd"] > 100 * max(res["vn"], res["srvn"], 1e-12)),
              kind="paper", source=src),
        Check("VN vs SR-VN final negative ELBO", 0.0, float(np.max(np.abs(fe["vn"] - fe["srvn"]))), tol=1e-6,
              kind="paper", source=TIE_SOURCE),
        Check("final negative ELBO (VN, train, 455 points)", -22.0334, round(float(np.mean(fe["vn"])), 4), tol=2e-4,
              **d),
        Check("final test NLL (VN, sum over 114 points)", 25.92, round(float(np.mean(nll["vn"])), 2), tol=0.02, **d,
              note="the test NLL passes through a lower value on the way (the prior beta = 0.1 is weak for 31 "
                   "correlated features)"),
    ]


@reproduction("kumar2025-convexity", paper="Kumar et al. (2025)",
              what="Sec. 3.6: the expected loss minus the entropy is convex in the scale sigma but not in the variance "
                   "v; for |theta| at m = 0, E|theta| = sqrt(2 v / pi) and d2L/dv2 < 0 exactly for v > 2 pi",
              settings="1-D losses |theta| (closed forms) and log(1 + e^-theta) (Bonnet / Price, 1-D quadrature); "
                       "grid m in [-3, 3] (61), sigma in [0.05, 5] (100); weight 1 (|theta|) and 5 (logistic)",
              kind="mixed", source="Sec. 3.6 (after Domke 2020): E_q[l] is convex in (m, C) but not in (m, V)")
def _convexity():
    from ..kumar_logistic import abs_loss, abs_loss_curvatures, convexity_grid

    g_abs = convexity_grid("abs")
    g_log = convexity_grid("logistic", weight=5.0)
    v = np.linspace(1.0, 20.0, 190_001)
    c = abs_loss_curvatures(0.0, np.sqrt(v))["d2_v"]
    v_cross = float(v[np.flatnonzero(c < 0)[0]])
    z = np.random.default_rng(0).standard_normal(1_000_000)
    src = "Sec. 3.6 (Domke 2020): the expected loss is convex in the Cholesky factor C, hence in sigma"
    src_v = "Sec. 3.6 and Sec. 1: the objective is not convex in V"
    return [
        Check("|theta|: smallest d2L/dsigma2 on the grid is positive", True, bool(g_abs["d2_s"].min() > 0),
              kind="paper", source=src, note=f"min {g_abs['d2_s'].min():.3g}"),
        Check("|theta|: some d2L/dv2 on the grid is negative", True, bool(g_abs["d2_v"].min() < 0), kind="paper",
              source=src_v, note=f"negative on {100 * np.mean(g_abs['d2_v'] < 0):.0f}% of the grid"),
        Check("logistic loss (weight 5): d2L/dsigma2 > 0 everywhere on the grid", True,
              bool(g_log["d2_s"].min() > 0), kind="paper", source=src),
        Check("logistic loss (weight 5): some d2L/dv2 < 0", True, bool(g_log["d2_v"].min() < 0), kind="paper",
              source=src_v, note=f"negative on {100 * np.mean(g_log['d2_v'] < 0):.0f}% of the grid"),
        Check("|theta| at m = 0: v where d2L/dv2 turns negative", round(2 * np.pi, 4), round(v_cross, 4), tol=2e-4,
              kind="derived", source="computed by us: d2/dv2 [sqrt(2v/pi) - log(v)/2] = -(1/4) sqrt(2/pi) v^-3/2 + "
                                     "1/(2 v^2) < 0 iff v > 2 pi"),
        Check("E|theta| at (m, sigma) = (0.7, 0.5): closed form vs Monte Carlo (1e6 draws)",
              round(float(np.abs(0.7 + 0.5 * z).mean()), 3), round(float(abs_loss(0.7, 0.5)), 3), tol=2e-3,
              kind="derived", source="computed by us: Monte Carlo, numpy default_rng(0)"),
    ]


@reproduction("kumar2025-fig5-flops", paper="Kumar et al. (2025)",
              what="App. F.1 / Fig. 5: per-step flop counts VN d^3 + 4 d^2, SR-VN 3 d^3 + 4.5 d^2 + d/2, BW-GD "
                   "3 d^3 + 5 d^2 (measured times are machine-dependent and not checked)",
              settings="the printed formulas at d = 8, 100, 784",
              kind="mixed", source="App. F.1 (Fig. 5): the flop counts overlaid on the measured run times")
def _fig5():
    from ..kumar_logistic import flops

    f = flops([8, 100, 784])
    src = "App. F.1 (Fig. 5): VN O(d^3 + 4d^2), SR-VN O(3d^3 + 4.5d^2 + d/2), BW-GD O(3d^3 + 5d^2)"
    return [
        Check("VN at d = 8, 100, 784", (768.0, 1.04e6, 484_348_928.0), tuple(float(x) for x in f["vn"]), tol=1e-9,
              rel=True, kind="paper", source=src),
        Check("SR-VN at d = 8, 100, 784", (1828.0, 3_045_050.0, 1_448_437_256.0),
              tuple(float(x) for x in f["srvn"]), tol=1e-9, rel=True, kind="paper", source=src),
        Check("BW-GD at d = 8, 100, 784", (1856.0, 3.05e6, 1_448_744_192.0), tuple(float(x) for x in f["bwgd"]),
              tol=1e-9, rel=True, kind="paper", source=src),
        Check("SR-VN / VN at d = 784 (tends to 3)", 2.99, round(float(f["srvn"][2] / f["vn"][2]), 2), tol=0.0,
              kind="derived", source="computed by us from the printed formulas"),
    ]
