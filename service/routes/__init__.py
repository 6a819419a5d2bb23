"""The HTTP API's blueprints, one per resource: parse, call the store, shape the answer."""

from . import challenges, health, index, ladders, matches, me, players, rulesets

BLUEPRINTS = [health.blp, index.blp, players.blp, matches.blp, challenges.blp, me.blp, ladders.blp,
              rulesets.blp]
