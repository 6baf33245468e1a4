"""Reproduce a paper's number through ``vilab.repro`` and print the paper's value beside ours.

The entry ``tan2025-optimum`` runs Tan (2025)'s natural-parameter update with backtracking on the
1-D Poisson toy of Sec. 4.1 (173 horseshoe crabs, 505 satellites) until the ELBO stops moving, and
compares the optimum (mu*, sigma^2*) and L* with the paper. Each reference value says whether the paper
prints it ("paper") or we computed it for the paper's setting ("derived"). The same table comes from the command
line: ``vilab repro tan2025-optimum`` (``vilab repro --list`` names every entry).

Run:  .venv/bin/python examples/reproduce_a_table.py [ENTRY]
"""

import sys

from vilab import repro


def main(name: str = "tan2025-optimum") -> dict:
    result = repro.run(name)
    return {
        "name": result.name,
        "paper": result.paper,
        "what": result.what,
        "passed": result.passed,
        "status": result.status,
        "error": result.error,
        "rows": [{"quantity": c.quantity, "reference": c.kind or result.kind, "paper": c.paper, "computed": c.computed,
                  "tol": c.tol, "rel": c.rel, "tolerance": c.tolerance_text(), "tol_source": c.tol_source,
                  "status": c.status, "ok": c.ok()} for c in result.checks],
    }


if __name__ == "__main__":
    out = main(*sys.argv[1:2])
    print(f"{out['name']}: {out['paper']}, {out['what']}")
    if out["error"]:
        print("error:", out["error"])
    print(f"{'quantity':<20} {'reference':<9} {'value':>10} {'ours':>10} {'tolerance':>10}  status  tolerance from")
    for r in out["rows"]:
        print(f"{r['quantity']:<20} {r['reference']:<9} {repro.format_value(r['paper']):>10} "
              f"{repro.format_value(r['computed']):>10} {r['tolerance']:>10}  {r['status']:<6}  {r['tol_source']}")
    # REPORTED rows are shown for context and not counted; the verdict counts only the compared ones
    print("all checks pass" if out["passed"] else f"verdict {out['status']}: SOME CHECKS FAIL OR NOTHING IS COMPARED")
