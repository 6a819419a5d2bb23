"""The Flask application factory."""

from __future__ import annotations

import os
from typing import Any

import redis
import redis.sentinel
import swagger_ui_bundle
from flask import Flask, send_from_directory
from flask_smorest import Api
from werkzeug.middleware.proxy_fix import ProxyFix

from ..config import Config, ladders_from_env
from ..realtime.notify import Notifier
from ..routes import BLUEPRINTS, admin, health
from ..routes.common import ErrorSchema
from ..store import archive, cluster, sentinel, sockets
from . import errors, limits, metrics, params, requestlog, security, web

API_TITLE = "Love Letter Arena"
API_VERSION = "v1"


class _Api(Api):  # type: ignore[misc]
    # flask-smorest documents its default error responses with this schema: use ours.
    ERROR_SCHEMA = ErrorSchema


def create_app(config: Config | None = None, **overrides: Any) -> Flask:
    """Build the app. ``config`` defaults to the environment (``Config.from_env()``)."""
    cfg = (config or Config.from_env()).replace(**overrides) if overrides else \
        (config or Config.from_env())
    app = Flask(__name__)
    app.config.update(
        API_TITLE=API_TITLE,
        API_VERSION=API_VERSION,
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/",
        OPENAPI_JSON_PATH="openapi.json",
        OPENAPI_SWAGGER_UI_PATH="/docs",
        OPENAPI_SWAGGER_UI_URL="/docs/static/",  # served from the swagger-ui-bundle package
        MAX_CONTENT_LENGTH=cfg.max_body_bytes,
        JSON_SORT_KEYS=False,
    )
    app.extensions["llconfig"] = cfg
    if cfg.trusted_proxies > 0:
        # werkzeug's ProxyFix takes the client address from X-Forwarded-For, that many hops
        # back (the proxies' own entries); with no trusted proxy the header is never read
        app.wsgi_app = ProxyFix(  # type: ignore[method-assign]
            app.wsgi_app, x_for=cfg.trusted_proxies, x_proto=cfg.trusted_proxies)
    app.extensions["redis"] = client = redis_client(cfg.redis_url, queue_url=cfg.queue_url())
    archive.attach(client, cfg.archive_dir)  # finished matches moved out of Redis are read there
    app.extensions["notifier"] = Notifier(client, metrics.LONGPOLL_WAITING)
    app.extensions["ladders"] = ladders_from_env()
    requestlog.init_app(app)  # first: its hooks run before the rate limiter's
    metrics_view = metrics.init_app(app)
    api = _Api(app, spec_kwargs={
        "info": {"description": "Love Letter as a service for bots. Errors are JSON "
                                "{status, code, message, errors?} with stable codes."},
    })
    api.spec.components.security_scheme("bearerAuth", {"type": "http", "scheme": "bearer"})
    api.spec.components.security_scheme("adminAuth", {
        "type": "http", "scheme": "bearer", "description": "a token of ADMIN_TOKEN"})
    params.init_app(app, api)  # the id converters, before any route uses them
    # without an admin token the admin paths are not routes at all: 404, as any unknown path
    blueprints = [b for b in BLUEPRINTS if b is not admin.blp or cfg.admin_tokens]
    for blp in blueprints:
        api.register_blueprint(blp)
    errors.register(app)
    # the HTML pages are exempt (they read the rate-limited JSON API)
    limits.init_app(app, cfg, api=[b for b in blueprints if b is not health.blp],
                    exempt=[health.blp, metrics_view, web.init_app(app)])
    security.init_app(app, cfg)
    if os.environ.get("BENCH_BARE_ENDPOINT") == "1":  # bench/api.py only; never in openapi.yaml
        from .bench_bare import blp as bench_bare
        app.register_blueprint(bench_bare)

    @app.get("/docs/static/<path:filename>")
    def swagger_assets(filename: str) -> Any:
        return send_from_directory(swagger_ui_bundle.swagger_ui_path, filename)

    return app


#: Redis connections one API process opens at most (to a single Redis); more requests at
#: once wait for one
REDIS_POOL_SIZE = 100
#: how long a request waits for a free connection before it is answered 503
REDIS_POOL_WAIT_S = 10.0


def redis_client(url: str, *, queue_url: str | None = None) -> redis.Redis:
    """The API's Redis client, with the timeouts and health checks of ``store/sockets.py``: a
    stalled Redis fails a command after 1 s (answered 503, see errors.py). A connection the
    pool kept from before a Redis restart fails on first use: two quick retries on a new
    connection hide that; a Redis that is really down then fails the request within about
    0.1 s instead of after redis-py's default ten retries (several seconds). A timeout is never
    retried (the command may still run when Redis wakes).

    On a single Redis (or a Sentinel-watched one) the pool blocks: a request that finds all
    :data:`REDIS_POOL_SIZE` connections busy waits for one. redis-py's default pool fails at
    once instead ("Too many connections", at 100 since redis-py 6), which 5,000 long-polls
    waking together on two processes (``bench/longpoll.py``) turned into thousands of 503s; a
    command holds its connection for well under a millisecond, so a few dozen serve a
    process."""
    kwargs = sockets.data_kwargs(url)
    if sentinel.is_sentinel_url(url):
        base = redis.sentinel.SentinelManagedConnection
        if sentinel.parse(url).ssl:
            base = redis.sentinel.SentinelManagedSSLConnection
        client = sentinel.connect(
            url, pool_class=sentinel.BlockingSentinelConnectionPool,
            max_connections=REDIS_POOL_SIZE, timeout=REDIS_POOL_WAIT_S,
            connection_class=base, **kwargs)
        client.auto_close_connection_pool = True
        return client
    if not cluster.is_cluster_url(url):
        pool = redis.BlockingConnectionPool.from_url(
            url, max_connections=REDIS_POOL_SIZE, timeout=REDIS_POOL_WAIT_S, **kwargs)
        client = redis.Redis(connection_pool=pool)
        client.auto_close_connection_pool = True
        return client
    return cluster.connect(url, queue=queue_url if queue_url != url else None, **kwargs)

