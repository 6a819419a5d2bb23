"""When each player last polled (a bot counts as present for the ladder if it polled lately)."""

from __future__ import annotations

import time

import redis

from . import keys


def touch(r: redis.Redis, pid: str, now: float | None = None) -> None:
    r.zadd(keys.PRESENCE, {pid: time.time() if now is None else now})


def last_seen(r: redis.Redis, pid: str) -> float | None:
    score = r.zscore(keys.PRESENCE, pid)
    return None if score is None else float(score)
