"""What the HTTP layer accepts in paths, queries, headers and JSON bodies, each with an explicit
bound, so that odd input is a 4xx with a stable code before it reaches the store.

- **Ids in paths** are URL converters: ``/v1/players/<player_id:player_id>``. A segment that is
  not an id (``p_…:matches``, a trailing newline, 300 characters) matches no route, so the router
  answers ``404 not_found`` and nothing reads Redis.
- **JSON bodies** are parsed by :class:`Blueprint` (use it for every resource): an integer
  literal of more than :data:`MAX_JSON_INT_DIGITS` digits is ``422 invalid_request`` while
  parsing (Python refuses to convert more than 4,300 digits at all, which was a 500). Schemas
  bound every integer field with a ``Range``.
- **Numbers in queries** use :class:`QueryInt` / :class:`QueryFloat`: ASCII digits only
  (``int("١٢")`` is 12 and ``float("１")`` is 1.0 in Python), within a range.
- **Versions in headers** (``If-Match``, ``If-None-Match``) go through :func:`etag_versions`.

A new resource (challenges, say) gets all of this by using :class:`Blueprint`, a converter for
its ids (:func:`id_converter`) and these fields.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Callable
from typing import Any

import flask
import flask_smorest
import marshmallow as ma
from marshmallow import fields as f
from marshmallow import validate as v
from webargs import core
from webargs.flaskparser import FlaskParser, is_json_request
from werkzeug.routing import BaseConverter

from ..store import keys
from .errors import ApiError

#: The largest integer every JSON client reads exactly (2^53 - 1): the bound of versions and
#: other counters that clients send back.
MAX_INT = 2**53 - 1
#: Integer literals in a JSON body longer than this are refused while parsing; 20 digits hold
#: any 64-bit integer, and the schemas' ranges are far below.
MAX_JSON_INT_DIGITS = 20


# --------------------------------------------------------------------------- ids in paths


def id_converter(name: str, pattern: str) -> type[BaseConverter]:
    """A URL converter matching exactly ``pattern`` (Werkzeug anchors it to the segment)."""
    return type(f"{name.title().replace('_', '')}Converter", (BaseConverter,),
                {"regex": pattern, "part_isolating": True})


#: converter name -> converter; routes write ``<match_id:match_id>``
CONVERTERS: dict[str, type[BaseConverter]] = {
    "match_id": id_converter("match_id", keys.MATCH_ID_PATTERN),
    "player_id": id_converter("player_id", keys.PLAYER_ID_PATTERN),
}
# (challenge ids are checked by service.store.challenges before any Redis read, so that a
# malformed one is the challenges API's own 404 challenge_not_found)


_CONVERTER_IN_RULE = re.compile(r"<(?:[a-z_]+:)?([a-z_]+)>")


def route_label(rule: str) -> str:
    """A URL rule as logs and metrics name it, without converter names
    (``/v1/matches/<match_id>/actions``), so labels don't change with how ids are checked.

    >>> route_label("/v1/matches/<match_id:match_id>/actions")
    '/v1/matches/<match_id>/actions'
    """
    return _CONVERTER_IN_RULE.sub(r"<\1>", rule)


def _param_schema(converter: BaseConverter) -> dict[str, Any]:
    return {"type": "string", "pattern": f"^{converter.regex}$"}


def init_app(app: flask.Flask, api: flask_smorest.Api) -> None:
    """Register the id converters (with the app's router and in the OpenAPI document); call
    before the blueprints are registered."""
    for name, conv in CONVERTERS.items():
        app.url_map.converters[name] = conv
        api.register_converter(conv, _param_schema)


# --------------------------------------------------------------------------- JSON bodies


def _bounded_int(literal: str) -> int:
    if len(literal.lstrip("-")) > MAX_JSON_INT_DIGITS:
        raise ApiError("invalid_request", f"integers in a request body have at most "
                       f"{MAX_JSON_INT_DIGITS} digits")
    return int(literal)


def loads(data: bytes | str) -> Any:
    """``json.loads`` with bounded integers; malformed JSON raises ``JSONDecodeError`` (as
    webargs expects: it becomes 400 malformed_json)."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise json.JSONDecodeError(f"Bytes decoding error : {e.reason}", doc=str(e.object),
                                       pos=e.start) from e
    return json.loads(data, parse_int=_bounded_int)


class Parser(FlaskParser):
    """webargs's Flask parser with :func:`loads` for JSON bodies."""

    def _raw_load_json(self, req: flask.Request) -> Any:
        if not is_json_request(req):
            return core.missing
        return loads(req.get_data(cache=True))


def plain_body_first(plain: Callable[[Any], dict[str, Any] | None]) -> Callable[[Any], Any]:
    """Decorator, above ``@blp.arguments(schema)`` and the other flask-smorest decorators of a
    view whose every answer is a ``Response``: a JSON body that ``plain(body)`` takes (returns
    it as the schema would load it) goes to the view at once; any other body goes through
    webargs and marshmallow as before, with their errors. What it skips on the common path is
    the parsing machinery and one ``ensure_sync`` wrapper per decorator (the response and doc
    wrappers only pass a ``Response`` through); the documentation is the wrapped view's."""

    def deco(wrapped: Any) -> Any:
        view = inspect.unwrap(wrapped)

        @functools.wraps(wrapped)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            req = flask.request
            data = None
            if is_json_request(req):
                try:
                    data = plain(loads(req.get_data(cache=True)))
                except Exception:  # noqa: BLE001 - webargs then answers it as it always did
                    data = None
            if data is None:
                return wrapped(*args, **kwargs)
            return view(*args, data, **kwargs)

        return wrapper

    return deco


class Blueprint(flask_smorest.Blueprint):  # type: ignore[misc]
    """flask-smorest's Blueprint parsing arguments with :class:`Parser`: every resource uses
    this one (a test checks)."""

    ARGUMENTS_PARSER = Parser()


# --------------------------------------------------------------------------- queries

_ASCII_INT = re.compile(r"-?[0-9]{1,20}")
_ASCII_DECIMAL = re.compile(r"[0-9]{1,10}(\.[0-9]{1,10})?")


class QueryInt(f.Integer):
    """An integer in ``[minimum, maximum]`` written in ASCII digits."""

    def __init__(self, minimum: int, maximum: int, **kwargs: Any) -> None:
        validate = kwargs.pop("validate", [])
        validate = [validate] if callable(validate) else list(validate)
        super().__init__(validate=[v.Range(minimum, maximum), *validate], **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> int:
        if not (isinstance(value, str) and _ASCII_INT.fullmatch(value)):
            raise self.make_error("invalid")
        return int(value)


class IdString(f.String):
    """An id (in a query or body) matching exactly ``pattern``."""

    def __init__(self, pattern: str, **kwargs: Any) -> None:
        self.pattern = re.compile(pattern)
        metadata = {"pattern": f"^{pattern}$", **kwargs.pop("metadata", {})}
        super().__init__(validate=self._check, metadata=metadata, **kwargs)

    def _check(self, value: str) -> None:
        if self.pattern.fullmatch(value) is None:
            raise ma.ValidationError(f"not an id of the form {self.pattern.pattern}")


class QueryFloat(f.Float):
    """A decimal number in ``[minimum, maximum]``: ASCII digits with an optional fraction (no
    exponent, no nan or inf)."""

    def __init__(self, minimum: float, maximum: float, **kwargs: Any) -> None:
        super().__init__(validate=v.Range(minimum, maximum), allow_nan=False, **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> float:
        if not (isinstance(value, str) and _ASCII_DECIMAL.fullmatch(value)):
            raise self.make_error("invalid")
        return float(value)


# --------------------------------------------------------------------------- headers

# One entity tag as this API sends it ("7"), also weak (W/"7") or bare (7); ASCII digits only
# and at most 16 of them (MAX_INT has 16).
_TAG = re.compile(r'[ \t]*(?:W/)?(?:"([0-9]{1,16})"|([0-9]{1,16}))[ \t]*')


def etag_versions(raw: str) -> list[int] | None:
    """The versions in an ``If-Match`` / ``If-None-Match`` value (a comma-separated list of
    entity tags); None when any part is not a version this API could have sent."""
    out = []
    for part in raw.split(","):
        m = _TAG.fullmatch(part)
        if m is None:
            return None
        n = int(m.group(1) or m.group(2))
        if n > MAX_INT:
            return None
        out.append(n)
    return out


def if_match() -> int | None:
    """The version ``If-Match`` requires (None without the header, or with ``*``); anything but
    one version is 412 precondition_failed."""
    raw = flask.request.headers.get("If-Match")
    if raw is None or raw.strip() == "*":
        return None
    versions = etag_versions(raw)
    if versions is None or len(versions) != 1:
        raise ApiError("precondition_failed", "If-Match must be the view's version (its ETag)")
    return versions[0]


#: what if_none_match() answers for ``If-None-Match: *`` (any version matches)
ANY = -1


def if_none_match() -> list[int] | None:
    """The versions the caller has (None without the header; ``[ANY]`` for ``*``); anything
    else is 422 invalid_request."""
    raw = flask.request.headers.get("If-None-Match")
    if raw is None or not raw.strip():
        return None
    if raw.strip() == "*":
        return [ANY]
    versions = etag_versions(raw)
    if versions is None:
        raise ApiError("invalid_request", "If-None-Match must hold versions this API sent as "
                       "ETags, such as \"7\"")
    return versions


