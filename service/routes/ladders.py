"""Ladders: configuration, leaderboards, entering and leaving."""

from __future__ import annotations

from typing import Any

import marshmallow as ma
from flask import current_app
from flask.views import MethodView
from marshmallow import fields as f

from ..config import LadderConfig
from ..http.errors import ApiError
from ..http.params import Blueprint
from ..store import ladders, moderation
from .common import (
    AUTH,
    E401,
    E403,
    E404,
    document_errors,
    json_response,
    require_player,
    store,
)

blp = Blueprint("ladders", __name__, url_prefix="/v1/ladders",
                description="The public bot ladders: enter, leave, leaderboards.")


class LadderSchema(ma.Schema):
    name = f.String(required=True)
    ruleset = f.String(required=True)
    seats = f.Integer(required=True)
    turn_timeout_s = f.Integer()
    interval_s = f.Integer()
    max_concurrent = f.Integer(metadata={"description": "matches of this ladder one bot may "
                                                        "play at once"})
    description = f.String()
    presence_window_s = f.Integer(metadata={"description": "a bot is scheduled only while it "
                                                           "listens: a poll within this many "
                                                           "seconds (a waiting long-poll counts)"})
    bench_after = f.Integer(metadata={"description": "consecutive ladder matches with a timeout "
                                                     "or forfeit that bench a bot"})
    provisional_games = f.Integer(metadata={"description": "games before a rating stops being "
                                                           "provisional"})
    humans = f.Boolean(metadata={"description": "whether people (kind human) may enter"})
    rematch_hold_s = f.Integer(metadata={"description": "how long (s) a table that is exactly a "
                                                        "bot's previous table waits for other "
                                                        "bots to come free"})
    abort_bench_after = f.Integer(metadata={
        "description": "aborts (absent from a rated match) within abort_window_s that bench a "
                       "bot from every ladder for a time"})
    abort_window_s = f.Integer(metadata={"description": "the window those aborts count in"})
    abort_bench_s = f.List(f.Integer(), metadata={
        "description": "the escalating bench lengths (s): the first bench, then each next one "
                       "within 7 days; the last repeats"})
    entries = f.Integer()


class LadderListSchema(ma.Schema):
    ladders = f.List(f.Nested(LadderSchema), required=True)


class RowSchema(ma.Schema):
    class Meta:
        unknown = ma.INCLUDE

    rank = f.Integer(required=True)
    player_id = f.String(required=True)
    name = f.String(required=True)
    kind = f.String(required=True, metadata={"description": "bot or human"})
    rating = f.Float(required=True, metadata={"description": "mu - 3 sigma"})
    mu = f.Float(required=True)
    sigma = f.Float(required=True)
    games = f.Integer(required=True)
    wins = f.Integer(required=True)
    win_rate = f.Float(allow_none=True)
    timeouts = f.Integer()
    seat_balance = f.List(f.Integer(), metadata={"description": "games played in each seat"})
    provisional = f.Boolean()
    benched = f.Boolean(metadata={"description": "not scheduled until it polls again"})
    benched_reason = f.String(allow_none=True)
    entered = f.Boolean()
    present = f.Boolean(metadata={"description": "listening: polled within presence_window_s "
                                                "or waiting in a long-poll"})
    active_matches = f.Integer(metadata={"description": "ladder matches it is playing"})
    last_played_at = f.Float(allow_none=True, metadata={"description": "when its last match "
                                                                       "was rated (epoch s)"})


class LeaderboardSchema(LadderSchema):
    leaderboard = f.List(f.Nested(RowSchema), required=True)
    season = f.Integer(metadata={"description": "1, then one more at each reset by an operator "
                                                "(ratings back to the prior)"})
    season_started_at = f.Float(allow_none=True, metadata={
        "description": "when this season started (epoch s); null for season 1"})


class EntrySchema(ma.Schema):
    ladder = f.String(required=True)
    player_id = f.String(required=True)
    entered = f.Boolean(required=True)
    present = f.Boolean()
    benched = f.Boolean()
    benched_reason = f.String(allow_none=True)
    active_matches = f.Integer()


def configured() -> dict[str, LadderConfig]:
    return current_app.extensions["ladders"]  # type: ignore[no-any-return]


def _ladder(name: str) -> LadderConfig:
    lad = configured().get(name)
    if lad is None:
        raise ApiError("not_found", f"no ladder {name!r}; GET /v1/ladders lists them")
    return lad


@blp.route("")
class Ladders(MethodView):
    @blp.response(200, LadderListSchema)
    @document_errors(blp)
    def get(self) -> Any:
        """The configured ladders."""
        r = store()
        out = []
        for lad in configured().values():
            d = lad.to_dict()
            d["entries"] = ladders.entry_count(r, lad)
            out.append(d)
        return json_response({"ladders": out})


@blp.route("/<name>")
class Ladder(MethodView):
    @blp.response(200, LeaderboardSchema)
    @document_errors(blp, E404)
    def get(self, name: str) -> Any:
        """The leaderboard, best conservative rating (mu - 3 sigma) first."""
        lad = _ladder(name)
        d = lad.to_dict()
        season = moderation.season(store(), lad)
        d.update(leaderboard=ladders.leaderboard(store(), lad), season=season["season"],
                 season_started_at=season["started_at"])
        return json_response(d)


@blp.route("/<name>/entries")
class Entries(MethodView):
    @blp.response(200, EntrySchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, E401, E403, E404)
    def post(self, name: str) -> Any:
        """Enter the ladder; you are scheduled while you poll (long-poll /v1/me/events)."""
        return json_response(ladders.enter(store(), _ladder(name), require_player()))

    @blp.response(200, EntrySchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, E401, E404)
    def delete(self, name: str) -> Any:
        """Leave the ladder (running matches are played out). The answer comes once no scheduling
        pass can seat you; its `active_matches` counts every match you were given."""
        return json_response(ladders.leave(store(), _ladder(name), require_player()))
