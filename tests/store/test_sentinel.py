"""Redis Sentinel URLs (issue 24, item 4): ``redis+sentinel://host:port[,...]/<master>[/<db>]``
names a single Redis watched by Sentinel, for the data (single-Redis mode) or a cluster's
queue Redis; the store's client follows a failover to the promoted replica (real
``redis-server`` and ``redis-server --sentinel`` processes)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from service.config import Config
from service.http.limits import _limits_options, _limits_uri
from service.store import cluster, sentinel, sockets
from tests.support.redis_sentinel import SentinelSet

pytestmark = pytest.mark.timeout(120)


def test_the_url_names_the_sentinels_the_master_and_the_database() -> None:
    u = sentinel.parse("redis+sentinel://:s3cret@h1:26379,h2,h3:26380/data/2"
                       "?sentinel_password=sp")
    assert u.sentinels == [("h1", 26379), ("h2", 26379), ("h3", 26380)]
    assert (u.service, u.db, u.password, u.ssl) == ("data", 2, "s3cret", False)
    assert u.sentinel_kwargs == {"password": "sp"}
    assert sentinel.parse("rediss+sentinel://h1/queue").ssl
    assert sentinel.parse("redis+sentinel://h1/queue").db == 0


@pytest.mark.parametrize("bad", [
    "redis+sentinel://h1:26379",            # no master name
    "redis+sentinel://h1:26379/m/x",        # a database that is no number
    "redis+sentinel://h1:port/m",           # a port that is no number
    "redis+sentinel:///m",                  # no sentinel
    "redis+sentinel://h1/m/0/extra",
])
def test_a_bad_sentinel_url_is_refused_at_start_up(bad: str) -> None:
    with pytest.raises(sentinel.SentinelURLError):
        sentinel.parse(bad)
    with pytest.raises(cluster.ConfigError):
        Config(redis_url=bad).queue_url()


def test_sentinel_urls_for_the_data_and_for_a_clusters_queue() -> None:
    s = "redis+sentinel://h1,h2,h3/data/0"
    assert Config(redis_url=s).queue_url() == s  # a single Redis holds its own queues
    q = "redis+sentinel://h1,h2,h3/queue/0"
    assert Config(redis_url="redis+cluster://c1:7000", queue_redis_url=q).queue_url() == q
    with pytest.raises(cluster.ConfigError):  # as for any single REDIS_URL
        Config(redis_url=s, queue_redis_url=q).queue_url()


def test_the_rate_limiter_gets_the_same_master_with_short_timeouts() -> None:
    url = "redis+sentinel://:pw@h1:26379,h2:26380/data/3?sentinel_password=sp"
    assert _limits_uri(url) == "redis+sentinel://:pw@h1:26379,h2:26380/data"
    opts = _limits_options(url)
    assert opts["db"] == 3 and opts["socket_timeout"] == sockets.LIMITER_TIMEOUT_S
    assert opts["sentinel_kwargs"]["password"] == "sp"


@pytest.fixture(scope="module")
def sentinels() -> Iterator[SentinelSet]:
    with SentinelSet() as ss:
        yield ss


def test_the_client_follows_a_failover_to_the_promoted_replica(sentinels: SentinelSet) -> None:
    r = cluster.connect(sentinels.url)
    assert r.connection_pool.connection_kwargs["socket_timeout"] == sockets.READ_TIMEOUT_S
    r.set("before", "1")
    r.wait(1, 2000)  # replicated: a failover keeps it
    old = sentinels.kill_master()
    new = sentinels.wait_failover(old)
    assert new != old
    for _ in range(40):  # the first commands after the kill may still fail (an outage)
        try:
            r.set("after", "2")
            break
        except (redis.ConnectionError, redis.TimeoutError):
            import time

            time.sleep(0.25)
    assert r.get("before") == b"1" and r.get("after") == b"2"
    assert sentinels.node(new).get("after") == b"2"  # written on the new master
