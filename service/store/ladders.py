"""The ladder's data and its two pure-ish steps: forming matches and rating finished ones.

Keys (per ladder ``L``): ``entries`` (zset pid -> entered at), ``players`` (hash pid -> JSON
record: mu, sigma, games, wins, timeouts, games per seat, recent games, last table, bad streak,
bench), ``active`` (hash pid -> ladder matches formed and not yet rated), ``inflight`` (hash
match id -> JSON seats: the matches formed and not yet rated; removing a match from it, in the
rating's transaction, is the exactly-once guard), ``h:<pid>`` (list: the bot's rated matches,
newest first), ``lock`` (one scheduling pass at a time).

Scheduling (one pass, :func:`form_matches`; the rules are in :func:`plan_tables`):

- Pool: entered bots that polled within the ladder's presence window, are not benched and play
  fewer than ``max_concurrent`` of this ladder's matches.
- Who plays: when the pool is not a multiple of the table size, the bots that sit this pass out
  are the ones with the most *recent* games (a count that halves every ``RECENT_HALF_LIFE_S``),
  the least uncertain first; seeds are taken in the opposite order (few recent games and high
  uncertainty first), ties at random.
- With whom: each seed is joined by the bots closest to it in mu, with Gaussian noise (so
  pairings vary), and a penalty for anyone who sat at its last table (or at the last table of a
  bot already chosen): a rematch happens only when nothing else is free.
- Rematches wait: a table that is exactly the seed's previous table is held back (its bots stay
  free) while other present bots are still playing and may come free, for at most
  ``REMATCH_HOLD_PASSES`` passes after its bots finished. Without this, bots that finish
  together (the two of a duel, the four of a table) were the whole pool of the next pass and
  were seated together again: a quarter of all duels and a third of all tables were immediate
  rematches among eight bots.
- Seats: each table is seated by the permutation that puts every bot where it has sat least
  (the cost of a seat grows fourfold per game above the bot's least-used seat), so seat counts
  stay within one of even.
- Matches are written already started, a batch per transaction (``matches.create_seated``,
  with the ``active`` counts and ``inflight``), so a pass that dies leaves no half-formed match
  and no counter that never comes down. Ladder matches never take ``seed``, ``deck`` or
  ``first_seat``: the server draws the seed.

The pass is O(n log n) in the pool (sorting by priority and by mu; a linked list over the mu
order finds a seed's free neighbours), so 10,000 entered bots take well under a second to plan."""

from __future__ import annotations

import itertools
import json
import random
import secrets
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import redis
from openskill.models import PlackettLuce

from .. import engine
from . import keys, matches, players
from .docs import FINISHED, MatchDoc
from .errors import StoreError
from .ladder_config import LadderConfig

MODEL = PlackettLuce()
HISTORY_KEEP = 500
#: the "recent games" count that orders seeds halves over this many seconds
RECENT_HALF_LIFE_S = 3600.0
#: how far apart in mu two bots may be and still look as close as a rematch does
REPEAT_PENALTY = 2 * MODEL.sigma
#: standard deviation of the noise added to mu distances when filling a table
NOISE = MODEL.sigma / 2
#: candidates looked at on each side of a seed (in mu order) per seat to fill
WINDOW = 8
#: a rematch waits at most this many scheduling intervals for other bots to come free
REMATCH_HOLD_PASSES = 2
#: matches written per transaction when a pass forms many
CREATE_BATCH = 64
LOCK_TTL_S = 60


def _k(ladder: str, part: str) -> str:
    return keys.ladder_entries(ladder) if part == "entries" else \
        f"{keys.PREFIX}:lad:{ladder}:{part}"


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
    recent: float = 0.0  # games, decaying with RECENT_HALF_LIFE_S, as of last_at
    last_at: float | None = None  # when its last match was rated
    last_table: list[str] = field(default_factory=list)  # the others at that match

    @property
    def rating(self) -> float:
        """The conservative rating the leaderboard sorts by."""
        return self.mu - 3 * self.sigma

    def recent_games(self, now: float) -> float:
        if self.last_at is None:
            return self.recent
        return self.recent * 0.5 ** (max(0.0, now - self.last_at) / RECENT_HALF_LIFE_S)

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
    """Enter ``pid``. People (players registered as ``kind: human``) only where the ladder
    admits them (``LadderConfig.humans``): see the README's "Humans on the ladder"."""
    if not lad.humans and players.briefs(r, [pid])[0][1] == "human":
        raise StoreError("ladder_bots_only", f"the {lad.name} ladder is for bots: its "
                         f"{lad.turn_timeout_s} s turns and round-the-clock scheduling are made "
                         f"for programs; challenge a bot instead (POST /v1/challenges)")
    r.zadd(_k(lad.name, "entries"), {pid: time.time() if now is None else now}, nx=True)
    return entry_status(r, lad, pid)


def leave(r: redis.Redis, lad: LadderConfig, pid: str) -> dict[str, Any]:
    r.zrem(_k(lad.name, "entries"), pid)
    return entry_status(r, lad, pid)


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
    rec = Record.parse(raw, lad.seats)
    benched = _benched(rec, seen)
    return {
        "ladder": lad.name, "player_id": pid, "entered": entered is not None,
        "present": _present(lad, seen, now), "benched": benched,
        "benched_reason": rec.benched_reason if benched else None,
        "active_matches": int(active or 0),
    }


def _benched(rec: Record, seen: float | bytes | None) -> bool:
    # Benched until the bot polls again after being benched.
    return rec.benched_at is not None and (seen is None or float(seen) <= rec.benched_at)


# --------------------------------------------------------------------------- scheduling

_PERMUTATIONS: dict[int, list[tuple[int, ...]]] = {}


def _seat_order(group: list[str], recs: dict[str, Record], rng: random.Random) -> list[str]:
    """The seating that puts each bot where it has sat least (ties broken at random). A seat
    costs 4 ** (games in it - games in the bot's least-used seat), so fixing a bot that is two
    games off in one seat beats keeping two others exactly even."""
    n = len(group)
    cost = [[4.0 ** (c - min(recs[p].seats[:n])) for c in recs[p].seats[:n]] for p in group]
    if n > 6:  # too many permutations: each bot in turn takes its cheapest free seat
        out: list[str | None] = [None] * n
        for k in sorted(range(n), key=lambda k: -max(cost[k])):
            seat = min((s for s in range(n) if out[s] is None),
                       key=lambda s: (cost[k][s], rng.random()))
            out[seat] = group[k]
        return [p for p in out if p is not None]
    perms = _PERMUTATIONS.get(n)
    if perms is None:
        perms = _PERMUTATIONS[n] = list(itertools.permutations(range(n)))
    best = min(perms, key=lambda perm: (sum(cost[k][perm[k]] for k in range(n)), rng.random()))
    seated = [""] * n
    for k, seat in enumerate(best):
        seated[seat] = group[k]
    return seated


def plan_tables(lad: LadderConfig, pool: list[str], recs: dict[str, Record],
                rng: random.Random, *, now: float | None = None,
                hold_s: float = 0.0) -> list[list[str]]:
    """Group available bots into seated tables (see the module docstring for the rules).
    ``hold_s``: hold back an exact rematch of a seed's previous table unless all its bots have
    been waiting at least that long (0: never hold)."""
    n = lad.seats
    now = time.time() if now is None else now
    if len(pool) < n:
        return []
    prio = {p: (recs[p].recent_games(now) - recs[p].sigma / MODEL.sigma, rng.random())
            for p in pool}
    ordered = sorted(pool, key=prio.__getitem__)
    ordered = ordered[: len(ordered) - len(ordered) % n]  # the rest sit this pass out
    by_mu = sorted(ordered, key=lambda p: recs[p].mu)
    index = {p: i for i, p in enumerate(by_mu)}
    last = {p: set(recs[p].last_table) for p in ordered}
    m = len(by_mu)
    # a doubly linked list over the mu order: a seed's free neighbours in O(1) each
    nxt = list(range(1, m + 1))
    prv = list(range(-1, m - 1))
    taken = [False] * m

    def take(i: int) -> None:
        taken[i] = True
        a, b = prv[i], nxt[i]
        if a >= 0:
            nxt[a] = b
        if b < m:
            prv[b] = a

    span = WINDOW * (n - 1)
    tables: list[list[str]] = []
    for seed in ordered:
        i = index[seed]
        if taken[i]:
            continue
        take(i)
        cands: list[int] = []
        j = prv[i]
        while j >= 0 and len(cands) < span:
            cands.append(j)
            j = prv[j]
        j, right = nxt[i], 0
        while j < m and right < span:
            cands.append(j)
            j, right = nxt[j], right + 1
        mu = recs[seed].mu
        score = {c: abs(recs[by_mu[c]].mu - mu) + rng.gauss(0.0, NOISE)
                 + (REPEAT_PENALTY if by_mu[c] in last[seed] else 0.0) for c in cands}
        group = [seed]
        for _ in range(n - 1):
            c = min(score, key=lambda c: score[c] + REPEAT_PENALTY * sum(
                1 for g in group[1:] if by_mu[c] in last[g]))
            del score[c]
            take(c)
            group.append(by_mu[c])
        if hold_s > 0 and set(group) == last[seed] | {seed} and any(
                recs[p].last_at is not None and now - recs[p].last_at < hold_s for p in group):
            continue  # an immediate rematch: wait for other bots to come free
        tables.append(_seat_order(group, recs, rng))
    return tables


def form_matches(r: redis.Redis, lad: LadderConfig, *, now: float | None = None,
                 rng: random.Random | None = None) -> list[str]:
    """One scheduling pass: rate what finished, then form as many tables as the present,
    unbenched bots under their concurrency cap allow. Returns the new match ids."""
    lock, token = _k(lad.name, "lock"), secrets.token_hex(8)
    if not r.set(lock, token, nx=True, ex=LOCK_TTL_S):
        return []  # another pass is running
    try:
        _rate_finished(r, lad)
        now = time.time() if now is None else now
        rng = rng or random.Random()
        pids = [p.decode() for p in r.zrange(_k(lad.name, "entries"), 0, -1)]
        if len(pids) < lad.seats:
            return []
        pipe = r.pipeline(transaction=False)
        pipe.hmget(_k(lad.name, "players"), pids)
        pipe.zmscore(keys.PRESENCE, pids)
        pipe.hmget(_k(lad.name, "active"), pids)
        raws, seen, active = pipe.execute()
        recs = {p: Record.parse(raw, lad.seats) for p, raw in zip(pids, raws, strict=True)}
        pool, present = [], 0
        for p, s, a in zip(pids, seen, active, strict=True):
            rec = recs[p]
            if rec.benched_at is not None and s is not None and s > rec.benched_at:
                _unbench(r, lad, p)  # it polled since it was benched: back on the schedule
                rec.benched_at = None
            if not _present(lad, s, now) or rec.benched_at is not None:
                continue
            present += 1
            if int(a or 0) < lad.max_concurrent:
                pool.append(p)
        # Rematches wait only while other present bots are busy (they may come free).
        hold = REMATCH_HOLD_PASSES * lad.interval_s if present > len(pool) else 0.0
        return _create(r, lad, plan_tables(lad, pool, recs, rng, now=now, hold_s=hold))
    finally:
        _release(r, lock, token)


_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end " \
           "return 0"


def _release(r: redis.Redis, lock: str, token: str) -> None:
    """Delete the lock only if it is still ours (it expires if a pass outlives LOCK_TTL_S)."""
    r.eval(_RELEASE, 1, lock, token)


def _rate_finished(r: redis.Redis, lad: LadderConfig) -> None:
    """Rate the finished matches that are still unrated (normally the rating job, queued when
    the match finished, has done it; this covers a lost job). Reads only the status index."""
    ids = [m.decode() for m in r.hkeys(_k(lad.name, "inflight"))]
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


def _create(r: redis.Redis, lad: LadderConfig, tables: list[list[str]]) -> list[str]:
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
            doc = matches.create_seated(pipe, f"ladder:{lad.name}", options, table,
                                        [name[p] for p in table], rated=True, ladder=lad.name)
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
                rec = Record.parse(pipe.hget(key, pid), lad.seats)
                change(rec)
                pipe.multi()
                pipe.hset(key, pid, rec.dump())
                pipe.execute()
                return
            except redis.WatchError:
                continue


# --------------------------------------------------------------------------- rating


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
    timeouts, bad = _misconduct(doc)
    with r.pipeline() as pipe:
        while True:
            try:
                pipe.watch(inflight, records)
                if not pipe.hexists(inflight, mid):
                    return False  # rated already (or never formed by the scheduler)
                recs = [Record.parse(raw, lad.seats) for raw in pipe.hmget(records, doc.seats)]
                new = MODEL.rate([[MODEL.rating(mu=x.mu, sigma=x.sigma)] for x in recs],
                                 ranks=places)
                pipe.multi()
                for seat, (pid, rec) in enumerate(zip(doc.seats, recs, strict=True)):
                    rec.mu, rec.sigma = new[seat][0].mu, new[seat][0].sigma
                    rec.games += 1
                    rec.wins += int(places[seat] == 1)
                    rec.timeouts += timeouts[seat]
                    rec.seats[seat] += 1
                    rec.recent = rec.recent_games(now) + 1
                    rec.last_at = now
                    rec.last_table = [p for p in doc.seats if p != pid]
                    rec.bad_streak = rec.bad_streak + 1 if bad[seat] else 0
                    if rec.bad_streak >= lad.bench_after and rec.benched_at is None:
                        rec.benched_at = now
                        rec.benched_reason = (f"timed out or forfeited in {rec.bad_streak} "
                                              f"ladder matches in a row")
                    pipe.hset(records, pid, rec.dump())
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
    """An aborted match (a seat never moved before its first timeout: store/matches.py) is
    rated for nobody: ratings, games, wins and streaks stay as they were. Each bot's history
    shows it, marked ``aborted``; the absent bot is benched until it polls again. Exactly once,
    with the same guard as a rating (the match leaves ``inflight`` in the same transaction)."""
    assert doc.aborted is not None
    absent = int(doc.aborted["seat"])
    inflight, records = _k(lad.name, "inflight"), _k(lad.name, "players")
    with r.pipeline() as pipe:
        while True:
            try:
                pipe.watch(inflight, records)
                if not pipe.hexists(inflight, doc.id):
                    return False
                recs = [Record.parse(raw, lad.seats) for raw in pipe.hmget(records, doc.seats)]
                pipe.multi()
                for seat, (pid, rec) in enumerate(zip(doc.seats, recs, strict=True)):
                    if seat == absent:
                        rec.benched_at = now
                        rec.benched_reason = (f"absent: made no move before its first turn "
                                              f"timed out in {doc.id} (aborted)")
                    pipe.hset(records, pid, rec.dump())
                    pipe.hincrby(_k(lad.name, "active"), pid, -1)
                    pipe.lpush(_k(lad.name, f"h:{pid}"), json.dumps({
                        "match_id": doc.id, "at": now, "seat": seat, "place": None,
                        "players": len(doc.seats), "mu": rec.mu, "sigma": rec.sigma,
                        "rating": rec.rating, "timeouts": 0,
                        "aborted": doc.aborted["message"]}))
                    pipe.ltrim(_k(lad.name, f"h:{pid}"), 0, HISTORY_KEEP - 1)
                pipe.hdel(inflight, doc.id)
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
    pipe = r.pipeline(transaction=False)
    pipe.zmscore(keys.PRESENCE, pids)
    pipe.hmget(_k(lad.name, "active"), pids)
    seen, active = pipe.execute()
    briefs = players.briefs(r, pids)
    rows = []
    for p, s, a, (name, kind) in zip(pids, seen, active, briefs, strict=True):
        rec = Record.parse(raw.get(p.encode()), lad.seats)
        benched = _benched(rec, s)
        rows.append({
            "player_id": p, "name": name, "kind": kind,
            "rating": round(rec.rating, 3), "mu": round(rec.mu, 3),
            "sigma": round(rec.sigma, 3), "games": rec.games, "wins": rec.wins,
            "win_rate": round(rec.wins / rec.games, 4) if rec.games else None,
            "timeouts": rec.timeouts, "seat_balance": rec.seats,
            "provisional": rec.games < lad.provisional_games, "benched": benched,
            "benched_reason": rec.benched_reason if benched else None,
            "entered": p in entered, "present": _present(lad, s, now),
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
    if raw is None:
        return None
    rec = Record.parse(raw, lad.seats)
    return {"rating": rec.rating, "mu": rec.mu, "sigma": rec.sigma, "games": rec.games,
            "wins": rec.wins, "provisional": rec.games < lad.provisional_games,
            "history": [json.loads(x) for x in hist]}


def record(r: redis.Redis, lad: LadderConfig, pid: str) -> Record | None:
    raw = r.hget(_k(lad.name, "players"), pid)
    return None if raw is None else Record.parse(raw, lad.seats)



def entry_count(r: redis.Redis, lad: LadderConfig) -> int:
    return int(r.zcard(_k(lad.name, "entries")))
