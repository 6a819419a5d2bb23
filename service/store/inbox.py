"""Each player's inbox: a Redis stream of "match started", "your turn" and "match finished" (and
the challenge notices of ``challenges.py``), so a bot can follow all its matches with one
long-poll and resume after a restart from its cursor."""

from __future__ import annotations

import re
from typing import Any

import orjson
import redis
from redis.client import Pipeline

from . import keys, replies
from .commit import Commit
from .docs import ACTIVE, FINISHED, MatchDoc

MAXLEN = 1000
TTL_S = 7 * 24 * 3600
#: ASCII digits only (`\d` would take "١٢"), 20 at most: 2^64-1 has 20
CURSOR_RE = re.compile(r"[0-9]{1,20}-[0-9]{1,20}")
MAX_ID_PART = 2**64 - 1  # a stream id is two unsigned 64-bit integers


def valid_cursor(cursor: str) -> bool:
    """A stream id Redis accepts: ``<ms>-<seq>``, each part an unsigned 64-bit integer."""
    return bool(CURSOR_RE.fullmatch(cursor)) and all(
        int(part) <= MAX_ID_PART for part in cursor.split("-"))


def key(pid: str) -> str:
    return f"ll:p:{pid}:inbox"


def notices(doc: MatchDoc, old_status: str | None) -> list[tuple[str, dict[str, Any]]]:
    """What each seated player should hear about this committed change."""
    out: list[tuple[str, dict[str, Any]]] = []
    base = {"match_id": doc.id, "version": doc.version}
    if doc.status == ACTIVE and old_status != ACTIVE:
        out += [(pid, {"type": "match_started", "seat": i, **base})
                for i, pid in enumerate(doc.seats)]
    if doc.status == FINISHED and old_status != FINISHED:
        winners = doc.state.winners if doc.state and doc.aborted is None else []
        extra = {"aborted": doc.aborted} if doc.aborted is not None else {}
        out += [(pid, {"type": "match_finished", "seat": i, "winners": winners, **extra,
                       **base}) for i, pid in enumerate(doc.seats)]
    if doc.status == ACTIVE and doc.state is not None and doc.state.turn >= 0:
        seat = doc.state.turn
        out.append((doc.seats[seat], {"type": "your_turn", "seat": seat,
                                      "deadline": doc.deadline, **base}))
    return out


def queue(pipe: Pipeline | Commit, doc: MatchDoc, old_status: str | None) -> None:
    """Queue the inbox entries and wake-ups of a change (in the change's commit)."""
    for pid, notice in notices(doc, old_status):
        k = key(pid)
        # (orjson: several times faster than json.dumps, and this runs on every action)
        pipe.xadd(k, {"n": orjson.dumps(notice)}, maxlen=MAXLEN, approximate=True)
        if notice["type"] != "your_turn":  # every match starts and ends: enough to refresh
            pipe.expire(k, TTL_S)
        pipe.publish(keys.player_channel(pid), doc.id)
    pipe.publish(keys.match_channel(doc.id), doc.version)


def push(pipe: Pipeline, pid: str, notice: dict[str, Any]) -> None:
    """Queue one notice that is not a match's change (a challenge's) and its wake-up, inside
    the caller's MULTI."""
    k = key(pid)
    pipe.xadd(k, {"n": orjson.dumps(notice)}, maxlen=MAXLEN, approximate=True)
    pipe.expire(k, TTL_S)
    pipe.publish(keys.player_channel(pid), notice["type"])


def read(r: redis.Redis, pid: str, after: str | None, count: int = 100) -> tuple[
        list[dict[str, Any]], str]:
    """Notices after the cursor ``after`` (exclusive; None: from the start) and the new cursor."""
    if after is not None and after == f"{MAX_ID_PART}-{MAX_ID_PART}":
        return [], after  # nothing can follow the largest id (and Redis refuses "(" with it)
    start = "-" if after is None else f"({after}"
    entries = r.xrange(key(pid), min=start, max="+", count=count)
    out = []
    cursor = after or "0-0"
    for entry_id, fields in entries or ():
        assert fields is not None
        cursor = replies.text(entry_id)
        notice = orjson.loads(fields[b"n"])
        notice["cursor"] = cursor
        out.append(notice)
    return out, cursor


def head(r: redis.Redis, pid: str) -> str:
    """The cursor of the newest notice (``0-0`` when empty): 'from now on'."""
    last = r.xrevrange(key(pid), count=1)
    return replies.text(last[0][0]) if last else "0-0"
