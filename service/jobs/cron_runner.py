"""``python -m service.jobs.cron_runner [--url URL] service/jobs/cron.py``: ``rq cron`` that
survives a Redis restart.

RQ's ``CronScheduler.start`` has no handling for a lost connection: the first ``ConnectionError``
(Redis restarted, a network blip) ends the loop and the process, and the periodic jobs (deadline
recovery, the ladders' scheduling passes) stop for good. :class:`ResilientCronScheduler` runs the
same loop with the same jobs and registry entries, and on a connection error logs once, waits
``RETRY_S`` and tries again; a missed run is made up at the next pass (every job is
idempotent)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

import redis
from rq.cron import CronScheduler
from rq.exceptions import StopRequested

from ..store import cluster, heartbeats
from . import joblog, repair

log = logging.getLogger("service.jobs.cron_runner")

REDIS_DOWN = (redis.ConnectionError, redis.TimeoutError)
#: seconds between two tries while Redis is unreachable
RETRY_S = 1.0
#: the longest sleep between two passes (each pass sends a heartbeat: store/heartbeats.py)
BEAT_S = 5.0


class ResilientCronScheduler(CronScheduler):
    def start(self) -> None:
        self.log.info("CronScheduler %s: starting...", self.name)
        self._install_signal_handlers()
        down = False
        registered = False
        try:
            while True:
                try:
                    if not registered:
                        self.register_birth()
                        registered = True
                    if self.enqueue_jobs():
                        self.save()
                    self.heartbeat()
                    heartbeats.beat(self.connection, heartbeats.CRON, self.name)  # /readyz
                    if down:
                        self.log.warning("CronScheduler %s: Redis is back", self.name)
                        down = False
                except REDIS_DOWN as exc:
                    if not down:
                        self.log.warning("CronScheduler %s: Redis unavailable (%s); retrying "
                                         "every %.0f s", self.name, exc, RETRY_S)
                    down = True
                    time.sleep(RETRY_S)
                    continue
                # wake at least every BEAT_S: the heartbeat must stay fresh even when every
                # job's interval is longer
                sleep_time = min(self.calculate_sleep_interval(), BEAT_S)
                if sleep_time > 0:
                    time.sleep(sleep_time)
        except (KeyboardInterrupt, StopRequested):
            self.log.info("CronScheduler %s: stop requested", self.name)
        finally:
            try:
                self.register_death()
            except REDIS_DOWN:
                pass
            self.log.info("CronScheduler %s: shutdown complete", self.name)


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
        repair.startup()  # migrations (single Redis), repair pass (cluster)
    except REDIS_DOWN as exc:
        logging.getLogger(__name__).warning("start-up repair skipped, Redis down: %s", exc)
    # RQ's Redis, with the data timeouts (store/sockets.py): cron never blocks on a pop, so a
    # stalled Redis fails its commands after a second and the loop tries again
    cron = ResilientCronScheduler(connection=cluster.connect(args.url),
                                  logging_level=args.logging_level)
    cron.load_config_from_file(args.config_path)
    cron.start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
