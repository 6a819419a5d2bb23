"""Container health checks: ``python -m service.ops.healthcheck ROLE`` exits 0 when healthy.

Used by the Dockerfile and docker-compose.yml (no curl in the slim image):

- ``api``: ``GET http://127.0.0.1:$PORT/readyz`` answers 200 (the process serves, the data and
  queue Redis answer, a deadline worker and ``rq cron`` beat: http/routes/health.py);
- ``worker``: Redis answers and an RQ worker of this host (container) has sent a heartbeat
  within ``HEALTH_MAX_AGE_S`` seconds (default 90);
- ``cron``: the same for an ``rq cron`` scheduler of this host;
- ``house-bots``: the API the bots play on (``LLSDK_URL``) is ready.
"""

from __future__ import annotations

import os
import socket
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported lazily at run time: a probe of the api role needs no Redis client
    import redis

ROLES = ("api", "worker", "cron", "house-bots")


def _max_age() -> float:
    return float(os.environ.get("HEALTH_MAX_AGE_S") or 90)


def _http_ok(url: str, timeout: float = 4.0) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - our own URL
            return None if resp.status == 200 else f"{url}: HTTP {resp.status}"
    except urllib.error.HTTPError as e:
        return f"{url}: HTTP {e.code}"
    except (urllib.error.URLError, OSError) as e:
        return f"{url}: {e}"


def check_api() -> str | None:
    port = os.environ.get("PORT") or "8000"
    return _http_ok(f"http://127.0.0.1:{port}/readyz")


def check_house_bots() -> str | None:
    base = (os.environ.get("LLSDK_URL") or "http://127.0.0.1:8000").rstrip("/")
    return _http_ok(f"{base}/readyz")


def _redis() -> redis.Redis:
    from ..config import Config
    from ..store import cluster

    # the worker's and cron's registrations are RQ's: on the queue Redis (a Sentinel URL too)
    return cluster.connect(Config.from_env().queue_url(), socket_timeout=4,
                           socket_connect_timeout=4)


def _fresh(heartbeat: datetime | None, now: float) -> bool:
    if heartbeat is None:
        return False
    ts = heartbeat.replace(tzinfo=UTC) if heartbeat.tzinfo is None else heartbeat
    return now - ts.timestamp() <= _max_age()


def _check_registered(what: str, registered: Callable[[redis.Redis], list[Any]]) -> str | None:
    """Healthy when a process of this host is registered on the queue Redis (``registered``
    lists them, each with ``hostname`` and ``last_heartbeat``) and one of them beat lately."""
    r = _redis()
    try:
        r.ping()
        host = socket.gethostname()
        now = time.time()
        mine = [p for p in registered(r) if p.hostname == host]
        if not mine:
            return f"no {what} of host {host} is registered"
        if not any(_fresh(p.last_heartbeat, now) for p in mine):
            return f"the {what} of host {host} sent no heartbeat for {_max_age():.0f}s"
        return None
    except Exception as e:  # noqa: BLE001 - any failure is "unhealthy"
        return f"{what} check failed: {e}"
    finally:
        r.close()


def check_worker() -> str | None:
    from rq import Worker

    return _check_registered("RQ worker", lambda r: list(Worker.all(connection=r)))


def check_cron() -> str | None:
    from rq.cron import CronScheduler

    return _check_registered("rq cron scheduler",
                             lambda r: list(CronScheduler.all(r, cleanup=False)))


CHECKS: dict[str, Callable[[], str | None]] = {
    "api": check_api, "worker": check_worker, "cron": check_cron,
    "house-bots": check_house_bots,
}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in CHECKS:
        print(f"usage: python -m service.ops.healthcheck {{{'|'.join(ROLES)}}}", file=sys.stderr)
        return 2
    problem = CHECKS[args[0]]()
    if problem:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    print("healthy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
