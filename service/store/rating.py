"""Rating: the OpenSkill model (Plackett-Luce) and one bot's record on a ladder, and how a finished
match changes the records of its players. Pure: plain data in, plain data out (the ladder store,
``ladders.rate``, reads and writes the records in one transaction).

Why Plackett-Luce: it rates a whole finishing order at once (2 to 6 players, ties allowed). The
leaderboard sorts by the conservative rating ``mu - 3 sigma``: a new bot starts at 0 (mu 25,
sigma 8.33) and rises as its sigma shrinks, so one lucky first win does not top the board."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from openskill.models import PlackettLuce

from .docs import MatchDoc

MODEL = PlackettLuce()
#: the "recent games" count that orders seeds halves over this many seconds
RECENT_HALF_LIFE_S = 3600.0


@dataclass
class Record:
    """One bot's standing on one ladder."""

    mu: float = MODEL.mu
    sigma: float = MODEL.sigma
    games: int = 0
    wins: int = 0
    timeouts: int = 0
    seats: list[int] = field(default_factory=list)  # games played in each seat
    bad_streak: int = 0  # consecutive ladder matches with a timeout or forfeit
    benched_at: float | None = None
    benched_reason: str | None = None
    recent: float = 0.0  # games, decaying with RECENT_HALF_LIFE_S, as of last_at
    last_at: float | None = None  # when its last match was rated
    last_table: list[str] = field(default_factory=list)  # the others at that match

    @property
    def rating(self) -> float:
        """The conservative rating the leaderboard sorts by."""
        return self.mu - 3 * self.sigma

    def recent_games(self, now: float) -> float:
        if self.last_at is None:
            return self.recent
        return self.recent * float( 0.5 ** (max(0.0, now - self.last_at) / RECENT_HALF_LIFE_S))

    @classmethod
    def from_json(cls, raw: bytes | str | None, seats: int) -> Record:
        """The stored record (a new one when ``raw`` is None), with a count for each of
        ``seats`` seats."""
        rec = cls(**json.loads(raw)) if raw else cls()
        if len(rec.seats) < seats:
            rec.seats += [0] * (seats - len(rec.seats))
        return rec

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))


def misconduct(doc: MatchDoc) -> tuple[list[int], list[bool]]:
    """Per seat: how many turns timed out, and whether it timed out or forfeited at all."""
    assert doc.state is not None
    n = doc.seat_count
    timeouts = [0] * n
    for e in doc.state.events:
        d = e.data
        if d.get("timeout") and e.to is None:
            timeouts[d["seat"]] += 1
        elif e.type == "forfeit" and d.get("reason") == "timeout":
            timeouts[d["seat"]] += 1
    bad = [timeouts[i] > 0 or doc.state.forfeited[i] for i in range(n)]
    return timeouts, bad


def apply_result(recs: Sequence[Record], seats: Sequence[str], places: Sequence[int],
                 timeouts: Sequence[int], bad: Sequence[bool], *, now: float,
                 bench_after: int) -> None:
    """Update the records of one finished match in place, seat by seat: ratings from the
    finishing ``places`` (1 = first, ties share a place), games, wins, timeouts, seat counts,
    recent games, last table, and the streak of bad matches (a timeout or a forfeit) that benches
    a bot after ``bench_after`` in a row."""
    new = MODEL.rate([[MODEL.rating(mu=x.mu, sigma=x.sigma)] for x in recs], ranks=list(places))
    for seat, (pid, rec) in enumerate(zip(seats, recs, strict=True)):
        rec.mu, rec.sigma = new[seat][0].mu, new[seat][0].sigma
        rec.games += 1
        rec.wins += int(places[seat] == 1)
        rec.timeouts += timeouts[seat]
        rec.seats[seat] += 1
        rec.recent = rec.recent_games(now) + 1
        rec.last_at = now
        rec.last_table = [p for p in seats if p != pid]
        rec.bad_streak = rec.bad_streak + 1 if bad[seat] else 0
        if rec.bad_streak >= bench_after and rec.benched_at is None:
            rec.benched_at = now
            rec.benched_reason = (f"timed out or forfeited in {rec.bad_streak} "
                                  f"ladder matches in a row")
