"""The private Redis fixtures work and are isolated from any shared Redis."""

from __future__ import annotations

import os

import redis

from tests.support.redis_proc import RedisProcess


def test_set_get_round_trip(redis_db: redis.Redis) -> None:
    redis_db.set("ll:test:key", "value")
    assert redis_db.get("ll:test:key") == b"value"


def test_db_is_flushed_between_tests(redis_db: redis.Redis) -> None:
    # The previous test's key must be gone (FLUSHALL after each test).
    assert redis_db.get("ll:test:key") is None


def test_server_is_private_unix_socket(redis_server: RedisProcess) -> None:
    assert redis_server.tmpdir is not None and redis_server.socket_path is not None
    assert os.path.dirname(redis_server.socket_path) == redis_server.tmpdir
    assert redis_server.url == f"unix://{redis_server.socket_path}"
    client = redis_server.client()
    try:
        # TCP is disabled (--port 0), so nothing listens on 6379 on our behalf.
        assert client.config_get("port") == {"port": "0"}
        assert client.config_get("unixsocket")["unixsocket"] == redis_server.socket_path
        assert client.connection_pool.connection_kwargs.get("path") == redis_server.socket_path
    finally:
        client.close()


def test_redis_process_standalone() -> None:
    # Usable outside pytest fixtures (e.g. from bench/): start, use, stop, directory removed.
    with RedisProcess() as rp:
        tmpdir = rp.tmpdir
        assert tmpdir is not None and os.path.isdir(tmpdir)
        c = rp.client()
        assert c.ping()
        c.close()
    assert not os.path.exists(tmpdir)
