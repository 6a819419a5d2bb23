"""Shared pytest fixtures.

``redis_server`` (session): a private redis-server on a unix socket in a temp dir; it has
``.url``, ``.socket_path`` and ``.client()``. ``redis_db`` (function): a client to that private
server, FLUSHALLed after each test. Neither ever touches 127.0.0.1:6379 or REDIS_URL.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from tests.support.redis_proc import RedisProcess


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisProcess]:
    with RedisProcess() as server:
        yield server


@pytest.fixture
def redis_db(redis_server: RedisProcess) -> Iterator[redis.Redis]:
    client = redis_server.client()
    try:
        yield client
    finally:
        # FLUSHALL on the private server only: a fresh client to its own socket.
        cleaner = redis_server.client()
        try:
            cleaner.flushall()
        finally:
            cleaner.close()
            client.close()
