"""Players: register (the token is shown once) and public profiles."""

from __future__ import annotations

import time
from typing import Any

import marshmallow as ma
from flask import current_app
from flask.views import MethodView
from marshmallow import fields as f

from ..http.params import Blueprint
from ..http.views import summary
from ..store import aborts, ladders, matches, moderation, players, presence
from .common import (
    E400,
    E404,
    E409,
    E413,
    E422,
    config,
    document_errors,
    json_response,
    store,
)

blp = Blueprint("players", __name__, url_prefix="/v1/players",
                description="Register bots and people; public profiles.")


def _name(value: str) -> None:
    if not players.valid_name(value):  # fullmatch: a regex `$` accepts a final newline
        raise ma.ValidationError(players.NAME_RULE)


class RegisterSchema(ma.Schema):
    name = f.String(required=True, validate=_name, metadata={
        "pattern": f"^{players.NAME_PATTERN}$", "minLength": 1, "maxLength": 32,
        "description": f"{players.NAME_RULE}; unique regardless of case (Unicode NFKC + "
                       "casefold); names starting with 'house-' (or 'house_', 'house.') are "
                       "reserved for the house bots"})
    kind = f.String(load_default="bot", validate=ma.validate.OneOf(players.KINDS), metadata={
        "description": "bot (a program; the default) or human (a person at a page); shown on "
                       "profiles and leaderboards, not verified"})


class RegisteredSchema(ma.Schema):
    id = f.String(required=True)
    name = f.String(required=True)
    kind = f.String(required=True)
    token = f.String(required=True, metadata={"description": "shown once; send as Bearer"})
    created_at = f.Float()


class PresenceSchema(ma.Schema):
    state = f.String(required=True, validate=ma.validate.OneOf(["online", "away"]))
    last_seen = f.Float(allow_none=True, metadata={"description": "its last poll (epoch s)"})
    window_s = f.Integer(required=True)


class LadderPresenceSchema(ma.Schema):
    entered = f.Boolean(required=True)
    present = f.Boolean(required=True)
    benched = f.Boolean(required=True)
    benched_reason = f.String(allow_none=True)
    active_matches = f.Integer()


class ProfileSchema(ma.Schema):
    id = f.String(required=True)
    name = f.String(required=True)
    kind = f.String(required=True, metadata={"description": "bot or human"})
    created_at = f.Float()
    recent_matches = f.List(f.Dict())
    ratings = f.Dict(metadata={
        "description": "ladder -> rating, season (the current one) and history (newest first, "
                       "each rated match with the season it counted for)"})
    presence = f.Nested(PresenceSchema, metadata={
        "description": "online (polled within ONLINE_WINDOW_S, a waiting long-poll included) "
                       "or away"})
    ladders = f.Dict(keys=f.String(), values=f.Nested(LadderPresenceSchema), metadata={
        "description": "each ladder it is entered in or rated on: present, benched and why"})
    aborts_24h = f.Integer(metadata={
        "description": "rated matches it aborted by being absent in the last 24 h"})
    bench = f.Dict(allow_none=True, metadata={
        "description": "benched from every ladder for repeated aborts: until (epoch s), "
                       "reason, level (1 for the first bench within 7 days); null: not"})


@blp.route("")
class Players(MethodView):
    @blp.arguments(RegisterSchema())
    @blp.response(201, RegisteredSchema)
    @document_errors(blp, E400, E409, E413, E422)
    def post(self, data: dict[str, Any]) -> Any:
        """Register a player; the token in the answer is shown only this once."""
        return json_response(players.register(store(), data["name"], data["kind"]), 201)


class OnlineQuerySchema(ma.Schema):
    limit = f.Integer(load_default=100, validate=ma.validate.Range(1, 500))


class OnlineRowSchema(ma.Schema):
    id = f.String(required=True)
    name = f.String(required=True)
    kind = f.String(required=True)
    ladders = f.List(f.String(), required=True, metadata={
        "description": "the ladders it is entered in and present on"})
    accepts_challenges = f.Boolean(required=True, metadata={
        "description": "it polls /v1/me/events with challenges=true and has not turned "
                       "challenges off (PATCH /v1/me)"})
    last_seen = f.Float(allow_none=True, required=True, metadata={
        "description": "its last poll (epoch s)"})


class OnlineSchema(ma.Schema):
    players = f.List(f.Nested(OnlineRowSchema), required=True)
    window_s = f.Integer(required=True, metadata={
        "description": "a poll this recent counts as online"})


@blp.route("/online")
class Online(MethodView):
    @blp.arguments(OnlineQuerySchema(), location="query")
    @blp.response(200, OnlineSchema)
    @document_errors(blp, E422)
    def get(self, args: dict[str, Any]) -> Any:
        """Who is online: present on a ladder, or listening for challenges; by name."""
        window = config().online_window_s
        rows = presence.online(store(), current_app.extensions["ladders"].values(),
                               window_s=window, limit=args["limit"])
        return json_response({"players": rows, "window_s": window})


@blp.route("/<player_id:player_id>")
class Player(MethodView):
    @blp.response(200, ProfileSchema)
    @document_errors(blp, E404)
    def get(self, player_id: str) -> Any:
        """A player's public profile and recent matches."""
        r = store()
        profile = players.get(r, player_id)
        ids, _ = matches.list_ids(r, player=player_id, limit=20)
        profile["recent_matches"] = [summary(d) for d in matches.load_many(r, ids)]
        profile.update(aborts.status(r, player_id))
        profile["ratings"] = {}
        profile["ladders"] = {}
        for lad in current_app.extensions["ladders"].values():
            standing = ladders.standing(r, lad, player_id)
            if standing is not None:
                # each rated match marked with its season (a reset starts a new one)
                season = moderation.season(r, lad)
                standing["season"] = season["season"]
                for h in standing["history"]:
                    h["season"] = moderation.season_of(season, float(h["at"]))
                profile["ratings"][lad.name] = standing
            entry = ladders.entry_status(r, lad, player_id)
            if standing is not None or entry["entered"] or entry["benched"]:
                profile["ladders"][lad.name] = {k: entry[k] for k in (
                    "entered", "present", "benched", "benched_reason", "active_matches")}
        window = config().online_window_s
        seen = presence.last_seen(r, player_id)
        profile["presence"] = {"state": presence.state(seen, time.time(), window),
                               "last_seen": seen, "window_s": window}
        return json_response(profile)
