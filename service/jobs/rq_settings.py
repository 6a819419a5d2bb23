"""RQ's settings module: ``rq worker -c service.jobs.rq_settings ...`` takes RQ's Redis from the
environment (``QUEUE_REDIS_URL``, else ``REDIS_URL``), a Sentinel URL included
(``redis+sentinel://...``, store/sentinel.py), which ``rq worker --url`` can't take (the rq CLI
reads a URL with ``Redis.from_url``; a Sentinel it takes only from a settings module).

The connection gets a connect timeout and health checks (store/sockets.py) but no read timeout
of ours: RQ sets the one its blocking pop needs (the dequeue timeout plus 10 s, about 415 s).
The jobs read and write the data on a client of their own (``jobs/timeouts.data_redis``)."""

from __future__ import annotations

from typing import Any

from service.config import Config
from service.store import sentinel, sockets

_URL = Config.from_env().queue_url()
_CONNECT: dict[str, Any] = {"socket_connect_timeout": sockets.CONNECT_TIMEOUT_S,
                            "health_check_interval": sockets.HEALTH_CHECK_S}

if sentinel.is_sentinel_url(_URL):
    _u = sentinel.parse(_URL)
    SENTINEL = {
        "INSTANCES": _u.sentinels,
        "MASTER_NAME": _u.service,
        "DB": _u.db,
        "USERNAME": _u.username,
        "PASSWORD": _u.password,
        "SSL": _u.ssl,
        "CONNECTION_KWARGS": {**_CONNECT, "socket_keepalive": True},
        "SENTINEL_KWARGS": {"socket_timeout": sockets.READ_TIMEOUT_S,
                            "socket_connect_timeout": sockets.CONNECT_TIMEOUT_S,
                            **_u.sentinel_kwargs},
    }
else:
    _sep = "&" if "?" in _URL else "?"
    REDIS_URL = f"{_URL}{_sep}socket_connect_timeout={sockets.CONNECT_TIMEOUT_S}" \
                f"&health_check_interval={sockets.HEALTH_CHECK_S}"
