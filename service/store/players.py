"""Players: registration, tokens (stored only as SHA-256 hashes), lookup."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
import unicodedata
from dataclasses import dataclass
from typing import Any

import redis

from . import cluster, keys, replies
from .errors import StoreError
from .names import DELETED_NAME, cached_generation

ID_RE = keys.PLAYER_ID_RE  # (match with fullmatch)
#: what a player says it is when it registers (not verified): a program, or a person at a page
KINDS = ("bot", "human")
#: a whole name (checked with fullmatch: "Squat1\n" is not a name)
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}"
NAME_RE = re.compile(NAME_PATTERN)
NAME_RULE = "1-32 letters, digits, '_', '.', '-', starting with a letter or digit"
#: The house bots' namespace: no one else may register a name whose canonical form starts so
#: ("house-random-1", "House_x" and "HOUSE.x" alike).
RESERVED_PREFIXES = ("house-", "house_", "house.")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def canonical_name(name: str) -> str:
    """The form under which names are unique: Unicode NFKC, then casefold (NFKC again, as
    casefolding can undo it). Today's pattern is ASCII, so this is lower-casing in practice; the
    key stays right should the pattern widen (full-width letters, the Kelvin sign)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def valid_name(name: object) -> bool:
    return isinstance(name, str) and NAME_RE.fullmatch(name) is not None


def reserved_name(name: str) -> bool:
    """Whether ``name`` is in the house bots' namespace."""
    return canonical_name(name).startswith(RESERVED_PREFIXES)


def register(r: redis.Redis, name: str, kind: str = "bot", *,
             house: bool = False) -> dict[str, Any]:
    """Create a player; the returned dict carries the token, which is never stored in clear.
    Only ``house=True`` (the house-bots process, which reaches Redis itself) may take a name in
    the reserved namespace. Names are unique by :func:`canonical_name`; the name is kept for
    display as given."""
    if not valid_name(name):
        raise StoreError("invalid_request", f"name: {NAME_RULE}")
    if reserved_name(name) and not house:
        raise StoreError("name_reserved", f"names starting with {RESERVED_PREFIXES[0]!r} (in "
                         "any case, or with '_' or '.') belong to the house bots")
    if kind not in KINDS:
        raise StoreError("invalid_request", f"kind: one of {KINDS}")
    pid = keys.new_player_id()
    token = "llt_" + secrets.token_urlsafe(24)
    if not r.set(keys.player_name(canonical_name(name)), pid, nx=True):
        raise StoreError("name_taken", f"the name {name!r} is taken")
    now = time.time()
    pipe = r.pipeline()
    pipe.hset(keys.player(pid), mapping={"id": pid, "name": name, "kind": kind,
                                         "created_at": now, "token_hash": hash_token(token)})
    pipe.set(keys.token(hash_token(token)), pid)
    pipe.execute()
    return {"id": pid, "name": name, "kind": kind, "token": token, "created_at": now}


# token hash -> player id. A token is never reassigned, so this mapping can't go stale; whether
# the token still counts (not rotated, the account not deleted, the player not banned) is read
# from Redis on every request: see access().
_TOKEN_CACHE: dict[str, str] = {}
TOKEN_CACHE_MAX = 50_000


@dataclass(frozen=True)
class Access:
    """What a token gets: its player (None for a token nobody has: never issued, rotated away,
    its account deleted), the ban in force on that player (``{"reason", "until"}``, None when
    not banned) and the shown names' generation (``store/names.py``), read in the same round
    trip."""

    player: str | None
    ban: dict[str, Any] | None = None
    names_gen: str | None = None


def access(r: redis.Redis, token: str, now: float | None = None, *,
           check: bool = True) -> Access:
    """Check ``token`` against Redis: one pipelined round trip per request (two the first time
    a process sees the token). Nothing about a token's validity is cached, so a rotation, a
    deletion or a ban holds on every process from the very next request; only the immutable
    token -> player mapping is kept in the process (``bench/api.py`` measures the check).

    ``check=False`` is the benchmark's baseline only (``BENCH_TOKEN_CHECK=0``): a token this
    process has seen is taken on trust, as before the check existed."""
    h = hash_token(token)
    pid = _TOKEN_CACHE.get(h)
    if pid is not None and not check:
        return Access(pid, None, cached_generation())
    if pid is None:
        raw = r.get(keys.token(h))
        if raw is None:
            return Access(None)
        pid = replies.text(raw)
        if len(_TOKEN_CACHE) >= TOKEN_CACHE_MAX:
            _TOKEN_CACHE.clear()
        _TOKEN_CACHE[h] = pid
    current, ban_raw, gen = _read_access(r, pid)
    if current is None or replies.text(current) != h:
        _TOKEN_CACHE.pop(h, None)
        return Access(None)
    return Access(pid, ban_in_force(ban_raw, now), "" if gen is None else replies.text(gen))


def _read_access(r: redis.Redis, pid: str) -> tuple[Any, Any, Any]:
    """The player's token hash and ban, and the shown names' generation: one round trip (a
    plain pipeline, no MULTI: each value is checked on its own; on a cluster, a pipeline per
    node on the node's plain client: ``cluster.send``)."""
    if isinstance(r, cluster.Cluster):
        (current, ban_raw), gen = cluster.send(r, [
            ["HMGET", keys.player(pid), "token_hash", "ban"], ["GET", keys.SHOWN_NAMES_GEN]])
        return current, ban_raw, gen
    pipe = r.pipeline(transaction=False)
    pipe.hmget(keys.player(pid), "token_hash", "ban")
    pipe.get(keys.SHOWN_NAMES_GEN)
    (current, ban_raw), gen = pipe.execute()
    return current, ban_raw, gen


def ban_in_force(raw: bytes | str | None, now: float | None = None) -> dict[str, Any] | None:
    """The stored ban (``{"reason", "until", "at", "by"}``) if it still holds at ``now``."""
    if not raw:
        return None
    ban: dict[str, Any] = json.loads(raw)
    until = ban.get("until")
    if until is not None and float(until) <= (time.time() if now is None else now):
        return None
    return ban


def authenticate(r: redis.Redis, token: str) -> str | None:
    """The player id for ``token``, or None (a token nobody has, or a banned player's)."""
    got = access(r, token)
    return got.player if got.ban is None else None


def banned(r: redis.Redis, pids: list[str], now: float | None = None) -> set[str]:
    """Which of ``pids`` are banned now (one round trip)."""
    if not pids:
        return set()
    pipe = r.pipeline(transaction=False)
    for pid in pids:
        pipe.hget(keys.player(pid), "ban")
    return {p for p, raw in zip(pids, pipe.execute(), strict=True)
            if ban_in_force(raw, now) is not None}


def hidden(r: redis.Redis, pids: list[str], now: float | None = None) -> set[str]:
    """Which of ``pids`` lists must not show: banned now, or whose account is gone (one round
    trip). Leaderboards and the online list leave them out."""
    if not pids:
        return set()
    pipe = r.pipeline(transaction=False)
    for pid in pids:
        pipe.hmget(keys.player(pid), "id", "ban")
    return {p for p, (known, raw) in zip(pids, pipe.execute(), strict=True)
            if known is None or ban_in_force(raw, now) is not None}


def rotate_token(r: redis.Redis, pid: str) -> str:
    """A new token for ``pid``; the old one stops working at once (its hash leaves the player
    and its lookup key goes, in one transaction)."""
    token = "llt_" + secrets.token_urlsafe(24)
    new_hash = hash_token(token)
    key = keys.player(pid)
    with r.pipeline() as pipe:
        while True:
            try:
                pipe.watch(key)
                old = pipe.hget(key, "token_hash")
                if old is None:
                    raise StoreError("not_found", f"no player {pid!r}")
                pipe.multi()
                pipe.hset(key, "token_hash", new_hash)
                pipe.set(keys.token(new_hash), pid)
                pipe.delete(keys.token(replies.text(old)))
                pipe.execute()
                return token
            except redis.WatchError:
                continue


def get(r: redis.Redis, pid: str) -> dict[str, Any]:
    if not isinstance(pid, str) or not keys.PLAYER_ID_RE.fullmatch(pid):
        raise StoreError("not_found", f"no player {pid!r}")
    raw = r.hgetall(keys.player(pid))
    if not raw:
        raise StoreError("not_found", f"no player {pid!r}")
    d = {replies.text(k): replies.text(v) for k, v in raw.items()}
    return {"id": d["id"], "name": d["name"], "kind": d.get("kind", "bot"),
            "created_at": float(d["created_at"])}


def find(r: redis.Redis, ref: str) -> str | None:
    """The id of the player ``ref`` names: a player id, else a name (any case); None if none."""
    if not isinstance(ref, str) or len(ref) > 64:
        return None
    if ID_RE.fullmatch(ref) and r.exists(keys.player(ref)):
        return ref
    if not valid_name(ref):
        return None
    raw = r.get(keys.player_name(canonical_name(ref)))
    pid = replies.text(raw) if raw is not None else None
    # a name held back after a rename or a deletion names nobody (moderation.RESERVED_PREFIX)
    return pid if pid is not None and ID_RE.fullmatch(pid) else None


def briefs(r: redis.Redis, pids: list[str]) -> list[tuple[str, str]]:
    """(name, kind) of each player ("deleted player" for an account that is gone; players from
    before kinds existed are bots)."""
    pipe = r.pipeline()
    for pid in pids:
        pipe.hmget(keys.player(pid), "name", "kind")
    return [(n.decode() if n else DELETED_NAME, k.decode() if k else "bot")
            for n, k in pipe.execute()]


def names(r: redis.Redis, pids: list[str]) -> list[str]:
    pipe = r.pipeline()
    for pid in pids:
        pipe.hget(keys.player(pid), "name")
    return [n.decode() if n else DELETED_NAME for n in pipe.execute()]
