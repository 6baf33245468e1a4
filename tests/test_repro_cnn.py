"""Reproductions of the CNN issue: parameter counts pass; the ordering entry runs and reports honestly."""

import numpy as np
import pytest

from tests.repro_check import run_audited
from vilab import repro


@pytest.mark.parametrize("name", ["tan2025-lenet-params", "bong-cnn-params"])
def test_parameter_count_reproductions_pass(name):
    res = run_audited(name)
    assert res.passed, res


def test_ordering_entry_is_registered_as_slow():
    e = repro.get("cnn-digits-ordering")
    assert e.slow and "3 seeds" in e.what


@pytest.mark.slow
def test_ordering_helpers_small_run():
    """A short version of both halves: finite numbers for every seed (the direction is reported, not forced)."""
    from vilab.repro.cnn import online_ordering, vi_ordering

    vi = vi_ordering(epochs=1, seeds=(0,), batch_size=64)
    assert set(vi) == {"adam", "snngm"} and all(np.isfinite(v).all() for v in vi.values())
    on = online_ordering(T=30, seeds=(0,), n_test=60)
    assert set(on) == {"bong-lin-hess-dlr-10", "bong-mc-ef-diag"} and all(np.isfinite(v).all() for v in on.values())


def test_recorded_ordering_matches_the_current_settings():
    """assets/cnn/digits-ordering.json (shown on the CNN lab page) was made with today's settings."""
    import json

    from vilab.plots import cnn_results
    from vilab.repro.cnn import ONLINE_SETTINGS, VI_SETTINGS

    rec = cnn_results.ordering(cnn_results.assets_dir())
    if rec is None:
        pytest.skip("assets/cnn/digits-ordering.json has not been recorded")
    as_json = lambda d: json.loads(json.dumps(d))  # noqa: E731  (tuples -> lists)
    assert rec["settings"]["vi"] == as_json(VI_SETTINGS) and rec["settings"]["online"] == as_json(ONLINE_SETTINGS)
    assert rec["settings"]["what"] == repro.get("cnn-digits-ordering").settings
