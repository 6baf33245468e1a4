"""Tan (2025) Sec. 8.4: deep GLMs with a normal-gamma shrinkage prior (Table 10, Fig. 9), at a reduced setting.

Entries (both slow, 1-2 minutes each on a 2-core CPU):

* ``tan2025-deepglm-binary``: the simulated binary set; ``tan2025-deepglm-real``: the simulated real-valued set.

Each fits the six optimizers of Table 10 (Adam, PGA, NAdam, SNNGM, NAGM, VOGN; :mod:`vilab.models.deepglm`) and checks

1. Fig. 9, second row (kind "paper"): "the binary and real-valued simulated data only depend on the first five
   and ten inputs respectively, and this information has been captured by {gamma_j}, which are small for the
   relevant inputs and large for the irrelevant inputs". Our test of it, per method: every relevant input's
   gamma_j lies below the smallest gamma_j of the irrelevant inputs; the claim passes when at least half of the
   methods that did not diverge separate them so.
2. Every method raises its average lower bound from the first epoch to the last (derived, our setting).
3. Table 10's printed lower bounds beside ours, for context only: the paper's n = 1e5 makes its bounds about
   ten times ours, so the numbers are not compared; a row passes when our run ended with a finite bound. The
   order of the methods is reported in a note (the paper: "the highest lower bounds were achieved by PGA and
   Nagm"), not checked: the step sizes of SNNGM, NAGM and VOGN are not published and ours are untuned guesses.

What we found (seed 0, this setting): on the real-valued set SNNGM, NAGM and VOGN separate all ten relevant
inputs, Adam and NAdam eight, PGA none (the claim passes); on the binary set no method separates all five: the
4 x3 x4 interaction is never found at n = 10,000, and with this seed the networks settle at a poorer optimum that
misses the (x1 + 2 x2)^2 term too (with the one other seed we tried, SNNGM found x1, x2 and x5). The entry fails and says so. PGA
ends lowest on both sets here (the paper has it among the best); its sigma stay several times larger than the
other methods' (a possible cause: without bias correction of v, its first proximal steps inflate sigma).

Reduced setting (:data:`SETTING`): n = 10,000 (paper 1e5), p = 100, minibatch 500 for every method (paper 5000,
VOGN 50), 200 epochs (paper 1000 binary / 2000 real), seed 0. The census-income and protein sets of Table 10
are UCI downloads and are not reproduced.
"""

from __future__ import annotations

import functools

import numpy as np

from vilab.repro import Check, reproduction

SETTING = dict(n=10_000, p=100, batch_size=500, epochs=200, seed=0)
SETTING_TEXT = ("n = 10,000 (paper 1e5), p = 100, minibatch 500 for every method (paper 5000; VOGN 50), "
                "200 epochs (paper 1000 / 2000), default step sizes of vilab.models.deepglm, seed 0")

#: Tan (2025) Table 10: lower bound at termination (runtime in s), n = 1e5 (simulated sets)
TABLE10 = {
    "binary": {"adam": (-4545, 107), "pga": (-3393, 110), "adam-natural": (-4887, 108), "snngm": (-4474, 109),
               "nagm": (-2784, 109), "vogn": (-4836, 116)},
    "real": {"adam": (-191259, 302), "pga": (-181452, 300), "adam-natural": (-224623, 301), "snngm": (-188845, 302),
             "nagm": (-193727, 304), "vogn": (-215894, 328)},
    "census": {"adam": (-9806, 53), "pga": (-10185, 53), "adam-natural": (-9849, 53), "snngm": (-10217, 53),
               "nagm": (-9766, 53), "vogn": (-10040, 58)},
    "protein": {"adam": (-135074, 73), "pga": (-134869, 73), "adam-natural": (-137283, 73), "snngm": (-136333, 73),
                "nagm": (-134483, 72), "vogn": (-136811, 74)},
}


@functools.lru_cache(maxsize=4)
def deepglm_runs(name: str, n: int = SETTING["n"], p: int = SETTING["p"], batch_size: int = SETTING["batch_size"],
                 epochs: int = SETTING["epochs"], seed: int = SETTING["seed"]) -> dict:
    """method -> {"elbo", "seconds", "gamma" (final), "status"} for the six methods on one simulated set."""
    import jax

    from vilab.models import deepglm as dg
    from vilab.core import as_key

    k_data, k_fit = jax.random.split(as_key(seed))
    data = dg.simulate(name, k_data, n=n, p=p)
    out = {}
    for m in dg.METHODS:
        tr = dg.fit(data, m, key=k_fit, epochs=epochs, batch_size=batch_size)
        pe = dg.per_epoch(tr)
        out[m] = dict(elbo=pe["elbo"], seconds=pe["seconds"], gamma=pe["final_gamma"], status=tr.status)
    return out


def separated(gamma, k: int) -> int:
    """How many of the first k inputs have gamma_j below the smallest gamma_j of the other inputs."""
    g = np.asarray(gamma, float)
    return int(np.sum(g[:k] < np.min(g[k:])))


def deepglm_checks(name: str, runs: dict) -> list[Check]:
    from vilab.models.deepglm import DATASETS, method_label

    k = DATASETS[name][1]
    ok = {m: r for m, r in runs.items() if not r["status"].startswith("diverged") and len(r["elbo"])}
    counts = {m: separated(r["gamma"], k) for m, r in ok.items()}
    full = [m for m, c in counts.items() if c == k]
    per = ", ".join(f"{method_label(m)} {c}/{k}" for m, c in counts.items())
    missed = {j + 1: sum(runs[m]["gamma"][j] >= np.min(runs[m]["gamma"][k:]) for m in ok) for j in range(k)}
    missed = {j: c for j, c in missed.items() if c}
    checks = [Check(f"Fig. 9 row 2: gamma_j small for the relevant inputs x1-x{k}, large for the other {SETTING['p'] - k}",
                    "every relevant input below every irrelevant one",
                    f"{len(full)} of {len(ok)} methods separate all {k} ({per} relevant inputs below the smallest "
                    "irrelevant gamma)",
                    margin=float(2 * len(full) - len(ok)) if ok else -1.0, ties=True, kind="paper",
                    source="Fig. 9 and Sec. 8.4",
                    tol_source="chosen threshold: at least half of the methods that ran separate every relevant input",
                    note=("relevant inputs left among the irrelevant ones (by how many methods): "
                          + ", ".join(f"x{j} ({c})" for j, c in missed.items()) if missed
                          else "every method separates them")
                    + f"; at our reduced setting ({SETTING_TEXT})")]
    rises = {m: float(r["elbo"][-1] - r["elbo"][0]) for m, r in ok.items()}
    checks.append(Check("every method raises its average lower bound (first epoch -> last)", "all rise",
                        ", ".join(f"{method_label(m)} {v:+.0f}" for m, v in rises.items()),
                        margin=min(rises.values()) if ok and len(ok) == len(runs) else -1.0, kind="derived",
                        tol_source="chosen threshold: any rise (every method ran and its last epoch's bound is above "
                                   "its first)",
                        source=f"computed by us at the reduced setting ({SETTING_TEXT})",
                        note="diverged: " + ", ".join(method_label(m) for m in runs if m not in ok) if len(ok) < len(runs)
                        else ""))
    order = sorted(ok, key=lambda m: -float(ok[m]["elbo"][-1]))
    paper_order = sorted(TABLE10[name], key=lambda m: -TABLE10[name][m][0])
    for m, r in runs.items():
        final = float(r["elbo"][-1]) if len(r["elbo"]) else float("nan")
        lb, secs = TABLE10[name][m]
        checks.append(Check(f"{method_label(m)}: lower bound at termination (ours, for context)", "finite",
                            round(final, 1), reported=True, kind="derived",
                            source=f"computed by us at the reduced setting ({SETTING_TEXT})",
                            note=f"Table 10 (n = 1e5, {secs} s): {lb}; not comparable in scale; "
                                 f"ours took {float(r['seconds'][-1]) if len(r['seconds']) else float('nan'):.1f} s"))
    checks.append(Check("order of the final lower bounds (for context, not checked)",
                        " > ".join(method_label(m) for m in paper_order),
                        " > ".join(method_label(m) for m in order), reported=True, kind="paper",
                        source="Table 10 (Sec. 8.4: 'the highest lower bounds were achieved by PGA and Nagm')",
                        note="the paper's order at n = 1e5 with tuned step sizes; ours at the reduced setting with "
                             "untuned SNNGM / NAGM / VOGN step sizes: a different order is not a failure of either"))
    return checks


@reproduction("tan2025-deepglm-binary", items=('tan-deepglm',), paper="Tan (2025)",
              what="Deep GLM, simulated binary data (Sec. 8.4): gamma_j shrink the irrelevant inputs (Fig. 9); "
                   "Table 10's six optimizers at a reduced setting",
              slow=True, settings=SETTING_TEXT, kind="mixed", source="Sec. 8.4, Table 10 and Fig. 9")
def _binary():
    return deepglm_checks("binary", deepglm_runs("binary"))


@reproduction("tan2025-deepglm-real", items=('tan-deepglm',), paper="Tan (2025)",
              what="Deep GLM, simulated real-valued data (Sec. 8.4): gamma_j shrink the irrelevant inputs (Fig. 9); "
                   "Table 10's six optimizers at a reduced setting",
              slow=True, settings=SETTING_TEXT, kind="mixed", source="Sec. 8.4, Table 10 and Fig. 9")
def _real():
    return deepglm_checks("real", deepglm_runs("real"))
