"""HTTP blueprints, one per resource."""

from . import health, matches, me, players

BLUEPRINTS = [health.blp, players.blp, matches.blp, me.blp]
