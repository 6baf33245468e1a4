"""A hall that spans machines (deploy/README.md, "Several machines"): two Linux network namespaces stand for two
replica hosts, each with its own address on a veth pair to this machine; each runs `vilab hall --no-nginx` (one
replica, supervised there); nginx runs here (`Hall(replicas=0, remote=[...])`, what `vilab hall --replicas 0
--remote HOST:PORT ...` starts). Students render through nginx from both hosts; when one host goes away (its
processes killed, its namespace deleted), its students reload onto the other.

Only addresses of 10.200.0.0/16 inside the namespaces this test creates are contacted (an `unreachable` route for
each subnet keeps them from the default route once a host is gone); the namespaces, links, routes and processes are
removed at the end. Skipped, with the reason, where namespaces cannot be made (not root, no `ip`,
creation refused).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_hall_supervisor import NGINX, PAGE, assert_view, hall, needs_chromium, open_session, served_by, wait_for

ROOT = Path(__file__).resolve().parents[1]
IP = shutil.which("ip")
PORT = 8601  # each host's replica port (hosts have their own addresses: the same port on both)


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([IP, *args], capture_output=True, text=True, timeout=30, check=check)


def _why_no_namespaces() -> str | None:
    if NGINX is None:
        return "nginx is not installed (Debian: apt-get install nginx; .ci/run installs it)"
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "network namespaces need root (ip netns add); this test runs as another user"
    if IP is None:
        return "the `ip` tool is missing (Debian: apt-get install iproute2; .ci/run installs it as root)"
    probe = f"vilab-probe-{os.getpid()}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"this machine refuses to create a network namespace: {made.stderr.strip() or made.returncode}"
    _ip("netns", "del", probe, check=False)
    return None


WHY = _why_no_namespaces()
pytestmark = [pytest.mark.skipif(WHY is not None, reason=WHY or ""), pytest.mark.browser, pytest.mark.slow]


class Host:
    """A network namespace with address 10.200.<net>.2, reached from here over a veth pair (this end .1)."""

    def __init__(self, tag: str, net: int):
        self.ns, self.net = f"vilab-{os.getpid()}-{tag}", net
        self.here, self.there = f"vlr{os.getpid() % 100000}{tag}", f"vln{os.getpid() % 100000}{tag}"
        self.address, self.subnet = f"10.200.{net}.2", f"10.200.{net}.0/24"
        self.procs: list[subprocess.Popen] = []
        self.routed = False

    def create(self) -> None:
        # first: while this test runs, its subnet never goes out by the default route, even once the link is
        # gone (a host "away" is unreachable, as a switched-off machine on one's own network is)
        _ip("route", "add", "unreachable", self.subnet, "metric", "4000")
        self.routed = True
        _ip("netns", "add", self.ns)
        _ip("link", "add", self.here, "type", "veth", "peer", "name", self.there)
        _ip("link", "set", self.there, "netns", self.ns)
        _ip("addr", "add", f"10.200.{self.net}.1/24", "dev", self.here)
        _ip("link", "set", self.here, "up")
        for args in (("addr", "add", f"{self.address}/24", "dev", self.there), ("link", "set", self.there, "up"),
                     ("link", "set", "lo", "up")):
            _ip("netns", "exec", self.ns, IP, *args)

    def run(self, cmd: list[str], env: dict, log: Path) -> subprocess.Popen:
        with open(log, "ab") as out:
            proc = subprocess.Popen([IP, "netns", "exec", self.ns, *cmd], cwd=ROOT, env=env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def remove(self) -> None:
        """Every process in the namespace killed, the namespace deleted (its veth pair with it)."""
        pids = _ip("netns", "pids", self.ns, check=False).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                pass
        _ip("netns", "del", self.ns, check=False)
        _ip("link", "del", self.here, check=False)  # gone with the namespace; in case it was not

    def unroute(self) -> None:
        if self.routed:
            _ip("route", "del", "unreachable", self.subnet, "metric", "4000", check=False)
            self.routed = False


@pytest.fixture
def two_hosts(tmp_path):
    base = 1 + (os.getpid() % 120) * 2  # two /24s of 10.200.0.0/16 of this run's own
    hosts = [Host("a", base), Host("b", base + 1)]
    env = dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false",
               STREAMLIT_SERVER_COOKIE_SECRET="one-secret-on-every-host-" + os.urandom(8).hex())
    try:
        for h in hosts:
            h.create()
            folder = tmp_path / h.ns
            folder.mkdir()
            # a replica host of the recipe: `vilab hall --no-nginx`, listening on its own address, its own caches
            h.run([sys.executable, "-m", "vilab.cli", "hall", "--no-nginx", "--no-warmup", "--replicas", "1",
                   "--replica-listen", h.address, "--replica-port", str(PORT)],
                  dict(env, VILAB_JAX_CACHE=str(folder / "jax"), VILAB_RESULT_CACHE=str(folder / "results")),
                  folder / "hall.log")
        for h in hosts:
            ok = hall.wait_healthy(f"http://{h.address}:{PORT}", 180, h.procs[0])
            assert ok, f"the replica of {h.ns} did not start:\n" + (tmp_path / h.ns / "hall.log").read_text()[-2000:]
        yield hosts
    finally:  # (after the test's nginx has stopped)
        for h in hosts:
            h.remove()
            h.unroute()


@needs_chromium
def test_students_render_from_two_hosts_and_move_when_one_goes_away(two_hosts, tmp_path):
    from tests.browser import layout

    a, b = two_hosts
    events: list[str] = []
    with hall.Hall(replicas=0, port=hall.free_port(), listen="127.0.0.1", log=events.append, health_every_s=1,
                   remote=[f"{a.address}:{PORT}", f"{b.address}:{PORT}"], cache_dir=tmp_path / "jax") as front, \
            layout.chromium() as browser:
        # a student on each host, through the one nginx
        (pa, _), (pb, _) = open_session(browser, front.url, 3, "r0"), open_session(browser, front.url, 4, "r1")
        assert (served_by(pa), served_by(pb)) == ("r0", "r1")
        access = (front.prefix / "access.log").read_text()
        for seed, h in ((3, a), (4, b)):  # each student's page came from its host
            assert f"GET /{PAGE}?seed={seed} HTTP/1.1\" 200 upstream={h.address}:{PORT}" in access, access[-3000:]

        a.remove()  # host a is gone: its replica killed, its network deleted
        pa.reload(wait_until="domcontentloaded")  # its student reloads: the same view, from host b
        layout.wait_rendered(pa)
        assert_view(pa, 3)
        assert served_by(pa) == "r1"
        pn, _ = open_session(browser, front.url, 5)  # a new student: host b
        assert served_by(pn) == "r1"
        pb.reload(wait_until="domcontentloaded")  # host b's own student is still served there
        layout.wait_rendered(pb)
        assert_view(pb, 4)
        # nginx logs a websocket when it closes: student a's, held by host a until it went away
        access = (front.prefix / "access.log").read_text()
        assert f"GET /_stcore/stream HTTP/1.1\" 101 upstream={a.address}:{PORT}" in access, access[-3000:]
        wait_for("the front's supervisor seeing host a down",
                 lambda: f"remote replica {a.address}:{PORT} not answering its health check" in "\n".join(events),
                 time.monotonic() + 60)
    log = "\n".join(events)
    assert f"remote replica {a.address}:{PORT} healthy" in log and f"remote replica {b.address}:{PORT} healthy" in log
