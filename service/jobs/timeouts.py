"""Turn deadlines.

``run`` is scheduled at each turn's deadline (job id: match + version). It only acts when that
same version is still pending and its deadline has passed, through the same compare-and-set as
actions, so late, repeated or concurrent jobs change nothing. ``recover`` (an ``rq cron`` job)
catches deadlines whose job was lost (a worker killed mid-job, a scheduler gone)."""

from __future__ import annotations

import logging
import time

import redis
from rq import get_current_job

from ..config import Config
from ..store import cluster, deadlines, keys, matches, replies
from ..store.docs import ACTIVE
from ..store.errors import StoreError

log = logging.getLogger(__name__)

#: recover() leaves deadlines younger than this to their own jobs
RECOVERY_GRACE_S = 2.0
#: a job that found its turn not yet due more than once (the service clock stood still: an
#: outage) looks again no sooner than this
RETRY_FLOOR_S = 0.5


_clients: dict[tuple[str, str], redis.Redis] = {}


def data_redis(job_connection: redis.Redis | None = None) -> redis.Redis:
    """The data Redis (``REDIS_URL``), on a client of this process's own with the data
    timeouts and health checks (``store/sockets.py``), made once per process. Never the job's
    own connection, even when RQ runs on the same Redis: RQ sets that one's read timeout for
    its blocking pop (about 415 s), so a stalled Redis would hold a job, and the clock keeper
    ticking on it, for minutes. (``job_connection`` is accepted for the callers that pass it.)"""
    cfg = Config.from_env()
    key = (cfg.redis_url, cfg.queue_url())
    client = _clients.get(key)
    if client is None:
        queue = key[1] if cluster.is_cluster_url(cfg.redis_url) else None
        client = _clients[key] = cluster.connect(cfg.redis_url, queue=queue)
    return client


def _connection() -> redis.Redis:
    job = get_current_job()
    return data_redis(None if job is None else job.connection)


def expire_match(r: redis.Redis, mid: str, now: float | None = None) -> int:
    """Apply the due timeouts of one match; returns how many versions it moved (0: nothing)."""
    try:
        before = matches.peek_version(r, mid)
        # expire() reads again by itself when the match moves under it (no version_conflict)
        return matches.expire(r, mid, now=now).version - before
    except StoreError as e:
        if e.code == "not_found":
            return 0
        raise


def run(mid: str, version: int, attempt: int = 0) -> str:
    """The deadline job of ``mid`` at ``version``: applies the timeout in the match's
    compare-and-set, only while the match is still at ``version`` and once it is due."""
    r = _connection()
    now = time.time()
    try:
        doc = matches.expire(r, mid, version=version, now=now)
    except StoreError as e:
        if e.code == "not_found":
            return "gone"
        raise
    if doc.version != version:  # applied: by this job if it carries this job's clock reading
        return "applied" if doc.timed_out_at == now else "stale"
    if doc.status == ACTIVE and doc.deadline is not None:
        # Not due yet: woke early (clock skew between hosts), or the deadline moved because
        # the service clock stood still (store/clock.py). Go again at the deadline (which is
        # the wall time it is now expected at).
        at = doc.deadline if attempt == 0 else max(doc.deadline, now + RETRY_FLOOR_S)
        with r.pipeline() as pipe:
            pipe.multi()
            deadlines.queue(pipe, doc, attempt=attempt + 1, at=at)
            pipe.execute()
        return "early"
    return "stale"


def recover(limit: int = 1000) -> int:
    """Apply every overdue timeout whose job didn't (worker died, job lost)."""
    r = _connection()
    now = time.time()
    due = r.zrangebyscore(keys.DEADLINES, "-inf", now - RECOVERY_GRACE_S, start=0, num=limit)
    moved = 0
    for raw in due:
        mid = replies.text(raw)
        try:
            before = matches.peek_version(r, mid)
            doc = matches.expire(r, mid, now=time.time())
        except StoreError as e:
            if e.code != "not_found":
                raise
            r.zrem(keys.DEADLINES, mid)
            continue
        n = doc.version - before
        if n:
            log.info("recovered %d overdue timeout(s) of %s", n, mid)
            moved += n
        elif doc.status == ACTIVE and doc.deadline is not None:
            # not due after all: the service clock moved its deadline (an outage)
            r.zadd(keys.DEADLINES, {mid: doc.deadline}, xx=True)
        elif doc.status != ACTIVE:
            # a stale entry: on a cluster, two changes' index effects crossed (store/cluster.py)
            r.zrem(keys.DEADLINES, mid)
    return moved
