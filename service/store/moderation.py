"""Operators' actions and leaving the service: bans, renames, ladder entries and seasons,
finding players, deleting an account.

A banned or deleted player leaves everything at once, in this order: its token stops working
(the ban flag, or the token itself, goes first: ``players.access`` reads both on every
request), it leaves every ladder's entries and the presence and listening lists, the ladder
passes already running finish (a pass that read the entries before they went could still seat
it: waiting for each ladder's lock to change hands closes that gap), its open challenges are
cancelled or declined, and then each of its running matches ends for it as a resignation
(``matches.resign``: the other seats play on or win, as the rules say). Leaderboards and the
online list hide banned and deleted players when read (``players.hidden``), so a rating
written after the ban (its last matches being rated) shows nowhere."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

import redis

from . import challenges, inbox, keys, matches, names, players, replies
from .docs import ACTIVE
from .errors import StoreError
from .ladder_config import LadderConfig
from .ladders import LOCK_TTL_S, wait_for_passes

#: how long a name given up (renamed away or deleted) stays taken, so nobody else can take it
#: and pass for the player who had it: 30 days
RESERVE_S = 30 * 86400
#: the value of a held-back name's index entry (names nobody: players.find)
RESERVED_PREFIX = "held:"
#: the longest ban reason kept
REASON_MAX = 500
#: players a search returns at most
SEARCH_MAX = 50


def _reason(reason: object) -> str:
    if not isinstance(reason, str) or not reason.strip() or len(reason) > REASON_MAX:
        raise StoreError("invalid_request", f"reason: 1 to {REASON_MAX} characters")
    return reason.strip()


def _player(r: redis.Redis, pid: str) -> dict[str, Any]:
    """The player's profile with its ban (``players.get`` raises not_found)."""
    p = players.get(r, pid)
    p["ban"] = players.ban_in_force(r.hget(keys.player(pid), "ban"))
    return p


# --------------------------------------------------------------------------- leaving


def _leave_everything(r: redis.Redis, pid: str, ladders: Iterable[LadderConfig]) -> list[str]:
    """Take ``pid`` off the ladders, the presence lists and its open challenges, then end its
    running matches as resignations; returns the ids of those matches."""
    ladders = list(ladders)
    pipe = r.pipeline(transaction=False)
    for lad in ladders:
        pipe.zrem(keys.ladder_entries(lad.name), pid)
    pipe.zrem(keys.PRESENCE, pid)
    pipe.zrem(keys.LISTENING, pid)
    pipe.execute()
    # (a pass that read the entries before they changed ends before the matches are ended)
    wait_for_passes(r, [lad.name for lad in ladders], within_s=LOCK_TTL_S + 1)
    for direction, close in (("out", challenges.cancel), ("in", challenges.decline)):
        for cid in replies.texts(r.zrange(keys.player_challenges(pid, direction), 0, -1)):
            try:
                close(r, cid, pid)
            except StoreError:
                pass  # closed already
    return _end_running(r, pid)


def _end_running(r: redis.Redis, pid: str) -> list[str]:
    ids = replies.texts(r.zrange(keys.player_matches(pid), 0, -1))
    if not ids:
        return []
    ended = []
    for mid, score in zip(ids, r.zmscore(keys.matches_by_status(ACTIVE), ids), strict=True):
        if score is None:
            continue
        try:
            matches.resign(r, mid, pid)
            ended.append(mid)
        except StoreError:
            pass  # over meanwhile, or already out of it
    return ended


# --------------------------------------------------------------------------- bans


def ban(r: redis.Redis, pid: str, *, reason: object, until: float | None, by: str,
        ladders: Iterable[LadderConfig],
        now: float | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Ban ``pid`` (until ``until``, epoch s; None: until unbanned). Returns (before, after)."""
    now = time.time() if now is None else now
    text = _reason(reason)
    if until is not None and until <= now:
        raise StoreError("invalid_request", "until: a time in the future (or leave it out)")
    before = _player(r, pid)
    record = {"reason": text, "until": until, "at": now, "by": by}
    r.hset(keys.player(pid), "ban", json.dumps(record))
    ended = _leave_everything(r, pid, ladders)
    after = _player(r, pid)
    after["resigned_matches"] = ended
    return before, after


def unban(r: redis.Redis, pid: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Lift the ban (lost matches stay lost; the player enters ladders again itself)."""
    before = _player(r, pid)
    r.hdel(keys.player(pid), "ban")
    return before, _player(r, pid)


# --------------------------------------------------------------------------- names


def _hold_name(pipe: Any, canonical: str, pid: str, reserve_s: int) -> None:
    pipe.set(keys.player_name(canonical), RESERVED_PREFIX + pid, ex=reserve_s)


def rename(r: redis.Redis, pid: str, name: object, *,
           reserve_s: int = RESERVE_S) -> tuple[dict[str, Any], dict[str, Any]]:
    """Give ``pid`` the name ``name``: shown everywhere it appears from now on (finished
    matches included: ``store/names.py``); the old name stays taken for ``reserve_s``."""
    if not isinstance(name, str) or not players.valid_name(name):
        raise StoreError("invalid_request", f"name: {players.NAME_RULE}")
    if players.reserved_name(name):
        raise StoreError("name_reserved", "that name is in the house bots' namespace")
    before = _player(r, pid)
    old, new = players.canonical_name(before["name"]), players.canonical_name(name)
    if new != old and not r.set(keys.player_name(new), pid, nx=True):
        held = r.get(keys.player_name(new))
        if held is None or replies.text(held) != RESERVED_PREFIX + pid:
            raise StoreError("name_taken", f"the name {name!r} is taken")
        r.set(keys.player_name(new), pid)  # a name it gave up itself: undoing a rename
    pipe = r.pipeline()
    pipe.hset(keys.player(pid), "name", name)
    names.set_shown(pipe, pid, name)
    if new != old:
        _hold_name(pipe, old, pid, reserve_s)
    pipe.execute()
    return before, _player(r, pid)


# --------------------------------------------------------------------------- ladders


def remove_entry(r: redis.Redis, lad: LadderConfig, pid: str
                 ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Take ``pid`` off ladder ``lad``: its entry and its rating record go (the record is in
    the audit's ``before``); its rated history stays. It may enter again (from the prior)."""
    entries, records = keys.ladder_entries(lad.name), keys.ladder(lad.name, "players")
    pipe = r.pipeline()
    pipe.zscore(entries, pid)
    pipe.hget(records, pid)
    entered, rec = pipe.execute()
    if entered is None and rec is None:
        raise StoreError("not_found", f"{pid} has no entry on {lad.name}")
    pipe = r.pipeline()
    pipe.zrem(entries, pid)
    pipe.hdel(records, pid)
    pipe.execute()
    before = {"entered": entered is not None, "record": None if rec is None else json.loads(rec)}
    return before, {"entered": False, "record": None}


def season(r: redis.Redis, lad: LadderConfig) -> dict[str, Any]:
    """``{"season", "started_at", "earlier": [{"season", "started_at"}, ...]}``: season 1
    started when the ladder did (``started_at`` None)."""
    raw = r.hget(keys.ladder_season(lad.name), "record")
    if raw is None:
        return {"season": 1, "started_at": None, "earlier": []}
    rec: dict[str, Any] = json.loads(raw)
    return rec


def season_of(info: dict[str, Any], at: float) -> int:
    """The season a rated match at ``at`` (epoch s) belongs to."""
    n = 1
    for s in [*info["earlier"], info]:
        if s["started_at"] is not None and at >= s["started_at"]:
            n = s["season"]
    return n


def reset_ladder(r: redis.Redis, lad: LadderConfig, *, now: float | None = None
                 ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Start a new season on ``lad``: every rating goes back to the prior (the records are
    kept under ``s<N>:players`` for the season that ended); entries stay; each bot's history
    stays, every entry marked with its season when read (``season_of``). Matches formed before
    the reset and rated after it count for the new season."""
    now = time.time() if now is None else now
    records, key = keys.ladder(lad.name, "players"), keys.ladder_season(lad.name)
    with r.pipeline() as pipe:
        while True:
            try:
                pipe.watch(records, key)  # one slot: both carry {<ladder>}
                raw = pipe.hget(key, "record")
                old = json.loads(raw) if raw is not None else \
                    {"season": 1, "started_at": None, "earlier": []}
                rated = int(pipe.hlen(records))
                new = {"season": old["season"] + 1, "started_at": now,
                       "earlier": [*old["earlier"], {"season": old["season"],
                                                     "started_at": old["started_at"]}]}
                pipe.multi()
                if rated:
                    # (execute_command: redis-py's cluster pipeline blocks its rename(), a
                    # multi-key command; both keys carry {<ladder>}, one slot)
                    pipe.execute_command("RENAME", records,
                                         keys.ladder(lad.name, f"s{old['season']}:players"))
                pipe.hset(key, "record", json.dumps(new))
                pipe.execute()
                break
            except redis.WatchError:
                continue
    return ({"season": old["season"], "rated_players": rated},
            {"season": new["season"], "started_at": now})


# --------------------------------------------------------------------------- finding


def search(r: redis.Redis, q: str, *, limit: int = SEARCH_MAX) -> list[dict[str, Any]]:
    """Players whose id is ``q`` or whose name starts with ``q`` (any case), by name. Names are
    found by a SCAN of the name index (an operator's occasional look-up; O(keys))."""
    limit = max(1, min(limit, SEARCH_MAX))
    found: list[str] = []
    if keys.PLAYER_ID_RE.fullmatch(q) and r.exists(keys.player(q)):
        found.append(q)
    if players.NAME_RE.fullmatch(q):  # no glob characters can be in it
        pattern = keys.player_name(players.canonical_name(q)) + "*"
        for k in r.scan_iter(match=pattern, count=1000):
            raw = r.get(k)
            pid = replies.text(raw) if raw is not None else ""
            if keys.PLAYER_ID_RE.fullmatch(pid) and pid not in found:
                found.append(pid)
            if len(found) >= 4 * limit:
                break
    rows = []
    for pid in found:
        try:
            rows.append(_player(r, pid))
        except StoreError:
            continue
    rows.sort(key=lambda p: (p["name"].lower(), p["id"]))
    return rows[:limit]


def player(r: redis.Redis, pid: str) -> dict[str, Any]:
    return _player(r, pid)


# --------------------------------------------------------------------------- deleting


def delete_account(r: redis.Redis, pid: str, *, ladders: Iterable[LadderConfig],
                   reserve_s: int = RESERVE_S) -> dict[str, Any]:
    """Delete ``pid``'s account: its token stops working first, then it leaves everything
    (running matches end as resignations), then its profile, name, ratings, history, inbox and
    lists go. Wherever it appears (finished matches included) it reads ``deleted player``. Its
    name stays taken for ``reserve_s``. Returns what was deleted (for the answer)."""
    ladders = list(ladders)
    before = players.get(r, pid)
    key = keys.player(pid)
    token_hash = r.hget(key, "token_hash")
    pipe = r.pipeline()
    pipe.hdel(key, "token_hash")
    if token_hash is not None:
        pipe.delete(keys.token(replies.text(token_hash)))
    names.set_shown(pipe, pid, names.DELETED_NAME)
    pipe.execute()
    ended = _leave_everything(r, pid, ladders)
    pipe = r.pipeline(transaction=False)  # many slots on a cluster
    _hold_name(pipe, players.canonical_name(before["name"]), pid, reserve_s)
    for k in (key, keys.player_matches(pid), keys.player_challenges(pid, "in"),
              keys.player_challenges(pid, "out"), inbox.key(pid)):
        pipe.delete(k)
    for lad in ladders:
        pipe.hdel(keys.ladder(lad.name, "players"), pid)
        pipe.delete(keys.ladder(lad.name, f"h:{pid}"))
    pipe.execute()
    return {"id": pid, "name": before["name"], "deleted": True, "resigned_matches": ended}
