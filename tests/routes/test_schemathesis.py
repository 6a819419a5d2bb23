"""schemathesis (v4) against the real app under gunicorn on a private Redis of its own.

The schema is the committed ``openapi.yaml`` (``make openapi``); without it, the running app's
``/openapi.json``. Every operation gets a bounded number of generated requests (positive and
negative, ``SCHEMATHESIS_MAX_EXAMPLES`` each, 50 by default; a fixed seed), sent with a valid
bearer token; path parameters are mostly swapped for ids that exist (a waiting, an active and a
finished match the token's player sits in, real players, a real ladder) so that requests get
past the 404, and long-poll waits are cut to 50 ms. Asserted for every answer: no 5xx; a status
code the operation lists explicitly (flask-smorest's catch-all ``default`` response does not
count); the documented content type, body schema and headers; schema-violating requests
refused; and authentication enforced wherever the spec asks for it (schemathesis's
``ignored_auth`` re-sends successful requests without a token and with a wrong one).
``test_auth_is_not_ignorable`` checks the same explicitly for every protected operation.
"""
from __future__ import annotations

import itertools
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
import requests.auth
import schemathesis
import yaml
from hypothesis import HealthCheck, settings
from schemathesis import checks as st_checks

from service.store import keys
from tests.support.apiclient import NO_TIMEOUTS, Api, Player
from tests.support.live import running_server
from tests.support.redis_proc import RedisProcess
from tests.support.server import ApiServer

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "openapi.yaml"
#: examples per operation (per generation mode); SCHEMATHESIS_MAX_EXAMPLES=200 for a deeper run
MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "50"))
#: long-polls are held at most this long during the fuzz run (the spec allows up to 60 s)
MAX_WAIT_S = 0.05

CONFIG = schemathesis.Config.from_dict({
    "seed": 20261130,
    "generation": {"mode": "all", "max-examples": MAX_EXAMPLES, "database": "none"},
    "phases": {"stateful": {"enabled": False}},
})

#: (operation, status) -> how many answers; checked by test_fuzzing_reached_the_endpoints
SEEN: Counter[tuple[str, int]] = Counter()


@schemathesis.check
def status_code_listed(ctx: Any, response: Any, case: Any) -> bool | None:
    """Stricter than status_code_conformance: flask-smorest documents a catch-all ``default``
    error response on every operation, which would let any status pass. Here the status must
    be listed explicitly for the operation."""
    SEEN[(case.operation.label, response.status_code)] += 1
    if case.method.upper() != case.operation.method.upper():
        # schemathesis's unsupported-method probe: a 405 from the path, not this operation
        return None
    listed = {str(k) for k in case.operation.definition.raw.get("responses", {})} - {"default"}
    status = str(response.status_code)
    if status not in listed and f"{status[0]}XX" not in listed:
        raise AssertionError(f"{case.operation.label} answered {status}, which its responses "
                             f"do not list ({sorted(listed)}): {response.text[:300]}")
    return None


@schemathesis.check
def negative_data_rejected(ctx: Any, response: Any, case: Any) -> bool | None:
    """schemathesis's negative_data_rejection, except for requests whose only flaw is a missing
    or malformed Authorization header: the test always sends a valid token (explicit auth)."""
    try:
        return st_checks.negative_data_rejection(ctx, response, case)  # type: ignore[no-any-return]
    except Exception as e:  # noqa: BLE001 - a schemathesis Failure
        text = str(getattr(e, "message", e))
        if "`Authorization`" in text and "header" in text:
            return None
        raise


CHECKS = [
    status_code_listed,
    st_checks.not_a_server_error,
    st_checks.status_code_conformance,
    st_checks.content_type_conformance,
    st_checks.response_schema_conformance,
    st_checks.response_headers_conformance,
    st_checks.ignored_auth,
    st_checks.unsupported_method,
    negative_data_rejected,
]


@dataclass
class Live:
    server: ApiServer
    player: Player
    other: Player
    waiting: str
    active: str
    finished: str
    ladder: str | None


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    # A Redis of its own: the fuzzer enters ladders and registers players at random, which must
    # not leak into other modules' data on the session's Redis.
    # (no cap on open challenges: every challenge_id case below makes a fresh one)
    with RedisProcess() as redis_proc, running_server(
            redis_proc.url, env={"CHALLENGE_MAX_OPEN": "1000000",
                                 "ADMIN_TOKEN": "fuzz:" + ADMIN_TOKEN}) as server:
        api = Api(server.url)
        me, other = api.register("fuzz"), api.register("fuzzed")
        waiting = api.create(me, seats=3, ruleset="2019", **NO_TIMEOUTS)["match_id"]
        api.join(me, waiting)
        active = api.create(other, seats=2, ruleset="classic", **NO_TIMEOUTS)["match_id"]
        api.join(other, active)
        api.join(me, active)
        finished = api.create(me, seats=2, ruleset="classic", **NO_TIMEOUTS)["match_id"]
        api.join(me, finished)
        api.join(other, finished)
        api.ok(api.request("POST", f"/v1/matches/{finished}/resign", token=other.token))
        ladders = api.request("GET", "/v1/ladders")
        names = [lad.get("name") for lad in ladders.json().get("ladders", [])] \
            if ladders.status_code == 200 and isinstance(ladders.json(), dict) else []
        api.close()
        yield Live(server, me, other, waiting, active, finished, names[0] if names else None)


#: the live server's operator token (the admin paths exist only with one)
ADMIN_TOKEN = "f" * 32
#: operations that end the caller's token (a new token, a deleted account): each fuzzed call
#: gets a player of its own, so the fuzzing player's token stays valid
SPENDS_THE_TOKEN = {("POST", "/v1/me/token"), ("DELETE", "/v1/me")}


def _throwaway(live: Live) -> Player:
    api = Api(live.server.url)
    try:
        return api.register("fuzzacct")
    finally:
        api.close()


def _token_for(case: Any, live: Live) -> str:
    """The admin token on the admin paths, a new player's where the call spends its token,
    else the fuzzing player's."""
    if case.operation.path.startswith("/v1/admin/"):
        return ADMIN_TOKEN
    if (case.method.upper(), case.operation.path) in SPENDS_THE_TOKEN:
        return _throwaway(live).token
    return live.player.token


if SPEC.exists():
    schema: Any = schemathesis.openapi.from_path(SPEC, config=CONFIG)
else:  # pragma: no cover - only before `make openapi` has been run once

    @pytest.fixture(scope="module")
    def live_schema(live: Live) -> Any:
        return schemathesis.openapi.from_url(live.server.url + "/openapi.json", config=CONFIG)

    schema = schemathesis.pytest.from_fixture("live_schema")

_rotation = itertools.count()


class BearerAuth(requests.auth.AuthBase):
    """The valid token, as explicit auth (schemathesis then probes without it and with a wrong
    one on every successful protected request)."""

    def __init__(self, token: str) -> None:
        self.token = token

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        r.headers["Authorization"] = f"Bearer {self.token}"
        return r


def _fresh_challenge(live: Live, *, mine: bool) -> str:
    """A new open challenge between the fuzzing player and a new player: made by the fuzzing
    player (``mine``: it may cancel it) or naming it (it may accept or decline it)."""
    api = Api(live.server.url)
    try:
        x = api.register("fuzzch")
        by, to = (live.player, x) if mine else (x, live.player)
        return str(api.ok(api.request("POST", "/v1/challenges", token=by.token,
                                      json={"opponents": [to.name]}), 201)["challenge_id"])
    finally:
        api.close()


def _valid_opponents(value: Any) -> bool:
    return isinstance(value, list) and 1 <= len(value) <= 5 and all(
        isinstance(x, str) and 1 <= len(x) <= 64 for x in value)


def _use_real_ids(case: Any, live: Live) -> None:
    """Point most generated path parameters at things that exist (a deterministic rotation),
    and most generated challenges at a real opponent (only where the generated list was valid,
    so that a request meant to be refused stays so)."""
    body = case.body
    if case.operation.path == "/v1/challenges" and isinstance(body, dict) \
            and _valid_opponents(body.get("opponents")) and next(_rotation) % 4:
        api = Api(live.server.url)
        try:
            body["opponents"] = [api.register("fuzzed").name]
        finally:
            api.close()
    params = case.path_parameters
    if not params:
        return
    turn = next(_rotation) % 5

    def an_id(name: str, pattern: str) -> bool:
        # only a generated id of the documented shape is swapped: one meant to violate the
        # pattern must stay as it is (and be refused 404)
        return name in params and re.fullmatch(pattern, str(params[name])) is not None

    if "challenge_id" in params and turn:
        params["challenge_id"] = _fresh_challenge(
            live, mine=case.operation.path.endswith("/cancel"))
    if an_id("match_id", keys.MATCH_ID_PATTERN) and turn:
        params["match_id"] = (live.waiting, live.active, live.finished, live.active)[turn - 1]
    if an_id("player_id", keys.PLAYER_ID_PATTERN) and case.operation.path.startswith(
            "/v1/admin/"):
        if turn % 2:  # a player of its own: a ban or rename must not hit the fuzzing players
            params["player_id"] = _throwaway(live).id
    elif an_id("player_id", keys.PLAYER_ID_PATTERN) and turn % 2:
        params["player_id"] = (live.player.id, live.other.id)[turn % 4 // 2]
    if "name" in params and turn % 2 and live.ladder:
        params["name"] = live.ladder


def _bounded_waits(case: Any) -> None:
    q = case.query
    if isinstance(q, dict) and isinstance(q.get("wait"), (int, float)) \
            and not isinstance(q["wait"], bool) and q["wait"] > MAX_WAIT_S:
        q["wait"] = MAX_WAIT_S


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_schema(case: Any, live: Live) -> None:
    _use_real_ids(case, live)
    _bounded_waits(case)
    case.call_and_validate(base_url=live.server.url, checks=CHECKS, timeout=20,
                           auth=BearerAuth(_token_for(case, live)))


# --------------------------------------------------------------------------- authentication


def _protected_operations() -> list[tuple[str, str]]:
    spec = yaml.safe_load(SPEC.read_text()) if SPEC.exists() else None
    if spec is None:  # pragma: no cover
        return []
    out = []
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            if isinstance(op, dict) and op.get("security"):
                out.append((method.upper(), path))
    return out


def test_spec_protects_the_player_endpoints() -> None:
    ops = set(_protected_operations())
    for needed in [("POST", "/v1/matches"), ("POST", "/v1/matches/{match_id}/join"),
                   ("GET", "/v1/matches/{match_id}/view"),
                   ("POST", "/v1/matches/{match_id}/actions"),
                   ("POST", "/v1/matches/{match_id}/resign"), ("GET", "/v1/me"),
                   ("GET", "/v1/me/matches"), ("GET", "/v1/me/events"),
                   ("POST", "/v1/challenges"), ("GET", "/v1/challenges/{challenge_id}"),
                   ("POST", "/v1/challenges/{challenge_id}/accept"),
                   ("POST", "/v1/challenges/{challenge_id}/decline"),
                   ("POST", "/v1/challenges/{challenge_id}/cancel"),
                   ("GET", "/v1/me/challenges")]:
        assert needed in ops, needed


@pytest.mark.parametrize("method,path", _protected_operations())
def test_auth_is_not_ignorable(live: Live, method: str, path: str) -> None:
    url = live.server.url + path.format(match_id=live.active, player_id=live.player.id,
                                        name=live.ladder or "none",
                                        challenge_id=_fresh_challenge(live, mine=True))
    # a valid body, so that only the credentials are wrong
    body = {"type": "play", "card": "guard", "target": 1, "guess": "priest"} \
        if path.endswith("/actions") else {"ruleset": "classic", "seats": 2} \
        if path == "/v1/matches" else {}
    for headers in ({}, {"Authorization": "Bearer not-a-token"},
                    {"Authorization": f"Basic {live.player.token}"},
                    {"Authorization": "Bearer"},
                    {"Authorization": f"Bearer {live.player.token}x"}):
        r = requests.request(method, url, json=body if method != "GET" else None,
                             headers=headers, timeout=10)
        assert r.status_code == 401, (method, path, headers, r.status_code, r.text[:300])
        assert r.json()["code"] == "unauthorized"
        assert r.headers.get("WWW-Authenticate", "").startswith("Bearer")


def test_fuzzing_reached_the_endpoints() -> None:
    """The generated requests got past validation and 404s: most operations answered 2xx."""
    if not SEEN:
        pytest.skip("the schemathesis test did not run in this session")
    ops = {op for op, _ in SEEN}
    ok = {op for (op, status), n in SEEN.items() if 200 <= status < 300}
    print("\n".join(f"{op} {status}: {n}" for (op, status), n in sorted(SEEN.items())))
    assert len(ok) >= len(ops) - 2, sorted(ops - ok)
