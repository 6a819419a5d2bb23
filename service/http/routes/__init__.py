"""HTTP blueprints, one per resource."""

from . import challenges, health, ladders, matches, me, players

BLUEPRINTS = [health.blp, players.blp, matches.blp, challenges.blp, me.blp, ladders.blp]
