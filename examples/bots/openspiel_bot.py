"""An OpenSpiel bot: OpenSpiel's information-set MCTS (ISMCTS) over ``python_love_letter``.

Why ISMCTS and not plain MCTS: MCTS searches one tree of *states*, which in a hidden-card game
means either searching the true state (cheating: impossible through the API) or one guessed
deal (strategy fusion: a plan that only works because the guess is right). ISMCTS keeps one
tree of the player's *information states* and deals a fresh consistent world for every
simulation, so every move is judged across the deals the player can't tell apart.

For each decision:

1. the view (what the API shows the seat) goes to ``llsdk.sim.Sampler``, which deals hidden
   cards consistent with it (exact counting, private facts, how likely each opponent's plays);
2. ``open_spiel.python.algorithms.ismcts.ISMCTSBot`` searches, with that sampler as its
   resampler (``set_resampler``), random playouts to the round's end as its evaluator
   (``RandomRolloutEvaluator``) and UCT; the game ends with the round, and its utility is the
   tokens the round gives (``llsdk.openspiel``);
3. the time budget: OpenSpiel's ISMCTS counts simulations, so the bot runs a short search,
   measures its CPU time per simulation, then spends the rest of the budget on a second search
   and plays the action with the most visits over both.

Run it against a server:   python examples/bots/openspiel_bot.py --url URL --token TOKEN
                           (``OPENSPIEL_BOT_BUDGET_MS=50`` changes the per-move budget)
Or offline:                llsdk arena examples/bots/openspiel_bot.py examples/bots/counting_bot.py
                           (add ``--budget-ms 50`` to change the per-move budget)
Needs OpenSpiel: ``pip install 'llsdk[openspiel,arena]'``.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from typing import Any

import numpy as np
import pyspiel
from llsdk import Action, Bot, View, sim
from llsdk import openspiel as lo
from llsdk.encoding import action_of
from open_spiel.python.algorithms import ismcts, mcts


class OpenSpielBot(Bot):
    name = "openspiel-ismcts"
    #: CPU seconds per decision; ``OPENSPIEL_BOT_BUDGET_MS`` or ``--budget-ms`` override it
    budget = float(os.environ.get("OPENSPIEL_BOT_BUDGET_MS") or 100) / 1000
    #: the first, measuring search; never fewer simulations than this in all
    probe = 8
    uct_c = 2.0

    def __init__(self) -> None:
        super().__init__()
        self._games: dict[tuple[str, int, str], Any] = {}
        self.simulations: list[int] = []  # per searched move (for tests and tuning)

    def game(self, view: View) -> Any:
        key = (view.ruleset, view.players_count, view.two_player_setup or "three-up")
        g = self._games.get(key)
        if g is None:
            g = self._games[key] = pyspiel.load_game(lo.SHORT_NAME, {
                "ruleset": view.ruleset, "players": view.players_count,
                "two_player_setup": key[2]})
        return g

    def choose(self, view: View) -> Action:
        legal = view.legal_actions
        if len(legal) == 1:
            return legal[0]
        start = time.thread_time()
        game = self.game(view)
        sampler = sim.Sampler(view)
        rng: random.Random = self.rng
        np_rng = np.random.RandomState(rng.getrandbits(32))

        def world(state: Any = None, player: int = 0) -> Any:
            return lo.state_from_engine(game, sampler.sample(rng))

        visits: Counter[int] = Counter()
        sims = self.probe
        done = 0
        for _ in range(2):
            searcher = ismcts.ISMCTSBot(
                game, mcts.RandomRolloutEvaluator(1, np_rng), self.uct_c, sims,
                random_state=np_rng,
                final_policy_type=ismcts.ISMCTSFinalPolicyType.NORMALIZED_VISITED_COUNT)
            searcher.set_resampler(world)
            for a, p in searcher.get_policy(world()):
                visits[a] += p * sims
            done += sims
            spent = time.thread_time() - start
            left = self.budget - spent
            if left <= 0:
                break
            # 80 %: a simulation costs more in a deeper tree than in the short first one
            sims = int(0.8 * left / (spent / done))
            if sims < self.probe:  # not worth a new tree (and ISMCTS needs 2 to visit one)
                break
        self.simulations.append(done)
        seat = view.seat
        assert seat is not None
        best = max(sorted(visits), key=lambda a: visits[a])
        return action_of(best, seat, view.players_count)


if __name__ == "__main__":
    raise SystemExit(OpenSpielBot.main())
