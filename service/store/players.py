"""Players: registration, tokens (stored only as SHA-256 hashes), lookup."""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from typing import Any

import redis

from . import keys, replies
from .errors import StoreError

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")
ID_RE = re.compile(r"^p_[0-9a-f]{12}$")
#: what a player says it is when it registers (not verified): a program, or a person at a page
KINDS = ("bot", "human")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def register(r: redis.Redis, name: str, kind: str = "bot") -> dict[str, Any]:
    """Create a player; the returned dict carries the token, which is never stored in clear."""
    if not NAME_RE.match(name):
        raise StoreError("invalid_request", "name: 1-32 letters, digits, '_', '.', '-', "
                         "starting with a letter or digit")
    if kind not in KINDS:
        raise StoreError("invalid_request", f"kind: one of {KINDS}")
    pid = "p_" + secrets.token_hex(6)
    token = "llt_" + secrets.token_urlsafe(24)
    if not r.set(keys.player_name(name), pid, nx=True):
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
    if ID_RE.match(ref) and r.exists(keys.player(ref)):
        return ref
    if not NAME_RE.match(ref):
        return None
    pid = r.get(keys.player_name(ref))
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
