"""The ladder planner (``service/store/ladder_planner.py``) on plain data: no Redis, no server.
The rules of its docstring on small hand-made pools, then the invariants of a pass on thousands
of synthetic bots (every table full and seated, nobody twice, the right bots sit out, mu decides
who meets whom, seat counts stay even over many passes)."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from service.store import ladder_planner
from service.store.ladder_config import LadderConfig
from service.store.rating import MODEL, Record

DUEL = LadderConfig("duel", "classic", 2, interval_s=1)
TABLE = LadderConfig("table", "2019", 4)


def _recs(**kw: dict[str, Any]) -> dict[str, Record]:
    return {p: Record(**{"seats": [0, 0], **v}) for p, v in kw.items()}


def test_planning_rules() -> None:
    duel = DUEL
    now = 1_000_000.0
    rng = random.Random(3)
    # a rematch of the previous table waits (while hold_s says so), then goes ahead
    recs = _recs(a={"last_table": ["b"], "last_at": now - 0.5},
                 b={"last_table": ["a"], "last_at": now - 0.5})
    assert ladder_planner.plan_tables(duel, ["a", "b"], recs, rng, now=now, hold_s=2) == []
    assert len(ladder_planner.plan_tables(duel, ["a", "b"], recs, rng, now=now, hold_s=0)) == 1
    assert len(ladder_planner.plan_tables(duel, ["a", "b"], recs, rng, now=now + 2, hold_s=2)) == 1
    # with others free, nobody meets its last opponent
    recs = _recs(a={"last_table": ["b"]}, b={"last_table": ["a"]},
                 c={"last_table": ["d"]}, d={"last_table": ["c"]})
    for k in range(50):
        tables = ladder_planner.plan_tables(duel, list("abcd"), recs, random.Random(k), now=now)
        assert {frozenset(t) for t in tables}.isdisjoint({frozenset("ab"), frozenset("cd")})
    # the odd bot out is the one with the most recent games; each bot sits where it sat least
    recs = _recs(a={"recent": 5.0, "last_at": now}, b={"recent": 1.0, "last_at": now,
                                                     "seats": [4, 2]},
                 c={"recent": 0.0, "seats": [1, 3]})
    for k in range(20):
        assert ladder_planner.plan_tables(duel, ["a", "b", "c"], recs, random.Random(k),
                                   now=now) == [["c", "b"]]
    # four seats: a bot two games short in a seat gets it
    table = LadderConfig("table", "2019", 4)
    recs = {p: Record(seats=s) for p, s in
            (("a", [2, 2, 2, 0]), ("b", [1, 2, 2, 2]), ("c", [2, 1, 2, 2]), ("d", [2, 2, 1, 2]))}
    assert ladder_planner.plan_tables(table, list("abcd"), recs, rng, now=now) == [list("bcda")]
    # mu decides who meets whom, within the noise
    recs = _recs(**{f"s{i}": {"mu": 10.0 + 30 * (i % 2)} for i in range(8)})
    for k in range(20):
        for t in ladder_planner.plan_tables(duel, list(recs), recs, random.Random(k), now=now):
            assert recs[t[0]].mu == recs[t[1]].mu


def synthetic(n: int, seats: int, rng: random.Random, now: float) -> dict[str, Record]:
    """``n`` bots with varied skill, certainty, recent play, seat history and last tables."""
    recs = {}
    pids = [f"b{i}" for i in range(n)]
    for p in pids:
        recent = rng.choice([0.0, 0.0, rng.uniform(0, 20)])
        recs[p] = Record(mu=rng.gauss(25, 6), sigma=rng.uniform(0.8, MODEL.sigma),
                         games=rng.randrange(200), seats=[rng.randrange(30) for _ in range(seats)],
                         recent=recent, last_at=now - rng.uniform(0, 7200) if recent else None,
                         last_table=rng.sample(pids, seats - 1))
    return recs


@pytest.mark.parametrize("lad,n", [(DUEL, 3001), (TABLE, 2003)])
def test_a_pass_over_thousands_of_bots_seats_everyone_it_can_once(lad: LadderConfig,
                                                                  n: int) -> None:
    now = 2_000_000.0
    rng = random.Random(n)
    recs = synthetic(n, lad.seats, rng, now)
    pool = list(recs)
    tables = ladder_planner.plan_tables(lad, pool, recs, random.Random(1), now=now)
    seated = [p for t in tables for p in t]
    assert all(len(t) == lad.seats for t in tables)
    assert len(seated) == len(set(seated)) == n - n % lad.seats
    assert set(seated) <= set(pool)
    # the bots left out are those with the most recent games (ties: the least uncertain)
    out = set(pool) - set(seated)
    assert len(out) == n % lad.seats
    def prio(p: str) -> float:
        return recs[p].recent_games(now) - recs[p].sigma / MODEL.sigma
    assert min(prio(p) for p in out) >= max(prio(p) for p in seated)


def test_tables_of_thousands_of_bots_join_close_ratings() -> None:
    """A table's bots are neighbours in mu: far closer than bots drawn at random."""
    now = 2_000_000.0
    rng = random.Random(7)
    recs = synthetic(4000, 2, rng, now)
    for r in recs.values():
        r.last_table = []  # no rematch penalties: only mu and the noise decide
    tables = ladder_planner.plan_tables(DUEL, list(recs), recs, random.Random(2), now=now)
    gap = sorted(abs(recs[a].mu - recs[b].mu) for a, b in tables)
    pids = list(recs)
    chance = sorted(abs(recs[rng.choice(pids)].mu - recs[rng.choice(pids)].mu)
                    for _ in range(len(tables)))
    median = len(gap) // 2
    assert gap[median] < chance[median] / 4, (gap[median], chance[median])
    # the noise (sigma / 2) varies pairings but never pairs the extremes of the field
    assert gap[-1] < 6 * MODEL.sigma


def test_no_rematch_among_thousands_while_others_are_free() -> None:
    now = 2_000_000.0
    rng = random.Random(11)
    pids = [f"b{i}" for i in range(2000)]
    rng.shuffle(pids)
    recs = {p: Record(seats=[0, 0]) for p in pids}
    for a, b in zip(pids[::2], pids[1::2], strict=True):  # everyone just played a partner
        recs[a].last_table, recs[b].last_table = [b], [a]
    tables = ladder_planner.plan_tables(DUEL, pids, recs, random.Random(5), now=now)
    assert len(tables) == 1000
    assert not [t for t in tables if t[1] in recs[t[0]].last_table]


def test_seat_counts_stay_within_one_over_many_passes() -> None:
    """Four-seat tables, passes one after another (records updated as rating would): every
    bot's count in every seat stays within one of even (games / 4)."""
    now = 2_000_000.0
    recs = {f"b{i}": Record(seats=[0, 0, 0, 0]) for i in range(400)}
    rng = random.Random(13)
    for k in range(40):
        tables = ladder_planner.plan_tables(TABLE, list(recs), recs, rng, now=now + k)
        for t in tables:
            for seat, p in enumerate(t):
                recs[p].seats[seat] += 1
                recs[p].last_table = [q for q in t if q != p]
    off = Counter(max(abs(c - 10) for c in r.seats) for r in recs.values())
    assert set(off) <= {0, 1}, off
    assert all(sum(r.seats) == 40 for r in recs.values())


def test_same_seed_same_tables() -> None:
    """Deterministic given the rng: a pass can be replayed from its seed."""
    now = 2_000_000.0
    recs = synthetic(1000, 4, random.Random(17), now)
    a = ladder_planner.plan_tables(TABLE, list(recs), recs, random.Random(9), now=now)
    b = ladder_planner.plan_tables(TABLE, list(recs), recs, random.Random(9), now=now)
    assert a == b and len(a) == 250

