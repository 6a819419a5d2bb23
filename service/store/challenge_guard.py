"""What stands between a challenger and the players it names (issue 23, item 4): blocks, the
player's own "no challenges" setting, and limits on how often one may challenge.

- Blocks: ``ll:p:<pid>:blocks`` (zset blocked id -> when). A blocked player's challenges to
  ``pid`` are refused (``blocked``) before anything is written: no notice reaches ``pid``.
  At most :data:`MAX_BLOCKS` per player.
- ``accepts_challenges``: a player who turned challenges off is in ``ll:idx:challenges_off``;
  every challenge naming it is refused (``challenges_off``).
- Limits: windows counted in Redis (``keys.challenge_rate``), per challenger (default
  ``10/minute;100/day``) and per challenger and target (``3/minute``), each window starting
  at the first challenge it counts. A challenge over a limit is refused (``rate_limited``,
  with the seconds until that window ends as ``retry_after``) and not counted. A 4-a-second
  challenge-and-cancel loop, which the API-wide limit let through, now stops after 3 in the
  minute for one target and 10 in all.

The store reads no settings: the caller passes :class:`ChallengeLimits`."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from . import keys, players, replies
from .errors import StoreError

#: players one player may block
MAX_BLOCKS = 1000

_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_RULE = re.compile(r"\s*([0-9]{1,9})\s*(?:/|per)\s*([0-9]{1,6})?\s*(second|minute|hour|day)s?\s*")


@dataclass(frozen=True)
class Rule:
    """At most ``count`` challenges in each window of ``window_s`` seconds."""

    count: int
    window_s: int

    def __str__(self) -> str:
        for unit, s in reversed(_UNITS.items()):
            if self.window_s % s == 0:
                n = self.window_s // s
                return f"{self.count}/{'' if n == 1 else n}{unit}"
        return f"{self.count}/{self.window_s}second"  # pragma: no cover - every window is whole


def parse_rules(text: str) -> tuple[Rule, ...]:
    """``"10/minute;100/day"`` (the syntax of RATE_LIMIT; ``off`` or empty: none)."""
    text = (text or "").strip()
    if text.lower() in ("", "off", "0"):
        return ()
    out = []
    for part in text.split(";"):
        m = _RULE.fullmatch(part)
        if m is None:
            raise ValueError(f"not a limit: {part!r} (say e.g. 10/minute or 100/day)")
        out.append(Rule(int(m.group(1)), int(m.group(2) or 1) * _UNITS[m.group(3)]))
    return tuple(out)


@dataclass(frozen=True)
class ChallengeLimits:
    """How often one player may challenge: ``per_challenger`` over all its challenges,
    ``per_pair`` to any one target."""

    per_challenger: tuple[Rule, ...] = field(default_factory=lambda: parse_rules(
        "10/minute;100/day"))
    per_pair: tuple[Rule, ...] = field(default_factory=lambda: parse_rules("3/minute"))


# --------------------------------------------------------------------------- blocks


def block(r: redis.Redis, pid: str, ref: str, now: float | None = None) -> dict[str, Any]:
    """``pid`` blocks the player ``ref`` (a name or an id); blocking again is harmless."""
    target = players.find(r, ref)
    if target is None:
        raise StoreError("player_not_found", f"no player named or with the id {ref!r}")
    if target == pid:
        raise StoreError("invalid_request", "you cannot block yourself")
    k = keys.player_blocks(pid)
    if r.zscore(k, target) is None and int(r.zcard(k)) >= MAX_BLOCKS:
        raise StoreError("invalid_request", f"you block {MAX_BLOCKS} players already: "
                         "unblock one first")
    r.zadd(k, {target: time.time() if now is None else now}, nx=True)
    return _row(r, target, float(r.zscore(k, target) or 0))


def unblock(r: redis.Redis, pid: str, target: str) -> bool:
    """Whether ``target`` was blocked (unblocking again is harmless)."""
    return bool(r.zrem(keys.player_blocks(pid), target))


def blocks(r: redis.Redis, pid: str) -> list[dict[str, Any]]:
    """The players ``pid`` blocks, newest first."""
    pairs = r.zrevrange(keys.player_blocks(pid), 0, MAX_BLOCKS - 1, withscores=True)
    if not pairs:
        return []
    ids = [replies.text(p[0]) for p in pairs]
    briefs = players.briefs(r, ids)
    return [{"id": i, "name": name, "kind": kind, "blocked_at": float(p[1])}
            for i, (name, kind), p in zip(ids, briefs, pairs, strict=True)]


def _row(r: redis.Redis, target: str, at: float) -> dict[str, Any]:
    ((name, kind),) = players.briefs(r, [target])
    return {"id": target, "name": name, "kind": kind, "blocked_at": at}


# --------------------------------------------------------------------------- the setting


def set_accepts(r: redis.Redis, pid: str, accepts: bool) -> None:
    if accepts:
        r.srem(keys.CHALLENGES_OFF, pid)
    else:
        r.sadd(keys.CHALLENGES_OFF, pid)


def accepts(r: redis.Redis, pids: Sequence[str]) -> list[bool]:
    """Whether each player takes challenges (its own setting; the default is yes)."""
    if not pids:
        return []
    return [not bool(x) for x in r.smismember(keys.CHALLENGES_OFF, list(pids))]


# --------------------------------------------------------------------------- the check


def screen(r: redis.Redis, challenger: str, targets: Sequence[str],
           limits: ChallengeLimits | None, now: float | None = None) -> None:
    """Refuse a challenge from ``challenger`` to ``targets`` (ids) that a target blocked
    (``blocked``) or turned off (``challenges_off``), or that goes over a limit
    (``rate_limited``, ``retry_after`` in seconds). Nothing is counted for a refusal of the
    first two kinds."""
    pipe = r.pipeline(transaction=False)
    for t in targets:
        pipe.zscore(keys.player_blocks(t), challenger)
    pipe.smismember(keys.CHALLENGES_OFF, list(targets))
    *blocked, off = pipe.execute()
    briefs = players.briefs(r, list(targets))
    for b, (name, _) in zip(blocked, briefs, strict=True):
        if b is not None:
            raise StoreError("blocked", f"{name} does not take challenges from you")
    for o, (name, _) in zip(off, briefs, strict=True):
        if o:
            raise StoreError("challenges_off", f"{name} does not take challenges")
    if limits is not None:
        _count(r, challenger, targets, limits, time.time() if now is None else now)


def _count(r: redis.Redis, challenger: str, targets: Sequence[str], limits: ChallengeLimits,
           now: float) -> None:
    """Count one challenge in every window it falls in; refuse it if any is over its limit.
    A window starts at the first challenge it counts (SET NX with its expiry) and ends
    ``window_s`` later: no burst of twice the limit across a boundary shared by everyone."""
    scopes = [(rule, challenger, "challenges") for rule in limits.per_challenger] + [
        (rule, f"{challenger}>{t}", f"challenges to {name}")
        for t, (name, _) in zip(targets, players.briefs(r, list(targets)), strict=True)
        for rule in limits.per_pair]
    if not scopes:
        return
    pipe = r.pipeline(transaction=False)
    for rule, scope, _ in scopes:
        k = keys.challenge_rate(scope, rule.window_s)
        pipe.set(k, 0, nx=True, ex=rule.window_s)
        pipe.incr(k)
        pipe.pttl(k)
    got = pipe.execute()
    over = [(rule, what, max(1, math.ceil(int(ttl) / 1000)))
            for (rule, _, what), n, ttl in zip(scopes, got[1::3], got[2::3], strict=True)
            if int(n) > rule.count]
    if over:  # a refused challenge is not counted (it made nothing)
        undo = r.pipeline(transaction=False)
        for rule, scope, _ in scopes:
            undo.decr(keys.challenge_rate(scope, rule.window_s))
        undo.execute()
        rule, what, wait = max(over, key=lambda x: x[2])
        raise StoreError("rate_limited", f"too many {what}: at most {rule}; try again in "
                         f"{wait} s", retry_after=wait)
