"""Bad input over HTTP: every refusal is the right 4xx with a JSON body ``{status, code,
message, errors?}``, never a 500, and leaves the stored match exactly as it was (public summary,
every seat's view and the event log compared before and after)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from tests.support.apiclient import NO_TIMEOUTS, Api, Player, error_of
from tests.support.server import ApiServer

# Classic, 2 players, seat 0 first. Set aside: princess; face up: 3 guards; seat 0 is dealt a
# guard and draws a handmaid; seat 1 holds a priest.
DECK = ["princess", "guard", "guard", "guard", "guard", "priest", "handmaid",
        "baron", "prince", "priest", "baron", "handmaid", "prince", "king", "countess", "guard"]
HIT = {"type": "play", "card": "guard", "target": 1, "guess": "priest"}  # ends round 1
BIG = 16 * 1024  # the server's MAX_BODY_BYTES default


@dataclass
class Game:
    api: Api
    mid: str
    players: list[Player]
    outsider: Player

    def snapshot(self) -> Any:
        """Everything anyone can read of the match (without the ticking seconds_left)."""
        def clean(v: dict[str, Any]) -> dict[str, Any]:
            if v.get("turn"):
                v["turn"].pop("seconds_left", None)
            return v

        return json.dumps({
            "summary": clean(self.api.summary(self.mid)),
            "views": [clean(self.api.view(p, self.mid)) for p in self.players],
            "events": self.api.events(self.mid)["events"],
            "events_0": self.api.events(self.mid, token=self.players[0].token)["events"],
        }, sort_keys=True)


@pytest.fixture(scope="module")
def mapi(api_server: ApiServer) -> Iterator[Api]:
    client = Api(api_server.url)
    yield client
    client.close()


def new_game(api: Api, **extra: Any) -> Game:
    mid, players, joins = api.new_match(2, prefix="bad", ruleset="classic", seed="bad-input",
                                        first_seat=0, deck=DECK, **NO_TIMEOUTS, **extra)
    assert joins[-1]["turn"]["seat"] == 0
    assert sorted(api.view(players[0], mid)["hand"]) == ["guard", "handmaid"]
    return Game(api, mid, players, api.register("outsider"))


@pytest.fixture(scope="module")
def game(mapi: Api) -> Game:
    return new_game(mapi)


@pytest.fixture(scope="module")
def finished(mapi: Api) -> Game:
    g = new_game(mapi, tokens_to_win=1)
    v = mapi.act(g.players[0], g.mid, HIT)
    assert v["status"] == "finished" and v["result"]["winners"] == [0]
    return g


def expect(resp: requests.Response, status: int, *codes: str) -> dict[str, Any]:
    assert resp.status_code == status, (resp.status_code, status, resp.text[:500])
    body = error_of(resp)
    if codes:
        assert body["code"] in codes, (body, codes)
    return body


def raw_post(api: Api, path: str, body: bytes | str | Iterator[bytes], token: str | None = None,
             content_type: str = "application/json", **kw: Any) -> requests.Response:
    headers = {"Content-Type": content_type}
    return api.request("POST", path, token=token, data=body, headers=headers, **kw)


def chunked(size: int) -> Iterator[bytes]:
    """A JSON body of about ``size`` bytes sent with Transfer-Encoding: chunked."""
    yield b'{"type": "play", "card": "handmaid", "pad": "'
    for _ in range(size // 1024):
        yield b"x" * 1024
    yield b'"}'


# --------------------------------------------------------------------------- actions

P0 = "p0"  # seat 0's token, the player to act
P1 = "p1"  # seat 1's token, waiting
OUT = "out"  # a registered player with no seat
NONE = "none"  # no Authorization header
BAD = "bad"  # a token nobody has

Case = tuple[str, Callable[[Game], requests.Response], int, tuple[str, ...]]


def act(who: str, body: Any = None, *, raw: bytes | str | Iterator[bytes] | None = None,
        headers: dict[str, str] | None = None, match: str | None = None,
        content_type: str = "application/json") -> Callable[[Game], requests.Response]:
    def send(g: Game) -> requests.Response:
        token = {P0: g.players[0].token, P1: g.players[1].token, OUT: g.outsider.token,
                 NONE: None, BAD: "llt_not-a-real-token"}[who]
        h = dict(headers or {})
        if token is not None:
            h["Authorization"] = f"Bearer {token}"
        path = f"/v1/matches/{match or g.mid}/actions"
        if raw is not None:
            h["Content-Type"] = content_type
            return g.api.s.post(g.api.base + path, data=raw, headers=h, timeout=30)
        return g.api.s.post(g.api.base + path, json=body, headers=h, timeout=30)

    return send


ACTION_CASES: list[Case] = [
    # malformed JSON
    ("truncated json", act(P0, raw='{"type": "play", "card": '), 400, ("malformed_json",)),
    ("trailing garbage", act(P0, raw='{"type": "play"} !'), 400, ("malformed_json",)),
    ("not utf-8", act(P0, raw=b'{"type": "\xff\xfe"}'), 400, ("malformed_json",)),
    ("single quotes", act(P0, raw="{'type': 'play'}"), 400, ("malformed_json",)),
    ("empty json body", act(P0, raw=""), 422, ("invalid_request",)),
    # not an object
    ("list body", act(P0, raw="[]"), 422, ("invalid_request",)),
    ("null body", act(P0, raw="null"), 422, ("invalid_request",)),
    ("string body", act(P0, raw='"play"'), 422, ("invalid_request",)),
    ("number body", act(P0, raw="42"), 422, ("invalid_request",)),
    # wrong types
    ("card is a number", act(P0, {"type": "play", "card": 4}), 422, ("invalid_request",)),
    ("target is a string", act(P0, {**HIT, "target": "1"}), 422, ("invalid_request",)),
    ("target is a float", act(P0, {**HIT, "target": 1.5}), 422, ("invalid_request",)),
    ("target is a bool", act(P0, {**HIT, "target": True}), 422, ("invalid_request",)),
    ("target is null", act(P0, {**HIT, "target": None}), 422, ("invalid_request",)),
    ("guess is a list", act(P0, {**HIT, "guess": ["priest"]}), 422, ("invalid_request",)),
    ("type is a number", act(P0, {"type": 1, "card": "handmaid"}), 422, ("invalid_request",)),
    ("bottom is a string", act(P0, {"type": "chancellor_return", "keep": "guard",
                                    "bottom": "handmaid"}), 422, ("invalid_request",)),
    ("expected_version is a string", act(P0, {"type": "play", "card": "handmaid",
                                              "expected_version": "4"}), 422,
     ("invalid_request",)),
    ("NaN target", act(P0, raw='{"type": "play", "card": "guard", "target": NaN}'), 422,
     ("invalid_request",)),
    ("huge target", act(P0, raw='{"type": "play", "card": "guard", "target": 1e999}'), 422,
     ("invalid_request",)),
    ("nested too deeply", act(P0, raw='{"type": ' + "[" * 5000 + "]" * 5000 + "}"), 400,
     ("malformed_json",)),
    # unknown names
    ("unknown card", act(P0, {"type": "play", "card": "joker"}), 422, ("invalid_request",)),
    ("unknown guess", act(P0, {**HIT, "guess": "joker"}), 422, ("invalid_request",)),
    ("card name in capitals", act(P0, {"type": "play", "card": "Handmaid"}), 422,
     ("invalid_request",)),
    ("unknown action type", act(P0, {"type": "pass"}), 422, ("invalid_request",)),
    ("unknown field", act(P0, {"type": "play", "card": "handmaid", "cheat": True}), 422,
     ("invalid_request",)),
    ("missing type", act(P0, {"card": "handmaid"}), 422, ("invalid_request",)),
    ("missing card", act(P0, {"type": "play"}), 422, ("malformed_action",)),
    ("play with keep", act(P0, {"type": "play", "card": "handmaid", "keep": "guard"}), 422,
     ("malformed_action",)),
    # cards that exist, but not in this ruleset or not in hand
    ("spy in classic", act(P0, {"type": "play", "card": "spy"}), 422, ("illegal_action",)),
    ("chancellor in classic", act(P0, {"type": "play", "card": "chancellor"}), 422,
     ("illegal_action",)),
    ("card not in hand", act(P0, {"type": "play", "card": "princess"}), 422,
     ("illegal_action",)),
    ("chancellor_return out of phase", act(P0, {"type": "chancellor_return", "keep": "guard",
                                                "bottom": ["handmaid"]}), 422,
     ("illegal_action",)),
    # out-of-range seats
    ("target above any seat", act(P0, {**HIT, "target": 9}), 422, ("invalid_request",)),
    ("negative target", act(P0, {**HIT, "target": -1}), 422, ("invalid_request",)),
    ("target beyond this match", act(P0, {**HIT, "target": 3}), 422, ("illegal_action",)),
    ("bigint target", act(P0, raw='{"type":"play","card":"guard","target":' + "9" * 40 +
                          ',"guess":"priest"}'), 422, ("invalid_request",)),
    # illegal targets or guesses
    ("guard at oneself", act(P0, {**HIT, "target": 0}), 422, ("illegal_action",)),
    ("guard names the guard", act(P0, {**HIT, "guess": "guard"}), 422, ("illegal_action",)),
    ("guard names a spy in classic", act(P0, {**HIT, "guess": "spy"}), 422,
     ("illegal_action",)),
    ("guard names a chancellor in classic", act(P0, {**HIT, "guess": "chancellor"}), 422,
     ("illegal_action",)),
    ("guard without a guess", act(P0, {"type": "play", "card": "guard", "target": 1}), 422,
     ("illegal_action",)),
    ("guard without a target", act(P0, {"type": "play", "card": "guard"}), 422,
     ("illegal_action",)),
    ("handmaid with a target", act(P0, {"type": "play", "card": "handmaid", "target": 1}),
     422, ("illegal_action",)),
    ("handmaid with a guess", act(P0, {"type": "play", "card": "handmaid", "guess": "king"}),
     422, ("illegal_action",)),
    # not your turn
    ("not your turn", act(P1, {"type": "play", "card": "priest", "target": 0}), 409,
     ("not_your_turn",)),
    ("not your turn, legal-looking", act(P1, HIT), 409, ("not_your_turn",)),
    # versions
    ("stale expected_version", act(P0, {**HIT, "expected_version": 1}), 409,
     ("version_conflict",)),
    # a stale If-Match keeps the code's meaning (version_conflict) with HTTP's 412 status, as
    # documented (docs/protocol.md, llsdk.errors)
    ("stale If-Match", act(P0, HIT, headers={"If-Match": '"1"'}), 412, ("version_conflict",)),
    ("garbage If-Match", act(P0, HIT, headers={"If-Match": "yesterday"}), 412,
     ("precondition_failed",)),
    ("Idempotency-Key too long", act(P0, HIT, headers={"Idempotency-Key": "k" * 129}), 422,
     ("invalid_request",)),
    # unknown match
    ("unknown match", act(P0, HIT, match="m_000000000000"), 404, ("not_found",)),
    ("odd match id", act(P0, HIT, match="..%2F..%2Fetc"), 404, ("not_found",)),
    ("long match id", act(P0, HIT, match="m_" + "a" * 300), 404, ("not_found",)),
    # auth
    ("missing token", act(NONE, HIT), 401, ("unauthorized",)),
    ("wrong token", act(BAD, HIT), 401, ("unauthorized",)),
    ("basic auth", act(NONE, HIT, headers={"Authorization": "Basic cDA6cGFzcw=="}), 401,
     ("unauthorized",)),
    ("empty bearer", act(NONE, HIT, headers={"Authorization": "Bearer "}), 401,
     ("unauthorized",)),
    ("not seated", act(OUT, HIT), 403, ("forbidden",)),
    # too large
    ("oversized body", act(P0, raw=json.dumps({**HIT, "pad": "x" * BIG})), 413,
     ("payload_too_large",)),
    ("oversized chunked body", act(P0, raw=chunked(2 * BIG)), 413, ("payload_too_large",)),
    # wrong media type: refused, whatever the body says
    ("text/plain body", act(P0, raw=json.dumps(HIT), content_type="text/plain"), 422,
     ("invalid_request",)),
    ("form body", act(P0, raw="type=play&card=handmaid",
                      content_type="application/x-www-form-urlencoded"), 422,
     ("invalid_request",)),
]


@pytest.mark.parametrize(("name", "send", "status", "codes"), ACTION_CASES,
                         ids=[c[0] for c in ACTION_CASES])
def test_bad_action_is_refused_and_changes_nothing(game: Game, name: str,
                                                   send: Callable[[Game], requests.Response],
                                                   status: int, codes: tuple[str, ...]) -> None:
    before = game.snapshot()
    expect(send(game), status, *codes)
    assert game.snapshot() == before, name


# --------------------------------------------------------------------------- other endpoints


def call(method: str, path: str, who: str = P0, *, match: str | None = None,
         body: Any = None) -> Callable[[Game], requests.Response]:
    def send(g: Game) -> requests.Response:
        token = {P0: g.players[0].token, P1: g.players[1].token, OUT: g.outsider.token,
                 NONE: None, BAD: "llt_not-a-real-token"}[who]
        return g.api.request(method, path.format(mid=match or g.mid), token=token, json=body)

    return send


OTHER_CASES: list[Case] = [
    ("view: missing token", call("GET", "/v1/matches/{mid}/view", NONE), 401, ("unauthorized",)),
    ("view: wrong token", call("GET", "/v1/matches/{mid}/view", BAD), 401, ("unauthorized",)),
    ("view: not seated", call("GET", "/v1/matches/{mid}/view", OUT), 403, ("forbidden",)),
    ("view: unknown match", call("GET", "/v1/matches/{mid}/view", match="m_ffffffffffff"), 404,
     ("not_found",)),
    ("view: wait not a number", call("GET", "/v1/matches/{mid}/view?wait=soon"), 422,
     ("invalid_request",)),
    ("view: wait negative", call("GET", "/v1/matches/{mid}/view?wait=-1"), 422,
     ("invalid_request",)),
    ("view: wait too long", call("GET", "/v1/matches/{mid}/view?wait=3600"), 422,
     ("invalid_request",)),
    ("view: wait nan", call("GET", "/v1/matches/{mid}/view?wait=nan"), 422,
     ("invalid_request",)),
    ("view: after not a number", call("GET", "/v1/matches/{mid}/view?after=x&wait=1"), 422,
     ("invalid_request",)),
    ("summary: unknown match", call("GET", "/v1/matches/{mid}", match="m_ffffffffffff"), 404,
     ("not_found",)),
    ("summary: odd id", call("GET", "/v1/matches/{mid}", match="%E2%98%83"), 404,
     ("not_found",)),
    ("events: unknown match", call("GET", "/v1/matches/{mid}/events", match="nope"), 404,
     ("not_found",)),
    ("events: after not a number", call("GET", "/v1/matches/{mid}/events?after=x"), 422,
     ("invalid_request",)),
    ("events: after below -1", call("GET", "/v1/matches/{mid}/events?after=-2"), 422,
     ("invalid_request",)),
    ("events: wrong token", call("GET", "/v1/matches/{mid}/events", BAD), 401,
     ("unauthorized",)),
    ("join: twice", call("POST", "/v1/matches/{mid}/join", P0), 409, ("already_joined",)),
    ("join: full", call("POST", "/v1/matches/{mid}/join", OUT), 409, ("match_full",)),
    ("join: missing token", call("POST", "/v1/matches/{mid}/join", NONE), 401,
     ("unauthorized",)),
    ("join: unknown match", call("POST", "/v1/matches/{mid}/join", match="m_ffffffffffff"),
     404, ("not_found",)),
    ("resign: missing token", call("POST", "/v1/matches/{mid}/resign", NONE), 401,
     ("unauthorized",)),
    ("resign: wrong token", call("POST", "/v1/matches/{mid}/resign", BAD), 401,
     ("unauthorized",)),
    ("resign: not seated", call("POST", "/v1/matches/{mid}/resign", OUT), 403, ("forbidden",)),
    ("resign: unknown match", call("POST", "/v1/matches/{mid}/resign", match="m_0"), 404,
     ("not_found",)),
    ("actions: GET not allowed", call("GET", "/v1/matches/{mid}/actions"), 405,
     ("method_not_allowed",)),
    ("match: DELETE not allowed", call("DELETE", "/v1/matches/{mid}"), 405,
     ("method_not_allowed",)),
    ("match: PUT not allowed", call("PUT", "/v1/matches/{mid}", body={"status": "finished"}),
     405, ("method_not_allowed",)),
    ("no such route", call("POST", "/v1/matches/{mid}/undo"), 404, ("not_found",)),
]


@pytest.mark.parametrize(("name", "send", "status", "codes"), OTHER_CASES,
                         ids=[c[0] for c in OTHER_CASES])
def test_bad_request_elsewhere_is_refused_and_changes_nothing(
        game: Game, name: str, send: Callable[[Game], requests.Response], status: int,
        codes: tuple[str, ...]) -> None:
    before = game.snapshot()
    expect(send(game), status, *codes)
    assert game.snapshot() == before, name


def test_reused_idempotency_key_with_another_body_is_refused(mapi: Api) -> None:
    g = new_game(mapi)
    headers = {"Idempotency-Key": "one-key"}
    first = mapi.post_action(g.players[0], g.mid, {"type": "play", "card": "handmaid"},
                             headers=headers)
    assert first.status_code == 200, first.text
    before = g.snapshot()
    again = mapi.post_action(g.players[0], g.mid, {"type": "play", "card": "handmaid"},
                             headers=headers)
    assert again.status_code == 200 and again.json() == first.json()  # the same answer
    other = mapi.post_action(g.players[0], g.mid, HIT, headers=headers)
    expect(other, 422, "idempotency_key_reused")
    assert g.snapshot() == before


FINISHED_CASES: list[Case] = [
    ("act on a finished match", act(P0, {"type": "play", "card": "handmaid"}), 409,
     ("match_not_active",)),
    ("act on a finished match (other seat)", act(P1, {"type": "play", "card": "priest",
                                                      "target": 0}), 409,
     ("match_not_active",)),
    ("resign a finished match", call("POST", "/v1/matches/{mid}/resign", P1), 409,
     ("match_not_active",)),
    ("join a finished match", call("POST", "/v1/matches/{mid}/join", OUT), 409,
     ("match_full",)),
    ("not seated, finished", act(OUT, HIT), 403, ("forbidden",)),
]


@pytest.mark.parametrize(("name", "send", "status", "codes"), FINISHED_CASES,
                         ids=[c[0] for c in FINISHED_CASES])
def test_finished_match_refuses_moves_and_stays_finished(
        finished: Game, name: str, send: Callable[[Game], requests.Response], status: int,
        codes: tuple[str, ...]) -> None:
    before = finished.snapshot()
    expect(send(finished), status, *codes)
    assert finished.snapshot() == before, name


def test_resigned_player_cannot_resign_again(mapi: Api) -> None:
    mid, players, _ = mapi.new_match(3, prefix="rsn", ruleset="classic", seed="resign",
                                     **NO_TIMEOUTS)
    g = Game(mapi, mid, players, mapi.register("outsider"))
    r = mapi.request("POST", f"/v1/matches/{mid}/resign", token=players[2].token)
    assert r.status_code == 200, r.text
    before = g.snapshot()
    expect(mapi.request("POST", f"/v1/matches/{mid}/resign", token=players[2].token), 409,
           "already_forfeited")
    assert g.snapshot() == before


# --------------------------------------------------------------------------- create, register


def newest_matches(api: Api) -> list[str]:
    page = api.ok(api.request("GET", "/v1/matches", params={"limit": 5}))
    return [m["match_id"] for m in page["matches"]]


CREATE_CASES: list[tuple[str, Any, int, str]] = [
    ("unknown ruleset", {"ruleset": "2012", "seats": 2}, 422, "invalid_request"),
    ("ruleset is a number", {"ruleset": 2019, "seats": 2}, 422, "invalid_request"),
    ("missing ruleset", {"seats": 2}, 422, "invalid_request"),
    ("one seat", {"ruleset": "classic", "seats": 1}, 422, "invalid_request"),
    ("seven seats", {"ruleset": "2019", "seats": 7}, 422, "invalid_request"),
    ("six seats in classic", {"ruleset": "classic", "seats": 6}, 422, "invalid_request"),
    ("five seats in 2019-classic", {"ruleset": "2019-classic", "seats": 5}, 422,
     "invalid_request"),
    ("seats as a string", {"ruleset": "classic", "seats": "2"}, 422, "invalid_request"),
    ("seats as a float", {"ruleset": "classic", "seats": 2.0001}, 422, "invalid_request"),
    ("deck with an unknown card", {"ruleset": "classic", "seats": 2,
                                   "deck": DECK[:-1] + ["joker"]}, 422, "invalid_request"),
    ("deck one card short", {"ruleset": "classic", "seats": 2, "deck": DECK[:-1]}, 422,
     "invalid_request"),
    ("deck with a spy in classic", {"ruleset": "classic", "seats": 2,
                                    "deck": DECK[:-1] + ["spy"]}, 422, "invalid_request"),
    ("classic deck for 2019", {"ruleset": "2019", "seats": 2, "deck": DECK}, 422,
     "invalid_request"),
    ("deck not a list", {"ruleset": "classic", "seats": 2, "deck": "guard"}, 422,
     "invalid_request"),
    ("deck too long", {"ruleset": "classic", "seats": 2, "deck": DECK * 2}, 422,
     "invalid_request"),
    ("first seat beyond the seats", {"ruleset": "classic", "seats": 2, "first_seat": 2}, 422,
     "invalid_request"),
    ("negative first seat", {"ruleset": "classic", "seats": 2, "first_seat": -1}, 422,
     "invalid_request"),
    ("no tokens to win", {"ruleset": "classic", "seats": 2, "tokens_to_win": 0}, 422,
     "invalid_request"),
    ("too many tokens to win", {"ruleset": "classic", "seats": 2, "tokens_to_win": 21}, 422,
     "invalid_request"),
    ("tokens as a string", {"ruleset": "classic", "seats": 2, "tokens_to_win": "3"}, 422,
     "invalid_request"),
    ("unknown timeout policy", {"ruleset": "classic", "seats": 2, "timeout_policy": "never"},
     422, "invalid_request"),
    ("zero turn timeout", {"ruleset": "classic", "seats": 2, "turn_timeout_s": 0}, 422,
     "invalid_request"),
    ("unknown two-player setup", {"ruleset": "classic", "seats": 2,
                                  "two_player_setup": "all-up"}, 422, "invalid_request"),
    ("empty seed", {"ruleset": "classic", "seats": 2, "seed": ""}, 422, "invalid_request"),
    ("seed is an object", {"ruleset": "classic", "seats": 2, "seed": {"a": 1}}, 422,
     "invalid_request"),
    # a lone surrogate is valid JSON but not text the engine's random generator can hash (it was
    # a 500)
    ("seed with a lone surrogate", {"ruleset": "classic", "seats": 2, "seed": "\ud800"}, 422,
     "invalid_request"),
    ("unknown field", {"ruleset": "classic", "seats": 2, "rated": True}, 422,
     "invalid_request"),
    ("body is a list", [{"ruleset": "classic", "seats": 2}], 422, "invalid_request"),
]


@pytest.mark.parametrize(("name", "body", "status", "code"), CREATE_CASES,
                         ids=[c[0] for c in CREATE_CASES])
def test_bad_create_is_refused_and_creates_nothing(mapi: Api, game: Game, name: str,
                                                   body: Any, status: int, code: str) -> None:
    before = newest_matches(mapi)
    r = mapi.request("POST", "/v1/matches", token=game.outsider.token, json=body)
    expect(r, status, code)
    assert newest_matches(mapi) == before, name


def test_bad_create_raw_bodies_and_auth(mapi: Api, game: Game) -> None:
    before = newest_matches(mapi)
    token = game.outsider.token
    good = {"ruleset": "classic", "seats": 2}
    expect(raw_post(mapi, "/v1/matches", '{"ruleset": "classic", "seats": 2', token), 400,
           "malformed_json")
    expect(raw_post(mapi, "/v1/matches", json.dumps({**good, "seed": "x" * BIG}), token), 413,
           "payload_too_large")
    expect(raw_post(mapi, "/v1/matches", chunked(3 * BIG), token), 413, "payload_too_large")
    expect(raw_post(mapi, "/v1/matches", "[" * 6000 + "]" * 6000, token), 400,
           "malformed_json")
    expect(mapi.request("POST", "/v1/matches", json=good), 401, "unauthorized")
    expect(mapi.request("POST", "/v1/matches", token="llt_nobody", json=good), 401,
           "unauthorized")
    assert newest_matches(mapi) == before


def test_bad_register_is_refused(mapi: Api, game: Game) -> None:
    taken = game.outsider.name
    for body, status, code in [
        ({"name": ""}, 422, "invalid_request"),
        ({"name": "has space"}, 422, "invalid_request"),
        ({"name": "x" * 33}, 422, "invalid_request"),
        ({"name": "-leading-dash"}, 422, "invalid_request"),
        ({"name": 7}, 422, "invalid_request"),
        ({"name": None}, 422, "invalid_request"),
        ({}, 422, "invalid_request"),
        ({"name": "ok-name", "token": "mine"}, 422, "invalid_request"),
        ({"name": taken}, 409, "name_taken"),
        ({"name": taken.upper()}, 409, "name_taken"),
    ]:
        expect(mapi.request("POST", "/v1/players", json=body), status, code)
    expect(raw_post(mapi, "/v1/players", '{"name": '), 400, "malformed_json")
    expect(raw_post(mapi, "/v1/players", json.dumps({"name": "a" * BIG})), 413,
           "payload_too_large")
    expect(mapi.request("GET", "/v1/players/p_000000000000"), 404, "not_found")
    expect(mapi.request("GET", "/v1/me"), 401, "unauthorized")
    expect(mapi.request("GET", "/v1/me/matches", token="llt_nobody"), 401, "unauthorized")


@pytest.mark.parametrize("query", [
    "status=bogus", "limit=0", "limit=101", "limit=x", "cursor=-1", "cursor=x",
    "cursor=99999999999999999999999999",
])
def test_bad_list_query_is_refused(mapi: Api, game: Game, query: str) -> None:
    for path in ("/v1/matches", "/v1/me/matches"):
        r = mapi.request("GET", f"{path}?{query}", token=game.outsider.token)
        if r.status_code == 200:  # an offset past the end is just an empty page
            assert query.startswith("cursor=9") and r.json()["matches"] == [], r.text
        else:
            expect(r, 422, "invalid_request")


# --------------------------------------------------------------------------- never a 500


def test_random_garbage_never_gets_a_500(mapi: Api, game: Game) -> None:
    """Random bodies, types and paths at every endpoint: always a JSON 4xx (or a 2xx) and the
    match is left as it was."""
    rng = random.Random("garbage")
    before = game.snapshot()
    atoms: list[Any] = [None, True, False, 0, -1, 1, 2, 5, 6, 2**70, -(2**70), 1.5, float("inf"),
                        "", "guard", "priest", "spy", "princess", "chancellor", "play",
                        "chancellor_return", "\u0000", "\ud7ff", "\ud800", "x" * 300, [], {},
                        ["guard"], [None], {"a": 1}, "classic", "2019"]
    keys = ["type", "card", "target", "guess", "keep", "bottom", "expected_version", "seat",
            "name", "ruleset", "seats", "deck", "first_seat", "seed", "tokens_to_win"]

    def value() -> Any:
        v = rng.choice(atoms)
        if v == float("inf"):
            return 1e308
        return v

    tokens = [None, game.players[0].token, game.players[1].token, game.outsider.token,
              "llt_x", "\u00e9"]
    paths = ["/v1/matches/{mid}/actions", "/v1/matches/{mid}/resign", "/v1/matches/{mid}/join",
             "/v1/matches", "/v1/players", "/v1/matches/m_zz/actions"]
    for _ in range(250):
        body: Any = {rng.choice(keys): value() for _ in range(rng.randrange(0, 5))}
        if rng.random() < 0.15:
            body = value()
        path = rng.choice(paths).format(mid=game.mid)
        if path.endswith("resign"):
            path = path.replace(game.mid, "m_ffffffffffff")  # keep the players seated
        token = rng.choice(tokens)
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}".encode().decode("latin-1")
        r = mapi.s.post(mapi.base + path, data=json.dumps(body), headers=headers, timeout=30)
        assert r.status_code < 500, (path, body, r.status_code, r.text[:300])
        if r.status_code >= 400:
            error_of(r)
        elif path.endswith("/actions"):
            raise AssertionError(f"garbage was accepted as a move: {body}")
    # and junk in query strings and paths of the GET endpoints
    gets = ["/v1/matches", "/v1/me/matches", "/v1/matches/{mid}", "/v1/matches/{mid}/view",
            "/v1/matches/{mid}/events", "/v1/players/{mid}", "/v1/me", "/v1/me/events"]
    params = ["status", "limit", "cursor", "player", "wait", "after", "seat"]
    junk = ["", "-1", "0", "1", "0.5", "1e400", "nan", "-inf", "x", "%00", "\u00e9", "\ud800",
            "9" * 30, "0-0", "1-1", "18446744073709551616-0", "active", "finished"]
    for _ in range(150):
        path = rng.choice(gets).format(mid=rng.choice([game.mid, "m_ffffffffffff", "\u00e9",
                                                       "p_x"]))
        query = {rng.choice(params): rng.choice(junk) for _ in range(rng.randrange(0, 3))}
        if "wait" in query:
            query["wait"] = rng.choice(["0", "0.01", "x", "-1", "nan"])
        token = rng.choice(tokens)
        headers = {}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}".encode().decode("latin-1")
        r = mapi.s.get(mapi.base + path, params={k: v.encode("utf-8", "surrogatepass")
                                                 for k, v in query.items()},
                       headers=headers, timeout=30)
        assert r.status_code < 500, (path, query, r.status_code, r.text[:300])
        if r.status_code >= 400:
            error_of(r)
    after_summary = json.loads(game.snapshot())
    # garbage joins may have been answered 409, garbage creates may have created matches, but
    # this match is unchanged
    assert after_summary == json.loads(before)
