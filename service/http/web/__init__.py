"""Web pages for people: ladders, leaderboards, live matches and replays, players.

Everything is served from this package (templates and static files, no external assets). The
pages are thin shells: their scripts read the same public JSON API as everyone else
(``/v1/ladders``, ``/v1/matches/{id}``, ``/v1/matches/{id}/events``, ``/v1/players/{id}``), so
they can show nothing a spectator could not fetch. The play pages (``/play``, ``/play/{id}``) act
for a person with the token they signed up for, kept in the browser's localStorage: they read
that player's own view (``/v1/matches/{id}/view``) and post the moves its ``legal_actions`` offer,
through the same public API and long-polls a bot uses. ``/rules`` and ``/protocol`` are docs/rules.md
and docs/protocol.md rendered (``manual``). These routes are plain Flask routes, not part of the
OpenAPI document. A path that names no page answers a 404 page with links to a browser and the
usual JSON error to an API client (``errors.py`` decides which).
"""

from __future__ import annotations

import re
from typing import Any

from flask import Blueprint, Flask, abort, redirect, render_template, request

from . import manual

bp = Blueprint("web", __name__, template_folder="templates", static_folder="static",
               static_url_path="/web/static")

_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def _checked(value: str) -> str:
    if not _ID.match(value):
        abort(404)
    return value


#: the pages that show one API document, by endpoint: an API client asking one of them for JSON
#: is sent to that document (a browser gets the page)
API_TWINS = {"web.ladders": "/v1/ladders", "web.ladder": "/v1/ladders/{name}",
             "web.match": "/v1/matches/{match_id}", "web.player": "/v1/players/{player_id}"}


@bp.before_request
def _negotiate() -> Any:
    """Content negotiation: a client whose Accept prefers JSON to HTML (``Accept:
    application/json``; a browser prefers HTML, and ``*/*`` takes the page) asking for a page
    that shows one API document gets a 307 to that document, so ``curl -H 'Accept:
    application/json' /ladders`` reads the ladders as JSON."""
    twin = API_TWINS.get(request.endpoint or "")
    accept = request.accept_mimetypes
    if twin is None or accept.quality("application/json") <= accept.quality("text/html"):
        return None
    return redirect(twin.format(**(request.view_args or {})), code=307)


@bp.get("/")
def index() -> Any:
    """The front door: what this is, in a few lines, and where to go; then the lists."""
    return render_template("index.html", page="index")


@bp.get("/ladders")
def ladders() -> Any:
    return render_template("ladders.html", page="ladders")


@bp.get("/favicon.ico")
def favicon() -> Any:
    return bp.send_static_file("favicon.svg")


@bp.get("/ladders/<name>")
def ladder(name: str) -> Any:
    return render_template("ladder.html", page="ladder", ladder=_checked(name))


@bp.get("/matches/<match_id>")
def match(match_id: str) -> Any:
    return render_template("match.html", page="match", match_id=_checked(match_id))


@bp.get("/play")
def lobby() -> Any:
    return render_template("lobby.html", page="lobby")


@bp.get("/play/<match_id>")
def play(match_id: str) -> Any:
    return render_template("play.html", page="play", match_id=_checked(match_id))


@bp.get("/rules")
def rules() -> Any:
    """The rules (docs/rules.md), every rule at its anchor: /rules#R16."""
    return _doc_page("rules.md")


@bp.get("/protocol")
def protocol() -> Any:
    """The bot protocol (docs/protocol.md)."""
    return _doc_page("protocol.md")


def _doc_page(name: str) -> Any:
    page = manual.render(name)
    return render_template("doc.html", page="doc", title=page.title, body=page.html)


@bp.get("/players/<player_id>")
def player(player_id: str) -> Any:
    return render_template("player.html", page="player", player_id=_checked(player_id))


def init_app(app: Flask) -> Blueprint:
    """Register the pages; returns the blueprint (the app exempts it from rate limits)."""
    app.register_blueprint(bp)
    return bp
