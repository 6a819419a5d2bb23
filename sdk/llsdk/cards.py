"""Reference data for bot authors: card names, values and copies per ruleset (docs/rules.md#R1).

The rules themselves live only in the service's engine; these tables are what a bot needs to
reason about a view (a test checks that they equal the engine's).

>>> value("king", "classic"), value("king", "2019")
(6, 7)
>>> deck_counts("classic")["guard"], sum(deck_counts("2019").values())
(5, 21)
"""

from __future__ import annotations

#: every card name, in card order (the engine's ``Card`` order)
CARDS: tuple[str, ...] = ("spy", "guard", "priest", "baron", "handmaid", "prince", "chancellor",
                          "king", "countess", "princess")

_CLASSIC_VALUES = {"guard": 1, "priest": 2, "baron": 3, "handmaid": 4, "prince": 5, "king": 6,
                   "countess": 7, "princess": 8}
_2019_VALUES = {name: i for i, name in enumerate(CARDS)}
_CLASSIC_COPIES = {"guard": 5, "priest": 2, "baron": 2, "handmaid": 2, "prince": 2, "king": 1,
                   "countess": 1, "princess": 1}
_2019_COPIES = {"spy": 2, "guard": 6, "priest": 2, "baron": 2, "handmaid": 2, "prince": 2,
                "chancellor": 2, "king": 1, "countess": 1, "princess": 1}

#: ruleset -> card -> value (cards absent from a ruleset are absent from its table)
VALUES: dict[str, dict[str, int]] = {
    "classic": _CLASSIC_VALUES,
    "2019": _2019_VALUES,
    "2019-classic": {c: _2019_VALUES[c] for c in _CLASSIC_COPIES},
}

#: ruleset -> card -> copies in the deck
COPIES: dict[str, dict[str, int]] = {
    "classic": _CLASSIC_COPIES,
    "2019": _2019_COPIES,
    "2019-classic": dict(_CLASSIC_COPIES),
}

#: ruleset -> players -> tokens to win (R1-R3)
TOKENS_TO_WIN: dict[str, dict[int, int]] = {
    "classic": {2: 7, 3: 5, 4: 4},
    "2019": {2: 6, 3: 5, 4: 4, 5: 3, 6: 3},
    "2019-classic": {2: 6, 3: 5, 4: 4},
}


def value(card: str, ruleset: str) -> int:
    """The value of ``card`` under ``ruleset``."""
    return VALUES[ruleset][card]


def deck_counts(ruleset: str) -> dict[str, int]:
    """A fresh ``{card: copies}`` of the whole deck of ``ruleset``."""
    return dict(COPIES[ruleset])


__all__ = ["CARDS", "COPIES", "TOKENS_TO_WIN", "VALUES", "deck_counts", "value"]
