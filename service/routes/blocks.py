"""The players you block: their challenges are refused (403 ``blocked``) and never reach you."""

from __future__ import annotations

from typing import Any

import marshmallow as ma
from flask.views import MethodView
from marshmallow import fields as f
from marshmallow import validate as v

from ..http.errors import ApiError
from ..http.params import Blueprint
from ..store import challenge_guard, challenges
from ..store.errors import StoreError
from .common import (
    AUTH,
    E400,
    E401,
    E404,
    E413,
    E422,
    auth_first,
    document_errors,
    json_response,
    require_player,
    store,
)

blp = Blueprint("blocks", __name__, url_prefix="/v1/me/blocks",
                description="Block players: their challenges are refused and never reach you.")


class BlockSchema(ma.Schema):
    player = f.String(required=True, validate=v.Length(1, 64),
                      metadata={"description": "the player to block: a name or an id"})


class BlockedSchema(ma.Schema):
    id = f.String(required=True)
    name = f.String(required=True)
    kind = f.String(required=True)
    blocked_at = f.Float(required=True)


class BlockListSchema(ma.Schema):
    blocks = f.List(f.Nested(BlockedSchema), required=True)


@blp.route("")
class Blocks(MethodView):
    @blp.response(200, BlockListSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, E401)
    def get(self) -> Any:
        """The players you block, newest first."""
        return json_response({"blocks": challenge_guard.blocks(store(), require_player())})

    @auth_first
    @blp.arguments(BlockSchema())
    @blp.response(200, BlockedSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, E400, E401, E413, E422)
    def post(self, data: dict[str, Any]) -> Any:
        """Block a player (by name or id): its challenges to you are refused from now on, and
        its open ones are declined. Blocking again is harmless; at most 1000."""
        r, me = store(), require_player()
        row = challenge_guard.block(r, me, data["player"])
        for ch in challenges.for_player(r, me)["incoming"]:
            if ch["status"] == challenges.OPEN and ch["challenger"]["id"] == row["id"]:
                try:
                    challenges.decline(r, ch["challenge_id"], me, reason="blocked")
                except StoreError:
                    pass  # closed meanwhile
        return json_response(row)


@blp.route("/<player_id:player_id>")
class Block(MethodView):
    @blp.response(204)
    @blp.doc(security=AUTH)
    @document_errors(blp, E401, E404)
    def delete(self, player_id: str) -> Any:
        """Unblock a player (by id); 404 if you did not block it."""
        if not challenge_guard.unblock(store(), require_player(), player_id):
            raise ApiError("not_found", f"you do not block {player_id!r}")
        return json_response(None, 204, empty=True)
