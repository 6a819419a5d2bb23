"""``GET /metrics``: Prometheus metrics (prometheus-client), safe under several gunicorn workers.

Per-process metrics (requests, action latency, long-pollers waiting) live in prometheus-client
objects. Under gunicorn each worker is its own process, so these are written to files in
``PROMETHEUS_MULTIPROC_DIR`` when that is set, and a scrape (answered by any one worker) adds up
every worker's files. ``service/ops/gunicorn_conf.py`` sets it to a private temporary directory when
the environment does not (so ``make run``, the tests and docker-compose all get it), wipes it
when gunicorn starts and marks exited workers dead. It must be set before ``prometheus_client``
is imported, which is why the gunicorn config (the master) does it.

Cluster-wide numbers are read from Redis at scrape time, so every API process reports the same
value and nothing is lost when a process restarts: the counts of actions and timeouts applied
(``HINCRBY`` on ``ll:stats`` in the same MULTI that commits them, by the API and by the RQ
workers alike), the RQ queue depths and the number of active matches.

================================  =========  ====================================================
metric                            type       what
================================  =========  ====================================================
ll_http_requests_total            counter    requests by ``route`` (the URL rule), ``method``,
                                             ``status``
ll_action_latency_seconds         histogram  time to answer ``POST /v1/matches/{id}/actions``
ll_longpoll_waiting               gauge      long-polls waiting right now (all processes)
ll_actions_applied_total          counter    actions applied (Redis, cluster-wide)
ll_timeouts_applied_total         counter    turn timeouts applied (Redis, cluster-wide)
ll_rq_queue_depth                 gauge      RQ jobs by ``queue`` and ``state`` (queued,
                                             scheduled, started, failed)
ll_active_matches                 gauge      matches in play (``ll:idx:status:active``)
ll_matches                        gauge      matches by ``status``
ll_redis_up                       gauge      1 when Redis answered the scrape (else the Redis
                                             numbers are missing)
================================  =========  ====================================================
"""

from __future__ import annotations

import hmac
import os
import time
from collections.abc import Iterator
from typing import Any

import redis
from flask import Flask, Response, current_app, g, request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from ..store import cluster, keys
from ..store.queues import QUEUES as RQ_QUEUES
from .errors import ApiError
from .params import route_label

ACTIONS_RULE = "/v1/matches/<match_id>/actions"

REQUESTS = Counter("ll_http_requests", "HTTP requests answered, by route (URL rule), method "
                   "and status", ["route", "method", "status"])
ACTION_LATENCY = Histogram(
    "ll_action_latency_seconds", "Time to answer POST /v1/matches/{id}/actions",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0))
LONGPOLL_WAITING = Gauge("ll_longpoll_waiting", "Long-polls waiting right now",
                         multiprocess_mode="livesum")


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or os.environ.get("prometheus_multiproc_dir")


class StoreCollector(Collector):
    """Numbers read from Redis when scraped."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def collect(self) -> Iterator[Metric]:
        from rq import Queue
        from rq.registry import FailedJobRegistry, ScheduledJobRegistry, StartedJobRegistry

        r = self.client
        pipe = r.pipeline(transaction=False)
        # RQ's keys: on a cluster they live on QUEUE_REDIS_URL (store/cluster.py)
        qr = cluster.queue_client(r) if cluster.is_cluster(r) else r
        qpipe = pipe if qr is r else qr.pipeline(transaction=False)
        pipe.hmget(keys.STATS, ["actions", "timeouts"])
        for status in ("waiting", "active", "finished"):
            pipe.zcard(keys.matches_by_status(status))
        for name in RQ_QUEUES:
            q = Queue(name, connection=qr)
            qpipe.llen(q.key)
            for reg in (ScheduledJobRegistry, StartedJobRegistry, FailedJobRegistry):
                qpipe.zcard(reg(queue=q).key)
        try:
            res = pipe.execute() + (qpipe.execute() if qpipe is not pipe else [])
        except redis.RedisError:
            up = GaugeMetricFamily("ll_redis_up", "Whether Redis answered the scrape")
            up.add_metric([], 0)
            yield up
            return
        up = GaugeMetricFamily("ll_redis_up", "Whether Redis answered the scrape")
        up.add_metric([], 1)
        yield up
        actions, timeouts = (int(x or 0) for x in res[0])
        c = CounterMetricFamily("ll_actions_applied", "Actions applied (cluster-wide)")
        c.add_metric([], actions)
        yield c
        c = CounterMetricFamily("ll_timeouts_applied", "Turn timeouts applied (cluster-wide)")
        c.add_metric([], timeouts)
        yield c
        waiting, active, finished = res[1:4]
        gm = GaugeMetricFamily("ll_active_matches", "Matches in play")
        gm.add_metric([], active)
        yield gm
        gm = GaugeMetricFamily("ll_matches", "Matches by status", labels=["status"])
        for status, n in (("waiting", waiting), ("active", active), ("finished", finished)):
            gm.add_metric([status], n)
        yield gm
        depth = GaugeMetricFamily("ll_rq_queue_depth", "RQ jobs by queue and state",
                                  labels=["queue", "state"])
        rest = res[4:]
        for i, name in enumerate(RQ_QUEUES):
            queued, scheduled, started, failed = rest[4 * i: 4 * i + 4]
            for state, n in (("queued", queued), ("scheduled", scheduled),
                             ("started", started), ("failed", failed)):
                depth.add_metric([name, state], n)
        yield depth


class _Scrape(Collector):
    """This process's metrics (or every worker's, in multiprocess mode) plus Redis's."""

    def __init__(self, client: redis.Redis) -> None:
        self.store = StoreCollector(client)

    def collect(self) -> Iterator[Metric]:
        path = multiprocess_dir()
        if path:
            yield from MultiProcessCollector(None, path=path).collect()
        else:
            yield from REGISTRY.collect()
        yield from self.store.collect()


def render(client: redis.Redis) -> bytes:
    """The exposition text of one scrape."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Scrape(client))
    return generate_latest(registry)


# --------------------------------------------------------------------------- Flask hooks


def _before() -> None:
    g.ll_t0 = time.perf_counter()


def _after(resp: Response) -> Response:
    rule = request.url_rule
    route = route_label(rule.rule) if rule is not None else "<unmatched>"
    REQUESTS.labels(route, request.method, str(resp.status_code)).inc()
    if route == ACTIONS_RULE and request.method == "POST":
        t0 = g.get("ll_t0")
        if t0 is not None:
            ACTION_LATENCY.observe(time.perf_counter() - t0)
    return resp


def _allowed() -> None:
    """``METRICS_TOKEN`` set: the scrape must send it as a Bearer token. Unset: closed, unless
    ``METRICS_OPEN=1`` (which only ``make run`` sets: a laptop's stack)."""
    cfg = current_app.extensions["llconfig"]
    if cfg.metrics_token:
        scheme, _, sent = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
                sent.strip().encode(), cfg.metrics_token.encode()):
            raise ApiError("unauthorized", "send Authorization: Bearer <METRICS_TOKEN>",
                           headers={"WWW-Authenticate": "Bearer"})
    elif not cfg.metrics_open:
        raise ApiError("forbidden", "metrics are closed: set METRICS_TOKEN (and scrape with it "
                       "as a Bearer token), or METRICS_OPEN=1")


def metrics_view() -> Any:
    _allowed()
    body = render(current_app.extensions["redis"])
    return current_app.response_class(body, mimetype=None,
                                      headers={"Content-Type": CONTENT_TYPE_LATEST})


def init_app(app: Flask) -> Any:
    """Count requests and serve ``GET /metrics`` (a plain route: not in the OpenAPI document).
    Returns the view function (to exempt it from rate limits)."""
    app.before_request(_before)
    app.after_request(_after)
    app.add_url_rule("/metrics", "metrics", metrics_view, methods=["GET"])
    return metrics_view
