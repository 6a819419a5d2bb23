"""Randomized property tests of the rules engine: invariants of random playouts, R32 (views are
a function of the viewer's information), replay determinism and seeding.

Every random choice comes from a seeded ``random.Random`` (never the global one), so a failure
reproduces exactly; assertion messages carry the config, match seed and step.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from service.engine import (
    ACTIVE,
    CHANCELLOR_RETURN,
    FINISHED,
    NAMES,
    PHASE_CHANCELLOR,
    PHASE_PLAY,
    PLAY,
    RULESETS,
    TWO_PLAYER_SETUPS,
    Action,
    Card,
    EngineError,
    Event,
    MatchState,
    apply,
    apply_inplace,
    apply_timeout,
    forfeit,
    forfeit_inplace,
    is_legal,
    legal_actions,
    new_match,
    public_view,
    timeout_action,
    view,
)

PLAYER_COUNTS = {"classic": (2, 3, 4), "2019-classic": (2, 3, 4), "2019": (2, 3, 4, 5, 6)}

# Every ruleset x every allowed player count; two players also with both R6 setups.
CONFIGS: list[tuple[str, int, str]] = [
    (rs, n, setup)
    for rs, counts in PLAYER_COUNTS.items()
    for n in counts
    for setup in (TWO_PLAYER_SETUPS if n == 2 else ("three-up",))
]
CONFIG_IDS = [f"{rs}-{n}p-{setup}" if n == 2 else f"{rs}-{n}p" for rs, n, setup in CONFIGS]

MIN_MATCHES = 5000
MATCHES_PER_CONFIG = -(-MIN_MATCHES // len(CONFIGS))  # ceil: >= 5,000 matches in all
# Two matches in every DEEP_EVERY (one of them with forfeits and timeouts) are "deep": at every
# step they also apply every legal action to a clone, use the immutable ``apply``/``forfeit``
# (checking the input is left unchanged) and check the JSON round trip. Serializing the whole
# event log at every step is quadratic in the match length, so the other matches check the JSON
# round trip only once, at the end; every match checks card conservation and the other
# invariants at every step.
DEEP_EVERY = 24

COUNTESS, KING, PRINCE = int(Card.COUNTESS), int(Card.KING), int(Card.PRINCE)
GUARD = int(Card.GUARD)
TARGETED = {int(Card.GUARD), int(Card.PRIEST), int(Card.BARON), int(Card.KING)}


# --------------------------------------------------------------------------- invariants


def check_state(s: MatchState, full_deck: list[int]) -> None:
    """The per-step invariants (listed in test_random_playouts_keep_invariants)."""
    n = s.players
    hands = s.hands
    # Each card of the ruleset is in exactly one place.
    cards = s.deck + s.aside + s.face_up
    for h in hands:
        cards += h
    for d in s.discards:
        cards += d
    assert sorted(cards) == full_deck, "cards not conserved"
    assert len(hands) == len(s.discards) == len(s.eliminated) == len(s.protected) == n
    for p in range(n):
        if s.forfeited[p]:
            assert s.eliminated[p], f"forfeited seat {p} still in the round"
        if s.eliminated[p]:
            assert not hands[p], f"eliminated seat {p} holds {hands[p]}"
            assert not s.protected[p], f"eliminated seat {p} is protected"
    if s.status == FINISHED:
        assert s.turn == -1, "finished match with a seat to act"
        assert s.winners, "finished match without winners"
        assert legal_actions(s) == []
        reason = s.events[-1].data["reason"]
        assert s.events[-1].type == "match_end"
        # A forfeit can end the round (or the match) in the middle of a turn: the seat that was
        # to act then keeps its 2 (chancellor: 2-3) cards.
        last_turn = max(i for i, e in enumerate(s.events) if e.type == "turn")
        mid_turn = any(e.type == "forfeit" for e in s.events[last_turn:])
        for p in range(n):
            if not s.eliminated[p]:
                assert len(hands[p]) == 1 or mid_turn and len(hands[p]) <= 3, (
                    f"seat {p} ends the match holding {hands[p]}")
        if reason == "tokens":
            assert s.winners == [p for p in range(n) if s.tokens[p] >= s.tokens_to_win]
        else:  # R27: the last non-forfeited player; the match may stop mid-turn
            assert reason == "forfeit"
            assert s.winners == [p for p in range(n) if not s.forfeited[p]]
            assert len(s.winners) == 1
            assert 1 <= len(hands[s.winners[0]]) <= 3
        return
    assert s.status == ACTIVE
    assert max(s.tokens) < s.tokens_to_win, "a player reached the tokens to win mid-match"
    t = s.turn
    # Exactly one player to act.
    assert 0 <= t < n, f"turn {t} is not a seat"
    assert not s.eliminated[t] and not s.forfeited[t], f"seat to act {t} is out"
    assert not s.protected[t], "R9: the seat to act is still protected"
    if s.phase == PHASE_PLAY:
        assert len(hands[t]) == 2, f"seat to act holds {hands[t]} in the play phase"
    else:
        assert s.phase == PHASE_CHANCELLOR, s.phase
        assert len(hands[t]) in (2, 3), f"seat to act holds {hands[t]} in the chancellor phase"
    for p in range(n):
        if p != t and not s.eliminated[p]:
            assert len(hands[p]) == 1, f"seat {p} (not to act) holds {hands[p]}"
    assert sum(1 for e in s.eliminated if not e) >= 2, "an active round with one player left"


def check_legal(s: MatchState, acts: list[Action]) -> None:
    """The legal actions: non-empty, distinct, well targeted, and R11 is never broken."""
    assert acts, "no legal action in an active match"
    assert len(set(acts)) == len(acts), "duplicate legal actions"
    me = s.turn
    hand = s.hands[me]
    if s.phase == PHASE_CHANCELLOR:
        for a in acts:
            assert a.type == CHANCELLOR_RETURN
            assert a.keep is not None and a.bottom is not None
            assert sorted([a.keep, *a.bottom]) == sorted(hand)
        return
    countess_forced = COUNTESS in hand and (KING in hand or PRINCE in hand)
    if countess_forced:
        assert acts == [Action.play(COUNTESS)], f"R11: {hand} allows {acts}"
    others = [q for q in range(s.players)
              if q != me and not s.eliminated[q] and not s.protected[q]]
    for a in acts:
        assert a.type == PLAY and a.card in hand
        if a.card in TARGETED:  # R20a: no target exactly when nobody can be chosen
            assert (a.target is None) == (not others), f"{a} with targets {others}"
        if a.card == PRINCE:
            assert a.target is not None
        if a.card == GUARD and a.target is not None:
            assert a.guess is not None and a.guess != GUARD, f"R12: {a}"
        # R11 (checked for each action, not only through the forced branch above)
        assert not (a.card in (KING, PRINCE) and COUNTESS in hand), f"R11 broken: {a}"
        t = a.target
        if t is not None:
            assert 0 <= t < s.players and not s.eliminated[t]
            assert t == me or not s.protected[t], f"{a} targets a protected seat"
            assert t != me or a.card == PRINCE, f"{a} targets its own player"


def check_events(s: MatchState, start: int, returned: Sequence[Event]) -> None:
    """The events just produced are the tail of the log, numbered ``start``, ``start + 1``..."""
    assert list(returned) == s.events[start:]
    prev = s.events[start - 1].round if start else 1
    for i in range(start, len(s.events)):
        e = s.events[i]
        assert e.seq == i, f"event {i} has seq {e.seq}"
        assert prev <= e.round <= max(s.round, 1), f"event {i} has round {e.round}"
        prev = e.round


def check_round_trip(s: MatchState) -> str:
    """Assert the JSON round trip gives an equal state; return the JSON text."""
    text = s.to_json()
    assert MatchState.from_json(text) == s, "JSON round trip changed the state"
    return text


def choose(rng: random.Random, acts: list[Action]) -> Action:
    """Half the time uniform over actions; else a uniform card first (so a guard's many
    target x guess actions don't crowd the other card out)."""
    if rng.random() < 0.5:
        return rng.choice(acts)
    def card_of(a: Action) -> int:
        card = a.card if a.type == PLAY else a.keep
        assert card is not None
        return card

    card = rng.choice(sorted({card_of(a) for a in acts}))
    return rng.choice([a for a in acts if card_of(a) == card])


def step_bound(s: MatchState) -> int:
    """Steps a match can take: every round gives at least one token, so there are at most
    players * (tokens_to_win - 1) + 1 rounds; a round has at most one turn per card left in the
    deck after the deal, each turn at most two decisions; plus one forfeit per seat."""
    rs = RULESETS[s.ruleset]
    rounds = s.players * (s.tokens_to_win - 1) + 1
    return rounds * 2 * rs.deck_size + s.players


def play_match(rng: random.Random, ruleset: str, players: int, setup: str, *, deep: bool,
               chaos: bool) -> tuple[MatchState, int]:
    tokens = None if rng.random() < 0.4 else rng.randint(1, 3)
    first = rng.randrange(players) if rng.random() < 0.3 else None
    seed = rng.getrandbits(48)
    s = new_match(ruleset, players, seed=seed, tokens_to_win=tokens, first_seat=first,
                  two_player_setup=setup)
    full_deck = sorted(RULESETS[ruleset].deck())
    bound = step_bound(s)
    forfeit_rate = rng.choice((0.005, 0.02, 0.05)) if chaos else 0.0
    timeout_rate = rng.choice((0.01, 0.05, 0.2)) if chaos else 0.0
    max_timeouts = rng.randint(1, 3)
    steps = 0
    where = f"{ruleset} {players}p {setup} seed={seed} tokens={tokens} first={first}"
    try:
        check_state(s, full_deck)
        check_events(s, 0, s.events)
        text = check_round_trip(s) if deep else ""  # the current state's JSON in deep matches
        while s.status == ACTIVE:
            steps += 1
            assert steps <= bound, f"match not over after {bound} steps"
            start = len(s.events)
            r = rng.random()
            if r < forfeit_rate:
                seat = rng.randrange(players)
                if s.forfeited[seat]:
                    try:
                        forfeit_inplace(s, seat)
                    except EngineError as e:
                        assert e.code == "already_forfeited"
                    else:
                        raise AssertionError("forfeiting twice was accepted")
                    assert len(s.events) == start
                    steps -= 1  # a refused request is not a step of the match
                    continue
                if deep:
                    new, evs = forfeit(s, seat)
                    assert new is not s
                    assert s.to_json() == text, "forfeit changed its input state"
                    s = new
                else:
                    evs = forfeit_inplace(s, seat)
                assert s.forfeited[seat]
            elif r < forfeit_rate + timeout_rate:
                policy = "forfeit" if rng.random() < 0.1 else "auto"
                new, evs = apply_timeout(s, policy=policy, max_timeouts=max_timeouts)
                assert new is not s
                if deep:
                    assert s.to_json() == text, "apply_timeout changed its input"
                s = new
            else:
                acts = legal_actions(s)
                check_legal(s, acts)
                if deep:  # every legal action is accepted, and leads to a valid state
                    for a in acts:
                        c = s.clone()
                        c_start = len(c.events)
                        check_events(c, c_start, apply_inplace(c, a))
                        check_state(c, full_deck)
                a = choose(rng, acts)
                assert is_legal(s, a)
                if deep:
                    new, evs = apply(s, a, seat=s.turn)
                    assert new is not s
                    assert s.to_json() == text, "apply changed its input state"
                    s = new
                else:
                    evs = apply_inplace(s, a)
            check_events(s, start, evs)
            check_state(s, full_deck)
            if deep:
                text = check_round_trip(s)
        check_round_trip(s)
        assert all(r["winners"] for r in s.rounds), "a round without a winner"
        assert s.round <= s.players * (s.tokens_to_win - 1) + 1
    except Exception as e:
        raise AssertionError(f"{where} step={steps}: {e}") from e
    return s, steps


@pytest.mark.parametrize(("ruleset", "players", "setup"), CONFIGS, ids=CONFIG_IDS)
def test_random_playouts_keep_invariants(ruleset: str, players: int, setup: str) -> None:
    """At every step of random vs random matches (some with random forfeits and timeouts):
    each card is in exactly one place; exactly one seat is to act, holding 2 cards (2-3 in the
    chancellor phase), or the match is over with winners; eliminated seats hold nothing and the
    others exactly one card; R11 holds for every legal action; event seqs are 0..n-1; the match
    ends within a bound. Deep matches (see DEEP_EVERY) also check every legal action is
    accepted, ``apply`` leaves its input unchanged, and the JSON round trip at every step."""
    assert MATCHES_PER_CONFIG * len(CONFIGS) >= MIN_MATCHES
    rng = random.Random(f"playouts:{ruleset}:{players}:{setup}")
    outcomes = {"tokens": 0, "forfeit": 0}
    rounds = 0
    forfeited = timed_out = chancellor_steps = 0
    for i in range(MATCHES_PER_CONFIG):
        s, _ = play_match(rng, ruleset, players, setup, deep=i % DEEP_EVERY in (0, 1),
                          chaos=i % 3 == 1)
        outcomes[s.events[-1].data["reason"]] += 1
        rounds += s.round
        forfeited += sum(s.forfeited)
        timed_out += sum(1 for e in s.events if e.data.get("timeout"))
        chancellor_steps += sum(1 for e in s.events if e.type == "chancellor_return")
    # The random play reached what it should have.
    assert outcomes["tokens"] > MATCHES_PER_CONFIG // 2
    assert outcomes["forfeit"] > 0 and forfeited > 0 and timed_out > 0
    assert rounds > 2 * MATCHES_PER_CONFIG
    if ruleset == "2019":
        assert chancellor_steps > 0


# --------------------------------------------------------------------------- R32


def dump(v: dict[str, Any]) -> str:
    return json.dumps(v, sort_keys=True)


def known_opponents(s: MatchState, p: int) -> set[int]:
    """Opponents that an event privately visible to ``p`` this round mentions (priest, baron,
    king and prince facts)."""
    out: set[int] = set()
    for e in s.events[s.round_start_seq:]:
        if e.to is not None and p in e.to:
            for key in ("seat", "target", "by"):
                q = e.data.get(key)
                if type(q) is int and q != p:
                    out.add(q)
    return out


def redistribute(piles: list[list[int]], rng: random.Random) -> None:
    """Shuffle the cards of ``piles`` among them, keeping each pile's size."""
    pool = [c for pile in piles for c in pile]
    rng.shuffle(pool)
    i = 0
    for pile in piles:
        pile[:] = pool[i:i + len(pile)]
        i += len(pile)


def hidden_from(s: MatchState, p: int | None) -> Callable[[MatchState], list[list[int]]]:
    """A function giving, for a clone of ``s``, the piles whose cards ``p`` can't see
    (``None``: a spectator, for whom the deck, the face-down cards and every hand are hidden)."""
    if p is None:
        return lambda t: [t.deck, t.aside, *t.hands]
    known = known_opponents(s, p)
    # p keeps knowing what they put under the deck with a chancellor: leave the deck alone then.
    deck_known = any(e.type == "chancellor_returned" and e.data["seat"] == p
                     for e in s.events[s.round_start_seq:])
    seats = [q for q in range(s.players)
             if q != p and s.hands[q] and q not in known
             and not (q == s.turn and s.phase == PHASE_CHANCELLOR)]
    return lambda t: ([] if deck_known else [t.deck]) + [t.aside] + [t.hands[q] for q in seats]


def sample_points(rng: random.Random, ruleset: str, players: int, setup: str,
                  count: int) -> list[MatchState]:
    """``count`` active states at random points of random matches (some with forfeits)."""
    out: list[MatchState] = []
    while len(out) < count:
        s = new_match(ruleset, players, seed=rng.getrandbits(32), two_player_setup=setup,
                      tokens_to_win=rng.randint(1, 3))
        chaos = rng.random() < 0.3
        while s.status == ACTIVE and len(out) < count:
            if rng.random() < 0.08:
                out.append(s.clone())
            if chaos and rng.random() < 0.02:
                seat = rng.randrange(players)
                if not s.forfeited[seat]:
                    forfeit_inplace(s, seat)
                continue
            apply_inplace(s, choose(rng, legal_actions(s)))
    return out


POINTS_PER_CONFIG = 40  # x 14 configs = 560 points, every seat and a spectator at each


@pytest.mark.parametrize(("ruleset", "players", "setup"), CONFIGS, ids=CONFIG_IDS)
def test_r32_views_do_not_leak_hidden_cards(ruleset: str, players: int, setup: str) -> None:
    """R31/R32: permuting cards among places hidden from a seat (deck order, face-down set-aside
    cards, the hands of opponents the seat has no private fact about this round) leaves the
    seat's view byte-identical; the same for spectators (deck, set-aside cards, every hand).
    The events are left unchanged, so the permuted state carries exactly the viewer's
    information. Negative controls: changing a card the viewer does see changes the view."""
    rng = random.Random(f"r32:{ruleset}:{players}:{setup}")
    changed = controls = chancellor_points = opponent_hands_permuted = 0
    for s in sample_points(rng, ruleset, players, setup, POINTS_PER_CONFIG):
        if s.phase == PHASE_CHANCELLOR:
            chancellor_points += 1
        full_deck = sorted(RULESETS[ruleset].deck())
        viewers: list[int | None] = [*range(players), None]
        for p in viewers:
            since = 0 if rng.random() < 0.7 else rng.randrange(len(s.events) + 1)

            def show(state: MatchState, p: int | None = p, since: int = since) -> str:
                if p is None:
                    return dump(public_view(state, since=since))
                return dump(view(state, p, since=since))

            original = show(s)
            piles_of = hidden_from(s, p)
            for _ in range(3):
                t = s.clone()
                piles = piles_of(t)
                redistribute(piles, rng)
                check_state(t, full_deck)  # still a valid arrangement of the cards
                if (t.deck, t.aside, t.hands) != (s.deck, s.aside, s.hands):
                    changed += 1
                    if t.hands != s.hands:
                        opponent_hands_permuted += 1
                assert show(t) == original, (
                    f"seat {p} can tell apart {s.deck, s.aside, s.hands} and "
                    f"{t.deck, t.aside, t.hands} (seed {s.seed}, round {s.round})")
            # Negative controls: a card the viewer sees is changed, and the view must change.
            t = s.clone()
            if p is not None and s.hands[p]:
                i = rng.randrange(len(s.hands[p]))
                mine = t.hands[p][i]
                js = [j for j, c in enumerate(t.deck) if c != mine]
                if js:
                    j = rng.choice(js)
                    t.hands[p][i], t.deck[j] = t.deck[j], mine
                    assert show(t) != original, "the view ignores the seat's own hand"
                    controls += 1
            elif p is None:
                discarders = [q for q in range(players) if s.discards[q]]
                if discarders:
                    q = rng.choice(discarders)
                    mine = t.discards[q][-1]
                    js = [j for j, c in enumerate(t.deck) if c != mine]
                    if js:
                        j = rng.choice(js)
                        t.discards[q][-1], t.deck[j] = t.deck[j], mine
                        assert show(t) != original, "the public view ignores the discards"
                        controls += 1
    # The test has teeth: states really were changed, hands included, and controls ran.
    assert changed > POINTS_PER_CONFIG * (players + 1)
    assert opponent_hands_permuted > POINTS_PER_CONFIG
    assert controls > POINTS_PER_CONFIG
    if ruleset == "2019":
        assert chancellor_points > 0 or players == 2


@pytest.mark.parametrize(("ruleset", "players", "setup"), CONFIGS, ids=CONFIG_IDS)
def test_r32_automatic_moves_reveal_nothing_of_the_kept_card(ruleset: str, players: int,
                                                             setup: str) -> None:
    """R31/R32 for ``timeout_action``: permuting the cards hidden from everyone but the absent
    player (deck, set-aside cards, every other hand) together with the card that player keeps
    gives the same automatic action whenever it plays the same card. So its target and guess
    depend on public information and the seed only; the card played becomes public anyway."""
    rng = random.Random(f"auto:{ruleset}:{players}:{setup}")
    compared = kept_changed = 0
    for s in sample_points(rng, ruleset, players, setup, POINTS_PER_CONFIG * 2):
        if s.phase != PHASE_PLAY:
            continue  # a chancellor's return is private (only its count is public)
        me = s.turn
        a = timeout_action(s)
        assert a.card is not None and is_legal(s, a)
        i = s.hands[me].index(a.card)
        for _ in range(4):
            t = s.clone()
            kept = t.hands[me][:i] + t.hands[me][i + 1:]
            piles = [t.deck, t.aside, kept, *(t.hands[q] for q in range(players) if q != me)]
            redistribute(piles, rng)
            t.hands[me][:] = kept[:i] + [a.card] + kept[i:]
            b = timeout_action(t)
            if b.card != a.card:
                continue  # a different card played: a different public move, allowed
            compared += 1
            kept_changed += t.hands[me] != s.hands[me]
            assert b == a, f"{a} became {b} when {s.hands[me]} became {t.hands[me]} ({s.seed})"
    assert compared > POINTS_PER_CONFIG and kept_changed > POINTS_PER_CONFIG // 2


# --------------------------------------------------------------------------- replay, seeds


def next_op(rng: random.Random, s: MatchState) -> tuple[Any, ...]:
    """A random next operation on the active match ``s``: an action in wire form (mostly), a
    forfeit or a timeout."""
    r = rng.random()
    if r < 0.01:
        seats = [p for p in range(s.players) if not s.forfeited[p]]
        return ("forfeit", rng.choice(seats))
    if r < 0.04:
        return ("timeout", rng.choice(("auto", "auto", "forfeit")), rng.randint(1, 3))
    return ("act", choose(rng, legal_actions(s)).to_dict())


def run_op(s: MatchState, op: tuple[Any, ...]) -> tuple[MatchState, list[Event]]:
    if op[0] == "forfeit":
        return s, forfeit_inplace(s, op[1])
    if op[0] == "timeout":
        return apply_timeout(s, policy=op[1], max_timeouts=op[2])
    return s, apply_inplace(s, dict(op[1]))  # the wire form, parsed by the engine


def test_replay_same_seed_same_actions_identical() -> None:
    """The same options and the same actions give identical states and events at every step,
    across rounds (each round is reshuffled from the seed) and with an explicit round-1 deck."""
    rng = random.Random("replay")
    multi_round = 0
    for i, (ruleset, players, setup) in enumerate(CONFIGS * 6):
        options: dict[str, Any] = {
            "ruleset": ruleset, "players": players, "seed": f"replay-{i}",
            "two_player_setup": setup, "tokens_to_win": rng.choice((None, 2, 3)),
        }
        if i % 2:
            deck = [NAMES[c] for c in RULESETS[ruleset].deck()]
            rng.shuffle(deck)
            options["deck"] = deck
            options["first_seat"] = rng.randrange(players)
        # Record the match step by step.
        s = new_match(**options)
        snapshots = [s.to_json()]
        batches: list[list[dict[str, Any]]] = []
        ops: list[tuple[Any, ...]] = []
        while s.status == ACTIVE:
            op = next_op(rng, s)
            s, evs = run_op(s, op)
            ops.append(op)
            snapshots.append(s.to_json())
            batches.append([e.to_dict(with_audience=True) for e in evs])
        if "deck" in options:
            assert s.events[0].type == "deck" and s.events[0].data["deck"] == options["deck"]
        multi_round += s.round > 1
        # Replay it.
        r = new_match(**options)
        assert r.to_json() == snapshots[0]
        for k, op in enumerate(ops):
            r, evs = run_op(r, op)
            assert r.to_json() == snapshots[k + 1], f"match {i} diverged at step {k}: {op}"
            assert [e.to_dict(with_audience=True) for e in evs] == batches[k]
        assert r == s and r.to_json() == s.to_json()
        # Later rounds come from the seed alone: an explicit round-1 deck doesn't change them.
        if "deck" in options and s.round > 1:
            plain = new_match(**{k: v for k, v in options.items() if k != "deck"})
            while plain.round < 2 and plain.status == ACTIVE:
                apply_inplace(plain, choose(rng, legal_actions(plain)))
            if plain.round >= 2:
                def deck_of(m: MatchState, rnd: int) -> list[str]:
                    return next(e.data["deck"] for e in m.events
                                if e.type == "deck" and e.round == rnd)
                assert deck_of(plain, 2) == deck_of(s, 2)
    assert multi_round > len(CONFIGS) * 3


def test_seed_matters_and_global_random_is_unused() -> None:
    """Different seeds give different deals and first players (R5, R8); a match's rounds are
    dealt differently; and the global ``random`` state neither matters nor changes."""
    saved = random.getstate()
    try:
        for ruleset, players, setup in CONFIGS:
            decks = set()
            firsts = set()
            for seed in range(30):
                s = new_match(ruleset, players, seed=seed, two_player_setup=setup)
                assert s.events[0].type == "deck"
                decks.add(tuple(s.events[0].data["deck"]))
                firsts.add(s.round_first)
            assert len(decks) == 30, "two seeds gave the same deal"
            assert len(firsts) > 1
            # Later rounds depend on the seed too, not only on the round number.
            rng = random.Random(0)
            later = set()
            for seed in range(10):
                s = new_match(ruleset, players, seed=seed, two_player_setup=setup)
                while s.round < 2:
                    apply_inplace(s, rng.choice(legal_actions(s)))
                later.add(tuple(s.events[s.round_start_seq].data["deck"]))
            assert len(later) == 10, "two seeds gave the same round-2 deal"
            # The same seed always gives the same deal.
            a = new_match(ruleset, players, seed="same", two_player_setup=setup)
            b = new_match(ruleset, players, seed="same", two_player_setup=setup)
            assert a.to_json() == b.to_json()

        def run(global_seed: int) -> str:
            random.seed(global_seed)
            before = random.getstate()
            rng = random.Random(5)
            out = []
            for ruleset, players, setup in CONFIGS:
                s = new_match(ruleset, players, seed="fixed", two_player_setup=setup)
                rounds_decks = set()
                while s.status == ACTIVE:
                    if rng.random() < 0.05:
                        s, _ = apply_timeout(s)
                    else:
                        s, _ = apply(s, choose(rng, legal_actions(s)))
                    if s.status == ACTIVE:
                        view(s, s.turn)
                        public_view(s)
                rounds_decks = {tuple(e.data["deck"]) for e in s.events if e.type == "deck"}
                assert len(rounds_decks) == s.round, "two rounds were dealt alike"
                out.append(s.to_json())
            assert random.getstate() == before, "the engine used the global random module"
            return "\n".join(out)

        assert run(1) == run(2)
    finally:
        random.setstate(saved)
