"""A card-counting bot: it replays this round's events from its view to know every card it has
seen, deduces what each opponent can hold, and scores each legal action.

- Counting: unseen cards = the deck minus discards, face-up cards, its hand and cards it knows
  are elsewhere; an opponent's card is drawn from those, minus what a missed Guard ruled out.
- Knowledge: Priest looks, Baron comparisons, King trades (both sides), cards it put under the
  deck with a Chancellor (it knows who draws them), Baron ties between others.
- Play: Guard the likeliest card, Baron only when it wins, Prince a known Princess, never give up
  the Princess, keep the card that is safest and strongest at the showdown.

Run it against a server:   python examples/bots/counting_bot.py --url URL --token TOKEN
Or offline:                llsdk arena examples/bots/counting_bot.py examples/bots/random_bot.py
"""

from __future__ import annotations

from collections import Counter

from llsdk import Action, Bot, View
from llsdk.cards import COPIES

Dists = dict[int, dict[str, float]]  # seat -> card -> probability it holds that card
Moves = tuple[float, float, dict[str, float]]  # see CountingBot.moves


class Tracker:
    """What this seat knows about the round, rebuilt from the view's events."""

    def __init__(self, view: View) -> None:
        self.me = view.seat
        self.values = view.values
        self.known: dict[int, str | None] = {}  # opponent -> the card they surely hold
        # opponent -> card -> how much likelier (0: impossible) than plain counting says
        self.weight: dict[int, dict[str, float]] = {}
        self.exposed: dict[int, str] = {}  # opponent -> the card of ours they know
        self.deck: list[str | None] = []  # top first; None where unknown
        drawn: dict[int, str | None] = {}  # what an opponent drew this turn, if known
        hand: list[str] = []  # our own hand as it was at each moment
        baron_winner: int | None = None
        for e in view.events:
            s, kind = e.seat, e.type
            if kind == "round_start":
                self.deck = [None] * e["deck_count"]
            elif kind in ("dealt", "drew", "prince_drew"):  # a card we got (private)
                hand.append(e["card"])
            elif kind == "turn":
                card = self.deck.pop(0) if self.deck else None
                if s != self.me and s is not None:
                    drawn[s] = card
            elif kind == "play" and s is not None:
                if s == self.me:
                    hand.remove(e["card"])
                else:
                    self._played(s, e.card or "", drawn.pop(s, None))
                    if e.card == "priest" and e.target == self.me:
                        self.exposed[s] = hand[0]
                if e.card == "prince" and e.target == self.me and e["discarded"] in hand:
                    hand.remove(e["discarded"])
                baron_winner = self._effect(s, e.card or "", e.target, e.data)
            elif kind == "priest_saw":
                self._set(e.target, e["card"])
            elif kind == "baron_compared":
                mine = e.seat == self.me
                other = e.target if mine else e.seat
                self._set(other, e["target_card"] if mine else e.card)
                if other is not None:
                    self.exposed[other] = hand[0] if hand else ""
            elif kind == "king_swapped":  # we know theirs, they know ours
                mine = e.seat == self.me
                other = e.target if mine else e.seat
                hand[:] = [e["received"] if mine else e["gave"]]
                self._set(other, e["gave"] if mine else e["received"])
                if other is not None:
                    self.exposed[other] = hand[0]
            elif kind == "chancellor_drew":
                hand += e["cards"]
            elif kind == "chancellor_return" and s != self.me:
                self.deck += [None] * e["count"]
            elif kind == "chancellor_returned":
                self.deck += e["bottom"]
                hand[:] = [e["keep"]]
            elif kind == "eliminated":
                self._set(s, None)
                if baron_winner is not None and e["revealed"]:  # the winner's card is higher
                    floor = self.values[e["revealed"][0]]
                    self._rule_out(baron_winner, [c for c in self.values
                                                  if self.values[c] <= floor])
                baron_winner = None
            # They know our card only while we still hold it.
            self.exposed = {o: c for o, c in self.exposed.items() if c in hand}
        if len(self.deck) != view.deck_count:  # never trust a model that drifted
            self.deck = [None] * view.deck_count
        # Unseen: neither discarded, face up, in our hand, nor known to be somewhere.
        unseen = Counter(COPIES[view.ruleset])
        for p in view.players:
            unseen.subtract(p.discards)
        unseen.subtract(view.face_up)
        unseen.subtract(view.hand)
        unseen.subtract(c for c in self.known.values() if c)
        unseen.subtract(c for c in self.deck if c)
        self.unseen = +unseen
        self.memo: dict[int, tuple[object, Moves]] = {}

    def _set(self, seat: int | None, card: str | None) -> None:
        """``seat`` now holds ``card`` (None: a card we know nothing about)."""
        if seat is not None and seat != self.me:
            self.known[seat] = card
            self.weight[seat] = {}

    def _rule_out(self, seat: int, cards: list[str]) -> None:
        w = self.weight.setdefault(seat, {})
        for c in cards:
            w[c] = 0.0

    def _played(self, s: int, c: str, new: str | None) -> None:
        """Opponent ``s`` drew ``new`` (None: unknown) and played ``c``: what is left?"""
        old = self.known.get(s)
        if new == c or (old is not None and new is None and old != c):
            self._set(s, old)  # they played the new card and kept the one we knew
        elif new is not None or old == c:
            self._set(s, new)  # they played the old card and kept the new one
        else:  # half the time their old card (what we believed), half a fresh card
            w = {k: (x + 1) / 2 for k, x in self.weight.get(s, {}).items()}
            w[c] = w.get(c, 1.0) * 2  # a random player with two c plays c twice as often
            if c == "countess":  # forced by a King or Prince (R11)?
                for k in ("king", "prince"):
                    w[k] = w.get(k, 1.0) * 2
            if c in ("king", "prince"):  # with the Countess they would have played her
                w["countess"] = 0.0
            self.known[s] = None
            self.weight[s] = w

    def _effect(self, s: int, card: str, t: int | None, d: dict[str, object]) -> int | None:
        """Apply what a played card tells us; returns a baron winner awaiting the loser."""
        if card == "guard" and t is not None and not d.get("hit"):
            self._rule_out(t, [str(d["guess"])])
        elif card == "baron" and t is not None and self.me not in (s, t):
            loser = d.get("loser")
            if loser is None:  # a tie: both hold the same value
                if self.known.get(s):
                    self._set(t, self.known[s])
                elif self.known.get(t):
                    self._set(s, self.known[t])
            else:
                return t if loser == s else s
        elif card == "king" and t is not None and self.me not in (s, t):  # they swapped
            self.known[s], self.known[t] = self.known.get(t), self.known.get(s)
            self.weight[s], self.weight[t] = self.weight.get(t, {}), self.weight.get(s, {})
        elif card == "prince" and t is not None and d.get("discarded") != "princess":
            top = self.deck.pop(0) if d.get("drew_from") == "deck" and self.deck else None
            self._set(t, top)
        elif card == "chancellor":
            drew = int(str(d.get("drew", 0)))
            del self.deck[:drew]
            self._set(s, None)
        return None

    def dist(self, seat: int) -> dict[str, float]:
        """Probability of each card being the one ``seat`` holds."""
        card = self.known.get(seat)
        if card:
            return {card: 1.0}
        weight = self.weight.get(seat, {})
        w = {c: n * weight.get(c, 1.0) for c, n in self.unseen.items()}
        total = sum(w.values())
        if total <= 0:  # contradictory knowledge: fall back to plain counting
            w, total = {c: float(n) for c, n in self.unseen.items()}, sum(self.unseen.values())
        return {c: n / total for c, n in w.items() if n > 0}


class CountingBot(Bot):
    name = "counting"
    # Weights, in "chances of winning the round" (tuned offline against the random bot).
    MID = (0.2, 0.6)  # worth of a card far from the showdown: MID[0] + MID[1] * P(beats all)
    PRIEST = 0.1  # worth of a look at a card we know little about
    COMBO = 1.0  # share of a sure Guard next turn that a look now is worth
    BARON_RISK = 1.0  # extra dislike of losing a Baron comparison
    LEAD = 0.5  # extra worth of knocking out a rival, per share of the tokens to win it has
    MATCH_POINT = 0.4  # extra worth of knocking out a rival one token from winning
    SPY = 0.25  # worth of a chance at the spy bonus (R24)
    SPY_MP = 0.7  # ... when that token would win the match
    SPY_DENY = 0.1  # worth of spoiling a rival's spy bonus with our own spy
    SPY_KILL = 0.1  # extra worth of knocking out a rival who would get the spy bonus

    def choose(self, view: View) -> Action:
        legal = view.legal_actions
        if len(legal) == 1:
            return legal[0]
        t = Tracker(view)
        n, me = len(view.players), view.seat or 0
        order = sorted(view.opponents, key=lambda p: (p.seat - me) % n)  # who plays next
        dists = {r.seat: t.dist(r.seat) for r in order}
        if view.phase == "chancellor":  # keep the best card, the others under the deck
            return max(legal, key=lambda a: (self.hold(view, t, dists, a.keep or ""),
                                             [-view.values[c] for c in a.bottom or ()]))
        return max(legal, key=lambda a: self.score(view, t, dists, a))

    # ---------------------------------------------------------------- scoring

    def moves(self, view: View, t: Tracker, held: dict[str, float]) -> Moves:
        """What a rival holding ``held`` does next if it plays like the random baseline: it
        draws, then plays either card (the Countess when forced). Returns the chances that it
        plays a guard, a prince, and a baron with each card left in its hand."""
        key = id(held)
        if key in t.memo:
            return t.memo[key][1]
        total = sum(t.unseen.values()) or 1
        guard = prince = 0.0
        baron: dict[str, float] = {}
        for x, px in held.items():
            for y, ny in t.unseen.items():
                p = px * ny / total
                if x == y:
                    plays = [(x, y, p)]
                elif "countess" in (x, y) and ("king" in (x, y) or "prince" in (x, y)):
                    plays = [("countess", y if x == "countess" else x, p)]  # R11
                else:
                    plays = [(x, y, p / 2), (y, x, p / 2)]
                for c, other, q in plays:
                    if c == "guard":
                        guard += q
                    elif c == "prince":
                        prince += q
                    elif c == "baron":
                        baron[other] = baron.get(other, 0.0) + q
        t.memo[key] = (held, (guard, prince, baron))  # (held: keeps the id unique)
        return guard, prince, baron

    def threat(self, view: View, t: Tracker, dists: Dists, card: str) -> float:
        """The chance to be knocked out holding ``card`` before our next turn, if every rival
        plays like the random baseline (a guard names our card at random unless it knows)."""
        v = view.values
        n = max(1, len(dists))
        risk = 0.0
        for r, held in list(dists.items())[:max(0, view.deck_count)]:  # who still plays
            guard, prince, baron = self.moves(view, t, held)
            if card != "guard":
                risk += guard / n * (1.0 if t.exposed.get(r) == card else 1 / (len(v) - 1))
            risk += sum(p for c, p in baron.items() if v[c] > v[card]) / n
            if card == "princess":
                risk += prince / (n + 1)
        return min(1.0, risk)

    def hold(self, view: View, t: Tracker, dists: Dists, card: str, safe: bool = False) -> float:
        """How good keeping ``card`` is: the chance to beat everyone at the showdown (weighted
        by how near it is), times the chance to survive until our next turn."""
        if not dists:  # nobody left: the round is ours
            return 1.0
        v = view.values
        beat = 1.0
        total = sum(t.unseen.values()) or 1
        for i, d in enumerate(dists.values()):
            below = sum(p for c, p in d.items() if v[c] <= v[card])
            if i < view.deck_count:  # they draw again: their last card is either one
                below = (below + sum(n for c, n in t.unseen.items() if v[c] <= v[card])
                         / total) / 2
            beat *= below
        end = min(1.0, len(dists) / max(1, view.deck_count))
        future = end * beat + (1 - end) * (self.MID[0] + self.MID[1] * beat)
        if card == "spy" and not self.spies(view):  # we will play it: a chance at the bonus
            future += self.spy_worth(view, view.me.tokens) * (1 - future)
        # the risk compounds over the rounds of turns left (a Handmaid covers the first)
        cycles = max(1.0, view.deck_count / (len(dists) + 1)) - safe
        return future * (1 - self.threat(view, t, dists, card)) ** max(0.0, cycles)

    def score(self, view: View, t: Tracker, dists: Dists, a: Action) -> float:
        hand = list(view.hand)
        hand.remove(a.card or "")
        keep = hand[0]
        v = view.values
        card, target = a.card, a.target
        total = sum(t.unseen.values()) or 1
        fresh = {c: n / total for c, n in t.unseen.items()}  # an unknown card
        if card == "princess":
            return -10.0
        if card == "prince" and target == view.seat:  # discard ours, draw an unknown card
            if keep == "princess":
                return -10.0
            return sum(p * self.hold(view, t, dists, c) for c, p in fresh.items())
        base = self.hold(view, t, dists, keep, safe=card == "handmaid")
        if card == "chancellor":
            return self.chancellor(view, t, dists, keep, fresh)
        if card == "spy":  # the bonus token, ours if we are the only spy left, else denied
            spies = self.spies(view)
            if not spies:
                return base + self.spy_worth(view, view.me.tokens) * (1 - base)
            if len(spies) == 1 and view.seat not in spies:
                return base + self.SPY_DENY * self.spy_worth(view, view.players[
                    next(iter(spies))].tokens) / self.SPY
            return base
        if target is None:
            return base
        d = dists[target]
        # Knocking them out: the round without them, and more if they lead or would get
        # the spy bonus.
        out = {r: dr for r, dr in dists.items() if r != target}
        gone = self.hold(view, t, out, keep, safe=not out)
        their = view.players[target].tokens
        gone += self.LEAD * their / max(1, view.tokens_to_win or 1)
        if their + 1 >= (view.tokens_to_win or 99):  # one token from winning the match
            gone += self.MATCH_POINT
        if self.spies(view) == {target}:
            gone += self.SPY_KILL * self.spy_worth(view, their) / self.SPY
        if card == "guard":
            p = d.get(a.guess or "", 0.0)
            return p * gone + (1 - p) * base
        if card == "priest":
            # Next turn a Guard (kept, or drawn) names what we saw, if they still hold it:
            # half the time they play the other card.
            guard = 1.0 if keep == "guard" else fresh.get("guard", 0.0)
            sure = 0.5 * (1 - d.get("guard", 0.0)) * guard * max(0.0, gone - base)
            return base + self.COMBO * sure + self.PRIEST * (1 - max(d.values())) * (1 - base)
        if card == "baron":  # both learn the other's card; the lower one is out
            win = sum(p for c, p in d.items() if v[c] < v[keep])
            lose = sum(p for c, p in d.items() if v[c] > v[keep])
            return win * gone + (1 - win - lose) * base - self.BARON_RISK * lose
        if card == "prince":  # a known Princess dies; else they lose their card for a new one
            p = d.get("princess", 0.0)
            return p * gone + (1 - p) * self.hold(view, t, {**dists, target: fresh}, keep)
        if card == "king":  # we get their card; they get ours, and each knows the other's
            swapped = {**dists, target: {keep: 1.0}}
            return sum(p * self.hold(view, t, swapped, c) for c, p in d.items())
        return base

    def chancellor(self, view: View, t: Tracker, dists: Dists, keep: str,
                   fresh: dict[str, float]) -> float:
        """Expected value of keeping the best of ``keep`` and two unknown cards."""
        if view.deck_count == 0 or not fresh:
            return self.hold(view, t, dists, keep)
        mine = self.hold(view, t, dists, keep)
        options = sorted((self.hold(view, t, dists, c), p) for c, p in fresh.items())
        best, below = 0.0, 0.0
        for h, p in options:  # E[max] over two draws: P(max <= h) = F(h)^2
            new = below + p
            best += max(h, mine) * (new * new - below * below)
            below = new
        return best

    def spy_worth(self, view: View, tokens: int) -> float:
        """What a spy bonus is worth to a player with ``tokens``: a round's worth at match
        point (it wins the match), less before."""
        return self.SPY_MP if tokens + 1 >= (view.tokens_to_win or 99) else self.SPY

    @staticmethod
    def spies(view: View) -> set[int]:
        """Seats still in the round that played or discarded a spy (R24)."""
        return {p.seat for p in view.players if not p.eliminated and "spy" in p.discards}


if __name__ == "__main__":
    raise SystemExit(CountingBot.main())
