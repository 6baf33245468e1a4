"""Command line: ``vilab app | hall | repro | bench``."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from vilab.core.compile_cache import plain_ui

ROOT = Path(__file__).resolve().parents[1]
ON_REQUEST = {"bench_hall", "bench_soak", "bench_browser", "bench_peers"}  # benchmarks `vilab bench` runs only when named
PEER_FLAGS = ("bong", "gsm", "peer_python", "reps", "rows")  # `vilab bench peers` passes these to bench_peers.py
# Streamlit options of every served lab (`vilab app` and each replica of `vilab hall`): a served lab does not reload
# its files, and Streamlit's file watcher (one per browser session, walking every imported module, JAX's
# thousands) cost each page load about a second of server CPU on two cores; no usage statistics leave the machine
SERVED_OPTIONS = ("--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false")


def command(app: str | Path | None = None, *options: str) -> list[str]:
    """The command that serves ``app`` (default: the checkout's app.py) with ``options`` (Streamlit's
    ``--server.port 8501``...): ``[python, -m, vilab_ui.serve, run, app, *options]``, that is ``streamlit run``
    with JAX's cache switched on and the pages' libraries imported before the server starts (vilab_ui/serve.py;
    run as a process, so that this package never imports Streamlit)."""
    return [sys.executable, "-m", "vilab_ui.serve", "run", str(app or ROOT / "app.py"), *options]


def _app(args) -> int:
    app = ROOT / "app.py"
    if not app.exists():
        print(f"vilab app needs the repository checkout (app.py not found at {app}).", file=sys.stderr)
        return 2
    # `vilab app -- --server.fileWatcherType auto` brings the file watcher back for development
    cmd = command(app, "--server.port", str(args.port), *SERVED_OPTIONS)  # the pages' libraries imported at start
    if args.headless:
        cmd += ["--server.headless", "true"]
    extra = list(args.streamlit_args)
    cmd += extra[1:] if extra[:1] == ["--"] else extra  # Streamlit's options, not the script's arguments
    if args.no_warmup or plain_ui():  # VILAB_PLAIN_UI=1: none of vilab's own mechanisms (docs/ui-mechanisms.md)
        return run_server(cmd)
    return _serve_warmed(cmd, f"http://127.0.0.1:{args.port}")


def _say(text: str) -> None:
    print(f"vilab: {text}", flush=True)


def signal_group(proc: subprocess.Popen, sig: int) -> None:
    """Send ``sig`` to ``proc``'s process group (a child started with ``start_new_session=True`` leads its own),
    so that what it started gets it too; to ``proc`` alone when it leads no group. Nothing when it is gone."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:  # no such group: not started in its own session, or every member has exited
        if proc.poll() is None:
            proc.send_signal(sig)
    except PermissionError:
        pass


def stop_processes(procs, sig: int = signal.SIGTERM, grace_s: float = 10.0) -> None:
    """Stop child processes and everything they started: ``sig`` to each one's process group, up to ``grace_s``
    seconds for all of them to exit, then SIGKILL to every group (what is left of it: a process that ignored
    ``sig``, or a grandchild). A second Ctrl-C while waiting goes straight to SIGKILL. Returns once every
    process given has been reaped."""
    procs = [p for p in procs if p is not None]
    for p in procs:
        signal_group(p, sig)
    deadline = time.monotonic() + grace_s
    try:
        for p in procs:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
    finally:
        for p in procs:
            signal_group(p, signal.SIGKILL)
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:  # a process stuck in the kernel: nothing more to do
                pass


class _Stop(KeyboardInterrupt):
    """SIGTERM or SIGINT arrived: the signal's number travels with it, to be passed on to the children."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def run_server(cmd: list[str], while_running=None) -> int:
    """Run the server ``cmd`` in its own process group and wait for it; ``while_running(proc)`` is called first,
    while it serves (the warm-up). SIGTERM or SIGINT (Ctrl-C) to this process is passed on to the server's whole
    group, which gets 10 s to exit before it is killed, so nothing is left running (before, `vilab app
    --no-warmup` forwarded nothing: after a SIGTERM its server kept serving the port). Returns the server's exit
    status (that of the signal when one stopped it)."""
    def _stop(signum, frame):
        raise _Stop(signum)

    previous = {s: signal.signal(s, _stop) for s in (signal.SIGTERM, signal.SIGINT)}
    proc = None
    try:
        proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True)
        if while_running is not None:
            while_running(proc)
        return proc.wait()
    except KeyboardInterrupt as exc:  # _Stop, or a KeyboardInterrupt raised from inside the warm-up
        if proc is None:
            return 128 + getattr(exc, "signum", signal.SIGINT)
        stop_processes([proc], getattr(exc, "signum", signal.SIGINT))  # Streamlit's own clean shutdown first
        return proc.returncode
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _serve_warmed(cmd: list[str], url: str, start_timeout_s: float = 120.0) -> int:
    """Run the server (``cmd``) and, once it answers at ``url``, open every page once in headless Chromium
    (deploy/hall.py's warm-up, as ``vilab hall`` does for its replicas): the first visit of each page then
    finds its programs compiled and its default view computed, instead of waiting 5-25 s for them on two
    cores. The server is usable meanwhile; without Chromium or Playwright the warm-up is skipped with a
    message. Returns the server's exit status; Ctrl-C or SIGTERM stops the server (:func:`run_server`)."""
    try:
        hall = load_hall()
    except ValueError as exc:
        _say(f"{exc} Pages are not warmed up.")
        return run_server(cmd)

    def warm(proc):
        if hall.wait_healthy(url, start_timeout_s, proc):
            _say("opening every page once in headless Chromium, so that no first visit waits for compilation "
                 "(`vilab app --no-warmup` skips this) ...")
            try:
                hall.warm_up([url], log=_say, verbose=False)
            except Exception as exc:  # noqa: BLE001 - a browser that cannot start costs the warm-up, not the lab
                _say(f"the warm-up stopped ({type(exc).__name__}: {exc}); the lab is served without it.")
        elif proc.poll() is None:
            _say(f"the server did not answer at {url} within {start_timeout_s:.0f} s; pages are not warmed up.")

    return run_server(cmd, warm)


def load_hall():
    """The lecture-hall recipe, deploy/hall.py of the repository checkout, as a module (it lives beside
    app.py, not in the package); ValueError when this is not a checkout."""
    import importlib.util

    path = ROOT / "deploy" / "hall.py"
    if not (ROOT / "app.py").exists() or not path.exists():
        raise ValueError(f"vilab hall needs the repository checkout (deploy/hall.py not found at {path}).")
    spec = importlib.util.spec_from_file_location("vilab_deploy_hall", path)
    hall = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hall)
    return hall


def _hall(args) -> int:
    """Several replicas of the app behind nginx for a lecture hall (deploy/hall.py)."""
    try:
        hall = load_hall()
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        return hall.serve(args.replicas, args.port, args.listen, warm=not (args.no_warmup or plain_ui()),
                          remote=args.remote, proxy=not args.no_nginx, replica_listen=args.replica_listen, replica_port=args.replica_port)
    except (ValueError, RuntimeError) as exc:
        print(exc, file=sys.stderr)
        return 2


def _print_table(rows: list[dict]) -> None:
    cols = ["quantity", "reference", "paper", "computed", "tolerance", "status", "tolerance from"]
    cells = [[str(r[c]) for c in cols] for r in rows]
    width = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, width)))
    print("  ".join("-" * w for w in width))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, width)))


def _repro(args) -> int:
    from vilab import repro

    broken = repro.import_errors()
    for mod, err in broken.items():
        print(f"warning: vilab/repro/{mod}.py could not be imported ({err}); its reproductions are missing.",
              file=sys.stderr)
    if args.list or not args.names:
        shown = [e for e in repro.entries() if args.kind is None or e.kind == args.kind]
        if not shown:
            print("(no reproductions are registered)" if args.kind is None else f"(no reproductions of kind {args.kind})")
        else:  # reference: what the values under "paper" are (printed in the paper, derived by us, or both)
            print(f"{'name':32s} {'reference':15s} {'paper':28s} what")
        for e in shown:
            flag = " (slow)" if e.slow else ""
            print(f"{e.name:32s} {repro.kind_label(e.kind):15s} {e.paper:28s} {e.what}{flag}")
        return 1 if broken else 0
    names = [e.name for e in repro.entries()] if args.names == ["all"] else args.names
    try:
        for n in names:
            repro.get(n)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    results = [repro.run(n) for n in names]
    if args.json:
        out = [r.as_dict() for r in results]
        print(json.dumps(out[0] if len(out) == 1 else out, indent=2))
    else:
        for r in results:
            print(f"\n{r.name}: {r.what} [{r.paper}]  ->  {repro.verdict_text(r)} ({r.seconds:.1f} s)")
            print(f"reference values: {repro.kind_label(r.kind)}" + (f"; {r.source}" if r.source else ""))
            _print_table(repro.table_rows([r]))
            how: dict[str, int] = {}  # how the derived values were obtained, each source once
            for c in r.checks:
                if c.kind == "derived" and c.source != r.source:
                    how[c.source] = how.get(c.source, 0) + 1
            for src, n in how.items():
                print(f"  derived ({n} value{'s' if n > 1 else ''}): {src}")
    return 0 if all(r.passed for r in results) and not (broken and args.names == ["all"]) else 1


def _bench(args) -> int:
    bench = ROOT / "benchmarks"
    scripts = sorted(bench.glob("bench_*.py"))
    if args.names:
        scripts = [s for s in scripts if any(n in s.stem for n in args.names)]
    else:  # the hall (30 browsers) and the soak (10 minutes) run only when named
        print(f"(not run unless named: {', '.join(sorted(ON_REQUEST))}; e.g. `vilab bench hall soak`)")
        scripts = [s for s in scripts if s.stem not in ON_REQUEST]
    if not scripts:
        print("No benchmark scripts matched.", file=sys.stderr)
        return 2
    rc = 0
    for s in scripts:
        print(f"\n=== {s.name}", flush=True)
        rc |= subprocess.call([sys.executable, str(s), *(_peer_args(args) if s.stem == "bench_peers" else [])], cwd=ROOT)
    return rc


def _peer_args(args) -> list[str]:
    """The options of `vilab bench peers` as bench_peers.py's (benchmarks/PEERS.md): the authors' checkouts, the
    python of their venv, reps and rows; unset ones are left to bench_peers.py's defaults (VILAB_PEER_*)."""
    out = []
    for name in PEER_FLAGS:
        value = getattr(args, name, None)
        if value is not None:
            out += [f"--{name.replace('_', '-')}", str(value)]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="vilab", description="Natural-gradient variational inference lab.")
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("app", help="launch the Streamlit app")
    a.add_argument("--port", type=int, default=8501)
    a.add_argument("--headless", action="store_true", help="do not open a browser")
    a.add_argument("--no-warmup", action="store_true",
                   help="do not open every page once at start (in headless Chromium) to compile its programs")
    a.add_argument("streamlit_args", nargs=argparse.REMAINDER,
                   help="Streamlit's options, after --: vilab app -- --server.fileWatcherType auto")
    a.set_defaults(fn=_app)
    h = sub.add_parser("hall", help="serve a lecture hall: several app replicas behind nginx, warmed up")
    h.add_argument("--replicas", type=int, default=max(2, (os.cpu_count() or 2) - 1),
                   help="Streamlit processes (default: CPU cores - 1, at least 2)")
    h.add_argument("--port", type=int, default=8080, help="the port students open (default 8080)")
    h.add_argument("--listen", default="0.0.0.0", help="address nginx listens on (default: every interface)")
    h.add_argument("--no-warmup", action="store_true", help="do not open every page once per replica")
    # several machines (deploy/README.md): replica hosts run `--no-nginx --replica-listen THEIR_ADDRESS
    # --replica-port 8601`, the front host `--replicas 0 --remote HOST:8601 --remote ...`
    h.add_argument("--remote", action="append", default=[], metavar="HOST:PORT",
                   help="a replica another machine runs, put behind this nginx too (repeat for each)")
    h.add_argument("--no-nginx", action="store_true",
                   help="run the replicas only (on a replica host of a hall that spans several machines)")
    h.add_argument("--replica-listen", default="127.0.0.1",
                   help="address the replicas listen on (default 127.0.0.1; another machine's nginx needs this "
                        "machine's address)")
    h.add_argument("--replica-port", type=int, default=None,
                   help="port of the first replica, the others on the next ports (default: free ports)")
    h.set_defaults(fn=_hall)
    r = sub.add_parser("repro", help="run reproductions of the papers' numbers")
    r.add_argument("names", nargs="*", help="reproduction names, or 'all'")
    r.add_argument("--list", action="store_true", help="list the reproductions and what their reference values are")
    r.add_argument("--kind", choices=("paper", "derived", "regression", "mixed"), default=None,
                   help="with --list: only entries whose reference values are printed in the paper, derived by us, "
                        "recorded from this same code (regression), or mixed")
    r.add_argument("--json", action="store_true", help="machine-readable output")
    r.set_defaults(fn=_repro)
    b = sub.add_parser("bench", help="run the benchmarks in benchmarks/")
    b.add_argument("names", nargs="*", help="substrings of benchmark script names (default: all)")
    b.add_argument("--bong", default=None, help="peers: checkout of petergchang/bong (benchmarks/PEERS.md)")
    b.add_argument("--gsm", default=None, help="peers: checkout of modichirag/GSM-VI")
    b.add_argument("--peer-python", default=None, help="peers: python of the venv for the authors' code")
    b.add_argument("--reps", type=int, default=None, help="peers: timed calls a side and row (default 3)")
    b.add_argument("--rows", default=None, help="peers: comma-separated substrings of row ids")
    b.set_defaults(fn=_bench)
    args = p.parse_args(argv)
    try:
        return args.fn(args)
    except BrokenPipeError:  # `vilab repro NAME | head`: the reader left; not an error
        sys.stdout = open(os.devnull, "w")
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
