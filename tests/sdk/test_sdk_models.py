"""llsdk offline: models, the error mapping table, reference card tables, Retry-After."""

from __future__ import annotations

import random

import llsdk
import pytest
from llsdk import Action, View, errors
from llsdk.cards import COPIES, TOKENS_TO_WIN, VALUES

from service import engine
from service.http.errors import STATUS

# ---------------------------------------------------------------- actions


def test_action_constructors_and_wire_form() -> None:
    a = Action.play("guard", target=2, guess="priest")
    assert a.to_dict() == {"type": "play", "card": "guard", "target": 2, "guess": "priest"}
    assert Action.play("handmaid").to_dict() == {"type": "play", "card": "handmaid"}
    r = Action.chancellor_return(keep="king", bottom=["guard", "spy"])
    assert r.to_dict() == {"type": "chancellor_return", "keep": "king", "bottom": ["guard", "spy"]}
    for x in (a, r, Action.play("prince", target=0)):
        assert Action.from_dict(x.to_dict()) == x
        assert hash(Action.from_dict(x.to_dict())) == hash(x)
    assert Action.play("baron", target=1) in {Action("play", "baron", 1)}


def test_actions_round_trip_through_the_engine() -> None:
    """Every legal action the engine lists, in SDK form, is the same engine action again."""
    rng = random.Random(4)
    for ruleset, n in (("classic", 2), ("2019", 4), ("2019", 6)):
        s = engine.new_match(ruleset, n, seed=ruleset)
        while s.status == "active":
            for d in engine.legal_action_dicts(s):
                a = Action.from_dict(d)
                assert a.to_dict() == d
                assert engine.Action.from_dict(a.to_dict()) in engine.legal_actions(s)
            engine.apply_inplace(s, rng.choice(engine.legal_actions(s)))


# ---------------------------------------------------------------- views


def test_view_from_an_engine_projection_is_typed() -> None:
    s = engine.new_match("2019", 4, seed="typed", first_seat=1)
    raw = engine.view(s, 1, since=s.round_start_seq)
    v = View.from_dict(raw)
    assert v.seat == 1 and v.my_turn and v.turn is not None and v.turn.seat == 1
    assert v.hand == raw["hand"] and len(v.hand) == 2
    assert [p.seat for p in v.players] == [0, 1, 2, 3]
    assert v.legal_actions == [Action.from_dict(d) for d in raw["legal_actions"]]
    assert [e.seq for e in v.events] == [e["seq"] for e in raw["events"]]
    assert v.values == VALUES["2019"]
    assert v.targets == [0, 2, 3]
    assert set(v.playable_cards()) == set(v.hand)
    other = View.from_dict(engine.view(s, 0, since=s.round_start_seq))
    assert not other.my_turn and other.legal_actions == []


def test_view_of_a_finished_match_has_the_result() -> None:
    rng = random.Random(1)
    s = engine.new_match("classic", 2, seed="end")
    while s.status == "active":
        engine.apply_inplace(s, rng.choice(engine.legal_actions(s)))
    v = View.from_dict(engine.view(s, 0, since=s.round_start_seq))
    assert v.finished and v.result is not None and v.result.winners == s.winners
    assert v.won == (0 in s.winners)
    assert v.last_round is not None and v.last_round.round == s.round


def test_known_facts_are_typed() -> None:
    # seat 0 plays a priest at seat 1 on turn 1 (classic, 2 players, three-up, first seat 0)
    deck = ["guard", "guard", "guard", "guard", "priest", "king", "handmaid", "baron", "guard",
            "priest", "baron", "handmaid", "prince", "prince", "countess", "princess"]
    s = engine.new_match("classic", 2, seed="k", first_seat=0, deck=deck)
    engine.apply_inplace(s, {"type": "play", "card": "priest", "target": 1})
    v = View.from_dict(engine.view(s, 0, since=s.round_start_seq))
    assert [(k.type, k.seat, k.card) for k in v.known] == [("priest", 1, "king")]


# ---------------------------------------------------------------- errors


def test_every_api_error_code_maps_to_its_exception() -> None:
    """The table: each code the service can answer (service/http/errors.py) has its class, with
    the status the service uses for it."""
    # (the SDK also knows "unavailable", what GET /readyz answered before "service_unavailable")
    assert set(errors.CODE_CLASSES) - {"unavailable"} == set(STATUS), \
        "a code of the API has no SDK class"
    assert errors.CODE_CLASSES["unavailable"] is errors.ServiceUnavailable
    expected = {
        "malformed_json": errors.MalformedJSON, "invalid_request": errors.InvalidRequest,
        "unauthorized": errors.Unauthorized, "forbidden": errors.Forbidden,
        "not_found": errors.NotFound, "method_not_allowed": errors.MethodNotAllowed,
        "not_your_turn": errors.NotYourTurn, "version_conflict": errors.VersionConflict,
        "match_not_active": errors.MatchNotActive, "match_full": errors.MatchFull,
        "already_joined": errors.AlreadyJoined, "already_forfeited": errors.AlreadyForfeited,
        "name_taken": errors.NameTaken, "precondition_failed": errors.PreconditionFailed,
        "payload_too_large": errors.PayloadTooLarge,
        "unsupported_media_type": errors.UnsupportedMediaType,
        "malformed_action": errors.MalformedAction, "illegal_action": errors.IllegalAction,
        "idempotency_key_reused": errors.IdempotencyKeyReused,
        "rate_limited": errors.RateLimited, "internal_error": errors.InternalError,
        "service_unavailable": errors.ServiceUnavailable,
        "archive_unavailable": errors.ArchiveUnavailable,
        "player_not_found": errors.PlayerNotFound, "challenge_self": errors.ChallengeSelf,
        "duplicate_opponent": errors.DuplicateOpponent,
        "not_challenged": errors.NotChallenged, "not_challenger": errors.NotChallenger,
        "ladder_bots_only": errors.LadderBotsOnly, "player_banned": errors.PlayerBanned,
        "challenge_not_found": errors.ChallengeNotFound,
        "challenge_closed": errors.ChallengeClosed, "challenge_expired": errors.ChallengeExpired,
        "already_challenged": errors.AlreadyChallenged,
        "too_many_challenges": errors.TooManyChallenges,
        "name_reserved": errors.NameReserved,
        "blocked": errors.Blocked, "challenges_off": errors.ChallengesOff,
        "cursor_expired": errors.CursorExpired,
    }
    for code, status in STATUS.items():
        e = errors.error_for(status, {"status": status, "code": code, "message": "m"})
        assert type(e) is expected[code], code
        assert isinstance(e, errors.APIError) and isinstance(e, llsdk.LLSDKError)
        assert (e.status, e.code, e.message) == (status, code, "m")
    # the hierarchy the SDK documents
    assert issubclass(errors.NotYourTurn, errors.Conflict)
    assert issubclass(errors.VersionConflict, errors.Conflict)
    assert issubclass(errors.MalformedAction, errors.InvalidRequest)
    assert issubclass(errors.NameReserved, errors.InvalidRequest)
    assert issubclass(errors.InternalError, errors.ServerError)
    assert issubclass(errors.TransportError, errors.LLSDKError)
    assert issubclass(errors.ChallengeNotFound, errors.NotFound)
    assert issubclass(errors.ChallengeClosed, errors.Conflict)
    assert issubclass(errors.NotChallenger, errors.Forbidden)
    assert issubclass(errors.PlayerNotFound, errors.InvalidRequest)
    assert not issubclass(errors.TransportError, errors.APIError)


def test_unknown_codes_fall_back_on_the_status() -> None:
    assert type(errors.error_for(409, {"code": "brand_new", "message": "x"})) is errors.Conflict
    assert type(errors.error_for(502, "<html>bad gateway</html>")) is errors.ServerError
    e = errors.error_for(418, None)
    assert type(e) is errors.APIError and e.code == "http_418" and e.message == "HTTP 418"


def test_rate_limited_reads_retry_after() -> None:
    e = errors.error_for(429, {"code": "rate_limited", "message": "slow down"},
                         {"Retry-After": "7"})
    assert isinstance(e, errors.RateLimited) and e.retry_after == 7.0
    assert errors.parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
    assert errors.error_for(429, {"code": "rate_limited"}).retry_after is None  # type: ignore[attr-defined]


# ---------------------------------------------------------------- reference tables


def test_card_tables_equal_the_engine() -> None:
    for name, rs in engine.RULESETS.items():
        assert COPIES[name] == {c.label: rs.copies[c] for c in rs.cards}, name
        assert VALUES[name] == {c.label: rs.values[c] for c in rs.cards}, name
        assert TOKENS_TO_WIN[name] == rs.tokens, name
    assert llsdk.cards.CARDS == engine.NAMES
    assert set(llsdk.cards.RULESETS) == set(engine.RULESETS)


def test_sdk_catalog_is_the_engines_current_one() -> None:
    """``sdk/llsdk/rulesets.json`` is what ``make openapi`` writes from the engine (and what
    ``GET /v1/rulesets`` serves): a stale copy fails here."""
    from service.engine.catalog import describe_rulesets

    assert llsdk.cards.CATALOG == describe_rulesets(), (
        "sdk/llsdk/rulesets.json is stale: run `make openapi` and commit it")
    assert llsdk.cards.EFFECTS == {engine.NAMES[c]: spec.summary
                                   for c, spec in engine.CARDS.items()}


def test_importing_the_sdk_pulls_no_service_code() -> None:
    import subprocess
    import sys

    code = ("import sys, llsdk, llsdk.arena, llsdk.cli; "
            "bad = [m for m in sys.modules if m.split('.')[0] in "
            "('service', 'flask', 'redis', 'rq')]; print(bad); assert not bad")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("name", ["View", "Action", "Client", "Bot", "NotYourTurn"])
def test_public_names(name: str) -> None:
    assert name in llsdk.__all__ and hasattr(llsdk, name)
