"""The ladder store: entries, scheduling passes, ratings and the leaderboard in Redis. The pure
parts live beside it: who meets whom in ``ladder_planner.py``, the rating model and records in
``rating.py``.

Keys (per ladder ``L``): ``entries`` (zset pid -> entered at), ``players`` (hash pid -> JSON
record: mu, sigma, games, wins, timeouts, games per seat, recent games, last table, bad streak,
bench), ``active`` (hash pid -> ladder matches formed and not yet rated), ``inflight`` (hash
match id -> JSON seats: the matches formed and not yet rated; removing a match from it, in the
rating's transaction, is the exactly-once guard), ``h:<pid>`` (list: the bot's rated matches,
newest first), ``lock`` (a redis-py lock: one scheduling pass at a time).

A pass (:func:`form_matches`) takes as its pool the entered bots that polled within the
ladder's presence window, are not benched and play fewer than ``max_concurrent`` of this
ladder's matches; the planner seats them; the matches are written already started, a batch per
transaction (``matches.create_seated``, with the ``active`` counts and ``inflight``), so a pass
that dies leaves no half-formed match and no counter that never comes down. Ladder matches
never take ``seed``, ``deck`` or ``first_seat``: the server draws the seed (only a test passes a
known deal to :func:`form_matches`)."""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Mapping
from typing import Any

import redis
from redis.exceptions import LockError

from .. import engine
from . import aborts, keys, ladder_planner, matches, players, rating, replies
from .docs import FINISHED, MatchDoc
from .errors import StoreError
from .ladder_config import LadderConfig
from .rating import Record

HISTORY_KEEP = 500
#: matches written per transaction when a pass forms many
CREATE_BATCH = 64
LOCK_TTL_S = 60


def _k(ladder: str, part: str) -> str:
    return keys.ladder(ladder, part)


# --------------------------------------------------------------------------- entries


def enter(r: redis.Redis, lad: LadderConfig, pid: str, now: float | None = None) -> dict[str, Any]:
    """Enter ``pid``. People (players registered as ``kind: human``) only where the ladder
    admits them (``LadderConfig.humans``): see the README's "Humans on the ladder"."""
    if not lad.humans and players.briefs(r, [pid])[0][1] == "human":
        raise StoreError("ladder_bots_only", f"the {lad.name} ladder is for bots: its "
                         f"{lad.turn_timeout_s} s turns and round-the-clock scheduling are made "
                         f"for programs; challenge a bot instead (POST /v1/challenges)")
    r.zadd(_k(lad.name, "entries"), {pid: time.time() if now is None else now}, nx=True)
    return entry_status(r, lad, pid)


def leave(r: redis.Redis, lad: LadderConfig, pid: str) -> dict[str, Any]:
    """Take ``pid`` off the ladder. The answer comes only once no scheduling pass can still seat
    it: a pass that read the entries before they changed may be writing its tables, so leaving
    waits for it (at most ``LEAVE_WAIT_S``); the answer's ``active_matches`` then counts every
    match the bot was given, and a bot that stops after leaving finds them all (a match seated
    just after its answer would be played by nobody, and abort or forfeit on its clock)."""
    r.zrem(_k(lad.name, "entries"), pid)
    wait_for_passes(r, [lad.name], within_s=LEAVE_WAIT_S)
    return entry_status(r, lad, pid)


#: how long a leave waits for a pass in progress: a pass takes milliseconds; one that died holds
#: its lock until LOCK_TTL_S, and a leave doesn't wait that out
LEAVE_WAIT_S = 5.0


def wait_for_passes(r: redis.Redis, ladder_names: list[str], within_s: float) -> None:
    """Wait until every scheduling pass that holds a ladder's lock now has ended (or ``within_s``
    has passed): a later pass reads the entries as they are now."""
    held = {name: r.get(_k(name, "lock")) for name in ladder_names}
    deadline = time.monotonic() + within_s
    for name, token in held.items():
        while token is not None and time.monotonic() < deadline and \
                r.get(_k(name, "lock")) == token:
            time.sleep(0.02)


def _present(lad: LadderConfig, seen: float | None, now: float) -> bool:
    return seen is not None and float(seen) >= now - lad.presence_window_s


def entry_status(r: redis.Redis, lad: LadderConfig, pid: str,
                 now: float | None = None) -> dict[str, Any]:
    now = time.time() if now is None else now
    pipe = r.pipeline()
    pipe.zscore(_k(lad.name, "entries"), pid)
    pipe.hget(_k(lad.name, "players"), pid)
    pipe.zscore(keys.PRESENCE, pid)
    pipe.hget(_k(lad.name, "active"), pid)
    entered, raw, seen, active = pipe.execute()
    rec = Record.from_json(raw, lad.seats)
    benched, reason = _bench(rec, seen, aborts.current(r, [pid], now)[0])
    return {
        "ladder": lad.name, "player_id": pid, "entered": entered is not None,
        "present": _present(lad, seen, now), "benched": benched,
        "benched_reason": reason, "active_matches": int(active or 0),
    }


def _benched(rec: Record, seen: float | bytes | None) -> bool:
    # Benched until the bot polls again after being benched.
    return rec.benched_at is not None and (seen is None or float(seen) <= rec.benched_at)


def _bench(rec: Record, seen: float | bytes | None,
           timed: dict[str, Any] | None) -> tuple[bool, str | None]:
    """Whether the bot is benched and why: a timed bench for repeated aborts (store/aborts.py,
    on every ladder until it ends) first, else this ladder's bench until it polls again."""
    if timed is not None:
        return True, str(timed["reason"])
    if _benched(rec, seen):
        return True, rec.benched_reason
    return False, None


# --------------------------------------------------------------------------- scheduling

def form_matches(r: redis.Redis, lad: LadderConfig, *, now: float | None = None,
                 rng: random.Random | None = None,
                 deal: Mapping[str, Any] | None = None) -> list[str]:
    """One scheduling pass: rate what finished, then form as many tables as the present,
    unbenched bots under their concurrency cap allow. Returns the new match ids.

    ``deal`` is for tests only: the ``seed``, ``deck`` and/or ``first_seat`` of every match
    formed, or ``first_player`` (a player id: its seat moves first), so that a test knows what a
    first move or a timeout does (the abort rule holds only in round 1). The scheduler
    (jobs/ladder.py) never passes one and no route or setting reaches it; the matches record it
    as chosen, as an unrated match with those options does."""
    lock = r.lock(_k(lad.name, "lock"), timeout=LOCK_TTL_S)
    if not lock.acquire(blocking=False):
        return []  # another pass is running
    try:
        _rate_finished(r, lad)
        now = time.time() if now is None else now
        rng = rng or random.Random()
        pids = replies.texts(r.zrange(_k(lad.name, "entries"), 0, -1))
        if len(pids) < lad.seats:
            return []
        pipe = r.pipeline(transaction=False)
        pipe.hmget(_k(lad.name, "players"), pids)
        pipe.zmscore(keys.PRESENCE, pids)
        pipe.hmget(_k(lad.name, "active"), pids)
        raws, seen, active = pipe.execute()
        timed = aborts.current(r, pids, now)  # benched for a time: repeated aborts
        recs = {p: Record.from_json(raw, lad.seats) for p, raw in zip(pids, raws, strict=True)}
        pool, present = [], 0
        for p, s, a, t in zip(pids, seen, active, timed, strict=True):
            rec = recs[p]
            if rec.benched_at is not None and s is not None and s > rec.benched_at:
                _unbench(r, lad, p)  # it polled since it was benched: back on the schedule
                rec.benched_at = None
            if not _present(lad, s, now) or rec.benched_at is not None or t is not None:
                continue
            present += 1
            if int(a or 0) < lad.max_concurrent:
                pool.append(p)
        # Rematches wait only while other present bots are busy (they may come free).
        hold = float(lad.rematch_hold) if present > len(pool) else 0.0
        tables = ladder_planner.plan_tables(lad, pool, recs, rng, now=now, hold_s=hold)
        return _create(r, lad, tables, deal)
    finally:
        with contextlib.suppress(LockError):  # it expired (a pass past LOCK_TTL_S): not ours
            lock.release()


def _rate_finished(r: redis.Redis, lad: LadderConfig) -> None:
    """Rate the finished matches that are still unrated (normally the rating job, queued when
    the match finished, has done it; this covers a lost job). Reads only the status index."""
    ids = replies.texts(r.hkeys(_k(lad.name, "inflight")))
    if not ids:
        return
    done = r.zmscore(keys.matches_by_status(FINISHED), ids)
    for mid, score in zip(ids, done, strict=True):
        if score is None:
            continue
        try:
            rate(r, mid, {lad.name: lad})
        except StoreError:  # the document is gone: free its bots all the same
            _drop(r, lad, mid)


def _drop(r: redis.Redis, lad: LadderConfig, mid: str) -> None:
    """Forget an in-flight match without rating it (its bots' counts come down once)."""
    inflight = _k(lad.name, "inflight")
    with r.pipeline() as pipe:
        while True:
            try:
                pipe.watch(inflight)
                raw = pipe.hget(inflight, mid)
                if raw is None:
                    return
                pipe.multi()
                for p in json.loads(raw):
                    pipe.hincrby(_k(lad.name, "active"), p, -1)
                pipe.hdel(inflight, mid)
                pipe.execute()
                return
            except redis.WatchError:
                continue


def _create(r: redis.Redis, lad: LadderConfig, tables: list[list[str]],
            deal: Mapping[str, Any] | None = None) -> list[str]:
    """Write the tables as started, rated matches, ``CREATE_BATCH`` per transaction."""
    if not tables:
        return []
    everyone = [p for table in tables for p in table]
    name = dict(zip(everyone, players.names(r, everyone), strict=True))
    options = {"ruleset": lad.ruleset, "seats": lad.seats, "turn_timeout_s": lad.turn_timeout_s,
               "timeout_policy": "auto", "max_timeouts": 3}
    created: list[str] = []
    for start in range(0, len(tables), CREATE_BATCH):
        pipe = r.pipeline()  # MULTI/EXEC: the batch is written whole or not at all
        for table in tables[start:start + CREATE_BATCH]:
            fixed = None
            if deal:
                fixed = {k: v for k, v in deal.items() if k != "first_player"}
                if deal.get("first_player") in table:
                    fixed["first_seat"] = table.index(deal["first_player"])
            doc = matches.create_seated(pipe, f"ladder:{lad.name}", options, table,
                                        [name[p] for p in table], rated=True, ladder=lad.name,
                                        deal=fixed)
            for p in table:
                pipe.hincrby(_k(lad.name, "active"), p, 1)
            pipe.hset(_k(lad.name, "inflight"), doc.id, json.dumps(table))
            created.append(doc.id)
        pipe.execute()
    return created


def _unbench(r: redis.Redis, lad: LadderConfig, pid: str) -> None:
    def change(rec: Record) -> None:
        rec.benched_at = rec.benched_reason = None
        rec.bad_streak = 0

    _update_record(r, lad, pid, change)


def _update_record(r: redis.Redis, lad: LadderConfig, pid: str, change: Any) -> None:
    key = _k(lad.name, "players")
    with r.pipeline() as pipe:
        while True:
            try:
                pipe.watch(key)
                rec = Record.from_json(pipe.hget(key, pid), lad.seats)
                change(rec)
                pipe.multi()
                pipe.hset(key, pid, rec.to_json())
                pipe.execute()
                return
            except redis.WatchError:
                continue


# --------------------------------------------------------------------------- rating


def rate(r: redis.Redis, mid: str, ladders: Mapping[str, LadderConfig],
         now: float | None = None) -> bool:
    """Rate a finished ladder match exactly once (a second run changes nothing). Returns whether
    this call rated it. The guard: the match leaves ``inflight`` in the same transaction that
    writes the ratings, under WATCH of both, so of two concurrent runs exactly one commits.
    ``ladders``: the configured ladders (a ladder no longer configured is rated with its
    defaults)."""
    doc = matches.load(r, mid)
    if doc.status != FINISHED or not doc.ladder or doc.state is None:
        return False
    lad = ladders.get(doc.ladder) or LadderConfig(
        doc.ladder, doc.options["ruleset"], doc.seat_count)
    now = time.time() if now is None else now
    if doc.aborted is not None:
        return _settle_aborted(r, lad, doc, now)
    inflight, records = _k(lad.name, "inflight"), _k(lad.name, "players")
    places = engine.placings(doc.state)
    timeouts, bad = rating.misconduct(doc)
    with r.pipeline() as pipe:
        while True:
            try:
                pipe.watch(inflight, records)
                if not pipe.hexists(inflight, mid):
                    return False  # rated already (or never formed by the scheduler)
                recs = [Record.from_json(raw, lad.seats)
                        for raw in pipe.hmget(records, doc.seats)]
                rating.apply_result(recs, doc.seats, places, timeouts, bad, now=now,
                                    bench_after=lad.bench_after)
                pipe.multi()
                for seat, (pid, rec) in enumerate(zip(doc.seats, recs, strict=True)):
                    pipe.hset(records, pid, rec.to_json())
                    pipe.hincrby(_k(lad.name, "active"), pid, -1)
                    pipe.lpush(_k(lad.name, f"h:{pid}"), json.dumps({
                        "match_id": mid, "at": now, "seat": seat, "place": places[seat],
                        "players": len(doc.seats), "mu": rec.mu, "sigma": rec.sigma,
                        "rating": rec.rating, "timeouts": timeouts[seat]}))
                    pipe.ltrim(_k(lad.name, f"h:{pid}"), 0, HISTORY_KEEP - 1)
                pipe.hdel(inflight, mid)
                pipe.execute()
                return True
            except redis.WatchError:
                continue


def _settle_aborted(r: redis.Redis, lad: LadderConfig, doc: MatchDoc, now: float) -> bool:
    """An aborted match (a seat was absent at its first timeout of round 1:
    store/attendance.py) is rated for nobody: ratings, games, wins and streaks stay as they
    were. Each bot's history shows it, marked ``aborted``; the absent bot is benched until it
    polls again, and its abort is counted (store/aborts.py: repeated ones bench it for a time).
    Exactly once, with the same guard as a rating (the match leaves ``inflight`` in the same
    transaction)."""
    assert doc.aborted is not None
    absent = int(doc.aborted["seat"])
    inflight, records = _k(lad.name, "inflight"), _k(lad.name, "players")
    with r.pipeline() as pipe:
        while True:
            try:
                pipe.watch(inflight, records)
                if not pipe.hexists(inflight, doc.id):
                    return False
                recs = [Record.from_json(raw, lad.seats) for raw in pipe.hmget(records, doc.seats)]
                pipe.multi()
                for seat, (pid, rec) in enumerate(zip(doc.seats, recs, strict=True)):
                    if seat == absent:
                        rec.benched_at = now
                        rec.benched_reason = (f"absent: never moved nor asked about {doc.id} "
                                              f"before its first turn timed out (aborted); "
                                              f"back on the schedule when it polls again")
                    pipe.hset(records, pid, rec.to_json())
                    pipe.hincrby(_k(lad.name, "active"), pid, -1)
                    pipe.lpush(_k(lad.name, f"h:{pid}"), json.dumps({
                        "match_id": doc.id, "at": now, "seat": seat, "place": None,
                        "players": len(doc.seats), "mu": rec.mu, "sigma": rec.sigma,
                        "rating": rec.rating, "timeouts": 0,
                        "aborted": doc.aborted["message"]}))
                    pipe.ltrim(_k(lad.name, f"h:{pid}"), 0, HISTORY_KEEP - 1)
                pipe.hdel(inflight, doc.id)
                pipe.execute()
                break
            except redis.WatchError:
                continue
    # counted once: only the run that settled the match gets here
    aborts.record(r, doc.seats[absent], doc.id, lad.abort_policy, now)
    return True


# --------------------------------------------------------------------------- reading


def leaderboard(r: redis.Redis, lad: LadderConfig, now: float | None = None
                ) -> list[dict[str, Any]]:
    """Every bot with a record or an entry, best conservative rating first."""
    now = time.time() if now is None else now
    raw = r.hgetall(_k(lad.name, "players"))
    entered = set(replies.texts(r.zrange(_k(lad.name, "entries"), 0, -1)))
    pids = sorted(set(replies.texts(raw)) | entered)
    gone = players.hidden(r, pids)  # banned players and deleted accounts show nowhere
    pids = [p for p in pids if p not in gone]
    if not pids:
        return []
    pipe = r.pipeline(transaction=False)
    pipe.zmscore(keys.PRESENCE, pids)
    pipe.hmget(_k(lad.name, "active"), pids)
    seen, active = pipe.execute()
    briefs = players.briefs(r, pids)
    timed = aborts.current(r, pids, now)
    rows: list[dict[str, Any]] = []
    for p, s, a, (name, kind), t in zip(pids, seen, active, briefs, timed, strict=True):
        rec = Record.from_json(raw.get(p.encode()), lad.seats)
        benched, reason = _bench(rec, s, t)
        rows.append({
            "player_id": p, "name": name, "kind": kind,
            "rating": round(rec.rating, 3), "mu": round(rec.mu, 3),
            "sigma": round(rec.sigma, 3), "games": rec.games, "wins": rec.wins,
            "win_rate": round(rec.wins / rec.games, 4) if rec.games else None,
            "timeouts": rec.timeouts, "seat_balance": rec.seats,
            "provisional": rec.games < lad.provisional_games, "benched": benched,
            "benched_reason": reason, "entered": p in entered, "present": _present(lad, s, now),
            "active_matches": max(0, int(a or 0)), "last_played_at": rec.last_at,
        })
    rows.sort(key=lambda x: (-x["rating"], -x["games"], x["name"]))
    for i, row in enumerate(rows, 1):
        row["rank"] = i
    return rows


def history(r: redis.Redis, ladder: str, pid: str, limit: int = 50) -> list[dict[str, Any]]:
    return [json.loads(x) for x in r.lrange(_k(ladder, f"h:{pid}"), 0, limit - 1)]


def standing(r: redis.Redis, lad: LadderConfig, pid: str,
             limit: int = 50) -> dict[str, Any] | None:
    """A bot's rating on the ladder and its history (newest first, with the rating after each
    match), read in one transaction so that they agree; None if it never played there."""
    pipe = r.pipeline()  # MULTI: one snapshot
    pipe.hget(_k(lad.name, "players"), pid)
    pipe.lrange(_k(lad.name, f"h:{pid}"), 0, limit - 1)
    raw, hist = pipe.execute()
    if raw is None and not hist:  # (history without a record: a new season, not played yet)
        return None
    rec = Record.from_json(raw, lad.seats)
    return {"rating": rec.rating, "mu": rec.mu, "sigma": rec.sigma, "games": rec.games,
            "wins": rec.wins, "provisional": rec.games < lad.provisional_games,
            "history": [json.loads(x) for x in hist]}


def record(r: redis.Redis, lad: LadderConfig, pid: str) -> Record | None:
    raw = r.hget(_k(lad.name, "players"), pid)
    return None if raw is None else Record.from_json(raw, lad.seats)



def entry_count(r: redis.Redis, lad: LadderConfig) -> int:
    return int(r.zcard(_k(lad.name, "entries")))
