"""The caller's own things: profile, matches and the notice stream across all matches."""

from __future__ import annotations

from typing import Any

import marshmallow as ma
import redis
from flask import request
from flask.views import MethodView
from marshmallow import fields as f

from ..http.params import Blueprint, QueryFloat
from ..http.views import challenge_names, notice_names, player_view, summary
from ..realtime import longpoll
from ..store import attendance, challenge_guard, challenges, inbox, matches, players, presence
from .challenges import ChallengeListSchema
from .common import (
    AUTH,
    E400,
    E401,
    E410,
    E413,
    E422,
    auth_first,
    config,
    document_errors,
    json_response,
    notifier,
    require_player,
    store,
)
from .schemas import ListQuerySchema, MatchListSchema

blp = Blueprint("me", __name__, url_prefix="/v1/me", description="The caller's own things.")


def _cursor_in_range(value: str) -> None:
    if not inbox.valid_cursor(value):
        raise ma.ValidationError("not a cursor: <ms>-<seq> in ASCII digits, each part at "
                                 "most 2^64-1")


class NoticesQuerySchema(ma.Schema):
    after = f.String(validate=_cursor_in_range, metadata={
        "pattern": f"^{inbox.CURSOR_RE.pattern}$",
        "description": "the cursor of the last notice you have; absent: from the oldest kept"})
    wait = QueryFloat(0, 60, load_default=0,
                      metadata={"description": "hold up to this many seconds for a notice"})
    challenges = f.Boolean(load_default=False, metadata={
        "description": "true: you answer challenges (listed so in GET /v1/players/online "
                       "while you poll)"})
    views = f.Boolean(load_default=False, metadata={
        "description": "true: the newest match_started, your_turn or match_finished notice "
                       "of each match carries `view`, your view of that match as it is now "
                       "(as GET /v1/matches/{id}/view answers), so you can act without "
                       "reading it"})


class NoticesSchema(ma.Schema):
    events = f.List(f.Dict(), required=True, metadata={
        "description": "match_started, your_turn, match_finished (each with match_id, "
                       "version, seat; with views=true the newest of each match also with "
                       "view); challenge, challenge_update (each with challenge_id, "
                       "challenge and match_id, null until the match exists); all with cursor"})
    cursor = f.String(required=True, metadata={"description": "pass as `after` next time"})


class JsonBool(f.Boolean):
    """true or false, and nothing else (marshmallow's Boolean also takes "yes", 1, "on")."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> bool:
        if type(value) is not bool:
            raise ma.ValidationError("must be true or false")
        return value


class SettingsSchema(ma.Schema):
    accepts_challenges = JsonBool(required=True, metadata={
        "description": "false: every challenge naming you is refused (403 challenges_off) "
                       "and GET /v1/players/online lists you as not accepting them"})


def _me(pid: str) -> dict[str, Any]:
    me = players.get(store(), pid)
    (me["accepts_challenges"],) = challenge_guard.accepts(store(), [pid])
    return me


@blp.route("")
class Me(MethodView):
    @blp.doc(security=AUTH)
    @blp.response(200)
    @document_errors(blp, E401)
    def get(self) -> Any:
        """Who the token belongs to, and its settings (accepts_challenges)."""
        return json_response(_me(require_player()))

    @auth_first
    @blp.arguments(SettingsSchema())
    @blp.response(200)
    @blp.doc(security=AUTH)
    @document_errors(blp, E400, E401, E413, E422)
    def patch(self, data: dict[str, Any]) -> Any:
        """Change your settings: `{"accepts_challenges": false}` turns challenges to you off."""
        pid = require_player()
        challenge_guard.set_accepts(store(), pid, data["accepts_challenges"])
        return json_response(_me(pid))


@blp.route("/matches")
class MyMatches(MethodView):
    @auth_first
    @blp.arguments(ListQuerySchema(), location="query")
    @blp.response(200, MatchListSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, E401, E422)
    def get(self, args: dict[str, Any]) -> Any:
        """The caller's matches, newest first, each with your_turn."""
        pid = require_player()
        presence.touch(store(), pid)
        ids, nxt = matches.list_ids(store(), status=args.get("status"), player=pid,
                                    offset=args["cursor"], limit=args["limit"])
        docs = matches.load_many(store(), ids)
        attendance.note(store(), pid, [d.id for d in docs if attendance.may_abort(d)])
        return json_response({"matches": [summary(d, pid) for d in docs], "next_cursor": nxt})


@blp.route("/events")
class MyEvents(MethodView):
    @auth_first
    @blp.arguments(NoticesQuerySchema(), location="query")
    @blp.response(200, NoticesSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, E401, E410, E422)
    def get(self, args: dict[str, Any]) -> Any:
        """Notices across your matches after a cursor; with wait=S, held until one arrives.
        410 cursor_expired when notices after the cursor were dropped (oldest_cursor)."""
        pid = require_player()
        r = store()
        presence.touch(r, pid)
        if args["challenges"]:
            presence.listen(r, pid)
        wait = min(args["wait"], config().max_wait_s)
        listening = longpoll.Listening(r, pid, request.environ, challenges=args["challenges"])
        notices, cursor = longpoll.wait_for_notices(r, notifier(), pid, args.get("after"), wait,
                                                    listening)
        if args["challenges"] and wait > 0:
            presence.listen(r, pid)  # still listening at the end of a long wait
        # it heard of these matches: it was there (the abort rule, store/attendance.py)
        attendance.note(r, pid, [n["match_id"] for n in notices
                                 if n.get("type") in ROUND_ONE_NOTICES])
        if args["views"]:
            _attach_views(r, pid, notices)
        return json_response({"events": notice_names(notices), "cursor": cursor})


#: the notices about a match's course, which views=true completes with the player's view
MATCH_NOTICES = frozenset({"match_started", "your_turn", "match_finished"})
#: the notices a match can still be aborted after (a read of them means the bot was there)
ROUND_ONE_NOTICES = frozenset({"match_started", "your_turn"})


def _attach_views(r: redis.Redis, pid: str, notices: list[dict[str, Any]]) -> None:
    """Give the newest match notice of each match the caller's view of that match as it is
    now. A bot told it is its turn then posts its action at once: about 2 requests per move
    (the notice, the action) instead of 3 (the notice, the view, the action). Read as
    GET .../view reads it (due timeouts applied first)."""
    newest: dict[str, dict[str, Any]] = {}
    for n in notices:
        if n.get("type") in MATCH_NOTICES and isinstance(n.get("match_id"), str):
            newest[n["match_id"]] = n
    if not newest:
        return
    for doc in matches.load_many(r, list(newest), views=True):
        seat = doc.seat_of(pid)
        if seat is not None:
            newest[doc.id]["view"] = player_view(doc, seat)


@blp.route("/challenges")
class MyChallenges(MethodView):
    @blp.response(200, ChallengeListSchema)
    @blp.doc(security=AUTH)
    @document_errors(blp, E401)
    def get(self) -> Any:
        """Your challenges, newest first: open ones and those closed in the last 10 minutes."""
        lists = challenges.for_player(store(), require_player())
        for rows in lists.values():
            for ch in rows:
                challenge_names(ch)
        return json_response(lists)
