"""The service clock (store/clock.py): its arithmetic, and the keeper's tick on a real Redis,
driven with explicit wall-clock readings."""

from __future__ import annotations

import pytest
import redis

from service.store import clock
from service.store.clock import API_SLACK_S, MAX_GAP_S, Clock

T0 = 1_000_000.0


def test_without_a_keeper_service_time_is_wall_time() -> None:
    c = Clock(api=T0)  # an API beats, but no deadline worker ever ticked
    assert not c.kept and c.now(T0 + 123.5) == T0 + 123.5 and not c.frozen(T0 + 999)
    assert c.deadline(T0, T0 + 3, 3, T0 + 1) == T0 + 3


def test_the_clock_runs_for_max_gap_after_the_last_tick_then_freezes() -> None:
    c = Clock(beat=T0, off=10.0)
    assert c.now(T0 + 0.5) == T0 + 0.5 - 10
    assert c.now(T0 + MAX_GAP_S) == T0 + MAX_GAP_S - 10
    assert c.now(T0 + 60) == T0 + MAX_GAP_S - 10 and c.frozen(T0 + 60)
    assert c.now(T0 - 5) == T0 - 10  # a reader whose clock is behind the keeper's
    # frozen: a turn that started before the freeze is not due, and gets a whole turn after it
    assert c.resumed_at(T0 + 60) == T0 + MAX_GAP_S - 10
    assert c.deadline(T0 - 11, T0 - 8, 3, T0 + 60) == T0 + MAX_GAP_S - 10 + 3
    assert c.to_wall(T0 - 5, T0 + 1) == T0 + 5  # service + off while the clock runs


def test_a_reader_behind_the_keepers_tick_maps_service_time_to_the_wall_exactly() -> None:
    """A settler that read its time 50 ms before the tick it then read: the next turn starts
    at the last one's deadline in service time, and on the wall at exactly that plus the
    credited time, not 50 ms early (busy runs saw turn starts 1.1 and 46.7 ms early)."""
    c = Clock(beat=T0, off=10.0)
    late = T0 - 0.05
    assert c.wall(late) == T0 and c.wall(T0 + 1) == T0 + 1 and Clock().wall(late) == late
    assert c.now(late) == T0 - 10
    deadline_s = T0 - 10 - 0.5  # due half a second ago in service time
    assert c.to_wall(deadline_s, late) == deadline_s + 10
    assert c.to_wall(deadline_s + 3, late) == deadline_s + 3 + 10


def test_the_clock_stands_while_the_api_is_silent() -> None:
    c = Clock(beat=T0, api=T0 - 0.1)
    held = T0 - 0.1 + API_SLACK_S
    assert c.now(T0 + 1.5) == held and c.now(T0 + 30) == held
    assert not c.frozen(T0 + 30)  # held, not an outage yet: that is the keeper's to decide


def test_ticks_run_the_clock_and_credit_an_outage(redis_db: redis.Redis) -> None:
    r = redis_db
    assert clock.tick(r, T0) == "started"
    assert clock.tick(r, T0 + 0.2) == "ran"
    c = clock.read(r)
    assert c.beat == T0 + 0.2 and c.off == 0.0 and c.resumed is None
    assert clock.tick(r, T0 + 0.1) == "held"  # a keeper with a clock behind: nothing moves
    # 10 s without a tick: an outage; all but MAX_GAP_S of it is credited
    out = clock.tick(r, T0 + 10.2)
    assert out.startswith("resumed:") and float(out[8:]) == pytest.approx(10 - MAX_GAP_S)
    c = clock.read(r)
    assert c.off == pytest.approx(10 - MAX_GAP_S)
    assert c.resumed == pytest.approx(T0 + 0.2 + MAX_GAP_S)
    assert c.now(T0 + 10.2) == pytest.approx(c.resumed)  # continuous across the outage
    # a turn pending through it (started before the outage) gets a whole turn from resumption
    assert c.deadline(T0, T0 + 3, 3, T0 + 10.2) == pytest.approx(c.resumed + 3)
    assert c.deadline(c.resumed + 1, c.resumed + 4, 3, T0 + 11) == c.resumed + 4
    assert clock.stats(r) == {"outages": 1, "credited_s": pytest.approx(10 - MAX_GAP_S)}


def test_the_keeper_holds_the_clock_while_the_api_is_down(redis_db: redis.Redis) -> None:
    r = redis_db
    clock.tick(r, T0)
    clock.api_beat(r, T0)
    assert clock.tick(r, T0 + 0.2) == "ran"
    # the API stops beating: the clock stops API_SLACK_S after its last beat
    clock.tick(r, T0 + 0.4)
    assert clock.tick(r, T0 + 5) == "ran"  # moved up to the API's last beat + slack only
    assert clock.read(r).beat == T0 + API_SLACK_S
    assert clock.tick(r, T0 + 6) == "held"
    # the API is back 9.5 s later: that is an outage, credited
    clock.api_beat(r, T0 + 10)
    assert clock.tick(r, T0 + 10).startswith("resumed:")
    c = clock.read(r)
    assert c.off == pytest.approx(10 - API_SLACK_S - MAX_GAP_S)


def test_a_reader_uses_the_copy_in_hand_while_another_reads_the_clock_again(
        redis_db: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    """One read at a time per process: the requests that come in while one request reads the
    clock again take the copy it replaces (with dozens of requests in flight, each made a read
    of its own and most actions read the clock: bench/api.py)."""
    import threading
    clock.forget()
    first = clock.current(redis_db)
    reading, release = threading.Event(), threading.Event()
    calls: list[int] = []
    real = clock.read

    def slow_read(r: redis.Redis) -> Clock:
        calls.append(1)
        reading.set()
        release.wait(5)
        return real(r)

    monkeypatch.setattr(clock, "read", slow_read)
    got: list[Clock] = []
    t = threading.Thread(target=lambda: got.append(clock.current(redis_db, max_age=0)))
    t.start()
    try:
        assert reading.wait(5)
        assert clock.current(redis_db, max_age=0) is first  # the copy in hand, no second read
        assert calls == [1]
    finally:
        release.set()
        t.join(5)
    assert len(got) == 1 and calls == [1]
    assert clock.current(redis_db) is got[0]  # the new reading is the one kept
    clock.forget()
