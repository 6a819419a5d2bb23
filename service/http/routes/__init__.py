"""HTTP blueprints, one per resource."""

from . import blocks, challenges, health, index, ladders, matches, me, players, rulesets

BLUEPRINTS = [health.blp, index.blp, players.blp, matches.blp, challenges.blp, me.blp, blocks.blp,
              ladders.blp, rulesets.blp]
