"""Stopping a bot (issue 11, item 2): ``Client.interrupt`` cuts a long-poll at once, and
``Bot.run`` leaves the ladders it entered and returns within a second of ``stop_event``."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests
from llsdk import Action, Bot, View
from llsdk.errors import TransportError

from tests.support import venv_executable
from tests.support.sdkclient import Client
from tests.support.server import ApiServer

REPO = Path(__file__).resolve().parents[2]


class Idle(Bot):
    def choose(self, view: View) -> Action:
        return view.legal_actions[0]


def entered(api_server: ApiServer, ladder: str, pid: str) -> bool:
    rows = requests.get(f"{api_server.url}/v1/ladders/{ladder}", timeout=10).json()["leaderboard"]
    return any(r["player_id"] == pid and r["entered"] for r in rows)


def test_interrupt_cuts_a_long_poll_at_once_and_the_client_works_after(
        api_server: ApiServer) -> None:
    reg = Client(api_server.url).players.register("interrupted")
    client = Client(api_server.url, reg.token)
    errors: list[BaseException] = []

    def poll() -> None:
        try:
            client.me.events(wait=30)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    t = threading.Thread(target=poll)
    t.start()
    time.sleep(1.0)  # the poll is waiting on the server
    started = time.monotonic()
    client.interrupt()
    t.join(timeout=10)
    assert time.monotonic() - started < 1.0 and not t.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], TransportError), errors
    assert "interrupted" in str(errors[0])
    assert client.me.get().id == reg.id  # later requests work
    client.close()


def test_bot_run_leaves_its_ladders_and_returns_within_a_second(api_server: ApiServer) -> None:
    reg = Client(api_server.url).players.register("stopper")
    client = Client(api_server.url, reg.token)
    stop = threading.Event()
    done = threading.Event()

    def run() -> None:
        Idle().run(client, ladders=["duel"], stop_event=stop, poll_wait=30.0)
        done.set()

    threading.Thread(target=run, daemon=True).start()
    end = time.monotonic() + 15
    while not entered(api_server, "duel", reg.id) and time.monotonic() < end:
        time.sleep(0.1)
    assert entered(api_server, "duel", reg.id)
    time.sleep(1.0)  # inside its 30-s long-poll
    started = time.monotonic()
    stop.set()
    assert done.wait(5)
    assert time.monotonic() - started < 1.5
    assert not entered(api_server, "duel", reg.id)
    client.close()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_llsdk_play_leaves_and_exits_within_2s_on_ctrl_c_and_sigterm(
        api_server: ApiServer, tmp_path: Path, sig: int) -> None:
    reg = Client(api_server.url).players.register(f"cli-{int(sig)}")
    log = tmp_path / "play.log"
    env = dict(os.environ, LLSDK_URL=api_server.url, LLSDK_TOKEN=reg.token or "",
               PYTHONUNBUFFERED="1")
    with open(log, "ab") as f:
        proc = subprocess.Popen(
            [venv_executable("llsdk"), "play", str(REPO / "examples" / "bots" / "random_bot.py"),
             "--ladder", "duel", "--poll-wait", "30"],
            cwd=REPO, env=env, stdout=f, stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + 30
        while not entered(api_server, "duel", reg.id):
            assert proc.poll() is None and time.monotonic() < end, log.read_text()
            time.sleep(0.1)
        time.sleep(1.0)  # inside its 30-s long-poll
        started = time.monotonic()
        proc.send_signal(sig)
        code = proc.wait(timeout=30)
        elapsed = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code in (0, 130), log.read_text()
    assert elapsed <= 2.0, f"{elapsed:.2f} s:\n{log.read_text()}"
    assert not entered(api_server, "duel", reg.id), log.read_text()
