"""Long-polls over HTTP against TWO separate gunicorn servers sharing one private Redis: a poller
held by server A is woken by a move served by server B (the wake-up travels through Redis
pub/sub), views answer at once when `after` is old and hold when it is current, ETag/304, and
the per-player notice stream `/v1/me/events` resumes from a cursor without gaps or duplicates."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.support.apiclient import NO_TIMEOUTS, Api, Player, play_randomly
from tests.support.live import HANDMAID, SAFE_MATCH, running_server
from tests.support.redis_proc import RedisProcess
from tests.support.server import ApiServer

# Run on a single Redis and on a 3-master Redis Cluster (tests/conftest.py).
ON_CLUSTER = True
# wake-ups within WAKE_BUDGET_S: `make test` runs this module after the parallel phase
pytestmark = pytest.mark.timing

WAKE_BUDGET_S = 0.100


@pytest.fixture(scope="module")
def servers(redis_server: RedisProcess) -> Iterator[tuple[ApiServer, ApiServer]]:
    with running_server(redis_server.url, env=redis_server.env) as a, \
            running_server(redis_server.url, env=redis_server.env) as b:
        assert a.pid != b.pid
        yield a, b


@pytest.fixture
def api_a(servers: tuple[ApiServer, ApiServer]) -> Iterator[Api]:
    api = Api(servers[0].url)
    yield api
    api.close()


@pytest.fixture
def api_b(servers: tuple[ApiServer, ApiServer]) -> Iterator[Api]:
    api = Api(servers[1].url)
    yield api
    api.close()


class Poll(threading.Thread):
    """One GET in its own thread (own connection); records when it returned."""

    def __init__(self, base: str, path: str, token: str, params: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(daemon=True)
        self.url = base + path
        self.params = params
        self.headers = {"Authorization": f"Bearer {token}", **(headers or {})}
        self.response: requests.Response | None = None
        self.error: BaseException | None = None
        self.started_at = self.returned_at = 0.0

    def run(self) -> None:
        self.started_at = time.monotonic()
        try:
            self.response = requests.get(self.url, params=self.params, headers=self.headers,
                                         timeout=30)
        except BaseException as e:  # noqa: BLE001 - reported by result()
            self.error = e
        self.returned_at = time.monotonic()

    def result(self, timeout: float = 30) -> requests.Response:
        self.join(timeout)
        assert not self.is_alive(), "the poll did not return"
        if self.error is not None:
            raise self.error
        assert self.response is not None
        return self.response


def _parked(poll: Poll, settle: float = 0.3) -> None:
    """Give the poll time to reach the server and park; it must still be open."""
    poll.start()
    time.sleep(settle)
    assert poll.is_alive(), f"the poll returned early: {poll.response and poll.response.text}"


# --------------------------------------------------------------------------- views


def test_poller_on_one_process_is_woken_by_a_move_on_the_other(api_a: Api, api_b: Api) -> None:
    mid, players, joins = api_a.new_match(2, ruleset="classic", **NO_TIMEOUTS)
    rng = random.Random(7)
    v = joins[-1]
    latencies = []
    for _ in range(6):
        if v["status"] == "finished":
            break
        mover = v["turn"]["seat"]
        watcher = players[1 - mover]
        version = v["version"]
        poll = Poll(api_a.base, f"/v1/matches/{mid}/view", watcher.token,
                    {"wait": 10, "after": version})
        _parked(poll)
        mine = api_b.view(players[mover], mid)
        v = api_b.act(players[mover], mid, rng.choice(mine["legal_actions"]))
        acted_at = time.monotonic()
        resp = poll.result()
        assert resp.status_code == 200, resp.text
        seen = resp.json()
        assert seen["seat"] == 1 - mover
        assert seen["version"] > version
        assert seen["version"] == v["version"]  # nothing else moved the match
        assert resp.headers["ETag"] == f'"{seen["version"]}"'
        latencies.append(poll.returned_at - acted_at)
    assert len(latencies) >= 3
    assert max(latencies) < WAKE_BUDGET_S, [round(x * 1000, 1) for x in latencies]


def test_after_current_version_waits_and_older_returns_at_once(api_a: Api) -> None:
    mid, players, joins = api_a.new_match(2, ruleset="classic", **NO_TIMEOUTS)
    version = joins[-1]["version"]
    p = players[1]
    path = f"/v1/matches/{mid}/view"

    t0 = time.monotonic()
    r = api_a.request("GET", path, token=p.token, params={"wait": 1.5, "after": version})
    held = time.monotonic() - t0
    assert r.status_code == 200, r.text
    assert r.json()["version"] == version  # the unchanged view once the wait runs out
    assert 1.4 <= held < 3.0, held

    for after in (version - 1, 0, -5):
        t0 = time.monotonic()
        r = api_a.request("GET", path, token=p.token, params={"wait": 10, "after": after})
        assert r.status_code == 200, r.text
        assert r.json()["version"] == version
        assert time.monotonic() - t0 < 0.5

    # without `after` there is nothing to wait for: answered at once
    t0 = time.monotonic()
    r = api_a.request("GET", path, token=p.token, params={"wait": 10})
    assert r.status_code == 200 and time.monotonic() - t0 < 0.5


def test_wait_is_capped_and_validated(api_a: Api) -> None:
    mid, players, joins = api_a.new_match(2, ruleset="classic", **NO_TIMEOUTS)
    path = f"/v1/matches/{mid}/view"
    for bad in ("61", "-1", "nan", "soon"):
        r = api_a.request("GET", path, token=players[0].token, params={"wait": bad})
        assert r.status_code == 422, (bad, r.status_code, r.text)
        assert r.json()["code"] == "invalid_request"


def test_if_none_match_gives_304(api_a: Api, api_b: Api) -> None:
    mid, players, joins = api_a.new_match(2, **SAFE_MATCH)
    p0, p1 = players
    path = f"/v1/matches/{mid}/view"
    r = api_a.request("GET", path, token=p1.token)
    version = r.json()["version"]
    etag = r.headers["ETag"]
    assert etag == f'"{version}"'

    for tag in (etag, f"W/{etag}", f"{etag}, \"{version - 1}\""):
        r = api_a.request("GET", path, token=p1.token, headers={"If-None-Match": tag})
        assert r.status_code == 304, (tag, r.status_code, r.text)
        assert r.content == b""
        assert r.headers["ETag"] == etag
    r = api_a.request("GET", path, token=p1.token, headers={"If-None-Match": f'"{version - 1}"'})
    assert r.status_code == 200 and r.json()["version"] == version

    # If-None-Match doubles as `after`: held, then 304 when nothing moved...
    t0 = time.monotonic()
    r = api_a.request("GET", path, token=p1.token, params={"wait": 1},
                      headers={"If-None-Match": etag})
    assert r.status_code == 304 and time.monotonic() - t0 >= 0.9
    # ...or the new view as soon as something does.
    poll = Poll(api_a.base, path, p1.token, {"wait": 10}, {"If-None-Match": etag})
    _parked(poll)
    moved = api_b.act(p0, mid, HANDMAID)
    acted_at = time.monotonic()
    resp = poll.result()
    assert resp.status_code == 200, resp.text
    assert resp.json()["version"] == moved["version"] == version + 1
    assert resp.headers["ETag"] == f'"{version + 1}"'
    assert poll.returned_at - acted_at < WAKE_BUDGET_S


def test_finished_match_never_holds(api_a: Api) -> None:
    mid, players, joins = api_a.new_match(2, ruleset="classic", tokens_to_win=1, **NO_TIMEOUTS)
    api_a.ok(api_a.request("POST", f"/v1/matches/{mid}/resign", token=players[0].token))
    v = api_a.view(players[1], mid)
    assert v["status"] == "finished"
    t0 = time.monotonic()
    r = api_a.request("GET", f"/v1/matches/{mid}/view", token=players[1].token,
                      params={"wait": 5, "after": v["version"] + 100})
    assert r.status_code == 200 and time.monotonic() - t0 < 0.5


# --------------------------------------------------------------------------- /v1/me/events


def _notices_via_longpoll(base: str, token: str, stop: threading.Event,
                          out: list[dict[str, Any]], polls: list[str | None]) -> None:
    """Follow /v1/me/events the way a bot does: long-poll, remember the cursor, repeat, until
    a match_finished notice arrives."""
    s = requests.Session()
    s.headers["Authorization"] = f"Bearer {token}"
    cursor: str | None = None
    try:
        while not stop.is_set():
            params: dict[str, Any] = {"wait": 5}
            if cursor is not None:
                params["after"] = cursor
            polls.append(cursor)
            r = s.get(base + "/v1/me/events", params=params, timeout=30)
            assert r.status_code == 200, r.text
            body = r.json()
            out.extend(body["events"])
            if body["events"]:
                assert body["cursor"] == body["events"][-1]["cursor"]
            else:
                assert body["cursor"] == (cursor or "0-0")
            cursor = body["cursor"]
            if any(n["type"] == "match_finished" for n in body["events"]):
                return
    finally:
        s.close()


def _cursor_key(c: str) -> tuple[int, int]:
    ms, seq = c.split("-")
    return int(ms), int(seq)


def test_me_events_follow_a_whole_match_without_gaps(servers: tuple[ApiServer, ApiServer],
                                                     api_a: Api, api_b: Api,
                                                     redis_server: RedisProcess) -> None:
    players = [api_a.register("ev0"), api_a.register("ev1")]
    stop = threading.Event()
    got: list[list[dict[str, Any]]] = [[], []]
    polls: list[list[str | None]] = [[], []]
    threads = [threading.Thread(target=_notices_via_longpoll,
                                args=(servers[0].url, p.token, stop, got[i], polls[i]),
                                daemon=True) for i, p in enumerate(players)]
    for t in threads:
        t.start()
    time.sleep(0.2)

    # Every version at which it is seat s's turn, from the answers of the moves (server B).
    turn_versions: list[list[int]] = [[], []]

    def note(v: dict[str, Any]) -> None:
        if v["status"] == "active":
            turn_versions[v["turn"]["seat"]].append(v["version"])

    mid = api_b.create(players[0], seats=2, ruleset="classic", tokens_to_win=2,
                       **NO_TIMEOUTS)["match_id"]
    api_b.join(players[0], mid)
    started = api_b.join(players[1], mid)
    note(started)
    play_randomly(api_b, mid, players, random.Random(11), started,
                  on_action=lambda seat, action, v: note(v))
    for t in threads:
        t.join(30)
    stop.set()
    assert not any(t.is_alive() for t in threads), "a notice poller never saw match_finished"

    r = redis_server.client()
    try:
        for i, p in enumerate(players):
            notices = got[i]
            cursors = [n["cursor"] for n in notices]
            # no duplicates, in order, and exactly the player's whole inbox (no gaps)
            assert len(set(cursors)) == len(cursors)
            assert cursors == sorted(cursors, key=_cursor_key)
            stream = r.xrange(f"ll:p:{p.id}:inbox")
            assert cursors == [eid.decode() for eid, _ in stream]
            for n, (_, fields) in zip(notices, stream, strict=True):
                assert {k: v for k, v in n.items() if k != "cursor"} == json.loads(fields[b"n"])
            types = [n["type"] for n in notices]
            assert types[0] == "match_started" and types[-1] == "match_finished", types
            assert types.count("match_started") == 1 and types.count("match_finished") == 1
            assert all(n["match_id"] == mid and n["seat"] == i for n in notices)
            assert [n["version"] for n in notices if n["type"] == "your_turn"] == \
                turn_versions[i]
            assert notices[-1]["winners"] == api_a.summary(mid)["result"]["winners"]
            # it was a long-poll, not a busy loop: few polls for many notices
            assert len(polls[i]) <= len(notices) + 1

            # Resuming from any cursor gives exactly what came after it.
            for k in sorted({0, len(notices) // 2, len(notices) - 2}):
                resumed = api_a.ok(api_a.request("GET", "/v1/me/events", token=p.token,
                                                 params={"after": cursors[k]}))
                assert resumed["events"] == notices[k + 1:k + 101]
                assert resumed["cursor"] == cursors[min(k + 100, len(cursors) - 1)]
            # ...and from the last one, nothing (at once, or after the wait runs out).
            t0 = time.monotonic()
            tail = api_a.ok(api_a.request("GET", "/v1/me/events", token=p.token,
                                          params={"after": cursors[-1], "wait": 0.5}))
            assert tail == {"events": [], "cursor": cursors[-1]}
            assert time.monotonic() - t0 >= 0.45
    finally:
        r.close()


def test_me_events_poller_woken_across_processes(api_a: Api, api_b: Api) -> None:
    mid, players, joins = api_a.new_match(2, **SAFE_MATCH)
    p0, p1 = players
    head = api_a.ok(api_a.request("GET", "/v1/me/events", token=p1.token))["cursor"]
    poll = Poll(api_a.base, "/v1/me/events", p1.token, {"wait": 10, "after": head})
    _parked(poll)
    moved = api_b.act(p0, mid, HANDMAID)
    acted_at = time.monotonic()
    resp = poll.result()
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert [n["type"] for n in body["events"]] == ["your_turn"]
    n = body["events"][0]
    assert (n["match_id"], n["seat"], n["version"]) == (mid, 1, moved["version"])
    assert body["cursor"] == n["cursor"]
    assert poll.returned_at - acted_at < WAKE_BUDGET_S


def test_me_events_rejects_bad_cursor(api_a: Api) -> None:
    p: Player = api_a.register("cur")
    top = 2**64 - 1
    for bad in ("abc", "1-", "-1-2", "1-2-3", f"{top + 1}-0", f"0-{top + 1}", "9" * 40 + "-8"):
        r = api_a.request("GET", "/v1/me/events", token=p.token, params={"after": bad})
        assert r.status_code == 422, (bad, r.text)
        assert r.json()["code"] == "invalid_request"
    # the largest id Redis knows: valid, and nothing comes after it
    for last in (f"{top}-{top}", f"{top}-0"):
        r = api_a.request("GET", "/v1/me/events", token=p.token, params={"after": last})
        assert r.status_code == 200, r.text
        assert r.json() == {"events": [], "cursor": last}


def test_me_events_with_views_carry_the_view_on_each_matchs_newest_notice(api_a: Api) -> None:
    mid, players, _ = api_a.new_match(2, **SAFE_MATCH)
    p0, p1 = players
    api_a.act(p0, mid, HANDMAID)
    plain = api_a.ok(api_a.request("GET", "/v1/me/events", token=p1.token))
    assert [n["type"] for n in plain["events"]] == ["match_started", "your_turn"]
    assert all("view" not in n for n in plain["events"])
    body = api_a.ok(api_a.request("GET", "/v1/me/events", token=p1.token,
                                  params={"views": "true"}))
    started, turn = body["events"]
    assert "view" not in started  # only the newest notice of the match
    view = api_a.ok(api_a.request("GET", f"/v1/matches/{mid}/view", token=p1.token))
    assert turn["view"] == {**view, "turn": {**view["turn"],
                                             "seconds_left": turn["view"]["turn"]["seconds_left"]}}
    assert turn["view"]["seat"] == 1 and turn["view"]["legal_actions"]
    # the mover's own notices: its view shows it is not its turn now
    mine = api_a.ok(api_a.request("GET", "/v1/me/events", token=p0.token,
                                  params={"views": "true"}))
    assert mine["events"][-1]["view"]["legal_actions"] == []


def test_client_gone_tells_an_open_connection_from_a_closed_one_past_descriptor_1023() -> None:
    """A process holding a thousand polls hands out descriptors above 1023, which select()
    refuses: such a poll must not be taken for gone (it was, ending 5,000 polls after 2 s)."""
    import resource
    import socket

    from service.realtime.longpoll import client_gone

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip("this process may not open 1,200 files")
    if soft != resource.RLIM_INFINITY and soft < 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1200, hard))
    filler = [socket.socket() for _ in range(1100)]
    try:
        server_side, client_side = socket.socketpair()
        assert server_side.fileno() > 1023
        environ = {"gunicorn.socket": server_side}
        assert not client_gone(environ)  # open, nothing sent
        client_side.sendall(b"GET / HTTP/1.1\r\n")
        assert not client_gone(environ)  # a pipelined request waits: still there
        assert server_side.recv(100)
        client_side.close()
        assert client_gone(environ)
        assert server_side.fileno() >= 0  # the check left the socket open
        server_side.close()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        for s in filler:
            s.close()
