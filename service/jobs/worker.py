"""The RQ worker class for deadline jobs: ``rq worker -w service.jobs.worker.DeadlineWorker
--with-scheduler deadlines default``.

Why this class, and these settings (figures from ``bench/deadlines.py``: 100 matches of idle
players, 1 s deadlines, one worker):

- No fork per job. RQ's default ``Worker`` forks a process per job (tens of ms each). Timeout
  jobs are one small compare-and-set on Redis, so this worker runs them in-process
  (``SimpleWorker``). A deadline job then costs about 3 ms of CPU, half of it RQ's own
  bookkeeping; RQ also sent three keep-alive heartbeats per job (3 round trips each, for a key
  that lives 420 s): :meth:`DeadlineWorker.heartbeat` sends at most one every
  ``WORKER_HEARTBEAT_S``, which took a job from 25 to 15 Redis round trips.
- Exact times. RQ scores scheduled jobs in whole seconds and moves the due ones once a second,
  so deadlines round up to the next second and every deadline of a second becomes due at its end,
  in one burst the worker then works through (p99 lateness about 1.5 s, at the bar). Deadline
  jobs carry their exact deadline as their score (store/deadlines.py) and
  :class:`DeadlineScheduler` moves them when the exact time passes, polling every
  ``RQ_SCHEDULER_INTERVAL`` seconds (0.2 by default): on an idle machine a timeout is applied
  within about 0.2 s of its deadline. RQ passes ``interval + 60`` to Redis as an integer TTL, so
  the poll interval can't simply be given to ``RQScheduler(interval=0.2)`` (``SET ... EX 60.2``
  is refused and the worker dies at start): the subclass keeps ``interval`` an integer and
  sleeps its own ``poll_interval``.
- Failover. Only the scheduler holding a queue's lock moves that queue's due jobs. RQ takes the
  lock for 61 s and, when a worker starts while another one's lock is held, only tries again at
  its maintenance pass (every 10 minutes), so after a crash nobody might schedule deadlines for a
  long time. Here every worker's scheduler process runs from the start, takes free locks with a
  short TTL (``LOCK_TTL_S``) refreshed every second, retries every second while it holds none,
  and exits (releasing its locks) when the worker that forked it is gone (RQ would leave it
  running as an orphan). So a standby worker takes over within a few seconds of a SIGKILL; in the
  meantime ``timeouts.recover`` (``rq cron``) applies what is overdue. Two schedulers that both
  believe they hold a lock at once only cause duplicate jobs, which change nothing (the job's
  compare-and-set is on the turn's version).
- The service clock. Every scheduler process is also a keeper of the service clock
  (store/clock.py): it ticks at every poll, so turn deadlines count time only while a deadline
  worker runs, Redis answers and the API beats.
- Redis restarts. RQ's worker retries a lost connection only while it waits for a job (and
  then with a wait that doubles up to 60 s); a connection error anywhere else in its loop (the
  maintenance pass, a heartbeat, a job's bookkeeping) makes it log "unhandled exception" and
  exit. :class:`DeadlineWorker` waits at most ``MAX_CONNECTION_WAIT_S`` between tries and
  survives those errors: the loop goes on and tries again (a job cut short by the outage is
  run again by ``timeouts.recover``, and every job here is idempotent).
"""

from __future__ import annotations

import logging
import os
import time
from datetime import datetime
from typing import Any

import redis
from rq.registry import ScheduledJobRegistry
from rq.scheduler import RQScheduler
from rq.scripts import acquire_or_refresh_lock
from rq.utils import now
from rq.worker import SimpleWorker

from ..store import clock, heartbeats, replies
from .timeouts import data_redis

log = logging.getLogger(__name__)

#: seconds between two polls of the scheduled-jobs registries
POLL_INTERVAL_S = float(os.environ.get("RQ_SCHEDULER_INTERVAL", "0.2"))
#: TTL of a scheduler lock; a dead scheduler's lock is free again after this many seconds
LOCK_TTL_S = 5
#: seconds between two heartbeats (lock refresh, or another try to take the free locks)
HEARTBEAT_S = 1.0
#: at most one keep-alive heartbeat of the worker itself this often (its key lives 420 s)
WORKER_HEARTBEAT_S = 5.0
#: the longest wait between two connection attempts while Redis is unreachable
MAX_CONNECTION_WAIT_S = 2.0
REDIS_DOWN = (redis.ConnectionError, redis.TimeoutError)


class PreciseScheduledJobRegistry(ScheduledJobRegistry):
    """Due jobs by the exact time, not the current whole second (deadline jobs carry their exact
    deadline as their score: see store/deadlines.py)."""

    def get_jobs_to_schedule(self, timestamp: int | None = None,
                             chunk_size: int = 1000) -> list[str]:
        exact = time.time()
        return [replies.text(j) for j in self.connection.zrangebyscore(
            self.key, 0, max(exact, timestamp or 0), start=0, num=chunk_size)]


class DeadlineScheduler(RQScheduler):
    """RQ's scheduler with a sub-second poll, short-lived locks, standby retries and an exit when
    its worker dies (see the module docstring)."""

    def __init__(self, queues: Any, connection: redis.Redis, *,
                 poll_interval: float = POLL_INTERVAL_S, lock_ttl: int = LOCK_TTL_S,
                 **kwargs: Any) -> None:
        kwargs["interval"] = 1  # RQ derives integer key TTLs (interval + 60) from it
        super().__init__(queues, connection, **kwargs)
        self.poll_interval = poll_interval
        self.lock_ttl = int(lock_ttl)

    def prepare_registries(self, queue_names: Any = None) -> None:
        self._scheduled_job_registries = [
            PreciseScheduledJobRegistry(name, connection=self.connection,
                                        serializer=self.serializer)
            for name in (queue_names or self._acquired_locks)]

    def acquire_locks(self, auto_start: bool = False) -> set[str]:
        """Take or refresh every scheduler lock that is free or already ours."""
        held = {name for name in self._queue_names
                if acquire_or_refresh_lock(self.connection, self.get_locking_key(name),
                                           self.name, self.lock_ttl) != "taken"}
        if held != self._acquired_locks:
            if held - self._acquired_locks:
                self.log.info("Scheduler %s: holds the lock(s) of %s", self.name,
                              ", ".join(sorted(held)))
            self._scheduled_job_registries = []  # rebuilt for the held queues on the next poll
        self._acquired_locks = held
        # naive, as RQ compares it (RQ annotates the attribute as None only)
        self.lock_acquisition_time = datetime.now()  # type: ignore[assignment]
        if held and auto_start and (not self._process or not self._process.is_alive()):
            self.start()
        return held

    def heartbeat(self) -> None:
        self.last_heartbeat = now()
        self.save()
        self.acquire_locks()
        heartbeats.beat(self.connection, heartbeats.DEADLINE_WORKER, self.name)  # /readyz

    def work(self) -> None:
        self._install_signal_handlers()
        parent = os.getppid()
        while not self._stop_requested and os.getppid() == parent:
            try:
                self.register_birth()
                break
            except REDIS_DOWN:  # (RQ's scheduler dies here: rq#2189) wait for Redis instead
                time.sleep(HEARTBEAT_S)
        next_beat = 0.0
        down = False
        while not self._stop_requested:
            if os.getppid() != parent:
                self.log.warning("Scheduler %s: its worker is gone; stopping", self.name)
                break
            try:
                ticked = clock.tick(data_redis(self.connection))
                if ticked.startswith("resumed:"):
                    self.log.warning("Scheduler %s: the service was down; %.1f s credited to "
                                     "every pending turn", self.name, float(ticked[8:]))
                if time.monotonic() >= next_beat:
                    next_beat = time.monotonic() + HEARTBEAT_S
                    self.heartbeat()
                if self._acquired_locks:
                    self.enqueue_scheduled_jobs()
                if down:
                    self.log.warning("Scheduler %s: Redis is back", self.name)
                    down = False
            except REDIS_DOWN as exc:
                if not down:
                    self.log.warning("Scheduler %s: Redis unavailable (%s); retrying",
                                     self.name, exc)
                down = True
                time.sleep(HEARTBEAT_S / 4)
                continue
            time.sleep(self.poll_interval)
        try:
            self.stop()
        except REDIS_DOWN:
            pass


class DeadlineWorker(SimpleWorker):
    scheduler_interval = POLL_INTERVAL_S
    max_connection_wait_time = MAX_CONNECTION_WAIT_S

    def work(self, *args: Any, **kwargs: Any) -> bool:
        # logs as the API's (LOG_FORMAT; RQ's own lines at RQ_LOG_LEVEL: jobs/joblog.py), then
        # refuses a data Redis at another schema version (store/migrate.py)
        from . import joblog
        from .repair import require_schema

        joblog.configure()
        for name in ("rq.worker", "rq.job"):  # the rq CLI's own handlers: ours write instead
            rq_logger = logging.getLogger(name)
            rq_logger.handlers.clear()
            rq_logger.propagate = True
        if kwargs.get("logging_level") is None:
            kwargs["logging_level"] = joblog.rq_level()
        require_schema(data_redis(self.connection))
        return bool(super().work(*args, **kwargs))

    # RQ's loop exits on a connection error outside its dequeue: these steps retry instead.

    def check_for_suspension(self, burst: bool) -> None:
        try:
            super().check_for_suspension(burst)
        except REDIS_DOWN as exc:
            self._redis_down("suspension check", exc)

    def run_maintenance_tasks(self) -> None:
        try:
            super().run_maintenance_tasks()
        except REDIS_DOWN as exc:
            self._redis_down("maintenance", exc)

    def dequeue_job_and_maintain_ttl(self, timeout: int | None,
                                     max_idle_time: int | None = None) -> Any:
        # RQ retries a lost connection only around its blocking pop; the state update before it
        # (HSET of the worker's key) is outside that retry.
        while True:
            try:
                return super().dequeue_job_and_maintain_ttl(timeout, max_idle_time)
            except REDIS_DOWN as exc:
                self._redis_down("dequeue", exc)

    def execute_job(self, job: Any, queue: Any) -> None:
        from .joblog import job_done

        started = time.perf_counter()
        try:
            super().execute_job(job, queue)
        except REDIS_DOWN as exc:  # the job is idempotent; recover() runs what it missed
            self._redis_down(f"job {job.id}", exc)
        finally:
            job_done(job, queue, time.perf_counter() - started)  # its one log line

    def _redis_down(self, what: str, exc: BaseException) -> None:
        self.log.warning("Worker %s: Redis unavailable during %s (%s); going on", self.name,
                         what, exc)
        time.sleep(0.5)

    def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> None:
        # RQ sends three keep-alive heartbeats per job (3 round trips each: half of a deadline
        # job's Redis traffic) to keep a key that lives worker_ttl (420 s): once every
        # WORKER_HEARTBEAT_S is plenty. Heartbeats with a TTL or in a pipeline are RQ's own.
        if (timeout is None and pipeline is None and self.last_heartbeat is not None
                and (now() - self.last_heartbeat).total_seconds() < WORKER_HEARTBEAT_S):
            return
        if pipeline is not None:
            super().heartbeat(timeout, pipeline)
            return
        try:
            super().heartbeat(timeout, pipeline)
        except REDIS_DOWN as exc:
            self._redis_down("heartbeat", exc)

    def _start_scheduler(self, burst: bool = False, logging_level: str | None = "INFO",
                         *args: Any, **kwargs: Any) -> None:
        scheduler = DeadlineScheduler(
            self.queues, connection=self.connection,
            logging_level=logging_level if logging_level is not None else self.log.level,
            serializer=self.serializer, poll_interval=self.scheduler_interval)
        self.scheduler = scheduler
        if burst:  # as RQ: move what is due now, once, if nobody else holds the locks
            if scheduler.acquire_locks():
                try:
                    scheduler.register_birth()
                    scheduler.enqueue_scheduled_jobs()
                finally:
                    scheduler.release_locks()
                    scheduler.register_death()
        else:
            scheduler.start()  # always: it takes the locks itself, now or once they are free

