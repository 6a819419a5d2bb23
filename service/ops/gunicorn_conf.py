"""gunicorn settings shared by `make run`, docker-compose, the tests and the benchmarks.

gevent workers: a long-poll parks a greenlet, not an OS thread, so one process holds thousands of
waiting bots. Everything is overridable from the environment."""

import gc
import os
import sys
from typing import Any

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "gevent")
worker_connections = int(os.environ.get("WORKER_CONNECTIONS", "4000"))
timeout = 90  # above the longest long-poll (60 s)
graceful_timeout = 5
keepalive = 30
# What gunicorn refuses by itself, before the app sees the request (its defaults, written down
# because the docs promise them): a request line over 4094 bytes is 414 URI Too Long, a header
# line over 8190 bytes or more than 100 header fields is 431; gunicorn's own HTML, no JSON.
limit_request_line = 4094
limit_request_field_size = 8190
limit_request_fields = 100
accesslog = os.environ.get("ACCESS_LOG") or None
GC_THRESHOLD = 7000  # allocations between two collections of the youngest generation (700)
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "info")

# Prometheus metrics across workers (service/http/metrics.py): every worker writes its metrics to
# files in PROMETHEUS_MULTIPROC_DIR and a scrape adds them up. It must be set before a worker
# imports prometheus_client, so it is settled here, in the master: the environment's directory,
# else a private temporary one removed at exit. Stale files of an earlier run are wiped at start.
_metrics_tmp = None
if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    import tempfile

    _metrics_tmp = tempfile.mkdtemp(prefix="ll-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = _metrics_tmp


def on_starting(server: Any) -> None:  # gunicorn hook
    path = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    os.makedirs(path, exist_ok=True)
    for name in os.listdir(path):
        if name.endswith(".db"):
            os.remove(os.path.join(path, name))


def post_worker_init(worker: Any) -> None:  # gunicorn hook
    # Each worker beats for the service clock (service/store/clock.py): turn clocks stand still
    # while no API process runs.
    import redis

    from service.store import migrate
    from service.store.clock import ApiHeartbeat

    r = worker.wsgi.extensions["redis"]  # worker.wsgi: the loaded Flask app
    # The data's schema version (store/migrate.py; `python -m service.ops.migrate` migrates),
    # checked in the worker: the master imports no Redis client before gevent patches the
    # workers. A mismatch stops the whole server (exit code 3: gunicorn's "worker failed to
    # boot" halts the master instead of booting workers in a loop); a Redis that doesn't answer
    # is checked by the next worker that boots.
    try:
        migrate.require(r)
    except migrate.SchemaMismatch as exc:
        worker.log.error("refusing to start: %s", exc)
        sys.exit(3)
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        worker.log.warning("schema check skipped, Redis unavailable: %s", exc)
    ApiHeartbeat(r).start()
    # The garbage collector's full passes stop every request of the worker for as long as
    # they take to walk every object: with 2,500 long-polls waiting in a worker one took about
    # 0.9 s (bench/longpoll.py), and wake-ups waited for it. The loaded app (modules, the Flask
    # app, the schemas) is frozen out of every pass, and young objects are collected 10 times
    # less often (a request makes a few thousand; reference counting frees almost all of them).
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, 10, 10)


def child_exit(server: Any, worker: Any) -> None:  # gunicorn hook
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server: Any) -> None:  # gunicorn hook
    if _metrics_tmp is not None:
        import shutil

        shutil.rmtree(_metrics_tmp, ignore_errors=True)
