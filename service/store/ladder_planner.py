"""The ladder's planner: which bots meet at which tables, and in which seats. Pure: plain data in
(the ladder's settings, the free bots, their records, a seeded ``random.Random``), tables of
player ids out, each in seat order; no Redis (``ladders.form_matches`` reads the pool and writes
the matches).

The rules (one scheduling pass, ``ladders.form_matches``, calls :func:`plan_tables` once):

- Pool (chosen by the store): entered bots that polled within the ladder's presence window, are
  not benched and play fewer than ``max_concurrent`` of this ladder's matches.
- Who plays: when the pool is not a multiple of the table size, the bots that sit this pass out
  are the ones with the most *recent* games (a count that halves every ``RECENT_HALF_LIFE_S``),
  the least uncertain first; seeds are taken in the opposite order (few recent games and high
  uncertainty first), ties at random.
- With whom: each seed is joined by the bots closest to it in mu, with Gaussian noise (so
  pairings vary), and a penalty for anyone who sat at its last table (or at the last table of a
  bot already chosen): a rematch happens only when nothing else is free.
- Rematches wait: a table that is exactly the seed's previous table is held back (its bots stay
  free) while other present bots are still playing and may come free, for at most the ladder's
  ``rematch_hold_s`` after its bots finished (two scheduling intervals by default). Without this, bots that finish
  together (the two of a duel, the four of a table) were the whole pool of the next pass and
  were seated together again: a quarter of all duels and a third of all tables were immediate
  rematches among eight bots.
- Seats: each table is seated by the permutation that puts every bot where it has sat least
  (the cost of a seat grows fourfold per game above the bot's least-used seat), so seat counts
  stay within one of even.

The pass is O(n log n) in the pool (sorting by priority and by mu; a linked list over the mu
order finds a seed's free neighbours), so 10,000 entered bots take well under a second to plan
(``bench/ladder.py``)."""

from __future__ import annotations

import itertools
import random
import time

from .ladder_config import REMATCH_HOLD_PASSES, LadderConfig
from .rating import MODEL, RECENT_HALF_LIFE_S, Record

__all__ = ["NOISE", "RECENT_HALF_LIFE_S", "REMATCH_HOLD_PASSES", "REPEAT_PENALTY", "WINDOW",
           "plan_tables"]

#: how far apart in mu two bots may be and still look as close as a rematch does
REPEAT_PENALTY = 2 * MODEL.sigma
#: standard deviation of the noise added to mu distances when filling a table
NOISE = MODEL.sigma / 2
#: candidates looked at on each side of a seed (in mu order) per seat to fill
WINDOW = 8


_PERMUTATIONS: dict[int, list[tuple[int, ...]]] = {}


def _seat_order(group: list[str], recs: dict[str, Record], rng: random.Random) -> list[str]:
    """The seating that puts each bot where it has sat least (ties broken at random). A seat
    costs 4 ** (games in it - games in the bot's least-used seat), so fixing a bot that is two
    games off in one seat beats keeping two others exactly even."""
    n = len(group)
    cost = [[4.0 ** (c - min(recs[p].seats[:n])) for c in recs[p].seats[:n]] for p in group]
    if n > 6:  # too many permutations: each bot in turn takes its cheapest free seat
        out: list[str | None] = [None] * n
        for k in sorted(range(n), key=lambda k: -max(cost[k])):
            seat = min((s for s in range(n) if out[s] is None),
                       key=lambda s: (cost[k][s], rng.random()))
            out[seat] = group[k]
        return [p for p in out if p is not None]
    perms = _PERMUTATIONS.get(n)
    if perms is None:
        perms = _PERMUTATIONS[n] = list(itertools.permutations(range(n)))
    best = min(perms, key=lambda perm: (sum(cost[k][perm[k]] for k in range(n)), rng.random()))
    seated = [""] * n
    for k, seat in enumerate(best):
        seated[seat] = group[k]
    return seated


def plan_tables(lad: LadderConfig, pool: list[str], recs: dict[str, Record],
                rng: random.Random, *, now: float | None = None,
                hold_s: float = 0.0) -> list[list[str]]:
    """Group available bots into seated tables (the rules: the module docstring).
    ``hold_s``: hold back an exact rematch of a seed's previous table unless all its bots have
    been waiting at least that long (0: never hold)."""
    n = lad.seats
    now = time.time() if now is None else now
    if len(pool) < n:
        return []
    prio = {p: (recs[p].recent_games(now) - recs[p].sigma / MODEL.sigma, rng.random())
            for p in pool}
    ordered = sorted(pool, key=prio.__getitem__)
    ordered = ordered[: len(ordered) - len(ordered) % n]  # the rest sit this pass out
    by_mu = sorted(ordered, key=lambda p: recs[p].mu)
    index = {p: i for i, p in enumerate(by_mu)}
    last = {p: set(recs[p].last_table) for p in ordered}
    m = len(by_mu)
    # a doubly linked list over the mu order: a seed's free neighbours in O(1) each
    nxt = list(range(1, m + 1))
    prv = list(range(-1, m - 1))
    taken = [False] * m

    def take(i: int) -> None:
        taken[i] = True
        a, b = prv[i], nxt[i]
        if a >= 0:
            nxt[a] = b
        if b < m:
            prv[b] = a

    span = WINDOW * (n - 1)
    tables: list[list[str]] = []
    for seed in ordered:
        i = index[seed]
        if taken[i]:
            continue
        take(i)
        cands: list[int] = []
        j = prv[i]
        while j >= 0 and len(cands) < span:
            cands.append(j)
            j = prv[j]
        j, right = nxt[i], 0
        while j < m and right < span:
            cands.append(j)
            j, right = nxt[j], right + 1
        mu = recs[seed].mu
        score = {c: abs(recs[by_mu[c]].mu - mu) + rng.gauss(0.0, NOISE)
                 + (REPEAT_PENALTY if by_mu[c] in last[seed] else 0.0) for c in cands}
        group = [seed]
        for _ in range(n - 1):
            c = min(score, key=lambda c: score[c] + REPEAT_PENALTY * sum(
                1 for g in group[1:] if by_mu[c] in last[g]))
            del score[c]
            take(c)
            group.append(by_mu[c])
        if hold_s > 0 and set(group) == last[seed] | {seed} and any(
                (t := recs[p].last_at) is not None and now - t < hold_s for p in group):
            continue  # an immediate rematch: wait for other bots to come free
        tables.append(_seat_order(group, recs, rng))
    return tables
