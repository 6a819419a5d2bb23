"""The Flask application factory."""

from __future__ import annotations

from typing import Any

import redis
import swagger_ui_bundle
from flask import Flask, send_from_directory
from flask_smorest import Api

from . import errors
from .config import Config
from .routes import BLUEPRINTS
from .routes.common import ErrorSchema

API_TITLE = "Love Letter Arena"
API_VERSION = "v1"


class _Api(Api):  # type: ignore[misc]
    # flask-smorest documents its default error responses with this schema: use ours.
    ERROR_SCHEMA = ErrorSchema


def create_app(config: Config | None = None, **overrides: Any) -> Flask:
    """Build the app. ``config`` defaults to the environment (``Config.from_env()``)."""
    cfg = (config or Config.from_env()).replace(**overrides) if overrides else \
        (config or Config.from_env())
    app = Flask(__name__)
    app.config.update(
        API_TITLE=API_TITLE,
        API_VERSION=API_VERSION,
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/",
        OPENAPI_JSON_PATH="openapi.json",
        OPENAPI_SWAGGER_UI_PATH="/docs",
        OPENAPI_SWAGGER_UI_URL="/docs/static/",  # served from the swagger-ui-bundle package
        MAX_CONTENT_LENGTH=cfg.max_body_bytes,
        JSON_SORT_KEYS=False,
    )
    app.extensions["llconfig"] = cfg
    app.extensions["redis"] = redis.Redis.from_url(cfg.redis_url)
    api = _Api(app, spec_kwargs={
        "info": {"description": "Love Letter as a service for bots. Errors are JSON "
                                "{status, code, message, errors?} with stable codes."},
    })
    api.spec.components.security_scheme("bearerAuth", {"type": "http", "scheme": "bearer"})
    for blp in BLUEPRINTS:
        api.register_blueprint(blp)
    errors.register(app)

    @app.get("/docs/static/<path:filename>")
    def swagger_assets(filename: str) -> Any:
        return send_from_directory(swagger_ui_bundle.swagger_ui_path, filename)

    return app
