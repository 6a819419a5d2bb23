"""Scheduling a turn's deadline job, queued inside the same MULTI as the change that started the
turn (so a committed turn always has its job). The job is named by path: the store never imports
the jobs package (dependencies point routes/jobs -> store -> engine)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import redis
from redis.client import Pipeline
from rq import Queue

from .docs import ACTIVE, MatchDoc

QUEUE = "deadlines"
JOB = "service.jobs.timeouts.run"

#: set from Config.enqueue_jobs by create_app and the worker; tests of pure HTTP may turn it off
ENABLED = True


def job_id(mid: str, version: int, attempt: int = 0) -> str:
    return f"deadline-{mid}-{version}" + (f"-r{attempt}" if attempt else "")


def when(deadline: float) -> datetime:
    # RQ's scheduled registry keeps whole seconds: round UP so a job is never due before the
    # deadline; the worker's scheduler polls every 0.2 s (see jobs/worker.py).
    return datetime.fromtimestamp(math.ceil(deadline), UTC)


def queue(pipe: Pipeline, doc: MatchDoc, *, attempt: int = 0) -> None:
    """Queue the pending turn's timeout job (inside MULTI)."""
    if not ENABLED or doc.status != ACTIVE or doc.deadline is None:
        return
    q = Queue(QUEUE, connection=redis.Redis(connection_pool=pipe.connection_pool))
    q.enqueue_at(when(doc.deadline), JOB, doc.id, doc.version,
                 job_id=job_id(doc.id, doc.version, attempt), pipeline=pipe,
                 result_ttl=60, failure_ttl=24 * 3600, job_timeout=30)
