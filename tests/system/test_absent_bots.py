"""Absent bots don't lose rated games (issue 11, item 2), on the whole stack (gunicorn with 2
workers, the deadline worker, the cron process forming ladder matches every second) with real
``llsdk play`` processes:

- SIGTERM: ``llsdk play`` cuts its 25-s long-poll, leaves its ladder and exits within 2 s; it
  is never seated again (its rating and games stay as they were).
- SIGKILL (no chance to leave): the server sees the closed long-poll, the bot stops counting
  as present within the presence window, and it is not seated again.
- The abort rule: a rated match in which a seat never moved before its first timeout ends
  unrated for everyone, says so on the API (summary, views, lists, rating history), and the
  absent bot is benched until it polls again. The test forms that match itself (the ``abort``
  ladder's own interval is an hour) on a known deal in which the absent bot moves first (from
  round 2 on a timeout is a timeout, not an abort).

The rules themselves (what aborts, what still counts) are tested on the store in
tests/store/test_abort_rule.py (store level)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llsdk import Bot
from llsdk.cli import load_bot

from service.store.docs import FINISHED
from service.store.ladder_config import LadderConfig
from tests.support import venv_executable
from tests.support.live import absent_first
from tests.support.sdkclient import Client
from tests.support.stack import WholeStack, running_stack, wait_for

pytestmark = pytest.mark.timeout(240)

REPO = Path(__file__).resolve().parents[2]
T = 3
LADDERS: list[dict[str, Any]] = [
    {"name": "quit", "ruleset": "classic", "seats": 2, "interval_s": 1},
    {"name": "gone", "ruleset": "classic", "seats": 2, "interval_s": 1},
    {"name": "abort", "ruleset": "classic", "seats": 2, "interval_s": 3600},
]
WINDOW = 5  # the default presence window (s)
ENV = {"LADDERS": json.dumps(LADDERS), "LADDER_TURN_TIMEOUT_S": str(T), "EXPECT_WORKERS": "1"}
ABORT = LadderConfig(**LADDERS[2], turn_timeout_s=T)  # as the stack's processes read it


class Stack(WholeStack):
    def row(self, ladder: str, pid: str) -> dict[str, Any]:
        """The bot's leaderboard row (a bare one while it has neither entered nor played)."""
        rows = self.get(f"/v1/ladders/{ladder}")["leaderboard"]
        return next((r for r in rows if r["player_id"] == pid),
                    {"player_id": pid, "games": 0, "entered": False, "present": False,
                     "active_matches": 0, "benched": False})


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with running_stack(ENV, cls=Stack) as s:
        s.first_pass_done("abort")  # (while RQ still keeps the job's result: 60 s)
        yield s


class BotThread:
    """A random SDK bot playing ``Bot.run`` on ladders in a thread."""

    def __init__(self, stack: Stack, name: str, ladders: list[str]) -> None:
        self.id, token = stack.register(name)
        self.client = Client(stack.url, token)
        self.bot: Bot = load_bot(str(REPO / "examples" / "bots" / "random_bot.py"))
        self.ladders = ladders
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(ladders,), daemon=True)
        self.thread.start()

    def _run(self, ladders: list[str]) -> None:
        try:
            self.bot.run(self.client, ladders=ladders, stop_event=self.stop, poll_wait=5.0)
        except BaseException as e:  # noqa: BLE001 - reported by close()
            self.error = e

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        assert not self.thread.is_alive(), "Bot.run did not stop"
        # Bot.run left the ladders within its 1-s budget, or tried to; leave again, unhurried:
        # once a leave has answered, no scheduling pass seats this bot any more (a busy run:
        # a pass seated it after Bot.run stopped, and the match was rated after the test read
        # the other bot's row)
        for name in self.ladders:
            self.client.ladder.leave(name)
        self.client.close()
        assert self.error is None, repr(self.error)


def llsdk_play(stack: Stack, token: str, ladder: str, log: Path) -> subprocess.Popen[bytes]:
    """``llsdk play random_bot.py --ladder L`` with a 25-s long-poll, as a user would run it."""
    env = dict(os.environ, LLSDK_URL=stack.url, LLSDK_TOKEN=token, PYTHONUNBUFFERED="1")
    with open(log, "ab") as f:
        return subprocess.Popen(
            [venv_executable("llsdk"), "play", str(REPO / "examples" / "bots" / "random_bot.py"),
             "--ladder", ladder, "--poll-wait", "25"],
            cwd=REPO, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)


def matches_while_a_partner_waits(stack: Stack, ladder: str, pid: str, seconds: float) -> list[str]:
    """Put a fresh partner on the ladder for ``seconds`` (several scheduling passes), then
    return the ids of the ladder's matches of ``pid``: a bot that is gone gets no new one."""
    partner = BotThread(stack, f"{ladder}-partner-2", [ladder])
    try:
        time.sleep(seconds)
    finally:
        partner.close()
    return [d.id for d in stack.ladder_matches(ladder, pid)]


def play_then_idle(stack: Stack, ladder: str, pid: str, proc: subprocess.Popen[bytes],
                   log: Path) -> dict[str, Any]:
    """Let the bot play a rated match against a partner, then take the partner away and wait
    until the bot sits idle (entered, present, in its long-poll, no match running)."""
    partner = BotThread(stack, f"{ladder}-partner", [ladder])
    try:
        wait_for("a finished rated match", lambda: stack.row(ladder, pid)["games"] >= 1
                 or (proc.poll() is not None and pytest.fail(log.read_text())), timeout=180)
    finally:
        partner.close()  # it leaves the ladder
    row = wait_for("the bot to sit idle", lambda: (r := stack.row(ladder, pid))[
        "active_matches"] == 0 and r["games"] >= 1 and r, timeout=120)
    assert row["entered"] and row["present"], row
    time.sleep(1.0)  # well inside its 25-s long-poll
    assert proc.poll() is None, log.read_text()
    return row


def test_sigterm_llsdk_play_leaves_the_ladder_within_2s_and_loses_nothing_after(
        stack: Stack, tmp_path: Path) -> None:
    log = tmp_path / "play.log"
    pid, token = stack.register("quitter")
    proc = llsdk_play(stack, token, "quit", log)
    try:
        before = play_then_idle(stack, "quit", pid, proc, log)
        played = [d.id for d in stack.ladder_matches("quit", pid)]
        stopped = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        elapsed = time.monotonic() - stopped
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = log.read_text()
    assert code == 0, out
    assert elapsed <= 2.0, f"llsdk play took {elapsed:.2f} s to exit on SIGTERM:\n{out}"
    assert "left ladder quit" in out, out
    row = stack.row("quit", pid)
    assert not row["entered"], row
    # a new partner is there and free for several scheduling passes: nobody seats the quitter
    assert matches_while_a_partner_waits(stack, "quit", pid, seconds=6) == played
    after = stack.row("quit", pid)
    for k in ("games", "rating", "wins", "timeouts"):
        assert after[k] == before[k], (k, before, after)


def test_a_killed_bot_stops_counting_as_present_and_is_not_seated(stack: Stack,
                                                                  tmp_path: Path) -> None:
    log = tmp_path / "play.log"
    pid, token = stack.register("crasher")
    proc = llsdk_play(stack, token, "gone", log)
    try:
        before = play_then_idle(stack, "gone", pid, proc, log)
        played = [d.id for d in stack.ladder_matches("gone", pid)]
        os.killpg(proc.pid, signal.SIGKILL)  # no chance to leave the ladder
        killed = time.monotonic()
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # its 25-s long-poll is closed: the server notices (every 2 s) and stops refreshing its
    # presence, which lapses after the 5-s window
    wait_for("the killed bot to be absent", lambda: not stack.row("gone", pid)["present"],
             timeout=20)
    gone_after = time.monotonic() - killed
    assert gone_after < 25 - 5, f"present for {gone_after:.1f} s: the open poll kept it"
    row = stack.row("gone", pid)
    assert row["entered"], "it never left (it was killed)"
    assert matches_while_a_partner_waits(stack, "gone", pid, seconds=5) == played
    assert stack.row("gone", pid)["games"] == before["games"]


def test_a_seat_that_never_moves_aborts_the_rated_match(stack: Stack) -> None:
    partner = BotThread(stack, "abort-partner", ["abort"])
    absent_id, absent_token = stack.register("absentee")
    absent = Client(stack.url, absent_token)
    try:
        absent.ladder.enter("abort")
        wait_for("the partner on the ladder", lambda: (
            x := stack.row("abort", partner.id))["entered"] and x["present"], timeout=60)
        absent.me.events(wait=0)  # present for the window; then it never polls nor moves
        doc = stack.form_match(ABORT, [absent_id, partner.id], absent_first(absent_id))
        seat = doc.seat_of(absent_id)
        done = wait_for("the match to end", lambda: (
            d := stack.load(doc.id)).status == FINISHED and d, timeout=60)
        assert done.aborted is not None and done.aborted["seat"] == seat
        # the API: the public summary, both views, the lists, the rating history
        public = stack.get(f"/v1/matches/{doc.id}")
        assert public["status"] == "finished" and public["result"] is None
        assert public["aborted"]["reason"] == "absent" and public["aborted"]["seat"] == seat
        assert public["aborted"]["player_id"] == absent_id and public["aborted"]["message"]
        view = stack.get(f"/v1/matches/{doc.id}/view", partner.client.token)
        assert view["aborted"] == public["aborted"] and view["legal_actions"] == []
        assert view["turn"] is None and view["result"] is None
        listed = stack.get("/v1/me/matches?status=finished", partner.client.token)["matches"]
        line = next(m for m in listed if m["match_id"] == doc.id)
        assert line["aborted"]["seat"] == seat and line["winners"] is None

        def settled() -> dict[str, Any] | None:
            row = stack.row("abort", absent_id)
            return row if row["benched"] else None

        row = wait_for("the absent bot to be benched", settled, timeout=15)
        assert row["benched_reason"].startswith("absent"), row
        assert row["games"] == 0
        mate = stack.row("abort", partner.id)
        assert mate["games"] == 0 and mate["wins"] == 0 and not mate["benched"], mate
        history = stack.get(f"/v1/players/{partner.id}")["ratings"]["abort"]["history"]
        assert history[0]["match_id"] == doc.id and history[0]["aborted"]
        assert history[0]["place"] is None
        # benched until it polls again
        absent.me.events(wait=0)
        assert not stack.row("abort", absent_id)["benched"]
    finally:
        absent.ladder.leave("abort")
        absent.close()
        partner.close()
