"""Redis Sentinel: a single Redis (the data Redis, or a cluster's queue Redis) with a replica
that Sentinel promotes when its master dies.

The URL names the sentinels, not the master (which moves):

    redis+sentinel://[user:password@]host:26379[,host2:26379...]/<master name>[/<db>]
                     [?sentinel_password=...&sentinel_username=...]

``rediss+sentinel://`` connects to the master over TLS. The credentials before ``@`` are the
master's (``requirepass``/ACL); the sentinels' own, when they have any, go in the query. The
client (redis-py's ``Sentinel``, ``master_for``) asks the sentinels for the master's address
when it opens a connection and again after a connection fails, and refuses a server that no
longer says it is the master (a demoted one), so after a failover the next connection goes to
the new master. Commands in flight when the master dies fail like any outage (503, a job run
again later).

The sentinels are asked with the same connect and read timeouts as the data
(``store/sockets.py``): a stalled sentinel is skipped for the next one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import redis
from redis.sentinel import Sentinel, SentinelConnectionPool

SCHEMES = {"redis+sentinel": False, "rediss+sentinel": True}
DEFAULT_PORT = 26379


class SentinelURLError(ValueError):
    """A ``redis+sentinel://`` URL that can't be used."""


def is_sentinel_url(url: str) -> bool:
    return urlsplit(url).scheme in SCHEMES


@dataclass(frozen=True)
class SentinelURL:
    sentinels: list[tuple[str, int]]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    ssl: bool = False
    sentinel_kwargs: dict[str, str] = field(default_factory=dict)

    def master_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"db": self.db}
        if self.username:
            kw["username"] = self.username
        if self.password:
            kw["password"] = self.password
        if self.ssl:
            kw["ssl"] = True
        return kw


def parse(url: str) -> SentinelURL:
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise SentinelURLError(f"not a Sentinel URL: {url.split('@')[-1]}")
    hosts = []
    for hostport in parts.netloc.rpartition("@")[2].split(","):
        if not hostport:
            continue
        host, sep, port = hostport.rpartition(":")
        if not sep:
            host, port = hostport, ""
        try:
            hosts.append((host or "127.0.0.1", int(port) if port else DEFAULT_PORT))
        except ValueError:
            raise SentinelURLError(f"bad sentinel address {hostport!r}") from None
    path = [p for p in parts.path.split("/") if p]
    if not hosts or not path or len(path) > 2:
        raise SentinelURLError("a Sentinel URL is redis+sentinel://host:port[,host:port...]"
                               "/<master name>[/<db>]")
    try:
        db = int(path[1]) if len(path) == 2 else 0
    except ValueError:
        raise SentinelURLError(f"bad database number {path[1]!r}") from None
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    sentinel_kwargs = {}
    for name in ("username", "password"):
        if query.get(f"sentinel_{name}"):
            sentinel_kwargs[name] = query[f"sentinel_{name}"]
    return SentinelURL(
        sentinels=hosts, service=unquote(path[0]), db=db,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        ssl=SCHEMES[parts.scheme], sentinel_kwargs=sentinel_kwargs)


def connect(url: str, *, pool_class: type[SentinelConnectionPool] = SentinelConnectionPool,
            **kwargs: Any) -> redis.Redis:
    """A client of the current master of ``url``'s service; ``kwargs`` are the connection
    settings (timeouts, ...), also used to talk to the sentinels."""
    u = parse(url)
    client: redis.Redis = _sentinels(u, kwargs).master_for(
        u.service, connection_pool_class=pool_class, **{**u.master_kwargs(), **kwargs})
    return client


def master_address(url: str, **kwargs: Any) -> tuple[str, int]:
    """Where the sentinels of ``url`` say its master is now (``Sentinel.discover_master``);
    ``kwargs`` as :func:`connect`'s. Raises redis-py's ``MasterNotFoundError`` when none of
    them names one."""
    u = parse(url)
    host, port = _sentinels(u, kwargs).discover_master(u.service)
    return str(host), int(port)


def _sentinels(u: SentinelURL, kwargs: dict[str, Any]) -> Sentinel:
    sentinel_kwargs = {k: v for k, v in kwargs.items() if k in (
        "socket_timeout", "socket_connect_timeout", "socket_keepalive")}
    sentinel_kwargs.update(u.sentinel_kwargs)
    return Sentinel(u.sentinels, sentinel_kwargs=sentinel_kwargs)


class BlockingSentinelConnectionPool(SentinelConnectionPool, redis.BlockingConnectionPool):
    """A Sentinel pool that waits for a free connection when all are busy, as the API's pool on
    a plain Redis does (``http/app.py``): ``max_connections`` and ``timeout`` as
    ``redis.BlockingConnectionPool``'s."""
