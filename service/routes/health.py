"""Liveness and readiness."""

from __future__ import annotations

from typing import Any

import redis
from flask.views import MethodView
from redis.exceptions import RedisClusterException

from ..http.params import Blueprint
from .common import json_response, store

blp = Blueprint("health", __name__, url_prefix="", description="Liveness and readiness.")


@blp.route("/healthz")
class Health(MethodView):
    @blp.response(200)
    def get(self) -> Any:
        """Liveness: the process answers."""
        return json_response({"status": "ok"})


@blp.route("/readyz")
class Ready(MethodView):
    @blp.response(200)
    @blp.alt_response(503, description="Redis is not reachable")
    def get(self) -> Any:
        """Readiness: Redis answers."""
        try:
            store().ping()
        except (redis.RedisError, RedisClusterException) as e:
            return json_response({"status": 503, "code": "service_unavailable",
                                  "message": f"redis: {e}"}, 503, {"Retry-After": "1"})
        return json_response({"status": "ok"})
