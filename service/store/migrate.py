"""Start-up migrations of the key layout (run by the API, the worker and cron before they serve).

1. ``ladder-tags``: a ladder's keys were ``ll:lad:<ladder>:<part>``; they are now
   ``ll:lad:{<ladder>}:<part>`` (``keys.ladder``), so that a rating's transaction stays in one
   slot on a Redis Cluster. Each old key is renamed (merged into the new one if a process of
   this version wrote it first: sorted sets keep the earlier score, hashes the new fields).
   Match documents, players and every other key kept their names: stored matches load as before.

2. ``match-events``: a match was one JSON string, its event log inside; it is now a hash (the
   document without the log, its version, where the round in play starts) and a list of its
   events (``keys.match``, ``keys.match_events``; ``store/matches.py``). Each match is
   rewritten in one transaction, under WATCH (a match already in the new form is left alone).
   This one runs on a Redis Cluster too (SCAN on every master; a match's keys share a slot).

A migration runs once per Redis (``ll:svc:migrations`` records it) and is safe to run from
several processes at once (RENAMENX; a key someone else renamed is simply gone). A cluster
starts empty (there is no layout to migrate), so nothing runs there."""

from __future__ import annotations

import redis

from . import cluster, keys, replies
from .docs import MatchDoc, event_json

DONE_KEY = f"{keys.PREFIX}:svc:migrations"
LADDER_TAGS = "ladder-tags"
MATCH_EVENTS = "match-events"


def run(r: redis.Redis) -> list[str]:
    """Apply the migrations this Redis hasn't had; returns their names."""
    done = []
    if not cluster.is_cluster(r) and not r.sismember(DONE_KEY, LADDER_TAGS):
        _ladder_tags(r)
        r.sadd(DONE_KEY, LADDER_TAGS)
        done.append(LADDER_TAGS)
    if not r.sismember(DONE_KEY, MATCH_EVENTS):
        match_events(r)
        r.sadd(DONE_KEY, MATCH_EVENTS)
        done.append(MATCH_EVENTS)
    return done


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


def _ladder_tags(r: redis.Redis) -> int:
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
