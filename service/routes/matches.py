"""Matches: create, list, join, views, actions, resign, events."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import marshmallow as ma
from flask import request
from flask.views import MethodView
from marshmallow import fields as f
from marshmallow import validate as v

from ..engine import NAMES, TWO_PLAYER_SETUPS
from ..engine.actions import CARD, CARDS, SHAPES
from ..engine.actions import SEAT as SEAT_KIND
from ..engine.catalog import OPTION_BOUNDS
from ..http.errors import ApiError
from ..http.params import (
    ANY,
    MAX_INT,
    Blueprint,
    IdString,
    QueryFloat,
    QueryInt,
    if_match,
    if_none_match,
    plain_body_first,
)
from ..http.views import event_list, player_view, public_view, summary
from ..realtime import longpoll
from ..store import attendance, keys, matches, presence
from ..store.docs import MatchDoc
from ..store.errors import StoreError
from .common import (
    AUTH,
    E400,
    E401,
    E403,
    E404,
    E409,
    E412,
    E413,
    E422,
    auth_first,
    config,
    current_player,
    document_errors,
    json_response,
    notifier,
    require_player,
    store,
)
from .schemas import (
    DECK_LENGTH,
    DEFAULT_TWO_PLAYER_SETUP,
    PLAYERS,
    RETURNED,
    RULESET,
    SEAT,
    TOKENS_TO_WIN,
    ListQuerySchema,
    MatchListSchema,
    ViewSchema,
)

blp = Blueprint("matches", __name__, url_prefix="/v1/matches",
                description="Create and join matches, read views, post actions.")


def _utf8(value: str) -> None:
    """JSON may carry lone surrogates (``"\\ud800"``), which no UTF-8 consumer (the engine's
    seeded random generator, for one) can take: refuse them here."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ma.ValidationError("must be valid Unicode text (no lone surrogates)") from e


class CreateSchema(ma.Schema):
    ruleset = f.String(required=True, validate=RULESET)
    seats = f.Integer(required=True, strict=True, validate=PLAYERS)
    turn_timeout_s = f.Integer(strict=True, load_default=30, validate=v.Range(1, 86400))
    timeout_policy = f.String(load_default="auto", validate=v.OneOf(["auto", "forfeit"]))
    max_timeouts = f.Integer(strict=True, load_default=3, validate=v.Range(1, 100))
    tokens_to_win = f.Integer(strict=True, validate=TOKENS_TO_WIN)
    seed = f.String(validate=[v.Length(1, 128), _utf8], metadata={"description": "unrated only"})
    deck = f.List(f.String(validate=v.OneOf(NAMES)), validate=DECK_LENGTH,
                  metadata={"description": "round 1 order, top card first"})
    first_seat = f.Integer(strict=True, validate=SEAT)
    two_player_setup = f.String(load_default=DEFAULT_TWO_PLAYER_SETUP,
                                validate=v.OneOf(TWO_PLAYER_SETUPS))


_CARD_NAMES = frozenset(NAMES)
_SEATS = OPTION_BOUNDS["seat"]  # (what SEAT and RETURNED check)
_RETURNED = OPTION_BOUNDS["returned"]
_VERSION_DOC = "refuse with version_conflict unless the match is at this version"

# The marshmallow field and the direct check of each kind of action field (engine.SHAPES).
_FIELD_OF_KIND: dict[str, Callable[[], f.Field[Any]]] = {
    CARD: lambda: f.String(validate=v.OneOf(NAMES)),
    SEAT_KIND: lambda: f.Integer(strict=True, validate=SEAT),
    CARDS: lambda: f.List(f.String(validate=v.OneOf(NAMES)), validate=RETURNED),
}
_CHECK_OF_KIND: dict[str, Callable[[Any], bool]] = {
    CARD: lambda x: type(x) is str and x in _CARD_NAMES,
    SEAT_KIND: lambda x: type(x) is int and _SEATS[0] <= x <= _SEATS[1],
    CARDS: lambda x: type(x) is list and _RETURNED[0] <= len(x) <= _RETURNED[1] and all(
        type(c) is str and c in _CARD_NAMES for c in x),
}


def _action_fields() -> dict[str, f.Field[Any]]:
    """The action schema's fields, made from the engine's definition of an action (every
    type's fields; the engine then refuses a field that its type does not take), plus
    ``expected_version``, which is the API's own."""
    out: dict[str, f.Field[Any]] = {"type": f.String(required=True, validate=v.OneOf(list(SHAPES)))}
    for shape in SHAPES.values():
        for spec in shape:
            out.setdefault(spec.name, _FIELD_OF_KIND[spec.kind]())
    out["expected_version"] = f.Integer(strict=True, validate=v.Range(0, MAX_INT),
                                        metadata={"description": _VERSION_DOC})
    return out


#: ``{"type": "play", "card": "guard", "target": 1, "guess": "priest"}`` or
#: ``{"type": "chancellor_return", "keep": "king", "bottom": ["guard", "spy"]}``.
ActionSchema = ma.Schema.from_dict(_action_fields(), name="ActionSchema")

# per action type: each field it takes -> its direct check
_PLAIN_CHECKS: dict[str, dict[str, Callable[[Any], bool]]] = {
    kind: {**{spec.name: _CHECK_OF_KIND[spec.kind] for spec in shape},
           "expected_version": lambda x: type(x) is int and 0 <= x <= MAX_INT}
    for kind, shape in SHAPES.items()}


def _plain_action(data: Any) -> dict[str, Any] | None:
    """``data`` (a copy) when it is an action of a type that takes each of its fields, each
    valid as :data:`ActionSchema` checks it (as a view's ``legal_actions`` lists them); None
    for anything else, which marshmallow then judges with its error messages. Every move is
    posted, and marshmallow's load of one costs more than the engine's move."""
    if type(data) is not dict:
        return None
    kind = data.get("type")
    checks = _PLAIN_CHECKS.get(kind) if type(kind) is str else None
    if checks is None:
        return None
    for k, value in data.items():
        if k != "type" and not ((check := checks.get(k)) is not None and check(value)):
            return None
    return {k: list(x) if type(x) is list else x for k, x in data.items()}


class ViewQuerySchema(ma.Schema):
    wait = QueryFloat(0, 60, load_default=0, metadata={
        "description": "hold up to this many seconds for a version newer than `after`"})
    after = QueryInt(-MAX_INT, MAX_INT,
                     metadata={"description": "the version the caller already has"})


class EventsQuerySchema(ma.Schema):
    after = QueryInt(-1, MAX_INT, load_default=-1,
                     metadata={"description": "return events with seq greater than this"})


class MatchesQuerySchema(ListQuerySchema):
    player = IdString(keys.PLAYER_ID_PATTERN, metadata={"description": "only this player's"})


class EventsSchema(ma.Schema):
    match_id = f.String(required=True)
    version = f.Integer(required=True)
    events = f.List(f.Dict(), required=True)
    last_seq = f.Integer(required=True, allow_none=True)


def _doc(match_id: str) -> MatchDoc:
    return matches.get(store(), match_id)


@blp.route("")
class Matches(MethodView):
    @blp.arguments(MatchesQuerySchema(), location="query")
    @blp.response(200, MatchListSchema)
    @document_errors(blp, E422)
    def get(self, args: dict[str, Any]) -> Any:
        """List matches, newest first; filter by status and player; page with cursor."""
        ids, nxt = matches.list_ids(store(), status=args.get("status"), player=args.get("player"),
                                    offset=args["cursor"], limit=args["limit"])
        docs = matches.load_many(store(), ids)
        return json_response({"matches": [summary(d) for d in docs], "next_cursor": nxt})

    @auth_first
    @blp.arguments(CreateSchema())
    @blp.response(201, ViewSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, E400, E401, E413, E422)
    def post(self, data: dict[str, Any]) -> Any:
        """Create a match (unrated); seats are then taken in order with POST .../join."""
        pid = require_player()
        doc = matches.create(store(), pid, data)
        return json_response(public_view(doc), 201, {"Location": f"/v1/matches/{doc.id}"})


@blp.route("/<match_id:match_id>")
class Match(MethodView):
    @blp.response(200, ViewSchema)
    @document_errors(blp, E404)
    def get(self, match_id: str) -> Any:
        """The public summary: what a spectator may see (everything once the match ended)."""
        doc = _doc(match_id)
        return json_response(public_view(doc), headers={"ETag": f'"{doc.version}"'})


@blp.route("/<match_id:match_id>/join")
class Join(MethodView):
    @blp.response(200, ViewSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, E401, E404, E409)
    def post(self, match_id: str) -> Any:
        """Take the next free seat; the match starts when the last seat is taken."""
        pid = require_player()
        doc = matches.join(store(), match_id, pid)
        seat = doc.seat_of(pid)
        assert seat is not None
        return json_response(player_view(doc, seat))


def _seat(doc: MatchDoc, pid: str) -> int:
    seat = doc.seat_of(pid)
    if seat is None:
        raise ApiError("forbidden", "you don't sit in this match; GET /v1/matches/{id} shows "
                       "the public summary")
    return seat


@blp.route("/<match_id:match_id>/view")
class View(MethodView):
    @auth_first
    @blp.arguments(ViewQuerySchema(), location="query")
    @blp.response(200, ViewSchema)
    @blp.alt_response(304, description="If-None-Match holds the current version (ETag)")
    @blp.doc(security=AUTH, parameters=[
        {"in": "header", "name": "If-None-Match", "required": False,
         "schema": {"type": "string"}, "description": "a version (ETag) you already have"}])
    @document_errors(blp, E401, E403, E404, E422)
    def get(self, args: dict[str, Any], match_id: str) -> Any:
        """Your view; with wait=S&after=V it is held until the match passes version V."""
        pid = require_player()
        have = if_none_match() or []  # (refused before anything is read or written)
        r = store()
        doc = _doc(match_id)
        seat = _seat(doc, pid)
        presence.touch(r, pid)
        attendance.note_doc(r, pid, doc)  # it saw its view: it was there (the abort rule)
        after = args.get("after", max(have) if have and ANY not in have else None)
        wait = min(args["wait"], config().max_wait_s)
        if wait > 0 and after is not None and doc.version <= after:
            del doc  # (not held while waiting: wait_for_match reads it again)
            doc = longpoll.wait_for_match(r, notifier(), match_id, after, wait,
                                          longpoll.Listening(r, pid, request.environ))
        etag = f'"{doc.version}"'
        if ANY in have or doc.version in have:
            return json_response(None, 304, {"ETag": etag}, empty=True)
        return json_response(player_view(doc, seat), headers={"ETag": etag})


@blp.route("/<match_id:match_id>/actions")
class Actions(MethodView):
    @auth_first
    @plain_body_first(_plain_action)  # a legal action as a view lists it skips webargs
    @blp.arguments(ActionSchema)
    @blp.response(200, ViewSchema)
    @blp.doc(security=AUTH, parameters=[
        {"in": "header", "name": "Idempotency-Key", "required": False,
         "schema": {"type": "string", "maxLength": 128},
         "description": "retries with the same key and body return the first answer"},
        {"in": "header", "name": "If-Match", "required": False, "schema": {"type": "string"},
         "description": "the version (ETag) the action was chosen at; 412 if it moved"}])
    @document_errors(blp, E400, E401, E403, E404, E409, E412, E413, E422)
    def post(self, data: dict[str, Any], match_id: str) -> Any:
        """Play: post one of your view's legal_actions; answers with your new view."""
        pid = require_player()
        key = request.headers.get("Idempotency-Key")
        if key is not None and not (0 < len(key) <= 128 and key.isprintable()):
            raise ApiError("invalid_request", "Idempotency-Key: 1 to 128 printable characters")
        expected = data.pop("expected_version", None)
        expected_if = if_match()
        try:
            view = matches.act(store(), match_id, pid, data, respond=player_view,
                               expected_version=expected_if if expected_if is not None
                               else expected,
                               idempotency_key=key)
        except StoreError as e:
            if e.code == "version_conflict" and expected_if is not None:
                e.extra["if_match"] = True
            raise
        return json_response(view, headers={"ETag": f'"{view["version"]}"'})


@blp.route("/<match_id:match_id>/resign")
class Resign(MethodView):
    @blp.response(200, ViewSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, E401, E403, E404, E409)
    def post(self, match_id: str) -> Any:
        """Forfeit the match (R27): you leave this round and every later one."""
        pid = require_player()
        doc = matches.resign(store(), match_id, pid)
        return json_response(player_view(doc, _seat(doc, pid)))


@blp.route("/<match_id:match_id>/events")
class Events(MethodView):
    @blp.arguments(EventsQuerySchema(), location="query")
    @blp.response(200, EventsSchema)
    @document_errors(blp, E401, E404, E422)
    def get(self, args: dict[str, Any], match_id: str) -> Any:
        """The event log the caller may see (all of it once the match has ended)."""
        pid = current_player(required=False)
        # (the log is read from the first event asked for on)
        doc = matches.get(store(), match_id,
                          events_from=args["after"] + 1)
        seat = doc.seat_of(pid) if pid else None
        if pid is not None and seat is not None:
            attendance.note_doc(store(), pid, doc)
        evs = event_list(doc, seat, args["after"])
        return json_response({"match_id": doc.id, "version": doc.version, "events": evs,
                              "last_seq": evs[-1]["seq"] if evs else None})
