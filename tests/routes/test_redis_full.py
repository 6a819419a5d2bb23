"""A Redis at its ``maxmemory`` with ``noeviction`` (what docs/operations.md#bounded-data
recommends) refuses writes: the API answers them ``503 service_unavailable`` (JSON, with
``Retry-After``), never a 500, changes nothing, and goes on answering reads."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from tests.support.apiclient import NO_TIMEOUTS, Api, error_of
from tests.support.live import running_server
from tests.support.redis_proc import RedisProcess


@pytest.fixture(scope="module")
def full_redis() -> Iterator[RedisProcess]:
    with RedisProcess() as server:
        yield server


def test_writes_to_a_full_redis_are_503_and_change_nothing(full_redis: RedisProcess) -> None:
    r = full_redis.client()
    with running_server(full_redis.url) as server:
        api = Api(server.url)
        mid, players, joins = api.new_match(2, ruleset="classic", seed="full", **NO_TIMEOUTS)
        seat = joins[-1]["turn"]["seat"]
        view = api.view(players[seat], mid)
        before = api.summary(mid)["version"]
        r.config_set("maxmemory-policy", "noeviction")
        r.config_set("maxmemory", str(int(r.info("memory")["used_memory"]) - 100_000))
        try:
            action = random.Random(1).choice(view["legal_actions"])
            for resp in (api.post_action(players[seat], mid, action),
                         api.request("POST", "/v1/players", json={"name": "one-too-many"})):
                assert resp.status_code == 503, (resp.status_code, resp.text[:300])
                assert error_of(resp)["code"] == "service_unavailable"
                assert resp.headers["Retry-After"]
            assert api.summary(mid)["version"] == before  # reads go on; nothing changed
        finally:
            r.config_set("maxmemory", "0")
        assert api.act(players[seat], mid, action)["version"] == view["version"] + 1
        api.close()
