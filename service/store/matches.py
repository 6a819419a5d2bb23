"""Matches in Redis. Every change is one compare-and-set on the match document: WATCH the key,
read, change it through the engine, then write the document, indexes, idempotency record and a
wake-up in one MULTI/EXEC that fails if anything moved in between. A lost race is answered
``version_conflict``; changes are never merged.

A turn's deadline is the match's entry in the deadline index (``store/deadlines.py``), written
in the same MULTI; the deadline dispatcher turns it into an RQ job when it is due.
``deadline_jobs`` (every function that may write) no longer changes anything: it is kept so
that callers need not change with this module."""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Callable
from typing import Any, TypeVar

import orjson
import redis
from redis.client import EMPTY_RESPONSE as _EMPTY_RESPONSE
from redis.client import Pipeline

from .. import engine
from ..engine import EngineError
from . import clock, cluster, doccache, inbox, keys, players, queues, replies
from .docs import ACTIVE, CHOSEN_KEY, FINISHED, FIXABLE_OPTIONS, WAITING, MatchDoc
from .errors import StoreError

T = TypeVar("T")
#: makes the answer to an action from the committed document, the seat and the time: the HTTP
#: layer's player view. The idempotency record keeps this answer, so a retry gets it unchanged.
Respond = Callable[[MatchDoc, int, float], dict[str, Any]]

TIMEOUT_POLICIES = ("auto", "forfeit")
# A turn that times out is followed by at most this many chained timeouts in one pass.
MAX_TIMEOUTS_PER_PASS = 500
# expire() reads again this many times at most when the match moves under it.
EXPIRE_TRIES = 10


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


def _load(r: redis.Redis | Pipeline, mid: str) -> MatchDoc:
    return _parse(mid, r.get(keys.match(mid)))


def _parse(mid: str, raw: bytes | str | None) -> MatchDoc:
    if raw is None:
        raise StoreError("not_found", f"no match {mid!r}")
    return doccache.parse(mid, raw)


def load(r: redis.Redis, mid: str) -> MatchDoc:
    """The stored document as it is (no timeouts applied)."""
    return _load(r, mid)


def peek_version(r: redis.Redis, mid: str) -> int:
    """The stored version, -1 when the match doesn't exist."""
    raw = r.get(keys.match(mid))
    return -1 if raw is None else MatchDoc.from_json(raw).version


def get(r: redis.Redis, mid: str, *, now: float | None = None,
        deadline_jobs: bool = True) -> MatchDoc:
    """The match, with any timeout that is due applied first (so nobody sees a stale turn)."""
    if not isinstance(mid, str) or not keys.STORE_MATCH_ID_RE.fullmatch(mid):
        raise StoreError("not_found", f"no match {mid!r}")
    doc = _load(r, mid)
    now = time.time() if now is None else now
    clk = clock.current(r)
    if _due(doc, clk, now):
        return expire(r, mid, now=now, deadline_jobs=deadline_jobs)
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


def _absent(doc: MatchDoc, seat: int) -> bool:
    """Whether ``seat`` has made no move of its own in this rated match (the abort rule)."""
    return doc.rated and doc.moved is not None and not doc.moved[seat]


def _abort(doc: MatchDoc, seat: int, now: float) -> None:
    """End a rated match unrated: ``seat`` never moved before its first turn timed out (its bot
    was not there). The engine state stays as it was; the match is over for the service."""
    doc.version += 1
    doc.status = FINISHED
    doc.finished_at = now
    doc.aborted = {
        "reason": "absent", "seat": seat, "player_id": doc.seats[seat],
        "message": f"seat {seat} ({doc.names[seat]}) made no move of its own before its first "
                   "turn timed out: the match is aborted and rated for nobody",
    }
    doc.turn_started = doc.deadline = doc.started_s = doc.deadline_s = None


def _apply_due_timeouts(doc: MatchDoc, now: float, clk: clock.Clock | None = None) -> int:
    """Apply every timeout due by ``now`` (service time); each next turn starts at the previous
    deadline. A rated match whose timing-out seat never moved is aborted instead."""
    applied = 0
    clk = clock.WALL if clk is None else clk
    while _due(doc, clk, now) and applied < MAX_TIMEOUTS_PER_PASS:
        assert doc.state is not None
        deadline_s = _deadline_s(doc, clk, now)
        if _absent(doc, doc.state.turn):
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


def _count(pipe: Pipeline, *, actions: int = 0, timeouts: int = 0) -> None:
    """Count applied actions and timeouts for GET /metrics, in the MULTI that commits them."""
    if actions:
        pipe.hincrby(keys.STATS, "actions", actions)
    if timeouts:
        pipe.hincrby(keys.STATS, "timeouts", timeouts)


def _write(pipe: Pipeline, doc: MatchDoc, old_status: str | None, deadline_jobs: bool) -> None:
    """Queue the document and its index entries (inside MULTI)."""
    mid = doc.id
    raw = doc.to_json()
    # (execute_command: redis-py 8's set() checks its arguments for experimental ones first)
    pipe.execute_command("SET", keys.match(mid), raw)
    _written(pipe)[mid] = (raw, doc)
    if old_status != doc.status:
        if old_status is not None:
            pipe.zrem(keys.matches_by_status(old_status), mid)
        pipe.zadd(keys.matches_by_status(doc.status), {mid: doc.created_at})
    if doc.status == ACTIVE and doc.deadline is not None:
        pipe.zadd(keys.DEADLINES, {mid: doc.deadline})
    else:
        pipe.zrem(keys.DEADLINES, mid)
    inbox.queue(pipe, doc, old_status)
    queues.queue_rating(pipe, doc, old_status)


def _written(pipe: Pipeline) -> dict[str, tuple[bytes, MatchDoc]]:
    """The documents queued on ``pipe``, handed to the cache once its MULTI has committed."""
    out: dict[str, tuple[bytes, MatchDoc]] | None = getattr(pipe, "_ll_written", None)
    if out is None:
        out = {}
        pipe._ll_written = out  # type: ignore[attr-defined]
    return out


_pack_command: Callable[[tuple[Any, ...]], bytes] | None
try:  # redis-py's own C packer, installed with it (hiredis is pinned: requirements/run.txt)
    from hiredis import pack_command as _pack_command
except ImportError:  # pragma: no cover - without hiredis, redis-py packs as before
    _pack_command = None


def _pack(conn: Any, commands: list[tuple[Any, ...]]) -> list[bytes]:
    """``commands`` in Redis's protocol, as one buffer (one write). redis-py packs each command
    through hiredis too, but first looks in every command for a name with a space and for
    bytearray arguments, about 3 us a command that an action (8 to 10 commands) never needs;
    hiredis itself takes under 1 us a command, 2 for a 17 KB document, with byte-identical
    output. A multi-word command name, or an argument hiredis refuses, goes through redis-py's
    packing and its errors, as does everything when hiredis is missing."""
    if _pack_command is not None and not any(" " in str(c[0]) for c in commands):
        try:
            return [b"".join([_pack_command(c) for c in commands])]
        except (TypeError, ValueError):
            pass
    return conn.pack_commands(commands)  # type: ignore[no-any-return]


def _watch_read(pipe: Pipeline, names: tuple[str, ...]) -> list[Any]:
    """WATCH ``names`` and GET each of them, in ONE round trip on a single Redis (``pipe.watch``
    and then ``pipe.get`` per key take a round trip each): an action's WATCH, GET match and
    GET idempotency record went out as three. A round trip costs about 30 us of the API
    process's CPU and 10 us of Redis's (bench/api.py), more than the commands themselves.
    Redis answers in order, so the values read are those of the watched keys at WATCH time or
    later, as with separate calls. A Redis Cluster's pipeline (store/cluster.py) keeps its own
    WATCH path."""
    if cluster.is_cluster(pipe):
        pipe.watch(*names)
        return [pipe.get(n) for n in names]
    conn = pipe.connection
    if conn is None:
        conn = pipe.connection = pipe.connection_pool.get_connection()
    packed = _pack(conn, [("WATCH", *names), *(("GET", n) for n in names)])

    def once() -> list[Any]:
        conn.send_packed_command(packed)
        replies: list[Any] = []
        for _ in range(1 + len(names)):  # read every reply before raising any error
            try:
                replies.append(conn.read_response())
            except redis.ResponseError as e:
                replies.append(e)
        for reply in replies:
            if isinstance(reply, redis.ResponseError):
                raise reply
        return replies[1:]

    # A broken pooled connection (Redis restarted) is retried on a new one, as redis-py's own
    # WATCH does: nothing was watched or read on it yet.
    values: list[Any] = conn.retry.call_with_retry(once, lambda _e: conn.disconnect())
    pipe.watching = True
    return values


def _execute(pipe: Pipeline) -> None:
    """``pipe.execute()`` of the MULTI/EXEC that :func:`_transact` queued, without redis-py's
    per-command bookkeeping on the way back (its response callbacks, a parse_response per
    reply, the HIMPORT preparation this store never needs): about 25 us of the API's CPU per
    action, whose answers nobody reads (only that EXEC ran). The same commands go out in the
    same one write; a lost WATCH raises ``WatchError``, an error reply the first error, and a
    broken connection ``WatchError`` after disconnecting (the transaction may or may not have
    run: the caller reads again), all as ``pipe.execute()`` does. A Redis Cluster's pipeline
    (store/cluster.py), scripts, or anything unusual on the stack go through
    ``pipe.execute()``."""
    if cluster.is_cluster(pipe):
        pipe.execute()
        return
    conn = pipe.connection
    stack = pipe.command_stack
    if conn is None or not pipe.watching or pipe.scripts or any(
            _EMPTY_RESPONSE in options for _, options in stack):
        pipe.execute()
        return
    packed = _pack(conn, [("MULTI",), *(args for args, _ in stack), ("EXEC",)])
    errors: list[tuple[int, redis.ResponseError]] = []
    try:
        conn.send_packed_command(packed)
        for i in range(len(stack) + 1):  # MULTI's OK, then QUEUED per command
            try:
                conn.read_response()
            except redis.ResponseError as e:
                if i:
                    pipe.annotate_exception(e, i, stack[i - 1][0])
                errors.append((i, e))
        try:
            response = conn.read_response()
        except redis.exceptions.ExecAbortError:
            if errors:
                raise errors[0][1] from None
            raise
    except (redis.ConnectionError, redis.TimeoutError) as e:
        conn.disconnect()
        raise redis.WatchError(f"A {type(e).__name__} occurred while watching one or more "
                               "keys") from e
    pipe.watching = False  # EXEC ends every WATCH
    if response is None:
        raise redis.WatchError("Watched variable changed.")
    if len(response) != len(stack):
        conn.disconnect()
        raise redis.ResponseError("Wrong number of response items from pipeline execution")
    pipe.raise_first_error(stack, response)


def _watched(pipe: Pipeline, name: str) -> Any:
    """The value of ``name`` as :func:`_transact` read it when it was watched."""
    read: dict[str, Any] = getattr(pipe, "_ll_read", {})
    return read[name] if name in read else pipe.get(name)


def _transact(r: redis.Redis, mid: str, change: Callable[[Pipeline, MatchDoc], T],
              *, watch: tuple[str, ...] = (), hand_over: bool = False) -> T:
    """Run ``change`` on the freshly read document under WATCH; it queues its writes after
    ``pipe.multi()`` (via :func:`_write`). One retry if the document did not actually move (a
    spurious WATCH failure); otherwise ``version_conflict``. The keys in ``watch`` are watched
    and read with the document (:func:`_watch_read`); ``change`` gets their values from
    :func:`_watched`. ``hand_over``: ``change`` keeps no reference to the documents it
    writes (its result holds none), so the cache takes them as they are instead of a copy
    (about 10 us of an action, whose answer is the view made before the write)."""
    first_version: int | None = None
    names = (keys.match(mid), *watch)
    for _ in range(3):
        with r.pipeline() as pipe:
            try:
                raws = _watch_read(pipe, names)
                pipe._ll_read = dict(zip(names[1:], raws[1:], strict=True))  # type: ignore[attr-defined]
                doc = _parse(mid, raws[0])
                if first_version is None:
                    first_version = doc.version
                elif doc.version != first_version:
                    break
                result = change(pipe, doc)
                _execute(pipe)
                for raw, written in _written(pipe).values():
                    doccache.remember(raw, written, copy=not hand_over)
                return result
            except redis.WatchError:
                continue
    raise StoreError("version_conflict", "the match changed while this request was applied; "
                     "read the view again")


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
           ladder: str | None = None, now: float | None = None,
           deadline_jobs: bool = True) -> MatchDoc:
    """Create a waiting match after checking its options with the engine."""
    now = time.time() if now is None else now
    opts = check_options(options, rated=rated)
    if opts.get("seed") is None:
        opts["seed"] = secrets.token_hex(16)  # hidden until the match ends
    mid = keys.new_match_id()
    doc = MatchDoc(id=mid, created_at=now, created_by=creator, options=opts, rated=rated,
                   ladder=ladder)
    pipe = r.pipeline()
    _write(pipe, doc, None, deadline_jobs)
    pipe.zadd(keys.ALL_MATCHES, {mid: now})
    pipe.execute()
    return doc


def create_seated(pipe: Pipeline, creator: str, options: dict[str, Any], seats: list[str],
                  names: list[str], *, rated: bool = False, ladder: str | None = None,
                  now: float | None = None, deadline_jobs: bool = True) -> MatchDoc:
    """Queue on ``pipe`` (a MULTI pipeline the caller executes) a match whose seats are all taken
    at once, in the given order, so that it starts at once: what the ladder's scheduler does with
    the bots it seats (one round trip per batch of matches; nothing half-made if it dies). No
    WATCH is needed: the id is new, nobody can join or act before it exists. The seed is always
    the server's own."""
    now = time.time() if now is None else now
    opts = _options(options, rated)
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
    _write(pipe, doc, None, deadline_jobs)
    pipe.zadd(keys.ALL_MATCHES, {doc.id: now})
    for pid in seats:
        pipe.zadd(keys.player_matches(pid), {doc.id: now})
    return doc


def join(r: redis.Redis, mid: str, pid: str, *, now: float | None = None,
         deadline_jobs: bool = True) -> MatchDoc:
    """Take the next seat; the last seat starts the match."""
    name = players.get(r, pid)["name"]

    def change(pipe: Pipeline, doc: MatchDoc) -> MatchDoc:
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
        pipe.multi()
        _write(pipe, doc, old, deadline_jobs)
        pipe.zadd(keys.player_matches(pid), {mid: doc.created_at})
        return doc

    return _transact(r, mid, change)


def act(r: redis.Redis, mid: str, pid: str, action: dict[str, Any], *, respond: Respond,
        expected_version: int | None = None, idempotency_key: str | None = None,
        idempotency_ttl_s: int = 48 * 3600, now: float | None = None,
        deadline_jobs: bool = True) -> dict[str, Any]:
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

    def change(pipe: Pipeline, doc: MatchDoc) -> dict[str, Any]:
        t = time.time() if now is None else now
        if idem is not None:
            raw = _watched(pipe, idem)
            if raw is not None:
                return replay(raw)
        seat = doc.seat_of(pid)
        if seat is None:
            raise StoreError("forbidden", "you don't sit in this match")
        old = doc.status
        clk = clock.current(r)
        due = _apply_due_timeouts(doc, t, clk)
        if expected_version is not None and expected_version != doc.version:
            raise StoreError("version_conflict",
                             f"expected version {expected_version}, the match is at "
                             f"{doc.version}", version=doc.version)
        if doc.status != ACTIVE:
            raise StoreError("match_not_active", f"the match is {doc.status}")
        assert doc.state is not None
        try:
            engine.apply_inplace(doc.state, action, seat=seat)
        except EngineError:
            if due:  # the timeouts stay applied even though this action is refused
                pipe.multi()
                _write(pipe, doc, old, deadline_jobs)
                _count(pipe, timeouts=due)
                pipe.execute()
            raise
        if doc.moved is not None:
            doc.moved[seat] = True
        _after_engine_change(doc, clk, t)
        view = respond(doc, seat, t)
        pipe.multi()
        _write(pipe, doc, old, deadline_jobs)
        _count(pipe, actions=1, timeouts=due)
        if idem is not None:
            pipe.set(idem, orjson.dumps({"hash": fingerprint, "response": view}),
                     ex=idempotency_ttl_s)
        return view

    try:
        # (the view made in change is all that leaves it: the document can go to the cache)
        return _transact(r, mid, change, watch=(idem,) if idem else (), hand_over=True)
    except StoreError as e:
        # A concurrent retry with the same key may have won the race: answer as it did.
        if e.code == "version_conflict" and idem is not None:
            raw = r.get(idem)
            if raw is not None:
                return replay(raw)
        raise


def resign(r: redis.Redis, mid: str, pid: str, *, now: float | None = None,
           deadline_jobs: bool = True) -> MatchDoc:
    """R27: the player forfeits the match."""

    def change(pipe: Pipeline, doc: MatchDoc) -> MatchDoc:
        t = time.time() if now is None else now
        seat = doc.seat_of(pid)
        if seat is None:
            raise StoreError("forbidden", "you don't sit in this match")
        old = doc.status
        clk = clock.current(r)
        due = _apply_due_timeouts(doc, t, clk)
        if doc.status != ACTIVE:
            if due:  # the timeouts (or an abort) stay applied
                pipe.multi()
                _write(pipe, doc, old, deadline_jobs)
                _count(pipe, timeouts=due)
                pipe.execute()
            raise StoreError("match_not_active", f"the match is {doc.status}")
        assert doc.state is not None
        try:
            engine.forfeit_inplace(doc.state, seat, reason="resigned")
        except EngineError as e:
            raise StoreError("match_not_active" if e.code == "match_over" else e.code,
                             e.message) from e
        _after_engine_change(doc, clk, t)
        pipe.multi()
        _write(pipe, doc, old, deadline_jobs)
        _count(pipe, timeouts=due)
        return doc

    return _transact(r, mid, change)


def expire(r: redis.Redis, mid: str, *, now: float | None = None,
           version: int | None = None, deadline_jobs: bool = True) -> MatchDoc:
    """Apply the timeouts that are due (a no-op when none is); returns the current document.
    With ``version`` (a deadline job's turn), only while the match is still at that version.

    Unlike an action, this never answers ``version_conflict``: when the match moved meanwhile
    (another reader, a deadline job or a player got there first) it reads it again and applies
    whatever is still due, so concurrent reads past a deadline all succeed and the timeout is
    applied once."""

    def change(pipe: Pipeline, doc: MatchDoc) -> MatchDoc:
        t = time.time() if now is None else now
        old = doc.status
        if version is not None and doc.version != version:
            return doc
        clk = clock.current(r)
        due = _apply_due_timeouts(doc, t, clk)
        _refresh(doc, clk, t)
        if due:
            pipe.multi()
            _write(pipe, doc, old, deadline_jobs)
            _count(pipe, timeouts=due)
        return doc

    for _ in range(EXPIRE_TRIES - 1):
        try:
            return _transact(r, mid, change)
        except StoreError as e:
            if e.code != "version_conflict":
                raise
    return _transact(r, mid, change)


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


def load_many(r: redis.Redis, ids: list[str], *, deadline_jobs: bool = True) -> list[MatchDoc]:
    """The matches (missing ones left out), each with its due timeouts applied first (as
    :func:`get`), so that lists never show a stale turn."""
    if not ids:
        return []
    raws = r.mget([keys.match(m) for m in ids])
    docs = [doccache.parse(m, raw) for m, raw in zip(ids, raws, strict=True) if raw is not None]
    now = time.time()
    clk = clock.current(r)
    return [expire(r, d.id, now=now, deadline_jobs=deadline_jobs) if _due(d, clk, now)
            else _refresh(d, clk, now)
            for d in docs]


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
            raws = r.mget([keys.match(m) for m in chunk])
            stale = [m for m, raw in zip(chunk, raws, strict=True)
                     if raw is not None and MatchDoc.from_json(raw).status != status]
            if stale:
                dropped += int(r.zrem(key, *stale))
    return dropped
