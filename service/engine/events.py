"""Events: the match log. Each event carries its visibility, the one mechanism that hides data.

``to`` is ``None`` for a public event, a tuple of seats for a private one, and ``()`` for a
secret one that nobody sees while the match runs (the shuffled deck of a round); every event is in
the full record once the match has ended.

An event is an immutable value with five fields (``seq``, ``round``, ``type``, ``data``, ``to``):
a small class with ``__slots__``, built directly by the engine (a native class in the compiled
build: one allocation, where a tuple subclass took several), that unpacks, indexes and compares
like the tuple ``(seq, round, type, data, to)``, its stored form (``to_tuple``).

>>> e = Event(3, 1, "priest_saw", {"seat": 0, "target": 1, "card": "king"}, (0,))
>>> e.visible_to(0), e.visible_to(1), e.visible_to(None)
(True, False, False)
>>> e.to_dict()
{'seq': 3, 'round': 1, 'type': 'priest_saw', 'seat': 0, 'target': 1, 'card': 'king', 'private': True}
>>> seq, rnd, kind, data, to = e
>>> (seq, kind, to), e[2], e == Event(*e.to_tuple()), e.replace(to=None).to
((3, 'priest_saw', (0,)), 'priest_saw', True, None)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

_FIELDS: Final = ("seq", "round", "type", "data", "to")


class Event:
    """One entry of the log (see the module's docstring)."""

    __slots__ = ("seq", "round", "type", "data", "to")

    seq: int
    round: int
    type: str
    data: dict[str, Any]
    to: tuple[int, ...] | None

    def __init__(self, seq: int, round: int, type: str, data: dict[str, Any],
                 to: tuple[int, ...] | None = None) -> None:
        self.seq = seq
        self.round = round
        self.type = type
        self.data = data
        self.to = to

    def to_tuple(self) -> tuple[int, int, str, dict[str, Any], tuple[int, ...] | None]:
        """``(seq, round, type, data, to)``: the stored form (a JSON array)."""
        return (self.seq, self.round, self.type, self.data, self.to)

    def replace(self, **changes: Any) -> Event:
        """A copy with some fields changed (``namedtuple._replace``'s counterpart)."""
        d: dict[str, Any] = dict(zip(_FIELDS, self.to_tuple(), strict=True))
        d.update(changes)
        return Event(d["seq"], d["round"], d["type"], d["data"], d["to"])

    def __iter__(self) -> Iterator[Any]:
        return iter(self.to_tuple())

    def __len__(self) -> int:
        return 5

    def __getitem__(self, i: int) -> Any:
        return self.to_tuple()[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Event):
            return self.seq == other.seq and self.round == other.round \
                and self.type == other.type and self.data == other.data and self.to == other.to
        if isinstance(other, tuple):
            return self.to_tuple() == other
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # type: ignore[assignment]  # mutable data: unhashable, as the tuple was

    def __repr__(self) -> str:
        return (f"Event(seq={self.seq!r}, round={self.round!r}, type={self.type!r}, "
                f"data={self.data!r}, to={self.to!r})")

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (Event, self.to_tuple())

    def visible_to(self, seat: int | None) -> bool:
        """Whether ``seat`` (``None``: a spectator) may see this event while the match runs."""
        to = self.to
        return to is None or (seat is not None and seat in to)

    def to_dict(self, *, with_audience: bool = False) -> dict[str, Any]:
        """The wire form. ``with_audience`` adds ``to`` (used by the full record)."""
        d: dict[str, Any] = {"seq": self.seq, "round": self.round, "type": self.type}
        d.update(self.data)
        to = self.to
        if to is not None:
            d["private"] = True
            if with_audience:
                d["to"] = list(to)
        return d
