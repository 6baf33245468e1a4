"""Side-by-side speed of vilab against the authors' own, unmodified code (issue 39, item 1).

    .venv/bin/python benchmarks/bench_peers.py --bong /work/peers/bong --gsm /work/peers/GSM-VI \\
        --peer-python /work/peers/venv/bin/python [--reps 3] [--rows diag,bam] [--dtypes float32]
    vilab bench peers --bong PATH --gsm PATH [--peer-python PATH]          (the same, from the CLI)

benchmarks/PEERS.md says how to make the two checkouts (petergchang/bong, modichirag/GSM-VI) and the venv for
them from the public repositories. Nothing is fetched at run time; the checkouts are used as they are (their
commit ids and whether they carry local changes go into the record).

How it measures:

* two persistent worker processes, one with vilab's venv (``benchmarks/peers/vilab_worker.py``) and one with the
  authors' venv (``benchmarks/peers/authors_worker.py``; a float32 and a float64 one, started in turn, since
  the authors' code takes its dtype from ``jax_enable_x64``); they never run at the same time;
* per row: each side builds its algorithm and makes the FIRST CALL (build + compile + the whole run, no
  persistent compilation cache); then ``reps`` timed calls, interleaved A B A B with the order flipped every rep
  (:func:`interleave_order`), so that a change of the machine's load falls on both sides;
* ratio = the authors' seconds / vilab's, per rep; the record keeps every rep's times and ratios, their median
  (the headline) and the ratio of the minima (:func:`ratio_stats`);
* agreement after the timed runs: BONG: the plug-in NLL on the 597 test digits of both final means (vilab's
  network evaluates both: the two parameter layouts are mapped index by index), max |mu difference| and the
  largest relative difference of the marginal variances; BaM / GSM: KL(q || p) of both final Gaussians and
  their largest |Sigma - Sigma*|;
* /proc/loadavg before and after every row and the whole run, versions of both venvs and the commits.

Rows (same data, mu0, sigma0^2 and steps on both sides):

* BONG (Jones, Chang & Murphy): digits MLP 64-32-10 (P = 2,410), the first ``--steps`` (1000) training examples
  of vilab.online.digits' split, mu0 = the network initialiser at key 0, sigma0^2 = 0.1, one jitted 1000-step
  scan a call: lin-hess diag, lin-hess DLR-10, mc-ef DLR-10 (M = 10), lin-hess full covariance, mc-ef diag
  (M = 10); float32 and float64.
* BaM (GSM-VI ``gsmvi.bam.BaM.fit``, dense update) against vilab's ``run_bam`` at d = 50, B = 50,
  rho_t = B d / t, 200 iterations on the Gaussian target of bench_divergences.py: vilab with ``history=False``
  and one window (the README's configuration) and with ``run_bam``'s defaults (``history=True``, window 50).
* GSM (``gsmvi.gsm.GSM.fit``) against ``vilab.divergences.stochastic.gsm`` at d = 50, B = 2.

Writes ``benchmarks/results/peers-YYYY-MM-DD-HHMM.json`` (UTC). Timings depend on the machine and its load; no
test asserts any of them (tests/test_bench_peers.py checks that the pairs compute the same thing and the
harness's own logic).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORKERS = HERE / "peers"
RESULTS = HERE / "results"
SCHEMA = "vilab-bench-peers/1"

BONG_METHODS = (  # (vilab's name after "bong-", settings): the rows of issue 39's table
    ("lin-hess-diag", {}),
    ("lin-hess-dlr-10", {"rank": 10}),
    ("mc-ef-dlr-10", {"rank": 10, "M": 10}),
    ("lin-hess-fc", {}),
    ("mc-ef-diag", {"M": 10}),
)
DTYPES = ("float32", "float64")
SIGMA0_2 = 0.1
BAM = {"d": 50, "B": 50, "n_iter": 200}
GSM = {"d": 50, "B": 2, "n_iter": 1000}
SIDES = ("vilab", "authors")


# ------------------------------------------------------------------------------------------ pure logic
def interleave_order(rep: int) -> tuple[str, str]:
    """Which side runs first in rep ``rep`` (0-based): vilab, authors on even reps, the other way on odd ones."""
    if isinstance(rep, bool) or not isinstance(rep, int) or rep < 0:
        raise ValueError(f"rep must be a whole number >= 0; got {rep!r}")
    return SIDES if rep % 2 == 0 else SIDES[::-1]


def ratio_stats(vilab_s, authors_s) -> dict:
    """Per-rep ratios authors / vilab of paired times (seconds, same length, positive), their median, the ratio
    of the minima, and each side's minimum and median."""
    v, a = [float(x) for x in vilab_s], [float(x) for x in authors_s]
    if len(v) != len(a) or not v:
        raise ValueError(f"ratio_stats needs as many vilab times as authors' times, at least one; got {len(v)}, {len(a)}")
    if not all(math.isfinite(x) and x > 0 for x in v + a):
        raise ValueError("every time must be a positive finite number of seconds")
    r = [ai / vi for vi, ai in zip(v, a)]
    return {"ratios": r, "median_ratio": statistics.median(r), "ratio_of_minima": min(a) / min(v),
            "vilab_min_s": min(v), "authors_min_s": min(a), "vilab_median_s": statistics.median(v),
            "authors_median_s": statistics.median(a)}


def per_step_ms(seconds, steps: int) -> list[float]:
    return [1e3 * s / steps for s in seconds]


def loadavg() -> list[float] | None:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return None


def git_info(path) -> dict:
    """Commit id, commit date and whether the work tree differs from it (tracked files; untracked ignored)."""
    def git(*a):
        return subprocess.run(["git", "-C", str(path), *a], capture_output=True, text=True, check=True).stdout.strip()

    try:
        status = git("status", "--porcelain", "--untracked-files=no")
        return {"path": str(Path(path).resolve()), "commit": git("rev-parse", "HEAD"),
                "commit_date": git("log", "-1", "--format=%cI"), "unmodified": status == "",
                "changes": status.splitlines()[:20]}
    except (subprocess.CalledProcessError, FileNotFoundError) as e:
        return {"path": str(path), "commit": None, "error": f"not a git checkout: {e}"}


def row_specs(steps: int = 1000, dtypes=DTYPES, rows=None, vi: bool = True) -> list[dict]:
    """The benchmarked rows, in run order (float32 BONG rows, then float64 ones, then BaM and GSM); ``rows``:
    substrings of row ids to keep (None: all)."""
    out = []
    for dt_ in dtypes:
        for name, kw in BONG_METHODS:
            out.append({"id": f"bong {name} {dt_}", "kind": "bong", "method": name, "dtype": dt_, "steps": int(steps),
                        "s2": SIGMA0_2, "seed": 0, **kw})
    if vi:
        for variant in ("thinned", "defaults"):
            out.append({"id": f"bam d={BAM['d']} vilab-{variant}", "kind": "bam", "variant": variant,
                        "dtype": "float64", "seed": 0, **BAM})
        out.append({"id": f"gsm d={GSM['d']}", "kind": "gsm", "dtype": "float64", "seed": 0, **GSM})
    if rows:
        out = [r for r in out if any(s in r["id"] for s in rows)]
    return out


def steps_of(row) -> int:
    return int(row["steps"] if row["kind"] == "bong" else row["n_iter"])


# ------------------------------------------------------------------------------------------ workers
class WorkerError(RuntimeError):
    pass


class Worker:
    """A persistent worker process speaking :mod:`benchmarks.peers.protocol`; its stderr goes to ``log``."""

    def __init__(self, name: str, cmd: list[str], log: Path, env=None, timeout: float = 900.0):
        self.name, self.log, self.timeout = name, Path(log), timeout
        self._err = open(self.log, "w")  # noqa: SIM115  (open as long as the worker runs; closed by close())
        env = dict(os.environ if env is None else env)
        env.pop("JAX_COMPILATION_CACHE_DIR", None)
        env.setdefault("JAX_PLATFORMS", "cpu")
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, text=True,
                                     bufsize=1, cwd=str(ROOT), env=env)

    def stderr_tail(self, n: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def request(self, op: str, **kw) -> dict:
        """Send one request and wait for its reply; WorkerError if the worker died or took too long."""
        if self.proc.poll() is not None:
            raise WorkerError(f"{self.name} worker exited ({self.proc.returncode}): {self.stderr_tail()}")
        self.proc.stdin.write(json.dumps({"op": op, **kw}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            raise WorkerError(f"{self.name} worker gave no reply to {op!r} "
                              f"({'timed out' if not ready else 'exited'}): {self.stderr_tail()}")
        return json.loads(line)

    def close(self):
        if self.proc.poll() is None:
            try:
                self.request("quit")
            except (WorkerError, OSError, ValueError):
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._err.close()


def _ok(reply: dict, who: str, what: str) -> dict:
    if not reply.get("ok"):
        raise WorkerError(f"{who}: {what} failed: {reply.get('error')}\n{reply.get('traceback', '')}")
    return reply


def run_row(row: dict, workers: dict, reps: int, agree=None, first_side: str = "vilab") -> dict:
    """One row: both sides' first calls (``first_side`` first), ``reps`` interleaved timed calls, both results and
    their agreement (``agree(row, vilab_result, authors_result) -> dict``). ``workers``: {"vilab": w, "authors": w}
    with a ``request(op, **kw)`` method. A side that fails leaves the reason in the row (``error``)."""
    rec = {"row": row, "load_before": loadavg(), "first_call_s": {}, "times_s": {s: [] for s in SIDES}, "order": []}
    try:
        for side in (first_side, SIDES[1] if first_side == SIDES[0] else SIDES[0]):
            r = _ok(workers[side].request("prepare", row=row), side, f"first call of {row['id']}")
            rec["first_call_s"][side] = r["first_s"]
            rec.setdefault("notes", {})[side] = {k: v for k, v in r.items() if k not in ("ok", "first_s", "handler_s")}
        for rep in range(reps):
            order = interleave_order(rep)
            rec["order"].append(list(order))
            for side in order:
                r = _ok(workers[side].request("time", id=row["id"]), side, f"timed call {rep} of {row['id']}")
                rec["times_s"][side].append(r["s"])
        n = steps_of(row)
        rec["ms_per_step"] = {s: per_step_ms(rec["times_s"][s], n) for s in SIDES}
        rec["stats"] = ratio_stats(rec["times_s"]["vilab"], rec["times_s"]["authors"]) if reps else None
        rec["first_call_ratio"] = rec["first_call_s"]["authors"] / rec["first_call_s"]["vilab"]
        if reps:  # what the first call costs beyond a warm call: building + tracing + compiling (an estimate)
            rec["first_call_minus_warm_s"] = {s: rec["first_call_s"][s] - min(rec["times_s"][s]) for s in SIDES}
        if agree is not None:
            res = {s: _ok(workers[s].request("result", id=row["id"]), s, f"result of {row['id']}") for s in SIDES}
            rec["agreement"] = agree(row, res["vilab"], res["authors"])
    except WorkerError as e:
        rec["error"] = str(e)
    finally:
        for w in workers.values():
            try:
                w.request("drop", id=row["id"])
            except (WorkerError, OSError, ValueError):
                pass
    rec["load_after"] = loadavg()
    return rec


# ------------------------------------------------------------------------------------------ agreement
class Agreement:
    """Agreement measures of the final states; built on the harness's data (vilab's network for the NLL)."""

    def __init__(self, data: dict):
        import numpy as np

        self.np = np
        self.data = data
        self._net = None

    def nll(self, mean):
        """Plug-in NLL (nats per example) and accuracy on the test split, vilab's digits MLP in float64."""
        np = self.np
        import jax
        import jax.numpy as jnp

        from vilab.models.nets import make_mlp

        if self._net is None:
            self._net = make_mlp([int(s) for s in self.data["mlp_sizes"]])
        theta = jnp.asarray(mean, jnp.float64)
        logits = np.asarray(self._net.apply_batch(theta, jnp.asarray(self.data["X_test"])), np.float64)
        lse = np.log(np.sum(np.exp(logits - logits.max(1, keepdims=True)), 1)) + logits.max(1)
        y = self.data["y_test"]
        nll = float(np.mean(lse - logits[np.arange(len(y)), y]))
        del jax
        return nll, float(np.mean(np.argmax(logits, 1) == y))

    def __call__(self, row, v, a):
        np = self.np
        if row["kind"] == "bong":
            mv, ma = np.asarray(v["mean"]), np.asarray(a["mean"])
            vv, va = np.asarray(v["var"]), np.asarray(a["var"])
            (nv, av), (na, aa) = self.nll(mv), self.nll(ma)
            return {"nll_vilab": nv, "nll_authors": na, "acc_vilab": av, "acc_authors": aa,
                    "max_abs_mean_diff": float(np.max(np.abs(mv - ma))),
                    "max_rel_var_diff": float(np.max(np.abs(vv - va) / np.maximum(np.abs(va), 1e-300))),
                    "finite_vilab": bool(np.all(np.isfinite(mv))), "finite_authors": bool(np.all(np.isfinite(ma)))}
        d = int(row["d"])
        m, S = self.data[f"gauss{d}/mean"], self.data[f"gauss{d}/cov"]
        out = {}
        for side, r in (("vilab", v), ("authors", a)):
            mq, Sq = np.asarray(r["mean"]), np.asarray(r["cov"])
            out[f"kl_{side}"] = gauss_kl(mq, Sq, m, S)
            out[f"max_abs_cov_err_{side}"] = float(np.max(np.abs(Sq - S)))
            out[f"max_abs_mean_err_{side}"] = float(np.max(np.abs(mq - m)))
        return out


def gauss_kl(mq, Sq, mp, Sp) -> float:
    """KL(N(mq, Sq) || N(mp, Sp)) in nats (nan when Sq is not positive definite)."""
    import numpy as np

    d = len(mp)
    try:
        Lp = np.linalg.cholesky(Sp)
        Lq = np.linalg.cholesky(0.5 * (Sq + Sq.T))
    except np.linalg.LinAlgError:
        return float("nan")
    A = np.linalg.solve(Lp, Lq)
    r = np.linalg.solve(Lp, mq - mp)
    return float(0.5 * (np.sum(A * A) - d + r @ r) + np.sum(np.log(np.diag(Lp))) - np.sum(np.log(np.diag(Lq))))


# ------------------------------------------------------------------------------------------ inputs
def gauss_problem(d: int, seed: int = 0):
    """The Gaussian target of benchmarks/bench_divergences.py: mean N(0, I), cov A A^T / d + 0.5 I."""
    import numpy as np

    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    cov = A @ A.T / d + 0.5 * np.eye(d)
    return rng.normal(size=d), cov


def make_inputs(path: Path) -> dict:
    """Write the data both sides read (digits split, mu0, the layer index map, the Gaussian targets) to ``path``
    (.npz) and return it."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    sys.path.insert(0, str(ROOT))
    import vilab  # noqa: F401
    from vilab.online.digits import digits_model, load_digits_split

    Xtr, ytr, _, _, Xte, yte = load_digits_split()
    net = digits_model("mlp")
    mu0 = np.asarray(net.init(jax.random.PRNGKey(0)), np.float64)
    layers = net.unravel(jnp.arange(net.n_params, dtype=jnp.float64))
    data = {"X_train": Xtr, "y_train": ytr, "X_test": Xte, "y_test": yte, "mu0": mu0,
            "mlp_sizes": np.array([64, 32, 10])}
    for lname, leaves in layers.items():
        for k, arr in leaves.items():
            data[f"layer/{lname}/{k}"] = np.asarray(arr)
    for d in sorted({BAM["d"], GSM["d"]}):
        m, S = gauss_problem(d)
        data[f"gauss{d}/mean"], data[f"gauss{d}/cov"] = m, S
    np.savez(path, **data)
    return data


# ------------------------------------------------------------------------------------------ record
REQUIRED_ROW = ("row", "load_before", "load_after", "first_call_s", "times_s", "order")


def validate_record(rec: dict) -> None:
    """ValueError unless ``rec`` has the fields a peers record promises (and its ratios are its times')."""
    for k in ("schema", "created_utc", "load_before", "load_after", "settings", "versions", "peers", "vilab", "rows"):
        if k not in rec:
            raise ValueError(f"the record has no {k!r}")
    if rec["schema"] != SCHEMA:
        raise ValueError(f"schema {rec['schema']!r} is not {SCHEMA!r}")
    for k in ("bong", "gsm"):
        if "commit" not in rec["peers"].get(k, {}):
            raise ValueError(f"the record has no commit id for the {k} checkout")
    for r in rec["rows"]:
        for k in REQUIRED_ROW:
            if k not in r:
                raise ValueError(f"row {r.get('row', {}).get('id')!r} has no {k!r}")
        if "error" in r:
            continue
        st, t = r["stats"], r["times_s"]
        if len(t["vilab"]) != len(t["authors"]) or len(r["order"]) != len(t["vilab"]):
            raise ValueError(f"row {r['row']['id']!r}: unpaired times")
        again = ratio_stats(t["vilab"], t["authors"])
        if any(abs(x - y) > 1e-12 * abs(y) for x, y in zip(st["ratios"], again["ratios"])) or \
                abs(st["median_ratio"] - again["median_ratio"]) > 1e-12 * again["median_ratio"]:
            raise ValueError(f"row {r['row']['id']!r}: its ratios are not its times' ratios")
        for i, o in enumerate(r["order"]):
            if tuple(o) != interleave_order(i):
                raise ValueError(f"row {r['row']['id']!r}: rep {i} ran in the order {o}, not interleaved")


def record_path(now: dt.datetime, folder: Path = RESULTS) -> Path:
    return Path(folder) / f"peers-{now.strftime('%Y-%m-%d-%H%M')}.json"


def summary_table(rec: dict) -> str:
    lines = [(f"{'row':32s}{'vilab ms':>10s}{'authors ms':>12s}{'ratio':>7s}{'(min)':>7s}{'first v':>9s}"
              f"{'first a':>9s}  agreement")]
    for r in rec["rows"]:
        rid = r["row"]["id"]
        if "error" in r or not r.get("stats"):
            lines.append(f"{rid:32s}  could not run: {r.get('error', 'no timed reps').splitlines()[0][:120]}")
            continue
        n = steps_of(r["row"])
        st, fc, ag = r["stats"], r["first_call_s"], r.get("agreement", {})
        if r["row"]["kind"] == "bong":
            a = (f"NLL {ag.get('nll_authors', float('nan')):.3f} / {ag.get('nll_vilab', float('nan')):.3f}, "
                 f"max|dmu| {ag.get('max_abs_mean_diff', float('nan')):.1e}")
        else:
            a = f"KL {ag.get('kl_authors', float('nan')):.2e} / {ag.get('kl_vilab', float('nan')):.2e}"
        lines.append(f"{rid:32s}{1e3 * st['vilab_median_s'] / n:10.3f}{1e3 * st['authors_median_s'] / n:12.3f}"
                     f"{st['median_ratio']:7.1f}{st['ratio_of_minima']:7.1f}{fc['vilab']:9.2f}{fc['authors']:9.2f}  {a}")
    lines.append("(ms a step / an iteration: medians; ratio = authors / vilab, median of per-rep ratios, (min) = ratio of "
                 "minima; first = first call in s, build + compile + run; NLL authors / vilab)")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ main
def _env_default(name):
    return os.environ.get(name) or None


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bong", default=_env_default("VILAB_PEER_BONG"), help="checkout of petergchang/bong "
                    "(default: $VILAB_PEER_BONG)")
    ap.add_argument("--gsm", default=_env_default("VILAB_PEER_GSM"), help="checkout of modichirag/GSM-VI "
                    "(default: $VILAB_PEER_GSM)")
    ap.add_argument("--peer-python", default=_env_default("VILAB_PEER_PYTHON"),
                    help="python of the venv for the authors' code (default: $VILAB_PEER_PYTHON, else "
                         "/work/peers/venv/bin/python when it exists)")
    ap.add_argument("--reps", type=int, default=3, help="timed calls a side and row, interleaved (default 3)")
    ap.add_argument("--steps", type=int, default=1000, help="BONG steps a call (default 1000, the digits stream)")
    ap.add_argument("--rows", default=None, help="comma-separated substrings of row ids (e.g. 'diag,bam')")
    ap.add_argument("--dtypes", default=",".join(DTYPES), help="BONG dtypes (default float32,float64)")
    ap.add_argument("--no-vi", action="store_true", help="BONG rows only (no BaM / GSM)")
    ap.add_argument("--out", default=None, help="record path (default benchmarks/results/peers-<UTC time>.json)")
    ap.add_argument("--no-record", action="store_true", help="print the table only")
    args = ap.parse_args(argv)
    if args.peer_python is None and Path("/work/peers/venv/bin/python").exists():
        args.peer_python = "/work/peers/venv/bin/python"
    missing = [f for f, v in (("--bong", args.bong), ("--gsm", args.gsm), ("--peer-python", args.peer_python)) if not v]
    if missing:
        ap.error(f"{', '.join(missing)} needed: the checkouts of the authors' code and the python of their venv "
                 "(benchmarks/PEERS.md says how to make them)")
    for flag, p in (("--bong", args.bong), ("--gsm", args.gsm), ("--peer-python", args.peer_python)):
        if not Path(p).exists():
            ap.error(f"{flag} {p}: no such file or folder (benchmarks/PEERS.md says how to make it)")
    if args.reps < 1 or args.steps < 1:
        ap.error("--reps and --steps must be at least 1")
    bad = [d for d in args.dtypes.split(",") if d not in DTYPES]
    if bad:
        ap.error(f"--dtypes takes float32 and/or float64; got {bad}")
    return args


def vilab_worker(tmp: Path) -> Worker:
    return Worker("vilab", [sys.executable, str(WORKERS / "vilab_worker.py")], tmp / "vilab.log")


def authors_worker(args, tmp: Path, x64: int) -> Worker:
    return Worker(f"authors (x64={x64})", [args.peer_python, str(WORKERS / "authors_worker.py"), "--bong",
                                          str(Path(args.bong).resolve()), "--gsm", str(Path(args.gsm).resolve()),
                                          "--x64", str(x64)], tmp / f"authors-x64-{x64}.log")


def _start(w: Worker, key: str, rec: dict, inputs: Path) -> None:
    """hello (versions into the record, once) and load the inputs; WorkerError when the worker cannot."""
    h = w.request("hello")
    rec["versions"].setdefault(key, h.get("versions") or {"error": h.get("error")})
    _ok(h, w.name, "start")
    _ok(w.request("load", path=str(inputs)), w.name, "loading the inputs")


def _failed_row(r: dict, why: str) -> dict:
    return {"row": r, "error": why, "load_before": loadavg(), "load_after": loadavg(), "first_call_s": {},
            "times_s": {}, "order": []}


def run_group(args, tmp, x64, group, vw, rec, agree, inputs) -> None:
    """The rows of one authors' worker (x64 off: the float32 BONG rows; on: the rest); a worker that dies is
    started again for the next row."""
    aw = None
    for r in group:
        if aw is None or aw.proc.poll() is not None:
            if aw is not None:
                aw.close()
            aw = authors_worker(args, tmp, x64)
            try:
                _start(aw, f"authors_x64_{x64}", rec, inputs)
            except WorkerError as e:
                rec["rows"].append(_failed_row(r, f"the authors' worker did not start: {e}"))
                continue
        t0 = time.time()
        out = run_row(r, {"vilab": vw, "authors": aw}, args.reps, agree, first_side=SIDES[len(rec["rows"]) % 2])
        out["wall_s"] = time.time() - t0
        rec["rows"].append(out)
        print(summary_table({"rows": [out]}).splitlines()[1], flush=True)
    if aw is not None:
        aw.close()


def main(argv=None) -> int:
    args = parse_args(argv)
    t_start = time.time()
    now = dt.datetime.now(dt.UTC)
    rows = row_specs(args.steps, tuple(args.dtypes.split(",")), args.rows.split(",") if args.rows else None,
                     vi=not args.no_vi)
    if not rows:
        print("No row matched --rows / --dtypes.", file=sys.stderr)
        return 2
    rec = {"schema": SCHEMA, "created_utc": now.isoformat(timespec="seconds"), "load_before": loadavg(),
           "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "processor": platform.processor()},
           "settings": {"reps": args.reps, "steps": args.steps, "sigma0_2": SIGMA0_2, "bam": BAM, "gsm": GSM,
                        "data": "vilab.online.digits.load_digits_split (scikit-learn digits, seed-0 split), first "
                                "`steps` training examples in order; mu0 = digits MLP init at PRNGKey(0)",
                        "timing": "persistent workers, one at a time; first call = build + compile + run, no "
                                  "persistent compilation cache; then reps calls interleaved, order flipped each rep"},
           "vilab": {**git_info(ROOT), "python": sys.executable},
           "peers": {"bong": {"repository": "petergchang/bong", **git_info(args.bong)},
                     "gsm": {"repository": "modichirag/GSM-VI", **git_info(args.gsm)},
                     "python": str(args.peer_python)},
           "versions": {}, "rows": []}
    print(f"bench_peers: {len(rows)} rows, {args.reps} reps; vilab {rec['vilab'].get('commit', '?')[:10]}, bong "
          f"{(rec['peers']['bong'].get('commit') or '?')[:10]}, GSM-VI {(rec['peers']['gsm'].get('commit') or '?')[:10]};"
          f" load {rec['load_before']}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        tmp = Path(tmp)
        data = make_inputs(tmp / "inputs.npz")
        agree = Agreement(data)
        groups = [(0, [r for r in rows if r["kind"] == "bong" and r["dtype"] == "float32"]),
                  (1, [r for r in rows if not (r["kind"] == "bong" and r["dtype"] == "float32")])]
        inputs = tmp / "inputs.npz"
        vw = vilab_worker(tmp)
        try:
            _start(vw, "vilab", rec, inputs)
            for x64, group in groups:
                if group:
                    run_group(args, tmp, x64, group, vw, rec, agree, inputs)
        except WorkerError as e:  # vilab's own worker did not start: nothing can be timed
            for r in rows:
                rec["rows"].append(_failed_row(r, f"vilab's worker did not start: {e}"))
        finally:
            vw.close()
    rec["load_after"] = loadavg()
    rec["wall_s"] = time.time() - t_start
    validate_record(rec)
    print()
    print(summary_table(rec))
    print(f"load before {rec['load_before']}, after {rec['load_after']}; {rec['wall_s']:.0f} s")
    if not args.no_record:
        path = Path(args.out) if args.out else record_path(now)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(_json_clean(rec), indent=1) + "\n")
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0 if all("error" not in r for r in rec["rows"]) else 1


def _json_clean(x):
    sys.path.insert(0, str(WORKERS))
    from protocol import clean

    return clean(x)


if __name__ == "__main__":
    raise SystemExit(main())
