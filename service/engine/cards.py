"""Cards and rulesets (R1-R4).

A :class:`Card` is an identity, not a value: its integer is its position in the 2019 order and
values come from the ruleset (the classic King is worth 6, the 2019 King 7).

>>> Card.parse("king").value_in(RULESETS["classic"])
6
>>> Card.KING.value_in(RULESETS["2019"])
7
>>> RULESETS["2019-classic"].deck_size
16
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from .errors import EngineError


class Card(IntEnum):
    """A card kind. Its wire name is the lower-case member name (``Card.GUARD.label == "guard"``)."""

    SPY = 0
    GUARD = 1
    PRIEST = 2
    BARON = 3
    HANDMAID = 4
    PRINCE = 5
    CHANCELLOR = 6
    KING = 7
    COUNTESS = 8
    PRINCESS = 9

    @property
    def label(self) -> str:
        """The card's name on the wire, e.g. ``"guard"``."""
        return NAMES[self]

    def value_in(self, ruleset: Ruleset) -> int:
        """The card's value under ``ruleset``; raises ``EngineError`` if the ruleset lacks it."""
        v = ruleset.values[self]
        if v < 0:
            raise EngineError("unknown_card", f"{self.label} is not in ruleset {ruleset.name}")
        return v

    @classmethod
    def parse(cls, name: object) -> Card:
        """Parse a wire name; raises ``EngineError('malformed_action')`` for anything else.

        >>> Card.parse("princess")
        <Card.PRINCESS: 9>
        """
        if isinstance(name, str):
            card = BY_NAME.get(name)
            if card is not None:
                return card
        raise EngineError("malformed_action", f"unknown card {name!r}")


NAMES: tuple[str, ...] = tuple(c.name.lower() for c in Card)
BY_NAME: dict[str, Card] = {c.name.lower(): c for c in Card}

_ABSENT = -1


@dataclass(frozen=True)
class Ruleset:
    """One rules variant: values, copies, player range, token table, tie and spy rules."""

    name: str
    values: tuple[int, ...]  # indexed by Card; -1 when the ruleset has no such card
    copies: tuple[int, ...]  # indexed by Card
    min_players: int
    max_players: int
    tokens: dict[int, int]  # players -> tokens to win
    discard_tiebreak: bool  # R22 (classic) vs R23 (shared ties)
    spy_bonus: bool  # R24

    @property
    def cards(self) -> tuple[Card, ...]:
        """The card kinds in this ruleset, in card order."""
        return tuple(c for c in Card if self.copies[c] > 0)

    @property
    def guessable(self) -> tuple[Card, ...]:
        """Cards a guard may name (R12): every kind in the ruleset but the guard."""
        return tuple(c for c in self.cards if c is not Card.GUARD)

    @property
    def deck_size(self) -> int:
        return sum(self.copies)

    def deck(self) -> list[int]:
        """The full deck in canonical (unshuffled) order."""
        out: list[int] = []
        for c in Card:
            out.extend([int(c)] * self.copies[c])
        return out

    def tokens_to_win(self, players: int) -> int:
        return self.tokens[players]


_CLASSIC_VALUES = (_ABSENT, 1, 2, 3, 4, 5, _ABSENT, 6, 7, 8)
_2019_VALUES = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
_2019_TOKENS = {2: 6, 3: 5, 4: 4, 5: 3, 6: 3}

RULESETS: dict[str, Ruleset] = {
    "classic": Ruleset(
        "classic", _CLASSIC_VALUES, (0, 5, 2, 2, 2, 2, 0, 1, 1, 1), 2, 4,
        {2: 7, 3: 5, 4: 4}, discard_tiebreak=True, spy_bonus=False,
    ),
    "2019": Ruleset(
        "2019", _2019_VALUES, (2, 6, 2, 2, 2, 2, 2, 1, 1, 1), 2, 6,
        _2019_TOKENS, discard_tiebreak=False, spy_bonus=True,
    ),
    # R3: the 2019 rules and values, minus 1 guard, both chancellors and both spies.
    "2019-classic": Ruleset(
        "2019-classic", _2019_VALUES, (0, 5, 2, 2, 2, 2, 0, 1, 1, 1), 2, 4,
        {k: v for k, v in _2019_TOKENS.items() if k <= 4}, discard_tiebreak=False, spy_bonus=True,
    ),
}


def get_ruleset(name: object) -> Ruleset:
    """Look a ruleset up by name; unknown names raise ``EngineError('invalid_options')``."""
    if isinstance(name, str) and name in RULESETS:
        return RULESETS[name]
    raise EngineError(
        "invalid_options", f"unknown ruleset {name!r}; expected one of {sorted(RULESETS)}"
    )
