"""What every blueprint shares: authentication, JSON responses, the error schema for docs."""

from __future__ import annotations

import functools
import json
import os
from typing import Any

import marshmallow as ma
import orjson
import redis
from flask import Response, current_app, g, request

from ..config import Config
from ..http.errors import ApiError
from ..http.views import rfc3339
from ..realtime.notify import Notifier
from ..store import players


class ErrorSchema(ma.Schema):
    """Every error body."""

    status = ma.fields.Integer(required=True)
    code = ma.fields.String(required=True, metadata={"description": "stable snake_case code"})
    message = ma.fields.String(required=True)
    errors = ma.fields.Raw(metadata={"description": "per-field validation errors"})
    rule = ma.fields.String(metadata={
        "description": "when the refusal applies a rule of the game: a link to it, /rules#R11"})
    oldest_cursor = ma.fields.String(metadata={
        "description": "with cursor_expired (410): resync from GET /v1/me/matches, then go on "
                       "from this cursor"})
    reason = ma.fields.String(metadata={"description": "player_banned: why"})
    until = ma.fields.String(allow_none=True, metadata={
        "description": "player_banned: when the ban ends (RFC 3339), null: until lifted"})


def store() -> redis.Redis:
    return current_app.extensions["redis"]  # type: ignore[no-any-return]


def config() -> Config:
    return current_app.extensions["llconfig"]  # type: ignore[no-any-return]


def notifier() -> Notifier:
    return current_app.extensions["notifier"]  # type: ignore[no-any-return]


def _dumps(data: Any) -> bytes:
    try:
        return orjson.dumps(data)
    except TypeError:  # e.g. an int beyond 64 bits: the stdlib encoder takes anything JSON can
        return json.dumps(data, separators=(",", ":")).encode()


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None,
                  *, empty: bool = False) -> Response:
    """A JSON response built without a marshmallow dump (the schemas document the shape)."""
    body = b"" if empty else _dumps(data)
    resp = current_app.response_class(body, status=status,
                                      mimetype=None if empty else "application/json")
    for k, v in (headers or {}).items():
        resp.headers[k] = v
    return resp


def bearer_token() -> str | None:
    auth = request.headers.get("Authorization", "")
    scheme, _, token = auth.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def token_sent() -> bool:
    return bearer_token() is not None


#: ``BENCH_TOKEN_CHECK=0`` (bench/api.py's baseline only, never in production): a token this
#: process has seen is taken on trust, so the benchmark can measure what the check costs
_TOKEN_CHECK = os.environ.get("BENCH_TOKEN_CHECK", "1") != "0"


def verified_player() -> str | None:
    """The player whose token the request carries; None without a token or with one nobody has.
    Checked against Redis once per request (the rate limiter's key and the views share it): a
    rotated, deleted or banned token is refused on every process from the very next request."""
    if "ll_player" not in g:
        token = bearer_token()
        got = players.access(store(), token, check=_TOKEN_CHECK) if token else None
        g.ll_player = got.player if got else None
        g.ll_ban = got.ban if got else None
        if got is not None and got.names_gen is not None:
            g.ll_names_gen = got.names_gen  # read with the token: shown_names.py
    return g.ll_player  # type: ignore[no-any-return]


def refuse_banned() -> None:
    """403 ``player_banned`` (with the reason and until when) for a banned player's token."""
    if verified_player() is not None and g.ll_ban is not None:
        ban = g.ll_ban
        until = ban.get("until")
        raise ApiError("player_banned", f"this player is banned: {ban['reason']}",
                       extra={"reason": ban["reason"],
                              "until": None if until is None else rfc3339(float(until))})


def current_player(required: bool = True) -> str | None:
    """The caller's player id from ``Authorization: Bearer <token>``."""
    pid = verified_player()
    refuse_banned()
    if pid is None and token_sent():
        raise ApiError("unauthorized", "unknown token",
                       headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
    if pid is None and required:
        raise ApiError("unauthorized", "send Authorization: Bearer <token>",
                       headers={"WWW-Authenticate": "Bearer"})
    return pid


def auth_first(fn: Any) -> Any:
    """Check the token before the body or query is parsed (outermost decorator), so a request
    without a valid token is a 401 whatever else is wrong with it."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        require_player()
        return fn(*args, **kwargs)

    return wrapper


def require_player() -> str:
    pid = current_player(required=True)
    assert pid is not None
    return pid


AUTH: list[dict[str, list[str]]] = [{"bearerAuth": []}]

#: error responses documented per endpoint
E401 = (401, "authentication missing or wrong")
E403 = (403, "not allowed for this player")
E404 = (404, "no such resource")
E409 = (409, "conflict with the match's current state")
E410 = (410, "cursor_expired: notices after the cursor were dropped; resync from GET "
             "/v1/me/matches, then go on from oldest_cursor")
E412 = (412, "If-Match did not match the current version")
E422 = (422, "the request body or parameters are invalid")
E400 = (400, "the body is not JSON")
E413 = (413, "the body is too large")
E429 = (429, "rate limited; see Retry-After (whole seconds, at least 1)")
E401_BAD = (401, "a Bearer token nobody has (the token is optional here)")


def document_errors(blp: Any, *errs: tuple[int, str]) -> Any:
    """Decorator: document the given error statuses with :class:`ErrorSchema`, and 401 and 429
    wherever they are not given: every endpoint refuses a token nobody has, and is rate
    limited."""

    def deco(fn: Any) -> Any:
        given = {status for status, _ in errs}
        always = [e for e in (E401_BAD, E429) if e[0] not in given]
        documented = fn
        for status, desc in (*errs, *always):
            documented = blp.alt_response(status, schema=ErrorSchema,
                                          description=desc)(documented)
        # Only the documentation is kept: each alt_response adds a wrapper layer that costs a
        # current_app lookup and an ensure_sync per request (about 9 layers on an action).
        fn._apidoc = documented._apidoc
        return fn

    return deco
