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

``--peer-src DIR`` prints only a comparison with another engine, RetiredDemiurge/love-letter
(MIT; a checkout in DIR, never part of this repository: docs/operations.md says how to fetch
it): classic 2p and 4p, the card-first random policy on both engines, both of our builds (the
pure package loaded a second time from the sources, beside the compiled one), each with its
event log and without (``unlogged``: ``new_match(log=False)``, what ``llsdk.sim.rollout``
plays), interleaved slices in this one process, ``ours/peer`` ratios the median of
``--repeats`` runs. ``--against DIR`` adds the pure engine of another checkout of this
repository (a before/after in one process). Then the readers' cost per event: a finished
match's views and their JSON, and its events as stored entries, as the service reads a log.
``--count ENGINE PLAYERS MATCHES`` plays a fixed number of matches on one engine, to count
its instructions under valgrind (docs/operations.md). ``--no-gc`` pauses the cyclic garbage
collector for the run: the difference is what the
collections of the objects a run keeps (the event logs of the matches in play) cost.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from types import ModuleType

import orjson

import service.engine as engine_pkg
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


# --------------------------------------------------------------------------- a peer engine


def load_pure_engine(root: str | None = None) -> ModuleType:
    """A second copy of ``service.engine`` from its pure sources, under another name, so one
    process can time the pure and the compiled builds side by side (the compiled modules are
    bound to their own names; the pure ones import each other relatively). ``LL_ENGINE_PURE``
    is set for that import only, so the copy never puts the compiled folder on its path.
    ``root``: the engine of another checkout of this repository (``--against``) instead."""
    name = "_bench_pure_engine" if root is None else "_bench_against_engine"
    if name in sys.modules:
        return sys.modules[name]
    here = os.path.dirname(os.path.abspath(engine_pkg.__file__ or "")) if root is None \
        else os.path.join(os.path.abspath(root), "service", "engine")
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(here, "__init__.py"), submodule_search_locations=[here])
    if spec is None or spec.loader is None:
        raise ImportError(f"no engine package in {here}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    before = os.environ.get("LL_ENGINE_PURE")
    os.environ["LL_ENGINE_PURE"] = "1"
    try:
        spec.loader.exec_module(module)
    finally:
        if before is None:
            del os.environ["LL_ENGINE_PURE"]
        else:
            os.environ["LL_ENGINE_PURE"] = before
    return module


def ours_rounds(engine: ModuleType, players: int, seconds: float, *, log: bool = True,
                matches: int | None = None) -> float:
    """Our engine, classic rules, the card-first random policy (``peer_policy``) through the
    public API, whole matches, rounds per CPU-second. ``engine`` is one build's package;
    ``log=False`` plays the matches without an event log (``new_match(log=False)``, as
    ``llsdk.sim.rollout`` plays its random playouts). ``matches``: play that many (seeds 1 to
    ``matches``) whatever the time, and return the rounds played (``--count``)."""
    new, step, by_card_of, legal = (engine.new_match, engine.apply_inplace,
                                    engine.legal_actions_by_card, engine.legal_actions)
    rng = random.Random(1)
    choice, rand = rng.choice, rng.random
    rounds = seed = 0
    clock = time.process_time
    start = clock()
    deadline = start + seconds
    while seed < matches if matches is not None else clock() < deadline:
        seed += 1
        s = new("classic", players, seed=seed, log=log)
        while s.status == "active":
            by_card = by_card_of(s)
            if s.phase != "play":
                step(s, choice(legal(s)))
                continue
            hand = s.hands[s.turn]
            acts = by_card.get(hand[int(rand() * len(hand))])
            if acts is None:  # R11: the countess is the only card that may be played
                (acts,) = by_card.values()
            step(s, choice(acts))
        rounds += s.round
    return rounds if matches is not None else rounds / (clock() - start)


def peer_rounds(peer: ModuleType, players: int, seconds: float,
                matches: int | None = None) -> float:
    """RetiredDemiurge's engine (classic rules, 2-4 players), whole games driven as its own
    command-line game drives them (start_turn, apply_action, check_round_end, advance_turn),
    with the same card-first random policy: a card uniformly from ``legal_play_cards``, then a
    target uniformly from ``valid_targets``, then a guess uniformly (any card but the guard).
    Its ``apply_action`` validates each action, as ours does. ``matches``: as in
    :func:`ours_rounds`."""
    rules, state = peer.rules, peer.state
    ct = peer.cards.CardType
    new_game, setup_round, start_turn = rules.new_game, rules.setup_round, rules.start_turn
    legal_play_cards, valid_targets = rules.legal_play_cards, rules.valid_targets
    apply_action, check_round_end = rules.apply_action, rules.check_round_end
    advance_turn, game_over, act = rules.advance_turn, rules.game_over, state.Action
    targeted = {ct.GUARD, ct.PRIEST, ct.BARON, ct.PRINCE, ct.KING}
    guesses = [c for c in ct if c != ct.GUARD]
    names = [f"p{i}" for i in range(players)]
    rng = random.Random(1)
    choice, rand = rng.choice, rng.random
    rounds = 0
    clock = time.process_time
    start = clock()
    deadline = start + seconds
    games = 0
    while games < matches if matches is not None else clock() < deadline:
        games += 1
        game = new_game(names)
        while not game_over(game):
            rs = setup_round(game, rng)
            rounds += 1
            while not rs.round_over:
                me = rs.players[rs.current_player_idx]
                if me.eliminated:
                    advance_turn(rs)
                    continue
                if not start_turn(rs, me.id, rng):
                    check_round_end(game, rs, rng)
                    break
                cards = legal_play_cards(me.hand)
                card = cards[int(rand() * len(cards))]
                target = guess = None
                if card in targeted:
                    targets = valid_targets(rs, me.id, card)
                    if targets:
                        target = choice(targets).id
                        if card == ct.GUARD:
                            guess = choice(guesses)
                apply_action(rs, act(me.id, card, target, guess), rng)
                check_round_end(game, rs, rng)
                if not rs.round_over:
                    advance_turn(rs)
    return rounds if matches is not None else rounds / (clock() - start)


def import_peer(src: str) -> ModuleType:
    """``love_letter.engine`` from a checkout of RetiredDemiurge/love-letter (its ``src``)."""
    root = os.path.join(os.path.abspath(src), "src")
    if not os.path.isdir(os.path.join(root, "love_letter", "engine")):
        raise SystemExit(f"--peer-src: no src/love_letter/engine in {src} (see docs/operations.md)")
    sys.path.insert(0, root)
    pkg = importlib.import_module("love_letter.engine")
    for part in ("cards", "rules", "state"):
        importlib.import_module(f"love_letter.engine.{part}")
    return pkg


def finished_matches(engine: ModuleType, players: int, count: int) -> list[MatchState]:
    """``count`` finished classic matches on ``engine``, the same ones on every build and
    checkout (seeds 1 to ``count``, the same random choices: a match replays identically)."""
    rng = random.Random(4)
    out = []
    for seed in range(1, count + 1):
        s = engine.new_match("classic", players, seed=seed)
        while s.status == "active":
            engine.apply_inplace(s, rng.choice(engine.legal_actions(s)))
        out.append(s)
    return out


def read_match(engine: ModuleType, s: MatchState) -> None:
    """What the service does to show and keep a finished match's events: a seat's view and
    the spectators' (the full record, every event's wire dict), each as JSON, and every event
    as its stored entry (``store.docs.event_json``: ``[seq, round, type, data, to]``)."""
    dumps = orjson.dumps
    dumps(engine.view(s, 0))
    dumps(engine.public_view(s))
    for e in s.events:
        dumps((e.seq, e.round, e.type, e.data, e.to))


def reader_us(engine: ModuleType, matches: list[MatchState], seconds: float) -> float:
    """CPU microseconds per event of :func:`read_match` over ``matches``, again and again."""
    events = sum(len(s.events) for s in matches)
    clock = time.process_time
    done = 0
    start = clock()
    deadline = start + seconds
    while clock() < deadline:
        for s in matches:
            read_match(engine, s)
        done += 1
    return (clock() - start) / (done * events) * 1e6


def compare_peer(src: str, seconds: float, repeats: int, against: str | None = None) -> None:
    """Rounds per CPU-second of the peer and of each of our builds on classic 2p and 4p, in
    interleaved slices of one process; each ratio is the median over ``repeats`` runs of
    ours / peer from the same run. Each build twice: with its event log, as the service plays
    (the peer keeps a log of its own too), and without (``unlogged``: ``log=False``, as
    ``llsdk.sim.rollout`` plays random playouts). ``against``: another checkout of this
    repository whose pure engine runs beside ours (``against``, ``against unlogged``), for a
    before/after in one process. Then the readers' cost (:func:`read_match`) per event."""
    peer = import_peer(src)
    engines: dict[str, ModuleType] = {"pure": load_pure_engine()}
    if BUILD == "mypyc":
        engines["compiled"] = engine_pkg
    else:
        print("engine compiled: 0 (no current mypyc build: run `make engine`)", flush=True)
    if against is not None:
        engines["against"] = load_pure_engine(against)
    builds: dict[str, tuple[ModuleType, bool]] = {}
    for k, eng in engines.items():
        builds[k] = (eng, True)
        builds[f"{k} unlogged"] = (eng, False)
    for players in (2, 4):
        name = f"classic-{players}p"
        ratios: dict[str, list[float]] = {k: [] for k in builds}
        rates: dict[str, list[float]] = {k: [] for k in ("peer", *builds)}
        for _ in range(repeats):
            sums = dict.fromkeys(rates, 0.0)
            for _ in range(SLICES):
                sums["peer"] += peer_rounds(peer, players, seconds / SLICES)
                for k, (eng, log) in builds.items():
                    sums[k] += ours_rounds(eng, players, seconds / SLICES, log=log)
            for k, v in sums.items():
                rates[k].append(v / SLICES)
            for k in builds:
                ratios[k].append(sums[k] / sums["peer"])
        for k, runs in rates.items():
            print(f"{name} {k} engine: {statistics.median(runs):.0f} rounds/cpu-s", flush=True)
        for k, runs in ratios.items():
            print(f"{name} {k}/peer: {statistics.median(runs):.2f} x", flush=True)
    for players in (2, 4):
        name = f"classic-{players}p"
        played = {k: finished_matches(eng, players, 40) for k, eng in engines.items()}
        costs: dict[str, list[float]] = {k: [] for k in engines}
        for _ in range(repeats):
            for k, eng in engines.items():
                costs[k].append(reader_us(eng, played[k], seconds / SLICES))
        for k, runs in costs.items():
            print(f"{name} {k} reader (views + json + stored events of a finished match): "
                  f"{statistics.median(runs):.3f} us/event", flush=True)


def count_rounds(src: str, which: str, players: str, matches: str) -> None:
    """``--count``: a fixed amount of work on one engine, for an instruction count."""
    n, count = int(players), int(matches)
    if which == "peer":
        rounds = peer_rounds(import_peer(src), n, 0.0, matches=count)
    else:
        build, _, unlogged = which.partition("-")
        if build not in ("pure", "compiled") or unlogged not in ("", "unlogged"):
            raise SystemExit(f"--count: no engine {which!r}")
        if build == "compiled" and BUILD != "mypyc":
            raise SystemExit("--count compiled: no current mypyc build (`make engine`)")
        eng = load_pure_engine() if build == "pure" else engine_pkg
        rounds = ours_rounds(eng, n, 0.0, log=not unlogged, matches=count)
    print(f"classic-{n}p {which}: {rounds:.0f} rounds in {count} matches", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0, help="CPU seconds per figure")
    ap.add_argument("--all", action="store_true", help="also 2019 2p and 6p")
    ap.add_argument("--peer-src", metavar="DIR",
                    help="only the side-by-side comparison with a checkout of "
                         "RetiredDemiurge/love-letter in DIR (docs/operations.md)")
    ap.add_argument("--against", metavar="DIR",
                    help="with --peer-src: also the pure engine of another checkout of this "
                         "repository in DIR (a before/after in one process)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="with --peer-src: runs per figure (medians printed)")
    ap.add_argument("--count", nargs=3, metavar=("ENGINE", "PLAYERS", "MATCHES"),
                    help="with --peer-src: play exactly MATCHES classic matches on one ENGINE "
                         "(peer, pure, compiled, pure-unlogged, compiled-unlogged) and print "
                         "the rounds played; under `valgrind --tool=callgrind`, minus the same "
                         "command with 0 matches, the instructions it took (a figure the "
                         "machine's load does not move)")
    ap.add_argument("--no-gc", action="store_true",
                    help="pause the cyclic garbage collector for the whole run (gc.disable), "
                         "to see how much of a figure is collections of the objects kept")
    opts = ap.parse_args()
    sec = opts.seconds
    if opts.no_gc:
        gc.disable()
        print("cyclic garbage collector: paused (--no-gc)", flush=True)
    if opts.peer_src and opts.count:
        count_rounds(opts.peer_src, *opts.count)
        return
    if opts.peer_src:
        compare_peer(opts.peer_src, sec, opts.repeats, opts.against)
        return
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
