"""The inbox never loses a notice silently (issue 23, item 4), on a real Redis (and a Redis
Cluster): challenge notices have a stream and a cap of their own, so a flood of them never
evicts a match notice; one cursor pages through both in order; a cursor older than what was
trimmed is refused with ``cursor_expired`` and the cursor to go on from."""

from __future__ import annotations

import time

import orjson
import pytest
import redis

from service.store import inbox
from service.store.errors import StoreError

ON_CLUSTER = True

PID = "p_00000000abcd"


def match_notice(r: redis.Redis, i: int) -> None:
    """A match notice as ``inbox.queue`` writes it (the same stream, cap and trimming)."""
    r.xadd(inbox.key(PID), {"n": orjson.dumps({"type": "your_turn", "match_id": f"m_{i}",
                                               "version": i})},
           maxlen=inbox.MAXLEN, approximate=True)


def challenge_notices(r: redis.Redis, n: int) -> None:
    for start in range(0, n, 100):
        pipe = r.pipeline()
        for i in range(start, min(n, start + 100)):
            inbox.push(pipe, PID, {"type": "challenge", "challenge_id": f"c_{i}",
                                   "match_id": None})
        pipe.execute()


def read_all(r: redis.Redis, after: str | None, count: int = 100) -> tuple[list[dict], str]:
    out: list[dict] = []
    cursor = after
    while True:
        page, nxt = inbox.read(r, PID, cursor, count=count)
        out += page
        if not page:
            return out, nxt
        cursor = nxt


def test_a_challenge_flood_never_evicts_a_match_notice(redis_db: redis.Redis) -> None:
    r = redis_db
    for i in range(5):
        match_notice(r, i)
    challenge_notices(r, 2000)  # ten times the challenge stream's cap
    match_notice(r, 5)
    got, _ = read_all(r, None)
    turns = [n["match_id"] for n in got if n["type"] == "your_turn"]
    assert turns == [f"m_{i}" for i in range(6)]
    kept = [n for n in got if n["type"] == "challenge"]
    assert inbox.CHALLENGE_MAXLEN <= len(kept) < 2000
    assert kept[-1]["challenge_id"] == "c_1999"  # the newest are kept


def test_one_cursor_pages_through_both_streams_in_order(redis_db: redis.Redis) -> None:
    r = redis_db
    for i in range(30):
        match_notice(r, i)
        challenge_notices(r, 1) if i % 3 == 0 else None
    whole, last = read_all(r, None, count=1000)
    assert len(whole) == 40
    cursors = [tuple(map(int, n["cursor"].split("-"))) for n in whole]
    assert cursors == sorted(cursors)
    paged, last_paged = read_all(r, None, count=7)
    assert [n["cursor"] for n in paged] == [n["cursor"] for n in whole]
    assert last_paged == last == inbox.head(r, PID)
    assert inbox.read(r, PID, last) == ([], last)


def test_a_cursor_older_than_what_is_kept_gets_cursor_expired(redis_db: redis.Redis) -> None:
    r = redis_db
    match_notice(r, 0)
    cursor = inbox.head(r, PID)
    for i in range(1, inbox.MAXLEN + 300):
        match_notice(r, i)
    with pytest.raises(StoreError) as e:
        inbox.read(r, PID, cursor)
    assert e.value.code == "cursor_expired"
    oldest = e.value.extra["oldest_cursor"]
    got, _ = read_all(r, oldest)  # the client resyncs, then goes on from there
    assert got and got[-1]["match_id"] == f"m_{inbox.MAXLEN + 299}"
    first = int(got[0]["match_id"].removeprefix("m_"))
    assert [n["match_id"] for n in got] == [f"m_{i}" for i in range(first, inbox.MAXLEN + 300)]
    # a cursor from before an inbox ever trimmed, and reading from the oldest, are fine
    assert inbox.read(r, PID, None)[0]


def test_a_cursor_behind_trimmed_challenge_notices_expires_too(redis_db: redis.Redis) -> None:
    r = redis_db
    match_notice(r, 0)
    cursor = inbox.head(r, PID)
    challenge_notices(r, 1000)
    with pytest.raises(StoreError) as e:
        inbox.read(r, PID, cursor)
    assert e.value.code == "cursor_expired"
    got, _ = read_all(r, e.value.extra["oldest_cursor"])
    assert got and got[-1]["challenge_id"] == "c_999"


def test_notices_of_the_current_millisecond_wait_for_the_next_read(
        redis_db: redis.Redis) -> None:
    """An entry the other stream could still precede (same millisecond) is not handed out:
    here one dated a minute ahead stays back, and the cursor does not pass it."""
    r = redis_db
    match_notice(r, 0)
    (first,), cursor = inbox.read(r, PID, None)
    ahead = int(time.time() * 1000) + 60_000
    r.xadd(inbox.key(PID), {"n": orjson.dumps({"type": "your_turn", "match_id": "m_x"})},
           id=f"{ahead}-0")
    assert inbox.read(r, PID, cursor) == ([], cursor)
