"""The match document kept in Redis: service-level facts around one engine state."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..engine import Event, MatchState
from ..engine.state import _FIELDS as _STATE_FIELDS  # what MatchState.to_dict writes but events

#: options a creator may fix in an unrated match (never in a rated one), in the order shown
FIXABLE_OPTIONS = ("deck", "first_seat", "seed")
#: the options entry listing which of them the creator chose (set when the match is created)
CHOSEN_KEY = "chosen_by_creator"
_SERVER_SEED = re.compile(r"[0-9a-f]{32}")  # secrets.token_hex(16), as matches.create makes

WAITING = "waiting"
ACTIVE = "active"
FINISHED = "finished"


@dataclass
class MatchDoc:
    id: str
    created_at: float
    created_by: str
    options: dict[str, Any]  # ruleset, seats, turn_timeout_s, timeout_policy, max_timeouts, ...
    rated: bool = False
    ladder: str | None = None
    seats: list[str] = field(default_factory=list)  # player ids in join order = seat numbers
    names: list[str] = field(default_factory=list)
    status: str = WAITING
    version: int = 1
    deadline: float | None = None  # when the pending turn times out (epoch seconds)
    turn_started: float | None = None
    timed_out_at: float | None = None  # when the last timeout(s) were applied (server clock)
    finished_at: float | None = None
    # the pending turn's start and deadline in service time (store/clock.py); None in documents
    # written before the service clock, which then keep their wall-clock deadline
    started_s: float | None = None
    deadline_s: float | None = None
    # per seat: whether it made a move of its own (the abort rule; None: not tracked)
    moved: list[bool] | None = None
    # a rated match ended unrated: {"reason", "seat", "player_id", "message"}
    aborted: dict[str, Any] | None = None
    state: MatchState | None = None

    def to_json(self) -> bytes:
        # orjson: this document (event log included) is decoded and encoded on every action.
        # The event log, most of it, is encoded once: see _events_json.
        d = {k: v for k, v in asdict_shallow(self).items() if k != "state"}
        s = self.state
        if s is None:
            d["state"] = None
        else:
            # MatchState.to_dict, but for the events (which it turns into plain tuples one by
            # one: 20 us of its 25 for 200 events)
            st = {name: getattr(s, name) for name in _STATE_FIELDS}
            st["events"] = orjson.Fragment(self._events_json(s.events))
            d["state"] = st
        return orjson.dumps(d)

    def _events_json(self, events: list[Event]) -> bytes:
        """``events`` as JSON (what ``MatchState.to_dict`` makes of them), encoding only those
        added since this document, or the one it was copied from, last encoded its log. The
        log only grows and its events are immutable (shared between copies); the memo is used
        only when the events it encoded are, one by one, those that start ``events`` (equal
        tuples: usually the very same objects, which compares in about 2 us for 200 events
        against about 40 us to encode them)."""
        memo: tuple[bytes, tuple[Event, ...]] | None = self.__dict__.get("_events_memo")
        n = len(events)
        if memo is not None and 0 < len(memo[1]) <= n and tuple(events[:len(memo[1])]) == memo[1]:
            raw, done = memo
            if len(done) < n:
                raw = raw[:-1] + b"," + orjson.dumps(list(map(tuple, events[len(done):])))[1:]
        else:
            raw = orjson.dumps(list(map(tuple, events)))
        # (a tuple shared by the copies: nothing changes it in place)
        self._events_memo = (raw, tuple(events))
        return raw

    @classmethod
    def from_json(cls, raw: str | bytes) -> MatchDoc:
        d = orjson.loads(raw)
        st = d.pop("state")
        return cls(**d, state=None if st is None else MatchState.from_dict(st))

    def copy(self) -> MatchDoc:
        """A copy that shares nothing a change makes in place (the engine state is cloned;
        its events are immutable and shared)."""
        new = object.__new__(MatchDoc)
        new.__dict__.update(self.__dict__)
        new.options = {k: v[:] if isinstance(v, list) else v for k, v in self.options.items()}
        new.seats, new.names = self.seats[:], self.names[:]
        new.moved = None if self.moved is None else self.moved[:]
        new.aborted = None if self.aborted is None else dict(self.aborted)
        new.state = None if self.state is None else self.state.clone()
        return new

    def seat_of(self, pid: str) -> int | None:
        try:
            return self.seats.index(pid)
        except ValueError:
            return None

    @property
    def fixed_by_creator(self) -> list[str]:
        """Which of :data:`FIXABLE_OPTIONS` the creator chose. A document made before this was
        recorded is judged by what it holds: a deck or a first seat is always the creator's, and
        a seed is the server's only in the shape the server makes."""
        chosen = self.options.get(CHOSEN_KEY)
        if chosen is not None:
            return list(chosen)
        o = self.options
        seed = o.get("seed")
        return [k for k in FIXABLE_OPTIONS if o.get(k) is not None and not (
            k == "seed" and (self.rated or (isinstance(seed, str)
                                            and _SERVER_SEED.fullmatch(seed))))]

    @property
    def seat_count(self) -> int:
        return int(self.options["seats"])


def asdict_shallow(doc: MatchDoc) -> dict[str, Any]:
    # dataclasses.asdict deep-copies (and would recurse into the state); one level is enough.
    return {name: getattr(doc, name) for name in doc.__dataclass_fields__}


__all__ = ["ACTIVE", "FINISHED", "WAITING", "MatchDoc"]
