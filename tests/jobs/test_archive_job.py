"""The archive job as it runs in production: ``rq cron`` (``service/jobs/cron.py``) queues
``service.jobs.archive.run`` and a real worker process (``python -m service.jobs.worker``) runs
it, again and again. Old finished matches leave Redis for the archive directory once, read the
same afterwards; a match in play or finished within the retention stays. Every job's result
expires: the cron jobs' and a rating job's (RQ's default would keep a failed one a year)."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from rq import Queue
from rq.job import Job, JobStatus
from rq.registry import FinishedJobRegistry

from service import engine
from service.jobs import cron as cron_config
from service.store import archive, keys, matches, players, queues
from service.store.docs import ACTIVE, FINISHED, MatchDoc
from tests.support.redis_proc import RedisProcess
from tests.support.rqproc import RqCron, RqWorker

pytestmark = pytest.mark.timeout(180)

DAY = 86400.0


def respond(doc: MatchDoc, seat: int, now: float) -> dict[str, Any]:
    return {"version": doc.version}


def played(r: redis.Redis, seed: str, *, finish: bool = True, now: float | None = None,
           timeout_s: int = 86400) -> tuple[MatchDoc, list[str]]:
    pids = [players.register(r, f"{seed}-{i}")["id"] for i in range(2)]
    doc = matches.create(r, pids[0], {"ruleset": "classic", "seats": 2, "seed": seed,
                                      "turn_timeout_s": timeout_s}, now=now)
    for pid in pids:
        doc = matches.join(r, doc.id, pid, now=now)
    rng = random.Random(seed)
    while finish and doc.status == ACTIVE:
        assert doc.state is not None
        action = rng.choice(engine.legal_action_dicts(doc.state))
        matches.act(r, doc.id, pids[doc.state.turn], action, respond=respond, now=now)
        doc = matches.load(r, doc.id)
    return doc, pids


def wait_for(what: str, check: Any, within: float = 90.0) -> None:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"not within {within:.0f} s: {what}")


@pytest.fixture
def env(redis_server: RedisProcess, tmp_path: Path) -> dict[str, str]:
    return {"ARCHIVE_DIR": str(tmp_path / "archive"), "MATCH_RETENTION_DAYS": "7",
            "ARCHIVE_INTERVAL_S": "1", "REPAIR_INTERVAL_S": "3600", "CHALLENGE_SWEEP_S": "3600"}


def test_cron_and_a_worker_archive_old_finished_matches_once(
        redis_db: redis.Redis, redis_server: RedisProcess, env: dict[str, str]) -> None:
    r = redis_db
    old = time.time() - 10 * DAY
    due = [played(r, f"job-old-{i}", now=old)[0].id for i in range(3)]
    recent = played(r, "job-recent", now=time.time() - DAY)[0].id
    # begun 10 days ago and still in play: its turn's deadline (20 days on) is not past, so the
    # worker's deadline dispatcher has no timeout to apply that would end it back then
    active = played(r, "job-active", finish=False, now=old, timeout_s=20 * 86400)[0].id
    # read before the worker and cron start: once they run, a pass may archive a match at any
    # moment (a busy run's first pass archived one before the test had read it)
    before = {m: matches.load(r, m).to_json() for m in due}
    with RqWorker(redis_server.url, env=env), RqCron(redis_server.url, env=env):
        archived_and_kept(r, env, due, recent, active, before)


def archived_and_kept(r: redis.Redis, env: dict[str, str], due: list[str], recent: str,
                      active: str, before: dict[str, Any]) -> None:
    wait_for("the old matches archived", lambda: not any(r.exists(keys.match(m)) for m in due))
    arc = archive.Archive(env["ARCHIVE_DIR"])
    assert all(os.path.exists(arc.path(m)) for m in due)
    runs = Queue("default", connection=r)
    registry = FinishedJobRegistry(queue=runs)

    def archive_runs() -> list[Job]:
        return [j for j in Job.fetch_many(registry.get_job_ids(), connection=r)
                if j is not None and j.func_name == "service.jobs.archive.run"]

    wait_for("two more archive runs", lambda: len(archive_runs()) >= 3)
    results = [j.return_value() for j in archive_runs()]
    assert sum(x["archived"] for x in results if x) == 3  # each match once, over every run
    assert r.exists(keys.match(recent)) and r.exists(keys.match(active))
    assert not os.path.exists(arc.path(recent)) and not os.path.exists(arc.path(active))
    archive.attach(r, env["ARCHIVE_DIR"])
    assert {m: matches.load(r, m).to_json() for m in due} == before
    assert matches.load(r, active).status == ACTIVE
    assert matches.load(r, recent).status == FINISHED

    # the cron jobs' results expire, and a failed one's would too
    for job in archive_runs():
        assert job.result_ttl == cron_config.RESULT_TTL_S
        assert job.failure_ttl == cron_config.FAILURE_TTL_S
        assert 0 < r.ttl(job.key) <= cron_config.RESULT_TTL_S


def test_a_rating_job_expires_failed_or_done(
        redis_db: redis.Redis, redis_server: RedisProcess, env: dict[str, str]) -> None:
    """The one job a change queues (a ladder match's rating) carries its TTLs; run by a real
    worker on a match that isn't there, it fails, and its failure expires (RQ's default would
    keep it a year)."""
    r = redis_db
    with RqWorker(redis_server.url, env=env):
        queues.queue_committed(r, [queues.rating("m_00000000abcd")])
        job = Job.fetch("rate-m_00000000abcd", connection=r)
        assert job.result_ttl == 60 and job.failure_ttl == 24 * 3600
        wait_for("the rating job ran", lambda: job.get_status(refresh=True) in (
            JobStatus.FAILED, JobStatus.FINISHED))
    assert 0 < r.ttl(job.key) <= 24 * 3600
