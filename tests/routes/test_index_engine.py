"""``GET /v1`` says which build of the rules engine the process runs (service/engine/_build.py):
``compiled`` (mypyc, ``make engine``, the Docker image) or ``pure``."""

from __future__ import annotations

import requests

from service.engine import _build
from tests.support.redis_proc import RedisProcess
from tests.support.server import ApiServer


def _engine(url: str) -> str:
    with requests.Session() as s:
        s.trust_env = False
        r = s.get(url + "/v1", timeout=10)
    assert r.status_code == 200
    return str(r.json()["engine"])


def test_v1_reports_the_engine_build_in_use(api_server: ApiServer) -> None:
    # the server runs from this checkout, with this environment: the same build as here
    expected = "compiled" if _build.native_is_current() else "pure"
    assert _engine(api_server.url) == expected


def test_v1_reports_pure_when_the_pure_engine_is_forced() -> None:
    with RedisProcess() as rp, ApiServer(rp.url, env={"LL_ENGINE_PURE": "1"}) as srv:
        assert _engine(srv.url) == "pure"
