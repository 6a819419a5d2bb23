"""What one ladder is: its name, ruleset, table size and scheduling settings (plain data, built
from the environment by ``service/config.py`` and passed into the ladder store)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

#: ladder defaults; LADDER_PRESENCE_WINDOW_S / LADDER_BENCH_AFTER / LADDER_PROVISIONAL_GAMES
#: override them (read by ladders_from_env, so every process of a deployment must see the same)
#: a bot is present (schedulable) while it listens: a poll within this window. A waiting long-poll
#: refreshes it every 2 s (service/realtime/longpoll.py) and stops when its client hangs up, so a
#: stopped bot is off the schedule within about 5 s; a bot between two polls stays on.
PRESENCE_WINDOW_S = 5
BENCH_AFTER = 3  # consecutive ladder matches with a timeout or forfeit before benching
PROVISIONAL_GAMES = 10  # the leaderboard marks a bot provisional below this many games


@dataclass(frozen=True)
class LadderConfig:
    """One ladder. ``interval_s``: how often the scheduler forms matches; ``max_concurrent``:
    how many of this ladder's matches one bot may play at once; ``presence_window_s``: a bot
    is scheduled only if it polled within this many seconds; ``bench_after``: consecutive
    ladder matches with a timeout or forfeit that bench a bot (until it polls again);
    ``provisional_games``: games before a bot's rating stops being marked provisional;
    ``humans``: whether people (players of kind ``human``) may enter (default: no)."""

    name: str
    ruleset: str
    seats: int
    turn_timeout_s: int = 10
    interval_s: int = 10
    max_concurrent: int = 1
    description: str = ""
    presence_window_s: int = PRESENCE_WINDOW_S
    bench_after: int = BENCH_AFTER
    provisional_games: int = PROVISIONAL_GAMES
    humans: bool = False  # whether players registered as kind "human" may enter

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}
