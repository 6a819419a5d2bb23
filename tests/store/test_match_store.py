"""The match store (``service/store/matches.py``) against a private Redis, without HTTP: the one
compare-and-set under racing threads, idempotency records, the indexes, deadline bookkeeping.

The store is called as the HTTP layer calls it, except that ``respond`` (what an action answers)
is a small function of the document here: the store renders no views of its own."""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable
from typing import Any

import pytest
import redis
from rq import Queue
from rq.job import Job

from service import engine
from service.store import cluster, keys, matches, players, queues
from service.store.docs import ACTIVE, ELIDED, FINISHED, WAITING, MatchDoc, event_from_json
from service.store.errors import StoreError

# Run on a single Redis and on a 3-master Redis Cluster (tests/conftest.py).
ON_CLUSTER = True

CLASSIC2 = {"ruleset": "classic", "seats": 2, "turn_timeout_s": 30}


@pytest.fixture(autouse=True)
def empty(redis_db: redis.Redis) -> None:
    """Start from an empty private Redis (tests of other modules leave theirs behind; the
    counters and indexes checked here are global)."""
    redis_db.flushall()


def respond(doc: MatchDoc, seat: int, now: float) -> dict[str, Any]:
    return {"match_id": doc.id, "version": doc.version, "seat": seat, "at": now}


def started(r: redis.Redis, options: dict[str, Any] | None = None) -> tuple[MatchDoc, list[str]]:
    pids = [players.register(r, f"p{i}")["id"] for i in range(2)]
    doc = matches.create(r, pids[0], dict(options or CLASSIC2))
    for pid in pids:
        doc = matches.join(r, doc.id, pid)
    assert doc.status == ACTIVE
    return doc, pids


def mover(doc: MatchDoc, pids: list[str]) -> tuple[str, dict[str, Any]]:
    assert doc.state is not None
    return pids[doc.state.turn], dict(engine.legal_action_dicts(doc.state)[0])


def race(n: int, fn: Callable[[int], Any]) -> list[Any]:
    """Run ``fn(i)`` in ``n`` threads released together; each result or the StoreError raised."""
    barrier = threading.Barrier(n)
    out: list[Any] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        try:
            out[i] = fn(i)
        except StoreError as e:
            out[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return out


# --------------------------------------------------------------------------- compare-and-set


def test_racing_actions_at_one_version_apply_exactly_once(redis_db: redis.Redis,
                                                          redis_server: Any) -> None:
    doc, pids = started(redis_db)
    pid, action = mover(doc, pids)
    clients = [redis_server.client() for _ in range(8)]
    results = race(8, lambda i: matches.act(clients[i], doc.id, pid, action, respond=respond,
                                            expected_version=doc.version))
    won = [x for x in results if isinstance(x, dict)]
    lost = [x for x in results if isinstance(x, StoreError)]
    assert len(won) == 1 and won[0]["version"] == doc.version + 1, results
    assert len(lost) == 7 and {e.code for e in lost} == {"version_conflict"}
    after = matches.load(redis_db, doc.id)
    assert after.version == doc.version + 1
    assert redis_db.hget(keys.STATS, "actions") == b"1"


def test_racing_joins_fill_each_seat_once(redis_db: redis.Redis, redis_server: Any) -> None:
    creator = players.register(redis_db, "creator")["id"]
    doc = matches.create(redis_db, creator, {"ruleset": "2019", "seats": 4})
    pids = [players.register(redis_db, f"j{i}")["id"] for i in range(10)]
    clients = [redis_server.client() for _ in range(10)]

    # a join doesn't depend on what the joiner read: a lost race is read again by the store,
    # never answered version_conflict
    results = race(10, lambda i: matches.join(clients[i], doc.id, pids[i]))
    seated = [pids[i] for i, x in enumerate(results) if isinstance(x, MatchDoc)]
    full = [x for x in results if isinstance(x, StoreError)]
    assert len(seated) == 4 and {e.code for e in full} == {"match_full"}, results
    final = matches.load(redis_db, doc.id)
    assert sorted(final.seats) == sorted(seated) and final.status == ACTIVE
    assert final.version == 1 + 4


def test_r27_a_resignation_that_loses_a_race_to_a_move_is_applied_not_a_version_conflict(
        redis_db: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    doc, pids = started(redis_db)
    pid, action = mover(doc, pids)
    quitter = pids[1 - pids.index(pid)]
    read = matches._read
    raced: list[Any] = []

    def read_then_lose_the_race(r: redis.Redis, mid: str, **kw: Any) -> Any:
        got = read(r, mid, **kw)
        if not raced:  # the mover's move lands between the resignation's read and its commit
            raced.append(None)
            raced.append(matches.act(r, mid, pid, action, respond=respond))
        return got

    monkeypatch.setattr(matches, "_read", read_then_lose_the_race)
    final = matches.resign(redis_db, doc.id, quitter)
    assert raced[1]["version"] == doc.version + 1  # the move did win the race
    assert final.status == FINISHED and final.state is not None
    assert final.state.winners == [pids.index(pid)]
    assert matches.load(redis_db, doc.id).version == final.version


def test_racing_reads_past_a_deadline_apply_the_timeout_once(redis_db: redis.Redis,
                                                             redis_server: Any) -> None:
    doc, _ = started(redis_db, {**CLASSIC2, "turn_timeout_s": 10})
    assert doc.deadline is not None
    late = doc.deadline + 0.5
    clients = [redis_server.client() for _ in range(8)]
    results = race(8, lambda i: matches.get(clients[i], doc.id, now=late))
    assert all(isinstance(x, MatchDoc) for x in results), results
    assert {x.version for x in results} == {doc.version + 1}
    assert redis_db.hget(keys.STATS, "timeouts") == b"1"
    after = matches.load(redis_db, doc.id)
    # the next turn started at the deadline, not at the late read
    assert after.turn_started == pytest.approx(doc.deadline)


def test_a_command_redis_refuses_inside_the_commit_is_raised(redis_db: redis.Redis) -> None:
    r = redis_db
    # (the commit script runs every command and answers the first refusal, as a MULTI does)
    if cluster.is_cluster(r):
        pytest.skip("on a cluster the counter is written after the commit (store/cluster.py)")
    doc, pids = started(r)
    r.set(keys.STATS, "not a hash")
    pid, action = mover(doc, pids)
    with pytest.raises(redis.ResponseError) as e:
        matches.act(r, doc.id, pid, action, respond=respond)
    assert "WRONGTYPE" in str(e.value)
    r.delete(keys.STATS)
    doc = matches.get(r, doc.id)  # Redis applied the rest (no rollback)
    pid, action = mover(doc, pids)
    assert matches.act(r, doc.id, pid, action, respond=respond)["version"] == doc.version + 1


def stored(r: redis.Redis, mid: str) -> tuple[dict[bytes, bytes], list[bytes]]:
    """A match as Redis holds it: its document's hash and its event log."""
    return r.hgetall(keys.match(mid)), r.lrange(keys.match_events(mid), 0, -1)


def test_a_refused_action_changes_nothing(redis_db: redis.Redis) -> None:
    doc, pids = started(redis_db)
    raw = stored(redis_db, doc.id)
    pid, action = mover(doc, pids)
    other = pids[1 - pids.index(pid)]
    for who, act, code in ((other, action, "not_your_turn"),
                           (pid, {"type": "play", "card": "nope"}, None),
                           ("p_outsider", action, "forbidden")):
        with pytest.raises((StoreError, engine.EngineError)) as e:
            matches.act(redis_db, doc.id, who, act, respond=respond)
        if code is not None:
            assert e.value.code == code
    with pytest.raises(StoreError) as e:
        matches.act(redis_db, doc.id, pid, action, respond=respond,
                    expected_version=doc.version - 1)
    assert e.value.code == "version_conflict"
    assert stored(redis_db, doc.id) == raw


# --------------------------------------------------------------------------- idempotency


def test_idempotency_record_answers_a_retry_unchanged(redis_db: redis.Redis) -> None:
    doc, pids = started(redis_db)
    pid, action = mover(doc, pids)
    first = matches.act(redis_db, doc.id, pid, action, respond=respond, idempotency_key="k1",
                        now=1000.0)
    again = matches.act(redis_db, doc.id, pid, action, respond=respond, idempotency_key="k1",
                        now=2000.0)
    assert again == first and matches.load(redis_db, doc.id).version == doc.version + 1
    idem = keys.idempotency(doc.id, pid, "k1")
    ttl = redis_db.ttl(idem)
    assert 48 * 3600 - 60 <= ttl <= 48 * 3600
    with pytest.raises(StoreError) as e:
        matches.act(redis_db, doc.id, pid, {**action, "extra": 1}, respond=respond,
                    idempotency_key="k1")
    assert e.value.code == "idempotency_key_reused"
    assert matches.load(redis_db, doc.id).version == doc.version + 1


def test_racing_retries_with_one_key_apply_once_and_agree(redis_db: redis.Redis,
                                                          redis_server: Any) -> None:
    doc, pids = started(redis_db)
    pid, action = mover(doc, pids)
    clients = [redis_server.client() for _ in range(8)]
    results = race(8, lambda i: matches.act(clients[i], doc.id, pid, action, respond=respond,
                                            idempotency_key="same"))
    assert all(isinstance(x, dict) for x in results), results
    assert len({x["version"] for x in results}) == 1
    assert matches.load(redis_db, doc.id).version == doc.version + 1
    assert redis_db.hget(keys.STATS, "actions") == b"1"


# --------------------------------------------------------------------------- indexes


def test_indexes_follow_the_status(redis_db: redis.Redis) -> None:
    a, b = (players.register(redis_db, n)["id"] for n in ("ann", "bob"))
    doc = matches.create(redis_db, a, dict(CLASSIC2), now=100.0)
    mid = doc.id

    def where() -> set[str]:
        return {s for s in (WAITING, ACTIVE, FINISHED)
                if redis_db.zscore(keys.matches_by_status(s), mid) is not None}

    assert where() == {WAITING} and redis_db.zscore(keys.ALL_MATCHES, mid) == 100.0
    matches.join(redis_db, mid, a)
    assert redis_db.zscore(keys.player_matches(a), mid) == 100.0
    assert redis_db.zscore(keys.player_matches(b), mid) is None
    doc = matches.join(redis_db, mid, b)
    assert where() == {ACTIVE} and redis_db.zscore(keys.DEADLINES, mid) == doc.deadline
    matches.resign(redis_db, mid, b)
    assert where() == {FINISHED} and redis_db.zscore(keys.DEADLINES, mid) is None
    assert matches.list_ids(redis_db, status=FINISHED, player=a) == ([mid], None)
    assert matches.list_ids(redis_db, status=WAITING, player=a) == ([], None)


def test_listing_pages_are_stable_while_matches_are_added(redis_db: redis.Redis) -> None:
    a = players.register(redis_db, "lister")["id"]
    ids = [matches.create(redis_db, a, dict(CLASSIC2), now=float(t)).id for t in range(1, 8)]
    newest_first = ids[::-1]
    page, nxt = matches.list_ids(redis_db, limit=3)
    assert page == newest_first[:3] and nxt == 3
    matches.create(redis_db, a, dict(CLASSIC2), now=0.5)  # older than all: lands at the end
    page2, nxt2 = matches.list_ids(redis_db, offset=nxt, limit=3)
    assert page2 == newest_first[3:6] and nxt2 == 6
    assert matches.load_many(redis_db, ["m_missing", ids[0]])[0].id == ids[0]


# --------------------------------------------------------------------------- deadlines


def _rq_keys(r: redis.Redis) -> list[bytes]:
    q = cluster.queue_client(r) if cluster.is_cluster(r) else r  # RQ's own Redis on a cluster
    return sorted(q.scan_iter(match="rq:*"))


def test_a_finished_ladder_match_queues_its_rating_once_committed(
        redis_db: redis.Redis) -> None:
    """The one job a change queues: a ladder match that has just finished gets its rating job
    on RQ's Redis (the queue Redis on a cluster), after its commit (store/queues.py)."""
    pids = [players.register(redis_db, f"p{i}")["id"] for i in range(2)]
    doc = matches.create(redis_db, pids[0], dict(CLASSIC2), rated=True, ladder="duel")
    for pid in pids:
        doc = matches.join(redis_db, doc.id, pid)
    assert _rq_keys(redis_db) == []
    done = matches.resign(redis_db, doc.id, pids[0])
    assert done.status == FINISHED
    q = cluster.queue_client(redis_db) if cluster.is_cluster(redis_db) else redis_db
    job = Job.fetch(f"rate-{doc.id}", connection=q)
    assert job.func_name == queues.RATE_JOB and job.args == (doc.id,)
    assert Queue(queues.DEFAULT, connection=q).job_ids == [job.id]


def test_a_job_that_cannot_be_queued_leaves_the_change_standing(
        redis_db: redis.Redis, caplog: pytest.LogCaptureFixture) -> None:
    """RQ's Redis refusing a job: logged, and the changes of this process leave it alone for
    QUEUE_BACKOFF_S (the ladder pass rates a match whose job was lost)."""
    tried: list[str] = []

    def refused(qr: redis.Redis) -> None:
        tried.append("refused")
        raise redis.ConnectionError("the queue Redis is away")

    def fine(qr: redis.Redis) -> None:
        tried.append("fine")

    queues.queue_committed(redis_db, [refused, fine])
    assert tried == ["refused"]
    assert "was not queued" in caplog.text
    queues.queue_committed(redis_db, [fine])  # backing off
    assert tried == ["refused"]
    qr = cluster.queue_client(redis_db) if cluster.is_cluster(redis_db) else redis_db
    queues._down_until.pop(qr)  # the backoff over
    queues.queue_committed(redis_db, [fine])
    assert tried == ["refused", "fine"]


def test_each_turn_gets_its_deadline_in_the_index_and_no_job(redis_db: redis.Redis) -> None:
    """A change writes its turn's deadline as the match's deadline index entry, in its commit;
    the deadline dispatcher (jobs/dispatcher.py) makes the RQ job when it is due."""
    doc, pids = started(redis_db)
    assert doc.deadline is not None
    assert redis_db.zscore(keys.DEADLINES, doc.id) == doc.deadline
    pid, action = mover(doc, pids)
    matches.act(redis_db, doc.id, pid, action, respond=respond)
    after = matches.load(redis_db, doc.id)
    assert redis_db.zscore(keys.DEADLINES, doc.id) == after.deadline
    assert _rq_keys(redis_db) == []  # nothing queued for RQ by a change


def test_expire_for_a_stale_version_changes_nothing(redis_db: redis.Redis) -> None:
    doc, pids = started(redis_db)
    assert doc.deadline is not None
    pid, action = mover(doc, pids)
    matches.act(redis_db, doc.id, pid, action, respond=respond)
    moved = matches.load(redis_db, doc.id)
    # a deadline job of the earlier turn, running late: the turn it was for is over
    got = matches.expire(redis_db, doc.id, now=doc.deadline + 1, version=doc.version)
    assert got.version == moved.version
    assert redis_db.hget(keys.match(doc.id), "doc") == moved.to_stored()


# --------------------------------------------------------------------------- the event log


def played(r: redis.Redis, moves: int) -> tuple[MatchDoc, list[str]]:
    """A match after ``moves`` first-legal moves, on a deal that lasts them (round 5 after 30)."""
    doc, pids = started(r, {**CLASSIC2, "seed": "log-beside-1"})
    for _ in range(moves):
        doc = matches.get(r, doc.id)
        if doc.status != ACTIVE:
            break
        pid, action = mover(doc, pids)
        matches.act(r, doc.id, pid, action, respond=respond)
    return matches.load(r, doc.id), pids


def test_the_log_is_a_list_beside_a_document_that_does_not_hold_it(
        redis_db: redis.Redis) -> None:
    r = redis_db
    doc, _ = played(r, 30)
    assert doc.status == ACTIVE and doc.state is not None and doc.state.round > 1
    logged = [event_from_json(raw) for raw in r.lrange(keys.match_events(doc.id), 0, -1)]
    assert r.hget(keys.match(doc.id), "ev") is None  # packed only once the match is over
    assert logged == doc.state.events  # index = seq, every event once, in order
    assert [e.seq for e in logged] == list(range(len(logged)))
    stored = r.hgetall(keys.match(doc.id))
    assert int(stored[b"v"]) == doc.version
    assert int(stored[b"rs"]) == doc.state.round_start_seq
    assert b'"events"' not in zlib.decompress(stored[b"doc"])  # the log is not in it


def test_a_view_reads_the_round_in_play_and_events_the_range_asked(
        redis_db: redis.Redis) -> None:
    r = redis_db
    full, _ = played(r, 30)
    assert full.state is not None
    rs = full.state.round_start_seq
    matches._known.clear()  # as a process that never read this match
    view = matches.get(r, full.id)
    assert view.state is not None and len(view.state.events) == len(full.state.events)
    assert all(e is ELIDED for e in view.state.events[:rs])
    assert view.state.events[rs:] == full.state.events[rs:]
    matches._known.clear()
    some = matches.get(r, full.id, events_from=3)
    assert some.state is not None and some.state.events[3:] == full.state.events[3:]


def test_events_this_process_holds_are_not_read_again_unless_the_log_disagrees(
        redis_db: redis.Redis) -> None:
    """The per-process copy of a round's events (``matches._known``) is only a shortcut: a
    read with an old copy, a copy of another round, a copy longer than the log or one whose
    last event the log doesn't hold (writes lost to a failover) gets exactly what a read
    without it gets."""
    r = redis_db
    full, pids = played(r, 12)
    assert full.state is not None
    rs = full.state.round_start_seq
    round_events = full.state.events[rs:]

    def read_with(copy: tuple[int, list[Any]] | None) -> MatchDoc:
        matches._known.pop(full.id, None)
        if copy is not None:
            matches._known[full.id] = copy
        return matches.get(r, full.id)

    bogus = engine.Event(0, 0, "bogus", {}, None)
    other_way = [*round_events[:-1], bogus]  # a log that went another way (a failover)
    for copy in (None, (rs, round_events[:1]), (rs, []), (0, full.state.events[:rs]),
                 (rs, round_events + [bogus]), (rs, other_way)):
        got = read_with(copy)
        assert got.state is not None and got.state.events[rs:] == round_events, copy
    # and the next action, from that copy, commits the right log
    doc = read_with((rs, round_events[:1]))
    pid, action = mover(doc, pids)
    matches.act(r, doc.id, pid, action, respond=respond)
    after = matches.load(r, doc.id)
    logged = [event_from_json(raw) for raw in r.lrange(keys.match_events(doc.id), 0, -1)]
    assert after.state is not None and logged == after.state.events
    assert [e.seq for e in logged] == list(range(len(logged)))


def test_a_refused_action_commits_the_timeouts_due_through_the_one_commit(
        redis_db: redis.Redis) -> None:
    """Item 4 of issue 25: a refused action whose timeouts were due is refused, and the
    timeouts stay applied, committed by the same compare-and-set as any change (one version
    step per timeout, counted, in the log)."""
    r = redis_db
    doc, pids = started(r, {**CLASSIC2, "turn_timeout_s": 10})
    assert doc.deadline is not None and doc.state is not None
    waiting = pids[1 - doc.state.turn]  # not the seat to act: refused after the timeout
    with pytest.raises((StoreError, engine.EngineError)):
        matches.act(r, doc.id, waiting, {"type": "play", "card": "nope"}, respond=respond,
                    now=doc.deadline + 0.5)
    after = matches.load(r, doc.id)
    assert after.version == doc.version + 1
    assert r.hget(keys.STATS, "timeouts") == b"1"
    assert after.state is not None and any(
        e.data.get("timeout") for e in after.state.events[len(doc.state.events):])
