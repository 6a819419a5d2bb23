"""The schema's migration steps (service/store/migrate.py): the steps are numbered in order, a
Redis records the version it is at, ``run`` applies each missing step once, ``require`` refuses
an older or newer schema with a message that says what to do. Step 1 (``ladder-tags``): a
ladder's keys written before they carried the hash tag ``{<ladder>}`` are found under the new
names, nothing is lost, and the ladder reads them as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from service import engine
from service.engine import Event
from service.store import keys, ladders, matches, migrate
from service.store.docs import ELIDED
from service.store.ladder_config import LadderConfig
from service.store.rating import Record

DUEL = LadderConfig("duel", "classic", 2)


def _before_versions(r: redis.Redis) -> None:
    """Make ``r`` a Redis from before versions were recorded (an API server of this session may
    have stamped it)."""
    r.delete(migrate.DONE_KEY, migrate.VERSION_KEY)


def test_legacy_ladder_keys_are_renamed_and_read_as_before(redis_db: redis.Redis) -> None:
    r = redis_db
    _before_versions(r)
    rec = Record(mu=30.0, sigma=5.0, games=3)
    r.hset("ll:lad:duel:players", "p_000000000001", rec.to_json())
    r.zadd("ll:lad:duel:entries", {"p_000000000001": 10.0})
    r.rpush("ll:lad:duel:h:p_000000000001", '{"match_id": "m_1"}')
    r.set("ll:m:{m_000000000001}:state", "{}")  # not a ladder key: left alone
    assert migrate.version(r) == 0
    assert migrate.run(r)[:1] == [migrate.LADDER_TAGS]
    assert migrate.stored_version(r) == migrate.CURRENT
    assert r.keys("ll:lad:duel:*") == []
    got = ladders.record(r, DUEL, "p_000000000001")
    assert got is not None and got.mu == 30.0 and got.games == 3
    assert r.zscore(keys.ladder_entries("duel"), "p_000000000001") == 10.0
    assert ladders.history(r, "duel", "p_000000000001") == [{"match_id": "m_1"}]
    assert r.get("ll:m:{m_000000000001}:state") == b"{}"
    assert migrate.run(r) == []  # once per Redis


def test_a_key_written_under_both_names_is_merged(redis_db: redis.Redis) -> None:
    r = redis_db
    _before_versions(r)
    r.zadd("ll:lad:duel:entries", {"p_old": 1.0, "p_both": 5.0})
    r.zadd(keys.ladder_entries("duel"), {"p_new": 2.0, "p_both": 3.0})
    r.hset("ll:lad:duel:active", mapping={"p_old": 1, "p_both": 1})
    r.hset(keys.ladder("duel", "active"), mapping={"p_both": 2})
    migrate.run(r)
    assert dict(r.zrange(keys.ladder_entries("duel"), 0, -1, withscores=True)) == {
        b"p_old": 1.0, b"p_new": 2.0, b"p_both": 3.0}  # the earlier entry time
    assert r.hgetall(keys.ladder("duel", "active")) == {b"p_old": b"1", b"p_both": b"2"}
    assert not r.exists("ll:lad:duel:entries", "ll:lad:duel:active")


# --------------------------------------------------------------------------- versions


def test_steps_are_numbered_in_order_and_ladder_tags_is_version_1() -> None:
    assert [s.version for s in migrate.STEPS] == list(range(1, len(migrate.STEPS) + 1))
    assert migrate.STEPS[0].name == migrate.LADDER_TAGS and migrate.STEPS[0].version == 1
    assert migrate.CURRENT == migrate.STEPS[-1].version
    assert len({s.name for s in migrate.STEPS}) == len(migrate.STEPS)


def test_an_empty_redis_is_stamped_current_without_migrating(redis_db: redis.Redis) -> None:
    r = redis_db
    _before_versions(r)
    r.hset("ll:svc:clock", "api", "1")  # heartbeats and RQ's keys are not data
    r.set("rq:worker:x", "1")
    assert not migrate.has_data(r)
    assert migrate.version(r) == migrate.CURRENT
    assert migrate.require(r) == migrate.CURRENT
    assert migrate.stored_version(r) == migrate.CURRENT


def test_a_redis_from_the_start_up_migration_era_is_at_version_1(redis_db: redis.Redis) -> None:
    r = redis_db
    _before_versions(r)
    r.sadd(migrate.DONE_KEY, migrate.LADDER_TAGS)
    r.set(keys.player("p_000000000001"), "{}")
    assert migrate.version(r) == 1
    assert migrate.run(r) == [s.name for s in migrate.STEPS[1:]]
    assert migrate.stored_version(r) == migrate.CURRENT


def test_require_refuses_an_older_schema_and_says_to_migrate(redis_db: redis.Redis) -> None:
    r = redis_db
    _before_versions(r)
    r.set(keys.player("p_000000000001"), "{}")  # data, and no version: from before versions
    with pytest.raises(migrate.SchemaMismatch) as err:
        migrate.require(r)
    assert err.value.found == 0 and err.value.wanted == migrate.CURRENT
    assert "python -m service.ops.migrate" in str(err.value)
    assert migrate.stored_version(r) is None  # refusing changes nothing
    migrate.run(r)
    assert migrate.require(r) == migrate.CURRENT


def test_require_and_run_refuse_a_newer_schema(redis_db: redis.Redis) -> None:
    r = redis_db
    migrate.stamp(r, migrate.CURRENT + 1)
    with pytest.raises(migrate.SchemaMismatch, match="newer than this code"):
        migrate.require(r)
    with pytest.raises(migrate.SchemaMismatch):
        migrate.run(r)
    assert migrate.stored_version(r) == migrate.CURRENT + 1


def test_an_interrupted_migration_carries_on_from_the_last_recorded_step(
        redis_db: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    r = redis_db
    calls: list[str] = []
    steps = (migrate.Step(1, "one", lambda _r: calls.append("one")),
             migrate.Step(2, "two", lambda _r: calls.append("two")),
             migrate.Step(3, "three", lambda _r: calls.append("three")))
    monkeypatch.setattr(migrate, "STEPS", steps)
    monkeypatch.setattr(migrate, "CURRENT", 3)
    migrate.stamp(r, 1)
    assert migrate.run(r) == ["two", "three"]
    assert calls == ["two", "three"] and migrate.stored_version(r) == 3
    assert migrate.run(r) == [] and calls == ["two", "three"]  # once


# --------------------------------------------------------------------------- match-events

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "match_doc_v1.json"


def test_a_match_stored_as_one_document_is_migrated_to_its_log_and_plays_on(
        redis_db: redis.Redis) -> None:
    """A match written by the store before the event log was a list (tests/data): after the
    ``match-events`` step it reads back equal, event for event, its views start at the round in
    play, and it takes the next action."""
    r = redis_db
    raw = FIXTURE.read_bytes()
    old = json.loads(raw)
    mid = old["id"]
    r.delete(keys.match(mid), keys.match_events(mid))
    r.set(keys.match(mid), raw)
    assert migrate.match_events(r) >= 1
    assert r.type(keys.match(mid)) == b"hash"
    assert migrate.match_events(r) == 0  # a second pass finds nothing to do
    doc = matches.load(r, mid)
    assert doc.state is not None
    assert [e.to_dict(with_audience=True) for e in doc.state.events] == [
        Event(s, rnd, t, d, None if to is None else tuple(to)).to_dict(with_audience=True)
        for s, rnd, t, d, to in old["state"]["events"]]
    assert doc.version == old["version"] and doc.seats == old["seats"]
    assert {k: v for k, v in old["state"].items() if k != "events"} == \
        {k: v for k, v in json.loads(doc.to_json())["state"].items()}
    # a view reads the round in play only; its events are the old document's
    rs = old["state"]["round_start_seq"]
    got = matches.get(r, mid, now=old["turn_started"] + 1)
    assert got.state is not None and got.state.round_start_seq == rs
    assert got.state.events[rs:] == doc.state.events[rs:]
    assert all(e is ELIDED for e in got.state.events[:rs])
    seat = got.state.turn
    action = engine.legal_action_dicts(got.state)[0]
    view = matches.act(r, mid, got.seats[seat], action,
                       respond=lambda d, s, t: {"version": d.version}, now=old["turn_started"] + 2)
    assert view == {"version": old["version"] + 1}
    after = matches.load(r, mid)
    assert after.state is not None and after.state.events[:len(doc.state.events)] == \
        doc.state.events
    assert len(after.state.events) > len(doc.state.events)
    r.delete(keys.match(mid), keys.match_events(mid))


def test_the_match_events_step_is_registered_and_runs_once(redis_db: redis.Redis) -> None:
    r = redis_db
    r.delete(migrate.DONE_KEY)
    mid = json.loads(FIXTURE.read_bytes())["id"]
    r.delete(keys.match(mid), keys.match_events(mid))
    r.set(keys.match(mid), FIXTURE.read_bytes())
    assert migrate.MATCH_EVENTS in migrate.run(r)
    assert r.llen(keys.match_events(mid)) == 144
    assert migrate.run(r) == []
    r.delete(keys.match(mid), keys.match_events(mid))
