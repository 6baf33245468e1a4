"""The one check every reproduction test makes: the entry runs, every compared value is within tolerance, every
compared value says where its tolerance comes from, and every PASS can fail (its value moved past the tolerance
reads FAIL). Every test that runs a registry entry goes through :func:`audit`, so no entry runs twice for it."""

from vilab import repro

def audit(res: repro.Result) -> repro.Result:
    """Fail unless every compared check of ``res`` names its tolerance's source and reads FAIL when mutated."""
    missing = repro.without_tol_source(res.checks)
    assert not missing, f"{res.name}: these checks do not say where their tolerance comes from: {missing}"
    for c in res.compared:
        m = c.mutated()  # ValueError for a passed= check: it must give its margin
        assert m.status == "FAIL", (res.name, c.quantity, c.as_dict(), m.as_dict())
    return res


def passes(name: str) -> repro.Result:
    """Run the registry entry ``name``; fail with the failing checks listed, else return its audited Result."""
    res = repro.run(name)
    assert res.error is None, res.error
    failed = [c.as_dict() for c in res.checks if c.status == "FAIL"]
    assert res.passed and not failed, failed
    return audit(res)


def run_audited(name: str) -> repro.Result:
    """Run ``name`` and audit it (for tests that look at a result which may hold a FAIL the paper explains)."""
    res = repro.run(name)
    assert res.error is None, res.error
    return audit(res)
