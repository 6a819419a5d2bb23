"""Redis Sentinel keeps deadlines firing through a failover (issue 24, item 4), on the whole
stack in single-Redis mode behind Sentinel: ``REDIS_URL=redis+sentinel://...`` for gunicorn (2
workers, rate limits on), the worker (``python -m service.jobs.worker``, a Sentinel URL) and
``rq cron``; a master, a replica and three sentinels (real ``redis-server`` and
``redis-server --sentinel`` processes). That Redis holds RQ's queues too, so it is the queue
master that is killed.

Eight matches whose players never move time out every second (a steady load of deadline
jobs); the master is SIGKILLed, the sentinels promote the replica, and every process follows by
itself. Then every match goes on timing out (no deadline lost), each turn exactly once (as
many timeouts as versions since the joins), and ``/readyz`` is 200 again."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis
import requests
from rq.registry import FailedJobRegistry

from service.store import cluster, matches
from service.store.docs import FINISHED, MatchDoc
from service.store.queues import QUEUES
from tests.support.ladderbots import timeouts_of
from tests.support.redis_sentinel import SentinelSet
from tests.support.rqproc import RqCron, RqWorker
from tests.support.sdkclient import Client
from tests.support.server import ApiServer
from tests.support.stack import wait_for

pytestmark = pytest.mark.timeout(300)

T = 1
MATCHES = 8
ENV = {"EXPECT_WORKERS": "1", "RATE_LIMITS": "1", "RATE_LIMIT": "1000/second", "LADDERS": "[]"}
IDLE = {"ruleset": "classic", "seats": 2, "turn_timeout_s": T, "timeout_policy": "auto",
        "max_timeouts": 50, "first_seat": 0, "tokens_to_win": 20}


@pytest.fixture
def stack() -> Iterator[tuple[SentinelSet, ApiServer, RqWorker, RqCron]]:
    with SentinelSet() as ss:
        api = ApiServer(ss.url, workers=2, env=ENV)
        worker = RqWorker(ss.url, env=ENV)
        cron = RqCron(ss.url, env=ENV)
        try:
            api.start()
            worker.start()
            cron.start()
            yield ss, api, worker, cron
            logs = {"api": api.log_text(), "worker": worker.log_text(),
                    "cron": cron.log_text()}
        finally:
            cron.close()
            worker.close()
            api.close()
    for name, log in logs.items():
        assert "Traceback" not in log, f"{name} logged an error:\n{log[-6000:]}"


def test_killing_the_queue_master_loses_no_deadline_and_fires_each_once(
        stack: tuple[SentinelSet, ApiServer, RqWorker, RqCron]) -> None:
    ss, api, worker, cron = stack
    r = cluster.connect(ss.url)

    def load(mid: str) -> MatchDoc:
        for _ in range(40):
            try:
                return matches.load(r, mid)
            except (redis.ConnectionError, redis.TimeoutError):
                time.sleep(0.25)  # the failover
        raise AssertionError("the data Redis never came back")

    joined: dict[str, int] = {}
    for i in range(MATCHES):
        a = Client(api.url, Client(api.url).players.register(f"idle{i}a").token)
        b = Client(api.url, Client(api.url).players.register(f"idle{i}b").token)
        mid = a.matches.create(**IDLE).match_id
        a.matches.join(mid)
        joined[mid] = b.matches.join(mid).version
        a.close()
        b.close()
    wait_for("two timeouts in every match", lambda: all(
        len(timeouts_of(load(m))) >= 2 for m in joined), timeout=60)

    at_kill = {m: len(timeouts_of(load(m))) for m in joined}
    running = [m for m in joined if load(m).status != FINISHED]
    assert len(running) >= MATCHES // 2, "matches too short for the test"
    old = ss.kill_master()
    ss.wait_failover(old)

    def went_on(m: str) -> bool:
        doc = load(m)
        return doc.status == FINISHED or len(timeouts_of(doc)) >= at_kill[m] + 3

    wait_for("three more timeouts in every match after the failover (or its end)",
             lambda: all(went_on(m) for m in running), timeout=120, every=0.5)
    settled = doubled = 0
    for m, v0 in joined.items():
        doc = load(m)
        settled += len(timeouts_of(doc)) - at_kill[m]
        doubled += len(timeouts_of(doc)) - (doc.version - v0)
        # nobody moves: every version since the joins is a turn that timed out, once
        assert len(timeouts_of(doc)) == doc.version - v0, (m, doc.version, v0)
    failed = sum(FailedJobRegistry(name, connection=r).count for name in QUEUES)
    print(f"{MATCHES} matches ({len(running)} running at the kill), {settled} timeouts settled "
          f"after the master was killed; lost 0 (every match went on), doubled {doubled}, "
          f"failed jobs {failed}")
    assert api.running and worker.running and cron.running
    wait_for("/readyz to answer 200", lambda: requests.get(
        api.url + "/readyz", timeout=5).status_code == 200, timeout=30)
