"""Turn deadlines: what the deadline dispatcher (``jobs/dispatcher.py``) does when a match's
entry in the deadline index comes due.

``settle_on`` applies what is due through the match's compare-and-set, the same as an action, so a
late, repeated or concurrent call changes nothing: a timeout is applied once. It never applies
one early either: whether a turn is due is the store's decision, on the service clock
(store/clock.py). When nothing was due (the clock stood still through an outage and moved the
deadline, the job ran before the deadline on a host whose clock is ahead, or a player moved
meanwhile) it sets the entry back to the pending turn's deadline, so the dispatcher comes back
then."""

from __future__ import annotations

import logging
import time

import redis
from rq import get_current_job

from ..config import Config
from ..store import archive, cluster, deadlines, matches
from ..store.docs import ACTIVE
from ..store.errors import StoreError

log = logging.getLogger(__name__)

#: a job that found a turn not yet due although its deadline had passed (the service clock
#: stands still: an outage) has it looked at again no sooner than this
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
        archive.attach(client, cfg.archive_dir)
    return client


def _connection() -> redis.Redis:
    job = get_current_job()
    return data_redis(None if job is None else job.connection)


def settle(mid: str, claimed: float = 0.0) -> str:
    """``mid``'s deadline as an RQ job (``claimed``: the index score taken, for whoever reads
    the queue): :func:`settle_on` on this process's data client. The dispatcher calls
    :func:`settle_on` itself; the job stays for a deadline queued by hand or by an older
    release."""
    return settle_on(_connection(), mid)


def settle_on(r: redis.Redis, mid: str) -> str:
    """Apply what is due of ``mid`` now. Returns ``applied`` (this call applied the due
    timeouts), ``pending`` (a turn is pending and not due: its entry is set to its deadline),
    ``over`` (no turn is pending: the entry is removed) or ``gone`` (no such match)."""
    now = time.time()
    try:
        doc = matches.expire(r, mid, now=now)
    except StoreError as e:
        if e.code != "not_found":
            raise
        deadlines.reschedule(r, mid, None)
        return "gone"
    if doc.timed_out_at == now:  # the commit carries this job's clock reading; it also wrote
        return "applied"  # the match's index entry
    if doc.status == ACTIVE and doc.deadline is not None:
        # not due in service time although due in wall time: the clock stands (an outage)
        deadlines.reschedule(r, mid, max(doc.deadline, now + RETRY_FLOOR_S)
                             if doc.deadline <= now else doc.deadline)
        return "pending"
    deadlines.reschedule(r, mid, None)
    return "over"
