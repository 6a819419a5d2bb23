"""llsdk.pettingzoo and llsdk.encoding: PettingZoo's own API and seed tests for every ruleset
and player count, observations that are a function of the seat's view only (R29-R31), action
ids that name exactly the legal actions, and match-level zero-sum rewards."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo", reason="the llsdk[rl] extra (make test installs it)")

from llsdk import Action, encoding  # noqa: E402
from llsdk.pettingzoo import env  # noqa: E402
from pettingzoo.test import api_test, seed_test  # noqa: E402

from service import engine  # noqa: E402

CASES = [("classic", n, "three-up") for n in (2, 3, 4)] + \
    [("2019", n, "three-up") for n in (2, 3, 4, 5, 6)] + \
    [("classic", 2, "three-down-one-up"), ("2019", 2, "three-down-one-up"),
     ("2019-classic", 3, "three-up")]


@pytest.mark.parametrize(("ruleset", "players", "setup"), CASES)
def test_pettingzoo_api_and_seed_tests(ruleset: str, players: int, setup: str) -> None:
    with warnings.catch_warnings():
        # PettingZoo warns that a dict observation is not an array, as for its own card games
        warnings.simplefilter("ignore", UserWarning)
        api_test(env(ruleset, players, two_player_setup=setup), num_cycles=300)
        seed_test(lambda: env(ruleset, players, two_player_setup=setup), num_cycles=300)


def play_out(e: env, seed: int) -> list[dict[str, float]]:  # type: ignore[valid-type]
    """Play one match with random legal ids; the rewards of each step."""
    e.reset(seed=seed)
    rng = np.random.default_rng(seed)
    rewards = []
    for _agent in e.agent_iter():
        obs, _, term, trunc, _ = e.last()
        if term or trunc:
            e.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        e.step(int(rng.choice(legal)))
        rewards.append(dict(e.rewards))
    return rewards


def test_same_seed_same_match_other_seed_other_match() -> None:
    def tokens(seed: int) -> list[int]:
        e = env("2019", 4)
        play_out(e, seed)
        return list(e.state.tokens) + [len(e.state.events)]

    assert tokens(3) == tokens(3)
    assert tokens(3) != tokens(4)


@pytest.mark.parametrize("players", [2, 4])
def test_rewards_follow_the_match_winners_plus_one_zero_sum(players: int) -> None:
    e = env("2019", players, tokens_to_win=2)
    for seed in range(5):
        rewards = play_out(e, seed)
        assert all(not any(r.values()) for r in rewards[:-1])  # nothing before the end
        final = rewards[-1]
        winners = [f"player_{i}" for i in e.state.winners]
        assert abs(sum(final.values())) < 1e-9
        for agent, r in final.items():
            assert (r > 0) == (agent in winners)
            if len(winners) == 1:
                assert r == (1.0 if agent in winners else -1.0 / (players - 1))


def test_action_ids_name_exactly_the_legal_actions() -> None:
    """Every legal action of random matches (every ruleset, 2 to 6 seats) has an id that
    decodes to itself, and the mask marks those ids and no other."""
    rng = random.Random(1)
    for ruleset, players in (("classic", 2), ("classic", 4), ("2019", 2), ("2019", 6)):
        for g in range(8):
            s = engine.new_match(ruleset, players, seed=f"ids:{g}")
            while s.status == "active":
                v = engine.view(s, s.turn, since=s.round_start_seq)
                acts = [Action.from_dict(a) for a in v["legal_actions"]]
                ids = [encoding.action_id(a, s.turn, players) for a in acts]
                assert len(set(ids)) == len(ids)
                assert [encoding.action_of(i, s.turn, players) for i in ids] == acts
                mask = encoding.legal_mask(v)
                assert sorted(ids) == [i for i, m in enumerate(mask) if m]
                engine.apply_inplace(s, rng.choice(engine.legal_actions(s)))


def test_relative_seats_one_id_means_the_same_move_from_every_seat() -> None:
    """Id for "guard at the next seat, naming the priest" is the same from every seat."""
    ids = {encoding.action_id(Action.play("guard", (me + 1) % 4, "priest"), me, 4)
           for me in range(4)}
    assert len(ids) == 1


def test_an_id_for_a_seat_the_match_lacks_is_refused() -> None:
    guard_at_5 = encoding.action_id(Action.play("guard", 5, "priest"), 0, 6)
    with pytest.raises(ValueError):
        encoding.action_of(guard_at_5, 0, 2)
    with pytest.raises(ValueError):
        encoding.action_of(encoding.N_ACTIONS, 0, 2)


def test_r29_observation_is_a_function_of_the_view_only() -> None:
    """Swapping hidden cards (an opponent's hand with a deck card) never changes a seat's
    observation; changing the seat's own hand does."""
    e = env("classic", 4)
    checked = 0
    for seed in range(20):
        e.reset(seed=seed)
        s = e.state
        me = s.turn
        agent = f"player_{me}"
        before = e.observe(agent)
        other = next(p for p in range(4) if p != me and s.hands[p] and not s.eliminated[p])
        for i, card in enumerate(s.deck):
            if card != s.hands[other][0]:
                s.hands[other][0], s.deck[i] = card, s.hands[other][0]
                after = e.observe(agent)
                assert np.array_equal(before["observation"], after["observation"])
                assert np.array_equal(before["action_mask"], after["action_mask"])
                checked += 1
                break
    assert checked >= 10


def test_observation_blocks_read_back() -> None:
    e = env("classic", 2)
    e.reset(seed=7)
    agent = e.agent_selection
    v = e.view(agent)
    blocks = encoding.describe(e.observe(agent)["observation"])
    assert sum(blocks["hand"]) == len(v["hand"]) == 2
    assert blocks["players"][0] == 1.0  # 2 players
    assert blocks["phase"] == [1.0, 0.0]
    assert sum(blocks["face_up"]) == 3
    assert blocks["deck_count"] == [float(v["deck_count"])]
    # unseen = the deck minus what this seat sees: 16 - 2 in hand - 3 face up
    assert sum(blocks["unseen"]) == 11
