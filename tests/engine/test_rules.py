"""Rule-by-rule tests of the engine: every rule of docs/rules.md (R1-R32) by its ID.

Each test is a scenario on an explicit deck (see ``helpers.scenario``: set-aside card(s), face-up
cards, one card per seat from the first player, then the draws) with exact expected outcomes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from service.engine import (
    CHANCELLOR_RETURN,
    CODES,
    FINISHED,
    PHASE_CHANCELLOR,
    PHASE_PLAY,
    PLAY,
    RULESETS,
    Action,
    Card,
    MatchState,
    apply,
    apply_inplace,
    apply_timeout,
    forfeit,
    full_record,
    is_legal,
    legal_action_dicts,
    legal_actions,
    new_match,
    placings,
    public_view,
    timeout_action,
    view,
)
from tests.engine.helpers import (
    build_deck,
    discards,
    dumps,
    evs,
    hands,
    history,
    names,
    play,
    refused,
    ret,
    run,
    scenario,
    without_legal,
)

CLASSIC_GUESSES = ["priest", "baron", "handmaid", "prince", "king", "countess", "princess"]
G2019_GUESSES = ["spy", "priest", "baron", "handmaid", "prince", "chancellor", "king",
                 "countess", "princess"]


def guard_plays(target: int, guesses: list[str]) -> list[Action]:
    return [play("guard", target, g) for g in guesses]


def round_end(events: list[Any]) -> dict[str, Any]:
    """The data of the (single) round_end event among ``events``."""
    ends = [e for e in events if e.type == "round_end"]
    assert len(ends) == 1, [e.type for e in events]
    return dict(ends[0].data)


# --------------------------------------------------------------------------- long scenarios
#
# Rounds that run to the end of the deck. Each is laid out card by card and commented turn by
# turn; s0/s1 are seats 0 and 1, "t3" is the round's third turn.


def classic_tiebreak_round(ruleset: str = "classic", **options: Any) -> MatchState:
    """2 players, three-up, both end holding a priest; s0 discarded 14 points, s1 15 points.

    Set aside: princess; face up: prince, prince, baron. Hands: s0 priest, s1 priest.
    """
    s = scenario(ruleset, 2, aside=["princess"], face_up=["prince", "prince", "baron"],
                 hands=["priest", "priest"],
                 draws=["guard", "guard", "guard", "guard", "handmaid", "handmaid", "countess",
                        "king", "guard", "baron"], **options)
    s, _ = run(
        s,
        play("guard", 1, "baron"),  # t1 s0 misses (s1 holds a priest)
        play("guard", 0, "baron"),  # t2 s1 misses
        play("guard", 1, "baron"),  # t3
        play("guard", 0, "baron"),  # t4
        play("handmaid"),  # t5 s0 protected
        play("handmaid"),  # t6 s1 protected
        play("countess"),  # t7 s0 (a bluff: no king or prince in hand)
        play("king", 0),  # t8 s1 trades priest for priest
        play("guard", 1, "king"),  # t9 s0 misses
    )
    assert s.deck == [] and s.turn == 1 and hands(s) == [["priest"], ["priest", "baron"]]
    return s


def classic_all_tied_round(ruleset: str = "classic", **options: Any) -> tuple[MatchState,
                                                                             list[Any]]:
    """2 players, three-down-one-up: both end with a priest and 12 discarded points each.

    Set aside: princess (R5), prince, prince, countess; face up: guard. Hands: priest, priest.
    Returns the state after the last turn and that turn's events.
    """
    s = scenario(ruleset, 2, aside=["princess", "prince", "prince", "countess"],
                 face_up=["guard"], hands=["priest", "priest"],
                 draws=["guard", "handmaid", "guard", "guard", "king", "handmaid", "baron",
                        "baron", "guard"],
                 two_player_setup="three-down-one-up", **options)
    s, _ = run(
        s,
        play("guard", 1, "baron"),  # t1 s0 misses
        play("handmaid"),  # t2 s1
        play("guard"),  # t3 s0: s1 is protected, no target (R20a)
        play("guard", 0, "baron"),  # t4 s1 misses
        play("king", 1),  # t5 s0 trades priest for priest
        play("handmaid"),  # t6 s1
        play("baron"),  # t7 s0: s1 protected, no effect
        play("baron", 0),  # t8 s1: priest against priest, nothing happens
    )
    assert s.deck == [] and s.turn == 0 and hands(s) == [["priest", "guard"], ["priest"]]
    return apply(s, play("guard", 1, "king"))  # t9 s0 misses; the deck is empty


def spy_round(variant: str = "two_spies", **options: Any) -> list[MatchState]:
    """2019, 2 players, three-down-one-up; s1 keeps the countess all round and wins the showdown
    against s0's king. Returns the states before and after each action (see ``history``).

    Set aside: princess (R5), prince, prince, baron; face up: baron. Hands: s0 spy, s1 countess.
    ``variant``: ``two_spies`` (s0 plays both spies), ``one_spy`` (s0 plays one and still holds
    the other at the end), ``both_players`` (s0 and s1 each play a spy).
    """
    draws = ["guard", "guard", "guard", "guard", "guard", "guard", "priest", "priest", "spy",
             "handmaid", "king", "handmaid", "chancellor", "chancellor"]
    if variant == "both_players":
        draws[7], draws[8] = "spy", "priest"  # s1 draws the second spy at t8
    s = scenario("2019", 2, aside=["princess", "prince", "prince", "baron"], face_up=["baron"],
                 hands=["spy", "countess"], draws=draws, two_player_setup="three-down-one-up",
                 **options)
    t8 = play("spy") if variant == "both_players" else play("priest", 0)
    t9 = {"two_spies": play("spy"), "one_spy": play("guard", 1, "priest"),
          "both_players": play("priest", 1)}[variant]
    t11 = play("king") if variant == "one_spy" else play("guard")
    keep = "spy" if variant == "one_spy" else "king"
    return history(
        s,
        play("spy"),  # t1 s0 keeps the guard
        play("guard", 0, "priest"),  # t2 s1 misses
        play("guard", 1, "priest"),  # t3 s0 misses
        play("guard", 0, "priest"),  # t4
        play("guard", 1, "priest"),  # t5
        play("guard", 0, "priest"),  # t6
        play("priest", 1),  # t7 s0 sees the countess
        t8,  # t8 s1
        t9,  # t9 s0
        play("handmaid"),  # t10 s1
        t11,  # t11 s0: s1 is protected, no target (R20a)
        play("handmaid"),  # t12 s1
        play("chancellor"),  # t13 s0: the deck holds 1 card, the chancellor draws it
        ret(keep, "chancellor"),  # t13 s0 returns it
        play("chancellor"),  # t14 s1: the deck is empty, no effect; showdown
    )


def prince_empty_deck_three_down(last: Action) -> tuple[MatchState, list[Any]]:
    """Classic, 2 players, three-down-one-up; s0 plays a prince on the last turn (empty deck).

    Set aside: countess (R5), baron, baron, guard; face up: guard. Hands: s0 prince, s1 priest.
    """
    s = scenario("classic", 2, aside=["countess", "baron", "baron", "guard"], face_up=["guard"],
                 hands=["prince", "priest"],
                 draws=["guard", "princess", "handmaid", "guard", "guard", "handmaid", "king",
                        "priest", "prince"],
                 two_player_setup="three-down-one-up", tokens_to_win=1)
    s, _ = run(
        s,
        play("guard", 1, "baron"),  # t1 s0 misses
        play("priest", 0),  # t2 s1 sees the prince, keeps the princess
        play("handmaid"),  # t3 s0
        play("guard"),  # t4 s1: s0 protected
        play("guard", 1, "king"),  # t5 s0 misses
        play("handmaid"),  # t6 s1
        play("king"),  # t7 s0: s1 protected
        play("priest", 0),  # t8 s1
    )
    assert s.deck == [] and hands(s) == [["prince", "prince"], ["princess"]]
    return apply(s, last)  # t9 s0


def prince_empty_deck_three_up(last: Action) -> tuple[MatchState, list[Any]]:
    """Classic, 2 players, three-up; s1 plays a prince on the last turn (empty deck).

    Set aside: countess; face up: baron, baron, guard. Hands: s0 priest, s1 prince.
    """
    s = scenario("classic", 2, aside=["countess"], face_up=["baron", "baron", "guard"],
                 hands=["priest", "prince"],
                 draws=["guard", "guard", "princess", "handmaid", "guard", "guard", "handmaid",
                        "king", "priest", "prince"], tokens_to_win=1)
    s, _ = run(
        s,
        play("guard", 1, "baron"),  # t1 s0 misses
        play("guard", 0, "baron"),  # t2 s1 misses
        play("priest", 1),  # t3 s0 sees the prince, keeps the princess
        play("handmaid"),  # t4 s1
        play("guard"),  # t5 s0: s1 protected
        play("guard", 0, "king"),  # t6 s1 misses
        play("handmaid"),  # t7 s0
        play("king"),  # t8 s1: s0 protected
        play("priest", 1),  # t9 s0
    )
    assert s.deck == [] and hands(s) == [["princess"], ["prince", "prince"]]
    return apply(s, last)  # t10 s1


# --------------------------------------------------------------------------- R1-R4 rulesets


def test_r1_classic_cards_values_and_copies() -> None:
    rs = RULESETS["classic"]
    assert rs.deck_size == 16
    assert {c.label: rs.copies[c] for c in rs.cards} == {
        "guard": 5, "priest": 2, "baron": 2, "handmaid": 2, "prince": 2, "king": 1,
        "countess": 1, "princess": 1}
    assert {c.label: c.value_in(rs) for c in rs.cards} == {
        "guard": 1, "priest": 2, "baron": 3, "handmaid": 4, "prince": 5, "king": 6,
        "countess": 7, "princess": 8}
    assert refused("unknown_card", Card.SPY.value_in, rs) == "spy is not in ruleset classic"
    refused("unknown_card", Card.CHANCELLOR.value_in, rs)


def test_r1_classic_player_range_and_tokens_to_win() -> None:
    assert [new_match("classic", n, seed=1).tokens_to_win for n in (2, 3, 4)] == [7, 5, 4]
    for n in (1, 5):
        msg = refused("invalid_options", new_match, "classic", n, seed=1)
        assert msg == f"classic is for 2 to 4 players, not {n}"


def test_r1_classic_has_no_spy_or_chancellor_to_play_or_name() -> None:
    s = scenario("classic", 2, aside=["princess"], face_up=["prince", "prince", "baron"],
                 hands=["guard", "priest"], draws=["handmaid"])
    assert legal_actions(s) == guard_plays(1, CLASSIC_GUESSES) + [play("handmaid")]
    assert refused("illegal_action", apply, s, play("guard", 1, "spy")) == \
        "there is no spy in ruleset classic to name"
    assert refused("illegal_action", apply, s, play("guard", 1, "chancellor")) == \
        "there is no chancellor in ruleset classic to name"
    assert refused("illegal_action", apply, s, play("chancellor")) == \
        "there is no chancellor in ruleset classic"


def test_r2_2019_cards_values_and_copies() -> None:
    rs = RULESETS["2019"]
    assert rs.deck_size == 21
    assert {c.label: rs.copies[c] for c in rs.cards} == {
        "spy": 2, "guard": 6, "priest": 2, "baron": 2, "handmaid": 2, "prince": 2,
        "chancellor": 2, "king": 1, "countess": 1, "princess": 1}
    assert {c.label: c.value_in(rs) for c in rs.cards} == {
        "spy": 0, "guard": 1, "priest": 2, "baron": 3, "handmaid": 4, "prince": 5,
        "chancellor": 6, "king": 7, "countess": 8, "princess": 9}


def test_r2_2019_player_range_and_tokens_to_win() -> None:
    assert [new_match("2019", n, seed=1).tokens_to_win for n in (2, 3, 4, 5, 6)] == \
        [6, 5, 4, 3, 3]
    for n in (1, 7):
        assert refused("invalid_options", new_match, "2019", n) == \
            f"2019 is for 2 to 6 players, not {n}"


def test_r2_2019_guard_may_name_the_spy() -> None:
    s = scenario("2019", 2, aside=["princess"], face_up=["guard", "guard", "guard"],
                 hands=["guard", "spy"], draws=["priest"], tokens_to_win=1)
    assert legal_actions(s) == guard_plays(1, G2019_GUESSES) + [play("priest", 1)]
    s, events = apply(s, play("guard", 1, "spy"))
    assert evs(events, stop="eliminated") == [
        {"type": "play", "seat": 0, "card": "guard", "target": 1, "guess": "spy", "hit": True},
        {"type": "eliminated", "seat": 1, "reason": "guard", "revealed": ["spy"]},
    ]
    assert s.winners == [0]


def test_r3_2019_classic_deck_values_and_range() -> None:
    rs = RULESETS["2019-classic"]
    assert rs.deck_size == 16
    # the 2019 deck minus 1 guard, both chancellors and both spies
    assert {c.label: rs.copies[c] for c in rs.cards} == {
        "guard": 5, "priest": 2, "baron": 2, "handmaid": 2, "prince": 2, "king": 1,
        "countess": 1, "princess": 1}
    # 2019 values
    assert [c.value_in(rs) for c in rs.cards] == [1, 2, 3, 4, 5, 7, 8, 9]
    assert [new_match("2019-classic", n, seed=1).tokens_to_win for n in (2, 3, 4)] == [6, 5, 4]
    assert refused("invalid_options", new_match, "2019-classic", 5) == \
        "2019-classic is for 2 to 4 players, not 5"


def test_r3_2019_classic_guard_names_no_spy_or_chancellor() -> None:
    s = scenario("2019-classic", 3, aside=["princess"], hands=["guard", "priest", "baron"],
                 draws=["handmaid"])
    assert legal_actions(s) == guard_plays(1, CLASSIC_GUESSES) + guard_plays(2, CLASSIC_GUESSES) \
        + [play("handmaid")]
    refused("illegal_action", apply, s, play("guard", 1, "spy"))


def test_r3_2019_classic_ties_are_shared_not_broken_by_discards() -> None:
    # The same round that ruleset classic gives to s1 on discards (see R22) is shared here.
    s = classic_tiebreak_round("2019-classic")
    s, events = apply(s, play("baron", 0))  # t10 s1: priest against priest
    assert round_end(events)["winners"] == [0, 1]
    assert s.tokens == [1, 1]


def test_r4_tokens_to_win_override() -> None:
    assert new_match("classic", 2, seed=1, tokens_to_win=1).tokens_to_win == 1
    assert new_match("2019", 6, seed=1, tokens_to_win=20).tokens_to_win == 20
    for bad in (0, 21, -3, "5", 2.0, True):
        msg = refused("invalid_options", new_match, "2019", 3, seed=1, tokens_to_win=bad)
        assert msg == "tokens_to_win must be an integer from 1 to 20"


def test_r4_player_count_outside_range_is_refused() -> None:
    assert refused("invalid_options", new_match, "classic", 6) == \
        "classic is for 2 to 4 players, not 6"
    assert refused("invalid_options", new_match, "2019", 0) == "2019 is for 2 to 6 players, not 0"
    refused("invalid_options", new_match, "2019", "3")


def test_r4_other_bad_options_are_refused() -> None:
    assert "unknown ruleset 'poker'" in refused("invalid_options", new_match, "poker", 2)
    assert refused("invalid_options", new_match, "classic", 3, first_seat=3) == \
        "first_seat must be a seat from 0 to 2"
    refused("invalid_options", new_match, "classic", 3, first_seat=-1)
    assert "two_player_setup" in refused("invalid_options", new_match, "classic", 2,
                                         two_player_setup="four-up")
    refused("invalid_options", new_match, "classic", 2, seed=1.5)
    assert refused("invalid_options", new_match, "classic", 2, seed="\ud800") == \
        "seed must be valid Unicode text"


def test_r4_explicit_deck_must_be_exactly_the_rulesets_cards() -> None:
    classic = build_deck("classic", [])
    assert new_match("classic", 2, seed=1, deck=classic).deck_order is not None
    assert refused("invalid_options", new_match, "classic", 2, deck=classic[1:]) == \
        "deck must be exactly the 16 cards of classic; it has 4 guard (needs 5)"
    assert refused("invalid_options", new_match, "classic", 2, deck=classic + ["guard"]) == \
        "deck must be exactly the 16 cards of classic; it has 6 guard (needs 5)"
    assert refused("invalid_options", new_match, "classic", 2,
                   deck=build_deck("2019", [])) == (
        "deck must be exactly the 16 cards of classic; it has 2 spy (needs 0), "
        "6 guard (needs 5), 2 chancellor (needs 0)")
    assert refused("invalid_options", new_match, "2019-classic", 2,
                   deck=classic[:-1] + ["spy"]) == (
        "deck must be exactly the 16 cards of 2019-classic; it has 1 spy (needs 0), "
        "0 princess (needs 1)")
    assert refused("invalid_options", new_match, "classic", 2,
                   deck=classic[:-1] + ["dragon"]) == "deck: unknown card 'dragon'"
    assert refused("invalid_options", new_match, "classic", 2, deck="guard") == \
        "deck must be a list of card names"


# --------------------------------------------------------------------------- R5-R8 setup


def test_r5_top_card_is_set_aside_face_down() -> None:
    deck = build_deck("classic", ["princess", "guard", "priest", "baron"])
    s = new_match("classic", 3, seed="r5", first_seat=0, deck=deck)
    assert names(s.aside) == ["princess"]
    assert s.face_up == []
    assert hands(s) == [["guard", "guard"], ["priest"], ["baron"]]
    assert len(s.deck) == 16 - 1 - 3 - 1
    for v in [view(s, 0), view(s, 1), view(s, 2), public_view(s)]:
        assert v["set_aside_count"] == 1
        assert "princess" not in without_legal(v)


def test_r6_two_players_three_up() -> None:
    deck = build_deck("classic", ["countess", "guard", "priest", "baron", "king", "handmaid"])
    s = new_match("classic", 2, seed="r6", first_seat=0, deck=deck)
    assert names(s.aside) == ["countess"]
    assert names(s.face_up) == ["guard", "priest", "baron"]
    # the rest of the deck in card order starts with a guard: seat 0 draws it
    assert hands(s) == [["king", "guard"], ["handmaid"]]
    assert len(s.deck) == 16 - 1 - 3 - 2 - 1
    for v in [view(s, 0), view(s, 1), public_view(s)]:
        assert v["face_up"] == ["guard", "priest", "baron"]
        assert v["set_aside_count"] == 1
        assert v["deck_count"] == 9
        assert "countess" not in without_legal(v)
    start = [e for e in s.events if e.type == "round_start"]
    assert [e.data for e in start] == [
        {"first": 0, "face_up": ["guard", "priest", "baron"], "deck_count": 10,
         "tokens": [0, 0]}]


def test_r6_two_players_three_down_one_up() -> None:
    deck = build_deck("2019", ["princess", "countess", "king", "baron", "priest", "guard",
                               "handmaid"])
    s = new_match("2019", 2, seed="r6", first_seat=0, deck=deck,
                  two_player_setup="three-down-one-up")
    assert names(s.aside) == ["princess", "countess", "king", "baron"]
    assert names(s.face_up) == ["priest"]
    assert hands(s) == [["guard", "spy"], ["handmaid"]]  # the rest starts with a spy
    assert len(s.deck) == 21 - 4 - 1 - 2 - 1
    for v in [view(s, 0), view(s, 1), public_view(s)]:
        assert v["face_up"] == ["priest"]
        assert v["set_aside_count"] == 4
        assert v["two_player_setup"] == "three-down-one-up"
        text = without_legal(v)
        assert "princess" not in text and "countess" not in text and "king" not in text


@pytest.mark.parametrize("players", [3, 4])
def test_r6_no_face_up_cards_with_more_than_two_players(players: int) -> None:
    s = new_match("classic", players, seed="r6", first_seat=0)
    assert s.face_up == [] and len(s.aside) == 1
    assert len(s.deck) == 16 - 1 - players - 1


def test_r6_face_up_cards_take_no_part_in_the_round() -> None:
    # Face up: baron, baron, guard. On the empty deck the prince takes the face-down card.
    s, _ = prince_empty_deck_three_up(play("prince", 1))
    assert names(s.face_up) == ["baron", "baron", "guard"]
    assert hands(s) == [["princess"], ["countess"]]


def test_r7_one_card_dealt_to_each_player_from_the_first_player() -> None:
    deck = build_deck("classic", ["princess", "king", "countess", "baron", "handmaid", "priest"])
    s = new_match("classic", 4, seed="r7", first_seat=2, deck=deck)
    assert hands(s) == [["baron"], ["handmaid"], ["king", "priest"], ["countess"]]
    assert [(e.data, e.to) for e in s.events if e.type == "dealt"] == [
        ({"seat": 2, "card": "king"}, (2,)),
        ({"seat": 3, "card": "countess"}, (3,)),
        ({"seat": 0, "card": "baron"}, (0,)),
        ({"seat": 1, "card": "handmaid"}, (1,)),
    ]
    assert s.turn == 2


def test_r8_first_seat_option_picks_round_one_first_player() -> None:
    for first in range(4):
        s = new_match("2019", 4, seed="same", first_seat=first)
        assert (s.turn, s.round_first, len(s.hands[first])) == (first, first, 2)


def test_r8_round_one_first_player_is_drawn_from_the_seed() -> None:
    firsts = []
    for seed in range(40):
        s = new_match("2019", 4, seed=seed)
        again = new_match("2019", 4, seed=seed)
        assert s.turn == again.turn == s.round_first
        assert [e.data["first"] for e in s.events if e.type == "round_start"] == [s.turn]
        firsts.append(s.turn)
    assert set(firsts) == {0, 1, 2, 3}


def test_r8_previous_round_winner_starts_the_next_round() -> None:
    s = scenario("classic", 3, aside=["princess"], hands=["baron", "priest", "king"],
                 draws=["guard", "guard"])
    s, events = run(s, play("guard", 1, "priest"),  # t1 s0 hits s1
                    play("guard", 0, "baron"))  # t2 s2 hits s0: s2 wins round 1
    assert round_end(events)["winners"] == [2]
    assert (s.round, s.round_first, s.turn) == (2, 2, 2)
    assert [len(h) for h in s.hands] == [1, 1, 2]
    assert [e.data["first"] for e in s.events if e.type == "round_start"] == [0, 2]


def test_r8_several_round_winners_draw_lots_from_the_seed() -> None:
    firsts = set()
    for seed in range(12):
        s, events = classic_all_tied_round(seed=f"lots-{seed}")
        again, _ = classic_all_tied_round(seed=f"lots-{seed}")
        assert round_end(events)["winners"] == [0, 1]
        assert s.round == 2 and s.turn == s.round_first == again.round_first
        firsts.add(s.round_first)
    assert firsts == {0, 1}


# --------------------------------------------------------------------------- R9-R11 a turn


def test_r9_handmaid_protection_ends_when_the_players_turn_starts() -> None:
    s = scenario("classic", 2, aside=["princess"], face_up=["prince", "prince", "baron"],
                 hands=["handmaid", "guard"], draws=["guard", "priest", "baron"])
    s1, _ = apply(s, play("handmaid"))
    assert s1.protected == [True, False]
    assert [p["protected"] for p in public_view(s1)["players"]] == [True, False]
    assert legal_actions(s1) == [play("guard"), play("priest")]  # s1 can't choose s0
    s2, events = apply(s1, play("priest"))
    assert s2.turn == 0 and s2.protected == [False, False]
    assert [p["protected"] for p in public_view(s2)["players"]] == [False, False]
    assert legal_actions(s2) == guard_plays(1, CLASSIC_GUESSES) + [play("baron", 1)]


def test_r10_draw_play_one_keep_the_other_and_pass_to_the_next_player_in() -> None:
    s = scenario("classic", 3, aside=["princess"], hands=["guard", "priest", "baron"],
                 draws=["handmaid", "guard", "king", "countess"])
    assert hands(s) == [["guard", "handmaid"], ["priest"], ["baron"]]  # s0 drew the top card
    assert names(s.deck[:3]) == ["guard", "king", "countess"]
    s, events = apply(s, play("guard", 1, "priest"))  # t1 s0 hits s1
    assert hands(s) == [["handmaid"], [], ["baron", "guard"]]
    assert evs(events) == [
        {"type": "play", "seat": 0, "card": "guard", "target": 1, "guess": "priest", "hit": True},
        {"type": "eliminated", "seat": 1, "reason": "guard", "revealed": ["priest"]},
        {"type": "turn", "seat": 2, "turn": 2, "deck_count": 10},  # seat 1 is skipped
        {"type": "drew", "seat": 2, "card": "guard", "to": [2]},
    ]
    s, events = apply(s, play("guard", 0, "baron"))  # t2 s2 misses
    assert s.turn == 0 and hands(s) == [["handmaid", "king"], [], ["baron"]]
    assert discards(s) == [["guard"], ["priest"], ["guard"]]


def test_r11_countess_must_be_played_with_the_king() -> None:
    s = scenario("classic", 2, aside=["princess"], face_up=["prince", "prince", "baron"],
                 hands=["countess", "guard"], draws=["king"])
    assert legal_actions(s) == [play("countess")]
    msg = refused("illegal_action", apply, s, play("king", 1))
    assert msg == "with the countess and a king or prince in hand you must play the countess (R11)"
    s, events = apply(s, play("countess"))
    assert evs(events)[0] == {"type": "play", "seat": 0, "card": "countess"}
    assert hands(s)[0] == ["king"]


def test_r11_countess_must_be_played_with_a_prince() -> None:
    s = scenario("2019", 3, aside=["princess"], hands=["prince", "guard", "priest"],
                 draws=["countess"])
    assert legal_actions(s) == [play("countess")]
    assert "must play the countess" in refused("illegal_action", apply, s, play("prince", 0))
    assert "must play the countess" in refused("illegal_action", apply, s, play("prince", 1))
    s, _ = apply(s, play("countess"))
    assert hands(s)[0] == ["prince"]


def test_r11_countess_may_be_played_as_a_bluff() -> None:
    s = scenario("classic", 2, aside=["princess"], face_up=["prince", "prince", "baron"],
                 hands=["countess", "guard"], draws=["priest"])
    assert legal_actions(s) == [play("priest", 1), play("countess")]
    s, events = apply(s, play("countess"))
    assert hands(s) == [["priest"], ["guard", "guard"]]
    s2 = scenario("classic", 2, aside=["king"], face_up=["prince", "prince", "baron"],
                  hands=["countess", "guard"], draws=["princess"])
    assert legal_actions(s2) == [play("countess"), play("princess")]


def test_r11_does_not_apply_to_the_chancellor_return() -> None:
    s = scenario("2019", 2, aside=["princess"], face_up=["guard", "guard", "guard"],
                 hands=["countess", "priest"], draws=["chancellor", "king", "prince"])
    assert play("chancellor") in legal_actions(s)
    s, _ = apply(s, play("chancellor"))
    assert hands(s)[0] == ["countess", "king", "prince"]
    assert legal_actions(s) == [
        ret("prince", "king", "countess"), ret("prince", "countess", "king"),
        ret("king", "prince", "countess"), ret("king", "countess", "prince"),
        ret("countess", "prince", "king"), ret("countess", "king", "prince"),
    ]
    s, _ = apply(s, ret("king", "countess", "prince"))
    assert hands(s)[0] == ["king"]
    assert names(s.deck[-2:]) == ["countess", "prince"] and s.turn == 1


# --------------------------------------------------------------------------- R12-R20a effects


def test_r12_guard_hit_eliminates_the_target() -> None:
    s = scenario("classic", 2, aside=["princess"], face_up=["prince", "prince", "baron"],
                 hands=["guard", "priest"], draws=["handmaid"])
    s, events = apply(s, play("guard", 1, "priest"))
    assert evs(events, stop="round_end") == [
        {"type": "play", "seat": 0, "card": "guard", "target": 1, "guess": "priest", "hit": True},
        {"type": "eliminated", "seat": 1, "reason": "guard", "revealed": ["priest"]},
        {"type": "round_end", "round": 1, "reason": "last_standing", "winners": [0],
         "spy_bonus": None, "hands": [["handmaid"], []], "set_aside": ["princess"],
         "tokens": [1, 0]},
    ]
    assert s.tokens == [1, 0] and s.round == 2 and s.status == "active"


def test_r12_guard_miss_does_nothing() -> None:
    s = scenario("classic", 2, aside=["princess"], face_up=["prince", "prince", "baron"],
                 hands=["guard", "priest"], draws=["handmaid", "king"])
    s, events = apply(s, play("guard", 1, "baron"))
    assert evs(events) == [
        {"type": "play", "seat": 0, "card": "guard", "target": 1, "guess": "baron", "hit": False},
        {"type": "turn", "seat": 1, "turn": 2, "deck_count": 8},
        {"type": "drew", "seat": 1, "card": "king", "to": [1]},
    ]
    assert hands(s) == [["handmaid"], ["priest", "king"]]
    assert s.eliminated == [False, False]


def test_r12_guard_may_not_name_the_guard_nor_target_oneself() -> None:
    s = scenario("classic", 2, aside=["princess"], face_up=["prince", "prince", "baron"],
                 hands=["guard", "guard"], draws=["handmaid"])
    assert all(a.guess != Card.GUARD for a in legal_actions(s))
    assert refused("illegal_action", apply, s, play("guard", 1, "guard")) == \
        "a guard can't name the guard (R12)"
    assert refused("illegal_action", apply, s, play("guard", 0, "priest")) == \
        "you can't target yourself with that card"
    assert refused("illegal_action", apply, s, play("guard", 1)) == "a guard needs a guess"


def test_r13_priest_shows_the_targets_hand_to_the_actor_only() -> None:
    s = scenario("classic", 3, aside=["princess"], hands=["priest", "king", "countess"],
                 draws=["guard", "handmaid"])
    s, events = apply(s, play("priest", 1))
    assert evs(events) == [
        {"type": "play", "seat": 0, "card": "priest", "target": 1},
        {"type": "priest_saw", "seat": 0, "target": 1, "card": "king", "turn": 1, "to": [0]},
        {"type": "turn", "seat": 1, "turn": 2, "deck_count": 10},
        {"type": "drew", "seat": 1, "card": "handmaid", "to": [1]},
    ]
    seq = events[1].seq
    assert view(s, 0)["known"] == [
        {"type": "priest", "seat": 1, "card": "king", "seq": seq, "round": 1, "turn": 1}]
    assert view(s, 1)["known"] == [] and view(s, 2)["known"] == []
    assert "king" not in without_legal(view(s, 2)) and "king" not in dumps(public_view(s))


def test_r14_baron_higher_hand_eliminates_the_target() -> None:
    s = scenario("classic", 3, aside=["princess"], hands=["baron", "priest", "guard"],
                 draws=["king"])
    s, events = apply(s, play("baron", 1))
    assert evs(events, stop="eliminated") == [
        {"type": "play", "seat": 0, "card": "baron", "target": 1, "loser": 1},
        {"type": "baron_compared", "seat": 0, "target": 1, "card": "king",
         "target_card": "priest", "turn": 1, "to": [0, 1]},
        {"type": "eliminated", "seat": 1, "reason": "baron", "revealed": ["priest"]},
    ]
    assert s.eliminated == [False, True, False] and s.turn == 2
    assert hands(s)[:2] == [["king"], []] and discards(s)[:2] == [["baron"], ["priest"]]


def test_r14_baron_lower_hand_eliminates_the_actor() -> None:
    s = scenario("classic", 3, aside=["princess"], hands=["baron", "king", "priest"],
                 draws=["guard"])
    s, events = apply(s, play("baron", 1))
    assert evs(events, stop="eliminated") == [
        {"type": "play", "seat": 0, "card": "baron", "target": 1, "loser": 0},
        {"type": "baron_compared", "seat": 0, "target": 1, "card": "guard",
         "target_card": "king", "turn": 1, "to": [0, 1]},
        {"type": "eliminated", "seat": 0, "reason": "baron", "revealed": ["guard"]},
    ]
    assert s.eliminated == [True, False, False] and s.turn == 1
    assert discards(s)[0] == ["baron", "guard"]


def test_r14_baron_equal_values_do_nothing_and_only_the_two_players_learn() -> None:
    s = scenario("classic", 3, aside=["princess"], hands=["baron", "priest", "king"],
                 draws=["priest"])
    s, events = apply(s, play("baron", 1))
    assert evs(events, stop="baron_compared") == [
        {"type": "play", "seat": 0, "card": "baron", "target": 1, "loser": None},
        {"type": "baron_compared", "seat": 0, "target": 1, "card": "priest",
         "target_card": "priest", "turn": 1, "to": [0, 1]},
    ]
    assert s.eliminated == [False, False, False] and s.turn == 1
    seq = events[1].seq
    when = {"seq": seq, "round": 1, "turn": 1}
    assert view(s, 0)["known"] == [
        {"type": "baron", "seat": 1, "card": "priest", "mine": "priest", **when}]
    assert view(s, 1)["known"] == [
        {"type": "baron", "seat": 0, "card": "priest", "mine": "priest", **when}]
    assert view(s, 2)["known"] == []


@pytest.mark.parametrize("second", ["guard", "priest", "baron", "prince", "king"])
def test_r15_handmaid_protects_against_other_players_cards(second: str) -> None:
    s = scenario("classic", 3, aside=["princess"], hands=["handmaid", "handmaid", "priest"],
                 draws=["guard", second])
    s, events = apply(s, play("handmaid"))
    assert evs(events)[0] == {"type": "play", "seat": 0, "card": "handmaid"}
    assert s.protected == [True, False, False] and s.turn == 1
    # s1 holds a handmaid and `second`: nothing may choose s0
    assert all(a.target != 0 for a in legal_actions(s))
    bad = play(second, 0, "priest" if second == "guard" else None)
    assert refused("illegal_action", apply, s, bad) == "seat 0 is protected by the handmaid (R15)"
    targets = sorted({a.target for a in legal_actions(s) if a.card == Card.parse(second)},
                     key=str)
    assert targets == ([1, 2] if second == "prince" else [2])


def test_r16_prince_on_another_player() -> None:
    s = scenario("classic", 3, aside=["princess"], hands=["prince", "baron", "guard"],
                 draws=["guard", "king", "handmaid"])
    s, events = apply(s, play("prince", 1))
    assert evs(events) == [
        {"type": "play", "seat": 0, "card": "prince", "target": 1, "discarded": "baron",
         "drew_from": "deck"},
        {"type": "prince_drew", "seat": 1, "by": 0, "card": "king", "turn": 1, "to": [1]},
        {"type": "turn", "seat": 1, "turn": 2, "deck_count": 9},
        {"type": "drew", "seat": 1, "card": "handmaid", "to": [1]},
    ]
    assert hands(s) == [["guard"], ["king", "handmaid"], ["guard"]]
    assert discards(s) == [["prince"], ["baron"], []]
    assert view(s, 1)["known"] == [
        {"type": "prince", "seat": 0, "card": "king", "seq": events[1].seq, "round": 1,
         "turn": 1}]
    assert view(s, 0)["known"] == [] and view(s, 2)["known"] == []


def test_r16_prince_on_oneself() -> None:
    s = scenario("classic", 3, aside=["princess"], hands=["prince", "baron", "guard"],
                 draws=["handmaid", "countess"])
    assert [a.target for a in legal_actions(s) if a.card == Card.PRINCE] == [0, 1, 2]
    s, events = apply(s, play("prince", 0))
    assert evs(events, stop="prince_drew") == [
        {"type": "play", "seat": 0, "card": "prince", "target": 0, "discarded": "handmaid",
         "drew_from": "deck"},
        {"type": "prince_drew", "seat": 0, "by": 0, "card": "countess", "turn": 1, "to": [0]},
    ]
    assert hands(s)[0] == ["countess"] and discards(s)[0] == ["prince", "handmaid"]
    assert s.protected == [False, False, False]  # the handmaid was discarded, not played


def test_r16_prince_discarding_the_princess_eliminates_without_drawing() -> None:
    s = scenario("classic", 3, aside=["baron"], hands=["prince", "princess", "guard"],
                 draws=["guard", "king"])
    deck_before = list(s.deck)
    s, events = apply(s, play("prince", 1))
    assert evs(events, stop="eliminated") == [
        {"type": "play", "seat": 0, "card": "prince", "target": 1, "discarded": "princess"},
        {"type": "eliminated", "seat": 1, "reason": "princess", "revealed": []},
    ]
    assert "prince_drew" not in [e.type for e in events]
    assert s.deck == deck_before[1:]  # only s2's turn draw
    assert hands(s) == [["guard"], [], ["guard", "king"]]
    assert discards(s)[1] == ["princess"] and s.eliminated == [False, True, False]


def test_r16_prince_on_oneself_holding_the_princess_eliminates_the_actor() -> None:
    s = scenario("classic", 2, aside=["baron"], face_up=["prince", "guard", "guard"],
                 hands=["prince", "guard"], draws=["princess"], tokens_to_win=1)
    s, events = apply(s, play("prince", 0))
    assert evs(events, stop="eliminated") == [
        {"type": "play", "seat": 0, "card": "prince", "target": 0, "discarded": "princess"},
        {"type": "eliminated", "seat": 0, "reason": "princess", "revealed": []},
    ]
    assert s.winners == [1]


def test_r16_prince_with_empty_deck_draws_the_face_down_card_three_up() -> None:
    s, events = prince_empty_deck_three_up(play("prince", 1))  # s1 at itself
    assert evs(events, stop="round_end") == [
        {"type": "play", "seat": 1, "card": "prince", "target": 1, "discarded": "prince",
         "drew_from": "set_aside"},
        {"type": "prince_drew", "seat": 1, "by": 1, "card": "countess", "turn": 10, "to": [1]},
        {"type": "round_end", "round": 1, "reason": "showdown", "winners": [0],
         "spy_bonus": None, "hands": [["princess"], ["countess"]], "set_aside": [],
         "tokens": [1, 0]},
    ]
    assert s.aside == []


def test_r16_prince_with_empty_deck_draws_set_aside_card_zero_three_down() -> None:
    # aside is [countess (R5), baron, baron, guard]: the prince gives the R5 card, aside[0]
    s, events = prince_empty_deck_three_down(play("prince", 0))
    assert evs(events, stop="round_end") == [
        {"type": "play", "seat": 0, "card": "prince", "target": 0, "discarded": "prince",
         "drew_from": "set_aside"},
        {"type": "prince_drew", "seat": 0, "by": 0, "card": "countess", "turn": 9, "to": [0]},
        {"type": "round_end", "round": 1, "reason": "showdown", "winners": [1],
         "spy_bonus": None, "hands": [["countess"], ["princess"]],
         "set_aside": ["baron", "baron", "guard"], "tokens": [0, 1]},
    ]
    assert names(s.aside) == ["baron", "baron", "guard"] and names(s.face_up) == ["guard"]


def test_r16_prince_with_empty_deck_on_the_princess_still_eliminates() -> None:
    s, events = prince_empty_deck_three_down(play("prince", 1))
    assert evs(events, stop="round_end") == [
        {"type": "play", "seat": 0, "card": "prince", "target": 1, "discarded": "princess"},
        {"type": "eliminated", "seat": 1, "reason": "princess", "revealed": []},
        {"type": "round_end", "round": 1, "reason": "last_standing", "winners": [0],
         "spy_bonus": None, "hands": [["prince"], []],
         "set_aside": ["countess", "baron", "baron", "guard"], "tokens": [1, 0]},
    ]


def test_r16_spy_discarded_by_a_prince_counts_for_the_spy_bonus() -> None:
    s = scenario("2019", 2, aside=["princess"], face_up=["guard", "guard", "guard"],
                 hands=["spy", "priest"], draws=["guard", "prince", "baron", "guard"],
                 tokens_to_win=2)
    s, events = run(s,
                    play("guard", 1, "king"),  # t1 s0 misses, keeps the spy
                    play("prince", 0),  # t2 s1: s0 discards the spy, draws the baron
                    play("guard", 1, "priest"))  # t3 s0 hits
    assert discards(s)[0] == ["guard", "spy", "guard"]
    end = round_end(events)
    assert (end["winners"], end["spy_bonus"], end["tokens"]) == ([0], 0, [2, 0])
    assert s.winners == [0]  # the spy token reaches the 2 tokens to win


def test_r16_prince_cannot_target_a_protected_player() -> None:
    s = scenario("classic", 3, aside=["princess"], hands=["handmaid", "prince", "guard"],
                 draws=["guard", "baron"])
    s, _ = apply(s, play("handmaid"))
    assert [a.target for a in legal_actions(s) if a.card == Card.PRINCE] == [1, 2]
    assert refused("illegal_action", apply, s, play("prince", 0)) == \
        "seat 0 is protected by the handmaid (R15)"


def test_r17_chancellor_draws_two_and_returns_them_in_the_chosen_order() -> None:
    s = scenario("2019", 3, aside=["princess"], hands=["guard", "priest", "baron"],
                 draws=["chancellor", "king", "countess"])
    rest = list(s.deck[2:])
    assert len(s.deck) == 16
    s, events = apply(s, play("chancellor"))
    assert evs(events) == [
        {"type": "play", "seat": 0, "card": "chancellor", "drew": 2},
        {"type": "chancellor_drew", "seat": 0, "turn": 1, "cards": ["king", "countess"],
         "to": [0]},
    ]
    assert (s.turn, s.phase, hands(s)[0], len(s.deck)) == \
        (0, PHASE_CHANCELLOR, ["guard", "king", "countess"], 14)
    assert view(s, 0)["turn"] == {"seat": 0, "phase": "chancellor"}
    assert legal_actions(s) == [
        ret("guard", "king", "countess"), ret("guard", "countess", "king"),
        ret("king", "guard", "countess"), ret("king", "countess", "guard"),
        ret("countess", "guard", "king"), ret("countess", "king", "guard"),
    ]
    s, events = apply(s, Action.from_dict(
        {"type": "chancellor_return", "keep": "king", "bottom": ["countess", "guard"]}))
    # bottom[0] lies above bottom[1]; the last listed card is the deck's very last
    assert evs(events, stop="chancellor_returned") == [
        {"type": "chancellor_return", "seat": 0, "count": 2},
        {"type": "chancellor_returned", "seat": 0, "keep": "king",
         "bottom": ["countess", "guard"], "turn": 1, "to": [0]},
    ]
    assert hands(s)[0] == ["king"] and s.phase == PHASE_PLAY and s.turn == 1
    assert s.deck == rest[1:] + [Card.COUNTESS, Card.GUARD]  # s1 drew rest[0]
    assert hands(s)[1] == ["priest", names(rest[:1])[0]]


def test_r17_chancellor_with_one_card_in_the_deck_draws_one() -> None:
    states = spy_round("two_spies")
    before, played, returned = states[12], states[13], states[14]
    assert hands(before)[0] == ["king", "chancellor"] and names(before.deck) == ["chancellor"]
    assert played.phase == PHASE_CHANCELLOR and played.deck == []
    assert hands(played)[0] == ["king", "chancellor"]
    assert evs(played.events[len(before.events):]) == [
        {"type": "play", "seat": 0, "card": "chancellor", "drew": 1},
        {"type": "chancellor_drew", "seat": 0, "turn": 13, "cards": ["chancellor"], "to": [0]},
    ]
    assert legal_actions(played) == [ret("chancellor", "king"), ret("king", "chancellor")]
    assert names(returned.deck) == [] and returned.turn == 1  # s1 drew the returned card
    assert hands(returned) == [["king"], ["countess", "chancellor"]]


def test_r17_chancellor_with_an_empty_deck_has_no_effect() -> None:
    states = spy_round("two_spies")
    before, after = states[14], states[15]
    assert before.deck == [] and hands(before)[1] == ["countess", "chancellor"]
    assert evs(after.events[len(before.events):], stop="round_end") == [
        {"type": "play", "seat": 1, "card": "chancellor", "drew": 0},
        {"type": "round_end", "round": 1, "reason": "showdown", "winners": [1], "spy_bonus": 0,
         "hands": [["king"], ["countess"]],
         "set_aside": ["princess", "prince", "prince", "baron"], "tokens": [1, 1]},
    ]


def test_r17_chancellor_phase_accepts_only_a_matching_return() -> None:
    s = scenario("2019", 3, aside=["princess"], hands=["guard", "priest", "baron"],
                 draws=["chancellor", "king", "countess"])
    assert refused("illegal_action", apply, s, ret("guard", "chancellor")) == \
        "a chancellor_return is only legal right after playing a chancellor"
    s, _ = apply(s, play("chancellor"))
    assert refused("illegal_action", apply, s, play("guard", 1, "priest")) == \
        "you played a chancellor: post a chancellor_return (keep one, bottom the rest)"
    expected = "keep + bottom must be exactly your hand ['guard', 'king', 'countess'], each once"
    for bad in [ret("king", "countess"), ret("priest", "countess", "guard"),
                ret("king", "countess", "guard", "guard"), ret("king", "king", "guard")]:
        assert refused("illegal_action", apply, s, bad) == expected
    refused("not_your_turn", apply, s, ret("king", "countess", "guard"), seat=1)


def test_r17_only_the_actor_knows_the_drawn_and_returned_cards() -> None:
    s = scenario("2019", 3, aside=["princess"], hands=["guard", "priest", "baron"],
                 draws=["chancellor", "king", "countess"])
    s, e1 = apply(s, play("chancellor"))
    s, e2 = apply(s, ret("countess", "guard", "king"))
    assert view(s, 0)["known"] == [
        {"type": "chancellor_drew", "cards": ["king", "countess"], "seq": e1[1].seq,
         "round": 1, "turn": 1},
        {"type": "chancellor_returned", "keep": "countess", "bottom": ["guard", "king"],
         "seq": e2[1].seq, "round": 1, "turn": 1},
    ]
    for other in (view(s, 1), view(s, 2), public_view(s)):
        assert other.get("known", []) == []
        text = without_legal(other)
        assert "countess" not in text and "king" not in text


def test_r18_king_trades_hands_and_each_learns_the_other_card() -> None:
    s = scenario("classic", 3, aside=["princess"], hands=["king", "priest", "baron"],
                 draws=["guard", "handmaid"])
    assert [a.target for a in legal_actions(s) if a.card == Card.KING] == [1, 2]
    assert refused("illegal_action", apply, s, play("king", 0)) == \
        "you can't target yourself with that card"
    s, events = apply(s, play("king", 1))
    assert evs(events, stop="king_swapped") == [
        {"type": "play", "seat": 0, "card": "king", "target": 1},
        {"type": "king_swapped", "seat": 0, "target": 1, "gave": "guard", "received": "priest",
         "turn": 1, "to": [0, 1]},
    ]
    assert hands(s) == [["priest"], ["guard", "handmaid"], ["baron"]]
    when = {"seq": events[1].seq, "round": 1, "turn": 1}
    assert view(s, 0)["known"] == [
        {"type": "king", "seat": 1, "gave": "guard", "received": "priest", **when}]
    assert view(s, 1)["known"] == [
        {"type": "king", "seat": 0, "gave": "priest", "received": "guard", **when}]
    assert view(s, 2)["known"] == []


def test_r19_countess_has_no_effect_when_played() -> None:
    s = scenario("classic", 3, aside=["princess"], hands=["countess", "priest", "baron"],
                 draws=["guard", "handmaid"])
    s, events = apply(s, play("countess"))
    assert evs(events) == [
        {"type": "play", "seat": 0, "card": "countess"},
        {"type": "turn", "seat": 1, "turn": 2, "deck_count": 10},
        {"type": "drew", "seat": 1, "card": "handmaid", "to": [1]},
    ]
    assert hands(s) == [["guard"], ["priest", "handmaid"], ["baron"]]
    assert s.eliminated == [False] * 3 and s.protected == [False] * 3


def test_r20_playing_the_princess_is_legal_and_eliminates() -> None:
    s = scenario("classic", 2, aside=["king"], face_up=["prince", "prince", "baron"],
                 hands=["princess", "priest"], draws=["guard"], tokens_to_win=1)
    assert play("princess") in legal_actions(s)
    s, events = apply(s, play("princess"))
    assert evs(events, stop="round_end") == [
        {"type": "play", "seat": 0, "card": "princess"},
        {"type": "eliminated", "seat": 0, "reason": "princess", "revealed": ["guard"]},
        {"type": "round_end", "round": 1, "reason": "last_standing", "winners": [1],
         "spy_bonus": None, "hands": [[], ["priest"]], "set_aside": ["king"], "tokens": [0, 1]},
    ]
    assert discards(s)[0] == ["princess", "guard"]


def test_r20_princess_discarded_by_a_prince_eliminates() -> None:
    s = scenario("2019", 2, aside=["king"], face_up=["guard", "guard", "guard"],
                 hands=["prince", "princess"], draws=["guard"], tokens_to_win=1)
    s, events = apply(s, play("prince", 1))
    assert evs(events, stop="eliminated") == [
        {"type": "play", "seat": 0, "card": "prince", "target": 1, "discarded": "princess"},
        {"type": "eliminated", "seat": 1, "reason": "princess", "revealed": []},
    ]
    assert s.winners == [0] and discards(s) == [["prince"], ["princess"]]


def test_r20_spy_has_no_effect_when_played() -> None:
    s = scenario("2019", 3, aside=["princess"], hands=["spy", "priest", "baron"],
                 draws=["guard", "handmaid"])
    s, events = apply(s, play("spy"))
    assert evs(events) == [
        {"type": "play", "seat": 0, "card": "spy"},
        {"type": "turn", "seat": 1, "turn": 2, "deck_count": 15},
        {"type": "drew", "seat": 1, "card": "handmaid", "to": [1]},
    ]
    assert hands(s) == [["guard"], ["priest", "handmaid"], ["baron"]]


def r20a_state(dealt: str, drawn: str) -> MatchState:
    """Classic, 3 players: t1 s0 eliminates s1, t2 s2 plays a handmaid; at t3 s0 holds
    ``dealt`` and ``drawn`` and has nobody to choose."""
    s = scenario("classic", 3, aside=["princess"], hands=[dealt, "priest", "handmaid"],
                 draws=["guard", "guard", drawn])
    s, _ = run(s, play("guard", 1, "priest"), play("handmaid"))
    assert s.turn == 0 and s.eliminated == [False, True, False] and s.protected[2]
    assert hands(s)[0] == [dealt, drawn]
    return s


def test_r20a_no_target_guard_priest_baron_king_play_without_effect() -> None:
    s = r20a_state("priest", "guard")
    assert legal_actions(s) == [play("guard"), play("priest")]
    after, events = apply(s, play("guard"))
    assert evs(events)[0] == {"type": "play", "seat": 0, "card": "guard"}
    assert hands(after)[2] == ["guard", "guard"] and not after.eliminated[2]  # s2 drew
    after, events = apply(s, play("priest"))
    assert evs(events)[0] == {"type": "play", "seat": 0, "card": "priest"}
    assert [e.type for e in events] == ["play", "turn", "drew"]  # nobody sees anything

    s = r20a_state("baron", "king")
    assert legal_actions(s) == [play("baron"), play("king")]
    after, events = apply(s, play("king"))
    assert evs(events)[0] == {"type": "play", "seat": 0, "card": "king"}
    assert hands(after)[0] == ["baron"] and hands(after)[2][0] == "guard"
    after, events = apply(s, play("baron"))
    assert [e.type for e in events] == ["play", "turn", "drew"]
    assert after.eliminated == [False, True, False]


def test_r20a_no_target_refuses_targets_and_guesses() -> None:
    s = r20a_state("baron", "king")
    assert refused("illegal_action", apply, s, play("king", 2)) == \
        "seat 2 is protected by the handmaid (R15)"
    assert refused("illegal_action", apply, s, play("king", 1)) == "seat 1 is out of the round"
    s = r20a_state("priest", "guard")
    assert refused("illegal_action", apply, s, play("guard", 2, "handmaid")) == \
        "seat 2 is protected by the handmaid (R15)"
    assert refused("illegal_action", apply, s, Action.play(Card.GUARD, None, Card.KING)) == \
        "only a guard with a target takes a guess"


def test_r20a_no_target_prince_must_choose_the_actor() -> None:
    s = r20a_state("baron", "prince")
    assert legal_actions(s) == [play("baron"), play("prince", 0)]
    refused("illegal_action", apply, s, play("prince"))
    refused("illegal_action", apply, s, play("prince", 2))
    s, events = apply(s, play("prince", 0))
    assert evs(events)[0] == {"type": "play", "seat": 0, "card": "prince", "target": 0,
                              "discarded": "baron", "drew_from": "deck"}


# --------------------------------------------------------------------------- R21-R25 round end


def test_r21_eliminated_player_reveals_is_skipped_and_cannot_be_chosen() -> None:
    s = scenario("classic", 3, aside=["princess"], hands=["guard", "priest", "baron"],
                 draws=["guard", "guard", "king"])
    s, events = apply(s, play("guard", 1, "priest"))  # t1 s0 eliminates s1
    assert evs(events)[1] == {"type": "eliminated", "seat": 1, "reason": "guard",
                              "revealed": ["priest"]}
    assert hands(s)[1] == [] and discards(s)[1] == ["priest"] and s.turn == 2
    assert public_view(s)["players"][1] == {
        "seat": 1, "tokens": 0, "discards": ["priest"], "hand_count": 0, "eliminated": True,
        "protected": False, "forfeited": False}
    assert all(a.target in (0, None) for a in legal_actions(s))
    assert refused("illegal_action", apply, s, play("guard", 1, "baron")) == \
        "seat 1 is out of the round"
    s, _ = apply(s, play("guard", 0, "king"))  # t2 s2 misses
    assert s.turn == 0  # and back to s0, skipping s1 again
    assert all(a.target != 1 for a in legal_actions(s))


def test_r21_revealed_spy_counts_as_discarded_but_eliminated_spies_get_no_bonus() -> None:
    s = scenario("2019", 2, aside=["princess"], face_up=["guard", "guard", "guard"],
                 hands=["guard", "spy"], draws=["priest"], tokens_to_win=1)
    s, events = apply(s, play("guard", 1, "spy"))
    assert discards(s) == [["guard"], ["spy"]]
    end = round_end(events)
    assert (end["winners"], end["spy_bonus"], end["tokens"]) == ([0], None, [1, 0])


def test_r22_round_ends_at_once_when_one_player_is_left() -> None:
    s = scenario("classic", 4, aside=["princess"], hands=["guard", "priest", "baron", "king"],
                 draws=["guard", "guard", "guard"], tokens_to_win=1)
    s, events = run(s, play("guard", 1, "priest"),  # t1 s0 hits s1
                    play("guard", 3, "king"),  # t2 s2 eliminates s3
                    play("guard", 2, "baron"))  # t3 s0 hits s2
    assert evs(events)[-3:] == [
        {"type": "eliminated", "seat": 2, "reason": "guard", "revealed": ["baron"]},
        {"type": "round_end", "round": 1, "reason": "last_standing", "winners": [0],
         "spy_bonus": None, "hands": [["guard"], [], [], []], "set_aside": ["princess"],
         "tokens": [1, 0, 0, 0]},
        {"type": "match_end", "winners": [0], "reason": "tokens", "tokens": [1, 0, 0, 0],
         "placings": [1, 2, 2, 2]},
    ]
    assert len(s.deck) == 16 - 1 - 4 - 3  # the deck was not played out


def test_r22_showdown_highest_hand_wins() -> None:
    for ruleset in ("classic", "2019-classic"):
        s = scenario(ruleset, 2, aside=["princess"], face_up=["prince", "prince", "baron"],
                     hands=["priest", "priest"],
                     draws=["guard", "guard", "guard", "guard", "handmaid", "handmaid",
                            "countess", "king", "guard", "baron"])
        s, events = run(
            s,
            play("guard", 1, "baron"), play("guard", 0, "baron"),  # t1, t2 miss
            play("guard", 1, "baron"), play("guard", 0, "baron"),  # t3, t4 miss
            play("handmaid"), play("handmaid"),  # t5, t6
            play("countess"),  # t7 s0
            play("priest", 0),  # t8 s1 sees a priest, keeps the king
            play("guard", 1, "countess"),  # t9 s0 misses
            play("king", 0),  # t10 s1 gives the baron, receives the priest; deck empty
        )
        end = round_end(events)
        assert (end["reason"], end["winners"], end["hands"]) == \
            ("showdown", [0], [["baron"], ["priest"]])
        assert s.tokens == [1, 0]


def test_r22_classic_tie_is_broken_by_the_sum_of_discards() -> None:
    s = classic_tiebreak_round("classic")
    s, events = apply(s, play("baron", 0))  # t10 s1: priest against priest, the deck is empty
    # s0 discarded guard, guard, handmaid, countess, guard = 14; s1 guard, guard, handmaid,
    # king, baron = 15
    assert evs(events, stop="round_end")[-1] == {
        "type": "round_end", "round": 1, "reason": "showdown", "winners": [1],
        "spy_bonus": None, "hands": [["priest"], ["priest"]], "set_aside": ["princess"],
        "tokens": [0, 1]}
    assert s.round == 2 and s.turn == 1


def test_r22_classic_players_still_tied_after_discards_all_win() -> None:
    s, events = classic_all_tied_round("classic")
    end = round_end(events)
    assert (end["reason"], end["winners"], end["hands"], end["tokens"]) == \
        ("showdown", [0, 1], [["priest"], ["priest"]], [1, 1])


def test_r22_the_face_down_card_never_counts() -> None:
    # The princess lies face down (and prince, prince, baron face up): nobody's hand, no sum.
    s = classic_tiebreak_round("classic", tokens_to_win=1)
    s, events = apply(s, play("baron", 0))
    end = round_end(events)
    assert end["set_aside"] == ["princess"] and end["winners"] == [1]
    assert sum(RULESETS["classic"].values[c] for c in s.discards[0]) == 14
    assert sum(RULESETS["classic"].values[c] for c in s.discards[1]) == 15


def test_r22_deck_emptied_mid_turn_by_a_chancellor_does_not_end_the_round() -> None:
    states = spy_round("two_spies")
    assert states[13].deck == [] and states[13].status == "active"
    assert states[13].rounds == []  # still round 1: the chancellor's turn has not resolved


def test_r23_2019_tie_for_the_highest_hand_is_shared() -> None:
    s, events = classic_all_tied_round("2019-classic")
    assert round_end(events)["winners"] == [0, 1] and s.tokens == [1, 1]
    s = classic_tiebreak_round("2019-classic")  # classic would give this one to s1
    s, events = apply(s, play("baron", 0))
    assert round_end(events)["winners"] == [0, 1] and s.tokens == [1, 1]


def test_r24_single_spy_player_gains_a_token_even_without_winning() -> None:
    states = spy_round("one_spy")
    last = states[-1]
    assert discards(states[-2])[0].count("spy") == 1 and hands(states[-2])[0] == ["spy"]
    end = last.rounds[0]
    assert (end["winners"], end["spy_bonus"], end["hands"], end["tokens"]) == \
        ([1], 0, [["spy"], ["countess"]], [1, 1])


def test_r24_two_spies_by_the_same_player_still_give_one_token() -> None:
    states = spy_round("two_spies")
    assert discards(states[-2])[0] == ["spy", "guard", "guard", "priest", "spy", "guard",
                                        "chancellor"]
    end = states[-1].rounds[0]
    assert (end["winners"], end["spy_bonus"], end["tokens"]) == ([1], 0, [1, 1])


def test_r24_spies_played_by_two_players_give_nobody_a_token() -> None:
    states = spy_round("both_players")
    assert [d.count("spy") for d in discards(states[-2])] == [1, 1]
    end = states[-1].rounds[0]
    assert (end["winners"], end["spy_bonus"], end["tokens"]) == ([1], None, [0, 1])


def test_r24_spy_of_an_eliminated_player_neither_counts_nor_blocks() -> None:
    s = scenario("2019", 3, aside=["princess"], hands=["spy", "spy", "baron"],
                 draws=["guard", "priest", "guard", "guard"], tokens_to_win=5)
    s, events = run(s, play("spy"),  # t1 s0
                    play("spy"),  # t2 s1 keeps the priest
                    play("guard", 1, "priest"),  # t3 s2 eliminates s1
                    play("guard", 2, "baron"))  # t4 s0 eliminates s2
    end = round_end(events)
    assert (end["winners"], end["spy_bonus"], end["tokens"]) == ([0], 0, [2, 0, 0])
    # and a spy player who is eliminated gains nothing
    s = scenario("2019", 2, aside=["princess"], face_up=["guard", "guard", "guard"],
                 hands=["spy", "priest"], draws=["baron", "guard"])
    s, events = run(s, play("spy"), play("guard", 0, "baron"))
    end = round_end(events)
    assert (end["winners"], end["spy_bonus"], end["tokens"]) == ([1], None, [0, 1])


def test_r25_each_winner_gains_a_token_and_round_end_reveals_everything() -> None:
    s, events = classic_all_tied_round("classic")
    end = round_end(events)
    assert end == {"round": 1, "reason": "showdown", "winners": [0, 1], "spy_bonus": None,
                   "hands": [["priest"], ["priest"]],
                   "set_aside": ["princess", "prince", "prince", "countess"], "tokens": [1, 1]}
    assert s.tokens == [1, 1]
    # public: spectators and both players see the hands and the face-down cards of round 1
    seq = next(e.seq for e in events if e.type == "round_end")
    for v in (public_view(s), view(s, 0), view(s, 1)):
        assert v["last_round"] == end
        assert [e for e in v["events"] if e["type"] == "round_end"] == [
            {"seq": seq, "round": 1, "type": "round_end", **end}]


# --------------------------------------------------------------------------- R26-R28 the match


def test_r26_rounds_repeat_until_someone_has_the_tokens_to_win() -> None:
    s = classic_tiebreak_round("classic")
    s, events = apply(s, play("baron", 0))
    assert (s.status, s.round, s.tokens, s.turn) == ("active", 2, [0, 1], 1)
    start = [e for e in events if e.type == "round_start"]
    assert [e.data for e in start] == [
        {"first": 1, "face_up": names(s.face_up), "deck_count": 10, "tokens": [0, 1]}]
    assert len(s.deck) == 9 and len(s.aside) == 1 and s.discards == [[], []]


def test_r26_match_ends_when_a_player_reaches_the_tokens_to_win() -> None:
    s = scenario("classic", 2, aside=["princess"], face_up=["prince", "prince", "baron"],
                 hands=["guard", "priest"], draws=["handmaid"], tokens_to_win=1)
    s, events = apply(s, play("guard", 1, "priest"))
    assert evs(events)[-1] == {"type": "match_end", "winners": [0], "reason": "tokens",
                               "tokens": [1, 0], "placings": [1, 2]}
    assert (s.status, s.winners, s.turn) == (FINISHED, [0], -1)
    assert legal_actions(s) == [] and legal_action_dicts(s) == []
    assert public_view(s)["result"] == {"winners": [0], "placings": [1, 2], "tokens": [1, 0],
                                        "rounds": 1}


def test_r26_several_players_win_the_match_at_once() -> None:
    s, events = classic_all_tied_round("classic", tokens_to_win=1)
    assert evs(events)[-1] == {"type": "match_end", "winners": [0, 1], "reason": "tokens",
                               "tokens": [1, 1], "placings": [1, 1]}
    assert s.winners == [0, 1]
    # the spy token can make a player who lost the round a match winner too
    last = spy_round("one_spy", tokens_to_win=1)[-1]
    assert (last.status, last.winners, last.tokens) == (FINISHED, [0, 1], [1, 1])


def forfeit_setup() -> MatchState:
    """Classic, 3 players; s0 to act holding a guard and a handmaid."""
    return scenario("classic", 3, aside=["princess"], hands=["guard", "priest", "baron"],
                    draws=["handmaid", "king", "guard", "countess"])


def test_r27_forfeit_mid_round_by_a_player_not_to_act() -> None:
    s, events = forfeit(forfeit_setup(), 2)
    assert evs(events) == [
        {"type": "forfeit", "seat": 2, "reason": "resigned"},
        {"type": "eliminated", "seat": 2, "reason": "forfeit", "revealed": ["baron"]},
    ]
    assert (s.turn, s.forfeited, s.eliminated) == (0, [False, False, True],
                                                  [False, False, True])
    assert all(a.target in (1, None) for a in legal_actions(s))
    s, _ = run(s, play("handmaid"))  # t1 s0
    assert s.turn == 1
    s, _ = run(s, play("priest"))  # t2 s1: s0 is protected and s2 is out: no target
    assert s.turn == 0  # s2 is skipped


def test_r27_forfeit_on_ones_own_turn_passes_the_turn() -> None:
    s, events = forfeit(forfeit_setup(), 0)
    assert evs(events) == [
        {"type": "forfeit", "seat": 0, "reason": "resigned"},
        {"type": "eliminated", "seat": 0, "reason": "forfeit", "revealed": ["guard", "handmaid"]},
        {"type": "turn", "seat": 1, "turn": 2, "deck_count": 10},
        {"type": "drew", "seat": 1, "card": "king", "to": [1]},
    ]
    assert hands(s) == [[], ["priest", "king"], ["baron"]]
    assert discards(s)[0] == ["guard", "handmaid"]


def test_r27_forfeit_during_the_chancellor_phase() -> None:
    s = scenario("2019", 3, aside=["princess"], hands=["guard", "priest", "baron"],
                 draws=["chancellor", "king", "countess", "handmaid"])
    s, _ = apply(s, play("chancellor"))
    assert s.phase == PHASE_CHANCELLOR and len(s.deck) == 14
    s, events = forfeit(s, 0)
    assert evs(events) == [
        {"type": "forfeit", "seat": 0, "reason": "resigned"},
        {"type": "eliminated", "seat": 0, "reason": "forfeit",
         "revealed": ["guard", "king", "countess"]},
        {"type": "turn", "seat": 1, "turn": 2, "deck_count": 13},
        {"type": "drew", "seat": 1, "card": "handmaid", "to": [1]},
    ]
    assert (s.phase, s.turn) == (PHASE_PLAY, 1)
    assert discards(s)[0] == ["chancellor", "guard", "king", "countess"]
    assert all(a.type == "play" for a in legal_actions(s))


def test_r27_last_non_forfeited_player_wins_the_match() -> None:
    s = scenario("classic", 2, aside=["princess"], face_up=["prince", "prince", "baron"],
                 hands=["guard", "priest"], draws=["handmaid"])
    s, events = forfeit(s, 1)
    assert evs(events) == [
        {"type": "forfeit", "seat": 1, "reason": "resigned"},
        {"type": "eliminated", "seat": 1, "reason": "forfeit", "revealed": ["priest"]},
        {"type": "match_end", "winners": [0], "reason": "forfeit", "tokens": [0, 0],
         "placings": [1, 2]},
    ]
    assert (s.status, s.winners) == (FINISHED, [0])
    s, _ = forfeit(forfeit_setup(), 1)
    assert s.status == "active"
    s, events = forfeit(s, 0)
    assert (s.status, s.winners, placings(s)) == (FINISHED, [2], [2, 2, 1])
    assert s.forfeited == [True, True, False]


def test_r27_forfeit_leaving_one_player_in_the_round_ends_it() -> None:
    s = forfeit_setup()
    s, _ = apply(s, play("guard", 1, "priest"))  # t1 s0 eliminates s1; s2 to act
    s, events = forfeit(s, 2)
    end = round_end(events)
    assert (end["reason"], end["winners"], end["tokens"]) == ("last_standing", [0], [1, 0, 0])
    assert s.status == "active" and s.round == 2


def test_r27_forfeited_players_are_skipped_in_later_rounds() -> None:
    s = forfeit_setup()
    s, _ = apply(s, play("guard", 1, "priest"))
    s, events = forfeit(s, 2)
    assert (s.round, s.turn) == (2, 0)
    assert [len(h) for h in s.hands] == [2, 1, 0]
    assert s.eliminated == [False, False, True] and s.forfeited == [False, False, True]
    dealt = [e for e in events if e.type == "dealt"]
    assert [e.data["seat"] for e in dealt] == [0, 1]
    assert len(s.deck) == 16 - 1 - 2 - 1
    while s.status == "active" and s.round == 2:
        assert s.turn in (0, 1)
        assert all(a.target != 2 for a in legal_actions(s))
        s, _ = apply(s, legal_actions(s)[-1])
    assert s.round == 3 and len(s.hands[2]) == 0


def test_r27_running_out_of_timeouts_forfeits() -> None:
    s = forfeit_setup()
    s, events = apply_timeout(s, policy="forfeit")
    assert evs(events)[:2] == [
        {"type": "forfeit", "seat": 0, "reason": "timeout"},
        {"type": "eliminated", "seat": 0, "reason": "forfeit", "revealed": ["guard", "handmaid"]},
    ]
    assert s.forfeited == [True, False, False] and s.turn == 1


def test_r27_forfeiting_twice_is_refused() -> None:
    s, _ = forfeit(forfeit_setup(), 2)
    assert refused("already_forfeited", forfeit, s, 2) == "seat 2 has already forfeited"
    assert refused("invalid_seat", forfeit, s, 3) == "no seat 3 in this match"


def test_r28_winners_share_first_place() -> None:
    s, _ = classic_all_tied_round("classic", tokens_to_win=1)
    assert placings(s) == [1, 1]
    assert public_view(s)["result"]["placings"] == [1, 1]


def test_r28_others_ranked_by_tokens_and_forfeited_players_last() -> None:
    s = scenario("classic", 4, aside=["princess"], hands=["guard", "priest", "baron", "handmaid"],
                 draws=["guard", "guard", "guard"], tokens_to_win=1)
    s, _ = forfeit(s, 2)  # s2 forfeits before anyone plays
    s, events = run(s, play("guard", 1, "priest"),  # t1 s0 eliminates s1
                    play("guard", 0, "priest"),  # t2 s3 misses
                    play("guard", 3, "handmaid"))  # t3 s0 eliminates s3: s0 wins the match
    assert evs(events)[-1] == {"type": "match_end", "winners": [0], "reason": "tokens",
                               "tokens": [1, 0, 0, 0], "placings": [1, 2, 4, 2]}
    # placings read winners, forfeits and tokens: rank a few finished tables
    for tokens, winners, forfeited, expected in [
        ([1, 3, 2, 5], [0], [False, False, False, True], [1, 2, 3, 4]),
        ([4, 2, 2, 0], [0], [False, False, False, False], [1, 2, 2, 4]),
        ([4, 4, 1, 3], [0, 1], [False, False, True, True], [1, 1, 4, 3]),
    ]:
        s.tokens, s.winners, s.forfeited = tokens, winners, forfeited
        assert placings(s) == expected


# --------------------------------------------------------------------------- R29-R32 information


def info_round() -> MatchState:
    """Classic, 3 players: t1 s0 eliminates s1 with a guard, t2 s2 plays a handmaid; s0 to act."""
    s = scenario("classic", 3, aside=["princess"], hands=["guard", "priest", "handmaid"],
                 draws=["guard", "guard", "king"])
    s, _ = run(s, play("guard", 1, "priest"), play("handmaid"))
    return s


def test_r29_public_view_shows_exactly_the_public_facts() -> None:
    s = info_round()
    assert public_view(s) == {
        "ruleset": "classic", "players_count": 3, "two_player_setup": "three-up",
        "tokens_to_win": 5, "status": "active", "round": 1,
        "turn": {"seat": 0, "phase": "play"},
        "players": [
            {"seat": 0, "tokens": 0, "discards": ["guard"], "hand_count": 2,
             "eliminated": False, "protected": False, "forfeited": False},
            {"seat": 1, "tokens": 0, "discards": ["priest"], "hand_count": 0,
             "eliminated": True, "protected": False, "forfeited": False},
            {"seat": 2, "tokens": 0, "discards": ["handmaid"], "hand_count": 1,
             "eliminated": False, "protected": True, "forfeited": False},
        ],
        "deck_count": 9, "face_up": [], "set_aside_count": 1, "last_round": None,
        "result": None, "seat": None,
        "events": [
            {"seq": 1, "round": 1, "type": "round_start", "first": 0, "face_up": [],
             "deck_count": 12, "tokens": [0, 0, 0]},
            {"seq": 5, "round": 1, "type": "turn", "seat": 0, "turn": 1, "deck_count": 11},
            {"seq": 7, "round": 1, "type": "play", "seat": 0, "card": "guard", "target": 1,
             "guess": "priest", "hit": True},
            {"seq": 8, "round": 1, "type": "eliminated", "seat": 1, "reason": "guard",
             "revealed": ["priest"]},
            {"seq": 9, "round": 1, "type": "turn", "seat": 2, "turn": 2, "deck_count": 10},
            {"seq": 11, "round": 1, "type": "play", "seat": 2, "card": "handmaid"},
            {"seq": 12, "round": 1, "type": "turn", "seat": 0, "turn": 3, "deck_count": 9},
        ],
    }
    # a player's view holds the same public part
    mine = view(s, 2)
    assert {k: mine[k] for k in public_view(s) if k not in ("seat", "events")} == \
        {k: v for k, v in public_view(s).items() if k not in ("seat", "events")}
    assert public_view(s, since=9)["events"] == public_view(s)["events"][4:]


def test_r30_a_players_own_hand_is_in_their_view_only() -> None:
    s = info_round()
    assert view(s, 0)["hand"] == ["guard", "king"]
    assert view(s, 2)["hand"] == ["guard"]
    assert view(s, 1)["hand"] == []
    assert "hand" not in public_view(s) and "hands" not in public_view(s)
    assert "king" not in without_legal(view(s, 2))
    assert [e["card"] for e in view(s, 0)["events"] if e["type"] in ("dealt", "drew")] == \
        ["guard", "guard", "king"]
    assert [e["card"] for e in view(s, 2)["events"] if e["type"] in ("dealt", "drew")] == \
        ["handmaid", "guard"]


def test_r30_private_facts_reach_only_the_right_seats() -> None:
    s = scenario("2019", 4, aside=["princess"], hands=["priest", "guard", "guard", "spy"],
                 draws=["handmaid", "baron", "king", "prince", "countess", "chancellor",
                        "priest", "spy"])
    s, _ = run(
        s,
        play("priest", 1),  # t1 s0 sees s1's guard
        play("baron", 2),  # t2 s1 and s2 compare guard with guard
        play("king", 3),  # t3 s2 gives a guard to s3 for the spy
        play("prince", 0),  # t4 s3: s0 discards the handmaid, draws the countess
        play("chancellor"),  # t5 s0 draws priest and spy
        ret("countess", "priest", "spy"),
    )

    def known(seat: int) -> list[dict[str, Any]]:
        return [{k: v for k, v in f.items() if k not in ("seq", "round")}
                for f in view(s, seat)["known"]]

    assert known(0) == [
        {"type": "priest", "seat": 1, "card": "guard", "turn": 1},
        {"type": "prince", "seat": 3, "card": "countess", "turn": 4},
        {"type": "chancellor_drew", "cards": ["priest", "spy"], "turn": 5},
        {"type": "chancellor_returned", "keep": "countess", "bottom": ["priest", "spy"],
         "turn": 5},
    ]
    assert known(1) == [{"type": "baron", "seat": 2, "card": "guard", "mine": "guard",
                         "turn": 2}]
    assert known(2) == [
        {"type": "baron", "seat": 1, "card": "guard", "mine": "guard", "turn": 2},
        {"type": "king", "seat": 3, "gave": "guard", "received": "spy", "turn": 3},
    ]
    assert known(3) == [{"type": "king", "seat": 2, "gave": "spy", "received": "guard",
                         "turn": 3}]
    assert "known" not in public_view(s)
    private = [e for e in public_view(s)["events"] if e.get("private")]
    assert private == []
    # the public record of those turns: targets, no cards
    assert [e for e in public_view(s)["events"] if e["type"] in ("play", "chancellor_return")
            ] == [
        {"seq": e.seq, "round": 1, "type": e.type, **e.data}
        for e in s.events if e.type in ("play", "chancellor_return")]
    assert [e.data for e in s.events if e.type == "play"] == [
        {"seat": 0, "card": "priest", "target": 1},
        {"seat": 1, "card": "baron", "target": 2, "loser": None},
        {"seat": 2, "card": "king", "target": 3},
        {"seat": 3, "card": "prince", "target": 0, "discarded": "handmaid", "drew_from": "deck"},
        {"seat": 0, "card": "chancellor", "drew": 2},
    ]


def test_r30_facts_are_for_the_current_round_only() -> None:
    s = scenario("classic", 2, aside=["princess"], face_up=["prince", "prince", "baron"],
                 hands=["priest", "guard"], draws=["guard", "handmaid"])
    s, _ = apply(s, play("priest", 1))
    assert len(view(s, 0)["known"]) == 1
    s, _ = apply(s, play("guard", 0, "baron"))  # t2 s1 misses, keeps the handmaid
    s, _ = apply(s, play("guard", 1, "handmaid"))  # t3 s0 hits: round 2 starts
    assert s.round == 2 and view(s, 0)["known"] == [] and view(s, 1)["known"] == []


HIDDEN = ("princess", "countess", "king")


def hidden_round() -> MatchState:
    """2019, 3 players: princess set aside, s1 holds the countess, s2 the king."""
    return scenario("2019", 3, aside=["princess"], hands=["guard", "countess", "king"],
                    draws=["priest", "handmaid", "guard", "baron"])


def test_r31_hands_deck_order_and_set_aside_card_stay_hidden() -> None:
    s = hidden_round()
    states = history(s, play("guard", 1, "baron"),  # t1 s0 misses
                     play("handmaid"),  # t2 s1
                     play("guard", 0, "baron"))  # t3 s2 misses (s0 holds a priest)
    assert states[-1].eliminated == [False, False, False] and states[-1].turn == 0
    for st in states:
        seen = {0: set(HIDDEN), 1: {"princess", "king"}, 2: {"princess", "countess"},
                None: set(HIDDEN)}
        for seat, hidden in seen.items():
            v = public_view(st) if seat is None else view(st, seat)
            text = without_legal(v)
            assert [c for c in hidden if c in text] == [], (seat, st.turn_no)
            assert all(e["type"] != "deck" for e in v["events"])
            assert not {"deck", "aside", "hands", "seed", "deck_order"} & set(v)
    # the deck order, set-aside card and hands are in the state and in the full record only
    assert [e.type for e in s.events if e.to == ()] == ["deck"]


def test_r32_full_record_for_spectators_once_the_match_has_ended() -> None:
    s = hidden_round()
    s, _ = forfeit(s, 1)
    # s1's countess is now public (R21); the set-aside princess and s2's king are not
    text = without_legal(public_view(s))
    assert "countess" in text and "princess" not in text and "king" not in text
    s, _ = forfeit(s, 2)
    assert s.status == FINISHED
    v = public_view(s)
    assert v["hands"] == [["guard", "priest"], [], []]
    deck_events = [e for e in v["events"] if e["type"] == "deck"]
    assert deck_events == [{"seq": 0, "round": 1, "type": "deck", "private": True, "to": [],
                            "deck": build_deck("2019", ["princess", "guard", "countess",
                                                        "king", "priest", "handmaid",
                                                        "guard", "baron"])}]
    assert [e["to"] for e in v["events"] if e["type"] == "dealt"] == [[0], [1], [2]]
    assert full_record(s)["events"] == v["events"]
    assert full_record(s)["options"]["deck"] == deck_events[0]["deck"]


def indistinguishable_pair() -> tuple[MatchState, MatchState]:
    """Two 2019 rounds that seat 0 cannot tell apart: the same cards reach seat 0, and the
    set-aside card, the other hands and the rest of the deck differ."""
    a_top = ["princess", "guard", "countess", "king", "priest", "priest", "handmaid", "baron"]
    b_top = ["king", "guard", "princess", "countess", "priest", "priest", "handmaid", "baron"]
    deck_a = build_deck("2019", a_top)
    deck_b = b_top + build_deck("2019", b_top)[len(b_top):][::-1]
    assert deck_a != deck_b and sorted(deck_a) == sorted(deck_b)
    a = new_match("2019", 3, seed="r32", first_seat=0, deck=deck_a)
    b = new_match("2019", 3, seed="r32", first_seat=0, deck=deck_b)
    return a, b


def test_r32_same_information_gives_byte_identical_views() -> None:
    a, b = indistinguishable_pair()
    script = [play("guard", 1, "baron"),  # t1 s0 misses (s1 holds countess / princess)
              play("priest", 2),  # t2 s1 sees king / countess
              play("handmaid")]  # t3 s2
    for a_state, b_state in zip(history(a, *script), history(b, *script), strict=True):
        assert dumps(view(a_state, 0)) == dumps(view(b_state, 0))
        assert dumps(public_view(a_state)) == dumps(public_view(b_state))
        # seats 1 and 2 hold different cards in the two rounds: their views differ
        assert dumps(view(a_state, 1)) != dumps(view(b_state, 1))
        assert dumps(view(a_state, 2)) != dumps(view(b_state, 2))
    a_end, b_end = history(a, *script)[-1], history(b, *script)[-1]
    assert a_end.turn == 0 and view(a_end, 0)["legal_actions"] == \
        view(b_end, 0)["legal_actions"] != []
    assert json.dumps(view(a_end, 0), sort_keys=True).encode() == \
        json.dumps(view(b_end, 0), sort_keys=True).encode()


def test_r32_spectator_views_ignore_every_hidden_card() -> None:
    a, b = indistinguishable_pair()
    # c differs from a in every hand (seat 0's too), the set-aside card, the deck and the seed
    c_top = ["countess", "baron", "king", "princess", "guard"]
    c = new_match("2019", 3, seed="other", first_seat=0, deck=build_deck("2019", c_top))
    assert hands(c) != hands(a) and hands(c)[0] != hands(a)[0]
    for st in (a, b, c):
        assert dumps(public_view(st)) == dumps(public_view(a))
    # a spectator's view changes with public facts only
    a2, _ = apply(a, play("guard", 1, "baron"))
    c2, _ = apply(c, play("guard", 1, "baron"))
    assert dumps(public_view(a2)) == dumps(public_view(c2))


def test_r32_automatic_move_does_not_depend_on_the_kept_card() -> None:
    """The timeout move plays the same card (a guard, the lowest) whether seat 0 keeps the
    princess, a priest or the king; the public history is the same, and so is the automatic
    action for every seed: its target and guess come from public information and the seed,
    never from the kept card (the old rule named the countess next to the princess and the
    princess otherwise: the log told everyone what was kept)."""
    by_kept: dict[str, list[Action]] = {}
    for kept in ("princess", "priest", "king"):
        acts = []
        for seed in range(60):
            s = scenario("classic", 3, aside=["baron"], hands=[kept, "handmaid", "prince"],
                         draws=["guard"], seed=seed)
            action, (after, events) = timeout_action(s), apply_timeout(s)
            assert action.card == Card.GUARD and is_legal(s, action)
            assert evs(events)[0]["timeout"] is True and after.timeouts[0] == 1
            acts.append(action)
            assert dumps(public_view(s)) == dumps(public_view(
                scenario("classic", 3, aside=["baron"], hands=["princess", "handmaid", "prince"],
                         draws=["guard"], seed=seed)))
        by_kept[kept] = acts
    assert by_kept["princess"] == by_kept["priest"] == by_kept["king"]
    # the draws really are draws: both targets and several guesses occur
    assert {a.target for a in by_kept["king"]} == {1, 2}
    assert len({a.guess for a in by_kept["king"]}) >= 4


def test_r32_automatic_move_avoids_the_princess_and_prefers_other_targets() -> None:
    # princess + prince: the prince is played, never at its own player while others can be chosen
    s = scenario("classic", 3, aside=["baron"], hands=["princess", "handmaid", "guard"],
                 draws=["prince"])
    for seed in range(20):
        s.seed = str(seed)
        a = timeout_action(s)
        assert a.card == Card.PRINCE and a.target in (1, 2), a
    # a chancellor return keeps the highest card and returns the others lowest first
    s = scenario("2019", 3, aside=["baron"], hands=["guard", "handmaid", "prince"],
                 draws=["chancellor", "king", "spy"])
    s, _ = apply(s, play("chancellor"))
    assert timeout_action(s) == ret("king", "spy", "guard")


# --------------------------------------------------------------------------- errors, legal order


def test_errors_illegal_action_explains_why() -> None:
    s = forfeit_setup()  # s0 holds a guard and a handmaid; s1 and s2 can be chosen
    cases = [
        (play("baron", 1), "you don't hold a baron; your hand is ['guard', 'handmaid']"),
        (play("handmaid", 1), "the handmaid takes no target"),
        (play("guard", 7, "king"), "no seat 7 in this match"),
        (play("guard"), "the guard needs a target: one of [1, 2]"),
        (play("handmaid", None, "king"), "only a guard with a target takes a guess"),
        (play("spy"), "there is no spy in ruleset classic"),
        (ret("guard", "handmaid"),
         "a chancellor_return is only legal right after playing a chancellor"),
    ]
    for action, message in cases:
        assert not is_legal(s, action)
        assert refused("illegal_action", apply, s, action) == message
        assert refused("illegal_action", apply, s, action.to_dict()) == message
    assert s.events == forfeit_setup().events  # refusals change nothing


def test_errors_malformed_action() -> None:
    s = forfeit_setup()
    for data, message in [
        ("play guard", "an action must be a JSON object"),
        ({"type": "discard", "card": "guard"}, "type must be 'play' or 'chancellor_return'"),
        ({"type": "play", "card": "dragon"}, "card: unknown card 'dragon'"),
        ({"type": "play", "card": "Guard"}, "card: unknown card 'Guard'"),
        ({"type": "play", "card": "guard", "target": "1", "guess": "priest"},
         "target must be an integer seat"),
        ({"type": "play", "card": "guard", "target": True, "guess": "priest"},
         "target must be an integer seat"),
        ({"type": "play", "card": "guard", "target": 1, "guess": 3},
         "guess: unknown card 3"),
        ({"type": "play", "card": "guard", "target": 1, "guess": "priest", "why": "x"},
         "unexpected fields: ['why']"),
        ({"type": "chancellor_return", "keep": "king", "bottom": "guard"},
         "bottom must be a list of card names"),
        ({"type": "chancellor_return", "keep": "king", "bottom": ["guard", None]},
         "bottom: unknown card None"),
    ]:
        assert refused("malformed_action", Action.from_dict, data) == message
        assert refused("malformed_action", apply, s, data) == message
    ok = {"type": "play", "card": "guard", "target": 1, "guess": "priest"}
    assert Action.from_dict(ok) == play("guard", 1, "priest")
    assert apply(s, ok)[0].to_dict() == apply(s, play("guard", 1, "priest"))[0].to_dict()


def test_errors_malformed_action_objects_are_refused_not_crashed() -> None:
    # Python callers (the SDK's offline arena, bots) build Action objects directly.
    s = forfeit_setup()
    for action, message in [
        (Action(PLAY, 42), "card: unknown card 42"),
        (Action(PLAY, -1), "card: unknown card -1"),
        (Action(PLAY), "card: unknown card None"),
        (Action(PLAY, 1, 1, 42), "guess: unknown card 42"),
        (Action(PLAY, 1, "1", 7), "target must be an integer seat"),  # type: ignore[arg-type]
        (Action(PLAY, 1, 1.0, 7), "target must be an integer seat"),  # type: ignore[arg-type]
        (Action(PLAY, 1, True, 7), "target must be an integer seat"),  # True == 1
        (Action(PLAY, 1, 1, 7, keep=7), "a play takes card, target and guess only"),
        (Action(CHANCELLOR_RETURN, keep=7, bottom=[1, 0]),  # type: ignore[arg-type]
         "bottom must be a tuple of cards"),
        (Action(CHANCELLOR_RETURN), "keep: unknown card None"),
        (Action(CHANCELLOR_RETURN, 1, keep=7, bottom=()),
         "a chancellor_return takes keep and bottom only"),
        (Action("discard", 1), "type must be 'play' or 'chancellor_return'"),
    ]:
        assert refused("malformed_action", apply, s, action) == message
        inplace = s.clone()
        assert refused("malformed_action", apply_inplace, inplace, action) == message
        assert inplace.to_json() == s.to_json()  # nothing half-applied
        assert not is_legal(s, action)
    # Card members are fine
    assert is_legal(s, Action(PLAY, Card.GUARD, 1, Card.PRIEST))


def test_errors_not_your_turn_and_invalid_seat() -> None:
    s = forfeit_setup()
    assert refused("not_your_turn", apply, s, play("handmaid"), seat=1) == \
        "it is seat 0's turn, not seat 1's"
    assert refused("invalid_seat", apply, s, play("handmaid"), seat=3) == \
        "no seat 3 in this match"
    s2, _ = apply(s, play("handmaid"), seat=0)
    assert s2.turn == 1


def test_errors_match_over() -> None:
    s = scenario("classic", 2, aside=["princess"], face_up=["prince", "prince", "baron"],
                 hands=["guard", "priest"], draws=["handmaid"])
    s, _ = forfeit(s, 0)
    assert s.status == FINISHED
    assert refused("match_over", apply, s, play("handmaid")) == "the match is over"
    assert refused("match_over", forfeit, s, 1) == "the match is over"
    assert refused("match_over", apply_timeout, s) == "the match is over"
    assert legal_actions(s) == [] and not is_legal(s, play("handmaid"))


def test_errors_codes_are_the_documented_ones() -> None:
    assert {"illegal_action", "malformed_action", "not_your_turn", "match_over",
            "invalid_options", "already_forfeited", "invalid_seat"} <= CODES


def test_legal_actions_canonical_order() -> None:
    # by card, then target seat, then guessed card (card order)
    s = scenario("classic", 3, aside=["princess"], hands=["priest", "baron", "king"],
                 draws=["guard"])
    assert legal_actions(s) == guard_plays(1, CLASSIC_GUESSES) + \
        guard_plays(2, CLASSIC_GUESSES) + [play("priest", 1), play("priest", 2)]
    s = scenario("2019", 3, aside=["princess"], hands=["prince", "baron", "king"],
                 draws=["spy"], first=1)
    assert s.turn == 1 and hands(s)[1] == ["baron", "spy"]
    assert legal_actions(s) == [play("spy"), play("baron", 0), play("baron", 2)]
    s = scenario("2019", 3, aside=["princess"], hands=["chancellor", "prince", "king"],
                 draws=["handmaid"], first=1)
    assert legal_actions(s) == [play("handmaid"), play("prince", 0), play("prince", 1),
                                play("prince", 2)]
    # the wire form lists the same actions in the same order, only for the seat to act
    assert legal_action_dicts(s) == [a.to_dict() for a in legal_actions(s)]
    assert view(s, 1)["legal_actions"] == legal_action_dicts(s)
    assert view(s, 0)["legal_actions"] == [] and view(s, 2)["legal_actions"] == []
    for d in legal_action_dicts(s):
        assert is_legal(s, Action.from_dict(d))
