"""Marshmallow schemas shared by several blueprints (views and summaries).

Views are built as plain dicts by ``service.http.views`` and these schemas describe them for the
OpenAPI document (and for schemathesis's response checks)."""

from __future__ import annotations

import marshmallow as ma
from marshmallow import fields as f
from marshmallow import validate as v

from ..engine import NAMES, RULESETS, Phase
from ..engine.catalog import OPTION_BOUNDS, OPTION_DEFAULTS
from ..http.params import QueryInt

CARD = f.String(validate=v.OneOf(NAMES))
RULESET = v.OneOf(sorted(RULESETS))
# Bounds and defaults of match options, from the engine's rulesets (GET /v1/rulesets serves
# the same): a ruleset for more players widens them without an edit here.
MIN_PLAYERS, MAX_PLAYERS = OPTION_BOUNDS["players"]
SEAT = v.Range(*OPTION_BOUNDS["seat"])
PLAYERS = v.Range(MIN_PLAYERS, MAX_PLAYERS)
TOKENS_TO_WIN = v.Range(*OPTION_BOUNDS["tokens_to_win"])
DECK_LENGTH = v.Length(1, OPTION_BOUNDS["deck_size"][1])
RETURNED = v.Length(*OPTION_BOUNDS["returned"])
DEFAULT_TWO_PLAYER_SETUP: str = OPTION_DEFAULTS["two_player_setup"]


class Open(ma.Schema):
    class Meta:
        unknown = ma.INCLUDE


class FixedSchema(Open):
    fixed_by_creator = f.Boolean(required=True, metadata={
        "description": "the creator chose the seed, the deck or the first seat: they may know "
                       "every hand"})
    fixed_options = f.List(f.String(validate=v.OneOf(["deck", "first_seat", "seed"])),
                           required=True, metadata={"description": "which of them"})


class TurnSchema(Open):
    seat = f.Integer(required=True)
    phase = f.String(required=True, validate=v.OneOf([p.value for p in Phase]))
    deadline = f.String(allow_none=True, metadata={"description": "RFC 3339 UTC"})
    seconds_left = f.Float(allow_none=True)


class SeatSchema(Open):
    seat = f.Integer(required=True)
    player_id = f.String()
    name = f.String()
    tokens = f.Integer()
    discards = f.List(f.String())
    hand_count = f.Integer()
    eliminated = f.Boolean()
    protected = f.Boolean()
    forfeited = f.Boolean()


class AbortedSchema(Open):
    """Why a rated match ended unrated (its status is ``finished``, its ``result`` null)."""

    reason = f.String(required=True, metadata={"description": "absent: a seat made no move of "
                                               "its own before its first turn timed out"})
    seat = f.Integer(required=True, metadata={"description": "the absent seat"})
    player_id = f.String(required=True)
    message = f.String(required=True)


class ResultSchema(Open):
    winners = f.List(f.Integer(), required=True)
    placings = f.List(f.Integer(), required=True)
    tokens = f.List(f.Integer())
    rounds = f.Integer()


class ViewSchema(Open):
    """A player's view (``seat`` set) or the public summary (``seat`` null)."""

    match_id = f.String(required=True)
    version = f.Integer(required=True)
    status = f.String(required=True, validate=v.OneOf(["waiting", "active", "finished"]))
    ruleset = f.String(required=True)
    seat = f.Integer(allow_none=True, required=True)
    round = f.Integer(required=True)
    turn = f.Nested(TurnSchema, allow_none=True, required=True)
    hand = f.List(f.String(), metadata={"description": "the caller's cards (players only)"})
    players = f.List(f.Nested(SeatSchema), required=True)
    deck_count = f.Integer(required=True)
    face_up = f.List(f.String(), required=True)
    known = f.List(f.Dict(), metadata={"description": "private facts with seq/round/turn"})
    legal_actions = f.List(f.Dict(), metadata={"description": "post one back verbatim"})
    events = f.List(f.Dict(), required=True)
    result = f.Nested(ResultSchema, allow_none=True, required=True)
    last_round = f.Dict(allow_none=True)
    options = f.Nested(FixedSchema, metadata={
        "description": "how the match was made: ruleset, seats, timeouts, tokens_to_win, "
                       "two_player_setup, fixed_by_creator and fixed_options; seed, deck and "
                       "first_seat once it has ended"})
    aborted = f.Nested(AbortedSchema, allow_none=True, metadata={
        "description": "set when a rated match was aborted (rated for nobody)"})


class MatchSummarySchema(Open):
    match_id = f.String(required=True)
    status = f.String(required=True)
    ruleset = f.String(required=True)
    seats = f.Integer(required=True)
    players = f.List(f.Dict(), required=True)
    version = f.Integer(required=True)
    round = f.Integer()
    turn_seat = f.Integer(allow_none=True)
    winners = f.List(f.Integer(), allow_none=True)
    seat = f.Integer(allow_none=True)
    your_turn = f.Boolean()
    aborted = f.Nested(AbortedSchema, allow_none=True)
    options = f.Nested(FixedSchema, metadata={"description": "whether the creator fixed the "
                                                            "cards (unrated matches only)"})


class MatchListSchema(ma.Schema):
    matches = f.List(f.Nested(MatchSummarySchema), required=True)
    next_cursor = f.Integer(allow_none=True, required=True)


class ListQuerySchema(ma.Schema):
    status = f.String(validate=v.OneOf(["waiting", "active", "finished"]))
    limit = QueryInt(1, 100, load_default=20)
    # bounded: Redis takes 64-bit offsets only (a larger one was a 500)
    cursor = QueryInt(0, 2**31 - 1, load_default=0)
