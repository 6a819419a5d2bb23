"""Real job processes for the job tests and benchmarks: the worker (``python -m
service.jobs.worker``: RQ's worker and the deadline dispatcher) and the ``rq cron`` process.

    from tests.support.rqproc import RqCron, RqWorker

    with RqWorker(redis_url) as w:           # waits until it listens and dispatches
        ...
        w.kill()                             # SIGKILL it, as a machine crash would

Each runs next to the running Python, from the repository root, in its own process group (so
:meth:`RqProcess.kill` takes any child down too), with its output in a temp log file.
``redis_url`` may be a ``unix://`` URL.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from types import TracebackType

from service.store.queues import QUEUES
from tests.support import migrate_store, read_log

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class RqProcess:
    """One job process in its own process group."""

    name = "rq"

    def __init__(self, redis_url: str, *, env: dict[str, str] | None = None,
                 migrate: bool = True) -> None:
        self.redis_url = redis_url
        self.migrate = migrate  # run the schema migration before every start
        self.extra_env = dict(env or {})
        # RQ's own Redis: the data Redis, unless it is a cluster (QUEUE_REDIS_URL)
        self.rq_url = self.extra_env.get("QUEUE_REDIS_URL") or redis_url
        self.proc: subprocess.Popen[bytes] | None = None
        self.tmpdir = tempfile.mkdtemp(prefix=f"ll{self.name}-")
        self.log_path = os.path.join(self.tmpdir, f"{self.name}.log")

    def argv(self) -> list[str]:
        raise NotImplementedError

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
        env.update({"REDIS_URL": self.redis_url, "PYTHONUNBUFFERED": "1",
                    "PYTHONPATH": REPO + os.pathsep + env.get("PYTHONPATH", ""),
                    "LADDERS": "[]",  # no ladder cron jobs in deadline tests
                    # RQ's own INFO lines ("Listening on ...": wait_ready reads it); WARNING
                    # is the default outside the tests
                    "RQ_LOG_LEVEL": "INFO"})
        env.update(self.extra_env)
        return env

    def start(self) -> RqProcess:
        if self.running:
            raise RuntimeError(f"{self.name} is already running")
        if self.migrate:
            migrate_store(self.redis_url, self._env())
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.argv(), cwd=REPO, env=self._env(),
                                         stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def kill(self) -> None:
        """SIGKILL the whole process group at once."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # wait until the forked children are gone too
            try:
                os.killpg(proc.pid, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.02)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (RQ's warm shutdown: the current job finishes), then SIGKILL."""
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            try:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=timeout)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def log_text(self) -> str:
        return read_log(self.log_path)

    def __enter__(self) -> RqProcess:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is not None:
            sys.stderr.write(f"--- {self.name} log:\n{self.log_text()[-6000:]}\n")
        self.close()


class RqWorker(RqProcess):
    """``python -m service.jobs.worker deadlines default``: RQ's worker and the dispatcher."""

    name = "worker"

    def __init__(self, redis_url: str, *, worker_name: str | None = None,
                 env: dict[str, str] | None = None, migrate: bool = True) -> None:
        super().__init__(redis_url, env=env, migrate=migrate)
        self.worker_name = worker_name

    def argv(self) -> list[str]:
        extra = ["--name", self.worker_name] if self.worker_name else []
        return [sys.executable, "-m", "service.jobs.worker", "--url", self.rq_url, *extra,
                *QUEUES]

    def start(self, *, wait_ready: bool = True, timeout: float = 120.0) -> RqWorker:
        """Start; with ``wait_ready``, wait until its RQ worker listens and its dispatcher runs."""
        super().start()
        if wait_ready:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 120.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if not self.running:
                raise RuntimeError(f"worker exited:\n{self.log_text()[-4000:]}")
            text = open(self.log_path, "rb").read()
            if b"Listening on" in text and b"dispatching deadlines" in text:
                return
            time.sleep(0.05)
        raise RuntimeError(f"worker not ready within {timeout}s:\n{self.log_text()[-4000:]}")


class RqCron(RqProcess):
    """``python -m service.jobs.cron_runner service/jobs/cron.py``: ``rq cron`` that survives a
    Redis restart (its passes' intervals, ``REPAIR_INTERVAL_S`` say, from ``env``)."""

    name = "cron"

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "service.jobs.cron_runner", "--url", self.rq_url,
                "--path", REPO, "service/jobs/cron.py"]
