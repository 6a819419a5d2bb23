"""Run the real app under gunicorn, for HTTP tests and benchmarks.

    from tests.support.server import ApiServer

    with ApiServer(redis_url) as srv:        # waits for GET /healthz
        requests.get(srv.url + "/healthz")
        srv.kill()                           # SIGKILL the master and its workers
        srv.start()                          # same port, same Redis

The server runs ``.venv/bin/gunicorn -c service/ops/gunicorn_conf.py service.http.wsgi:app`` (the
gunicorn next to the running Python) from the repository root, in its own process group, with
``PORT`` set to a free port, ``REDIS_URL`` to the given (private) Redis, ``WEB_CONCURRENCY``
workers (default 1), rate limits and RQ job enqueueing off. Its stdout and stderr go to a
temp file (``log_path``); :meth:`log_tail` returns the end of it, and every start failure
shows it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from types import TracebackType

import requests

from tests.support import migrate_store, read_log, venv_executable

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def gunicorn_executable() -> str:
    return venv_executable("gunicorn")


class ApiServer:
    """The service under gunicorn on 127.0.0.1:<port>, backed by the Redis at ``redis_url``."""

    def __init__(self, redis_url: str, *, workers: int = 1, port: int | None = None,
                 env: dict[str, str] | None = None, startup_timeout: float = 120.0,
                 stop_timeout: float = 8.0, migrate: bool = True) -> None:
        self.redis_url = redis_url
        self.migrate = migrate  # run the schema migration before every start
        self.workers = workers
        self.port = port or free_port()
        self.extra_env = dict(env or {})
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.tmpdir = tempfile.mkdtemp(prefix="llapi-")
        self.log_path = os.path.join(self.tmpdir, "gunicorn.log")
        self.starts = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # ------------------------------------------------------------------ lifecycle

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("REDIS_URL", "PORT", "HOST", "WEB_CONCURRENCY")}
        env.update({
            "PORT": str(self.port),
            "HOST": "127.0.0.1",
            "REDIS_URL": self.redis_url,
            "WEB_CONCURRENCY": str(self.workers),
            "RATE_LIMITS": "0",
            "EXPECT_WORKERS": "0",
            "PYTHONUNBUFFERED": "1",
            # per-server metrics files, removed with the temp dir even after a SIGKILL
            "PROMETHEUS_MULTIPROC_DIR": os.path.join(self.tmpdir, "metrics"),
        })
        env.update(self.extra_env)
        return env

    def start(self) -> ApiServer:
        """Start gunicorn (again) and wait until GET /healthz answers 200."""
        if self.running:
            raise RuntimeError("the server is already running")
        self.starts += 1
        if self.migrate:
            migrate_store(self.redis_url, self._env())
        # Appending keeps the log of earlier runs (a restart shows what happened before).
        with open(self.log_path, "ab") as log:
            log.write(f"==== start #{self.starts} on port {self.port}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                [gunicorn_executable(), "-c", os.path.join(REPO, "service", "ops", "gunicorn_conf.py"),
                 # no shared control socket in ~/.gunicorn: servers in parallel must not clash
                 "--no-control-socket", "service.http.wsgi:app"],
                cwd=REPO, env=self._env(), stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:
            self.kill()
            raise
        return self

    def _wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + self.startup_timeout
        probe = requests.Session()
        probe.trust_env = False  # never through a proxy from the environment
        try:
            self._poll_health(probe, deadline)
        finally:
            probe.close()

    def _poll_health(self, probe: requests.Session, deadline: float) -> None:
        assert self.proc is not None
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited with code {self.proc.returncode}:\n"
                                   f"{self.log_tail()}")
            try:
                # Connection: close, so no idle keep-alive connection of ours holds a graceful
                # stop for graceful_timeout seconds
                with probe.get(self.url + "/healthz", timeout=10,
                               headers={"Connection": "close"}) as r:
                    if r.status_code == 200:
                        return
                    last = RuntimeError(f"/healthz answered {r.status_code}: {r.text[:200]}")
            except requests.RequestException as e:
                last = e
            time.sleep(0.05)
        raise RuntimeError(f"gunicorn did not answer /healthz within {self.startup_timeout}s "
                           f"(last: {last!r}):\n{self.log_tail()}")

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None and not self._exited(0)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def _signal_group(self, sig: int) -> None:
        """Signal the master and its workers. The master leads its own process group
        (start_new_session), so the group is exactly the master and its workers; it is signalled
        only while the master is not yet reaped (its pid, hence the group id, can't be reused)."""
        assert self.proc is not None
        if self.proc.returncode is not None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def _exited(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the master to exit, without reaping it."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.returncode is not None:
                return True
            try:
                info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
            except ChildProcessError:
                return True
            if info is not None:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    @staticmethod
    def _group_alive(pgid: int) -> bool:
        """Whether a live (non-zombie) process is still in process group ``pgid`` (Linux)."""
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
        return False

    def _reap(self, pgid: int) -> None:
        assert self.proc is not None
        self.proc.wait(timeout=10)
        deadline = time.monotonic() + 5
        while self._group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.02)  # workers die with the group; the port is free once they are gone
        self.proc = None

    def stop(self) -> None:
        """SIGTERM (graceful), then SIGKILL to the whole group after ``stop_timeout`` seconds."""
        if self.proc is None:
            return
        if self.proc.returncode is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
        self._exited(self.stop_timeout)
        self._signal_group(signal.SIGKILL)  # the master if it hangs, stray workers if any
        self._reap(self.proc.pid)

    def kill(self) -> None:
        """SIGKILL the master and its workers at once: no graceful anything."""
        if self.proc is None:
            return
        self._signal_group(signal.SIGKILL)
        self._reap(self.proc.pid)

    def restart(self, *, hard: bool = False) -> ApiServer:
        """Stop (or with ``hard``, kill) and start again on the same port and Redis."""
        if hard:
            self.kill()
        else:
            self.stop()
        return self.start()

    def close(self) -> None:
        """Stop the server and remove its temp directory (and log)."""
        self.stop()
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    # ------------------------------------------------------------------ diagnostics

    def log_tail(self, lines: int = 60) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"

    def log_text(self) -> str:
        return read_log(self.log_path)

    def __enter__(self) -> ApiServer:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is not None:
            sys.stderr.write(f"--- gunicorn log ({self.log_path}):\n{self.log_tail()}\n")
        self.close()
