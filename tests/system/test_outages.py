"""The clock stops when the service stops (issue 11, item 1), on the whole stack: gunicorn
(2 workers, rate limits on), the deadline worker, the cron process and the house bots, on a
private redis-server with an append-only file (so a SIGKILL and a restart on the same socket
lose nothing), with responsive SDK bots playing 3-s turns.

- Redis is killed for about 10 s and restarted: meanwhile the API answers ``503
  service_unavailable`` with ``Retry-After`` (never a 500); afterwards every match finishes by
  play with no timeout at all, a turn that was pending through the outage is charged nothing
  (an idle seat's turn times out only a whole turn after the service is back), and every
  process is still the one that was started (none died, each reconnected by itself).
- The same with every API process killed for longer than a turn, and with every deadline
  worker killed for longer than a turn (then started again, as ``make run`` or compose would).

A bot's turn is 3 s; the bots answer in about 0.2 s, so a timeout here can only be an outage
charged to a player."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests
from llsdk import Action, Bot, View
from rq.registry import FinishedJobRegistry

from service.store import clock
from service.store.docs import FINISHED, MatchDoc
from tests.support.sdkclient import Client
from tests.support.stack import WholeStack, running_stack, wait_for

pytestmark = pytest.mark.timeout(240)

T = 3  # turn_timeout_s of every match here
MATCHES = 4
OUTAGE_S = 10.0  # the Redis outage
DOWN_S = 2 * T  # the API / worker outage: longer than a turn
ENV = {"EXPECT_WORKERS": "1", "RATE_LIMITS": "1", "RATE_LIMIT": "1000/second",
       "LADDERS": "[]", "RECOVERY_INTERVAL_S": "2"}
OPTIONS = {"ruleset": "classic", "seats": 2, "turn_timeout_s": T, "timeout_policy": "auto",
           "max_timeouts": 2, "tokens_to_win": 7}


class Responsive(Bot):
    """Plays a random legal action after a short think (so matches last a while)."""

    def choose(self, view: View) -> Action:
        time.sleep(0.2)
        return view.legal_actions[self.rng.randrange(len(view.legal_actions))]


class BotThread:
    def __init__(self, url: str, name: str) -> None:
        self.client = Client(url, Client(url).players.register(name).token)
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            Responsive().run(self.client, stop_event=self.stop, poll_wait=5.0)
        except BaseException as e:  # noqa: BLE001 - reported by close()
            self.error = e

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        self.client.close()
        assert self.error is None, repr(self.error)
        assert not self.thread.is_alive(), "Bot.run did not stop"


@dataclass
class Probe:
    """Hits the API every 0.1 s from a thread and records (wall time, status, body, headers)."""

    url: str
    token: str
    match_id: str
    seen: list[tuple[float, int, Any, dict[str, str]]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> Probe:
        threading.Thread(target=self._run, daemon=True).start()
        return self

    def _run(self) -> None:
        http = requests.Session()
        http.trust_env = False
        auth = {"Authorization": f"Bearer {self.token}"}
        calls = [
            ("GET", f"/v1/matches/{self.match_id}", {}),
            ("GET", f"/v1/matches/{self.match_id}/view", {"headers": auth}),
            ("GET", "/v1/me/events?wait=0", {"headers": auth}),
            ("GET", "/v1/matches?status=active", {}),
            ("POST", f"/v1/matches/{self.match_id}/actions",
             {"headers": auth, "json": {"type": "play", "card": "handmaid"}}),
            ("GET", "/readyz", {}),
        ]
        i = 0
        while not self.stop.wait(0.1):
            method, path, kw = calls[i % len(calls)]
            i += 1
            try:
                resp = http.request(method, self.url + path, timeout=10, **kw)
            except requests.RequestException:
                self.seen.append((time.time(), 0, None, {}))
                continue
            try:
                body = resp.json()
            except ValueError:
                body = resp.text[:200]
            self.seen.append((time.time(), resp.status_code, body, dict(resp.headers)))

    def between(self, start: float, end: float) -> list[tuple[float, int, Any, dict[str, str]]]:
        return [s for s in self.seen if start <= s[0] <= end]


@pytest.fixture
def stack() -> Iterator[WholeStack]:
    with running_stack(ENV, persistent=True, house_bots=True) as s:
        yield s


def timeouts_of(doc: MatchDoc) -> list[dict[str, Any]]:
    assert doc.state is not None
    return [dict(e.data, type=e.type) for e in doc.state.events
            if e.data.get("timeout") or (e.type == "forfeit" and e.data.get("reason") == "timeout")]


def start_matches(url: str, bots: list[BotThread]) -> list[str]:
    ids = []
    for a, b in zip(bots[::2], bots[1::2], strict=True):
        mid = a.client.matches.create(**OPTIONS).match_id
        a.client.matches.join(mid)
        b.client.matches.join(mid)
        ids.append(mid)
    return ids


def idle_match(url: str) -> tuple[str, Client]:
    """A match whose first seat never moves (its creator only joins): its turns time out."""
    idle = Client(url, Client(url).players.register("idle").token)
    other = Client(url, Client(url).players.register("idle-partner").token)
    mid = idle.matches.create(**{**OPTIONS, "first_seat": 0, "max_timeouts": 50}).match_id
    idle.matches.join(mid)
    other.matches.join(mid)
    other.close()
    return mid, idle


def check_played_out(s: WholeStack, ids: list[str]) -> None:
    def finished() -> bool:
        return all(s.load(m).status == FINISHED for m in ids)

    wait_for("every match to finish", finished, timeout=120, every=0.5)
    for mid in ids:
        doc = s.load(mid)
        assert doc.state is not None
        assert timeouts_of(doc) == [], (mid, timeouts_of(doc))
        assert not any(doc.state.forfeited), mid
        end = doc.state.events[-1]
        assert end.type == "match_end" and end.data["reason"] != "forfeit", end


def first_timeout_at(s: WholeStack, mid: str) -> float:
    """When (wall clock) the idle match's first timeout was applied."""
    def applied() -> float | None:
        doc = s.load(mid)
        return doc.timed_out_at if timeouts_of(doc) else None

    return float(wait_for("the idle seat's first timeout", applied, timeout=60))


def outage_probe_checks(probe: Probe, down: float, up: float) -> None:
    during = probe.between(down + 0.5, up - 0.2)
    assert len(during) >= 10, f"too few probes during the outage: {len(during)}"
    for _, status, body, headers in during:
        assert status == 503, (status, body)
        assert body["code"] == "service_unavailable" and body["status"] == 503, body
        assert int(headers["Retry-After"]) >= 1, headers
    statuses = {status for _, status, _, _ in probe.seen}
    assert 500 not in statuses and 0 not in statuses, statuses


def test_a_redis_outage_charges_no_turn_and_every_process_reconnects(stack: WholeStack) -> None:
    s = stack
    bots = [BotThread(s.api.url, f"bot{i}") for i in range(2 * MATCHES)]
    try:
        ids = start_matches(s.api.url, bots)
        pids = {"api": s.api.pid, "worker": s.worker.pid, "cron": s.cron.pid}
        time.sleep(1.5)  # a few moves each
        idle, idle_client = idle_match(s.api.url)
        probe = Probe(s.api.url, idle_client.token or "", idle).start()
        time.sleep(0.5)  # the idle seat's first turn is pending: due 2.5 s into the outage
        assert all(s.load(m).status != FINISHED for m in ids), "matches too short for the test"
        assert timeouts_of(s.load(idle)) == []
        finished_jobs = FinishedJobRegistry("deadlines", connection=s.r).count

        down = time.time()
        s.rp.kill()
        time.sleep(OUTAGE_S)
        revived = time.time()
        s.rp.revive()
        up = time.time()
        s.r = s.rp.client()

        check_played_out(s, ids)
        # the idle seat's turn was pending through the outage: it got a whole turn again
        assert first_timeout_at(s, idle) >= revived + T
        probe.stop.set()
        outage_probe_checks(probe, down, up)
        stats = clock.stats(s.r)
        assert stats["outages"] >= 1 and stats["credited_s"] >= OUTAGE_S - 4, stats
        # nobody died: the same processes, and each works again
        assert {"api": s.api.pid, "worker": s.worker.pid, "cron": s.cron.pid} == pids
        assert s.api.running and s.worker.running and s.cron.running
        assert s.house is not None and s.house.running
        assert FinishedJobRegistry("deadlines", connection=s.r).count > finished_jobs
        beats = s.r.zrange("rq:cron_schedulers", 0, -1, withscores=True)
        assert max((score for _, score in beats), default=0.0) > up, "cron sent no heartbeat"
        assert requests.get(s.api.url + "/readyz", timeout=5).status_code == 200
        assert "Redis is back" in s.cron.log_text()
        idle_client.close()
    finally:
        for b in bots:
            b.close()


@pytest.mark.parametrize("what", ["api", "worker"])
def test_every_api_process_or_every_worker_down_for_longer_than_a_turn(stack: WholeStack,
                                                                      what: str) -> None:
    s = stack
    bots = [BotThread(s.api.url, f"bot{i}") for i in range(2 * MATCHES)]
    try:
        ids = start_matches(s.api.url, bots)
        time.sleep(1.5)
        idle, idle_client = idle_match(s.api.url)
        time.sleep(0.5)  # the idle seat's first turn is pending: due 2.5 s into the outage
        assert all(s.load(m).status != FINISHED for m in ids), "matches too short for the test"
        proc = s.api if what == "api" else s.worker
        proc.kill()  # SIGKILL the master and its workers / the worker and its scheduler
        time.sleep(DOWN_S)
        restart = time.time()
        proc.start()  # as make run or compose would, after their backoff
        check_played_out(s, ids)
        # pending through the outage: a whole turn again once the service was whole
        assert first_timeout_at(s, idle) >= restart + T
        stats = clock.stats(s.r)
        assert stats["outages"] >= 1, stats
        assert s.api.running and s.worker.running and s.cron.running
        assert s.house is not None and s.house.running
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
