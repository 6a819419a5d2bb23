"""llsdk.sim: sampled states never contradict the seat's view (R29-R31), never rule out the
true state, and on small positions match the exact posterior computed by brute force with the
engine itself (every hidden deal replayed, kept when it shows the seat the same events)."""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

import pytest
from llsdk import arena, sim
from llsdk.arena import make_view
from llsdk.cards import CARDS, COPIES, VALUES

from service import engine
from service.engine import MatchState

INDEX = {c: i for i, c in enumerate(CARDS)}


# --------------------------------------------------------------------------- helpers


def random_states(ruleset: str, players: int, games: int, seed: str,
                  two_player_setup: str = "three-up") -> Any:
    """Every decision point of ``games`` random matches: (state, seat to act)."""
    rng = random.Random(seed)
    for g in range(games):
        s = engine.new_match(ruleset, players, seed=f"{seed}:{g}",
                             two_player_setup=two_player_setup)
        while s.status == "active":
            yield s, s.turn
            s, _ = engine.apply(s, rng.choice(engine.legal_actions(s)))


def unchanged_since(events: list[Any], seq: int, seat: int) -> bool:
    """Whether ``seat``'s card can't have changed after event ``seq``: no turn of its own, no
    king trade or prince aimed at it since."""
    for e in events:
        if e.seq <= seq:
            continue
        d = e.data
        if e.type == "turn" and d["seat"] == seat:
            return False
        if e.type == "play" and d.get("card") in ("king", "prince") and seat in (
                d.get("seat"), d.get("target")):
            return False
    return True


def check_consistent(state: MatchState, sampled: MatchState, seat: int) -> None:
    """Everything the seat sees of ``sampled`` equals what it sees of the real ``state``, and
    the private facts it holds are true in ``sampled``."""
    real, fake = engine.view(state, seat), engine.view(sampled, seat)
    for key in ("hand", "players", "deck_count", "face_up", "set_aside_count", "legal_actions",
                "turn", "round", "tokens_to_win", "ruleset"):
        assert fake[key] == real[key], key
    # exact counting: the hidden cards complete the deck
    every = sampled.deck + sampled.aside + sampled.face_up + [c for h in sampled.hands
                                                                for c in h]
    every += [c for d in sampled.discards for c in d]
    assert Counter(every) == Counter(engine.get_ruleset(state.ruleset).deck())
    events = [e for e in state.events[state.round_start_seq:] if e.visible_to(seat)]
    for e in events:
        d = e.data
        if e.type == "priest_saw" and d["seat"] == seat:  # R13
            t = d["target"]
            if not state.eliminated[t] and unchanged_since(events, e.seq, t):
                assert sampled.hands[t][0] == INDEX[d["card"]]
        elif e.type == "baron_compared" and not state.eliminated[d["target"]] \
                and not state.eliminated[d["seat"]]:  # R14 (a tie: both still in)
            other, card = (d["target"], d["target_card"]) if d["seat"] == seat else \
                          (d["seat"], d["card"])
            if unchanged_since(events, e.seq, other):
                assert sampled.hands[other][0] == INDEX[card]
        elif e.type == "king_swapped":  # R18: the other side holds what this seat gave
            other, gave = (d["target"], d["gave"]) if d["seat"] == seat else \
                          (d["seat"], d["received"])
            if not state.eliminated[other] and unchanged_since(events, e.seq, other):
                assert sampled.hands[other][0] == INDEX[gave]
        elif e.type == "play" and d["card"] == "guard" and d.get("target") not in (None, seat) \
                and not d["hit"]:  # R12: a miss rules the named card out
            t = d["target"]
            if not state.eliminated[t] and unchanged_since(events, e.seq, t):
                assert INDEX[d["guess"]] not in sampled.hands[t][:1]
        elif e.type == "chancellor_returned" and d["seat"] == seat:  # R17: the bottom order
            later = [x for x in events if x.seq > e.seq and x.type == "chancellor_return"]
            bottom = [INDEX[c] for c in d["bottom"]]
            if not later and len(state.deck) >= len(bottom):
                assert sampled.deck[-len(bottom):] == bottom
    # the face-down cards and the deck are hidden: nothing else to check


def truth(state: MatchState, sampler: sim.Sampler) -> tuple[int, ...]:
    out = []
    for i, p in enumerate(sampler.hidden):
        second = p == sampler.extra and i == len(sampler.hidden) - 1
        out.append(state.hands[p][1 if second else 0])
    return tuple(out)


# --------------------------------------------------------------------------- properties


@pytest.mark.parametrize("ruleset,players,setup", [
    ("classic", 2, "three-up"), ("classic", 3, "three-up"), ("classic", 4, "three-up"),
    ("2019", 2, "three-down-one-up"), ("2019", 4, "three-up"), ("2019", 6, "three-up"),
    ("2019-classic", 3, "three-up"),
])
def test_r29_r31_samples_never_contradict_the_view(ruleset: str, players: int,
                                                   setup: str) -> None:
    """At every decision of random matches, for the seat to act and for a seat waiting: each
    sampled state shows that seat exactly its view (hand, piles, counts, flags, legal actions)
    and keeps every private fact true; the true hands always have positive posterior."""
    rng = random.Random(7)
    checked = 0
    for state, actor in random_states(ruleset, players, 6, f"prop:{ruleset}{players}", setup):
        for seat in (actor, (actor + 1) % players):
            if state.eliminated[seat]:
                continue
            if seat != actor and state.phase == "chancellor":
                with pytest.raises(sim.SimError):
                    sim.Sampler(make_view(state, seat))
                continue
            sampler = sim.Sampler(make_view(state, seat))
            for _ in range(3):
                check_consistent(state, sampler.sample(rng), seat)
            if len(sampler.hidden) <= 3:
                assert sampler.posterior().get(truth(state, sampler), 0.0) > 0
            checked += 1
    assert checked > 100


def test_samples_play_on_with_the_engine() -> None:
    """A sampled state is a real engine state: it round-trips through JSON and plays to the
    end of the match."""
    rng = random.Random(3)
    for state, seat in list(random_states("2019", 4, 2, "playon"))[::7]:
        s = sim.Sampler(make_view(state, seat)).sample(rng)
        assert MatchState.from_json(s.to_json()) == s
        while s.status == "active":
            engine.apply_inplace(s, rng.choice(engine.legal_actions(s)))
        assert s.winners



def test_default_rollouts_play_without_a_log_and_score_the_same() -> None:
    """The default random playout keeps no event log (MatchState.log off meanwhile, back on
    after) and plays the same moves as the same random policy given explicitly, which sees the
    state with its log."""
    rng = random.Random(5)
    checked = 0
    for state, seat in list(random_states("2019", 4, 2, "unlogged"))[::9]:
        s = sim.Sampler(make_view(state, seat)).sample(rng)
        a, b = s.clone(), s.clone()
        r = random.Random(checked)
        got = sim.rollout(a, seat, r)
        r = random.Random(checked)
        want = sim.rollout(b, seat, r, lambda st, g: g.choice(engine.legal_actions(st)))
        assert got == want and a.rounds[-1] == b.rounds[-1]
        assert a.log and a.events == [] and len(b.events) > 2
        assert not sim.Sampler(make_view(state, seat)).sample(rng, log=False).log
        checked += 1
    assert checked > 5

def test_a_spectator_view_cannot_be_sampled() -> None:
    s = engine.new_match("classic", 2, seed=1)
    v = make_view(s, 0)
    v.seat = None
    with pytest.raises(sim.SimError):
        sim.Sampler(v)


def test_opponent_model_r11_countess_and_princess() -> None:
    m = sim.OpponentModel(keep_high=0.0)
    assert m.play_prob(INDEX["guard"], INDEX["king"], "classic") == 0.5
    assert m.play_prob(INDEX["king"], INDEX["countess"], "2019") == 0.0  # R11
    assert m.play_prob(INDEX["countess"], INDEX["prince"], "2019") == 1.0
    assert m.play_prob(INDEX["princess"], INDEX["guard"], "classic") < 0.05


def plays_high_table() -> sim.PlayTable:
    """A made-up play table unlike "keeps the higher card": 9 plays of the higher card of a
    pair for 1 of the lower (classic values; the spy and chancellor never seen)."""
    values = [VALUES["classic"].get(c, -1) for c in CARDS]
    counts = [[9 if values[y] > values[x] >= 0 else 1 if values[x] > values[y] >= 0 else 0
               for x in range(len(CARDS))] for y in range(len(CARDS))]
    return sim.PlayTable.from_counts(counts, trust=0.9)


def test_play_table_shares_r11_and_twins() -> None:
    """A table's share of plays, blended with an even choice by ``trust`` (a Laplace prior
    first); R11 and twins exact whatever the table says; a pair never seen is an even choice."""
    guard, king, countess, prince = (INDEX[c] for c in ("guard", "king", "countess", "prince"))
    counts = [[0] * len(CARDS) for _ in CARDS]
    counts[guard][king], counts[king][guard] = 8, 0  # played guard and kept king 8 times
    counts[king][countess] = 50  # impossible under R11: ignored
    m = sim.PlayTable.from_counts(counts, trust=0.9)
    assert m.play_prob(guard, king, "classic") == pytest.approx(0.9 * 9 / 10 + 0.05)
    assert m.play_prob(king, guard, "classic") == pytest.approx(0.9 * 1 / 10 + 0.05)
    assert m.play_prob(king, countess, "classic") == 0.0  # R11
    assert m.play_prob(countess, prince, "2019") == 1.0
    assert m.play_prob(guard, guard, "classic") == 1.0
    assert m.play_prob(prince, guard, "classic") == pytest.approx(0.5)


@pytest.mark.parametrize("ruleset", ["classic", "2019"])
def test_r11_r16_random_player_model_plays_either_card_half_the_time(ruleset: str) -> None:
    """The random bot picks uniformly among the distinct cards it may play: either card of a
    pair half the time, the Princess too (R16: it then leaves the round), and the Countess
    alone when a King or Prince is with her (R11)."""
    m = sim.RANDOM_PLAYER
    kinds = [INDEX[c] for c in COPIES[ruleset]]
    forced = {INDEX["king"], INDEX["prince"]}
    for x in kinds:
        for y in kinds:
            p = m.play_prob(x, y, ruleset)
            if x == y:
                assert p == 1.0
            elif x == INDEX["countess"] and y in forced:
                assert p == 1.0
            elif y == INDEX["countess"] and x in forced:
                assert p == 0.0
            else:
                assert p == 0.5, (CARDS[x], CARDS[y])


# --------------------------------------------------------------------------- exact posterior


def brute_force(state: MatchState, actions: list[Any], deck: list[int], seat: int,
                model: sim.OpponentModel) -> dict[tuple[int, ...], float]:
    """The exact posterior of (each other seat's hand..., the face-down card) given ``seat``'s
    view, for a round-1 position reached by ``actions`` from ``deck`` (no chancellor): every
    assignment of the deck places ``seat`` did not see is replayed with the engine, kept when
    ``seat`` sees the same events, and weighted by its shuffle probability times the opponent
    model's chance of each opponent play."""
    rs = state.ruleset
    n = state.players
    # Which deck place went to whom: aside, face up (2 players), the deal, then every draw.
    places: list[int | None] = [None]  # None: nobody (face down); -1: face up; else the seat
    if n == 2:
        places += [-1, -1, -1]
    for e in state.events:
        if e.type == "dealt":
            places.append(e.data["seat"])
        elif e.type == "turn":
            places.append(e.data["seat"])
        elif e.type == "play" and e.data.get("drew_from") == "deck":
            places.append(e.data["target"])
    k = len(places)
    fixed = {i: deck[i] for i, who in enumerate(places) if who in (seat, -1)}
    hidden = [i for i in range(k) if i not in fixed]
    pool = Counter(engine.get_ruleset(rs).deck())
    pool.subtract(fixed.values())
    want = [e for e in engine.view(state, seat)["events"]]
    out: dict[tuple[int, ...], float] = {}

    def assign(i: int, chosen: dict[int, int], left: Counter[int], prior: float) -> None:
        if i == len(hidden):
            order = [chosen.get(j, fixed.get(j, -1)) for j in range(k)]
            order += sorted(left.elements())
            s = engine.new_match(rs, n, seed=state.seed, first_seat=state.first_seat,
                                 deck=order)
            w = prior
            for a in actions:
                if not engine.is_legal(s, a):
                    return
                if s.turn != seat:
                    hand = list(s.hands[s.turn])
                    hand.remove(a.card)
                    w *= model.play_prob(a.card, hand[0], rs)
                engine.apply_inplace(s, a)
            if w == 0 or engine.view(s, seat)["events"] != want:
                return
            key = tuple(s.hands[p][0] for p in range(n) if p != seat
                        and not s.eliminated[p]) + (s.aside[0],)
            out[key] = out.get(key, 0.0) + w
            return
        total = sum(left.values())
        for c in sorted(left):
            if left[c] > 0:
                left[c] -= 1
                chosen[hidden[i]] = c
                assign(i + 1, chosen, left, prior * (left[c] + 1) / total)
                left[c] += 1
        chosen.pop(hidden[i], None)

    assign(0, {}, pool, 1.0)
    z = sum(out.values())
    return {key: v / z for key, v in out.items()}


def sampler_joint(sp: sim.Sampler) -> dict[tuple[int, ...], float]:
    """The sampler's exact joint of (hidden hands..., face-down card): the face-down card is
    uniform among the cards left once the hands are dealt."""
    out: dict[tuple[int, ...], float] = {}
    free = sum(sp.pool) - len(sp.hidden)
    for hands, p in sp.posterior().items():
        left = list(sp.pool)
        for c in hands:
            left[c] -= 1
        for c, m in enumerate(left):
            if m > 0:
                key = hands + (c,)
                out[key] = out.get(key, 0.0) + p * m / free
    return out


def chi_square_critical(df: int, z: float = 3.09) -> float:
    """The chi-square value exceeded with probability 0.001 (Wilson-Hilferty)."""
    h = 2 / (9 * df)
    return df * (1 - h + z * math.sqrt(h)) ** 3


def scripted(ruleset: str, players: int, seed: int, turns: int,
             ) -> tuple[MatchState, list[Any], list[int]]:
    """Round 1 of a match from a seeded deck, ``turns`` random (not princess) plays in, at
    seat 0's turn."""
    rng = random.Random(seed)
    deck = engine.get_ruleset(ruleset).deck()
    rng.shuffle(deck)
    s = engine.new_match(ruleset, players, seed=seed, first_seat=0, deck=deck)
    actions: list[Any] = []
    while len(actions) < turns or s.turn != 0:
        legal = [a for a in engine.legal_actions(s) if a.card != 9] or engine.legal_actions(s)
        a = rng.choice(legal)
        before = s.round
        nxt, _ = engine.apply(s, a)
        if nxt.round != before or nxt.status != "active":
            raise ValueError("the round ended")
        s = nxt
        actions.append(a)
    return s, actions, deck


def positions(players: int, turns: int, count: int) -> list[tuple[int, int]]:
    found = []
    for seed in range(500):
        try:
            s, actions, _ = scripted("classic", players, seed, turns)
        except ValueError:
            continue
        if any(e.type in ("priest_saw", "baron_compared", "king_swapped")
               or (e.type == "play" and e.data.get("card") == "guard") for e in s.events):
            found.append((seed, turns))
        if len(found) == count:
            break
    return found


@pytest.mark.parametrize("seed,turns", positions(2, 4, 4) + positions(2, 6, 2))
@pytest.mark.parametrize("model", [sim.OpponentModel(keep_high=0.0),
                                   sim.OpponentModel(keep_high=0.6), sim.RANDOM_PLAYER,
                                   plays_high_table()],
                         ids=["uniform", "keeps-high", "random-player", "play-table"])
def test_samples_match_the_exact_posterior_classic_2p(seed: int, turns: int,
                                                      model: sim.OpponentModel) -> None:
    """On small classic 2-player positions the sampler's posterior of (opponent's hand,
    face-down card) equals the brute-force posterior, and 3000 samples (fixed seed) pass a
    chi-square test against it at the 0.1 % level."""
    state, actions, deck = scripted("classic", 2, seed, turns)
    exact = brute_force(state, actions, deck, 0, model)
    sp = sim.Sampler(make_view(state, 0), model)
    mine = sampler_joint(sp)
    assert set(mine) == set(exact)
    for key, p in exact.items():
        assert mine[key] == pytest.approx(p, abs=1e-9)
    rng = random.Random(seed)
    n = 3000
    counts: Counter[tuple[int, ...]] = Counter()
    for _ in range(n):
        s = sp.sample(rng)
        counts[(s.hands[1][0], s.aside[0])] += 1
    assert set(counts) <= set(exact)
    chi2 = sum((counts[k] - n * p) ** 2 / (n * p) for k, p in exact.items())
    assert chi2 < chi_square_critical(max(1, len(exact) - 1))


@pytest.mark.parametrize("seed", [s for s, _ in positions(3, 2, 2)])
def test_samples_match_the_exact_posterior_classic_3p(seed: int) -> None:
    """Two hidden hands drawn from one pool (cards without replacement): the joint matches the
    brute force exactly."""
    model = sim.OpponentModel()
    state, actions, deck = scripted("classic", 3, seed, 2)
    exact = brute_force(state, actions, deck, 0, model)
    sp = sim.Sampler(make_view(state, 0), model)
    mine = sampler_joint(sp)
    assert set(mine) == set(exact)
    for key, p in exact.items():
        assert mine[key] == pytest.approx(p, abs=1e-9)


def test_doctests_and_the_readme_example_run() -> None:
    """The module's doctests pass, and its docstring's example (a flat Monte Carlo bot) plays
    legal moves in the arena."""
    import doctest

    from llsdk import Bot, View, arena
    from llsdk.models import Action

    assert doctest.testmod(sim).failed == 0

    class FlatMonteCarlo(Bot):
        def choose(self, view: View) -> Action:
            sampler = sim.Sampler(view)
            score = dict.fromkeys(view.legal_actions, 0.0)
            for _ in range(5):
                state = sampler.sample(self.rng)
                for action in score:
                    score[action] += sim.rollout(state.clone(), view.seat or 0, self.rng,
                                                 first=sim.to_engine(action))
            return max(score, key=lambda a: score[a])

    result = arena.run([FlatMonteCarlo(), FlatMonteCarlo()], "2019", games=2, seed=4)
    assert result.games == 2


@pytest.mark.parametrize("opponent,favoured", [("random_bot.py", "random"),
                                                ("counting_bot.py", "keeps high")])
def test_evidence_tells_a_random_player_from_one_that_keeps_high_cards(opponent: str,
                                                                        favoured: str) -> None:
    """Summed over the rounds of a few matches, the opponent's plays are likelier under the
    model that matches how it plays: uniform for the random bot, "keep the higher card" for the
    counting bot (which plays its lower card about 80 % of the time)."""
    import os

    from llsdk.cli import load_bot

    bots_dir = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "bots")
    models = {"random": sim.OpponentModel(keep_high=0.0),
              "keeps high": sim.OpponentModel(keep_high=0.6)}
    last: dict[tuple[int, int], Any] = {}  # (game, round) -> seat 0's last view

    for g in range(6):
        def watch(state: MatchState, seat: int, view: Any, g: int = g) -> None:
            if seat == 0:
                last[(g, state.round)] = view

        players = [load_bot(os.path.join(bots_dir, "random_bot.py")),
                   load_bot(os.path.join(bots_dir, opponent))]
        for i, b in enumerate(players):
            b.rng = random.Random(f"ev:{g}:{i}")
        arena.play_match(players, "classic", seed=f"ev:{g}", observer=watch)
    total = dict.fromkeys(models, 0.0)
    for view in last.values():
        for name, model in models.items():
            total[name] += sim.Sampler(view, model).seat_log_evidence(1)
    other = next(n for n in models if n != favoured)
    assert total[favoured] > total[other] + 2, total
