"""Ladder seasons and entries, at the store (real Redis, no HTTP): a reset puts every rating back
to the prior and keeps (and marks) the history; removing an entry drops the entry and record."""

from __future__ import annotations

import json

import pytest
import redis

from service.store import audit, keys, ladders, matches, moderation, names, players, presence
from service.store.errors import StoreError
from service.store.ladder_config import LadderConfig
from service.store.rating import Record

ON_CLUSTER = True  # (tests/conftest.py: also on a private 3-master Redis Cluster)

LAD = LadderConfig("duel", "classic", 2)


def _rated(r: redis.Redis, pid: str, mu: float, at: float) -> None:
    r.hset(keys.ladder(LAD.name, "players"), pid,
           Record(mu=mu, sigma=2.0, games=9, wins=6, last_at=at).to_json())
    r.lpush(keys.ladder(LAD.name, f"h:{pid}"), json.dumps(
        {"match_id": "m_000000000001", "at": at, "seat": 0, "place": 1, "players": 2,
         "mu": mu, "sigma": 2.0, "rating": mu - 6, "timeouts": 0}))


def test_reset_starts_a_season_from_the_prior_and_keeps_marked_history(
        redis_db: redis.Redis) -> None:
    p = players.register(redis_db, "seasoned")["id"]
    ladders.enter(redis_db, LAD, p, now=100.0)
    _rated(redis_db, p, 40.0, at=1000.0)
    (row,) = ladders.leaderboard(redis_db, LAD)
    assert row["mu"] == 40.0
    before, after = moderation.reset_ladder(redis_db, LAD, now=2000.0)
    assert before == {"season": 1, "rated_players": 1}
    assert after == {"season": 2, "started_at": 2000.0}
    (row,) = ladders.leaderboard(redis_db, LAD)  # still entered, back to the prior
    assert (row["mu"], row["games"], row["entered"]) == (Record().mu, 0, True)
    standing = ladders.standing(redis_db, LAD, p)
    assert standing is not None and len(standing["history"]) == 1
    season = moderation.season(redis_db, LAD)
    assert moderation.season_of(season, standing["history"][0]["at"]) == 1
    assert moderation.season_of(season, 2500.0) == 2
    # the season that ended keeps its final records
    kept = redis_db.hget(keys.ladder(LAD.name, "s1:players"), p)
    assert kept is not None and json.loads(kept)["mu"] == 40.0
    moderation.reset_ladder(redis_db, LAD, now=3000.0)
    season = moderation.season(redis_db, LAD)
    assert [moderation.season_of(season, t) for t in (1000.0, 2500.0, 3500.0)] == [1, 2, 3]


def test_remove_entry_drops_entry_and_record(redis_db: redis.Redis) -> None:
    p = players.register(redis_db, "removed")["id"]
    ladders.enter(redis_db, LAD, p)
    _rated(redis_db, p, 30.0, at=1000.0)
    before, after = moderation.remove_entry(redis_db, LAD, p)
    assert before["entered"] and before["record"]["mu"] == 30.0
    assert ladders.leaderboard(redis_db, LAD) == []
    assert ladders.history(redis_db, LAD.name, p)  # history stays


def test_banned_player_hidden_from_leaderboard_until_unbanned(redis_db: redis.Redis) -> None:
    p = players.register(redis_db, "hidden")["id"]
    _rated(redis_db, p, 30.0, at=1000.0)
    moderation.ban(redis_db, p, reason="cheating", until=None, by="t", ladders=[LAD])
    assert ladders.leaderboard(redis_db, LAD) == []
    moderation.unban(redis_db, p)
    assert [row["player_id"] for row in ladders.leaderboard(redis_db, LAD)] == [p]


def test_ban_with_until_lapses_by_itself(redis_db: redis.Redis) -> None:
    p = players.register(redis_db, "lapsing")
    moderation.ban(redis_db, p["id"], reason="cool off", until=5000.0, by="t", ladders=[LAD],
                   now=1000.0)
    assert players.access(redis_db, p["token"], now=4999.0).ban is not None
    assert players.access(redis_db, p["token"], now=5000.0).ban is None


def test_audit_read_pages_newest_first(redis_db: redis.Redis) -> None:
    ids = [audit.record(redis_db, admin="a", action="ban", target=f"p{i}", now=1000.0 + i)
           for i in range(5)]
    page, nxt = audit.read(redis_db, limit=2)
    assert [e["target"] for e in page] == ["p4", "p3"] and nxt == ids[3]
    page, nxt = audit.read(redis_db, after=nxt, limit=3)
    assert [e["target"] for e in page] == ["p2", "p1", "p0"] and nxt is None


def test_banned_player_is_never_scheduled(redis_db: redis.Redis) -> None:
    a, b, c = (players.register(redis_db, f"sched{i}")["id"] for i in range(3))
    for p in (a, b, c):
        ladders.enter(redis_db, LAD, p)
        presence.touch(redis_db, p)
    moderation.ban(redis_db, b, reason="dodging", until=None, by="t", ladders=[LAD])
    presence.touch(redis_db, b)  # a poll still in flight when the ban came
    formed = ladders.form_matches(redis_db, LAD)
    assert len(formed) == 1
    assert set(matches.load(redis_db, formed[0]).seats) == {a, c}
    assert b not in {row["player_id"] for row in ladders.leaderboard(redis_db, LAD)}


def test_rename_holds_the_old_name_and_shows_the_new(redis_db: redis.Redis) -> None:
    names.forget()
    p = players.register(redis_db, "Old-Name")["id"]
    before, after = moderation.rename(redis_db, p, "new-name")
    assert (before["name"], after["name"]) == ("Old-Name", "new-name")
    assert players.find(redis_db, "NEW-NAME") == p
    assert players.find(redis_db, "old-name") is None  # held back: names nobody
    with pytest.raises(StoreError) as refused:
        players.register(redis_db, "old-NAME")
    assert refused.value.code == "name_taken"
    assert names.shown(redis_db)[p] == "new-name"
    assert [row["id"] for row in moderation.search(redis_db, "NEW")] == [p]
    moderation.rename(redis_db, p, "Old-Name")  # an operator may undo a rename
    assert players.find(redis_db, "old-name") == p and players.find(redis_db, "new-name") is None


def test_deleted_account_is_gone_and_shown_as_deleted(redis_db: redis.Redis) -> None:
    names.forget()
    p = players.register(redis_db, "leaving")
    out = moderation.delete_account(redis_db, p["id"], ladders=[LAD])
    assert out["deleted"] and out["resigned_matches"] == []
    assert players.access(redis_db, p["token"]).player is None
    assert players.find(redis_db, "leaving") is None and not redis_db.exists(keys.player(p["id"]))
    assert names.shown(redis_db)[p["id"]] == names.DELETED_NAME
    assert players.hidden(redis_db, [p["id"]]) == {p["id"]}
    with pytest.raises(StoreError):
        players.register(redis_db, "Leaving")


def test_rotated_token_is_refused_and_the_new_one_works(redis_db: redis.Redis) -> None:
    p = players.register(redis_db, "rotating")
    assert players.access(redis_db, p["token"]).player == p["id"]  # (now cached)
    new = players.rotate_token(redis_db, p["id"])
    assert players.access(redis_db, p["token"]).player is None
    assert players.access(redis_db, new).player == p["id"]
