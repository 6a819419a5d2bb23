"""Cards and rulesets as data (R1-R4): one table of card specs, one entry per ruleset.

A :class:`Card` is an identity, not a value: its integer is stored in every match state (so ids
are append-only) and values come from the ruleset (the classic King is worth 6, the 2019 King 7).
What a card *does* is its :class:`CardSpec` row in :data:`CARDS`: who it may target, whether it
names a card, what forces it, what a timeout avoids, which private facts it reveals, and its one
line of rules text. Legal actions, explanations, automatic moves, views and ``GET /v1/rulesets``
are all derived from this table; the effect itself is one function per card in ``effects``.

>>> Card.parse("king").value_in(RULESETS["classic"])
6
>>> Card.KING.value_in(RULESETS["2019"])
7
>>> RULESETS["2019-classic"].deck_size
16
>>> CARDS[Card.GUARD].target, CARDS[Card.GUARD].guesses
(<Target.OTHER: 'other'>, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any

from .errors import InvalidOptions, MalformedAction, UnknownCard


class Card(IntEnum):
    """A card kind. Its wire name is the lower-case member name (``Card.GUARD.label == "guard"``).

    The numbers are stored in match states: never renumber, only append (a new card gets the next
    free number, whatever its value).
    """

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
        """The card's value under ``ruleset``; raises ``UnknownCard`` if the ruleset lacks it."""
        v = ruleset.values[self]
        if v < 0:
            raise UnknownCard(f"{self.label} is not in ruleset {ruleset.name}")
        return v

    @classmethod
    def parse(cls, name: object) -> Card:
        """Parse a wire name; raises ``MalformedAction`` for anything else.

        >>> Card.parse("princess")
        <Card.PRINCESS: 9>
        """
        if isinstance(name, str):
            card = BY_NAME.get(name)
            if card is not None:
                return card
        raise MalformedAction(f"unknown card {name!r}")


NAMES: tuple[str, ...] = tuple(c.name.lower() for c in Card)
BY_NAME: dict[str, Card] = {c.name.lower(): c for c in Card}


class Target(StrEnum):
    """Whom a card is played at."""

    NONE = "none"    # nobody
    OTHER = "other"  # another player in the round and not protected; none left: no target (R20a)
    ANY = "any"      # the same, or oneself (the prince); there is always at least oneself


@dataclass(frozen=True, slots=True)
class CardSpec:
    """What one card does, as data. ``effect`` lives in ``effects`` (one function per card)."""

    card: Card
    target: Target = Target.NONE
    guesses: bool = False  # names a card other than itself when it has a target (the guard, R12)
    forced_with: frozenset[Card] = frozenset()  # held with one of these, it must be played (R11)
    fatal: bool = False  # playing or discarding it knocks its holder out (the princess, R20)
    bonus: bool = False  # R24: the one player still in who played or discarded it gains a token
    draws: int = 0  # draws this many, then returns all but one to the deck's bottom (R17)
    facts: tuple[str, ...] = ()  # private event types its effect emits: the views' known facts
    summary: str = ""  # the effect in one line (GET /v1/rulesets, docs)
    rules: str = ""  # the rule numbers it follows

    @property
    def label(self) -> str:
        return NAMES[self.card]


#: The card table: every card's spec, by card id.
CARDS: dict[Card, CardSpec] = {spec.card: spec for spec in (
    CardSpec(Card.SPY, bonus=True, rules="R24",
             summary="No effect when played; at the round's end, if you are the only player "
                     "still in who played or discarded a spy, gain a token."),
    CardSpec(Card.GUARD, Target.OTHER, guesses=True, rules="R12",
             summary="Name a card other than the guard; if the target holds it, they are out."),
    CardSpec(Card.PRIEST, Target.OTHER, facts=("priest_saw",), rules="R13",
             summary="Look at the target's hand."),
    CardSpec(Card.BARON, Target.OTHER, facts=("baron_compared",), rules="R14",
             summary="Compare hands with the target privately; the lower card is out "
                     "(a tie: nobody)."),
    CardSpec(Card.HANDMAID, rules="R15",
             summary="Until your next turn, nobody can target you."),
    CardSpec(Card.PRINCE, Target.ANY, facts=("prince_drew",), rules="R16",
             summary="The target (you may pick yourself) discards their hand and draws a new "
                     "card (the set-aside card if the deck is empty); a discarded princess "
                     "knocks them out."),
    CardSpec(Card.CHANCELLOR, draws=2, facts=("chancellor_drew", "chancellor_returned"),
             rules="R17",
             summary="Draw two cards, keep one of your cards and put the others at the "
                     "bottom of the deck in the order you choose."),
    CardSpec(Card.KING, Target.OTHER, facts=("king_swapped",), rules="R18",
             summary="Trade hands with the target."),
    CardSpec(Card.COUNTESS, forced_with=frozenset({Card.KING, Card.PRINCE}), rules="R11, R19",
             summary="No effect; you must play her if you also hold the king or a prince."),
    CardSpec(Card.PRINCESS, fatal=True, rules="R20",
             summary="If you play or discard her, you are out of the round."),
)}


@dataclass(frozen=True)
class Ruleset:
    """One rules variant, as data: its cards (value and copies of each), player range, tokens
    to win by player count, and the tie and spy rules. Build one from a ``cards`` mapping; the
    per-card tuples ``values`` and ``copies`` (indexed by card id, ``-1``/``0`` when absent) are
    derived for the hot paths.

    >>> rs = Ruleset("tiny", {Card.GUARD: (1, 4), Card.PRIEST: (2, 2), Card.BARON: (3, 2),
    ...                       Card.PRINCESS: (8, 1)}, min_players=2, max_players=3,
    ...              tokens={2: 3, 3: 2})
    >>> rs.deck_size, [c.label for c in rs.guessable], rs.values[Card.PRINCESS]
    (9, ['priest', 'baron', 'princess'], 8)
    """

    name: str
    cards_table: Mapping[Card, tuple[int, int]]  # card -> (value, copies)
    min_players: int
    max_players: int
    tokens: Mapping[int, int]  # players -> tokens to win
    discard_tiebreak: bool = False  # R22 (classic) vs R23 (shared ties)
    spy_bonus: bool = False  # R24 (applies to the cards with ``bonus``)
    summary: str = ""
    values: tuple[int, ...] = field(init=False)  # indexed by Card; -1 when absent
    copies: tuple[int, ...] = field(init=False)  # indexed by Card; 0 when absent
    base_deck: tuple[int, ...] = field(init=False)  # the unshuffled deck, in card order

    def __post_init__(self) -> None:
        unknown = [c for c in self.cards_table if c not in CARDS]
        if unknown:
            raise InvalidOptions(f"ruleset {self.name}: no card spec for {unknown}")
        for c, (value, count) in self.cards_table.items():
            if type(value) is not int or type(count) is not int or value < 0 or count < 1:
                raise InvalidOptions(f"ruleset {self.name}: bad value or copies for {c.name}")
        if not 2 <= self.min_players <= self.max_players:
            raise InvalidOptions(f"ruleset {self.name}: bad player range")
        if sorted(self.tokens) != list(range(self.min_players, self.max_players + 1)):
            raise InvalidOptions(f"ruleset {self.name}: tokens to win for each player count")
        values = [-1] * len(Card)
        counts = [0] * len(Card)
        for c, (value, count) in self.cards_table.items():
            values[c], counts[c] = value, count
        object.__setattr__(self, "values", tuple(values))
        object.__setattr__(self, "copies", tuple(counts))
        object.__setattr__(self, "base_deck",
                           tuple(int(c) for c in Card for _ in range(counts[c])))
        # R5 + R6: the set-aside card (2p: up to 3 more face down and one face up), a card per
        # player and the first draw.
        if self.deck_size < max(8 if self.min_players == 2 else 0, self.max_players + 2):
            raise InvalidOptions(f"ruleset {self.name}: too few cards for {self.max_players}")

    @property
    def cards(self) -> tuple[Card, ...]:
        """The card kinds in this ruleset, in card order."""
        return tuple(c for c in Card if self.copies[c] > 0)

    @property
    def guessable(self) -> tuple[Card, ...]:
        """Cards a guesser may name (R12): every kind in the ruleset but the guessing cards."""
        return tuple(c for c in self.cards if not CARDS[c].guesses)

    @property
    def deck_size(self) -> int:
        return len(self.base_deck)

    def deck(self) -> list[int]:
        """The full deck in canonical (unshuffled) order."""
        return list(self.base_deck)

    def tokens_to_win(self, players: int) -> int:
        return self.tokens[players]

    def describe(self) -> dict[str, Any]:
        """The ruleset as JSON-ready data (``GET /v1/rulesets``)."""
        return {
            "name": self.name,
            "summary": self.summary,
            "min_players": self.min_players,
            "max_players": self.max_players,
            "tokens_to_win": {str(n): t for n, t in sorted(self.tokens.items())},
            "discard_tiebreak": self.discard_tiebreak,
            "spy_bonus": self.spy_bonus,
            "deck_size": self.deck_size,
            "cards": [
                {"name": NAMES[c], "value": self.values[c], "copies": self.copies[c],
                 "target": CARDS[c].target.value, "guesses": CARDS[c].guesses,
                 "effect": CARDS[c].summary, "rules": CARDS[c].rules}
                for c in self.cards
            ],
        }


_2019_TOKENS = {2: 6, 3: 5, 4: 4, 5: 3, 6: 3}


def _table(values: Mapping[Card, int], copies: Mapping[Card, int]) -> dict[Card, tuple[int, int]]:
    return {c: (values[c], copies[c]) for c in copies}


_CLASSIC_VALUES = {Card.GUARD: 1, Card.PRIEST: 2, Card.BARON: 3, Card.HANDMAID: 4,
                   Card.PRINCE: 5, Card.KING: 6, Card.COUNTESS: 7, Card.PRINCESS: 8}
_2019_VALUES = {c: int(c) for c in Card}
_CLASSIC_COPIES = {Card.GUARD: 5, Card.PRIEST: 2, Card.BARON: 2, Card.HANDMAID: 2,
                   Card.PRINCE: 2, Card.KING: 1, Card.COUNTESS: 1, Card.PRINCESS: 1}
_2019_COPIES = {Card.SPY: 2, Card.GUARD: 6, Card.PRIEST: 2, Card.BARON: 2, Card.HANDMAID: 2,
                Card.PRINCE: 2, Card.CHANCELLOR: 2, Card.KING: 1, Card.COUNTESS: 1,
                Card.PRINCESS: 1}

RULESETS: dict[str, Ruleset] = {rs.name: rs for rs in (
    Ruleset("classic", _table(_CLASSIC_VALUES, _CLASSIC_COPIES), 2, 4, {2: 7, 3: 5, 4: 4},
            discard_tiebreak=True, spy_bonus=False,
            summary="The original 16-card game for 2-4 players; a showdown tie goes to the "
                    "higher total of discarded values."),
    Ruleset("2019", _table(_2019_VALUES, _2019_COPIES), 2, 6, _2019_TOKENS,
            discard_tiebreak=False, spy_bonus=True,
            summary="The 2019 edition: 21 cards with the spy and the chancellor, 2-6 players; "
                    "showdown ties all win."),
    # R3: the 2019 rules and values, minus 1 guard, both chancellors and both spies.
    Ruleset("2019-classic", _table(_2019_VALUES, _CLASSIC_COPIES), 2, 4,
            {k: v for k, v in _2019_TOKENS.items() if k <= 4},
            discard_tiebreak=False, spy_bonus=True,
            summary="The 2019 rules and values with the classic 16-card deck, 2-4 players."),
)}


def get_ruleset(name: object) -> Ruleset:
    """Look a ruleset up by name; unknown names raise ``InvalidOptions``."""
    if isinstance(name, str) and name in RULESETS:
        return RULESETS[name]
    raise InvalidOptions(f"unknown ruleset {name!r}; expected one of {sorted(RULESETS)}")
