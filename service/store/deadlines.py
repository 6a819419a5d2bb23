"""Scheduling a turn's deadline job, queued inside the same MULTI as the change that started the
turn (so a committed turn always has its job). On a Redis Cluster, RQ lives on a Redis of its own
(``QUEUE_REDIS_URL``): the job is queued there right after the commit, and one lost to a crash
in between is caught by the recovery pass (``jobs/timeouts.recover``). The job is named by path: the store never imports
the jobs package (dependencies point HTTP/jobs -> store -> engine).

Precision: RQ's scheduled-jobs registry is a zset that RQ scores in whole seconds (it truncates
the time) and its scheduler compares with the current whole second. Rounding every deadline up
to the next second makes the job never due early, but it also turns a steady stream of deadlines
into one burst per second (every deadline of a second becomes due at its end) that the worker
then works through one by one: in ``bench/deadlines.py`` (100 matches, 1 s deadlines) that put the
p99 lateness at about 1.5 s. So the job is added through RQ (``enqueue_at(ceil(deadline))``) and,
in the same MULTI, its score is then set to the exact deadline (a float). ``DeadlineScheduler``
(jobs/worker.py) compares scores with the exact time, so each job becomes due at its deadline and
is moved within one poll (0.2 s); a stock RQ scheduler compares with the whole second and so
still never moves it before the deadline. The job checks the clock against the stored deadline
anyway and reschedules itself if it runs early (clock skew between hosts)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import redis
from redis import ConnectionPool
from redis.client import Pipeline
from rq import Queue
from rq.registry import ScheduledJobRegistry

from . import cluster
from .docs import ACTIVE, MatchDoc
from .queues import DEADLINES as QUEUE
from .queues import TIMEOUT_JOB as JOB

__all__ = ["JOB", "QUEUE", "job_id", "queue", "requeue", "when"]


def job_id(mid: str, version: int, attempt: int = 0) -> str:
    return f"deadline-{mid}-{version}" + (f"-r{attempt}" if attempt else "")


def when(deadline: float) -> datetime:
    # RQ's scheduled registry keeps whole seconds: round UP so a job is never due before the
    # deadline (queue() then sets the exact score).
    return datetime.fromtimestamp(math.ceil(deadline), UTC)


_last: tuple[ConnectionPool, Queue] | None = None


def _queue(pool: ConnectionPool) -> Queue:
    """The deadlines queue on ``pool`` (kept: a client per change costs more than the rest)."""
    global _last
    last = _last
    if last is None or last[0] is not pool:
        last = _last = (pool, Queue(QUEUE, connection=redis.Redis(connection_pool=pool)))
    return last[1]


def queue(pipe: Pipeline, doc: MatchDoc, *, attempt: int = 0, at: float | None = None) -> None:
    """Queue the pending turn's timeout job (inside MULTI), at its deadline or at ``at``."""
    if doc.status != ACTIVE or doc.deadline is None:
        return
    at = doc.deadline if at is None else at
    mid, version = doc.id, doc.version

    def on_queue_redis() -> None:  # a cluster: RQ has a Redis of its own (store/cluster.py)
        qr = cluster.queue_client(pipe)
        with qr.pipeline() as qpipe:
            _enqueue(qpipe, _queue(qr.connection_pool), mid, version, at, attempt)
            qpipe.execute()

    if not cluster.after_commit(pipe, on_queue_redis):
        _enqueue(pipe, _queue(pipe.connection_pool), mid, version, at, attempt)


def _enqueue(pipe: Pipeline, q: Queue, mid: str, version: int, at: float,
             attempt: int) -> None:
    jid = job_id(mid, version, attempt)
    q.enqueue_at(when(at), JOB, mid, version, job_id=jid, pipeline=pipe,
                 result_ttl=60, failure_ttl=24 * 3600, job_timeout=30)
    # The exact deadline as the score (see the module docstring); same MULTI, after RQ's ZADD.
    pipe.zadd(ScheduledJobRegistry(queue=q).key, {jid: at})


def requeue(qr: redis.Redis, doc: MatchDoc) -> bool:
    """Queue the pending turn's timeout job straight on RQ's Redis ``qr``, outside any change
    (the repair of jobs a change could not queue: ``jobs/repair.requeue_missed``). A job
    already there is written again under its own id, which changes nothing. False: no turn
    is pending."""
    if doc.status != ACTIVE or doc.deadline is None:
        return False
    with qr.pipeline() as qpipe:
        _enqueue(qpipe, Queue(QUEUE, connection=qr), doc.id, doc.version, doc.deadline, 0)
        qpipe.execute()
    return True
