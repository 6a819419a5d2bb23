"""A PettingZoo AEC environment of a whole match, on the service's own rules engine.

    from llsdk.pettingzoo import env
    e = env(ruleset="classic", players=2)
    e.reset(seed=1)
    for agent in e.agent_iter():
        obs, reward, terminated, truncated, info = e.last()
        action = None if terminated or truncated else e.action_space(agent).sample(obs["action_mask"])
        e.step(action)

Agents are ``player_0`` .. ``player_{n-1}`` (seat numbers). Each observation is
``{"observation": float32[206], "action_mask": int8[1880]}``: :func:`llsdk.encoding.observe` of
the seat's view, the engine's own projection (``service.engine.view``, what the API shows that
seat), so it holds nothing the seat could not see; the mask marks the legal action ids
(:mod:`llsdk.encoding`, docs/bots.md). ``infos[agent]`` is empty; ``env.view(agent)`` gives the
whole view (a dict, as the API sends it) for code that wants more than the vector.

Rewards follow the match, not the round: when it ends, the winner gets +1 and every other seat
-1 / (n - 1), a zero sum (several winners, R23, share what the others lose). Why: the ladder rates matches, a round won late in a lost match is
worth nothing, and the token count the vector shows lets a learner value each round by itself.
To learn single rounds, pass ``tokens_to_win=1``: a match is then one round.

Needs ``pip install 'llsdk[rl,arena]'`` (gymnasium, PettingZoo, NumPy and the service's engine).
"""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import AgentSelector

from .arena import _engine
from .encoding import N_ACTIONS, OBS_HIGH, OBS_SIZE, action_of, legal_ids, observe

RULESETS = ("classic", "2019", "2019-classic")


class LoveLetterEnv(AECEnv):  # type: ignore[misc]
    """One match per episode (see the module's docstring)."""

    metadata = {"name": "love_letter_v0", "render_modes": ["ansi"], "is_parallelizable": False}

    def __init__(self, ruleset: str = "classic", players: int = 2, *,
                 two_player_setup: str = "three-up", tokens_to_win: int | None = None,
                 render_mode: str | None = None) -> None:
        super().__init__()
        self._engine = _engine()
        rs = self._engine.get_ruleset(ruleset)  # InvalidOptions for an unknown name
        if not isinstance(players, int) or not rs.min_players <= players <= rs.max_players:
            raise ValueError(f"{ruleset} is for {rs.min_players} to {rs.max_players} players, "
                             f"not {players!r}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', not {render_mode!r}")
        self.ruleset, self.players = ruleset, players
        self.two_player_setup, self.tokens_to_win = two_player_setup, tokens_to_win
        self.render_mode = render_mode
        self.possible_agents = [f"player_{i}" for i in range(players)]
        self.agents = self.possible_agents[:]
        obs_space = spaces.Dict({
            "observation": spaces.Box(0.0, OBS_HIGH, (OBS_SIZE,), np.float32),
            "action_mask": spaces.Box(0, 1, (N_ACTIONS,), np.int8),
        })
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        act_space = spaces.Discrete(N_ACTIONS)
        self.action_spaces = {a: act_space for a in self.possible_agents}
        self._rng = np.random.default_rng()
        self.state: Any = None
        self._start(None)

    # ------------------------------------------------------------------ spaces

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ the match

    def _start(self, seed: int | None) -> None:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        # The match's own seed comes from the environment's generator: reset(seed=s) replays
        # the same deals, a plain reset() deals a fresh match.
        match_seed = f"env:{self._rng.integers(2 ** 63)}" if seed is not None or \
            self.state is not None else secrets.token_hex(8)
        self.state = self._engine.new_match(
            self.ruleset, self.players, seed=match_seed, tokens_to_win=self.tokens_to_win,
            two_player_setup=self.two_player_setup)
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self._agent_selector = AgentSelector(self.agents)
        self.agent_selection = self.possible_agents[self.state.turn]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self._start(seed)

    def view(self, agent: str) -> dict[str, Any]:
        """The agent's view of the round in play (the API's form, as a dict)."""
        s = self.state
        seat = self.possible_agents.index(agent)
        return self._engine.view(s, seat, since=s.round_start_seq)  # type: ignore[no-any-return]

    def observe(self, agent: str) -> dict[str, np.ndarray[Any, Any]]:
        v = self.view(agent)
        mask = np.zeros(N_ACTIONS, np.int8)
        if agent == self.agent_selection and not self.terminations[agent]:
            mask[legal_ids(v)] = 1
        return {"observation": np.asarray(observe(v), np.float32), "action_mask": mask}

    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        s = self.state
        seat = s.turn
        try:
            act = action_of(int(action), seat, self.players)  # type: ignore[arg-type]
        except (TypeError, ValueError) as e:
            raise ValueError(f"{agent}: {action!r} is not an action id") from e
        self._engine.apply_inplace(s, self._engine.Action.from_dict(act.to_dict()), seat=seat)
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        if s.status != "active":
            n, w = self.players, len(s.winners)
            for i, a in enumerate(self.agents):  # several winners (R23) share (n - w) / (n - 1)
                self.rewards[a] = (n - w) / ((n - 1) * w) if i in s.winners else -1.0 / (n - 1)
            self.terminations = dict.fromkeys(self.agents, True)
        else:
            self.agent_selection = self.possible_agents[s.turn]
        self._accumulate_rewards()

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        s = self.state
        lines = [f"{self.ruleset} round {s.round}, tokens {s.tokens}, deck {len(s.deck)}"]
        for i, a in enumerate(self.possible_agents):
            v = self.view(a)
            lines.append(f"{a}: hand {v['hand']} discards {v['players'][i]['discards']}")
        return "\n".join(lines)

    def close(self) -> None:
        pass


def env(ruleset: str = "classic", players: int = 2, *, two_player_setup: str = "three-up",
        tokens_to_win: int | None = None, render_mode: str | None = None) -> LoveLetterEnv:
    """A new environment (see :class:`LoveLetterEnv`)."""
    return LoveLetterEnv(ruleset, players, two_player_setup=two_player_setup,
                         tokens_to_win=tokens_to_win, render_mode=render_mode)


__all__ = ["LoveLetterEnv", "env"]
