"""Engine speed: random-vs-random rounds per second and per-call costs.

Prints one figure a line, ``name: number unit``. Run: ``make bench`` or
``.venv/bin/python bench/engine.py [--seconds S]``. One process, one core.
"""

from __future__ import annotations

import argparse
import json
import random
import time

from service.engine import (
    MatchState,
    apply,
    apply_inplace,
    legal_actions,
    new_match,
    view,
)

CONFIGS = [("classic", 2), ("classic", 4), ("2019", 2), ("2019", 4), ("2019", 6)]


def rounds_per_second(ruleset: str, players: int, seconds: float) -> float:
    """Play whole matches, random vs random (uniform over legal_actions), counting rounds."""
    rng = random.Random(1)
    rounds = 0
    seed = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        seed += 1
        s = new_match(ruleset, players, seed=seed)
        while s.status == "active":
            apply_inplace(s, rng.choice(legal_actions(s)))
        rounds += s.round
    return rounds / (time.perf_counter() - start)


def mid_round_states(ruleset: str, players: int, count: int) -> list[MatchState]:
    """States a few turns into round 1, with a turn pending."""
    rng = random.Random(2)
    out: list[MatchState] = []
    seed = 0
    while len(out) < count:
        seed += 1
        s = new_match(ruleset, players, seed=seed)
        for _ in range(3):
            if s.round != 1 or s.status != "active":
                break
            apply_inplace(s, rng.choice(legal_actions(s)))
        if s.round == 1 and s.status == "active" and s.phase == "play":
            out.append(s)
    return out


def per_call_us(fn: object, args: list[tuple[object, ...]], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for a in args:
            fn(*a)  # type: ignore[operator]
        best = min(best, (time.perf_counter() - t0) / len(args))
    return best * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    opts = ap.parse_args()
    for ruleset, players in CONFIGS:
        r = rounds_per_second(ruleset, players, opts.seconds)
        print(f"{ruleset}-{players}p rounds/s: {r:.0f} rounds/s", flush=True)

    states = mid_round_states("2019", 4, 2000)
    rng = random.Random(3)
    acts = [(s, rng.choice(legal_actions(s))) for s in states]
    texts = [s.to_json() for s in states]
    print(f"legal_actions: {per_call_us(legal_actions, [(s,) for s in states]):.2f} us")
    print(f"apply: {per_call_us(apply, acts):.2f} us")
    print(f"view: {per_call_us(view, [(s, (s.turn + 1) % 4) for s in states]):.2f} us")

    def api_move(text: str, action: object) -> None:
        s = MatchState.from_json(text)
        new, _ = apply(s, action)  # type: ignore[arg-type]
        json.dumps(view(new, s.turn), separators=(",", ":"))
        new.to_json()

    moves = [(t, a.to_dict()) for t, (_, a) in zip(texts, acts, strict=True)]
    print(f"json load+apply+view+dump 4p: {per_call_us(api_move, moves):.2f} us")
    print(f"state json size 4p: {sum(map(len, texts)) / len(texts):.0f} bytes")


if __name__ == "__main__":
    main()
