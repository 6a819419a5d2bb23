"""``rq cron service/jobs/cron.py``: periodic jobs."""

import os

from rq import cron

from service.jobs import timeouts

cron.register(timeouts.recover, "default",
              interval=int(os.environ.get("RECOVERY_INTERVAL_S", "10")))
