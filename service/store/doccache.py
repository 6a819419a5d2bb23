"""Parsed match documents this process has just written or read, by match id, kept with the
exact bytes they came from, so that the next request on the same match does not parse them again.

Why: an action reads the whole document (its event log included) and writes it back. Parsing
is the largest single cost of an action: a classic two-player match at round 10 is a 17 KB
document of about 200 events, which takes about 0.35 ms to parse (orjson, then the engine's
state) against about 0.01 ms to copy. A bot's next move, a long-poll woken by that move and the
opponent's move usually come to the same process (a keep-alive connection stays on its worker),
so most reads find here the bytes they just got from Redis.

Correct by construction: an entry is used only when the bytes read from Redis are byte for byte
the bytes it was made from, and every caller gets its own copy (``MatchDoc.copy``), so nothing
a request changes in place leaks into the cache. The bytes still come from Redis on every read:
WATCH and the compare-and-set are untouched. At most :data:`MAX_ENTRIES` documents are kept
(least recently used first out)."""

from __future__ import annotations

import threading
from collections import OrderedDict

from .docs import MatchDoc

#: documents kept per process; a 200-event document is about 0.1 MB as Python objects
MAX_ENTRIES = 256

_entries: OrderedDict[str, tuple[bytes, MatchDoc]] = OrderedDict()
_lock = threading.Lock()


def parse(mid: str, raw: bytes | str) -> MatchDoc:
    """The document ``raw`` (as read from Redis for match ``mid``), parsed or from the cache."""
    if isinstance(raw, str):
        raw = raw.encode()
    with _lock:
        hit = _entries.get(mid)
        if hit is not None and hit[0] == raw:
            _entries.move_to_end(mid)
            return hit[1].copy()
    doc = MatchDoc.from_json(raw)
    remember(raw, doc)
    return doc


def remember(raw: bytes, doc: MatchDoc, *, copy: bool = True) -> None:
    """Keep a copy of ``doc``, which ``raw`` encodes (after a write, or a parse); with
    ``copy=False`` ``doc`` itself, which the caller hands over and never touches again."""
    kept = doc.copy() if copy else doc
    with _lock:
        _entries[doc.id] = (raw, kept)
        _entries.move_to_end(doc.id)
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)


def forget() -> None:
    """Drop every entry (tests)."""
    with _lock:
        _entries.clear()
