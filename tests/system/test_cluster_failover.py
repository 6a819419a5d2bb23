"""A Redis Cluster master dies while matches are played: its replica is promoted, no move
that was acknowledged is lost, and no deadline is lost or applied twice (the second test).

A private cluster of 3 masters with a replica each (tests/support/redis_cluster.py, node timeout
2 s); the store's client asks every transaction to reach one replica before it counts
(``?wait_replicas=1``, store/cluster.py), and never re-sends a transaction after a connection
error (the WATCH died with the connection). Nine threads play matches (a new one when one ends),
each move with ``expected_version`` and an Idempotency-Key; a move counts as acknowledged when
``act`` returned. The master of most matches in play is SIGKILLed mid-play, just after its
replica lost its link and stalled (so that its last writes are not replicated: without the WAIT,
this test lost acknowledged moves in 2 of 3 runs); the threads go on through the failover (an
error is answered by reading the match again) until each has moved again after it. Then every
match's document holds at least every version acknowledged for it."""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections import Counter
from typing import Any

import pytest
import redis
import requests
from redis.exceptions import RedisClusterException

from service import engine
from service.store import cluster, keys, matches, players
from service.store.docs import ACTIVE, FINISHED, MatchDoc
from service.store.errors import StoreError
from tests.support.ladderbots import timeouts_of
from tests.support.redis_cluster import RedisCluster, find_cluster_tools
from tests.support.redis_proc import RedisProcess
from tests.support.rqproc import RqCron, RqWorker
from tests.support.server import ApiServer
from tests.support.stack import wait_for

pytestmark = pytest.mark.timeout(300)


def respond(doc: MatchDoc, seat: int, now: float) -> dict[str, Any]:
    return {"version": doc.version}


def test_a_master_killed_mid_play_loses_no_acknowledged_move() -> None:
    tools = find_cluster_tools()
    if isinstance(tools, str):
        pytest.skip(tools)
    with RedisCluster(masters=3, replicas=1) as rc, RedisProcess() as q:
        url = rc.url + "?wait_replicas=1&wait_timeout_ms=1000"
        tag = random.getrandbits(32)
        acked: dict[str, int] = {}  # match id -> the highest version acknowledged
        homes: list[str] = []  # every match played, in order
        current: dict[int, str] = {}  # thread -> the match it plays now
        after_failover: Counter[int] = Counter()  # thread -> moves acknowledged after it
        errors: Counter[str] = Counter()
        failed_over = threading.Event()
        stop = threading.Event()
        lock = threading.Lock()

        def new_match(c: redis.Redis, pids: list[str]) -> str:
            while True:  # (a failover may interrupt this too)
                try:
                    doc = matches.create(c, pids[0], {"ruleset": "classic", "seats": 2,
                                                      "turn_timeout_s": 3600})
                    for pid in pids:
                        doc = matches.join(c, doc.id, pid)
                    with lock:
                        homes.append(doc.id)
                    return doc.id
                except (redis.RedisError, RedisClusterException, StoreError, OSError) as e:
                    with lock:
                        errors[type(e).__name__] += 1
                    time.sleep(0.05)

        def play(i: int) -> None:
            c = cluster.connect(url, queue=q.url)
            rng = random.Random(i)
            pids = [players.register(c, f"f{i}x{s}-{tag:x}")["id"] for s in range(2)]
            mid = current[i] = new_match(c, pids)
            while not stop.is_set():
                try:
                    d = matches.load(c, mid)
                    if d.status != ACTIVE:
                        mid = current[i] = new_match(c, pids)
                        continue
                    assert d.state is not None
                    action = dict(rng.choice(engine.legal_action_dicts(d.state)))
                    out = matches.act(c, mid, pids[d.state.turn], action, respond=respond,
                                      expected_version=d.version,
                                      idempotency_key=f"{mid}-{d.version}")
                    with lock:
                        acked[mid] = max(acked.get(mid, 0), int(out["version"]))
                        if failed_over.is_set():
                            after_failover[i] += 1
                except (redis.RedisError, RedisClusterException, StoreError, OSError) as e:
                    with lock:
                        errors[getattr(e, "code", type(e).__name__)] += 1
                    if isinstance(e, StoreError) and e.code == "not_found":
                        mid = current[i] = new_match(c, pids)  # (lost: counted below)
                    time.sleep(0.05)
                time.sleep(0.02)

        n = 9
        threads = [threading.Thread(target=play, args=(i,), daemon=True) for i in range(n)]
        for t in threads:
            t.start()
        end = time.monotonic() + 20
        while len(acked) < n and time.monotonic() < end:
            time.sleep(0.05)
        time.sleep(0.5)
        with lock:  # the master of most matches in play
            victim = Counter(rc.master_of(keys.match(m)) for m in current.values()).most_common(
                1)[0][0]
            before = sum(acked.values())
        # Its replica loses its link first and stalls (DEBUG SLEEP, so it can't catch up): the
        # master's last writes are not replicated when it dies, as when a master dies while its
        # replica lags. Without the WAIT (``?wait_replicas=0``) this test lost acknowledged moves, and
        # whole matches, in 2 of 3 runs.
        replica = rc.replica_of(victim)
        stall = threading.Thread(target=lambda: rc.node(replica).execute_command(
            "DEBUG", "SLEEP", "1.0"), daemon=True)
        stall.start()
        time.sleep(0.05)
        rc.node(victim).client_kill_filter(_type="replica")
        time.sleep(0.5)
        rc.kill(victim)
        stall.join()
        rc.wait_failover(victim)
        failed_over.set()
        # Until a replica is back, the promoted master's shard can't acknowledge a write
        # (WAIT 1 finds none: those moves fail, unapplied or not acknowledged); the dead node,
        # restarted, rejoins as its replica.
        rc.revive(victim)
        end = time.monotonic() + 20  # every player moves on after the failover
        while len(after_failover) < n and time.monotonic() < end:
            time.sleep(0.05)
        time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join(timeout=30)
        assert before > 0, "moves were acknowledged before the kill"
        assert len(after_failover) == n, (errors, after_failover, "a player never moved again")
        on_victim = [m for m in homes if rc.master_of(keys.match(m)) != victim]
        assert on_victim  # (every slot has a live master again)
        fresh = cluster.connect(rc.url, queue=q.url)  # every node listed: any may be down
        now = {mid: matches.peek_version(fresh, mid) for mid in acked}  # -1: the match is gone
        lost = {mid: (v, now[mid]) for mid, v in acked.items() if now[mid] < v}
        print(f"{len(homes)} matches, {sum(acked.values())} versions acknowledged, "
              f"{sum(after_failover.values())} moves after the failover; errors: {dict(errors)}")
        assert not lost, f"acknowledged versions lost: {lost} (errors: {errors})"


# --------------------------------------------------------------------------- deadlines


T = 1  # the idle matches' turn clock
IDLE_MATCHES = 12
STACK_ENV = {"LADDERS": "[]", "RATE_LIMITS": "0", "METRICS_OPEN": "1",
             # the repair pass (jobs that failed while Redis was away are queued again) and
             # the challenge sweep (a job on the data Redis every second) often, to see both
             "REPAIR_INTERVAL_S": "2", "CHALLENGE_SWEEP_S": "1"}
IDLE = {"ruleset": "classic", "seats": 2, "turn_timeout_s": T, "timeout_policy": "auto",
        "max_timeouts": 1000, "tokens_to_win": 20, "first_seat": 0}


def failed_jobs(api_url: str) -> int | None:
    """The failed-jobs gauge of ``/metrics``, summed over the queues (None: no answer)."""
    try:
        resp = requests.get(api_url + "/metrics", timeout=5)
    except requests.RequestException:
        return None
    if resp.status_code != 200:
        return None
    total = 0
    for line in resp.text.splitlines():
        if line.startswith("ll_rq_queue_depth{") and 'state="failed"' in line:
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


def test_a_master_failing_over_under_deadline_load_loses_and_doubles_no_timeout() -> None:
    """The whole stack (gunicorn, the worker with its deadline dispatcher, ``rq cron``) on the
    cluster with a replica per master (``?wait_replicas=1``), RQ on a Redis of its own. Twelve
    matches whose players never move time out every second; the master that holds the deadline
    index (every claim of the dispatcher goes there) is SIGKILLed and its replica takes over.

    - no deadline lost: every match goes on timing out, and none is left overdue;
    - no move doubled: every version of a match since its joins is one timeout, and no history
      seen during the test (a watcher reads every match all along) was rewritten later;
    - the failed-jobs gauge of ``/metrics`` is 0 at the end: jobs that failed while the slots
      moved were queued again by the repair pass and done (deadlines make no RQ job at all)."""
    tools = find_cluster_tools()
    if isinstance(tools, str):
        pytest.skip(tools)
    with RedisCluster(masters=3, replicas=1) as rc, RedisProcess() as q:
        url = rc.url + "?wait_replicas=1&wait_timeout_ms=1000"
        env = {**STACK_ENV, "QUEUE_REDIS_URL": q.url}
        api = ApiServer(url, env=env)
        worker = RqWorker(url, env=env)
        cron = RqCron(url, env=env)
        c = cluster.connect(url, queue=q.url)
        stop = threading.Event()
        seen: dict[str, list[list[dict[str, Any]]]] = {}  # match -> every event log read
        max_failed = 0
        try:
            api.start()
            worker.start()
            cron.start()
            tag = random.getrandbits(32)
            joined: dict[str, int] = {}
            for i in range(IDLE_MATCHES):
                pids = [players.register(c, f"d{i}x{s}-{tag:x}")["id"] for s in range(2)]
                doc = matches.create(c, pids[0], dict(IDLE))
                for pid in pids:
                    doc = matches.join(c, doc.id, pid)
                joined[doc.id] = doc.version
                seen[doc.id] = []
            victim = rc.master_of(keys.DEADLINES)
            on_victim = [m for m in joined if rc.master_of(keys.match(m)) == victim]

            def load(mid: str) -> MatchDoc | None:
                try:
                    return matches.load(c, mid)
                except (redis.RedisError, RedisClusterException, OSError):
                    return None  # the failover

            def watch() -> None:
                while not stop.is_set():
                    for mid in joined:
                        doc = load(mid)
                        if doc is not None and doc.state is not None:
                            seen[mid].append([e.to_dict() for e in doc.state.events])
                    time.sleep(0.2)

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()

            def timeouts(mid: str) -> int:
                doc = load(mid)
                return -1 if doc is None else len(timeouts_of(doc))

            wait_for("two timeouts in every match", lambda: all(
                timeouts(m) >= 2 for m in joined), timeout=60)
            at_kill = {m: timeouts(m) for m in joined}
            rc.kill(victim)
            gauge_during: list[int] = []
            rc.wait_failover(victim)
            gauge_during.append(failed_jobs(api.url) or 0)
            # until it is back as the replica of the promoted master, that shard acknowledges
            # no change (WAIT 1 finds no replica): its matches' settles fail and are retried
            rc.revive(victim)

            def went_on(m: str) -> bool:
                doc = load(m)
                return doc is not None and (doc.status == FINISHED or
                                            len(timeouts_of(doc)) >= at_kill[m] + 3)

            wait_for("three more timeouts in every match after the failover", lambda: all(
                went_on(m) for m in joined), timeout=120, every=0.5)

            def none_overdue() -> bool:
                now = time.time()
                docs = [load(m) for m in joined]
                return all(d is not None and (d.deadline is None or d.deadline > now - 0.5)
                           for d in docs)

            wait_for("no deadline left overdue", none_overdue, timeout=30, every=0.1)
            stop.set()
            watcher.join(timeout=30)

            for mid, v0 in joined.items():
                doc = matches.load(c, mid)
                assert doc.state is not None
                # nobody moves: every version since the joins is one timeout, applied once
                assert len(timeouts_of(doc)) == doc.version - v0, (mid, doc.version, v0)
                final = [e.to_dict() for e in doc.state.events]
                for events in seen[mid]:  # what anyone read is still there, unchanged
                    assert final[:len(events)] == events, (mid, len(events), len(final))

            def gauge_zero() -> bool:
                nonlocal max_failed
                n = failed_jobs(api.url)
                if n is not None:
                    max_failed = max(max_failed, n)
                return n == 0

            wait_for("the failed-jobs gauge back to 0", gauge_zero, timeout=60, every=0.5)
            print(f"{len(joined)} matches ({len(on_victim)} on the killed master, which held "
                  f"the deadline index); failed jobs seen: {max(gauge_during + [max_failed])}")
            assert api.running and worker.running and cron.running
            logs = {"api": api.log_text(), "worker": worker.log_text(), "cron": cron.log_text()}
        finally:
            stop.set()
            c.close()
            cron.close()
            worker.close()
            api.close()
    for name, text in logs.items():
        for trace in unexpected_tracebacks(text):
            raise AssertionError(f"{name} logged an error:\n{trace}")


# What a job or the dispatcher may meet while a master fails over: the job fails and is retried
# (the repair pass), the settle keeps its lease and runs again; the assertions above prove
# nothing was lost or doubled. A traceback that ends in anything else is a bug. Judged by the
# exception a traceback ends with (a chain's first links are often the socket's own
# ConnectionRefusedError that redis-py wraps in its ConnectionError).
FAILOVER_ERRORS = frozenset({
    "ConnectionError", "TimeoutError", "ClusterDownError", "TryAgainError", "ReadOnlyError",
    "SlotNotCoveredError", "MasterDownError", "ClusterError", "MovedError", "AskError",
    "RedisClusterException", "ConnectionRefusedError", "ConnectionResetError",
    "BrokenPipeError"})

_EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")
_CHAINED = ("During handling of the above exception", "The above exception was the direct cause")


def final_exceptions(trace: str) -> list[str]:
    """The class names of the exceptions a traceback text ends with, one per traceback in it
    (a chained traceback counts once, by its last exception).

    >>> final_exceptions("Traceback (most recent call last):\\n  File x\\nOSError: no\\n\\n"
    ...     "During handling of the above exception, another exception occurred:\\n\\n"
    ...     "Traceback (most recent call last):\\n  File y\\nredis.exceptions.ConnectionError: z")
    ['ConnectionError']
    """
    lines = [x for x in trace.splitlines() if x.strip()]
    names = []
    in_trace = False
    for i, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last)"):
            in_trace = True
            continue
        if not in_trace or line.startswith(" "):
            continue  # outside a traceback, or one of its frames
        in_trace = False
        m = _EXC_LINE.match(line)
        if i + 1 < len(lines) and lines[i + 1].startswith(_CHAINED):
            continue  # a link in a chain: the exception that ends the chain is judged
        names.append(m.group(1).rsplit(".", 1)[-1] if m else line[:80])
    return names


def unexpected_tracebacks(text: str) -> list[str]:
    """Each traceback in a process log that ends in an exception not in FAILOVER_ERRORS (a JSON
    log line holds its traceback in a field; a plain line's traceback follows it)."""
    found = []
    plain = []
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            plain.append(line)
            continue
        if not isinstance(rec, dict):
            continue
        for value in rec.values():  # ``exc``, or a message that quotes one (RQ's job failure)
            if isinstance(value, str) and "Traceback" in value and any(
                    n not in FAILOVER_ERRORS for n in final_exceptions(value)):
                found.append(value)
    rest = "\n".join(plain)
    if any(n not in FAILOVER_ERRORS for n in final_exceptions(rest)):
        found.append(rest[rest.index("Traceback"):][:6000])
    return found
