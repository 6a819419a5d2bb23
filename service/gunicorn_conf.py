"""gunicorn settings shared by `make run`, docker-compose, the tests and the benchmarks.

gevent workers: a long-poll parks a greenlet, not an OS thread, so one process holds thousands of
waiting bots. Everything is overridable from the environment."""

import os

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "gevent")
worker_connections = int(os.environ.get("WORKER_CONNECTIONS", "4000"))
timeout = 90  # above the longest long-poll (60 s)
graceful_timeout = 5
keepalive = 30
accesslog = os.environ.get("ACCESS_LOG") or None
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "info")
