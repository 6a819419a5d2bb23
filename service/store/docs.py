"""The match document kept in Redis: service-level facts around one engine state."""

from __future__ import annotations

import re
import zlib
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

#: stands for an event of the log that was not read (see ``MatchDoc.from_json``): a secret
#: event, so that nothing could show it by mistake while the match runs
ELIDED = Event(-1, 0, "elided", {}, ())

#: zlib's level for stored documents (6, its default: level 1 saves little CPU at this size)
STORED_LEVEL = 6

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
        """The document as stored: everything but the event log, which is a list of its own
        (``keys.match_events``; ``store/matches.py`` writes both in one commit)."""
        d = {k: v for k, v in asdict_shallow(self).items() if k != "state"}
        s = self.state
        d["state"] = None if s is None else {name: getattr(s, name) for name in _STATE_FIELDS}
        return orjson.dumps(d)

    @classmethod
    def from_json(cls, raw: str | bytes, events: list[Event] | None = None,
                  first: int = 0) -> MatchDoc:
        """The document ``raw`` with the events ``events`` of its log, which start at seq
        ``first``. The state's ``events`` list keeps seq = index: the events before ``first``
        (which the engine never reads: it reads the count, and a view the current round) are
        :data:`ELIDED` placeholders. A document in the old form (its log inside) keeps it."""
        d = orjson.loads(raw)
        st = d.pop("state")
        state = None
        if st is not None:
            inline = st.get("events")
            if inline is None:
                st["events"] = []
            state = MatchState.from_dict(st)
            if inline is None:
                state.events = [ELIDED] * first + (events or [])
        return cls(**d, state=state)

    def to_stored(self) -> bytes:
        """The document as Redis keeps it: :meth:`to_json` compressed (zlib). A match's
        document is read and written at every move; compressed, it is about a third of its
        JSON (1.9 KB to 0.65 KB for a classic match at round 7), which is what an action moves
        over the network, for about 0.07 ms of CPU (``bench/scale.py``: data bytes/action)."""
        return zlib.compress(self.to_json(), STORED_LEVEL)

    @classmethod
    def from_stored(cls, raw: bytes, events: list[Event] | None = None,
                    first: int = 0) -> MatchDoc:
        """The document :meth:`to_stored` made (see :meth:`from_json` for the events)."""
        return cls.from_json(zlib.decompress(raw), events, first)

    @property
    def event_count(self) -> int:
        return 0 if self.state is None else len(self.state.events)

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


def event_json(e: Event) -> bytes:
    """One event as an entry of the log's list: ``[seq, round, type, data, to]``."""
    return orjson.dumps((e.seq, e.round, e.type, e.data, e.to))


def event_from_json(raw: bytes | str) -> Event:
    seq, rnd, kind, data, to = orjson.loads(raw)
    return Event(seq, rnd, kind, data, None if to is None else tuple(to))


__all__ = ["ACTIVE", "ELIDED", "FINISHED", "WAITING", "MatchDoc", "event_from_json",
           "event_json"]
