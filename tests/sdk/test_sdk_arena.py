"""llsdk offline arena: reproducible for a seed, views equal to the engine's projections,
seats rotated, the CLI, and the example bots."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from typing import Any

import pytest
from llsdk import Action, Bot, View, arena
from llsdk.cli import BotLoadError, load_bot, load_bot_class, main

from service import engine
from service.engine import MatchState

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RANDOM_BOT = os.path.join(REPO, "examples", "bots", "random_bot.py")
COUNTING_BOT = os.path.join(REPO, "examples", "bots", "counting_bot.py")


def bots(*specs: str) -> list[Bot]:
    return [load_bot(s) for s in specs]


def test_results_are_reproducible_for_a_seed() -> None:
    a = arena.run(bots(COUNTING_BOT, RANDOM_BOT), "classic", games=30, seed=5)
    b = arena.run(bots(COUNTING_BOT, RANDOM_BOT), "classic", games=30, seed=5)
    def strip(r: arena.ArenaResult) -> dict[str, Any]:
        """Everything but the timings (wall seconds, CPU time per move)."""
        d = {k: v for k, v in r.to_dict().items() if k != "seconds"}
        for b in d["bots"]:
            del b["move_ms"]
        return d

    assert strip(a) == strip(b)
    c = arena.run(bots(COUNTING_BOT, RANDOM_BOT), "classic", games=30, seed=6)
    assert strip(a) != strip(c)


def test_games_are_reproducible_move_by_move() -> None:
    def moves(seed: str) -> list[Any]:
        out: list[Any] = []
        arena.run(bots(RANDOM_BOT, RANDOM_BOT, COUNTING_BOT, RANDOM_BOT), "2019", games=3,
                  seed=seed, on_game=lambda g, rec: out.append((rec.winners, rec.tokens,
                                                                 rec.round_winners)))
        return out

    assert moves("x") == moves("x")


def test_views_equal_the_engine_projection() -> None:
    """Each view a bot gets is exactly ``service.engine.view(state, seat, since=<round
    start>)`` (what the API serves without its ids and deadlines), typed."""
    seen = 0

    def check(state: MatchState, seat: int, view: View) -> None:
        nonlocal seen
        raw = engine.view(state, seat, since=state.round_start_seq)
        assert view.raw == raw
        expected = View.from_dict(raw)
        expected.version = state.version  # the arena's version: the count of events
        assert view == expected
        assert view.seat == seat == state.turn and view.my_turn
        assert view.hand == raw["hand"] and view.events[-1].seq == raw["events"][-1]["seq"]
        assert view.legal_actions == [Action.from_dict(d) for d in raw["legal_actions"]]
        assert view.version == state.version
        seen += 1

    for ruleset, n in (("classic", 2), ("2019", 4), ("2019-classic", 3)):
        players = bots(*([RANDOM_BOT] * (n - 1) + [COUNTING_BOT]))
        arena.play_match(players, ruleset, seed=f"proj-{ruleset}", observer=check)
    assert seen > 50


def test_seats_rotate_between_games() -> None:
    seatings: list[list[int]] = []
    r = arena.run(bots(RANDOM_BOT, RANDOM_BOT, RANDOM_BOT), "classic", games=6, seed=1,
                  on_game=lambda g, rec: seatings.append(rec.seating))
    assert seatings[:3] == [[0, 1, 2], [2, 0, 1], [1, 2, 0]]
    for b in r.bots:
        assert [s.played for s in b.by_seat] == [2, 2, 2]
    assert sum(b.games.played for b in r.bots) == 18


def test_wilson_interval() -> None:
    lo, hi = arena.wilson(980, 1000)
    assert 0.968 < lo < 0.971 and 0.986 < hi < 0.989
    assert arena.wilson(0, 10)[0] == 0.0 and arena.wilson(10, 10)[1] == 1.0


class Cheater(Bot):
    def choose(self, view: View) -> Action:
        return Action.play("princess")


def test_an_illegal_action_stops_the_arena_with_a_clear_error() -> None:
    with pytest.raises(arena.ArenaError, match="not legal"):
        arena.run([Cheater(), load_bot(RANDOM_BOT)], "classic", games=50, seed=1)


def test_the_table_and_progress_bar() -> None:
    out = io.StringIO()
    r = arena.run(bots(COUNTING_BOT, RANDOM_BOT), "classic", games=20, seed=2, progress=out)
    assert "20/20 games" in out.getvalue()
    table = r.table()
    assert "counting_bot" not in table  # the bots' own names
    assert "counting" in table and "random" in table and "seat 1" in table and "%" in table


def test_cli_arena(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["arena", COUNTING_BOT, RANDOM_BOT, "--games", "8", "--seed", "3",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["games"] == 8 and [b["name"] for b in data["bots"]] == ["counting", "random"]
    assert main(["arena", RANDOM_BOT, RANDOM_BOT, RANDOM_BOT, RANDOM_BOT, "--ruleset", "2019",
                 "--games", "4"]) == 0
    captured = capsys.readouterr()
    assert "random#4" in captured.out and "4/4 games" in captured.err


def test_cli_finds_the_bot_class(tmp_path: Any) -> None:
    assert load_bot_class(RANDOM_BOT).__name__ == "RandomBot"
    two = tmp_path / "two.py"
    two.write_text("from llsdk import Bot\nclass A(Bot): pass\nclass B(Bot): pass\n")
    with pytest.raises(BotLoadError, match="several"):
        load_bot_class(str(two))
    assert load_bot_class(f"{two}:B").__name__ == "B"
    none = tmp_path / "none.py"
    none.write_text("x = 1\n")
    with pytest.raises(BotLoadError, match="no subclass"):
        load_bot_class(str(none))
    assert main(["arena", str(none), RANDOM_BOT]) == 2


def test_llsdk_console_script_and_module() -> None:
    exe = os.path.join(os.path.dirname(sys.executable), "llsdk")
    cmd = [exe] if os.path.exists(exe) else [sys.executable, "-m", "llsdk"]
    out = subprocess.run(cmd + ["arena", RANDOM_BOT, RANDOM_BOT, "--games", "3",
                                "--no-progress"], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert "3 games" in out.stdout
    out = subprocess.run([sys.executable, "-m", "llsdk", "--help"], capture_output=True,
                         text=True)
    assert out.returncode == 0 and "register" in out.stdout and "arena" in out.stdout


def test_counting_bot_beats_random() -> None:
    """A smoke check of strength (the real figures are in bench/bots.py)."""
    r = arena.run(bots(COUNTING_BOT, RANDOM_BOT), "classic", games=60, seed=9)
    assert r.bots[0].rounds.rate > 0.65 and r.bots[0].games.rate > 0.85
