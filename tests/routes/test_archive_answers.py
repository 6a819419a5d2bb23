"""Archived matches over HTTP: every answer that shows a finished match (its summary, the seated
players' views, the event log from any point, match lists, a player's matches and profile, the
inbox's views, the replay page) is byte for byte the same before and after the match moved out
of Redis into the archive; a missing or corrupt archive file answers a JSON 503
``archive_unavailable``, never a 500."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.store import archive, keys
from tests.support.apiclient import NO_TIMEOUTS, Api, Player, error_of, play_randomly
from tests.support.live import running_server
from tests.support.redis_proc import RedisProcess
from tests.support.server import ApiServer


@pytest.fixture(scope="module")
def archive_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("archive")


@pytest.fixture(scope="module")
def api(redis_server: RedisProcess, archive_dir: Path) -> Iterator[Api]:
    server: ApiServer
    with running_server(redis_server.url, env={"ARCHIVE_DIR": str(archive_dir)}) as server:
        a = Api(server.url)
        yield a
        a.close()


def answers(api: Api, mid: str, players: list[Player], outsider: Player) -> dict[str, bytes]:
    """Every GET that shows the match, raw bytes by (path, who)."""
    seat0, seat1 = players
    paths = [
        (f"/v1/matches/{mid}", None), (f"/v1/matches/{mid}", seat0.token),
        (f"/v1/matches/{mid}", outsider.token),
        (f"/v1/matches/{mid}/view", seat0.token), (f"/v1/matches/{mid}/view", seat1.token),
        (f"/v1/matches/{mid}/events", None), (f"/v1/matches/{mid}/events", seat1.token),
        (f"/v1/matches/{mid}/events?after=20", None),
        (f"/v1/matches/{mid}/events?after=100000", seat0.token),
        ("/v1/matches?status=finished", None), (f"/v1/matches?player={seat0.id}", None),
        (f"/v1/matches?player={seat1.id}&status=finished", None),
        ("/v1/me/matches", seat0.token), ("/v1/me/matches?status=finished", seat1.token),
        ("/v1/me/events?views=true", seat0.token),
        (f"/v1/players/{seat1.id}", None),
        (f"/matches/{mid}", None),  # the replay page
    ]
    out = {}
    for path, token in paths:
        resp = api.request("GET", path, token=token)
        assert resp.status_code == 200, (path, resp.status_code, resp.text[:500])
        body = resp.content
        if path.startswith("/v1/players/"):
            # presence says when the player last asked anything (these very reads): the rest
            # of the profile, its recent matches included, must not change
            profile = resp.json()
            assert profile["recent_matches"] and profile.pop("presence")
            body = json.dumps(profile, sort_keys=True).encode()
        out[f"{path} as {token and token[:6]}"] = body
    return out


def test_a_finished_match_answers_the_same_from_the_archive(
        api: Api, redis_server: RedisProcess, archive_dir: Path) -> None:
    r = redis_server.client()
    mid, players, joins = api.new_match(2, ruleset="classic", seed="archive-answers", **NO_TIMEOUTS)
    play_randomly(api, mid, players, random.Random(7), joins[-1])
    outsider = api.register("watcher")
    before = answers(api, mid, players, outsider)
    assert r.exists(keys.match(mid)) and r.hexists(keys.match(mid), "ev")  # its log packed

    got = archive.archive_due(r, archive.Archive(str(archive_dir)), retention_s=0)
    assert got.archived >= 1
    assert not r.exists(keys.match(mid)) and not r.exists(keys.match_events(mid))
    after = answers(api, mid, players, outsider)
    assert after.keys() == before.keys()
    for k in before:
        assert after[k] == before[k], (k, before[k], after[k])

    # a finished match refuses moves from the archive as it did from Redis
    resp = api.request("POST", f"/v1/matches/{mid}/resign", token=players[0].token)
    assert resp.status_code == 409 and error_of(resp)["code"] == "match_not_active"


def test_a_missing_or_corrupt_archive_file_is_a_json_503(
        api: Api, redis_server: RedisProcess, archive_dir: Path) -> None:
    r = redis_server.client()
    mid, players, joins = api.new_match(2, ruleset="classic", seed="archive-broken", **NO_TIMEOUTS)
    play_randomly(api, mid, players, random.Random(8), joins[-1])
    arc = archive.Archive(str(archive_dir))
    assert archive.archive_due(r, arc, retention_s=0).archived >= 1
    path = Path(arc.path(mid))
    good = path.read_bytes()
    try:
        for broken in (b"\x78\x9c garbage", None):
            if broken is None:
                path.unlink()
            else:
                path.write_bytes(broken)
            for url in (f"/v1/matches/{mid}", f"/v1/matches/{mid}/events"):
                resp = api.request("GET", url)
                assert resp.status_code == 503, (url, resp.status_code, resp.text[:300])
                body = error_of(resp)
                assert body["code"] == "archive_unavailable" and mid in body["message"]
            # a list of matches still answers, without the unreadable one
            listed = api.ok(api.request("GET", f"/v1/matches?player={players[0].id}"))
            assert [m["match_id"] for m in listed["matches"]] == []
    finally:
        path.write_bytes(good)
    assert api.summary(mid)["status"] == "finished"
