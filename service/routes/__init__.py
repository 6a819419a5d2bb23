"""The HTTP API's blueprints, one per resource: parse, call the store, shape the answer."""

from . import (
              account,
              admin,
              blocks,
              challenges,
              health,
              index,
              ladders,
              matches,
              me,
              players,
              rulesets,
)

BLUEPRINTS = [health.blp, index.blp, players.blp, matches.blp, challenges.blp, me.blp, blocks.blp,
              ladders.blp, rulesets.blp, account.blp, admin.blp]
