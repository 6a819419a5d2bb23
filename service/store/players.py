"""Players: registration, tokens (stored only as SHA-256 hashes), lookup."""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from typing import Any

import redis

from . import keys
from .errors import StoreError

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def register(r: redis.Redis, name: str) -> dict[str, Any]:
    """Create a player; the returned dict carries the token, which is never stored in clear."""
    if not NAME_RE.match(name):
        raise StoreError("invalid_request", "name: 1-32 letters, digits, '_', '.', '-', "
                         "starting with a letter or digit")
    pid = "p_" + secrets.token_hex(6)
    token = "llt_" + secrets.token_urlsafe(24)
    if not r.set(keys.player_name(name), pid, nx=True):
        raise StoreError("name_taken", f"the name {name!r} is taken")
    now = time.time()
    pipe = r.pipeline()
    pipe.hset(keys.player(pid), mapping={"id": pid, "name": name, "created_at": now,
                                         "token_hash": hash_token(token)})
    pipe.set(keys.token(hash_token(token)), pid)
    pipe.execute()
    return {"id": pid, "name": name, "token": token, "created_at": now}


def authenticate(r: redis.Redis, token: str) -> str | None:
    """The player id for ``token``, or None."""
    pid = r.get(keys.token(hash_token(token)))
    return pid.decode() if pid is not None else None


def get(r: redis.Redis, pid: str) -> dict[str, Any]:
    raw = r.hgetall(keys.player(pid))
    if not raw:
        raise StoreError("not_found", f"no player {pid!r}")
    d = {k.decode(): v.decode() for k, v in raw.items()}
    return {"id": d["id"], "name": d["name"], "created_at": float(d["created_at"])}


def names(r: redis.Redis, pids: list[str]) -> list[str]:
    pipe = r.pipeline()
    for pid in pids:
        pipe.hget(keys.player(pid), "name")
    return [n.decode() if n else "?" for n in pipe.execute()]
