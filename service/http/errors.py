"""The one place where engine and store errors become HTTP answers.

Every error body is ``{"status": <int>, "code": <stable snake_case>, "message": str, "errors"?}``;
outside ``/v1``, a browser (an Accept that prefers HTML) is shown a 404 or 405 as a page instead.
"""

from __future__ import annotations

import os
import re
import traceback
from typing import Any

import marshmallow as ma
import redis
from flask import Flask, Response, current_app, json, render_template, request
from redis.exceptions import (
    ClusterDownError,
    CrossSlotTransactionError,
    OutOfMemoryError,
    RedisClusterException,
    TryAgainError,
)
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from ..engine import EngineError
from ..store.errors import StoreError

#: stable code -> HTTP status
STATUS: dict[str, int] = {
    "malformed_json": 400,
    "invalid_request": 422,
    "unauthorized": 401,
    "forbidden": 403,
    "not_challenged": 403,
    "not_challenger": 403,
    "ladder_bots_only": 403,
    "blocked": 403,
    "challenges_off": 403,
    "cursor_expired": 410,
    "player_banned": 403,
    "challenge_not_found": 404,
    "not_found": 404,
    "method_not_allowed": 405,
    "not_your_turn": 409,
    "version_conflict": 409,
    "match_not_active": 409,
    "match_full": 409,
    "already_joined": 409,
    "already_forfeited": 409,
    "name_taken": 409,
    "challenge_closed": 409,
    "challenge_expired": 409,
    "already_challenged": 409,
    "too_many_challenges": 409,
    "name_reserved": 422,
    "precondition_failed": 412,
    "payload_too_large": 413,
    "unsupported_media_type": 415,
    "malformed_action": 422,
    "illegal_action": 422,
    "player_not_found": 422,
    "challenge_self": 422,
    "duplicate_opponent": 422,
    "idempotency_key_reused": 422,
    "rate_limited": 429,
    "internal_error": 500,
    "service_unavailable": 503,
    # a finished match moved to the archive whose file is missing or unreadable
    "archive_unavailable": 503,
}

#: what a client is told to wait before trying again while Redis is unreachable (seconds)
UNAVAILABLE_RETRY_AFTER_S = 1

# engine code -> API code
ENGINE_CODES = {
    "match_over": "match_not_active",
    "invalid_options": "invalid_request",
    "invalid_seat": "invalid_request",
    "unknown_card": "malformed_action",
    "invalid_state": "internal_error",
}

_HTTP_CODES = {400: "invalid_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
               405: "method_not_allowed", 409: "version_conflict", 410: "cursor_expired",
               412: "precondition_failed",
               413: "payload_too_large", 415: "unsupported_media_type", 422: "invalid_request",
               429: "rate_limited", 500: "internal_error", 503: "service_unavailable"}


#: a rule id cited in a message: "(R11)", "(R20a)"
_RULE = re.compile(r"\((R\d{1,2}[a-z]?)\)")


class ApiError(Exception):
    """Raised by views for anything that is neither an engine nor a store error."""

    def __init__(self, code: str, message: str, *, status: int | None = None,
                 errors: Any = None, headers: dict[str, str] | None = None,
                 extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.extra = extra or {}
        self.code = code
        self.message = message
        self.status = status or STATUS[code]
        self.errors = errors
        self.headers = headers or {}


def error_response(status: int, code: str, message: str, errors: Any = None,
                   headers: dict[str, str] | None = None,
                   extra: dict[str, Any] | None = None) -> Response:
    """The error body; ``extra``: fields of the code's own (a ban's ``reason`` and ``until``)."""
    body: dict[str, Any] = {"status": status, "code": code, "message": message}
    body.update(extra or {})
    if errors is not None:
        body["errors"] = errors
    body.update(extra or {})
    cited = _RULE.search(message)
    if cited:  # a refusal that names its rule links to it (docs/rules.md, served at /rules)
        body["rule"] = f"/rules#{cited.group(1)}"
    resp = current_app.response_class(json.dumps(body), status=status,
                                      mimetype="application/json")
    for k, v in (headers or {}).items():
        resp.headers[k] = v
    return resp


def wants_html() -> bool:
    """Whether an error should be answered as a page: outside ``/v1`` (the API answers JSON
    whatever it is asked), to a client whose Accept prefers HTML to JSON. A browser's does
    (``text/html`` at 1, JSON only through ``*/*`` at 0.8); curl's ``*/*``, the SDKs' and any
    ``Accept: application/json`` don't, so API clients keep the JSON errors."""
    if request.path == "/v1" or request.path.startswith("/v1/"):
        return False
    accept = request.accept_mimetypes
    return accept.quality("text/html") > accept.quality("application/json")


_HEADINGS = {404: "There is no such page", 405: "That page can't be used that way"}


def html_error(status: int, code: str, message: str) -> Response:
    """The error as a short page with links onwards (the web package's ``missing.html``)."""
    heading = _HEADINGS.get(status, "Something went wrong")
    if status == 404:
        message = f"Nothing lives at {request.path}."
    body = render_template("missing.html", page="missing", status=status, code=code,
                           heading=heading, message=message)
    return current_app.response_class(body, status=status, mimetype="text/html")


def _from_http(e: HTTPException) -> Response:
    status = e.code or 500
    if status in _HEADINGS and wants_html():
        return html_error(status, _HTTP_CODES[status], e.description or e.name)
    data = getattr(e, "data", None) or {}
    errors = data.get("errors") or data.get("messages")
    code = _HTTP_CODES.get(status, "invalid_request")
    message = data.get("message") or e.description or e.name
    if status == 400 and "invalid json" in json.dumps(errors or message).lower():
        code, message, errors = "malformed_json", "the request body is not valid JSON", None
    if status == 422 and errors:
        # webargs nests errors by location ({"json": {...}}); flatten the single location.
        if isinstance(errors, dict) and len(errors) == 1:
            (loc, errs), = errors.items()
            if loc in ("json", "query", "headers", "path", "view_args") and isinstance(errs, dict):
                errors = errs
        message = "the request does not match the schema: see errors"
    headers = dict(data.get("headers") or {})
    if status == 405 and e.get_headers():
        headers.update({k: v for k, v in e.get_headers() if k.lower() == "allow"})
    return error_response(status, code, str(message), errors, headers)


def _in_json_decoder(e: BaseException) -> bool:
    """Whether ``e`` was raised while the stdlib decoded JSON (a body nested too deeply)."""
    return any(os.path.basename(f.filename) == "decoder.py"
               and os.path.basename(os.path.dirname(f.filename)) == "json"
               for f in traceback.extract_tb(e.__traceback__))


def _refuse_long_streamed_body() -> None:
    """A body sent without Content-Length (chunked) is cut at MAX_CONTENT_LENGTH by Werkzeug
    without an error, and the cut text would then be refused as malformed JSON: refuse it as too
    large instead. (A body with a Content-Length is checked by Werkzeug itself.)"""
    limit = request.max_content_length
    if limit is None or request.content_length is not None:
        return
    if "chunked" not in request.headers.get("Transfer-Encoding", "").lower():
        return
    data = request.get_data(cache=True)  # at most `limit` bytes
    if len(data) >= limit and request.environ["wsgi.input"].read(1):
        raise RequestEntityTooLarge()


def register(app: Flask) -> None:
    """Install the handlers; called by ``create_app`` after flask-smorest's own."""

    app.before_request(_refuse_long_streamed_body)

    @app.errorhandler(ApiError)
    def _api(e: ApiError) -> Response:
        return error_response(e.status, e.code, e.message, e.errors, e.headers, e.extra)

    @app.errorhandler(EngineError)
    def _engine(e: EngineError) -> Response:
        code = ENGINE_CODES.get(e.code, e.code)
        return error_response(STATUS.get(code, 422), code, e.message)

    @app.errorhandler(StoreError)
    def _store(e: StoreError) -> Response:
        status = STATUS.get(e.code, 422)
        if e.code == "version_conflict" and e.extra.get("if_match"):
            status = 412
        headers = None
        if "retry_after" in e.extra:  # a limit the store counts (store/challenge_guard.py)
            headers = {"Retry-After": str(max(1, int(e.extra["retry_after"])))}
        extra = None
        if e.code == "cursor_expired":  # where to go on from once resynchronised
            extra = {"oldest_cursor": e.extra.get("oldest_cursor")}
        return error_response(status, e.code, e.message, headers=headers, extra=extra)

    @app.errorhandler(ma.ValidationError)
    def _validation(e: ma.ValidationError) -> Response:
        return error_response(422, "invalid_request", "the request does not match the schema",
                              e.messages)

    @app.errorhandler(HTTPException)
    def _http(e: HTTPException) -> Response:
        return _from_http(e)

    @app.errorhandler(RedisClusterException)
    def _cluster(e: RedisClusterException) -> Response:
        # A Redis Cluster that can't be reached or whose slots are moving (a failover) is
        # down for a moment; a transaction that spans slots is a bug (a 500), never "retry".
        if isinstance(e, CrossSlotTransactionError):
            return _unexpected(e)
        return _redis_down(e)

    @app.errorhandler(redis.ConnectionError)
    @app.errorhandler(redis.TimeoutError)
    @app.errorhandler(ClusterDownError)
    @app.errorhandler(TryAgainError)
    def _redis_down(e: Exception) -> Response:
        # Redis restarting or unreachable (BusyLoadingError, a ConnectionError, while it loads
        # its data): nothing was changed (every change is one transaction), so the request can
        # simply be repeated. The turn clock stands still meanwhile (store/clock.py).
        app.logger.warning("redis unavailable: %s", e)
        return error_response(503, "service_unavailable",
                              "the service is briefly unavailable (its database is restarting);"
                              " nothing was changed: try again shortly",
                              headers={"Retry-After": str(UNAVAILABLE_RETRY_AFTER_S)})

    @app.errorhandler(OutOfMemoryError)
    def _redis_full(e: Exception) -> Response:
        # Redis at its maxmemory with noeviction (docs/operations.md#bounded-data): it refuses
        # a write (a commit script included) before running any of it, so nothing changed
        app.logger.error("redis is full (maxmemory): %s", e)
        return error_response(503, "service_unavailable",
                              "the service can't store anything more right now (its database "
                              "is full); nothing was changed: try again later",
                              headers={"Retry-After": "60"})

    @app.errorhandler(RecursionError)
    def _recursion(e: RecursionError) -> Response:
        if _in_json_decoder(e):  # the client's JSON nests deeper than the decoder goes
            return error_response(400, "malformed_json", "the request body is nested too deeply")
        return _unexpected(e)

    @app.errorhandler(Exception)
    def _unexpected(e: Exception) -> Response:
        app.logger.exception("unhandled error")
        return error_response(500, "internal_error", "internal error; it was logged")
