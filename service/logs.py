"""The log line formats every process of the service writes (the API, the deadline worker,
cron): ``LOG_FORMAT=json`` (the default; docker compose's) one JSON object per line (``ts``,
``level``, ``msg``, ``logger``, then the record's own fields, ``exc`` for a traceback);
``text`` (``make run``) short lines for people. The HTTP layer (``http/requestlog.py``) and the
job processes (``jobs/joblog.py``) each say which fields their records carry and how their own
records read as text; neither format depends on Flask or RQ."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any


def log_format() -> str:
    """``json`` (default) or ``text``, from ``LOG_FORMAT``."""
    return "text" if os.environ.get("LOG_FORMAT", "json").strip().lower() == "text" else "json"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, msg, logger, the record's ``fields`` that are set,
    then what ``context()`` adds (fields the record did not set itself), and exc."""

    def __init__(self, fields: Iterable[str],
                 context: Callable[[dict[str, Any]], None] | None = None) -> None:
        super().__init__()
        self.fields = tuple(fields)
        self.context = context

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "msg": record.getMessage(),
            "logger": record.name,
        }
        d = record.__dict__
        for k in self.fields:
            v = d.get(k)
            if v is not None:
                out[k] = v
        if self.context is not None:
            self.context(out)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, separators=(",", ":"), default=str)


class TextFormatter(logging.Formatter):
    """One short line per record: the time, then ``short(record)`` when it gives one (a
    request's or a job's own line), else the level, the logger and the message (and any
    traceback)."""

    def __init__(self, short: Callable[[logging.LogRecord], str | None] | None = None) -> None:
        super().__init__()
        self.short = short

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return datetime.fromtimestamp(record.created).strftime("%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        when = self.formatTime(record)
        own = None if self.short is None else self.short(record)
        if own is not None:
            return f"{when} {own}"
        line = f"{when} {record.levelname.lower()} {record.name}: {record.getMessage()}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def formatter(json_fields: Iterable[str],
              context: Callable[[dict[str, Any]], None] | None = None,
              short: Callable[[logging.LogRecord], str | None] | None = None
              ) -> logging.Formatter:
    """The formatter ``LOG_FORMAT`` asks for."""
    if log_format() == "text":
        return TextFormatter(short)
    return JsonFormatter(json_fields, context)
