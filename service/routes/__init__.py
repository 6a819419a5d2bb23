"""HTTP blueprints, one per resource."""

from . import health, ladders, matches, me, players

BLUEPRINTS = [health.blp, players.blp, matches.blp, me.blp, ladders.blp]
