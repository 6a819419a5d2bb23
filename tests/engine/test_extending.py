"""Rulesets and cards are data (docs/extending.md): a ruleset built from a table alone plays
whole random matches under every invariant of the property tests, and the card table is what
the engine's behaviour is derived from."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from service.engine import (
    CARDS,
    RULESETS,
    Action,
    Card,
    InvalidOptions,
    Ruleset,
    Target,
    apply_inplace,
    legal_actions,
    new_match,
    public_view,
    view,
)
from service.engine.effects import EFFECTS
from tests.engine.test_properties import play_match

# A made-up variant: values reordered (the king is worth 2, the princess 12), more guards and
# chancellors, one spy, a second countess, 2 to 7 players.
CARNIVAL = Ruleset(
    "carnival",
    {Card.SPY: (0, 1), Card.GUARD: (1, 8), Card.KING: (2, 1), Card.PRIEST: (3, 2),
     Card.BARON: (4, 2), Card.HANDMAID: (5, 2), Card.PRINCE: (6, 2), Card.CHANCELLOR: (7, 3),
     Card.COUNTESS: (8, 2), Card.PRINCESS: (12, 1)},
    min_players=2, max_players=7, tokens={2: 5, 3: 4, 4: 3, 5: 3, 6: 2, 7: 2},
    discard_tiebreak=True, spy_bonus=True,
)


@pytest.fixture
def carnival(monkeypatch: pytest.MonkeyPatch) -> Ruleset:
    monkeypatch.setitem(RULESETS, CARNIVAL.name, CARNIVAL)
    return CARNIVAL


def test_a_ruleset_from_data_alone_plays_random_matches_with_every_invariant(
        carnival: Ruleset) -> None:
    """Every seat count of the new ruleset, both 2-player setups, some matches with random
    forfeits and timeouts and some "deep" (every legal action tried, the JSON round trip at
    every step): the same checks as test_random_playouts_keep_invariants."""
    rng = random.Random("carnival")
    rounds = 0
    kings_worth_two = 0
    for players in range(2, 8):
        for setup in ("three-up", "three-down-one-up") if players == 2 else ("three-up",):
            for i in range(40):
                s, _ = play_match(rng, "carnival", players, setup, deep=i < 2, chaos=i % 3 == 0)
                rounds += s.round
                for r in s.rounds:
                    if r["reason"] == "showdown" and len(r["winners"]) == 1:
                        # the table's values decide showdowns: the king (2) loses to a priest (3)
                        hands = {p: h[0] for p, h in enumerate(r["hands"]) if h}
                        if "king" in hands.values() and "priest" in hands.values():
                            assert hands[r["winners"][0]] != "king"
                            kings_worth_two += 1
    assert rounds > 500 and kings_worth_two > 0


def test_a_ruleset_from_data_has_its_deck_values_and_guesses(carnival: Ruleset) -> None:
    s = new_match("carnival", 7, seed=1)
    cards = s.deck + s.aside + s.face_up + [c for h in s.hands for c in h]
    assert Counter(cards) == Counter({int(c): n for c, (_, n) in CARNIVAL.cards_table.items()})
    assert len(cards) == CARNIVAL.deck_size == 24
    assert s.tokens_to_win == 2
    # a guard names any card of this ruleset but itself: the second countess is guessable
    guesses = {a.guess for a in legal_actions(new_match("carnival", 2, seed=3, deck=[
        "guard"] * 8 + [n for n in ("spy", "king", "priest", "priest", "baron", "baron",
                                    "handmaid", "handmaid", "prince", "prince", "chancellor",
                                    "chancellor", "chancellor", "countess", "countess",
                                    "princess")])) if a.card == Card.GUARD}
    assert guesses == {int(c) for c in CARNIVAL.cards if c != Card.GUARD}
    assert view(s, 0)["ruleset"] == public_view(s)["ruleset"] == "carnival"


def test_a_ruleset_entry_is_checked() -> None:
    with pytest.raises(InvalidOptions, match="tokens to win"):
        Ruleset("bad", {Card.GUARD: (1, 10)}, min_players=2, max_players=3, tokens={2: 3})
    with pytest.raises(InvalidOptions, match="too few cards"):
        Ruleset("bad", {Card.GUARD: (1, 5)}, min_players=2, max_players=4,
                tokens={2: 3, 3: 3, 4: 3})
    with pytest.raises(InvalidOptions, match="bad value or copies"):
        Ruleset("bad", {Card.GUARD: (1, 0), Card.KING: (6, 9)}, min_players=2, max_players=2,
                tokens={2: 3})


def test_every_card_has_a_spec_and_an_effect() -> None:
    assert set(CARDS) == set(Card) and set(EFFECTS) == {int(c) for c in Card}
    assert [c for c in Card if CARDS[c].target is Target.ANY] == [Card.PRINCE]
    assert [c for c in Card if CARDS[c].guesses] == [Card.GUARD]
    for spec in CARDS.values():
        assert spec.summary and spec.rules.startswith("R"), spec


def test_legal_actions_by_card_groups_the_legal_actions() -> None:
    from service.engine import legal_actions_by_card
    rng = random.Random("by-card")
    for seed in range(200):
        s = new_match(rng.choice(["classic", "2019"]), rng.randint(2, 4), seed=seed)
        while s.status == "active":
            acts = legal_actions(s)
            groups = legal_actions_by_card(s)
            assert [a for g in groups.values() for a in g] == acts
            for card, group in groups.items():
                assert all((a.card if a.card is not None else a.keep) == card for a in group)
            apply_inplace(s, rng.choice(acts))
        assert legal_actions_by_card(s) == {}


def test_legal_actions_follow_a_hand_dealt_in_place() -> None:
    """A search may deal sampled cards into a state without events: the memoized legal actions
    must follow the hand, not the version alone."""
    s = new_match("classic", 2, seed=5, deck=["guard"] * 5 + [
        "priest", "priest", "baron", "baron", "handmaid", "handmaid", "prince", "prince",
        "king", "countess", "princess"])
    assert {a.card for a in legal_actions(s)} == {Card.GUARD, Card.PRIEST}
    s.hands[s.turn][:] = [int(Card.COUNTESS), int(Card.KING)]
    assert legal_actions(s) == [Action.play(Card.COUNTESS)]


def test_catalog_bounds_and_descriptions_come_from_the_rulesets() -> None:
    from service.engine.catalog import OPTION_BOUNDS, describe_rulesets
    d = describe_rulesets()
    assert OPTION_BOUNDS["players"] == (2, max(rs.max_players for rs in RULESETS.values()))
    for entry in d["rulesets"]:
        rs = RULESETS[entry["name"]]
        assert {c["name"]: (c["value"], c["copies"]) for c in entry["cards"]} == {
            c.label: (rs.values[c], rs.copies[c]) for c in rs.cards}
        assert entry["tokens_to_win"] == {str(n): t for n, t in rs.tokens.items()}
        assert all(c["effect"] for c in entry["cards"])
