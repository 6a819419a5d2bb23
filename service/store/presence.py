"""When each player last polled (a bot counts as present for the ladder if it polled lately)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import redis

from . import keys, players, replies
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


def online(r: redis.Redis, ladders: Iterable[LadderConfig], *, window_s: float,
           now: float | None = None, limit: int = 100) -> list[dict[str, Any]]:
    """Who is online: players that polled their notices ready for challenges within
    ``window_s``, and those entered in a ladder that count as present there. Each row says
    which ladders and whether it answers challenges; ordered by name."""
    now = time.time() if now is None else now
    rows: dict[str, dict[str, Any]] = {}
    for raw in r.zrangebyscore(keys.LISTENING, now - window_s, "+inf"):
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
    for pid, (name, kind) in zip(pids, players.briefs(r, pids), strict=True):
        rows[pid].update(name=name, kind=kind)
    last = r.zmscore(keys.PRESENCE, pids)
    for pid, s in zip(pids, last, strict=True):
        rows[pid]["last_seen"] = None if s is None else float(s)
    return sorted(rows.values(), key=lambda x: (x["name"].lower(), x["id"]))[:limit]
