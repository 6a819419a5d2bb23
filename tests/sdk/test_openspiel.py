"""llsdk.openspiel: ``python_love_letter`` passes OpenSpiel's random simulation test and the
consistency checks OpenSpiel runs on its own Python games (clones, serialization, pickling,
terminal returns), deals with the right odds, keeps information states consistent, and its
exact tree (GameTree) agrees with OpenSpiel's Python exploitability."""

from __future__ import annotations

import pickle
import random
from collections import Counter
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyspiel", reason="the llsdk[openspiel] extra (make test installs it)")

import pyspiel  # noqa: E402
from llsdk import openspiel as lo  # noqa: E402
from llsdk.cli import load_bot  # noqa: E402
from open_spiel.python import policy as os_policy  # noqa: E402
from open_spiel.python.algorithms import exploitability  # noqa: E402

from tests.sdk.test_sdk_arena import COUNTING_BOT  # noqa: E402

TINY = "guard+priest+baron+prince+princess"  # 5 cards: two turns, about 2,000 nodes
GAMES = [{"players": n} for n in (2, 3, 4)] + \
    [{"ruleset": "2019", "players": n} for n in (2, 3, 4, 5, 6)] + \
    [{"two_player_setup": "three-down-one-up"},
     {"ruleset": "2019", "two_player_setup": "three-down-one-up"},
     {"deck": lo.SMALL_DECK}, {"deck": TINY}, {"players": 3, "deck": TINY + "+guard+handmaid"},
     {"ruleset": "2019", "deck": "spy+spy+guard+chancellor+chancellor+prince+king+princess"},
     {"players": 3, "first_seat": 2}]


def load(params: dict[str, Any]) -> Any:
    return pyspiel.load_game(lo.SHORT_NAME, params)


@pytest.mark.parametrize("params", GAMES, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
def test_random_sim_test(params: dict[str, Any]) -> None:
    game = load(params)
    pyspiel.random_sim_test(game, num_sims=10, serialize=True, verbose=False)


def apply_and_check_clone(state: Any, action: int) -> None:
    clone = state.clone()
    state.apply_action(action)
    clone.apply_action(action)
    assert str(state) == str(clone)
    assert state.history() == clone.history()


@pytest.mark.parametrize("params", GAMES[:8] + GAMES[10:13],
                         ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
def test_openspiel_python_game_checks(params: dict[str, Any]) -> None:
    """What OpenSpiel's games_sim_test runs on each of its Python games."""
    game = load(params)
    assert game.min_utility() < game.max_utility()
    assert str(pickle.loads(pickle.dumps(game))) == str(game)
    assert pickle.loads(pickle.dumps(game.get_type())) == game.get_type()
    assert str(pyspiel.load_game(str(game))) == str(game)  # the game string round-trips
    rng = np.random.RandomState(0)
    for _ in range(3):
        state = game.new_initial_state()
        moves, next_check = 0, 1
        while not state.is_terminal():
            moves += 1
            if moves >= next_check:
                new_game, new_state = pyspiel.deserialize_game_and_state(
                    pyspiel.serialize_game_and_state(game, state))
                assert str(new_game) == str(game) and str(new_state) == str(state)
                assert str(pickle.loads(pickle.dumps(state))) == str(state)
                next_check *= 2
            if state.is_chance_node():
                actions, probs = zip(*state.chance_outcomes(), strict=True)
                assert abs(sum(probs) - 1) < 1e-9
                state.apply_action(int(rng.choice(actions, p=probs)))
            else:
                apply_and_check_clone(state, int(rng.choice(state.legal_actions())))
        assert state.legal_actions() == []
        returns = state.returns()
        assert abs(sum(returns)) < 1e-9
        for p in range(game.num_players()):
            assert state.player_return(p) == returns[p]
            assert game.min_utility() <= returns[p] <= game.max_utility()


def walk(state: Any, reach: float, out: dict[str, Any]) -> None:
    if state.is_terminal():
        out["reach"] += reach
        return
    if state.is_chance_node():
        for a, p in state.chance_outcomes():
            walk(state.child(a), reach * p, out)
        return
    key = state.information_state_string()
    legal = state.legal_actions()
    assert out["legal"].setdefault(key, legal) == legal  # same information, same choices
    obs = state.observation_string()
    assert out["obs"].setdefault(key, obs) == obs  # a recall string fixes the observation
    for a in legal:  # each action equally likely: the terminals' reach then sums to 1
        walk(state.child(a), reach / len(legal), out)


def test_information_states_are_consistent_and_deals_sum_to_one() -> None:
    out: dict[str, Any] = {"reach": 0.0, "legal": {}, "obs": {}}
    walk(load({"deck": TINY}).new_initial_state(), 1.0, out)
    assert abs(out["reach"] - 1.0) < 1e-9
    assert len(out["legal"]) > 50


def test_chance_deals_each_card_by_the_copies_left() -> None:
    state = load({}).new_initial_state()  # classic: 5 guards of 16 cards
    assert dict(state.chance_outcomes())[1] == pytest.approx(5 / 16)
    state.apply_action(1)  # a guard face up
    assert dict(state.chance_outcomes())[1] == pytest.approx(4 / 15)
    assert dict(state.chance_outcomes())[9] == pytest.approx(1 / 15)  # the princess
    state.apply_action(9)
    assert 9 not in dict(state.chance_outcomes())


def test_reduced_deck_lays_the_rest_face_up_in_the_views() -> None:
    game = load({"deck": lo.SMALL_DECK})
    state = game.new_initial_state()
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    v = state.view(0)
    assert len(v["face_up"]) == 16 - 6
    assert Counter(v["face_up"]) == Counter(["guard"] * 3 + ["priest", "baron", "handmaid",
                                             "handmaid", "prince", "king", "countess"])
    assert v["deck_count"] == 6 - 1 - 2 - 1  # set aside, two hands, the first draw
    start = next(e for e in v["events"] if e["type"] == "round_start")
    assert start["face_up"] == v["face_up"] and start["deck_count"] == 3
    # the counting bot reads it: it never guesses a card that lies face up in full
    bot = load_bot(COUNTING_BOT)
    policy = lo.BotPolicy(game, lambda: bot)
    rng = random.Random(3)
    for _ in range(50):
        s = game.new_initial_state()
        while not s.is_terminal():
            if s.is_chance_node():
                s.apply_action(rng.choice(s.chance_outcomes())[0])
                continue
            probs = policy.action_probabilities(s)
            assert set(probs) <= set(s.legal_actions())
            s.apply_action(rng.choice(sorted(probs)))


def test_bad_parameters_are_refused() -> None:
    for params in ({"deck": "guard+joker"}, {"deck": "princess+princess+guard+guard+baron"},
                   {"deck": "guard+priest+baron"}, {"players": 5},
                   {"first_seat": 2}, {"two_player_setup": "four-up"}):
        with pytest.raises((ValueError, pyspiel.SpielError)):
            load(params)


def test_game_tree_exploitability_matches_openspiel_python() -> None:
    """The EFG copy of the tree gives OpenSpiel's Python exploitability exactly, and CFR+
    on it gets near an equilibrium."""
    game = load({"deck": TINY})
    tree = lo.GameTree(game)
    uniform = os_policy.UniformRandomPolicy(game)
    expected = exploitability.exploitability(game, uniform)
    assert tree.exploitability(uniform) == pytest.approx(expected, abs=1e-9)
    assert expected > 0.2
    solved = tree.exploitability(tree.cfr_plus(200))
    assert solved < 0.01
    counting = tree.exploitability(lo.BotPolicy(game, lambda: load_bot(COUNTING_BOT)))
    assert solved < counting < expected


def test_resampled_states_share_the_information_state() -> None:
    """ISMCTS's resampler: a state drawn from a seat's view has the same information state
    and legal actions as the true one, and plays to a terminal with no chance nodes."""
    game = load({"players": 3})
    rng = np.random.RandomState(1)
    for _ in range(10):
        state = game.new_initial_state()
        while state.is_chance_node():
            actions, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(int(rng.choice(actions, p=probs)))
        for _ in range(rng.randint(4)):  # a few moves in
            state.apply_action(int(rng.choice(state.legal_actions())))
            while state.is_chance_node():
                actions, probs = zip(*state.chance_outcomes(), strict=True)
                state.apply_action(int(rng.choice(actions, p=probs)))
        if state.is_terminal():
            continue
        me = state.current_player()
        for _ in range(5):
            other = state.resample_from_infostate(me, rng.uniform)
            assert other.information_state_string() == state.information_state_string()
            assert other.legal_actions() == state.legal_actions()
            while not other.is_terminal():
                assert not other.is_chance_node()
                other.apply_action(int(rng.choice(other.legal_actions())))
            assert abs(sum(other.returns())) < 1e-9
