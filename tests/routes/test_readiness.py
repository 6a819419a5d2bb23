"""Readiness tells the truth (issue 24, item 2): ``GET /readyz`` is 503 with a JSON body naming
each part that is wrong (``checks``) when the data Redis is unreachable or a Redis Cluster
reports ``cluster_state:fail``, when RQ's Redis is unreachable, or when no deadline worker or
``rq cron`` heartbeat is fresh; ``GET /healthz`` stays 200 (liveness only) through all of it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from service.store import heartbeats
from tests.support.redis_cluster import RedisCluster, find_cluster_tools
from tests.support.redis_proc import RedisProcess
from tests.support.server import ApiServer
from tests.support.stack import wait_for

pytestmark = pytest.mark.timeout(180)

JOBS = {"EXPECT_WORKERS": "1", "READY_MAX_AGE_S": "15"}


def get(url: str, path: str) -> tuple[int, Any, dict[str, str]]:
    resp = requests.get(url + path, timeout=30)
    return resp.status_code, resp.json(), dict(resp.headers)


def beat_all(r: Any, at: float | None = None) -> None:
    for role in heartbeats.ROLES:
        heartbeats.beat(r, role, f"test-{role}", at)


@pytest.fixture
def single() -> Iterator[tuple[RedisProcess, ApiServer]]:
    with RedisProcess(persistent=True) as rp:
        api = ApiServer(rp.url, env=JOBS)
        api.start()
        try:
            yield rp, api
        finally:
            api.close()


def test_ready_only_with_fresh_deadline_worker_and_cron_heartbeats(
        single: tuple[RedisProcess, ApiServer]) -> None:
    rp, api = single
    r = rp.client()
    status, body, headers = get(api.url, "/readyz")
    assert status == 503 and body["code"] == "service_unavailable", body
    assert int(headers["Retry-After"]) >= 1
    assert body["checks"]["data"] == "ok" and body["checks"]["queue"] == "ok"
    for role in heartbeats.ROLES:
        assert "has ever sent a heartbeat" in body["checks"][role], body
        assert role in body["message"]
    beat_all(r)
    status, body, _ = get(api.url, "/readyz")
    assert status == 200 and body["status"] == "ok", body
    assert set(body["checks"].values()) == {"ok"}
    # a beat older than READY_MAX_AGE_S: that role is missing
    heartbeats.beat(r, heartbeats.CRON, "test-cron", time.time() - 60)
    status, body, _ = get(api.url, "/readyz")
    assert status == 503 and body["checks"]["deadline-worker"] == "ok", body
    assert body["checks"]["cron"].startswith("no cron heartbeat for 6"), body
    assert get(api.url, "/healthz")[0] == 200


def test_not_ready_while_the_data_redis_is_down_but_alive(
        single: tuple[RedisProcess, ApiServer]) -> None:
    rp, api = single
    beat_all(rp.client())
    assert get(api.url, "/readyz")[0] == 200
    rp.kill()
    try:
        status, body, _ = get(api.url, "/readyz")
        assert status == 503, body
        assert body["checks"]["data"].startswith("unreachable"), body
        assert body["checks"]["queue"].startswith("unreachable"), body  # the same Redis
        assert body["checks"]["cron"].startswith("unknown"), body
        assert get(api.url, "/healthz")[0] == 200
    finally:
        rp.revive()
    wait_for("/readyz to be 200 again", lambda: get(api.url, "/readyz")[0] == 200, timeout=30)


def test_without_workers_expected_the_heartbeats_are_not_asked_for() -> None:
    with RedisProcess() as rp:
        api = ApiServer(rp.url, env={"EXPECT_WORKERS": "0"})
        api.start()
        try:
            status, body, _ = get(api.url, "/readyz")
            assert status == 200 and set(body["checks"]) == {"data", "queue"}, body
        finally:
            api.close()


def test_a_cluster_in_state_fail_or_an_unreachable_queue_is_not_ready() -> None:
    tools = find_cluster_tools()
    if isinstance(tools, str):
        pytest.skip(tools)
    with RedisCluster(masters=3) as rc, RedisProcess() as q:
        api = ApiServer(rc.url, env={**JOBS, "QUEUE_REDIS_URL": q.url})
        api.start()
        try:
            beat_all(q.client())
            assert get(api.url, "/readyz")[0] == 200
            q.kill()
            status, body, _ = get(api.url, "/readyz")
            assert status == 503 and body["checks"]["data"] == "ok", body
            assert body["checks"]["queue"].startswith("unreachable"), body
            q.revive()
            beat_all(q.client())
            assert get(api.url, "/readyz")[0] == 200
            # a master gone without a replica: the others report cluster_state:fail
            rc.kill(rc.ports[0])

            def failing() -> Any:
                status, body, _ = get(api.url, "/readyz")
                return status == 503 and "cluster_state:fail" in body["checks"]["data"] \
                    and body

            body = wait_for("the cluster to report cluster_state:fail", failing, timeout=60)
            assert body["checks"]["queue"] == "ok", body
            assert get(api.url, "/healthz")[0] == 200
        finally:
            api.close()


def test_expect_workers_and_its_former_name_enqueue_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    from service.config import Config
    for name in ("EXPECT_WORKERS", "ENQUEUE_JOBS"):
        monkeypatch.delenv(name, raising=False)
    assert Config.from_env().expect_workers
    monkeypatch.setenv("ENQUEUE_JOBS", "0")
    assert not Config.from_env().expect_workers
    monkeypatch.setenv("EXPECT_WORKERS", "1")  # the new name wins
    assert Config.from_env().expect_workers
    monkeypatch.setenv("EXPECT_WORKERS", "0")
    assert not Config.from_env().expect_workers
