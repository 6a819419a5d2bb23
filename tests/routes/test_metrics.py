"""GET /metrics and request ids, against the real app under gunicorn with two workers.

The counters must move as a match is played (whichever worker answers the scrape: the workers'
metrics are added up through PROMETHEUS_MULTIPROC_DIR), and every response, errors included,
carries ``X-Request-ID``; each request is logged as one JSON line with that id."""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families
from rq import Queue

from tests.support.apiclient import NO_TIMEOUTS, Api, play_randomly
from tests.support.redis_proc import RedisProcess
from tests.support.server import ApiServer
from tests.support.snapshot import clear_rate_limits

API_WORKERS = 2
API_ENV = {"METRICS_OPEN": "1"}  # /metrics is closed by default (tests/routes/test_limits.py)
RID = "X-Request-ID"
ACTIONS = "/v1/matches/<match_id>/actions"


@pytest.fixture
def api(api_server: ApiServer) -> Iterator[Api]:
    client = Api(api_server.url)
    yield client
    client.close()


def scrape(base: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    resp = requests.get(base + "/metrics", timeout=10)
    assert resp.status_code == 200, resp.text[:500]
    assert resp.headers["Content-Type"].startswith("text/plain"), resp.headers
    assert resp.headers.get(RID)
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for fam in text_string_to_metric_families(resp.text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(m: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str,
          **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in m.items() if n == name and want <= set(ls))


def wait_for(pred: Any, timeout: float = 5.0, what: str = "condition") -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_counters_move_as_a_match_is_played(api: Api, api_server: ApiServer) -> None:
    base = api_server.url
    before = scrape(base)
    mid, players, joins = api.new_match(2, prefix="met", ruleset="classic", seed="metrics-1",
                                        **NO_TIMEOUTS)
    during = scrape(base)
    assert value(during, "ll_active_matches") == value(before, "ll_active_matches") + 1
    assert value(during, "ll_matches", status="active") == value(during, "ll_active_matches")
    actions = play_randomly(api, mid, players, random.Random(7), joins[-1])
    n = len(actions)
    assert n > 5
    after = scrape(base)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("ll_actions_applied_total") == n
    assert delta("ll_timeouts_applied_total") == 0
    # Requests by route and status, counted by both workers and added up in one scrape.
    assert delta("ll_http_requests_total", route=ACTIONS, method="POST", status="200") == n
    assert delta("ll_http_requests_total", route="/v1/matches/<match_id>/join",
                 status="200") == 2
    assert delta("ll_http_requests_total", route="/v1/players", status="201") == 2
    assert delta("ll_action_latency_seconds_count") == n
    assert delta("ll_action_latency_seconds_sum") > 0
    assert value(after, "ll_action_latency_seconds_bucket", le="+Inf") == \
        value(after, "ll_action_latency_seconds_count")
    assert value(after, "ll_active_matches") == value(before, "ll_active_matches")
    assert delta("ll_matches", status="finished") == 1
    assert value(after, "ll_redis_up") == 1
    # The scrape itself is counted too (on the next scrape).
    assert value(scrape(base), "ll_http_requests_total", route="/metrics", status="200") >= 3


def test_timeouts_applied_are_counted(api: Api, api_server: ApiServer) -> None:
    before = scrape(api_server.url)
    mid, players, joins = api.new_match(2, prefix="tmo", ruleset="classic", seed="metrics-2",
                                        turn_timeout_s=1, timeout_policy="auto")
    time.sleep(1.3)
    v = api.summary(mid)  # reading the match applies the timeout that is due
    assert v["version"] > joins[-1]["version"]
    after = scrape(api_server.url)
    assert value(after, "ll_timeouts_applied_total") - \
        value(before, "ll_timeouts_applied_total") >= 1
    assert value(after, "ll_actions_applied_total") == value(before, "ll_actions_applied_total")


def test_longpollers_waiting_gauge(api: Api, api_server: ApiServer) -> None:
    base = api_server.url
    mid, players, joins = api.new_match(2, prefix="lp", ruleset="classic", seed="metrics-3",
                                        **NO_TIMEOUTS)
    v = joins[-1]
    waiter = players[1 - v["turn"]["seat"]]
    results: list[int] = []

    def poll() -> None:
        r = api.request("GET", f"/v1/matches/{mid}/view", token=waiter.token,
                        params={"wait": 10, "after": v["version"]}, timeout=20)
        results.append(r.status_code)

    baseline = value(scrape(base), "ll_longpoll_waiting")
    t = threading.Thread(target=poll)
    t.start()
    try:
        wait_for(lambda: value(scrape(base), "ll_longpoll_waiting") == baseline + 1,
                 what="the long-poll to be counted as waiting")
        mover = players[v["turn"]["seat"]]
        act = api.view(mover, mid)["legal_actions"][0]
        api.act(mover, mid, act)  # wakes the poller
        t.join(10)
        assert results == [200]
        wait_for(lambda: value(scrape(base), "ll_longpoll_waiting") == baseline,
                 what="the gauge to come back down")
    finally:
        t.join(15)


def test_rq_queue_depth_is_read_at_scrape(api_server: ApiServer,
                                          redis_server: RedisProcess) -> None:
    r = redis_server.client()
    try:
        q = Queue("default", connection=r)
        before = value(scrape(api_server.url), "ll_rq_queue_depth", queue="default",
                       state="queued")
        job = q.enqueue("service.jobs.ladder.rate", "m_doesnotexist")
        try:
            after = value(scrape(api_server.url), "ll_rq_queue_depth", queue="default",
                          state="queued")
            assert after == before + 1
        finally:
            job.delete()
        assert value(scrape(api_server.url), "ll_rq_queue_depth", queue="default",
                     state="queued") == before
        m = scrape(api_server.url)
        for queue in ("deadlines", "default"):
            for state in ("queued", "scheduled", "started", "failed"):
                assert ("ll_rq_queue_depth", (("queue", queue), ("state", state))) in m
    finally:
        r.close()


# --------------------------------------------------------------------------- request ids


def _log_lines(server: ApiServer) -> list[dict[str, Any]]:
    out = []
    for line in server.log_text().splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def test_every_response_carries_a_request_id(api: Api, api_server: ApiServer) -> None:
    base = api_server.url
    s = requests.Session()
    mid, players, joins = api.new_match(2, prefix="rid", ruleset="classic", seed="rid-1",
                                        **NO_TIMEOUTS)
    p0 = players[0]
    auth = {"Authorization": f"Bearer {p0.token}"}
    calls: list[tuple[int, str, str, dict[str, Any]]] = [
        (200, "GET", "/healthz", {}),
        (200, "GET", "/readyz", {}),
        (200, "GET", "/metrics", {}),
        (200, "GET", f"/v1/matches/{mid}", {}),
        (200, "GET", "/", {}),
        (200, "GET", f"/matches/{mid}", {}),
        (200, "GET", "/web/static/app.css", {}),
        (201, "POST", "/v1/players", {"json": {"name": "rid-new-player"}}),
        (304, "GET", f"/v1/matches/{mid}/view",
         {"headers": {**auth, "If-None-Match": f'"{joins[-1]["version"]}"'}}),
        (400, "POST", "/v1/players", {"data": "{not json",
                                      "headers": {"Content-Type": "application/json"}}),
        (401, "POST", "/v1/matches", {"json": {"ruleset": "classic", "seats": 2}}),
        (404, "GET", "/v1/matches/m_nope", {}),
        (404, "GET", "/no/such/page", {}),
        (405, "DELETE", "/v1/matches", {}),
        (409, "POST", f"/v1/matches/{mid}/join", {"headers": auth}),
        (413, "POST", "/v1/players", {"json": {"name": "x" * 40000}}),
        (422, "POST", "/v1/matches", {"json": {"ruleset": "nope", "seats": 9},
                                      "headers": auth}),
    ]
    seen = []
    for status, method, path, kw in calls:
        r = s.request(method, base + path, timeout=10, **kw)
        assert r.status_code == status, (method, path, r.status_code, r.text[:300])
        rid = r.headers.get(RID)
        assert rid and re.fullmatch(r"[0-9a-f]{32}", rid), (method, path, r.headers)
        seen.append(rid)
    assert len(set(seen)) == len(seen), "each request gets its own id"

    # A sane incoming id is honoured; anything else is replaced.
    r = s.get(base + "/healthz", headers={RID: "client-abc.123:4"}, timeout=10)
    assert r.headers[RID] == "client-abc.123:4"
    r = s.get(base + "/v1/matches/m_nope", headers={RID: "trace-404"}, timeout=10)
    assert r.status_code == 404 and r.headers[RID] == "trace-404"
    for bad in ("has spaces", "x" * 200, "semi;colon", ""):
        r = s.get(base + "/healthz", headers={RID: bad}, timeout=10)
        assert re.fullmatch(r"[0-9a-f]{32}", r.headers[RID]), (bad, r.headers[RID])

    # One JSON object per line, with the id the response carried.
    def logged() -> list[dict[str, Any]]:
        return [e for e in _log_lines(api_server) if e.get("request_id") == "trace-404"]

    wait_for(lambda: bool(logged()), what="the request's log line")
    (line,) = logged()
    assert line["method"] == "GET" and line["path"] == "/v1/matches/m_nope"
    assert line["status"] == 404 and line["level"] == "info" and line["msg"] == "request"
    assert isinstance(line["duration_ms"], float | int) and line["duration_ms"] >= 0
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", line["ts"])
    for key in ("ts", "level", "msg", "request_id", "method", "path", "status", "duration_ms"):
        assert all(key in e for e in _log_lines(api_server) if e.get("msg") == "request"), key


def test_rate_limited_responses_carry_a_request_id(redis_server: RedisProcess) -> None:
    cleaner = redis_server.client()
    clear_rate_limits(cleaner)  # counters of other tests' servers on this Redis
    cleaner.close()
    with ApiServer(redis_server.url, env={"RATE_LIMITS": "1", "RATE_LIMIT": "3/minute",
                                          "METRICS_OPEN": "1"}) as srv:
        statuses = []
        for i in range(6):
            # (a well-formed id: a path no route matches is never rate limited by flask-limiter)
            r = requests.get(f"{srv.url}/v1/matches/m_000000000000", headers={RID: f"rl-{i}"},
                             timeout=10)
            statuses.append(r.status_code)
            assert r.headers.get(RID) == f"rl-{i}", r.headers
        assert 429 in statuses, statuses
        limited = requests.get(f"{srv.url}/v1/matches/m_000000000000", timeout=10)
        assert limited.status_code == 429 and limited.json()["code"] == "rate_limited"
        assert limited.headers.get(RID)
        # /metrics, the health probes and the web pages (not the JSON they read) are exempt
        for path in ("/metrics", "/healthz", "/", "/matches/m_nope", "/web/static/app.css"):
            for _ in range(4):
                assert requests.get(srv.url + path, timeout=10).status_code == 200, path
