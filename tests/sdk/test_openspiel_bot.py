"""examples/bots/openspiel_bot.py: OpenSpiel's ISMCTS over python_love_letter plays only legal
moves in the offline arena (which refuses anything else), at a tiny per-move budget, over more
than 100 games of classic and 2019 rules, 2 and 4 players; and it plays a match on the real
server through ``Bot.run``, as on a ladder."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pyspiel", reason="the llsdk[openspiel] extra (make test installs it)")

from llsdk import arena  # noqa: E402
from llsdk.cli import load_bot  # noqa: E402

from tests.sdk.test_sdk_arena import COUNTING_BOT, RANDOM_BOT, REPO  # noqa: E402
from tests.sdk.test_sdk_bots import NO_TIMEOUTS, Runner, finish, moves_by_seat, player  # noqa: E402
from tests.support.sdkclient import Client  # noqa: E402
from tests.support.server import ApiServer  # noqa: E402

OPENSPIEL_BOT = os.path.join(REPO, "examples", "bots", "openspiel_bot.py")


@pytest.mark.parametrize(("ruleset", "others", "games", "tokens", "budget_ms"), [
    ("classic", [COUNTING_BOT], 100, 1, 1),  # one round a game keeps it quick
    ("2019", [COUNTING_BOT], 10, None, 4),  # whole matches; room for the second search
    ("2019", [RANDOM_BOT, COUNTING_BOT, RANDOM_BOT], 30, 1, 1),
])
def test_openspiel_bot_plays_only_legal_moves(ruleset: str, others: list[str], games: int,
                                              tokens: int | None, budget_ms: float) -> None:
    bot = load_bot(OPENSPIEL_BOT)
    # budget 1 ms: about the measuring search alone (8 simulations)
    result = arena.run([bot] + [load_bot(b) for b in others], ruleset, games=games,
                       seed=f"ismcts:{ruleset}", tokens_to_win=tokens, budget_ms=budget_ms)
    assert result.games == games
    assert bot.budget == budget_ms / 1000
    assert bot.simulations and min(bot.simulations) >= bot.probe  # it searched
    assert result.bots[0].games.played == games


def test_openspiel_bot_plays_a_match_through_bot_run(api_server: ApiServer) -> None:
    """Against the real server, as on a ladder: Bot.run long-polls, and every move of the
    match's ISMCTS seat is the bot's own choice (no fallback)."""
    with Client(api_server.url) as anon:
        (me, _), (rival, _) = player(anon, "ismcts"), player(anon, "rival")
        bot = load_bot(OPENSPIEL_BOT)
        bot.budget = 0.005
        runners = [Runner(bot, me, max_matches=1), Runner(load_bot(RANDOM_BOT), rival,
                                                          max_matches=1)]
        for r in runners:
            r.start()
        mid = me.matches.create("classic", 2, tokens_to_win=3, **NO_TIMEOUTS).match_id
        me.matches.join(mid)
        rival.matches.join(mid)
        stats = finish(runners)
        final = anon.matches.get(mid)
        assert final.status == "finished" and final.result is not None
        assert [s.matches_finished for s in stats] == [1, 1]
        assert stats[0].fallbacks == 0 and stats[0].moves == moves_by_seat(anon, mid)[0]
        assert bot.simulations  # it searched
