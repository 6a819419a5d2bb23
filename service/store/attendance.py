"""Whether a seat of a rated match was there: the abort rule (issue 23, "no free aborts").

A rated match is aborted (rated for nobody) only when a seat's bot was absent: in round 1, its
first turn timed out and it had asked nothing about the match since it started: no move of its
own, no view, no notice of it read, no event log read, not listed in its own matches. A bot
that read its view (its hand, its opponents) and then never moves has been there: its
timeouts count as usual (automatic moves, a forfeit after ``max_timeouts``) and the match is
rated. From round 2 on a timeout is always a timeout (a seat knocked out before its first turn
in round 1 cannot abort the match later and wipe the token its opponent won).

What a bot asked is one set per match (``keys.match_asked``, in the match's slot) of the player
ids that asked: one SADD (and its EXPIRE) per player per match per API process, the first time;
each process remembers what it has written (:data:`_NOTED`), so the thousands of reads of a
match cost one write each at most once. The timeout that decides reads it once (SISMEMBER),
only for a round-1 seat that never moved."""

from __future__ import annotations

from collections.abc import Iterable

import redis

from . import keys
from .docs import ACTIVE, MatchDoc

#: the set outlives any round 1 (a ladder turn is seconds; an unrated match never aborts)
ASKED_TTL_S = 7 * 24 * 3600
#: (match id, player id) pairs this process has written; cleared whole when it grows past this
NOTED_MAX = 100_000
_NOTED: set[tuple[str, str]] = set()


def may_abort(doc: MatchDoc) -> bool:
    """Whether the match can still be aborted by an absence: rated, active, in round 1."""
    return (doc.rated and doc.status == ACTIVE and doc.moved is not None
            and doc.state is not None and doc.state.round <= 1)


def note(r: redis.Redis, pid: str, mids: Iterable[str]) -> None:
    """Record that ``pid`` asked about each of ``mids`` (once per process and match)."""
    todo = [m for m in dict.fromkeys(mids) if isinstance(m, str) and (m, pid) not in _NOTED
            and keys.STORE_MATCH_ID_RE.fullmatch(m)]
    if not todo:
        return
    pipe = r.pipeline(transaction=False)
    for mid in todo:
        pipe.sadd(keys.match_asked(mid), pid)
        pipe.expire(keys.match_asked(mid), ASKED_TTL_S)
    pipe.execute()
    if len(_NOTED) + len(todo) > NOTED_MAX:
        _NOTED.clear()
    _NOTED.update((m, pid) for m in todo)


def note_doc(r: redis.Redis, pid: str, doc: MatchDoc) -> None:
    """``pid`` read ``doc`` (its view, its event log): recorded while the match can abort."""
    if may_abort(doc) and pid in doc.seats:
        note(r, pid, (doc.id,))


def asked(r: redis.Redis, mid: str, pid: str) -> bool:
    return bool(r.sismember(keys.match_asked(mid), pid))


def absent(doc: MatchDoc, seat: int, r: redis.Redis | None) -> bool:
    """Whether ``seat`` is absent, so that its timeout aborts the match: the match can abort
    (:func:`may_abort`), the seat made no move of its own, and (given ``r``) its player never
    asked about the match."""
    if not may_abort(doc) or doc.moved is None or doc.moved[seat]:
        return False
    return r is None or not asked(r, doc.id, doc.seats[seat])


def forget() -> None:
    """Drop this process's memory of what it wrote (tests flush Redis between them)."""
    _NOTED.clear()
