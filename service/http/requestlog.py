"""Structured logs and request ids.

Every response carries ``X-Request-ID``: the caller's own when it sent a sane one (1-128 letters,
digits and ``-_.:``), a fresh one otherwise. Each answered request is logged as ONE JSON object
on one line (stderr, logger ``service.access``)::

    {"ts": "2025-01-01T12:00:00.123Z", "level": "info", "msg": "request", "request_id": "...",
     "method": "POST", "path": "/v1/matches/m_1/actions", "route": "/v1/matches/<match_id>/actions",
     "status": 200, "duration_ms": 3.1}

Every other record of the ``service`` loggers (``app.logger`` included) is written the same way,
with the request id of the request it happened in, and ``exc`` holding any traceback.
``REQUEST_LOG=0`` turns the per-request line off; ``LOG_LEVEL`` sets the level (default info).

``LOG_FORMAT=text`` (what ``make run`` uses; ``json`` is the default and docker compose's) writes
the same records as short lines for people, about 50 bytes a request instead of 250::

    12:00:00 POST /v1/matches/m_694a8ef9b5d9/actions 200 3ms
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
import uuid
from typing import Any

from flask import Flask, Response, g, has_request_context, request

from .. import logs
from .params import route_label

HEADER = "X-Request-ID"
_SANE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_FIELDS = ("request_id", "method", "path", "route", "status", "duration_ms", "remote")

access_log = logging.getLogger("service.access")


def _request_fields(out: dict[str, Any]) -> None:
    """A record logged while a request is handled carries that request's id, method and path."""
    if "request_id" not in out and has_request_context():
        out["request_id"] = request_id()
        out.setdefault("method", request.method)
        out.setdefault("path", request.path)


def _access_line(record: logging.LogRecord) -> str | None:
    d = record.__dict__
    if record.name == access_log.name and "status" in d:
        ms = d["duration_ms"]
        took = "" if ms is None else f" {ms:.0f}ms" if ms >= 1 else f" {ms:.1f}ms"
        return f"{d['method']} {d['path']} {d['status']}{took}"
    return None


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time (test runners swap it)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def configure_logging() -> None:
    """JSON lines (or, with ``LOG_FORMAT=text``, short lines) on stderr for the ``service``
    loggers (idempotent)."""
    root = logging.getLogger("service")
    if any(getattr(h, "_ll_json", False) for h in root.handlers):
        return
    handler = _StderrHandler()
    handler.setFormatter(logs.formatter(_FIELDS, context=_request_fields,
                                        short=_access_line))
    handler._ll_json = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(os.environ.get("LOG_LEVEL", "info").upper())
    # Records still propagate: gunicorn leaves the root logger without handlers (so nothing is
    # written twice), and pytest's caplog, on the root, still sees them.


def request_id() -> str:
    """The current request's id (taken from the request or made up, once)."""
    rid = g.get("request_id")
    if rid is None:
        incoming = request.headers.get(HEADER, "")
        rid = incoming if _SANE.match(incoming) else uuid.uuid4().hex
        g.request_id = rid
    return str(rid)


def _before() -> None:
    g.ll_started = time.perf_counter()
    request_id()


def _after(resp: Response) -> Response:
    rid = request_id()
    resp.headers[HEADER] = rid
    if access_log.isEnabledFor(logging.INFO):
        started = g.get("ll_started")
        rule = request.url_rule
        access_log.info("request", extra={
            "request_id": rid, "method": request.method, "path": request.path,
            "route": route_label(rule.rule) if rule is not None else None, "status": resp.status_code,
            "duration_ms": None if started is None else
            round((time.perf_counter() - started) * 1000, 2),
            "remote": request.remote_addr,
        })
    return resp


def init_app(app: Flask) -> None:
    """Install the hooks; call first in ``create_app`` so they run before the rate limiter."""
    configure_logging()
    enabled = os.environ.get("REQUEST_LOG", "1") != "0"
    app.before_request(_before)
    app.after_request(_after)
    if not enabled:
        access_log.disabled = True
