"""The repair pass of a Redis Cluster deployment (``store/cluster.py``): a change whose process
died between its transaction and its effects (index entries, inbox notices, wake-ups, counters,
documents of other slots) left an outbox in its match's (or challenge's, ladder's) slot; this
applies every outbox older than ``OUTBOX_GRACE_S`` (30 s) and drops the status index entries
of matches that have left that status. ``rq cron`` runs it every ``REPAIR_INTERVAL_S`` (60 s)
and ``service.jobs.cron_runner`` once at start-up; on a single Redis it does nothing (its
transactions hold everything)."""

from __future__ import annotations

import logging

import redis

from ..store import cluster, matches, migrate
from .timeouts import _connection

log = logging.getLogger(__name__)


def run() -> int:
    """One pass; returns the outboxes applied plus the index entries dropped."""
    r = _connection()
    if not cluster.is_cluster(r):
        return 0
    applied = cluster.repair(r)
    dropped = matches.reconcile_status_indexes(r)
    if applied or dropped:
        log.warning("repair: %d outbox(es) of interrupted changes applied, %d stale index "
                    "entries dropped", applied, dropped)
    return applied + dropped


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
    """What cron runs before it serves: the schema check, then the repair pass (a cluster)."""
    r = _connection()
    require_schema(r)
    run()
