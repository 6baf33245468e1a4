"""Training over two processes with jax.distributed (CPU collectives) equals training in one process."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vilab.cnn import distributed

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--data", "digits", "--n-train", "256", "--batch", "32", "--epochs", "1", "--optimizer", "snngm", "--seed", "3"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env():
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)  # one CPU device per process, whatever the test session forces
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _launch(args, out: Path):
    return subprocess.Popen([sys.executable, "-m", "vilab.cnn.distributed", *args, "--out", str(out)], cwd=ROOT,
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc, timeout=400) -> dict:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail("a training process did not finish:\n" + err[-3000:])
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path):
    port = _free_port()
    procs = [_launch([*ARGS, "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", str(i)],
                     tmp_path / f"p{i}.npz") for i in range(2)]
    one = _launch(ARGS, tmp_path / "one.npz")
    summaries = [_finish(p) for p in procs]
    single = _finish(one)
    # the two processes really formed one 2-device mesh, one device each
    assert [s["process"] for s in summaries] == [0, 1]
    assert all(s["processes"] == 2 and s["devices"] == 2 and s["local_devices"] == 1 for s in summaries)
    assert single["processes"] == 1 and single["devices"] == 1
    assert all(s["steps"] == single["steps"] == 256 // 32 for s in summaries)
    p0, p1, ref = (np.load(tmp_path / f) for f in ("p0.npz", "p1.npz", "one.npz"))
    # every process holds the same parameters ...
    np.testing.assert_array_equal(p0["lam"], p1["lam"])
    # ... equal to one process's on the same data and keys, up to the order of the float32 sums
    assert np.all(np.isfinite(ref["lam"]))
    np.testing.assert_allclose(p0["lam"], ref["lam"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(p0["elbo"], ref["elbo"], rtol=1e-4)
    # and the run moved: the parameters are not the start's
    assert np.abs(ref["lam"]).max() > 0 and not np.allclose(ref["elbo"][0], ref["elbo"][-1])


def test_bad_cluster_settings_are_refused():
    with pytest.raises(ValueError, match="at least 1"):
        distributed.initialize("127.0.0.1:1", 0, 0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        distributed.initialize("127.0.0.1:1", 2, 5)


def test_odd_batch_over_two_processes_is_refused(tmp_path):
    port = _free_port()
    args = ["--data", "digits", "--n-train", "64", "--batch", "31", "--coordinator", f"127.0.0.1:{port}",
            "--num-processes", "2"]
    procs = [_launch([*args, "--process-id", str(i)], tmp_path / f"p{i}.npz") for i in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode != 0
        assert "multiple of the number of devices (2)" in err
