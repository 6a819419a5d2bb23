"""The caller's own things: profile and matches."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from ..store import matches, players
from ..store.views import summary
from .common import AUTH, E401, E422, document_errors, json_response, require_player, store
from .schemas import ListQuerySchema, MatchListSchema

blp = Blueprint("me", __name__, url_prefix="/v1/me", description="The caller's own things.")


@blp.route("")
class Me(MethodView):
    @blp.doc(security=AUTH)
    @blp.response(200)
    @document_errors(blp, E401)
    def get(self) -> Any:
        """Who the token belongs to."""
        return json_response(players.get(store(), require_player()))


@blp.route("/matches")
class MyMatches(MethodView):
    @blp.arguments(ListQuerySchema, location="query")
    @blp.response(200, MatchListSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, E401, E422)
    def get(self, args: dict[str, Any]) -> Any:
        """The caller's matches, newest first, each with your_turn."""
        pid = require_player()
        ids, nxt = matches.list_ids(store(), status=args.get("status"), player=pid,
                                    offset=args["cursor"], limit=args["limit"])
        docs = matches.load_many(store(), ids)
        return json_response({"matches": [summary(d, pid) for d in docs], "next_cursor": nxt})
