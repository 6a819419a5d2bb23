"""The deadline dispatcher: turns due entries of the deadline index into RQ jobs, at their due
time, and keeps the service clock.

Every change of a match writes its pending turn's deadline into the deadline index (a sorted set,
``store/deadlines.py``) in its own commit. A dispatcher loops: it claims the entries that are due
(:func:`store.deadlines.claim`, one atomic script that also moves each claimed entry
``LEASE_S`` ahead), queues one stock RQ job per claimed entry (``timeouts.settle``, on the
``deadlines`` queue, all in one pipeline), and sleeps until the earliest entry left is due, or
``POLL_S`` at most (a turn started meanwhile may be due sooner than anything it knew of; no turn
is shorter than a second). So a timeout is queued within a few milliseconds of its deadline and a
worker applies it within about one job's time (``bench/deadlines.py`` gives the figures); RQ's
own ``enqueue_at`` could not do this: its scheduler keeps whole seconds and polls once a second.

Guarantees, and what gives each:

- never early: the job decides nothing by the index's score. It applies a timeout only through
  the match's compare-and-set, when the store finds the turn due on the service clock
  (store/clock.py); otherwise it sets the entry back to the turn's deadline.
- exactly once: the compare-and-set is on the match's version, so a timeout is applied by one
  commit only, whoever runs it (a job, a repeated job, a reader of the match). The claim is
  atomic, so with several dispatchers (one in every worker process) each due entry is queued
  by one of them.
- retries: an entry whose job does not settle it (the job failed because Redis went away, or
  was lost with a killed worker, or the dispatcher died between its claim and its queueing)
  comes due again when its lease ends, ``LEASE_S`` later, and is dispatched again. RQ's
  ``Retry`` is not used: a job failing because Redis is unreachable often cannot record its
  own failure either.
- the service clock: each dispatcher ticks the clock every ``TICK_S``; when Redis is down, no
  tick lands and the clock stands still (pending turns are charged nothing for an outage).

Where it runs: a thread of every worker process (``python -m service.jobs.worker``), so the
clock runs while a worker can apply timeouts, and a second worker is a standby dispatcher too
(no failover delay: its claims simply find the due entries)."""

from __future__ import annotations

import logging
import os
import threading
import time

import redis
from rq import Queue

from ..store import clock, deadlines, heartbeats
from ..store.queues import DEADLINES
from . import timeouts

log = logging.getLogger(__name__)

#: the longest sleep between two claims (an entry may be due sooner than the earliest one known)
POLL_S = float(os.environ.get("DEADLINE_POLL_S", "0.1"))
#: a claimed entry comes due again this much later, unless its job settles it first
LEASE_S = float(os.environ.get("DEADLINE_LEASE_S", "5"))
#: seconds between two ticks of the service clock
TICK_S = 0.2
#: the most entries one claim takes (the rest on the next round, at once)
BATCH = 500
#: while Redis is unreachable, the wait between two tries
RETRY_S = 0.25
#: a deadline job's RQ settings: it is one compare-and-set, its result is for inspection
JOB_TIMEOUT_S = 30
RESULT_TTL_S = 60
FAILURE_TTL_S = 24 * 3600

REDIS_DOWN = (redis.ConnectionError, redis.TimeoutError)


def wait_for_redis(r: redis.Redis, stopping: threading.Event, every: float) -> bool:
    """Ping ``r`` every ``every`` s until it answers (True) or ``stopping`` is set (False): how
    the worker and the cron process wait out an outage before they start RQ's loop again."""
    while not stopping.is_set():
        try:
            r.ping()
            return True
        except REDIS_DOWN:
            stopping.wait(every)
    return False
#: how often a dispatcher says it is alive (``/readyz`` wants one within READY_MAX_AGE_S, 15 s)
BEAT_S = 2.0


class Dispatcher:
    """One dispatcher: ``queue_redis`` is RQ's Redis; the data Redis is found from it as the
    jobs find theirs (``timeouts.data_redis``)."""

    def __init__(self, queue_redis: redis.Redis, *, name: str = "dispatcher",
                 poll_s: float = POLL_S, lease_s: float = LEASE_S) -> None:
        self.name = name
        self.queue_redis = queue_redis
        self.queue = Queue(DEADLINES, connection=queue_redis)
        self.next_beat = 0.0
        self.data = timeouts.data_redis(queue_redis)
        self.poll_s = poll_s
        self.lease_s = lease_s
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None

    def dispatch(self, now: float | None = None) -> tuple[int, float | None]:
        """One round: claim what is due and queue its jobs. Returns how many were queued and the
        earliest score left in the index."""
        now = time.time() if now is None else now
        claimed, nxt = deadlines.claim(self.data, now, self.lease_s, BATCH)
        if claimed:
            self.queue.enqueue_many([Queue.prepare_data(
                timeouts.settle, (mid, score), job_id=deadlines.job_id(mid, score),
                timeout=JOB_TIMEOUT_S, result_ttl=RESULT_TTL_S, failure_ttl=FAILURE_TTL_S)
                for mid, score in claimed])
        return len(claimed), nxt

    def tick(self) -> None:
        now = time.monotonic()
        if now >= self.next_beat:  # /readyz: a deadline worker is alive (store/heartbeats.py)
            self.next_beat = now + BEAT_S
            heartbeats.beat(self.queue_redis, heartbeats.DEADLINE_WORKER, self.name)
        ticked = clock.tick(self.data)
        if ticked.startswith("resumed:"):
            log.warning("%s: the service was down; %.1f s credited to every pending turn",
                        self.name, float(ticked[8:]))

    def run(self) -> None:
        """Dispatch until :meth:`stop`; Redis being unreachable only pauses it."""
        log.info("%s: dispatching deadlines (poll %.2f s, lease %.0f s)", self.name,
                 self.poll_s, self.lease_s)
        next_tick = 0.0
        down = False
        while not self.stopping.is_set():
            try:
                if time.monotonic() >= next_tick:
                    next_tick = time.monotonic() + TICK_S
                    self.tick()
                n, nxt = self.dispatch()
                if down:
                    log.warning("%s: Redis is back", self.name)
                    down = False
            except REDIS_DOWN as exc:
                if not down:
                    log.warning("%s: Redis unavailable (%s); retrying", self.name, exc)
                down = True
                self.stopping.wait(RETRY_S)
                continue
            except Exception:  # a bug: logged with its traceback, and the loop goes on
                log.exception("%s: dispatching failed", self.name)
                self.stopping.wait(1.0)
                continue
            if n >= BATCH:
                continue
            wait = min(self.poll_s, next_tick - time.monotonic())
            if nxt is not None:
                wait = min(wait, nxt - time.time())
            if wait > 0:
                self.stopping.wait(wait)
        log.info("%s: stopped", self.name)

    def start(self) -> Dispatcher:
        self.thread = threading.Thread(target=self.run, name=self.name, daemon=True)
        self.thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(timeout)
