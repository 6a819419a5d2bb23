"""Safe retries over a connection that loses the response: a TCP proxy (tests/support/dropproxy.py)
forwards the action to the real server, lets the server answer, then resets the client's
connection. A retry with the same Idempotency-Key gets the original answer and nothing is applied
twice; without a key the retry is refused (409), never a double move. Stale expected_version
and If-Match are refused too."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.support.apiclient import Api, Player, error_of
from tests.support.dropproxy import DropProxy
from tests.support.live import HANDMAID, SAFE_MATCH, running_server
from tests.support.redis_proc import RedisProcess
from tests.support.server import ApiServer

PRIEST_AT_1 = {"type": "play", "card": "priest", "target": 1}


@pytest.fixture(scope="module")
def server(redis_server: RedisProcess) -> Iterator[ApiServer]:
    with running_server(redis_server.url) as s:
        yield s


@pytest.fixture
def api(server: ApiServer) -> Iterator[Api]:
    a = Api(server.url)
    yield a
    a.close()


@pytest.fixture
def proxy(server: ApiServer) -> Iterator[DropProxy]:
    with DropProxy("127.0.0.1", server.port) as p:
        yield p


def _post(base: str, player: Player, mid: str, body: Any,
          headers: dict[str, str] | None = None) -> requests.Response:
    """A fresh connection per request (no pooling), as a client retrying after a reset has."""
    h = {"Authorization": f"Bearer {player.token}", **(headers or {})}
    return requests.post(f"{base}/v1/matches/{mid}/actions", json=body, headers=h, timeout=30)


def _lost(proxy: DropProxy, player: Player, mid: str, body: Any,
          headers: dict[str, str] | None = None) -> Any:
    """Post through the proxy with the response lost; returns what the server had answered."""
    before = len(proxy.dropped)
    proxy.drop_next()
    with pytest.raises(requests.ConnectionError):
        _post(proxy.url, player, mid, body, headers)
    assert len(proxy.dropped) == before + 1, "the server never answered the lost request"
    return proxy.dropped[-1]


def _plays(api: Api, mid: str) -> list[dict[str, Any]]:
    return [e for e in api.events(mid)["events"] if e["type"] == "play"]


def test_retry_with_the_same_key_gets_the_original_answer(api: Api, proxy: DropProxy) -> None:
    mid, (p0, p1), joins = api.new_match(2, **SAFE_MATCH)
    start = joins[-1]["version"]
    key = {"Idempotency-Key": "move-1"}

    lost = _lost(proxy, p0, mid, HANDMAID, key)
    assert lost.status == 200, lost.body
    original = json.loads(lost.body)
    assert original["version"] == start + 1

    # the retry (direct, and again through the proxy) answers exactly as the lost response did
    for base in (api.base, proxy.url):
        r = _post(base, p0, mid, HANDMAID, key)
        assert r.status_code == 200, r.text
        assert r.json() == original
        assert r.headers["ETag"] == f'"{start + 1}"'

    # applied exactly once: one play event, one version step, and it is p1's turn
    assert [(e["seat"], e["card"]) for e in _plays(api, mid)] == [(0, "handmaid")]
    summary = api.summary(mid)
    assert summary["version"] == start + 1
    assert summary["turn"]["seat"] == 1

    # the same key with another body: 422, and still nothing applied
    r = _post(api.base, p0, mid, PRIEST_AT_1, key)
    assert r.status_code == 422, r.text
    assert error_of(r)["code"] == "idempotency_key_reused"
    r = _post(api.base, p0, mid, {**HANDMAID, "expected_version": start}, key)
    assert error_of(r)["code"] == "idempotency_key_reused"
    assert api.summary(mid)["version"] == start + 1

    # keys are per player: p1 may use the same key for its own move
    r = _post(api.base, p1, mid, HANDMAID, key)
    assert r.status_code == 200, r.text
    assert r.json()["version"] == start + 2
    assert len(_plays(api, mid)) == 2


def test_lost_error_answers_replay_too(api: Api, proxy: DropProxy) -> None:
    """An error answer is not recorded: the retry is judged afresh (and still refused)."""
    mid, (p0, p1), _ = api.new_match(2, **SAFE_MATCH)
    lost = _lost(proxy, p1, mid, HANDMAID, {"Idempotency-Key": "early"})
    assert lost.status == 409 and json.loads(lost.body)["code"] == "not_your_turn"
    r = _post(api.base, p1, mid, HANDMAID, {"Idempotency-Key": "early"})
    assert r.status_code == 409 and error_of(r)["code"] == "not_your_turn"
    assert _plays(api, mid) == []


def test_retry_without_a_key_is_refused_never_applied_twice(api: Api, proxy: DropProxy) -> None:
    mid, (p0, p1), joins = api.new_match(2, **SAFE_MATCH)
    start = joins[-1]["version"]
    lost = _lost(proxy, p0, mid, HANDMAID)
    assert lost.status == 200
    r = _post(api.base, p0, mid, HANDMAID)
    assert r.status_code == 409, r.text
    assert error_of(r)["code"] == "not_your_turn"
    assert [(e["seat"], e["card"]) for e in _plays(api, mid)] == [(0, "handmaid")]
    assert api.summary(mid)["version"] == start + 1


def test_concurrent_duplicates_apply_once(api: Api) -> None:
    mid, (p0, p1), joins = api.new_match(2, **SAFE_MATCH)
    start = joins[-1]["version"]
    answers: list[requests.Response] = []
    go = threading.Barrier(8)

    def send() -> None:
        go.wait()
        answers.append(_post(api.base, p0, mid, HANDMAID, {"Idempotency-Key": "burst"}))

    threads = [threading.Thread(target=send) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert [a.status_code for a in answers] == [200] * 8, [a.text for a in answers]
    assert len({json.dumps(a.json(), sort_keys=True) for a in answers}) == 1
    assert answers[0].json()["version"] == start + 1
    assert len(_plays(api, mid)) == 1


def test_stale_expected_version_and_if_match(api: Api) -> None:
    mid, (p0, p1), joins = api.new_match(2, **SAFE_MATCH)
    v = joins[-1]["version"]

    r = _post(api.base, p0, mid, {**HANDMAID, "expected_version": v - 1})
    assert r.status_code == 409, r.text
    assert error_of(r)["code"] == "version_conflict"
    r = _post(api.base, p0, mid, HANDMAID, {"If-Match": f'"{v - 1}"'})
    assert r.status_code == 412, r.text
    assert error_of(r)["code"] == "version_conflict"
    r = _post(api.base, p0, mid, HANDMAID, {"If-Match": "not-a-version"})
    assert r.status_code == 412 and error_of(r)["code"] == "precondition_failed"
    assert _plays(api, mid) == []

    # the current version is accepted, both ways
    r = _post(api.base, p0, mid, {**HANDMAID, "expected_version": v})
    assert r.status_code == 200, r.text
    assert r.json()["version"] == v + 1
    r = _post(api.base, p1, mid, HANDMAID, {"If-Match": r.headers["ETag"]})
    assert r.status_code == 200, r.text
    assert r.json()["version"] == v + 2
    assert len(_plays(api, mid)) == 2

    # a move chosen at an older version is refused even when it is the mover's turn again
    r = _post(api.base, p0, mid, {"type": "play", "card": "priest", "expected_version": v})
    assert r.status_code == 409 and error_of(r)["code"] == "version_conflict"


def test_bad_idempotency_key(api: Api) -> None:
    mid, (p0, _), _ = api.new_match(2, **SAFE_MATCH)
    r = _post(api.base, p0, mid, HANDMAID, {"Idempotency-Key": "x" * 129})
    assert r.status_code == 422 and error_of(r)["code"] == "invalid_request"
    assert _plays(api, mid) == []
