"""Each player's inbox: Redis streams of "match started", "your turn" and "match finished", and
of the challenge notices of ``challenges.py``, so a bot can follow all its matches with one
long-poll and resume after a restart from its cursor.

Two streams, one cursor (issue 23): match notices (``ll:p:<pid>:inbox``, the newest
:data:`MAXLEN` kept) and challenge notices (``{ll:p:<pid>:inbox}:ch``, the newest
:data:`CHALLENGE_MAXLEN`), so a flood of challenges can never evict a ``your_turn``. Both keys
sit in one Redis Cluster slot (the second's hash tag is the first's whole name) and on one
clock: a read takes both (and the server's time) in one script, merges them by id and hands
out one cursor. Stream ids come from the server's millisecond clock, so an entry added to one
stream later in the same millisecond as an entry of the other already read could get a
smaller id: a read holds back the entries of the current millisecond (they come with the next
read, a millisecond later).

Nothing is lost silently: a cursor older than the oldest entry a stream kept after trimming
(it trimmed when XINFO's ``entries-added`` exceeds its length) is refused with
``cursor_expired`` and ``oldest_cursor``, the cursor just before that entry, to go on from
once the client has resynchronised from its match list. (Trimming keeps no record of the last
id it dropped: a cursor sitting exactly on it is asked to resync though it missed nothing.) A
stream that expired whole (``TTL_S`` after its last match started or ended) leaves no trace."""

from __future__ import annotations

import re
import time
from typing import Any

import orjson
import redis
from redis.client import Pipeline

from . import keys, replies
from .commit import Commit
from .docs import ACTIVE, FINISHED, MatchDoc
from .errors import StoreError

MAXLEN = 1000
#: challenge notices kept per player (a stream of their own: they never evict match notices)
CHALLENGE_MAXLEN = 200
#: a read that finds only entries of the current millisecond looks again this often, this
#: many times (see the module docstring)
HOLD_BACK_WAIT_S = 0.002
HOLD_BACK_TRIES = 5
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


def challenge_key(pid: str) -> str:
    """The challenge notices' stream: its hash tag is :func:`key` whole, so both share a slot."""
    return f"{{{key(pid)}}}:ch"


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
    """Queue one challenge notice (not a match's change) and its wake-up, inside the caller's
    MULTI: into the challenge stream, capped on its own."""
    k = challenge_key(pid)
    pipe.xadd(k, {"n": orjson.dumps(notice)}, maxlen=CHALLENGE_MAXLEN, approximate=True)
    pipe.expire(k, TTL_S)
    pipe.publish(keys.player_channel(pid), notice["type"])


# Both streams after a cursor, the server's time, and for each stream that trimmed entries
# (entries-added > length) and whose oldest kept entry is newer than the cursor, that entry's
# id: what lay between the cursor and it is gone.
_READ = """
local function older(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as < bs)
end
local t = redis.call('TIME')
local out = {t[1], t[2]}
for i = 1, 2 do
  out[#out + 1] = redis.call('XRANGE', KEYS[i], ARGV[1], '+', 'COUNT', ARGV[2])
  local gone = ''
  if ARGV[3] ~= '' and redis.call('EXISTS', KEYS[i]) == 1 then
    local first = redis.call('XRANGE', KEYS[i], '-', '+', 'COUNT', 1)
    if #first == 1 and older(ARGV[3], first[1][1]) then
      local info = redis.call('XINFO', 'STREAM', KEYS[i])
      local length, added = 0, 0
      for j = 1, #info, 2 do
        if info[j] == 'length' then length = info[j + 1] end
        if info[j] == 'entries-added' then added = info[j + 1] end
      end
      if added > length then gone = first[1][1] end
    end
  end
  out[#out + 1] = gone
end
return out
"""


_SCRIPTS: dict[int, Any] = {}


def _script(r: redis.Redis) -> Any:
    """The read script registered on ``r`` (EVALSHA; loaded again if Redis lost it)."""
    script = _SCRIPTS.get(id(r))
    if script is None or script.registered_client is not r:
        if len(_SCRIPTS) > 64:
            _SCRIPTS.clear()
        script = _SCRIPTS[id(r)] = r.register_script(_READ)
    return script


def _id(raw: str) -> tuple[int, int]:
    ms, _, seq = raw.partition("-")
    return int(ms), int(seq or 0)


def read(r: redis.Redis, pid: str, after: str | None, count: int = 100) -> tuple[
        list[dict[str, Any]], str]:
    """Notices after the cursor ``after`` (exclusive; None: from the oldest kept) and the new
    cursor. Raises ``cursor_expired`` (with ``oldest_cursor``) when notices after ``after``
    were trimmed."""
    if after is not None and after == f"{MAX_ID_PART}-{MAX_ID_PART}":
        return [], after  # nothing can follow the largest id (and Redis refuses "(" with it)
    for _ in range(HOLD_BACK_TRIES):
        got = _read(r, pid, after, count)
        if got is not None:
            return got
        time.sleep(HOLD_BACK_WAIT_S)
    return [], after or "0-0"


def _read(r: redis.Redis, pid: str, after: str | None, count: int) -> tuple[
        list[dict[str, Any]], str] | None:
    """One read (:func:`read`); None when every new entry is of the current millisecond."""
    start = "-" if after is None else f"({after}"
    secs, usecs, matches_, gone_m, challenges_, gone_c = _script(r)(
        keys=[key(pid), challenge_key(pid)], args=[start, count, after or ""])
    gone = [_id(replies.text(g)) for g in (gone_m, gone_c) if g]
    if after is not None and gone:
        ms, seq = max(gone)  # go on from just before the oldest entry kept after the trim
        oldest = f"{ms}-{seq - 1}" if seq else f"{ms - 1}-{MAX_ID_PART}"
    if after is not None and gone and _id(after) < _id(oldest):
        raise StoreError("cursor_expired", f"notices after {after} were dropped (the "
                         f"inbox keeps the newest {MAXLEN} match notices and "
                         f"{CHALLENGE_MAXLEN} challenge notices): resync from GET "
                         f"/v1/me/matches and GET /v1/me/challenges, then go on from "
                         f"oldest_cursor", oldest_cursor=oldest)
    entries = sorted(
        [(_id(replies.text(e[0])), 0, e) for e in matches_ or ()]
        + [(_id(replies.text(e[0])), 1, e) for e in challenges_ or ()], key=lambda x: x[:2])
    if len(entries) > count:  # never part of one id: the cursor would skip the rest of it
        last = entries[count - 1][0]
        entries = [x for x in entries if x[0] <= last]
    now_ms = int(secs) * 1000 + int(usecs) // 1000
    kept = [x for x in entries if x[0][0] < now_ms]
    if entries and not kept:
        return None
    out = []
    cursor = after or "0-0"
    for _, _, (entry_id, fields) in kept:
        cursor = replies.text(entry_id)
        data = dict(zip(fields[::2], fields[1::2], strict=True)) if isinstance(
            fields, list) else fields
        notice = orjson.loads(data[b"n"])
        notice["cursor"] = cursor
        out.append(notice)
    return out, cursor


def head(r: redis.Redis, pid: str) -> str:
    """The cursor of the newest notice (``0-0`` when empty): 'from now on'."""
    pipe = r.pipeline(transaction=False)
    pipe.xrevrange(key(pid), count=1)
    pipe.xrevrange(challenge_key(pid), count=1)
    ids = [replies.text(last[0][0]) for last in pipe.execute() if last]
    return max(ids, key=_id) if ids else "0-0"
