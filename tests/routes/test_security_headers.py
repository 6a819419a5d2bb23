"""Security headers on pages, the API, errors and unknown paths; unknown paths rate limited.
The real app (create_app) on a private Redis, through Flask's test client."""

from __future__ import annotations

import redis

from service.config import Config
from service.http.app import create_app
from tests.support.redis_proc import RedisProcess


def _app(redis_server: RedisProcess, **changes: object) -> object:
    cfg = Config(redis_url=redis_server.url, rate_limits_enabled=False).replace(**changes)
    return create_app(cfg)


def _common(resp: object) -> None:
    h = resp.headers  # type: ignore[attr-defined]
    assert h["X-Content-Type-Options"] == "nosniff"
    assert h["X-Frame-Options"] == "DENY"
    assert h["Referrer-Policy"] == "no-referrer"
    assert "frame-ancestors 'none'" in h["Content-Security-Policy"]


def test_pages_cannot_be_framed_and_run_only_their_own_scripts(
        redis_server: RedisProcess, redis_db: redis.Redis) -> None:
    client = _app(redis_server).test_client()  # type: ignore[attr-defined]
    for path in ("/", "/play", "/play/m_000000000000", "/ladders/duel", "/rules"):
        resp = client.get(path)
        assert resp.status_code == 200 and resp.mimetype == "text/html", path
        _common(resp)
        csp = resp.headers["Content-Security-Policy"]
        assert "script-src 'self';" in csp and "unsafe-inline" not in csp, csp
        assert "Strict-Transport-Security" not in resp.headers
    docs = client.get("/docs")
    _common(docs)
    assert "script-src 'self' 'unsafe-inline'" in docs.headers["Content-Security-Policy"]


def test_every_api_answer_is_nosniff(redis_server: RedisProcess, redis_db: redis.Redis) -> None:
    client = _app(redis_server).test_client()  # type: ignore[attr-defined]
    for path, status in (("/v1/ladders", 200), ("/v1/players/p_000000000000", 404),
                         ("/v1/no-such-thing", 404), ("/healthz", 200),
                         ("/web/static/common.js", 200)):
        resp = client.get(path)
        assert resp.status_code == status, path
        _common(resp)
    resp = client.get("/v1/ladders")
    assert resp.headers["Content-Security-Policy"] == "default-src 'none'; frame-ancestors 'none'"


def test_hsts_when_served_over_tls(redis_server: RedisProcess, redis_db: redis.Redis) -> None:
    client = _app(redis_server, https=True).test_client()  # type: ignore[attr-defined]
    for path in ("/", "/v1/ladders"):
        assert client.get(path).headers["Strict-Transport-Security"] == "max-age=31536000"


def test_unknown_paths_are_rate_limited(redis_server: RedisProcess,
                                        redis_db: redis.Redis) -> None:
    client = _app(redis_server, rate_limits_enabled=True,  # type: ignore[attr-defined]
                  rate_limit="3/minute").test_client()
    got = [client.get(f"/v1/probe-{i}").status_code for i in range(4)]
    assert got == [404, 404, 404, 429]
    resp = client.get("/wp-admin.php")
    assert resp.status_code == 429 and resp.json["code"] == "rate_limited"
    assert int(resp.headers["Retry-After"]) >= 1
    _common(resp)
    assert client.get("/").status_code == 200  # pages stay exempt
