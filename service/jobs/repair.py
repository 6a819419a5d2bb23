"""The repair pass of a Redis Cluster deployment (``store/cluster.py``): a change whose process
died between its transaction and its effects (index entries, inbox notices, wake-ups, counters,
documents of other slots) left an outbox in its match's (or challenge's, ladder's) slot; this
applies every outbox older than ``OUTBOX_GRACE_S`` (30 s) and drops the status index entries
of matches that have left that status. ``rq cron`` runs it every ``REPAIR_INTERVAL_S`` (60 s)
and ``service.jobs.cron_runner`` once at start-up; on a single Redis this part does nothing
(its transactions hold everything), and the pass only retries failed jobs (below).

Each pass also retries the RQ jobs that failed because Redis went away (a connection refused or
reset, a timeout, a cluster between masters during a failover: :data:`OUTAGE_ERRORS`, read off
the job's last result): they are put back on their queue (``FailedJobRegistry.requeue``), so
the failed-jobs gauge (``ll_rq_queue_depth{state="failed"}``) shows jobs that failed for some
other reason, and falls back once the retried ones are done. Every job of the service is
idempotent (a rating, a ladder pass, a sweep, a repair), so running one again changes nothing
that its first run did."""

from __future__ import annotations

import logging

import redis
from rq import Queue, get_current_job
from rq.exceptions import InvalidJobOperation
from rq.job import Job
from rq.registry import FailedJobRegistry

from ..store import cluster, matches, migrate
from ..store.queues import QUEUES
from .timeouts import _connection

log = logging.getLogger(__name__)


#: the exceptions (as a traceback's last line names them) of a job that failed because Redis
#: went away rather than because of the job: retried by the next pass
OUTAGE_ERRORS = tuple(f"redis.exceptions.{name}" for name in (
    "ConnectionError", "TimeoutError", "ClusterDownError", "MasterDownError", "TryAgainError",
    "SlotNotCoveredError", "ReadOnlyError", "BusyLoadingError"))


def failed_by_outage(exc_string: str | None) -> bool:
    """Whether a failed job's traceback ends in one of :data:`OUTAGE_ERRORS`."""
    lines = [ln for ln in (exc_string or "").splitlines() if ln.strip()]
    return bool(lines) and lines[-1].split(":", 1)[0].strip() in OUTAGE_ERRORS


def retry_outage_failures(q: redis.Redis) -> int:
    """Put back on its queue every failed job of the service's queues that failed because
    Redis went away; returns how many."""
    done = 0
    for name in QUEUES:
        registry = FailedJobRegistry(queue=Queue(name, connection=q))
        for job in Job.fetch_many(registry.get_job_ids(), connection=q):
            if job is None:
                continue
            result = job.latest_result()
            if result is None or not failed_by_outage(result.exc_string):
                continue
            try:
                registry.requeue(job)
            except InvalidJobOperation:  # another pass requeued it meanwhile
                continue
            done += 1
    if done:
        log.warning("repair: %d job(s) that failed while Redis was away queued again", done)
    return done


def run() -> int:
    """One pass; returns the jobs queued again plus the outboxes applied plus the index entries
    dropped."""
    r = _connection()
    job = get_current_job()
    retried = 0 if job is None else retry_outage_failures(job.connection)
    if not cluster.is_cluster(r):
        return retried
    applied = cluster.repair(r)
    dropped = matches.reconcile_status_indexes(r)
    if applied or dropped:
        log.warning("repair: %d outbox(es) of interrupted changes applied, %d stale index "
                    "entries dropped", applied, dropped)
    return retried + applied + dropped


def require_schema(r: redis.Redis) -> None:
    """Refuse to start (``SystemExit`` with the reason) unless the data is at the schema
    version of this code (``store/migrate.py``; ``python -m service.ops.migrate`` migrates).
    A Redis that doesn't answer is not checked here: the process waits for it as it does for
    any outage, and its next start checks."""
    try:
        migrate.require(r)
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        log.warning("schema check skipped, Redis unavailable: %s", exc)
    except migrate.SchemaMismatch as exc:
        raise SystemExit(f"refusing to start: {exc}") from None


def startup() -> None:
    """What cron runs before it serves: the schema check, then the repair pass (a cluster's
    outboxes and status indexes; the failed jobs wait for the first pass run as RQ's job, which
    has RQ's connection)."""
    r = _connection()
    require_schema(r)
    run()
