"""Bots in other languages: examples/bots/curl_bot.sh (bash, curl, jq) and examples/bots/js/bot.mjs
(Node, built-in fetch) play whole matches, against each other, on the real app under gunicorn.

Each bot prints the match id, one line per move and per round and the result last; the test
checks their output against what the server recorded: the match finished, every move printed was
applied by that seat, and every bot reports the same winners as the server.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.support.server import ApiServer
from tests.support.stack import WholeStack, running_stack

REPO = Path(__file__).resolve().parents[2]
CURL_BOT = REPO / "examples" / "bots" / "curl_bot.sh"
JS_BOT = REPO / "examples" / "bots" / "js" / "bot.mjs"


def node_major() -> int:
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        return 0
    out = subprocess.run([node, "--version"], capture_output=True, text=True).stdout
    m = re.match(r"v(\d+)", out)
    return int(m.group(1)) if m else 0


needs_tools = pytest.mark.skipif(
    shutil.which("curl") is None or shutil.which("jq") is None or node_major() < 18,
    reason="needs curl, jq and Node 18+ (make test installs jq and nodejs from Debian)")


def command(kind: str, *args: str) -> list[str]:
    if kind == "curl":
        return ["bash", str(CURL_BOT), *args]
    return [shutil.which("node") or "nodejs", str(JS_BOT), *args]


def start(kind: str, url: str, *args: str, tokens: int | None = None) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LLSDK_TOKEN", "REDIS_URL")}
    # each bot its own new player: a token file of its own (the JS bot keeps one per file)
    env.update(LLSDK_URL=url, BOT_WAIT="10",
               BOT_TOKEN_FILE=os.path.join(tempfile.mkdtemp(prefix="lljs-"), "bot.token"))
    if tokens is not None:
        env["BOT_TOKENS_TO_WIN"] = str(tokens)
    return subprocess.Popen(command(kind, *args), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO)


def first_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"the bot printed nothing; stderr: {proc.stderr.read() if proc.stderr else ''}"
    return line.strip()


def finish(proc: subprocess.Popen[str], timeout: float = 300) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{out[-3000:]}\nstderr:\n{err}"
    return out


def play_match(url: str, kinds: list[str], ruleset: str,
               tokens: int | None = None) -> tuple[str, list[str]]:
    """The first bot creates the match (``tokens``: its tokens to win); the others join it.
    Returns the match id and each bot's output after the match id line."""
    creator = start(kinds[0], url, "new", ruleset, str(len(kinds)), tokens=tokens)
    match_id = first_line(creator).removeprefix("match ")
    assert re.fullmatch(r"m_\w+", match_id), match_id
    joiners = [start(k, url, "join", match_id) for k in kinds[1:]]
    for j in joiners:
        assert first_line(j) == f"match {match_id}"
    outs = [finish(p) for p in [creator, *joiners]]
    return match_id, outs


def check_against_the_record(url: str, match_id: str, outs: list[str]) -> dict[str, object]:
    record = requests.get(f"{url}/v1/matches/{match_id}/events", timeout=10).json()
    summary = requests.get(f"{url}/v1/matches/{match_id}", timeout=10).json()
    assert summary["status"] == "finished", summary["status"]
    result = summary["result"]
    applied = [e for e in record["events"] if e["type"] in ("play", "chancellor_return")
               and not e.get("timeout")]
    assert applied, "no move was applied"
    seats_that_moved = set()
    for out in outs:
        lines = out.splitlines()
        winners = json.dumps(result["winners"], separators=(",", ":"))
        assert lines[-1].startswith(f"finished: winners {winners}, "), (lines[-1], result)
        moves = [re.fullmatch(r"seat (\d) plays (\{.*\})", ln) for ln in lines]
        for m in filter(None, moves):
            seat, action = int(m.group(1)), json.loads(m.group(2))
            seats_that_moved.add(seat)
            if action["type"] == "play":
                assert any(e["seat"] == seat and e["type"] == "play"
                           and e["card"] == action["card"] for e in applied), (seat, action)
        # a round result line for each round ended that the bot saw (a view shows the last
        # one: two rounds that end between two of its views give one line), the last included
        ended = {e["round"]: e for e in record["events"] if e["type"] == "round_end"}
        said = [re.fullmatch(r"round (\d+): winners (\[[\d,]*\]) \((\w+)\), tokens (\[[\d,]*\])",
                             ln) for ln in lines if ln.startswith("round ")]
        assert all(said), lines
        numbers = [int(m.group(1)) for m in said if m]
        assert numbers == sorted(set(numbers)) and numbers[-1] == result["rounds"], numbers
        for m in filter(None, said):
            e = ended[int(m.group(1))]
            assert json.loads(m.group(2)) == e["winners"] and m.group(3) == e["reason"]
            assert json.loads(m.group(4)) == e["tokens"]
    # every seat that had a turn moved (a seat knocked out before its first turn has none)
    turns = {e["seat"] for e in record["events"] if e["type"] == "turn"}
    assert seats_that_moved == turns and len(turns) >= 2, (seats_that_moved, turns)
    # every move the server applied was one of theirs (no timeouts: both bots kept up)
    assert not [e for e in record["events"] if e.get("timeout")]
    return result


@needs_tools
def test_curl_bot_and_js_bot_play_a_classic_match_against_each_other(
        api_server: ApiServer) -> None:
    match_id, outs = play_match(api_server.url, ["curl", "js"], "classic")
    result = check_against_the_record(api_server.url, match_id, outs)
    tokens = result["tokens"]
    assert isinstance(tokens, list) and max(tokens) >= 7  # R1: 7 tokens to win with 2 players


@needs_tools
def test_two_curl_bots_and_two_js_bots_play_a_2019_table(api_server: ApiServer) -> None:
    """Four seats of the 2019 ruleset: chancellor returns and spies included."""
    match_id, outs = play_match(api_server.url, ["js", "curl", "js", "curl"], "2019", tokens=2)
    result = check_against_the_record(api_server.url, match_id, outs)
    tokens = result["tokens"]
    assert isinstance(tokens, list) and max(tokens) >= 2 and len(tokens) == 4


@needs_tools
@pytest.mark.parametrize("kind", ["curl", "js"])
def test_bots_report_api_errors_and_exit_non_zero(api_server: ApiServer, kind: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env.update(LLSDK_URL=api_server.url, LLSDK_TOKEN="llt_made-up")
    started = time.monotonic()
    done = subprocess.run(command(kind, "new"), env=env, capture_output=True, text=True,
                          timeout=60, cwd=REPO)
    assert done.returncode != 0
    assert "401 unauthorized" in done.stderr, done.stderr
    assert time.monotonic() - started < 30


# (turns of 15 s: the bots answer at once, the clock only bounds how long a bot starved by a
# loaded machine may take before its turn counts as a timeout, which these tests must not see)
LADDER_ENV = {"LADDERS": json.dumps([{"name": "js", "ruleset": "classic", "seats": 2}]),
              "LADDER_INTERVAL_S": "1", "LADDER_TURN_TIMEOUT_S": "15", "EXPECT_WORKERS": "1"}


@pytest.fixture(scope="module")
def ladder_stack() -> Iterator[WholeStack]:
    """The whole stack with the ``js`` ladder, for this module's ladder tests (each looks only at
    its own bots)."""
    with running_stack(LADDER_ENV) as s:
        yield s


@needs_tools
def test_js_bots_play_the_ladder_and_leave_it(ladder_stack: WholeStack) -> None:
    """``node bot.mjs ladder js 1``: two bots enter, the server seats them in a rated match,
    they play it from their inbox notices (each carrying the view) and leave after it; a third
    one stopped with SIGTERM leaves the ladder too, within 2 s."""
    s = ladder_stack
    env = {k: v for k, v in os.environ.items() if k not in ("LLSDK_TOKEN", "REDIS_URL")}
    env.update(LLSDK_URL=s.url, BOT_WAIT="10")
    bots = []
    for i in range(2):
        pid, token = s.register(f"js-ladder-{i}")
        bots.append((pid, subprocess.Popen(
            command("js", "ladder", "js", "1"), env=dict(env, LLSDK_TOKEN=token),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)))
    outs = [finish(proc, timeout=120) for _, proc in bots]
    pids = {pid for pid, _ in bots}
    for out in outs:
        assert out.startswith("entered ladder js\n") and out.endswith("left ladder js\n"), out
        assert "plays" in out and "finished (1 so far)" in out, out
    played = [d for d in s.ladder_matches("js") if set(d.seats) & pids]
    assert played and all(set(d.seats) == pids and d.rated for d in played)
    assert played[0].status == "finished" and played[0].aborted is None
    rows = {row["player_id"]: row for row in s.get("/v1/ladders/js")["leaderboard"]}
    assert all(rows[p]["games"] >= 1 and not rows[p]["entered"] for p in pids), rows
    # stopped by a signal while it waits in its long-poll: it leaves at once
    pid, token = s.register("js-ladder-stop")
    proc = subprocess.Popen(command("js", "ladder", "js"), env=dict(env, LLSDK_TOKEN=token),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO)
    assert first_line(proc) == "entered ladder js"
    time.sleep(1.0)
    stopped = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out = finish(proc, timeout=30)
    assert time.monotonic() - stopped <= 2.0, out
    assert out.endswith("left ladder js\n"), out
    entered = {row["player_id"]: row["entered"]
               for row in s.get("/v1/ladders/js")["leaderboard"]}
    assert not entered.get(pid, False)


# Node's process warnings (MaxListenersExceededWarning, ...) end the bot with status 70
FATAL_WARNINGS = ("--import=data:text/javascript,process.on('warning',w=>{console.error("
                  "'fatal warning: '+w.name+': '+w.message);process.exit(70)})")


class Lines(threading.Thread):
    """Reads a process's stdout line by line as it comes (for a test to wait on a line)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        super().__init__(daemon=True)
        self.proc, self.lines = proc, list[str]()
        self.start()

    def run(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, needle: str, timeout: float = 60) -> None:
        end = time.monotonic() + timeout
        while not any(needle in ln for ln in self.lines):
            assert time.monotonic() < end and self.proc.poll() is None, \
                f"no {needle!r} in:\n" + "\n".join(self.lines[-40:])
            time.sleep(0.05)


@needs_tools
def test_js_bot_keeps_one_token_in_the_file_it_names(api_server: ApiServer,
                                                        tmp_path: Path) -> None:
    """Without LLSDK_TOKEN the bot registers once, says where it saved the token (stderr: the
    first line of stdout stays the match id), and plays as that player on every start."""
    token_file = tmp_path / "mine.token"
    env = {k: v for k, v in os.environ.items() if k not in ("LLSDK_TOKEN", "REDIS_URL")}
    env.update(LLSDK_URL=api_server.url, BOT_TOKEN_FILE=str(token_file), BOT_NAME="js-keeper")
    runs = [subprocess.run(command("js", "play", "m_000000000000"), env=env, text=True,
                           capture_output=True, timeout=60, cwd=tmp_path) for _ in range(2)]
    assert "registered js-keeper" in runs[0].stderr and str(token_file) in runs[0].stderr
    assert "registered" not in runs[1].stderr, runs[1].stderr
    token = token_file.read_text().strip()
    assert token and oct(token_file.stat().st_mode & 0o777) == "0o600"
    me = requests.get(f"{api_server.url}/v1/me", headers={"Authorization": f"Bearer {token}"},
                      timeout=10).json()
    assert me["name"] == "js-keeper"
    # (the match doesn't exist: both runs reached it as that player and exited with its error)
    assert all(r.returncode == 1 and "not_found" in r.stderr for r in runs), runs


@needs_tools
def test_js_bots_play_200_moves_without_a_warning_say_each_result_and_drain_on_stop(
        ladder_stack: WholeStack) -> None:
    """Two JS bots on a ladder, with Node's warnings fatal: 200+ moves and a line per finished
    match with its result; then the first SIGTERM in a match leaves the ladder at once and
    finishes the match (the bot's own moves to the end), and the bot exits by itself."""
    s = ladder_stack
    env = {k: v for k, v in os.environ.items() if k not in ("LLSDK_TOKEN", "REDIS_URL")}
    env.update(LLSDK_URL=s.url, BOT_WAIT="5")
    node = [shutil.which("node") or "nodejs", FATAL_WARNINGS, str(JS_BOT), "ladder", "js"]
    players = [s.register(f"js-long-{i}") for i in range(2)]
    procs = [subprocess.Popen(node + ["6"], env=dict(env, LLSDK_TOKEN=token),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=REPO) for _, token in players]
    outs = [finish(p, timeout=300) for p in procs]
    moves = sum(len(re.findall(r"^seat \d plays ", out, re.M)) for out in outs)
    assert moves >= 200, f"{moves} moves"
    for (pid, _), out in zip(players, outs, strict=True):
        said = re.findall(r"^match (m_\w+) finished \((\d) so far\): (won|lost): winners "
                          r"(\[[\d,]*\])", out, re.M)
        assert [int(n) for _, n, _, _ in said] == [1, 2, 3, 4, 5, 6], out
        for mid, _, outcome, winners in said:
            match = s.get(f"/v1/matches/{mid}")
            seat = next(i for i, p in enumerate(match["players"]) if p["player_id"] == pid)
            assert json.loads(winners) == match["result"]["winners"], (out, match)
            assert (outcome == "won") == (seat in match["result"]["winners"])
    # the graceful stop, in the middle of a match
    stopper = subprocess.Popen(node, env=dict(env, LLSDK_TOKEN=players[0][1], BOT_DRAIN_S="120"),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=REPO)
    other = subprocess.Popen(node + ["1"], env=dict(env, LLSDK_TOKEN=players[1][1]),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=REPO)
    lines = Lines(stopper)
    lines.wait_for(" plays ")
    stopper.send_signal(signal.SIGTERM)
    lines.wait_for("left ladder js", timeout=10)
    entered = {row["player_id"]: row["entered"]
               for row in s.get("/v1/ladders/js")["leaderboard"]}
    assert not entered[players[0][0]]
    assert stopper.wait(timeout=120) == 0, "\n".join(lines.lines)
    lines.join(timeout=5)
    finish(other, timeout=60)
    out = "\n".join(lines.lines)
    assert "stopping: finishing 1 match(es) in progress" in out, out
    mid = re.search(r"^match (m_\w+) finished \(1 so far\)", out, re.M)
    assert mid, out
    events = s.get(f"/v1/matches/{mid.group(1)}/events")["events"]
    assert not [e for e in events if e.get("timeout") or e["type"] == "forfeit"], events
