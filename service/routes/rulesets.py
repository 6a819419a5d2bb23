"""Rulesets: the cards, player ranges, tokens to win and option bounds, as the engine has them.

One document, built once from ``service.engine.catalog`` (the card table and ``RULESETS``): the
SDK's card tables (``sdk/llsdk/rulesets.json``) and the web pages' card faces read the same."""

from __future__ import annotations

from typing import Any

import marshmallow as ma
from flask.views import MethodView
from marshmallow import fields as f
from marshmallow import validate as v

from ..engine import Target
from ..engine.catalog import describe_rulesets
from ..http.params import Blueprint
from .common import json_response

blp = Blueprint("rulesets", __name__, url_prefix="/v1/rulesets",
                description="The rules variants: cards, values, copies, effects, player ranges.")

_DOC = describe_rulesets()  # immutable while the process runs: the engine's tables are constant
_TARGETS = [t.value for t in Target]


class CardSchema(ma.Schema):
    name = f.String(required=True, metadata={"description": "the card's wire name"})
    value = f.Integer(required=True)
    copies = f.Integer(required=True)
    target = f.String(required=True, validate=v.OneOf(_TARGETS), metadata={
        "description": "none; other: another player in the round and not protected (none left: "
                       "played without a target); any: the same or oneself (the prince)"})
    guesses = f.Boolean(required=True, metadata={"description": "names a card (the guard)"})
    effect = f.String(required=True, metadata={"description": "the effect in one line"})
    rules = f.String(required=True, metadata={"description": "rule numbers (docs/rules.md)"})


class RulesetSchema(ma.Schema):
    name = f.String(required=True)
    summary = f.String(required=True)
    min_players = f.Integer(required=True)
    max_players = f.Integer(required=True)
    tokens_to_win = f.Dict(keys=f.String(), values=f.Integer(), required=True,
                           metadata={"description": "players -> tokens to win (the default)"})
    discard_tiebreak = f.Boolean(required=True, metadata={
        "description": "R22: a showdown tie goes to the higher total of discarded values"})
    spy_bonus = f.Boolean(required=True, metadata={"description": "R24"})
    deck_size = f.Integer(required=True)
    cards = f.List(f.Nested(CardSchema), required=True)


class CardKindSchema(ma.Schema):
    name = f.String(required=True)
    id = f.Integer(required=True, metadata={"description": "the engine's card id"})
    target = f.String(required=True, validate=v.OneOf(_TARGETS))
    guesses = f.Boolean(required=True)
    effect = f.String(required=True)
    rules = f.String(required=True)


class BoundSchema(ma.Schema):
    min = f.Integer(required=True)
    max = f.Integer(required=True)


class ActionFieldSchema(ma.Schema):
    name = f.String(required=True)
    kind = f.String(required=True, metadata={
        "description": "card (a card name), seat (a seat number) or cards (a list of names)"})
    required = f.Boolean(required=True)


class RulesetsSchema(ma.Schema):
    rulesets = f.List(f.Nested(RulesetSchema), required=True)
    cards = f.List(f.Nested(CardKindSchema), required=True,
                   metadata={"description": "every card kind, in card order"})
    two_player_setups = f.List(f.String(), required=True)
    defaults = f.Dict(keys=f.String(), required=True,
                      metadata={"description": "match options left out take these"})
    bounds = f.Dict(keys=f.String(), values=f.Nested(BoundSchema), required=True, metadata={
        "description": "players, seat, tokens_to_win, deck_size, returned (a chancellor's "
                       "bottom cards): the lowest and highest over every ruleset"})
    actions = f.Dict(keys=f.String(), values=f.List(f.Nested(ActionFieldSchema)), required=True,
                     metadata={"description": "each action type's fields besides type: what "
                                              "POST .../actions takes"})


@blp.route("")
class Rulesets(MethodView):
    @blp.response(200, RulesetsSchema)
    def get(self) -> Any:
        """Every ruleset with its cards (values, copies, one-line effects), player range and
        tokens to win; the option defaults and bounds. No token needed; cacheable."""
        return json_response(_DOC, headers={"Cache-Control": "public, max-age=3600"})
