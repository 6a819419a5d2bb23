"""examples/bots/openspiel_bot.py: OpenSpiel's ISMCTS over python_love_letter plays only legal
moves in the offline arena (which refuses anything else), at a tiny per-move budget, over more
than 100 games of classic and 2019 rules, 2 and 4 players."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pyspiel", reason="the llsdk[openspiel] extra (make test installs it)")

from llsdk import arena  # noqa: E402
from llsdk.cli import load_bot  # noqa: E402

from tests.sdk.test_sdk_arena import COUNTING_BOT, RANDOM_BOT, REPO  # noqa: E402

OPENSPIEL_BOT = os.path.join(REPO, "examples", "bots", "openspiel_bot.py")


@pytest.mark.parametrize(("ruleset", "others", "games", "tokens"), [
    ("classic", [COUNTING_BOT], 100, 1),  # one round a game keeps it quick
    ("2019", [COUNTING_BOT], 10, None),  # whole matches: rounds after the first
    ("2019", [RANDOM_BOT, COUNTING_BOT, RANDOM_BOT], 30, 1),
])
def test_openspiel_bot_plays_only_legal_moves(ruleset: str, others: list[str], games: int,
                                              tokens: int | None) -> None:
    bot = load_bot(OPENSPIEL_BOT)
    # budget 1 ms: about the measuring search alone (8 simulations)
    result = arena.run([bot] + [load_bot(b) for b in others], ruleset, games=games,
                       seed=f"ismcts:{ruleset}", tokens_to_win=tokens, budget_ms=1)
    assert result.games == games
    assert bot.budget == 0.001
    assert bot.simulations and min(bot.simulations) >= bot.probe  # it searched
    assert result.bots[0].games.played == games
