"""The worker process: ``python -m service.jobs.worker [--url URL] [--name NAME] [QUEUE ...]``
(queues: ``deadlines default`` by default).

It runs two things, through RQ's and redis-py's public APIs only:

- the deadline dispatcher (``jobs/dispatcher.py``) in a thread: it settles each turn's
  deadline (an entry of the deadline index) when it is due and keeps the service clock, on the
  data Redis only, so a stalled queue Redis never holds it;
- RQ's stock ``SimpleWorker`` on the queues, in the main thread. Jobs run in-process, not in a
  fork per job: the jobs are short (a rating, a pass), and a fork costs tens of ms.

Redis restarts. RQ's worker retries a lost connection while it waits for a job (at most
``MAX_CONNECTION_WAIT_S`` apart here); a connection error anywhere else in its loop (a job's
bookkeeping, a heartbeat) makes ``work()`` return. This process then waits until Redis answers
and starts a new worker (a new name: the old one's registration may be left behind), so the
process outlives any outage; a job cut short by one is dispatched again when its lease ends.
Such an error is logged on one line, without RQ's traceback (an outage is not a bug), and so is
a job that raised one: it is left failed, and the repair pass queues it again.

Shutdown. SIGTERM or SIGINT is RQ's warm shutdown (the current job finishes); the worker class
hears of it through RQ's ``handle_warm_shutdown_request`` hook, and the process then stops the
dispatcher and exits instead of starting another worker."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any

import redis
from rq.worker import SimpleWorker

from ..store import cluster, sentinel, sockets
from ..store.queues import QUEUES
from . import joblog
from .dispatcher import REDIS_DOWN, Dispatcher, wait_for_redis
from .repair import require_schema
from .timeouts import data_redis

log = logging.getLogger("service.jobs.worker")

#: the longest wait between two connection attempts of RQ's worker while Redis is unreachable
MAX_CONNECTION_WAIT_S = 2.0
#: between two checks whether Redis is back, before a new worker starts
REVIVE_WAIT_S = 0.5


class DeadlineWorker(SimpleWorker):
    """RQ's ``SimpleWorker``, with a shorter reconnect wait and a shared stop flag (set from
    RQ's warm-shutdown hook)."""

    max_connection_wait_time = MAX_CONNECTION_WAIT_S

    def __init__(self, *args: Any, stopping: threading.Event, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stopping = stopping

    def execute_job(self, job: Any, queue: Any) -> None:
        """RQ's public per-job step, timed for the job's one log line (``jobs/joblog.py``)."""
        from .joblog import job_done

        started = time.perf_counter()
        try:
            super().execute_job(job, queue)
        finally:
            job_done(job, queue, time.perf_counter() - started)

    def handle_warm_shutdown_request(self) -> None:
        self.stopping.set()
        super().handle_warm_shutdown_request()


class OutageLines(logging.Filter):
    """Log records that carry a Redis connection error keep its message, not its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None and record.levelno >= logging.ERROR and record.name.startswith("rq"):
            # RQ logs a failed job from inside its except clause, the traceback as text: a
            # job cut short by Redis is left failed and the repair pass queues it again
            # (jobs/repair.py), so one WARNING line without the traceback says so
            current = sys.exc_info()[1]
            if isinstance(current, REDIS_DOWN):
                job = getattr(record, "job_id", "?")
                record.msg, record.args = ("job %s failed (Redis unavailable: %s); the repair "
                                           "pass queues it again", (job, current))
                record.levelno, record.levelname = logging.WARNING, "WARNING"
                return True
        if isinstance(exc, REDIS_DOWN):
            record.msg = f"{record.msg} (Redis unavailable: {exc})"
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def wait_out_outage(r: redis.Redis, stopping: threading.Event) -> None:
    """Until Redis answers or a stop is asked for (SIGTERM/SIGINT set the flag meanwhile)."""
    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    wait_for_redis(r, stopping, REVIVE_WAIT_S)


def serve(url: str, queues: list[str], *, name: str | None = None,
          logging_level: str = "INFO") -> int:
    # RQ's own connection: a connect timeout and health checks, no read timeout of ours (RQ
    # sets the one its blocking pop needs); a Sentinel URL gets the current master
    connect: dict[str, Any] = {"socket_connect_timeout": sockets.CONNECT_TIMEOUT_S,
                               "health_check_interval": sockets.HEALTH_CHECK_S}
    conn = sentinel.connect(url, **connect) if sentinel.is_sentinel_url(url) \
        else redis.Redis.from_url(url, **connect)
    # ours on RQ's Redis: the data timeouts, so a stall fails a PING or a heartbeat after a
    # read timeout (on RQ's pool it would wait for as long as the stall lasts)
    ours = cluster.connect(url)
    require_schema(data_redis(conn))
    stopping = threading.Event()
    base = name or f"worker-{os.uname().nodename}-{os.getpid()}"
    dispatcher = Dispatcher(conn, name=f"{base}-dispatcher", beat_redis=ours)
    dispatcher.start()  # (it needs the data Redis only: deadlines go on while RQ's is away)
    wait_out_outage(ours, stopping)
    try:
        runs = 0
        while not stopping.is_set():
            worker = DeadlineWorker(queues, connection=conn, stopping=stopping,
                                    name=base if runs == 0 else f"{base}.{runs}")
            runs += 1
            try:
                worker.work(logging_level=logging_level)
            except REDIS_DOWN as exc:  # RQ's teardown (register_death) needs Redis too
                log.warning("Worker %s: could not deregister (Redis unavailable: %s)",
                            worker.name, exc)
            if stopping.is_set():
                break
            log.warning("Worker %s: stopped (Redis unavailable?); a new one starts once Redis "
                        "answers", worker.name)
            wait_out_outage(ours, stopping)
            time.sleep(0.1)
    finally:
        dispatcher.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="RQ's Redis (default: QUEUE_REDIS_URL, else REDIS_URL)",
                    default=os.environ.get("QUEUE_REDIS_URL") or os.environ.get("REDIS_URL")
                    or "redis://127.0.0.1:6379/0")
    ap.add_argument("--name", default=None, help="the RQ worker's name")
    ap.add_argument("--logging-level", default=None,
                    help="RQ's own log level (default: RQ_LOG_LEVEL, else WARNING)")
    ap.add_argument("queues", nargs="*", default=list(QUEUES))
    args = ap.parse_args(argv)
    joblog.configure()  # LOG_FORMAT, as the API; RQ's own lines at RQ_LOG_LEVEL
    args.logging_level = (args.logging_level or joblog.rq_level()).upper()
    for handler in logging.getLogger().handlers:
        handler.addFilter(OutageLines())
    return serve(args.url, args.queues, name=args.name, logging_level=args.logging_level)


if __name__ == "__main__":
    sys.exit(main())
