"""The stored data's schema: an ordered list of migration steps and the version a Redis is at.

Each step has a version number (1, 2, ... in order), a name and a function that brings the data
of a Redis from the previous version to its own. ``python -m service.ops.migrate`` (a one-shot
compose service the others wait for; ``make run`` runs it first) applies the steps a Redis
hasn't had, in order, recording the version after each in ``ll:svc:schema``; the API, the deadline
worker and cron only :func:`require` the version their code was written for, and refuse to start
against an older or a newer one (``SchemaMismatch``, a message that says what to do). So a
migration runs once per deployment, not at every process start, and never while an older process
still writes the old layout.

To add a step: write its function (it takes the data client, must be safe to run again after
an interruption, and on a Redis Cluster must visit every master itself) and append
``Step(<last version + 1>, "<name>", <function>)`` to :data:`STEPS`.

Steps:

1. ``ladder-tags``: a ladder's keys were ``ll:lad:<ladder>:<part>``; they are now
   ``ll:lad:{<ladder>}:<part>`` (``keys.ladder``), so that a rating's transaction stays in one
   slot on a Redis Cluster. Each old key is renamed (merged into the new one if a process of
   this version wrote it first: sorted sets keep the earlier score, hashes the new fields).
   Match documents, players and every other key kept their names: stored matches load as
   before. A cluster started with the new layout, so nothing runs there.

2. ``match-events``: a match was one JSON string, its event log inside; it is now a hash (the
   document without the log, its version, where the round in play starts) and a list of its
   events (``keys.match``, ``keys.match_events``; ``store/matches.py``). Each match is
   rewritten in one transaction, under WATCH (a match already in the new form is left alone).
   This one runs on a Redis Cluster too (SCAN on every master; a match's keys share a slot).

3. ``archive-index``: the archive pass (``store/archive.py``) takes finished matches from an
   index that the commit finishing a match writes (``keys.TO_ARCHIVE``, scored by when it
   finished); this adds every finished match of the stored data to it. Run again, it adds
   nothing new (an entry already there keeps its score).

A Redis with no version recorded is either empty (a new deployment: it is stamped with the
current version, nothing to migrate) or from before versions were recorded: version 1 when the
earlier start-up migration left its mark (``ll:svc:migrations`` holds ``ladder-tags``), else 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from . import cluster, keys, replies
from .docs import FINISHED, MatchDoc, event_json

#: the schema version this Redis is at (an integer, as a string)
VERSION_KEY = f"{keys.PREFIX}:svc:schema"
#: what the start-up migration of earlier releases recorded (a set of step names)
DONE_KEY = f"{keys.PREFIX}:svc:migrations"
LADDER_TAGS = "ladder-tags"
#: keys that say nothing about the stored data: the service clock and its heartbeats
#: (``ll:svc:*``), the rate limiter's counters (``LIMITS:*``) and RQ's own keys (``rq:*``)
_NOT_DATA = (f"{keys.PREFIX}:svc:", "LIMITS:", "rq:")


class SchemaMismatch(RuntimeError):
    """The data in Redis is at another schema version than this code's."""

    def __init__(self, found: int, wanted: int) -> None:
        self.found, self.wanted = found, wanted
        if found < wanted:
            what = (f"the data in Redis is at schema version {found}, this code needs "
                    f"{wanted}: run `python -m service.ops.migrate` (docker compose: the "
                    f"`migrate` service) before starting it")
        else:
            what = (f"the data in Redis is at schema version {found}, newer than this code "
                    f"knows ({wanted}): run the release that migrated it (or restore a backup "
                    f"taken before the upgrade)")
        super().__init__(what)


@dataclass(frozen=True)
class Step:
    version: int
    name: str
    apply: Callable[[redis.Redis], Any]


MATCH_EVENTS = "match-events"


def match_events(r: redis.Redis) -> int:
    """Step ``match-events``: every match stored as one JSON string (its log inside) becomes its
    document's hash and its event list. Returns how many were rewritten."""
    rewritten = 0
    for raw_key in list(r.scan_iter(match=f"{keys.PREFIX}:m:*:state", count=1000)):
        key = replies.text(raw_key)
        mid = key[key.index("{") + 1:key.index("}")]
        with r.pipeline() as pipe:
            try:
                pipe.watch(key)
                if replies.text(pipe.type(key)) != "string":
                    continue  # already moved (by another process), or gone
                raw = pipe.get(key)
                if raw is None:
                    continue
                try:
                    doc = MatchDoc.from_json(raw)
                except (TypeError, ValueError, KeyError):
                    continue  # not a match document: nothing of ours to move
                state = doc.state
                pipe.multi()
                pipe.delete(key, keys.match_events(mid))
                pipe.hset(key, mapping={
                    "v": doc.version, "rs": 0 if state is None else state.round_start_seq,
                    "doc": doc.to_stored()})
                if state is not None and state.events:
                    pipe.rpush(keys.match_events(mid), *map(event_json, state.events))
                pipe.execute()
                rewritten += 1
            except redis.WatchError:
                continue  # someone else moved it meanwhile
    return rewritten


ARCHIVE_INDEX = "archive-index"


def archive_index(r: redis.Redis, *, batch: int = 500) -> int:
    """Step ``archive-index``: every finished match (``ll:idx:status:finished``) still in Redis
    goes into the archive pass's index, scored by when it finished. Returns how many."""
    ids = replies.texts(r.zrange(keys.matches_by_status(FINISHED), 0, -1))
    added = 0
    for start in range(0, len(ids), batch):
        chunk = ids[start:start + batch]
        pipe = r.pipeline(transaction=False)
        for mid in chunk:
            pipe.hget(keys.match(mid), "doc")
        due: dict[str, float] = {}
        for mid, raw in zip(chunk, pipe.execute(), strict=True):
            if raw is not None:
                doc = MatchDoc.from_stored(raw)
                due[mid] = doc.finished_at or doc.created_at
        if due:
            added += int(r.zadd(keys.TO_ARCHIVE, due, nx=True) or 0)
    return added


def _ladder_tags(r: redis.Redis) -> int:
    if cluster.is_cluster(r):
        return 0
    prefix = f"{keys.PREFIX}:lad:"
    moved = 0
    for raw in list(r.scan_iter(match=prefix + "*", count=1000)):
        old = replies.text(raw)
        if "{" in old:
            continue
        name, _, part = old[len(prefix):].partition(":")
        if not name or not part:
            continue
        new = keys.ladder(name, part)
        if r.renamenx(old, new):
            moved += 1
            continue
        kind = replies.text(r.type(old))
        if kind == "zset":
            r.zunionstore(new, [new, old], aggregate="MIN")
        elif kind == "hash":
            for field, value in r.hgetall(old).items():
                r.hsetnx(new, field, value)
        r.delete(old)  # a list or a string: the new one is the newer
        moved += 1
    return moved


#: every migration, in order; append new ones at the end (the next version number)
STEPS: tuple[Step, ...] = (
    Step(1, LADDER_TAGS, _ladder_tags),
    Step(2, MATCH_EVENTS, match_events),
    Step(3, ARCHIVE_INDEX, archive_index),
)
#: the schema version this code reads and writes
CURRENT = STEPS[-1].version


def _check_steps(steps: tuple[Step, ...]) -> None:
    wrong = [s for i, s in enumerate(steps, 1) if s.version != i]
    if wrong:
        raise AssertionError(f"migration steps out of order: {wrong}")


_check_steps(STEPS)


def stored_version(r: redis.Redis) -> int | None:
    """The version recorded in this Redis, or None when none is."""
    raw = r.get(VERSION_KEY)
    return None if raw is None else int(replies.text(raw))


def has_data(r: redis.Redis) -> bool:
    """Whether this Redis holds any of the service's data (one SCAN pass at most, stopped at the
    first data key; every master of a cluster)."""
    for raw in r.scan_iter(count=1000):
        if not replies.text(raw).startswith(_NOT_DATA):
            return True
    return False


def version(r: redis.Redis) -> int:
    """The schema version of the data in this Redis (see the module's docstring for a Redis
    with none recorded: an empty one counts as current)."""
    found = stored_version(r)
    if found is not None:
        return found
    if r.sismember(DONE_KEY, LADDER_TAGS):
        return 1
    return 0 if has_data(r) else CURRENT


def stamp(r: redis.Redis, v: int = CURRENT) -> None:
    r.set(VERSION_KEY, str(v))


def run(r: redis.Redis, *, log: Callable[[str], None] | None = None) -> list[str]:
    """Apply, in order, the steps this Redis hasn't had, recording the version after each;
    returns their names. Refuses (``SchemaMismatch``) a Redis newer than this code."""
    at = version(r)
    if at > CURRENT:
        raise SchemaMismatch(at, CURRENT)
    done = []
    for step in STEPS[at:]:
        if log is not None:
            log(f"schema {step.version - 1} -> {step.version}: {step.name}")
        step.apply(r)
        stamp(r, step.version)
        done.append(step.name)
    if stored_version(r) != CURRENT:
        stamp(r)  # an empty Redis, or one from before versions were recorded
    return done


def require(r: redis.Redis) -> int:
    """What a process runs before it serves: raises ``SchemaMismatch`` unless the data is at
    :data:`CURRENT`. An empty Redis is stamped with it (a new deployment has nothing to
    migrate). Costs one GET once stamped."""
    at = version(r)
    if at != CURRENT:
        raise SchemaMismatch(at, CURRENT)
    if stored_version(r) is None:
        r.set(VERSION_KEY, str(CURRENT), nx=True)
    return at
