"""``python -m service.ops.migrate``: bring the data in Redis to this code's schema version.

Runs once per deployment before the API, the deadline worker and cron start (they refuse to
start against another version: ``store/migrate.py``): docker compose's one-shot ``migrate``
service, which the others wait for; ``make run`` runs it first. Applies the steps the data
hasn't had, in order, and records the version after each, so an interrupted run carries on where
it stopped. ``--check`` only says where the data is (exit code 1 unless current).

It waits up to ``--wait`` seconds (60) for Redis to answer: compose starts it as soon as Redis
reports healthy, and a cluster may still be forming."""

from __future__ import annotations

import argparse
import sys
import time

import redis

from ..config import Config
from ..store import cluster, migrate


def _version_when_up(cfg: Config, wait_s: float) -> tuple[redis.Redis, int]:
    end = time.monotonic() + wait_s
    while True:
        try:
            r = cluster.connect(cfg.redis_url, queue=cfg.queue_url())
            return r, migrate.version(r)
        # not up yet: refused, timed out, a cluster still forming (CLUSTERDOWN, no slots)
        except (redis.ConnectionError, redis.TimeoutError, redis.exceptions.ClusterError,
                redis.exceptions.RedisClusterException) as exc:
            if time.monotonic() >= end:
                raise SystemExit(f"migrate: Redis did not answer within {wait_s:.0f} s: {exc}") \
                    from None
            time.sleep(1.0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m service.ops.migrate",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="only report the version (exit code 1 unless it is current)")
    ap.add_argument("--wait", type=float, default=60.0,
                    help="seconds to wait for Redis to answer (default 60)")
    args = ap.parse_args(argv)
    cfg = Config.from_env()
    r, at = _version_when_up(cfg, args.wait)
    where = f"schema version {at} (this code: {migrate.CURRENT})"
    if args.check:
        print(f"migrate: {where}", flush=True)
        return 0 if at == migrate.CURRENT else 1
    try:
        done = migrate.run(r, log=lambda line: print(f"migrate: {line}", flush=True))
    except migrate.SchemaMismatch as exc:
        print(f"migrate: {exc}", file=sys.stderr, flush=True)
        return 1
    print(f"migrate: {where}; " + (f"applied {', '.join(done)}; " if done else "")
          + f"now at {migrate.CURRENT}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
