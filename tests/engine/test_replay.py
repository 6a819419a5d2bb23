"""Stored matches replay identically: whole matches played from fixed seeds (random actions,
automatic moves on timeouts, a forfeit) end in exactly the state, event log included, that the
engine produced before its speed work (the digests below were taken from that engine). A change
to the shuffle, the seed scheme or any event's data changes a digest."""

from __future__ import annotations

import hashlib
import random

import pytest

from service.engine import apply_inplace, apply_timeout, forfeit_inplace, legal_actions, new_match

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
