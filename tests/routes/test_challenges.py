"""Challenges over HTTP against the real app (gunicorn) on a private Redis: every path (make,
accept, decline, cancel, expire, list), every refusal with its stable code (and no change of
state when refused), notices on /v1/me/events, who is online, and players' kinds."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest
import requests

from tests.support.apiclient import NO_TIMEOUTS, Api, Player, error_of, play_randomly

# Run on a single Redis and on a 3-master Redis Cluster (tests/conftest.py).
ON_CLUSTER = True


def challenge(api: Api, me: Player, opponents: list[str], **options: Any) -> requests.Response:
    return api.request("POST", "/v1/challenges", token=me.token,
                       json={"opponents": opponents, **options})


def make(api: Api, me: Player, opponents: list[str], **options: Any) -> dict[str, Any]:
    return api.ok(challenge(api, me, opponents, **options), 201)


def answer(api: Api, who: Player, cid: str, what: str) -> requests.Response:
    return api.request("POST", f"/v1/challenges/{cid}/{what}", token=who.token)


def notices(api: Api, who: Player, **params: Any) -> list[dict[str, Any]]:
    return api.ok(api.request("GET", "/v1/me/events", token=who.token,
                              params=params))["events"]


def mine(api: Api, who: Player) -> dict[str, Any]:
    return api.ok(api.request("GET", "/v1/me/challenges", token=who.token))


def refused(resp: requests.Response, status: int, code: str) -> dict[str, Any]:
    body = error_of(resp)
    assert (resp.status_code, body["code"]) == (status, code), (resp.status_code, body)
    return body


# --------------------------------------------------------------------------- the paths


def test_all_accept_starts_the_match_seated_by_the_seed(api: Api) -> None:
    a, b, c = (api.register(f"ch{i}") for i in range(3))
    seed = "challenge-seats-1"
    ch = make(api, a, [b.name, c.id], ruleset="2019", seed=seed, turn_timeout_s=600,
              tokens_to_win=2)
    cid = ch["challenge_id"]
    assert ch["status"] == "open" and ch["match_id"] is None and ch["rated"] is False
    assert ch["challenger"] == {"id": a.id, "name": a.name, "kind": "bot"}
    assert [(o["id"], o["answer"]) for o in ch["opponents"]] == [(b.id, "pending"),
                                                                 (c.id, "pending")]
    assert ch["options"]["seats"] == 3 and ch["options"]["seed"] == seed
    assert 0 < ch["seconds_left"] <= 120 and ch["expires_at"] > ch["created_at"]

    # each challenged player hears of it; the challenger hears nothing of its own act
    for p in (b, c):
        (n,) = notices(api, p)
        assert n["type"] == "challenge" and n["challenge_id"] == cid
        assert n["challenge"]["challenger"]["name"] == a.name and n["match_id"] is None
    assert notices(api, a) == []

    after = answer(api, b, cid, "accept")
    one = api.ok(after)
    assert one["status"] == "open" and one["opponents"][0]["answer"] == "accepted"
    (upd,) = notices(api, a)
    assert upd["type"] == "challenge_update" and upd["challenge"]["opponents"][0]["answer"] \
        == "accepted"

    done = api.ok(answer(api, c, cid, "accept"))
    assert done["status"] == "accepted" and done["closed_by"] == c.id
    mid = done["match_id"]
    assert mid
    summary = api.summary(mid)
    order = [a.id, b.id, c.id]
    random.Random(f"{seed}/seats").shuffle(order)  # seat order: random from the seed
    assert [p["player_id"] for p in summary["players"]] == order
    assert summary["status"] == "active" and summary["rated"] is False
    assert summary["options"]["turn_timeout_s"] == 600
    assert summary["options"]["tokens_to_win"] == 2
    # everyone is told the match started, the challenger and b also by an update
    for p in (a, b, c):
        types = [n["type"] for n in notices(api, p)]
        assert "match_started" in types, (p.name, types)
    assert any(n["type"] == "challenge_update" and n["match_id"] == mid
               for n in notices(api, a))
    # a repeated accept (a retry) changes nothing and answers the same
    again = api.ok(answer(api, c, cid, "accept"))
    assert again["match_id"] == mid and again["status"] == "accepted"
    assert api.ok(api.request("GET", f"/v1/challenges/{cid}", token=b.token))["match_id"] == mid
    mids = api.ok(api.request("GET", "/v1/me/matches", token=a.token))["matches"]
    assert [m["match_id"] for m in mids] == [mid]


def test_challenged_match_is_played_to_its_end(api: Api) -> None:
    a, b = api.register("chp"), api.register("chq")
    ch = make(api, a, [b.name], seed="to-the-end", seat_order=[b.id, a.id], **NO_TIMEOUTS)
    mid = api.ok(answer(api, b, ch["challenge_id"], "accept"))["match_id"]
    first = api.view(b, mid)
    assert first["seat"] == 0 and api.view(a, mid)["seat"] == 1  # the order given
    play_randomly(api, mid, [b, a], random.Random(1), first)
    assert api.summary(mid)["status"] == "finished"


def test_decline_closes_it_and_nothing_starts(api: Api) -> None:
    a, b, c = (api.register(f"dc{i}") for i in range(3))
    cid = make(api, a, [b.name, c.name])["challenge_id"]
    api.ok(answer(api, b, cid, "accept"))
    out = api.ok(answer(api, c, cid, "decline"))
    assert out["status"] == "declined" and out["closed_by"] == c.id and out["match_id"] is None
    assert [o["answer"] for o in out["opponents"]] == ["accepted", "declined"]
    assert api.ok(answer(api, c, cid, "decline"))["status"] == "declined"  # a repeat
    refused(answer(api, b, cid, "accept"), 409, "challenge_closed")
    refused(answer(api, b, cid, "decline"), 409, "challenge_closed")
    refused(answer(api, a, cid, "cancel"), 409, "challenge_closed")
    assert [n["challenge"]["status"] for n in notices(api, a)] == ["open", "declined"]
    assert api.ok(api.request("GET", "/v1/me/matches", token=a.token))["matches"] == []


def test_decline_after_accepting_while_open(api: Api) -> None:
    a, b, c = (api.register(f"da{i}") for i in range(3))
    cid = make(api, a, [b.name, c.name])["challenge_id"]
    api.ok(answer(api, b, cid, "accept"))
    out = api.ok(answer(api, b, cid, "decline"))
    assert out["status"] == "declined" and out["opponents"][0]["answer"] == "declined"
    refused(answer(api, c, cid, "accept"), 409, "challenge_closed")


def test_cancel_by_the_challenger_only(api: Api) -> None:
    a, b = api.register("ca"), api.register("cb")
    cid = make(api, a, [b.name])["challenge_id"]
    refused(answer(api, b, cid, "cancel"), 403, "not_challenger")
    refused(answer(api, a, cid, "accept"), 403, "not_challenged")
    refused(answer(api, a, cid, "decline"), 403, "not_challenged")
    assert api.ok(api.request("GET", f"/v1/challenges/{cid}", token=a.token))["status"] == "open"
    out = api.ok(answer(api, a, cid, "cancel"))
    assert out["status"] == "cancelled" and out["closed_by"] == a.id
    assert api.ok(answer(api, a, cid, "cancel"))["status"] == "cancelled"  # a repeat
    refused(answer(api, b, cid, "accept"), 409, "challenge_closed")
    types = [(n["type"], n["challenge"]["status"]) for n in notices(api, b)]
    assert types == [("challenge", "open"), ("challenge_update", "cancelled")]


def test_expired_challenge_refuses_answers(api: Api) -> None:
    a, b = api.register("ea"), api.register("eb")
    cid = make(api, a, [b.name], expires_in_s=1)["challenge_id"]
    time.sleep(1.2)
    refused(answer(api, b, cid, "accept"), 409, "challenge_expired")
    refused(answer(api, b, cid, "decline"), 409, "challenge_expired")
    refused(answer(api, a, cid, "cancel"), 409, "challenge_expired")
    got = api.ok(api.request("GET", f"/v1/challenges/{cid}", token=a.token))
    assert got["status"] == "expired" and got["closed_by"] is None and got["match_id"] is None
    assert got["seconds_left"] is None
    # the expiry was announced once, to both
    for p in (a, b):
        ups = [n for n in notices(api, p) if n["type"] == "challenge_update"]
        assert [n["challenge"]["status"] for n in ups] == ["expired"], ups


def test_listing_incoming_and_outgoing(api: Api) -> None:
    a, b, c = (api.register(f"li{i}") for i in range(3))
    one = make(api, a, [b.name])["challenge_id"]
    two = make(api, c, [a.name])["challenge_id"]
    lists = mine(api, a)
    assert [x["challenge_id"] for x in lists["outgoing"]] == [one]
    assert [x["challenge_id"] for x in lists["incoming"]] == [two]
    api.ok(answer(api, a, two, "decline"))
    lists = mine(api, a)  # recently closed ones are still listed, with their status
    assert [(x["challenge_id"], x["status"]) for x in lists["incoming"]] == [(two, "declined")]
    assert [x["challenge_id"] for x in mine(api, b)["incoming"]] == [one]
    theirs = mine(api, c)
    assert theirs["incoming"] == []
    assert [(x["challenge_id"], x["status"]) for x in theirs["outgoing"]] == [(two, "declined")]


def test_challenging_the_same_player_twice_while_open(api: Api) -> None:
    a, b, c = (api.register(f"tw{i}") for i in range(3))
    cid = make(api, a, [b.name])["challenge_id"]
    refused(challenge(api, a, [c.name, b.id]), 409, "already_challenged")
    assert [x["challenge_id"] for x in mine(api, a)["outgoing"]] == [cid]
    assert notices(api, c) == []  # refused: nobody was told
    api.ok(answer(api, a, cid, "cancel"))
    make(api, a, [b.name])
    make(api, b, [a.name])  # the other way round is another challenge


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"opponents": ["SELF"]}, 422, "challenge_self"),
    ({"opponents": ["SELF_ID"]}, 422, "challenge_self"),
    ({"opponents": ["nobody-here-at-all"]}, 422, "player_not_found"),
    ({"opponents": ["p_000000000000"]}, 422, "player_not_found"),
    ({"opponents": ["bad name!"]}, 422, "player_not_found"),
    ({"opponents": ["OTHER", "OTHER_ID"]}, 422, "duplicate_opponent"),
    ({"opponents": ["OTHER", "other_lower"]}, 422, "duplicate_opponent"),
    ({"opponents": []}, 422, "invalid_request"),
    ({"opponents": ["OTHER"] * 6}, 422, "invalid_request"),
    ({}, 422, "invalid_request"),
    ({"opponents": "OTHER"}, 422, "invalid_request"),
    ({"opponents": ["OTHER"], "seats": 3}, 422, "invalid_request"),
    ({"opponents": ["OTHER"], "ruleset": "chess"}, 422, "invalid_request"),
    ({"opponents": ["OTHER"], "deck": ["guard"]}, 422, "invalid_request"),
    ({"opponents": ["OTHER"], "seat_order": ["SELF_ID", "SELF_ID"]}, 422, "invalid_request"),
    ({"opponents": ["OTHER"], "seat_order": ["SELF_ID", "p_000000000000"]}, 422,
     "invalid_request"),
    ({"opponents": ["OTHER"], "expires_in_s": 0}, 422, "invalid_request"),
    ({"opponents": ["OTHER"], "expires_in_s": 10**30}, 422, "invalid_request"),
    ({"opponents": ["OTHER"], "turn_timeout_s": -1}, 422, "invalid_request"),
    ({"opponents": ["OTHER"], "rated": True}, 422, "invalid_request"),
    ({"opponents": ["\ud800"]}, 422, "player_not_found"),
])
def test_bad_challenges_are_refused_and_change_nothing(api: Api, body: dict[str, Any],
                                                       status: int, code: str) -> None:
    me, other = api.register("bad"), api.register("Bother")
    subst = {"SELF": me.name, "SELF_ID": me.id, "OTHER": other.name, "OTHER_ID": other.id,
             "other_lower": other.name.lower()}

    def fill(x: Any) -> Any:
        if isinstance(x, list):
            return [fill(y) for y in x]
        return subst.get(x, x) if isinstance(x, str) else x

    resp = api.request("POST", "/v1/challenges", token=me.token,
                       json={k: fill(val) for k, val in body.items()})
    refused(resp, status, code)
    assert mine(api, me) == {"incoming": [], "outgoing": []}
    assert mine(api, other) == {"incoming": [], "outgoing": []}
    assert notices(api, other) == []


def test_challenges_need_a_token(api: Api) -> None:
    other = api.register("tok")
    for method, path in (("POST", "/v1/challenges"), ("GET", "/v1/me/challenges"),
                         ("GET", "/v1/challenges/c_000000000000"),
                         ("POST", "/v1/challenges/c_000000000000/accept")):
        resp = api.request(method, path, json={"opponents": [other.name]},
                           headers={"Authorization": "Bearer llt_made-up"})
        refused(resp, 401, "unauthorized")
    assert mine(api, other) == {"incoming": [], "outgoing": []}


def test_outsiders_and_unknown_ids_get_404(api: Api) -> None:
    a, b, outsider = api.register("oa"), api.register("ob"), api.register("oc")
    cid = make(api, a, [b.name])["challenge_id"]
    for what in ("accept", "decline", "cancel"):
        refused(answer(api, outsider, cid, what), 404, "challenge_not_found")
    refused(api.request("GET", f"/v1/challenges/{cid}", token=outsider.token), 404,
            "challenge_not_found")
    for bogus in ("c_000000000000", "nope", "c_" + "f" * 200, "%00", "c_12345678901%C3%A9"):
        refused(api.request("GET", f"/v1/challenges/{bogus}", token=a.token), 404,
                "challenge_not_found")
        refused(answer(api, b, bogus, "accept"), 404, "challenge_not_found")
    got = api.ok(api.request("GET", f"/v1/challenges/{cid}", token=b.token))
    assert got["status"] == "open" and got["opponents"][0]["answer"] == "pending"


# --------------------------------------------------------------------------- kinds, online


def test_kind_on_register_profile_and_me(api: Api) -> None:
    name = f"person-{random.randrange(10**9)}"
    reg = api.ok(api.request("POST", "/v1/players", json={"name": name, "kind": "human"}), 201)
    assert reg["kind"] == "human"
    assert api.ok(api.request("GET", f"/v1/players/{reg['id']}"))["kind"] == "human"
    assert api.ok(api.request("GET", "/v1/me", token=reg["token"]))["kind"] == "human"
    bot = api.register("kindbot")
    assert api.ok(api.request("GET", f"/v1/players/{bot.id}"))["kind"] == "bot"
    bad = api.request("POST", "/v1/players", json={"name": name + "x", "kind": "cyborg"})
    refused(bad, 422, "invalid_request")
    refused(api.request("GET", f"/v1/players/{bad.json().get('id', 'p_x')}"), 404, "not_found")
    # a person may challenge a bot and be challenged
    ch = make(api, Player(reg["id"], name, reg["token"]), [bot.name])
    assert ch["challenger"]["kind"] == "human" and ch["opponents"][0]["kind"] == "bot"


def test_humans_stay_off_bot_ladders(api: Api) -> None:
    reg = api.ok(api.request("POST", "/v1/players", json={
        "name": f"human-{random.randrange(10**9)}", "kind": "human"}), 201)
    ladders = api.ok(api.request("GET", "/v1/ladders"))["ladders"]
    assert ladders and all(lad["humans"] is False for lad in ladders)
    name = ladders[0]["name"]
    refused(api.request("POST", f"/v1/ladders/{name}/entries", token=reg["token"]), 403,
            "ladder_bots_only")
    board = api.ok(api.request("GET", f"/v1/ladders/{name}"))["leaderboard"]
    assert reg["id"] not in {row["player_id"] for row in board}
    bot = api.register("ladbot")
    api.ok(api.request("POST", f"/v1/ladders/{name}/entries", token=bot.token))
    try:
        board = api.ok(api.request("GET", f"/v1/ladders/{name}"))["leaderboard"]
        assert {row["player_id"]: row["kind"] for row in board}[bot.id] == "bot"
    finally:  # later modules on this Redis fill the ladder with bots of their own
        api.ok(api.request("DELETE", f"/v1/ladders/{name}/entries", token=bot.token))


def test_who_is_online(api: Api) -> None:
    listener, lurker, laddered = (api.register(f"on{i}") for i in range(3))
    notices(api, listener, challenges="true")
    notices(api, lurker)  # polls, but neither answers challenges nor plays a ladder
    lad = api.ok(api.request("GET", "/v1/ladders"))["ladders"][0]["name"]
    api.ok(api.request("POST", f"/v1/ladders/{lad}/entries", token=laddered.token))
    notices(api, laddered)
    silent = api.register("on-silent")
    api.ok(api.request("POST", f"/v1/ladders/{lad}/entries", token=silent.token))  # never polls
    try:
        got = api.ok(api.request("GET", "/v1/players/online", params={"limit": 500}))
    finally:  # later modules on this Redis fill the ladder with bots of their own
        for p in (laddered, silent):
            api.ok(api.request("DELETE", f"/v1/ladders/{lad}/entries", token=p.token))
    rows = {row["id"]: row for row in got["players"]}
    assert rows[listener.id] == {"id": listener.id, "name": listener.name, "kind": "bot",
                                 "ladders": [], "accepts_challenges": True,
                                 "last_seen": rows[listener.id]["last_seen"]}
    assert rows[laddered.id]["ladders"] == [lad]
    assert rows[laddered.id]["accepts_challenges"] is False
    assert lurker.id not in rows and silent.id not in rows
    assert got["window_s"] == 5
    names = [row["name"].lower() for row in got["players"]]
    assert names == sorted(names)
    refused(api.request("GET", "/v1/players/online", params={"limit": 0}), 422,
            "invalid_request")
