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

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from .cards import BY_NAME, NAMES, Card
from .errors import MalformedAction

PLAY = "play"
CHANCELLOR_RETURN = "chancellor_return"

_PLAY_KEYS = frozenset({"type", "card", "target", "guess"})
_RETURN_KEYS = frozenset({"type", "keep", "bottom"})


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
        if self.type == PLAY:
            d: dict[str, Any] = {"type": PLAY, "card": NAMES[self.card or 0]}
            if self.target is not None:
                d["target"] = self.target
            if self.guess is not None:
                d["guess"] = NAMES[self.guess]
            return d
        return {
            "type": CHANCELLOR_RETURN,
            "keep": NAMES[self.keep or 0],
            "bottom": [NAMES[c] for c in self.bottom or ()],
        }

    @classmethod
    def from_dict(cls, data: object) -> Action:
        """Parse the wire form. Shape errors raise ``EngineError('malformed_action')``."""
        if not isinstance(data, Mapping):
            raise MalformedAction("an action must be a JSON object")
        kind = data.get("type")
        if kind == PLAY:
            _no_extra(data, _PLAY_KEYS)
            card = _card(data.get("card"), "card")
            target = data.get("target")
            if target is not None and (type(target) is not int):
                raise MalformedAction("target must be an integer seat")
            guess = data.get("guess")
            return cls(PLAY, card, target, None if guess is None else _card(guess, "guess"))
        if kind == CHANCELLOR_RETURN:
            _no_extra(data, _RETURN_KEYS)
            keep = _card(data.get("keep"), "keep")
            bottom = data.get("bottom")
            if not isinstance(bottom, list):
                raise MalformedAction("bottom must be a list of card names")
            return cls(CHANCELLOR_RETURN, keep=keep,
                       bottom=tuple(_card(c, "bottom") for c in bottom))
        raise MalformedAction(f"type must be {PLAY!r} or {CHANCELLOR_RETURN!r}")

    def __str__(self) -> str:
        d = self.to_dict()
        return " ".join(f"{k}={v}" for k, v in d.items())


def _card(name: object, field: str) -> int:
    if isinstance(name, str):
        c = BY_NAME.get(name)
        if c is not None:
            return int(c)
    raise MalformedAction(f"{field}: unknown card {name!r}")


def _no_extra(data: Mapping[str, object], allowed: frozenset[str]) -> None:
    extra = set(data) - allowed
    if extra:
        raise MalformedAction(f"unexpected fields: {sorted(extra)}")


__all__ = ["Action", "Card", "PLAY", "CHANCELLOR_RETURN"]
