"""Heartbeats of the job processes, for readiness (``GET /readyz``) and the health checks.

Each worker's deadline dispatcher (``jobs/dispatcher.py``, every ``dispatcher.BEAT_S``, from a
thread of its own while its loop goes round) and each ``rq cron`` (``jobs/cron_runner.py``,
every ``cron_runner.BEAT_S``) writes its name and the time into a sorted set per role on RQ's
Redis (``ll:svc:hb:<role>``), where RQ keeps its own registrations; both on a client with the
data timeouts (``store/sockets.py``), so a stalled RQ Redis fails a beat instead of holding
its sender. The API is ready only while the freshest beat of each role is younger than
``READY_MAX_AGE_S`` (15 s by default): a stack whose deadlines nobody fires, or whose recovery
and ladder passes nobody queues, is not ready even though its Redis answers.

Why our own beats rather than RQ's registrations: an idle RQ worker refreshes its key only
between blocking pops (every 405 s), and RQ's scheduler key is not listed anywhere; these are
one ``ZADD`` every few seconds, and a reader needs one ``ZRANGE``. Entries older than
:data:`FORGET_S` are dropped by the writers (names of processes long gone)."""

from __future__ import annotations

import time

import redis

from . import keys

#: the roles that beat
DEADLINE_WORKER = "deadline-worker"
CRON = "cron"
ROLES = (DEADLINE_WORKER, CRON)
#: a name not heard from for this long is forgotten
FORGET_S = 3600.0


def beat(r: redis.Redis, role: str, name: str, now: float | None = None) -> None:
    """``name`` (a process of ``role``) is alive at ``now``."""
    now = time.time() if now is None else now
    key = keys.heartbeats(role)
    with r.pipeline(transaction=False) as pipe:
        pipe.zadd(key, {name: now})
        pipe.zremrangebyscore(key, "-inf", now - FORGET_S)
        pipe.execute()


def freshest(r: redis.Redis, role: str) -> float | None:
    """The time of the latest beat of any process of ``role`` (None: none ever beat)."""
    got = r.zrevrange(keys.heartbeats(role), 0, 0, withscores=True)
    return float(got[0][1]) if got else None


def stale(r: redis.Redis, role: str, max_age_s: float, now: float | None = None) -> str | None:
    """Why ``role`` counts as absent (None: a beat younger than ``max_age_s``)."""
    now = time.time() if now is None else now
    last = freshest(r, role)
    if last is None:
        return f"no {role} has ever sent a heartbeat"
    if now - last > max_age_s:
        return f"no {role} heartbeat for {now - last:.0f} s (limit {max_age_s:.0f} s)"
    return None
