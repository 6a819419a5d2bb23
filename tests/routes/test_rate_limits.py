"""Rate limits per token, with the real app under gunicorn (flask-limiter on the private Redis):
a small limit from RATE_LIMIT, 429 `rate_limited` with Retry-After and X-RateLimit-* headers,
other tokens unaffected, health checks exempt."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import requests

from tests.support.apiclient import Api, error_of
from tests.support.live import running_server
from tests.support.redis_proc import RedisProcess
from tests.support.server import ApiServer
from tests.support.snapshot import clear_rate_limits

LIMIT = 5


@pytest.fixture(scope="module")
def server(redis_server: RedisProcess) -> Iterator[ApiServer]:
    # Two workers: the counters live in Redis, so they hold across processes.
    cleaner = redis_server.client()
    clear_rate_limits(cleaner)  # counters of other tests' servers on this Redis
    cleaner.close()
    env = {"RATE_LIMITS": "1", "RATE_LIMIT": f"{LIMIT}/second"}
    with running_server(redis_server.url, workers=2, env=env) as s:
        yield s


def _burst(api: Api, n: int, token: str | None = None,
           path: str = "/v1/me") -> list[requests.Response]:
    return [api.request("GET", path, token=token) for _ in range(n)]


def _next_second() -> None:
    """Start a burst just after a second boundary, so that it fits in one window."""
    time.sleep(1.05 - time.time() % 1.0)


def _registered(api: Api, n: int) -> list[str]:
    tokens = []
    for i in range(n):
        if i % LIMIT == 0:
            _next_second()  # registration is limited per address
        tokens.append(api.register("rl").token)
    time.sleep(1.05)  # let the window that counted them pass
    return tokens


def test_sixth_request_in_a_second_is_refused(server: ApiServer) -> None:
    api = Api(server.url)
    first, second = _registered(api, 2)
    for _attempt in range(3):  # a window boundary inside the burst makes it inconclusive
        _next_second()
        t0 = time.time()
        answers = _burst(api, LIMIT + 1, first)
        if time.time() - t0 < 0.8:
            break
        time.sleep(1.1)
    assert [r.status_code for r in answers[:LIMIT]] == [200] * LIMIT
    for i, r in enumerate(answers[:LIMIT]):
        assert r.headers["X-RateLimit-Limit"] == str(LIMIT)
        assert r.headers["X-RateLimit-Remaining"] == str(LIMIT - 1 - i)
        assert int(r.headers["X-RateLimit-Reset"]) >= int(t0)

    refused = answers[LIMIT]
    assert refused.status_code == 429, refused.text
    body = error_of(refused)
    assert body["code"] == "rate_limited"
    retry_after = int(refused.headers["Retry-After"])
    assert 0 <= retry_after <= 2
    assert refused.headers["X-RateLimit-Limit"] == str(LIMIT)
    assert refused.headers["X-RateLimit-Remaining"] == "0"
    reset = int(refused.headers["X-RateLimit-Reset"])
    assert time.time() - 1 <= reset <= time.time() + 2

    # another token is not limited by the first one's burst
    other = _burst(api, LIMIT, second)
    assert [r.status_code for r in other] == [200] * LIMIT

    # health checks are exempt (and carry no rate-limit headers)
    for path in ("/healthz", "/readyz"):
        health = _burst(api, 3 * LIMIT, path=path)
        assert [r.status_code for r in health] == [200] * (3 * LIMIT)
        assert "X-RateLimit-Limit" not in health[-1].headers

    # after Retry-After (plus the rest of the window) the first token may go on
    time.sleep(max(retry_after, reset - time.time()) + 0.05)
    again = api.request("GET", "/v1/me", token=first)
    assert again.status_code == 200, again.text
    api.close()


def test_unauthenticated_callers_are_limited_per_address(server: ApiServer) -> None:
    api = Api(server.url)
    for _attempt in range(3):
        _next_second()
        t0 = time.time()
        answers = _burst(api, LIMIT + 1, path="/v1/matches")
        if time.time() - t0 < 0.8:
            break
        time.sleep(1.1)
    assert [r.status_code for r in answers] == [200] * LIMIT + [429]
    assert error_of(answers[-1])["code"] == "rate_limited"
    api.close()
