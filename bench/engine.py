"""Engine speed: rounds per CPU-second of whole random matches, beside a bare round loop.

Prints one figure a line, ``name: number unit``. Run: ``make bench`` or
``.venv/bin/python bench/engine.py [--seconds S]``. One process, one core; every time is
``time.process_time()`` (CPU seconds of this process), so other processes on a shared machine
change the figures little, and the ratios printed beside them (same run, same workload) even less.

Three loops play the same rules:

- **peer policy**: the random policy other Love Letter engines benchmark with: a card uniformly
  from the hand (the Countess when R11 forces her), then a target uniformly, then a guess
  uniformly; a chancellor return uniformly. Whole matches through the public API
  (``legal_actions``/``new_match``/``apply_inplace``, every check and event included).
- **flat policy**: uniform over the flat ``legal_actions`` list (over-weights the guard: each of
  its target x guess pairs is one entry).
- **bare loop**: the same rules and peer policy written here in plain Python with no events,
  checks, views or state object: the physical reference for "how fast can CPython play a
  round". ``peer/bare`` lines are engine / bare from the same run. The bare loop shuffles with
  one unseeded generator; the engine seeds a generator from ``"<seed>:<round>"`` every round
  (so a stored match replays), which costs about as much as the rest of a bare 2-player round:
  ``peer/bare seeded`` compares with the bare loop paying that too. Both loops pick the card
  with ``random()`` and the rest with ``random.choice``.

Then the cost of one action as the API pays it: ``apply`` + ``view`` + the JSON round trip.

The first line says which engine ran: the mypyc build (``make engine``, which ``make bench``
runs) or the pure package (``LL_ENGINE_PURE=1`` picks it when a build exists).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable, Sequence
from functools import partial

from service.engine import (
    BUILD,
    RULESETS,
    Action,
    Card,
    MatchState,
    apply,
    apply_inplace,
    legal_actions,
    legal_actions_by_card,
    new_match,
    view,
)

CONFIGS = [("classic", 2), ("classic", 4), ("2019", 4)]
EXTRA = [("2019", 2), ("2019", 6)]
SLICES = 5  # each figure is the mean of this many interleaved slices

SPY, GUARD, PRIEST, BARON, HANDMAID, PRINCE, CHANCELLOR, KING, COUNTESS, PRINCESS = range(10)


# --------------------------------------------------------------------------- policies


def peer_policy(rng: random.Random) -> Callable[[MatchState], Action]:
    """A card uniformly from the hand (R11 applied), then a target, then a guess, uniformly.

    ``legal_actions_by_card`` gives each card's legal actions, every target with the same
    guesses, so a uniform action of the card is a uniform target and then a uniform guess.
    """
    choice, rand = rng.choice, rng.random

    def pick(s: MatchState) -> Action:
        by_card = legal_actions_by_card(s)
        if s.phase != "play":
            return choice(legal_actions(s))
        hand = s.hands[s.turn]
        # the card as the bare loop picks it (``rand() < 0.5``): random.choice is Python code
        acts = by_card.get(hand[int(rand() * len(hand))])
        if acts is None:  # R11: the countess is the only card that may be played
            (acts,) = by_card.values()
        return choice(acts)

    return pick


def flat_policy(rng: random.Random) -> Callable[[MatchState], Action]:
    choice = rng.choice
    return lambda s: choice(legal_actions(s))


def engine_rounds(ruleset: str, players: int, seconds: float,
                  policy: Callable[[random.Random], Callable[[MatchState], Action]]) -> float:
    """Whole matches on the engine, counting rounds, per CPU-second."""
    pick = policy(random.Random(1))
    rounds = 0
    seed = 0
    clock = time.process_time
    start = clock()
    deadline = start + seconds
    while clock() < deadline:
        seed += 1
        s = new_match(ruleset, players, seed=seed)
        while s.status == "active":
            apply_inplace(s, pick(s))
        rounds += s.round
    return rounds / (clock() - start)


# --------------------------------------------------------------------------- bare loop


def bare_rounds(ruleset: str, players: int, seconds: float, *, seeded: bool = False) -> float:
    """Rounds per CPU-second of the peer policy in a bare loop: lists and ints, no events, no
    checks, one generator for shuffles and choices. ``seeded``: each round's deck is shuffled by
    a generator seeded from a string, as the engine must (a stored match replays each round from
    its seed), which costs a few microseconds a round."""
    rs = RULESETS[ruleset]
    values = [max(v, 0) for v in rs.values]
    base = rs.deck()
    guessable = [int(c) for c in rs.guessable]
    tiebreak, spy_bonus = rs.discard_tiebreak, rs.spy_bonus
    rng = random.Random(5)
    choice, shuffle, rand = rng.choice, rng.shuffle, rng.random
    n = players
    seats = range(n)
    tokens = [0] * n
    rounds = 0
    clock = time.process_time
    start = clock()
    deadline = start + seconds
    while clock() < deadline:
        for _ in range(50):
            rounds += 1
            deck = base[:]
            if seeded:
                random.Random(f"{rounds}:{rounds % 7}").shuffle(deck)
            else:
                shuffle(deck)
            aside = [deck.pop()]
            if n == 2:
                del deck[-3:]
            hand = [deck.pop() for _ in seats]
            alive = [True] * n
            prot = [False] * n
            disc: list[list[int]] = [[] for _ in seats]
            left = n
            me = 0
            while True:
                prot[me] = False
                x, y = hand[me], deck.pop()
                if x == COUNTESS and y in (PRINCE, KING) or y == COUNTESS and x in (PRINCE, KING):
                    card, keep = COUNTESS, x + y - COUNTESS
                elif rand() < 0.5:
                    card, keep = x, y
                else:
                    card, keep = y, x
                hand[me] = keep
                disc[me].append(card)
                if card in (GUARD, PRIEST, BARON, KING):
                    targets = [p for p in seats if p != me and alive[p] and not prot[p]]
                    if targets:
                        t = choice(targets)
                        if card == GUARD:
                            if hand[t] == choice(guessable):
                                alive[t] = False
                                left -= 1
                                disc[t].append(hand[t])
                        elif card == BARON:
                            vm, vt = values[keep], values[hand[t]]
                            if vm != vt:
                                loser = t if vm > vt else me
                                alive[loser] = False
                                left -= 1
                                disc[loser].append(hand[loser])
                        elif card == KING:
                            hand[me], hand[t] = hand[t], keep
                elif card == PRINCE:
                    targets = [p for p in seats if p != me and alive[p] and not prot[p]]
                    targets.append(me)
                    t = choice(targets)
                    old = hand[t]
                    disc[t].append(old)
                    if old == PRINCESS:
                        alive[t] = False
                        left -= 1
                    else:
                        hand[t] = deck.pop() if deck else aside.pop()
                elif card == HANDMAID:
                    prot[me] = True
                elif card == PRINCESS:
                    alive[me] = False
                    left -= 1
                    disc[me].append(keep)
                elif card == CHANCELLOR and deck:
                    held = [keep, deck.pop()]
                    if deck:
                        held.append(deck.pop())
                    shuffle(held)
                    hand[me] = held.pop()
                    deck[:0] = held  # under the deck (its bottom is index 0 here)
                if left == 1 or not deck:
                    break
                me = (me + 1) % n
                while not alive[me]:
                    me = (me + 1) % n
            live = [p for p in seats if alive[p]]
            if left > 1:
                best = max(values[hand[p]] for p in live)
                winners = [p for p in live if values[hand[p]] == best]
                if len(winners) > 1 and tiebreak:
                    sums = {p: sum(values[c] for c in disc[p]) for p in winners}
                    top = max(sums.values())
                    winners = [p for p in winners if sums[p] == top]
            else:
                winners = live
            for p in winners:
                tokens[p] += 1
            if spy_bonus:
                spies = [p for p in live if SPY in disc[p]]
                if len(spies) == 1:
                    tokens[spies[0]] += 1
    return rounds / (clock() - start)


# --------------------------------------------------------------------------- per action


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


def per_call_us(fn: Callable[..., object], args: Sequence[tuple[object, ...]],
                repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        for a in args:
            fn(*a)
        best = min(best, (time.process_time() - t0) / len(args))
    return best * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0, help="CPU seconds per figure")
    ap.add_argument("--all", action="store_true", help="also 2019 2p and 6p")
    opts = ap.parse_args()
    sec = opts.seconds
    # Which engine this run measures: the mypyc build (`make engine`) or the pure package
    # (no build, a stale one, or LL_ENGINE_PURE=1).
    print(f"engine compiled: {int(BUILD == 'mypyc')} (1: the mypyc build, 0: the pure package)",
          flush=True)
    for ruleset, players in CONFIGS + (EXTRA if opts.all else []):
        name = f"{ruleset}-{players}p"
        # Interleaved slices, so that a change of load on a shared machine hits every loop alike
        loops: dict[str, Callable[[str, int, float], float]] = {
            "bare loop": bare_rounds,
            "bare loop, seeded shuffle": partial(bare_rounds, seeded=True),
            "peer policy": partial(engine_rounds, policy=peer_policy),
            "flat policy": partial(engine_rounds, policy=flat_policy),
        }
        rates: dict[str, list[float]] = {k: [] for k in loops}
        for _ in range(SLICES):
            for k, loop in loops.items():
                rates[k].append(loop(ruleset, players, sec / SLICES))
        rate = {k: sum(v) / len(v) for k, v in rates.items()}
        for k, r in rate.items():
            print(f"{name} {k}: {r:.0f} rounds/cpu-s", flush=True)
        print(f"{name} peer/bare: {100 * rate['peer policy'] / rate['bare loop']:.1f} %")
        print(f"{name} peer/bare seeded: "
              f"{100 * rate['peer policy'] / rate['bare loop, seeded shuffle']:.1f} %", flush=True)

    states = mid_round_states("2019", 4, 2000)
    rng = random.Random(3)
    acts = [(s, rng.choice(legal_actions(s))) for s in states]
    texts = [s.to_json() for s in states]
    print(f"legal_actions: {per_call_us(legal_actions, [(s,) for s in states]):.2f} us")
    print(f"apply: {per_call_us(apply, acts):.2f} us")
    print(f"view: {per_call_us(view, [(s, (s.turn + 1) % 4) for s in states]):.2f} us")
    print(f"state to_json: {per_call_us(MatchState.to_json, [(s,) for s in states]):.2f} us")
    print(f"state from_json: {per_call_us(MatchState.from_json, [(t,) for t in texts]):.2f} us")

    def api_move(text: str, action: object) -> None:
        s = MatchState.from_json(text)
        new, _ = apply(s, action)  # type: ignore[arg-type]
        json.dumps(view(new, s.turn), separators=(",", ":"))
        new.to_json()

    moves = [(t, a.to_dict()) for t, (_, a) in zip(texts, acts, strict=True)]
    print(f"json load+apply+view+dump 4p: {per_call_us(api_move, moves):.2f} us")
    print(f"state json size 4p: {sum(map(len, texts)) / len(texts):.0f} bytes")


if __name__ == "__main__":
    assert Card.PRINCESS == PRINCESS  # the bench's card numbers are the engine's
    main()
