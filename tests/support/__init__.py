"""Helpers shared by the test suite and the benchmarks under bench/."""

from __future__ import annotations

import os
import shutil
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def venv_executable(name: str) -> str:
    """A console script of the running interpreter's environment (the project's .venv), e.g.
    ``gunicorn`` or ``rq``, else one on PATH."""
    for candidate in (os.path.join(os.path.dirname(sys.executable), name),
                      os.path.join(REPO, ".venv", "bin", name)):
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(name)
    if not found:
        raise RuntimeError(f"{name} is not installed next to the running Python")
    return found


def read_log(path: str) -> str:
    """A process's whole log, or "" while it has written none (its file does not exist yet)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def migrate_store(redis_url: str, env: dict[str, str] | None = None) -> None:
    """What ``python -m service.ops.migrate`` does before a stack starts (the API, the worker
    and cron refuse a Redis at another schema version): every server the tests start on
    ``redis_url`` runs it first. ``env`` may give ``QUEUE_REDIS_URL`` (a cluster's RQ Redis)."""
    import redis

    from service.store import cluster, migrate

    queue = (env or {}).get("QUEUE_REDIS_URL") or None
    down = (redis.ConnectionError, redis.TimeoutError, redis.exceptions.ClusterError,
            redis.exceptions.RedisClusterException)
    try:
        r = cluster.connect(redis_url, queue=queue if cluster.is_cluster_url(redis_url) else None)
    except down:
        return  # Redis down (an outage test): the processes skip their check too
    try:
        migrate.run(r)
    except down:
        pass
    finally:
        r.close()
