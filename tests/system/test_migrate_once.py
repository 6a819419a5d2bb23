"""Migrations run once (service/ops/migrate.py, service/store/migrate.py): ``python -m
service.ops.migrate`` brings a Redis from before versions were recorded to the current schema
and stamps it; the API (gunicorn), the deadline worker and cron refuse to start against an older
or a newer schema with a message that says what to do, and start once it is current."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import redis

from service.store import keys, migrate
from tests.support.redis_proc import RedisProcess
from tests.support.rqproc import RqCron, RqProcess, RqWorker
from tests.support.server import REPO, ApiServer

MIGRATE_HINT = "python -m service.ops.migrate"


@pytest.fixture
def fresh() -> Iterator[RedisProcess]:
    with RedisProcess() as rp:
        yield rp


def _cli(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "QUEUE_REDIS_URL"}
    env["REDIS_URL"] = url
    return subprocess.run([sys.executable, "-m", "service.ops.migrate", *args], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=60, check=False)


def _legacy(r: redis.Redis) -> None:
    """Data of a release from before the ladder hash tag and before versions were recorded."""
    r.zadd("ll:lad:duel:entries", {"p_000000000001": 10.0})
    r.set(keys.player("p_000000000001"), "{}")


def _exits(proc: RqProcess | ApiServer, timeout: float = 30.0) -> int:
    assert proc.proc is not None
    try:
        return proc.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still running:\n{proc.log_text()[-3000:]}") from None


def test_the_cli_migrates_a_legacy_redis_once_and_reports(fresh: RedisProcess) -> None:
    r = fresh.client()
    _legacy(r)
    check = _cli(fresh.url, "--check")
    assert check.returncode == 1 and f"schema version 0 (this code: {migrate.CURRENT})" in check.stdout
    done = _cli(fresh.url)
    assert done.returncode == 0, done.stderr
    assert "ladder-tags" in done.stdout and f"now at {migrate.CURRENT}" in done.stdout
    assert r.zscore(keys.ladder_entries("duel"), "p_000000000001") == 10.0
    assert migrate.stored_version(r) == migrate.CURRENT
    again = _cli(fresh.url)
    assert again.returncode == 0 and "applied" not in again.stdout  # once
    assert _cli(fresh.url, "--check").returncode == 0


def test_the_cli_refuses_a_newer_schema(fresh: RedisProcess) -> None:
    r = fresh.client()
    migrate.stamp(r, migrate.CURRENT + 1)
    done = _cli(fresh.url)
    assert done.returncode == 1 and "newer than this code" in done.stderr
    assert migrate.stored_version(r) == migrate.CURRENT + 1


@pytest.mark.parametrize("found", ["older", "newer"])
def test_api_worker_and_cron_refuse_another_schema(fresh: RedisProcess, found: str) -> None:
    r = fresh.client()
    if found == "older":
        _legacy(r)
    else:
        migrate.stamp(r, migrate.CURRENT + 1)
    hint = MIGRATE_HINT if found == "older" else "newer than this code"
    api = ApiServer(fresh.url, migrate=False, startup_timeout=120)
    try:
        with pytest.raises(RuntimeError, match="exited with code 3"):
            api.start()
        assert "refusing to start" in api.log_text() and hint in api.log_text()
    finally:
        api.close()
    for proc in (RqWorker(fresh.url, migrate=False), RqCron(fresh.url, migrate=False)):
        try:
            proc.proc = None
            RqProcess.start(proc)
            assert _exits(proc) != 0
            log = proc.log_text()
            assert "refusing to start" in log and hint in log, log
        finally:
            proc.close()
    # nothing was changed by the refusals
    assert migrate.stored_version(r) == (None if found == "older" else migrate.CURRENT + 1)


def test_after_the_migration_every_process_starts(fresh: RedisProcess) -> None:
    r = fresh.client()
    _legacy(r)
    assert _cli(fresh.url).returncode == 0
    env = dict(os.environ, REDIS_URL=fresh.url)
    with ApiServer(fresh.url, migrate=False), RqWorker(fresh.url, migrate=False), \
            RqCron(fresh.url, migrate=False) as cron:
        end = time.monotonic() + 60
        while True:
            probe = subprocess.run([sys.executable, "-m", "service.ops.healthcheck", "cron"],
                                   cwd=REPO, env=env, capture_output=True, timeout=30,
                                   check=False)
            if probe.returncode == 0:
                break
            assert cron.running and time.monotonic() < end, cron.log_text()[-3000:]
            time.sleep(0.3)
