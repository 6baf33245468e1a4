"""deploy/hall.py: the lecture-hall recipe (Streamlit replicas behind nginx with sticky sessions), and `vilab app`,
which warms its one server up with the same recipe."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from vilab.cli import load_hall

ROOT = Path(__file__).resolve().parents[1]
hall = load_hall()

NGINX = hall.find_nginx()
needs_nginx = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (Debian: apt-get install nginx; "
                                                       ".ci/run installs it in CI)")


def test_config_proxies_websockets_with_sticky_sessions(tmp_path):
    conf = hall.nginx_config(8080, [9001, 9002, 9003], tmp_path)
    for line in ("server 127.0.0.1:9001", "server 127.0.0.1:9002", "server 127.0.0.1:9003",
                 "listen  0.0.0.0:8080;", "proxy_pass             http://$vilab_upstream;",
                 "proxy_set_header       Upgrade $http_upgrade;", "proxy_set_header       Connection $connection_upgrade;",
                 "proxy_read_timeout     86400s;", "daemon            off;", f"pid               {tmp_path.resolve()}/nginx.pid;",
                 f"map $cookie_{hall.COOKIE} $vilab_upstream", f"{hall.COOKIE}=$vilab_served",
                 "r1  vilab_r1;", '"~(^|\\s)127\\.0\\.0\\.1:9002$"  r1;'):
        assert line in conf, line
    # each replica's group: its own server first, the others as backups (a student whose replica is down
    # goes to a live one), and a dead server is skipped for a while instead of being tried on every request
    group = conf[conf.index("upstream vilab_r1 {"):].split("}")[0]
    servers = [line.split()[1] for line in group.splitlines()[1:] if line.strip()]
    assert servers == ["127.0.0.1:9002", "127.0.0.1:9001", "127.0.0.1:9003"]
    assert group.count(" backup;") == 2 and group.count("max_fails=1") == 3
    # every file nginx writes lies under the prefix: it runs without root
    for directive in ("pid", "error_log", "access_log", "client_body_temp_path", "proxy_temp_path"):
        lines = [l.split() for l in conf.splitlines() if l.split()[:1] == [directive]]
        assert lines and all(l[1].startswith(str(tmp_path.resolve())) for l in lines), directive


def test_config_puts_replicas_of_other_machines_behind_nginx(tmp_path):
    conf = hall.nginx_config(8080, ["10.200.1.2:8601", "[fd00::2]:8601", 9001, "localhost:9002"], tmp_path)
    for server in ("10.200.1.2:8601", "[fd00::2]:8601", "127.0.0.1:9001", "127.0.0.1:9002"):  # a name resolved here
        assert f"server {server} max_fails=1" in conf, server
    for bad, problem in (("10.200.1.2", "not host:port"), ("10.200.1.2:0", "between 1 and 65535"),
                         (":8601", "not host:port"), ("no-such-host.invalid:8601", "could not be resolved"),
                         (True, "a port")):
        with pytest.raises(ValueError, match=problem):
            hall.nginx_config(8080, [bad], tmp_path)
    with pytest.raises(ValueError, match="one replica twice"):
        hall.nginx_config(8080, [9001, "127.0.0.1:9001"], tmp_path)


def test_a_hall_without_replicas_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="at least one replica"):
        hall.nginx_config(8080, [], tmp_path)
    with pytest.raises(ValueError, match="at least one replica"):
        hall.Hall(replicas=0, nginx="/bin/true")


def test_page_paths_name_every_page_once():
    paths = hall.page_paths()
    pages = sorted(p for p in (ROOT / "pages").glob("*.py") if not p.name.startswith("_"))
    assert len(paths) == len(pages) and paths[0] == "" and len(set(paths)) == len(paths)


@needs_nginx
def test_nginx_accepts_the_generated_config(tmp_path):
    conf = hall.write_nginx_prefix(tmp_path, hall.nginx_config(hall.free_port(), [9001, "10.200.1.2:8601"], tmp_path,
                                                               listen="127.0.0.1"))
    out = hall.nginx_check(NGINX, tmp_path, conf)
    assert out.returncode == 0, out.stderr
    assert "syntax is ok" in out.stderr


@needs_nginx
def test_nginx_rejects_a_broken_config(tmp_path):  # the check above can fail
    conf = hall.write_nginx_prefix(tmp_path, hall.nginx_config(8080, [9001], tmp_path).replace("upstream", "upstrem"))
    assert hall.nginx_check(NGINX, tmp_path, conf).returncode != 0


@needs_nginx
@pytest.mark.slow
def test_two_replicas_answer_through_nginx(tmp_path):
    with hall.Hall(replicas=2, port=hall.free_port(), listen="127.0.0.1", cache_dir=tmp_path / "jax",
                   log=lambda *a: None) as h:
        assert len(h.replicas) == 2 and all(p.poll() is None for p in h.replicas)
        resp = urllib.request.urlopen(h.url + "/_stcore/health", timeout=10)
        assert resp.read() == b"ok"
        keys = [c.split(";")[0] for c in resp.headers.get_all("Set-Cookie") if c.startswith(hall.COOKIE + "=")]
        assert len(keys) == 1
        # a browser that sends its cookie back keeps its replica: the same key comes back
        req = urllib.request.Request(h.url + "/_stcore/health", headers={"Cookie": keys[0]})
        again = urllib.request.urlopen(req, timeout=10)
        assert again.read() == b"ok"
        assert keys[0] + ";" in " ".join(again.headers.get_all("Set-Cookie"))
        prefix, procs = h.prefix, [h.proxy] + h.replicas
    assert all(p.poll() is not None for p in procs)  # stop() ended nginx and every replica
    assert not prefix.exists()


def test_vilab_hall_reports_bad_settings_in_a_sentence(capsys):
    from vilab import cli

    assert cli.main(["hall", "--replicas", "0", "--no-warmup"]) == 2
    assert "at least one replica" in capsys.readouterr().err


def test_vilab_bench_runs_the_hall_and_the_soak_only_when_named(monkeypatch, capsys):
    from vilab import cli

    ran = []
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd, cwd=None: ran.append(Path(cmd[-1]).stem) or 0)
    assert cli.main(["bench"]) == 0
    assert ran and "bench_hall" not in ran and "bench_soak" not in ran
    ran.clear()
    assert cli.main(["bench", "hall", "soak"]) == 0
    assert ran == ["bench_hall", "bench_soak"]


# A stand-in for Streamlit: answers /_stcore/health with "ok" and exits with status 3 when /quit is asked.
FAKE_SERVER = """
import http.server, sys, threading
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers()
        self.wfile.write(b"ok" if self.path == "/_stcore/health" else b"bye")
        if self.path == "/quit":
            threading.Thread(target=lambda: (srv.shutdown(), srv.server_close())).start()
    def log_message(self, *a):
        pass
srv = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H)
srv.serve_forever()
sys.exit(3)
"""


def _fake_hall(monkeypatch, warm_up):
    from types import SimpleNamespace

    from vilab import cli

    monkeypatch.setattr(cli, "load_hall", lambda: SimpleNamespace(wait_healthy=hall.wait_healthy, warm_up=warm_up))
    return cli


def test_vilab_app_warms_every_page_once_the_server_answers(monkeypatch, capsys):
    port = hall.free_port()
    url = f"http://127.0.0.1:{port}"
    warmed = []

    def warm_up(urls, log=print, verbose=True):
        warmed.append(list(urls))
        log("warmed it")
        urllib.request.urlopen(url + "/quit", timeout=5).read()  # the server then exits on its own
        return {urls[0]: 1.0}

    cli = _fake_hall(monkeypatch, warm_up)
    assert cli._serve_warmed([sys.executable, "-c", FAKE_SERVER, str(port)], url, start_timeout_s=30) == 3
    assert warmed == [[url]]
    out = capsys.readouterr().out
    assert "opening every page once" in out and "vilab: warmed it" in out


def test_vilab_app_reports_a_server_that_exits_at_start_without_warming(monkeypatch):
    warmed = []
    cli = _fake_hall(monkeypatch, lambda urls, **kw: warmed.append(urls))
    assert cli._serve_warmed([sys.executable, "-c", "raise SystemExit(5)"], f"http://127.0.0.1:{hall.free_port()}",
                             start_timeout_s=30) == 5
    assert warmed == []


def test_ctrl_c_during_the_warm_up_stops_the_server(monkeypatch):
    port = hall.free_port()
    started = []
    real_popen = subprocess.Popen

    def popen(cmd, **kw):
        started.append(real_popen(cmd, **kw))
        return started[-1]

    def warm_up(urls, **kw):
        raise KeyboardInterrupt  # the lecturer pressed Ctrl-C while the pages were being opened

    cli = _fake_hall(monkeypatch, warm_up)
    monkeypatch.setattr(cli.subprocess, "Popen", popen)
    cli._serve_warmed([sys.executable, "-c", FAKE_SERVER, str(port)], f"http://127.0.0.1:{port}", start_timeout_s=30)
    assert started and started[0].poll() is not None  # the server is gone


def test_vilab_app_no_warmup_only_runs_the_server(monkeypatch):
    from vilab import cli

    ran = []
    monkeypatch.setattr(cli, "run_server", lambda cmd, while_running=None: ran.append(cmd) or 0)
    monkeypatch.setattr(cli, "_serve_warmed", lambda *a, **k: pytest.fail("no warm-up was asked for"))
    assert cli.main(["app", "--no-warmup", "--headless", "--port", "8599"]) == 0
    cmd = ran[0]
    assert cmd[cmd.index("--server.port") + 1] == "8599" and cmd[-2:] == ["--server.headless", "true"]
    assert cmd[cmd.index("--server.fileWatcherType") + 1] == "none"  # a served lab does not reload its files
    assert cmd[1:4] == ["-m", "vilab_ui.serve", "run"]  # the pages' libraries imported before it serves
    ran.clear()  # Streamlit's own options after --, the last of an option counting: the watcher back on
    assert cli.main(["app", "--no-warmup", "--", "--server.fileWatcherType", "auto"]) == 0
    assert ran[0][-2:] == ["--server.fileWatcherType", "auto"] and "--" not in ran[0]


def test_a_failed_warm_up_leaves_the_lab_served(monkeypatch, capsys):
    port = hall.free_port()
    url = f"http://127.0.0.1:{port}"

    def warm_up(urls, **kw):
        urllib.request.urlopen(url + "/quit", timeout=5).read()  # the stand-in then exits on its own
        raise RuntimeError("Chromium could not start")

    cli = _fake_hall(monkeypatch, warm_up)
    assert cli._serve_warmed([sys.executable, "-c", FAKE_SERVER, str(port)], url, start_timeout_s=30) == 3
    assert "the warm-up stopped (RuntimeError: Chromium could not start)" in capsys.readouterr().out


def test_every_replica_of_a_hall_imports_the_pages_libraries_before_it_serves():
    cmd = hall.replica_command(8601)
    assert cmd[1:5] == ["-m", "vilab_ui.serve", "run", str(Path(hall.ROOT) / "app.py")]
    assert cmd[cmd.index("--server.port") + 1] == "8601" and cmd[cmd.index("--server.fileWatcherType") + 1] == "none"
