"""Jobs that failed because Redis went away are queued again by the repair pass
(``service/jobs/repair.py``), so the failed-jobs gauge of ``/metrics`` falls back once they are
done; a job that failed for another reason stays failed (and counted). RQ's own SimpleWorker
runs the jobs here, in the test process, on the session's private Redis."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from rq import Queue, SimpleWorker
from rq.job import Job
from rq.registry import FailedJobRegistry

from service.jobs import repair, timeouts
from service.store import matches
from service.store.docs import MatchDoc
from tests.support.redis_proc import RedisProcess


def test_jobs_failed_by_an_outage_are_queued_again_and_others_stay_failed(
        redis_db: redis.Redis, redis_server: RedisProcess,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_URL", redis_server.url)  # the jobs' data Redis
    q = redis_db  # RQ's Redis: the data Redis itself on a single Redis
    queue = Queue("default", connection=q)
    real_expire = matches.expire

    def failing(r: redis.Redis, mid: str, **kwargs: Any) -> MatchDoc:
        if mid == "m_outage":
            raise redis.ConnectionError("Connection refused (the test's outage)")
        raise ValueError("a bug")

    monkeypatch.setattr(matches, "expire", failing)
    outage = queue.enqueue(timeouts.settle, "m_outage")
    bug = queue.enqueue(timeouts.settle, "m_bug")
    SimpleWorker([queue], connection=q).work(burst=True)
    failed = FailedJobRegistry(queue=queue)
    assert sorted(failed.get_job_ids()) == sorted([outage.id, bug.id])

    assert repair.retry_outage_failures(q) == 1
    assert failed.get_job_ids() == [bug.id]  # a bug is no outage: still failed, still counted
    assert queue.get_job_ids() == [outage.id]
    assert repair.retry_outage_failures(q) == 0  # nothing more to queue

    monkeypatch.setattr(matches, "expire", real_expire)  # Redis is back
    SimpleWorker([queue], connection=q).work(burst=True)
    assert Job.fetch(outage.id, connection=q).return_value() == "gone"  # (no such match)
    assert failed.get_job_ids() == [bug.id]


@pytest.mark.parametrize(("text", "outage"), [
    ("Traceback ...\nredis.exceptions.ConnectionError: Error 111 connecting", True),
    ("Traceback ...\nredis.exceptions.TimeoutError: Timeout reading from socket\n", True),
    ("Traceback ...\nredis.exceptions.ClusterDownError: CLUSTERDOWN The cluster is down", True),
    ("Traceback ...\nredis.exceptions.ResponseError: WRONGTYPE Operation", False),
    ("Traceback ...\nValueError: redis.exceptions.ConnectionError", False),
    ("", False),
    (None, False),
])
def test_what_counts_as_an_outage(text: str | None, outage: bool) -> None:
    assert repair.failed_by_outage(text) is outage
