"""bench/bots.py's ``--jobs``: a search figure's games shared among processes are the games of
one process (the same count, each game once), at a tiny budget. Strength is not judged here."""

from __future__ import annotations

import importlib.util
import os
import re
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _bench() -> object:
    spec = importlib.util.spec_from_file_location("bench_bots", os.path.join(REPO, "bench",
                                                                             "bots.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_bots"] = module  # the worker processes find its functions by name
    spec.loader.exec_module(module)
    return module


def test_a_job_plays_every_jobs_th_game() -> None:
    """Jobs 0 and 1 of 2 play games 0, 2 and 1 (3 in all), each a whole match."""
    bench = _bench()
    first, stats, _ = bench._search_job(0, 2, "random", "classic", 2, 3, "jobs", 2)  # type: ignore[attr-defined]
    second, _, _ = bench._search_job(1, 2, "random", "classic", 2, 3, "jobs", 2)  # type: ignore[attr-defined]
    assert len(first) == 2 and len(second) == 1
    for won, rounds, rounds_won in first + second:
        assert won in (0, 1) and 1 <= rounds and 0 <= rounds_won <= rounds
    assert stats


@pytest.mark.parametrize("jobs", [1, 2])
def test_search_figures_count_every_game(jobs: int, capsys: pytest.CaptureFixture[str]) -> None:
    bench = _bench()
    times: list[float] = []
    bench.search_strength("classic-2p", "random", "classic", 2, 3, "jobs", 2, times,  # type: ignore[attr-defined]
                          jobs)
    out = capsys.readouterr().out
    assert "classic-2p search games: 3 games" in out
    won = re.search(r"game win: ([\d.]+) %", out)
    assert won is not None and float(won.group(1)) in (0.0, 33.3, 66.7, 100.0)
    assert times


def test_search_set_changes_a_setting_of_the_search_bot() -> None:
    """``--search-set`` (ablations): Python literals for settings the bot has, else an exit."""
    bench = _bench()
    sets = bench.parse_settings(["PRUNE=None", "CONFIDENCE=1.0"])  # type: ignore[attr-defined]
    assert sets == {"PRUNE": None, "CONFIDENCE": 1.0}
    bot = bench.search_bot(7, sets)  # type: ignore[attr-defined]
    assert bot.PRUNE is None and bot.CONFIDENCE == 1.0 and bot.budget == 0.007
    assert type(bot).PRUNE == 3.0  # the class is left as it was
    for bad in (["NOPE=1"], ["PRUNE"], ["PRUNE=nope"]):
        with pytest.raises(SystemExit):
            bench.parse_settings(bad)  # type: ignore[attr-defined]
