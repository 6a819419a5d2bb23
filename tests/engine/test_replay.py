"""Stored matches replay identically: whole matches played from fixed seeds (random actions,
automatic moves on timeouts, a forfeit) end in exactly the state, event log included, that the
engine produced before its speed work (the digests below were taken from that engine). A change
to the shuffle, the seed scheme or any event's data changes a digest."""

from __future__ import annotations

import hashlib
import random
from typing import Any

import pytest

from service.engine import (
    InvalidOptions,
    InvalidState,
    MatchState,
    apply,
    apply_inplace,
    apply_timeout,
    forfeit_inplace,
    legal_actions,
    new_match,
    timeout_action,
)

# sha256 of the final state's JSON, first 16 hex digits
DIGESTS = {
    ("classic", 2, "three-up"): "d6fad787f0bcba19",
    ("classic", 2, "three-down-one-up"): "f00462a11e0111d5",
    ("classic", 4, "three-up"): "f98fa320bd31742c",
    ("2019", 2, "three-up"): "7d7219b1c219cd99",
    ("2019", 2, "three-down-one-up"): "dc0c73e04e268939",
    ("2019", 4, "three-up"): "fdea80c04c3a50a4",
    ("2019", 6, "three-up"): "82607b18ee459c2c",
}


def play(ruleset: str, players: int, setup: str) -> str:
    seed = f"golden-{ruleset}-{players}"
    s = new_match(ruleset, players, seed=seed, two_player_setup=setup)
    rng = random.Random(seed)
    k = 0
    while s.status == "active":
        k += 1
        if k % 37 == 0:
            s, _ = apply_timeout(s)
        elif k == 200 and players > 2:
            forfeit_inplace(s, (s.turn + 1) % players)
        else:
            apply_inplace(s, rng.choice(legal_actions(s)))
    return hashlib.sha256(s.to_json().encode()).hexdigest()[:16]


@pytest.mark.parametrize(("ruleset", "players", "setup"), sorted(DIGESTS))
def test_r5_stored_match_replays_identically(ruleset: str, players: int, setup: str) -> None:
    assert play(ruleset, players, setup) == DIGESTS[(ruleset, players, setup)]


def play_both(ruleset: str, players: int, setup: str) -> tuple[Any, Any, int]:
    """The golden match of ``play`` twice in lockstep, with and without an event log."""
    seed = f"golden-{ruleset}-{players}"
    logged = new_match(ruleset, players, seed=seed, two_player_setup=setup)
    bare = new_match(ruleset, players, seed=seed, two_player_setup=setup, log=False)
    rng = random.Random(seed)
    k = 0
    while logged.status == "active":
        k += 1
        assert legal_actions(bare) == legal_actions(logged)
        if k % 37 == 0:  # the logged state's automatic move: an unlogged one has none
            action = timeout_action(logged)
            logged, _ = apply(logged, action, timeout=True)
            bare, events = apply(bare, action, timeout=True)
            with pytest.raises(InvalidState):
                timeout_action(bare)
        elif k == 200 and players > 2:
            forfeit_inplace(logged, (logged.turn + 1) % players)
            events = forfeit_inplace(bare, (bare.turn + 1) % players)
        else:
            action = rng.choice(legal_actions(logged))
            apply_inplace(logged, action)
            events = apply_inplace(bare, action)
        assert events == []
    return logged, bare, k


@pytest.mark.parametrize(("ruleset", "players", "setup"), sorted(DIGESTS))
def test_r5_a_match_without_log_plays_the_same(ruleset: str, players: int, setup: str) -> None:
    """``log=False`` (simulations) changes nothing but the log: the same legal actions at every
    step and the same final state, with no events, and it stays off through clones. Automatic
    moves (drawn from the log's length) are refused on it."""
    logged, bare, turns = play_both(ruleset, players, setup)
    assert turns > 20 and logged.events and bare.events == [] and bare.version == 0
    assert bare.status == "finished" and not bare.log and not bare.clone().log
    want, got = logged.to_dict(), bare.to_dict()
    for d in (want, got):
        del d["events"], d["round_start_seq"]  # the log and where each round starts in it
    assert got == want
    assert MatchState.from_json(bare.to_json()).log  # a stored state always logs


def test_r5_new_match_refuses_a_log_flag_that_is_not_a_bool() -> None:
    with pytest.raises(InvalidOptions):
        new_match("classic", 2, seed=1, log=1)  # type: ignore[arg-type]
