"""Complete matches over HTTP against the real app (gunicorn) on a private Redis.

Each match is played to its end by the players themselves: the player to act reads their view and
posts one of its ``legal_actions`` back verbatim. At the end the result must be shown in every
player's view and in the public summary, and must be the engine's result for the same seed and
actions.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from service import engine
from tests.support.apiclient import (
    NO_TIMEOUTS,
    Api,
    Player,
    actions_from_record,
    error_of,
    play_randomly,
    replay,
)

# Run on a single Redis and on a 3-master Redis Cluster (tests/conftest.py).
ON_CLUSTER = True


@pytest.mark.parametrize(("ruleset", "seats", "seed"), [
    ("classic", 2, "play-classic-2"),
    ("2019", 4, "play-2019-4"),
    ("2019", 6, "play-2019-6"),
])
def test_complete_match_to_the_end(api: Api, ruleset: str, seats: int, seed: str) -> None:
    rng = random.Random(seed)
    options: dict[str, Any] = {"ruleset": ruleset, "seed": seed, **NO_TIMEOUTS}
    mid, players, joins = api.new_match(seats, prefix=f"pl{seats}", **options)
    tokens_to_win = engine.get_ruleset(ruleset).tokens_to_win(seats)
    assert joins[-1]["tokens_to_win"] == tokens_to_win  # the ruleset's own table (R1, R2)

    actions = play_randomly(api, mid, players, rng, joins[-1])

    # The engine, given the same options and actions, reaches the same end.
    state = replay({**options, "seats": seats}, actions)
    assert state.status == engine.FINISHED
    assert max(state.tokens) >= tokens_to_win
    want: dict[str, Any] = {"winners": state.winners, "placings": engine.placings(state),
            "tokens": state.tokens, "rounds": len(state.rounds)}

    public = api.summary(mid)
    assert public["status"] == "finished"
    assert public["turn"] is None
    assert public["result"] == want
    assert public["options"]["seed"] == seed  # revealed once the match is over
    for seat, p in enumerate(players):
        v = api.view(p, mid)
        assert v["seat"] == seat
        assert v["status"] == "finished"
        assert v["result"] == want, (seat, v["result"], want)
        assert v["legal_actions"] == [] and v["turn"] is None
        assert [q["tokens"] for q in v["players"]] == state.tokens
        won = seat in want["winners"]
        assert (want["placings"][seat] == 1) == won
        assert (v["players"][seat]["tokens"] >= tokens_to_win) == won
    # The full record replays to the same result (the actions are in the event log).
    record = api.events(mid)
    assert actions_from_record(record["events"]) == actions
    assert record["events"][-1]["type"] == "match_end"
    assert record["events"][-1]["winners"] == want["winners"]

    # The match is over: nothing more can be played.
    winner = players[want["winners"][0]]
    r = api.post_action(winner, mid, {"type": "play", "card": "guard"})
    assert r.status_code == 409 and error_of(r)["code"] == "match_not_active"
    # And it is listed as finished, with its winners.
    listed = api.ok(api.request("GET", "/v1/me/matches", token=players[0].token))["matches"]
    mine = [m for m in listed if m["match_id"] == mid]
    assert mine and mine[0]["status"] == "finished" and mine[0]["winners"] == want["winners"]


def test_walkthrough_register_create_join_view_act(api: Api) -> None:
    """The curl walkthrough of docs/protocol.md, step by step: register two players, create a classic
    2-player match, join, view, act."""
    # register: the token is shown once
    r = api.request("POST", "/v1/players", json={"name": f"alice-{random.randrange(10**9)}"})
    assert r.status_code == 201, r.text
    alice = r.json()
    assert set(alice) >= {"id", "name", "token"}
    r = api.request("POST", "/v1/players", json={"name": f"bob-{random.randrange(10**9)}"})
    assert r.status_code == 201, r.text
    bob = r.json()
    assert alice["token"] != bob["token"]
    profile = api.ok(api.request("GET", f"/v1/players/{alice['id']}"))
    assert profile["name"] == alice["name"] and "token" not in profile
    me = api.ok(api.request("GET", "/v1/me", token=alice["token"]))
    assert me["id"] == alice["id"]

    # create: a waiting match, nobody seated yet
    r = api.request("POST", "/v1/matches", token=alice["token"],
                    json={"ruleset": "classic", "seats": 2, "turn_timeout_s": 3600,
                          "timeout_policy": "auto"})
    assert r.status_code == 201, r.text
    created = r.json()
    mid = created["match_id"]
    assert r.headers["Location"].endswith(f"/v1/matches/{mid}")
    assert created["status"] == "waiting" and created["ruleset"] == "classic"
    assert "seed" not in created["options"]  # a server-chosen seed stays secret while it runs

    # join: seats in join order; the last seat starts the match
    va = api.ok(api.request("POST", f"/v1/matches/{mid}/join", token=alice["token"]))
    assert va["seat"] == 0 and va["status"] == "waiting" and va["hand"] == []
    vb = api.ok(api.request("POST", f"/v1/matches/{mid}/join", token=bob["token"]))
    assert vb["seat"] == 1 and vb["status"] == "active" and vb["round"] == 1
    assert [p["name"] for p in vb["players"]] == [alice["name"], bob["name"]]
    assert len(vb["face_up"]) == 3  # R6: 3 face-up cards with 2 players

    # view: the player to act holds 2 cards and has legal actions; the other holds 1, has none
    views = {t["id"]: api.ok(api.request("GET", f"/v1/matches/{mid}/view", token=t["token"]))
             for t in (alice, bob)}
    turn_seat = vb["turn"]["seat"]
    actor = (alice, bob)[turn_seat]
    other = (alice, bob)[1 - turn_seat]
    va, vo = views[actor["id"]], views[other["id"]]
    assert va["turn"]["seat"] == turn_seat and va["turn"]["deadline"]
    assert len(va["hand"]) == 2 and va["legal_actions"]
    assert len(vo["hand"]) == 1 and vo["legal_actions"] == []
    assert va["deck_count"] == vo["deck_count"] == 16 - 1 - 3 - 2 - 1

    # act: post a legal action back verbatim; the answer is the actor's new view
    action = va["legal_actions"][0]
    r = api.request("POST", f"/v1/matches/{mid}/actions", token=actor["token"], json=action)
    assert r.status_code == 200, r.text
    after = r.json()
    assert after["version"] == va["version"] + 1
    assert r.headers["ETag"] == f'"{after["version"]}"'
    assert after["legal_actions"] == [] or after["round"] == 2 or after["status"] == "finished"
    plays = [e for e in after["events"] if e["type"] == "play"]
    if after["round"] == 1:
        assert plays and plays[-1]["seat"] == turn_seat and plays[-1]["card"] == action["card"]

    # the public summary shows the same public facts, and no hand
    public = api.summary(mid)
    assert public["version"] == after["version"]
    assert "hand" not in public and "known" not in public and "legal_actions" not in public
    assert [p["tokens"] for p in public["players"]] == [p["tokens"] for p in after["players"]]

    # finish the match; the engine, given the seed (revealed at the end) and the same actions,
    # reaches the same result
    rng = random.Random(mid)
    players = [Player(d["id"], d["name"], d["token"]) for d in (alice, bob)]
    rest = play_randomly(api, mid, players, rng, after)
    final = api.summary(mid)
    state = replay({**final["options"]}, [action, *rest])
    assert final["result"]["winners"] == state.winners
    assert final["result"]["tokens"] == state.tokens

