"""Jobs that failed because Redis went away are queued again by the repair pass
(``service/jobs/repair.py``), so the failed-jobs gauge of ``/metrics`` falls back once they are
done; a job that failed for another reason stays failed (and counted). RQ's own SimpleWorker
runs the jobs here, in the test process, on the session's private Redis; and a real worker
process on a private cluster, whose master is killed under a job, shows the gauge rise and
fall back."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from rq import Queue, SimpleWorker
from rq.job import Job
from rq.registry import FailedJobRegistry

from service.http.metrics import StoreCollector
from service.jobs import repair, timeouts
from service.store import keys, matches
from service.store.docs import MatchDoc
from tests.support.redis_cluster import ClusterStack, find_cluster_tools
from tests.support.redis_proc import RedisProcess
from tests.support.rqproc import RqWorker
from tests.support.stack import wait_for


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


def failed_gauge(client: redis.Redis) -> int:
    """``ll_rq_queue_depth{state="failed"}`` summed over the queues, as ``/metrics`` reads it."""
    return int(sum(s.value for fam in StoreCollector(client).collect()
                   if fam.name == "ll_rq_queue_depth" for s in fam.samples
                   if s.labels["state"] == "failed"))


def test_a_real_outage_raises_the_failed_gauge_and_the_repair_pass_brings_it_back_to_0() -> None:
    """A real worker process on a private 3-master cluster (RQ on a Redis of its own): the
    master holding a deadline's match is killed, so the job settling it fails with the
    cluster's own error and RQ counts it failed; the master comes back and the gauge shows 1
    (a scrape reads the data too); a repair pass runs as ``rq cron`` queues it, and the job,
    queued again, succeeds: the gauge is 0 again."""
    if isinstance(find_cluster_tools(), str):
        pytest.skip("no redis-server/redis-cli with cluster support")
    with ClusterStack(masters=3) as cs:
        c = cs.client()
        with RqWorker(cs.url, env=cs.env) as worker:
            queue = Queue("default", connection=cs.queue_client())
            mid = "m_000000outage"
            port = cs.cluster.master_of(keys.match(mid))
            cs.cluster.kill(port)
            job = queue.enqueue(timeouts.settle, mid)
            failed = FailedJobRegistry(queue=queue)
            wait_for("the job to fail", lambda: failed.count == 1, timeout=60)
            latest = Job.fetch(job.id, connection=cs.queue_client()).latest_result()
            assert latest is not None and repair.failed_by_outage(latest.exc_string), latest
            cs.cluster.revive(port)
            # (the scrape reads the data Redis too: no gauge while a master is missing)
            wait_for("the gauge to show it", lambda: failed_gauge(c) == 1, timeout=30)
            queue.enqueue(repair.run)
            wait_for("the gauge back to 0", lambda: failed_gauge(c) == 0, timeout=60)
            wait_for("the job run again", lambda: Job.fetch(
                job.id, connection=cs.queue_client()).return_value() == "gone", timeout=60)
            assert worker.running
