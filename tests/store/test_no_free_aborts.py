"""No free aborts (issue 23, item 3), on the store with explicit clock readings: a seat may
abort a rated match only if its bot asked nothing about it (no view, no notice, no event read,
no move) and only in round 1; repeated aborts bench the bot for an escalating time.
The whole-stack side (a dodger over HTTP, the worker's timeouts and rating job) is in
tests/system/test_abort_dodging.py."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest
import redis

from service import engine
from service.config import LadderConfig
from service.engine import EngineError
from service.http.views import player_view
from service.store import aborts, attendance, keys, ladders, matches, players, presence
from service.store.docs import ACTIVE, FINISHED, MatchDoc
from tests.support.live import SAFE_DEAL, round_one_deck

LAD = LadderConfig("nf", "classic", 2, turn_timeout_s=10)
#: seat 0 holds two guards and seat 1 a priest: a guard that names the priest ends round 1 before
#: seat 1 has had a turn
KNOCKOUT_DEAL = {"deck": round_one_deck(["guard", "priest", "guard"]), "first_seat": 0,
                 "seed": "knockout"}

# Run on a single Redis and on a 3-master Redis Cluster (tests/conftest.py).
ON_CLUSTER = True


@pytest.fixture(autouse=True)
def _fresh_memory() -> None:
    attendance.forget()  # this process's memory of what it recorded (Redis is flushed)


def ladder_match(r: redis.Redis, tag: str, pids: list[str] | None = None,
                 now: float | None = None, deal: dict[str, Any] = SAFE_DEAL) -> MatchDoc:
    """A ladder match formed by a scheduling pass, on a known deal (by default, whoever moves
    first, round 1 goes on to the other seat's first turn)."""
    if pids is None:
        pids = [players.register(r, f"{tag}{i}-{random.getrandbits(30):x}")["id"]
                for i in range(2)]
    for pid in pids:
        ladders.enter(r, LAD, pid)
        presence.touch(r, pid, now)
    (mid,) = ladders.form_matches(r, LAD, rng=random.Random(1), now=now, deal=deal)
    return matches.load(r, mid)


def act(r: redis.Redis, doc: MatchDoc, action: dict[str, Any]) -> MatchDoc:
    assert doc.state is not None
    matches.act(r, doc.id, doc.seats[doc.state.turn], action, respond=player_view,
                expected_version=doc.version)
    return matches.load(r, doc.id)


def legal(doc: MatchDoc) -> list[dict[str, Any]]:
    assert doc.state is not None
    return [dict(a) for a in player_view(doc, doc.state.turn)["legal_actions"]]


def test_a_seat_that_read_its_view_is_timed_out_and_rated_not_aborted(
        redis_db: redis.Redis) -> None:
    r = redis_db
    doc = ladder_match(r, "dodger")
    assert doc.state is not None and doc.deadline is not None
    dodger = doc.state.turn
    attendance.note_doc(r, doc.seats[dodger], doc)  # what GET .../view records
    got = matches.expire(r, doc.id, now=doc.deadline + 0.01)
    assert got.aborted is None and got.status == ACTIVE
    assert got.state is not None and got.state.timeouts[dodger] == 1  # an automatic move
    now = doc.deadline
    while got.status == ACTIVE:  # it never moves: three timeouts in a row forfeit it
        assert got.state is not None and got.deadline is not None
        if got.state.turn != dodger:
            got = act(r, got, legal(got)[0])
            continue
        now = got.deadline + 0.01
        got = matches.expire(r, doc.id, now=now)
    assert got.aborted is None and got.state is not None and got.state.forfeited[dodger]
    assert ladders.rate(r, doc.id, {LAD.name: LAD})
    loser, winner = (ladders.record(r, LAD, doc.seats[s]) for s in (dodger, 1 - dodger))
    assert loser is not None and winner is not None
    assert loser.games == winner.games == 1 and winner.wins == 1 and winner.mu > loser.mu
    assert aborts.status(r, doc.seats[dodger])["aborts_24h"] == 0


def test_a_notice_read_counts_as_asking(redis_db: redis.Redis) -> None:
    """GET /v1/me/events records the matches of the match_started / your_turn notices it
    returns; here through the store function it calls, once per process and match."""
    r = redis_db
    doc = ladder_match(r, "heard")
    assert doc.state is not None and doc.deadline is not None
    seat = doc.state.turn
    attendance.note(r, doc.seats[seat], [doc.id, doc.id])
    assert attendance.asked(r, doc.id, doc.seats[seat])
    assert not attendance.asked(r, doc.id, doc.seats[1 - seat])
    got = matches.expire(r, doc.id, now=doc.deadline + 0.01)
    assert got.aborted is None and got.status == ACTIVE


def test_an_unrated_or_finished_read_records_nothing(redis_db: redis.Redis) -> None:
    r = redis_db
    pids = [players.register(r, f"free{i}-{random.getrandbits(30):x}")["id"] for i in range(2)]
    doc = matches.create(r, pids[0], {"ruleset": "classic", "seats": 2})
    for pid in pids:
        doc = matches.join(r, doc.id, pid)
    attendance.note_doc(r, pids[0], doc)
    assert not attendance.asked(r, doc.id, pids[0])  # (no write for a match that can't abort)


def first_move(doc: MatchDoc, *, ends_round: bool) -> dict[str, Any] | None:
    """A legal move that ends the round at once, or one that does not."""
    assert doc.state is not None
    for action in legal(doc):
        trial = doc.state.clone()
        try:
            engine.apply_inplace(trial, action, seat=trial.turn)
        except EngineError:
            continue
        if (trial.round > doc.state.round) is ends_round:
            return action
    return None


def test_a_seat_knocked_out_before_its_first_turn_cannot_abort_in_round_2(
        redis_db: redis.Redis) -> None:
    r = redis_db
    doc = ladder_match(r, "r2", deal=KNOCKOUT_DEAL)
    first = first_move(doc, ends_round=True)
    assert first is not None and first["card"] == "guard", first
    assert doc.state is not None and doc.state.turn == 0
    absent = 1
    doc = act(r, doc, first)
    assert doc.state is not None and doc.state.round == 2 and doc.moved is not None
    won = list(doc.state.tokens)  # round 1's token (the mover's, or the absent seat's)
    assert not doc.moved[absent]  # it never had a turn, and never asked
    while doc.state is not None and doc.state.turn != absent:
        doc = act(r, doc, legal(doc)[0])
    assert doc.status == ACTIVE and doc.deadline is not None
    got = matches.expire(r, doc.id, now=doc.deadline + 0.01)
    assert got.aborted is None and got.status == ACTIVE  # a timeout, not an abort
    assert got.state is not None and got.state.timeouts[absent] == 1
    # the token won in round 1 stands (the timeout's own move may even end round 2)
    assert sum(won) == 1 and all(t >= w for t, w in zip(got.state.tokens, won, strict=True))


def abort_one(r: redis.Redis, pids: list[str], now: float) -> MatchDoc:
    """A ladder match formed at ``now`` that pids[1] aborts by its absence, settled."""
    doc = ladder_match(r, "ab", pids, now=now)
    assert doc.state is not None
    if doc.seats[doc.state.turn] != pids[1]:  # the present bot moves first: round 1 goes on
        doc = act(r, doc, legal(doc)[0])
    assert doc.state is not None and doc.state.round == 1 and doc.deadline is not None
    assert doc.seats[doc.state.turn] == pids[1]
    got = matches.expire(r, doc.id, now=doc.deadline + 0.01)
    assert got.status == FINISHED and got.aborted is not None
    assert got.aborted["player_id"] == pids[1]
    assert ladders.rate(r, doc.id, {LAD.name: LAD}, now=now)
    return got


def test_repeated_aborts_bench_the_bot_for_an_escalating_time(redis_db: redis.Redis) -> None:
    r = redis_db
    pids = [players.register(r, f"esc{i}-{random.getrandbits(30):x}")["id"] for i in range(2)]
    flaky = pids[1]
    policy = LAD.abort_policy
    assert policy.bench_after == 3 and policy.bench_s[:3] == (900, 3600, 21600)
    t0 = 1_000_000.0
    t = t0
    for i in range(policy.bench_after):
        abort_one(r, pids, t)
        timed = aborts.current(r, [flaky], t)[0]
        assert (timed is not None) is (i == policy.bench_after - 1)
        t += 60
    bench = aborts.current(r, [flaky], t)[0]
    assert bench is not None and bench["level"] == 1 and bench["until"] == t - 60 + 900
    assert "benched 15 min" in bench["reason"] and "lasts 1 h" in bench["reason"]
    # benched on the ladder whether it polls or not, with the reason shown
    presence.touch(r, flaky, t)
    status = ladders.entry_status(r, LAD, flaky, now=t)
    assert status["benched"] and status["benched_reason"] == bench["reason"]
    row = next(x for x in ladders.leaderboard(r, LAD, now=t) if x["player_id"] == flaky)
    assert row["benched"] and row["benched_reason"] == bench["reason"]
    presence.touch(r, pids[0], t)
    assert ladders.form_matches(r, LAD, now=t, rng=random.Random(3)) == []
    assert aborts.status(r, flaky, t)["bench"]["reason"] == bench["reason"]
    # the bench ends: scheduled again
    t = bench["until"] + 1
    for p in pids:
        presence.touch(r, p, t)
    assert not ladders.entry_status(r, LAD, flaky, now=t)["benched"]
    # the aborts that earned it are spent: two more do not bench, a third benches for 1 h
    for i in range(policy.bench_after):
        abort_one(r, pids, t)
        timed = aborts.current(r, [flaky], t)[0]
        assert (timed is not None) is (i == policy.bench_after - 1), i
        t += 60
    second = aborts.current(r, [flaky], t)[0]
    assert second is not None and second["level"] == 2 and second["until"] == t - 60 + 3600
    assert "benched 1 h" in second["reason"] and "lasts 6 h" in second["reason"]
    # a week without a bench: the escalation starts over
    t = second["until"] + policy.memory_s + 1
    for p in pids:
        presence.touch(r, p, t)
    for _ in range(policy.bench_after):
        abort_one(r, pids, t)
        t += 60
    third = aborts.current(r, [flaky], t)[0]
    assert third is not None and third["level"] == 1 and "benched 15 min" in third["reason"]


def test_aborts_of_long_ago_do_not_add_up(redis_db: redis.Redis) -> None:
    r = redis_db
    policy = aborts.AbortPolicy(bench_after=2, window_s=3600, bench_s=(60,))
    assert aborts.record(r, "p_000000000001", "m_a", policy, now=1000.0) is None
    assert aborts.record(r, "p_000000000001", "m_a", policy, now=1001.0) is None  # same match
    assert aborts.record(r, "p_000000000001", "m_b", policy, now=1000.0 + 3601) is None
    bench = aborts.record(r, "p_000000000001", "m_c", policy, now=1000.0 + 3700)
    assert bench is not None and bench["until"] == 1000.0 + 3700 + 60


def test_aborts_settled_at_once_bench_one_level_each(redis_db: redis.Redis) -> None:
    """Eight aborts of one bot counted at the same moment by eight threads (eight workers'
    timeouts): each bench they earn is one level above the last, none is given twice."""
    r = redis_db
    pid = "p_0000000000aa"
    policy = aborts.AbortPolicy(bench_after=1, window_s=3600, bench_s=(60, 120, 180, 240),
                                memory_s=7200)
    start = threading.Barrier(8)
    got: list[dict[str, Any] | None] = []

    def count(i: int) -> None:
        start.wait()
        got.append(aborts.record(r, pid, f"m_{i:012x}", policy, now=1000.0 + i))

    threads = [threading.Thread(target=count, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8  # no thread raised
    levels = sorted(b["level"] for b in got if b is not None)
    assert levels == list(range(1, len(levels) + 1))
    assert r.zcard(keys.player_benches(pid)) == len(levels) >= 1
