"""Reproductions of Tan (2025) Theorem 3 (SNNGM's bound) and Sec. 8.2 Table 8's simulation and German columns.

Entries: ``tan2025-thm3-bound`` (the bound against the tau-weighted gradient norm of SNNGM runs),
``tan2025-table8-sim-diag`` and ``tan2025-table8-sim-full`` (logistic regression, d = 100, the
orderings of Table 8's "Sim." columns at a reduced n; slow), ``tan2025-loglinear-d100`` (Table 7's
d = 100 columns at a reduced n, with the machinery of :mod:`vilab.repro.tan2025_optim`; slow),
``tan2025-table8-german`` (Table 8's German credit columns at the paper's data, full batch; slow).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from vilab.algorithms import optim
from vilab.theory import snngm_theory
from vilab.core import as_key
from vilab.plots import optim as oplots
from vilab.repro import Check, reproduction
from vilab.repro import tan2025_optim as rep7
from vilab.targets import regression as R

# ================================================================== Theorem 3
THM3_SOURCE = ("computed by us: SNNGM runs with exact gradients and alpha = c / sqrt(N); the constants R, R1, R2 "
               "and L bounded over the box the run visits (vilab.theory.snngm_theory.region_constants)")


@reproduction(
    "tan2025-thm3-bound", items=('tan-thm3-fig4',),
    paper="Tan (2025)",
    what="Thm 3: SNNGM's tau-weighted E||g_tau||^2 lies below the bound, both O(1/sqrt(N)) with alpha = c/sqrt(N)",
    settings="Gaussian target N(1, 1) and the horseshoe-crab toy, lambda = (mu, sigma^2), exact gradients, "
    "beta = 0.9, c = 1 (Gaussian) / 0.05 (crab), N = 100 ... 1e5; constants over the region the run visits",
    kind="mixed",
    source="Sec. 6.1, Theorem 3 and the remark after it (alpha = 1/sqrt(N) gives O(1/sqrt(N)))",
)
def _thm3():
    checks = []
    for name, c in (("gaussian", 1.0), ("crab", 0.05)):
        sw = snngm_theory.theorem3_sweep(name, c=c, beta=0.9)
        ok = np.isfinite(sw["observed"])
        label = snngm_theory.toy(name).label
        checks.append(Check(f"{label}: tau-weighted E||g_tau||^2 below the bound at N = "
                            f"{', '.join(str(int(n)) for n in sw['N'])}", "below",
                            tuple(float(f"{v:.3g}") for v in sw["observed"]),
                            margin=float(np.min(sw["bound"] - sw["observed"])) if ok.all() else -1.0, kind="paper",
                            tol_source="the paper's claim: Theorem 3's bound (strict)",
                            source="Theorem 3 (Sec. 6.1)",
                            note="bounds: " + ", ".join(f"{v:.3g}" for v in sw["bound"])))
        checks.append(Check(f"{label}: smallest ratio bound / observed (how loose the bound is)", "> 1",
                            float(f"{np.min(sw['ratio']):.3g}"), margin=float(np.min(sw["ratio"])) - 1.0, kind="derived",
                            tol_source="the paper's claim: Theorem 3's bound (strict)",
                            source=THM3_SOURCE))
        checks.append(Check(f"{label}: log-log slope of the observed E||g_tau||^2 over N (O(1/sqrt(N)): -1/2)", -0.5,
                            round(sw["slope_observed"], 3), tol=0.15, kind="paper",
                            tol_source="chosen threshold: 0.15 about -1/2 (a rate, fitted over finite N)",
                            source="Sec. 6.1: with alpha = 1/sqrt(N) the bound is O(1/sqrt(N))"))
        if name == "gaussian":  # the crab's region constants change with N (sigma^2 dips lower for larger alpha)
            checks.append(Check(f"{label}: log-log slope of the bound over N", -0.5, round(sw["slope_bound"], 3),
                                tol=0.1, kind="paper", source="Sec. 6.1: with alpha = 1/sqrt(N) the bound is O(1/sqrt(N))",
                                tol_source="chosen threshold: 0.1 about -1/2 (a rate, fitted over finite N)"))
    return checks


# ============================================================ Table 8, simulation
#: Tan (2025) Table 8, "Sim." columns (n = 1e5, d = 100): {(optimizer, estimator, diagonal): lower bound}.
TABLE8_SIM = {
    ("adam", "first", True): -22936, ("adam", "first", False): -71165,
    ("pga", "first", True): -21969, ("pga", "first", False): -22444,
    ("snngm", "first", True): -21951, ("snngm", "first", False): -30260,
    ("nagm", "first", True): -21901, ("nagm", "first", False): -22703,
    ("adam", "second", True): -22765, ("adam", "second", False): -22769,
    ("pga", "second", True): -21958, ("pga", "second", False): -21959,
    ("snngm", "second", True): -21903, ("snngm", "second", False): -21898,
    ("nagm", "second", True): -21899, ("nagm", "second", False): -21946,
    ("vogn", None, True): -21949, ("vogn", None, False): -21932,
}

#: the reduced setting (the paper: n = 1e5, minibatch 5000, i.e. 20 iterations per epoch; epochs not stated)
TABLE8_SETTING = dict(n=10_000, d=100, batch=500, epochs=50, seed=0)

#: step sizes (alpha0 for SNNGM), tuned once on seed 0 over {1e-3, 3e-3, 1e-2} (SNNGM) and {0.03, 0.1, 0.3}
#: (NAGM, VOGN); Adam and ProxGenAdam keep their defaults 1e-3, as in the paper.
TABLE8_ALPHA = {
    (True, "adam"): 1e-3, (False, "adam"): 1e-3, (True, "pga"): 1e-3, (False, "pga"): 1e-3,
    (True, "snngm"): 0.01, (False, "snngm"): 0.001,
    (True, "nagm"): 0.1, (False, "nagm", "first"): 0.1, (False, "nagm", "second"): 0.3,
    (True, "vogn"): 0.3, (False, "vogn"): 0.3,
}

TABLE8_OPTIMIZERS = ("adam", "pga", "snngm", "nagm", "vogn")

TABLE8_SETTINGS_TEXT = ("n = 1e4 (paper: 1e5), d = 100, theta evenly on [-1, 1], standard-normal covariates, seed 0, "
                        "minibatch 500 (20 iterations per epoch, as the paper's 5000 of 1e5), 50 epochs, factor C "
                        "(T for VOGN), start mu = 0, C = I/sqrt(n); final ELBO by Monte Carlo (500 draws); alpha: Adam "
                        "and ProxGenAdam 0.001, SNNGM alpha0 0.01 (diagonal) / 0.001 (full), NAGM 0.1 (full, second "
                        "order: 0.3), VOGN 0.3")


def table8_alpha(optimizer: str, estimator, diagonal: bool) -> float:
    """The step size of one Table 8 run (see :data:`TABLE8_ALPHA`)."""
    return TABLE8_ALPHA.get((diagonal, optimizer, estimator), TABLE8_ALPHA.get((diagonal, optimizer)))


def table8_sim(diagonal: bool, *, n: int = TABLE8_SETTING["n"], d: int = TABLE8_SETTING["d"],
               batch: int = TABLE8_SETTING["batch"], epochs: int = TABLE8_SETTING["epochs"],
               seed: int = TABLE8_SETTING["seed"], optimizers=TABLE8_OPTIMIZERS, progress=None,
               should_stop=None, model=None) -> dict:
    """Tan (2025) Sec. 8.2, Table 8 "Sim." column (diagonal or full covariance) at a reduced setting.

    Logistic regression (:func:`vilab.targets.regression.simulated_logistic`), every optimizer of
    ``optimizers`` with first- and second-order gradient estimates (Tan Thm 2; VOGN once, with its
    Gauss-Newton curvature), minibatches drawn per epoch without replacement from ``vilab.core.as_key(seed)``.
    Returns {(optimizer, estimator, diagonal): :func:`vilab.plots.optim.comparison_summary`} in Table 8's
    row order. ``progress(fraction, label)`` is called before each run; ``should_stop()`` ends early.
    ``model``: another logistic :class:`vilab.targets.regression.GLMModel` (``n`` and ``d`` are then unused).
    """
    model = R.simulated_logistic(n=n, d=d, seed=seed) if model is None else model
    specs = oplots.comparison_specs(list(optimizers), ("first", "second"), ("diagonal" if diagonal else "full",))
    out = {}
    for i, (name, order, diag) in enumerate(specs):
        if should_stop is not None and should_stop():
            break
        if progress is not None:
            progress(i / len(specs), oplots.run_label(name, order))
        tr = optim.run(model, name, key=as_key(seed), alpha=table8_alpha(name, order, diag), diagonal=diag,
                       estimator=order or "second", n_epochs=epochs, batch_size=batch)
        out[(name, order, diag)] = oplots.comparison_summary(tr)
    if progress is not None:
        progress(1.0, "done")
    return out


def _final(r) -> float:
    """A run's final ELBO, -inf for a run that diverged (the lowest possible rank)."""
    return -math.inf if r["status"].startswith("diverged") or not np.isfinite(r["final"]) else float(r["final"])


def _gap(a: float, b: float) -> float:
    """How far ``a`` lies above ``b`` (the margin of "a above b"): -inf when a diverged, +inf when only b did."""
    if a == -math.inf:
        return -math.inf
    return math.inf if b == -math.inf else a - b


def _paper_pair(a, b) -> str:
    return f"{TABLE8_SIM[a]} > {TABLE8_SIM[b]}"


def table8_checks(results: dict, diagonal: bool, margin: float = 0.01) -> list[Check]:
    """The orderings of Table 8's "Sim." column on the output of :func:`table8_sim` (not its numbers: our n is
    smaller, so our ELBOs are about n_ours / n_paper of the paper's).

    * SNNGM, NAGM (each order) and VOGN end above both Adam runs (diagonal); with a full covariance the
      second-order SNNGM and NAGM and VOGN do (the paper's first-order SNNGM is below Adam 2 there);
    * full covariance: every optimizer's second-order run ends above its first-order run by more than
      ``margin`` of |L| (the paper: "clear improvement with second-order"; a diverged run counts as -inf).
    """
    cov = "diagonal" if diagonal else "full"
    src = f"Table 8, Sim. {'Diagonal' if diagonal else 'Full'} (Sec. 8.2)"
    fin = {k[:2]: _final(r) for k, r in results.items()}
    checks = []
    adams = [("adam", "first"), ("adam", "second")]
    best_adam = max(fin[a] for a in adams)
    best_adam_key = max(adams, key=lambda a: fin[a])
    above = ([("snngm", "first"), ("snngm", "second"), ("nagm", "first"), ("nagm", "second")] if diagonal
             else [("snngm", "second"), ("nagm", "second")]) + [("vogn", None)]
    for key in above:
        lab = oplots.run_label(*key)
        checks.append(Check(f"{cov}: {lab} final ELBO above the better Adam run ({oplots.run_label(*best_adam_key)}, "
                            f"{best_adam:.1f})", _paper_pair((*key, diagonal), (*best_adam_key, diagonal))
                            if best_adam > -math.inf else "above Adam",
                            round(fin[key], 1), margin=_gap(fin[key], best_adam), kind="paper", source=src,
                            tol_source="the paper's claim: Table 8's order (a tie fails)",
                            note="paper values at n = 1e5; ours at a reduced n: compare the order, not the numbers"))
    if not diagonal:
        for name in ("adam", "pga", "snngm", "nagm"):
            l1, l2 = fin[(name, "first")], fin[(name, "second")]
            checks.append(Check(f"full: {oplots.run_label(name, 'second')} above {oplots.run_label(name, 'first')} "
                                f"by more than {margin:.0%} of |L|",
                                _paper_pair((name, "second", False), (name, "first", False)),
                                (round(l2, 1), "diverged" if l1 == -math.inf else round(l1, 1)),
                                margin=(-math.inf if l2 == -math.inf else math.inf if l1 == -math.inf
                                        else l2 - l1 - margin * abs(l2)),
                                tol_source=f"chosen threshold: 'clear improvement' read as more than {margin:.0%} of |L|",
                                kind="paper", source=src + ": first-order estimates poor for a full covariance",
                                note="a first-order run that diverged counts as the lowest ELBO"))
    for key, r in results.items():
        if key[:2] == ("snngm", "second") or key[:2] == ("vogn", None):
            checks.append(Check(f"{cov}: {oplots.run_label(*key[:2])} final ELBO at our setting (for reference)",
                                "finite", round(float(r["final"]), 1), reported=True,
                                kind="derived", source="computed by us at the reduced setting (" +
                                TABLE8_SETTINGS_TEXT + ")", note=f"paper (n = 1e5): {TABLE8_SIM[key]}"))
    return checks


@reproduction(
    "tan2025-table8-sim-diag", items=('tan-table8-sim',),
    paper="Tan (2025)",
    what="Table 8, Sim. Diagonal (logistic regression, d = 100): SNNGM, NAGM and VOGN end above Adam",
    slow=True,
    settings=TABLE8_SETTINGS_TEXT,
    kind="mixed",
    source="Table 8, Sim. Diagonal (Sec. 8.2)",
)
def _table8_diag():
    return table8_checks(table8_sim(True), True)


@reproduction(
    "tan2025-table8-sim-full", items=('tan-table8-sim',),
    paper="Tan (2025)",
    what="Table 8, Sim. Full (logistic regression, d = 100): second-order estimates clearly beat first-order, "
    "SNNGM 2, NAGM 2 and VOGN end above Adam",
    slow=True,
    settings=TABLE8_SETTINGS_TEXT,
    kind="mixed",
    source="Table 8, Sim. Full (Sec. 8.2)",
)
def _table8_full():
    return table8_checks(table8_sim(False), False)


# ====================================================== Table 7, loglinear model, d = 100
#: Tan (2025) Table 7, d = 100 (n = 1e5, the paper's own draw).
TABLE7_D100 = {True: {"adam": -119170.4, "snngm": -115687.3, "nagm": -115658.2, "vogn": -115687.3},
               False: {"adam": -119073.7, "snngm": -115429.3, "nagm": -115431.7, "vogn": -115432.0}}

#: the reduced setting (the paper: n = 1e5, minibatch 5000; epochs not stated)
TABLE7_D100_SETTING = dict(n=20_000, d=100, batch=1000, epochs=60, seed=0)

#: step sizes (alpha0 for SNNGM) at d = 100, tuned once on seed 0 (Adam keeps its default)
TABLE7_D100_ALPHA = {
    (True, "adam"): 1e-3, (False, "adam"): 1e-3,
    (True, "snngm"): 0.01, (False, "snngm"): 3e-4,
    (True, "nagm"): 0.1, (False, "nagm"): 0.2,
    (True, "vogn"): 0.05, (False, "vogn"): 0.1,
}


def _table7_runs(m, diagonal: bool, alphas: dict, batch: int, epochs: int, seed: int, methods, progress=None):
    """One covariance column of Table 7 on the loglinear model ``m``: {method: Trace}, exact minibatch gradients,
    the same minibatch order for every method (:func:`vilab.repro.tan2025_optim._epoch_order`)."""
    runs = {}
    for i, name in enumerate(methods):
        if progress is not None:
            progress(i / len(methods), optim.OPTIMIZERS[name]["label"])
        runs[name] = optim.run(m, name, key=as_key(seed), alpha=alphas[(diagonal, name)], diagonal=diagonal,
                               estimator="exact", n_epochs=epochs, batch_size=batch,
                               batches=rep7._epoch_order(seed, m.n, batch, epochs))
    return runs


def loglinear_d100(n: int = TABLE7_D100_SETTING["n"], d: int = TABLE7_D100_SETTING["d"],
                   batch: int = TABLE7_D100_SETTING["batch"], epochs: int = TABLE7_D100_SETTING["epochs"],
                   seed: int = TABLE7_D100_SETTING["seed"], methods=("adam", "snngm", "nagm", "vogn")) -> dict:
    """Tan (2025) Sec. 8.1 / Table 7 at d = 100: :func:`vilab.repro.tan2025_optim.loglinear_comparison`'s runs
    (exact minibatch gradients, the same minibatch order for every method) with the step sizes of
    :data:`TABLE7_D100_ALPHA`. Returns {diagonal: {"optimum": L*, "runs": {method: Trace}}}."""
    m = R.simulated_loglinear(n=n, d=d, seed=seed)
    return {diagonal: {"optimum": R.loglinear_optimum(m, diagonal)[2],
                       "runs": _table7_runs(m, diagonal, TABLE7_D100_ALPHA, batch, epochs, seed, methods)}
            for diagonal in (True, False)}


#: Table 7's two dimensions as the page runs them: the paper's setting at d = 50, the reduced one at d = 100
TABLE7_SETTINGS = {50: dict(n=100_000, batch=5000, epochs=100, seed=0),
                   100: dict(TABLE7_D100_SETTING)}


def table7_column(d: int, diagonal: bool, progress=None) -> tuple[dict, float]:
    """Tan (2025) Table 7, one column (d = 50 at the paper's n = 1e5, or d = 100 at the reduced n = 2e4), as the
    Adam vs SNNGM page shows it: ({(method, None, diagonal): :func:`vilab.plots.optim.comparison_summary`}, L*),
    with L* the exact-ELBO optimum of the draw. The step sizes are those of the registry entries
    ``tan2025-loglinear-d50`` and ``tan2025-loglinear-d100``."""
    if d not in TABLE7_SETTINGS:
        raise ValueError(f"Table 7 has the dimensions 50 and 100; got {d!r}.")
    s = TABLE7_SETTINGS[d]
    m = R.simulated_loglinear(n=s["n"], d=d, seed=s["seed"])
    alphas = rep7.LOGLINEAR_ALPHA if d == 50 else TABLE7_D100_ALPHA
    runs = _table7_runs(m, diagonal, alphas, s["batch"], s["epochs"], s["seed"], ("adam", "snngm", "nagm", "vogn"),
                        progress)
    return ({(k, None, diagonal): oplots.comparison_summary(t) for k, t in runs.items()},
            R.loglinear_optimum(m, diagonal)[2])


def table7_paper(d: int) -> dict:
    """Tan (2025) Table 7's printed final ELBOs at dimension ``d``: {(method, None, diagonal): value}."""
    table = rep7.TABLE7_D50 if d == 50 else TABLE7_D100
    return {(k, None, diag): v for diag, row in table.items() for k, v in row.items()}


def loglinear_d100_checks(res, rel: float = 0.005) -> list[Check]:
    """Table 7's d = 100 ordering on :func:`loglinear_d100`'s output: SNNGM, NAGM and VOGN each end above
    Adam (the paper's values in the paper column), and within ``rel`` of the exact-ELBO optimum L* of our
    draw (derived: the paper prints no optimum)."""
    checks = []
    for diagonal, r in res.items():
        cov = "diagonal" if diagonal else "full"
        Lstar = r["optimum"]
        fin = {k: t.extra["final_elbo"] if not t.diverged else -math.inf for k, t in r["runs"].items()}
        for name in ("snngm", "nagm", "vogn"):
            lab = optim.OPTIMIZERS[name]["label"]
            checks.append(Check(f"{cov}: {lab} final ELBO above Adam's ({fin['adam']:.1f})",
                                f"{TABLE7_D100[diagonal][name]} > {TABLE7_D100[diagonal]['adam']}",
                                round(fin[name], 1), margin=_gap(fin[name], fin["adam"]), kind="paper",
                                tol_source="the paper's claim: Table 7's order (a tie fails)",
                                source="Table 7 (Sec. 8.1, d = 100)",
                                note="paper values at n = 1e5; ours at n = 2e4: compare the order, not the numbers"))
            checks.append(Check(f"{cov}: {lab} within {rel:.1%} of the exact-ELBO optimum L* = {Lstar:.1f}",
                                f"gap < {rel * abs(Lstar):.0f}", round(Lstar - fin[name], 1),
                                margin=rel * abs(Lstar) - (Lstar - fin[name]), ties=True, kind="derived",
                                tol_source=f"chosen threshold: {rel:.1%} of |L*|",
                                source="computed by us: L* by direct optimisation of the tractable ELBO of our draw "
                                       "(vilab.targets.regression.loglinear_optimum)"))
    return checks


@reproduction(
    "tan2025-loglinear-d100", items=('tan-table7',),
    paper="Tan (2025)",
    what="Table 7 ordering at d = 100: loglinear model, SNNGM/NAGM/VOGN above Adam and near the exact optimum",
    slow=True,
    settings="n = 2e4 (paper: 1e5), d = 100, seed 0, minibatch 1000 (20 iterations per epoch), 60 epochs, exact "
    "minibatch gradients, start mu = 0, C = I/sqrt(n) (T = sqrt(n) I for VOGN); alpha (diagonal / full): Adam "
    "0.001 / 0.001, SNNGM alpha0 0.01 / 0.0003, NAGM 0.1 / 0.2, VOGN 0.05 / 0.1 (tuned once on seed 0 over "
    "{0.0003, 0.001, 0.003, 0.01, 0.03}, {0.1, 0.2, 0.5} and {0.03, 0.05, 0.1, 0.2})",
    kind="mixed",
    source="Table 7 (Sec. 8.1, d = 100)",
)
def _loglinear_d100():
    return loglinear_d100_checks(loglinear_d100())


# ============================================================ Table 8, German credit
#: Tan (2025) Table 8, German columns (full batch): {(optimizer, estimator, diagonal): lower bound}.
TABLE8_GERMAN = {
    ("adam", "first", True): -683.7, ("adam", "first", False): -677.2,
    ("pga", "first", True): -655.3, ("pga", "first", False): -649.5,
    ("snngm", "first", True): -641.7, ("snngm", "first", False): -631.1,
    ("nagm", "first", True): -640.4, ("nagm", "first", False): -633.0,
    ("adam", "second", True): -680.8, ("adam", "second", False): -666.8,
    ("pga", "second", True): -655.6, ("pga", "second", False): -639.2,
    ("snngm", "second", True): -641.3, ("snngm", "second", False): -625.6,
    ("nagm", "second", True): -640.2, ("nagm", "second", False): -626.0,
}
TABLE8_GERMAN_ITERATIONS = 3000

TABLE8_GERMAN_TEXT = ("German credit (UCI Statlog German credit, the table shipped with vilab as vilab/data/german_credit.csv; d = 49, prior N(0, 100 I)), full batch "
                      "as the paper, 3000 iterations (the paper does not state its number), the simulation's step "
                      "sizes, factor C, start mu = 0, C = I/sqrt(n); final ELBO by Monte Carlo (500 draws); the exact "
                      "optimum by Gauss-Hermite and L-BFGS (vilab.targets.german.logistic_va_optimum); VOGN left "
                      "out (at the simulation's step sizes it ends 10 to 25 below)")


def table8_german(diagonal: bool, optimizers=("adam", "pga", "snngm", "nagm"), progress=None,
                  should_stop=None) -> dict:
    """Table 8's German credit column (diagonal or full): :func:`table8_sim` on
    :func:`vilab.targets.german.german_credit`, full batch, :data:`TABLE8_GERMAN_ITERATIONS` iterations."""
    from ..targets.german import german_credit

    model = german_credit()
    return table8_sim(diagonal, model=model, batch=model.n, epochs=TABLE8_GERMAN_ITERATIONS, optimizers=optimizers,
                      progress=progress, should_stop=should_stop)


@reproduction(
    "tan2025-table8-german", items=('tan-german',),
    paper="Tan (2025)",
    what="Table 8, German credit (logistic regression, d = 49, full batch): natural-gradient SNNGM and NAGM end above "
         "ProxGenAdam and Adam (diagonal and full); with a full covariance SNNGM reaches the exact optimum with "
         "first- as well as second-order gradients",
    slow=True,
    settings=TABLE8_GERMAN_TEXT,
    kind="mixed",
    source="Table 8, German columns (Sec. 8.2)",
)
def _table8_german():
    from ..targets.german import german_credit, logistic_va_optimum

    checks = []
    for diagonal in (True, False):
        cov = "diagonal" if diagonal else "full"
        src = f"Table 8, German {'Diag' if diagonal else 'Full'} (Sec. 8.2)"
        res = table8_german(diagonal)
        fin = {k[:2]: _final(r) for k, r in res.items()}
        lows = [("adam", "first"), ("adam", "second"), ("pga", "first"), ("pga", "second")]
        best_low = max(lows, key=lambda k: fin[k])
        highs = ([("snngm", "first"), ("snngm", "second"), ("nagm", "first"), ("nagm", "second")] if diagonal
                 else [("snngm", "first"), ("snngm", "second"), ("nagm", "second")])
        for key in highs:
            checks.append(Check(f"{cov}: {oplots.run_label(*key)} above the best Adam / ProxGenAdam run "
                                f"({oplots.run_label(*best_low)}, {fin[best_low]:.1f})",
                                f"{TABLE8_GERMAN[(*key, diagonal)]} > {TABLE8_GERMAN[(*best_low, diagonal)]}",
                                round(fin[key], 2), margin=_gap(fin[key], fin[best_low]), kind="paper", source=src,
                                tol_source="the paper's claim: Table 8's order (a tie fails)"))
        if diagonal:
            for order in ("first", "second"):
                checks.append(Check(f"diagonal: ProxGenAdam ({order} order) above Adam ({order} order)",
                                    f"{TABLE8_GERMAN[('pga', order, True)]} > {TABLE8_GERMAN[('adam', order, True)]}",
                                    (round(fin[("pga", order)], 2), round(fin[("adam", order)], 2)),
                                    margin=_gap(fin[("pga", order)], fin[("adam", order)]), kind="paper", source=src,
                                    tol_source="the paper's claim: Table 8's order (a tie fails)"))
        else:
            L_star = logistic_va_optimum(german_credit())[0]
            for order in ("first", "second"):
                checks.append(Check(f"full: SNNGM ({order} order) within 0.5 of the exact optimum L* = {L_star:.2f}",
                                    round(L_star, 2), round(fin[("snngm", order)], 2), tol=0.5, kind="derived",
                                    tol_source="chosen threshold: 0.5 (the paper: 'first order derivatives seem to "
                                               "be sufficient')",
                                    source="computed by us: the exact optimum by Gauss-Hermite and L-BFGS; the "
                                           "paper's 'first order derivatives seem to be sufficient' for German",
                                    note=f"paper: SNNGM {TABLE8_GERMAN[('snngm', order, False)]} (its best printed "
                                         "bound lies 3.8 above this coding's optimum)"))
        others = ", ".join(f"{oplots.run_label(*k)} {v:.1f}" for k, v in fin.items() if k not in highs)
        checks[-1] = replace(checks[-1], note=(checks[-1].note + "; " if checks[-1].note else "") + "others: " + others)
    return checks
