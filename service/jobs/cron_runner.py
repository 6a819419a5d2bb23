"""``python -m service.jobs.cron_runner [--url URL] service/jobs/cron.py``: ``rq cron`` that
survives a Redis restart.

RQ's ``CronScheduler.start`` has no handling for a lost connection: the first ``ConnectionError``
(Redis restarted, a network blip) ends its loop, and the periodic jobs (the ladders' scheduling
passes, the repair pass) would stop for good. This runs RQ's own scheduler, unchanged, and when
its ``start`` ends with a connection error, logs once, waits until Redis answers (trying every
``RETRY_S``) and starts a new scheduler from the same config file; a missed run is made up at
the next pass (every job is idempotent). SIGTERM/SIGINT stop it as they stop ``rq cron``."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time

import redis
from rq.cron import CronScheduler
from rq.exceptions import StopRequested

from ..store import cluster, heartbeats
from . import joblog, repair
from .dispatcher import REDIS_DOWN, wait_for_redis

log = logging.getLogger("service.jobs.cron_runner")

#: seconds between two tries while Redis is unreachable
RETRY_S = 1.0


def run(connection: redis.Redis, config_path: str, logging_level: str = "INFO") -> None:
    """RQ's cron scheduler, started again after each Redis outage; returns when asked to stop
    (RQ's signal handlers raise ``StopRequested``, also while this waits for Redis)."""
    while True:
        cron = CronScheduler(connection=connection, logging_level=logging_level)
        cron.load_config_from_file(config_path)
        try:
            cron.start()  # returns on SIGINT/SIGTERM
            return
        except REDIS_DOWN as exc:
            log.warning("CronScheduler %s: Redis unavailable (%s); retrying every %.0f s",
                        cron.name, exc, RETRY_S)
        try:  # (RQ's signal handlers raise StopRequested while this waits)
            wait_for_redis(connection, threading.Event(), RETRY_S)
        except (KeyboardInterrupt, StopRequested):
            return
        log.warning("CronScheduler: Redis is back; starting again")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="RQ's Redis (default: QUEUE_REDIS_URL, else REDIS_URL)",
                    default=os.environ.get("QUEUE_REDIS_URL") or os.environ.get("REDIS_URL")
                    or "redis://127.0.0.1:6379/0")
    ap.add_argument("--path", default=None, help="added to sys.path (as rq cron --path)")
    ap.add_argument("--logging-level", default=None,
                    help="RQ's own log level (default: RQ_LOG_LEVEL, else WARNING)")
    ap.add_argument("config_path")
    args = ap.parse_args(argv)
    if args.path:
        sys.path.insert(0, args.path)
    joblog.configure()  # LOG_FORMAT (json: one object per line), as the API and the worker
    args.logging_level = (args.logging_level or joblog.rq_level()).upper()
    logging.getLogger("rq").setLevel(args.logging_level)
    try:
        repair.startup()  # refuses data of another schema version; a cluster's outboxes
    except REDIS_DOWN as exc:
        logging.getLogger(__name__).warning("start-up repair skipped, Redis down: %s", exc)
    # RQ's Redis, with the data timeouts (store/sockets.py; a Sentinel URL too): cron never
    # blocks on a pop, so a stalled Redis fails its commands after a second
    connection = cluster.connect(args.url)
    threading.Thread(target=_beat, args=(connection,), name="cron-heartbeat",
                     daemon=True).start()
    run(connection, args.config_path, args.logging_level)
    return 0


#: how often cron says it is alive (``/readyz`` wants one within READY_MAX_AGE_S, 15 s)
BEAT_S = 2.0


def _beat(connection: redis.Redis) -> None:
    """The cron process's heartbeat for ``/readyz`` (store/heartbeats.py), while it runs."""
    name = f"cron-{os.uname().nodename}-{os.getpid()}"
    while True:
        try:
            heartbeats.beat(connection, heartbeats.CRON, name)
        except REDIS_DOWN:
            pass  # an outage: readiness says so
        time.sleep(BEAT_S)


if __name__ == "__main__":
    sys.exit(main())
