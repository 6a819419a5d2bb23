"""The service clock: turn deadlines count only time during which the service could take moves.

A turn's deadline is kept in *service time*, a clock that runs with the wall clock while the
service is healthy and stands still while it is not. "Healthy" is vouched for by heartbeats in
one Redis hash (``ll:svc:clock``):

- ``api``: every API process writes its wall time there every ``API_BEAT_S`` (0.25 s; the
  thread started by ``service/ops/gunicorn_conf.py``). The API counts as up until ``API_SLACK_S``
  (0.5 s) after the last beat.
- ``beat`` / ``off``: the clock keeper (every worker process's deadline dispatcher, every
  0.2 s: ``jobs/dispatcher.py``) calls :func:`tick`, an atomic script
  that moves ``beat`` to now (or to the last moment the API was seen up, if earlier). Service
  time is wall time minus ``off``, the outage time credited so far; ``off`` changes only when
  an outage is detected, so deadlines in the wall clock stay exact between outages.

So service time stops when Redis is down (nobody can tick, and nobody can read or write a match
either), when no API process beats (nobody can post a move), and when no deadline worker runs
(nobody ticks). Readers never wait for a tick: service time at wall time ``t`` is
``beat - off + min(t - beat, MAX_GAP_S)`` (``t`` capped at the API's last beat + slack), i.e.
it runs on for at most ``MAX_GAP_S`` (2 s) past the last tick and then freezes. A tick that
finds a gap longer than that is an outage: it credits the gap beyond ``MAX_GAP_S`` (``off``
grows by it) and records the service time at which the service came back (``resumed``).

A turn that was pending when an outage began gets its whole turn time again from the moment the
service is back (``resumed + turn_timeout_s``, if that is later than its deadline): its player
could not move, and a bot needs a moment to notice that the service is back (its client was
backing off). While the clock is frozen, nothing started before the freeze can become due.

What this costs a turn: an interruption shorter than ``MAX_GAP_S`` is not detected and is
charged (at most 2 s); a longer one is charged nothing, and the turn restarts in full. A
scheduler stalled for more than 2 s (a badly overloaded machine) looks like an outage too: the
pending turns get their time again, which errs on the player's side.

Before any keeper has ticked (a deployment without a deadline worker, most of the test suite),
service time is the wall clock. Every reader caches the hash for ``CACHE_S`` (0.2 s), and while
one request of a process reads it again the others use the copy it replaces: a stale copy only
ever makes service time smaller (it freezes earlier), never charges more."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import redis
from redis.client import Pipeline

from . import cluster, keys

#: wall seconds the clock runs on past the keeper's last tick before it freezes
MAX_GAP_S = 2.0
#: the API counts as up until this long after its last heartbeat
API_SLACK_S = 0.5
#: seconds between two heartbeats of an API process
API_BEAT_S = 0.25
#: how long a process reuses the clock it read
CACHE_S = 0.2

KEY = f"{keys.PREFIX}:svc:clock"


@dataclass(frozen=True)
class Clock:
    """One reading of the clock hash. ``beat`` is None before any keeper ticked (wall time)."""

    beat: float | None = None  # wall time up to which the keeper vouched for the service
    off: float = 0.0  # outage time credited so far: service time = wall time - off
    resumed: float | None = None  # service time at which the last outage ended
    api: float | None = None  # the API's last heartbeat (wall time); None: no API ever beat

    @property
    def kept(self) -> bool:
        return self.beat is not None

    def _horizon(self, wall: float) -> float:
        return wall if self.api is None else min(wall, self.api + API_SLACK_S)

    def _gap(self, wall: float) -> float:
        assert self.beat is not None
        return self._horizon(wall) - self.beat

    def now(self, wall: float) -> float:
        """Service time at wall time ``wall``."""
        if self.beat is None:
            return wall
        gap = self._gap(wall)
        if 0.0 <= gap <= MAX_GAP_S:  # the usual case: exact, whatever the beat
            return self._horizon(wall) - self.off
        return self.beat - self.off + max(0.0, min(gap, MAX_GAP_S))

    def frozen(self, wall: float) -> bool:
        """Whether the service counts as down at ``wall`` (the clock stands still)."""
        return self.beat is not None and self._gap(wall) > MAX_GAP_S

    def resumed_at(self, wall: float) -> float | None:
        """Service time at which the last outage ended; during an outage, the moment the clock
        froze (so nothing that was pending can become due before the service is back)."""
        if self.frozen(wall):
            assert self.beat is not None
            return self.beat - self.off + MAX_GAP_S
        return self.resumed

    def wall(self, wall: float) -> float:
        """A reader's wall time, never before the keeper's last tick. A reader that read its
        time a moment before a tick (stamped with Redis's ``TIME``) and then read the clock
        that tick wrote is that moment late: service time already stands at the tick
        (:meth:`now`), so its wall time does too. Without this, a turn started from such a
        reading showed on the wall that moment early (tens of ms on a loaded machine)."""
        return wall if self.beat is None else max(wall, self.beat)

    def to_wall(self, s: float, wall: float) -> float:
        """The wall time at which service time ``s`` is expected, if the clock runs from now."""
        wall = self.wall(wall)
        return wall + (s - self.now(wall))

    def deadline(self, started_s: float, deadline_s: float, turn_s: float,
                 wall: float) -> float:
        """A turn's deadline in service time: its own, or a whole turn after the end of an
        outage that interrupted it."""
        resumed = self.resumed_at(wall)
        if resumed is not None and started_s < resumed:
            return max(deadline_s, resumed + turn_s)
        return deadline_s


WALL = Clock()


def _parse(raw: list[Any]) -> Clock:
    beat, off, resumed, api = (None if v is None else float(v) for v in raw)
    if beat is None:
        return Clock(api=api)
    return Clock(beat=beat, off=off or 0.0, resumed=resumed, api=api)


def read(r: redis.Redis) -> Clock:
    """The clock as stored (no cache)."""
    return _parse(r.hmget(KEY, ["beat", "off", "resumed", "api"]))


_cache: dict[int, tuple[float, Clock]] = {}
_cache_lock = threading.Lock()
#: the pools whose clock a request of this process is reading again
_reading: set[int] = set()


def current(r: redis.Redis | Pipeline, *, max_age: float = CACHE_S) -> Clock:
    """The clock, read at most ``max_age`` seconds ago by this process (per connection pool),
    or, while another request of this process is reading it again, the reading that one
    replaces: a copy older than ``max_age`` by at most that read's round trip. Without that,
    every request that came in during the read made a read of its own: with a few dozen
    requests in flight (``bench/api.py``), most actions read the clock."""
    if cluster.is_cluster(r):  # a cluster client or its pipeline (no connection_pool)
        base: Any = cluster.data_client(r)
        ident = id(base)
    else:
        base, ident = None, id(r.connection_pool)
    t = time.monotonic()
    with _cache_lock:
        hit = _cache.get(ident)
        if hit is not None and (t - hit[0] < max_age or ident in _reading):
            return hit[1]
        _reading.add(ident)
    client = base if base is not None else r if isinstance(r, redis.Redis) and \
        not isinstance(r, Pipeline) else redis.Redis(connection_pool=r.connection_pool)
    try:
        clk = read(client)
    finally:
        with _cache_lock:
            _reading.discard(ident)
    with _cache_lock:
        _cache[ident] = (t, clk)
    return clk


def forget() -> None:
    """Drop the cached readings (tests that flush Redis)."""
    with _cache_lock:
        _cache.clear()


# --------------------------------------------------------------------------- writers

_TICK = """
local maxgap, slack = tonumber(ARGV[2]), tonumber(ARGV[3])
local now, nows = tonumber(ARGV[1]), ARGV[1]
if nows == '' then
  if redis.replicate_commands then redis.replicate_commands() end
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
  nows = string.format('%.17g', now)
end
local h = redis.call('HMGET', KEYS[1], 'beat', 'off', 'api')
local beat, off, api = tonumber(h[1]), tonumber(h[2]) or 0, tonumber(h[3])
if not beat then
  redis.call('HSET', KEYS[1], 'beat', nows, 'off', '0')
  return 'started'
end
local hz, hzs = now, nows
if api and api + slack < hz then
  hz = api + slack
  hzs = string.format('%.17g', hz)
end
if hz <= beat then return 'held' end
local gap = hz - beat
local out = 'ran'
if gap > maxgap then
  off = off + gap - maxgap
  redis.call('HSET', KEYS[1], 'off', string.format('%.17g', off),
             'resumed', string.format('%.17g', hz - off))
  redis.call('HINCRBY', KEYS[1], 'outages', 1)
  out = 'resumed:' .. string.format('%.6f', gap - maxgap)
end
redis.call('HSET', KEYS[1], 'beat', hzs)
return out
"""


def tick(r: redis.Redis, now: float | None = None) -> str:
    """The keeper's tick (see the module docstring). Returns ``started`` (the first tick ever),
    ``ran``, ``held`` (the API is down: the clock stands) or ``resumed:<seconds credited>``.

    A real tick (``now`` None) reads the time in the script, from Redis (``TIME``), not from
    the keeper: a tick sent while Redis stalls (SIGSTOP, a long fork) times out on the keeper's
    side but still sits in Redis's socket buffer, and runs when Redis wakes. Stamped with the
    keeper's time, the ticks buffered through a 12-s stall would run one after the other with
    gaps of about a second each, and the stall would go unnoticed (charged to every pending
    turn); stamped when they run, the first of them finds the whole gap and credits it, as
    after an outage. (Redis's clock and the hosts' are assumed in step, as everywhere here.)"""
    arg = "" if now is None else repr(now)
    out = r.eval(_TICK, 1, KEY, arg, repr(MAX_GAP_S), repr(API_SLACK_S))
    return out.decode() if isinstance(out, bytes) else str(out)


def api_beat(r: redis.Redis, now: float | None = None) -> None:
    """An API process is up (see :class:`ApiHeartbeat`)."""
    r.hset(KEY, "api", repr(time.time() if now is None else now))


def stats(r: redis.Redis) -> dict[str, Any]:
    """Outages the keeper detected and the seconds it credited (for operators and tests)."""
    raw = r.hmget(KEY, ["outages", "off"])
    return {"outages": int(raw[0] or 0), "credited_s": float(raw[1] or 0.0)}


class ApiHeartbeat:
    """A daemon thread (a greenlet under gevent) that writes the API's heartbeat every
    ``API_BEAT_S``; a failed write (Redis down, or full: maxmemory) is simply tried again at the
    next beat: the thread never ends on an error."""

    def __init__(self, r: redis.Redis, every: float = API_BEAT_S) -> None:
        self.r = r
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="api-heartbeat", daemon=True)

    def start(self) -> ApiHeartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                api_beat(self.r)
            except (redis.RedisError, OSError):  # down, stalled or full: the next beat
                pass
            self._stop.wait(self.every)
