"""What the engine offers, as data: the bounds and defaults of match options, and every ruleset
described for clients (``GET /v1/rulesets``). The API's schemas take their bounds from here, so
a new ruleset (say, for 8 players) widens them without an edit elsewhere.

>>> OPTION_BOUNDS["players"], OPTION_BOUNDS["tokens_to_win"], OPTION_DEFAULTS["two_player_setup"]
((2, 6), (1, 20), 'three-up')
>>> [r["name"] for r in describe_rulesets()["rulesets"]]
['2019', '2019-classic', 'classic']
"""

from __future__ import annotations

from typing import Any

from .actions import SHAPES
from .cards import CARDS, NAMES, RULESETS, Card
from .rules import MAX_TOKENS_TO_WIN, TWO_PLAYER_SETUPS


def _bounds() -> dict[str, tuple[int, int]]:
    rulesets = RULESETS.values()
    max_players = max(rs.max_players for rs in rulesets)
    return {
        "players": (min(rs.min_players for rs in rulesets), max_players),
        "seat": (0, max_players - 1),
        "tokens_to_win": (1, MAX_TOKENS_TO_WIN),
        "deck_size": (min(rs.deck_size for rs in rulesets), max(rs.deck_size for rs in rulesets)),
        # a chancellor return puts back every drawn card (R17)
        "returned": (0, max(spec.draws for spec in CARDS.values())),
    }


#: (lowest, highest) of each bounded match option and action field, over every ruleset.
OPTION_BOUNDS: dict[str, tuple[int, int]] = _bounds()

#: Options a match takes when they are left out. ``tokens_to_win`` defaults to the ruleset's
#: table for the player count; ``first_seat`` and ``seed`` are drawn at random.
OPTION_DEFAULTS: dict[str, Any] = {"two_player_setup": TWO_PLAYER_SETUPS[0]}

#: Every card name, in card order.
CARD_NAMES: tuple[str, ...] = NAMES


def describe_rulesets() -> dict[str, Any]:
    """Every ruleset (cards with values, copies, targets and one-line effects; player range;
    tokens to win; tie and spy rules), the 2-player setups, the option defaults and bounds and
    the fields of each action type (``actions.SHAPES``)."""
    return {
        "rulesets": [RULESETS[name].describe() for name in sorted(RULESETS)],
        "cards": [
            {"name": NAMES[c], "id": int(c), "target": CARDS[c].target.value,
             "guesses": CARDS[c].guesses, "effect": CARDS[c].summary, "rules": CARDS[c].rules}
            for c in Card
        ],
        "two_player_setups": list(TWO_PLAYER_SETUPS),
        "defaults": dict(OPTION_DEFAULTS),
        "bounds": {k: {"min": lo, "max": hi} for k, (lo, hi) in OPTION_BOUNDS.items()},
        "actions": {kind: [{"name": s.name, "kind": s.kind, "required": s.required}
                           for s in shape] for kind, shape in SHAPES.items()},
    }


if __name__ == "__main__":  # `make openapi` writes the SDK's copy: sdk/llsdk/rulesets.json
    import json

    print(json.dumps(describe_rulesets(), indent=1))
