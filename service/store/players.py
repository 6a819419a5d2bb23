"""Players: registration, tokens (stored only as SHA-256 hashes), lookup."""

from __future__ import annotations

import hashlib
import re
import secrets
import time
import unicodedata
from typing import Any

import redis

from . import keys, replies
from .errors import StoreError

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


# token hash -> (player id, cached at). Tokens are never reassigned, so a hit can't be wrong;
# the TTL only bounds how long a deleted token would keep working in one process.
_TOKEN_CACHE: dict[str, tuple[str, float]] = {}
TOKEN_CACHE_TTL_S = 300.0
TOKEN_CACHE_MAX = 50_000


def authenticate(r: redis.Redis, token: str) -> str | None:
    """The player id for ``token``, or None. Known tokens are cached in the process."""
    h = hash_token(token)
    now = time.monotonic()
    hit = _TOKEN_CACHE.get(h)
    if hit is not None and now - hit[1] < TOKEN_CACHE_TTL_S:
        return hit[0]
    raw = r.get(keys.token(h))
    if raw is None:
        return None
    pid = replies.text(raw)
    if len(_TOKEN_CACHE) >= TOKEN_CACHE_MAX:
        _TOKEN_CACHE.clear()
    _TOKEN_CACHE[h] = (pid, now)
    return pid


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
    pid = r.get(keys.player_name(canonical_name(ref)))
    return replies.text(pid) if pid is not None else None


def briefs(r: redis.Redis, pids: list[str]) -> list[tuple[str, str]]:
    """(name, kind) of each player ("?" for a name that is gone; players from before kinds
    existed are bots)."""
    pipe = r.pipeline()
    for pid in pids:
        pipe.hmget(keys.player(pid), "name", "kind")
    return [(n.decode() if n else "?", k.decode() if k else "bot")
            for n, k in pipe.execute()]


def names(r: redis.Redis, pids: list[str]) -> list[str]:
    pipe = r.pipeline()
    for pid in pids:
        pipe.hget(keys.player(pid), "name")
    return [n.decode() if n else "?" for n in pipe.execute()]
