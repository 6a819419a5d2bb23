"""Finished matches out of Redis: one compressed file per match under an archive directory.

A finished match stays in Redis (its document, its event log, the set of seats that asked about
it) for the retention period, then the archive pass (:func:`archive_due`, an RQ job that
``rq cron`` queues) moves it into a file and deletes those keys. Everything else about it stays
in Redis: its id in the match indexes (all matches, finished, each player's matches), so lists
and pages find it as before. Reading a match whose keys are gone (``store/matches.py``) falls
back to its file, so a view, the event log and a replay answer exactly as they did.

Files: ``<root>/<h>/<match id>.json.z`` with ``h`` the first three hex digits of the id's
SHA-256 (4,096 directories, made when first needed, so no directory grows past a few thousand
files per ten million matches); the content is zlib-compressed JSON (:func:`encode`). A file is
written to a temporary name in its directory, flushed to disk and renamed over the final name,
so a reader sees the whole file or none. Several API hosts need the same directory (a shared
volume): any of them may be asked for any match.

Safe to run twice, or in two processes at once: a match is deleted from Redis only after its
file is written, flushed to disk and read back, and only if its version is still the one written (one script
that compares and deletes); a crash in between leaves both the keys and the file (harmless: the
next pass writes the same file again and deletes the keys). Matches still in progress never
enter the pass: the pass reads an index (``keys.TO_ARCHIVE``) that the commit finishing a match
writes, scored by when it finished."""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

import orjson
import redis

from ..engine import Event
from . import keys, replies
from .docs import FINISHED, MatchDoc
from .errors import StoreError

log = logging.getLogger(__name__)

#: the format of a file (the ``format`` field); a reader refuses one it doesn't know
FORMAT = 1
#: zlib's level: files are written once and read rarely (9 is a few % smaller than 6)
LEVEL = 9
SUFFIX = ".json.z"
#: matches one pass takes at most (``ARCHIVE_BATCH``)
DEFAULT_BATCH = 500
#: the error code of a match whose file is missing or unreadable (HTTP 503)
UNAVAILABLE = "archive_unavailable"


class Archive:
    """The archive directory ``root`` (created when first written)."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)

    def path(self, mid: str) -> str:
        shard = hashlib.sha256(mid.encode()).hexdigest()[:3]
        return os.path.join(self.root, shard, mid + SUFFIX)

    def write(self, mid: str, data: bytes, *, durable: bool = True) -> None:
        """Write ``data`` as ``mid``'s file: whole or not at all (a temporary file renamed
        over it). ``durable``: flushed to disk (the file, then its directory) before this
        returns; else :meth:`sync` does it for many files at once."""
        final = self.path(mid)
        folder = os.path.dirname(final)
        os.makedirs(folder, exist_ok=True)
        tmp = os.path.join(folder, f".{mid}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                if durable:
                    f.flush()
                    os.fsync(f.fileno())
            os.replace(tmp, final)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        if durable:
            fd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def sync(self) -> None:
        """Flush every file written so far to disk (``sync(2)``, which returns once done)."""
        os.sync()

    def read_raw(self, mid: str) -> bytes | None:
        """The file's bytes, None when there is none."""
        try:
            with open(self.path(mid), "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def read(self, mid: str) -> Archived | None:
        """The archived match, None when it has no file; ``archive_unavailable`` when the file
        can't be read or decoded."""
        try:
            raw = self.read_raw(mid)
        except OSError as e:
            raise StoreError(UNAVAILABLE, f"match {mid} is archived but its file can't be "
                             f"read ({e.strerror})") from e
        if raw is None:
            return None
        try:
            got = decode(raw)
        except (zlib.error, orjson.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            log.error("archive file of %s is corrupt: %s", mid, e)
            raise StoreError(UNAVAILABLE, f"match {mid} is archived but its file is "
                             "corrupt") from e
        if got.id != mid:
            raise StoreError(UNAVAILABLE, f"match {mid} is archived but its file holds "
                             f"another match")
        return got


@dataclass
class Archived:
    """What a file holds: the match's keys as they were in Redis (the document as JSON)."""

    id: str
    version: int
    round_start: int  # ``rs``: the seq of the first event of the last round
    doc: bytes  # MatchDoc.to_json()
    events: list[Event]
    asked: list[str] = field(default_factory=list)

    def match_doc(self, events_from: int = -1) -> MatchDoc:
        """The document with its log from seq ``events_from`` as ``matches._read`` gives it
        from Redis (-1, or anything past the last round's start: from that start)."""
        first = events_from
        if first < 0 or first > self.round_start:
            first = self.round_start
        return MatchDoc.from_json(self.doc, self.events[first:], first)

    def doc_only(self) -> MatchDoc:
        """The document without its log (what a list of matches reads)."""
        return MatchDoc.from_json(self.doc)


def encode(a: Archived) -> bytes:
    body = {"format": FORMAT, "id": a.id, "v": a.version, "rs": a.round_start,
            "doc": orjson.Fragment(a.doc),
            "events": [(e.seq, e.round, e.type, e.data, e.to) for e in a.events],
            "asked": a.asked}
    return zlib.compress(orjson.dumps(body), LEVEL)


def decode(raw: bytes) -> Archived:
    d = orjson.loads(zlib.decompress(raw))
    if d.get("format") != FORMAT:
        raise ValueError(f"unknown archive format {d.get('format')!r}")
    events = [Event(seq, rnd, kind, data, None if to is None else tuple(to))
              for seq, rnd, kind, data, to in d["events"]]
    return Archived(id=d["id"], version=int(d["v"]), round_start=int(d["rs"]),
                    doc=orjson.dumps(d["doc"]), events=events, asked=list(d["asked"]))


# --------------------------------------------------------------------------- reading

_ATTR = "ll_archive"


def attach(r: Any, root: str | None) -> None:
    """Have the store read archived matches from ``root`` through the client ``r`` (None:
    no archive; a match whose keys are gone is then ``archive_unavailable``)."""
    setattr(r, _ATTR, Archive(root) if root else None)


def of(r: Any) -> Archive | None:
    """The archive the client ``r`` reads from (:func:`attach`), if any."""
    got = getattr(r, _ATTR, None)
    return got if isinstance(got, Archive) else None


def find(r: redis.Redis, mid: str) -> Archived | None:
    """The archived match ``mid`` when its keys are no longer in Redis: None when it never
    existed (it is in no index), ``archive_unavailable`` when it existed but its file is
    missing or unreadable (or no archive directory is configured)."""
    arc = of(r)
    got = arc.read(mid) if arc is not None else None
    if got is not None:
        return got
    if r.zscore(keys.ALL_MATCHES, mid) is None:
        return None
    where = "no archive directory is configured (ARCHIVE_DIR)" if arc is None else \
        "its archive file is missing"
    raise StoreError(UNAVAILABLE, f"match {mid} was archived but {where}")


# --------------------------------------------------------------------------- the pass

#: a match's keys in one snapshot: [v, rs, doc, [events...], [asked...], packed log or ''] (nil:
#: no document; a finished match's log is packed in its document, ``matches._pack_log``)
_SNAPSHOT = """
local h = redis.call('HMGET', KEYS[1], 'v', 'rs', 'doc', 'ev')
if not h[1] then return false end
return {h[1], h[2], h[3], redis.call('LRANGE', KEYS[2], 0, -1), redis.call('SMEMBERS', KEYS[3]),
        h[4] or ''}
"""

#: delete a match's keys if its version is still ARGV[1]: 1 deleted, 0 no document, -1 moved
_DROP = """
local v = redis.call('HGET', KEYS[1], 'v')
if not v then return 0 end
if v ~= ARGV[1] then return -1 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
return 1
"""

_scripts: dict[str, Any] = {}


def _run(r: redis.Redis, source: str, names: list[str], args: list[Any]) -> Any:
    script = _scripts.get(source)
    if script is None:
        script = _scripts[source] = r.register_script(source)
    return script(keys=names, args=args, client=r)


def _names(mid: str) -> list[str]:
    return [keys.match(mid), keys.match_events(mid), keys.match_asked(mid)]


def snapshot(r: redis.Redis, mid: str) -> Archived | None:
    """The match's keys as one :class:`Archived` (None: not in Redis)."""
    out = _run(r, _SNAPSHOT, _names(mid), [])
    if not out:
        return None
    v, rs, doc, evs, asked, packed = out
    events = []
    for raw in evs:
        seq, rnd, kind, data, to = orjson.loads(raw)
        events.append(Event(seq, rnd, kind, data, None if to is None else tuple(to)))
    if packed:
        events = [Event(seq, rnd, kind, data, None if to is None else tuple(to))
                  for seq, rnd, kind, data, to in orjson.loads(zlib.decompress(packed))]
    return Archived(id=mid, version=int(v), round_start=int(rs),
                    doc=zlib.decompress(doc), events=events, asked=sorted(replies.texts(asked)))


@dataclass
class PassResult:
    archived: int = 0  # moved into files this pass
    gone: int = 0  # already archived (an earlier or a concurrent pass): index entry dropped
    kept: int = 0  # not archivable yet (a ladder match not rated yet, a changed match)

    def total(self) -> int:
        return self.archived + self.gone + self.kept


def _prepare(r: redis.Redis, arc: Archive, mid: str,
             cutoff: float) -> str | tuple[Archived, bytes]:
    """Write ``mid``'s file (not yet flushed to disk) if it is to be archived; returns its
    snapshot, or the outcome when there is nothing more to do (``gone``, ``kept``)."""
    snap = snapshot(r, mid)
    if snap is None:
        if arc.read_raw(mid) is None:
            log.warning("archive: %s has neither keys nor a file; dropped from the pass", mid)
        r.zrem(keys.TO_ARCHIVE, mid)
        return "gone"
    doc = snap.doc_only()
    if doc.status != FINISHED:
        r.zrem(keys.TO_ARCHIVE, mid)  # not finished: it comes back when it finishes
        return "kept"
    if doc.finished_at is not None and doc.finished_at >= cutoff:
        return "kept"
    if doc.ladder and r.hexists(keys.ladder(doc.ladder, "inflight"), mid):
        return "kept"  # its rating is still to run, and reads the hot match
    data = encode(snap)
    arc.write(mid, data, durable=False)
    return snap, data


def _drop(r: redis.Redis, arc: Archive, snap: Archived, data: bytes) -> str:
    """Once its file (``data``) is on disk: delete the match's keys if it is still at the
    version written, and its entry of the pass's index."""
    mid = snap.id
    if arc.read_raw(mid) != data:  # on disk is what we meant, before Redis forgets it
        raise OSError(f"archive file of {mid} reads back different")
    dropped = int(_run(r, _DROP, _names(mid), [snap.version]))
    if dropped < 0:
        return "kept"  # changed meanwhile: the next pass writes it again
    r.zrem(keys.TO_ARCHIVE, mid)
    return "archived" if dropped else "gone"


def archive_one(r: redis.Redis, arc: Archive, mid: str, *, cutoff: float) -> str:
    """Move one match into the archive if it finished before ``cutoff`` (epoch s). Returns
    ``archived``, ``gone`` (no keys left: archived already) or ``kept``."""
    got = _prepare(r, arc, mid, cutoff)
    if isinstance(got, str):
        return got
    arc.sync()
    return _drop(r, arc, *got)


def archive_due(r: redis.Redis, arc: Archive, *, retention_s: float,
                batch: int = DEFAULT_BATCH, now: float | None = None) -> PassResult:
    """One pass: archive up to ``batch`` matches that finished more than ``retention_s`` ago,
    oldest first. Their files are written first, then flushed to disk together (one
    ``sync``: a flush per file would cost a journal commit each, about five times the rest of
    the work), and only then does each match leave Redis."""
    now = time.time() if now is None else now
    cutoff = now - retention_s
    out = PassResult()
    ids = replies.texts(r.zrangebyscore(keys.TO_ARCHIVE, "-inf", f"({cutoff}",
                                        start=0, num=batch))
    written: list[tuple[Archived, bytes]] = []
    for mid in ids:
        got = _prepare(r, arc, mid, cutoff)
        if isinstance(got, str):
            setattr(out, got, getattr(out, got) + 1)
        else:
            written.append(got)
    if written:
        arc.sync()
    for snap, data in written:
        done = _drop(r, arc, snap, data)
        setattr(out, done, getattr(out, done) + 1)
    return out
