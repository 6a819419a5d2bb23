"""``GET /v1``: the API's front door, a JSON index of where everything is.

Built from the app's own URL map when first asked (every ``/v1`` route with its methods and the
first line of its view's docstring, the same text as the OpenAPI summary), so a new endpoint
appears here without anyone editing a list.
"""

from __future__ import annotations

import re
from typing import Any

from flask import current_app, request
from flask.views import MethodView

from ..engine import BUILD
from ..http.params import Blueprint
from .common import json_response

blp = Blueprint("index", __name__, url_prefix="",
                description="The index: links to every collection, the docs and the rules.")

#: the collections, by name: where a client starts
COLLECTIONS = {"players": "/v1/players", "matches": "/v1/matches", "me": "/v1/me",
               "ladders": "/v1/ladders"}
#: the documents: machine-readable schema, its interactive page, the rules and the protocol
DOCUMENTS = {"openapi": "/openapi.json", "docs": "/docs", "rules": "/rules",
             "protocol": "/protocol", "web": "/"}
_IGNORED = frozenset({"HEAD", "OPTIONS"})


def endpoints() -> list[dict[str, Any]]:
    """Every ``/v1`` route (``{player_id}`` style), with its methods and summaries, by path."""
    out: dict[str, dict[str, Any]] = {}
    for rule in current_app.url_map.iter_rules():
        if not rule.rule.startswith("/v1/"):
            continue
        path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", r"{\1}", rule.rule)
        view = current_app.view_functions[rule.endpoint]
        cls = getattr(view, "view_class", None)
        entry = out.setdefault(path, {"path": path, "methods": {}})
        for method in sorted((rule.methods or set()) - _IGNORED):
            fn = getattr(cls, method.lower(), None) if cls else view
            doc = (getattr(fn, "__doc__", None) or "").strip().split("\n\n")[0]
            entry["methods"][method] = " ".join(doc.split())
    return [out[p] for p in sorted(out)]


@blp.route("/v1")
class Index(MethodView):
    @blp.response(200)
    def get(self) -> Any:
        """The index: links to every collection, the OpenAPI document, the docs and the rules."""
        root = request.host_url.rstrip("/")
        return json_response({
            "name": "Love Letter Arena",
            "api_version": "v1",
            # the rules engine this process runs: mypyc-compiled (make engine, the image) or
            # the pure modules (engine/_build.py)
            "engine": "compiled" if BUILD == "mypyc" else "pure",
            "collections": {k: root + v for k, v in COLLECTIONS.items()},
            "documents": {k: root + v for k, v in DOCUMENTS.items()},
            "endpoints": endpoints(),
        })
