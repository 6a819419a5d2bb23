"""Start-up migrations of the key layout (run by the API, the worker and cron before they serve).

1. ``ladder-tags``: a ladder's keys were ``ll:lad:<ladder>:<part>``; they are now
   ``ll:lad:{<ladder>}:<part>`` (``keys.ladder``), so that a rating's transaction stays in one
   slot on a Redis Cluster. Each old key is renamed (merged into the new one if a process of
   this version wrote it first: sorted sets keep the earlier score, hashes the new fields).
   Match documents, players and every other key kept their names: stored matches load as before.

A migration runs once per Redis (``ll:svc:migrations`` records it) and is safe to run from
several processes at once (RENAMENX; a key someone else renamed is simply gone). A cluster
starts empty (there is no layout to migrate), so nothing runs there."""

from __future__ import annotations

import redis

from . import cluster, keys, replies

DONE_KEY = f"{keys.PREFIX}:svc:migrations"
LADDER_TAGS = "ladder-tags"


def run(r: redis.Redis) -> list[str]:
    """Apply the migrations this Redis hasn't had; returns their names."""
    if cluster.is_cluster(r) or r.sismember(DONE_KEY, LADDER_TAGS):
        return []
    _ladder_tags(r)
    r.sadd(DONE_KEY, LADDER_TAGS)
    return [LADDER_TAGS]


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
