"""What one ladder is: its name, ruleset, table size and scheduling settings (plain data, built
from the environment by ``service/config.py`` and passed into the ladder store)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from .aborts import AbortPolicy

#: ladder defaults; LADDER_PRESENCE_WINDOW_S / LADDER_BENCH_AFTER / LADDER_PROVISIONAL_GAMES
#: override them (read by ladders_from_env, so every process of a deployment must see the same)
#: a bot is present (schedulable) while it listens: a poll within this window. A waiting long-poll
#: refreshes it every 2 s (service/realtime/longpoll.py) and stops when its client hangs up, so a
#: stopped bot is off the schedule within about 5 s; a bot between two polls stays on.
PRESENCE_WINDOW_S = 5
BENCH_AFTER = 3  # consecutive ladder matches with a timeout or forfeit before benching
PROVISIONAL_GAMES = 10  # the leaderboard marks a bot provisional below this many games
#: by default an exact rematch waits this many scheduling intervals for other bots to come free
REMATCH_HOLD_PASSES = 2


@dataclass(frozen=True)
class LadderConfig:
    """One ladder. ``interval_s``: how often the scheduler forms matches; ``max_concurrent``:
    how many of this ladder's matches one bot may play at once; ``presence_window_s``: a bot
    is scheduled only if it polled within this many seconds; ``bench_after``: consecutive
    ladder matches with a timeout or forfeit that bench a bot (until it polls again);
    ``provisional_games``: games before a bot's rating stops being marked provisional;
    ``humans``: whether people (players of kind ``human``) may enter (default: no);
    ``rematch_hold_s``: how long a table that is exactly a bot's previous table waits for other
    bots to come free (default: two scheduling intervals). With eight bots on four-seat tables,
    one table often finishes while the other plays on: with no wait, a third of the tables
    repeat the previous one; a wait about as long as a match brings that near zero, at the cost
    of idle bots waiting that long."""

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
    rematch_hold_s: int | None = None  # None: REMATCH_HOLD_PASSES scheduling intervals
    # repeated aborts (absent from rated matches) bench a bot for a time: store/aborts.py
    abort_bench_after: int = AbortPolicy.bench_after
    abort_window_s: int = AbortPolicy.window_s
    abort_bench_s: tuple[int, ...] = AbortPolicy.bench_s

    def __post_init__(self) -> None:
        # (LADDERS is JSON: a list there)
        object.__setattr__(self, "abort_bench_s", tuple(int(x) for x in self.abort_bench_s))

    @property
    def abort_policy(self) -> AbortPolicy:
        return AbortPolicy(bench_after=self.abort_bench_after, window_s=self.abort_window_s,
                           bench_s=self.abort_bench_s)

    @property
    def rematch_hold(self) -> int:
        """How long (s) an exact rematch waits for other bots to come free."""
        if self.rematch_hold_s is not None:
            return self.rematch_hold_s
        return REMATCH_HOLD_PASSES * self.interval_s

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["rematch_hold_s"] = self.rematch_hold
        out["abort_bench_s"] = list(self.abort_bench_s)
        return out
