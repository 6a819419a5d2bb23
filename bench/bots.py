"""The example bots in the offline arena: the counting bot's strength against the random
baseline, and the arena's speed.

Prints one figure a line, ``name: number unit`` with the 95% (Wilson) interval after it:

    classic-2p counting round win: N % [lo, hi]     counting vs random, classic, 2 players
    classic-2p counting game win: N % [lo, hi]
    2019-4p counting round win: N % [lo, hi]        counting vs 3 random, 2019, 4 players
    2019-4p counting game win: N % [lo, hi]
    arena classic-2p games/s: N games/s             random vs random, deciding from typed views,
                                                    per second of CPU time of one process

A game is a whole match, to the ruleset's tokens to win; a round (or game) with several winners
counts as a win for each. Seats rotate between games; results are reproducible for a seed.
Run: ``make bench`` or ``.venv/bin/python bench/bots.py [--games 2000] [--seed 1]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from llsdk import arena
from llsdk.cli import load_bot

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOTS = os.path.join(REPO, "examples", "bots")
COUNTING = os.path.join(BOTS, "counting_bot.py")
RANDOM = os.path.join(BOTS, "random_bot.py")


def strength(label: str, ruleset: str, players: int, games: int, seed: str) -> None:
    bots = [load_bot(COUNTING)] + [load_bot(RANDOM) for _ in range(players - 1)]
    result = arena.run(bots, ruleset, games=games, seed=seed)
    me = result.bots[0]
    print(f"{label} counting round win: {me.rounds.percent()}", flush=True)
    print(f"{label} counting game win: {me.games.percent()}", flush=True)


def speed(games: int, seed: str) -> None:
    """Per second of this process's CPU time (one core), so that other processes sharing the
    machine do not change the figure; the wall-clock rate is printed to stderr."""
    cpu = time.process_time()
    result = arena.run([load_bot(RANDOM), load_bot(RANDOM)], "classic", games=games,
                       seed=seed)
    cpu = time.process_time() - cpu
    print(f"arena classic-2p games/s: {result.games / cpu:.0f} games/s", flush=True)
    print(f"(wall clock: {result.games_per_second:.0f} games/s)", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=2000, help="games per figure (default 2000)")
    ap.add_argument("--seed", default="1")
    opts = ap.parse_args()
    if opts.games < 1:
        sys.exit("--games must be positive")
    strength("classic-2p", "classic", 2, opts.games, opts.seed)
    strength("2019-4p", "2019", 4, opts.games, opts.seed)
    speed(opts.games, opts.seed)


if __name__ == "__main__":
    main()
