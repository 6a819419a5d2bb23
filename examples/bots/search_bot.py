"""A search bot: determinized Monte Carlo on the simulator of ``llsdk.sim``.

For each decision, until its CPU budget (default 100 ms) is spent, it repeats:

1. **Sample** a complete state of the round from what it knows (``llsdk.sim.Sampler``: exact card
   counting, its private facts, and how likely each opponent hand made the plays it saw).
   Which opponent model it uses is chosen per opponent and per match by which one explains
   that opponent's plays better: "plays like the counting bot" or "plays at random"
   (``sim.RANDOM_PLAYER``: the random baseline, which then also plays at random in the
   playouts). The first is a ``sim.PlayTable`` of how often the counting bot played each card
   of each pair in its own games (``COUNTING_PLAYS``, per ruleset and for 2 or more players;
   ``counting_table.py`` rebuilds it): a careful player does not simply keep its higher card,
   it plays a Priest and keeps its Guard for a sure hit, plays a Handmaid rather than give up
   a Guard or Priest, and keeps a King, Countess or Princess. Against counting bots this
   sharpens the posterior of their hidden card (the log-likelihood of the true card, averaged
   over positions of held-out games, -1.44 to -1.35 in classic two-player games and -1.74 to
   -1.68 in 2019 four-player games; the likeliest card is the right one 44 % of the time
   instead of 40 %, 34 % instead of 31 %) over the older "keeps its higher card 4 times in 5"
   (``sim.OpponentModel(keep_high=0.6)``, still used when there is no table). The evidence is the likelihood of the cards it played
   (``Sampler.seat_log_evidence``: the random bot also throws away the Princess) and of the
   cards its Guard named (``guess_evidence``: the random bot names cards that are all gone).
   Getting this right matters: against three random bots in 2019, judging them by the cards
   played alone left half of them modelled as careful players even late in a match, and the
   search won no more rounds than the counting bot.
2. **Try every candidate action** on that same state (common samples: the actions are compared
   on identical deals, which cuts the noise of the comparison roughly in half) and play the round
   out with a fast heuristic policy for every player, a policy that only uses what that player
   could know (its own hand and the public piles), never the sampled hidden cards. The
   playouts of one deal also share their random draws (``COMMON_PLAYOUTS``: each replays the
   same stream of random numbers, so where the playouts run alike their players choose
   alike), so two candidates differ by what their moves change rather than by the luck of
   their playouts: on four-player decisions the standard error of a paired difference drops
   by about a fifth, worth about half as many samples again. With three
   players or more it plays like the counting bot in two more ways: it picks which card of a
   pair to play as often as the counting bot did (``COUNTING_PLAYS``), and it aims at the rival
   with the most tokens (the counting bot's ``LEAD``), so a leader is attacked as often in the
   playouts as at the table.
3. **Score** each action by the tokens it won in that round (a win, plus the spy bonus of R24);
   with three players or more, by the chance to win the match from the tokens after the round
   (``match_chance``): a round that a rival one token from the match wins loses it, one that a
   rival far behind wins costs little, and a round's tokens alone can't tell these apart.

Candidates shown worse than the counting bot's move by ``PRUNE`` standard errors stop being
played out, so the budget goes to the moves that may still overrule it.

It then plays the action with the best average, but only when the samples show it better than
the move the counting bot (``counting_bot.py``, beside this file) would play, by at least
``CONFIDENCE`` standard errors of their difference; otherwise it plays the counting bot's move.
Why: a few hundred playouts can't tell apart moves within a few percent of each other, and the
best of several noisy averages is flattered by its luck, so an unchecked argmax can trade a
sound move for a lucky-looking one; the counting bot is the better tie-breaker. Against random
players in 2019 four-player games the search overrules it on about 1 move in 4.

The budget is CPU time of the thread that decides (``time.thread_time``), so a busy machine, or
other bots in the same process (the house bots run as threads), do not make it play worse, only
slower.

Candidate actions: every legal action, except that a Guard names at most two cards per target,
the likeliest ones under the posterior (naming a card the target can't hold never helps); the
counting bot's move is always one of them.

Run it against a server:   python examples/bots/search_bot.py --url URL --token TOKEN
                           (``SEARCH_BOT_BUDGET_MS=50`` changes the per-move budget)
Or offline:                llsdk arena examples/bots/search_bot.py examples/bots/counting_bot.py
                           (add ``--budget-ms 50`` to change the per-move budget)
"""

from __future__ import annotations

import functools
import math
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from llsdk import Action, Bot, View, sim
from llsdk.cards import CARDS, COPIES, VALUES

# The counting bot sits beside this file; the arena's loader puts this directory on the path,
# a server's house bots and ``python search_bot.py`` may not (a copy: take counting_bot.py too).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from counting_bot import CountingBot  # noqa: E402

sys.path.pop(0)

SPY, GUARD, PRIEST, BARON, HANDMAID, PRINCE, CHANCELLOR, KING, COUNTESS, PRINCESS = range(10)
INDEX = {name: i for i, name in enumerate(CARDS)}


#: How often the counting bot played each card of a pair, ``(ruleset, players) -> counts[played]
#: [kept]`` (card ids), from its own games: the search bot's model of a careful opponent (what
#: it played says what it likely kept). ``python counting_table.py`` (beside this file) prints
#: this table again.
COUNTING_PLAYS = {
    ("classic", 2): (
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        (0, 3957, 333, 5059, 4474, 4956, 0, 2913, 2614, 3988),
        (0, 2716, 206, 1755, 1433, 1656, 0, 1065, 919, 1500),
        (0, 122, 30, 645, 713, 2109, 0, 1633, 1358, 2190),
        (0, 194, 70, 1697, 449, 1613, 0, 1223, 1029, 1691),
        (0, 457, 236, 935, 718, 690, 0, 1487, 0, 2058),
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        (0, 343, 173, 166, 185, 229, 0, 0, 0, 1198),
        (0, 39, 14, 86, 65, 1421, 0, 873, 0, 965),
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    ),
    ("classic", 4): (
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        (0, 2765, 151, 3629, 3314, 3440, 0, 2110, 2030, 3008),
        (0, 2040, 162, 1185, 1079, 1094, 0, 688, 717, 1090),
        (0, 9, 14, 483, 272, 681, 0, 803, 970, 1417),
        (0, 24, 9, 1385, 352, 1152, 0, 867, 943, 1314),
        (0, 450, 234, 1332, 621, 532, 0, 1187, 0, 1558),
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        (0, 299, 161, 307, 197, 87, 0, 0, 0, 874),
        (0, 3, 1, 26, 1, 1110, 0, 651, 0, 745),
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    ),
    ("2019", 2): (
        (98, 1631, 466, 931, 752, 778, 853, 516, 568, 862),
        (310, 2937, 98, 3225, 2581, 2942, 3145, 2104, 2019, 2857),
        (40, 1741, 132, 903, 749, 863, 953, 672, 584, 905),
        (1, 112, 21, 382, 425, 983, 1336, 1017, 870, 1403),
        (14, 174, 37, 884, 246, 795, 1085, 733, 660, 996),
        (100, 329, 100, 569, 429, 346, 1083, 899, 0, 1147),
        (156, 372, 108, 278, 254, 451, 377, 1035, 705, 1177),
        (208, 219, 89, 107, 107, 103, 33, 0, 0, 732),
        (5, 74, 11, 44, 52, 810, 115, 535, 0, 636),
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    ),
    ("2019", 4): (
        (79, 1127, 286, 694, 569, 511, 634, 458, 500, 769),
        (224, 2124, 110, 2493, 2208, 1897, 2164, 1652, 1576, 2435),
        (43, 1298, 106, 716, 606, 541, 629, 481, 493, 770),
        (0, 12, 5, 294, 145, 224, 455, 617, 636, 960),
        (2, 18, 4, 867, 207, 519, 708, 635, 578, 860),
        (99, 470, 147, 948, 450, 275, 523, 809, 0, 962),
        (105, 423, 115, 621, 305, 507, 278, 694, 567, 934),
        (111, 229, 114, 219, 110, 40, 54, 0, 0, 578),
        (0, 5, 2, 19, 4, 712, 45, 432, 0, 491),
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    ),
}

class PlayoutPolicy:
    """The fast policy every player follows in a playout. It reads only what the acting player
    could know: its own hand, the public piles of the engine state
    (``service.engine.MatchState``) and what it learnt (priest looks, baron ties, king trades,
    tracked in ``known``), so a playout never profits from the hidden cards of its sample.

    Rules of thumb: play the Countess when forced (R11); never give up the Princess; knock out a
    player whose card it knows (Guard, or a Baron it wins, or a Prince on a Princess); otherwise
    play the lower card, but keep a Baron only with a strong other card; a Guard names the
    likeliest unseen card; targets are chosen at random among those allowed."""

    def __init__(self, ruleset: str,
                 shares: tuple[tuple[float, ...], ...] | None = None) -> None:
        eng = sim.engine()
        # P(play x | holds x and y), ``shares[x][y]`` (``sim.PlayTable``): which card of a pair
        # a careful player plays, drawn as often as the counting bot played it; None: the
        # lower card, by the rules of thumb below.
        self.shares = shares
        self.Action = eng.Action
        self.values = [VALUES[ruleset].get(c, -1) for c in CARDS]
        self.copies = [COPIES[ruleset].get(c, 0) for c in CARDS]
        self.guessable = [c for c in range(10) if self.copies[c] and c != GUARD]
        self.guess_order = sorted(self.guessable, key=lambda c: -self.values[c])
        self.legal = eng.legal_actions
        # A Baron is worth playing when the card kept beats an average hand (value 4 or more in
        # classic, 5 or more in 2019).
        self.baron_keep = 4 if ruleset == "classic" else 5
        self.known: dict[tuple[int, int], int] = {}  # (who, whose) -> the card whose holds
        self.seen = 0  # events of the playout's state already read into ``known``
        self.random_seats: frozenset[int] = frozenset()  # seats that play like the random bot
        # Aim at the rival with the most tokens, as the counting bot does (its LEAD weight):
        # a leader is everyone's target, and a playout that spreads the attacks evenly has it
        # survive too often.
        self.leader_first = True

    def start(self, known: dict[tuple[int, int], int], seen: int,
              random_seats: frozenset[int] = frozenset()) -> None:
        """A new playout: what each player knows at its start; events from ``seen`` on are new;
        ``random_seats`` play uniformly at random (card, then target, then guess)."""
        self.known = dict(known)
        self.seen = seen
        self.random_seats = random_seats

    def random_move(self, s: Any, rng: random.Random) -> Any:
        legal = self.legal(s)
        cards = sorted({a.card for a in legal if a.card is not None})
        if not cards:
            return rng.choice(legal)
        card = rng.choice(cards)
        options = [a for a in legal if a.card == card]
        targets = sorted({a.target for a in options}, key=lambda t: -1 if t is None else t)
        target = rng.choice(targets)
        return rng.choice([a for a in options if a.target == target])

    def learn(self, s: Any) -> None:
        """Read the playout's new events into ``known``."""
        known = self.known
        events = s.events
        if len(events) == self.seen:
            return
        for e in events[self.seen:]:
            kind = e.type
            if kind == "play":
                if not known:
                    continue  # nothing known that a play could make stale
                d = e.data
                me, t, card = d["seat"], d.get("target"), INDEX[d["card"]]
                for key in [k for k in known if k[1] == me and known[k] == card]:
                    del known[key]  # it played the card others knew: they know no more
                if card == PRINCE and t is not None:
                    for key in [k for k in known if k[1] == t]:
                        del known[key]
                elif card == KING and t is not None:
                    for key in [k for k in known if me in k or t in k]:
                        del known[key]
            elif kind == "priest_saw":
                d = e.data
                known[(d["seat"], d["target"])] = INDEX[d["card"]]
            elif kind == "king_swapped":
                d = e.data
                known[(d["seat"], d["target"])] = INDEX[d["gave"]]
                known[(d["target"], d["seat"])] = INDEX[d["received"]]
            elif kind == "baron_compared":
                d = e.data
                if d["card"] == d["target_card"]:
                    known[(d["seat"], d["target"])] = INDEX[d["card"]]
                    known[(d["target"], d["seat"])] = INDEX[d["card"]]
        self.seen = len(events)

    def __call__(self, s: Any, rng: random.Random) -> Any:
        if s.turn in self.random_seats:
            return self.random_move(s, rng)
        self.learn(s)
        me = s.turn
        hand = s.hands[me]
        values = self.values
        if s.phase != "play" or len(hand) != 2:  # a chancellor's return: keep the best card
            return max(self.legal(s), key=lambda a: (values[a.keep],
                                                    [-values[c] for c in a.bottom]))
        a, b = hand
        pair = (a, b)
        if COUNTESS in pair and (KING in pair or PRINCE in pair):
            return self.Action("play", COUNTESS)  # R11
        elim, prot = s.eliminated, s.protected
        others = [p for p in range(s.players) if p != me and not elim[p] and not prot[p]]
        known = self.known
        for t in others if known else ():  # a sure knock-out with what we know
            c = known.get((me, t))
            if c is None:
                continue
            if GUARD in pair and c != GUARD:
                return self.Action("play", GUARD, t, c)
            if BARON in pair:
                keep = b if a == BARON else a
                if values[keep] > values[c]:
                    return self.Action("play", BARON, t)
            if PRINCE in pair and c == PRINCESS:
                return self.Action("play", PRINCE, t)
        if PRINCESS in pair:
            card = b if a == PRINCESS else a
        elif self.shares is not None and a != b:
            card = a if rng.random() < self.shares[a][b] else b
        else:
            lo, hi = (a, b) if values[a] <= values[b] else (b, a)
            card = lo
            if lo == BARON and values[hi] < self.baron_keep:
                card = hi  # a Baron with a weak card is a likely loss: keep it for later
        keep = b if card == a else a
        return self._aim(s, me, card, keep, others, rng)

    def _aim(self, s: Any, me: int, card: int, keep: int, others: list[int],
             rng: random.Random) -> Any:
        if card in (GUARD, PRIEST, BARON, KING, PRINCE):
            if not others:
                return self.Action("play", card, me if card == PRINCE else None)
            if card == BARON:  # never baron a player known to hold more
                values = self.values
                safe = [t for t in others
                        if values[self.known.get((me, t), -1)] < values[keep]]
                others = safe or others
            if len(others) > 1 and self.leader_first:
                tokens = s.tokens
                most = max([tokens[t] for t in others])
                others = [t for t in others if tokens[t] == most]
            target = others[0] if len(others) == 1 else rng.choice(others)
            if card == GUARD:
                return self.Action("play", GUARD, target, self._guess(s, me, keep))
            return self.Action("play", card, target)
        return self.Action("play", card)

    def _guess(self, s: Any, me: int, keep: int) -> int:
        """The non-guard card with the most unseen copies (public piles and own hand)."""
        left = self.copies[:]
        for pile in s.discards:
            for c in pile:
                left[c] -= 1
        for c in s.face_up:
            left[c] -= 1
        left[keep] -= 1
        best, most = GUARD, -1
        for c in self.guess_order:  # the first of the most copies is the highest card
            if left[c] > most:
                best, most = c, left[c]
        return best


def knowledge(view: View, sampler: sim.Sampler) -> dict[tuple[int, int], int]:
    """Who knows whose card at this moment: what this seat is sure of (a hand the posterior
    pins down), and which opponents know this seat's kept card (a priest look at it, a baron
    tie, a king trade), followed through the round's events."""
    me = view.seat or 0
    known: dict[tuple[int, int], int] = {}
    if len(sampler.hidden) <= 3:
        for seat in set(sampler.hidden):
            probs = sampler.hand_probabilities(seat)
            if len(probs) == 1:
                known[(me, seat)] = INDEX[next(iter(probs))]
    hand: list[str] = []  # our hand as it was at each moment
    knows_mine: dict[int, str] = {}  # opponent -> our card it knows
    for e in view.events:
        if e.round != view.round:
            continue
        kind, d = e.type, e.data
        if kind in ("dealt", "drew", "prince_drew") and d.get("seat", me) == me:
            hand.append(d["card"])
        elif kind == "play":
            s, t, card = d["seat"], d.get("target"), d["card"]
            if s == me and card in hand:
                hand.remove(card)
                for p in [p for p, c in knows_mine.items() if c == card]:
                    del knows_mine[p]
            if t == me and card == "priest" and s != me and hand:
                knows_mine[s] = hand[0]
            elif t == me and card == "prince":  # our card went face up; a new one comes
                if d.get("discarded") in hand:
                    hand.remove(d["discarded"])
                knows_mine.clear()
        elif kind == "king_swapped":
            other = d["target"] if d["seat"] == me else d["seat"]
            got = d["received"] if d["seat"] == me else d["gave"]
            hand[:] = [got]
            knows_mine.clear()
            knows_mine[other] = got
        elif kind == "baron_compared" and d["card"] == d["target_card"]:
            other = d["target"] if d["seat"] == me else d["seat"]
            knows_mine[other] = d["card"]
        elif kind == "chancellor_drew":
            hand.extend(d["cards"])
        elif kind == "chancellor_returned":
            hand[:] = [d["keep"]]
    for p, c in knows_mine.items():
        if c in view.hand:
            known[(p, me)] = INDEX[c]
    return known


def guess_evidence(view: View, slip: float = 0.02) -> dict[str, dict[int, float]]:
    """The log-likelihood of each opponent's Guard guesses this round under each model: the
    random bot names any guessable card alike; a thinking player names a card that may still
    be in play (not every copy in the public piles), save for a rare ``slip``."""
    copies = COPIES[view.ruleset]
    guessable = [c for c, k in copies.items() if k and c != "guard"]
    public = dict.fromkeys(copies, 0)
    for c in view.face_up:
        public[c] += 1
    out: dict[str, dict[int, float]] = {"heuristic": {}, "random": {}}
    for e in view.events:
        if e.round != view.round:
            continue
        d = e.data
        if e.type == "eliminated":
            for c in d.get("revealed") or ():
                public[c] += 1
        if e.type != "play":
            continue
        public[d["card"]] += 1
        if d.get("discarded"):
            public[d["discarded"]] += 1
        guess, seat = d.get("guess"), d["seat"]
        if guess is None or seat == view.seat:
            continue
        possible = sum(1 for c in guessable if public[c] < copies[c])
        if public[guess] < copies[guess]:
            p = (1 - slip) / possible
        else:
            p = slip / (len(guessable) - possible)
        out["heuristic"][seat] = out["heuristic"].get(seat, 0.0) + math.log(p)
        out["random"][seat] = out["random"].get(seat, 0.0) - math.log(len(guessable))
    return out


@functools.lru_cache(maxsize=4096)
def match_chance(mine: int, rivals: tuple[int, ...], target: int) -> float:
    """The chance to win the match (alone or sharing it) with ``mine`` tokens against rivals
    holding ``rivals`` (sorted), to ``target`` tokens, if every later round has one winner,
    each player alike."""
    if mine >= target:
        return 1.0
    if rivals and rivals[-1] >= target:
        return 0.0
    share = 1 / (len(rivals) + 1)
    chance = share * match_chance(mine + 1, rivals, target)
    for i in range(len(rivals)):
        up = rivals[:i] + (rivals[i] + 1,) + rivals[i + 1:]
        chance += share * match_chance(mine, tuple(sorted(up)), target)
    return chance


class SearchBot(Bot):
    name = "search"
    #: CPU seconds per decision; ``SEARCH_BOT_BUDGET_MS`` or ``--budget-ms`` override it
    budget = float(os.environ.get("SEARCH_BOT_BUDGET_MS") or 100) / 1000
    #: cards a Guard may name per target (the likeliest ones)
    guesses_per_target = 2

    #: the opponent models it chooses between, by how well each explains the plays seen; the
    #: careful player's model is the counting bot's own choices (``COUNTING_PLAYS``) for the
    #: ruleset and player count (see ``models``)
    MODELS = {"heuristic": sim.OpponentModel(keep_high=0.6), "random": sim.RANDOM_PLAYER}
    #: how far the careful model trusts the counting bot's table (the rest: an even choice)
    TRUST = 0.9
    #: standard errors by which the search's best move must beat the counting bot's move
    CONFIDENCE = 1.5
    #: the heuristic model's head start, in log-likelihood: against the random bot a round of
    #: plays moves the balance by -0.7 on average, against the counting bot by +0.5
    PRIOR = 0.5
    #: with three players or more, score a playout by the chance to win the match after it
    #: (``match_worth``), not by the round's tokens
    MATCH_AWARE = True
    #: standard errors below the counting bot's move at which a candidate stops being sampled
    #: (``prune``; None: never)
    PRUNE: float | None = 3.0
    #: in playouts, careful players aim at the rival with the most tokens (``PlayoutPolicy``)
    TARGET_LEADER = True
    #: every candidate's playout on a sample draws the same random numbers (common random
    #: numbers: the deal was already common, now the players' random choices are too), which
    #: narrows the paired differences the CONFIDENCE test and PRUNE read
    COMMON_PLAYOUTS = True
    #: from this many players on, careful players in playouts choose their card by the
    #: counting bot's table (``policy``)
    TABLE_PLAYOUTS = 3

    def __init__(self, budget_ms: float | None = None) -> None:
        if budget_ms is not None:
            self.budget = budget_ms / 1000
        self._policies: dict[tuple[str, int], PlayoutPolicy] = {}
        # match id -> round -> model name -> seat -> log evidence of its plays that round
        self._evidence: dict[str, dict[int, dict[str, dict[int, float]]]] = {}
        self._tables: dict[tuple[str, int], sim.OpponentModel] = {}
        self.stats: list[float] = []  # CPU seconds of each decision (for benchmarks)
        self.samples: list[int] = []  # samples searched per decision
        self.counting = CountingBot()  # the move to beat (see CONFIDENCE)
        self.overruled = 0  # decisions where the search beat the counting bot's move

    def choose(self, view: View) -> Action:
        legal = view.legal_actions
        if len(legal) == 1:
            return legal[0]
        start = time.thread_time()
        action = self.search(view, start)
        self.stats.append(time.thread_time() - start)
        return action

    def on_match_end(self, view: View) -> None:
        self._evidence.pop(view.match_id, None)

    def models(self, view: View) -> dict[str, sim.OpponentModel]:
        """The opponent models for this view's ruleset and player count: the careful player
        plays like the counting bot (``COUNTING_PLAYS``, 4 players standing for 3 or more)."""
        players = 2 if len(view.players) == 2 else 4
        key = (view.ruleset, players)
        if key not in self._tables:
            counts = COUNTING_PLAYS.get(key)
            self._tables[key] = self.MODELS["heuristic"] if counts is None else \
                sim.PlayTable.from_counts(counts, trust=self.TRUST)
        return {"heuristic": self._tables[key], "random": self.MODELS["random"]}

    def policy(self, view: View) -> PlayoutPolicy:
        """The playout policy for this view's ruleset and player count: with ``TABLE_PLAYOUTS``
        players or more, careful players choose their card as the counting bot's table says
        (``COUNTING_PLAYS``, as observed: no trust blend), else by the rules of thumb."""
        players = 2 if len(view.players) == 2 else 4
        key = (view.ruleset, players)
        policy = self._policies.get(key)
        if policy is None:
            counts = COUNTING_PLAYS.get(key)
            shares = None if counts is None or len(view.players) < self.TABLE_PLAYOUTS else \
                sim.PlayTable.from_counts(counts, trust=1.0).shares
            policy = self._policies[key] = PlayoutPolicy(view.ruleset, shares)
        return policy

    def opponent_models(self, view: View) -> dict[int, str]:
        """Which model explains each opponent's plays best this match (each round's evidence
        as last seen). A round's weight is capped at 10 (log) so one odd round can't decide."""
        samplers = {name: sim.Sampler(view, model) for name, model in self.models(view).items()}
        rounds = self._evidence.setdefault(view.match_id, {})
        guesses = guess_evidence(view)
        rounds[view.round] = {
            name: {p.seat: sp.seat_log_evidence(p.seat) + guesses[name].get(p.seat, 0.0)
                   for p in view.players}
            for name, sp in samplers.items()}
        out = {}
        for p in view.players:
            if p.seat == view.seat:
                continue
            lead = self.PRIOR
            for ev in rounds.values():
                diff = ev["heuristic"][p.seat] - ev["random"][p.seat]
                lead += max(-10.0, min(10.0, diff)) if diff == diff else 0.0  # nan: both -inf
            out[p.seat] = "heuristic" if lead >= 0 else "random"
        return out

    def match_worth(self, view: View) -> Callable[[Sequence[int]], float] | None:
        """With three players or more, what the tokens after this round are worth: the chance
        to win the match from there (``match_chance``). A round won by a rival one token from
        the match loses it, one won by a rival far behind costs little, which the tokens of one
        round can't tell apart. With two players the round's tokens serve (one rival: the
        chance to win the match grows with them alike). None: score the round's tokens."""
        if len(view.players) < 3 or not self.MATCH_AWARE:
            return None
        me = view.seat or 0
        target = view.tokens_to_win or 1
        rivals = [p.seat for p in view.players if p.seat != me and not p.forfeited]
        if not rivals:
            return None

        def chance(tokens: Sequence[int]) -> float:
            return match_chance(tokens[me], tuple(sorted(tokens[r] for r in rivals)), target)

        # On the scale of a round's token (0 lost to the worst rival to win it, 1 won), so that
        # the standard errors' floor (see ``search``) means the same as without it.
        now = [p.tokens for p in view.players]
        won = chance([t + (p == me) for p, t in enumerate(now)])
        lost = min(chance([t + (p == r) for p, t in enumerate(now)]) for r in rivals)
        scale = 1 / max(won - lost, 1e-6)

        def worth(tokens: Sequence[int]) -> float:
            return (chance(tokens) - lost) * scale

        return worth

    def search(self, view: View, start: float) -> Action:
        models = self.opponent_models(view)
        table = self.models(view)
        sampler = sim.Sampler(view, {p: table[m] for p, m in models.items()})
        random_seats = frozenset(p for p, m in models.items() if m == "random")
        default = self.counting.choose(view)
        candidates = self.candidates(view, sampler)
        if default not in candidates:
            candidates.append(default)
        if len(candidates) == 1:
            return candidates[0]
        base = candidates.index(default)
        moves = [sim.to_engine(a) for a in candidates]
        policy = self.policy(view)
        policy.leader_first = self.TARGET_LEADER
        seat = view.seat or 0
        rng = self.rng
        # Per candidate: the sum of its scores, and the sum of the squares of its score minus
        # the counting bot's move's score on the same sample (for the standard error).
        totals = [0.0] * len(moves)
        squares = [0.0] * len(moves)
        scores = [0.0] * len(moves)
        samples = 0
        deadline = start + self.budget
        # At least a few samples even when the budget is tiny, so the choice is never blind.
        known = knowledge(view, sampler)
        worth = self.match_worth(view)
        active = list(range(len(moves)))
        check = 16
        # The playouts' own random draws (targets, which card of a pair): with
        # COMMON_PLAYOUTS every candidate of a sample replays the same stream of them, so two
        # candidates differ by what their moves change, not by their luck (see the class).
        stream = random.Random(rng.getrandbits(64)) if self.COMMON_PLAYOUTS else rng
        saved: Any = None
        while samples < 4 or time.thread_time() < deadline:
            if samples == check and len(active) > 2:
                active = self.prune(active, base, totals, squares, samples)
                check *= 2
            state = sampler.sample(rng)
            if self.COMMON_PLAYOUTS:
                stream.random()  # fresh numbers for this deal, even if the last drew none
                saved = stream.getstate()
            for i in active:
                move = moves[i]
                policy.start(known, 0, random_seats)
                if self.COMMON_PLAYOUTS:
                    stream.setstate(saved)
                if worth is None:
                    scores[i] = sim.rollout(state.clone(), seat, stream, policy, first=move)
                else:
                    played = state.clone()
                    sim.rollout(played, seat, stream, policy, first=move)
                    scores[i] = worth(played.rounds[-1]["tokens"])
                totals[i] += scores[i]
            for i in active:
                squares[i] += (scores[i] - scores[base]) ** 2
            samples += 1
        self.samples.append(samples)
        best = max(active, key=lambda i: totals[i])
        # The paired difference: its mean over the samples, and that mean's standard error
        # (its variance taken as at least 1 / samples: a few samples that happen to agree
        # prove little).
        lead = (totals[best] - totals[base]) / samples
        spread = math.sqrt(max(1 / samples, squares[best] / samples - lead * lead) / samples)
        if best == base or lead <= self.CONFIDENCE * spread:
            return default
        self.overruled += 1
        return candidates[best]

    def prune(self, active: list[int], base: int, totals: list[float], squares: list[float],
              samples: int) -> list[int]:
        """The candidates still worth sampling: those not yet shown worse than the counting
        bot's move by ``PRUNE`` standard errors of their paired difference. Such a move could
        never overrule it, and its playouts are better spent on the moves that still can (a
        Guard with three targets has seven candidates, most of them clearly poor)."""
        if self.PRUNE is None:
            return active
        keep = []
        for i in active:
            lead = (totals[i] - totals[base]) / samples
            spread = math.sqrt(max(1 / samples, squares[i] / samples - lead * lead) / samples)
            if i == base or lead >= -self.PRUNE * spread:
                keep.append(i)
        return keep

    def candidates(self, view: View, sampler: sim.Sampler) -> list[Action]:
        """The legal actions worth searching: a Guard names only the likeliest cards."""
        legal = view.legal_actions
        if not any(a.card == "guard" and a.guess for a in legal):
            return list(legal)
        probs = {p: sampler.hand_probabilities(p) for p in set(sampler.hidden)}
        values = view.values
        keep: list[Action] = []
        by_target: dict[int, list[Action]] = {}
        for a in legal:
            if a.card == "guard" and a.guess and a.target is not None:
                by_target.setdefault(a.target, []).append(a)
            else:
                keep.append(a)
        for t, acts in by_target.items():
            p = probs.get(t, {})
            acts.sort(key=lambda a: (-p.get(a.guess or "", 0.0), -values[a.guess or ""]))
            keep += acts[:self.guesses_per_target]
        return keep


if __name__ == "__main__":
    raise SystemExit(SearchBot.main())
