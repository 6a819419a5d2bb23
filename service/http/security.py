"""Security headers on every answer, set with ``secure`` (secure.py, pinned in pyproject.toml).

Why that library: it is maintained (2.0.1, April 2026), has no dependencies, types its header
builders (serialized once, set on each answer through Werkzeug's public headers API); flask-talisman, the usual Flask
choice, has had no release since 2023 and also rewrites requests (HTTPS redirects, cookies) that
this service leaves to its proxy.

- Every answer: ``X-Content-Type-Options: nosniff``, ``X-Frame-Options: DENY``,
  ``Referrer-Policy: no-referrer`` (no page needs to tell another site where a visitor came
  from), and with ``HTTPS=1`` (served over TLS) ``Strict-Transport-Security: max-age=31536000``.
- Pages (HTML) get a Content-Security-Policy that allows only this origin's own scripts,
  styles, images and API calls and ``frame-ancestors 'none'``: the play pages keep the player's
  token in localStorage, so no other site may frame them, and no injected inline script runs
  (the pages have none: everything is in web/static). ``/docs`` (Swagger UI, which starts from
  an inline script flask-smorest writes) allows inline scripts and styles, nothing else.
- JSON and other answers get ``default-src 'none'; frame-ancestors 'none'``: opened as a page,
  an answer runs and loads nothing."""

from __future__ import annotations

from flask import Flask, Response, request
from secure import (
    ContentSecurityPolicy,
    ReferrerPolicy,
    Secure,
    StrictTransportSecurity,
    XContentTypeOptions,
    XFrameOptions,
)

from ..config import Config

#: HSTS max-age: one year (the usual value; browsers' preload lists ask for at least that)
HSTS_MAX_AGE_S = 365 * 86400

SELF = "'self'"
NONE = "'none'"


def page_policy() -> ContentSecurityPolicy:
    return (ContentSecurityPolicy().default_src(SELF).script_src(SELF).style_src(SELF)
            .img_src(SELF, "data:").connect_src(SELF).font_src(SELF).object_src(NONE)
            .base_uri(NONE).form_action(SELF).frame_ancestors(NONE))


def docs_policy() -> ContentSecurityPolicy:
    inline = "'unsafe-inline'"
    return (ContentSecurityPolicy().default_src(SELF).script_src(SELF, inline)
            .style_src(SELF, inline).img_src(SELF, "data:").connect_src(SELF)
            .object_src(NONE).base_uri(NONE).form_action(SELF).frame_ancestors(NONE))


def answer_policy() -> ContentSecurityPolicy:
    return ContentSecurityPolicy().default_src(NONE).frame_ancestors(NONE)


def _headers(cfg: Config, csp: ContentSecurityPolicy) -> Secure:
    hsts = StrictTransportSecurity().max_age(HSTS_MAX_AGE_S) if cfg.https else None
    return Secure(csp=csp, hsts=hsts, xcto=XContentTypeOptions().nosniff(),
                  xfo=XFrameOptions().deny(), referrer=ReferrerPolicy().no_referrer())


def init_app(app: Flask, cfg: Config, *, docs_path: str = "/docs") -> None:
    """Set the headers on every answer (errors and unknown paths included)."""
    # each set serialized once: they never change while the process runs (every answer sets
    # one of them, and secure's set_headers builds and checks them again at each call)
    pages, docs, answers = (_headers(cfg, page_policy()).header_items(),
                            _headers(cfg, docs_policy()).header_items(),
                            _headers(cfg, answer_policy()).header_items())

    @app.after_request
    def _secure(resp: Response) -> Response:
        items = docs if request.path == docs_path else \
            pages if resp.mimetype == "text/html" else answers
        headers = resp.headers
        for name, value in items:
            headers[name] = value
        return resp
