"""Operators: bans, renames, ladder entries and seasons, finding players, the audit log.

Registered only when ``ADMIN_TOKEN`` names at least one token (``create_app``): without one,
every ``/v1/admin/...`` path is a path no route has (404, as if it did not exist). Each call
wants ``Authorization: Bearer <an admin token>`` (compared in constant time), counts against
``RATE_LIMIT`` under the token's label, and each change is written to the audit log with that
label (``store/audit.py``)."""

from __future__ import annotations

import hmac
from typing import Any

import marshmallow as ma
from flask import g, request
from flask.views import MethodView
from marshmallow import fields as f

from ..http.errors import ApiError
from ..http.params import Blueprint, QueryInt
from ..store import audit, inbox, moderation, players
from .common import (
    E400,
    E401,
    E404,
    E409,
    E413,
    E422,
    config,
    document_errors,
    json_response,
    store,
)
from .ladders import _ladder, configured

blp = Blueprint("admin", __name__, url_prefix="/v1/admin",
                description="Operators (only when ADMIN_TOKEN is set; otherwise 404).")

ADMIN_AUTH: list[dict[str, list[str]]] = [{"adminAuth": []}]


def admin_label() -> str | None:
    """The label of the admin token the request carries, or None."""
    if "ll_admin" not in g:
        auth = request.headers.get("Authorization", "")
        scheme, _, token = auth.partition(" ")
        label = None
        if scheme.lower() == "bearer" and token.strip():
            sent = token.strip().encode()
            for name, known in config().admin_tokens:
                # every token compared, each in constant time: no early answer to time
                if hmac.compare_digest(sent, known.encode()) and label is None:
                    label = name
        g.ll_admin = label
    return g.ll_admin  # type: ignore[no-any-return]


@blp.before_request
def _require_admin() -> None:
    if admin_label() is None:
        raise ApiError("unauthorized", "send Authorization: Bearer <an ADMIN_TOKEN token>",
                       headers={"WWW-Authenticate": "Bearer"})


def _audit(action: str, target: str, reason: str | None, before: Any, after: Any) -> str:
    label = admin_label()
    assert label is not None
    return audit.record(store(), admin=label, action=action, target=target, reason=reason,
                        before=before, after=after)


class ReasonSchema(ma.Schema):
    reason = f.String(validate=ma.validate.Length(1, moderation.REASON_MAX), metadata={
        "description": "why (kept in the audit log)"})


class BanSchema(ma.Schema):
    reason = f.String(required=True, validate=ma.validate.Length(1, moderation.REASON_MAX),
                      metadata={"description": "shown to the player in every 403"})
    until = f.AwareDateTime(allow_none=True, metadata={
        "description": "RFC 3339 with an offset; absent or null: until unbanned"})


class RenameSchema(ReasonSchema):
    name = f.String(required=True, metadata={
        "pattern": f"^{players.NAME_PATTERN}$", "description": players.NAME_RULE})


class SearchQuerySchema(ma.Schema):
    q = f.String(required=True, validate=ma.validate.Length(1, 64), metadata={
        "description": "a player id, or the start of a name (any case)"})
    limit = QueryInt(1, moderation.SEARCH_MAX, load_default=20)


def _entry_id(value: str) -> None:
    if not inbox.valid_cursor(value):  # (the same stream ids as the inbox's cursors)
        raise ma.ValidationError("not an entry id: <ms>-<seq>, each part at most 2^64-1")


class AuditQuerySchema(ma.Schema):
    after = f.String(validate=_entry_id, metadata={
        "pattern": f"^{inbox.CURSOR_RE.pattern}$",
        "description": "the id of the last entry you have: older ones follow"})
    limit = QueryInt(1, audit.MAX_LIMIT, load_default=50)


class DeleteEntryQuerySchema(ReasonSchema):
    pass


class AdminPlayerSchema(ma.Schema):
    class Meta:
        unknown = ma.INCLUDE

    id = f.String(required=True)
    name = f.String(required=True)
    kind = f.String(required=True)
    created_at = f.Float()
    ban = f.Dict(allow_none=True, metadata={
        "description": "{reason, until (epoch s or null), at, by} while banned"})


class AdminPlayersSchema(ma.Schema):
    players = f.List(f.Nested(AdminPlayerSchema), required=True)


class AdminChangeSchema(ma.Schema):
    """What an admin call changed: the audit entry written for it."""

    audit_id = f.String(required=True)
    before = f.Raw(required=True)
    after = f.Raw(required=True)


class AuditEntrySchema(ma.Schema):
    id = f.String(required=True, metadata={"description": "the cursor: pass as after"})
    at = f.Float(required=True, metadata={"description": "epoch s"})
    admin = f.String(required=True, metadata={"description": "the token's label, or "
                                                             "cli:<user>"})
    action = f.String(required=True)
    target = f.String(required=True)
    reason = f.String(allow_none=True)
    before = f.Raw(allow_none=True)
    after = f.Raw(allow_none=True)


class AuditSchema(ma.Schema):
    entries = f.List(f.Nested(AuditEntrySchema), required=True)
    next_cursor = f.String(allow_none=True, required=True)


def _done(action: str, target: str, reason: str | None, before: Any, after: Any) -> Any:
    entry = _audit(action, target, reason, before, after)
    return json_response({"audit_id": entry, "before": before, "after": after})


@blp.route("/players")
class AdminPlayers(MethodView):
    @blp.arguments(SearchQuerySchema(), location="query")
    @blp.response(200, AdminPlayersSchema)
    @blp.doc(security=ADMIN_AUTH)
    @document_errors(blp, E401, E422)
    def get(self, args: dict[str, Any]) -> Any:
        """Find players by id or by the start of their name."""
        return json_response({"players": moderation.search(store(), args["q"],
                                                           limit=args["limit"])})


@blp.route("/players/<player_id:player_id>")
class AdminPlayer(MethodView):
    @blp.response(200, AdminPlayerSchema)
    @blp.doc(security=ADMIN_AUTH)
    @document_errors(blp, E401, E404)
    def get(self, player_id: str) -> Any:
        """A player as operators see it (with its ban)."""
        return json_response(moderation.player(store(), player_id))

    @blp.arguments(RenameSchema())
    @blp.response(200, AdminChangeSchema)
    @blp.doc(security=ADMIN_AUTH)
    @document_errors(blp, E400, E401, E404, E409, E413, E422)
    def patch(self, data: dict[str, Any], player_id: str) -> Any:
        """Rename: the new name shows wherever the player appears (finished matches too); the
        old one stays taken for 30 days."""
        before, after = moderation.rename(store(), player_id, data["name"])
        return _done("rename", player_id, data.get("reason"), before, after)


@blp.route("/players/<player_id:player_id>/ban")
class Ban(MethodView):
    @blp.arguments(BanSchema())
    @blp.response(200, AdminChangeSchema)
    @blp.doc(security=ADMIN_AUTH)
    @document_errors(blp, E400, E401, E404, E413, E422)
    def post(self, data: dict[str, Any], player_id: str) -> Any:
        """Ban: every call with its token answers 403 player_banned from the next request on;
        it leaves every ladder and list; its running matches end as resignations."""
        until = data.get("until")
        before, after = moderation.ban(
            store(), player_id, reason=data["reason"],
            until=None if until is None else until.timestamp(), by=admin_label() or "?",
            ladders=configured().values())
        return _done("ban", player_id, data["reason"], before, after)


@blp.route("/players/<player_id:player_id>/unban")
class Unban(MethodView):
    @blp.arguments(ReasonSchema(), required=False)
    @blp.response(200, AdminChangeSchema)
    @blp.doc(security=ADMIN_AUTH)
    @document_errors(blp, E400, E401, E404, E413, E422)
    def post(self, data: dict[str, Any], player_id: str) -> Any:
        """Lift a ban (the matches it lost stay lost; it enters ladders again itself)."""
        before, after = moderation.unban(store(), player_id)
        return _done("unban", player_id, data.get("reason"), before, after)


@blp.route("/ladders/<name>/entries/<player_id:player_id>")
class AdminEntry(MethodView):
    @blp.arguments(DeleteEntryQuerySchema(), location="query")
    @blp.response(200, AdminChangeSchema)
    @blp.doc(security=ADMIN_AUTH)
    @document_errors(blp, E401, E404, E422)
    def delete(self, args: dict[str, Any], name: str, player_id: str) -> Any:
        """Remove a player's entry and rating from a ladder (its history stays)."""
        before, after = moderation.remove_entry(store(), _ladder(name), player_id)
        return _done("remove_entry", f"{name}/{player_id}", args.get("reason"), before, after)


@blp.route("/ladders/<name>/reset")
class Reset(MethodView):
    @blp.arguments(ReasonSchema(), required=False)
    @blp.response(200, AdminChangeSchema)
    @blp.doc(security=ADMIN_AUTH)
    @document_errors(blp, E400, E401, E404, E413, E422)
    def post(self, data: dict[str, Any], name: str) -> Any:
        """Start a new season: every rating back to the prior; history kept, each entry marked
        with its season."""
        before, after = moderation.reset_ladder(store(), _ladder(name))
        return _done("reset_ladder", name, data.get("reason"), before, after)


@blp.route("/audit")
class Audit(MethodView):
    @blp.arguments(AuditQuerySchema(), location="query")
    @blp.response(200, AuditSchema)
    @blp.doc(security=ADMIN_AUTH)
    @document_errors(blp, E401, E422)
    def get(self, args: dict[str, Any]) -> Any:
        """Every admin action, newest first (kept 100 days)."""
        entries, nxt = audit.read(store(), after=args.get("after"), limit=args["limit"])
        return json_response({"entries": entries, "next_cursor": nxt})


__all__ = ["admin_label", "blp"]
