"""Reproductions of Chen, Nott & Tan (2025): the mean-field objective landscapes (digest E4) and Table 6
(logistic regression) on the German credit data (digest: shared/reference/chen_nott_tan_weighted_fisher.md)."""

from __future__ import annotations

import numpy as np

from . import Check, reproduction

PAPER = "Chen, Nott & Tan (2025)"


@reproduction(
    "chen2025-landscape", items=('chen-landscape',), paper=PAPER,
    what="Objective landscapes over (Sigma_11, Sigma_22) of a mean-field q, 2-D Gaussian target: each grid's lowest "
         "point is the closed-form optimum, the grid equals Sec. 1.3's explicit forms and Monte Carlo, the "
         "score-based collapse price shrinks as rho grows, Theorem 1's ordering",
    settings="121 x 121 log grid, 1 decade beyond the optima; unit variances, rho in {0.3, 0.5, 0.9, 0.99}, and "
             "s.d. (1, 3), rho = 0.9; Monte Carlo 200,000 draws (key 0) at three points, rho = 0.9",
    kind="mixed", source="Sec. 1.3 explicit forms, Sec. 2.1 optima, Theorem 1 (Sec. 2.2); digest E4")
def _landscape():
    import jax

    from ..divergences import meanfield_optimum, precision_2d
    from ..divergences.landscape import landscape_monte_carlo, meanfield_objectives, objective_landscape

    checks = []
    for rho, sds in ((0.3, (1, 1)), (0.5, (1, 1)), (0.9, (1, 1)), (0.99, (1, 1)), (0.9, (1, 3))):
        L = precision_2d(rho, *sds)
        res = objective_landscape(L)
        tag = f"rho = {rho}, s.d. {sds}"
        for k in ("kl", "fisher", "score"):
            opt = res["optimum"][k]
            dist = float(np.max(np.abs(np.log10(np.array(res["grid_min"][k]) / opt))))
            checks.append(Check(f"{tag}: {k} grid minimiser vs closed-form optimum (decades)", 0.0, round(dist, 4),
                                tol=3 * res["log_step"], kind="derived",
                                tol_source="chosen threshold: 3 grid steps (the score valley is flat)",
                                source="closed-form optimum (Sec. 2.1; score-based by the NQP, eq. 3) against the "
                                       "grid's lowest point; tolerance 3 grid steps (the score valley is flat)"))
            checks.append(Check(f"{tag}: {k} grid minimum - closed-form minimum (relative)", 0.0,
                                (res["grid_min_value"][k] - res["optimum_value"][k]) / max(res["optimum_value"][k], 1e-3),
                                tol=5e-3, kind="derived", tol_source="chosen threshold: the grid's discretisation excess",
                                source="the grid's lowest value is at most the optimum's"
                                                                 " plus a small discretisation excess"))
        # the grid (Lemma 1 matrix forms, vmapped) against Sec. 1.3's explicit forms at a few grid points
        worst = 0.0
        for i22, i11 in ((0, 0), (60, 60), (120, 7), (33, 99)):
            ex = meanfield_objectives(L, (res["s11"][i11], res["s22"][i22]))
            for k in ("kl", "fisher", "score"):
                worst = max(worst, abs(res["values"][k][i22, i11] - ex[k]) / max(1.0, abs(ex[k])))
        checks.append(Check(f"{tag}: grid (Lemma 1 matrix form) vs Sec. 1.3 explicit forms", 0.0, worst, tol=1e-10,
                            tol_source="round-off",
                            kind="derived", source="Sec. 1.3 explicit forms with mu = nu, evaluated directly"))
        o = {k: meanfield_optimum(L, k).variances for k in ("kl", "fisher", "score")}
        slack = float(np.min(o["kl"] + 1e-12 - np.maximum(o["fisher"], o["score"])))
        checks.append(Check(f"{tag}: Theorem 1, Fisher and score-based variances <= KL's (smallest KL - max of them)",
                            ">= 0", round(slack, 6), margin=slack, ties=True, kind="paper", source="Theorem 1 (Sec. 2.2)",
                            tol_source="the paper's claim: Theorem 1, at most (1e-12 for round-off)"))
        if sds == (1, 1):
            cost = float(res["collapse"]["score"][0] - res["optimum_value"]["score"])
            checks.append(Check(f"{tag}: score-based price of collapse S(Sigma_11 = 0) - min S", (1 - rho**2) / (1 + rho**2),
                                cost, tol=1e-9, kind="derived", tol_source="round-off",
                                source="ours: S(0, 1/Lambda_22) = 1 and min S = 2 rho^2 / (1 + rho^2) (digest Sec. 2.5)"))
    L = precision_2d(0.9)
    mc = landscape_monte_carlo(jax.random.PRNGKey(0), L, [(0.19, 0.19), (0.105, 0.105), (1.0, 0.5)], n=200_000)
    for row in mc:
        for k in ("kl", "fisher", "score"):
            exact, est, se = row[k]
            checks.append(Check(f"rho = 0.9, Sigma = {row['point']}: {k} Monte Carlo - closed form (s.e.)", 0.0,
                                round((est - exact) / se, 3), tol=4.0, kind="derived",
                                tol_source="Monte Carlo s.e.: 4 s.e. of 200,000 draws",
                                source="Monte Carlo of E_q||grad log q - grad log p||^2_M (M = I, Sigma) and "
                                       "E_q[log q - log p], 200,000 draws",
                                note=f"closed form {exact:.6g}, MC {est:.6g} +/- {se:.2g}"))
    return checks


@reproduction(
    "chen2025-table6", items=('chen-table6',), paper=PAPER,
    what="Table 6, German credit (logistic regression, d = 49): M* of KLD, SDb and BaM well above FDb, FDb above "
         "FDr, FDr above SDr; mode errors in the reverse order and each within the paper's mean +- 1 s.d.",
    slow=True,
    settings=("the paper's setting: German credit (UCI Statlog German credit, the table shipped with vilab as vilab/data/german_credit.csv; 7 standardised "
              "quantitative attributes, dummies for 13 qualitative ones, intercept; prior variance 100); Adadelta "
              "rho 0.95, eps 1e-6, mu = 0, T = 10 I, B = 3 (FDb, SDb), 50 (BaM), the paper's slope rule (< 0.01) with "
              "at most 60,000 iterations; M* from 10 repeats of m = 1000 draws, RBF kernel on reference-standardised "
              "coordinates, h = sqrt(d) (the paper's bandwidth is not stated, so M*'s scale differs); reference: "
              "20,000 NUTS draws (scripts/german_reference.py; the paper: RStan); seed 0"),
    kind="paper", source="Table 6 (Sec. 7.2), German credit column")
def _table6():
    from ..core import as_key
    from ..divergences.landscape import TABLE6_METHODS, TABLE6_PAPER, table6

    rows = table6(as_key(0))["rows"]
    paper = TABLE6_PAPER["German"]
    M = {k: rows[k]["M*"][0] for k in TABLE6_METHODS}
    E = {k: rows[k]["mode"][0] for k in TABLE6_METHODS}
    good = min(M["kl"], M["sdb"], M["bam"])
    checks = [
        Check("M*: KLD, SDb, BaM > FDb > FDr > SDr", "8.82, 8.37, 8.29 > 2.86 > 1.11 > 0.75",
              f"{M['kl']:.2f}, {M['sdb']:.2f}, {M['bam']:.2f} > {M['fdb']:.2f} > {M['fdr']:.2f} > {M['sdr']:.2f}",
              margin=min(good - M["fdb"], M["fdb"] - M["fdr"], M["fdr"] - M["sdr"]),
              tol_source="the paper's claim: Table 6's order (a tie fails)"),
        Check("min M*(KLD, SDb, BaM) - M*(FDb) >= 2", "8.29 - 2.86 = 5.43", round(good - M["fdb"], 2),
              margin=good - M["fdb"] - 2.0, ties=True, note="the gap's size depends on the kernel bandwidth",
              tol_source="chosen threshold: 'well above' read as 2 units of M* (M*'s scale depends on a kernel "
                         "bandwidth the paper does not give)"),
        Check("mode error: KLD, SDb, BaM < FDb < FDr < SDr", "0.08, 0.08, 0.08 < 0.25 < 0.55 < 0.74",
              ", ".join(f"{E[k]:.3f}" for k in ("kl", "sdb", "bam")) + " < "
              + " < ".join(f"{E[k]:.3f}" for k in ("fdb", "fdr", "sdr")),
              margin=min(E["fdb"] - max(E["kl"], E["sdb"], E["bam"]), E["fdr"] - E["fdb"], E["sdr"] - E["fdr"]),
              tol_source="the paper's claim: Table 6's order (a tie fails)"),
    ]
    for k in TABLE6_METHODS:
        r, (pm, ps) = rows[k], paper["mode"][k]
        checks.append(Check(f"{k}: mode error |mu - mu*| / sigma* within the paper's mean +- 1 s.d.", pm,
                            round(r["mode"][0], 3), tol=ps,
                            tol_source="chosen threshold: the paper's mean +/- 1 s.d. over the 49 coefficients, a "
                                       "spread over parameters, not an uncertainty of the mean: a weak check",
                            note=(f"paper {pm:.2f} +/- {ps:.2f}; ours {r['mode'][0]:.3f} +/- {r['mode'][1]:.3f}; M* "
                                  f"{r['M*'][0]:.2f} +/- {r['M*'][1]:.2f} (paper {paper['M*'][k][0]:.2f}); "
                                  f"{r['iterations']:,} iterations (paper {1000 * paper['time'][k][1]:,.0f}), "
                                  f"{r['seconds']:.1f} s, {r['status']}")))
    return checks
