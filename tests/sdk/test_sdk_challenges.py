"""Challenges through the SDK against the real server (gunicorn on a private Redis): a running
``Bot`` accepts a challenge and plays the match to its end; ``accept_challenge`` can decline;
a challenge sent while the bot was down is answered when it starts; a running bot is listed
online as accepting challenges; the ``llsdk challenge`` command."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from llsdk import Bot, Challenge, View
from llsdk.models import Action

from tests.sdk.test_sdk_bots import Runner, finish
from tests.support.sdkclient import Client
from tests.support.server import ApiServer

pytestmark = pytest.mark.timeout(240)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class FirstLegal(Bot):
    def choose(self, view: View) -> Action:
        return view.legal_actions[0]


class ClassicOnly(FirstLegal):
    rulesets = ("classic",)


@pytest.fixture(scope="module")
def anon(api_server: ApiServer) -> Iterator[Client]:
    with Client(api_server.url) as c:
        yield c


def player(anon: Client, prefix: str = "c") -> tuple[Client, str, str]:
    p = anon.players.register(f"{prefix}-{secrets.token_hex(5)}")
    assert p.token
    return anon.with_token(p.token), p.name, p.id


def wait_for(fn: object, timeout: float = 60.0) -> Challenge:
    end = time.monotonic() + timeout
    while True:
        ch = fn()  # type: ignore[operator]
        if not ch.open or time.monotonic() > end:
            return ch  # type: ignore[no-any-return]
        time.sleep(0.1)


def test_a_bot_accepts_a_challenge_and_plays_it_to_the_end(anon: Client) -> None:
    bot_client, bot_name, bot_id = player(anon, "acceptor")
    me, my_name, my_id = player(anon, "challenger")
    bot = Runner(FirstLegal(), bot_client, max_matches=1)
    bot.start()
    # the challenger plays its own seat with a bot that answers no challenge of its own
    mine = Runner(FirstLegal(), me, max_matches=1, challenges=False)
    mine.start()
    end = time.monotonic() + 30
    while not any(p.id == bot_id and p.accepts_challenges for p in anon.players.online(500)):
        assert time.monotonic() < end, "the running bot never showed as accepting challenges"
        time.sleep(0.1)
    ch = me.challenges.create(bot_name, "2019", turn_timeout_s=60, tokens_to_win=2)
    assert ch.open and ch.opponents[0].name == bot_name and ch.ruleset == "2019"
    done = wait_for(lambda: me.challenges.get(ch.id))
    assert done.status == "accepted" and done.match_id and done.closed_by == bot_id
    bot_stats, my_stats = finish([bot, mine])
    assert bot_stats.challenges_accepted == 1 and bot_stats.matches_finished == 1
    assert my_stats.challenges_accepted == 0 and my_stats.matches_finished == 1
    final = anon.matches.get(done.match_id)
    assert final.status == "finished" and final.result is not None
    assert {p.player_id for p in final.players} == {bot_id, my_id}
    # every move of its seat in the record is one the bot made (none if the deal ended the
    # match before its first turn: a Guard, or the 2019 spy's token, in round 1)
    seat = next(p.seat for p in final.players if p.player_id == bot_id)
    record = anon.matches.events(done.match_id).events
    moved = [e for e in record if e.type in ("play", "chancellor_return")
             and e.data.get("seat") == seat and not e.data.get("timeout")]
    assert bot_stats.fallbacks == 0 and bot_stats.moves == len(moved), (bot_stats, moved)
    assert my_stats.moves + bot_stats.moves > 0
    assert final.raw["rated"] is False and final.raw["options"]["tokens_to_win"] == 2


def test_accept_challenge_can_say_no(anon: Client) -> None:
    bot_client, bot_name, _ = player(anon, "picky")
    me, _, _ = player(anon, "asker")
    bot = Runner(ClassicOnly(), bot_client)
    bot.start()
    try:
        no = me.challenges.create(bot_name, "2019")
        assert wait_for(lambda: me.challenges.get(no.id)).status == "declined"
        yes = me.challenges.create(bot_name, "classic")
        accepted = wait_for(lambda: me.challenges.get(yes.id))
        assert accepted.status == "accepted" and accepted.match_id
        me.matches.resign(accepted.match_id)  # nobody plays our side: end it
    finally:
        bot.stop.set()
        stats = finish([bot], timeout=15)[0]
    assert (stats.challenges_accepted, stats.challenges_declined) == (1, 1)


def test_a_challenge_made_while_the_bot_was_down_is_answered_at_start(anon: Client) -> None:
    bot_client, bot_name, _ = player(anon, "sleeper")
    me, _, _ = player(anon, "early")
    ch = me.challenges.create(bot_name, expires_in_s=120)
    assert me.challenges.list().outgoing[0].id == ch.id
    bot = Runner(FirstLegal(), bot_client)
    bot.start()
    try:
        accepted = wait_for(lambda: me.challenges.get(ch.id))
        assert accepted.status == "accepted"
        assert accepted.match_id is not None
        me.matches.resign(accepted.match_id)
    finally:
        bot.stop.set()
        finish([bot], timeout=15)


def test_llsdk_challenge_command(anon: Client, api_server: ApiServer) -> None:
    bot_client, bot_name, _ = player(anon, "cli-target")
    reg = anon.players.register(f"cli-{secrets.token_hex(5)}")
    bot = Runner(FirstLegal(), bot_client)
    bot.start()
    try:
        env = {**os.environ, "LLSDK_URL": api_server.url, "LLSDK_TOKEN": str(reg.token)}
        out = subprocess.run(
            [sys.executable, "-m", "llsdk", "challenge", bot_name, "--ruleset", "classic",
             "--turn-timeout", "60", "--wait", "30"],
            capture_output=True, text=True, env=env, timeout=60, cwd=REPO)
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout)
        assert got["status"] == "accepted" and got["match_id"], got
        assert got["options"]["turn_timeout_s"] == 60
        # refused: a clear message and exit status 1
        bad = subprocess.run([sys.executable, "-m", "llsdk", "challenge", "nobody-at-all-x"],
                             capture_output=True, text=True, env=env, timeout=60, cwd=REPO)
        assert bad.returncode == 1 and "player_not_found" in bad.stderr, bad
        anon.with_token(str(reg.token)).matches.resign(got["match_id"])
    finally:
        bot.stop.set()
        finish([bot], timeout=15)
