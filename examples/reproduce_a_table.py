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
        "error": result.error,
        "rows": [{"quantity": c.quantity, "reference": c.kind or result.kind, "paper": c.paper, "computed": c.computed,
                  "tol": c.tol, "rel": c.rel, "ok": c.ok()} for c in result.checks],
    }


if __name__ == "__main__":
    out = main(*sys.argv[1:2])
    print(f"{out['name']}: {out['paper']}, {out['what']}")
    if out["error"]:
        print("error:", out["error"])
    print(f"{'quantity':<20} {'reference':<9} {'value':>10} {'ours':>10} {'tolerance':>10}  pass")
    for r in out["rows"]:
        tol = f"{r['tol']:g}" + (" rel" if r["rel"] else "")
        print(f"{r['quantity']:<20} {r['reference']:<9} {repro.format_value(r['paper']):>10} "
              f"{repro.format_value(r['computed']):>10} {tol:>10}  {'yes' if r['ok'] else 'NO'}")
    print("all checks pass" if out["passed"] else "SOME CHECKS FAIL")
