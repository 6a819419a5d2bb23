"""Challenges can't be used as a weapon (issue 23, item 4), over HTTP against the real app
(gunicorn, 2 workers) on a private Redis, with the limits on: per challenger and per
challenger -> target (429 with Retry-After, nothing written), blocks (403 ``blocked``, no notice
reaches the blocker), ``accepts_challenges`` (403 ``challenges_off``, the online list), decline
reasons, and the inbox's 410 ``cursor_expired``."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import redis
import requests

from service.store import inbox
from tests.support.apiclient import NO_TIMEOUTS, Api, Player, error_of
from tests.support.redis_proc import RedisProcess

API_WORKERS = 2
# Run on a single Redis and on a 3-master Redis Cluster (tests/conftest.py).
ON_CLUSTER = True
# Limits on, but the API-wide one out of the way; windows of an hour so that a slow machine
# never sees one end mid-test (a window starts at the first challenge it counts).
API_ENV = {"RATE_LIMITS": "1", "RATE_LIMIT": "1000/second", "REGISTER_RATE_LIMIT": "off",
           "CHALLENGE_RATE_LIMIT": "10/hour;100/day", "CHALLENGE_PAIR_RATE_LIMIT": "3/hour"}


def challenge(api: Api, me: Player, *opponents: str) -> requests.Response:
    return api.request("POST", "/v1/challenges", token=me.token,
                       json={"opponents": list(opponents), "ruleset": "classic"})


def cancel(api: Api, me: Player, cid: str) -> None:
    api.ok(api.request("POST", f"/v1/challenges/{cid}/cancel", token=me.token))


def events(api: Api, who: Player, after: str | None = None) -> requests.Response:
    params = {} if after is None else {"after": after}
    return api.request("GET", "/v1/me/events", token=who.token, params=params)


def notices(api: Api, who: Player, after: str | None = None) -> list[dict[str, Any]]:
    return api.ok(events(api, who, after))["events"]


def refused(resp: requests.Response, status: int, code: str) -> dict[str, Any]:
    body = error_of(resp)
    assert (resp.status_code, body["code"]) == (status, code), (resp.status_code, body)
    return body


def test_a_challenge_flood_is_refused_and_no_match_notice_is_lost(api: Api) -> None:
    mid, (victim, other), _ = api.new_match(2, prefix="vic", ruleset="classic", **NO_TIMEOUTS)
    mine = [n for n in notices(api, victim) if n.get("match_id") == mid]
    assert mine and mine[0]["type"] == "match_started"
    attacker = api.register("spam")
    made = 0
    for _ in range(3):  # challenge + cancel, as fast as it goes: 3 to one target
        resp = challenge(api, attacker, victim.name)
        cancel(api, attacker, api.ok(resp, 201)["challenge_id"])
        made += 1
    flood = challenge(api, attacker, victim.id)  # by id: the same target
    body = refused(flood, 429, "rate_limited")
    assert "3/hour" in body["message"] and victim.name in body["message"]
    assert 1 <= int(flood.headers["Retry-After"]) <= 3600
    # nothing of the refused one reached the victim: 3 challenges, 3 cancellations
    got = notices(api, victim)
    kinds = [n["type"] for n in got if n.get("challenge_id")]
    assert kinds == ["challenge", "challenge_update"] * 3
    assert [n for n in got if n.get("match_id") == mid] == mine  # every match notice is there
    # the challenger's own budget: 10 in all, whoever the targets
    others = [api.register(f"t{i}") for i in range(8)]
    for target in others[:7]:
        api.ok(challenge(api, attacker, target.name), 201)
    over = challenge(api, attacker, others[7].name)
    assert "10/hour" in refused(over, 429, "rate_limited")["message"]
    assert notices(api, others[7]) == []
    # another challenger is not affected
    api.ok(challenge(api, api.register("fair"), victim.name), 201)


def test_a_blocked_players_challenges_never_reach_you(api: Api) -> None:
    me, pest, friend = (api.register(p) for p in ("blk", "pest", "friend"))
    before = api.ok(challenge(api, pest, me.name), 201)["challenge_id"]
    api.ok(events(api, me))  # (read: the blocked player's earlier notice)
    row = api.ok(api.request("POST", "/v1/me/blocks", token=me.token,
                             json={"player": pest.name}))
    assert row["id"] == pest.id and row["name"] == pest.name and row["blocked_at"] > 0
    again = api.ok(api.request("POST", "/v1/me/blocks", token=me.token,
                               json={"player": pest.id}))
    assert again == row  # blocking again is harmless
    listed = api.ok(api.request("GET", "/v1/me/blocks", token=me.token))["blocks"]
    assert [b["id"] for b in listed] == [pest.id]
    # its open challenge was declined when it was blocked
    closed = api.ok(api.request("GET", f"/v1/challenges/{before}", token=pest.token))
    assert closed["status"] == "declined" and closed["reason"] == "blocked"
    cursor = api.ok(events(api, me))["cursor"]
    body = refused(challenge(api, pest, me.name), 403, "blocked")
    assert me.name in body["message"]
    # with someone else named too: refused whole, nobody hears of it
    refused(challenge(api, pest, friend.name, me.name), 403, "blocked")
    assert notices(api, me, cursor) == [] and notices(api, friend) == []
    assert [c["challenge_id"] for c in api.ok(api.request(
        "GET", "/v1/me/challenges", token=pest.token))["outgoing"]] == [before]
    # bad input changes nothing
    refused(api.request("POST", "/v1/me/blocks", token=me.token, json={"player": me.id}),
            422, "invalid_request")
    refused(api.request("POST", "/v1/me/blocks", token=me.token, json={"player": "nob0dy"}),
            422, "player_not_found")
    refused(api.request("POST", "/v1/me/blocks", token=me.token, json={}), 422,
            "invalid_request")
    refused(api.request("POST", "/v1/me/blocks", json={"player": pest.id}), 401, "unauthorized")
    assert [b["id"] for b in api.ok(api.request("GET", "/v1/me/blocks",
                                                token=me.token))["blocks"]] == [pest.id]
    # unblocked: its challenges come through again
    resp = api.request("DELETE", f"/v1/me/blocks/{pest.id}", token=me.token)
    assert resp.status_code == 204 and resp.content == b""
    refused(api.request("DELETE", f"/v1/me/blocks/{pest.id}", token=me.token), 404,
            "not_found")
    api.ok(challenge(api, pest, me.name), 201)
    assert [n["type"] for n in notices(api, me, cursor)] == ["challenge"]


def test_challenges_off_refuses_every_challenge_and_shows_online(api: Api) -> None:
    me, them = api.register("off"), api.register("asker")
    assert api.ok(api.request("GET", "/v1/me", token=me.token))["accepts_challenges"] is True
    got = api.ok(api.request("PATCH", "/v1/me", token=me.token,
                             json={"accepts_challenges": False}))
    assert got["accepts_challenges"] is False and got["id"] == me.id
    assert api.ok(api.request("GET", "/v1/me", token=me.token))["accepts_challenges"] is False
    refused(challenge(api, them, me.name), 403, "challenges_off")
    assert notices(api, me) == []

    def online_row() -> dict[str, Any]:
        api.ok(api.request("GET", "/v1/me/events", token=me.token,
                           params={"challenges": "true"}))
        rows = api.ok(api.request("GET", "/v1/players/online"))["players"]
        return next(x for x in rows if x["id"] == me.id)

    assert online_row()["accepts_challenges"] is False  # polls for them, but turned them off
    for bad in ({}, {"accepts_challenges": "nope"}, {"accepts_challenges": None}):
        refused(api.request("PATCH", "/v1/me", token=me.token, json=bad), 422,
                "invalid_request")
    assert api.ok(api.request("GET", "/v1/me", token=me.token))["accepts_challenges"] is False
    api.ok(api.request("PATCH", "/v1/me", token=me.token, json={"accepts_challenges": True}))
    assert online_row()["accepts_challenges"] is True
    api.ok(challenge(api, them, me.name), 201)


def test_a_decline_reason_reaches_the_challenger(api: Api) -> None:
    a, b = api.register("rsn"), api.register("busy")
    cid = api.ok(challenge(api, a, b.name), 201)["challenge_id"]
    for bad in ("x" * 201, "", "\ud800", 7):
        refused(api.request("POST", f"/v1/challenges/{cid}/decline", token=b.token,
                            data=orjson.dumps({"reason": bad}) if bad != "\ud800" else
                            b'{"reason": "\\ud800"}',
                            headers={"Content-Type": "application/json"}),
                422, "invalid_request")
    assert api.ok(api.request("GET", f"/v1/challenges/{cid}", token=a.token))["status"] == "open"
    done = api.ok(api.request("POST", f"/v1/challenges/{cid}/decline", token=b.token,
                              json={"reason": "busy: try later"}))
    assert done["status"] == "declined" and done["reason"] == "busy: try later"
    (upd,) = notices(api, a)
    assert upd["type"] == "challenge_update" and upd["challenge"]["reason"] == "busy: try later"
    # without a body, as before
    cid = api.ok(challenge(api, a, b.name), 201)["challenge_id"]
    assert api.ok(api.request("POST", f"/v1/challenges/{cid}/decline",
                              token=b.token))["reason"] is None


def test_a_cursor_older_than_the_inbox_keeps_gets_410_cursor_expired(
        api: Api, redis_server: RedisProcess) -> None:
    me = api.register("late")
    mid, _, _ = api.new_match(2, prefix="late", ruleset="classic", **NO_TIMEOUTS)
    first = api.ok(events(api, me))
    cursor = first["cursor"]
    r: redis.Redis = redis_server.client()
    try:  # far more notices than are kept arrive while the bot is away
        pipe = r.pipeline()
        for i in range(inbox.MAXLEN + 300):
            pipe.xadd(inbox.key(me.id), {"n": orjson.dumps({"type": "your_turn",
                                                            "match_id": mid, "version": i})},
                      maxlen=inbox.MAXLEN, approximate=True)
        pipe.execute()
    finally:
        r.close()
    resp = events(api, me, cursor)
    assert resp.status_code == 410, resp.text
    body = resp.json()
    assert set(body) == {"status", "code", "message", "oldest_cursor"}
    assert body["status"] == 410 and body["code"] == "cursor_expired"
    assert "/v1/me/matches" in body["message"]
    oldest = body["oldest_cursor"]
    assert inbox.valid_cursor(oldest)
    kept = api.ok(events(api, me, oldest))["events"]
    assert kept and kept[0]["version"] >= 300 - 100  # (trimmed in whole stream nodes)
    assert events(api, me).status_code == 200  # from the oldest kept: always fine


@pytest.mark.parametrize("path", ["/v1/me/blocks", "/v1/me"])
def test_the_new_endpoints_want_a_token(api: Api, path: str) -> None:
    refused(api.request("GET", path), 401, "unauthorized")
