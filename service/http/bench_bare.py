"""Benchmark-only: the bare endpoint that ``bench/api.py`` compares the real actions against.

Registered by ``create_app`` only when ``BENCH_BARE_ENDPOINT=1`` is set, as a plain Flask
blueprint, so it never appears in ``openapi.yaml`` or ``/docs``. ``POST /bench/bare/<key>`` parses
the JSON body and does what the smallest possible action would: read one Redis key and write it
back in one WATCH/MULTI/EXEC transaction (retried on a lost race). It is not part of the API.
"""

from __future__ import annotations

from typing import Any

import redis
from flask import Blueprint, current_app, json, request

blp = Blueprint("bench_bare", __name__)


@blp.post("/bench/bare/<key>")
def bare(key: str) -> Any:
    request.get_json(silent=True)
    r: redis.Redis = current_app.extensions["redis"]
    name = f"ll:bench:{{{key}}}"
    with r.pipeline() as pipe:
        while True:
            try:
                pipe.watch(name)
                version = int(pipe.get(name) or 0) + 1
                pipe.multi()
                pipe.set(name, version)
                pipe.execute()
                break
            except redis.WatchError:
                continue
    return current_app.response_class(json.dumps({"version": version}),
                                      mimetype="application/json")
