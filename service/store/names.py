"""The names shown for players, resolved by id when read.

A match document keeps the names its players had when they sat down (``MatchDoc.names``); a
player renamed by an operator, or whose account was deleted, is shown by its current name (or
``deleted player``) wherever it appears, finished matches included. Why resolve when read
instead of rewriting: a ladder bot sits in thousands of match documents (and in challenges and
inbox notices); rewriting them all would be thousands of compare-and-sets racing live play,
while renames are rare. So only the players whose name changed after they sat down are listed,
in one hash (``ll:names``), with a generation (``ll:names:gen``, a random value: a counter
would repeat itself after a Redis is emptied) set anew on every change.

Each process keeps that hash in memory and reads it again only when the generation moved; the
HTTP layer fetches the generation in the same round trip as the token check, so showing the
right names costs an action nothing it did not already pay (one pipelined GET)."""

from __future__ import annotations

import secrets
from typing import Any

import redis

from . import keys, replies

#: what a deleted account's player is called wherever it appeared
DELETED_NAME = "deleted player"

# (generation, player id -> shown name) as this process last read them
_CACHE: dict[str, Any] = {"gen": None, "names": {}}


def generation(r: redis.Redis | Any) -> str:
    raw = r.get(keys.SHOWN_NAMES_GEN)
    return "" if raw is None else replies.text(raw)


def shown(r: redis.Redis, gen: str | None = None) -> dict[str, str]:
    """Player id -> shown name, for the players whose name changed since they sat down.
    ``gen``: the generation if the caller read it already (else it is read here)."""
    if gen is None:
        gen = generation(r)
    if gen != _CACHE["gen"]:
        raw = r.hgetall(keys.SHOWN_NAMES)
        _CACHE["names"] = {replies.text(k): replies.text(v) for k, v in raw.items()}
        _CACHE["gen"] = gen
    names: dict[str, str] = _CACHE["names"]
    return names


def cached_generation() -> str | None:
    """The generation this process last read (None: none yet)."""
    gen: str | None = _CACHE["gen"]
    return gen


def set_shown(pipe: Any, pid: str, name: str) -> None:
    """In the caller's transaction: show ``pid`` as ``name`` everywhere from now on."""
    pipe.hset(keys.SHOWN_NAMES, pid, name)
    pipe.set(keys.SHOWN_NAMES_GEN, secrets.token_hex(8))


def forget() -> None:
    """Drop this process's copy (tests that flush Redis)."""
    _CACHE["gen"], _CACHE["names"] = None, {}
