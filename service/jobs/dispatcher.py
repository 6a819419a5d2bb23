"""The deadline dispatcher: applies the turns of the deadline index that come due, at their due
time, and keeps the service clock.

Every change of a match writes its pending turn's deadline into the deadline index (a sorted set,
``store/deadlines.py``) in its own commit. A dispatcher loops: it claims the entries due within
``AHEAD_S`` (:func:`store.deadlines.claim`, one atomic script that also moves each claimed entry
``LEASE_S`` ahead), at most one per free settler thread; each settler waits until its entry's
due time and settles it (``timeouts.settle_on``: one compare-and-set of the match); the loop
sleeps until the earliest entry left is nearly due, or ``POLL_S`` at most (a turn started
meanwhile may be due sooner than anything it knew of; no turn is shorter than a second).

Why settle here rather than through an RQ job per due turn (as before): a job costs its worker
about ten round trips to RQ's Redis besides the compare-and-set (queueing, dequeueing, the
job's state in RQ's registries, its result), one job at a time, and each round trip on a busy
host waits for Redis and then the worker to be scheduled again: the worker fell behind in
bursts and the slowest timeouts came seconds late. Here a settle is two round trips, sixteen
run at once, and the claim and the hand-over to a settler happen before the deadline, so the
settle starts on time (``bench/deadlines.py``; figures in docs/operations.md). Nothing about a
deadline is written to RQ's Redis any more.

Guarantees, and what gives each:

- never early: the dispatcher decides nothing by the index's score. It applies a timeout only
  through the match's compare-and-set, when the store finds the turn due on the service clock
  (store/clock.py); otherwise it sets the entry back to the turn's deadline.
- exactly once: the compare-and-set is on the match's version, so a timeout is applied by one
  commit only, whoever makes it (a dispatcher, a repeated settle, a reader of the match). The
  claim is atomic, so with several dispatchers (one in every worker process) each due entry
  goes to one of them.
- retries: an entry that is not settled (Redis went away or a cluster master failed over
  mid-settle, or the dispatcher died between its claim and its settle) comes due again when
  its lease ends, ``LEASE_S`` later, and is settled then. Nothing is left behind to clean up:
  no failed job, no registry entry.
- the service clock: each dispatcher ticks the clock every ``TICK_S`` (between two settles of a
  long batch too); when Redis is down, no tick lands and the clock stands still (pending turns
  are charged nothing for an outage).

Where it runs: a thread of every worker process (``python -m service.jobs.worker``), so the
clock runs while a worker runs, and a second worker is a second dispatcher (no failover delay:
its claims simply find the due entries; the claims share the load out).

RQ's Redis is none of its business: claims, settles and the clock are on the data Redis, and
the heartbeat that tells ``/readyz`` a dispatcher is alive goes to RQ's Redis from a thread of
its own, on a client of its own with the data timeouts (``store/sockets.py``), never on the
connection RQ's worker pops jobs with (RQ raises that pool's read timeout for its blocking pop,
and a connection opened before has none). So a queue Redis that stalls, even one that never
wakes, costs the deadlines nothing: the dispatcher goes on claiming, settling and ticking the
clock (the API serves moves meanwhile, so the turns go on), and only its beats fail. The beat
thread beats only while the loop goes round, so a loop that hangs is not reported alive."""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait

import redis
from redis.exceptions import ClusterDownError, ReadOnlyError, SlotNotCoveredError, TryAgainError

from ..store import clock, cluster, deadlines, heartbeats
from . import timeouts

log = logging.getLogger(__name__)

#: the longest sleep between two claims (an entry may be due sooner than the earliest one known)
POLL_S = float(os.environ.get("DEADLINE_POLL_S", "0.1"))
#: a claimed entry comes due again this much later, unless its job settles it first
LEASE_S = float(os.environ.get("DEADLINE_LEASE_S", "5"))
#: seconds between two ticks of the service clock
TICK_S = 0.2
#: the most entries one claim takes (the rest on the next round, at once): a backlog is taken
#: in pieces, each claimed entry's lease starting shortly before its settle
BATCH = 50
#: settles run this many at a time: a settle is two round trips to Redis, and on a busy host
#: each waits for Redis to be scheduled, so one at a time fell behind 100 timeouts/s
SETTLERS = 16
#: claimed and not yet settled, at most: one per settler, so none waits behind another
MAX_IN_FLIGHT = SETTLERS
#: entries are claimed this long before they are due, and their settler waits out the rest:
#: on a busy host each wake-up of a thread and each round trip costs tens of milliseconds, and
#: a claim made at the deadline added two of them to every timeout's lateness
AHEAD_S = 0.1
#: while Redis is unreachable, the wait between two tries
RETRY_S = 0.25

#: Redis unreachable, stalled, or a cluster between masters (a failover: no master for a slot
#: yet, or a write reaching a demoted one): retried, not a bug
REDIS_DOWN = (redis.ConnectionError, redis.TimeoutError, ClusterDownError, TryAgainError,
              SlotNotCoveredError, ReadOnlyError)


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
#: a loop that has not gone round for this long sends no beat: a hung dispatcher is not alive
#: (one round waits at most a read timeout or two and a retry pause)
LOOP_STALE_S = 10.0


def beat_client(data: redis.Redis) -> redis.Redis:
    """RQ's Redis with the data timeouts: a cluster's queue client, else the data client itself
    (RQ's queues are on the data Redis then)."""
    return cluster.queue_client(data) if cluster.is_cluster(data) else data


class Dispatcher:
    """One dispatcher: ``queue_redis`` is RQ's Redis; the data Redis is found from it as the
    jobs find theirs (``timeouts.data_redis``). ``beat_redis``: the client its heartbeat goes
    to (RQ's Redis with the data timeouts; by default :func:`beat_client` of the data client),
    never RQ's worker's own connection (the module docstring)."""

    def __init__(self, queue_redis: redis.Redis, *, name: str = "dispatcher",
                 poll_s: float = POLL_S, lease_s: float = LEASE_S,
                 beat_redis: redis.Redis | None = None) -> None:
        self.name = name
        self.queue_redis = queue_redis
        self.loop_at = time.monotonic()
        self.beat_thread: threading.Thread | None = None
        self.pool = ThreadPoolExecutor(SETTLERS, thread_name_prefix=f"{name}-settle")
        self.lock = threading.Lock()
        self.in_flight: set[Future[str]] = set()
        self.wake = threading.Event()
        self.next_settle_warning = 0.0
        self.last_error: BaseException | None = None
        self.data = timeouts.data_redis(queue_redis)
        self.beat_redis = beat_redis if beat_redis is not None else beat_client(self.data)
        self.poll_s = poll_s
        self.lease_s = lease_s
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None

    def dispatch(self, now: float | None = None) -> tuple[int, float | None]:
        """One round: claim what is due within ``AHEAD_S``, as many as there are free settlers
        for, and hand each to a settler (:meth:`drain` waits for them). Returns how many were
        claimed and the earliest score left in the index. A round does not wait for its
        settles: an entry that comes due meanwhile is claimed by the next round while a slow
        settle goes on."""
        now = time.time() if now is None else now
        with self.lock:
            free = MAX_IN_FLIGHT - len(self.in_flight)
        if free <= 0:
            return 0, None
        claimed, nxt = deadlines.claim(self.data, now + AHEAD_S, self.lease_s, min(BATCH, free))
        for mid, score in claimed:
            fut = self.pool.submit(self.settle_claimed, mid, score)
            with self.lock:
                self.in_flight.add(fut)
            fut.add_done_callback(self.on_settled)
        return len(claimed), nxt

    def settle_claimed(self, mid: str, due: float) -> str:
        """A settler: wait until the entry's score (it was claimed up to ``AHEAD_S`` early, so
        that its settle starts on time rather than a claim and a hand-over later), then settle
        it."""
        early = due - time.time()
        if early > 0 and self.stopping.wait(early):
            raise redis.ConnectionError("the dispatcher is stopping")  # (its lease brings it back)
        return timeouts.settle_on(self.data, mid)

    def on_settled(self, fut: Future[str]) -> None:
        with self.lock:
            self.in_flight.discard(fut)
        self.wake.set()  # a settler is free: the loop may claim again
        if fut.cancelled():  # (stopping)
            return
        exc = fut.exception()
        if exc is None:
            return
        self.last_error = exc
        # its entry stays claimed: it comes due again when its lease ends
        if isinstance(exc, REDIS_DOWN):
            now = time.monotonic()
            if now >= self.next_settle_warning:
                self.next_settle_warning = now + self.lease_s
                log.warning("%s: a settle failed (Redis unavailable: %s); its turn is settled "
                            "again when its lease ends", self.name, exc)
        else:
            log.error("%s: settling failed", self.name, exc_info=exc)

    def drain(self, timeout: float = 30.0) -> None:
        """Wait until the settles handed out so far are done; raise the error of the last one
        that failed since the previous call, if any (for tests and tools: the loop doesn't)."""
        with self.lock:
            futs = list(self.in_flight)
        done, _ = wait(futs, timeout)
        # (a future's waiters hear of it before its callbacks run: look at it too)
        failed = [f.exception() for f in futs
                  if f in done and not f.cancelled() and f.exception() is not None]
        exc, self.last_error = self.last_error, None
        exc = failed[0] if failed else exc
        if exc is not None:
            raise exc

    def beat(self) -> bool:
        """One heartbeat for ``/readyz`` (store/heartbeats.py), if the loop went round lately;
        whether it landed."""
        if time.monotonic() - self.loop_at > LOOP_STALE_S:
            return False
        heartbeats.beat(self.beat_redis, heartbeats.DEADLINE_WORKER, self.name)
        return True

    def beat_loop(self) -> None:
        down = False
        while not self.stopping.is_set():
            try:
                self.beat()
                if down:
                    log.warning("%s: RQ's Redis is back (heartbeats)", self.name)
                down = False
            except REDIS_DOWN as exc:
                if not down:  # readiness says so; the deadlines go on regardless
                    log.warning("%s: no heartbeat (RQ's Redis unavailable: %s); deadlines are "
                                "still settled", self.name, exc)
                down = True
            except Exception:
                log.exception("%s: heartbeat failed", self.name)
            self.stopping.wait(BEAT_S)

    def tick(self) -> None:
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
            self.loop_at = time.monotonic()
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
            pause = min(self.poll_s, next_tick - time.monotonic())
            if nxt is not None:
                pause = min(pause, nxt - AHEAD_S - time.time())
            self.wake.clear()
            with self.lock:
                full = len(self.in_flight) >= MAX_IN_FLIGHT
            if full:  # until a settler is free (or the clock's tick is due)
                self.wake.wait(max(0.0, next_tick - time.monotonic()))
            elif pause > 0:
                self.stopping.wait(pause)
        log.info("%s: stopped", self.name)

    def start(self) -> Dispatcher:
        self.loop_at = time.monotonic()
        self.thread = threading.Thread(target=self.run, name=self.name, daemon=True)
        self.thread.start()
        self.beat_thread = threading.Thread(target=self.beat_loop, name=f"{self.name}-beat",
                                            daemon=True)
        self.beat_thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self.stopping.set()
        for th in (self.thread, self.beat_thread):
            if th is not None:
                th.join(timeout)
        self.pool.shutdown(wait=False, cancel_futures=True)
