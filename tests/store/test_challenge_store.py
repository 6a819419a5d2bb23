"""Challenges in the store: racing accepts create one match, the open-challenge cap holds under
concurrent creates, and the ``rq cron`` expiry pass (real rq processes) closes and announces an
unread expired challenge."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest
import redis

from service.store import challenges, keys, matches, players
from service.store.errors import StoreError
from tests.support.notices import all_notices
from tests.support.redis_proc import RedisProcess
from tests.support.rqproc import RqCron, RqWorker

pytestmark = pytest.mark.timeout(120)


def register(r: redis.Redis, n: int, prefix: str = "p") -> list[str]:
    return [players.register(r, f"{prefix}{i}-{time.monotonic_ns() % 10**9}")["id"]
            for i in range(n)]


def race(*fns: Callable[[], Any]) -> list[Any]:
    """Run the functions at once (a barrier) and return what each returned or raised."""
    barrier = threading.Barrier(len(fns))
    out: list[Any] = [None] * len(fns)

    def run(i: int) -> None:
        barrier.wait()
        try:
            out[i] = fns[i]()
        except Exception as e:  # noqa: BLE001 - recorded for the assertions
            out[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(fns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return out


def test_racing_last_accepts_create_one_match(redis_db: redis.Redis) -> None:
    for trial in range(25):
        a, b, c = register(redis_db, 3, f"race{trial}-")
        ch = challenges.create(redis_db, a, [b, c], {"ruleset": "2019"})
        got = race(partial(challenges.accept, redis_db, ch.id, b),
                   partial(challenges.accept, redis_db, ch.id, c),
                   partial(challenges.accept, redis_db, ch.id, c))  # and a retry of one
        assert all(isinstance(x, challenges.Challenge) for x in got), got
        final = challenges.get(redis_db, ch.id, a)
        assert final.status == challenges.ACCEPTED and final.match_id
        ids = [m.decode() for m in redis_db.zrange(keys.player_matches(a), 0, -1)]
        assert ids == [final.match_id], (trial, ids)  # one match, never two
        doc = matches.load(redis_db, final.match_id)
        assert sorted(doc.seats) == sorted([a, b, c]) and doc.status == "active"
        assert not doc.rated
        # every caller was answered with an accepted challenge or an open one with its answer
        for x in got:
            assert x.status in (challenges.OPEN, challenges.ACCEPTED)


def test_accept_racing_cancel_is_one_or_the_other(redis_db: redis.Redis) -> None:
    outcomes = set()
    for trial in range(25):
        a, b = register(redis_db, 2, f"rc{trial}-")
        ch = challenges.create(redis_db, a, [b], {"ruleset": "classic"})
        acc, can = race(partial(challenges.accept, redis_db, ch.id, b),
                        partial(challenges.cancel, redis_db, ch.id, a))
        final = challenges.get(redis_db, ch.id, a)
        if final.status == challenges.ACCEPTED:
            assert isinstance(acc, challenges.Challenge) and final.match_id
            assert isinstance(can, StoreError) and can.code == "challenge_closed"
        else:
            assert final.status == challenges.CANCELLED and final.match_id is None
            assert isinstance(acc, StoreError) and acc.code == "challenge_closed"
            assert redis_db.zcard(keys.player_matches(a)) == 0
        outcomes.add(final.status)
    assert outcomes  # (which side wins is up to the scheduler)


def test_open_challenge_cap_holds_under_concurrent_creates(redis_db: redis.Redis) -> None:
    me, *others = register(redis_db, 9, "cap")
    got = race(*[lambda o=o: challenges.create(redis_db, me, [o], {"ruleset": "classic"},
                                               max_open=3) for o in others])
    made = [x for x in got if isinstance(x, challenges.Challenge)]
    refused = [x for x in got if isinstance(x, StoreError)]
    assert len(made) == 3 and len(refused) == 5, got
    assert {e.code for e in refused} == {"too_many_challenges"}
    assert len(challenges.for_player(redis_db, me)["outgoing"]) == 3
    # a closed one frees a place
    challenges.cancel(redis_db, made[0].id, me)
    later = [o for o in others if o not in {x.opponents[0]["id"] for x in made}][0]
    challenges.create(redis_db, me, [later], {"ruleset": "classic"}, max_open=3)


def test_lazy_expiry_on_read(redis_db: redis.Redis) -> None:
    a, b = register(redis_db, 2, "lazy")
    ch = challenges.create(redis_db, a, [b], {"ruleset": "classic"}, ttl_s=30, now=1000.0)
    assert challenges.get(redis_db, ch.id, b, now=1029.9).status == challenges.OPEN
    with pytest.raises(StoreError) as e:
        challenges.accept(redis_db, ch.id, b, now=1030.0)
    assert e.value.code == "challenge_expired"
    got = challenges.get(redis_db, ch.id, a, now=1031.0)
    assert got.status == challenges.EXPIRED and got.closed_at == 1030.0
    assert redis_db.zscore(keys.OPEN_CHALLENGES, ch.id) is None
    assert challenges.expire_due(redis_db, now=2000.0) == 0  # already closed


# --------------------------------------------------------------------------- the cron pass


@pytest.fixture
def rq_stack(redis_server: RedisProcess, redis_db: redis.Redis,
             monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("REDIS_URL", redis_server.url)
    env = {"CHALLENGE_SWEEP_S": "1", "LADDERS": "[]"}
    with RqWorker(redis_server.url, env=env) as _w, RqCron(redis_server.url, env=env) as cron:
        yield
        log = cron.log_text()
    assert "Traceback" not in log, log[-4000:]


def test_cron_pass_expires_unread_challenges(redis_db: redis.Redis, rq_stack: None) -> None:
    a, b = register(redis_db, 2, "cron")
    ch = challenges.create(redis_db, a, [b], {"ruleset": "classic"}, ttl_s=1)
    end = time.monotonic() + 20
    while time.monotonic() < end:
        raw = redis_db.get(keys.challenge(ch.id))  # read raw: no lazy expiry on this path
        if raw is not None and json.loads(raw)["status"] == "expired":
            break
        time.sleep(0.2)
    else:
        raise AssertionError("the cron pass did not expire the challenge")
    notices = all_notices(redis_db, a)
    assert [(n["type"], n["challenge"]["status"]) for n in notices] == [
        ("challenge_update", "expired")]
    assert redis_db.zscore(keys.OPEN_CHALLENGES, ch.id) is None
