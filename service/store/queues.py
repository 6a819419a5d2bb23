"""The RQ queues and the jobs the store queues inside its own transactions.

One list: the worker listens on :data:`QUEUES` (``ops/run.py``, docker-compose.yml), ``/metrics``
reports their depth. Jobs are named by path so that the store never imports the jobs package
(dependencies point HTTP/jobs -> store -> engine)."""

from __future__ import annotations

import redis
from redis.client import Pipeline
from rq import Queue

from . import cluster
from .docs import FINISHED, MatchDoc

#: turn deadlines (``jobs/dispatcher.py``); listed first, so a worker takes them first
DEADLINES = "deadlines"
#: everything else: ladder ratings, cron's scheduling and repair passes
DEFAULT = "default"
#: the queues a worker listens on, highest priority first
QUEUES = (DEADLINES, DEFAULT)

RATE_JOB = "service.jobs.ladder.rate"


def queue_rating(pipe: Pipeline, doc: MatchDoc, old_status: str | None) -> None:
    """When a ladder match has just finished, queue its rating job (inside the change's MULTI).
    The scheduling pass also rates any finished match it finds unrated (if a job was lost)."""
    if doc.ladder and doc.status == FINISHED and old_status != FINISHED:
        mid = doc.id

        def on_queue_redis() -> None:  # a cluster: after the commit, on RQ's own Redis
            qr = cluster.queue_client(pipe)
            Queue(DEFAULT, connection=qr).enqueue(
                RATE_JOB, mid, job_id=f"rate-{mid}", result_ttl=60, failure_ttl=24 * 3600)

        if not cluster.after_commit(pipe, on_queue_redis):
            q = Queue(DEFAULT, connection=redis.Redis(connection_pool=pipe.connection_pool))
            q.enqueue(RATE_JOB, mid, job_id=f"rate-{mid}", pipeline=pipe, result_ttl=60,
                      failure_ttl=24 * 3600)
