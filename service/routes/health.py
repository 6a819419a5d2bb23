"""Liveness and readiness.

``/healthz`` says the process answers, nothing more: an orchestrator that restarts on it must
not restart every API process because Redis is away (a restart would not bring it back).

``/readyz`` says whether this API can do its job right now, and names what is wrong when not
(``checks``: one entry per part, ``ok`` or the problem):

- ``data``: the data Redis answers (a ``PING`` within the data read timeout, 1 s:
  store/sockets.py); on a Redis Cluster, no master reports ``cluster_state:fail``;
- ``queue``: RQ's Redis answers (the data Redis itself when there is no ``QUEUE_REDIS_URL``);
- ``deadline-worker`` and ``cron``: some deadline worker's scheduler and some ``rq cron`` sent a
  heartbeat within ``READY_MAX_AGE_S`` (store/heartbeats.py). Only checked when this API
  expects them (``EXPECT_WORKERS``, the default): without the worker nobody applies a
  timeout at its deadline, without cron nobody recovers lost deadlines nor forms ladder
  matches."""

from __future__ import annotations

from typing import Any

import redis
from flask.views import MethodView
from redis.exceptions import RedisClusterException

from ..http.params import Blueprint
from ..store import cluster, heartbeats
from .common import config, json_response, store

blp = Blueprint("health", __name__, url_prefix="", description="Liveness and readiness.")

REDIS_ERRORS = (redis.RedisError, RedisClusterException, OSError)


@blp.route("/healthz")
class Health(MethodView):
    @blp.response(200)
    def get(self) -> Any:
        """Liveness: the process answers (nothing else is checked)."""
        return json_response({"status": "ok"})


def _data(r: redis.Redis) -> str:
    if cluster.is_cluster(r):
        return _cluster_state(r)
    r.ping()
    return "ok"


def _cluster_state(r: Any) -> str:
    """``ok`` when every master answers and reports ``cluster_state:ok``."""
    failing, unreachable = [], []
    for node in r.get_primaries():
        try:
            info = r.cluster_info(target_nodes=node)
        except REDIS_ERRORS:
            unreachable.append(node.name)
            continue
        if str(info.get("cluster_state")) != "ok":
            failing.append(node.name)
    if failing:
        return f"cluster_state:fail on {', '.join(sorted(failing))}"
    if unreachable:
        return f"unreachable: master(s) {', '.join(sorted(unreachable))}"
    return "ok"


def _queue(r: redis.Redis) -> redis.Redis | None:
    return cluster.queue_client(r) if cluster.is_cluster(r) else None


def checks() -> dict[str, str]:
    r = store()
    out: dict[str, str] = {}
    try:
        out["data"] = _data(r)
    except REDIS_ERRORS as e:
        out["data"] = f"unreachable: {e}"
    q = _queue(r)
    if q is None:  # a single Redis holds RQ's queues
        out["queue"] = out["data"]
        qr: redis.Redis | None = r if out["data"] == "ok" else None
    else:
        try:
            q.ping()
            out["queue"] = "ok"
            qr = q
        except REDIS_ERRORS as e:
            out["queue"] = f"unreachable: {e}"
            qr = None
    if config().expect_workers:
        for role in heartbeats.ROLES:
            if qr is None:
                out[role] = "unknown: the queue Redis is unreachable"
                continue
            try:
                out[role] = heartbeats.stale(qr, role, config().ready_max_age_s) or "ok"
            except REDIS_ERRORS as e:
                out[role] = f"unknown: {e}"
    return out


@blp.route("/readyz")
class Ready(MethodView):
    @blp.response(200)
    @blp.alt_response(503, description="not ready: `checks` names each part and its problem")
    def get(self) -> Any:
        """Readiness: the data Redis, the queue Redis, a deadline worker and `rq cron` (see
        `checks`)."""
        got = checks()
        bad = {k: v for k, v in got.items() if v != "ok"}
        if bad:
            return json_response(
                {"status": 503, "code": "service_unavailable",
                 "message": "not ready: " + "; ".join(f"{k}: {v}" for k, v in bad.items()),
                 "checks": got}, 503, {"Retry-After": "1"})
        return json_response({"status": "ok", "checks": got})
