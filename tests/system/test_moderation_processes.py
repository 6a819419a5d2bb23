"""Moderation and accounts against a real stack: three API servers (three processes) on one
private Redis, so that what one process changes must hold on the others at once. Each process
has seen the token before the change (its token -> player mapping is cached), so a refusal on
every process proves that the check reads Redis on every request (no cache lag)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.support.apiclient import Api, Player, error_of
from tests.support.live import running_server
from tests.support.redis_proc import RedisProcess
from tests.support.server import REPO, ApiServer

ADMIN = "ops-alice:" + "a" * 24 + ",ops-bob:" + "b" * 24
ALICE = {"Authorization": "Bearer " + "a" * 24}
BOB = {"Authorization": "Bearer " + "b" * 24}
NO_TIMEOUTS = {"turn_timeout_s": 86400}


@pytest.fixture(scope="module")
def servers(redis_server: RedisProcess) -> Iterator[list[ApiServer]]:
    env = {"ADMIN_TOKEN": ADMIN}
    with running_server(redis_server.url, env=env) as a, \
            running_server(redis_server.url, env=env) as b, \
            running_server(redis_server.url, env=env) as c:
        yield [a, b, c]


@pytest.fixture
def apis(servers: list[ApiServer]) -> Iterator[list[Api]]:
    out = [Api(s.url) for s in servers]
    yield out
    for a in out:
        a.close()


def _seen_everywhere(apis: list[Api], p: Player) -> None:
    """Every process has served this token (and cached its player)."""
    for api in apis:
        assert api.ok(api.request("GET", "/v1/me", token=p.token))["id"] == p.id


def _two_player_match(api: Api) -> tuple[str, list[Player]]:
    mid, players, _ = api.new_match(2, ruleset="classic", **NO_TIMEOUTS)
    return mid, players


def test_ban_refused_on_every_process_from_the_next_request(apis: list[Api]) -> None:
    p = apis[0].register("banme")
    _seen_everywhere(apis, p)
    resp = apis[1].request("POST", f"/v1/admin/players/{p.id}/ban", headers=ALICE,
                           json={"reason": "flooding", "until": "2099-01-01T00:00:00Z"})
    assert resp.status_code == 200, resp.text
    for api in apis:
        for method, path in (("GET", "/v1/me"), ("GET", "/v1/me/matches"),
                             ("POST", "/v1/matches"), ("POST", "/v1/me/token")):
            r = api.request(method, path, token=p.token, json={} if method == "POST" else None)
            err = error_of(r)
            assert (r.status_code, err["code"]) == (403, "player_banned"), (path, r.text)
            assert err["reason"] == "flooding"
            assert err["until"].startswith("2099-01-01T00:00:00")
    apis[2].ok(apis[2].request("POST", f"/v1/admin/players/{p.id}/unban", headers=BOB,
                               json={"reason": "appeal granted"}))
    _seen_everywhere(apis, p)


def test_ban_ends_running_matches_and_leaves_ladders_and_lists(apis: list[Api]) -> None:
    api = apis[0]
    mid, (banned, other) = _two_player_match(api)
    api.ok(api.request("POST", "/v1/ladders/duel/entries", token=banned.token))
    api.ok(api.request("GET", "/v1/me/events", token=banned.token,
                       params={"challenges": "true"}))
    online = api.ok(api.request("GET", "/v1/players/online"))["players"]
    assert banned.id in {row["id"] for row in online}
    done = api.ok(api.request("POST", f"/v1/admin/players/{banned.id}/ban", headers=ALICE,
                              json={"reason": "cheating"}))
    assert done["after"]["resigned_matches"] == [mid]
    summary = apis[1].summary(mid)
    assert summary["status"] == "finished" and summary["result"]["winners"] == [1], summary
    board = api.ok(api.request("GET", "/v1/ladders/duel"))["leaderboard"]
    assert banned.id not in {row["player_id"] for row in board}
    online = api.ok(api.request("GET", "/v1/players/online"))["players"]
    assert banned.id not in {row["id"] for row in online}
    # never challengeable
    r = api.request("POST", "/v1/challenges", token=other.token,
                    json={"opponents": [banned.name]})
    assert r.status_code == 422 and error_of(r)["code"] == "player_not_found", r.text


def test_rotated_token_refused_on_every_process_at_once(apis: list[Api]) -> None:
    p = apis[0].register("rotor")
    _seen_everywhere(apis, p)
    new = apis[1].ok(apis[1].request("POST", "/v1/me/token", token=p.token))
    assert new["token"] != p.token and new["id"] == p.id
    for api in apis:
        r = api.request("GET", "/v1/me", token=p.token)
        assert (r.status_code, error_of(r)["code"]) == (401, "unauthorized"), r.text
        assert api.ok(api.request("GET", "/v1/me", token=new["token"]))["id"] == p.id


def test_deleted_account_reads_deleted_player_everywhere(apis: list[Api]) -> None:
    api = apis[0]
    finished, (gone, other) = _two_player_match(api)
    api.ok(api.request("POST", f"/v1/matches/{finished}/resign", token=other.token))
    running = api.create(other, ruleset="classic", seats=2, **NO_TIMEOUTS)["match_id"]
    api.join(other, running)
    api.join(gone, running)
    api.ok(api.request("POST", "/v1/ladders/duel/entries", token=gone.token))
    _seen_everywhere(apis, gone)
    out = apis[1].ok(apis[1].request("DELETE", "/v1/me", token=gone.token))
    assert out["deleted"] is True and out["resigned_matches"] == [running]
    for a in apis:
        r = a.request("GET", "/v1/me", token=gone.token)
        assert r.status_code == 401, r.text
        assert a.request("GET", f"/v1/players/{gone.id}").status_code == 404
        for mid in (finished, running):
            names = {p["player_id"]: p["name"] for p in a.summary(mid)["players"]}
            assert names[gone.id] == "deleted player", names
            assert names[other.id] == other.name
    assert apis[2].summary(running)["result"]["winners"] == [0]
    board = api.ok(api.request("GET", "/v1/ladders/duel"))["leaderboard"]
    assert gone.id not in {row["player_id"] for row in board}
    # the name stays taken: nobody else can pass for the deleted player
    r = api.request("POST", "/v1/players", json={"name": gone.name})
    assert (r.status_code, error_of(r)["code"]) == (409, "name_taken"), r.text


def test_rename_shows_in_finished_matches_on_every_process(apis: list[Api]) -> None:
    api = apis[0]
    mid, (renamed, other) = _two_player_match(api)
    api.ok(api.request("POST", f"/v1/matches/{mid}/resign", token=renamed.token))
    for a in apis:  # each process has read the names before the rename
        assert a.summary(mid)["players"][0]["name"] == renamed.name
    # an open challenge to it, made before the rename (its body and notice keep the old name)
    ch = api.ok(api.request("POST", "/v1/challenges", token=other.token,
                            json={"opponents": [renamed.name]}), 201)
    new_name = "renamed-" + renamed.id[2:]
    done = apis[1].ok(apis[1].request("PATCH", f"/v1/admin/players/{renamed.id}",
                                      headers=BOB, json={"name": new_name,
                                                         "reason": "offensive"}))
    assert (done["before"]["name"], done["after"]["name"]) == (renamed.name, new_name)
    for a in apis:
        assert a.summary(mid)["players"][0]["name"] == new_name
        assert a.ok(a.request("GET", f"/v1/matches/{mid}"))["players"][0]["name"] == new_name
        view = a.view(renamed, mid)
        assert view["players"][0]["name"] == new_name
        assert a.ok(a.request("GET", f"/v1/players/{renamed.id}"))["name"] == new_name
        got = a.ok(a.request("GET", f"/v1/challenges/{ch['challenge_id']}", token=other.token))
        assert got["opponents"][0]["name"] == new_name
        mine = a.ok(a.request("GET", "/v1/me/challenges", token=renamed.token))
        assert [c["opponents"][0]["name"] for c in mine["incoming"]] == [new_name]
        notices = a.ok(a.request("GET", "/v1/me/events", token=renamed.token))["events"]
        assert [n["challenge"]["opponents"][0]["name"] for n in notices
                if n.get("challenge")] == [new_name]
    # the old name is held back: nobody may take it, and it names nobody
    r = api.request("POST", "/v1/players", json={"name": renamed.name})
    assert (r.status_code, error_of(r)["code"]) == (409, "name_taken"), r.text
    r = api.request("POST", "/v1/challenges", token=other.token,
                    json={"opponents": [renamed.name]})
    assert error_of(r)["code"] == "player_not_found", r.text


def test_audit_lists_every_admin_action_newest_first(apis: list[Api]) -> None:
    api = apis[0]
    p = api.register("audited")
    api.ok(api.request("POST", f"/v1/admin/players/{p.id}/ban", headers=ALICE,
                       json={"reason": "spam"}))
    api.ok(api.request("POST", f"/v1/admin/players/{p.id}/unban", headers=BOB,
                       json={"reason": "mistake"}))
    page = api.ok(api.request("GET", "/v1/admin/audit", headers=ALICE, params={"limit": 1}))
    (newest,) = page["entries"]
    assert (newest["action"], newest["admin"], newest["target"], newest["reason"]) == \
        ("unban", "ops-bob", p.id, "mistake")
    assert newest["before"]["ban"]["reason"] == "spam" and newest["after"]["ban"] is None
    older = api.ok(api.request("GET", "/v1/admin/audit", headers=ALICE,
                               params={"limit": 1, "after": page["next_cursor"]}))
    (ban,) = older["entries"]
    assert (ban["action"], ban["admin"], ban["target"], ban["reason"]) == \
        ("ban", "ops-alice", p.id, "spam")
    assert ban["at"] <= newest["at"] and ban["before"]["ban"] is None
    found = api.ok(api.request("GET", "/v1/admin/players", headers=ALICE,
                               params={"q": p.name[:10].upper()}))["players"]
    assert p.id in {row["id"] for row in found}
    assert api.ok(api.request("GET", "/v1/admin/players", headers=ALICE,
                              params={"q": p.id}))["players"][0]["name"] == p.name


def test_admin_paths_refuse_other_tokens(apis: list[Api]) -> None:
    api = apis[0]
    p = api.register("notadmin")
    for headers in ({}, {"Authorization": f"Bearer {p.token}"},
                    {"Authorization": "Bearer " + "a" * 23}):
        r = api.request("GET", "/v1/admin/audit", headers=headers)
        assert (r.status_code, error_of(r)["code"]) == (401, "unauthorized"), r.text
        r = api.request("POST", f"/v1/admin/players/{p.id}/ban", headers=headers,
                        json={"reason": "x"})
        assert r.status_code == 401, r.text
    api.ok(api.request("GET", "/v1/me", token=p.token))


def test_cli_bans_against_the_configured_redis_and_is_audited(
        apis: list[Api], redis_server: RedisProcess) -> None:
    api = apis[0]
    p = api.register("clibanned")
    _seen_everywhere(apis, p)
    env = {**os.environ, "REDIS_URL": redis_server.url, "USER": "carol"}
    done = subprocess.run([sys.executable, "-m", "service.ops.admin", "ban", p.name.upper(),
                           "--reason", "bad words"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for a in apis:
        r = a.request("GET", "/v1/me", token=p.token)
        assert (r.status_code, error_of(r)["reason"]) == (403, "bad words"), r.text
    (entry,) = api.ok(api.request("GET", "/v1/admin/audit", headers=ALICE,
                                  params={"limit": 1}))["entries"]
    assert (entry["admin"], entry["action"], entry["target"]) == ("cli:carol", "ban", p.id)
    missing = subprocess.run([sys.executable, "-m", "service.ops.admin", "unban", "nobody-x"],
                             cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert missing.returncode == 1 and "not_found" in missing.stderr


def test_admin_paths_are_404_without_admin_token(redis_server: RedisProcess) -> None:
    with running_server(redis_server.url) as srv:
        api = Api(srv.url)
        unknown = api.request("GET", "/v1/nothing-here")
        for method, path in (("GET", "/v1/admin/audit"), ("GET", "/v1/admin/players?q=a"),
                             ("POST", "/v1/admin/players/p_000000000000/ban"),
                             ("POST", "/v1/admin/ladders/duel/reset")):
            r = api.request(method, path, headers=ALICE, json={"reason": "x"})
            assert r.status_code == 404, (path, r.text)
            assert r.json() == unknown.json()
        api.close()
