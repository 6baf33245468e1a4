"""The lecture hall survives a dead replica (deploy/hall.py's supervisor), and `vilab app` leaves nothing running
after SIGTERM.

Before the supervisor, `vilab hall` stopped nginx and every replica as soon as one replica exited ("a replica or
nginx exited; stopping the hall"); and `vilab app --no-warmup` ran its server with ``subprocess.call``, so a SIGTERM
left the server serving its port, reparented to PID 1.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from vilab.cli import load_hall

ROOT = Path(__file__).resolve().parents[1]
hall = load_hall()
NGINX = hall.find_nginx()
needs_nginx = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (Debian: apt-get install nginx; "
                                                       ".ci/run installs it in CI)")
needs_chromium = pytest.mark.skipif(hall.chromium_path() is None,
                                    reason="Chromium is not installed (apt-get install chromium; .ci/run installs it)")
PAGE = "Lecture_decks"  # a light page: its sidebar holds the view's seed, read back from the URL


def open_session(browser, base: str, seed: int, cookie: str | None = None):
    """A student's browser (its own cookies) at ``base/Lecture_decks?seed=<seed>``, rendered; ``cookie`` names the
    replica nginx is to send it to (r0, r1...). Returns (page, the page's websockets)."""
    from tests.browser import layout

    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    if cookie is not None:
        ctx.add_cookies([{"name": hall.COOKIE, "value": cookie, "url": base}])
    page = ctx.new_page()
    sockets = []
    page.on("websocket", lambda ws: sockets.append(ws))
    page.goto(f"{base}/{PAGE}?seed={seed}", wait_until="domcontentloaded")
    layout.wait_rendered(page)
    assert_view(page, seed)
    return page, sockets


def assert_view(page, seed: int) -> None:
    """The page's script ran in a live session: its title is shown, and the sidebar shows the URL's seed."""
    assert page.locator("h1").first.inner_text().strip() == "Lecture decks"
    assert page.locator('[data-testid="stSidebar"] input[type="number"]').first.input_value() == str(seed)


def served_by(page) -> str | None:
    """The replica nginx last served this browser from (the sticky cookie it set)."""
    return next((c["value"] for c in page.context.cookies() if c["name"] == hall.COOKIE), None)


def wait_for(what: str, ok, deadline: float) -> None:
    while not ok():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within the issue's 60 s: {what}")
        time.sleep(0.5)


@needs_nginx
@needs_chromium
@pytest.mark.browser
@pytest.mark.slow
def test_a_killed_replica_is_restarted_while_the_hall_serves_on(tmp_path):
    from tests.browser import layout

    events: list[str] = []
    with hall.Hall(replicas=2, port=hall.free_port(), listen="127.0.0.1", cache_dir=tmp_path / "jax",
                   log=events.append, health_every_s=1) as h, layout.chromium() as browser:
        # one student on each replica
        (p0, _), (p1, ws1) = (open_session(browser, h.url, 3, "r0"), open_session(browser, h.url, 4, "r1"))
        assert (served_by(p0), served_by(p1)) == ("r0", "r1")
        stream1 = [w for w in ws1 if "/_stcore/stream" in w.url]
        assert stream1 and not stream1[-1].is_closed()

        killed = h.replicas[0]
        os.kill(killed.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        killed.wait(10)

        def live(replica: str | None) -> bool:  # replica 1, or replica 0 once restarted (on a fast machine)
            return replica == "r1" or (replica == "r0" and h.replicas[0].pid != killed.pid)

        # the student of the dead replica reloads: the same view, from the live one
        p0.reload(wait_until="domcontentloaded")
        layout.wait_rendered(p0)
        assert_view(p0, 3)
        assert live(served_by(p0))
        # the student on replica 1 goes on: the same websocket carries a new value and the rerun it causes
        box = p1.locator('[data-testid="stSidebar"] input[type="number"]').first
        box.fill("9")
        box.press("Enter")
        p1.wait_for_function("() => new URLSearchParams(location.search).get('seed') === '9'", timeout=60_000)
        layout.wait_rendered(p1)
        assert_view(p1, 9)
        assert not stream1[-1].is_closed() and served_by(p1) == "r1"

        # a new student renders too
        p2, _ = open_session(browser, h.url, 5)
        assert live(served_by(p2))

        # the supervisor restarts replica 0 within 60 s, on its port, and nginx serves from it again
        deadline = killed_at + 60
        wait_for("replica 0 restarted and healthy",
                 lambda: h.replicas[0].pid != killed.pid and hall.healthy(h.replica_urls[0]), deadline)

        def nginx_sends_r0_home():
            req = urllib.request.Request(h.url + "/_stcore/health", headers={"Cookie": f"{hall.COOKIE}=r0"})
            cookies = urllib.request.urlopen(req, timeout=5).headers.get_all("Set-Cookie")
            return f"{hall.COOKIE}=r0;" in " ".join(cookies)

        wait_for("nginx serving from the restarted replica 0", nginx_sends_r0_home, deadline)
        p3, _ = open_session(browser, h.url, 6, "r0")
        assert served_by(p3) == "r0"
        assert all(p.poll() is None for p in h.replicas) and h.proxy.poll() is None
    log = "\n".join(events)
    assert "replica 0 exited with status -9" in log and "replica 0 restarted" in log, log
    assert "stopping the hall" not in log


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.add(c)
            todo.append(c)
    return out


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _sigterm_vilab(args: list[str], started, port: int, meanwhile=None) -> None:
    """Start `vilab ARGS`, wait until ``started(pid, port, output)`` (then ``meanwhile(pid)``), SIGTERM it: it exits,
    no process it started is left, and ``port`` is free."""
    env = dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false")
    out = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-m", "vilab.cli", *args],
                            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def said() -> str:
        out.seek(0)
        return out.read().decode(errors="replace")[-3000:]

    below: set[int] = set()
    try:
        deadline = time.monotonic() + 180
        while not started(proc.pid, port, said()):
            assert proc.poll() is None, f"vilab {args[0]} exited with status {proc.returncode} before it served:\n{said()}"
            assert time.monotonic() < deadline, f"vilab {args[0]} did not start within 180 s"
            time.sleep(0.5)
        if meanwhile is not None:
            try:
                meanwhile(proc.pid)
            except AssertionError as exc:
                raise AssertionError(f"{exc}\nvilab {args[0]} said:\n{said()}") from None
        below = _descendants(proc.pid)
        assert below, f"vilab {args[0]} started no server"
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        left = {p for p in below if _running(p)}
        assert not left, f"still running after vilab {args[0]}'s SIGTERM: {sorted(left)}"
        assert hall.port_is_free(port), f"port {port} still in use after vilab {args[0]}'s SIGTERM"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for p in below:  # nothing is left if the test passed; a failed one leaves nothing either
            if _running(p):
                os.kill(p, signal.SIGKILL)
        out.close()


@pytest.mark.slow
def test_sigterm_to_vilab_app_no_warmup_leaves_nothing_running():
    port = hall.free_port()
    _sigterm_vilab(["app", "--headless", "--port", str(port), "--no-warmup"],
                   lambda pid, port, output: hall.healthy(f"http://127.0.0.1:{port}"), port)


@needs_nginx
@pytest.mark.slow
def test_vilab_hall_outlives_its_nginx_and_leaves_nothing_running_after_sigterm():
    port = hall.free_port()

    def nginx_masters(pid: int) -> set[int]:
        return {p for p in _descendants(pid) if _running(p) and b"nginx: master" in _cmdline(p)}

    def kill_nginx(pid: int) -> None:  # the hall restarts it (before: "a replica or nginx exited; stopping the hall")
        (first,) = nginx_masters(pid)
        os.kill(first, signal.SIGKILL)
        wait_for("nginx restarted by vilab hall", lambda: nginx_masters(pid) - {first} and hall.healthy(
            f"http://127.0.0.1:{port}"), time.monotonic() + 60)

    _sigterm_vilab(["hall", "--replicas", "1", "--no-warmup", "--port", str(port), "--listen", "127.0.0.1"],
                   lambda pid, port, output: "ready:" in output and hall.healthy(f"http://127.0.0.1:{port}"), port,
                   kill_nginx)  # started, and answering through nginx


# a stand-in for a replica on another machine: answers /_stcore/health with "ok"
FAKE_REPLICA = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


@needs_nginx
def test_nginx_is_restarted_and_the_hall_gives_up_only_when_it_cannot_start(tmp_path):
    import socket

    rport = hall.free_port()
    replica = subprocess.Popen([sys.executable, "-c", FAKE_REPLICA, str(rport)])
    events: list[str] = []
    try:
        assert hall.wait_healthy(f"http://127.0.0.1:{rport}", 30, replica)
        with hall.Hall(replicas=0, port=hall.free_port(), listen="127.0.0.1", remote=[f"127.0.0.1:{rport}"],
                       cache_dir=tmp_path, log=events.append, nginx_max_failures=3) as h:
            assert hall.healthy(h.url)
            first = h.proxy
            os.kill(first.pid, signal.SIGKILL)  # its workers are left holding the port: the supervisor clears them
            deadline = time.monotonic() + 60
            wait_for("nginx restarted", lambda: h.proxy is not first and hall.healthy(h.url), deadline)
            assert not h.failed.is_set()

            second = h.proxy
            os.killpg(second.pid, signal.SIGKILL)  # nginx and its workers gone (failure 2), its port taken by another
            wait_for("nginx's port free", lambda: hall.port_is_free(h.port, "127.0.0.1"), deadline)
            with socket.socket() as squatter:
                squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                squatter.bind(("127.0.0.1", h.port))
                squatter.listen()
                assert h.failed.wait(60), "the hall did not give up on an nginx that cannot start (failure 3)"
            assert "nginx" in h.failure and "Address already in use" in h.failure
    finally:
        replica.kill()
        replica.wait()
    log = "\n".join(events)
    assert "remote replica 127.0.0.1:" in log and "nginx exited with status -9" in log and "nginx restarted" in log
    assert "nginx did not come up" in log or "nginx exited with status 1" in log, log
