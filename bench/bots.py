"""The example bots in the offline arena: the counting bot's strength against the random
baseline, and the arena's speed.

Prints one figure a line, ``name: number unit`` with the 95% (Wilson) interval after it:

    classic-2p counting round win: N % [lo, hi]     counting vs random, classic, 2 players
    classic-2p counting game win: N % [lo, hi]
    2019-4p counting round win: N % [lo, hi]        counting vs 3 random, 2019, 4 players
    2019-4p counting game win: N % [lo, hi]
    classic-2p search vs counting game win: N % [lo, hi]    search bot vs counting bot
    classic-2p search vs counting round win: N % [lo, hi]
    classic-2p search vs counting games: N games    (how many games each search figure played)
    2019-4p search vs 3 counting game win: N % [lo, hi]     one search bot, three counting bots
    2019-4p search vs 3 counting round win: N % [lo, hi]
    classic-2p search round win: N % [lo, hi]       search vs random (the counting bot's test)
    classic-2p search game win: N % [lo, hi]
    2019-4p search round win: N % [lo, hi]          search vs 3 random
    2019-4p search game win: N % [lo, hi]
    ... counting move overruled: N % of M searched moves    (the search's best move beat the
                                                    counting bot's by CONFIDENCE standard errors)
    search time per move median: N ms               CPU time of the search bot's decisions
    search time per move p99: N ms                  (its budget: --budget-ms, default 100)
    arena classic-2p games/s: N games/s             random vs random, deciding from typed views,
                                                    per second of CPU time of one process
    classic-2p posterior keeps-high: N nats          how well the search bot's model of a careful
    classic-2p posterior counting-table: N nats      opponent predicts a counting bot's hidden
    2019-4p posterior ...                           card: the mean log-probability of the true
                                                    card, over every hidden hand at seat 0's
                                                    turns of counting-bot games (--posterior-games)

A game is a whole match, to the ruleset's tokens to win; a round (or game) with several winners
counts as a win for each. Seats rotate between games; results are reproducible for a seed.
The search bot spends about 2 s of CPU per game at the default budget, so its figures use
``--search-games`` (default 100 per figure; each line says how many games it played).
Run: ``make bench`` or ``.venv/bin/python bench/bots.py [--games 2000] [--search-games 100]
[--budget-ms 100] [--seed 1] [--posterior-games 100] [--only search-2p,search-4p,...]
[--jobs 4] [--search-set PRUNE=None]``. ``--jobs N`` shares a search figure's games among N processes (the same deals and
seats as one process; the bots' own random draws differ, so the figures do too, within their
noise): the budget is CPU time, so on a busy machine this only makes the run end sooner.
``--search-set NAME=VALUE`` changes a setting of the search bot (``SearchBot.NAME``) for an
ablation; the same ``--seed`` deals the same games, so two settings compare paired.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

from llsdk import Bot, View, arena
from llsdk.cli import load_bot

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOTS = os.path.join(REPO, "examples", "bots")
COUNTING = os.path.join(BOTS, "counting_bot.py")
RANDOM = os.path.join(BOTS, "random_bot.py")
SEARCH = os.path.join(BOTS, "search_bot.py")


def strength(label: str, ruleset: str, players: int, games: int, seed: str) -> None:
    bots = [load_bot(COUNTING)] + [load_bot(RANDOM) for _ in range(players - 1)]
    result = arena.run(bots, ruleset, games=games, seed=seed)
    me = result.bots[0]
    print(f"{label} counting round win: {me.rounds.percent()}", flush=True)
    print(f"{label} counting game win: {me.games.percent()}", flush=True)


def search_bot(budget_ms: float, settings: dict[str, object]) -> Bot:
    """The search bot at ``budget_ms``, with the class settings of ``--search-set`` (for
    ablations: ``MATCH_AWARE=False`` plays it without that idea) set on this instance."""
    bot = load_bot(SEARCH)
    bot.budget = budget_ms / 1000  # type: ignore[attr-defined]
    for name, value in settings.items():
        setattr(bot, name, value)
    return bot


def parse_settings(items: list[str]) -> dict[str, object]:
    """``["PRUNE=None", "CONFIDENCE=1.0"]`` -> ``{"PRUNE": None, "CONFIDENCE": 1.0}``: names
    the search bot's class has, values Python literals."""
    import ast

    bot_class = type(load_bot(SEARCH))
    out: dict[str, object] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name.isupper() or not hasattr(bot_class, name):
            sys.exit(f"--search-set {item!r}: want NAME=VALUE with NAME a setting of SearchBot")
        try:
            out[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            sys.exit(f"--search-set {item!r}: {value!r} is not a Python literal")
    return out


def _search_job(job: int, jobs: int, against: str, ruleset: str, players: int, games: int,
                seed: str, budget_ms: float, settings: dict[str, object] | None = None,
                ) -> tuple[list[tuple[int, int, int]], list[float], int]:
    """Games ``job``, ``job + jobs``, ... of a search run, dealt and seated as ``arena.run``
    deals and seats game ``g`` (seed ``f"{seed}:{g}"``, the search bot at seat ``g % players``
    turned): per game (won, rounds played, rounds won), the CPU time of each decision and
    the decisions where the search overruled the counting bot."""
    import random

    bot = search_bot(budget_ms, settings or {})
    other = COUNTING if against == "counting" else RANDOM
    bots = [bot] + [load_bot(other) for _ in range(players - 1)]
    for i, b in enumerate(bots):  # the bots' own draws: one stream per job
        b.rng = random.Random(f"{seed}:bot:{i}:job:{job}:{jobs}")
    out = []
    for g in range(job, games, jobs):
        seating = [(s - g) % players for s in range(players)]
        rec = arena.play_match([bots[i] for i in seating], ruleset, seed=f"{seed}:{g}",
                               match_id=f"arena:{seed}:{g}")
        seat = seating.index(0)
        out.append((int(seat in rec.winners), len(rec.round_winners),
                    sum(1 for w in rec.round_winners if seat in w)))
        if len(out) % 10 == 0:
            won = sum(o[0] for o in out)
            print(f"  job {job}/{jobs}: {won} won of {len(out)} games", file=sys.stderr,
                  flush=True)
    return out, bot.stats, bot.overruled  # type: ignore[attr-defined]


def search_strength(label: str, against: str, ruleset: str, players: int, games: int,
                    seed: str, budget_ms: float, times: list[float], jobs: int = 1,
                    settings: dict[str, object] | None = None) -> None:
    """The search bot in seat rotation against ``players - 1`` copies of ``against``. With
    ``jobs`` above 1 the games are shared among that many processes: the same deals and seats
    (the bots' own random draws differ), each move searched on its own CPU time as before."""
    games_won, rounds = arena.Rate(), arena.Rate()
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            parts = list(pool.map(_search_job, range(jobs), [jobs] * jobs, [against] * jobs,
                                  [ruleset] * jobs, [players] * jobs, [games] * jobs,
                                  [seed] * jobs, [budget_ms] * jobs, [settings] * jobs))
        decided = overruled = 0
        for out, stats, over in parts:
            for won, played, rounds_won in out:
                games_won.played += 1
                games_won.wins += won
                rounds.played += played
                rounds.wins += rounds_won
            times += stats
            decided += len(stats)
            overruled += over
    else:
        bot = search_bot(budget_ms, settings or {})
        other = COUNTING if against == "counting" else RANDOM
        bots = [bot] + [load_bot(other) for _ in range(players - 1)]

        def running(g: int, rec: arena.GameRecord) -> None:
            """The figures so far on stderr every 10 games (a long run on a busy machine)."""
            seat = rec.seating.index(0)
            games_won.played += 1
            games_won.wins += seat in rec.winners
            rounds.played += len(rec.round_winners)
            rounds.wins += sum(1 for w in rec.round_winners if seat in w)
            if (g + 1) % 10 == 0:
                print(f"  {label} search vs {against}, {g + 1} games: game win "
                      f"{games_won.percent()}, round win {rounds.percent()}",
                      file=sys.stderr, flush=True)

        arena.run(bots, ruleset, games=games, seed=seed, on_game=running)
        times += bot.stats  # type: ignore[attr-defined]
        decided, overruled = len(bot.stats), bot.overruled  # type: ignore[attr-defined]
    if against == "counting":
        name = f"{label} search vs counting" if players == 2 else \
            f"{label} search vs {players - 1} counting"
        print(f"{name} game win: {games_won.percent()}", flush=True)
        print(f"{name} round win: {rounds.percent()}", flush=True)
    else:
        name = f"{label} search"
        print(f"{name} round win: {rounds.percent()}", flush=True)
        print(f"{name} game win: {games_won.percent()}", flush=True)
    print(f"{name} games: {games} games ({rounds.played} rounds)", flush=True)
    print(f"{name} counting move overruled: {100 * overruled / max(1, decided):.1f} % "
          f"of {decided} searched moves", flush=True)


def posterior(label: str, ruleset: str, players: int, games: int, seed: str) -> None:
    """The search bot's opponent models against counting bots: the mean of log P(true card)
    and how often the likeliest card is the true one, for "keeps its higher card 4 times in 5"
    (the model before the counting bot's play table) and the table the bot uses now."""
    from llsdk import sim
    from llsdk.cards import CARDS

    bot = load_bot(SEARCH)
    models: dict[str, sim.OpponentModel] = {"keeps-high": sim.OpponentModel(keep_high=0.6)}
    logp = {"keeps-high": 0.0, "counting-table": 0.0}
    top = dict.fromkeys(logp, 0)
    seen = 0

    def observe(state: object, seat: int, view: View) -> None:
        nonlocal seen
        if seat != 0 or view.phase != "play":
            return
        models["counting-table"] = bot.models(view)["heuristic"]  # type: ignore[attr-defined]
        for p in view.players:
            if p.seat == seat or p.eliminated or not p.hand_count:
                continue
            true = CARDS[state.hands[p.seat][0]]  # type: ignore[attr-defined]
            seen += 1
            for name, model in models.items():
                probs = sim.Sampler(view, model).hand_probabilities(p.seat)
                logp[name] += math.log(max(probs.get(true, 0.0), 1e-6))
                top[name] += max(probs, key=lambda c: probs[c]) == true

    for g in range(games):
        arena.play_match([load_bot(COUNTING) for _ in range(players)], ruleset,
                         seed=f"{seed}:{g}", observer=observe)
    for name in logp:
        print(f"{label} posterior {name}: {logp[name] / max(1, seen):.3f} nats "
              f"(likeliest card right {100 * top[name] / max(1, seen):.1f} % of {seen} hands)",
              flush=True)


def percentile(xs: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``xs``."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))] if xs else 0.0


def speed(games: int, seed: str) -> None:
    """Per second of this process's CPU time (one core), so that other processes sharing the
    machine do not change the figure; the wall-clock rate is printed to stderr."""
    cpu = time.process_time()
    result = arena.run([load_bot(RANDOM), load_bot(RANDOM)], "classic", games=games,
                       seed=seed)
    cpu = time.process_time() - cpu
    print(f"arena classic-2p games/s: {result.games / cpu:.0f} games/s", flush=True)
    print(f"(wall clock: {result.games_per_second:.0f} games/s)", file=sys.stderr)


GROUPS = ("counting", "search-2p", "search-4p", "search-random", "search-random-2p",
          "search-random-4p", "speed", "posterior")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=2000, help="games per figure (default 2000)")
    ap.add_argument("--search-games", type=int, default=100,
                    help="games per search bot figure (default 100)")
    ap.add_argument("--budget-ms", type=float, default=100.0,
                    help="the search bot's CPU budget per move (default 100)")
    ap.add_argument("--posterior-games", type=int, default=100,
                    help="games per posterior figure (2 players; a third of them with 4)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="processes that share a search figure's games (default 1)")
    ap.add_argument("--search-set", action="append", default=[], metavar="NAME=VALUE",
                    help="a setting of the search bot (SearchBot.NAME), for ablations; repeat")
    ap.add_argument("--seed", default="1")
    ap.add_argument("--only", type=lambda t: set(t.split(",")), default=set(GROUPS),
                    help=f"comma-separated figure groups (default all): {','.join(GROUPS)}")
    opts = ap.parse_args()
    if opts.games < 1 or opts.search_games < 1 or opts.jobs < 1:
        sys.exit("--games, --search-games and --jobs must be positive")
    only = opts.only
    if only - set(GROUPS):
        sys.exit(f"--only: unknown groups {sorted(only - set(GROUPS))}; pick from {GROUPS}")
    if "counting" in only:
        strength("classic-2p", "classic", 2, opts.games, opts.seed)
        strength("2019-4p", "2019", 4, opts.games, opts.seed)
    times: list[float] = []
    g, seed, budget, jobs = opts.search_games, opts.seed, opts.budget_ms, opts.jobs
    sets = parse_settings(opts.search_set)
    if sets:
        print(f"search bot settings: {' '.join(opts.search_set)}", flush=True)
    if "search-2p" in only:
        search_strength("classic-2p", "counting", "classic", 2, g, seed, budget, times, jobs,
                        sets)
    if "search-4p" in only:
        search_strength("2019-4p", "counting", "2019", 4, g, seed, budget, times, jobs,
                        sets)
    if only & {"search-random", "search-random-2p"}:
        search_strength("classic-2p", "random", "classic", 2, g, seed, budget, times, jobs,
                        sets)
    if only & {"search-random", "search-random-4p"}:
        search_strength("2019-4p", "random", "2019", 4, g, seed, budget, times, jobs,
                        sets)
    if times:
        print(f"search time per move median: {1000 * percentile(times, 0.5):.1f} ms "
              f"({len(times)} moves, budget {budget:g} ms)", flush=True)
        print(f"search time per move p99: {1000 * percentile(times, 0.99):.1f} ms", flush=True)
    if "speed" in only:
        speed(opts.games, opts.seed)
    if "posterior" in only:
        posterior("classic-2p", "classic", 2, opts.posterior_games, opts.seed)
        posterior("2019-4p", "2019", 4, max(1, opts.posterior_games * 2 // 5), opts.seed)


if __name__ == "__main__":
    main()
