"""The offline arena: bots play each other in-process on the service's own rules engine.

Needs the service package (``pip install 'llsdk[arena]'``, or the project's virtualenv):
``service.engine`` is imported when a match is played, not when this module is imported. Each
bot decides from a typed :class:`~llsdk.models.View` built from exactly what
``service.engine.view(state, seat, since=<round start>)`` shows that seat, as the API does.

    from llsdk.arena import run
    result = run([CountingBot(), RandomBot()], ruleset="classic", games=2000, seed=1)
    print(result.table())

Seats rotate between games (game ``g`` puts bot ``i`` at seat ``(i + g) % n``), match ``g``
is seeded ``"<seed>:<g>"`` and bot ``i``'s ``rng`` is seeded ``"<seed>:bot:<i>"``, so a run is
reproducible from its seed. Command line: ``llsdk arena BOT.py BOT.py ... --games 2000``.

``budget_ms`` (``--budget-ms``) is the thinking time per move given to every bot that has a
``budget`` attribute (seconds of CPU, like ``examples/bots/search_bot.py``); the table shows each
bot's CPU time per move (median and 99th percentile) whatever its budget.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from .bot import Bot
from .models import Action, Event, View

if TYPE_CHECKING:
    from service.engine import Action as EngineAction
    from service.engine import MatchState


class ArenaError(Exception):
    """A bot broke the rules of the arena (an action that is not legal), or bad options."""


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of ``k`` successes in ``n`` trials (95% by default).

    >>> lo, hi = wilson(80, 100)
    >>> round(lo, 3), round(hi, 3)
    (0.711, 0.867)
    >>> wilson(0, 0)
    (0.0, 1.0)
    """
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class Rate:
    """``wins`` out of ``played``, with its rate and 95% Wilson interval."""

    wins: int = 0
    played: int = 0

    @property
    def rate(self) -> float:
        return self.wins / self.played if self.played else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.wins, self.played)

    def percent(self) -> str:
        """``"80.0 % [71.1, 86.7]"``."""
        lo, hi = self.interval
        return f"{100 * self.rate:.1f} % [{100 * lo:.1f}, {100 * hi:.1f}]"


@dataclass
class BotResult:
    """One bot's record over a run; ``by_seat[s]`` counts the games it played at seat ``s``."""

    name: str
    games: Rate = field(default_factory=Rate)
    rounds: Rate = field(default_factory=Rate)
    by_seat: list[Rate] = field(default_factory=list)
    tokens: int = 0
    move_seconds: list[float] = field(default_factory=list, repr=False)  # CPU time per move

    def move_ms(self, q: float) -> float:
        """The ``q`` quantile (nearest rank) of this bot's CPU milliseconds per move.

        >>> b = BotResult("x", move_seconds=[0.001 * i for i in range(1, 101)])
        >>> b.move_ms(0.5), b.move_ms(0.99)
        (50.0, 99.0)
        """
        xs = sorted(self.move_seconds)
        if not xs:
            return 0.0
        return round(1000 * xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))], 3)


@dataclass
class GameRecord:
    """One finished match: ``seating[s]`` is the bot index at seat ``s``."""

    seed: str
    seating: list[int]
    winners: list[int]  # seats
    round_winners: list[list[int]]  # seats, per round
    tokens: list[int]
    state: MatchState | None = field(default=None, repr=False)


@dataclass
class ArenaResult:
    """The outcome of :func:`run`. ``table()`` formats it."""

    ruleset: str
    players: int
    seed: str
    bots: list[BotResult]
    games: int = 0
    rounds: int = 0
    seconds: float = 0.0
    budget_ms: float | None = None

    @property
    def games_per_second(self) -> float:
        return self.games / self.seconds if self.seconds else 0.0

    def table(self) -> str:
        """Per bot: game and round win rates with 95% (Wilson) intervals; then per seat."""
        name_w = max(8, *(len(b.name) for b in self.bots))
        lines = [
            f"{self.ruleset}, {self.players} players, {self.games} games ({self.rounds} rounds),"
            f" seed {self.seed}: {self.seconds:.1f} s, {self.games_per_second:.0f} games/s",
            "",
            f"{'bot':<{name_w}}  {'games':>6}  {'won':>6}  {'game win % [95% interval]':<27}"
            f"  {'rounds':>7}  {'round win % [95% interval]':<27}  ms/move median  p99",
        ]
        for b in self.bots:
            lines.append(f"{b.name:<{name_w}}  {b.games.played:>6}  {b.games.wins:>6}  "
                         f"{b.games.percent():<27}  {b.rounds.played:>7}  "
                         f"{b.rounds.percent():<27}  {b.move_ms(0.5):>14.1f}  "
                         f"{b.move_ms(0.99):.1f}")
        lines += ["", "game win % by seat [95% interval]",
                  f"{'bot':<{name_w}}  " + "  ".join(f"{'seat ' + str(s):<27}"
                                                     for s in range(self.players))]
        for b in self.bots:
            lines.append(f"{b.name:<{name_w}}  " + "  ".join(
                f"{r.percent() + f' ({r.played})':<27}" for r in b.by_seat))
        lines.append("(a game or round with several winners counts as a win for each; ms/move is "
                     "CPU time" + (f"; budget {self.budget_ms:g} ms per move)"
                                   if self.budget_ms is not None else ")"))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        def rate(r: Rate) -> dict[str, Any]:
            lo, hi = r.interval
            return {"wins": r.wins, "played": r.played, "rate": r.rate, "interval": [lo, hi]}

        return {
            "ruleset": self.ruleset, "players": self.players, "seed": self.seed,
            "games": self.games, "rounds": self.rounds, "seconds": self.seconds,
            "budget_ms": self.budget_ms,
            "bots": [{"name": b.name, "games": rate(b.games), "rounds": rate(b.rounds),
                      "by_seat": [rate(r) for r in b.by_seat],
                      "move_ms": {"moves": len(b.move_seconds), "median": b.move_ms(0.5),
                                  "p99": b.move_ms(0.99), "max": b.move_ms(1.0)}}
                     for b in self.bots],
        }


def _engine() -> Any:
    try:
        import service.engine as engine
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise ImportError("the offline arena needs the service's rules engine: install "
                          "'llsdk[arena]' or run inside the Love Letter Arena project") from e
    return engine


def bot_names(bots: Sequence[Bot]) -> list[str]:
    """Display names: ``bot.name`` or the class name, numbered when repeated."""
    base = [b.name or type(b).__name__ for b in bots]
    out = []
    for i, n in enumerate(base):
        if base.count(n) > 1:
            n = f"{n}#{base[:i + 1].count(n)}"
        out.append(n)
    return out


class _Translator:
    """SDK actions to engine actions (memoised: a match uses few distinct actions)."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine
        self._memo: dict[Action, EngineAction] = {}

    def __call__(self, action: Action) -> EngineAction:
        hit = self._memo.get(action)
        if hit is None:
            hit = self._memo[action] = self._engine.Action.from_dict(action.to_dict())
        return hit


def make_view(state: MatchState, seat: int, match_id: str = "") -> View:
    """The typed view of ``seat``: ``service.engine.view(state, seat, since=<round start>)``
    (what the API shows, without the service's ids, names and deadlines)."""
    engine = _engine()
    v = View.from_dict(engine.view(state, seat, since=state.round_start_seq))
    v.match_id = match_id
    v.version = state.version
    return v


def play_match(bots: Sequence[Bot], ruleset: str = "classic", *, seed: str | int = 1,
               tokens_to_win: int | None = None, match_id: str = "",
               observer: Callable[[MatchState, int, View], None] | None = None,
               keep_state: bool = False,
               move_seconds: Sequence[list[float]] | None = None) -> GameRecord:
    """Play one match, ``bots[s]`` at seat ``s``. ``observer(state, seat, view)`` sees every
    view given to a bot before it decides; ``move_seconds[s]``, when given, gets the CPU time
    of each decision of seat ``s``. Raises :class:`ArenaError` on an illegal action."""
    engine = _engine()
    n = len(bots)
    state = engine.new_match(ruleset, n, seed=str(seed), tokens_to_win=tokens_to_win)
    to_engine = _Translator(engine)
    view_of = engine.view
    is_legal = engine.is_legal
    apply_inplace = engine.apply_inplace
    for s, bot in enumerate(bots):
        bot.on_match_start(make_view(state, s, match_id))
    events: dict[int, Event] = {}  # an event reads the same in every view of a running match
    while state.status == "active":
        seat = state.turn
        v = View.from_dict(view_of(state, seat, since=state.round_start_seq), event_memo=events)
        v.match_id = match_id
        v.version = len(state.events)
        if observer is not None:
            observer(state, seat, v)
        if move_seconds is None:
            action = bots[seat].choose(v)
        else:
            cpu = time.process_time()
            action = bots[seat].choose(v)
            move_seconds[seat].append(time.process_time() - cpu)
        try:
            ea = to_engine(action)
        except Exception as e:
            raise ArenaError(f"seat {seat} ({type(bots[seat]).__name__}) chose a malformed "
                             f"action {action!r}: {e}") from e
        if not is_legal(state, ea):
            raise ArenaError(f"seat {seat} ({type(bots[seat]).__name__}) chose {action}, which "
                             f"is not legal; legal: {[str(a) for a in v.legal_actions]}")
        apply_inplace(state, ea)
    for s, bot in enumerate(bots):
        bot.on_match_end(make_view(state, s, match_id))
    return GameRecord(
        seed=str(seed), seating=list(range(n)), winners=list(state.winners),
        round_winners=[list(r["winners"]) for r in state.rounds], tokens=list(state.tokens),
        state=state if keep_state else None)


def run(bots: Sequence[Bot], ruleset: str = "classic", games: int = 100, seed: str | int = 1, *,
        tokens_to_win: int | None = None, names: Sequence[str] | None = None,
        progress: IO[str] | None = None,
        on_game: Callable[[int, GameRecord], None] | None = None,
        budget_ms: float | None = None) -> ArenaResult:
    """Play ``games`` matches between ``bots`` (one seat each, 2 to 6 of them), rotating seats.
    ``progress`` (e.g. ``sys.stderr``) gets a plain-text progress bar. ``budget_ms`` sets the
    ``budget`` (CPU seconds per move) of every bot that has one."""
    n = len(bots)
    if not 2 <= n <= 6:
        raise ArenaError(f"an arena needs 2 to 6 bots, not {n}")
    if len({id(b) for b in bots}) != n:
        raise ArenaError("give each seat its own bot instance")
    if budget_ms is not None and not (isinstance(budget_ms, (int, float))
                                      and 0 < budget_ms <= 600_000):
        raise ArenaError(f"budget_ms must be a number of milliseconds from 0 to 600000, "
                         f"not {budget_ms!r}")
    for i, b in enumerate(bots):
        b.rng = random.Random(f"{seed}:bot:{i}")
        if budget_ms is not None and hasattr(b, "budget"):
            b.budget = budget_ms / 1000
    result = ArenaResult(ruleset, n, str(seed), [
        BotResult(name, by_seat=[Rate() for _ in range(n)])
        for name in (names or bot_names(bots))], budget_ms=budget_ms)
    bar = _Progress(games, progress) if progress is not None else None
    start = time.perf_counter()
    for g in range(games):
        seating = [(s - g) % n for s in range(n)]  # bot index at each seat: bot i sits at i+g
        rec = play_match([bots[i] for i in seating], ruleset, seed=f"{seed}:{g}",
                         tokens_to_win=tokens_to_win, match_id=f"arena:{seed}:{g}",
                         move_seconds=[result.bots[i].move_seconds for i in seating])
        rec.seating = seating
        result.games += 1
        result.rounds += len(rec.round_winners)
        for s, i in enumerate(seating):
            br = result.bots[i]
            won = s in rec.winners
            br.games.played += 1
            br.games.wins += won
            br.by_seat[s].played += 1
            br.by_seat[s].wins += won
            br.rounds.played += len(rec.round_winners)
            br.rounds.wins += sum(1 for w in rec.round_winners if s in w)
            br.tokens += rec.tokens[s]
        if on_game is not None:
            on_game(g, rec)
        if bar is not None:
            bar.update(g + 1, time.perf_counter() - start)
    result.seconds = time.perf_counter() - start
    if bar is not None:
        bar.close(result.seconds)
    return result


class _Progress:
    """``[#####.....] 1200/2000 games  60%  812 games/s`` on one line (a terminal) or a line
    every 10% (a file or pipe)."""

    def __init__(self, total: int, out: IO[str], width: int = 30) -> None:
        self.total = max(1, total)
        self.out = out
        self.width = width
        self.tty = bool(getattr(out, "isatty", lambda: False)())
        self.last = 0.0
        self.last_decile = -1

    def _line(self, done: int, secs: float) -> str:
        filled = self.width * done // self.total
        rate = done / secs if secs > 0 else 0.0
        return (f"[{'#' * filled}{'.' * (self.width - filled)}] {done}/{self.total} games "
                f"{100 * done // self.total:3d}%  {rate:.0f} games/s")

    def update(self, done: int, secs: float) -> None:
        if self.tty:
            now = time.monotonic()
            if now - self.last >= 0.1 or done == self.total:
                self.last = now
                self.out.write("\r" + self._line(done, secs))
                self.out.flush()
        else:
            decile = 10 * done // self.total
            if decile != self.last_decile:
                self.last_decile = decile
                self.out.write(self._line(done, secs) + "\n")
                self.out.flush()

    def close(self, secs: float) -> None:
        if self.tty:
            self.out.write("\n")
            self.out.flush()


__all__ = ["ArenaError", "ArenaResult", "BotResult", "GameRecord", "Rate", "make_view",
           "play_match", "run", "wilson"]
