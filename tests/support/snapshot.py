"""Everything stored in a (private, test-only) Redis, to prove that a refused request changed
nothing: ``state = redis_state(client)`` before, the request, then ``assert redis_state(client)
== state``. Left out: the rate limiter's counters (``LIMITS:*``: counting a refused request
against its caller is the point of a limit, not a change of stored state) and the service
clock's heartbeats (``ll:svc:*``, written by every API process several times a second)."""

from __future__ import annotations

from typing import Any

import redis

#: key prefixes that are not stored state (rate-limit counters, heartbeats)
SKIP = ("LIMITS:", "ll:svc:")


def redis_state(r: redis.Redis, *, skip: tuple[str, ...] = SKIP) -> dict[str, Any]:
    """Every key with its type and whole value (a dict comparable with ``==``)."""
    out: dict[str, Any] = {}
    for raw in r.scan_iter(count=1000):
        key = raw.decode() if isinstance(raw, bytes) else str(raw)
        if key.startswith(skip):
            continue
        kind = r.type(raw)
        kind = kind.decode() if isinstance(kind, bytes) else str(kind)
        value: Any
        if kind == "string":
            value = r.get(raw)
        elif kind == "hash":
            value = r.hgetall(raw)
        elif kind == "list":
            value = r.lrange(raw, 0, -1)
        elif kind == "set":
            value = sorted(r.smembers(raw))
        elif kind == "zset":
            value = r.zrange(raw, 0, -1, withscores=True)
        elif kind == "stream":
            value = r.xrange(raw)
        else:  # gone between SCAN and TYPE
            continue
        out[key] = (kind, value)
    return out


def clear_rate_limits(r: redis.Redis) -> None:
    """Forget every rate-limit counter (tests of limits start from a fresh window)."""
    for key in list(r.scan_iter(match="LIMITS:*", count=1000)):
        r.delete(key)
