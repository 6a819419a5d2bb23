"""The caller's account: a new token (the old one revoked at once), deleting the account."""

from __future__ import annotations

from typing import Any

import marshmallow as ma
from flask.views import MethodView
from marshmallow import fields as f

from ..http.params import Blueprint
from ..store import moderation, players
from .common import (
    AUTH,
    E401,
    E403,
    document_errors,
    json_response,
    require_player,
    store,
)
from .ladders import configured

blp = Blueprint("account", __name__, url_prefix="/v1/me",
                description="The caller's account: token rotation and deletion.")


class NewTokenSchema(ma.Schema):
    id = f.String(required=True)
    name = f.String(required=True)
    token = f.String(required=True, metadata={
        "description": "shown once; the token this request carried no longer works"})


class DeletedSchema(ma.Schema):
    id = f.String(required=True)
    name = f.String(required=True, metadata={"description": "the name it had"})
    deleted = f.Boolean(required=True)
    resigned_matches = f.List(f.String(), required=True, metadata={
        "description": "the running matches it resigned"})


@blp.route("/token")
class Token(MethodView):
    @blp.response(200, NewTokenSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, E401, E403)
    def post(self) -> Any:
        """Issue a new token and revoke the one sent: from the next request on, on every
        process, the old token is answered 401."""
        pid = require_player()
        token = players.rotate_token(store(), pid)
        p = players.get(store(), pid)
        return json_response({"id": pid, "name": p["name"], "token": token})


@blp.route("")
class Account(MethodView):
    @blp.response(200, DeletedSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, E401, E403)
    def delete(self) -> Any:
        """Delete your account: the token, ladder entries, ratings and profile go, running
        matches end as resignations, and your name reads "deleted player" wherever you
        appeared (finished matches included). It cannot be undone."""
        return json_response(moderation.delete_account(
            store(), require_player(), ladders=configured().values()))
