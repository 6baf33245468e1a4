"""Reproductions of Tan (2025) Sec. 6 and 8.1: Adam vs SNNGM (Fig. 3), Fig. 4, Table 7 ordering.

Entries: ``tan2025-fig3``, ``tan2025-fig4``, ``tan2025-loglinear-d50``.
"""

from __future__ import annotations


import jax
import numpy as np

from vilab.algorithms import optim
from vilab.core import as_key
from vilab.repro import Check, reproduction
from vilab.targets import regression as R

#: Fig. 3 starting points (mu, sigma^2) and the digest's iteration counts (Table 2 stopping rule).
FIG3_STARTS = ((0.0, 0.1), (0.5, 0.02), (2.0, 0.01))
FIG3_PAPER = {
    "adam": (2197, 1261, 2591),
    "snngm": (767, 431, 658),
    "adam-natural": (5948, 1940, 14),
}
FIG3_SOURCE = ("computed by us: independent runs with the paper's alpha and beta and Table 2's stopping rule "
               "|dL| < 1e-7 |L| (the paper's legend counts are not in its text)")
FIG3_ALPHA = {"adam": 1e-3, "adam-natural": 1e-3, "snngm": 1e-3}  # SNNGM: alpha0, alpha = 0.001 sqrt(2)


def fig3_run(name: str, alpha: float | None = None, max_iter: int = 20000):
    """One optimizer of Fig. 3 from the three starts: a list of three Traces.

    lambda = (mu, sigma^2) (the kappa parameterization), exact gradients, stop when
    |L_t - L_{t-1}| < 1e-7 |L_t| (Tan Table 2 rule); "adam" is fed Euclidean gradients,
    "adam-natural" and "snngm" natural gradients (Tan (2025) Sec. 6.1, Fig. 3). ``alpha`` is
    alpha0 for SNNGM (alpha = alpha0 sqrt(2)); default: the Fig. 3 values. Deterministic (exact
    gradients, full batch): the key is never drawn from.
    """
    if name not in FIG3_ALPHA:
        raise ValueError(f"Fig. 3 compares {', '.join(FIG3_ALPHA)}; got {name!r}.")
    m = R.crab_intercept()
    a = FIG3_ALPHA[name] if alpha is None else alpha
    key = jax.random.PRNGKey(0)
    return [optim.run(m, name, key=key, alpha=a, param="kappa", estimator="exact", n_iter=max_iter,
                      mu0=[s[0]], factor0=[[s[1]]], tol=1e-7, chunk_iters=1000) for s in FIG3_STARTS]


def fig3_runs(alphas: dict | None = None, max_iter: int = 20000):
    """The nine Fig. 3 runs on the 1-D crab toy: {optimizer: [Trace per start]} (see :func:`fig3_run`)."""
    alphas = {**FIG3_ALPHA, **(alphas or {})}
    return {name: fig3_run(name, alphas[name], max_iter) for name in FIG3_ALPHA}


def _count(tr) -> int:
    return tr.extra["failed_at"] if tr.diverged else tr.extra["iterations"]


@reproduction(
    "tan2025-fig3", items=('tan-table5',),
    paper="Tan (2025)",
    what="Fig. 3: Adam vs SNNGM on the 1-D crab toy; Adam with natural gradients hits sigma^2 < 0",
    settings="lambda = (mu, sigma^2), exact gradients, Adam alpha = 0.001, SNNGM alpha = 0.001 sqrt(2), beta = 0.9, "
    "stop |dL| < 1e-7 |L|",
    kind="mixed",
    source="Sec. 6.1 and Fig. 3",
)
def _fig3():
    runs = fig3_runs()
    checks = []
    for name in ("adam", "snngm"):
        counts = tuple(_count(t) for t in runs[name])
        label = optim.OPTIMIZERS[name]["label"]
        checks.append(Check(f"{label} iterations from (0, 0.1), (0.5, 0.02), (2, 0.01) (our reference counts)",
                            FIG3_PAPER[name], counts, tol=2, kind="derived", source=FIG3_SOURCE,
                            tol_source="chosen threshold: 2 iterations (a run stopping near the rule's threshold "
                                       "moves its count by one or two)",
                            note="the paper's legend numbers are not in its text"))
    ratios = tuple(_count(a) / _count(s) for a, s in zip(runs["adam"], runs["snngm"]))
    checks.append(Check("SNNGM needs about a third of Adam's iterations (ratio Adam/SNNGM in [2, 4.5])",
                        "about 3", tuple(round(r, 2) for r in ratios),
                        margin=min(min(r - 2.0, 4.5 - r) for r in ratios), ties=True,
                        tol_source="chosen threshold: 'by about three times' read as a ratio from 2 to 4.5",
                        kind="paper", source="Sec. 6.1: SNNGM reduced the number of iterations 'by about three times'"))
    nat = runs["adam-natural"]
    checks.append(Check("Adam (natural) from (0, 0.1), (0.5, 0.02): more iterations than Adam",
                        "more", tuple(_count(t) for t in nat[:2]),
                        margin=float(min(_count(n) - _count(a) for n, a in zip(nat[:2], runs["adam"][:2]))),
                        tol_source="the paper's claim: more iterations (a tie fails)",
                        kind="paper", source="Sec. 6.1: natural gradients did not improve Adam (more iterations)"))
    checks.append(Check("Adam (natural) from (2, 0.01)", "diverged: negative sigma^2", nat[2].status, kind="paper",
                        tol_source="exact",
                        source="Sec. 6.1: the run from (2, 0.01) was terminated after a negative sigma^2 update"))
    checks.append(Check("Adam (natural) from (2, 0.01): iteration at which sigma^2 < 0 (our reference count)", 14,
                        nat[2].extra["failed_at"], kind="derived", source=FIG3_SOURCE, tol_source="exact",
                        note="the paper only says the run was terminated"))
    opt_mu = tuple(round(float(t.mean[-1, 0]), 3) for t in runs["snngm"])
    checks.append(Check("SNNGM final mu from the three starts (optimum mu* = 1.07)", (1.07,) * 3, opt_mu, tol=0.01,
                        kind="paper", tol_source="printed precision: 1.07 (two decimals), with one unit for the "
                                                 "stopping rule's early stop", source="Sec. 4.1: optimum (1.07, 0.002), marked in Fig. 1"))
    return checks


@reproduction(
    "tan2025-fig4", items=('tan-thm3-fig4',),
    paper="Tan (2025)",
    what="Fig. 4: weights 1 - beta^(N-j+1) of the random index tau of Thm 3",
    settings="N = 10000, beta = 0.9",
    kind="mixed",
    source="Sec. 6.1 (Fig. 4): 'All values are greater than 0.99 except for the last 43 of them'",
)
def _fig4():
    w = optim.tau_weights(10000, 0.9)
    C = w.sum()
    return [
        Check("number of weights <= 0.99", 43, int(np.sum(w <= 0.99)), kind="paper", tol_source="exact"),
        Check("normaliser C = N - beta (1 - beta^N)/(1 - beta)", 10000 - 0.9 / 0.1 * (1 - 0.9**10000), float(C),
              tol=1e-8, kind="derived", source="computed by us: the geometric sum of the weights 1 - beta^(N-j+1)",
              tol_source="round-off"),
        Check("C >= N - beta/(1 - beta)", ">= 9991", float(C), margin=float(C) - (10000 - 9.0), ties=True,
              kind="derived", tol_source="exact: a bound (equality allowed)",
              source="computed by us: beta (1 - beta^N)/(1 - beta) <= beta/(1 - beta)"),
    ]


#: step sizes for the loglinear comparison (alpha0 for SNNGM), tuned once on seed 0.
LOGLINEAR_ALPHA = {
    (False, "adam"): 1e-3, (True, "adam"): 1e-3,
    (False, "snngm"): 0.003, (True, "snngm"): 0.005,
    (False, "nagm"): 0.2, (True, "nagm"): 0.2,
    (False, "vogn"): 0.1, (True, "vogn"): 0.2,
}


def _epoch_order(seed: int, n: int, batch: int, epochs: int) -> np.ndarray:
    """The minibatch order of the published loglinear numbers: one permutation per epoch from
    ``np.random.default_rng(seed)``, after the permutations of the first min(500 // nb, epochs) epochs
    (nb = n // batch), which the original driver drew to compile its 500-iteration chunk and never
    used. Keeping this order keeps the reproduced values to the last digits."""
    rng = np.random.default_rng(seed)
    nb = n // batch
    for _ in range(max(1, min(500 // nb, epochs))):
        rng.permutation(n)
    return optim.minibatch_indices(rng, n, batch, epochs * nb + 1)


def loglinear_comparison(n: int = 100_000, d: int = 50, batch: int = 5000, epochs: int = 100, seed: int = 0,
                         methods=("adam", "snngm", "nagm", "vogn"), progress=None):
    """Tan (2025) Sec. 8.1 / Table 7: final exact ELBO of each method, diagonal and full.

    Returns {diagonal: {"optimum": L*, "runs": {method: Trace}}}; the optimum is computed by
    direct optimisation of the tractable ELBO (:func:`vilab.targets.regression.loglinear_optimum`).
    Factor C for Adam, SNNGM and NAGM (Tan's Sec. 8 default), T for VOGN; exact minibatch
    gradients of the tractable ELBO. ``seed`` draws the data set and the minibatch order (one
    permutation per epoch from numpy's generator seeded with it, the same order for every method;
    see :func:`_epoch_order`); the runs' key is ``vilab.core.as_key(seed)``.
    """
    m = R.simulated_loglinear(n=n, d=d, seed=seed)
    out = {}
    k, total = 0, 2 * len(methods)
    for diagonal in (True, False):
        _, _, Lstar = R.loglinear_optimum(m, diagonal)
        runs = {}
        for name in methods:
            order = _epoch_order(seed, m.n, batch, epochs)
            runs[name] = optim.run(m, name, key=as_key(seed), alpha=LOGLINEAR_ALPHA[(diagonal, name)],
                                   diagonal=diagonal, estimator="exact", n_epochs=epochs, batch_size=batch,
                                   batches=order)
            k += 1
            if progress is not None:
                progress(k / total)
        out[diagonal] = {"optimum": Lstar, "runs": runs}
    return out


#: Tan (2025) Table 7, d = 50 (the paper's own simulated draw; reported beside ours).
TABLE7_D50 = {True: {"adam": -109491.4, "snngm": -109063.8, "nagm": -109118.4, "vogn": -109114.5},
              False: {"adam": -109458.2, "snngm": -109030.5, "nagm": -109037.7, "vogn": -109037.6}}

#: Exact-ELBO optimum of our draw (n = 1e5, d = 50, seed 0) in the digest (Sec. 5.5, "ceiling values"),
#: computed there independently by direct optimisation; the paper does not report its optimum.
DIGEST_OPTIMUM_D50 = {True: -109024.7, False: -108990.3}


def loglinear_checks(res, rel: float = 1e-3, paper_setting: bool = False) -> list[Check]:
    """Checks of the Table 7 claims on the output of :func:`loglinear_comparison`.

    With ``paper_setting`` (n = 1e5, d = 50, seed 0) the paper column holds Tan's Table 7 values
    (his own simulated draw, so only the ordering and the distance to the optimum are compared)
    and the digest's optimum; otherwise (a smaller CI setting) it states the criterion.
    """
    checks = []
    for diagonal, r in res.items():
        cov = "diagonal" if diagonal else "full"
        Lstar = r["optimum"]
        fin = {k: t.extra["final_elbo"] for k, t in r["runs"].items()}
        if paper_setting:
            checks.append(Check(f"{cov}: exact-ELBO optimum L* (direct optimisation of the tractable ELBO)",
                                DIGEST_OPTIMUM_D50[diagonal], round(Lstar, 1), tol=0.5, kind="derived",
                                tol_source="chosen threshold: 0.5 on |L*| of 1e5 (printed to one decimal)",
                                source="computed by us, independently, by direct optimisation of the tractable ELBO "
                                       "for our simulated draw (n = 1e5, d = 50, seed 0); the paper prints no optimum"))
        for name in ("snngm", "nagm", "vogn"):
            paper = TABLE7_D50[diagonal][name] if paper_setting else f"L* = {Lstar:.1f} +- {rel:.1%}"
            label = optim.OPTIMIZERS[name]["label"]
            checks.append(Check(f"{cov}: {label} final ELBO (passes within {rel:.1%} of L* = {Lstar:.1f})",
                                paper, round(fin[name], 1), margin=rel * abs(Lstar) - abs(fin[name] - Lstar),
                                ties=True, tol_source=f"chosen threshold: {rel:.1%} of |L*|",
                                kind="paper" if paper_setting else "derived",
                                source=("Table 7 (d = 50; the paper's own simulated draw, so the value is shown, the "
                                        "criterion is the distance to our optimum)") if paper_setting else
                                       "computed by us: the exact-ELBO optimum of this draw",
                                note=f"gap to L*: {Lstar - fin[name]:.1f}"))
        best_ng = min(fin[k] for k in ("snngm", "nagm", "vogn"))
        paper = TABLE7_D50[diagonal]["adam"] if paper_setting else "below SNNGM, NAGM and VOGN"
        checks.append(Check(f"{cov}: Adam final ELBO (passes below SNNGM, NAGM and VOGN: Table 7 ordering)",
                            paper, round(fin["adam"], 1), margin=best_ng - fin["adam"], kind="paper",
                            tol_source="the paper's claim: Table 7's order (a tie fails)",
                            source="Table 7 (d = 50): Adam below SNNGM, NAGM and VOGN",
                            note=f"lowest of the three: {best_ng:.1f}"))
    return checks


@reproduction(
    "tan2025-loglinear-d50", items=('tan-table7',),
    paper="Tan (2025)",
    what="Table 7 ordering: loglinear model d = 50, SNNGM/NAGM/VOGN reach the exact-ELBO optimum, Adam lags",
    slow=True,
    settings="n = 1e5, d = 50, seed 0, minibatch 5000, 100 epochs (2000 iterations), exact minibatch gradients, "
    "start mu = 0, C = I/sqrt(n) (T = sqrt(n) I for VOGN); alpha (diagonal / full): Adam 0.001 / 0.001, "
    "SNNGM alpha0 0.003 / 0.005, NAGM 0.2 / 0.2, VOGN 0.1 / 0.2",
    kind="mixed",
    source="Table 7 (Sec. 8.1, d = 50)",
)
def _loglinear():
    return loglinear_checks(loglinear_comparison(), paper_setting=True)
