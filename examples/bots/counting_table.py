"""How the counting bot (``counting_bot.py``) chooses between the two cards of its hand: prints
``COUNTING_PLAYS`` for ``search_bot.py``, the counts of each play in its own games.

``counts[played][kept]`` (card ids, ``llsdk.cards.CARDS`` order) is how often the bot played
``played`` while keeping ``kept``, over counting-bot-only matches: 1500 two-player and 500
four-player matches per ruleset (four players stand for three or more: the bot plays a Baron or
a Prince differently with more rivals). The search bot turns them into an opponent model
(``llsdk.sim.PlayTable``): what an opponent played says what it likely kept.

Run (about 2 minutes of CPU): python examples/bots/counting_table.py
"""

from __future__ import annotations

import os
import sys

from llsdk import Action, View, arena
from llsdk.cards import CARDS

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from counting_bot import CountingBot  # noqa: E402

sys.path.pop(0)

INDEX = {name: i for i, name in enumerate(CARDS)}
#: (ruleset, players) -> matches played
MATCHES = {("classic", 2): 1500, ("classic", 4): 500, ("2019", 2): 1500, ("2019", 4): 500}


def counts(ruleset: str, players: int, matches: int) -> list[list[int]]:
    """Play ``matches`` counting-bot-only matches and count every choice of a card to play."""
    out = [[0] * len(CARDS) for _ in CARDS]

    class Counted(CountingBot):
        def choose(self, view: View) -> Action:
            action = super().choose(view)
            if view.phase == "play" and len(view.hand) == 2 and action.card:
                hand = list(view.hand)
                hand.remove(action.card)
                out[INDEX[action.card]][INDEX[hand[0]]] += 1
            return action

    for g in range(matches):
        arena.play_match([Counted() for _ in range(players)], ruleset,
                         seed=f"table-{ruleset}:{g}")
    return out


def main() -> None:
    print("COUNTING_PLAYS = {")
    for (ruleset, players), matches in MATCHES.items():
        rows = counts(ruleset, players, matches)
        print(f'    ("{ruleset}", {players}): (')
        for row in rows:
            print(f"        {tuple(row)},")
        print("    ),")
    print("}")


if __name__ == "__main__":
    main()
