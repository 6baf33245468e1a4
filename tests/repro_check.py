"""The one check every reproduction test makes: the entry runs, and every compared value is within tolerance."""

from vilab import repro


def passes(name: str) -> repro.Result:
    """Run the registry entry ``name``; fail with the failing checks listed, else return its Result."""
    res = repro.run(name)
    assert res.error is None, res.error
    failed = [c.as_dict() for c in res.checks if not c.ok()]
    assert res.passed and not failed, failed
    return res
