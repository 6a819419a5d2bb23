"""The match state: plain data that round-trips through JSON exactly.

Cards are stored as ``int`` card ids; the deck is top card first. Randomness is never stored: each
round's shuffle is derived from ``seed`` and the round number (see ``rules``), so a state is
reproducible from its options and actions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypedDict

from .errors import InvalidState
from .events import Event


class Status(StrEnum):
    """A match is active until someone wins (str-valued: the JSON is the plain string)."""

    ACTIVE = "active"
    FINISHED = "finished"


class Phase(StrEnum):
    """What the player to act is doing: playing a card, or finishing a chancellor (R17)."""

    PLAY = "play"
    CHANCELLOR = "chancellor"


ACTIVE = Status.ACTIVE
FINISHED = Status.FINISHED
PHASE_PLAY = Phase.PLAY
PHASE_CHANCELLOR = Phase.CHANCELLOR


class RoundResult(TypedDict):
    """One finished round, as stored in ``MatchState.rounds`` and shown as ``last_round``."""

    round: int
    reason: str  # "last_standing" or "showdown"
    winners: list[int]
    spy_bonus: int | None  # the seat that got the R24 token, if any
    hands: list[list[str]]  # each seat's hand at the end (card names)
    set_aside: list[str]
    tokens: list[int]  # tokens after the round


@dataclass(slots=True)
class MatchState:
    # match options
    ruleset: str
    players: int
    seed: str
    tokens_to_win: int
    two_player_setup: str = "three-up"
    first_seat: int | None = None
    deck_order: list[int] | None = None  # explicit round-1 deck, top first
    # match progress
    status: Status = ACTIVE
    round: int = 0
    tokens: list[int] = field(default_factory=list)
    forfeited: list[bool] = field(default_factory=list)
    timeouts: list[int] = field(default_factory=list)  # consecutive timeouts per seat
    winners: list[int] = field(default_factory=list)  # match winners once finished
    # the round in play
    deck: list[int] = field(default_factory=list)
    aside: list[int] = field(default_factory=list)  # face down; aside[0] is the R5 card
    face_up: list[int] = field(default_factory=list)
    hands: list[list[int]] = field(default_factory=list)
    discards: list[list[int]] = field(default_factory=list)
    eliminated: list[bool] = field(default_factory=list)
    protected: list[bool] = field(default_factory=list)
    turn: int = -1  # seat to act, -1 when nobody is
    phase: Phase = PHASE_PLAY
    round_first: int = -1
    turn_no: int = 0  # turns started this round
    round_start_seq: int = 0  # seq of the first event of this round
    rounds: list[RoundResult] = field(default_factory=list)  # one result per finished round
    events: list[Event] = field(default_factory=list)
    # False: the engine keeps no event log (``events`` stays as it is, ``version`` too): what a
    # simulation that reads only the state wants, with every rule and check as with a log (but
    # no automatic moves: timeout_action draws from the log's length). Not part of the state: no
    # JSON (a stored match always logs), no equality; cloned.
    log: bool = field(default=True, compare=False)
    # The legal actions of the current turn, memoized by ``rules`` with the version and the hand
    # they were computed for: every change the engine makes adds events (and, for a state
    # without a log, sets memo_version to -1), so the version (and the hand, for searches that
    # deal sampled cards in place) says whether it is current. Not part
    # of the state: no JSON, no equality, not cloned. Three typed fields, not one tuple: the
    # compiled build reads them as C struct fields.
    memo_version: int = field(default=-1, init=False, repr=False, compare=False)
    memo_hand: list[int] = field(default_factory=list, init=False, repr=False, compare=False)
    legal_memo: Any = field(default=None, init=False, repr=False, compare=False)

    def clone(self) -> MatchState:
        """A deep copy (events are immutable and shared)."""
        return MatchState(
            self.ruleset, self.players, self.seed, self.tokens_to_win, self.two_player_setup,
            self.first_seat, None if self.deck_order is None else self.deck_order[:],
            self.status, self.round, self.tokens[:], self.forfeited[:], self.timeouts[:],
            self.winners[:], self.deck[:], self.aside[:], self.face_up[:],
            [h[:] for h in self.hands], [d[:] for d in self.discards], self.eliminated[:],
            self.protected[:], self.turn, self.phase, self.round_first, self.turn_no,
            self.round_start_seq, self.rounds[:], self.events[:], self.log,
        )

    @property
    def version(self) -> int:
        """A number that grows with every change: the count of events so far (it stays put
        while ``log`` is off)."""
        return len(self.events)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; ``from_dict(to_dict(s)) == s``."""
        d = {name: getattr(self, name) for name in _FIELDS}
        # Plain tuples: JSON writes them as arrays [seq, round, type, data, to].
        d["events"] = [e.to_tuple() for e in self.events]
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MatchState:
        try:
            kwargs = {name: data[name] for name in _FIELDS}
            kwargs["status"] = Status(kwargs["status"])
            kwargs["phase"] = Phase(kwargs["phase"])
            kwargs["events"] = [
                Event(s, r, t, d, None if to is None else tuple(to))
                for s, r, t, d, to in data["events"]
            ]
            return cls(**kwargs)
        except (KeyError, TypeError, ValueError) as e:
            raise InvalidState(f"not a match state: {e}") from e

    def to_json(self) -> str:
        """Compact JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> MatchState:
        try:
            data = json.loads(text)
        except ValueError as e:
            raise InvalidState(f"not JSON: {e}") from e
        if not isinstance(data, dict):
            raise InvalidState("not a match state")
        return cls.from_dict(data)


_FIELDS = tuple(f for f in MatchState.__dataclass_fields__
                if f not in ("events", "log", "memo_version", "memo_hand", "legal_memo"))
