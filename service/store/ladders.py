"""The ladder's data and its two pure-ish steps: forming matches and rating finished ones.

Keys (per ladder ``L``): ``entries`` (zset pid -> entered at), ``players`` (hash pid -> JSON
record: mu, sigma, games, wins, timeouts, games per seat, bad streak, bench), ``active`` (hash
pid -> running ladder matches), ``running`` (set of match ids not yet rated), ``rated`` (set of
match ids already rated: the exactly-once guard), ``recent`` (list of recent tables),
``h:<pid>`` (list: the bot's rated matches, newest first)."""

from __future__ import annotations

import itertools
import json
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import redis
from openskill.models import PlackettLuce
from redis.client import Pipeline
from rq import Queue

from .. import engine
from ..config import BENCH_AFTER, PRESENCE_WINDOW_S, PROVISIONAL_GAMES, LadderConfig
from . import keys, matches
from .docs import FINISHED, MatchDoc
from .errors import StoreError

MODEL = PlackettLuce()
HISTORY_KEEP = 500
RECENT_TABLES = 64
RATE_JOB = "service.jobs.ladder.rate"


def _k(ladder: str, part: str) -> str:
    return f"{keys.PREFIX}:lad:{ladder}:{part}"


@dataclass
class Record:
    """One bot's standing on one ladder."""

    mu: float = MODEL.mu
    sigma: float = MODEL.sigma
    games: int = 0
    wins: int = 0
    timeouts: int = 0
    seats: list[int] = field(default_factory=list)  # games played in each seat
    bad_streak: int = 0  # consecutive ladder matches with a timeout or forfeit
    benched_at: float | None = None
    benched_reason: str | None = None

    @property
    def rating(self) -> float:
        """The conservative rating the leaderboard sorts by."""
        return self.mu - 3 * self.sigma

    @classmethod
    def parse(cls, raw: bytes | str | None, seats: int) -> Record:
        rec = cls(**json.loads(raw)) if raw else cls()
        if len(rec.seats) < seats:
            rec.seats += [0] * (seats - len(rec.seats))
        return rec

    def dump(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))


# --------------------------------------------------------------------------- entries


def enter(r: redis.Redis, lad: LadderConfig, pid: str, now: float | None = None) -> dict[str, Any]:
    r.zadd(_k(lad.name, "entries"), {pid: time.time() if now is None else now}, nx=True)
    return entry_status(r, lad, pid)


def leave(r: redis.Redis, lad: LadderConfig, pid: str) -> dict[str, Any]:
    r.zrem(_k(lad.name, "entries"), pid)
    return entry_status(r, lad, pid)


def entry_status(r: redis.Redis, lad: LadderConfig, pid: str,
                 now: float | None = None) -> dict[str, Any]:
    now = time.time() if now is None else now
    pipe = r.pipeline()
    pipe.zscore(_k(lad.name, "entries"), pid)
    pipe.hget(_k(lad.name, "players"), pid)
    pipe.zscore(keys.PRESENCE, pid)
    pipe.hget(_k(lad.name, "active"), pid)
    entered, raw, seen, active = pipe.execute()
    rec = Record.parse(raw, lad.seats)
    return {
        "ladder": lad.name, "player_id": pid, "entered": entered is not None,
        "present": seen is not None and float(seen) >= now - PRESENCE_WINDOW_S,
        "benched": _benched(rec, seen), "benched_reason": rec.benched_reason
        if _benched(rec, seen) else None, "active_matches": int(active or 0),
    }


def _benched(rec: Record, seen: float | bytes | None) -> bool:
    # Benched until the bot polls again after being benched.
    return rec.benched_at is not None and (seen is None or float(seen) <= rec.benched_at)


# --------------------------------------------------------------------------- scheduling


def _seat_order(group: list[str], recs: dict[str, Record], rng: random.Random) -> list[str]:
    """The seating that puts each bot where it has sat least (ties broken at random)."""
    best: list[tuple[int, float, tuple[str, ...]]] = []
    perms = itertools.permutations(group) if len(group) <= 6 else [tuple(group)]
    for perm in perms:
        cost = sum(recs[p].seats[i] ** 2 for i, p in enumerate(perm))
        best.append((cost, rng.random(), perm))
    return list(min(best)[2])


def plan_tables(lad: LadderConfig, pool: list[str], recs: dict[str, Record],
                recent: set[frozenset[str]], rng: random.Random) -> list[list[str]]:
    """Group available bots into tables. The seed of each table is the bot with the fewest games
    (ties: the most uncertain rating); it is joined by bots close to it in rating, with noise so
    pairings vary, avoiding tables seen recently; then seats are rotated."""
    pool = list(pool)
    tables: list[list[str]] = []
    noise = MODEL.sigma / 2
    while len(pool) >= lad.seats:
        seed = min(pool, key=lambda p: (recs[p].games, -recs[p].sigma, rng.random()))
        pool.remove(seed)
        target = recs[seed].mu
        ranked = sorted(pool, key=lambda p: abs(recs[p].mu - target) + rng.gauss(0, noise)
                        + 2.0 * (recs[p].games - recs[seed].games))
        group = ranked[: lad.seats - 1]
        # Avoid repeating a recent table when another choice exists.
        for _ in range(8):
            if frozenset([seed, *group]) not in recent or len(ranked) < lad.seats:
                break
            rng.shuffle(ranked)
            group = ranked[: lad.seats - 1]
        for p in group:
            pool.remove(p)
        tables.append(_seat_order([seed, *group], recs, rng))
    return tables


def form_matches(r: redis.Redis, lad: LadderConfig, *, now: float | None = None,
                 rng: random.Random | None = None) -> list[str]:
    """One scheduling pass: rate what finished, then form as many tables as the present,
    unbenched bots under their concurrency cap allow. Returns the new match ids."""
    lock = _k(lad.name, "lock")
    if not r.set(lock, "1", nx=True, ex=60):
        return []  # another pass is running
    try:
        for mid in [m.decode() for m in r.smembers(_k(lad.name, "running"))]:
            try:
                if matches.load(r, mid).status == FINISHED:
                    rate(r, mid)
            except StoreError:
                r.srem(_k(lad.name, "running"), mid)
        now = time.time() if now is None else now
        rng = rng or random.Random()
        pids = [p.decode() for p in r.zrange(_k(lad.name, "entries"), 0, -1)]
        if len(pids) < lad.seats:
            return []
        pipe = r.pipeline()
        pipe.hmget(_k(lad.name, "players"), pids)
        pipe.zmscore(keys.PRESENCE, pids)
        pipe.hmget(_k(lad.name, "active"), pids)
        pipe.lrange(_k(lad.name, "recent"), 0, RECENT_TABLES - 1)
        raws, seen, active, recent_raw = pipe.execute()
        recs = {p: Record.parse(raw, lad.seats) for p, raw in zip(pids, raws, strict=True)}
        pool = []
        for p, s, a in zip(pids, seen, active, strict=True):
            rec = recs[p]
            if rec.benched_at is not None and s is not None and s > rec.benched_at:
                _unbench(r, lad, p)
                rec.benched_at = None
            if (s is not None and s >= now - PRESENCE_WINDOW_S and rec.benched_at is None
                    and int(a or 0) < lad.max_concurrent):
                pool.append(p)
        recent = {frozenset(json.loads(t)) for t in recent_raw}
        created = []
        for table in plan_tables(lad, pool, recs, recent, rng):
            created.append(_start(r, lad, table))
        return created
    finally:
        r.delete(lock)


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
                rec = Record.parse(pipe.hget(key, pid), lad.seats)
                change(rec)
                pipe.multi()
                pipe.hset(key, pid, rec.dump())
                pipe.execute()
                return
            except redis.WatchError:
                continue


def _start(r: redis.Redis, lad: LadderConfig, table: list[str]) -> str:
    doc = matches.create(r, table[0], {
        "ruleset": lad.ruleset, "seats": lad.seats, "turn_timeout_s": lad.turn_timeout_s,
        "timeout_policy": "auto", "max_timeouts": 3,
    }, rated=True, ladder=lad.name)
    pipe = r.pipeline()
    for p in table:
        pipe.hincrby(_k(lad.name, "active"), p, 1)
    pipe.sadd(_k(lad.name, "running"), doc.id)
    pipe.lpush(_k(lad.name, "recent"), json.dumps(sorted(table)))
    pipe.ltrim(_k(lad.name, "recent"), 0, RECENT_TABLES - 1)
    pipe.execute()
    for p in table:  # seats in join order; the last join starts the match
        matches.join(r, doc.id, p)
    return doc.id


# --------------------------------------------------------------------------- rating


def queue_rating(pipe: Pipeline, doc: MatchDoc, old_status: str | None) -> None:
    """When a ladder match has just finished, queue its rating job (inside the change's MULTI).
    The scheduling pass also rates any finished match it finds unrated (if a job was lost)."""
    if doc.ladder and doc.status == FINISHED and old_status != FINISHED:
        q = Queue("default", connection=redis.Redis(connection_pool=pipe.connection_pool))
        q.enqueue(RATE_JOB, doc.id, job_id=f"rate-{doc.id}", pipeline=pipe, result_ttl=60,
                  failure_ttl=24 * 3600)


def _misconduct(doc: MatchDoc) -> tuple[list[int], list[bool]]:
    """Per seat: how many turns timed out, and whether it timed out or forfeited at all."""
    assert doc.state is not None
    n = doc.seat_count
    timeouts = [0] * n
    for e in doc.state.events:
        d = e.data
        if d.get("timeout") and e.to is None:
            timeouts[d["seat"]] += 1
        elif e.type == "forfeit" and d.get("reason") == "timeout":
            timeouts[d["seat"]] += 1
    bad = [timeouts[i] > 0 or doc.state.forfeited[i] for i in range(n)]
    return timeouts, bad


def rate(r: redis.Redis, mid: str, ladders: dict[str, LadderConfig] | None = None,
         now: float | None = None) -> bool:
    """Rate a finished ladder match exactly once (a second run changes nothing). Returns whether
    this call rated it."""
    from ..config import ladders_from_env

    doc = matches.load(r, mid)
    if doc.status != FINISHED or not doc.ladder or doc.state is None:
        return False
    lad = (ladders or ladders_from_env()).get(doc.ladder) or LadderConfig(
        doc.ladder, doc.options["ruleset"], doc.seat_count)
    now = time.time() if now is None else now
    rated, players = _k(lad.name, "rated"), _k(lad.name, "players")
    places = engine.placings(doc.state)
    timeouts, bad = _misconduct(doc)
    with r.pipeline() as pipe:
        while True:
            try:
                pipe.watch(rated, players)
                if pipe.sismember(rated, mid):
                    return False
                recs = [Record.parse(raw, lad.seats) for raw in pipe.hmget(players, doc.seats)]
                new = MODEL.rate([[MODEL.rating(mu=x.mu, sigma=x.sigma)] for x in recs],
                                 ranks=places)
                pipe.multi()
                for seat, (pid, rec) in enumerate(zip(doc.seats, recs, strict=True)):
                    rec.mu, rec.sigma = new[seat][0].mu, new[seat][0].sigma
                    rec.games += 1
                    rec.wins += int(places[seat] == 1)
                    rec.timeouts += timeouts[seat]
                    rec.seats[seat] += 1
                    rec.bad_streak = rec.bad_streak + 1 if bad[seat] else 0
                    if rec.bad_streak >= BENCH_AFTER and rec.benched_at is None:
                        rec.benched_at = now
                        rec.benched_reason = (f"timed out or forfeited in {rec.bad_streak} "
                                              f"ladder matches in a row")
                    pipe.hset(players, pid, rec.dump())
                    pipe.hincrby(_k(lad.name, "active"), pid, -1)
                    pipe.lpush(_k(lad.name, f"h:{pid}"), json.dumps({
                        "match_id": mid, "at": now, "seat": seat, "place": places[seat],
                        "players": len(doc.seats), "mu": rec.mu, "sigma": rec.sigma,
                        "rating": rec.rating, "timeouts": timeouts[seat]}))
                    pipe.ltrim(_k(lad.name, f"h:{pid}"), 0, HISTORY_KEEP - 1)
                pipe.sadd(rated, mid)
                pipe.srem(_k(lad.name, "running"), mid)
                pipe.execute()
                return True
            except redis.WatchError:
                continue


# --------------------------------------------------------------------------- reading


def leaderboard(r: redis.Redis, lad: LadderConfig, now: float | None = None
                ) -> list[dict[str, Any]]:
    """Every bot with a record or an entry, best conservative rating first."""
    now = time.time() if now is None else now
    raw = r.hgetall(_k(lad.name, "players"))
    entered = {p.decode() for p in r.zrange(_k(lad.name, "entries"), 0, -1)}
    pids = sorted({k.decode() for k in raw} | entered)
    if not pids:
        return []
    pipe = r.pipeline()
    pipe.zmscore(keys.PRESENCE, pids)
    for p in pids:
        pipe.hget(keys.player(p), "name")
    res = pipe.execute()
    seen, names = res[0], res[1:]
    rows = []
    for p, s, name in zip(pids, seen, names, strict=True):
        rec = Record.parse(raw.get(p.encode()), lad.seats)
        rows.append({
            "player_id": p, "name": name.decode() if name else "?",
            "rating": round(rec.rating, 3), "mu": round(rec.mu, 3),
            "sigma": round(rec.sigma, 3), "games": rec.games, "wins": rec.wins,
            "win_rate": round(rec.wins / rec.games, 4) if rec.games else None,
            "timeouts": rec.timeouts, "seat_balance": rec.seats,
            "provisional": rec.games < PROVISIONAL_GAMES, "benched": _benched(rec, s),
            "benched_reason": rec.benched_reason if _benched(rec, s) else None,
            "entered": p in entered,
            "present": s is not None and s >= now - PRESENCE_WINDOW_S,
        })
    rows.sort(key=lambda x: (-x["rating"], -x["games"], x["name"]))
    for i, row in enumerate(rows, 1):
        row["rank"] = i
    return rows


def history(r: redis.Redis, ladder: str, pid: str, limit: int = 50) -> list[dict[str, Any]]:
    return [json.loads(x) for x in r.lrange(_k(ladder, f"h:{pid}"), 0, limit - 1)]


def record(r: redis.Redis, lad: LadderConfig, pid: str) -> Record | None:
    raw = r.hget(_k(lad.name, "players"), pid)
    return None if raw is None else Record.parse(raw, lad.seats)
