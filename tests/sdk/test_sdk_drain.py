"""A graceful stop (issue 27, item 3): the first Ctrl-C / SIGTERM / ``drain_event`` leaves the
ladders and finishes the matches in progress; a second signal or the drain limit stops at once
without resigning, and the bot restarted with the same token plays its match on."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import requests
from llsdk import Action, Bot, RunStats, View

from tests.support import venv_executable
from tests.support.sdkclient import Client
from tests.support.server import ApiServer

REPO = Path(__file__).resolve().parents[2]


class Slow(Bot):
    """Plays the first legal action after a pause, so that a match lasts a few seconds."""

    def __init__(self, pause: float = 0.05) -> None:
        self.pause = pause

    def choose(self, view: View) -> Action:
        time.sleep(self.pause)
        return view.legal_actions[0]


def wait_until(cond: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


def entered(url: str, ladder: str, pid: str) -> bool:
    rows = requests.get(f"{url}/v1/ladders/{ladder}", timeout=10).json()["leaderboard"]
    return any(r["player_id"] == pid and r["entered"] for r in rows)


def a_match(url: str, tag: str) -> tuple[str, Client, Client, str]:
    """A classic 2-player match between two new players (long turns: no timeout plays)."""
    anon = Client(url)
    a = anon.with_token(anon.players.register(f"drain-a-{tag}").token or "")
    b = anon.with_token(anon.players.register(f"drain-b-{tag}").token or "")
    mid = a.matches.create("classic", 2, turn_timeout_s=600).match_id
    a.matches.join(mid)
    b.matches.join(mid)
    return mid, a, b, a.me.get().id


def server_played(url: str, mid: str) -> list[dict[str, object]]:
    events = requests.get(f"{url}/v1/matches/{mid}/events", timeout=10).json()["events"]
    return [e for e in events if e["type"] in ("play", "forfeit")]


def test_the_first_stop_finishes_the_match_in_progress_and_leaves_the_ladder_at_once(
        api_server: ApiServer) -> None:
    url = api_server.url
    mid, a, b, a_id = a_match(url, "finish")
    drain = threading.Event()
    stats: list[RunStats] = []
    runner = threading.Thread(target=lambda: stats.append(Slow(0.1).run(
        a, ladders=["duel"], drain_event=drain, poll_wait=5.0)), daemon=True)
    opponent_stop = threading.Event()
    opponent = threading.Thread(target=lambda: Slow(0.1).run(
        b, stop_event=opponent_stop, poll_wait=5.0), daemon=True)
    runner.start()
    opponent.start()
    try:
        wait_until(lambda: entered(url, "duel", a_id), "the bot to enter the ladder")
        wait_until(lambda: len(server_played(url, mid)) >= 4, "a few moves")
        assert a.matches.view(mid).status == "active"
        drain.set()
        # it leaves the ladder first (never seated again), while its match goes on
        wait_until(lambda: not entered(url, "duel", a_id), "the bot to leave the ladder", 10)
        runner.join(timeout=120)
        assert not runner.is_alive(), "the drained bot did not stop after its match"
        final = a.matches.view(mid)
        assert final.status == "finished"
        assert stats and stats[0].matches_finished == 1
        # the bot played its own moves to the end: no forfeit, no move made by the server
        played = server_played(url, mid)
        assert not any(e.get("timeout") or e["type"] == "forfeit" for e in played), played
    finally:
        opponent_stop.set()
        opponent.join(timeout=10)


def test_the_drain_limit_stops_without_resigning_and_a_restart_plays_on(
        api_server: ApiServer) -> None:
    url = api_server.url
    mid, a, b, _ = a_match(url, "limit")
    # b never moves while a drains: a's match can't finish within the limit
    if b.matches.view(mid).my_turn:
        b.matches.act(mid, b.matches.view(mid).legal_actions[0])
    drain = threading.Event()
    drain.set()  # a stop is asked for right away: the match in progress is what holds it
    done = threading.Event()
    threading.Thread(target=lambda: (Slow(0).run(a, drain_event=drain, drain_s=1.5,
                                                  poll_wait=5.0), done.set()),
                     daemon=True).start()
    assert done.wait(30), "the drain limit did not stop the bot"
    a = a.with_token(a.token or "")  # (the test's own reads: never cut by the runner's watcher)
    view = a.matches.view(mid)
    assert view.status == "active", "the match was resigned or ended at the drain limit"
    assert not any(e["type"] == "forfeit" for e in server_played(url, mid))
    # b moves; the bot, restarted with the same token, picks its match up and plays its turn
    bv = b.matches.view(mid)
    while bv.my_turn:
        bv = b.matches.act(mid, bv.legal_actions[0])
    assert a.matches.view(mid).my_turn  # the bot's turn, with nobody playing it
    before = len(server_played(url, mid))
    stop = threading.Event()
    again = threading.Thread(target=lambda: Slow(0).run(a, stop_event=stop, poll_wait=2.0),
                             daemon=True)
    again.start()
    try:
        wait_until(lambda: a.matches.view(mid).status == "finished" or
                   len(server_played(url, mid)) > before,
                   "the restarted bot to play its turn", 30)
    finally:
        stop.set()
        again.join(timeout=10)


def test_llsdk_play_drains_on_the_first_signal_and_stops_on_the_second(
        api_server: ApiServer, tmp_path: Path) -> None:
    url = api_server.url
    mid, a, b, _ = a_match(url, "cli")
    log = tmp_path / "play.log"
    env = dict(os.environ, LLSDK_URL=url, LLSDK_TOKEN=a.token or "", PYTHONUNBUFFERED="1")
    with open(log, "ab") as f:
        proc = subprocess.Popen(
            [venv_executable("llsdk"), "play", str(REPO / "examples" / "bots" / "random_bot.py"),
             "--poll-wait", "5", "--drain", "120"],
            cwd=REPO, env=env, stdout=f, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: "started" in log.read_text(), "the match to start in the log")
        # the opponent (b) holds its turn: the match can't finish while the bot drains
        proc.send_signal(signal.SIGINT)
        wait_until(lambda: "finishing 1 match(es) in progress" in log.read_text(),
                   "the drain message")
        assert proc.poll() is None, log.read_text()
        proc.send_signal(signal.SIGTERM)  # a second signal: stop now
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 0, log.read_text()
    assert a.matches.view(mid).status == "active", "a stop resigned the match"
