"""What ``llsdk play`` says: one line per match started, per round result and per match finished
(``-v``: every move of the match too; ``-q``: nothing but warnings), checked line by line against
the finished match's record on the real server."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
from collections.abc import Iterator

import pytest

from tests.support import venv_executable
from tests.support.sdkclient import Client
from tests.support.server import ApiServer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RANDOM_BOT = os.path.join(REPO, "examples", "bots", "random_bot.py")
TIME = r"\d\d:\d\d:\d\d "


@pytest.fixture(scope="module")
def anon(api_server: ApiServer) -> Iterator[Client]:
    with Client(api_server.url) as c:
        yield c


def play(url: str, token: str, *flags: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LLSDK_TOKEN", "REDIS_URL")}
    env.update(LLSDK_URL=url, LLSDK_TOKEN=token)  # the URL from the environment, not --url
    return subprocess.Popen([venv_executable("llsdk"), "play", RANDOM_BOT, "--max-matches", "1",
                             "--poll-wait", "2", *flags], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_llsdk_play_prints_starts_rounds_and_ends_and_every_move_with_v(
        anon: Client, api_server: ApiServer) -> None:
    players = [anon.players.register(f"out-{i}-{secrets.token_hex(4)}") for i in range(3)]
    clients = [anon.with_token(p.token or "") for p in players]
    mid = clients[0].matches.create("2019", 3, turn_timeout_s=86400).match_id
    procs = [play(api_server.url, p.token or "", *flags)
             for p, flags in zip(players, [(), ("-v",), ("-q",)], strict=True)]
    for c in clients:
        c.matches.join(mid)
    outs = []
    for proc in procs:
        out, _ = proc.communicate(timeout=180)
        assert proc.returncode == 0, out
        outs.append(out.splitlines())
    normal, verbose, quiet = outs

    record = anon.matches.events(mid)
    final = anon.matches.get(mid)
    assert final.finished and final.result is not None
    rounds = [e for e in record.events if e.type == "round_end"]
    moves = [e for e in record.events if e.type in ("play", "chancellor_return")]
    assert len(rounds) == final.result.rounds

    for lines, seat in ((normal, 0), (verbose, 1)):
        assert all(re.match(TIME, ln) for ln in lines), lines
        text = [ln[9:] for ln in lines]
        assert text[0].startswith(f"playing as {players[seat].name} ")
        started = [t for t in text if t.startswith(f"{mid} started: ")]
        assert started == [f"{mid} started: 2019, 3 players, seat 0 {players[0].name}"
                           f"{' (you)' if seat == 0 else ''} vs seat 1 {players[1].name}"
                           f"{' (you)' if seat == 1 else ''} vs seat 2 {players[2].name}"]
        said = [t for t in text if re.match(rf"{mid} round \d+: .* won \(", t)]
        assert [int(t.split()[2].rstrip(":")) for t in said] == [e.round for e in rounds]
        for t, e in zip(said, rounds, strict=True):
            assert t.endswith("; tokens " + "-".join(map(str, e.data["tokens"]))), t
        finished = [t for t in text if t.startswith(f"{mid} finished: ")]
        assert len(finished) == 1
        assert ("won" if seat in final.result.winners else "lost") in finished[0]
        assert text[-1].startswith("stopped: 1 matches finished")

    # -v: one line per move of every seat, in the order of the log
    said_moves = [t[9:] for t in verbose if re.match(rf"{TIME}{mid} round \d+: seat \d .*(plays|returns) ",
                                                     t)]
    assert len(said_moves) == len(moves), (said_moves, len(moves))
    for t, e in zip(said_moves, moves, strict=True):
        assert t.startswith(f"{mid} round {e.round}: seat {e.seat} "), (t, e)
        if e.type == "play":
            assert f" plays {e.card}" in t
    # the default shows no moves; -q shows nothing at all
    assert not [t for t in normal if " plays " in t]
    assert quiet == []


def test_every_subcommand_that_talks_to_a_server_takes_llsdk_url(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``--url`` everywhere a server is used, defaulting to ``LLSDK_URL`` (read when the command
    line is parsed); only the offline arena has none."""
    import argparse

    from llsdk.cli import build_parser

    monkeypatch.setenv("LLSDK_URL", "http://arena.example:1234")
    ap = build_parser()
    (sub,) = [a for a in ap._actions if isinstance(a, argparse._SubParsersAction)]
    assert {"register", "play", "arena"} <= set(sub.choices)
    for name, parser in sub.choices.items():
        urls = [a for a in parser._actions if "--url" in a.option_strings]
        if name == "arena":
            assert not urls
            continue
        assert urls, f"llsdk {name} has no --url"
        assert urls[0].default == "http://arena.example:1234", name
