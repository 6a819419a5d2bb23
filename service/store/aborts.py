"""Aborts counted per player, and the escalating bench that repeated aborts earn (issue 23).

One abort (a rated match aborted because the bot was absent: ``store/attendance.py``) benches the
bot on that ladder until it polls again, as before: it was not there. Repeated aborts bench it
for a time, on every ladder, whether it polls or not, Lichess-style: ``bench_after`` aborts
(default 3) within ``window_s`` (24 h) bench it for the first of ``bench_s`` (15 min); each
further bench within ``memory_s`` (7 days) of the earlier ones lasts the next step (1 h, 6 h,
then 24 h each time). The aborts that earned a bench are spent: the next bench needs
``bench_after`` new ones. Seven days without a bench and the escalation starts over.

Why these numbers: a crashed bot aborts at most one match per ladder before it is benched until
it polls again, so three aborts in a day is a bot that comes back, is seated, and then vanishes
again: a flaky bot or a dodger. 15 minutes costs a flaky bot little; a dodger that keeps at it
is soon off the ladder for days at a time.

Keys: ``ll:p:<pid>:aborts`` (zset match id -> when; kept ``window_s``), ``ll:p:<pid>:benches``
(zset: when each bench began; kept ``memory_s``), ``ll:idx:abort_bench`` (hash player id ->
the current bench: until, reason, level, at), which a ladder pass reads for all its entered
bots in one HMGET."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis

from . import keys


@dataclass(frozen=True)
class AbortPolicy:
    """When repeated aborts bench a bot, and for how long (see the module docstring)."""

    bench_after: int = 3
    window_s: int = 24 * 3600
    bench_s: tuple[int, ...] = (15 * 60, 3600, 6 * 3600, 24 * 3600)
    memory_s: int = 7 * 24 * 3600


def _duration(seconds: float) -> str:
    s = int(seconds)
    if s % 86400 == 0:
        return f"{s // 86400} d"
    if s % 3600 == 0:
        return f"{s // 3600} h"
    if s % 60 == 0:
        return f"{s // 60} min"
    return f"{s} s"


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def record(r: redis.Redis, pid: str, mid: str, policy: AbortPolicy,
           now: float | None = None) -> dict[str, Any] | None:
    """Count ``pid``'s abort of ``mid`` (a repeat of the same match counts once) and bench it
    when the policy says so. Returns the bench this abort started, else None.

    One abort of a player is counted at a time, under a redis-py lock on the player: the count,
    the bench level and the bench are read and written in several round trips over keys in
    different hash slots (no one transaction on a cluster), so two aborts settled at once (two
    workers, two ladders) would both read level n and both write level n + 1, and the next
    bench would skip a step."""
    now = time.time() if now is None else now
    with r.lock(keys.player_abort_lock(pid), timeout=LOCK_S, blocking_timeout=LOCK_S):
        return _record(r, pid, mid, policy, now)


#: how long one count may hold the player's lock, and wait for it (a count is a few round trips)
LOCK_S = 10.0


def _record(r: redis.Redis, pid: str, mid: str, policy: AbortPolicy,
            now: float) -> dict[str, Any] | None:
    ak, bk = keys.player_aborts(pid), keys.player_benches(pid)
    pipe = r.pipeline(transaction=False)
    pipe.zadd(ak, {mid: now})
    pipe.zremrangebyscore(ak, "-inf", now - policy.window_s)
    pipe.expire(ak, policy.window_s)
    pipe.hget(keys.ABORT_BENCH, pid)
    pipe.zremrangebyscore(bk, "-inf", now - policy.memory_s)
    _, _, _, raw, _ = pipe.execute()
    last = json.loads(raw) if raw else None
    since = max(now - policy.window_s, float(last["at"]) if last else float("-inf"))
    count = int(r.zcount(ak, f"({since}", "+inf"))
    if count < policy.bench_after or not policy.bench_s:
        return None
    level = int(r.zcard(bk))
    length = policy.bench_s[min(level, len(policy.bench_s) - 1)]
    until = now + length
    following = policy.bench_s[min(level + 1, len(policy.bench_s) - 1)]
    bench = {
        "at": now, "until": until, "level": level + 1, "aborts": count,
        "reason": f"absent from {count} rated matches within {_duration(policy.window_s)} "
                  f"(aborted): benched {_duration(length)}, until {_when(until)}; another "
                  f"bench within {_duration(policy.memory_s)} lasts {_duration(following)}",
    }
    pipe = r.pipeline(transaction=False)
    pipe.hset(keys.ABORT_BENCH, pid, json.dumps(bench))
    pipe.zadd(bk, {repr(now): now})
    pipe.expire(bk, policy.memory_s)
    pipe.execute()
    return bench


def current(r: redis.Redis, pids: Sequence[str],
            now: float | None = None) -> list[dict[str, Any] | None]:
    """Each player's bench in force now (None: none): one HMGET."""
    if not pids:
        return []
    now = time.time() if now is None else now
    out: list[dict[str, Any] | None] = []
    for raw in r.hmget(keys.ABORT_BENCH, list(pids)):
        bench = json.loads(raw) if raw else None
        out.append(bench if bench is not None and float(bench["until"]) > now else None)
    return out


def status(r: redis.Redis, pid: str, now: float | None = None) -> dict[str, Any]:
    """What the player page shows: aborts in the window, and the bench in force (or None)."""
    now = time.time() if now is None else now
    (bench,) = current(r, [pid], now)
    aborts = int(r.zcount(keys.player_aborts(pid), f"({now - AbortPolicy.window_s}", "+inf"))
    return {"aborts_24h": aborts, "bench": None if bench is None else {
        "until": bench["until"], "reason": bench["reason"], "level": bench["level"]}}
