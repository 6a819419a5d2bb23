"""Timeouts and health checks of every Redis connection that carries data.

A Redis that is down refuses connections and every command fails at once; a Redis that
*stalls* (a long fork, a full disk, a paused VM, SIGSTOP) still accepts connections but answers
nothing, and a client without a read timeout waits for as long as it lasts: every API request,
every job, the clock keeper. So every client of the data (the API's, the jobs' own, cron's,
the house bots', the health checks') gets these settings, and a stall becomes an outage after
:data:`READ_TIMEOUT_S`:

- ``socket_connect_timeout`` :data:`CONNECT_TIMEOUT_S` (1 s): a TCP connect on a LAN takes well
  under a millisecond; a second means the host or the network is gone.
- ``socket_timeout`` :data:`READ_TIMEOUT_S` (1 s): the longest command the service sends is a
  transaction writing one match document (about 100 KB at most) or an ``MGET`` of a page of
  them: milliseconds. A second is hundreds of times that, and short enough that the API
  answers ``503`` with ``Retry-After`` within about 1 s of a stall (measured: see
  docs/operations.md).
- no retry on a timeout (:func:`retry`): a command that timed out may still run when Redis
  wakes (it sits in Redis's socket buffer), so sending it again could apply it twice; and a
  retry on a stalled Redis waits another second. Two quick retries on a *refused or reset*
  connection stay (a pooled connection from before a Redis restart fails on first use).
- ``health_check_interval`` :data:`HEALTH_CHECK_S` (15 s): a connection idle that long is
  PINGed before use, so one a firewall or NAT dropped silently fails its PING (and is
  replaced by the retry) instead of the command; ``socket_keepalive`` lets the kernel find
  dead peers of connections that stay idle.

Long-polls wait on the notifier's pub/sub connection, which is silent for as long as nothing
happens: it keeps these connect settings but reads with a timeout of its own (``get_message``
with a timeout, and a PING it must see answered: ``realtime/notify.py``), so a quiet channel is
never taken for a stall, and a stall is still found within :data:`PUBSUB_STALL_S`.

The rate limiter's connection (``http/limits.py``) uses :data:`LIMITER_TIMEOUT_S` (0.5 s): it
lets a request through when its Redis fails, and a request's own commands then answer the
``503``, so its wait adds to the request's.

RQ's own connection (``rq worker``'s dequeue) keeps the read timeout RQ sets for its blocking
pop (the dequeue timeout plus 10 s, about 415 s). Nothing of ours is sent on it: the jobs read
and write data on a client of their own with these settings (``jobs/timeouts.data_redis``),
and the worker's PINGs while it waits out an outage and its dispatcher's heartbeats go to RQ's
Redis on another (``jobs/worker.py``), so a stalled RQ Redis fails them after a read timeout.
RQ's own bookkeeping (its registries, a job's state, the repair pass's look at RQ's failed
jobs) stays on RQ's connection."""

from __future__ import annotations

from typing import Any

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

#: seconds to open a connection (TCP or unix socket) before giving up
CONNECT_TIMEOUT_S = 1.0
#: seconds a command waits for its answer: a Redis silent for this long counts as down
READ_TIMEOUT_S = 1.0
#: a connection idle for this many seconds is PINGed before it is used again
HEALTH_CHECK_S = 15
#: the rate limiter's connect and read timeouts (it lets a request through when they expire)
LIMITER_TIMEOUT_S = 0.5
#: a pub/sub connection that answers no PING for this long is reconnected (realtime/notify.py)
PUBSUB_STALL_S = 1.0
#: how often a silent pub/sub connection is PINGed
PUBSUB_PING_S = 0.5


def retry() -> Retry:
    """Two quick retries on a refused or reset connection; none on a timeout (see above)."""
    return Retry(ExponentialBackoff(cap=0.1, base=0.02), 2,
                 supported_errors=(redis.ConnectionError,))


def data_kwargs(url: str = "", **overrides: Any) -> dict[str, Any]:
    """The connection settings of a data client of ``url`` (``redis.Redis``/``from_url``
    keywords; a unix socket has no TCP keepalive)."""
    kw: dict[str, Any] = {
        "socket_connect_timeout": CONNECT_TIMEOUT_S,
        "socket_timeout": READ_TIMEOUT_S,
        "health_check_interval": HEALTH_CHECK_S,
        "retry": retry(),
    }
    if not url.startswith("unix:"):
        kw["socket_keepalive"] = True
    kw.update(overrides)
    return kw
