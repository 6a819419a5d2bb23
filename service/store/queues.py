"""The RQ queues, and the queueing of the jobs a committed change calls for.

One list: the worker listens on :data:`QUEUES` (``ops/run.py``, docker-compose.yml), ``/metrics``
reports their depth. Jobs are named by path so that the store never imports the jobs package
(dependencies point HTTP/jobs -> store -> engine)."""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable, Iterable
from typing import Any

import redis
from rq import Queue

from . import cluster

log = logging.getLogger(__name__)

#: turn deadlines (``jobs/dispatcher.py``); listed first, so a worker takes them first
DEADLINES = "deadlines"
#: everything else: ladder ratings, cron's scheduling and repair passes
DEFAULT = "default"
#: the queues a worker listens on, highest priority first
QUEUES = (DEADLINES, DEFAULT)

RATE_JOB = "service.jobs.ladder.rate"

#: after a job could not be queued, changes leave that queue Redis alone this long (s)
QUEUE_BACKOFF_S = 5.0

#: a job of a change: queues itself on RQ's Redis (the client it is given)
Job = Callable[[redis.Redis], Any]

#: monotonic time until which committed changes don't try a queue Redis, by its client
_down_until: weakref.WeakKeyDictionary[redis.Redis, float] = weakref.WeakKeyDictionary()


def rating(mid: str) -> Job:
    """The rating job of a ladder match that has just finished (one per match: its id)."""
    return lambda qr: Queue(DEFAULT, connection=qr).enqueue(
        RATE_JOB, mid, job_id=f"rate-{mid}", result_ttl=60, failure_ttl=24 * 3600)


def queue_committed(r: redis.Redis, jobs: Iterable[Job]) -> None:
    """Queue the RQ jobs of a change ``r`` has committed, on RQ's Redis: a cluster's queue
    Redis (``QUEUE_REDIS_URL``), else the data Redis itself. The change stands whatever
    happens here: a job that could not be queued (that Redis down, or stalled: a timeout after
    1 s, ``store/sockets.py``) is logged and left to the passes that catch lost jobs (the
    ladder pass rates any finished match it finds unrated), and for :data:`QUEUE_BACKOFF_S`
    the changes of this process don't try that Redis (while it is away, one change in 5 s per
    process waits for its timeout, the others go on at full speed). A turn's deadline is no job
    here: it is an entry of the deadline index, written in the commit."""
    jobs = list(jobs)
    if not jobs:
        return
    qr = cluster.queue_client(r) if cluster.is_cluster(r) else r
    if time.monotonic() < _down_until.get(qr, 0.0):
        return
    try:
        for job in jobs:
            job(qr)
    except redis.RedisError as exc:
        _down_until[qr] = time.monotonic() + QUEUE_BACKOFF_S
        log.warning("a job of a committed change was not queued (RQ's Redis: %s)", exc)
