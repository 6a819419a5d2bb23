"""The archive (``service/store/archive.py``) against a private Redis: finished matches older than
the retention move into files, the store reads them from there as it read them from Redis, a
second (or concurrent) pass changes nothing, and matches in play or finished too recently stay."""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis

from service import engine
from service.store import archive, keys, matches, migrate, players
from service.store.docs import ACTIVE, FINISHED, MatchDoc
from service.store.errors import StoreError

ON_CLUSTER = True

OPTIONS = {"ruleset": "classic", "seats": 2, "turn_timeout_s": 86400}
DAY = 86400.0


@pytest.fixture(autouse=True)
def empty(redis_db: redis.Redis) -> None:
    redis_db.flushall()


def respond(doc: MatchDoc, seat: int, now: float) -> dict[str, Any]:
    return {"version": doc.version}


def played(r: redis.Redis, seed: str, *, finish: bool = True,
           now: float | None = None) -> tuple[str, list[str]]:
    """A match of two new players, played with random legal moves (seeded) to its end (or a
    few moves when not ``finish``)."""
    pids = [players.register(r, f"{seed}-{i}")["id"] for i in range(2)]
    doc = matches.create(r, pids[0], {**OPTIONS, "seed": seed}, now=now)
    for pid in pids:
        doc = matches.join(r, doc.id, pid, now=now)
    rng = random.Random(seed)
    steps = 0
    while doc.status == ACTIVE and (finish or steps < 3):
        assert doc.state is not None
        seat = doc.state.turn
        action = rng.choice(engine.legal_action_dicts(doc.state))
        matches.act(r, doc.id, pids[seat], action, respond=respond, now=now)
        doc = matches.load(r, doc.id)
        steps += 1
    return doc.id, pids


def reads(r: redis.Redis, mid: str, pid: str) -> list[Any]:
    """What the HTTP layer reads of a match, in every way it reads one."""
    out: list[Any] = []
    for events_from in (-1, 0, 5, 10_000):
        d = matches.get(r, mid, events_from=events_from)
        out.append((d.to_json(), d.event_count,
                    [e for e in (d.state.events if d.state else []) if e.seq >= 0]))
    listed = matches.load_many(r, [mid])
    out.append([d.to_json() for d in listed])
    out.append([d.to_json() for d in matches.load_many(r, [mid], views=True)])
    out.append(matches.peek_version(r, mid))
    out.append(matches.list_ids(r, player=pid))
    out.append(matches.list_ids(r, status=FINISHED))
    return out


def hot_keys(r: redis.Redis, mid: str) -> int:
    """The match's document and its log's list (a finished match's log is in its document)."""
    return int(r.exists(keys.match(mid))) + int(r.exists(keys.match_events(mid)))


def test_an_archived_match_reads_as_it_did_and_leaves_redis(redis_db: redis.Redis,
                                                            tmp_path: Path) -> None:
    r = redis_db
    archive.attach(r, str(tmp_path))
    mid, pids = played(r, "arch-1", now=time.time() - 10 * DAY)
    before = reads(r, mid, pids[0])
    # finished: its log packed into its document (matches._pack_log), the list gone
    assert hot_keys(r, mid) == 1 and r.hexists(keys.match(mid), "ev")
    assert r.zscore(keys.TO_ARCHIVE, mid) is not None

    got = archive.archive_due(r, archive.Archive(str(tmp_path)), retention_s=7 * DAY)
    assert (got.archived, got.gone, got.kept) == (1, 0, 0)
    assert hot_keys(r, mid) == 0 and r.zscore(keys.TO_ARCHIVE, mid) is None
    assert os.path.exists(archive.Archive(str(tmp_path)).path(mid))
    assert reads(r, mid, pids[0]) == before

    # a second pass: nothing to do, nothing changes
    again = archive.archive_due(r, archive.Archive(str(tmp_path)), retention_s=7 * DAY)
    assert again.total() == 0
    assert reads(r, mid, pids[0]) == before


def test_matches_in_play_or_finished_within_the_retention_stay(redis_db: redis.Redis,
                                                               tmp_path: Path) -> None:
    r = redis_db
    arc = archive.Archive(str(tmp_path))
    old = time.time() - 10 * DAY
    active, _ = played(r, "arch-active", finish=False, now=old)
    recent, _ = played(r, "arch-recent", now=time.time() - 2 * DAY)
    due, _ = played(r, "arch-due", now=old)
    assert matches.load(r, active).status == ACTIVE
    got = archive.archive_due(r, arc, retention_s=7 * DAY)
    assert got.archived == 1
    assert hot_keys(r, due) == 0
    assert hot_keys(r, active) == 2 and not os.path.exists(arc.path(active))
    assert hot_keys(r, recent) == 1 and not os.path.exists(arc.path(recent))
    # an active match is never even asked for: it is not in the pass's index
    assert r.zscore(keys.TO_ARCHIVE, active) is None


def test_a_pass_in_batches_and_two_at_once_archive_each_match_once(redis_db: redis.Redis,
                                                                   tmp_path: Path) -> None:
    r = redis_db
    arc = archive.Archive(str(tmp_path))
    archive.attach(r, str(tmp_path))
    old = time.time() - 10 * DAY
    ids = [played(r, f"arch-b{i}", now=old)[0] for i in range(5)]
    before = {m: matches.load(r, m).to_json() for m in ids}
    first = archive.archive_due(r, arc, retention_s=7 * DAY, batch=2)
    assert first.archived == 2 and sum(hot_keys(r, m) for m in ids) == 3
    results: list[archive.PassResult] = []
    threads = [threading.Thread(target=lambda: results.append(
        archive.archive_due(r, arc, retention_s=7 * DAY, batch=10))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(x.archived for x in results) == 3  # each of the rest archived by one pass
    assert sum(hot_keys(r, m) for m in ids) == 0 and r.zcard(keys.TO_ARCHIVE) == 0
    assert {m: matches.load(r, m).to_json() for m in ids} == before


def test_a_crash_between_file_and_delete_leaves_both_and_the_next_pass_finishes(
        redis_db: redis.Redis, tmp_path: Path) -> None:
    r = redis_db
    arc = archive.Archive(str(tmp_path))
    mid, _ = played(r, "arch-crash", now=time.time() - 10 * DAY)
    snap = archive.snapshot(r, mid)
    assert snap is not None
    arc.write(mid, archive.encode(snap))  # the file written, then the process died
    assert hot_keys(r, mid) == 1
    got = archive.archive_due(r, arc, retention_s=7 * DAY)
    assert got.archived == 1 and hot_keys(r, mid) == 0


def test_a_match_changed_after_its_snapshot_is_not_deleted(redis_db: redis.Redis,
                                                           tmp_path: Path) -> None:
    r = redis_db
    mid, _ = played(r, "arch-moved", now=time.time() - 10 * DAY)

    class Racing(archive.Archive):
        def write(self, m: str, data: bytes, *, durable: bool = True) -> None:
            super().write(m, data, durable=durable)
            r.hincrby(keys.match(m), "v", 1)  # the match changes while its file is written

    out = archive.archive_one(r, Racing(str(tmp_path)), mid, cutoff=time.time())
    assert out == "kept" and hot_keys(r, mid) == 1 and r.zscore(keys.TO_ARCHIVE, mid)


def test_a_missing_or_corrupt_file_is_archive_unavailable(redis_db: redis.Redis,
                                                          tmp_path: Path) -> None:
    r = redis_db
    arc = archive.Archive(str(tmp_path))
    archive.attach(r, str(tmp_path))
    mid, pids = played(r, "arch-bad", now=time.time() - 10 * DAY)
    assert archive.archive_due(r, arc, retention_s=7 * DAY).archived == 1
    path = arc.path(mid)
    Path(path).write_bytes(b"not zlib at all")
    with pytest.raises(StoreError) as err:
        matches.get(r, mid)
    assert err.value.code == "archive_unavailable" and "corrupt" in err.value.message
    os.unlink(path)
    with pytest.raises(StoreError) as err:
        matches.get(r, mid)
    assert err.value.code == "archive_unavailable" and "missing" in err.value.message
    # a list leaves the unreadable match out instead of failing
    assert matches.load_many(r, [mid]) == []
    # a match that never existed is still plainly not found
    with pytest.raises(StoreError) as err:
        matches.get(r, "m_000000000000")
    assert err.value.code == "not_found"


def test_the_migration_indexes_finished_matches_stored_before_the_index(
        redis_db: redis.Redis, tmp_path: Path) -> None:
    r = redis_db
    mid, _ = played(r, "arch-mig", now=time.time() - 10 * DAY)
    finished_at = matches.load(r, mid).finished_at
    r.delete(keys.TO_ARCHIVE)  # as stored by the code before the index
    assert migrate.archive_index(r) == 1
    assert r.zscore(keys.TO_ARCHIVE, mid) == finished_at
    assert migrate.archive_index(r) == 0
    assert archive.archive_due(r, archive.Archive(str(tmp_path)),
                               retention_s=7 * DAY).archived == 1


def test_a_finished_match_reads_the_same_with_its_log_packed(redis_db: redis.Redis) -> None:
    """The commit that finishes a match packs its log into its document: every read answers
    as from the list, and a retry of the last action (its idempotency record) still answers
    as the first time."""
    r = redis_db
    pids = [players.register(r, f"pack-{i}")["id"] for i in range(2)]
    doc = matches.create(r, pids[0], {**OPTIONS, "seed": "pack"})
    for pid in pids:
        doc = matches.join(r, doc.id, pid)
    rng = random.Random("pack")
    last: tuple[str, dict[str, Any], dict[str, Any]] | None = None
    while doc.status == ACTIVE:
        assert doc.state is not None
        pid, action = pids[doc.state.turn], rng.choice(engine.legal_action_dicts(doc.state))
        answer = matches.act(r, doc.id, pid, action, respond=respond, idempotency_key="k")
        last = (pid, action, answer)
        doc = matches.load(r, doc.id)
        if doc.status == ACTIVE:  # one key for every action: free it for the next one
            r.delete(keys.idempotency(doc.id, pid, "k"))
    assert last is not None and r.hexists(keys.match(doc.id), "ev")
    assert not r.exists(keys.match_events(doc.id))
    packed = reads(r, doc.id, pids[0])
    pid, action, answer = last
    assert matches.act(r, doc.id, pid, action, respond=respond, idempotency_key="k") == answer

    # the same match with its log as a list (as before packing, or when packing failed)
    raw = r.hget(keys.match(doc.id), "ev")
    assert isinstance(raw, bytes)
    log = matches.unpack_log(raw)
    r.hdel(keys.match(doc.id), "ev")
    r.rpush(keys.match_events(doc.id), *(orjson.dumps((e.seq, e.round, e.type, e.data, e.to))
                                          for e in log))
    matches._known.clear()
    assert reads(r, doc.id, pids[0]) == packed
