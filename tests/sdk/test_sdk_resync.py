"""``Bot.run`` against the real server (gunicorn on a private Redis) when the inbox fails it
(issue 23, item 4): a notice cursor older than what the server keeps (410 cursor_expired) makes
it resynchronise from its match list and go on from ``oldest_cursor``, and it plays at most
``max_challenge_matches`` challenge matches at once, declining the rest with a reason the
challenger sees."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from llsdk import Bot, CursorExpired, View
from llsdk.models import Action

from service.store import inbox
from tests.sdk.test_sdk_bots import Runner, finish
from tests.support.redis_proc import RedisProcess
from tests.support.sdkclient import Client
from tests.support.server import ApiServer

pytestmark = pytest.mark.timeout(240)

NO_TIMEOUTS = {"turn_timeout_s": 86400, "timeout_policy": "auto"}


class FirstLegal(Bot):
    def choose(self, view: View) -> Action:
        return view.legal_actions[0]


@pytest.fixture(scope="module")
def anon(api_server: ApiServer) -> Iterator[Client]:
    with Client(api_server.url) as c:
        yield c


def player(anon: Client, prefix: str) -> tuple[Client, str, str]:
    p = anon.players.register(f"{prefix}-{secrets.token_hex(5)}")
    assert p.token
    return anon.with_token(p.token), p.name, p.id


def flood(redis_server: RedisProcess, pid: str, n: int) -> None:
    """``n`` notices of no match (a kind this SDK ignores) into the player's inbox, trimmed as
    the server trims it."""
    r = redis_server.client()
    try:
        pipe = r.pipeline()
        for i in range(n):
            pipe.xadd(inbox.key(pid), {"n": orjson.dumps({"type": "noise", "n": i})},
                      maxlen=inbox.MAXLEN, approximate=True)
        pipe.execute()
    finally:
        r.close()


def test_bot_run_resyncs_when_its_notice_cursor_expired(
        anon: Client, redis_server: RedisProcess, tmp_path: Path) -> None:
    late, _, late_id = player(anon, "late")
    other, _, _ = player(anon, "other")
    flood(redis_server, late_id, 1)
    cursor = late.me.head()
    flood(redis_server, late_id, inbox.MAXLEN + 300)  # while it was away
    with pytest.raises(CursorExpired) as e:
        late.me.events(after=cursor)
    assert e.value.status == 410 and e.value.oldest_cursor
    assert late.me.events(after=e.value.oldest_cursor).events  # what is kept, from there
    cursor_file = tmp_path / "cursor"
    cursor_file.write_text(cursor + "\n")
    v = other.matches.create("classic", 2, **NO_TIMEOUTS)
    other.matches.join(v.match_id)
    late.matches.join(v.match_id)
    bots = [Runner(FirstLegal(), late, max_matches=1, cursor_file=str(cursor_file)),
            Runner(FirstLegal(), other, max_matches=1)]
    for b in bots:
        b.start()
    late_stats, other_stats = finish(bots)
    assert late_stats.resyncs == 1 and late_stats.matches_finished == 1
    assert other_stats.resyncs == 0 and other_stats.matches_finished == 1
    assert anon.matches.get(v.match_id).status == "finished"
    saved = cursor_file.read_text().strip()
    assert tuple(map(int, saved.split("-"))) > tuple(map(int, cursor.split("-")))


def test_bot_run_declines_challenges_beyond_max_challenge_matches(anon: Client) -> None:
    bot_client, bot_name, _ = player(anon, "popular")
    first, _, _ = player(anon, "first")
    second, _, _ = player(anon, "second")
    runner = Runner(FirstLegal(), bot_client, max_challenge_matches=1)
    runner.start()
    try:
        end = time.monotonic() + 30
        while not any(p.name == bot_name and p.accepts_challenges
                      for p in anon.players.online(500)):
            assert time.monotonic() < end, "the bot never listened for challenges"
            time.sleep(0.1)
        # the first challenger never moves: its match stays in play
        one = first.challenges.create(bot_name, "classic", **NO_TIMEOUTS)
        taken = wait_closed(first, one.id)
        assert taken.status == "accepted" and taken.match_id
        two = second.challenges.create(bot_name, "classic", **NO_TIMEOUTS)
        refused = wait_closed(second, two.id)
        assert refused.status == "declined"
        assert refused.reason is not None and refused.reason.startswith("busy")
        assert "at most 1" in refused.reason
    finally:
        runner.stop.set()
        runner.join(10)
    assert runner.error is None and runner.stats is not None
    assert runner.stats.challenges_accepted == 1 and runner.stats.challenges_declined == 1


def wait_closed(client: Client, cid: str, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while True:
        ch = client.challenges.get(cid)
        if not ch.open or time.monotonic() > end:
            return ch
        time.sleep(0.1)
