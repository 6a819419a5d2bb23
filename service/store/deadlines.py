"""The deadline index (``keys.DEADLINES``): a sorted set of match id -> the wall time at which
its pending turn is due. Every change of a match writes its entry in the change's own commit
(``store/matches.py``; on a Redis Cluster, as one of the change's effects: store/cluster.py), so
a committed turn always has its entry, and nothing else about RQ is written by a change.

The deadline dispatcher (``service/jobs/dispatcher.py``) takes due entries with :func:`claim`:
one script (so it is atomic, on a single Redis or the index's cluster node) that takes the
entries due by a given time and, in the same step, moves each one ``lease`` seconds ahead. So
an entry goes to one dispatcher only, however many run, and one that is never settled (its
worker killed, or its settle failed because Redis went away) comes due again when its lease
ends and is claimed again: retrying is the index's own doing. The settle (``jobs/timeouts``
``settle_on``) applies the due timeouts through the match's compare-and-set (so a repeated
settle changes nothing) and leaves the entry true again: its commit rewrites it, or
:func:`reschedule` does when nothing was due."""

from __future__ import annotations

from typing import Any

import redis

from . import keys, replies

__all__ = ["claim", "reschedule"]

# KEYS[1]: the index; ARGV: now, now + lease, the most entries to take. Returns the claimed
# entries and their scores (flat: id, score, id, score ...), then the next score still pending
# (or nothing), so that the dispatcher can sleep until then.
_CLAIM = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0,
                       tonumber(ARGV[3]))
for i = 1, #due, 2 do
  redis.call('ZADD', KEYS[1], ARGV[2], due[i])
end
local nxt = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if nxt[2] then table.insert(due, nxt[2]) end
return due
"""

_scripts: dict[int, Any] = {}


def _claim_script(r: redis.Redis) -> Any:
    script = _scripts.get(id(r))
    if script is None or script.registered_client is not r:
        script = _scripts[id(r)] = r.register_script(_CLAIM)
    return script


def claim(r: redis.Redis, now: float, lease: float,
          limit: int = 500) -> tuple[list[tuple[str, float]], float | None]:
    """Take the entries due by ``now`` (at most ``limit``), each moved to ``now + lease``;
    returns them with the score each had (its deadline, or the end of an earlier lease), and
    the earliest score left in the index (None: it is empty)."""
    raw = _claim_script(r)(keys=[keys.DEADLINES], args=[repr(now), repr(now + lease), limit])
    nxt = float(raw.pop()) if len(raw) % 2 else None
    got = [(replies.text(raw[i]), float(raw[i + 1])) for i in range(0, len(raw), 2)]
    return got, nxt


def reschedule(r: redis.Redis, mid: str, at: float | None) -> None:
    """Set the entry of ``mid`` to ``at`` if it still has one (None: remove it). For a settle
    that found nothing due; a change committed meanwhile may have set a later deadline, which
    this can overwrite with an earlier one: then that entry is claimed early, its settle finds
    nothing due, and reschedules it right."""
    if at is None:
        r.zrem(keys.DEADLINES, mid)
    else:
        r.zadd(keys.DEADLINES, {mid: at}, xx=True)

