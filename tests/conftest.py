"""Shared pytest fixtures.

``redis_server`` (session): a private redis-server on a unix socket in a temp dir; it has
``.url``, ``.socket_path`` and ``.client()``. ``redis_db`` (function): a client to that private
server, FLUSHALLed after each test. Neither ever touches 127.0.0.1:6379 or REDIS_URL.
``api_server`` (module): the real app under gunicorn on ``redis_server`` (tests/support/server.py).

A module that sets ``ON_CLUSTER = True`` runs twice: on the single Redis (``[single]``) and on a
private 3-master Redis Cluster with a single Redis for RQ (``[cluster]``,
tests/support/redis_cluster.py's ``ClusterStack``: ``.url`` is ``redis+cluster://...``, ``.env``
holds ``QUEUE_REDIS_URL``, ``.queue_client()`` reaches RQ's Redis). The cluster starts once per
session (about a second), on free loopback ports in its own temp dir; where Debian's
redis-server 7 can't be had (``make test`` installs it), the ``[cluster]`` runs skip saying so.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from service.store import clock
from tests.support.apiclient import Api
from tests.support.redis_cluster import ClusterStack, find_cluster_tools
from tests.support.redis_proc import RedisProcess
from tests.support.server import ApiServer


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if getattr(metafunc.module, "ON_CLUSTER", False) and "redis_server" in metafunc.fixturenames:
        metafunc.parametrize("redis_server", ["single", "cluster"], indirect=True,
                             scope="session")


@pytest.fixture(scope="session")
def redis_single() -> Iterator[RedisProcess]:
    with RedisProcess() as server:
        yield server


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[ClusterStack]:
    tools = find_cluster_tools()
    if isinstance(tools, str):
        pytest.skip(tools)
    # Never failed over, so a long node timeout: its tests stall a node (SIGSTOP) for about
    # 1.5 s, which on a busy machine outlasted 2 s and had the other masters mark the node
    # failed, so the cluster answered CLUSTERDOWN to the next test (a CI run, 2026-12-07)
    with ClusterStack(masters=3, node_timeout_ms=15000) as stack:
        yield stack


@pytest.fixture(scope="session")
def redis_server(request: pytest.FixtureRequest) -> RedisProcess | ClusterStack:
    if getattr(request, "param", "single") == "cluster":
        stack: ClusterStack = request.getfixturevalue("redis_cluster")
        return stack
    single: RedisProcess = request.getfixturevalue("redis_single")
    return single


@pytest.fixture
def redis_db(redis_server: RedisProcess | ClusterStack) -> Iterator[redis.Redis]:
    """A client of the session's private Redis, empty when the test starts and flushed after.
    Flushed before too: a module that doesn't use this fixture (an API module whose servers
    write the service clock's heartbeats) may have left keys behind, and a clock whose last
    tick is seconds old counts the gap as an outage and moves every deadline."""
    _flush(redis_server)
    client = redis_server.client()
    try:
        yield client
    finally:
        _flush(redis_server)
        client.close()


def _flush(redis_server: RedisProcess | ClusterStack) -> None:
    if isinstance(redis_server, ClusterStack):
        redis_server.flushall()  # every master, and RQ's Redis
        clock.forget()
        return
    # FLUSHALL on the private server only: a fresh client to its own socket.
    cleaner = redis_server.client()
    try:
        cleaner.flushall()
        clock.forget()  # this process's cached reading of the (flushed) service clock
    finally:
        cleaner.close()


# --------------------------------------------------------------------------- the API under gunicorn

@pytest.fixture(scope="module")
def api_server(request: pytest.FixtureRequest,
               redis_server: RedisProcess | ClusterStack) -> Iterator[ApiServer]:
    """The real app under gunicorn on a free port, on the private ``redis_server``; one per test
    module (a module sets ``API_WORKERS = n`` for n gunicorn workers, default 1, and may set
    ``API_ENV`` to a dict of environment variables for it). Rate limits and RQ enqueueing are
    off. On a failing test its log is attached to the report; at the end of the
    module the log must hold no traceback (an unhandled error anywhere is a bug)."""
    workers = int(getattr(request.module, "API_WORKERS", 1))
    server = ApiServer(redis_server.url, workers=workers,
                       env={**getattr(request.module, "API_ENV", {}), **redis_server.env})
    try:
        server.start()
        yield server
        log = server.log_text()
        assert "Traceback" not in log, f"the server logged an unhandled error:\n{log[-8000:]}"
    finally:
        server.close()


@pytest.fixture(scope="module")
def api(api_server: ApiServer) -> Iterator[Api]:
    """A plain HTTP client of the module's server (tests/support/apiclient.py); module-scoped,
    like the server, so module-scoped fixtures (a match set up once) can use it too."""
    client = Api(api_server.url)
    yield client
    client.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.failed:
        server = getattr(item, "funcargs", {}).get("api_server")
        if isinstance(server, ApiServer):
            report.sections.append(("gunicorn log (tail)", server.log_tail(80)))
