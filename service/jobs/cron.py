"""The periodic jobs, for ``python -m service.jobs.cron_runner service/jobs/cron.py`` (``rq
cron`` that survives a Redis restart; plain ``rq cron service/jobs/cron.py`` also works):

- ladder.schedule: one scheduling pass per configured ladder, at the ladder's interval_s;
- repair.run: every REPAIR_INTERVAL_S (60 s), on any Redis, queues again the jobs that failed
  because Redis went away (jobs/repair.py); on a Redis Cluster it also applies the effects of
  changes whose process died mid-way and drops stale status index entries (store/cluster.py);
- challenges.expire: close unanswered challenges past their expiry (every CHALLENGE_SWEEP_S,
  5 s; reads close them too, so this only bounds how late an unread one is announced);
- archive.run: finished matches older than MATCH_RETENTION_DAYS out of Redis into ARCHIVE_DIR
  (every ARCHIVE_INTERVAL_S, 300 s; ARCHIVE_BATCH matches a run at most).

Every job's result expires (RESULT_TTL_S, 60 s: a result is only for inspection, and a pass every
5 s would otherwise keep hundreds), and a failed one's after FAILURE_TTL_S (7 days: long enough
to look at, never kept for RQ's default of a year)."""

import os

from rq import cron

from service.config import ladders_from_env
from service.jobs import archive, challenges, ladder, repair

RESULT_TTL_S = 60
FAILURE_TTL_S = 7 * 24 * 3600

cron.register(repair.run, "default", interval=int(os.environ.get("REPAIR_INTERVAL_S", "60")),
              result_ttl=RESULT_TTL_S, failure_ttl=FAILURE_TTL_S)

cron.register(challenges.expire, "default",
              interval=int(os.environ.get("CHALLENGE_SWEEP_S", "5")), result_ttl=RESULT_TTL_S,
              failure_ttl=FAILURE_TTL_S)

cron.register(archive.run, "default", interval=int(os.environ.get("ARCHIVE_INTERVAL_S", "300")),
              job_timeout=600, result_ttl=RESULT_TTL_S, failure_ttl=FAILURE_TTL_S)

for _lad in ladders_from_env().values():
    cron.register(ladder.schedule, "default", args=(_lad.name,), interval=_lad.interval_s,
                  name=f"ladder-{_lad.name}", result_ttl=RESULT_TTL_S, failure_ttl=FAILURE_TTL_S)
