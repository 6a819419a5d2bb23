"""Events: the match log. Each event carries its visibility, the one mechanism that hides data.

``to`` is ``None`` for a public event, a tuple of seats for a private one, and ``()`` for a
secret one that nobody sees while the match runs (the shuffled deck of a round); every event is in
the full record once the match has ended.

>>> e = Event(3, 1, "priest_saw", {"seat": 0, "target": 1, "card": "king"}, (0,))
>>> e.visible_to(0), e.visible_to(1), e.visible_to(None)
(True, False, False)
>>> e.to_dict()
{'seq': 3, 'round': 1, 'type': 'priest_saw', 'seat': 0, 'target': 1, 'card': 'king', 'private': True}
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Event(NamedTuple):
    seq: int
    round: int
    type: str
    data: dict[str, Any]
    to: tuple[int, ...] | None = None

    def visible_to(self, seat: int | None) -> bool:
        """Whether ``seat`` (``None``: a spectator) may see this event while the match runs."""
        to = self.to
        return to is None or (seat is not None and seat in to)

    def to_dict(self, *, with_audience: bool = False) -> dict[str, Any]:
        """The wire form. ``with_audience`` adds ``to`` (used by the full record)."""
        d: dict[str, Any] = {"seq": self.seq, "round": self.round, "type": self.type}
        d.update(self.data)
        if self.to is not None:
            d["private"] = True
            if with_audience:
                d["to"] = list(self.to)
        return d
