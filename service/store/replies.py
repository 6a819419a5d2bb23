"""Redis replies as the store reads them. The store's clients never set ``decode_responses``, so
every string reply is ``bytes``; redis-py cannot know that from its signatures and types each
reply as a union (``bytes | str | ...``). These helpers state what the store expects, and check it
at run time instead of casting it away."""

from __future__ import annotations

from collections.abc import Iterable


def text(raw: object) -> str:
    """One string reply (bytes, as the store's clients return it) as ``str``."""
    if isinstance(raw, bytes):
        return raw.decode()
    if isinstance(raw, str):
        return raw
    raise TypeError(f"expected a string reply from Redis, got {type(raw).__name__}")


def texts(raws: Iterable[object] | None) -> list[str]:
    """A list reply of strings (members of a set, ids of a zset range) as ``str``s."""
    return [text(x) for x in raws or ()]
