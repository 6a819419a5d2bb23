"""``Bot.run`` against the real server (gunicorn on a private Redis): four SDK bots play a 2019
four-player match to the end, one bot plays two matches at once, a bot process killed mid-match
and started again finishes its match, and retries through a connection-dropping proxy never
apply a move twice."""

from __future__ import annotations

import json
import os
import random
import secrets
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from llsdk import Bot, RunStats, View
from llsdk.cli import load_bot

from tests.support.dropproxy import DropProxy
from tests.support.sdkclient import Client
from tests.support.server import ApiServer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RANDOM_BOT = os.path.join(REPO, "examples", "bots", "random_bot.py")
COUNTING_BOT = os.path.join(REPO, "examples", "bots", "counting_bot.py")
NO_TIMEOUTS: dict[str, Any] = {"turn_timeout_s": 86400}


@pytest.fixture(scope="module")
def anon(api_server: ApiServer) -> Iterator[Client]:
    with Client(api_server.url) as c:
        yield c


def player(anon: Client, prefix: str = "b") -> tuple[Client, str]:
    p = anon.players.register(f"{prefix}-{secrets.token_hex(5)}")
    assert p.token
    return anon.with_token(p.token), p.token


def moves_by_seat(anon: Client, mid: str) -> Counter[int]:
    """Decisions per seat in the finished match's full record: plays and chancellor returns
    (timeouts excluded: nobody times out here)."""
    log = anon.matches.events(mid)
    assert all(not e.get("timeout") for e in log.events)
    return Counter(e.seat for e in log.events
                   if e.type in ("play", "chancellor_return") and e.seat is not None)


class Runner(threading.Thread):
    def __init__(self, bot: Bot, client: Client, **kw: Any) -> None:
        super().__init__(daemon=True)
        self.bot, self.client, self.kw = bot, client, kw
        self.stop = threading.Event()
        self.stats: RunStats | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.stats = self.bot.run(self.client, stop_event=self.stop,
                                      **{"poll_wait": 2, **self.kw})
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e


def finish(runners: list[Runner], timeout: float = 180) -> list[RunStats]:
    deadline = time.monotonic() + timeout
    for r in runners:
        r.join(max(0.1, deadline - time.monotonic()))
    for r in runners:
        r.stop.set()
    for r in runners:
        r.join(10)
        assert r.error is None, repr(r.error)
        assert not r.is_alive(), "a bot did not stop"
        assert r.stats is not None
    return [r.stats for r in runners if r.stats is not None]


def test_four_bots_play_a_2019_match_to_the_end(anon: Client) -> None:
    players = [player(anon, f"four{i}")[0] for i in range(4)]
    bots = [load_bot(COUNTING_BOT), load_bot(RANDOM_BOT), load_bot(COUNTING_BOT),
            load_bot(RANDOM_BOT)]
    # two bots are running before the match exists, two start once it has begun
    runners = [Runner(b, c, max_matches=1) for b, c in zip(bots, players, strict=True)]
    for r in runners[:2]:
        r.start()
    v = players[0].matches.create("2019", 4, **NO_TIMEOUTS)
    mid = v.match_id
    for c in players:
        c.matches.join(mid)
    for r in runners[2:]:
        r.start()
    stats = finish(runners)
    final = anon.matches.get(mid)
    assert final.status == "finished" and final.result is not None
    winners = final.result.winners
    assert max(final.result.tokens) >= 4
    assert [s.matches_finished for s in stats] == [1, 1, 1, 1]
    assert [s.wins for s in stats] == [int(i in winners) for i in range(4)]
    assert all(s.fallbacks == 0 for s in stats), stats
    by_seat = moves_by_seat(anon, mid)
    assert [s.moves for s in stats] == [by_seat[i] for i in range(4)]
    assert all(s.moves > 0 for s in stats)


def counting_requests(client: Client) -> list[str]:
    """Record every HTTP request ``client`` sends (its one request path ends in its session)."""
    sent: list[str] = []
    send = client.session.request

    def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        sent.append(f"{method} {url.split('/', 3)[-1]}")
        return send(method, url, *args, **kwargs)

    client.session.request = request  # type: ignore[method-assign]
    return sent


def test_bot_run_spends_at_most_2_1_requests_per_move(anon: Client) -> None:
    """The newest notice of a match carries the bot's view, so a move costs the notice and the
    action: two requests, plus a few per run (the notice cursor, the match list, the
    challenges) and none per match."""
    (a, token_a), (b, token_b) = player(anon, "rq"), player(anon, "rq")
    sent = [counting_requests(a), counting_requests(b)]
    runners = [Runner(load_bot(RANDOM_BOT), c, max_matches=3, poll_wait=25) for c in (a, b)]
    for r in runners:
        r.start()
    with anon.with_token(token_a) as host, anon.with_token(token_b) as guest:
        for _ in range(3):  # made by other clients: not counted
            mid = host.matches.create("classic", 2, **NO_TIMEOUTS).match_id
            host.matches.join(mid)
            guest.matches.join(mid)
    stats = finish(runners)
    assert [s.matches_finished for s in stats] == [3, 3]
    moves = sum(s.moves for s in stats)
    requests = sum(len(s) for s in sent)
    assert moves > 60
    assert requests / moves <= 2.1, (requests, moves, Counter(
        r.split("?")[0] for s in sent for r in s).most_common(8))


def test_one_bot_plays_two_matches_at_once(anon: Client) -> None:
    (x, _), (y, _), (z, _) = (player(anon, n) for n in ("x", "y", "z"))
    mids = []
    for other in (y, z):
        v = x.matches.create("classic", 2, **NO_TIMEOUTS)
        x.matches.join(v.match_id)
        other.matches.join(v.match_id)
        mids.append(v.match_id)
    starts: list[str] = []

    class Recording(Bot):
        inner = load_bot(COUNTING_BOT)

        def choose(self, view: View) -> Any:
            return self.inner.choose(view)

        def on_match_start(self, view: View) -> None:
            starts.append(view.match_id)

    runners = [Runner(Recording(), x, max_matches=2), Runner(load_bot(RANDOM_BOT), y,
               max_matches=1), Runner(load_bot(RANDOM_BOT), z, max_matches=1)]
    for r in runners:
        r.start()
    stats = finish(runners)
    assert stats[0].matches_finished == 2 and sorted(starts) == sorted(mids)
    for mid in mids:
        assert anon.matches.get(mid).finished


def test_bot_killed_mid_match_and_restarted_finishes_it(anon: Client,
                                                       api_server: ApiServer,
                                                       tmp_path: Any) -> None:
    a, token = player(anon, "killed")
    b, _ = player(anon, "human")
    v = a.matches.create("classic", 2, first_seat=0, **NO_TIMEOUTS)
    mid = v.match_id
    a.matches.join(mid)
    b.matches.join(mid)
    cmd = [sys.executable, RANDOM_BOT, "--url", api_server.url, "--token", token,
           "--max-matches", "1", "--poll-wait", "2", "--cursor-file",
           str(tmp_path / "cursor"), "-q"]
    rng = random.Random(3)

    def a_moves() -> int:
        return sum(1 for e in anon.matches.events(mid).events
                   if e.type == "play" and e.seat == 0)

    def b_plays_until_a_must_act(deadline: float) -> View:
        """B moves whenever it is its turn; returns once it is A's turn (or the end)."""
        vb = b.matches.view(mid)
        while time.monotonic() < deadline:
            if vb.finished or (vb.turn is not None and vb.turn.seat == 0):
                return vb
            if vb.my_turn:
                vb = b.matches.act(mid, rng.choice(vb.legal_actions))
            else:
                vb = b.matches.wait_view(mid, after=vb.version, wait=1)
        raise AssertionError("the match stalled")

    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while a_moves() < 3:  # let the bot play a few moves, then kill it without warning
            vb = b_plays_until_a_must_act(deadline)
            assert not vb.finished, "the match ended before the kill"
            if time.monotonic() > deadline:
                raise AssertionError("the bot does not play")
            b.matches.wait_view(mid, after=vb.version, wait=1)
        proc.kill()
        proc.wait(10)
        vb = b_plays_until_a_must_act(time.monotonic() + 60)
        if not vb.finished:  # nobody plays for the dead bot
            time.sleep(1.0)
            assert b.matches.view(mid).version == vb.version
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while not b_plays_until_a_must_act(deadline).finished:
            b.matches.wait_view(mid, after=b.matches.view(mid).version, wait=1)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, out.decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert anon.matches.get(mid).finished
    assert (tmp_path / "cursor").read_text().strip()


def test_lost_answers_never_double_a_move(anon: Client, api_server: ApiServer) -> None:
    """Every action of A goes through a proxy that forwards it to the server and then drops
    the connection: the client retries with the same Idempotency-Key and gets the original
    answer; each move is in the match exactly once."""
    a_direct, token = player(anon, "lossy")
    b, _ = player(anon, "steady")
    v = a_direct.matches.create("classic", 2, **NO_TIMEOUTS)
    mid = v.match_id
    a_direct.matches.join(mid)
    b.matches.join(mid)
    rng = random.Random(8)
    with DropProxy("127.0.0.1", api_server.port) as proxy:
        a = Client(proxy.url, token=token, backoff=0.01)
        sent = 0
        for _ in range(2000):
            va = a.matches.view(mid)
            if va.finished:
                break
            if va.my_turn:
                a.session.close()  # the action goes on a new connection: the dropped one
                proxy.drop_next()
                answer = a.matches.act(mid, rng.choice(va.legal_actions),
                                       expected_version=va.version)
                lost = proxy.dropped[-1]  # what the server answered the first attempt
                assert lost.status == 200
                assert answer.raw == json.loads(lost.body)  # the retry got that same answer
                assert answer.version == va.version + 1
                sent += 1
            else:
                vb = b.matches.view(mid)
                if vb.my_turn:
                    b.matches.act(mid, rng.choice(vb.legal_actions))
        assert a.matches.view(mid).finished
        assert len(proxy.dropped) == sent > 3
        assert moves_by_seat(anon, mid)[0] == sent


def test_a_bot_through_a_flaky_connection_plays_each_move_once(anon: Client,
                                                               api_server: ApiServer) -> None:
    """Bot.run on a connection that loses answers at random (long-polls, views and actions
    alike): the match finishes, and the record holds exactly the moves the bot made."""
    a_direct, token = player(anon, "flaky")
    b, _ = player(anon, "solid")
    v = a_direct.matches.create("2019", 2, **NO_TIMEOUTS)
    a_direct.matches.join(v.match_id)
    b.matches.join(v.match_id)
    with DropProxy("127.0.0.1", api_server.port) as proxy:
        a = Client(proxy.url, token=token, backoff=0.01, max_retries=10)
        a.session.headers["Connection"] = "close"  # a new connection per request
        stop = threading.Event()

        def chaos() -> None:  # lose the answer of every third connection
            seen = proxy.connections
            while not stop.wait(0.005):
                if proxy.connections - seen >= 3:
                    seen = proxy.connections
                    proxy.drop_next()

        chaos_thread = threading.Thread(target=chaos, daemon=True)
        chaos_thread.start()
        runners = [Runner(load_bot(COUNTING_BOT), a, max_matches=1),
                   Runner(load_bot(RANDOM_BOT), b, max_matches=1)]
        for r in runners:
            r.start()
        try:
            stats = finish(runners)
        finally:
            stop.set()
        assert len(proxy.dropped) > 5, "the proxy dropped too little to test anything"
    assert anon.matches.get(v.match_id).finished
    by_seat = moves_by_seat(anon, v.match_id)
    assert [s.moves for s in stats] == [by_seat[0], by_seat[1]]
    assert stats[0].fallbacks == 0
