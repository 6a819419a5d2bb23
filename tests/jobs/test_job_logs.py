"""The deadline worker's logs (service/jobs/joblog.py): with ``LOG_FORMAT=json`` every line is
one JSON object, each job the worker runs is ONE line with its duration, and RQ's own INFO
lines are quiet by default (``RQ_LOG_LEVEL=WARNING``). A job that failed because Redis went away
is one WARNING line without a traceback (the repair pass queues it again); a job's own bug keeps
RQ's ERROR line with its traceback."""

from __future__ import annotations

import json
import time

import redis
from rq import Queue

from tests.support.redis_proc import RedisProcess
from tests.support.rqproc import RqWorker


def _lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_the_worker_logs_one_json_line_per_job_with_its_duration_and_rq_stays_quiet(
        redis_db: redis.Redis, redis_server: RedisProcess) -> None:
    env = {"LOG_FORMAT": "json", "RQ_LOG_LEVEL": "WARNING"}
    worker = RqWorker(redis_server.url, env=env)
    worker.start(wait_ready=False)  # (RQ at WARNING: no "Listening on" to wait for)
    try:
        q = Queue("default", connection=redis_db)
        jobs = [q.enqueue("service.jobs.challenges.expire") for _ in range(3)]
        end = time.monotonic() + 60
        done: list[dict[str, object]] = []
        while time.monotonic() < end and len(done) < len(jobs):
            assert worker.running, worker.log_text()[-3000:]
            done = [d for d in _lines(worker.log_text()) if d.get("msg") == "job"]
            time.sleep(0.2)
        lines = _lines(worker.log_text())  # every line parses as JSON
    finally:
        worker.close()
    assert sorted(str(d["job_id"]) for d in done) == sorted(j.id for j in jobs)
    for d in done:
        assert d["job"] == "service.jobs.challenges.expire" and d["status"] == "finished"
        assert d["queue"] == "default" and isinstance(d["duration_ms"], float)
        assert d["logger"] == "service.jobs.run" and d["level"] == "info"
    # RQ's own INFO lines (3-4 per job: "default: ... (id)", "Job OK", "Listening on ...")
    assert not [d for d in lines if str(d.get("logger", "")).startswith("rq.")
                and d["level"] == "info"], lines


def test_a_job_cut_short_by_redis_is_one_warning_and_a_bug_keeps_its_traceback(
        redis_db: redis.Redis, redis_server: RedisProcess) -> None:
    """(A busy run: a ladder pass running as a data stall began logged RQ's traceback, which
    the stall test counts as an unhandled error.)"""
    worker = RqWorker(redis_server.url, env={"LOG_FORMAT": "json", "RQ_LOG_LEVEL": "WARNING"})
    worker.start(wait_ready=False)
    try:
        q = Queue("default", connection=redis_db)
        outage = q.enqueue("tests.support.jobfuncs.redis_went_away")
        bug = q.enqueue("tests.support.jobfuncs.a_bug")
        end = time.monotonic() + 60
        while time.monotonic() < end and not all(
                j.get_status(refresh=True) == "failed" for j in (outage, bug)):
            assert worker.running, worker.log_text()[-3000:]
            time.sleep(0.2)
        time.sleep(0.5)  # (the log lines follow the status)
        lines = _lines(worker.log_text())
    finally:
        worker.close()
    assert outage.get_status() == "failed" and bug.get_status() == "failed"
    about = {j.id: [d for d in lines if j.id in json.dumps(d)] for j in (outage, bug)}
    warned = [d for d in about[outage.id] if d["level"] == "warning"]
    assert len(warned) == 1 and "Redis unavailable" in str(warned[0]["msg"]), about[outage.id]
    assert "Traceback" not in json.dumps(about[outage.id])
    assert not [d for d in about[outage.id] if d["level"] == "error"], about[outage.id]
    # the repair pass tells it by the job's stored result, which RQ still wrote
    assert "redis.exceptions.TimeoutError" in str(outage.latest_result().exc_string)
    errors = [d for d in about[bug.id] if d["level"] == "error"]
    assert errors and "Traceback" in json.dumps(errors) and "a bug in a job" in json.dumps(errors)
