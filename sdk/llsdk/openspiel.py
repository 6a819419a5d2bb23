"""Love Letter as an OpenSpiel game: ``import llsdk.openspiel`` registers ``python_love_letter``.

    import pyspiel
    import llsdk.openspiel  # registers the game
    game = pyspiel.load_game("python_love_letter(players=2,deck=guard+guard+priest+baron+prince+princess)")

One **round** is one game (rounds are independent deals; a match only carries its token count
and who starts from one to the next, and a match-long game would make every algorithm's tree
as deep as 20 rounds). Every move is the service's rules engine's (``service.engine``); the
chance nodes deal the cards, one card kind per outcome with its probability (its copies among
the cards not dealt yet over their number), and only when a card is first needed: the initial deal, then
each draw, so cards that are never drawn are never branched on.

Parameters:

- ``ruleset`` (``classic``; ``2019`` is written ``r2019`` in a game string, where OpenSpiel
  would read a bare 2019 as a number), ``players`` (2), ``two_player_setup`` (``three-up``),
  ``first_seat`` (0): as for a match;
- ``deck`` (empty: the ruleset's whole deck): the cards in play, names joined by ``+``. The rest
  of the ruleset's deck is laid **face up** before the deal (the 2-player setup's face-up cards,
  then more), so the reduced game is a real round of the ruleset in which everyone saw those
  cards leave: every bot reads it correctly from its view. ``SMALL_DECK`` (6 cards: 3 turns)
  is solved exactly by ``bench/exploitability.py``.

Utilities: the tokens the round gave, made zero-sum: seat ``p`` gets ``(n * t_p - sum t) /
(n - 1)`` (2 players: +1 / -1 for a win, 0 for a shared showdown; 2019: the spy's token too).

Actions are :mod:`llsdk.encoding`'s ids (relative seats). Information states are built from the
engine's view of the seat (``service.engine.view``): the string is the seat's id and hand
followed by every event of the round it may see, in order (perfect recall); its tensor is
:func:`llsdk.encoding.observe` followed by the round's public plays. Observations (no recall)
are the view without its events: the string names the hand, the piles and what the seat knows
(:func:`llsdk.encoding.known_cards`); the tensor is :func:`llsdk.encoding.observe`.

:func:`state_from_engine` wraps a ``service.engine.MatchState`` (for instance one sampled by
:class:`llsdk.sim.Sampler`) as a state of this game, and :class:`BotPolicy` wraps an
:class:`llsdk.Bot` as an OpenSpiel policy (docs/bots.md: measuring a bot's exploitability).

Needs ``pip install 'llsdk[openspiel,arena]'`` (OpenSpiel and the service's engine).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pyspiel
from open_spiel.python import policy as os_policy

from .arena import _engine
from .bot import Bot
from .cards import CARDS
from .encoding import (
    INDEX,
    KINDS,
    MAX_SEATS,
    N_ACTIONS,
    OBS_SIZE,
    action_id,
    action_of,
    known_cards,
    observe,
)
from .models import Action, View

SHORT_NAME = "python_love_letter"
#: a 2-player deck small enough to solve exactly (aside 1, hands 2, deck 3: three turns)
SMALL_DECK = "guard+guard+priest+baron+prince+princess"
DEFAULTS: dict[str, Any] = {"ruleset": "classic", "players": 2, "deck": "",
                            "two_player_setup": "three-up", "first_seat": 0}
#: public plays kept in the information-state tensor, each a one-hot of its relative seat (6),
#: card (10), target (7: none or a relative seat) and guess (11: none or a card)
MAX_PLAYS = 24
PLAY_SIZE = MAX_SEATS + KINDS + (MAX_SEATS + 1) + (KINDS + 1)

_GAME_TYPE = pyspiel.GameType(
    short_name=SHORT_NAME,
    long_name="Python Love Letter (one round)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=MAX_SEATS,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=DEFAULTS,
)


class _Config:
    """A game's options, checked once; shared (never copied) by its states."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        eng = _engine()
        p = {**DEFAULTS, **params}
        unknown = set(p) - set(DEFAULTS)
        if unknown:
            raise ValueError(f"unknown parameters {sorted(unknown)}")
        self.engine = eng
        name = str(p["ruleset"])
        if name[:1] == "r" and name[1:] in eng.RULESETS:  # r2019: see the module's docstring
            name = name[1:]
        self.rs = rs = eng.get_ruleset(name)
        self.ruleset: str = rs.name
        self.n = n = int(p["players"])
        if not rs.min_players <= n <= rs.max_players:
            raise ValueError(f"{rs.name} is for {rs.min_players} to {rs.max_players} players")
        self.setup: str = p["two_player_setup"]
        if self.setup not in eng.TWO_PLAYER_SETUPS:
            raise ValueError(f"two_player_setup must be one of {eng.TWO_PLAYER_SETUPS}")
        self.first = int(p["first_seat"])
        if not 0 <= self.first < n:
            raise ValueError(f"first_seat must be a seat from 0 to {n - 1}")
        full = Counter(rs.base_deck)
        if p["deck"]:
            names = [c.strip() for c in str(p["deck"]).split("+")]
            bad = [c for c in names if c not in INDEX]
            if bad:
                raise ValueError(f"deck: unknown cards {bad}")
            in_play = Counter(INDEX[c] for c in names)
            if in_play - full:
                raise ValueError(f"deck: more cards than {rs.name} has: {dict(in_play - full)}")
        else:
            in_play = full
        tdou = n == 2 and self.setup == "three-down-one-up"
        self.n_aside = 4 if tdou else 1
        n_face = (1 if tdou else 3) if n == 2 else 0
        removed = sorted((full - in_play).elements())
        self.face_removed = removed[:n_face]  # face-up slots of the setup, from removed cards
        self.extra_up = removed[n_face:]  # the other removed cards, laid face up as well
        self.face_chance = n_face - len(self.face_removed)  # face-up slots dealt by chance
        self.in_play = sorted(in_play.elements())
        need = self.face_chance + self.n_aside + n + 1
        if len(self.in_play) < need:
            raise ValueError(f"deck: {len(self.in_play)} cards in play, {n} players need "
                             f"at least {need}")
        self.deal_count = self.face_chance + n + 1  # chance outcomes before the first move
        self.max_tokens = 2 if rs.spy_bonus else 1
        # OpenSpiel reads a bare 2019 in a game string as a number: name it r2019 there
        self.params = {**p, "ruleset": rs.name if not rs.name.isdigit() else "r" + rs.name}

    def __reduce__(self) -> tuple[Any, ...]:  # pickled by its options (not its engine module)
        return _Config, (self.params,)


class _Round:
    """The engine state of a round with what is still undealt. Copied by ``clone()``
    (OpenSpiel deep-copies a Python state's attributes): the engine state with its own
    ``clone``, which shares the immutable events."""

    __slots__ = ("s", "u", "aside_open", "pending", "needs", "m", "round0", "t0")

    def __init__(self, s: Any, u: int, round0: int, t0: list[int],
                 aside_open: bool = True) -> None:
        self.s = s  # service.engine.MatchState
        self.u = u  # the top u cards of the deck are not dealt yet (any order of the rest)
        self.aside_open = aside_open  # the set-aside cards are not dealt yet either
        self.pending: Any = None  # an engine action waiting for the cards it will draw
        self.needs: list[int] = []  # positions to deal first: deck index, or -1: set-aside
        self.m = 0  # deck cards the pending action draws
        self.round0, self.t0 = round0, t0

    def __deepcopy__(self, memo: dict[int, Any]) -> _Round:
        new = _Round(self.s.clone(), self.u, self.round0, self.t0, self.aside_open)
        new.pending, new.needs, new.m = self.pending, self.needs[:], self.m
        return new

    @property
    def over(self) -> bool:
        return bool(self.s.status != "active" or self.s.round != self.round0)

    def pool(self) -> Counter[int]:
        """The undealt cards the next needed position is dealt from."""
        s, j = self.s, self.needs[0]
        return Counter(s.aside) if j < 0 else Counter(s.deck[j:self.u]) + Counter(s.aside)

    def deal(self, card: int) -> None:
        s, j = self.s, self.needs.pop(0)
        if j < 0:
            i = s.aside.index(card)
            s.aside[0], s.aside[i] = s.aside[i], s.aside[0]
            return
        for i in range(j, self.u):
            if s.deck[i] == card:
                s.deck[j], s.deck[i] = s.deck[i], s.deck[j]
                return
        i = s.aside.index(card)
        s.deck[j], s.aside[i] = s.aside[i], s.deck[j]


class _Shared:
    """Deep-copies to itself: the game's options, shared by every clone."""

    def __init__(self, cfg: _Config) -> None:
        self.cfg = cfg

    def __deepcopy__(self, memo: dict[int, Any]) -> _Shared:
        return self


class LoveLetterGame(pyspiel.Game):  # type: ignore[misc]
    """``python_love_letter``: one round of Love Letter (see the module's docstring)."""

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        self.cfg = cfg = _Config(params or {})
        info = pyspiel.GameInfo(
            num_distinct_actions=N_ACTIONS, max_chance_outcomes=KINDS, num_players=cfg.n,
            min_utility=-float(cfg.max_tokens), max_utility=float(cfg.max_tokens),
            utility_sum=0.0, max_game_length=2 * len(cfg.in_play) + 2)
        super().__init__(_GAME_TYPE, info, cfg.params)

    def new_initial_state(self) -> LoveLetterState:
        return LoveLetterState(self)

    def make_py_observer(self, iig_obs_type: Any = None,
                         params: Mapping[str, Any] | None = None) -> _Observer:
        if params:
            raise ValueError(f"observation parameters not supported: {params}")
        return _Observer(iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False))


class LoveLetterState(pyspiel.State):  # type: ignore[misc]
    """A state of ``python_love_letter``: the deal in progress, then an engine round."""

    def __init__(self, game: LoveLetterGame, rnd: _Round | None = None) -> None:
        super().__init__(game)
        self._shared = _Shared(game.cfg)
        self._dealt: list[int] = []  # the initial chance outcomes, in deal order
        self._r = rnd

    @property
    def cfg(self) -> _Config:
        return self._shared.cfg

    @property
    def engine_state(self) -> Any:
        """The round's ``service.engine.MatchState`` (None while the first cards are dealt;
        undealt cards sit in it as placeholders: don't read the deck or the set-aside pile)."""
        return None if self._r is None else self._r.s

    # ------------------------------------------------------------------ OpenSpiel's API

    def current_player(self) -> int:
        r = self._r
        if r is None or r.needs:
            return int(pyspiel.PlayerId.CHANCE)
        if r.over:
            return int(pyspiel.PlayerId.TERMINAL)
        return int(r.s.turn)

    def is_terminal(self) -> bool:
        return self._r is not None and not self._r.needs and self._r.over

    def _legal_actions(self, player: int) -> list[int]:
        r = self._r
        assert r is not None and player == r.s.turn
        eng = self.cfg.engine
        n = self.cfg.n
        return sorted(action_id(Action.from_dict(a), player, n)
                      for a in eng.legal_action_dicts(r.s))

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if self._r is None:
            left = Counter(self.cfg.in_play) - Counter(self._dealt)
        else:
            left = self._r.pool()
        total = sum(left.values())
        return [(c, k / total) for c, k in sorted(left.items())]

    def _apply_action(self, action: int) -> None:
        r = self._r
        if r is None:
            if action not in dict(self.chance_outcomes()):
                raise ValueError(f"no card {action} left to deal")
            self._dealt.append(int(action))
            if len(self._dealt) == self.cfg.deal_count:
                self._r = _start(self.cfg, self._dealt)
            return
        if r.needs:
            if action not in r.pool():
                raise ValueError(f"no card {action} left to deal")
            r.deal(int(action))
            if not r.needs:
                self._finish(r)
            return
        eng = self.cfg.engine
        act = eng.Action.from_dict(action_of(int(action), r.s.turn, self.cfg.n).to_dict())
        if r.u == 0 and (r.s.deck or not r.aside_open):  # all it may draw is dealt already
            eng.apply_inplace(r.s, act)
            return
        trial = r.s.clone()
        events = eng.apply_inplace(trial, act)
        m, aside = _draws(events, r.s.round)
        needs = list(range(min(m, r.u))) + ([-1] if aside and r.aside_open else [])
        if not needs:
            r.s, r.u = trial, max(0, r.u - m)
            return
        r.pending, r.needs, r.m = act, needs, m

    def _finish(self, r: _Round) -> None:
        self.cfg.engine.apply_inplace(r.s, r.pending)
        r.u = max(0, r.u - r.m)
        r.pending, r.m = None, 0

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"deal {CARDS[action]}"
        return str(action_of(action, player, self.cfg.n))

    def returns(self) -> list[float]:
        n = self.cfg.n
        if not self.is_terminal():
            return [0.0] * n
        r = self._r
        assert r is not None
        got = [a - b for a, b in zip(r.s.rounds[-1]["tokens"], r.t0, strict=True)]
        total = sum(got)
        return [(n * t - total) / (n - 1) for t in got]

    def __str__(self) -> str:
        if self._r is None:
            return "deal " + " ".join(CARDS[c] for c in self._dealt)
        r, s = self._r, self._r.s

        def names(cs: list[int]) -> str:
            return ",".join(CARDS[c] for c in cs)

        return (f"round {s.round} v{len(s.events)} turn {s.turn} {s.phase} | hands "
                f"{' '.join(names(h) or '-' for h in s.hands)} | discards "
                f"{' '.join(names(d) or '-' for d in s.discards)} | up {names(s.face_up)} | "
                f"deck {names(s.deck)} aside {names(s.aside)} undealt {r.u}"
                + (f" | pending {r.pending} needs {r.needs}" if r.pending is not None else ""))

    # ------------------------------------------------------------------ views

    def view(self, player: int) -> dict[str, Any] | None:
        """What ``player`` may see (the engine's view of the seat; None during the deal)."""
        r = self._r
        if r is None:
            return None
        return self.cfg.engine.view(r.s, player, since=r.s.round_start_seq)  # type: ignore[no-any-return]

    def resample_from_infostate(self, player: int, sampler: Any) -> LoveLetterState:
        """A state ``player`` can't tell from this one, drawn by :class:`llsdk.sim.Sampler`
        from its view (ISMCTS's determinization). Its deck is fully dealt: no chance nodes."""
        from .sim import Sampler

        v, r = self.view(player), self._r
        if v is None or r is None or r.needs:
            raise ValueError("resample only at a decision node")
        rng = random.Random(int(sampler() * 2 ** 32)) if callable(sampler) else random.Random()
        s = Sampler(View.from_dict(v)).sample(rng)
        # The same log as far as ``player`` can see; what it can't is blanked (kept as a
        # secret event, to keep the sequence numbers), so nothing of the true deal remains.
        s.events = [e if e.to is None or player in e.to else
                    type(e)(e.seq, e.round, "hidden", {}, ()) for e in r.s.events]
        s.round_start_seq = r.s.round_start_seq
        return LoveLetterState(self.get_game(), _Round(s, 0, r.round0, r.t0, aside_open=False))


def _start(cfg: _Config, dealt: list[int]) -> _Round:
    """The engine round after the initial chance outcomes ``dealt``."""
    eng = cfg.engine
    fc, n = cfg.face_chance, cfg.n
    face = cfg.face_removed + dealt[:fc]
    hands = dealt[fc:fc + n]
    draw = dealt[fc + n]
    rest = sorted((Counter(cfg.in_play) - Counter(dealt)).elements())
    aside, deck = rest[:cfg.n_aside], rest[cfg.n_aside:]
    order = aside + face + hands + [draw] + deck + cfg.extra_up
    s = eng.new_match(cfg.ruleset, n, seed="openspiel", first_seat=cfg.first, tokens_to_win=1,
                      deck=[CARDS[c] for c in order], two_player_setup=cfg.setup)
    k = len(cfg.extra_up)
    if k:  # lay the cards out of play face up, as the setup's face-up cards are
        del s.deck[-k:]
        s.face_up += cfg.extra_up
        for e in s.events:
            if e.type == "round_start":
                e.data["face_up"] = [CARDS[c] for c in s.face_up]
                e.data["deck_count"] -= k
            elif e.type == "turn":
                e.data["deck_count"] -= k
    return _Round(s, len(s.deck), s.round, s.tokens[:])


def _draws(events: list[Any], rnd: int) -> tuple[int, bool]:
    """How many deck cards these events drew in round ``rnd``, and whether one took the
    set-aside card (a prince on an empty deck)."""
    m, aside = 0, False
    for e in events:
        if e.round != rnd:
            break
        if e.type == "drew":
            m += 1
        elif e.type == "chancellor_drew":
            m += len(e.data["cards"])
        elif e.type == "play":
            src = e.data.get("drew_from")
            m += src == "deck"
            aside = aside or src == "set_aside"
    return m, aside


def state_from_engine(game: Any, s: Any) -> LoveLetterState:
    """A state of ``game`` (its ruleset and players) at the engine state ``s``, whose cards
    are all taken as dealt; the game ends with ``s``'s round. ``s`` is used, not copied."""
    if s.players != game.num_players() or s.ruleset != game.cfg.ruleset:
        raise ValueError("the engine state is of another ruleset or player count")
    return LoveLetterState(game, _Round(s, 0, s.round, s.tokens[:], aside_open=False))


# --------------------------------------------------------------------------- observations


def _event_text(e: Mapping[str, Any]) -> str:
    return str(e["type"]) + "(" + ",".join(
        f"{k}={v}" for k, v in e.items() if k not in ("seq", "round", "type", "private")) + ")"


class _Observer:
    """OpenSpiel's observer of this game: see the module's docstring."""

    def __init__(self, iig_obs_type: Any) -> None:
        self.recall = bool(iig_obs_type.perfect_recall)
        self.private = iig_obs_type.private_info == pyspiel.PrivateInfoType.SINGLE_PLAYER
        size = OBS_SIZE + (MAX_PLAYS * PLAY_SIZE if self.recall else 0)
        self.tensor = np.zeros(size, np.float32)
        self.dict = {"observation": self.tensor[:OBS_SIZE]}
        if self.recall:
            self.dict["plays"] = self.tensor[OBS_SIZE:].reshape(MAX_PLAYS, PLAY_SIZE)

    def _view(self, state: LoveLetterState, player: int) -> dict[str, Any] | None:
        v = state.view(player)
        if v is not None and not self.private:  # public information only
            v = {**v, "hand": [], "known": [], "legal_actions": [],
                 "events": [e for e in v["events"] if not e.get("private")]}
        return v

    def set_from(self, state: LoveLetterState, player: int) -> None:
        self.tensor.fill(0)
        v = self._view(state, player)
        if v is None:
            return
        self.tensor[:OBS_SIZE] = observe(v)
        if not self.recall:
            return
        n, slot = v["players_count"], 0
        plays = self.dict["plays"]
        for e in v["events"]:
            if e["type"] != "play" or slot >= MAX_PLAYS:
                continue
            row = plays[slot]
            row[(e["seat"] - player) % n] = 1
            row[MAX_SEATS + INDEX[e["card"]]] = 1
            t = e.get("target")
            row[MAX_SEATS + KINDS + (0 if t is None else 1 + (t - player) % n)] = 1
            g = e.get("guess")
            row[2 * MAX_SEATS + KINDS + 1 + (0 if g is None else 1 + INDEX[g])] = 1
            slot += 1

    def string_from(self, state: LoveLetterState, player: int) -> str:
        v = self._view(state, player)
        if v is None:  # the first cards are being dealt: what this player got so far
            cfg = state.cfg
            fc = cfg.face_chance  # face-up cards first (public), then a hand per seat
            mine = [CARDS[c] for i, c in enumerate(state._dealt) if i < fc or (
                self.private and (cfg.first + i - fc) % cfg.n == player)]
            return f"p{player} dealing {len(state._dealt)} {','.join(mine)}"
        if self.recall:  # the hand too: a state from state_from_engine has no past events
            return f"p{player} [{','.join(sorted(v['hand']))}] " + " ".join(
                _event_text(e) for e in v["events"])
        seats = " ".join(
            f"s{p['seat']}:t{p['tokens']}{'x' if p['eliminated'] else ''}"
            f"{'h' if p['protected'] else ''}[{','.join(p['discards'])}]" for p in v["players"])
        known = ",".join(f"s{s}={c}" for s, c in sorted(known_cards(v).items()))
        turn = v["turn"]
        return (f"p{player} hand[{','.join(v['hand'])}] up[{','.join(v['face_up'])}] "
                f"deck{v['deck_count']} {seats} known[{known}] "
                f"turn{'-' if turn is None else turn['seat']}{'' if turn is None else turn['phase'][0]}")


# --------------------------------------------------------------------------- bots as policies


class BotPolicy(os_policy.Policy):  # type: ignore[misc]
    """An :class:`llsdk.Bot` as an OpenSpiel policy of ``python_love_letter``: at a state, the
    bot is shown the acting seat's view (as the API would) and plays the action it chooses.

    ``samples`` > 1 asks the bot that many times (seeding its ``rng`` each time) and returns
    the frequencies: a random bot's distribution, or a search bot's spread. Answers are cached
    by information state, so a bot is asked once per information state however often the
    tree repeats it (its policy must depend on what it sees only: ``Bot.choose`` does)."""

    def __init__(self, game: Any, make_bot: Callable[[], Bot], samples: int = 1,
                 seed: int = 0) -> None:
        super().__init__(game, list(range(game.num_players())))
        self.make_bot, self.samples, self.seed = make_bot, samples, seed
        self.bot = make_bot()
        self._cache: dict[str, dict[int, float]] = {}

    def action_probabilities(self, state: Any, player_id: int | None = None) -> dict[int, float]:
        key = state.information_state_string()
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self._ask(state)
        return hit

    def _ask(self, state: Any) -> dict[int, float]:
        legal_ids = state.legal_actions()
        if len(legal_ids) == 1:  # nothing to choose (a forced countess, a lone target)
            return {legal_ids[0]: 1.0}
        seat = state.current_player()
        v = View.from_dict(state.view(seat))
        n = state.get_game().num_players()
        counts: Counter[int] = Counter()
        for i in range(self.samples):
            self.bot.rng = random.Random(f"{self.seed}:{i}:{state.information_state_string()}")
            counts[action_id(self.bot.choose(v), seat, n)] += 1
        if not set(counts) <= set(legal_ids):
            raise ValueError(f"the bot chose an illegal action at {state}")
        return {a: k / self.samples for a, k in sorted(counts.items())}


# --------------------------------------------------------------------------- exact solving


class GameTree:
    """The whole tree of a small game, written out once as OpenSpiel's EFG game (its C++
    extensive-form game, ``pyspiel.load_efg_game``), so that CFR, best responses and
    exploitability run in C++ rather than through this module's Python states: the 6-card
    ``SMALL_DECK`` has about 31,000 nodes, walked in Python in about 4 s; a CFR+ iteration
    of the C++ solver on the written tree then takes milliseconds.

    Each information set of the EFG game is numbered (``self.states`` maps this game's
    information-state strings to a state of each);
    :meth:`tabular` turns any OpenSpiel policy of this game (a :class:`BotPolicy`, a Python
    ``TabularPolicy``...) into the EFG game's, asking it once per information set.
    """

    def __init__(self, game: Any) -> None:
        if game.num_players() != 2:
            raise ValueError("exact solving is for 2 players (zero-sum best responses)")
        self.game = game
        self.states: dict[str, Any] = {}  # information state -> one state in it
        self._numbers: list[dict[str, int]] = [{}, {}]
        self._outcomes: dict[tuple[float, ...], int] = {}
        self._chance = 0
        lines = [f'EFG 2 R "{game}" {{ "Player 1" "Player 2" }} ""']
        self._write(game.new_initial_state(), lines, 0)
        self.efg_text = "\n".join(lines) + "\n"
        self.efg = pyspiel.load_efg_game(self.efg_text)
        self._keys = [{k: key for key, k in numbers.items()} for numbers in self._numbers]
        self._efg_keys: dict[str, str] = {}  # our information state -> the EFG game's
        self._efg_actions: dict[str, dict[int, int]] = {}  # ... -> our action id -> EFG's
        self._index(self.efg.new_initial_state())

    def _write(self, state: Any, out: list[str], depth: int) -> None:
        pad = " " * depth
        if state.is_terminal():
            r = tuple(state.returns())
            k = self._outcomes.setdefault(r, len(self._outcomes) + 1)
            out.append(f'{pad}t "" {k} "" {{ {r[0]!r} {r[1]!r} }}')
            return
        if state.is_chance_node():
            outcomes = state.chance_outcomes()
            self._chance += 1
            counts = _counts(dict(outcomes))
            total = sum(counts.values())
            body = " ".join(f'"{a}" {counts[a]}/{total}' for a, _ in outcomes)
            out.append(f'{pad}c "" {self._chance} "" {{ {body} }} 0')
            for a, _ in outcomes:
                self._write(state.child(a), out, depth + 1)
            return
        p = state.current_player()
        key = state.information_state_string()
        numbers = self._numbers[p]
        if key not in numbers:
            numbers[key] = len(numbers) + 1
            self.states[key] = state.clone()
        actions = state.legal_actions()
        labels = " ".join(f'"{a}"' for a in actions)
        # the EFG game's own names stay short (CFR hashes them at every node): the number
        out.append(f'{pad}p "" {p + 1} {numbers[key]} "{numbers[key]}" {{ {labels} }} 0')
        for a in actions:
            self._write(state.child(a), out, depth + 1)

    def _index(self, state: Any) -> None:
        if state.is_terminal():
            return
        if state.is_chance_node():
            for a, _ in state.chance_outcomes():
                self._index(state.child(a))
            return
        key = state.information_state_string()
        ours = self._keys[state.current_player()][int(key.split("-", 3)[3])]
        if ours not in self._efg_keys:
            self._efg_keys[ours] = key
            self._efg_actions[ours] = {int(state.action_to_string(a)): a
                                       for a in state.legal_actions()}
        for a in state.legal_actions():
            self._index(state.child(a))

    @property
    def infosets(self) -> int:
        """How many information sets the two players have."""
        return len(self.states)

    def tabular(self, policy: Any) -> Any:
        """``policy`` (an OpenSpiel policy of this game) as a ``pyspiel.TabularPolicy`` of
        the EFG game."""
        table = {}
        for key, state in self.states.items():
            probs = policy.action_probabilities(state)
            moves = self._efg_actions[key]
            if not set(probs) <= set(moves):
                raise ValueError(f"the policy plays an illegal action at {key}")
            # every legal action listed: the EFG policy reads a missing one as an error
            table[self._efg_keys[key]] = [(e, float(probs.get(a, 0.0))) for a, e in moves.items()]
        return pyspiel.TabularPolicy(table)

    def exploitability(self, policy: Any) -> float:
        """OpenSpiel's exploitability of ``policy`` (an OpenSpiel policy of this game, or a
        ``pyspiel.TabularPolicy`` of the EFG game): the mean of what a best response gains
        against each of its two seats, in utility (+1 a round won, -1 a round lost). A C++
        ``pyspiel.Policy`` is taken as a policy of the EFG game (e.g. :meth:`cfr_plus`'s)."""
        if not isinstance(policy, pyspiel.Policy):  # a Python policy of this game
            policy = self.tabular(policy)
        return float(pyspiel.exploitability(self.efg, policy))

    def cfr_plus(self, iterations: int) -> Any:
        """OpenSpiel's CFR+ (C++) run ``iterations`` times on the tree: its average policy
        (a ``pyspiel.TabularPolicy`` of the EFG game)."""
        solver = pyspiel.CFRPlusSolver(self.efg)
        for _ in range(iterations):
            solver.evaluate_and_update_policy()
        return solver.tabular_average_policy()  # a copy: average_policy() dies with solver


def _counts(probs: Mapping[int, float]) -> dict[int, int]:
    """Chance probabilities (copies left / cards left) back as whole copies."""
    smallest = min(probs.values())
    for total in range(1, 200):
        counts = {a: round(p * total) for a, p in probs.items()}
        if min(counts.values()) >= 1 and sum(counts.values()) == total and all(
                abs(counts[a] / total - p) < 1e-9 for a, p in probs.items()):
            return counts
    raise ValueError(f"not a deal: {probs} (smallest {smallest})")


pyspiel.register_game(_GAME_TYPE, LoveLetterGame)

__all__ = ["SHORT_NAME", "SMALL_DECK", "BotPolicy", "GameTree", "LoveLetterGame", "LoveLetterState",
           "state_from_engine"]
