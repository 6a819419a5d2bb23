"""Job functions for tests of the worker's own handling (tests/jobs): importable by a real RQ
worker started from the repository's root."""

from __future__ import annotations

import redis


def redis_went_away() -> None:
    """What a job meets when Redis stalls under it: redis-py's read timeout."""
    raise redis.TimeoutError("Timeout reading from socket")


def a_bug() -> None:
    raise ValueError("a bug in a job")
