"""The random baseline: picks a card uniformly among the cards it may play, then a target and
a guess uniformly (the usual baseline in published Love Letter results).

Run it against a server:   python examples/bots/random_bot.py --url URL --token TOKEN
Or offline:                llsdk arena examples/bots/random_bot.py examples/bots/random_bot.py
"""

from __future__ import annotations

from llsdk import Action, Bot, View


class RandomBot(Bot):
    name = "random"

    def choose(self, view: View) -> Action:
        legal = view.legal_actions
        cards = view.playable_cards()
        if not cards:  # the chancellor's return: any legal keep and order
            return self.rng.choice(legal)
        # 1. a card, uniformly among the distinct cards we may play
        card = self.rng.choice(cards)
        options = [a for a in legal if a.card == card]
        # 2. a target, uniformly among that card's targets (None when it takes none)
        targets = sorted({a.target for a in options}, key=lambda t: -1 if t is None else t)
        target = self.rng.choice(targets)
        options = [a for a in options if a.target == target]
        # 3. a guess (guards only), uniformly among the cards it may name
        return self.rng.choice(options)


if __name__ == "__main__":
    raise SystemExit(RandomBot.main())
