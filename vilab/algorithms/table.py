"""One table of the Gaussian VI methods, generated from the code (``Method`` attributes).

``method_table()`` lists every method of :func:`vilab.algorithms.list_methods` with its chart, the
gradient information its update consumes, how the stochastic modes estimate it, and its paper and
equation; then the Gaussian VI methods of vilab that live outside the catalogue (batch-and-match,
the BONG family, the CNN optimizers), with where to find them. ``method_table_markdown()`` renders
both as Markdown (the docs site inserts it in place of ``<!-- vilab:method-table -->``).
"""

from __future__ import annotations

from .core import METHODS

__all__ = ["method_table", "method_table_markdown", "CHARTS", "OUTSIDE"]

CHARTS = {"mean_cov": "(mu, Sigma)", "mean_prec": "(mu, Sigma^-1)", "chol_cov": "(mu, C), C C^T = Sigma",
          "chol_prec": "(mu, T), T T^T = Sigma^-1"}
_TAKES = {"grad_Sigma": "grad_Sigma (symmetric dL/dSigma)", "grad_C": "tril grad_C (dL/dC, lower triangle)",
          "grad_T": "tril grad_T (dL/dT, lower triangle)"}
_ESTIMATOR = {"thm2": "Tan (2025) Thm 2 factor estimators (first: G1/G2 from grad log p; second: F1/F2 "
                      "from the Hessian)",
              "sigma": "Stein (first: grad log p) / Price (second: Hessian of log p) estimates of grad_Sigma, "
                       "mapped to the chart"}

# Gaussian VI methods of vilab that are not catalogue entries (each is still a vilab.core.Algorithm)
OUTSIDE = (
    {"name": "batch-and-match (BaM)", "where": "vilab.divergences.stochastic.bam / run_bam",
     "consumes": "grad log p at a batch of draws from q", "paper": "Chen, Nott & Tan (batch-and-match)"},
    {"name": "stochastic KL / Fisher / score divergences (kl, fdr, sdr, fdb, sdb)",
     "where": "vilab.divergences.stochastic.algorithm / run_sgd",
     "consumes": "grad log p at draws; fdr and sdr also Hessian-vector products", "paper": "Chen, Nott & Tan"},
    {"name": "BONG family (bong, blr, bog, bbb; linearised or Monte Carlo; Hessian or empirical Fisher)",
     "where": "vilab.online.runner.algorithm / stream",
     "consumes": "per-observation log-likelihood gradient, and its Hessian or empirical Fisher",
     "paper": "Jones, Chang & Murphy"},
    {"name": "Tan's optimizers (snngm, nagm, pga, adam, adam-natural, vogn)", "where": "vilab.algorithms.optim.algorithm / run",
     "consumes": "minibatch estimates of the ELBO gradient in the chosen chart (first or second order)",
     "paper": "Tan (2025) Sec. 6"},
    {"name": "single-draw natural step in (mu, C), O(d^2) (tan-1N with grads='first', n_samples=1, at large d)",
     "where": "vilab.algorithms.catalogue.single_draw_algorithm",
     "consumes": "grad log p at one draw from q per step (no Sigma is formed)",
     "paper": "Tan (2025) Alg. 1N; Tan (explicit) Sec. 4"},
    {"name": "CNN variational and online training", "where": "vilab.cnn.train.vi_algorithm / vi_train / online_train",
     "consumes": "minibatch gradients of the network log-likelihood", "paper": "Tan (2025); Jones, Chang & Murphy"},
)


def method_table() -> list[dict]:
    """One row per catalogue method: name, chart, consumes (the gradients its update reads: always
    grad_mu, plus ``Method.takes``), hessian (how mode "second" uses Hessians), estimator, modes,
    paper (with the equation), description, section="catalogue"; then the rows of :data:`OUTSIDE`
    (section="outside", with ``where``)."""
    rows = []
    for m in METHODS.values():
        rows.append({"section": "catalogue", "name": m.name, "chart": CHARTS[m.chart],
                     "consumes": m.consumes,
                     "hessian": "E_q[Hessian of log p] through the second-order estimator (grads='second')",
                     "estimator": _ESTIMATOR[m.estimator], "modes": tuple(m.modes), "paper": m.paper,
                     "description": m.description,
                     "where": f"vilab.algorithms.algorithm({m.name!r}, target)"})
    for o in OUTSIDE:
        rows.append({"section": "outside", **o})
    return rows


def _cell(x) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def method_table_markdown() -> str:
    """:func:`method_table` as two Markdown tables (catalogue, then the methods outside it)."""
    rows = method_table()
    out = ["| Method | Chart | Update consumes | Stochastic estimates (grads='first' / 'second') | Paper, equation |",
           "|---|---|---|---|---|"]
    for r in rows:
        if r["section"] == "catalogue":
            cons = "grad_mu, " + _TAKES[r["consumes"][1]]
            out.append(f"| `{r['name']}` | {_cell(r['chart'])} | {_cell(cons)} | {_cell(r['estimator'])} | "
                       f"{_cell(r['paper'])} |")
    out += ["", "Gaussian VI methods of vilab outside the catalogue (each a `vilab.core.Algorithm`, "
                "driven by `vilab.core.run`):", "",
            "| Method | Where | Consumes | Paper |", "|---|---|---|---|"]
    for r in rows:
        if r["section"] == "outside":
            out.append(f"| {_cell(r['name'])} | `{r['where']}` | {_cell(r['consumes'])} | {_cell(r['paper'])} |")
    return "\n".join(out) + "\n"
