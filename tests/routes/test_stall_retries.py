"""A ``503`` on a write while Redis stalls means "outcome unknown" (issue 24, item 1): the
command may have run. A retry with the same ``Idempotency-Key`` returns the first answer when
it had run, and applies the action (once) when it had not.

- applied: a proxy in front of Redis lets the action's ``EXEC`` through and then holds every
  answer (tests/support/redis_freeze.py): Redis applied the move, the API timed out on it
  and answered 503; the retry gets the move's answer and nothing is applied twice;
- not applied: Redis is SIGSTOPped before the action: 503; after SIGCONT the retry applies
  it, once."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from service.store import matches
from service.store.docs import MatchDoc
from tests.support.apiclient import Api, Player
from tests.support.live import HANDMAID, SAFE_MATCH, running_server
from tests.support.redis_freeze import RedisFreezeProxy
from tests.support.redis_proc import RedisProcess
from tests.support.server import ApiServer
from tests.support.stall import stalled

pytestmark = pytest.mark.timeout(120)

#: what an action's commit sends: EVALSHA of the match store's commit script (store/matches.py)
COMMIT = hashlib.sha1(matches._COMMIT.encode()).hexdigest().encode()


@pytest.fixture(scope="module")
def rp() -> Iterator[RedisProcess]:
    with RedisProcess() as server:
        yield server


@pytest.fixture(scope="module")
def proxy(rp: RedisProcess) -> Iterator[RedisFreezeProxy]:
    assert rp.socket_path is not None
    with RedisFreezeProxy(rp.socket_path) as p:
        yield p


@pytest.fixture(scope="module")
def server(proxy: RedisFreezeProxy) -> Iterator[ApiServer]:
    with running_server(proxy.url) as s:
        yield s


@pytest.fixture
def api(server: ApiServer, proxy: RedisFreezeProxy) -> Iterator[Api]:
    proxy.thaw()
    a = Api(server.url)
    yield a
    proxy.thaw()
    a.close()


def _post(base: str, player: Player, mid: str, body: Any, key: str) -> requests.Response:
    h = {"Authorization": f"Bearer {player.token}", "Idempotency-Key": key}
    return requests.post(f"{base}/v1/matches/{mid}/actions", json=body, headers=h, timeout=30)


def _stored(rp: RedisProcess, mid: str) -> MatchDoc:
    return matches.load(rp.client(), mid)


def _plays(doc: MatchDoc) -> list[tuple[int, str]]:
    assert doc.state is not None
    return [(e.data["seat"], e.data["card"]) for e in doc.state.events if e.type == "play"]


def test_a_503_whose_transaction_ran_is_answered_by_the_retry(
        api: Api, proxy: RedisFreezeProxy, rp: RedisProcess) -> None:
    mid, (p0, _p1), joins = api.new_match(2, **SAFE_MATCH)
    start = joins[-1]["version"]
    proxy.freeze_after_exec(COMMIT)
    r = _post(api.base, p0, mid, HANDMAID, "stalled-1")
    assert r.status_code == 503, r.text
    assert r.json()["code"] == "service_unavailable" and int(r.headers["Retry-After"]) >= 1
    assert proxy.execs_frozen >= 1
    # Redis did run it: the outcome the 503 could not tell
    doc = _stored(rp, mid)
    assert doc.version == start + 1 and _plays(doc) == [(0, "handmaid")]
    proxy.thaw()
    retry = _post(api.base, p0, mid, HANDMAID, "stalled-1")
    assert retry.status_code == 200, retry.text
    assert retry.json()["version"] == start + 1
    doc = _stored(rp, mid)
    assert doc.version == start + 1 and _plays(doc) == [(0, "handmaid")]  # once


def test_a_503_whose_transaction_never_ran_is_applied_once_by_the_retry(
        api: Api, rp: RedisProcess) -> None:
    mid, (p0, _p1), joins = api.new_match(2, **SAFE_MATCH)
    start = joins[-1]["version"]
    with stalled(rp):
        r = _post(api.base, p0, mid, HANDMAID, "stalled-2")
        assert r.status_code == 503, r.text
        assert r.json()["code"] == "service_unavailable"
    retry = _post(api.base, p0, mid, HANDMAID, "stalled-2")
    assert retry.status_code == 200, retry.text
    assert retry.json()["version"] == start + 1
    again = _post(api.base, p0, mid, HANDMAID, "stalled-2")
    assert again.status_code == 200 and again.json() == retry.json()
    doc = _stored(rp, mid)
    assert doc.version == start + 1 and _plays(doc) == [(0, "handmaid")]
