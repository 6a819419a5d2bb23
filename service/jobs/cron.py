"""``rq cron service/jobs/cron.py``: the periodic jobs.

- timeouts.recover: overdue deadlines whose job was lost (every RECOVERY_INTERVAL_S, 10 s);
- ladder.schedule: one scheduling pass per configured ladder, at the ladder's interval_s."""

import os

from rq import cron

from service.config import ladders_from_env
from service.jobs import ladder, timeouts

cron.register(timeouts.recover, "default",
              interval=int(os.environ.get("RECOVERY_INTERVAL_S", "10")))

for _lad in ladders_from_env().values():
    cron.register(ladder.schedule, "default", args=(_lad.name,), interval=_lad.interval_s,
                  name=f"ladder-{_lad.name}")
