"""Concurrency over HTTP: a move is one compare-and-set in Redis; a lost race is a 409, never a
merge, and matches played side by side never mix.

The server runs 2 gunicorn workers (gevent), so requests really overlap, across processes too.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests

from service import engine
from tests.support.apiclient import (
    NO_TIMEOUTS,
    Api,
    Player,
    actions_from_record,
    error_of,
    norm_events,
    replay,
)
from tests.support.server import ApiServer

# Run on a single Redis and on a 3-master Redis Cluster (tests/conftest.py).
ON_CLUSTER = True

API_WORKERS = 2

RACERS = 50


@pytest.fixture
def api(api_server: ApiServer) -> Iterator[Api]:
    client = Api(api_server.url)
    yield client
    client.close()


def race(url: str, n: int, send: Callable[[requests.Session], requests.Response],
         ) -> list[requests.Response]:
    """``n`` threads, each with its own warmed-up connection, send at the same moment."""
    sessions = []
    for _ in range(n):
        s = requests.Session()
        s.trust_env = False
        assert s.get(url + "/healthz", timeout=10).status_code == 200  # open the connection
        sessions.append(s)
    barrier = threading.Barrier(n)

    def go(s: requests.Session) -> requests.Response:
        barrier.wait(timeout=30)
        return send(s)

    try:
        with ThreadPoolExecutor(n) as pool:
            return list(pool.map(go, sessions))
    finally:
        for s in sessions:
            s.close()


def poster(url: str, action: dict[str, Any], player: Player,
           headers: dict[str, str] | None = None) -> Callable[[requests.Session],
                                                              requests.Response]:
    def send(s: requests.Session) -> requests.Response:
        return s.post(url, json=action, timeout=60,
                      headers={"Authorization": f"Bearer {player.token}", **(headers or {})})

    return send


# 2019, 4 players, seat 0 first: seat 0 plays the countess, seats 1 and 2 a handmaid, seat 3 a
# priest at seat 0 (the only seat not protected), then seat 0 the spy.
RACE_DECK = [
    "princess",                                   # set aside
    "spy", "handmaid", "handmaid", "priest",      # dealt to seats 0, 1, 2, 3
    "countess", "spy", "guard", "guard",          # drawn by seats 0, 1, 2, 3
    "guard", "guard", "guard", "guard", "priest", "baron", "baron", "prince", "prince",
    "chancellor", "chancellor", "king",
]


def test_fifty_threads_post_the_same_move_exactly_one_is_applied(api: Api,
                                                                 api_server: ApiServer) -> None:
    mid, players, joins = api.new_match(4, prefix="race", ruleset="2019", seed="race",
                                        first_seat=0, deck=RACE_DECK, **NO_TIMEOUTS)
    assert joins[-1]["turn"]["seat"] == 0
    api.act(players[0], mid, {"type": "play", "card": "countess"})
    # Each of these is legal exactly once: after it the turn passes to the next seat.
    script: list[tuple[int, dict[str, Any]]] = [
        (1, {"type": "play", "card": "handmaid"}),
        (2, {"type": "play", "card": "handmaid"}),
        (3, {"type": "play", "card": "priest", "target": 0}),
    ]
    for seat, action in script:
        before = api.summary(mid)
        assert before["turn"]["seat"] == seat
        assert action in api.view(players[seat], mid)["legal_actions"]
        answers = race(api_server.url, RACERS, poster(
            f"{api_server.url}/v1/matches/{mid}/actions", action, players[seat]))
        statuses = sorted(r.status_code for r in answers)
        assert statuses.count(200) == 1, statuses
        assert statuses.count(409) == RACERS - 1, statuses
        codes = {error_of(r)["code"] for r in answers if r.status_code == 409}
        assert codes <= {"version_conflict", "not_your_turn"}, codes
        winner = next(r for r in answers if r.status_code == 200).json()
        assert winner["version"] == before["version"] + 1
        after = api.summary(mid)
        assert after["version"] == before["version"] + 1
        plays = [e for e in after["events"] if e["type"] == "play" and e["seat"] == seat]
        assert len(plays) == 1 and plays[0]["card"] == action["card"], plays
        assert after["turn"]["seat"] == (seat + 1) % 4

    # The same race with one Idempotency-Key: every racer gets the one answer, applied once.
    before = api.summary(mid)
    assert before["turn"]["seat"] == 0
    spy: dict[str, Any] = {"type": "play", "card": "spy"}
    answers = race(api_server.url, RACERS, poster(
        f"{api_server.url}/v1/matches/{mid}/actions", spy, players[0],
        {"Idempotency-Key": "race-spy-1"}))
    assert sorted({r.status_code for r in answers}) == [200], [r.text for r in answers][:3]
    assert len({r.text for r in answers}) == 1
    after = api.summary(mid)
    assert after["version"] == before["version"] + 1
    assert len([e for e in after["events"] if e["type"] == "play" and e["card"] == "spy"]) == 1

    # The engine agrees with what was stored: replay the four accepted moves.
    state = replay({"ruleset": "2019", "seats": 4, "seed": "race", "first_seat": 0,
                    "deck": RACE_DECK},
                   [{"type": "play", "card": "countess"}] + [a for _, a in script] + [spy])
    assert api.events(mid, token=players[0].token)["events"] == \
        norm_events([e.to_dict() for e in state.events if e.visible_to(0)])


def test_twenty_players_race_for_the_last_seat_exactly_one_sits(api: Api,
                                                                 api_server: ApiServer) -> None:
    first = api.register("seat0")
    created = api.create(first, ruleset="classic", seats=2, seed="join-race", **NO_TIMEOUTS)
    mid = created["match_id"]
    api.join(first, mid)
    rivals = [api.register(f"rival{i}") for i in range(20)]
    it = iter(rivals)
    lock = threading.Lock()

    def join(s: requests.Session) -> requests.Response:
        with lock:
            p = next(it)
        return s.post(f"{api_server.url}/v1/matches/{mid}/join", timeout=60,
                      headers={"Authorization": f"Bearer {p.token}"})

    answers = race(api_server.url, len(rivals), join)
    ok = [r for r in answers if r.status_code == 200]
    assert len(ok) == 1, sorted(r.status_code for r in answers)
    assert all(r.status_code == 409 and error_of(r)["code"] in ("match_full", "version_conflict")
               for r in answers if r.status_code != 200)
    summary = api.summary(mid)
    assert summary["status"] == "active" and summary["version"] == created["version"] + 2
    seated = [p["player_id"] for p in summary["players"]]
    assert seated == [first.id, ok[0].json()["players"][1]["player_id"]]
    assert seated[1] in {p.id for p in rivals}


# --------------------------------------------------------------------------- 20 matches at once

CONCURRENT_MATCHES = 20
CONFIGS = [("classic", 2), ("classic", 3), ("classic", 4), ("2019", 2), ("2019", 3),
           ("2019", 4), ("2019", 5), ("2019", 6), ("2019-classic", 3), ("2019-classic", 4)]


def seat_loop(base_url: str, mid: str, me: Player, seat: int, rng: random.Random,
              start: threading.Barrier, posted: list[dict[str, Any]]) -> None:
    """One player: long-poll my view; when it's my turn post a random legal action."""
    api = Api(base_url)
    view = f"/v1/matches/{mid}/view"
    try:
        start.wait(timeout=60)
        v = api.ok(api.request("GET", view, token=me.token))
        for _ in range(5000):
            assert v["seat"] == seat
            if v["status"] == "finished":
                return
            if v["turn"] and v["turn"]["seat"] == seat:
                # my turn (again, after a round I won or a chancellor): act on this view
                assert v["legal_actions"], v
                action = rng.choice(v["legal_actions"])
                v = api.act(me, mid, action)
                posted.append({"version": v["version"], "seat": seat, "action": action})
            else:
                assert v["legal_actions"] == []
                v = api.ok(api.request("GET", view, token=me.token,
                                       params={"wait": 10, "after": v["version"]}))
        raise AssertionError(f"seat {seat} of {mid}: no end after 5000 polls")
    finally:
        api.close()


def test_twenty_matches_at_once_each_equals_the_replay_of_its_own_log(
        api: Api, api_server: ApiServer) -> None:
    rng = random.Random("twenty")
    matches = []
    for i in range(CONCURRENT_MATCHES):
        ruleset, seats = CONFIGS[i % len(CONFIGS)]
        options: dict[str, Any] = {"ruleset": ruleset, "seed": f"twenty-{i}",
                                   "tokens_to_win": rng.choice([1, 2, 3]), **NO_TIMEOUTS}
        if rng.random() < 0.3:
            options["first_seat"] = rng.randrange(seats)
        mid, players, _ = api.new_match(seats, prefix=f"tw{i}", **options)
        matches.append((mid, players, {**options, "seats": seats}))

    # every seat of every match in its own thread; all start together
    threads = sum(len(p) for _, p, _ in matches)
    start = threading.Barrier(threads)
    posted: dict[str, list[dict[str, Any]]] = {mid: [] for mid, _, _ in matches}
    with ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(seat_loop, api_server.url, mid, p, seat,
                               random.Random(f"{mid}:{seat}"), start, posted[mid])
                   for mid, players, _ in matches for seat, p in enumerate(players)]
        for f in futures:
            f.result(timeout=240)

    for mid, players, options in matches:
        summary = api.summary(mid)
        assert summary["status"] == "finished", mid
        record = api.events(mid)  # the full record, with every event's audience
        events = record["events"]
        actions = actions_from_record(events)
        # what the players posted, in version order, is exactly what the log holds
        mine = [p["action"] for p in sorted(posted[mid], key=lambda p: p["version"])]
        assert actions == mine, mid
        assert [p["version"] for p in sorted(posted[mid], key=lambda p: p["version"])] == \
            list(range(2 + len(players), 2 + len(players) + len(mine)))
        # the stored match is the replay of its own log from its seed: nothing lost or merged
        assert summary["options"]["seed"] == options["seed"]
        state = replay({**summary["options"]}, actions)
        assert state.status == engine.FINISHED
        assert events == norm_events([e.to_dict(with_audience=True) for e in state.events])
        assert summary["result"]["winners"] == state.winners
        assert summary["result"]["tokens"] == state.tokens
        assert summary["result"]["placings"] == engine.placings(state)
        assert summary["version"] == 1 + len(players) + len(actions)
        assert [p["player_id"] for p in summary["players"]] == [p.id for p in players]
        for seat, p in enumerate(players):
            v = api.view(p, mid)
            assert v["result"] == summary["result"] and v["seat"] == seat
