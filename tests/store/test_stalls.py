"""A stalled Redis (SIGSTOP: it accepts connections, answers nothing) is an outage for every
data client (issue 24, item 1): commands fail with a timeout instead of hanging, a timeout is
never retried, the notifier's pub/sub notices the stall while a quiet channel is not taken for
one, and the service clock credits a stall even though the keeper's ticks sent during it run
when Redis wakes."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import redis

from service.realtime import notify
from service.store import clock, cluster, sockets
from tests.support.redis_proc import RedisProcess
from tests.support.stall import stalled

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def rp() -> Iterator[RedisProcess]:
    with RedisProcess() as server:
        yield server


def test_every_data_client_has_timeouts_and_health_checks() -> None:
    for url in ("redis://10.0.0.1:6379/0", "unix:///tmp/x.sock",
                "redis+sentinel://10.0.0.1:26379,10.0.0.2:26379/mymaster/0"):
        r = cluster.connect(url)
        kw = r.connection_pool.connection_kwargs
        assert kw["socket_timeout"] == sockets.READ_TIMEOUT_S, url
        assert kw["socket_connect_timeout"] == sockets.CONNECT_TIMEOUT_S, url
        assert kw["health_check_interval"] == sockets.HEALTH_CHECK_S, url
        assert kw.get("socket_keepalive") is (None if url.startswith("unix") else True), url


def test_a_stalled_redis_fails_a_command_with_a_timeout_sent_once(rp: RedisProcess) -> None:
    r = cluster.connect(rp.url)
    r.set("k", "0")
    with stalled(rp):
        with pytest.raises(redis.TimeoutError):
            r.incr("k")
    # the command sat in Redis's socket buffer and ran when it woke: once, never retried
    probe = rp.client()
    deadline = time.monotonic() + 10
    while probe.get("k") != b"1" and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    assert probe.get("k") == b"1"
    assert r.incr("k") == 2  # the client works again by itself


def test_the_notifier_finds_a_stall_but_not_a_quiet_channel(rp: RedisProcess) -> None:
    r = cluster.connect(rp.url)
    ps = r.pubsub(ignore_subscribe_messages=True)
    ps.psubscribe("ll:notify:*")
    got: list[object] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            for msg in notify.pump(ps):
                got.append(msg.get("channel"))
        except BaseException as e:  # noqa: BLE001 - what the test looks at
            failed.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    # quiet for several read timeouts: still listening, no error
    time.sleep(3 * sockets.READ_TIMEOUT_S)
    assert not failed and t.is_alive()
    rp.client().publish("ll:notify:m:abc", "")
    deadline = time.monotonic() + 5
    while not got and time.monotonic() < deadline:
        time.sleep(0.05)
    assert got == [b"ll:notify:m:abc"]
    with stalled(rp):
        t.join(timeout=30)
    assert not t.is_alive() and failed and isinstance(failed[0], redis.TimeoutError)
    ps.close()


def test_a_stall_is_credited_like_an_outage_though_its_ticks_run_late(rp: RedisProcess) -> None:
    """The keeper ticks every 0.2 s; each tick sent during the stall times out on its side and
    runs when Redis wakes. Stamped with Redis's time, the first of them still finds the gap."""
    r = cluster.connect(rp.url)
    assert clock.tick(r) == "started"
    assert clock.tick(r) == "ran"
    timed_out = 0
    with stalled(rp):
        end = time.monotonic() + 6.0
        while time.monotonic() < end:
            try:
                clock.tick(r)
            except redis.TimeoutError:
                timed_out += 1
            time.sleep(0.2)
    assert timed_out >= 3
    deadline = time.monotonic() + 10
    while clock.stats(rp.client())["outages"] == 0 and time.monotonic() < deadline:
        clock.tick(r)
        time.sleep(0.2)
    st = clock.stats(rp.client())
    assert st["outages"] == 1, st
    # the stall lasted about 6 s: all but MAX_GAP_S of it is credited (generous bounds)
    assert 6.0 - clock.MAX_GAP_S - 1.0 <= st["credited_s"] <= 6.0 + 3.0, st
