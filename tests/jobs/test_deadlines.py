"""Turn deadlines (issue 5) against real worker processes (``python -m service.jobs.worker``:
RQ's worker and the deadline dispatcher) on the private Redis of the test session.

Matches are created through the store (``service.store``), as the API does. The tests watch the
raw stored document (``matches.load``, which applies nothing), never ``matches.get``, so that
every timeout they see was applied by a worker, unless the test is about lazy enforcement.
``timed_out_at`` is the applying process's clock reading at the commit of a timeout.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest
import redis
from rq import Queue
from rq.job import Job
from rq.registry import FailedJobRegistry, FinishedJobRegistry

from service import engine
from service.http import views
from service.http.app import create_app
from service.jobs import dispatcher, timeouts
from service.store import clock, cluster, deadlines, heartbeats, keys, matches, players, sockets
from service.store.docs import ACTIVE, MatchDoc
from service.store.queues import DEADLINES as QUEUE
from tests.support.redis_cluster import ClusterStack
from tests.support.redis_proc import RedisProcess
from tests.support.rqproc import RqCron, RqProcess, RqWorker
from tests.support.stall import stalled

pytestmark = [pytest.mark.timeout(120), pytest.mark.timing]

# Run on a single Redis and on a 3-master Redis Cluster, whose RQ queues live on a single Redis
# of their own (tests/conftest.py): ``q`` is RQ's Redis, ``r`` the data's.
ON_CLUSTER = True
Server = RedisProcess | ClusterStack

T = 1  # turn_timeout_s of every match here


# --------------------------------------------------------------------------- fixtures, helpers


@pytest.fixture
def r(redis_db: redis.Redis, redis_server: Server,
      monkeypatch: pytest.MonkeyPatch) -> redis.Redis:
    monkeypatch.setenv("REDIS_URL", redis_server.url)  # for jobs called directly
    for k, v in redis_server.env.items():
        monkeypatch.setenv(k, v)
    return redis_db


@pytest.fixture
def q(r: redis.Redis, redis_server: Server) -> Iterator[redis.Redis]:
    """RQ's Redis (the data Redis itself, unless that is a cluster)."""
    client = redis_server.queue_client()
    yield client
    client.close()


@pytest.fixture
def procs(r: redis.Redis, redis_server: Server) -> Iterator[Callable[..., RqProcess]]:
    """Start ``rq`` processes on the private Redis; all are stopped before it is flushed."""
    started: list[RqProcess] = []

    def start(kind: str = "worker", **kw: Any) -> RqProcess:
        p: RqProcess
        if kind == "worker":
            wait = kw.pop("wait_ready", True)
            p = RqWorker(redis_server.url, env={**redis_server.env, **kw.pop("env", {})}, **kw)
            started.append(p)
            p.start(wait_ready=wait)
        else:
            p = RqCron(redis_server.url, env={**redis_server.env, **kw.pop("env", {})}, **kw)
            started.append(p)
            p.start()
        return p

    yield start
    logs = []
    for p in started:
        p.stop()
        logs.append(p.log_text())
        p.close()
    for log in logs:
        assert "Traceback" not in log, log[-6000:]


def new_match(r: redis.Redis, seats: int = 2, **options: Any) -> tuple[MatchDoc, list[str]]:
    """An active match (all seats taken); returns it and the player ids by seat."""
    tag = random.getrandbits(40)
    pids = [players.register(r, f"bot{i}-{tag:x}")["id"] for i in range(seats)]
    opts = {"ruleset": "classic", "seats": seats, "turn_timeout_s": T,
            "timeout_policy": "auto", "max_timeouts": 50, **options}
    doc = matches.create(r, pids[0], opts)
    for pid in pids:
        doc = matches.join(r, doc.id, pid)
    assert doc.status == ACTIVE and doc.deadline is not None
    return doc, pids


def wait_for(cond: Callable[[], Any], timeout: float, what: str, every: float = 0.01) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = cond()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def wait_moved(r: redis.Redis, mid: str, version: int, timeout: float = 6.0) -> MatchDoc:
    def moved() -> MatchDoc | None:
        doc = matches.load(r, mid)
        return doc if doc.version > version else None

    return wait_for(moved, timeout, f"{mid} to pass version {version}")  # type: ignore[no-any-return]


def is_timeout(e: engine.Event) -> bool:
    return bool(e.data.get("timeout")) or (e.type == "forfeit" and e.data["reason"] == "timeout")


def timeout_events(doc: MatchDoc, since: int = 0) -> list[engine.Event]:
    assert doc.state is not None
    return [e for e in doc.state.events[since:] if is_timeout(e)]


def parse_rfc3339(s: str) -> float:
    assert s.endswith("Z"), s
    return datetime.fromisoformat(s[:-1] + "+00:00").timestamp()


def check_chain(doc: MatchDoc, start: MatchDoc, r: redis.Redis) -> int:
    """An idle match: every version since ``start`` is one timeout, one turn_timeout_s apart,
    one timeout event each, so every deadline that passed was applied exactly once (a timeout
    applied twice would end a turn early). Returns the number of timeouts. A keeper that stalls
    for more than 2 s on a busy machine counts as an outage (store/clock.py): then the turn
    pending at that moment got a whole turn again, and the chain may only be later."""
    assert doc.state is not None and start.state is not None and start.turn_started is not None
    n = doc.version - start.version
    evs = timeout_events(doc, len(start.state.events))
    assert len(evs) == n, (n, [e.type for e in evs])
    last = doc.turn_started if doc.status == ACTIVE else doc.finished_at
    assert last is not None
    stats = clock.stats(r)
    slack = stats["credited_s"] + T if stats["outages"] else 0.0
    expect = start.turn_started + n * T
    # exact, also for a settler whose time was read a moment before the keeper's latest tick
    # (store/clock.py Clock.wall: busy runs saw turn starts 1.1 and 46.7 ms early before it)
    assert expect - 1e-6 <= last <= expect + slack + 1e-6, (last, start.turn_started, n, stats)
    assert doc.timed_out_at is None or doc.timed_out_at >= last  # never before its deadline
    return n


def bot_action(doc: MatchDoc, rng: random.Random) -> dict[str, Any]:
    assert doc.state is not None
    legal = views.player_view(doc, doc.state.turn)["legal_actions"]
    return dict(rng.choice(legal))


# --------------------------------------------------------------------------- on time, never early


def test_one_second_deadline_applied_after_it_within_bounds(
        r: redis.Redis, procs: Callable[..., RqProcess]) -> None:
    procs("worker")
    doc, _ = new_match(r)
    for _ in range(3):
        pre = matches.load(r, doc.id)
        assert pre.state is not None and pre.deadline is not None and pre.turn_started is not None
        assert pre.deadline == pytest.approx(pre.turn_started + T)
        turn = views.player_view(pre, pre.state.turn)["turn"]
        assert abs(parse_rfc3339(turn["deadline"]) - pre.deadline) <= 0.001, turn
        assert 0 <= turn["seconds_left"] <= T
        post = wait_moved(r, doc.id, pre.version)
        seen = time.time()
        assert post.timed_out_at is not None
        assert post.timed_out_at >= pre.deadline, "applied before the deadline"
        assert 1.0 <= post.timed_out_at - pre.turn_started <= 2.5, post.timed_out_at - pre.turn_started
        assert seen - pre.turn_started <= 2.5 + 0.2
        # auto: the server played the documented rule's action for the absent player, a legal one
        action = engine.timeout_action(pre.state)
        assert action in engine.legal_actions(pre.state)
        expect, _ = engine.apply(pre.state, action, timeout=True)
        assert post.version == pre.version + 1
        assert post.state is not None and post.state.to_dict() == expect.to_dict()
        evs = timeout_events(post, len(pre.state.events))
        assert len(evs) == 1 and evs[0].data["seat"] == pre.state.turn
        doc = post


def test_bot_that_comes_back_in_time_is_never_timed_out(
        r: redis.Redis, q: redis.Redis, procs: Callable[..., RqProcess]) -> None:
    procs("worker")
    doc, pids = new_match(r)
    rng = random.Random(5)
    acted: list[int] = []  # versions a bot answered, each 0.5 s into a 1 s turn (late, but
    # with room for a loaded machine: CI shares 2 cores with everything else)
    while len(acted) < 5 and doc.status == ACTIVE:
        assert doc.state is not None and doc.turn_started is not None
        time.sleep(max(0.0, doc.turn_started + 0.5 - time.time()))
        seat = doc.state.turn
        matches.act(r, doc.id, pids[seat], bot_action(doc, rng), respond=views.player_view,
                    expected_version=doc.version)
        acted.append(doc.version)
        doc = matches.load(r, doc.id)
    assert doc.state is not None and not timeout_events(doc)
    # every answer moved the match's entry in the deadline index: no job was ever queued for it
    queue = Queue(QUEUE, connection=q)
    ids = (queue.get_job_ids() + FinishedJobRegistry(queue=queue).get_job_ids()
           + FailedJobRegistry(queue=queue).get_job_ids())
    assert not [j for j in ids if j.startswith(f"deadline-{doc.id}-")], ids


# --------------------------------------------------------------------------- policies


@pytest.mark.parametrize("policy,max_timeouts", [("auto", 2), ("forfeit", 3)])
def test_idle_player_times_out_then_forfeits_and_the_match_goes_on(
        r: redis.Redis, procs: Callable[..., RqProcess], policy: str, max_timeouts: int) -> None:
    """Seat 0 never acts; seats 1 and 2 answer at once. ``auto`` plays for seat 0 until its
    max_timeouts-th consecutive timeout, which is a forfeit; ``forfeit`` forfeits at the first."""
    procs("worker")
    doc, pids = new_match(r, 3, timeout_policy=policy, max_timeouts=max_timeouts)
    rng = random.Random(7)
    expected = max_timeouts if policy == "auto" else 1
    seen: list[engine.Event] = []
    after_forfeit = 0
    end = time.monotonic() + 30
    while time.monotonic() < end and after_forfeit < 4:
        assert doc.status == ACTIVE, "the match ended"
        assert doc.state is not None
        seat = doc.state.turn
        if seat != 0:
            matches.act(r, doc.id, pids[seat], bot_action(doc, rng), respond=views.player_view,
                    expected_version=doc.version)
            if seen and seen[-1].type == "forfeit":
                after_forfeit += 1
            doc = matches.load(r, doc.id)
            continue
        assert len(seen) < expected, "seat 0 got a turn after forfeiting"
        pre = doc
        doc = wait_moved(r, doc.id, pre.version)
        assert pre.state is not None and doc.state is not None and doc.timed_out_at is not None
        assert pre.deadline is not None and doc.timed_out_at >= pre.deadline
        assert doc.version == pre.version + 1, "seat 0's timeout, then the bots' turn"
        expect, _ = engine.apply_timeout(pre.state, policy=policy, max_timeouts=max_timeouts)
        assert doc.state.to_dict() == expect.to_dict()
        evs = timeout_events(doc, len(pre.state.events))
        assert len(evs) == 1 and evs[0].data["seat"] == 0, evs
        seen.append(evs[0])
    kinds = [e.type for e in seen]
    assert kinds[-1] == "forfeit" and len(seen) == expected, kinds
    assert all(e.type in ("play", "chancellor_return") for e in seen[:-1]), kinds
    assert after_forfeit >= 4 and doc.status == ACTIVE  # the others play on
    assert doc.state is not None and doc.state.forfeited == [True, False, False]


# --------------------------------------------------------------------------- crash, recovery


def test_worker_sigkilled_then_new_worker_applies_each_overdue_timeout_once(
        r: redis.Redis, q: redis.Redis, procs: Callable[..., RqProcess]) -> None:
    """With no worker alive the turn clock stands still (store/clock.py): the killed worker's
    pending turns are charged nothing for the time without one, and once a new worker runs
    each of them gets a whole turn again; then every deadline is applied exactly once, also
    those the killed dispatcher had claimed and not settled (their claim's lease ends: settled
    then)."""
    first = procs("worker", env={"DEADLINE_LEASE_S": "2"})
    starts = [new_match(r)[0] for _ in range(8)]
    time.sleep(1.6)  # some timeouts applied, a deadline pending in every match
    first.kill()  # SIGKILL the worker and its dispatcher, mid-whatever
    time.sleep(2.5)
    docs = [matches.load(r, s.id) for s in starts]
    overdue = [d for d in docs if d.deadline is not None and d.deadline < time.time() - 1]
    assert len(overdue) == len(docs), "every match should hold an overdue, unapplied deadline"
    # no worker: the clock stands, so even a read past the (wall-clock) deadline applies nothing
    assert [matches.get(r, d.id).version for d in docs] == [d.version for d in docs]
    # Three entries were claimed by the dead dispatcher and never settled: only the end of
    # their lease brings them back
    for d in docs[:3]:
        r.zadd(keys.DEADLINES, {d.id: time.time() + 1.5})
    procs("worker", wait_ready=False)

    def caught_up() -> bool:
        now = time.time()
        return all(d.status != ACTIVE or (d.deadline or 0) > now
                   for d in (matches.load(r, s.id) for s in starts))

    wait_for(caught_up, 20, "every overdue timeout to be applied", every=0.05)
    clk = clock.read(r)
    assert clk.resumed is not None, "the new worker's keeper saw the time without a worker"
    for s, at_kill in zip(starts, docs, strict=True):
        doc = matches.load(r, s.id)
        assert doc.state is not None and s.state is not None
        n = doc.version - s.version
        assert len(timeout_events(doc, len(s.state.events))) == n  # none twice, none skipped
        # in service time, the chain is unbroken: T apart before the kill, then the pending
        # turn got a whole T from the moment the service was back
        assert at_kill.started_s == pytest.approx(s.started_s + (at_kill.version - s.version) * T,
                                                  abs=1e-6)
        if doc.status == ACTIVE:
            assert doc.started_s == pytest.approx(
                clk.resumed + (doc.version - at_kill.version) * T, abs=1e-6)


def test_two_workers_and_duplicate_jobs_never_apply_a_timeout_twice(
        r: redis.Redis, q: redis.Redis, redis_server: Server,
        procs: Callable[..., RqProcess]) -> None:
    """Two workers, so two dispatchers claim from the same index and settle what they claimed;
    on top, two extra RQ jobs (``timeouts.settle``) for every pending turn are queued at its
    deadline, for the workers' RQ side. Each deadline is applied exactly once."""
    procs("worker", worker_name="w-one")
    procs("worker", worker_name="w-two")
    queue = Queue(QUEUE, connection=q)
    starts = [new_match(r)[0] for _ in range(8)]
    stop = threading.Event()
    seen: set[tuple[str, int]] = set()
    extra: list[str] = []

    def duplicate() -> None:
        """Two more settle jobs for every pending turn, queued the moment it is due."""
        c = redis_server.client()
        while not stop.is_set():
            for s in starts:
                doc = matches.load(c, s.id)
                key = (doc.id, doc.version)
                if doc.status != ACTIVE or doc.deadline is None or key in seen \
                        or doc.deadline > time.time():
                    continue
                seen.add(key)
                for i in (1, 2):
                    jid = f"dup{i}-{doc.id}-{doc.version}"
                    queue.enqueue(timeouts.settle, doc.id, doc.deadline, job_id=jid,
                                  result_ttl=600)
                    extra.append(jid)
            time.sleep(0.005)

    t = threading.Thread(target=duplicate, daemon=True)
    t.start()
    time.sleep(5)
    stop.set()
    t.join()
    time.sleep(1.5)  # let the last due jobs run
    applied = 0
    for s in starts:
        applied += check_chain(matches.load(r, s.id), s, r)  # each deadline applied exactly once
    assert extra, "no duplicate was queued"
    fin = FinishedJobRegistry(queue=queue)
    jobs = [j for j in Job.fetch_many(fin.get_job_ids(), connection=q) if j is not None]
    results = [j.return_value() for j in jobs]
    assert results.count("applied") <= applied, results  # a job per applied commit at most
    assert {j.worker_name for j in jobs} == {"w-one", "w-two"}, "one worker ran every job"
    assert {j.id.split("-")[0] for j in jobs} == {"dup1", "dup2"}  # no job per deadline


# --------------------------------------------------------------------------- no worker at all


def test_lazy_enforcement_without_any_worker(r: redis.Redis, q: redis.Redis,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RATE_LIMITS", "0")
    app = create_app()
    c = app.test_client()

    def post(path: str, token: str | None = None, **body: Any) -> Any:
        h = {"Authorization": f"Bearer {token}"} if token else {}
        resp = c.post(path, json=body, headers=h)
        assert resp.status_code in (200, 201), (path, resp.status_code, resp.get_json())
        return resp.get_json()

    def get(path: str, token: str) -> Any:
        resp = c.get(path, headers={"Authorization": f"Bearer {token}"})
        assert resp.status_code == 200, (path, resp.status_code, resp.get_json())
        return resp.get_json()

    bots = [post("/v1/players", name=f"lazy{i}-{random.getrandbits(30):x}") for i in range(2)]
    # A fixed deck, so that the first timeouts can't end the round (a round won by the absent
    # seat's auto move would give it the next turn too): seat 0 holds handmaid + countess and
    # plays the handmaid; seat 1 (priest + guard) then has nobody to target.
    deck = ["guard"] * 4 + ["handmaid", "priest", "countess", "guard", "priest", "baron", "baron",
                            "handmaid", "prince", "prince", "king", "princess"]
    m = post("/v1/matches", bots[0]["token"], ruleset="classic", seats=2, turn_timeout_s=1,
             timeout_policy="auto", max_timeouts=10, deck=deck, first_seat=0)
    mid = m["match_id"]
    for b in bots:
        v = post(f"/v1/matches/{mid}/join", b["token"])
    seat = v["turn"]["seat"]
    deadline = parse_rfc3339(v["turn"]["deadline"])
    assert 0 < v["turn"]["seconds_left"] <= 1
    assert q.smembers("rq:workers") == set()  # nobody to run a deadline job
    time.sleep(max(0.0, deadline - time.time()) + 0.1)
    assert matches.load(r, mid).version == v["version"]  # the deadline passed, nothing applied
    # a read past the deadline applies it first
    seen = get(f"/v1/matches/{mid}/view", bots[1 - seat]["token"])
    assert seen["version"] == v["version"] + 1 and seen["turn"]["seat"] != seat
    assert [e for e in seen["events"] if e.get("timeout")][-1]["seat"] == seat
    doc = matches.load(r, mid)
    assert doc.version == seen["version"] and doc.timed_out_at is not None
    assert doc.timed_out_at >= deadline and doc.turn_started == pytest.approx(deadline, abs=1e-3)
    assert parse_rfc3339(seen["turn"]["deadline"]) == pytest.approx(deadline + 1, abs=2e-3)
    # two deadlines pass unread: the next read applies both, each turn starting at the last one
    time.sleep(max(0.0, deadline + 2 - time.time()) + 0.1)
    summary = c.get(f"/v1/matches/{mid}").get_json()
    assert summary["version"] == v["version"] + 3, summary["version"]
    after = matches.load(r, mid)
    assert after.turn_started == pytest.approx(deadline + 2, abs=1e-3)
    assert len(timeout_events(after)) == 3
    # a long-poll held on the match wakes at its deadline and applies it
    assert after.deadline is not None
    t0 = time.time()
    polled = get(f"/v1/matches/{mid}/view?wait=10&after={after.version}", bots[0]["token"])
    woke = time.time()
    assert polled["version"] == after.version + 1
    assert after.deadline <= woke <= after.deadline + 0.5, (woke - after.deadline, woke - t0)
    # lists too: past the next deadline, the caller's match list shows the turn after it
    cur = matches.load(r, mid)
    assert cur.state is not None and cur.deadline is not None
    expect, _ = engine.apply_timeout(cur.state, policy="auto", max_timeouts=10)
    time.sleep(max(0.0, cur.deadline - time.time()) + 0.1)
    listed = get("/v1/me/matches", bots[expect.turn]["token"])["matches"]
    mine = [m for m in listed if m["match_id"] == mid]
    assert mine and mine[0]["version"] == cur.version + 1 and mine[0]["your_turn"] is True, mine


# --------------------------------------------------------------------------- the job itself


def test_early_stale_and_repeated_jobs_change_nothing(r: redis.Redis) -> None:
    doc, _ = new_match(r, turn_timeout_s=2)
    assert doc.deadline is not None
    assert r.zscore(keys.DEADLINES, doc.id) == pytest.approx(doc.deadline)  # written by the commit
    r.zadd(keys.DEADLINES, {doc.id: time.time() + 60})  # as a dispatcher's claim leaves it
    assert timeouts.settle(doc.id) == "pending"  # woke early: nothing done, the entry set back
    assert matches.load(r, doc.id).version == doc.version
    assert r.zscore(keys.DEADLINES, doc.id) == pytest.approx(doc.deadline)
    time.sleep(max(0.0, doc.deadline - 0.1 - time.time()))
    assert timeouts.settle(doc.id) == "pending"  # 0.1 s before: still nothing
    assert matches.load(r, doc.id).version == doc.version
    time.sleep(max(0.0, doc.deadline - time.time()) + 0.02)
    assert timeouts.settle(doc.id) == "applied"
    after = matches.load(r, doc.id)
    assert after.version == doc.version + 1 and len(timeout_events(after)) == 1
    assert r.zscore(keys.DEADLINES, doc.id) == pytest.approx(after.deadline)  # the next turn's
    assert timeouts.settle(doc.id) == "pending"  # a repeated (late) job: the next turn's not due
    assert matches.load(r, doc.id).version == after.version
    assert timeouts.settle("m_nosuchmatch") == "gone"


def test_dispatch_claims_each_due_entry_once_and_never_before_its_deadline(
        r: redis.Redis, q: redis.Redis) -> None:
    """The claim is atomic: dispatchers racing on one index queue each due entry once; an entry
    is due at its score and not a microsecond before; a claimed entry is out of reach until its
    lease ends."""
    base = time.time() + 3600  # scores far ahead: no real match's, and the clock is irrelevant
    entries = {f"m_claim{i:04d}": base + i / 1000 for i in range(300)}
    r.zadd(keys.DEADLINES, entries)
    got: list[list[tuple[str, float]]] = []
    barrier = threading.Barrier(4)

    def race() -> None:
        barrier.wait()
        mine: list[tuple[str, float]] = []
        for k in range(300):
            claimed, _ = deadlines.claim(r, base + k / 1000, lease=600, limit=7)
            mine.extend(claimed)
        got.append(mine)

    threads = [threading.Thread(target=race) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    claimed = [c for mine in got for c in mine]
    assert sorted(claimed) == sorted(entries.items())  # each once, with its own deadline
    # never early: an entry is claimed once now >= its score, exactly
    r.zadd(keys.DEADLINES, {"m_exact": base})
    assert deadlines.claim(r, base - 1e-6, lease=5)[0] == []
    assert deadlines.claim(r, base, lease=5)[0] == [("m_exact", base)]
    # leased: due again only at base + 5
    assert deadlines.claim(r, base + 4.999, lease=5) == ([], base + 5)
    assert deadlines.claim(r, base + 5, lease=5)[0] == [("m_exact", base + 5)]


def test_a_settle_that_failed_because_redis_went_away_is_retried_and_applies_once(
        r: redis.Redis, q: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dispatcher here in the test process: its first settle of a due turn fails with a
    connection error (as when Redis goes away mid-settle, or a cluster master fails over); the
    entry stays claimed, comes due again when the lease ends, and is applied then, once. An
    entry claimed by a dispatcher that died before settling it comes back the same way. No RQ
    job is involved: nothing is left in a failed registry."""
    d = dispatcher.Dispatcher(q, lease_s=0.5)
    queue = Queue(QUEUE, connection=q)
    doc, _ = new_match(r, turn_timeout_s=3)  # room for a slow machine between deadlines
    assert doc.deadline is not None
    real_expire = matches.expire

    def outage(*args: Any, **kwargs: Any) -> MatchDoc:
        raise redis.ConnectionError("Connection refused (the test's outage)")

    monkeypatch.setattr(matches, "expire", outage)
    time.sleep(max(0.0, doc.deadline - time.time()) + 0.02)
    assert d.dispatch()[0] == 1
    with pytest.raises(redis.ConnectionError):
        d.drain()  # (the settles run on the dispatcher's settler threads)
    assert matches.load(r, doc.id).version == doc.version  # nothing applied
    monkeypatch.setattr(matches, "expire", real_expire)
    assert d.dispatch()[0] == 0  # leased: not before the lease ends
    time.sleep(0.55)  # the lease ends
    assert d.dispatch()[0] == 1
    d.drain()
    after = matches.load(r, doc.id)
    assert after.version == doc.version + 1 and len(timeout_events(after)) == 1
    assert d.dispatch()[0] == 0  # its next turn's entry: not due yet
    # the next deadline is claimed by a dispatcher that dies before settling it
    assert after.deadline is not None
    time.sleep(max(0.0, after.deadline - time.time()) + 0.02)
    assert len(deadlines.claim(r, time.time(), 0.5)[0]) == 1
    assert matches.load(r, doc.id).version == after.version
    time.sleep(0.55)
    assert d.dispatch()[0] == 1
    d.drain()
    last = matches.load(r, doc.id)
    assert last.version == after.version + 1 and len(timeout_events(last)) == 2
    assert queue.count == 0 and FailedJobRegistry(queue=queue).count == 0
    d.stop()


def test_concurrent_reads_past_a_deadline_all_succeed_and_apply_it_once(
        r: redis.Redis, redis_server: Server) -> None:
    """Many readers at once past a deadline: none gets version_conflict, one timeout is applied
    (every GET and long-poll goes through matches.get)."""

    def read(mid: str, at: float, barrier: threading.Barrier, out: list[Any]) -> None:
        c = redis_server.client()
        barrier.wait()
        try:
            out.append(matches.get(c, mid, now=at).version)
        except Exception as e:  # recorded, asserted below
            out.append(e)

    for _ in range(20):
        doc, _ = new_match(r)
        assert doc.deadline is not None
        barrier = threading.Barrier(4)
        out: list[Any] = []
        threads = [threading.Thread(target=read, args=(doc.id, doc.deadline + 0.01, barrier, out))
                   for _ in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert out == [doc.version + 1] * 4, out
        assert len(timeout_events(matches.load(r, doc.id))) == 1


def test_a_stalled_queue_redis_holds_up_no_claim_settle_or_tick(
        r: redis.Redis, q: redis.Redis) -> None:
    """A dispatcher whose heartbeat goes to a Redis that is SIGSTOPped (as RQ's own Redis next
    to a cluster may stall, and never wake): it goes on settling every deadline on the data
    Redis, one turn after the other, while each beat fails after the read timeout instead of
    waiting out the stall; once that Redis answers again the beats land. By default the beat
    goes to RQ's Redis on a client with the data read timeout, not on RQ's connection."""
    default = dispatcher.Dispatcher(q)
    assert default.beat_redis.connection_pool.connection_kwargs["socket_timeout"] == \
        sockets.READ_TIMEOUT_S
    assert default.beat_redis.connection_pool is not q.connection_pool
    default.loop_at = time.monotonic() - dispatcher.LOOP_STALE_S - 1
    assert default.beat() is False  # a loop that stopped going round is not reported alive
    default.stop()

    with RedisProcess() as other:
        beats = cluster.connect(other.url)
        d = dispatcher.Dispatcher(q, beat_redis=beats, name="stall-test")
        doc, _ = new_match(r)
        with stalled(other):
            d.start()
            started = time.monotonic()
            deadline = started + 30
            while time.monotonic() < deadline and len(timeout_events(
                    matches.load(r, doc.id))) < 3:
                time.sleep(0.1)
            settled = matches.load(r, doc.id)
            assert len(timeout_events(settled)) >= 3, "the dispatcher waited on the stall"
            assert settled.version == doc.version + len(timeout_events(settled))
        wait_for(lambda: heartbeats.freshest(other.client(), heartbeats.DEADLINE_WORKER)
                 is not None, 15, "a heartbeat once that Redis answers again")
        t0 = time.monotonic()
        d.stop()
        assert time.monotonic() - t0 < 5
