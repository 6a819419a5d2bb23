"""Logs of the deadline worker and cron: the format the API uses, one line per job.

``LOG_FORMAT=json`` (the default; docker compose's) writes every record as one JSON object on
one line, as the API's request log does (``service/logs.py``: ``ts``, ``level``, ``msg``,
``logger``, then the record's fields); ``text`` writes short lines for people (``make run``). Each job the worker runs
is ONE line (logger ``service.jobs.run``, INFO; ``JOB_LOG=0`` turns it off)::

    {"ts": "...", "level": "info", "msg": "job", "logger": "service.jobs.run",
     "job": "service.jobs.timeouts.run", "job_id": "dl:m_1:7", "queue": "deadlines",
     "status": "finished", "duration_ms": 2.1}

RQ's own loggers (``rq.*``: 3-4 INFO lines per job, about 10,700 lines in 9 minutes of house-bot
play) stay at WARNING unless ``RQ_LOG_LEVEL`` says otherwise; the service's own at
``LOG_LEVEL`` (info)."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from .. import logs

job_log = logging.getLogger("service.jobs.run")
_FIELDS = ("job", "job_id", "queue", "status", "duration_ms", "worker")


def rq_level() -> str:
    return (os.environ.get("RQ_LOG_LEVEL") or "WARNING").upper()


def _job_line(record: logging.LogRecord) -> str | None:
    d = record.__dict__
    if record.name == job_log.name and "status" in d:
        return f"job {d['job']} {d['job_id']} {d['status']} {d['duration_ms']:.1f}ms"
    return None


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """The job processes' one handler (a class of its own: :func:`configure` finds it)."""


def configure() -> None:
    """One handler on the root logger (stderr) in the chosen format; idempotent. RQ adds no
    handler of its own when one is there."""
    root = logging.getLogger()
    if any(isinstance(h, _Handler) for h in root.handlers):
        return
    handler = _Handler(sys.stderr)
    handler.setFormatter(logs.formatter(_FIELDS, short=_job_line))
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("service").setLevel(os.environ.get("LOG_LEVEL", "info").upper())
    logging.getLogger("rq").setLevel(rq_level())


def job_done(job: Any, queue: Any, duration_s: float) -> None:
    """The one line of a job the worker ran (its status as the worker last saw it: no Redis
    round trip)."""
    if os.environ.get("JOB_LOG", "1") == "0" or not job_log.isEnabledFor(logging.INFO):
        return
    try:
        status = job.get_status(refresh=False)
    except Exception:  # noqa: BLE001 - a status RQ never set: the line still says the job ran
        status = None
    job_log.info("job", extra={
        "job": getattr(job, "func_name", None), "job_id": job.id,
        "queue": getattr(queue, "name", None),
        "status": getattr(status, "value", status) or "unknown",
        "duration_ms": round(duration_s * 1000, 2)})
