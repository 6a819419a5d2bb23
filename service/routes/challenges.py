"""Challenges: invite named players to an unrated match; it starts when all of them accept."""

from __future__ import annotations

from typing import Any

import marshmallow as ma
from flask.views import MethodView
from marshmallow import fields as f
from marshmallow import validate as v

from ..http.params import Blueprint
from ..http.views import challenge_names
from ..store import challenges
from .common import (
    AUTH,
    E400,
    E401,
    E403,
    E404,
    E409,
    E413,
    E422,
    E429,
    auth_first,
    config,
    document_errors,
    json_response,
    require_player,
    store,
)
from .matches import CreateSchema, _utf8
from .schemas import MAX_PLAYERS, MIN_PLAYERS, PLAYERS

blp = Blueprint("challenges", __name__, url_prefix="/v1/challenges",
                description="Challenge players by name or id: an unrated match that starts "
                            "when everyone accepts.")

PLAYER_REF = f.String(validate=v.Length(1, 64), metadata={"description": "a name or an id"})


class ChallengeCreateSchema(CreateSchema):
    """The match options of ``POST /v1/matches`` (unrated), with the players named."""

    opponents = f.List(PLAYER_REF, required=True, validate=v.Length(1, MAX_PLAYERS - 1),
                       metadata={"description": f"the players to challenge, by name or id "
                                                f"(1 to {MAX_PLAYERS - 1})"})
    ruleset = f.String(load_default="classic", validate=v.OneOf(
        CreateSchema._declared_fields["ruleset"].validate.choices))  # type: ignore[union-attr]
    seats = f.Integer(strict=True, validate=PLAYERS, metadata={
        "description": "optional; must be len(opponents) + 1 (every seat is taken)"})
    seat_order = f.List(f.String(validate=v.Length(1, 64)), validate=v.Length(MIN_PLAYERS, MAX_PLAYERS), metadata={
        "description": "player ids by seat (you and every opponent, each once); default: "
                       "shuffled by the seed"})
    expires_in_s = f.Integer(strict=True, validate=v.Range(1, 86400), metadata={
        "description": "close unanswered after this many seconds (default CHALLENGE_TTL_S)"})


class PlayerRefSchema(ma.Schema):
    id = f.String(required=True)
    name = f.String(required=True)
    kind = f.String(validate=v.OneOf(["bot", "human"]))


class OpponentSchema(PlayerRefSchema):
    answer = f.String(required=True, validate=v.OneOf(challenges.ANSWERS))


class ChallengeSchema(ma.Schema):
    challenge_id = f.String(required=True)
    challenger = f.Nested(PlayerRefSchema, required=True)
    opponents = f.List(f.Nested(OpponentSchema), required=True)
    options = f.Dict(required=True, metadata={"description": "the match's options"})
    rated = f.Boolean(required=True, metadata={"description": "always false"})
    seat_order = f.List(f.String(), allow_none=True, required=True)
    status = f.String(required=True, validate=v.OneOf(challenges.STATUSES))
    created_at = f.Float(required=True)
    expires_at = f.Float(required=True)
    seconds_left = f.Float(allow_none=True, required=True, metadata={
        "description": "until it expires (null once closed)"})
    closed_at = f.Float(allow_none=True, required=True)
    closed_by = f.String(allow_none=True, required=True, metadata={
        "description": "who accepted last, declined or cancelled (null: expired)"})
    match_id = f.String(allow_none=True, required=True, metadata={
        "description": "the match, once everyone accepted"})
    reason = f.String(allow_none=True, metadata={
        "description": "why it was declined, as the player who declined said"})


class ChallengeListSchema(ma.Schema):
    incoming = f.List(f.Nested(ChallengeSchema), required=True)
    outgoing = f.List(f.Nested(ChallengeSchema), required=True)


@blp.route("")
class Challenges(MethodView):
    @auth_first
    @blp.arguments(ChallengeCreateSchema())
    @blp.response(201, ChallengeSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, E400, E401, E403, E409, E413, E422, E429)
    def post(self, data: dict[str, Any]) -> Any:
        """Challenge players: each gets a `challenge` notice on /v1/me/events. Refused with
        403 `blocked` / `challenges_off`, or 429 over CHALLENGE_RATE_LIMIT or
        CHALLENGE_PAIR_RATE_LIMIT (with Retry-After)."""
        pid = require_player()
        cfg = config()
        opponents = data.pop("opponents")
        seat_order = data.pop("seat_order", None)
        ttl = data.pop("expires_in_s", None) or cfg.challenge_ttl_s
        ch = challenges.create(store(), pid, opponents, data, seat_order=seat_order,
                               ttl_s=ttl, max_open=cfg.challenge_max_open,
                               limits=cfg.challenge_limits())
        return json_response(challenge_names(ch.public()), 201, {"Location": f"/v1/challenges/{ch.id}"})


@blp.route("/<challenge_id>")
class Challenge(MethodView):
    @blp.response(200, ChallengeSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, E401, E404)
    def get(self, challenge_id: str) -> Any:
        """A challenge you made or were named in (others get 404)."""
        return json_response(challenge_names(
            challenges.get(store(), challenge_id, require_player()).public()))


@blp.route("/<challenge_id>/accept")
class Accept(MethodView):
    @blp.response(200, ChallengeSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, E401, E403, E404, E409)
    def post(self, challenge_id: str) -> Any:
        """Accept; the last accept starts the match (match_id). A repeat is harmless."""
        return json_response(challenge_names(challenges.accept(
            store(), challenge_id, require_player()).public()))


class DeclineSchema(ma.Schema):
    reason = f.String(validate=[v.Length(1, challenges.REASON_MAX), _utf8], metadata={
        "description": "optional: why, shown to the challenger (and every opponent)"})


@blp.route("/<challenge_id>/decline")
class Decline(MethodView):
    @auth_first
    @blp.arguments(DeclineSchema(), required=False)
    @blp.response(200, ChallengeSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, E400, E401, E403, E404, E409, E413, E422)
    def post(self, data: dict[str, Any], challenge_id: str) -> Any:
        """Decline (also after accepting, while it is open): the challenge closes. The body is
        optional: `{"reason": "..."}` tells the challenger why."""
        return json_response(challenge_names(challenges.decline(
            store(), challenge_id, require_player(), reason=(data or {}).get("reason")).public()))


@blp.route("/<challenge_id>/cancel")
class Cancel(MethodView):
    @blp.response(200, ChallengeSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, E401, E403, E404, E409)
    def post(self, challenge_id: str) -> Any:
        """Withdraw your open challenge (challenger only). A repeat is harmless."""
        return json_response(challenge_names(
            challenges.cancel(store(), challenge_id, require_player()).public()))
