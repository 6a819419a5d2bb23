"""``python -m service.ops.house_bots`` (the compose ``house-bots`` service), run for real: the
example bots register once (tokens kept in Redis), enter the ladders, play, accept challenges,
and stop on SIGTERM."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from service.ops import house_bots
from service.store import players
from service.store.errors import StoreError
from tests.support.redis_proc import RedisProcess
from tests.support.server import ApiServer

REPO = Path(__file__).resolve().parents[2]


def _start(api_server: ApiServer, redis_server: RedisProcess, log: Path,
           extra: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    env = dict(os.environ, LLSDK_URL=api_server.url, REDIS_URL=redis_server.url,
               HOUSE_BOTS_FILES="random_bot,counting_bot,search_bot", HOUSE_BOTS_COPIES="1",
               HOUSE_BOTS_BUDGET_MS="20",
               HOUSE_BOTS_LADDERS="duel", HOUSE_BOTS_POLL_WAIT="1")
    env.update(extra or {})
    with open(log, "ab") as f:
        return subprocess.Popen([sys.executable, "-m", "service.ops.house_bots"], cwd=REPO, env=env,
                                stdout=f, stderr=subprocess.STDOUT, start_new_session=True)


def _entered(api_server: ApiServer) -> dict[str, str]:
    board = requests.get(f"{api_server.url}/v1/ladders/duel", timeout=10).json()["leaderboard"]
    return {row["name"]: row["player_id"] for row in board if row.get("entered")}


def _accepted_challenge(url: str, house: str, who: str) -> tuple[dict[str, str], str]:
    """A new player ``who-...`` challenges ``house``, which accepts: its auth header and the
    match that started."""
    me = requests.post(f"{url}/v1/players", json={"name": f"{who}-{time.time_ns() % 10**9}"},
                       timeout=10).json()
    auth = {"Authorization": f"Bearer {me['token']}"}
    ch = requests.post(f"{url}/v1/challenges", json={"opponents": [house]}, headers=auth,
                       timeout=10).json()
    end = time.monotonic() + 30
    while ch.get("status") == "open" and time.monotonic() < end:
        time.sleep(0.2)
        ch = requests.get(f"{url}/v1/challenges/{ch['challenge_id']}", headers=auth,
                          timeout=10).json()
    assert ch["status"] == "accepted" and ch["match_id"], ch
    return auth, ch["match_id"]


def _challenge_is_accepted(api_server: ApiServer, house: str) -> None:
    """Anyone may challenge a running house bot: it accepts and the match starts."""
    auth, mid = _accepted_challenge(api_server.url, house, "visitor")
    requests.post(f"{api_server.url}/v1/matches/{mid}/resign", headers=auth, timeout=10)


def _stop(proc: subprocess.Popen[bytes]) -> int:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        return proc.wait(timeout=40)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
        raise


def test_house_bots_enter_the_ladder_and_keep_their_players(
        api_server: ApiServer, redis_server: RedisProcess, tmp_path: Path) -> None:
    log = tmp_path / "house_bots.log"
    want = {"house-random-1", "house-counting-1", "house-search-1"}
    ids: dict[str, str] = {}
    for run in range(2):
        proc = _start(api_server, redis_server, log)
        try:
            end = time.monotonic() + 30
            # (entries stay from the first run: wait for this run's bots to be playing)
            while time.monotonic() < end and not (
                    log.read_text().count(" plays as ") == 3 * (run + 1)
                    and want <= set(_entered(api_server))):
                assert proc.poll() is None, log.read_text()
                time.sleep(0.2)
            entered = _entered(api_server)
            assert want <= set(entered), (entered, log.read_text())
            if run == 0:
                ids = {n: entered[n] for n in want}
            else:  # the restart played on as the same players (tokens kept in Redis)
                assert {n: entered[n] for n in want} == ids
                _challenge_is_accepted(api_server, "house-counting-1")
                _challenge_is_accepted(api_server, "house-search-1")
        finally:
            code = _stop(proc)
        assert code == 0, log.read_text()
    r = redis_server.client()
    try:
        assert {k.decode() for k in r.hkeys("ll:house_bots")} >= want
    finally:
        r.close()


def test_a_taken_or_stale_name_never_stops_the_house_bots(
        api_server: ApiServer, redis_server: RedisProcess, tmp_path: Path) -> None:
    """``house-random-1`` held by a player the house bots have no token for (made before the
    namespace was reserved, say) and a kept token for ``house-counting-1`` that no longer works:
    the bots still start, one under the next free name, and the process keeps running. Nobody
    else can take a house name over HTTP."""
    from service.store import players

    r = redis_server.client()
    try:
        r.delete("ll:house_bots")
        try:
            players.register(r, "house-random-1", house=True)  # a squatter from before
        except Exception:  # noqa: BLE001 - already taken (by the test above): just as good
            pass
        r.hset("ll:house_bots", "house-counting-1", "llt_a-token-nobody-has")
        refused = requests.post(f"{api_server.url}/v1/players", json={"name": "house-random-2"},
                                timeout=10)
        assert refused.status_code == 422 and refused.json()["code"] == "name_reserved"
        log = tmp_path / "house_bots.log"
        proc = _start(api_server, redis_server, log)
        try:
            end = time.monotonic() + 30
            while time.monotonic() < end and log.read_text().count(" plays as ") < 3:
                assert proc.poll() is None, log.read_text()
                time.sleep(0.2)
            text = log.read_text()
            assert text.count(" plays as ") == 3, text  # random, counting and search
            assert "house-random-1 is taken" in text
            assert "kept token no longer works" in text
            assert "house-random-1 (RandomBot) plays as house-random-1-2 " in text  # the real name
            # (house-counting-1 itself is taken too when the test above ran first)
            counting = {"house-counting-1", "house-counting-1-2"}
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not (
                    "house-random-1-2" in _entered(api_server)
                    and counting & set(_entered(api_server))):
                time.sleep(0.2)
            entered = set(_entered(api_server))
            assert "house-random-1-2" in entered and counting & entered, (entered, text)
            assert proc.poll() is None
        finally:
            code = _stop(proc)
        assert code == 0, log.read_text()
        kept = {k.decode(): v.decode() for k, v in r.hgetall("ll:house_bots").items()}
        assert kept["house-counting-1"] != "llt_a-token-nobody-has"
        assert players.authenticate(r, kept["house-random-1"]) is not None
    finally:
        r.close()


def test_a_house_bot_started_during_a_redis_outage_gets_its_player_once_redis_is_back(
        caplog: pytest.LogCaptureFixture) -> None:
    """The house bots may start in the middle of an outage (the stack restarts them, or Redis
    fails over while they start): each keeps trying, with warnings and no traceback, and gets
    its player within seconds of Redis coming back instead of sitting out until a restart."""
    rp = RedisProcess().start()
    try:
        store = rp.client()
        rp.kill()
        stop = threading.Event()
        got: list[str | None] = []
        with caplog.at_level(logging.WARNING, logger="service.ops.house_bots"):
            t = threading.Thread(target=lambda: got.append(house_bots.player_token_retrying(
                None, store, "house-test-1", stop)))
            t.start()
            time.sleep(1.6)  # a few tries against the dead server
            assert t.is_alive() and not got
            rp.revive()
            t.join(house_bots.RETRY_MAX_S + 5)
        assert not t.is_alive() and got and got[0]
        tries = [r for r in caplog.records if "cannot get a player yet" in r.getMessage()]
        assert len(tries) >= 2 and all(r.exc_info is None for r in tries)
        assert store.hget(house_bots.TOKENS_KEY, "house-test-1") == got[0].encode()
        assert players.authenticate(store, got[0]) is not None
        store.close()
    finally:
        rp.stop()


def test_a_house_bot_that_cannot_get_a_player_for_good_reasons_does_not_retry() -> None:
    """Only unreachability is retried: any other error (here a refused name: the store raises
    for a name outside the rules) is raised at once for main() to log, so a bug never loops."""
    rp = RedisProcess().start()
    try:
        store = rp.client()
        with pytest.raises(StoreError):
            house_bots.player_token_retrying(None, store, "x" * 500, threading.Event())
        assert store.hget(house_bots.TOKENS_KEY, "x" * 500) is None
        store.close()
    finally:
        rp.stop()


def test_the_first_sigterm_lets_a_house_bot_finish_its_match_and_a_second_stops_at_once(
        api_server: ApiServer, redis_server: RedisProcess, tmp_path: Path) -> None:
    """Issue 27, item 3: a house bot in a challenge match whose opponent (this test) holds the
    turn keeps playing after the first SIGTERM; the process exits once the match is over, and
    nothing was resigned or played by the server for it."""
    url = api_server.url
    log = tmp_path / "house_bots.log"
    env_extra = {"HOUSE_BOTS_FILES": "random_bot", "HOUSE_BOTS_DRAIN_S": "120"}
    proc = _start(api_server, redis_server, log, env_extra)
    try:
        end = time.monotonic() + 30
        while "plays as" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < end, log.read_text()
            time.sleep(0.2)
        house = log.read_text().split(" plays as ", 1)[1].split(" on ", 1)[0]
        auth, mid = _accepted_challenge(url, house, "drainer")
        os.killpg(proc.pid, signal.SIGTERM)
        end = time.monotonic() + 30
        while "finish their matches" not in log.read_text():
            assert time.monotonic() < end, log.read_text()
            time.sleep(0.1)
        # play our side to the end, while the house bot plays its own
        end = time.monotonic() + 120
        view = requests.get(f"{url}/v1/matches/{mid}/view", headers=auth, timeout=10).json()
        while view["status"] == "active":
            assert time.monotonic() < end, "the match did not end"
            assert proc.poll() is None, f"it stopped with its match unfinished:\n{log.read_text()}"
            if view["legal_actions"]:
                requests.post(f"{url}/v1/matches/{mid}/actions", headers=auth, timeout=10,
                              json={**view["legal_actions"][0],
                                    "expected_version": view["version"]})
            view = requests.get(f"{url}/v1/matches/{mid}/view",
                                params={"wait": "2", "after": str(view["version"])},
                                headers=auth, timeout=20).json()
        assert proc.wait(timeout=30) == 0, log.read_text()
        events = requests.get(f"{url}/v1/matches/{mid}/events", timeout=10).json()["events"]
        assert not [e for e in events if e["type"] == "forfeit" or e.get("timeout")], events
    finally:
        if proc.poll() is None:
            _stop(proc)
