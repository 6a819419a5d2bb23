"""Limits that hold (issue 11, item 4), with the real app under gunicorn and rate limits on.

- A valid token is limited as its player; a token nobody has is ``401`` before any work and
  counted against the caller's address (45 made-up tokens were 45 fresh buckets).
- Registration has its own per-address limit (default 10 a minute and 200 a day; 120 in 8 s all
  succeeded), configurable with REGISTER_RATE_LIMIT and off only when configured so.
- ``Retry-After`` on a 429 is a whole number of seconds, at least 1 (it was 0 while the caller
  was still limited).
- House-bot names (``house-`` and its look-alikes) are reserved.
- ``GET /metrics`` wants METRICS_TOKEN when it is set, and is closed without one unless
  METRICS_OPEN=1 (which only ``make run`` sets).

Every refusal leaves the stored state as it was (the whole private Redis is compared, without
the rate limiter's own counters)."""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager

import pytest
import redis
import requests

from service.config import Config
from tests.support.apiclient import Api, error_of
from tests.support.live import running_server
from tests.support.redis_proc import RedisProcess
from tests.support.server import ApiServer
from tests.support.snapshot import clear_rate_limits, redis_state


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisProcess]:
    """A Redis of this module's own, in place of the session's: the state compared before and
    after a refusal is this module's alone. (On the session's Redis a match an earlier module
    left behind reached its deadline, a request here applied that timeout, and the comparison
    failed on a change that was not the refusal's.)"""
    with RedisProcess() as server:
        yield server


@pytest.fixture
def r(redis_server: RedisProcess) -> Iterator[redis.Redis]:
    client = redis_server.client()
    clear_rate_limits(client)
    yield client
    client.close()


def limited_server(redis_server: RedisProcess, **env: str) -> AbstractContextManager[ApiServer]:
    return running_server(redis_server.url, env={"RATE_LIMITS": "1", **env})


def whole_seconds(resp: requests.Response) -> int:
    raw = resp.headers.get("Retry-After", "")
    assert re.fullmatch(r"[1-9][0-9]*", raw), (resp.status_code, resp.headers)
    return int(raw)


def inside_one_minute(margin: float = 12.0) -> None:
    """Wait, if need be, until at least ``margin`` s are left in the current minute, so that a
    burst counted in a fixed one-minute window is not split by the window's end."""
    left = 60.0 - time.time() % 60.0
    if left < margin:
        time.sleep(left + 0.05)


def fake_token() -> str:
    return "llt_" + secrets.token_urlsafe(24)


def test_made_up_tokens_are_401_and_counted_against_the_address(
        redis_server: RedisProcess, r: redis.Redis) -> None:
    with limited_server(redis_server, RATE_LIMIT="10/day") as srv:
        api = Api(srv.url)
        me = api.register("real")
        clear_rate_limits(r)  # the registration counted against the address
        before = redis_state(r)
        answers = [api.request("GET", "/v1/matches", token=fake_token()) for _ in range(10)]
        for i, resp in enumerate(answers):
            assert resp.status_code == 401, resp.text
            assert error_of(resp)["code"] == "unauthorized"
            assert "invalid_token" in resp.headers["WWW-Authenticate"]
            # each one was counted against this address
            assert resp.headers["X-RateLimit-Remaining"] == str(9 - i), resp.headers
        # the address's budget is spent: the next made-up token, and the address without a
        # token, are refused; the issue saw 45 made-up tokens all answered 200
        for token in (fake_token(), None):
            refused = api.request("GET", "/v1/matches", token=token)
            assert refused.status_code == 429, refused.text
            assert error_of(refused)["code"] == "rate_limited"
            whole_seconds(refused)
        # a made-up token is 401 before any work: before the body is even parsed
        bad_body = api.request("POST", "/v1/matches/m_000000000000/actions",
                               token=fake_token(), data="{not json",
                               headers={"Content-Type": "application/json"})
        assert bad_body.status_code == 429  # (still over the address's limit)
        # a real player has its own budget
        assert api.request("GET", "/v1/me", token=me.token).status_code == 200
        assert redis_state(r) == before
        api.close()


def test_bad_token_is_401_whatever_else_is_wrong(redis_server: RedisProcess,
                                                 r: redis.Redis) -> None:
    with limited_server(redis_server, RATE_LIMIT="50/day") as srv:
        api = Api(srv.url)
        before = redis_state(r)
        for method, path, body in [
            ("POST", "/v1/matches/m_000000000000/actions", "{not json"),
            ("POST", "/v1/matches", '{"ruleset": 7}'),
            ("GET", "/v1/matches?limit=x", None),
            ("GET", "/v1/players/p_000000000000", None),
            ("GET", "/v1/ladders/duel", None),
            ("POST", "/v1/players", '{"name": "x y"}'),
        ]:
            resp = api.request(method, path, token=fake_token(), data=body,
                               headers={"Content-Type": "application/json"})
            assert resp.status_code == 401, (path, resp.text)
            assert error_of(resp)["code"] == "unauthorized"
        assert redis_state(r) == before
        api.close()


def test_a_valid_token_is_limited_as_its_player(redis_server: RedisProcess,
                                                r: redis.Redis) -> None:
    with limited_server(redis_server, RATE_LIMIT="10/day") as srv:
        api = Api(srv.url)
        a, b = api.register("lim-a"), api.register("lim-b")
        clear_rate_limits(r)
        before = redis_state(r)
        assert [api.request("GET", "/v1/me", token=a.token).status_code
                for _ in range(10)] == [200] * 10
        refused = api.request("GET", "/v1/me", token=a.token)
        assert refused.status_code == 429 and error_of(refused)["code"] == "rate_limited"
        whole_seconds(refused)
        # another player, and the address without a token, were not charged for a's requests
        assert [api.request("GET", "/v1/me", token=b.token).status_code
                for _ in range(10)] == [200] * 10
        assert [api.request("GET", "/v1/matches").status_code
                for _ in range(10)] == [200] * 10
        assert redis_state(r) == before
        api.close()


def test_retry_after_is_a_whole_number_of_seconds_at_least_one(
        redis_server: RedisProcess, r: redis.Redis) -> None:
    """With a per-second limit, flask-limiter's own value was int(reset - now), i.e. 0 for every
    refusal: a client that believed it retried at once, forever."""
    with limited_server(redis_server, RATE_LIMIT="3/second") as srv:
        api = Api(srv.url)
        me = api.register("ra")
        refusals: list[requests.Response] = []
        end = time.monotonic() + 2.5
        while time.monotonic() < end:
            resp = api.request("GET", "/v1/me", token=me.token)
            if resp.status_code == 429:
                refusals.append(resp)
        assert len(refusals) >= 5, len(refusals)
        for resp in refusals:
            assert error_of(resp)["code"] == "rate_limited"
            # a one-second window ends within 1 s; the counters' expiry is kept in whole
            # seconds (Redis TTL), so the bound is 2
            assert whole_seconds(resp) in (1, 2)
        # waiting what Retry-After says is enough
        last = api.request("GET", "/v1/me", token=me.token)
        while last.status_code != 429:
            last = api.request("GET", "/v1/me", token=me.token)
        time.sleep(whole_seconds(last))
        assert api.request("GET", "/v1/me", token=me.token).status_code == 200
        api.close()


def test_registration_has_its_own_per_address_limit(redis_server: RedisProcess,
                                                    r: redis.Redis) -> None:
    """The default: 10 registrations a minute per address (the issue registered 120 in 8 s)."""
    assert Config().register_rate_limit == "10/minute;200/day"
    with limited_server(redis_server) as srv:  # default RATE_LIMIT and REGISTER_RATE_LIMIT
        api = Api(srv.url)
        inside_one_minute()
        made = [api.register("reg") for _ in range(10)]
        before = redis_state(r)
        name = f"reg-{secrets.token_hex(4)}"
        for token in (None, made[0].token):  # a valid token does not lift it
            refused = api.request("POST", "/v1/players", token=token, json={"name": name})
            assert refused.status_code == 429, refused.text
            assert error_of(refused)["code"] == "rate_limited"
            assert 1 <= whole_seconds(refused) <= 61  # (expiry kept in whole seconds)
        assert redis_state(r) == before  # nothing registered
        # the rest of the API is not limited by it
        assert api.request("GET", "/v1/matches").status_code == 200
        assert api.request("GET", "/v1/me", token=made[0].token).status_code == 200
        api.close()


def test_registration_limit_is_configurable_and_off_only_when_configured(
        redis_server: RedisProcess, r: redis.Redis) -> None:
    with limited_server(redis_server, REGISTER_RATE_LIMIT="2/day") as srv:
        api = Api(srv.url)
        api.register("cfg")
        api.register("cfg")
        refused = api.request("POST", "/v1/players", json={"name": "cfg-third"})
        assert refused.status_code == 429, refused.text
        assert refused.headers["X-RateLimit-Limit"] == "2"
        api.close()
    clear_rate_limits(r)
    with limited_server(redis_server, REGISTER_RATE_LIMIT="off") as srv:
        api = Api(srv.url)
        inside_one_minute()
        assert len({api.register("off").id for _ in range(15)}) == 15
        api.close()


# --------------------------------------------------------------------------- reserved names

RESERVED = ["house-random-1", "house-counting-1", "House-Random-1", "HOUSE-x", "house_bot",
            "house.bot", "house-"]


@pytest.mark.parametrize("name", RESERVED)
def test_house_bot_names_are_reserved(api_server: ApiServer, redis_server: RedisProcess,
                                      name: str) -> None:
    r = redis_server.client()
    api = Api(api_server.url)
    before = redis_state(r)
    resp = api.request("POST", "/v1/players", json={"name": name})
    assert resp.status_code == 422, resp.text
    body = error_of(resp)
    assert body["code"] == "name_reserved"
    assert redis_state(r) == before
    api.close()
    r.close()


def test_names_beside_the_reserved_namespace_are_free(api_server: ApiServer) -> None:
    api = Api(api_server.url)
    for name in (f"housecat{secrets.token_hex(3)}", f"my-house-{secrets.token_hex(3)}"):
        resp = api.request("POST", "/v1/players", json={"name": name})
        assert resp.status_code == 201, resp.text
    api.close()


# --------------------------------------------------------------------------- /metrics


def test_metrics_want_the_metrics_token_when_set(redis_server: RedisProcess) -> None:
    secret = "m-" + secrets.token_hex(8)
    with running_server(redis_server.url, env={"METRICS_TOKEN": secret}) as srv:
        for headers in ({}, {"Authorization": "Bearer nope"},
                        {"Authorization": f"Basic {secret}"}):
            resp = requests.get(srv.url + "/metrics", headers=headers, timeout=10)
            assert resp.status_code == 401, resp.text
            assert error_of(resp)["code"] == "unauthorized"
            assert "ll_" not in resp.text
        ok = requests.get(srv.url + "/metrics", headers={"Authorization": f"Bearer {secret}"},
                          timeout=10)
        assert ok.status_code == 200 and "ll_redis_up" in ok.text


def test_metrics_are_closed_without_a_token_unless_opened(redis_server: RedisProcess) -> None:
    with running_server(redis_server.url, env={"METRICS_TOKEN": "", "METRICS_OPEN": ""}) as srv:
        resp = requests.get(srv.url + "/metrics", timeout=10)
        assert resp.status_code == 403, resp.text
        assert error_of(resp)["code"] == "forbidden"
        assert "METRICS_TOKEN" in resp.json()["message"]
    with running_server(redis_server.url, env={"METRICS_OPEN": "1"}) as srv:
        assert requests.get(srv.url + "/metrics", timeout=10).status_code == 200


def _register_from(api: Api, forwarded_for: str) -> requests.Response:
    return api.request("POST", "/v1/players", headers={"X-Forwarded-For": forwarded_for},
                       json={"name": f"fwd-{secrets.token_hex(4)}"})


def test_forwarded_for_is_ignored_without_a_trusted_proxy(redis_server: RedisProcess,
                                                          r: redis.Redis) -> None:
    """A client cannot dodge the per-address limit by naming another address: with no
    TRUSTED_PROXIES (the default) X-Forwarded-For is never read."""
    with limited_server(redis_server, REGISTER_RATE_LIMIT="2/day") as srv:
        api = Api(srv.url)
        assert [_register_from(api, f"198.51.100.{i}").status_code for i in range(2)] == \
            [201, 201]
        before = redis_state(r)
        refused = _register_from(api, "198.51.100.77")
        assert refused.status_code == 429 and error_of(refused)["code"] == "rate_limited"
        assert redis_state(r) == before
        api.close()


def test_behind_a_trusted_proxy_the_forwarded_address_is_the_client(
        redis_server: RedisProcess, r: redis.Redis) -> None:
    """TRUSTED_PROXIES=1: each client behind the proxy has a limit of its own, and an entry a
    client wrote itself before the proxy's (the last one) changes nothing."""
    with limited_server(redis_server, REGISTER_RATE_LIMIT="2/day", TRUSTED_PROXIES="1") as srv:
        api = Api(srv.url)
        assert [_register_from(api, "203.0.113.1").status_code for _ in range(2)] == [201, 201]
        refused = _register_from(api, "203.0.113.1")
        assert refused.status_code == 429, refused.text
        # the proxy appends the real address: a made-up entry before it does not help
        assert _register_from(api, "192.0.2.50, 203.0.113.1").status_code == 429
        # another client behind the same proxy is not limited by the first one
        assert _register_from(api, "203.0.113.2").status_code == 201
        api.close()
