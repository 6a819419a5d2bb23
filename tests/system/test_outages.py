"""The clock stops when the service stops (issue 11, item 1), on the whole stack: gunicorn
(2 workers, rate limits on), the deadline worker, the cron process and the house bots, on a
private redis-server with an append-only file (so a SIGKILL and a restart on the same socket
lose nothing), with responsive SDK bots playing 8-s turns.

- Redis is killed for about 10 s and restarted: meanwhile the API answers ``503
  service_unavailable`` with ``Retry-After`` (never a 500); afterwards every match finishes by
  play with no timeout at all, a turn that was pending through the outage is charged nothing
  (an idle seat's turn times out only a whole turn after the service is back), and every
  process is still the one that was started (none died, each reconnected by itself).
- The same with every API process killed for longer than a turn, and with every deadline
  worker killed for longer than a turn (then started again, as ``make run`` or compose would).

A bot's turn is 8 s and every outage 10 s; the bots answer in about 0.2 s, so a timeout here can
only be an outage charged to a player (or a bot starved for 8 s by a loaded machine)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from service.store import clock, heartbeats, keys
from service.store.docs import FINISHED
from tests.support.ladderbots import LadderBot, first_timeout_at, timeouts_of, wait_played_out
from tests.support.outage import Probe
from tests.support.sdkclient import Client
from tests.support.stack import WholeStack, running_stack, wait_for

pytestmark = pytest.mark.timeout(240)

T = 3  # turn_timeout_s of the idle match: its first turn is due inside every outage
#: turn_timeout_s of the bots' matches: room for a bot thread starved by a loaded machine, and
#: still shorter than every outage, so that a turn pending through one and charged for it would
#: time out
BOT_T = 8
MATCHES = 4
OUTAGE_S = BOT_T + 2.0  # the Redis outage
DOWN_S = BOT_T + 2.0  # the API / worker outage: longer than a turn
ENV = {"EXPECT_WORKERS": "1", "RATE_LIMITS": "1", "RATE_LIMIT": "1000/second",
       "LADDERS": "[]"}
OPTIONS = {"ruleset": "classic", "seats": 2, "turn_timeout_s": BOT_T, "timeout_policy": "auto",
           "max_timeouts": 2, "tokens_to_win": 7}


@pytest.fixture(scope="module")
def stack() -> Iterator[WholeStack]:
    """One stack for the module: each test ends with every process up again (what it checks),
    and counts the outages the keeper credits from where the previous test left them."""
    with running_stack(ENV, persistent=True, house_bots=True) as s:
        yield s


def start_matches(url: str, bots: list[LadderBot]) -> list[str]:
    ids = []
    for a, b in zip(bots[::2], bots[1::2], strict=True):
        mid = a.client.matches.create(**OPTIONS).match_id
        a.client.matches.join(mid)
        b.client.matches.join(mid)
        ids.append(mid)
    return ids


def probe_calls(token: str, match_id: str) -> list[tuple[str, str, dict[str, Any]]]:
    """What the probe sends during an outage: reads and a move of the idle match, long-polls."""
    auth = {"Authorization": f"Bearer {token}"}
    return [
        ("GET", f"/v1/matches/{match_id}", {}),
        ("GET", f"/v1/matches/{match_id}/view", {"headers": auth}),
        ("GET", "/v1/me/events?wait=0", {"headers": auth}),
        ("GET", "/v1/matches?status=active", {}),
        ("POST", f"/v1/matches/{match_id}/actions",
         {"headers": auth, "json": {"type": "play", "card": "handmaid"}}),
        ("GET", "/readyz", {}),
    ]


def idle_match(url: str, tag: str) -> tuple[str, Client]:
    """A match whose first seat never moves (its creator only joins): its turns time out."""
    idle = Client(url, Client(url).players.register(f"{tag}-idle").token)
    other = Client(url, Client(url).players.register(f"{tag}-idle-partner").token)
    mid = idle.matches.create(**{**OPTIONS, "turn_timeout_s": T, "first_seat": 0,
                                 "max_timeouts": 50}).match_id
    idle.matches.join(mid)
    other.matches.join(mid)
    other.close()
    return mid, idle


def test_a_redis_outage_charges_no_turn_and_every_process_reconnects(stack: WholeStack) -> None:
    s = stack
    bots = [LadderBot(s.api.url, f"redis-bot{i}") for i in range(2 * MATCHES)]
    try:
        ids = start_matches(s.api.url, bots)
        pids = {"api": s.api.pid, "worker": s.worker.pid, "cron": s.cron.pid}
        time.sleep(1.5)  # a few moves each
        idle, idle_client = idle_match(s.api.url, "redis")
        probe = Probe(s.api.url, probe_calls(idle_client.token or "", idle), timeout=10).start()
        time.sleep(0.5)  # the idle seat's first turn is pending: due 2.5 s into the outage
        assert all(s.load(m).status != FINISHED for m in ids), "matches too short for the test"
        assert timeouts_of(s.load(idle)) == []
        applied = int(s.r.hget(keys.STATS, "timeouts") or 0)
        before = clock.stats(s.r)

        down = time.time()
        s.rp.kill()
        time.sleep(OUTAGE_S)
        revived = time.time()
        s.rp.revive()
        up = time.time()
        s.r = s.rp.client()

        wait_played_out(s, ids, timeout=120)
        # the idle seat's turn was pending through the outage: it got a whole turn again
        assert first_timeout_at(s, idle) >= revived + T
        probe.stop.set()
        probe.check_outage(down, up, at_least=10)
        stats = clock.stats(s.r)
        assert stats["outages"] > before["outages"], (before, stats)
        assert stats["credited_s"] - before["credited_s"] >= OUTAGE_S - 4, (before, stats)
        # nobody died: the same processes, and each works again
        assert {"api": s.api.pid, "worker": s.worker.pid, "cron": s.cron.pid} == pids
        assert s.api.running and s.worker.running and s.cron.running
        assert s.house is not None and s.house.running
        # the worker's dispatcher runs again and settles turns (it beats for /readyz)
        assert (heartbeats.freshest(s.r, heartbeats.DEADLINE_WORKER) or 0.0) > up
        assert int(s.r.hget(keys.STATS, "timeouts") or 0) > applied
        beats = s.r.zrange("rq:cron_schedulers", 0, -1, withscores=True)
        assert max((score for _, score in beats), default=0.0) > up, "cron sent no heartbeat"
        assert requests.get(s.api.url + "/readyz", timeout=5).status_code == 200
        assert "Redis is back" in s.cron.log_text()
        idle_client.matches.resign(idle)  # no more timeouts of it during the next tests
        idle_client.close()
    finally:
        for b in bots:
            b.close()


@pytest.mark.parametrize("what", ["api", "worker"])
def test_every_api_process_or_every_worker_down_for_longer_than_a_turn(stack: WholeStack,
                                                                      what: str) -> None:
    s = stack
    bots = [LadderBot(s.api.url, f"{what}-bot{i}") for i in range(2 * MATCHES)]
    try:
        ids = start_matches(s.api.url, bots)
        time.sleep(1.5)
        idle, idle_client = idle_match(s.api.url, what)
        time.sleep(0.5)  # the idle seat's first turn is pending: due 2.5 s into the outage
        assert all(s.load(m).status != FINISHED for m in ids), "matches too short for the test"
        before = clock.stats(s.r)
        proc = s.api if what == "api" else s.worker
        proc.kill()  # SIGKILL the master and its workers / the worker and its scheduler
        time.sleep(DOWN_S)
        restart = time.time()
        proc.start()  # as make run or compose would, after their backoff
        wait_played_out(s, ids, timeout=120)
        # pending through the outage: a whole turn again once the service was whole
        assert first_timeout_at(s, idle) >= restart + T
        stats = clock.stats(s.r)
        assert stats["outages"] > before["outages"], (before, stats)
        assert s.api.running and s.worker.running and s.cron.running
        assert s.house is not None and s.house.running
        idle_client.matches.resign(idle)
        idle_client.close()
    finally:
        for b in bots:
            b.close()


def test_the_api_answers_503_json_while_redis_is_down(stack: WholeStack) -> None:
    """Every kind of request, authenticated or not, reading or writing, long-polls included."""
    s = stack
    c = Client(s.api.url)
    token = c.players.register("probe").token
    auth = {"Authorization": f"Bearer {token}"}
    s.rp.kill()
    try:
        http = requests.Session()
        http.trust_env = False
        for method, path, kw in [
            ("GET", "/readyz", {}),
            ("POST", "/v1/players", {"json": {"name": "newcomer"}}),
            ("GET", "/v1/me", {"headers": auth}),
            ("GET", "/v1/me/events?wait=2", {"headers": auth}),
            ("GET", "/v1/matches/m_000000000000/view?wait=2", {"headers": auth}),
            ("POST", "/v1/matches", {"headers": auth, "json": OPTIONS}),
            ("GET", "/", {}),
        ]:
            resp = http.request(method, s.api.url + path, timeout=15, **kw)
            if path == "/":  # the HTML page needs no Redis
                assert resp.status_code == 200
                continue
            assert resp.status_code == 503, (path, resp.status_code, resp.text[:300])
            body = resp.json()
            assert body["code"] == "service_unavailable", (path, body)
            assert int(resp.headers["Retry-After"]) >= 1
        assert json.loads(requests.get(s.api.url + "/healthz", timeout=5).text)["status"] == "ok"
    finally:
        s.rp.revive()
        s.r = s.rp.client()
    assert wait_for("the API to answer again", lambda: requests.get(
        s.api.url + "/readyz", timeout=5).status_code == 200, timeout=10)
