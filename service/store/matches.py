"""Matches in Redis. A match is two keys in its own hash slot: its document (a hash: the
state the engine needs to go on, and the version) and its event log (a list, one entry per
event). Every change is one compare-and-set: read the document (and the events a view needs),
change it through the engine, then commit with one Lua script (:data:`_COMMIT`) that checks the
version is still the one read and, if so, writes the document, appends the new events and runs
the change's other writes (indexes, inbox notices, wake-ups, counters, the idempotency record),
all or nothing. A lost race is answered ``version_conflict``; changes are never merged.

On a Redis Cluster a script may only touch its own slot: the other writes go into an outbox
key of the match's slot in the same script and are applied right after (``store/cluster.py``).
RQ's jobs (a finished ladder match's rating) are queued right after the commit
(``store/queues.py``); one lost to a crash in between is caught by the passes that catch lost
jobs.

A turn's deadline is the match's entry in the deadline index (``store/deadlines.py``), written
in the same commit; the deadline dispatcher turns it into an RQ job when it is due."""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import orjson
import redis
from redis.client import Pipeline
from redis.commands.core import Script

from .. import engine
from ..engine import EngineError, Event
from . import archive, attendance, clock, cluster, inbox, keys, players, queues, replies
from .commit import Commit
from .docs import (
    ACTIVE,
    CHOSEN_KEY,
    ELIDED,
    FINISHED,
    FIXABLE_OPTIONS,
    WAITING,
    MatchDoc,
    event_from_json,
    event_json,
)
from .errors import StoreError

log = logging.getLogger(__name__)
T = TypeVar("T")
#: makes the answer to an action from the committed document, the seat and the time: the HTTP
#: layer's player view. The idempotency record keeps this answer, so a retry gets it unchanged.
Respond = Callable[[MatchDoc, int, float], dict[str, Any]]

TIMEOUT_POLICIES = ("auto", "forfeit")
# A turn that times out is followed by at most this many chained timeouts in one pass.
MAX_TIMEOUTS_PER_PASS = 500
# join(), resign() and expire() read again this many times at most when the match moves under
# them: none of them depends on a view the caller read, so a lost race is not the caller's to retry.
RETRIES = 10


def body_hash(body: Any) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


# --------------------------------------------------------------------------- reading


def _deadline_s(doc: MatchDoc, clk: clock.Clock, now: float) -> float | None:
    """The pending turn's deadline in service time (see store/clock.py): its own, or later
    when an outage interrupted the turn. None when no turn is pending."""
    if doc.status != ACTIVE or doc.deadline is None:
        return None
    if doc.deadline_s is None or doc.started_s is None:  # a document from before the clock
        return clk.now(now) + (doc.deadline - now)
    return clk.deadline(doc.started_s, doc.deadline_s, float(doc.options["turn_timeout_s"]),
                        now)


def _due(doc: MatchDoc, clk: clock.Clock, now: float) -> bool:
    """Whether the pending turn's deadline has passed in service time (a timeout is due)."""
    d = _deadline_s(doc, clk, now)
    return d is not None and clk.now(now) >= d


def _refresh(doc: MatchDoc, clk: clock.Clock, now: float) -> MatchDoc:
    """Bring the document's wall-clock ``deadline`` (what views, notices and jobs use) up to
    date with the clock: an outage since the turn started moves it later."""
    d = _deadline_s(doc, clk, now)
    if d is not None and clk.kept:
        doc.deadline = clk.to_wall(d, now)
    return doc


#: the document and the log from seq ARGV[1] (the round in play when that is negative or
#: later), less the events [ARGV[2], ARGV[3]) this process already holds (see :data:`_known`;
#: ARGV[4]: the last of them, which the log must hold at its place: a log that is shorter, or
#: that went another way after a failover lost writes, is read in full), and the value of
#: KEYS[3] when given (an action's idempotency record): one round trip, one
#: snapshot. Replies [doc, first seq, first seq sent, [events sent...], record] or nil; for a
#: finished match whose log was packed (:func:`_pack_log`), [doc, first seq, first seq, [],
#: record, the packed log].
_READ = """
local h = redis.call('HMGET', KEYS[1], 'doc', 'rs', 'ev')
if not h[1] then return false end
local rs = tonumber(h[2])
local from = tonumber(ARGV[1])
if from < 0 or from > rs then from = rs end
if h[3] then
  local rec = false
  if KEYS[3] then rec = redis.call('GET', KEYS[3]) end
  return {h[1], from, from, {}, rec, h[3]}
end
local start = from
local have_from, have_to = tonumber(ARGV[2]), tonumber(ARGV[3])
if have_from <= from and have_to > from and
    redis.call('LINDEX', KEYS[2], have_to - 1) == ARGV[4] then
  start = have_to
end
local out = {h[1], from, start, redis.call('LRANGE', KEYS[2], start, -1)}
if KEYS[3] then out[5] = redis.call('GET', KEYS[3]) end
return out
"""

#: the commit of one change: if the document's version is still ARGV[1] ('' : no document
#: yet), write the document (version ARGV[2], round start ARGV[3], ARGV[4]), append the ARGV[5]
#: events that follow, then run the commands that follow them, each as its argument count and
#: its arguments. Replies 1, or 0 when the version moved (nothing written). A command Redis
#: refuses doesn't stop the others (as in a MULTI): the first refusal is the reply, an error.
_COMMIT = """
local v = redis.call('HGET', KEYS[1], 'v')
if v ~= ARGV[1] and not (v == false and ARGV[1] == '') then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'rs', ARGV[3], 'doc', ARGV[4])
local n = tonumber(ARGV[5])
if n > 0 then redis.call('RPUSH', KEYS[2], unpack(ARGV, 6, 5 + n)) end
local i = 6 + n
local err = nil
while i <= #ARGV do
  local c = tonumber(ARGV[i])
  local r = redis.pcall(unpack(ARGV, i + 1, i + c))
  if type(r) == 'table' and r.err and not err then err = r end
  i = i + c + 1
end
if err then return err end
return 1
"""

_scripts: dict[str, Script] = {}


def _script(r: redis.Redis, source: str) -> Script:
    """``source`` as a redis-py ``Script`` (``register_script``: EVALSHA, and SCRIPT LOAD again
    when a Redis lost it); one per source, called with the client at hand."""
    got = _scripts.get(source)
    if got is None:
        got = _scripts[source] = r.register_script(source)
    return got


def _run(r: redis.Redis, source: str, names: list[str], args: list[Any]) -> Any:
    return cluster.run_script(r, _script(r, source), names, args)


#: The events of the round in play of the matches this process read or wrote last, by match:
#: (seq of the first, the events). A match's log only grows and an event never changes, so a
#: read asks Redis only for the events after those (an action mostly needs the few its
#: opponents added: the round's events are about a third of the bytes of an action otherwise,
#: ``bench/scale.py``); :data:`_READ` checks the log still holds the last of them.
_known: OrderedDict[str, tuple[int, list[Event]]] = OrderedDict()
_known_lock = threading.Lock()
KNOWN_MATCHES = 2048


def _remember(doc: MatchDoc) -> None:
    state = doc.state
    if state is None:
        return
    rs = state.round_start_seq
    events = state.events[rs:]
    if any(e is ELIDED for e in events):
        return
    with _known_lock:
        _known[doc.id] = (rs, events)
        _known.move_to_end(doc.id)
        while len(_known) > KNOWN_MATCHES:
            _known.popitem(last=False)


def _read(r: redis.Redis, mid: str, *, events_from: int = -1,
          idem: str | None = None) -> tuple[MatchDoc, Any]:
    """The document with its log from seq ``events_from`` (-1: the round in play; never later
    than that), and the value of the key ``idem`` (None when not asked or not set)."""
    names = [keys.match(mid), keys.match_events(mid)] + ([idem] if idem else [])
    with _known_lock:
        have_from, have = _known.get(mid, (0, []))
    last = event_json(have[-1]) if have else b""
    out = _run(r, _READ, names, [events_from, have_from, have_from + len(have), last])
    if out is None:
        got = archive.find(r, mid)
        if got is None:
            raise StoreError("not_found", f"no match {mid!r}")
        return got.match_doc(events_from), None
    first, start = int(out[1]), int(out[2])
    if len(out) > 5 and out[5]:
        doc = MatchDoc.from_stored(out[0], unpack_log(out[5])[first:], first)
        return doc, (out[4] if idem else None)
    events = [event_from_json(e) for e in out[3]]
    if start > first:
        events = have[first - have_from:] + events
    doc = MatchDoc.from_stored(out[0], events, first)
    _remember(doc)
    return doc, (out[4] if idem and len(out) > 4 else None)


#: a finished match's log packed into its document hash: if the version is still ARGV[1] and
#: the log still holds ARGV[2] events, set the field ``ev`` to ARGV[3] and delete the list
_PACK = """
if redis.call('HGET', KEYS[1], 'v') ~= ARGV[1] then return 0 end
if redis.call('LLEN', KEYS[2]) ~= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], 'ev', ARGV[3])
redis.call('DEL', KEYS[2])
return 1
"""


def unpack_log(raw: bytes) -> list[Event]:
    """The events of a packed log (:func:`_pack_log`)."""
    return [Event(seq, rnd, kind, data, None if to is None else tuple(to))
            for seq, rnd, kind, data, to in orjson.loads(zlib.decompress(raw))]


def _pack_log(r: redis.Redis, mid: str, version: int) -> None:
    """Once a match has finished, its log never grows: pack it into one compressed field of
    its document (``ev``), about a sixth of the list's memory (``bench/memory.py``), read
    whole when asked for (finished matches are read rarely: a replay, a profile). Best effort,
    after the commit: a match left with its list (this failed, or the match moved meanwhile)
    reads the same."""
    try:
        entries = [e for e in r.lrange(keys.match_events(mid), 0, -1) if isinstance(e, bytes)]
        packed = zlib.compress(b"[" + b",".join(entries) + b"]", 6)
        _run(r, _PACK, [keys.match(mid), keys.match_events(mid)],
             [version, len(entries), packed])
    except redis.RedisError as exc:
        log.warning("the log of finished match %s was not packed: %s", mid, exc)


def load(r: redis.Redis, mid: str, *, events_from: int = 0) -> MatchDoc:
    """The stored document as it is (no timeouts applied), its whole log by default."""
    return _read(r, mid, events_from=events_from)[0]


def peek_version(r: redis.Redis, mid: str) -> int:
    """The stored version, -1 when the match doesn't exist."""
    raw = r.hget(keys.match(mid), "v")
    if raw is None:
        got = archive.find(r, mid)
        return -1 if got is None else got.version
    return int(raw)


def get(r: redis.Redis, mid: str, *, now: float | None = None,
        events_from: int = -1) -> MatchDoc:
    """The match, with any timeout that is due applied first (so nobody sees a stale turn).
    Its log is read from seq ``events_from`` (-1: from the start of the round in play, what
    the views show; never later than that)."""
    if not isinstance(mid, str) or not keys.STORE_MATCH_ID_RE.fullmatch(mid):
        raise StoreError("not_found", f"no match {mid!r}")
    doc, _ = _read(r, mid, events_from=events_from)
    now = time.time() if now is None else now
    clk = clock.current(r)
    if _due(doc, clk, now):
        doc = expire(r, mid, now=now)
        if events_from >= 0 and doc.state is not None and \
                events_from < doc.state.round_start_seq:
            doc = _refresh(_read(r, mid, events_from=events_from)[0], clk, now)
        return doc
    return _refresh(doc, clk, now)


# --------------------------------------------------------------------------- writing


def _set_deadline(doc: MatchDoc, clk: clock.Clock, now: float,
                  start_s: float | None = None) -> None:
    """Start the pending turn's clock at service time ``start_s`` (default: now). The deadline
    is kept in service time (``deadline_s``) and, for display and job scheduling, as the wall
    time it is expected at (``deadline``)."""
    if doc.status == ACTIVE:
        start_s = clk.now(now) if start_s is None else start_s
        doc.started_s = start_s
        doc.deadline_s = start_s + float(doc.options["turn_timeout_s"])
        doc.turn_started = clk.to_wall(start_s, now)
        doc.deadline = clk.to_wall(doc.deadline_s, now)
    else:
        doc.turn_started = doc.deadline = doc.started_s = doc.deadline_s = None


def _after_engine_change(doc: MatchDoc, clk: clock.Clock, now: float,
                         start_s: float | None = None) -> None:
    assert doc.state is not None
    doc.version += 1
    if doc.state.status == engine.FINISHED:
        doc.status = FINISHED
        doc.finished_at = now if start_s is None else clk.to_wall(start_s, now)
    _set_deadline(doc, clk, now, start_s)


def _absent(doc: MatchDoc, seat: int, r: redis.Redis | None = None) -> bool:
    """Whether ``seat``'s timeout aborts this rated match (the abort rule: round 1, no move of
    its own, never asked about the match; ``store/attendance.py``)."""
    return attendance.absent(doc, seat, r)


def _abort(doc: MatchDoc, seat: int, now: float) -> None:
    """End a rated match unrated: ``seat`` never moved before its first turn timed out (its bot
    was not there). The engine state stays as it was; the match is over for the service."""
    doc.version += 1
    doc.status = FINISHED
    doc.finished_at = now
    doc.aborted = {
        "reason": "absent", "seat": seat, "player_id": doc.seats[seat],
        "message": f"seat {seat} ({doc.names[seat]}) was absent: its first turn of round 1 timed "
                   "out before it moved or asked about the match (no view, notice or event "
                   "read): the match is aborted and rated for nobody",
    }
    doc.turn_started = doc.deadline = doc.started_s = doc.deadline_s = None


def _apply_due_timeouts(doc: MatchDoc, now: float, clk: clock.Clock | None = None,
                        r: redis.Redis | None = None) -> int:
    """Apply every timeout due by ``now`` (service time); each next turn starts at the previous
    deadline. A rated match whose timing-out seat is absent is aborted instead (``r``: where
    to look whether it asked about the match)."""
    applied = 0
    clk = clock.WALL if clk is None else clk
    now = clk.wall(now)  # timed_out_at and an abort's finished_at never before the deadline
    while _due(doc, clk, now) and applied < MAX_TIMEOUTS_PER_PASS:
        assert doc.state is not None
        deadline_s = _deadline_s(doc, clk, now)
        if _absent(doc, doc.state.turn, r):
            _abort(doc, doc.state.turn, now)
            applied += 1
            break
        doc.state, _ = engine.apply_timeout(
            doc.state, policy=doc.options["timeout_policy"],
            max_timeouts=int(doc.options["max_timeouts"]))
        _after_engine_change(doc, clk, now, deadline_s)
        applied += 1
    if applied:
        doc.timed_out_at = now
    return applied


def _count(w: Commit, *, actions: int = 0, timeouts: int = 0) -> None:
    """Count applied actions and timeouts for GET /metrics, in the commit that applies them."""
    if actions:
        w.hincrby(keys.STATS, "actions", actions)
    if timeouts:
        w.hincrby(keys.STATS, "timeouts", timeouts)


def _effects(w: Commit | Pipeline, doc: MatchDoc, old_status: str | None) -> None:
    """A change's writes outside the match's own keys: the status and deadline indexes, the
    inbox notices and wake-ups."""
    mid = doc.id
    if old_status != doc.status:
        if old_status is not None:
            w.zrem(keys.matches_by_status(old_status), mid)
        w.zadd(keys.matches_by_status(doc.status), {mid: doc.created_at})
    if doc.status == FINISHED and old_status != FINISHED:
        w.zadd(keys.TO_ARCHIVE, {mid: doc.finished_at or doc.created_at})
    if doc.status == ACTIVE and doc.deadline is not None:
        w.zadd(keys.DEADLINES, {mid: doc.deadline})
    else:
        w.zrem(keys.DEADLINES, mid)
    inbox.queue(w, doc, old_status)


def _write(c: Commit, doc: MatchDoc, old_status: str | None) -> None:
    """Record a change of ``doc`` (its document and new events go in by :func:`_commit`)."""
    _effects(c, doc, old_status)
    if doc.ladder and doc.status == FINISHED and old_status != FINISHED:
        c.jobs.append(queues.rating(doc.id))


def _store_new(pipe: Pipeline, doc: MatchDoc) -> None:
    """Queue on ``pipe`` a match that doesn't exist yet: its document, its log, the rest (a
    new match is never finished: no job)."""
    state = doc.state
    pipe.hset(keys.match(doc.id), mapping={
        "v": doc.version, "rs": 0 if state is None else state.round_start_seq,
        "doc": doc.to_stored()})
    if state is not None and state.events:
        pipe.rpush(keys.match_events(doc.id), *map(event_json, state.events))
    _effects(pipe, doc, None)


def _commit(r: redis.Redis, doc: MatchDoc, read_version: int, read_events: int,
            c: Commit) -> bool:
    """Commit ``doc`` (read at ``read_version`` with ``read_events`` events) and ``c``'s
    writes with :data:`_COMMIT`, in one round trip; False when the version moved meanwhile
    (nothing written). On a Redis Cluster the writes to other slots go through the match's
    outbox (``cluster.split``). Then RQ's jobs."""
    mid = doc.id
    state = doc.state
    new = [] if state is None else state.events[read_events:]
    args: list[Any] = [read_version, doc.version, 0 if state is None else state.round_start_seq,
                       doc.to_stored(), len(new), *map(event_json, new)]
    names = [keys.match(mid), keys.match_events(mid)]
    effects: list[list[Any]] = []
    box: str | None = None
    ops = c.ops
    if cluster.is_cluster(r):
        ops, effects, box = cluster.split(r, names[0], ops)
        names += [str(op[1]) for op in ops]
    for op in ops:
        args += [len(op), *op]
    if not cluster.commit_script(r, _script(r, _COMMIT), names, args):
        return False
    if effects:
        cluster.apply_outbox(r, effects, box)
    queues.queue_committed(r, c.jobs)
    return True


def _transact(r: redis.Redis, mid: str, change: Callable[[Commit, MatchDoc, Any], T],
              *, idem: str | None = None) -> T:
    """The one commit path of a match: read the document (with the value of the key ``idem``,
    an idempotency record, in the same snapshot), let ``change(commit, doc, idem_value)``
    change it and record its other writes on ``commit``, and commit all of it when the match
    is still at the version read (:func:`_commit`). A change that records nothing and leaves
    the version alone writes nothing. A match that moved meanwhile is ``version_conflict``."""
    doc, idem_value = _read(r, mid, idem=idem)
    version, count, was = doc.version, doc.event_count, doc.status
    c = Commit()
    result = change(c, doc, idem_value)
    if doc.version == version and not c.ops:
        if c.error is not None:
            raise c.error
        return result
    if not _commit(r, doc, version, count, c):
        raise StoreError("version_conflict", "the match changed while this request was "
                         "applied; read the view again")
    _remember(doc)
    if doc.status == FINISHED and was != FINISHED:
        _pack_log(r, mid, doc.version)
    if c.error is not None:
        raise c.error
    return result


def _transact_retrying(r: redis.Redis, mid: str,
                       change: Callable[[Commit, MatchDoc, Any], T]) -> T:
    """:func:`_transact` for a change that doesn't depend on what its caller read (a join, a
    resignation, due timeouts): when the match moved meanwhile (a move, a deadline, another
    join), it reads the match again and applies the change to what is there now, instead of
    answering ``version_conflict`` to a request the caller could not have made any better."""
    for _ in range(RETRIES - 1):
        try:
            return _transact(r, mid, change)
        except StoreError as e:
            if e.code != "version_conflict":
                raise
    return _transact(r, mid, change)


def _options(options: dict[str, Any], rated: bool) -> dict[str, Any]:
    """The options with their defaults, after the checks the engine doesn't make."""
    opts = dict(options)
    opts.setdefault("turn_timeout_s", 30)
    opts.setdefault("timeout_policy", "auto")
    opts.setdefault("max_timeouts", 3)
    opts.setdefault("two_player_setup", "three-up")
    if opts["timeout_policy"] not in TIMEOUT_POLICIES:
        raise StoreError("invalid_request", f"timeout_policy must be one of {TIMEOUT_POLICIES}")
    chosen = [k for k in FIXABLE_OPTIONS if opts.get(k) is not None]
    if rated and chosen:
        raise StoreError("invalid_request", "rated matches never take seed, deck or first_seat")
    # recorded before the server picks a seed, so every view can tell who chose (no hidden
    # rigging: a chosen seed lets the creator predict every hand)
    opts[CHOSEN_KEY] = chosen
    return opts


def check_options(options: dict[str, Any], *, rated: bool = False) -> dict[str, Any]:
    """The options with their defaults, checked now by the engine with everything it will be
    given (so a bad deck is refused when a match or a challenge is made, not at its last join
    or accept); ``tokens_to_win`` is filled in."""
    opts = _options(options, rated)
    try:
        probe = engine.new_match(
            opts["ruleset"], opts["seats"], seed=opts.get("seed") or "probe",
            tokens_to_win=opts.get("tokens_to_win"), first_seat=opts.get("first_seat"),
            deck=opts.get("deck"), two_player_setup=opts["two_player_setup"])
    except EngineError as e:
        raise StoreError("invalid_request", e.message) from e
    opts["tokens_to_win"] = probe.tokens_to_win
    return opts


def create(r: redis.Redis, creator: str, options: dict[str, Any], *, rated: bool = False,
           ladder: str | None = None, now: float | None = None) -> MatchDoc:
    """Create a waiting match after checking its options with the engine."""
    now = time.time() if now is None else now
    opts = check_options(options, rated=rated)
    if opts.get("seed") is None:
        opts["seed"] = secrets.token_hex(16)  # hidden until the match ends
    mid = keys.new_match_id()
    doc = MatchDoc(id=mid, created_at=now, created_by=creator, options=opts, rated=rated,
                   ladder=ladder)
    pipe = r.pipeline()
    _store_new(pipe, doc)
    pipe.zadd(keys.ALL_MATCHES, {mid: now})
    pipe.execute()
    return doc


def create_seated(pipe: Pipeline, creator: str, options: dict[str, Any], seats: list[str],
                  names: list[str], *, rated: bool = False, ladder: str | None = None,
                  now: float | None = None,
                  deal: Mapping[str, Any] | None = None) -> MatchDoc:
    """Queue on ``pipe`` (a MULTI pipeline the caller executes) a match whose seats are all taken
    at once, in the given order, so that it starts at once: what the ladder's scheduler does with
    the bots it seats (one round trip per batch of matches; nothing half-made if it dies). No
    WATCH is needed: the id is new, nobody can join or act before it exists. The seed is always
    the server's own, unless ``deal`` (``seed`` / ``deck`` / ``first_seat``) fixes the cards even
    of a rated match: see ``ladders.form_matches``, the only caller that passes one (for tests)."""
    now = time.time() if now is None else now
    opts = _options(options, rated)
    if deal:
        unknown = set(deal) - set(FIXABLE_OPTIONS)
        if unknown:
            raise ValueError(f"a deal fixes only {FIXABLE_OPTIONS}, not {sorted(unknown)}")
        opts.update(deal)
        # recorded as chosen, so every view says the cards were not the server's draw
        opts[CHOSEN_KEY] = [k for k in FIXABLE_OPTIONS if opts.get(k) is not None]
    try:
        state = engine.new_match(
            opts["ruleset"], opts["seats"], seed=opts.get("seed") or secrets.token_hex(16),
            tokens_to_win=opts.get("tokens_to_win"), first_seat=opts.get("first_seat"),
            deck=opts.get("deck"), two_player_setup=opts["two_player_setup"])
    except EngineError as e:
        raise StoreError("invalid_request", e.message) from e
    if len(seats) != state.players or len(names) != len(seats) or len(set(seats)) != len(seats):
        raise StoreError("invalid_request", f"{state.players} distinct players are needed")
    opts["seed"], opts["tokens_to_win"] = state.seed, state.tokens_to_win
    doc = MatchDoc(id=keys.new_match_id(), created_at=now, created_by=creator,
                   options=opts, rated=rated, ladder=ladder, seats=list(seats),
                   names=list(names), status=ACTIVE, version=1 + len(seats), state=state,
                   moved=[False] * len(seats))
    _set_deadline(doc, clock.current(pipe), now)
    _store_new(pipe, doc)
    pipe.zadd(keys.ALL_MATCHES, {doc.id: now})
    for pid in seats:
        pipe.zadd(keys.player_matches(pid), {doc.id: now})
    return doc


def join(r: redis.Redis, mid: str, pid: str, *, now: float | None = None) -> MatchDoc:
    """Take the next seat; the last seat starts the match."""
    name = players.get(r, pid)["name"]

    def change(c: Commit, doc: MatchDoc, _: Any) -> MatchDoc:
        t = time.time() if now is None else now
        if pid in doc.seats:
            raise StoreError("already_joined", f"you already sit at seat {doc.seat_of(pid)}")
        if doc.status != WAITING or len(doc.seats) >= doc.seat_count:
            raise StoreError("match_full", "every seat of this match is taken")
        old = doc.status
        doc.seats.append(pid)
        doc.names.append(name)
        doc.version += 1
        if len(doc.seats) == doc.seat_count:
            o = doc.options
            doc.state = engine.new_match(
                o["ruleset"], o["seats"], seed=o["seed"], tokens_to_win=o["tokens_to_win"],
                first_seat=o.get("first_seat"), deck=o.get("deck"),
                two_player_setup=o["two_player_setup"])
            doc.status = ACTIVE
            doc.moved = [False] * doc.seat_count
            _set_deadline(doc, clock.current(r), t)
        _write(c, doc, old)
        c.zadd(keys.player_matches(pid), {mid: doc.created_at})
        return doc

    return _transact_retrying(r, mid, change)


def act(r: redis.Redis, mid: str, pid: str, action: dict[str, Any], *, respond: Respond,
        expected_version: int | None = None, idempotency_key: str | None = None,
        idempotency_ttl_s: int = 48 * 3600, now: float | None = None) -> dict[str, Any]:
    """Apply ``action`` for ``pid``; returns ``respond(doc, seat, now)`` for the committed
    document (the API: the player's new view).

    With ``idempotency_key``, a repeat with the same body returns the first response unchanged
    and applies nothing; a repeat with another body is ``idempotency_key_reused``."""
    idem = keys.idempotency(mid, pid, idempotency_key) if idempotency_key else None
    # (only a keyed action is ever compared with its retry)
    fingerprint = "" if idem is None else \
        body_hash({"action": action, "expected_version": expected_version})

    def replay(raw: bytes | str) -> dict[str, Any]:
        stored = json.loads(raw)
        if stored["hash"] != fingerprint:
            raise StoreError("idempotency_key_reused", "this Idempotency-Key was used with "
                             "another request body")
        return dict(stored["response"])

    def change(c: Commit, doc: MatchDoc, raw: Any) -> dict[str, Any]:
        t = time.time() if now is None else now
        if raw is not None:
            return replay(raw)
        seat = doc.seat_of(pid)
        if seat is None:
            raise StoreError("forbidden", "you don't sit in this match")
        old = doc.status
        clk = clock.current(r)
        due = _apply_due_timeouts(doc, t, clk, r)
        if expected_version is not None and expected_version != doc.version:
            raise StoreError("version_conflict",
                             f"expected version {expected_version}, the match is at "
                             f"{doc.version}", version=doc.version)
        if doc.status != ACTIVE:
            raise StoreError("match_not_active", f"the match is {doc.status}")
        assert doc.state is not None
        try:
            engine.apply_inplace(doc.state, action, seat=seat)
        except EngineError as e:
            if not due:
                raise
            # the timeouts stay applied even though this action is refused
            _write(c, doc, old)
            _count(c, timeouts=due)
            c.error = e
            return {}
        if doc.moved is not None:
            doc.moved[seat] = True
        _after_engine_change(doc, clk, t)
        view = respond(doc, seat, t)
        _write(c, doc, old)
        _count(c, actions=1, timeouts=due)
        if idem is not None:
            c.set(idem, orjson.dumps({"hash": fingerprint, "response": view}),
                  ex=idempotency_ttl_s)
        return view

    try:
        return _transact(r, mid, change, idem=idem)
    except StoreError as e:
        # A concurrent retry with the same key may have won the race: answer as it did.
        if e.code == "version_conflict" and idem is not None:
            raw = r.get(idem)
            if raw is not None:
                return replay(raw)
        raise


def resign(r: redis.Redis, mid: str, pid: str, *, now: float | None = None) -> MatchDoc:
    """R27: the player forfeits the match."""

    def change(c: Commit, doc: MatchDoc, _: Any) -> MatchDoc:
        t = time.time() if now is None else now
        seat = doc.seat_of(pid)
        if seat is None:
            raise StoreError("forbidden", "you don't sit in this match")
        old = doc.status
        clk = clock.current(r)
        due = _apply_due_timeouts(doc, t, clk, r)
        if doc.status != ACTIVE:
            not_active = StoreError("match_not_active", f"the match is {doc.status}")
            if not due:
                raise not_active
            # the timeouts (or an abort) stay applied
            _write(c, doc, old)
            _count(c, timeouts=due)
            c.error = not_active
            return doc
        assert doc.state is not None
        try:
            engine.forfeit_inplace(doc.state, seat, reason="resigned")
        except EngineError as e:
            raise StoreError("match_not_active" if e.code == "match_over" else e.code,
                             e.message) from e
        _after_engine_change(doc, clk, t)
        _write(c, doc, old)
        _count(c, timeouts=due)
        return doc

    return _transact_retrying(r, mid, change)


def expire(r: redis.Redis, mid: str, *, now: float | None = None,
           version: int | None = None) -> MatchDoc:
    """Apply the timeouts that are due (a no-op when none is); returns the current document.
    With ``version`` (a deadline job's turn), only while the match is still at that version.

    Unlike an action, this never answers ``version_conflict``: when the match moved meanwhile
    (another reader, a deadline job or a player got there first) it reads it again and applies
    whatever is still due, so concurrent reads past a deadline all succeed and the timeout is
    applied once."""

    def change(c: Commit, doc: MatchDoc, _: Any) -> MatchDoc:
        t = time.time() if now is None else now
        old = doc.status
        if version is not None and doc.version != version:
            return doc
        clk = clock.current(r)
        due = _apply_due_timeouts(doc, t, clk, r)
        _refresh(doc, clk, t)
        if due:
            _write(c, doc, old)
            _count(c, timeouts=due)
        return doc

    return _transact_retrying(r, mid, change)


# --------------------------------------------------------------------------- listing


def list_ids(r: redis.Redis, *, status: str | None = None, player: str | None = None,
             offset: int = 0, limit: int = 20) -> tuple[list[str], int | None]:
    """Match ids, newest first, from the narrowest index; returns (ids, next offset or None).
    The offset counts positions in that index, so pages stay stable while matches are added."""
    if player is not None:
        key = keys.player_matches(player)
    elif status is not None:
        key = keys.matches_by_status(status)
    else:
        key = keys.ALL_MATCHES
    by_status = player is not None and status is not None
    ids: list[str] = []
    pos = offset
    while True:
        chunk = replies.texts(r.zrevrange(key, pos, pos + limit - 1))
        if not chunk:
            return ids, None
        keep = [True] * len(chunk)
        if by_status:
            assert status is not None
            keep = [s is not None for s in r.zmscore(keys.matches_by_status(status), chunk)]
        for i, m in enumerate(chunk):
            if keep[i]:
                ids.append(m)
                if len(ids) == limit:
                    nxt = pos + i + 1
                    return ids, nxt if r.zcard(key) > nxt else None
        pos += len(chunk)


def load_many(r: redis.Redis, ids: list[str], *,
              views: bool = False) -> list[MatchDoc]:
    """The matches (missing ones left out), each with its due timeouts applied first (as
    :func:`get`), so that lists never show a stale turn. A list shows no events: only with
    ``views`` is each read with the round in play (a read each), as a view needs."""
    if not ids:
        return []
    if views:
        docs = []
        for m in ids:
            try:
                docs.append(_read(r, m)[0])
            except StoreError as e:
                if e.code == archive.UNAVAILABLE:
                    log.error("%s", e.message)
                continue  # gone meanwhile
    else:
        docs = []
        for m, raw in zip(ids, _docs(r, ids), strict=True):
            if raw is not None:
                docs.append(MatchDoc.from_stored(raw))
                continue
            try:
                got = archive.find(r, m)
            except StoreError as e:  # one unreadable file leaves one match out of a list
                log.error("%s", e.message)
                continue
            if got is not None:
                docs.append(got.doc_only())
    now = time.time()
    clk = clock.current(r)
    return [expire(r, d.id, now=now) if _due(d, clk, now)
            else _refresh(d, clk, now)
            for d in docs]


def _docs(r: redis.Redis, ids: list[str]) -> list[Any]:
    """The stored documents (``doc`` fields) of these matches, None for a missing one: one
    pipelined round trip (per node on a cluster), not a snapshot."""
    pipe = r.pipeline(transaction=False)
    for m in ids:
        pipe.hget(keys.match(m), "doc")
    return list(pipe.execute())


# --------------------------------------------------------------------------- repair (cluster)


def reconcile_status_indexes(r: redis.Redis, *, batch: int = 500) -> int:
    """Drop the ``waiting``/``active`` index entries of matches that have left that status (on
    a Redis Cluster two changes' index effects can cross: store/cluster.py). Returns how many.
    Reads those two indexes and their documents (bounded by the matches in play)."""
    dropped = 0
    for status in (WAITING, ACTIVE):
        key = keys.matches_by_status(status)
        ids = replies.texts(r.zrange(key, 0, -1))
        for start in range(0, len(ids), batch):
            chunk = ids[start:start + batch]
            raws = _docs(r, chunk)
            stale = [m for m, raw in zip(chunk, raws, strict=True)
                     if raw is not None and MatchDoc.from_stored(raw).status != status]
            if stale:
                dropped += int(r.zrem(key, *stale))
    return dropped
