"""Rate limits (flask-limiter, counted in Redis so they hold across gunicorn workers).

- The JSON API allows ``RATE_LIMIT`` (default ``20/second;600/minute``) per caller, all
  endpoints together: the verified player when the ``Bearer`` token is valid, else the client
  address. A token
  nobody has is counted against the address and then answered ``401`` before any other work, so
  made-up tokens are not each a fresh budget.
- Some endpoints add a limit per address of their own (:data:`ADDRESS_LIMITS`): registration
  allows ``REGISTER_RATE_LIMIT`` (default ``10/minute;200/day``; ``off`` turns it off), whatever
  token is sent.
- ``Retry-After`` on a 429 is a whole number of seconds, at least 1: the time until the window
  that refused the request ends (``X-RateLimit-Reset``), rounded up. flask-limiter's own value is
  rounded down, 0 for most refusals under a per-second limit, which a literal client spins on.
  The counters' expiry is kept in whole seconds, so the wait can be up to a second longer than
  needed, never shorter.

- A path no route has counts ``RATE_LIMIT`` per address of its own (``ll:rl:unknown``).
- The admin paths (``/v1/admin/...``) count against the operator's label.

Health checks, ``/metrics`` and the HTML pages are exempt. ``RATE_LIMITS=0`` turns every limit
off (the test suite's private servers do that unless a test turns them on).
"""

from __future__ import annotations

import math
import re
import time
from typing import Any

from flask import Blueprint, Flask, Response, request
from flask_limiter import Limiter
from limits import parse_many

from ..config import Config
from ..routes import admin
from ..routes.common import refuse_banned, token_sent, verified_player
from ..store import sentinel, sockets
from .errors import ApiError

#: endpoint -> (Config attribute holding its per-address limit, methods it applies to). A new
#: endpoint that creates something anonymously (as registration does) belongs here.
ADDRESS_LIMITS: dict[str, tuple[str, list[str]]] = {
    "players.Players": ("register_rate_limit", ["POST"]),
}

_SECONDS = re.compile(r"-?[0-9]{1,12}")


def address_key() -> str:
    return "ip:" + (request.remote_addr or "?")


def caller_key() -> str:
    """The verified player for a valid token (an operator's label on the admin paths), else
    the address (a made-up token included)."""
    if request.blueprint == admin.blp.name:
        label = admin.admin_label()
        return "admin:" + label if label else address_key()
    pid = verified_player()
    return "p:" + pid if pid else address_key()


def _whole_retry_after(resp: Response) -> Response:
    """Retry-After in whole seconds >= 1 on 429 and 503; dropped elsewhere (flask-limiter adds
    it to every limited response, where it means nothing)."""
    raw = resp.headers.get("Retry-After")
    if raw is None:
        return resp
    if resp.status_code not in (429, 503):
        del resp.headers["Retry-After"]
        return resp
    wait = int(raw) if _SECONDS.fullmatch(raw) else 1
    reset = resp.headers.get("X-RateLimit-Reset", "")
    if resp.status_code == 429 and _SECONDS.fullmatch(reset):
        wait = max(wait, math.ceil(int(reset) - time.time()))
    resp.headers["Retry-After"] = str(max(1, wait))
    return resp


def init_app(app: Flask, cfg: Config, *, api: list[Blueprint], exempt: list[Any]) -> Limiter:
    """Install the limiter; ``api`` are the JSON API's blueprints (a bad token is 401 there),
    ``exempt`` blueprints and views carry no limit. Call after the blueprints are registered
    and after the request log's hooks (so they see every answer)."""
    # registered before the limiter's own after_request hook, so it runs after it
    app.after_request(_whole_retry_after)
    names = {blp.name for blp in api}
    # One budget per caller across the whole API (an application limit: flask-limiter's default
    # limits would give every endpoint a budget of its own).
    limiter = Limiter(
        key_func=caller_key, app=app, application_limits=[cfg.rate_limit],
        application_limits_exempt_when=lambda: request.blueprint not in names,
        headers_enabled=True, storage_uri=_limits_uri(cfg.redis_url),
        storage_options=_limits_options(cfg.redis_url),
        enabled=cfg.rate_limits_enabled, strategy="fixed-window", key_prefix="ll:rl",
        # Redis down: let the request through to its own 503 (service_unavailable), not a 500
        swallow_errors=True)
    for item in exempt:
        limiter.exempt(item)
    for endpoint, (attr, methods) in ADDRESS_LIMITS.items():
        value = getattr(cfg, attr)
        if value:
            # the wrapper checks the limit when the view is called (after the 401 check)
            view: Any = app.view_functions[endpoint]
            app.view_functions[endpoint] = limiter.limit(
                value, key_func=address_key, methods=methods, scope=f"addr:{endpoint}")(view)

    # a strong reference: route limits hold the limiter weakly (and a disabled one is not
    # kept in app.extensions["limiter"])
    app.extensions["ll_limiter"] = limiter

    @app.before_request  # after the limiter's check: a bad token has been counted by now
    def _refuse_unknown_token() -> None:
        if request.blueprint not in names or request.blueprint == admin.blp.name:
            return  # (the admin paths check their own tokens: routes/admin.py)
        if token_sent() and verified_player() is None:
            raise ApiError("unauthorized", "unknown token",
                           headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
        refuse_banned()

    if cfg.rate_limits_enabled:
        _limit_unknown_paths(app, limiter, cfg.rate_limit)

    return limiter


def _limit_unknown_paths(app: Flask, limiter: Limiter, limit: str) -> None:
    """A path no route has (flask-limiter exempts a request without an endpoint) counts
    ``RATE_LIMIT`` per address of its own, so probing for paths is no free flood."""
    windows = parse_many(limit)

    @app.before_request
    def _unknown_path() -> None:
        if request.endpoint is not None:
            return
        key = address_key()
        for window in windows:
            if not limiter.limiter.hit(window, "ll:rl:unknown", key):
                reset = limiter.limiter.get_window_stats(window, "ll:rl:unknown", key).reset_time
                raise ApiError("rate_limited", f"too many requests for unknown paths: {window}",
                               headers={"Retry-After": str(max(1, math.ceil(
                                   reset - time.time())))})


def _limits_uri(redis_url: str) -> str:
    # the `limits` package spells unix sockets redis+unix://, and takes redis+cluster:// as we
    # do, without our own options (wait_replicas: store/cluster.py); its Sentinel URL has no
    # database number and no sentinel credentials (given in _limits_options)
    if sentinel.is_sentinel_url(redis_url):
        u = sentinel.parse(redis_url)
        auth = redis_url.partition("://")[2].rpartition("@")[0]
        hosts = ",".join(f"{h}:{p}" for h, p in u.sentinels)
        return f"redis+sentinel://{auth + '@' if auth else ''}{hosts}/{u.service}"
    if redis_url.startswith("unix://"):
        return "redis+unix://" + redis_url.removeprefix("unix://")
    return redis_url.partition("?")[0] if "+cluster://" in redis_url else redis_url


def _limits_options(redis_url: str) -> dict[str, Any]:
    """The limiter's connection settings: short timeouts (``sockets.LIMITER_TIMEOUT_S``): a
    stalled Redis lets the request through to its own commands, which answer the 503."""
    t = sockets.LIMITER_TIMEOUT_S
    opts: dict[str, Any] = {"socket_timeout": t, "socket_connect_timeout": t}
    if sentinel.is_sentinel_url(redis_url):
        u = sentinel.parse(redis_url)
        opts["db"] = u.db
        opts["sentinel_kwargs"] = {"socket_timeout": t, "socket_connect_timeout": t,
                                   **u.sentinel_kwargs}
    return opts
