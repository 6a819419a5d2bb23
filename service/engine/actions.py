"""Actions: what a player posts. Parsing and shape checks live here; legality lives in rules.

An action is a small immutable value. Two kinds exist:

>>> a = Action.play(Card.GUARD, target=1, guess=Card.PRIEST)
>>> a.to_dict()
{'type': 'play', 'card': 'guard', 'target': 1, 'guess': 'priest'}
>>> Action.from_dict(a.to_dict()) == a
True
>>> Action.from_dict({"type": "chancellor_return", "keep": "king", "bottom": ["guard", "spy"]})
Action(type='chancellor_return', card=None, target=None, guess=None, keep=7, bottom=(1, 0))
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from .cards import BY_NAME, NAMES, Card
from .errors import MalformedAction

PLAY = "play"
CHANCELLOR_RETURN = "chancellor_return"

#: The kinds of an action field: a card name, a seat number, a list of card names.
CARD, SEAT, CARDS = "card", "seat", "cards"


class FieldSpec(NamedTuple):
    """One field of an action's wire form."""

    name: str
    kind: str  # CARD, SEAT or CARDS
    required: bool


#: The wire form of each action type, field by field, besides ``type``: the one definition of
#: an action. :meth:`Action.from_dict` and :meth:`Action.to_dict` follow it; the API's schema
#: and its OpenAPI component (``http/routes/matches.py``) and the SDK's copy of the rulesets
#: (``catalog.describe_rulesets()["actions"]``, ``sdk/llsdk/rulesets.json``) are made from it.
SHAPES: dict[str, tuple[FieldSpec, ...]] = {
    PLAY: (FieldSpec("card", CARD, True), FieldSpec("target", SEAT, False),
           FieldSpec("guess", CARD, False)),
    CHANCELLOR_RETURN: (FieldSpec("keep", CARD, True), FieldSpec("bottom", CARDS, True)),
}
_KEYS = {kind: frozenset({"type", *(spec.name for spec in shape)})
         for kind, shape in SHAPES.items()}


class Action(NamedTuple):
    """One decision. Cards are held as ``int`` card ids (``Card`` members compare equal)."""

    type: str
    card: int | None = None
    target: int | None = None
    guess: int | None = None
    keep: int | None = None
    bottom: tuple[int, ...] | None = None

    @classmethod
    def play(cls, card: int, target: int | None = None, guess: int | None = None) -> Action:
        """Play ``card`` (optionally at ``target``, naming ``guess`` for a guard)."""
        return cls(PLAY, int(card), target, None if guess is None else int(guess))

    @classmethod
    def chancellor_return(cls, keep: int, bottom: Iterable[int]) -> Action:
        """Finish a chancellor: keep ``keep``, put ``bottom`` under the deck, top to bottom."""
        return cls(CHANCELLOR_RETURN, keep=int(keep), bottom=tuple(int(c) for c in bottom))

    def to_dict(self) -> dict[str, Any]:
        """The wire form: card names, absent fields omitted."""
        d: dict[str, Any] = {"type": self.type}
        for spec in SHAPES[self.type]:
            value = getattr(self, spec.name)
            if value is None:
                continue
            d[spec.name] = (NAMES[value] if spec.kind == CARD
                            else [NAMES[c] for c in value] if spec.kind == CARDS else value)
        return d

    @classmethod
    def from_dict(cls, data: object) -> Action:
        """Parse the wire form. Shape errors raise ``EngineError('malformed_action')``."""
        if not isinstance(data, Mapping):
            raise MalformedAction("an action must be a JSON object")
        kind = data.get("type")
        shape = SHAPES.get(kind) if isinstance(kind, str) else None
        if shape is None or not isinstance(kind, str):
            raise MalformedAction(f"type must be {PLAY!r} or {CHANCELLOR_RETURN!r}")
        extra = set(data) - _KEYS[kind]
        if extra:
            raise MalformedAction(f"unexpected fields: {sorted(extra)}")
        values: dict[str, Any] = {}
        for spec in shape:
            raw = data.get(spec.name)
            values[spec.name] = None if raw is None and not spec.required \
                else _PARSERS[spec.kind](raw, spec.name)
        return cls(kind, **values)

    def __str__(self) -> str:
        d = self.to_dict()
        return " ".join(f"{k}={v}" for k, v in d.items())


def _card(name: object, field: str) -> int:
    if isinstance(name, str):
        c = BY_NAME.get(name)
        if c is not None:
            return int(c)
    raise MalformedAction(f"{field}: unknown card {name!r}")


def _seat(value: object, field: str) -> int:
    if type(value) is not int:
        raise MalformedAction(f"{field} must be an integer seat")
    return value


def _cards(value: object, field: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise MalformedAction(f"{field} must be a list of card names")
    return tuple(_card(c, field) for c in value)


_PARSERS: dict[str, Callable[[object, str], Any]] = {CARD: _card, SEAT: _seat, CARDS: _cards}


__all__ = ["Action", "Card", "PLAY", "CHANCELLOR_RETURN", "SHAPES", "FieldSpec", "CARD", "SEAT",
           "CARDS"]
