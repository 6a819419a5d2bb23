"""The periodic jobs, for ``python -m service.jobs.cron_runner service/jobs/cron.py`` (``rq
cron`` that survives a Redis restart; plain ``rq cron service/jobs/cron.py`` also works):

- ladder.schedule: one scheduling pass per configured ladder, at the ladder's interval_s;
- repair.run: on a Redis Cluster, the effects of changes whose process died mid-way (every
  REPAIR_INTERVAL_S, 60 s; store/cluster.py); nothing on a single Redis;
- challenges.expire: close unanswered challenges past their expiry (every CHALLENGE_SWEEP_S,
  5 s; reads close them too, so this only bounds how late an unread one is announced)."""

import os

from rq import cron

from service.config import ladders_from_env
from service.jobs import challenges, ladder, repair

cron.register(repair.run, "default", interval=int(os.environ.get("REPAIR_INTERVAL_S", "60")))

cron.register(challenges.expire, "default",
              interval=int(os.environ.get("CHALLENGE_SWEEP_S", "5")))

for _lad in ladders_from_env().values():
    cron.register(ladder.schedule, "default", args=(_lad.name,), interval=_lad.interval_s,
                  name=f"ladder-{_lad.name}")
