"""The key layout's start-up migration (service/store/migrate.py): a ladder's keys written before
they carried the hash tag ``{<ladder>}`` are found under the new names, nothing is lost, and the
ladder reads them as before."""

from __future__ import annotations

import redis

from service.store import keys, ladders, migrate
from service.store.ladder_config import LadderConfig
from service.store.rating import Record

DUEL = LadderConfig("duel", "classic", 2)


def test_legacy_ladder_keys_are_renamed_and_read_as_before(redis_db: redis.Redis) -> None:
    r = redis_db
    r.delete(migrate.DONE_KEY)  # a Redis from before (an API server of this session may have run)
    rec = Record(mu=30.0, sigma=5.0, games=3)
    r.hset("ll:lad:duel:players", "p_000000000001", rec.to_json())
    r.zadd("ll:lad:duel:entries", {"p_000000000001": 10.0})
    r.rpush("ll:lad:duel:h:p_000000000001", '{"match_id": "m_1"}')
    r.set("ll:m:{m_000000000001}:state", "{}")  # not a ladder key: left alone
    assert migrate.run(r) == [migrate.LADDER_TAGS]
    assert r.keys("ll:lad:duel:*") == []
    got = ladders.record(r, DUEL, "p_000000000001")
    assert got is not None and got.mu == 30.0 and got.games == 3
    assert r.zscore(keys.ladder_entries("duel"), "p_000000000001") == 10.0
    assert ladders.history(r, "duel", "p_000000000001") == [{"match_id": "m_1"}]
    assert r.get("ll:m:{m_000000000001}:state") == b"{}"
    assert migrate.run(r) == []  # once per Redis


def test_a_key_written_under_both_names_is_merged(redis_db: redis.Redis) -> None:
    r = redis_db
    r.delete(migrate.DONE_KEY)
    r.zadd("ll:lad:duel:entries", {"p_old": 1.0, "p_both": 5.0})
    r.zadd(keys.ladder_entries("duel"), {"p_new": 2.0, "p_both": 3.0})
    r.hset("ll:lad:duel:active", mapping={"p_old": 1, "p_both": 1})
    r.hset(keys.ladder("duel", "active"), mapping={"p_both": 2})
    migrate.run(r)
    assert dict(r.zrange(keys.ladder_entries("duel"), 0, -1, withscores=True)) == {
        b"p_old": 1.0, b"p_new": 2.0, b"p_both": 3.0}  # the earlier entry time
    assert r.hgetall(keys.ladder("duel", "active")) == {b"p_old": b"1", b"p_both": b"2"}
    assert not r.exists("ll:lad:duel:entries", "ll:lad:duel:active")
