"""The RQ worker class for deadline jobs: ``rq worker -w service.jobs.worker.DeadlineWorker``.

Why this class: RQ's default worker forks a process per job (tens of ms each) and its scheduler
polls scheduled jobs once a second with whole-second times. Timeout jobs are tiny Redis
compare-and-sets, so this worker runs them in-process (``SimpleWorker``: no fork) and its
scheduler polls every ``RQ_SCHEDULER_INTERVAL`` seconds (0.2 by default), which bounds the
lateness of a deadline by about 1.2 s (the whole-second rounding up, plus one poll)."""

from __future__ import annotations

import os
from typing import Any

from rq.scheduler import RQScheduler
from rq.worker import SimpleWorker

from ..store import deadlines


class DeadlineWorker(SimpleWorker):
    scheduler_interval = float(os.environ.get("RQ_SCHEDULER_INTERVAL", "0.2"))

    def _start_scheduler(self, burst: bool = False, logging_level: str | None = "INFO",
                         *args: Any, **kwargs: Any) -> None:
        # Same as RQ's, with a faster poll (RQScheduler takes `interval`; the CLI doesn't).
        self.scheduler = RQScheduler(
            self.queues, connection=self.connection,
            logging_level=logging_level if logging_level is not None else self.log.level,
            serializer=self.serializer, interval=self.scheduler_interval)
        self.scheduler.acquire_locks()
        if self.scheduler.acquired_locks:
            if burst:
                try:
                    self.scheduler.register_birth()
                    self.scheduler.enqueue_scheduled_jobs()
                finally:
                    self.scheduler.release_locks()
                    self.scheduler.register_death()
            else:
                self.scheduler.start()


QUEUES = [deadlines.QUEUE, "default"]
