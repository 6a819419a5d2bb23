"""When each player last polled (a bot counts as present for the ladder if it polled lately)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import redis

from . import challenge_guard, keys, players, replies
from .ladder_config import LadderConfig


def touch(r: redis.Redis, pid: str, now: float | None = None) -> None:
    r.zadd(keys.PRESENCE, {pid: time.time() if now is None else now})


def touch_many(r: redis.Redis, seen: dict[str, float], listening: dict[str, float]) -> None:
    """Many players' last polls at once (player id -> when): the long-polls of one process,
    written together (``realtime/longpoll.py``); ``listening``: those that answer challenges."""
    if seen:
        r.zadd(keys.PRESENCE, seen)
    if listening:
        r.zadd(keys.LISTENING, listening)


def last_seen(r: redis.Redis, pid: str) -> float | None:
    score = r.zscore(keys.PRESENCE, pid)
    return None if score is None else float(score)


def present_entries(r: redis.Redis, lad: LadderConfig, now: float) -> list[str]:
    """The players entered in ``lad`` that polled within its presence window."""
    entered = replies.texts(r.zrange(keys.ladder_entries(lad.name), 0, -1))
    if not entered:
        return []
    seen = r.zmscore(keys.PRESENCE, entered)
    return [p for p, s in zip(entered, seen, strict=True)
            if s is not None and float(s) >= now - lad.presence_window_s]


def listen(r: redis.Redis, pid: str, now: float | None = None) -> None:
    """The player polls its notices ready to answer challenges (``challenges=true``)."""
    r.zadd(keys.LISTENING, {pid: time.time() if now is None else now})


#: a player that polled with ``challenges=true`` within this many seconds still answers
#: challenges while it plays (its match's long-poll refreshes its presence, not this)
ANSWERS_WINDOW_S = 60


def online(r: redis.Redis, ladders: Iterable[LadderConfig], *, window_s: float,
           now: float | None = None, limit: int = 100) -> list[dict[str, Any]]:
    """Who is online: players that answer challenges (a ``challenges=true`` poll within
    ``ANSWERS_WINDOW_S``) or are entered in a ladder and present there, and that polled
    anything within ``window_s``. A waiting long-poll refreshes its player's presence every
    2 s and stops the moment its client hangs up (``realtime/longpoll.py``), so with the default
    window of 5 s a bot that stops leaves this list within about 5 s, while one between two
    polls (a move's round trip) stays. Each row says which ladders and whether it answers
    challenges (it polls ready for them and has not turned them off: ``challenge_guard``);
    ordered by name."""
    now = time.time() if now is None else now
    rows: dict[str, dict[str, Any]] = {}
    for raw in r.zrangebyscore(keys.LISTENING, now - max(window_s, ANSWERS_WINDOW_S), "+inf"):
        pid = replies.text(raw)
        rows[pid] = {"id": pid, "ladders": [], "accepts_challenges": True}
    for lad in ladders:
        for pid in present_entries(r, lad, now):
            row = rows.setdefault(pid, {"id": pid, "ladders": [], "accepts_challenges": False})
            row["ladders"].append(lad.name)
    for pid in players.hidden(r, list(rows), now):  # a banned player's poll still waiting
        del rows[pid]
    if not rows:
        return []
    pids = list(rows)
    for pid, takes in zip(pids, challenge_guard.accepts(r, pids), strict=True):
        rows[pid]["accepts_challenges"] = rows[pid]["accepts_challenges"] and takes
    last = r.zmscore(keys.PRESENCE, pids)
    for pid, s in zip(pids, last, strict=True):
        if s is None or float(s) < now - window_s:
            del rows[pid]  # stopped (or long silent): not online, whatever it did before
        else:
            rows[pid]["last_seen"] = float(s)
    pids = list(rows)
    for pid, (name, kind) in zip(pids, players.briefs(r, pids), strict=True):
        rows[pid].update(name=name, kind=kind)
    return sorted(rows.values(), key=lambda x: (x["name"].lower(), x["id"]))[:limit]


def state(seen: float | None, now: float, window_s: float) -> str:
    """``online`` (polled within ``window_s``, a waiting long-poll included) or ``away``."""
    return "online" if seen is not None and seen >= now - window_s else "away"
