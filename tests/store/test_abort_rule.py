"""The abort rule and what still counts (issue 11, item 2), on the store with explicit clock
readings (no worker: the service clock is the wall clock here).

- A rated match in which a seat never made a move of its own before its first timeout is
  aborted at that timeout: finished, no result, rated for nobody; the absent bot is benched
  until it polls again.
- Once a seat has moved, its later timeouts count as before (automatic moves, a forfeit after
  ``max_timeouts`` in a row), and so does a resignation, even before any move.
- Unrated matches never abort."""

from __future__ import annotations

import random
from typing import Any

import redis

from service.config import LadderConfig
from service.http.views import player_view
from service.store import keys, ladders, matches, players, presence
from service.store.docs import ACTIVE, FINISHED, MatchDoc
from tests.support.live import SAFE_DEAL

LAD = LadderConfig("ab", "classic", 2, turn_timeout_s=10)


def ladder_match(r: redis.Redis, tag: str) -> tuple[MatchDoc, list[str]]:
    """A rated ladder match formed by the scheduler's pass (seats in the doc's order), on a known
    deal: whoever moves first, round 1 goes on to the other seat's first turn."""
    pids = [players.register(r, f"{tag}{i}-{random.getrandbits(30):x}")["id"] for i in range(2)]
    for pid in pids:
        ladders.enter(r, LAD, pid)
        presence.touch(r, pid)
    (mid,) = ladders.form_matches(r, LAD, rng=random.Random(1), deal=SAFE_DEAL)
    doc = matches.load(r, mid)
    assert doc.rated and doc.status == ACTIVE and doc.moved == [False, False]
    assert doc.fixed_by_creator == ["deck", "first_seat", "seed"]  # the views say so
    return doc, doc.seats


def first_legal(doc: MatchDoc) -> dict[str, Any]:
    assert doc.state is not None
    return dict(player_view(doc, doc.state.turn)["legal_actions"][0])


def move(r: redis.Redis, doc: MatchDoc, seats: list[str]) -> MatchDoc:
    assert doc.state is not None
    matches.act(r, doc.id, seats[doc.state.turn], first_legal(doc), respond=player_view,
                expected_version=doc.version)
    return matches.load(r, doc.id)


def test_a_seat_that_never_moved_aborts_the_match_at_its_first_timeout(
        redis_db: redis.Redis) -> None:
    r = redis_db
    doc, seats = ladder_match(r, "never")
    assert doc.state is not None and doc.deadline is not None
    absent = doc.state.turn
    events = len(doc.state.events)
    before_deadline = matches.expire(r, doc.id, now=doc.deadline - 0.01)
    assert before_deadline.version == doc.version and before_deadline.status == ACTIVE
    got = matches.expire(r, doc.id, now=doc.deadline + 0.01)
    assert got.status == FINISHED and got.version == doc.version + 1
    assert got.aborted is not None and got.aborted["reason"] == "absent"
    assert got.aborted["seat"] == absent and got.aborted["player_id"] == seats[absent]
    assert got.state is not None and len(got.state.events) == events  # no automatic move
    assert got.deadline is None and r.zscore(keys.DEADLINES, doc.id) is None
    # over for everyone: nobody can move any more
    for seat in (absent, 1 - absent):
        try:
            matches.act(r, doc.id, seats[seat], {"type": "play", "card": "guard"},
                        respond=player_view)
            raise AssertionError("an aborted match took a move")
        except matches.StoreError as e:
            assert e.code == "match_not_active"
    stored = matches.load(r, doc.id)
    assert stored.aborted == got.aborted


def test_the_other_seat_moved_then_the_absent_one_aborts_it(redis_db: redis.Redis) -> None:
    r = redis_db
    doc, seats = ladder_match(r, "half")
    assert doc.state is not None
    mover = doc.state.turn
    doc = move(r, doc, seats)
    assert doc.moved is not None and doc.moved[mover] and not doc.moved[1 - mover]
    assert doc.state is not None and doc.state.turn == 1 - mover and doc.deadline is not None
    got = matches.expire(r, doc.id, now=doc.deadline + 0.01)
    assert got.aborted is not None and got.aborted["seat"] == 1 - mover


def test_after_its_first_move_a_seat_is_timed_out_and_rated_as_before(
        redis_db: redis.Redis) -> None:
    r = redis_db
    doc, seats = ladder_match(r, "moved")
    while doc.moved != [True, True]:  # both seats have moved at least once
        doc = move(r, doc, seats)
    assert doc.status == ACTIVE
    assert doc.state is not None and doc.deadline is not None
    sleeper = doc.state.turn
    got = matches.expire(r, doc.id, now=doc.deadline + 0.01)
    assert got.aborted is None and got.status == ACTIVE
    assert got.state is not None and got.state.timeouts[sleeper] == 1  # an automatic move
    # three in a row (max_timeouts) forfeit the match, rated
    now = doc.deadline
    while got.status == ACTIVE:
        assert got.state is not None and got.deadline is not None
        if got.state.turn != sleeper:
            got = move(r, got, seats)
            continue
        now = got.deadline + 0.01
        got = matches.expire(r, doc.id, now=now)
    assert got.aborted is None and got.state is not None and got.state.forfeited[sleeper]
    assert ladders.rate(r, doc.id, {LAD.name: LAD})
    recs = [ladders.record(r, LAD, p) for p in seats]
    assert all(x is not None and x.games == 1 for x in recs)
    loser, winner = recs[sleeper], recs[1 - sleeper]
    assert loser is not None and winner is not None and winner.mu > loser.mu
    assert loser.timeouts >= 3 and loser.bad_streak == 1


def test_resigning_before_any_move_is_a_rated_loss(redis_db: redis.Redis) -> None:
    r = redis_db
    doc, seats = ladder_match(r, "resign")
    done = matches.resign(r, doc.id, seats[0])
    assert done.status == FINISHED and done.aborted is None
    assert ladders.rate(r, doc.id, {LAD.name: LAD})
    quitter, other = (ladders.record(r, LAD, p) for p in seats)
    assert quitter is not None and other is not None
    assert quitter.games == other.games == 1 and other.wins == 1 and other.mu > quitter.mu


def test_unrated_matches_never_abort(redis_db: redis.Redis) -> None:
    r = redis_db
    pids = [players.register(r, f"free{i}-{random.getrandbits(30):x}")["id"] for i in range(2)]
    doc = matches.create(r, pids[0], {"ruleset": "classic", "seats": 2, "turn_timeout_s": 5})
    for pid in pids:
        doc = matches.join(r, doc.id, pid)
    assert doc.state is not None and doc.deadline is not None
    got = matches.expire(r, doc.id, now=doc.deadline + 0.01)
    assert got.aborted is None and got.status == ACTIVE
    assert got.state is not None and sum(got.state.timeouts) == 1


def test_an_aborted_match_is_rated_for_nobody_once_and_benches_the_absent_bot(
        redis_db: redis.Redis) -> None:
    r = redis_db
    doc, seats = ladder_match(r, "settle")
    assert doc.state is not None and doc.deadline is not None
    absent = doc.state.turn
    matches.expire(r, doc.id, now=doc.deadline + 0.01)
    assert ladders.rate(r, doc.id, {LAD.name: LAD})
    assert not ladders.rate(r, doc.id, {LAD.name: LAD})  # exactly once
    fresh = ladders.Record()
    for seat, pid in enumerate(seats):
        rec = ladders.record(r, LAD, pid)
        assert rec is not None
        assert (rec.mu, rec.sigma, rec.games, rec.wins, rec.bad_streak) == \
            (fresh.mu, fresh.sigma, 0, 0, 0)
        assert (rec.benched_at is not None) is (seat == absent)
        (entry,) = ladders.history(r, LAD.name, pid)
        assert entry["match_id"] == doc.id and entry["aborted"] and entry["place"] is None
        assert entry["rating"] == fresh.rating
    assert all(int(v) == 0 for v in r.hgetall(keys.ladder(LAD.name, "active")).values())
    assert not r.hexists(keys.ladder(LAD.name, "inflight"), doc.id)
    status = ladders.entry_status(r, LAD, seats[absent])
    assert status["benched"] and status["benched_reason"].startswith("absent")
    # it polls again: unbenched, and on the next pass it is scheduled again
    presence.touch(r, seats[absent])
    assert not ladders.entry_status(r, LAD, seats[absent])["benched"]
    assert len(ladders.form_matches(r, LAD, rng=random.Random(2))) == 1
